/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet_tree.c - growing and applying the decision tree of shapelets
 * (shapelet_tree.h). The searches run on the ctx's backend through
 * tsm_shapelet_discover; this file only splits sets and keeps nodes. */
#include "shapelet_tree.h"

#include "shapelet_split.h"

#include <stdlib.h>
#include <string.h>

tsm_stree *tsm_stree_new(int n_classes, size_t w) {
    tsm_stree *t = calloc(1, sizeof *t);
    if (t)
        t->n_classes = n_classes, t->w = w;
    return t;
}

void tsm_stree_destroy(tsm_stree **self_p) {
    if (*self_p) {
        tsm_stree *t = *self_p;
        for (size_t k = 0; k < t->n_nodes; k++)
            free(t->nodes[k].values), free(t->nodes[k].values2);
        free(t->nodes);
        free(t);
        *self_p = NULL;
    }
}

tsm_status tsm_stree_add(tsm_ctx *ctx, tsm_stree *t, const tsm_stree_node *node, size_t *index) {
    if (t->n_nodes == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        tsm_stree_node *nodes = realloc(t->nodes, cap * sizeof *nodes);
        if (!nodes)
            return tsm_fail(ctx, TSM_ENOMEM, "shapelet tree: out of memory for %zu nodes", cap);
        t->nodes = nodes, t->cap = cap;
    }
    tsm_stree_node copy = *node;
    copy.values = copy.values2 = NULL;
    if (node->values) {
        copy.values = malloc(node->length * sizeof *copy.values);
        if (!copy.values)
            return tsm_fail(ctx, TSM_ENOMEM, "shapelet tree: out of memory");
        memcpy(copy.values, node->values, node->length * sizeof *copy.values);
    }
    if (node->values2) {
        copy.values2 = malloc(node->length2 * sizeof *copy.values2);
        if (!copy.values2) {
            free(copy.values);
            return tsm_fail(ctx, TSM_ENOMEM, "shapelet tree: out of memory");
        }
        memcpy(copy.values2, node->values2, node->length2 * sizeof *copy.values2);
    }
    *index = t->n_nodes;
    t->nodes[t->n_nodes++] = copy;
    return TSM_OK;
}

tsm_status tsm_stree_check(tsm_ctx *ctx, const tsm_stree *t) {
    if (t->n_nodes == 0)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet tree: no nodes");
    for (size_t k = 0; k < t->n_nodes; k++) {
        const tsm_stree_node *nd = &t->nodes[k];
        if (nd->label < 0 || nd->label >= t->n_classes)
            return tsm_fail(ctx, TSM_EINVAL, "shapelet tree: node %zu has label %d outside [0, %d)",
                            k, nd->label, t->n_classes);
        if (nd->leaf)
            continue;
        if (nd->left <= k || nd->right <= k || nd->left >= t->n_nodes || nd->right >= t->n_nodes)
            return tsm_fail(
                ctx, TSM_EINVAL,
                "shapelet tree: node %zu has children %zu, %zu (need %zu < child < %zu)", k,
                nd->left, nd->right, k, t->n_nodes);
        if (!nd->values || nd->length < 3)
            return tsm_fail(ctx, TSM_EINVAL,
                            "shapelet tree: node %zu has no shapelet of length >= 3", k);
        if (nd->op != TSM_SHAPELET_SINGLE && nd->op != TSM_SHAPELET_AND &&
            nd->op != TSM_SHAPELET_OR)
            return tsm_fail(ctx, TSM_EINVAL, "shapelet tree: node %zu has logical op %d", k,
                            nd->op);
        if (nd->op != TSM_SHAPELET_SINGLE && (!nd->values2 || nd->length2 < 3))
            return tsm_fail(ctx, TSM_EINVAL,
                            "shapelet tree: logical node %zu has no second shapelet of length >= "
                            "3",
                            k);
    }
    return TSM_OK;
}

