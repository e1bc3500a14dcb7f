/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet_split.h - the split of one candidate's distances (shapelet.h): sort,
 * information gain, separation gap, the heuristic of seed 003 4.3, and the order of
 * candidates. Internal; plain C usable from CUDA device code, so that the CPU and CUDA
 * backends run the same arithmetic and pick the same shapelet.
 *
 * Entropies in the form H(c, t) = log t - (1/t) sum_k c_k log c_k, so the conditional
 * entropy of a split into L (k items) and R (n - k) is
 *   cond = (k log k - sum cL log cL + (n-k) log(n-k) - sum cR log cR) / n,
 * a function of the two count vectors alone. */
#ifndef TSM_SHAPELET_SPLIT_H
#define TSM_SHAPELET_SPLIT_H

#include "shapelet.h"

#include <math.h>

static inline TSM_HD double tsmi_xlogx(double c) {
    return c > 0.0 ? c * log(c) : 0.0;
}

/* c log c from the table xlx (xlx[c] = tsmi_xlogx(c) for c <= n, so that the values are
 * the same either way), or computed when xlx is NULL. */
static inline TSM_HD double tsmi_xlx(const double *xlx, int c) {
    return xlx ? xlx[c] : tsmi_xlogx((double)c);
}

/* n * (weighted entropy) of a part: t log t - sum c log c over its nc class counts. */
static inline TSM_HD double tsmi_part_entropy(const int *c, int nc, int t, const double *xlx) {
    double acc = tsmi_xlx(xlx, t);
    for (int k = 0; k < nc; k++)
        acc -= tsmi_xlx(xlx, c[k]);
    return acc;
}

/* The distance to a logical shapelet (shapelet.h, opts.op): max(base, d) for AND, min
 * for OR, d alone otherwise. */
static inline TSM_HD double tsmi_combine(int op, double base, double d) {
    if (op == TSM_SHAPELET_AND)
        return d > base ? d : base;
    if (op == TSM_SHAPELET_OR)
        return d < base ? d : base;
    return d;
}

/* Swaps items i and j of the pairs (d, y). */
static inline TSM_HD void tsmi_swap_pairs(double *d, int *y, size_t i, size_t j) {
    double td = d[i];
    d[i] = d[j];
    d[j] = td;
    int ty = y[i];
    y[i] = y[j];
    y[j] = ty;
}

/* Moves item root of the max-heap d[0..end) down to its place. */
static inline TSM_HD void tsmi_sift_down(double *d, int *y, size_t root, size_t end) {
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= end)
            return;
        if (c + 1 < end && d[c + 1] > d[c])
            c++;
        if (!(d[c] > d[root]))
            return;
        tsmi_swap_pairs(d, y, c, root);
        root = c;
    }
}

/* Sorts (d, y) pairs by d in place (heap sort: no recursion, no extra memory). */
static inline TSM_HD void tsmi_sort_pairs(double *d, int *y, size_t n) {
    if (n < 2)
        return;
    for (size_t start = n / 2; start-- > 0;)
        tsmi_sift_down(d, y, start, n);
    for (size_t end = n - 1; end > 0; end--) {
        tsmi_swap_pairs(d, y, 0, end);
        tsmi_sift_down(d, y, 0, end);
    }
}

/* Whether split a of candidate ia beats split b of candidate ib (shapelet.h): higher
 * gain, then larger gap, then the smaller order index. An invalid split never wins. */
static inline TSM_HD int tsmi_split_better(const tsm_split *a, size_t ia, const tsm_split *b,
                                           size_t ib) {
    if (!a->valid || !b->valid)
        return a->valid && !b->valid;
    if (a->gain > b->gain + TSM_SHAPELET_GAIN_TOL)
        return 1;
    if (b->gain > a->gain + TSM_SHAPELET_GAIN_TOL)
        return 0;
    double scale = fabs(a->gap) > fabs(b->gap) ? fabs(a->gap) : fabs(b->gap);
    double tol = TSM_SHAPELET_GAP_TOL * (scale > 1.0 ? scale : 1.0);
    if (a->gap > b->gap + tol)
        return 1;
    if (b->gap > a->gap + tol)
        return 0;
    return ia < ib;
}

/* The exact best split of n distances d (sorted ascending in place, with y). cnt holds
 * 2 * nc ints of scratch; xlx: the c log c table for c <= n, or NULL. O(n log n + n nc). */
