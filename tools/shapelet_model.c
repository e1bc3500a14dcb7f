/* shapelet_model.c - writing and reading model files (shapelet_model.h). Reading goes
 * through a small JSON parser (values into a tree) written for this one format: no
 * JSON library is among the build's dependencies. */
#include "shapelet_model.h"

#include "emit.h"
#include "ucr_io.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- Writing ---------------------------------------------------------------------- */

static void put_double(FILE *out, double x) {
    char buf[40];
    if (!isfinite(x)) {
        fputs("null", out);
        return;
    }
    emit_double(buf, sizeof buf, x);
    fputs(buf, out);
}

void shapelet_model_write_node(FILE *out, const shapelet_model *m, size_t k) {
    const tsm_stree_node *nd = &m->tree->nodes[k];
    fprintf(out, "{\"id\":%zu,\"leaf\":%s,\"label\":", k, nd->leaf ? "true" : "false");
    emit_json_string(out, m->classes[nd->label]);
    fprintf(out, ",\"n\":%zu", nd->n_train);
    if (!nd->leaf) {
        fprintf(out, ",\"series\":%zu,\"start\":%zu,\"length\":%zu,\"threshold\":", nd->series,
                nd->start, nd->length);
        put_double(out, nd->threshold);
        fputs(",\"gain\":", out);
        put_double(out, nd->gain);
        fputs(",\"gap\":", out);
        put_double(out, nd->gap);
        fprintf(out, ",\"left\":%zu,\"right\":%zu,\"shapelet\":[", nd->left, nd->right);
        for (size_t i = 0; i < nd->length; i++) {
            fputs(i ? "," : "", out);
            put_double(out, nd->values[i]);
        }
        fputc(']', out);
        if (nd->op != TSM_SHAPELET_SINGLE) {
            fprintf(out,
                    ",\"op\":\"%s\",\"series2\":%zu,\"start2\":%zu,\"length2\":%zu,\"shapelet2\":[",
                    nd->op == TSM_SHAPELET_AND ? "and" : "or", nd->series2, nd->start2,
                    nd->length2);
            for (size_t i = 0; i < nd->length2; i++) {
                fputs(i ? "," : "", out);
                put_double(out, nd->values2[i]);
            }
            fputc(']', out);
        }
    }
    fputc('}', out);
}

int shapelet_model_write(FILE *out, const shapelet_model *m) {
    const tsm_stree *t = m->tree;
    fputs("{\"format\":\"tsmine-shapelet-tree\",\"version\":1,\"classes\":[", out);
    for (int c = 0; c < t->n_classes; c++) {
        fputs(c ? "," : "", out);
        emit_json_string(out, m->classes[c]);
    }
    fprintf(out,
            "],\"w\":%zu,\"series_length\":%zu,\"min_len\":%zu,\"max_len\":%zu,\"step\":%zu,"
            "\"heuristic\":%s,\"nodes\":[",
            t->w, m->series_length, m->min_len, m->max_len, m->step,
            m->heuristic ? "true" : "false");
    for (size_t k = 0; k < t->n_nodes; k++) {
        fputs(k ? "," : "", out);
        shapelet_model_write_node(out, m, k);
    }
    fputs("]}\n", out);
    return ferror(out) ? -1 : 0;
}

/* ---- A small JSON parser ---------------------------------------------------------- */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype type;
    double num;         /* J_NUM, J_BOOL (0/1) */
    char *str;          /* J_STR */
    struct jval *items; /* J_ARR, J_OBJ: n values */
    char **keys;        /* J_OBJ: n keys */
    size_t n;
} jval;

typedef struct {
    const char *s, *path;
    size_t line, depth;
    char *err;
    size_t errlen;
} jparser;

