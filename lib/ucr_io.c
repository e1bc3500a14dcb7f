/* SPDX-License-Identifier: Apache-2.0 */
/* ucr_io.c - UCR .tsv and sktime/aeon .ts readers (ucr_io.h). The whole file is read
 * at once (series_read_bytes) and parsed line by line in place. */
#include "lib/ucr_io.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ucr_format_parse(const char *s, ucr_format *out) {
    if (strcmp(s, "tsv") == 0)
        *out = UCR_FMT_TSV;
    else if (strcmp(s, "ts") == 0)
        *out = UCR_FMT_TS;
    else
        return -1;
    return 0;
}

void ucr_free(ucr_set *s) {
    if (s->label)
        for (size_t j = 0; j < s->n; j++)
            free(s->label[j]);
    for (size_t k = 0; k < s->n_classes; k++)
        free(s->classes[k]);
    free(s->label);
    free(s->classes);
    free(s->x);
    memset(s, 0, sizeof *s);
}

/* Parser state: the growing set, where we are, and the message buffer. */
typedef struct {
    const char *path;
    size_t line;
    ucr_set *s;
    size_t cap; /* series the arrays hold */
    char *err;
    size_t errlen;
} parser;

static series_status bad(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ucr_where(char *err, size_t errlen, const char *path, size_t line, const char *fmt,
               va_list ap) {
    char what[256];
    vsnprintf(what, sizeof what, fmt, ap);
    snprintf(err, errlen, "%s:%zu: %s", path, line, what);
}

static series_status bad(parser *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ucr_where(p->err, p->errlen, p->path, p->line, fmt, ap);
    va_end(ap);
    return SERIES_EDATA;
}

static series_status nomem(parser *p) {
    snprintf(p->err, p->errlen, "%s: out of memory", p->path);
    return SERIES_ENOMEM;
}

/* s without its leading whitespace, its trailing whitespace cut off in place. */
static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    size_t len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        s[--len] = '\0';
    return s;
}

/* Parses one value token (trimmed); "?" and "nan" (any case) are NaN. Returns 0 on
 * success. */
static int parse_value(char *tok, double *v) {
    tok = trim(tok);
    if (*tok == '\0')
        return -1;
    if (strcmp(tok, "?") == 0 || strcasecmp(tok, "nan") == 0) {
        *v = NAN;
        return 0;
    }
    char *end;
    errno = 0;
    *v = strtod(tok, &end);
    return (*end != '\0' || errno == ERANGE) ? -1 : 0;
}

/* Appends a series (values v[0..len-1], label lab or NULL) to the set. */
static series_status append(parser *p, const double *v, size_t len, const char *lab) {
    ucr_set *s = p->s;
    if (s->n == 0) {
        s->len = len;
    } else if (len != s->len) {
        return bad(p, "%zu values, expected %zu like the series before", len, s->len);
    }
    if (s->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        double *x = realloc(s->x, cap * s->len * sizeof *x);
        if (!x)
            return nomem(p);
        s->x = x;
        char **l = realloc(s->label, cap * sizeof *l);
        if (!l)
            return nomem(p);
        s->label = l;
        p->cap = cap;
    }
    memcpy(s->x + s->n * s->len, v, len * sizeof *v);
    s->label[s->n] = lab ? strdup(lab) : NULL;
    if (lab && !s->label[s->n])
        return nomem(p);
    s->n++;
    return SERIES_OK;
}

/* Splits line at any of seps into values (growing *v, *vcap); returns the count or
 * (size_t)-1 after reporting a bad token. */
static size_t split_values(parser *p, char *line, const char *seps, double **v, size_t *vcap) {
    size_t k = 0;
    for (char *save = NULL, *tok = strtok_r(line, seps, &save); tok;
         tok = strtok_r(NULL, seps, &save)) {
        if (k == *vcap) {
            size_t cap = *vcap ? 2 * *vcap : 256;
            double *nv = realloc(*v, cap * sizeof *nv);
            if (!nv) {
                nomem(p);
                return (size_t)-1;
            }
            *v = nv, *vcap = cap;
        }
        if (parse_value(tok, &(*v)[k]) != 0) {
            bad(p, "value %zu ('%.40s') is not a number", k + 1, tok);
            return (size_t)-1;
        }
        k++;
    }
    return k;
}