static inline TSM_HD tsm_split tsmi_split_exact(double *d, int *y, size_t n, int nc, int *cnt,
                                                const double *xlx) {
    tsm_split best = {0.0, 0.0, 0.0, 0};
    tsmi_sort_pairs(d, y, n);
    int *tot = cnt, *left = cnt + nc;
    double sum = 0.0;
    for (int k = 0; k < nc; k++)
        tot[k] = left[k] = 0;
    for (size_t j = 0; j < n; j++) {
        tot[y[j]]++;
        sum += d[j];
    }
    const double h_all = tsmi_part_entropy(tot, nc, (int)n, xlx) / (double)n;
    double sl = 0.0;
    for (size_t k = 1; k < n; k++) {
        left[y[k - 1]]++;
        sl += d[k - 1];
        if (!(d[k - 1] < d[k]))
            continue; /* equal distances cannot be separated */
        /* right counts = tot - left, entropy term computed in place */
        double er = tsmi_xlx(xlx, (int)(n - k));
        for (int c = 0; c < nc; c++)
            er -= tsmi_xlx(xlx, tot[c] - left[c]);
        double cond = (tsmi_part_entropy(left, nc, (int)k, xlx) + er) / (double)n;
        tsm_split s = {h_all - cond, (sum - sl) / (double)(n - k) - sl / (double)k,
                       0.5 * (d[k - 1] + d[k]), 1};
        /* within one candidate: first the gain, then the gap; the first split on ties */
        if (tsmi_split_better(&s, 1, &best, 0))
            best = s;
    }
    return best;
}

/* splitmix64: the per-candidate random numbers of the heuristic's shuffle. */
static inline TSM_HD uint64_t tsmi_splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The heuristic split of seed 003 section 4.3 on d, y (permuted in place): Knuth
 * shuffle (Algorithm 4.7) from seed, then Algorithm 4.5: partition [lo, hi] around
 * its last element (Algorithm 4.6) at p, split {d < pivot} | {d >= pivot}; move to
 * the side whose weighted entropy f = |D_k|/|D| H(D_k) is larger (formula 4-7);
 * stop when the conditional entropy rises or the range is empty, keeping the best
 * split seen. cnt holds 3 * nc ints; xlx as for tsmi_split_exact. O(n) expected. */
static inline TSM_HD tsm_split tsmi_split_heuristic(double *d, int *y, size_t n, int nc, int *cnt,
                                                    uint64_t seed, const double *xlx) {
    tsm_split best = {0.0, 0.0, 0.0, 0};
    if (n < 2)
        return best;
    uint64_t rng = seed;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(tsmi_splitmix(&rng) % (uint64_t)(i + 1));
        tsmi_swap_pairs(d, y, i, j);
    }
    int *tot = cnt, *base = cnt + nc, *part = cnt + 2 * nc;
    for (int k = 0; k < nc; k++)
        tot[k] = base[k] = 0;
    for (size_t j = 0; j < n; j++)
        tot[y[j]]++;
    const double h_all = tsmi_part_entropy(tot, nc, (int)n, xlx) / (double)n;
    size_t lo = 0, hi = n - 1, best_p = 0;
    double last = INFINITY, best_cond = INFINITY;
    while (lo < hi) {
        double pivot = d[hi];
        size_t p = lo;
        for (size_t q = lo; q < hi; q++)
            if (d[q] < pivot)
                tsmi_swap_pairs(d, y, p++, q);
        tsmi_swap_pairs(d, y, p, hi);
        /* left = [0, p): base counts of [0, lo) plus [lo, p) */
        for (int k = 0; k < nc; k++)
            part[k] = base[k];
        for (size_t q = lo; q < p; q++)
            part[y[q]]++;
        double fl = tsmi_part_entropy(part, nc, (int)p, xlx);
        for (int k = 0; k < nc; k++)
            part[k] = tot[k] - part[k];
        double fr = tsmi_part_entropy(part, nc, (int)(n - p), xlx);
        double cond = (fl + fr) / (double)n;
        if (cond > last)
            break; /* the conditional entropy rose: keep the last split */
        last = cond;
        if (p > 0 && cond < best_cond) {
            best_cond = cond;
            best_p = p;
        }
        if (fl > fr) {
            if (p == 0)
                break;
            hi = p - 1;
        } else {
            for (size_t q = lo; q <= p; q++)
                base[y[q]]++;
            lo = p + 1;
        }
    }
    if (best_p == 0)
        return best;
    /* [0, best_p) still holds exactly the items below that split's pivot */
    double sl = 0.0, sr = 0.0, maxl = -INFINITY, minr = INFINITY;
    for (size_t j = 0; j < n; j++) {
        if (j < best_p) {
            sl += d[j];
            maxl = d[j] > maxl ? d[j] : maxl;
        } else {
            sr += d[j];
            minr = d[j] < minr ? d[j] : minr;
        }
    }
    best.gain = h_all - best_cond;
    best.gap = sr / (double)(n - best_p) - sl / (double)best_p;
    best.threshold = 0.5 * (maxl + minr);
    best.valid = 1;
    return best;
}

#endif
