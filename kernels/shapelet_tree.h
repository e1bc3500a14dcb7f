/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet_tree.h - the decision tree of shapelets (seed 002 Algorithm 2): each node
 * holds the shapelet of the training series that reach it (shapelet.h) and its
 * threshold; series at distance <= threshold go left, the others right. A node
 * becomes a leaf when it is pure, holds fewer than min_node series, is at max_depth,
 * or no candidate gains information. Leaves predict the majority class of their
 * training series (the smaller class index on ties). Multi-class. */
#ifndef TSM_SHAPELET_TREE_H
#define TSM_SHAPELET_TREE_H

#include "shapelet.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int leaf;       /* 1: a leaf; 0: a split node */
    int label;      /* majority class of the node's training series */
    size_t n_train; /* training series that reached the node */
    /* split nodes only (0 / NULL in leaves): */
    size_t series, start, length; /* the shapelet's source: training series and start */
    double *values;               /* its length raw values, owned by the tree */
    double threshold, gain, gap;
    size_t left, right; /* child node indices (always after the node: preorder) */
    /* A logical node (tsm_stree_opts.logical): op is TSM_SHAPELET_AND or _OR and a
     * second shapelet joins the first; the node's distance is tsmi_combine(op, d1, d2)
     * (max or min of the two) and threshold, gain and gap are those of the combination.
     * op = TSM_SHAPELET_SINGLE (0) and values2 = NULL otherwise. */
    int op;
    size_t series2, start2, length2;
    double *values2; /* length2 raw values, owned by the tree */
} tsm_stree_node;

typedef struct {
    tsm_stree_node *nodes; /* nodes[0] is the root */
    size_t n_nodes, cap;
    int n_classes;
    size_t w; /* the DTW band the shapelets were found with; predictions use it */
} tsm_stree;

typedef struct {
    size_t max_depth; /* 0 = unlimited; depth of the root is 0 */
    size_t min_node;  /* nodes with fewer series are leaves; at least 2 */
    /* 1: logical shapelets (seed 002 section II): after a node's best shapelet, the best
     * second shapelet under AND and under OR is searched (tsm_shapelet_opts.base); the
     * node keeps the pair when its split beats the single shapelet's (tsm_shapelet_better:
     * higher gain, or the same gain and a wider gap). Three searches per node. */
    int logical;
} tsm_stree_opts;

/* An empty tree (no nodes) for n_classes classes and band w; NULL when out of memory. */
tsm_stree *tsm_stree_new(int n_classes, size_t w);
void tsm_stree_destroy(tsm_stree **self_p);

/* Appends a copy of *node (values copied when not NULL) and returns its index in
 * *index. */
tsm_status tsm_stree_add(tsm_ctx *ctx, tsm_stree *t, const tsm_stree_node *node, size_t *index);

/* Checks a tree read from elsewhere: children in range and after their parent, labels
 * in range, split nodes with a shapelet of length >= 3. */
tsm_status tsm_stree_check(tsm_ctx *ctx, const tsm_stree *t);

/* Grows a tree on data (search parameters sopts; its w becomes the tree's).
 * O(nodes x discovery). */
tsm_status tsm_stree_train(tsm_ctx *ctx, const tsm_shapelet_data *data,
                           const tsm_shapelet_opts *sopts, const tsm_stree_opts *topts,
                           tsm_stree **out);

/* Predicts the class of each of the n series x[j * len ..] of length len. Series
 * shorter than a node's shapelet fail with TSM_EINVAL. */
tsm_status tsm_stree_predict(tsm_ctx *ctx, const tsm_stree *t, const double *x, size_t n,
                             size_t len, int *labels);

#ifdef __cplusplus
}
#endif
#endif
