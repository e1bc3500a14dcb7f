/* SPDX-License-Identifier: Apache-2.0 */
/* series_io.h - reading a series of doubles from the input formats of DESIGN 6:
 * text (.csv/.txt: values separated by blanks on one or many lines, or rows of
 * delimited columns with an optional header row), NumPy .npy (float64/float32, 1-D)
 * and raw little-endian .f64.
 *
 * Text is read so that it cannot be misread silently (series_text.c says how): the
 * delimiter is ';', ',' or blanks, detected from the first row or given; the value
 * column is the only one, the second of two, or the one given by number or header
 * name; rows of three or more columns without a given column, a non-numeric value, a
 * decimal comma (unless accepted explicitly) and rows of differing widths are refused.
 * A timestamp column (named timestamp/time/date/datetime, or a non-numeric first
 * column) is kept beside the values.
 *
 * Every failure leaves a one-line message in the caller's buffer, already in the
 * shape the tool prints after "tsmine: ": "FILE:LINE: what is wrong" for malformed
 * text, "FILE: what is wrong" for malformed binary input, "FILE: strerror" for a file
 * that cannot be opened or read. */
#ifndef TSMINE_SERIES_IO_H
#define TSMINE_SERIES_IO_H

#include <stddef.h>
#include <stdint.h>

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
    SERIES_EUSAGE, /* options that do not fit the input, e.g. no such --column (EX_USAGE) */
} series_status;

typedef struct {
    double *v; /* n values, malloc'ed; owned by the series */
    size_t n;
    /* The timestamp of each value, from a timestamp column of text input; NULL when
     * there is none. times holds NUL-terminated strings, time_at[i] the offset of value
     * i's (owned by the series). */
    char *times;
    size_t *time_at;
    /* The line of the text input each value came from, beside time_at (for messages
     * about a timestamp); NULL when there are no timestamps. */
    size_t *time_line;
} series;

/* How to read text input (series_read_with); all zero is the default: detect. */
typedef struct {
    series_format fmt;
    const char *column; /* the value column: "N" (1-based) or a header name; NULL: default */
    char delimiter;     /* 0: detect; ' ': runs of blanks; else that byte */
    int decimal_comma;  /* read "1,5" as 1.5 (the delimiter must not be ',') */
} series_options;

/* Parses "csv", "txt", "npy" or "f64"; returns -1 for anything else. */
int series_format_parse(const char *s, series_format *out);

/* The format AUTO resolves to for path ("-" is standard input). */
series_format series_format_for(const char *path, series_format want);

/* Reads the whole series from path ("-" reads standard input) into *out. On failure
 * *out is empty and err holds the message. O(n) time; text is parsed line by line and
 * binary data read straight into the value array (buffers grow geometrically). */
series_status series_read(const char *path, series_format fmt, series *out, char *err,
                          size_t errlen);

/* The same with the text options of o (o->column and o->delimiter apply to text only;
 * given with binary input they are an error). */
series_status series_read_with(const char *path, const series_options *o, series *out, char *err,
                               size_t errlen);

/* The timestamp of value i ("" when that row had none), or NULL when s has no
 * timestamps or i is out of range (e.g. the -1 of "no neighbour"). */
const char *series_time(const series *s, int64_t i);

/* The line of the text input value i came from (1-based), or 0 when s has no
 * timestamps or i is out of range. */
size_t series_time_line(const series *s, int64_t i);

/* Reads a timestamp as a timestamp column holds it into *ns, nanoseconds since the
 * Unix epoch:
 * - a date and time, "YYYY-MM-DD HH:MM:SS" (NAB's form) or ISO 8601's
 *   "YYYY-MM-DDTHH:MM:SS": the seconds may be left out or have decimals (up to 9 are
 *   read), and 'Z' or an offset (+HH:MM, +HHMM, +HH, or '-') may follow; without one
 *   the time is UTC. A date alone is its midnight.
 * - a number: seconds since the epoch, optionally signed, with up to 9 decimals read
 *   ("1396310400", "1396310400.25").
 * Returns 0, or -1 (*ns untouched) when text is neither, names no real date or time
 * (month 13, February 30, 24:00), or falls outside what 64-bit nanoseconds hold (the
 * years 1678 to 2261). O(length). */
int series_parse_time(const char *text, int64_t *ns);

/* Reads the whole of path ("-" reads standard input) as bytes into a malloc'ed buffer
 * (*buf, *len; the caller frees it), with the same open and read errors as
 * series_read: for inputs that are not series of doubles (the integer keys of
 * `tsmine sets`). An empty file gives *len = 0 and SERIES_OK. */
series_status series_read_bytes(const char *path, unsigned char **buf, size_t *len, char *err,
                                size_t errlen);

/* Frees the values and timestamps and empties the series. */
void series_free(series *s);

#endif
