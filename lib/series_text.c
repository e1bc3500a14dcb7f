/* SPDX-License-Identifier: Apache-2.0 */
/* series_text.c - the text reader of series_io: rows of delimited columns, or values
 * separated by blanks on one or many lines, read so that nothing is misread silently.
 *
 * The first non-blank row (after a UTF-8 byte-order mark) decides the layout:
 * - the delimiter is the one given, else ';' when the row has one, else ',' (unless
 *   decimal commas are accepted), else blanks (a tab when the row has one, else runs of
 *   spaces);
 * - with blanks, no delimiter and no column given, a row of one token or whose first
 *   token is a number starts a flow of values: every token of every row is one value,
 *   in order; a row of several names is the header of blank-separated columns;
 * - in columns, the value column is the one given (1-based number, or header name),
 *   else the only one or the second of two; three or more need a column given;
 * - the first row is a header when its value field is not a number;
 * - the timestamp column is the first other column named timestamp, time, date or
 *   datetime in the header, else the first column when it is not the value column and
 *   its first data field is not a number.
 * Every row must have as many fields as the first. Blank rows inside the data are
 * missing values (NaN); blank rows before and after it are ignored. An empty field or
 * nan is NaN. CRLF line ends are accepted. */
#include "lib/series_input.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#define NO_COLUMN   SIZE_MAX
#define COLNAME_MAX 64 /* room for a column name in messages */

/* One field of a row: a span of the line, trimmed of blanks and enclosing quotes. */
typedef struct {
    char *s;
    size_t len;
} field;

/* The state of one read. */
typedef struct {
    const series_input *in;
    const series_options *o;
    series *out;
    size_t cap;        /* room in out->v (and time_at, time_line with timestamps) */
    size_t tcap, tlen; /* room and use of out->times */
    size_t lineno;
    int decided;             /* the first non-blank row was seen: the layout is known */
    int columns;             /* rows of fields (1), or a flow of blank-separated values (0) */
    char delim;              /* columns: the delimiter, ' ' for runs of blanks */
    size_t width;            /* columns: fields in the first row */
    size_t vcol, tcol;       /* columns: the value column; the timestamp column or NO_COLUMN */
    int tcol_known;          /* tcol is decided (by the header, or at the first data row) */
    char vname[COLNAME_MAX]; /* the value column's header name, "" when none */
    field *f;                /* the fields of the current row */
    size_t fcap;
    size_t pending_blank; /* blank rows since the last value, once a row was seen */
    int seen_row;
} reader;

typedef enum { FIELD_OK, FIELD_NOT_NUMBER, FIELD_RANGE, FIELD_DECIMAL_COMMA } field_result;

static int is_blank(char c) {
    return c == ' ' || c == '\t';
}

/* Copies at most 40 characters of s[0..len-1] into dst for a message, replacing
 * unprintable bytes with '?' and marking a cut with "...". */
static void quote_field(char *dst, size_t dstlen, const char *s, size_t len) {
    size_t k = 0, max = len > 40 ? 40 : len;
    for (size_t i = 0; i < max && k + 4 < dstlen; i++)
        dst[k++] = isprint((unsigned char)s[i]) ? s[i] : '?';
    if (max < len && k + 4 < dstlen)
        dst[k++] = '.', dst[k++] = '.', dst[k++] = '.';
    dst[k] = '\0';
}

/* Parses one trimmed field: empty is NaN; otherwise strtod must consume all of it
 * (which accepts nan/NaN, inf/-inf/infinity). A finite value too large for a double
 * is FIELD_RANGE; underflow to a denormal or zero is accepted. */
static field_result parse_plain(char *s, size_t len, double *out) {
    if (len == 0) {
        *out = NAN;
        return FIELD_OK;
    }
    char saved = s[len];
    s[len] = '\0';
    errno = 0;
    char *end;
    double x = strtod(s, &end);
    int range = errno == ERANGE && isinf(x);
    int whole = end == s + len && len == strlen(s); /* an embedded NUL is not a number */
    s[len] = saved;
    if (!whole)
        return FIELD_NOT_NUMBER;
    if (range)
        return FIELD_RANGE;
    *out = x;
    return FIELD_OK;
}

/* Parses a value field. A field that is a number once its one comma is read as a
 * decimal point ("1,5") is that number when decimal_comma is set, else
 * FIELD_DECIMAL_COMMA. */