static int jfail(jparser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int jfail(jparser *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ucr_where(p->err, p->errlen, p->path, p->line, fmt, ap);
    va_end(ap);
    return -1;
}

static void jfree(jval *v) {
    free(v->str);
    for (size_t k = 0; k < v->n; k++) {
        jfree(&v->items[k]);
        if (v->keys)
            free(v->keys[k]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

static void jspace(jparser *p) {
    while (isspace((unsigned char)*p->s))
        p->line += *p->s++ == '\n';
}

static int jvalue(jparser *p, jval *v);

/* A string literal (simple escapes; \u escapes of ASCII only) into *out. */
static int jstring(jparser *p, char **out) {
    size_t cap = 16, n = 0;
    char *b = malloc(cap);
    if (!b)
        return jfail(p, "out of memory");
    p->s++; /* opening quote */
    while (*p->s != '"') {
        char c = *p->s++;
        if (c == '\0' || c == '\n') {
            free(b);
            return jfail(p, "unterminated string");
        }
        if (c == '\\') {
            char e = *p->s++;
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
                    if (!isxdigit((unsigned char)*p->s)) {
                        free(b);
                        return jfail(p, "bad \\u escape");
                    }
                    code = code * 16 + (unsigned)(isdigit((unsigned char)*p->s)
                                                      ? *p->s - '0'
                                                      : tolower((unsigned char)*p->s) - 'a' + 10);
                }
                if (code == 0 || code > 0x7f) {
                    free(b);
                    return jfail(p, "\\u escape outside ASCII");
                }
                c = (char)code;
                break;
            }
            default: free(b); return jfail(p, "bad escape '\\%c'", e);
            }
        }
        if (n + 2 > cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                free(b);
                return jfail(p, "out of memory");
            }
            b = nb;
        }
        b[n++] = c;
    }
    p->s++;
    b[n] = '\0';
    *out = b;
    return 0;
}

/* The members of an array or object (opening bracket seen). */
static int jcompound(jparser *p, jval *v, int obj) {
    size_t cap = 0;
    p->s++;
    v->type = obj ? J_OBJ : J_ARR;
    jspace(p);
    if (*p->s == (obj ? '}' : ']')) {
        p->s++;
        return 0;
    }
    for (;;) {
        if (v->n == cap) {
            cap = cap ? 2 * cap : 8;
            jval *ni = realloc(v->items, cap * sizeof *ni);
            if (!ni)
                return jfail(p, "out of memory");
            v->items = ni;
            if (obj) {
                char **nk = realloc(v->keys, cap * sizeof *nk);
                if (!nk)
                    return jfail(p, "out of memory");
                v->keys = nk;
            }
        }
        memset(&v->items[v->n], 0, sizeof v->items[v->n]);
        if (obj) {
            jspace(p);
            if (*p->s != '"')
                return jfail(p, "expected a member name");
            if (jstring(p, &v->keys[v->n]) != 0)
                return -1;
            jspace(p);
            if (*p->s++ != ':') {
                free(v->keys[v->n]);
                return jfail(p, "expected ':' after a member name");
            }
        }
        v->n++;
        if (jvalue(p, &v->items[v->n - 1]) != 0)
            return -1;
        jspace(p);
        if (*p->s == ',') {
            p->s++;
            continue;
        }
        if (*p->s == (obj ? '}' : ']')) {
            p->s++;
            return 0;
        }
        return jfail(p, "expected ',' or '%c'", obj ? '}' : ']');
    }
}

static int jvalue(jparser *p, jval *v) {
    jspace(p);
    if (++p->depth > 64)
        return jfail(p, "nested too deeply");
    int rc = 0;
    const char *s = p->s;
    if (*s == '{' || *s == '[') {
        rc = jcompound(p, v, *s == '{');
    } else if (*s == '"') {
        v->type = J_STR;
        rc = jstring(p, &v->str);
    } else if (strncmp(s, "true", 4) == 0 || strncmp(s, "false", 5) == 0) {
        v->type = J_BOOL;
        v->num = *s == 't';
        p->s += *s == 't' ? 4 : 5;
    } else if (strncmp(s, "null", 4) == 0) {
        v->type = J_NULL;
        p->s += 4;
    } else if (*s == '-' || isdigit((unsigned char)*s)) {
        char *end;
        errno = 0;
        v->type = J_NUM;
        v->num = strtod(s, &end);
        if (end == s || errno == ERANGE)
            rc = jfail(p, "bad number");
        p->s = end;
    } else {
        rc = jfail(p, *s ? "unexpected character '%c'" : "unexpected end of file%c", *s ? *s : ' ');
    }
    p->depth--;
    return rc;
}

