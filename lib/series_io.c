/* SPDX-License-Identifier: Apache-2.0 */
/* series_io.c - reading series from text, .npy and raw float64 files. */
#include "lib/series_input.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>

#define NPY_MAX_HEADER (1u << 20) /* far above anything numpy writes */

series_status series_fail(const series_input *in, series_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(in->err, in->errlen, fmt, ap);
    va_end(ap);
    return st;
}

series_status series_read_error(const series_input *in) {
    int e = errno ? errno : EIO;
    return series_fail(in, SERIES_EOPEN, "%s: %s", in->name, strerror(e));
}

int series_format_parse(const char *s, series_format *out) {
    static const struct {
        const char *name;
        series_format fmt;
    } names[] = {{"csv", SERIES_FMT_CSV},
                 {"txt", SERIES_FMT_TXT},
                 {"npy", SERIES_FMT_NPY},
                 {"f64", SERIES_FMT_F64}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0) {
            *out = names[i].fmt;
            return 0;
        }
    return -1;
}

series_format series_format_for(const char *path, series_format want) {
    if (want != SERIES_FMT_AUTO)
        return want;
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (dot && (!slash || dot > slash)) {
        series_format f;
        char ext[4] = {0};
        const char *e = dot + 1;
        for (size_t i = 0; i < 3 && e[i]; i++)
            ext[i] = (char)tolower((unsigned char)e[i]);
        if (strlen(e) == 3 && series_format_parse(ext, &f) == 0)
            return f;
    }
    return SERIES_FMT_CSV; /* "-" and unknown extensions: text, parsed strictly */
}

void series_free(series *s) {
    free(s->v);
    free(s->times);
    free(s->time_at);
    free(s->time_line);
    *s = (series){0};
}

const char *series_time(const series *s, int64_t i) {
    if (!s->time_at || i < 0 || (uint64_t)i >= s->n)
        return NULL;
    return s->times + s->time_at[i];
}

size_t series_time_line(const series *s, int64_t i) {
    if (!s->time_line || i < 0 || (uint64_t)i >= s->n)
        return 0;
    return s->time_line[i];
}

/* ---- timestamps ----------------------------------------------------------------- */

/* Reads exactly n digits at *p (advancing it) into *out; -1 when one is not a digit. */
static int digits(const char **p, int n, int64_t *out) {
    int64_t v = 0;
    for (int k = 0; k < n; k++, (*p)++) {
        if (!isdigit((unsigned char)**p))
            return -1;
        v = 10 * v + (**p - '0');
    }
    *out = v;
    return 0;
}

/* Reads an optional fraction ".ddd" at *p (advancing it) as nanoseconds: the first 9
 * digits count, further ones are read and dropped. -1 for a point without a digit. */
static int fraction_ns(const char **p, int64_t *ns) {
    *ns = 0;
    if (**p != '.')
        return 0;
    (*p)++;
    if (!isdigit((unsigned char)**p))
        return -1;
    int64_t scale = 100000000;
    for (; isdigit((unsigned char)**p); (*p)++, scale /= 10)
        *ns += scale * (**p - '0');
    return 0;
}

/* Days from 1970-01-01 to the proleptic Gregorian date y-m-d (m 1..12): the civil
 * calendar counted in 400-year eras of 146097 days, each year starting in March so
 * that the leap day is the era's last (H. Hinnant, "chrono-Compatible Low-Level Date
 * Algorithms", days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;                                   /* [0, 399] */
    const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

static int days_in_month(int64_t y, int64_t m) {
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return days[m - 1] + (m == 2 && leap);
}

/* *ns = s * 1e9 + frac, or -1 when it does not fit in 64 bits (s * 1e9 alone may not
 * where the sum does: the earliest instants, s < 0 < frac). */
static int to_ns(int64_t s, int64_t frac, int64_t *ns) {
    int64_t t;
    if (s < 0 && frac > 0)
        s += 1, frac -= 1000000000;
    if (__builtin_mul_overflow(s, (int64_t)1000000000, &t) || __builtin_add_overflow(t, frac, &t))
        return -1;
    *ns = t;
    return 0;
}

/* Seconds since the epoch, "[+-]D+[.D+]". */
static int parse_epoch(const char *p, int64_t *ns) {
    int neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    int64_t sec = 0, frac;
    for (; isdigit((unsigned char)*p); p++)
        if (__builtin_mul_overflow(sec, (int64_t)10, &sec) ||
            __builtin_add_overflow(sec, (int64_t)(*p - '0'), &sec))
            return -1;
    if (fraction_ns(&p, &frac) != 0 || *p != '\0')
        return -1;
    return neg ? to_ns(-sec, -frac, ns) : to_ns(sec, frac, ns);
}

