/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet_io_test.c - the labelled-set readers (lib/ucr_io: UCR .tsv, sktime/aeon
 * .ts) and the shapelet model files (lib/shapelet_model): well-formed inputs,
 * malformed ones rejected with FILE:LINE, and a save/load round trip that predicts
 * bit for bit the same. */
#include "testutil.h"

#include "lib/shapelet_model.h"
#include "lib/ucr_io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tsm_shapelet_io.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to DIR/name and returns the path (static buffer, one at a time). */
static const char *put(const char *name, const char *text) {
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* Reading text as name must fail with a message that contains want. */
static void expect_bad(const char *name, const char *text, const char *want) {
    ucr_set s;
    char err[512];
    const char *path = put(name, text);
    series_status st = ucr_read(path, UCR_FMT_AUTO, &s, err, sizeof err);
    if (st != SERIES_EDATA || !strstr(err, want))
        fail_msg("%s: status %d, message '%s', wanted '%s'", name, (int)st, err, want);
    assert_null(s.x);
}

static void test_tsv(void **state) {
    (void)state;
    ucr_set s;
    char err[512];
    const char *path = put("a.tsv", "1\t0.5\t1.5\t2\n\n2\t-1\t1e3\tNaN\r\n1,3,4,5\n");
    assert_int_equal(ucr_read(path, UCR_FMT_AUTO, &s, err, sizeof err), SERIES_OK);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.len, 3);
    assert_true(s.x[3] == -1.0 && s.x[4] == 1000.0 && isnan(s.x[5]) && s.x[8] == 5.0);
    assert_string_equal(s.label[1], "2");
    const char **cls;
    size_t nc;
    assert_int_equal(ucr_classes(&s, &cls, &nc), 0);
    assert_int_equal(nc, 2);
    assert_string_equal(cls[0], "1");
    assert_int_equal(ucr_class_index(cls, nc, "2.0"), 1); /* numeric labels by value */
    assert_int_equal(ucr_class_index(cls, nc, "3"), -1);
    free(cls);
    ucr_free(&s);
    /* numeric labels sort by value, others by text */
    path = put("b.tsv", "10\t1\t2\t3\n9\t1\t2\t3\n-1\t1\t2\t3\n");
    assert_int_equal(ucr_read(path, UCR_FMT_AUTO, &s, err, sizeof err), SERIES_OK);
    assert_int_equal(ucr_classes(&s, &cls, &nc), 0);
    assert_int_equal(nc, 3);
    assert_string_equal(cls[0], "-1");
    assert_string_equal(cls[2], "10");
    free(cls);
    ucr_free(&s);
}

static void test_tsv_malformed(void **state) {
    (void)state;
    expect_bad("len.tsv", "1\t1\t2\t3\n2\t1\t2\n", "len.tsv:2: 2 values, expected 3");
    expect_bad("num.tsv", "1\t1\t2\t3\n\n2\t1\tx2\t3\n",
               "num.tsv:3: value 2 ('x2') is not a number");
    expect_bad("lab.tsv", "1\t1\t2\n\t1\t2\n", "lab.tsv:2:");
    expect_bad("one.tsv", "1\t1\t2\n7\n", "one.tsv:2: expected a label and values");
    {
        static const char nul[] = "1\t1\t2\n1\t1\0\t2\n"; /* fputs would stop at the NUL */
        char path[128], err[512];
        ucr_set s;
        snprintf(path, sizeof path, "%s/nul.tsv", dir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fwrite(nul, 1, sizeof nul - 1, f);
        fclose(f);
        assert_int_equal(ucr_read(path, UCR_FMT_AUTO, &s, err, sizeof err), SERIES_EDATA);
        assert_non_null(strstr(err, "nul.tsv:2: NUL byte"));
    }
    expect_bad("empty.tsv", "\n\n", "empty.tsv: no series");
    ucr_set s;
    char err[512];
    char missing[160];
    snprintf(missing, sizeof missing, "%s/missing.tsv", dir);
    assert_int_equal(ucr_read(missing, UCR_FMT_AUTO, &s, err, sizeof err), SERIES_EOPEN);
    assert_non_null(strstr(err, "missing.tsv"));
}

static const char ts_head[] = "# comment\n%% another\n@problemName T\n@timeStamps false\n"
                              "@univariate true\n@equalLength true\n@classLabel true a b\n";

static void test_ts(void **state) {
    (void)state;
    char text[512];
    snprintf(text, sizeof text, "%s@data\n1,2,3,4:b\n 5,?,7,8 : a\n", ts_head);
    ucr_set s;
    char err[512];
    const char *path = put("a.ts", text);
    assert_int_equal(ucr_read(path, UCR_FMT_AUTO, &s, err, sizeof err), SERIES_OK);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.len, 4);
    assert_true(isnan(s.x[5]));
    assert_string_equal(s.label[0], "b");
    assert_string_equal(s.label[1], "a");
    const char **cls;
    size_t nc;
    assert_int_equal(ucr_classes(&s, &cls, &nc), 0); /* the @classLabel order */
    assert_int_equal(nc, 2);
    assert_string_equal(cls[0], "a");
    free(cls);
    ucr_free(&s);
    /* unlabelled */
    path = put("u.ts", "@classLabel false\n@data\n1,2,3\n4,5,6\n");
    assert_int_equal(ucr_read(path, UCR_FMT_AUTO, &s, err, sizeof err), SERIES_OK);
    assert_null(s.label);
    ucr_free(&s);
}