static field_result parse_value(field f, int decimal_comma, double *out) {
    field_result fr = parse_plain(f.s, f.len, out);
    const char *comma = fr == FIELD_NOT_NUMBER ? memchr(f.s, ',', f.len) : NULL;
    if (!comma || f.len >= 64 || memchr(comma + 1, ',', f.len - (size_t)(comma - f.s) - 1))
        return fr;
    char buf[64];
    memcpy(buf, f.s, f.len);
    buf[comma - f.s] = '.';
    buf[f.len] = '\0';
    double x;
    if (parse_plain(buf, f.len, &x) != FIELD_OK)
        return fr;
    if (!decimal_comma)
        return FIELD_DECIMAL_COMMA;
    *out = x;
    return FIELD_OK;
}

/* Splits row[0..len) at delim (' ': runs of blanks) into r->f, trimming blanks and
 * enclosing double quotes (a quoted field may hold the delimiter). Returns the number
 * of fields, or SIZE_MAX when out of memory. */
static size_t split(reader *r, char *row, size_t len, char delim) {
    size_t n = 0, i = 0;
    if (delim == ' ')
        while (i < len && is_blank(row[i]))
            i++;
    for (;;) {
        size_t start = i;
        int quoted = 0;
        for (; i < len; i++) {
            char c = row[i];
            if (c == '"')
                quoted = !quoted;
            else if (!quoted && (delim == ' ' ? is_blank(c) : c == delim))
                break;
        }
        if (n == r->fcap) {
            size_t ncap = r->fcap ? 2 * r->fcap : 16;
            field *nf = realloc(r->f, ncap * sizeof *nf);
            if (!nf)
                return SIZE_MAX;
            r->f = nf, r->fcap = ncap;
        }
        field f = {row + start, i - start};
        while (f.len > 0 && is_blank(*f.s))
            f.s++, f.len--;
        while (f.len > 0 && is_blank(f.s[f.len - 1]))
            f.len--;
        if (f.len >= 2 && f.s[0] == '"' && f.s[f.len - 1] == '"')
            f.s++, f.len -= 2;
        r->f[n++] = f;
        if (i >= len)
            break;
        if (delim == ' ') {
            while (i < len && is_blank(row[i]))
                i++;
            if (i >= len)
                break;
        } else {
            i++;
        }
    }
    return n;
}

static series_status nomem(const reader *r) {
    return series_fail(r->in, SERIES_ENOMEM, "%s: out of memory after %zu values", r->in->name,
                       r->out->n);
}

/* Appends value x with its timestamp t[0..tlen) and line (kept only when the input
 * has a timestamp column), after the NaNs of the blank rows before it. */
static series_status push(reader *r, double x, const char *t, size_t tlen) {
    series *s = r->out;
    int timed = r->tcol != NO_COLUMN;
    for (int pending = 1; pending;) {
        pending = r->pending_blank > 0;
        if (s->n == r->cap) {
            size_t ncap = r->cap ? 2 * r->cap : 4096;
            double *nv = realloc(s->v, ncap * sizeof *nv);
            if (!nv)
                return nomem(r);
            s->v = nv;
            if (timed) {
                size_t *nt = realloc(s->time_at, ncap * sizeof *nt);
                if (!nt)
                    return nomem(r);
                s->time_at = nt;
                nt = realloc(s->time_line, ncap * sizeof *nt);
                if (!nt)
                    return nomem(r);
                s->time_line = nt;
            }
            r->cap = ncap;
        }
        size_t len = pending ? 0 : tlen;
        if (timed) {
            if (r->tlen + len + 1 > r->tcap) {
                size_t ncap = r->tcap ? 2 * r->tcap : 1u << 16;
                while (ncap < r->tlen + len + 1)
                    ncap *= 2;
                char *nt = realloc(s->times, ncap);
                if (!nt)
                    return nomem(r);
                s->times = nt, r->tcap = ncap;
            }
            memcpy(s->times + r->tlen, t, len);
            s->times[r->tlen + len] = '\0';
            s->time_at[s->n] = r->tlen;
            s->time_line[s->n] = r->lineno - (pending ? r->pending_blank : 0);
            r->tlen += len + 1;
        }
        s->v[s->n++] = pending ? NAN : x;
        if (pending)
            r->pending_blank--;
    }
    return SERIES_OK;
}

/* The error for a value field that is not a number; col is its 0-based column in
 * columns, NO_COLUMN in a flow. */