int series_parse_time(const char *text, int64_t *ns) {
    const char *p = text;
    int64_t y, mo, d, h = 0, mi = 0, sec = 0, frac = 0, off = 0;
    if (digits(&p, 4, &y) != 0 || *p != '-')
        return parse_epoch(text, ns);
    p++;
    if (digits(&p, 2, &mo) != 0 || *p++ != '-' || digits(&p, 2, &d) != 0)
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
        return -1;
    if (*p == 'T' || *p == 't' || *p == ' ') {
        p++;
        if (digits(&p, 2, &h) != 0 || *p++ != ':' || digits(&p, 2, &mi) != 0)
            return -1;
        if (*p == ':') {
            p++;
            if (digits(&p, 2, &sec) != 0 || fraction_ns(&p, &frac) != 0)
                return -1;
        }
        if (h > 23 || mi > 59 || sec > 59)
            return -1;
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p++ == '-' ? -1 : 1;
            int64_t oh, om = 0;
            if (digits(&p, 2, &oh) != 0)
                return -1;
            if (*p == ':')
                p++;
            if (*p && digits(&p, 2, &om) != 0)
                return -1;
            if (oh > 23 || om > 59)
                return -1;
            off = sign * (oh * 3600 + om * 60);
        }
    }
    if (*p != '\0')
        return -1;
    /* at most 9999-12-31 in days: no overflow before to_ns */
    int64_t s = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
    return to_ns(s, frac, ns);
}

/* ---- binary ------------------------------------------------------------------- */

/* Reads everything left in the stream into a malloc'ed buffer (*buf, *len), starting
 * with room for hint bytes and doubling as needed. */
static series_status read_rest(const series_input *in, size_t hint, unsigned char **buf,
                               size_t *len) {
    size_t cap = hint > 0 ? hint + 1 : 1u << 16, n = 0;
    unsigned char *b = malloc(cap);
    if (!b)
        return series_fail(in, SERIES_ENOMEM, "%s: out of memory", in->name);
    for (;;) {
        if (n == cap) {
            unsigned char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return series_fail(in, SERIES_ENOMEM, "%s: out of memory after %zu bytes", in->name,
                                   n);
            }
            b = nb, cap *= 2;
        }
        errno = 0;
        n += fread(b + n, 1, cap - n, in->f);
        if (ferror(in->f)) {
            free(b);
            return series_read_error(in);
        }
        if (feof(in->f))
            break;
    }
    *buf = b;
    *len = n;
    return SERIES_OK;
}

/* Bytes left to read in a regular file (0 when unknown, e.g. a pipe). */
static size_t remaining_hint(FILE *f) {
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode))
        return 0;
    long pos = ftell(f);
    if (pos < 0 || sb.st_size < pos)
        return 0;
    return (size_t)(sb.st_size - pos);
}

/* Converts n little-endian float64 values in place to host doubles (a no-op on
 * little-endian hosts). */
static void f64_from_le(unsigned char *b, size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    (void)b, (void)n;
#else
    for (size_t i = 0; i < n; i++) {
        uint64_t u = 0;
        for (int k = 7; k >= 0; k--)
            u = (u << 8) | b[8 * i + (size_t)k];
        memcpy(b + 8 * i, &u, 8);
    }
#endif
}

/* Widens n little-endian float32 values at b[0..4n) in place into doubles at
 * b[0..8n) (b must have room for 8n bytes): back to front, so no value is
 * overwritten before it is read. */
static void f32_to_f64(unsigned char *b, size_t n) {
    for (size_t i = n; i-- > 0;) {
        uint32_t u = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
                     (uint32_t)b[4 * i + 2] << 16 | (uint32_t)b[4 * i + 3] << 24;
        float x;
        memcpy(&x, &u, 4);
        double d = x;
        memcpy(b + 8 * i, &d, 8);
    }
}

/* Raw little-endian float64: the whole file is the data. */
static series_status read_f64(const series_input *in, series *out) {
    unsigned char *b;
    size_t len;
    series_status st = read_rest(in, remaining_hint(in->f), &b, &len);
    if (st != SERIES_OK)
        return st;
    if (len % 8 != 0) {
        free(b);
        return series_fail(in, SERIES_EDATA,
                           "%s: size %zu bytes is not a multiple of 8 (raw float64 expected)",
                           in->name, len);
    }
    f64_from_le(b, len / 8);
    out->v = (double *)(void *)b;
    out->n = len / 8;
    return SERIES_OK;
}

/* The fields of a .npy header that matter here. */
typedef struct {
    char descr[16];
    int fortran, have_descr, have_fortran, have_shape;
    size_t ndim;
    uint64_t shape[8];
} npy_header;

