/* SPDX-License-Identifier: Apache-2.0 */
/* series_input.h - internal to series_io.c and series_text.c: the open input the
 * readers share and their error helpers. */
#ifndef TSMINE_SERIES_INPUT_H
#define TSMINE_SERIES_INPUT_H

#include "lib/series_io.h"

#include <stdio.h>

/* An open input: the stream, the name used in messages and the error buffer. */
typedef struct {
    FILE *f;
    const char *name;
    char *err;
    size_t errlen;
} series_input;

/* Writes a message to the input's error buffer and returns st. */
series_status series_fail(const series_input *in, series_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The error for a failed read (errno set by stdio). */
series_status series_read_error(const series_input *in);

/* Reads text input (series_text.c) with the options of o into out. */
series_status series_read_text(const series_input *in, const series_options *o, series *out);

#endif