static void test_ts_malformed(void **state) {
    (void)state;
    char text[512];
    expect_bad("early.ts", "@classLabel true a\n1,2,3:a\n", "early.ts:2: data before @data");
    snprintf(text, sizeof text, "%s@data\n1,2,3:a\n1,2,3:c\n", ts_head);
    expect_bad("cls.ts", text, "cls.ts:10: class label 'c' is not in the @classLabel list");
    snprintf(text, sizeof text, "%s@data\n1,2,3:a\n1,2,3:4,5,6:a\n", ts_head);
    expect_bad("multi.ts", text, "multi.ts:10: more than one dimension");
    snprintf(text, sizeof text, "%s@data\n1,2,3\n", ts_head);
    expect_bad("nolab.ts", text, "nolab.ts:9: expected values, ':' and a class label");
    snprintf(text, sizeof text, "%s@data\n1,2,3:a\n1,2:b\n", ts_head);
    expect_bad("short.ts", text, "short.ts:10: 2 values, expected 3");
    expect_bad("mv.ts", "@univariate false\n@data\n", "mv.ts:1: multivariate");
    expect_bad("cl.ts", "@classLabel maybe\n@data\n", "cl.ts:1: @classLabel must be followed");
}

/* A planted two-class set and its tree. */
static tsm_stree *small_tree(tsm_ctx *ctx, double *x, int *y, size_t n, size_t len) {
    tu_rng_init(tu_case_seed(801));
    for (size_t j = 0; j < n; j++) {
        y[j] = (int)(j % 2);
        for (size_t k = 0; k < len; k++)
            x[j * len + k] = tu_normal();
        if (y[j])
            for (size_t k = 0; k < 8; k++)
                x[j * len + 5 + (j % 7) + k] += 3.0 * sin((double)k);
    }
    tsm_shapelet_data data = {n, len, x, y, 2};
    tsm_shapelet_opts so = {.min_len = 5, .max_len = 9, .step = 1, .w = 1};
    tsm_stree_opts to = {.min_node = 2, .logical = 1};
    tsm_stree *t = NULL;
    assert_int_equal(tsm_stree_train(ctx, &data, &so, &to, &t), TSM_OK);
    /* a logical root either way, so that the file holds a second shapelet */
    tsm_stree_node *root = &t->nodes[0];
    assert_false(root->leaf);
    if (root->op == TSM_SHAPELET_SINGLE) {
        root->op = TSM_SHAPELET_OR, root->series2 = 1, root->start2 = 2, root->length2 = 6;
        root->values2 = malloc(6 * sizeof *root->values2);
        assert_non_null(root->values2);
        memcpy(root->values2, x + len + 2, 6 * sizeof *root->values2);
    }
    return t;
}

static void test_model_round_trip(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    enum { n = 20, len = 32 };
    double x[n * len];
    int y[n], p1[n], p2[n];
    tsm_stree *t = small_tree(ctx, x, y, n, len);
    char *classes[2] = {"neg \"quoted\"", "pos"};
    shapelet_model m = {t, classes, len, 5, 9, 1, 0}, back;
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/model.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(shapelet_model_write(f, &m), 0);
    fclose(f);
    assert_int_equal(shapelet_model_read(path, &back, err, sizeof err), SERIES_OK);
    assert_int_equal(back.tree->n_nodes, t->n_nodes);
    assert_int_equal(back.tree->w, 1);
    assert_string_equal(back.classes[0], classes[0]);
    assert_true(back.series_length == len && back.min_len == 5 && back.max_len == 9);
    for (size_t k = 0; k < t->n_nodes; k++) {
        const tsm_stree_node *a = &t->nodes[k], *b = &back.tree->nodes[k];
        assert_true(a->leaf == b->leaf && a->label == b->label && a->n_train == b->n_train);
        if (a->leaf)
            continue;
        assert_true(a->series == b->series && a->start == b->start && a->length == b->length);
        assert_true(a->threshold == b->threshold && a->gain == b->gain && a->gap == b->gap);
        assert_true(a->left == b->left && a->right == b->right);
        assert_memory_equal(a->values, b->values, a->length * sizeof *a->values);
        assert_int_equal(a->op, b->op);
        if (a->op == TSM_SHAPELET_SINGLE)
            continue;
        assert_true(a->series2 == b->series2 && a->start2 == b->start2 && a->length2 == b->length2);
        assert_memory_equal(a->values2, b->values2, a->length2 * sizeof *a->values2);
    }
    assert_int_not_equal(back.tree->nodes[0].op, TSM_SHAPELET_SINGLE);
    assert_int_equal(tsm_stree_predict(ctx, t, x, n, len, p1), TSM_OK);
    assert_int_equal(tsm_stree_predict(ctx, back.tree, x, n, len, p2), TSM_OK);
    assert_memory_equal(p1, p2, sizeof p1);
    shapelet_model_free(&back);
    tsm_stree_destroy(&t);
    tsm_ctx_destroy(&ctx);
}