/* One data line of a .tsv: label, then values. */
static series_status tsv_line(parser *p, char *line, double **v, size_t *vcap) {
    size_t cut = strcspn(line, "\t,");
    if (line[cut] == '\0')
        return bad(p, "expected a label and values separated by tabs or commas");
    line[cut] = '\0';
    char *lab = trim(line);
    if (*lab == '\0')
        return bad(p, "empty class label");
    size_t k = split_values(p, line + cut + 1, "\t,", v, vcap);
    if (k == (size_t)-1)
        return strstr(p->err, "memory") ? SERIES_ENOMEM : SERIES_EDATA;
    if (k == 0)
        return bad(p, "no values after the label");
    return append(p, *v, k, lab);
}

/* Header state of a .ts file. */
typedef struct {
    int data, labelled;
} ts_header;

/* One header line of a .ts ('@' already seen). */
static series_status ts_keyword(parser *p, char *line, ts_header *h) {
    char *save = NULL, *key = strtok_r(line, " \t", &save);
    char *arg = strtok_r(NULL, " \t", &save);
    if (strcasecmp(key, "@data") == 0) {
        h->data = 1;
        return SERIES_OK;
    }
    if (strcasecmp(key, "@timestamps") == 0 && arg && strcasecmp(arg, "true") == 0)
        return bad(p, "time-stamped .ts data is not supported");
    if (strcasecmp(key, "@univariate") == 0 && arg && strcasecmp(arg, "false") == 0)
        return bad(p, "multivariate .ts data is not supported (univariate only)");
    if (strcasecmp(key, "@targetlabel") == 0 && arg && strcasecmp(arg, "true") == 0)
        return bad(p, "regression .ts data (@targetLabel) is not supported");
    if (strcasecmp(key, "@classlabel") == 0) {
        if (!arg || (strcasecmp(arg, "true") != 0 && strcasecmp(arg, "false") != 0))
            return bad(p, "@classLabel must be followed by true or false");
        h->labelled = strcasecmp(arg, "true") == 0;
        ucr_set *s = p->s;
        for (char *c = strtok_r(NULL, " \t", &save); c && h->labelled;
             c = strtok_r(NULL, " \t", &save)) {
            char **nc = realloc(s->classes, (s->n_classes + 1) * sizeof *nc);
            if (!nc)
                return nomem(p);
            s->classes = nc;
            if (!(s->classes[s->n_classes] = strdup(c)))
                return nomem(p);
            s->n_classes++;
        }
        if (h->labelled && s->n_classes == 0)
            return bad(p, "@classLabel true lists no classes");
    }
    return SERIES_OK; /* other keywords (@problemName, @missing, ...) carry nothing we need */
}

/* One data line of a .ts: values, then ':' and the label when labelled. */
static series_status ts_line(parser *p, char *line, const ts_header *h, double **v, size_t *vcap) {
    char *lab = NULL;
    if (h->labelled) {
        char *colon = strrchr(line, ':');
        if (!colon)
            return bad(p, "expected values, ':' and a class label");
        *colon = '\0';
        lab = trim(colon + 1);
        if (*lab == '\0')
            return bad(p, "empty class label");
        if (ucr_class_index((const char *const *)p->s->classes, p->s->n_classes, lab) < 0)
            return bad(p, "class label '%.40s' is not in the @classLabel list", lab);
    }
    if (strchr(line, ':'))
        return bad(p, "more than one dimension: multivariate .ts data is not supported");
    size_t k = split_values(p, line, ",", v, vcap);
    if (k == (size_t)-1)
        return strstr(p->err, "memory") ? SERIES_ENOMEM : SERIES_EDATA;
    if (k == 0)
        return bad(p, "no values");
    return append(p, *v, k, lab);
}

series_status ucr_read_text(const char *path, char **text, size_t *len, char *err, size_t errlen) {
    unsigned char *buf = NULL;
    series_status st = series_read_bytes(path, &buf, len, err, errlen);
    if (st != SERIES_OK)
        return st;
    *text = realloc(buf, *len + 1);
    if (!*text) {
        free(buf);
        snprintf(err, errlen, "%s: out of memory", path);
        return SERIES_ENOMEM;
    }
    (*text)[*len] = '\0';
    return SERIES_OK;
}

