/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet_model.c - writing and reading model files (shapelet_model.h). Reading goes
 * through the tool's JSON reader (json.h). */
#include "lib/shapelet_model.h"

#include "lib/emit.h"
#include "lib/json.h"
#include "lib/ucr_io.h"

#include <math.h>
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

/* ---- From JSON to a model --------------------------------------------------------- */

/* A whole non-negative number member into *out; returns 0 or -1. */
static int get_count(const json_value *o, const char *key, size_t *out) {
    const json_value *v = json_member(o, key);
    if (!v || v->type != JSON_NUMBER || v->number < 0 || v->number != floor(v->number) ||
        v->number > 1e15)
        return -1;
    *out = (size_t)v->number;
    return 0;
}

static int get_number(const json_value *o, const char *key, double *out) {
    const json_value *v = json_member(o, key);
    if (!v || v->type != JSON_NUMBER)
        return -1;
    *out = v->number;
    return 0;
}

static int get_bool(const json_value *o, const char *key, int *out) {
    const json_value *v = json_member(o, key);
    if (!v || v->type != JSON_BOOL)
        return -1;
    *out = (int)v->number;
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
static int get_values(const json_value *o, const char *key, size_t length, double **out) {
    const json_value *sh = json_member(o, key);
    *out = NULL;
    if (!sh || sh->type != JSON_ARRAY || sh->n != length || length < 3)
        return -1;
    if (!(*out = malloc(length * sizeof **out)))
        return -3;
    for (size_t i = 0; i < length; i++) {
        if (sh->items[i].type != JSON_NUMBER || !isfinite(sh->items[i].number)) {
            free(*out);
            *out = NULL;
            return -2;
        }
        (*out)[i] = sh->items[i].number;
    }
    return 0;
}

/* Builds the model from the parsed document; returns 0 or -1 with err set. */
static int from_json(const json_value *doc, const char *path, shapelet_model *m, char *err,
                     size_t errlen) {
#define BAD(...)                                                                                   \
    do {                                                                                           \
        char what_[200];                                                                           \
        snprintf(what_, sizeof what_, __VA_ARGS__);                                                \
        snprintf(err, errlen, "%s: %s", path, what_);                                              \
        return -1;                                                                                 \
    } while (0)
    const json_value *fmt = json_member(doc, "format"), *ver = json_member(doc, "version");
    if (!fmt || fmt->type != JSON_STRING || strcmp(fmt->string, "tsmine-shapelet-tree") != 0)
        BAD("not a tsmine shapelet model (no \"format\":\"tsmine-shapelet-tree\")");
    if (!ver || ver->type != JSON_NUMBER || ver->number != 1)
        BAD("unsupported model version (this tsmine reads version 1)");
    const json_value *cls = json_member(doc, "classes"), *nodes = json_member(doc, "nodes");
    if (!cls || cls->type != JSON_ARRAY || cls->n == 0 || cls->n > 1000000)
        BAD("\"classes\" must be a non-empty array of names");
    if (!nodes || nodes->type != JSON_ARRAY || nodes->n == 0)
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
        if (cls->items[c].type != JSON_STRING)
            BAD("class %zu is not a string", c);
        if (!(m->classes[c] = strdup(cls->items[c].string)))
            BAD("out of memory");
    }
    for (size_t k = 0; k < nodes->n; k++) {
        const json_value *o = &nodes->items[k], *lab = json_member(o, "label");
        tsm_stree_node nd = {0};
        size_t id;
        if (get_count(o, "id", &id) || id != k)
            BAD("node %zu: missing or wrong \"id\"", k);
        if (get_bool(o, "leaf", &nd.leaf) || get_count(o, "n", &nd.n_train))
            BAD("node %zu: missing or invalid \"leaf\" or \"n\"", k);
        if (!lab || lab->type != JSON_STRING ||
            (nd.label = ucr_class_index((const char *const *)m->classes, cls->n, lab->string)) < 0)
            BAD("node %zu: \"label\" is not one of \"classes\"", k);
        if (!nd.leaf) {
            const json_value *op = json_member(o, "op");
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
                nd.op = op->type != JSON_STRING          ? -1
                        : strcmp(op->string, "and") == 0 ? TSM_SHAPELET_AND
                        : strcmp(op->string, "or") == 0  ? TSM_SHAPELET_OR
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
    json_value doc;
    int rc = json_parse(text, len, path, 1, &doc, err, errlen);
    free(text);
    if (rc != JSON_OK)
        return rc == JSON_ENOMEM ? SERIES_ENOMEM : SERIES_EDATA;
    if (from_json(&doc, path, m, err, errlen) != 0) {
        shapelet_model_free(m);
        rc = -1;
    }
    json_free(&doc);
    return rc == 0 ? SERIES_OK : (strstr(err, "out of memory") ? SERIES_ENOMEM : SERIES_EDATA);
}