/* ---- From JSON to a model --------------------------------------------------------- */

static const jval *member(const jval *o, const char *key) {
    if (o->type != J_OBJ)
        return NULL;
    for (size_t k = 0; k < o->n; k++)
        if (strcmp(o->keys[k], key) == 0)
            return &o->items[k];
    return NULL;
}

/* A whole non-negative number member into *out; returns 0 or -1. */
static int get_count(const jval *o, const char *key, size_t *out) {
    const jval *v = member(o, key);
    if (!v || v->type != J_NUM || v->num < 0 || v->num != floor(v->num) || v->num > 1e15)
        return -1;
    *out = (size_t)v->num;
    return 0;
}

static int get_number(const jval *o, const char *key, double *out) {
    const jval *v = member(o, key);
    if (!v || v->type != J_NUM)
        return -1;
    *out = v->num;
    return 0;
}

static int get_bool(const jval *o, const char *key, int *out) {
    const jval *v = member(o, key);
    if (!v || v->type != J_BOOL)
        return -1;
    *out = (int)v->num;
    return 0;
}

void shapelet_model_free(shapelet_model *m) {
    if (m->tree)
        for (int c = 0; c < m->tree->n_classes; c++)
            free(m->classes[c]);
    free(m->classes);
    tsm_stree_destroy(&m->tree);
    memset(m, 0, sizeof *m);
}

/* The array key of object o as length finite numbers into a new *out; returns 0, or
 * -1 for a missing or wrong array, -2 for a non-finite item, -3 when out of memory. */
static int get_values(const jval *o, const char *key, size_t length, double **out) {
    const jval *sh = member(o, key);
    *out = NULL;
    if (!sh || sh->type != J_ARR || sh->n != length || length < 3)
        return -1;
    if (!(*out = malloc(length * sizeof **out)))
        return -3;
    for (size_t i = 0; i < length; i++) {
        if (sh->items[i].type != J_NUM || !isfinite(sh->items[i].num)) {
            free(*out);
            *out = NULL;
            return -2;
        }
        (*out)[i] = sh->items[i].num;
    }
    return 0;
}

