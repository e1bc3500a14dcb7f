/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet_tree_test.c - the decision tree of shapelets (kernels/shapelet_tree) on
 * planted-pattern sets whose right answers are known, on the backend under test. */
#include "testutil.h"

#include "shapelet_tree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define L 48
#define P 10

/* n noise series; class c > 0 carries pattern c (a triangle for 1, a step for 2) at a
 * random position; class 0 has none. */
static void planted_set(double *x, int *y, size_t n, int nc) {
    for (size_t j = 0; j < n; j++) {
        y[j] = (int)(j % (size_t)nc);
        for (size_t k = 0; k < L; k++)
            x[j * L + k] = 0.3 * tu_normal();
        size_t at = 2 + (size_t)(tu_uniform() * (L - P - 4));
        for (size_t k = 0; k < P && y[j] > 0; k++)
            x[j * L + at + k] +=
                y[j] == 1 ? 4.0 * (1.0 - fabs((double)k - 4.5) / 5.0) : (k < P / 2 ? -3.0 : 3.0);
    }
}

static const tsm_shapelet_opts search = {.min_len = 6, .max_len = 14, .step = 2};

static void test_two_classes(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_rng_init(tu_case_seed(701));
    double x[24 * L], xt[40 * L];
    int y[24], yt[40], pred[40];
    planted_set(x, y, 24, 2);
    planted_set(xt, yt, 40, 2);
    tsm_shapelet_data data = {24, L, x, y, 2};
    tsm_stree_opts to = {.max_depth = 0, .min_node = 2};
    tsm_stree *t = NULL;
    assert_int_equal(tsm_stree_train(ctx, &data, &search, &to, &t), TSM_OK);
    /* one shapelet separates the planted class: root split, two pure leaves */
    assert_int_equal(t->n_nodes, 3);
    assert_false(t->nodes[0].leaf);
    assert_int_equal(y[t->nodes[0].series], 1);
    assert_int_equal(t->nodes[0].n_train, 24);
    assert_int_equal(t->nodes[t->nodes[0].left].label, 1); /* close to the pattern: class 1 */
    assert_int_equal(t->nodes[t->nodes[0].right].label, 0);
    assert_int_equal(tsm_stree_predict(ctx, t, x, 24, L, pred), TSM_OK);
    for (size_t j = 0; j < 24; j++)
        assert_int_equal(pred[j], y[j]);
    assert_int_equal(tsm_stree_predict(ctx, t, xt, 40, L, pred), TSM_OK);
    size_t ok = 0;
    for (size_t j = 0; j < 40; j++)
        ok += pred[j] == yt[j];
    assert_true(ok >= 38);
    tsm_stree_destroy(&t);
    assert_null(t);
    tsm_ctx_destroy(&ctx);
}

static void test_three_classes(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tu_rng_init(tu_case_seed(702));
    double x[30 * L];
    int y[30], pred[30];
    planted_set(x, y, 30, 3);
    tsm_shapelet_data data = {30, L, x, y, 3};
    tsm_stree_opts to = {.max_depth = 0, .min_node = 2};
    tsm_stree *t = NULL;
    for (size_t w = 0; w <= 1; w++) {
        tsm_shapelet_opts so = search;
        so.w = w;
        assert_int_equal(tsm_stree_train(ctx, &data, &so, &to, &t), TSM_OK);
        assert_int_equal(t->w, w);
        assert_int_equal(tsm_stree_predict(ctx, t, x, 30, L, pred), TSM_OK);
        for (size_t j = 0; j < 30; j++)
            assert_int_equal(pred[j], y[j]);
        /* every leaf is pure and every split node has both children after it */
        for (size_t k = 0; k < t->n_nodes; k++)
            if (!t->nodes[k].leaf)
                assert_true(t->nodes[k].left > k && t->nodes[k].right > k);
        tsm_stree_destroy(&t);
    }
    /* max_depth 1: a root split and two leaves at most, still a valid tree */
    to.max_depth = 1;
    assert_int_equal(tsm_stree_train(ctx, &data, &search, &to, &t), TSM_OK);
    assert_true(t->n_nodes <= 3);
    assert_int_equal(tsm_stree_check(ctx, t), TSM_OK);
    tsm_stree_destroy(&t);
    /* min_node larger than the set: a single leaf with the majority (smaller) class */
    to.max_depth = 0, to.min_node = 31;
    assert_int_equal(tsm_stree_train(ctx, &data, &search, &to, &t), TSM_OK);
    assert_int_equal(t->n_nodes, 1);
    assert_true(t->nodes[0].leaf);
    assert_int_equal(t->nodes[0].label, 0);
    tsm_stree_destroy(&t);
    to.min_node = 1;
    assert_int_equal(tsm_stree_train(ctx, &data, &search, &to, &t), TSM_EINVAL);
    assert_null(t);
    tsm_ctx_destroy(&ctx);
}

/* n series of one shared noise background carrying at 5 pattern A (a triangle up)
 * when bit 0 of j % 4 is set, else A' (a triangle down), and at 30 pattern B (a step
 * up) when bit 1 is set, else B' (a step down): labels 1 for "A and B" (op AND) or
 * "A or B" (op OR), else 0. No window (<= 14 long) touches both places, so a series'
 * distance to one shapelet is the smallest of three (background, first place, second
 * place), and two shapelets joined by AND or OR express the rule exactly. */