/* Majority class of the labels y[0..n-1] (smaller class on ties); *pure when one class. */
static int majority(const int *y, size_t n, int nc, int *pure) {
    size_t *cnt = calloc((size_t)nc, sizeof *cnt);
    int best = 0, classes = 0;
    *pure = 1;
    if (!cnt)
        return y[0];
    for (size_t j = 0; j < n; j++)
        cnt[y[j]]++;
    for (int c = 0; c < nc; c++) {
        classes += cnt[c] > 0;
        if (cnt[c] > cnt[best])
            best = c;
    }
    free(cnt);
    *pure = classes <= 1;
    return best;
}

/* Logical shapelets: the best second shapelet for s1 (whose distances to the node's
 * series are d1) under AND and under OR (tsm_shapelet_opts.base). When one beats s1's
 * split (tsm_shapelet_better, s1 winning ties), *op, *s2 and *split say which and d1
 * becomes the combined distances (d2: k doubles of scratch); else *op stays SINGLE. */
static tsm_status logical_pair(tsm_ctx *ctx, const tsm_shapelet_data *sub,
                               const tsm_shapelet_opts *so, const tsm_shapelet *s1, double *d1,
                               double *d2, tsm_shapelet *s2, int *op, tsm_split *split) {
    *op = TSM_SHAPELET_SINGLE;
    *split = s1->split;
    for (int o = TSM_SHAPELET_AND; o <= TSM_SHAPELET_OR; o++) {
        tsm_shapelet_opts lo = *so;
        lo.op = o, lo.base = d1;
        tsm_shapelet c;
        tsm_status st = tsm_shapelet_discover(ctx, sub, &lo, &c);
        if (st != TSM_OK)
            return st;
        if (tsm_shapelet_better(&c.split, 1, split, 0))
            *split = c.split, *s2 = c, *op = o;
    }
    if (*op == TSM_SHAPELET_SINGLE)
        return TSM_OK;
    tsm_status st =
        tsm_shapelet_dist(ctx, sub, s2->series, s2->start, 1, s2->length, so->w, d2, NULL);
    for (size_t r = 0; st == TSM_OK && r < sub->n; r++)
        d1[r] = tsmi_combine(*op, d1[r], d2[r]);
    return st;
}

/* The recursion of Algorithm 2 on the series rows[0..k-1] of data (indices into the
 * full training set, for the source of each shapelet); the node's index in *index. */
static tsm_status grow(tsm_ctx *ctx, tsm_stree *t, const tsm_shapelet_data *data,
                       const size_t *rows, size_t k, size_t depth, const tsm_shapelet_opts *so,
                       const tsm_stree_opts *to, size_t *index) {
    const size_t L = data->len;
    tsm_status st = TSM_OK;
    double *x = malloc(k * L * sizeof *x), *d = malloc(k * sizeof *d), *d2 = malloc(k * sizeof *d2);
    int *y = malloc(k * sizeof *y);
    size_t *left = malloc(k * sizeof *left), *right = malloc(k * sizeof *right);
    if (!x || !d || !d2 || !y || !left || !right) {
        st = tsm_fail(ctx, TSM_ENOMEM, "shapelet tree: out of memory for a node of %zu series", k);
        goto done;
    }
    for (size_t r = 0; r < k; r++) {
        memcpy(x + r * L, data->x + rows[r] * L, L * sizeof *x);
        y[r] = data->y[rows[r]];
    }
    int pure;
    tsm_stree_node node = {
        .leaf = 1, .label = majority(y, k, data->n_classes, &pure), .n_train = k};
    tsm_shapelet s = {0};
    tsm_shapelet_data sub = {k, L, x, y, data->n_classes};
    if (!pure && k >= to->min_node && (to->max_depth == 0 || depth < to->max_depth)) {
        st = tsm_shapelet_discover(ctx, &sub, so, &s);
        if (st != TSM_OK)
            goto done;
    }
    size_t nl = 0, nr = 0;
    tsm_shapelet s2 = {0};
    int op = TSM_SHAPELET_SINGLE;
    tsm_split split = s.split;
    if (s.split.valid && s.split.gain > TSM_SHAPELET_GAIN_TOL) {
        st = tsm_shapelet_dist(ctx, &sub, s.series, s.start, 1, s.length, so->w, d, NULL);
        if (st == TSM_OK && to->logical)
            st = logical_pair(ctx, &sub, so, &s, d, d2, &s2, &op, &split);
        if (st != TSM_OK)
            goto done;
        for (size_t r = 0; r < k; r++) {
            if (d[r] <= split.threshold)
                left[nl++] = rows[r];
            else
                right[nr++] = rows[r];
        }
    }
    if (nl > 0 && nr > 0) {
        node.leaf = 0;
        node.series = rows[s.series], node.start = s.start, node.length = s.length;
        node.values = x + s.series * L + s.start;
        node.threshold = split.threshold, node.gain = split.gain, node.gap = split.gap;
        if (op != TSM_SHAPELET_SINGLE) {
            node.op = op;
            node.series2 = rows[s2.series], node.start2 = s2.start, node.length2 = s2.length;
            node.values2 = x + s2.series * L + s2.start;
        }
    }
    st = tsm_stree_add(ctx, t, &node, index);
    if (st != TSM_OK || node.leaf)
        goto done;
    size_t li, ri;
    st = grow(ctx, t, data, left, nl, depth + 1, so, to, &li);
    if (st == TSM_OK)
        st = grow(ctx, t, data, right, nr, depth + 1, so, to, &ri);
    if (st == TSM_OK)
        t->nodes[*index].left = li, t->nodes[*index].right = ri;
done:
    free(x), free(d), free(d2), free(y), free(left), free(right);
    return st;
}

