/* SPDX-License-Identifier: Apache-2.0 */
/* emit.h - the tool's result output (DESIGN 6): one JSON object per line, or CSV with
 * a header line, over a fixed list of named fields.
 *
 * Integer fields print as they are; distance fields print the shortest decimal that
 * reads back as the same double, and as JSON null (an empty CSV field) when the
 * distance is undefined (NAN or infinite). */
#ifndef TSMINE_EMIT_H
#define TSMINE_EMIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum { EMIT_JSON = 0, EMIT_CSV } emit_format;

typedef enum {
    EMIT_INT,  /* int64_t */
    EMIT_DIST, /* double; null / empty when not finite */
    EMIT_TEXT, /* const char *: a JSON string (a CSV field, quoted when it must be); null /
                  empty when NULL */
} emit_type;

typedef struct {
    const char *name; /* a plain identifier: printed as is */
    emit_type type;
} emit_field;

typedef union {
    int64_t i;
    double d;
    const char *s;
} emit_value;

typedef struct {
    FILE *out;
    emit_format fmt;
    const emit_field *fields;
    size_t nfields;
} emitter;

/* Parses "json" or "csv"; returns -1 for anything else. */
int emit_format_parse(const char *s, emit_format *out);

/* Starts output of rows with the given fields (the array must outlive the emitter);
 * prints the CSV header line. */
void emit_begin(emitter *e, FILE *out, emit_format fmt, const emit_field *fields, size_t n);

/* Prints one row; v holds one value per field, in order. */
void emit_row(const emitter *e, const emit_value *v);

/* Flushes the output; returns 0, or -1 when writing failed (errno says why). */
int emit_end(emitter *e);

/* Writes the shortest decimal form of x that strtod reads back exactly (at most 17
 * significant digits) into buf; returns its length. x must be finite. */
size_t emit_double(char *buf, size_t len, double x);

/* Prints s as a JSON string literal, quotes included. */
void emit_json_string(FILE *out, const char *s);

/* Byte c as it stands inside a JSON string literal (quotes and backslashes escaped,
 * control bytes as \u00XX), into out (7 bytes and the terminator at most). */
void emit_json_char(char out[8], unsigned char c);

#endif