static void planted_pair(double *x, int *y, size_t n, int op) {
    double bg[L];
    for (size_t k = 0; k < L; k++)
        bg[k] = 0.3 * tu_normal();
    for (size_t j = 0; j < n; j++) {
        const int a = (j % 4) & 1, b = ((j % 4) >> 1) & 1;
        y[j] = op == TSM_SHAPELET_AND ? a && b : a || b;
        memcpy(x + j * L, bg, sizeof bg);
        for (size_t k = 0; k < P; k++) {
            x[j * L + 5 + k] += (a ? 4.0 : -4.0) * (1.0 - fabs((double)k - 4.5) / 5.0);
            x[j * L + 30 + k] += (b ? 3.0 : -3.0) * (k < P / 2 ? -1.0 : 1.0);
        }
    }
}

/* Logical shapelets: a set whose rule joins two patterns (AND, or OR) gets one
 * logical node with a perfect split and two pure leaves. */
static void test_logical(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    for (int op = TSM_SHAPELET_AND; op <= TSM_SHAPELET_OR; op++) {
        tu_rng_init(tu_case_seed(703 + (uint64_t)op));
        double x[24 * L];
        int y[24], pred[24];
        planted_pair(x, y, 24, op);
        tsm_shapelet_data data = {24, L, x, y, 2};
        tsm_stree_opts to = {.max_depth = 0, .min_node = 2, .logical = 1};
        tsm_stree *t = NULL;
        assert_int_equal(tsm_stree_train(ctx, &data, &search, &to, &t), TSM_OK);
        assert_int_equal(t->n_nodes, 3);
        const tsm_stree_node *root = &t->nodes[0];
        /* either op can express the rule (near both A and B, or near either A' or B'):
         * the gap decides */
        assert_true(root->op == TSM_SHAPELET_AND || root->op == TSM_SHAPELET_OR);
        assert_non_null(root->values2);
        /* the entropy of the whole set: 6 of 24 (AND) or 18 of 24 (OR) in class 1 */
        const double h = -(0.25 * log(0.25) + 0.75 * log(0.75));
        assert_true(fabs(root->gain - h) < 1e-12);
        assert_int_equal(tsm_stree_predict(ctx, t, x, 24, L, pred), TSM_OK);
        for (size_t j = 0; j < 24; j++)
            assert_int_equal(pred[j], y[j]);
        tsm_stree_destroy(&t);
    }
    tsm_ctx_destroy(&ctx);
}

/* Trees built elsewhere (model files) are checked before use. */
static void test_check(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    tsm_stree *t = tsm_stree_new(2, 0);
    double v[3] = {1, 2, 3};
    size_t k;
    tsm_stree_node root = {.leaf = 0, .label = 0, .length = 3, .values = v, .left = 1, .right = 5};
    tsm_stree_node leaf = {.leaf = 1, .label = 1};
    assert_int_equal(tsm_stree_check(ctx, t), TSM_EINVAL); /* no nodes */
    assert_int_equal(tsm_stree_add(ctx, t, &root, &k), TSM_OK);
    assert_int_equal(tsm_stree_add(ctx, t, &leaf, &k), TSM_OK);
    assert_int_equal(tsm_stree_check(ctx, t), TSM_EINVAL); /* right child 5 */
    t->nodes[0].right = 1;
    assert_int_equal(tsm_stree_check(ctx, t), TSM_OK);
    t->nodes[1].label = 2;
    assert_int_equal(tsm_stree_check(ctx, t), TSM_EINVAL);
    t->nodes[1].label = 1;
    double x[8] = {0, 1, 2, 3, 2, 1, 0, 1};
    int pred[1];
    assert_int_equal(tsm_stree_predict(ctx, t, x, 1, 8, pred), TSM_OK);
    assert_int_equal(pred[0], 1);
    assert_int_equal(tsm_stree_predict(ctx, t, x, 1, 2, pred), TSM_EINVAL); /* too short */
    /* a logical node needs a known op and a second shapelet */
    t->nodes[0].op = TSM_SHAPELET_AND;
    assert_int_equal(tsm_stree_check(ctx, t), TSM_EINVAL);
    t->nodes[0].values2 = malloc(4 * sizeof(double)), t->nodes[0].length2 = 4;
    assert_non_null(t->nodes[0].values2);
    for (size_t i = 0; i < 4; i++)
        t->nodes[0].values2[i] = (double)(i % 2);
    assert_int_equal(tsm_stree_check(ctx, t), TSM_OK);
    assert_int_equal(tsm_stree_predict(ctx, t, x, 1, 8, pred), TSM_OK);
    t->nodes[0].op = 3;
    assert_int_equal(tsm_stree_check(ctx, t), TSM_EINVAL);
    tsm_stree_destroy(&t);
    tsm_ctx_destroy(&ctx);
}

int main(void) {
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_classes),
        cmocka_unit_test(test_three_classes),
        cmocka_unit_test(test_logical),
        cmocka_unit_test(test_check),
    };
    /* clang-format on */
    return TU_RUN_GROUP("shapelet_tree", tests, NULL, NULL);
}