series_status ucr_read(const char *path, ucr_format fmt, ucr_set *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (fmt == UCR_FMT_AUTO) {
        size_t pl = strlen(path);
        fmt = pl >= 3 && strcmp(path + pl - 3, ".ts") == 0 ? UCR_FMT_TS : UCR_FMT_TSV;
    }
    char *text;
    size_t len;
    series_status st = ucr_read_text(path, &text, &len, err, errlen);
    if (st != SERIES_OK)
        return st;
    parser p = {path, 0, out, 0, err, errlen};
    const char *nul = memchr(text, '\0', len);
    if (nul) { /* binary data: say where, like any other malformed line */
        p.line = 1;
        for (const char *c = text; c < nul; c++)
            p.line += *c == '\n';
        st = bad(&p, "NUL byte: not a text file");
    }
    ts_header h = {0, 0};
    double *v = NULL;
    size_t vcap = 0;
    for (char *line = st == SERIES_OK ? text : NULL, *next; st == SERIES_OK && line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        p.line++;
        size_t ll = strlen(line);
        if (ll > 0 && line[ll - 1] == '\r')
            line[--ll] = '\0';
        char *q = line;
        while (isspace((unsigned char)*q))
            q++;
        if (st != SERIES_OK || *q == '\0')
            continue;
        if (fmt == UCR_FMT_TSV)
            st = tsv_line(&p, q, &v, &vcap);
        else if (*q == '#' || *q == '%')
            continue;
        else if (!h.data && *q == '@')
            st = ts_keyword(&p, q, &h);
        else if (!h.data)
            st = bad(&p, "data before @data");
        else
            st = ts_line(&p, q, &h, &v, &vcap);
    }
    free(v);
    free(text);
    if (st == SERIES_OK && out->n == 0) {
        snprintf(err, errlen, "%s: no series", path);
        st = SERIES_EDATA;
    }
    if (st == SERIES_OK && fmt == UCR_FMT_TS && !h.labelled) {
        free(out->label);
        out->label = NULL;
    }
    if (st != SERIES_OK)
        ucr_free(out);
    return st;
}

/* Sort helpers for ucr_classes. */
static int cmp_num(const void *a, const void *b) {
    double x = strtod(*(const char *const *)a, NULL), y = strtod(*(const char *const *)b, NULL);
    return (x > y) - (x < y);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int is_number(const char *s) {
    char *end;
    errno = 0;
    strtod(s, &end);
    return *s && *end == '\0' && errno == 0;
}

int ucr_classes(const ucr_set *s, const char ***classes, size_t *n) {
    *classes = NULL, *n = 0;
    size_t m = s->classes ? s->n_classes : s->n;
    const char **c = malloc((m ? m : 1) * sizeof *c);
    if (!c)
        return -1;
    if (s->classes) {
        for (size_t k = 0; k < m; k++)
            c[k] = s->classes[k];
        *classes = c, *n = m;
        return 0;
    }
    int numeric = 1;
    for (size_t j = 0; j < s->n; j++) {
        c[j] = s->label ? s->label[j] : "";
        numeric &= is_number(c[j]);
    }
    qsort(c, m, sizeof *c, numeric ? cmp_num : cmp_str);
    size_t k = 0;
    for (size_t j = 0; j < m; j++)
        if (k == 0 || (numeric ? cmp_num(&c[j], &c[k - 1]) : cmp_str(&c[j], &c[k - 1])) != 0)
            c[k++] = c[j];
    *classes = c, *n = k;
    return 0;
}

int ucr_class_index(const char *const *classes, size_t n, const char *label) {
    for (size_t k = 0; k < n; k++)
        if (strcmp(classes[k], label) == 0)
            return (int)k;
    /* numeric labels match by value ("1" and "1.0") */
    if (is_number(label))
        for (size_t k = 0; k < n; k++)
            if (is_number(classes[k]) && strtod(classes[k], NULL) == strtod(label, NULL))
                return (int)k;
    return -1;
}