/* Builds the model from the parsed document; returns 0 or -1 with err set. */
static int from_json(const jval *doc, const char *path, shapelet_model *m, char *err,
                     size_t errlen) {
#define BAD(...)                                                                                   \
    do {                                                                                           \
        char what_[200];                                                                           \
        snprintf(what_, sizeof what_, __VA_ARGS__);                                                \
        snprintf(err, errlen, "%s: %s", path, what_);                                              \
        return -1;                                                                                 \
    } while (0)
    const jval *fmt = member(doc, "format"), *ver = member(doc, "version");
    if (!fmt || fmt->type != J_STR || strcmp(fmt->str, "tsmine-shapelet-tree") != 0)
        BAD("not a tsmine shapelet model (no \"format\":\"tsmine-shapelet-tree\")");
    if (!ver || ver->type != J_NUM || ver->num != 1)
        BAD("unsupported model version (this tsmine reads version 1)");
    const jval *cls = member(doc, "classes"), *nodes = member(doc, "nodes");
    if (!cls || cls->type != J_ARR || cls->n == 0 || cls->n > 1000000)
        BAD("\"classes\" must be a non-empty array of names");
    if (!nodes || nodes->type != J_ARR || nodes->n == 0)
        BAD("\"nodes\" must be a non-empty array");
    size_t w;
    if (get_count(doc, "w", &w) || get_count(doc, "series_length", &m->series_length) ||
        get_count(doc, "min_len", &m->min_len) || get_count(doc, "max_len", &m->max_len) ||
        get_count(doc, "step", &m->step) || get_bool(doc, "heuristic", &m->heuristic))
        BAD("missing or invalid w, series_length, min_len, max_len, step or heuristic");
    m->tree = tsm_stree_new((int)cls->n, w);
    m->classes = calloc(cls->n, sizeof *m->classes);
    if (!m->tree || !m->classes)
        BAD("out of memory");
    for (size_t c = 0; c < cls->n; c++) {
        if (cls->items[c].type != J_STR)
            BAD("class %zu is not a string", c);
        if (!(m->classes[c] = strdup(cls->items[c].str)))
            BAD("out of memory");
    }
    for (size_t k = 0; k < nodes->n; k++) {
        const jval *o = &nodes->items[k], *lab = member(o, "label");
        tsm_stree_node nd = {0};
        size_t id;
        if (get_count(o, "id", &id) || id != k)
            BAD("node %zu: missing or wrong \"id\"", k);
        if (get_bool(o, "leaf", &nd.leaf) || get_count(o, "n", &nd.n_train))
            BAD("node %zu: missing or invalid \"leaf\" or \"n\"", k);
        if (!lab || lab->type != J_STR ||
            (nd.label = ucr_class_index((const char *const *)m->classes, cls->n, lab->str)) < 0)
            BAD("node %zu: \"label\" is not one of \"classes\"", k);
        if (!nd.leaf) {
            const jval *op = member(o, "op");
            if (get_count(o, "series", &nd.series) || get_count(o, "start", &nd.start) ||
                get_count(o, "length", &nd.length) || get_number(o, "threshold", &nd.threshold) ||
                get_number(o, "gain", &nd.gain) || get_number(o, "gap", &nd.gap) ||
                get_count(o, "left", &nd.left) || get_count(o, "right", &nd.right))
                BAD("node %zu: missing or invalid series, start, length, threshold, gain, gap, "
                    "left or right",
                    k);
            int e = get_values(o, "shapelet", nd.length, &nd.values);
            if (e == -1)
                BAD("node %zu: \"shapelet\" must hold \"length\" (>= 3) numbers", k);
            if (e == -2)
                BAD("node %zu: a shapelet value is not a finite number", k);
            if (e == -3)
                BAD("out of memory");
            if (op) { /* a logical node: a second shapelet joined by AND or OR */
                nd.op = op->type != J_STR             ? -1
                        : strcmp(op->str, "and") == 0 ? TSM_SHAPELET_AND
                        : strcmp(op->str, "or") == 0  ? TSM_SHAPELET_OR
                                                      : -1;
                if (nd.op < 0 || get_count(o, "series2", &nd.series2) ||
                    get_count(o, "start2", &nd.start2) || get_count(o, "length2", &nd.length2) ||
                    (e = get_values(o, "shapelet2", nd.length2, &nd.values2)) != 0) {
                    free(nd.values);
                    BAD("node %zu: \"op\" must be \"and\" or \"or\" with series2, start2, "
                        "length2 and \"shapelet2\" of length2 (>= 3) finite numbers",
                        k);
                }
            }
        }
        size_t index;
        tsm_status st = tsm_stree_add(NULL, m->tree, &nd, &index);
        free(nd.values), free(nd.values2);
        if (st != TSM_OK)
            BAD("out of memory");
    }
    tsm_ctx *ctx = NULL;
    const char *why = NULL;
    if (tsm_ctx_new(&ctx, TSM_BACKEND_CPU, &why) != TSM_OK)
        BAD("%s", why ? why : "cannot create a context");
    tsm_status st = tsm_stree_check(ctx, m->tree);
    if (st != TSM_OK) {
        char what[160];
        snprintf(what, sizeof what, "%s", tsm_ctx_error(ctx));
        tsm_ctx_destroy(&ctx);
        BAD("%s", what);
    }
    tsm_ctx_destroy(&ctx);
    return 0;
#undef BAD
}

series_status shapelet_model_read(const char *path, shapelet_model *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    char *text;
    size_t len;
    series_status st = ucr_read_text(path, &text, &len, err, errlen);
    if (st != SERIES_OK)
        return st;
    jparser p = {text, path, 1, 0, err, errlen};
    jval doc = {0};
    int rc = strlen(text) != len ? jfail(&p, "NUL byte: not a text file") : jvalue(&p, &doc);
    if (rc == 0) {
        jspace(&p);
        if (*p.s != '\0')
            rc = jfail(&p, "trailing data after the model");
    }
    if (rc == 0 && from_json(&doc, path, m, err, errlen) != 0) {
        shapelet_model_free(m);
        rc = -1;
    }
    jfree(&doc);
    free(text);
    return rc == 0 ? SERIES_OK : (strstr(err, "out of memory") ? SERIES_ENOMEM : SERIES_EDATA);
}