static series_status bad_value(const reader *r, size_t col, field f, field_result fr) {
    char q[64], where[COLNAME_MAX + 48] = "";
    quote_field(q, sizeof q, f.s, f.len);
    if (col != NO_COLUMN)
        snprintf(where, sizeof where, " in column %zu%s%s%s", col + 1, r->vname[0] ? " (" : "",
                 r->vname, r->vname[0] ? ")" : "");
    const char *name = r->in->name;
    switch (fr) {
    case FIELD_RANGE:
        return series_fail(r->in, SERIES_EDATA, "%s:%zu: value out of range for a double%s: \"%s\"",
                           name, r->lineno, where, q);
    case FIELD_DECIMAL_COMMA:
        return series_fail(r->in, SERIES_EDATA,
                           "%s:%zu: \"%s\"%s has a decimal comma (give --decimal-comma to read it "
                           "as a decimal point)",
                           name, r->lineno, q, where);
    default:
        return series_fail(r->in, SERIES_EDATA, "%s:%zu: not a number%s: \"%s\"%s", name, r->lineno,
                           where, q,
                           col != NO_COLUMN && !r->o->column
                               ? " (choose the column of values with --column N|NAME)"
                               : "");
    }
}

/* Lists the first fields of the current row, "a, b, c", for a message. */
static void list_fields(const reader *r, size_t n, char *dst, size_t dstlen) {
    size_t k = 0;
    dst[0] = '\0';
    for (size_t i = 0; i < n && k + 8 < dstlen; i++) {
        char q[64];
        quote_field(q, sizeof q, r->f[i].s, r->f[i].len);
        k += (size_t)snprintf(dst + k, dstlen - k, "%s%s", i ? ", " : "", q);
    }
}

