/* SPDX-License-Identifier: Apache-2.0 */
/* json.c - the JSON reader of json.h: a recursive-descent parser over the whole text,
 * values into a tree. */
#include "lib/json.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

/* Parser state: where we are, and where messages go. */
typedef struct {
    const char *s, *end, *path;
    size_t line, depth;
    int status; /* JSON_EDATA or JSON_ENOMEM once failed */
    char *err;
    size_t errlen;
} jparser;

static int fail(jparser *p, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records a failure "PATH:LINE: what" at the current line; returns -1. */
static int fail(jparser *p, int status, const char *fmt, ...) {
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s:%zu: %s", p->path, p->line, what);
    p->status = status;
    return -1;
}

#define BAD(p, ...) fail(p, JSON_EDATA, __VA_ARGS__)
#define NOMEM(p)    fail(p, JSON_ENOMEM, "out of memory")

void json_free(json_value *v) {
    free(v->string);
    for (size_t k = 0; k < v->n; k++) {
        json_free(&v->items[k]);
        if (v->keys)
            free(v->keys[k]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

const json_value *json_member(const json_value *o, const char *key) {
    if (!o || o->type != JSON_OBJECT)
        return NULL;
    for (size_t k = 0; k < o->n; k++)
        if (strcmp(o->keys[k], key) == 0)
            return &o->items[k];
    return NULL;
}

const char *json_type_name(json_type t) {
    switch (t) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "a boolean";
    case JSON_NUMBER: return "a number";
    case JSON_STRING: return "a string";
    case JSON_ARRAY: return "an array";
    case JSON_OBJECT: return "an object";
    }
    return "?";
}

/* Skips white space, counting lines. */
static void skip_space(jparser *p) {
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->line += *p->s++ == '\n';
}

static int parse_value(jparser *p, json_value *v);

/* The value of hex digit c. */
static unsigned hex_value(char c) {
    return isdigit((unsigned char)c) ? (unsigned)(c - '0')
                                     : (unsigned)(tolower((unsigned char)c) - 'a' + 10);
}

/* A string literal (at its opening quote) into a new *out. Escapes: the simple ones,
 * and \u of ASCII (not NUL). */
static int parse_string(jparser *p, char **out) {
    size_t cap = 16, n = 0;
    char *b = malloc(cap);
    if (!b)
        return NOMEM(p);
    p->s++; /* the opening quote */
    for (;;) {
        if (p->s >= p->end || *p->s == '\n') {
            free(b);
            return BAD(p, "unterminated string");
        }
        char c = *p->s++;
        if (c == '"')
            break;
        if (c == '\\') {
            char e = p->s < p->end ? *p->s++ : '\0';
            switch (e) {
            case '"':
            case '\\':
            case '/': c = e; break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                unsigned code = 0;
                for (int k = 0; k < 4; k++, p->s++) {
                    if (p->s >= p->end || !isxdigit((unsigned char)*p->s)) {
                        free(b);
                        return BAD(p, "bad \\u escape");
                    }
                    code = code * 16 + hex_value(*p->s);
                }
                if (code == 0 || code > 0x7f) {
                    free(b);
                    return BAD(p, "\\u escape outside ASCII");
                }
                c = (char)code;
                break;
            }
            default: free(b); return BAD(p, "bad escape '\\%c'", e ? e : '?');
            }
        }
        if (n + 2 > cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                return NOMEM(p);
            }
            b = nb;
        }
        b[n++] = c;
    }
    b[n] = '\0';
    *out = b;
    return 0;
}

/* A number in JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?. */
static int parse_number(jparser *p, json_value *v) {
    const char *s = p->s, *q = s;
    char buf[64];
    if (q < p->end && *q == '-')
        q++;
    if (q >= p->end || !isdigit((unsigned char)*q))
        return BAD(p, "bad number");
    if (*q == '0')
        q++;
    else
        while (q < p->end && isdigit((unsigned char)*q))
            q++;
    if (q < p->end && *q == '.') {
        if (++q >= p->end || !isdigit((unsigned char)*q))
            return BAD(p, "bad number");
        while (q < p->end && isdigit((unsigned char)*q))
            q++;
    }
    if (q < p->end && (*q == 'e' || *q == 'E')) {
        if (++q < p->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= p->end || !isdigit((unsigned char)*q))
            return BAD(p, "bad number");
        while (q < p->end && isdigit((unsigned char)*q))
            q++;
    }
    if ((size_t)(q - s) >= sizeof buf)
        return BAD(p, "number too long");
    memcpy(buf, s, (size_t)(q - s));
    buf[q - s] = '\0';
    errno = 0;
    v->type = JSON_NUMBER;
    v->number = strtod(buf, NULL);
    if (errno == ERANGE && (v->number > 1 || v->number < -1))
        return BAD(p, "number out of range");
    p->s = q;
    return 0;
}

/* The members of an array or object (at its opening bracket). */
static int parse_compound(jparser *p, json_value *v, int obj) {
    size_t cap = 0;
    char close = obj ? '}' : ']';
    p->s++;
    v->type = obj ? JSON_OBJECT : JSON_ARRAY;
    skip_space(p);
    if (p->s < p->end && *p->s == close) {
        p->s++;
        return 0;
    }
    for (;;) {
        if (v->n == cap) {
            cap = cap ? 2 * cap : 8;
            json_value *ni = realloc(v->items, cap * sizeof *ni);
            if (!ni)
                return NOMEM(p);
            v->items = ni;
            if (obj) {
                char **nk = realloc(v->keys, cap * sizeof *nk);
                if (!nk)
                    return NOMEM(p);
                v->keys = nk;
            }
        }
        memset(&v->items[v->n], 0, sizeof v->items[v->n]);
        if (obj) {
            skip_space(p);
            if (p->s >= p->end || *p->s != '"')
                return BAD(p, "expected a member name");
            if (parse_string(p, &v->keys[v->n]) != 0)
                return -1;
            skip_space(p);
            if (p->s >= p->end || *p->s != ':') {
                free(v->keys[v->n]);
                return BAD(p, "expected ':' after a member name");
            }
            p->s++;
        }
        v->n++; /* counted now, so that json_free frees a half-parsed member */
        if (parse_value(p, &v->items[v->n - 1]) != 0)
            return -1;
        skip_space(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        if (p->s < p->end && *p->s == close) {
            p->s++;
            return 0;
        }
        return BAD(p, "expected ',' or '%c'", close);
    }
}

/* Whether the text at p starts with the literal word. */
static int starts_with(const jparser *p, const char *word) {
    size_t n = strlen(word);
    return (size_t)(p->end - p->s) >= n && memcmp(p->s, word, n) == 0;
}

static int parse_value(jparser *p, json_value *v) {
    skip_space(p);
    v->line = p->line;
    if (++p->depth > JSON_MAX_DEPTH)
        return BAD(p, "nested too deeply");
    int rc = 0;
    char c = p->s < p->end ? *p->s : '\0';
    if (c == '{' || c == '[') {
        rc = parse_compound(p, v, c == '{');
    } else if (c == '"') {
        v->type = JSON_STRING;
        rc = parse_string(p, &v->string);
    } else if (starts_with(p, "true") || starts_with(p, "false")) {
        v->type = JSON_BOOL;
        v->number = c == 't';
        p->s += c == 't' ? 4 : 5;
    } else if (starts_with(p, "null")) {
        v->type = JSON_NULL;
        p->s += 4;
    } else if (c == '-' || isdigit((unsigned char)c)) {
        rc = parse_number(p, v);
    } else if (p->s >= p->end) {
        rc = BAD(p, "unexpected end of input");
    } else {
        rc = isprint((unsigned char)c) ? BAD(p, "unexpected character '%c'", c)
                                       : BAD(p, "unexpected byte 0x%02x", (unsigned char)c);
    }
    p->depth--;
    return rc;
}

int json_parse(const char *text, size_t len, const char *path, size_t first_line, json_value *out,
               char *err, size_t errlen) {
    jparser p = {text, text + len, path, first_line, 0, JSON_OK, err, errlen};
    memset(out, 0, sizeof *out);
    const char *nul = memchr(text, '\0', len);
    if (nul) { /* binary data: say where, like any other malformed line */
        for (const char *c = text; c < nul; c++)
            p.line += *c == '\n';
        BAD(&p, "NUL byte: not a text file");
        return p.status;
    }
    if (parse_value(&p, out) == 0) {
        skip_space(&p);
        if (p.s < p.end)
            BAD(&p, "trailing data after the JSON value");
    }
    if (p.status != JSON_OK)
        json_free(out);
    return p.status;
}
