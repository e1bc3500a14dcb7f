/* SPDX-License-Identifier: Apache-2.0 */
/* ucr_io.h - reading labelled time-series classification sets (DESIGN 6): the UCR
 * archive's .tsv (one series per line, the class label first, then the values,
 * separated by tabs or commas; NaN for missing values) and the sktime/aeon .ts format
 * (header lines @problemName ... @data, then one series per line: comma-separated
 * values, ':' and the class label; '?' for a missing value; univariate only).
 *
 * Every series of a set has the same length. Failures leave one line in the caller's
 * buffer, "FILE:LINE: what is wrong" for malformed text and "FILE: strerror" when the
 * file cannot be read, and return the series_io status (SERIES_EDATA / SERIES_EOPEN /
 * SERIES_ENOMEM). */
#ifndef TSMINE_UCR_IO_H
#define TSMINE_UCR_IO_H

#include "lib/series_io.h"

#include <stdarg.h>
#include <stddef.h>

typedef enum { UCR_FMT_AUTO = 0, UCR_FMT_TSV, UCR_FMT_TS } ucr_format;

typedef struct {
    size_t n, len;  /* series, values per series */
    double *x;      /* n * len values, row-major */
    char **label;   /* n class labels as written (NULL array when the set is unlabelled) */
    char **classes; /* .ts: the @classLabel list, in its order; NULL otherwise */
    size_t n_classes;
} ucr_set;

/* Parses "tsv" or "ts"; returns -1 for anything else. */
int ucr_format_parse(const char *s, ucr_format *out);

/* Reads path (format from the extension when AUTO: .ts is ts, anything else tsv). */
series_status ucr_read(const char *path, ucr_format fmt, ucr_set *out, char *err, size_t errlen);

void ucr_free(ucr_set *s);

/* The sorted distinct labels of s (numerically when every label is a number, else by
 * strcmp), or its @classLabel list when it has one: *classes (malloc'ed array of
 * pointers into s's strings) and its size. Returns -1 when out of memory. */
int ucr_classes(const ucr_set *s, const char ***classes, size_t *n);

/* Reads the whole of path as text: a malloc'ed, NUL-terminated copy in *text (which
 * may hold NUL bytes before len), its length in *len. Errors as series_read_bytes. */
series_status ucr_read_text(const char *path, char **text, size_t *len, char *err, size_t errlen);

/* Writes "PATH:LINE: what" (printf-style what) into err: the message shape of every
 * malformed-text error. */
void ucr_where(char *err, size_t errlen, const char *path, size_t line, const char *fmt,
               va_list ap);

/* Index of label in classes, or -1. */
int ucr_class_index(const char *const *classes, size_t n, const char *label);

#endif