tsm_status tsm_stree_train(tsm_ctx *ctx, const tsm_shapelet_data *data,
                           const tsm_shapelet_opts *sopts, const tsm_stree_opts *topts,
                           tsm_stree **out) {
    *out = NULL;
    tsm_status st = tsm_shapelet_check(ctx, data, sopts);
    if (st != TSM_OK)
        return st;
    if (topts->min_node < 2)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet tree: min_node must be at least 2");
    tsm_stree *t = tsm_stree_new(data->n_classes, sopts->w);
    size_t *rows = malloc(data->n * sizeof *rows);
    if (!t || !rows) {
        free(rows);
        tsm_stree_destroy(&t);
        return tsm_fail(ctx, TSM_ENOMEM, "shapelet tree: out of memory");
    }
    for (size_t j = 0; j < data->n; j++)
        rows[j] = j;
    size_t root;
    st = grow(ctx, t, data, rows, data->n, 0, sopts, topts, &root);
    free(rows);
    if (st != TSM_OK)
        tsm_stree_destroy(&t);
    *out = t;
    return st;
}

/* Distance from the shapelet p (length m) of node k to the series x of length len. */
static tsm_status pattern_dist(tsm_ctx *ctx, const tsm_stree *t, size_t k, const double *p,
                               size_t m, const double *x, size_t len, double *d) {
    if (m > len)
        return tsm_fail(ctx, TSM_EINVAL,
                        "shapelet tree: series of length %zu is shorter than a shapelet of node "
                        "%zu (%zu)",
                        len, k, m);
    return tsm_shapelet_dist_pattern(ctx, p, m, x, 1, len, t->w, d);
}

tsm_status tsm_stree_predict(tsm_ctx *ctx, const tsm_stree *t, const double *x, size_t n,
                             size_t len, int *labels) {
    tsm_status st = tsm_stree_check(ctx, t);
    for (size_t j = 0; j < n && st == TSM_OK; j++) {
        size_t k = 0;
        while (!t->nodes[k].leaf && st == TSM_OK) {
            const tsm_stree_node *nd = &t->nodes[k];
            double d = 0.0, d2 = 0.0;
            st = pattern_dist(ctx, t, k, nd->values, nd->length, x + j * len, len, &d);
            if (st == TSM_OK && nd->op != TSM_SHAPELET_SINGLE) {
                st = pattern_dist(ctx, t, k, nd->values2, nd->length2, x + j * len, len, &d2);
                d = tsmi_combine(nd->op, d, d2);
            }
            k = d <= nd->threshold ? nd->left : nd->right;
        }
        labels[j] = t->nodes[k].label;
    }
    return st;
}