/* Is f the header name of a timestamp column (timestamp, time, date, datetime)? */
static int is_time_name(const field *f) {
    static const char *names[] = {"timestamp", "time", "date", "datetime"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (f->len == strlen(names[i]) && strncasecmp(f->s, names[i], f->len) == 0)
            return 1;
    return 0;
}

/* Chooses the value column among the n fields of the first row; *by_name is set when
 * it was given as a header name (the row is then the header). */
static series_status choose_column(reader *r, size_t n, int *by_name) {
    const char *c = r->o->column, *name = r->in->name;
    *by_name = 0;
    if (!c) {
        if (n <= 2) {
            r->vcol = n - 1;
            return SERIES_OK;
        }
        char list[160];
        list_fields(r, n, list, sizeof list);
        return series_fail(r->in, SERIES_EDATA,
                           "%s:%zu: %zu columns (%s): which holds the series? give --column "
                           "N|NAME",
                           name, r->lineno, n, list);
    }
    size_t digits = strspn(c, "0123456789");
    if (digits > 0 && c[digits] == '\0') {
        unsigned long long v = strtoull(c, NULL, 10);
        if (v < 1 || v > n)
            return series_fail(r->in, SERIES_EUSAGE, "%s:%zu: --column %s: the rows have %zu %s",
                               name, r->lineno, c, n, n == 1 ? "column" : "columns");
        r->vcol = (size_t)v - 1;
        return SERIES_OK;
    }
    for (int exact = 1; exact >= 0; exact--)
        for (size_t i = 0; i < n; i++)
            if (r->f[i].len == strlen(c) && (exact ? strncmp(r->f[i].s, c, r->f[i].len)
                                                   : strncasecmp(r->f[i].s, c, r->f[i].len)) == 0) {
                r->vcol = i, *by_name = 1;
                return SERIES_OK;
            }
    char list[160];
    list_fields(r, n, list, sizeof list);
    return series_fail(r->in, SERIES_EUSAGE,
                       "%s:%zu: --column %s: no such column in the first row (%s)", name, r->lineno,
                       c, list);
}

/* Decides the layout from the first non-blank row; sets *header when the row is a
 * header (and so holds no values). */
static series_status decide(reader *r, char *row, size_t len, int *header) {
    const series_options *o = r->o;
    char d = o->delimiter;
    double x;
    *header = 0;
    r->decided = 1;
    if (!d) {
        if (memchr(row, ';', len))
            d = ';';
        else if (memchr(row, ',', len) && !o->decimal_comma)
            d = ',';
        else {
            size_t n = split(r, row, len, ' ');
            if (n == SIZE_MAX)
                return nomem(r);
            field_result fr = parse_value(r->f[0], 1, &x);
            if (!o->column && (n == 1 || fr != FIELD_NOT_NUMBER)) {
                r->columns = 0; /* a flow of values; one name alone is a header */
                *header = n == 1 && fr == FIELD_NOT_NUMBER;
                return SERIES_OK;
            }
            d = memchr(row, '\t', len) ? '\t' : ' ';
        }
    }
    r->columns = 1, r->delim = d;
    size_t n = split(r, row, len, d);
    if (n == SIZE_MAX)
        return nomem(r);
    r->width = n;
    int by_name;
    series_status st = choose_column(r, n, &by_name);
    if (st != SERIES_OK)
        return st;
    *header = by_name || parse_value(r->f[r->vcol], 1, &x) == FIELD_NOT_NUMBER;
    if (!*header)
        return SERIES_OK;
    field v = r->f[r->vcol];
    quote_field(r->vname, sizeof r->vname, v.s, v.len);
    r->tcol = NO_COLUMN;
    for (size_t i = 0; i < n && !r->tcol_known; i++)
        if (i != r->vcol && is_time_name(&r->f[i]))
            r->tcol = i, r->tcol_known = 1;
    return SERIES_OK;
}

/* Reads the value (and timestamp) of one data row of columns. */
static series_status column_row(reader *r, char *row, size_t len) {
    size_t n = split(r, row, len, r->delim);
    if (n == SIZE_MAX)
        return nomem(r);
    if (n != r->width)
        return series_fail(r->in, SERIES_EDATA,
                           "%s:%zu: %zu fields, expected %zu as in the first row", r->in->name,
                           r->lineno, n, r->width);
    double x;
    if (!r->tcol_known) { /* the first data row: is the first column a timestamp? */
        r->tcol_known = 1;
        if (r->vcol != 0 && r->f[0].len > 0 && parse_value(r->f[0], 1, &x) == FIELD_NOT_NUMBER)
            r->tcol = 0;
    }
    field_result fr = parse_value(r->f[r->vcol], r->o->decimal_comma, &x);
    if (fr != FIELD_OK)
        return bad_value(r, r->vcol, r->f[r->vcol], fr);
    field t = r->tcol != NO_COLUMN ? r->f[r->tcol] : (field){NULL, 0};
    return push(r, x, t.s, t.len);
}

/* Reads every value of one row of a flow. */
static series_status flow_row(reader *r, char *row, size_t len) {
    size_t n = split(r, row, len, ' ');
    if (n == SIZE_MAX)
        return nomem(r);
    for (size_t i = 0; i < n; i++) {
        double x;
        field_result fr = parse_value(r->f[i], r->o->decimal_comma, &x);
        if (fr != FIELD_OK)
            return bad_value(r, NO_COLUMN, r->f[i], fr);
        series_status st = push(r, x, NULL, 0);
        if (st != SERIES_OK)
            return st;
    }
    return SERIES_OK;
}

series_status series_read_text(const series_input *in, const series_options *o, series *out) {
    reader r = {.in = in, .o = o, .out = out, .tcol = NO_COLUMN};
    char *line = NULL;
    size_t linecap = 0;
    ssize_t got;
    series_status st = SERIES_OK;

    errno = 0;
    while (st == SERIES_OK && (got = getline(&line, &linecap, in->f)) != -1) {
        r.lineno++;
        char *row = line;
        size_t len = (size_t)got;
        if (r.lineno == 1 && len >= 3 && memcmp(row, "\xEF\xBB\xBF", 3) == 0)
            row += 3, len -= 3; /* a UTF-8 byte-order mark */
        while (len > 0 && (row[len - 1] == '\n' || row[len - 1] == '\r'))
            len--;
        size_t b = 0;
        while (b < len && is_blank(row[b]))
            b++;
        if (b == len) {
            r.pending_blank += (size_t)r.seen_row;
            continue;
        }
        if (!r.decided) {
            int header;
            st = decide(&r, row, len, &header);
            r.seen_row = 1;
            if (st != SERIES_OK || header)
                continue;
        }
        st = r.columns ? column_row(&r, row, len) : flow_row(&r, row, len);
        errno = 0;
    }
    if (st == SERIES_OK && ferror(in->f))
        st = series_read_error(in);
    if (st != SERIES_OK && out->n > 0 && !out->time_at) {
        /* nothing to do: the caller frees out */
    }
    free(r.f);
    free(line);
    return st;
}