static void skip_ws(const char **p) {
    while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
        (*p)++;
}

/* Parses a Python string literal ('...' or "...") into dst; -1 on error. */
static int parse_pystr(const char **p, char *dst, size_t dstlen) {
    char q = **p;
    if (q != '\'' && q != '"')
        return -1;
    const char *s = ++*p, *e = strchr(s, q);
    if (!e || (size_t)(e - s) >= dstlen)
        return -1;
    memcpy(dst, s, (size_t)(e - s));
    dst[e - s] = '\0';
    *p = e + 1;
    return 0;
}

/* Parses the header dict numpy writes, e.g.
 *   {'descr': '<f8', 'fortran_order': False, 'shape': (1000,), }
 * Returns NULL on success, else a description of what is wrong. */
static const char *parse_npy_header(const char *p, npy_header *h) {
    memset(h, 0, sizeof *h);
    skip_ws(&p);
    if (*p++ != '{')
        return "header is not a Python dict";
    for (;;) {
        char key[32];
        skip_ws(&p);
        if (*p == '}')
            break;
        if (parse_pystr(&p, key, sizeof key) != 0)
            return "header has a malformed key";
        skip_ws(&p);
        if (*p++ != ':')
            return "header has a malformed entry";
        skip_ws(&p);
        if (strcmp(key, "descr") == 0) {
            if (parse_pystr(&p, h->descr, sizeof h->descr) != 0)
                return "header 'descr' is not a simple dtype string";
            h->have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (strncmp(p, "True", 4) == 0)
                h->fortran = 1, p += 4;
            else if (strncmp(p, "False", 5) == 0)
                h->fortran = 0, p += 5;
            else
                return "header 'fortran_order' is not True or False";
            h->have_fortran = 1;
        } else if (strcmp(key, "shape") == 0) {
            if (*p++ != '(')
                return "header 'shape' is not a tuple";
            for (;;) {
                skip_ws(&p);
                if (*p == ')')
                    break;
                if (!isdigit((unsigned char)*p))
                    return "header 'shape' is malformed";
                errno = 0;
                char *end;
                unsigned long long d = strtoull(p, &end, 10);
                if (errno == ERANGE)
                    return "header 'shape' is out of range";
                if (h->ndim < sizeof h->shape / sizeof h->shape[0])
                    h->shape[h->ndim] = d;
                h->ndim++;
                p = end;
                skip_ws(&p);
                if (*p == ',')
                    p++;
                else if (*p != ')')
                    return "header 'shape' is malformed";
            }
            p++;
            h->have_shape = 1;
        } else {
            return "header has an unexpected key";
        }
        skip_ws(&p);
        if (*p == ',')
            p++;
        else if (*p != '}')
            return "header dict is malformed";
    }
    if (!h->have_descr || !h->have_fortran || !h->have_shape)
        return "header lacks 'descr', 'fortran_order' or 'shape'";
    return NULL;
}

/* NumPy .npy, format versions 1.0, 2.0 and 3.0: a 1-D C-order array of little-endian
 * float64 ('<f8') or float32 ('<f4', widened to double). */