/* Reading text as a model must fail with a message that contains want. */
static void expect_bad_model(const char *name, const char *text, const char *want) {
    shapelet_model m;
    char err[512];
    const char *path = put(name, text);
    series_status st = shapelet_model_read(path, &m, err, sizeof err);
    if (st != SERIES_EDATA || !strstr(err, want))
        fail_msg("%s: status %d, message '%s', wanted '%s'", name, (int)st, err, want);
    assert_null(m.tree);
}

#define HEAD                                                                                       \
    "{\"format\":\"tsmine-shapelet-tree\",\"version\":1,\"classes\":[\"a\",\"b\"],\"w\":0,"        \
    "\"series_length\":10,\"min_len\":3,\"max_len\":5,\"step\":1,\"heuristic\":false,"

static void test_model_malformed(void **state) {
    (void)state;
    expect_bad_model("syntax.json", "{\"format\":\n\"x\",\n]",
                     "syntax.json:3: expected a member name");
    expect_bad_model("str.json", "{\"a\":\"b\n\"}", "str.json:1: unterminated string");
    expect_bad_model("trail.json",
                     HEAD "\"nodes\":[{\"id\":0,\"leaf\":true,\"label\":\"a\",\"n\":1}]}\nx",
                     "trail.json:2: trailing data");
    expect_bad_model("fmt.json", "{\"format\":\"other\"}", "fmt.json: not a tsmine shapelet model");
    expect_bad_model("lab.json",
                     HEAD "\"nodes\":[{\"id\":0,\"leaf\":true,\"label\":\"c\",\"n\":1}]}",
                     "lab.json: node 0: \"label\" is not one of");
    expect_bad_model("kid.json",
                     HEAD
                     "\"nodes\":[{\"id\":0,\"leaf\":false,\"label\":\"a\",\"n\":1,\"series\":0,"
                     "\"start\":0,\"length\":3,\"threshold\":1,\"gain\":1,\"gap\":1,\"left\":1,"
                     "\"right\":2,\"shapelet\":[1,2,3]},{\"id\":1,\"leaf\":true,\"label\":\"a\","
                     "\"n\":1}]}",
                     "kid.json: shapelet tree: node 0 has children 1, 2");
    expect_bad_model("vals.json",
                     HEAD
                     "\"nodes\":[{\"id\":0,\"leaf\":false,\"label\":\"a\",\"n\":1,\"series\":0,"
                     "\"start\":0,\"length\":3,\"threshold\":1,\"gain\":1,\"gap\":1,\"left\":1,"
                     "\"right\":2,\"shapelet\":[1,2]}]}",
                     "vals.json: node 0: \"shapelet\" must hold");
    expect_bad_model("op.json",
                     HEAD
                     "\"nodes\":[{\"id\":0,\"leaf\":false,\"label\":\"a\",\"n\":1,\"series\":0,"
                     "\"start\":0,\"length\":3,\"threshold\":1,\"gain\":1,\"gap\":1,\"left\":1,"
                     "\"right\":2,\"shapelet\":[1,2,3],\"op\":\"xor\",\"series2\":0,"
                     "\"start2\":0,\"length2\":3,\"shapelet2\":[1,2,3]}]}",
                     "op.json: node 0: \"op\" must be \"and\" or \"or\"");
    expect_bad_model("vals2.json",
                     HEAD
                     "\"nodes\":[{\"id\":0,\"leaf\":false,\"label\":\"a\",\"n\":1,\"series\":0,"
                     "\"start\":0,\"length\":3,\"threshold\":1,\"gain\":1,\"gap\":1,\"left\":1,"
                     "\"right\":2,\"shapelet\":[1,2,3],\"op\":\"and\",\"series2\":0,"
                     "\"start2\":0,\"length2\":4,\"shapelet2\":[1,2,3]}]}",
                     "vals2.json: node 0: \"op\" must be");
}

int main(void) {
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tsv),
        cmocka_unit_test(test_tsv_malformed),
        cmocka_unit_test(test_ts),
        cmocka_unit_test(test_ts_malformed),
        cmocka_unit_test(test_model_round_trip),
        cmocka_unit_test(test_model_malformed),
    };
    /* clang-format on */
    return cmocka_run_group_tests_name("shapelet_io", tests, setup, teardown);
}
