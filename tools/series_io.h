/* SPDX-License-Identifier: Apache-2.0 */
/* series_io.h - reading a series of doubles from the input formats of DESIGN 6:
 * text (.csv/.txt: one value per line, or rows whose LAST column is the value, with an
 * optional header row), NumPy .npy (float64/float32, 1-D) and raw little-endian .f64.
 *
 * Every failure leaves a one-line message in the caller's buffer, already in the
 * shape the tool prints after "tsmine: ": "FILE:LINE: what is wrong" for malformed
 * text, "FILE: what is wrong" for malformed binary input, "FILE: strerror" for a file
 * that cannot be opened or read. */
#ifndef TSMINE_SERIES_IO_H
#define TSMINE_SERIES_IO_H

#include <stddef.h>

typedef enum {
    SERIES_FMT_AUTO = 0, /* from the extension; text for "-" and unknown extensions */
    SERIES_FMT_CSV,      /* text, comma separated: the last column is the value */
    SERIES_FMT_TXT,      /* the same parser as CSV (one value per line is one column) */
    SERIES_FMT_NPY,
    SERIES_FMT_F64,
} series_format;

typedef enum {
    SERIES_OK = 0,
    SERIES_EOPEN,  /* cannot open or read the input (EX_NOINPUT) */
    SERIES_EDATA,  /* malformed or empty input data (EX_DATAERR) */
    SERIES_ENOMEM, /* out of memory (EX_SOFTWARE) */
} series_status;

typedef struct {
    double *v; /* n values, malloc'ed; owned by the series */
    size_t n;
} series;

/* Parses "csv", "txt", "npy" or "f64"; returns -1 for anything else. */
int series_format_parse(const char *s, series_format *out);

/* The format AUTO resolves to for path ("-" is standard input). */
series_format series_format_for(const char *path, series_format want);

/* Reads the whole series from path ("-" reads standard input) into *out. On failure
 * *out is empty and err holds the message. O(n) time; text is parsed line by line and
 * binary data read straight into the value array (buffers grow geometrically). */
series_status series_read(const char *path, series_format fmt, series *out, char *err,
                          size_t errlen);

/* Reads the whole of path ("-" reads standard input) as bytes into a malloc'ed buffer
 * (*buf, *len; the caller frees it), with the same open and read errors as
 * series_read: for inputs that are not series of doubles (the integer keys of
 * `tsmine sets`). An empty file gives *len = 0 and SERIES_OK. */
series_status series_read_bytes(const char *path, unsigned char **buf, size_t *len, char *err,
                                size_t errlen);

/* Frees the values and empties the series. */
void series_free(series *s);

#endif