static series_status read_npy(const series_input *in, series *out) {
    unsigned char pre[12];
    size_t got = fread(pre, 1, 10, in->f);
    if (got < 10) {
        if (ferror(in->f))
            return series_read_error(in);
        return series_fail(in, SERIES_EDATA, "%s: not a .npy file (too short)", in->name);
    }
    if (memcmp(pre, "\x93NUMPY", 6) != 0)
        return series_fail(in, SERIES_EDATA, "%s: not a .npy file (bad magic)", in->name);
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return series_fail(in, SERIES_EDATA, "%s: unsupported .npy format version %d.%d", in->name,
                           major, minor);
    size_t hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    if (major >= 2) {
        if (fread(pre + 10, 1, 2, in->f) != 2)
            return series_fail(in, SERIES_EDATA, "%s: .npy header is truncated", in->name);
        hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    }
    if (hlen > NPY_MAX_HEADER)
        return series_fail(in, SERIES_EDATA, "%s: .npy header is implausibly long (%zu bytes)",
                           in->name, hlen);
    char *text = malloc(hlen + 1);
    if (!text)
        return series_fail(in, SERIES_ENOMEM, "%s: out of memory", in->name);
    if (fread(text, 1, hlen, in->f) != hlen) {
        free(text);
        return series_fail(in, SERIES_EDATA, "%s: .npy header is truncated", in->name);
    }
    text[hlen] = '\0';
    npy_header h;
    const char *bad = strlen(text) == hlen ? parse_npy_header(text, &h) : "header contains NUL";
    free(text);
    if (bad)
        return series_fail(in, SERIES_EDATA, "%s: malformed .npy file: %s", in->name, bad);

    size_t item = strcmp(h.descr, "<f8") == 0 ? 8 : strcmp(h.descr, "<f4") == 0 ? 4 : 0;
    if (!item)
        return series_fail(
            in, SERIES_EDATA,
            "%s: .npy dtype '%s' is not supported (need little-endian float64 '<f8' or "
            "float32 '<f4')",
            in->name, h.descr);
    if (h.ndim != 1)
        return series_fail(in, SERIES_EDATA, "%s: .npy array has %zu dimensions (need a 1-D array)",
                           in->name, h.ndim);
    if (h.fortran)
        return series_fail(in, SERIES_EDATA, "%s: .npy array is in Fortran order (need C order)",
                           in->name);
    uint64_t n = h.shape[0];
    if (n > SIZE_MAX / 8)
        return series_fail(in, SERIES_EDATA, "%s: .npy array of %llu values is too large", in->name,
                           (unsigned long long)n);

    unsigned char *b;
    size_t len;
    series_status st = read_rest(in, remaining_hint(in->f), &b, &len);
    if (st != SERIES_OK)
        return st;
    size_t want = (size_t)n * item;
    if (len != want) {
        free(b);
        return series_fail(in, SERIES_EDATA,
                           len < want ? "%s: .npy data is truncated (%zu of %zu bytes)"
                                      : "%s: .npy file has %zu bytes of data, expected %zu",
                           in->name, len, want);
    }
    if (item == 4) {
        unsigned char *wide = realloc(b, n ? (size_t)n * 8 : 1);
        if (!wide) {
            free(b);
            return series_fail(in, SERIES_ENOMEM, "%s: out of memory", in->name);
        }
        b = wide;
        f32_to_f64(b, (size_t)n);
    } else {
        f64_from_le(b, (size_t)n);
    }
    out->v = (double *)(void *)b;
    out->n = (size_t)n;
    return SERIES_OK;
}

/* ---- entry point -------------------------------------------------------------- */

/* Opens path for reading into *in ("-" is standard input); directories are refused. */
static series_status open_input(const char *path, series_input *in) {
    int is_stdin = strcmp(path, "-") == 0;
    in->f = is_stdin ? stdin : NULL;
    in->name = is_stdin ? "<stdin>" : path;
    if (!is_stdin) {
        in->f = fopen(path, "rb");
        if (!in->f)
            return series_fail(in, SERIES_EOPEN, "%s: %s", path, strerror(errno));
        struct stat sb;
        if (fstat(fileno(in->f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
            fclose(in->f);
            return series_fail(in, SERIES_EOPEN, "%s: %s", path, strerror(EISDIR));
        }
    }
    return SERIES_OK;
}

static void close_input(series_input *in) {
    if (in->f != stdin)
        fclose(in->f);
}

series_status series_read(const char *path, series_format fmt, series *out, char *err,
                          size_t errlen) {
    series_options o = {.fmt = fmt};
    return series_read_with(path, &o, out, err, errlen);
}

series_status series_read_with(const char *path, const series_options *o, series *out, char *err,
                               size_t errlen) {
    *out = (series){0};
    series_input in = {NULL, path, err, errlen};
    series_format fmt = series_format_for(path, o->fmt);
    int binary = fmt == SERIES_FMT_NPY || fmt == SERIES_FMT_F64;
    if (binary && (o->column || o->delimiter || o->decimal_comma))
        return series_fail(&in, SERIES_EUSAGE,
                           "%s: --column, --delimiter and --decimal-comma apply to text input only",
                           path);
    series_status st = open_input(path, &in);
    if (st != SERIES_OK)
        return st;
    switch (fmt) {
    case SERIES_FMT_NPY: st = read_npy(&in, out); break;
    case SERIES_FMT_F64: st = read_f64(&in, out); break;
    default: st = series_read_text(&in, o, out); break;
    }
    if (st == SERIES_OK && out->n == 0)
        st = series_fail(&in, SERIES_EDATA, "%s: no values", in.name);
    close_input(&in);
    if (st != SERIES_OK)
        series_free(out);
    return st;
}

series_status series_read_bytes(const char *path, unsigned char **buf, size_t *len, char *err,
                                size_t errlen) {
    *buf = NULL;
    *len = 0;
    series_input in = {NULL, path, err, errlen};
    series_status st = open_input(path, &in);
    if (st != SERIES_OK)
        return st;
    st = read_rest(&in, remaining_hint(in.f), buf, len);
    close_input(&in);
    return st;
}
