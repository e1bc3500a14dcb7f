/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet_dist.h - the distance arithmetic of shapelet.h that the CPU (shapelet.c)
 * and CUDA (shapelet.cu) backends share: the Euclidean best match from a dot product,
 * the banded DTW of two z-normalised subsequences, and the DTW minimum over a series
 * with early abandoning. Internal; plain C usable from device code. */
#ifndef TSM_SHAPELET_DIST_H
#define TSM_SHAPELET_DIST_H

#include "stats.h"

#include <math.h>

/* "Effective" correlation of a normal candidate (centred dot factor lm = l mu_a,
 * inverse norm ia) with subsequence u (dot product q, mean mu, inverse norm inv, kind):
 * the correlation for a normal u, 0.5 for a constant u (d2 = l, DESIGN 3), -inf for a
 * non-finite one. The best match is the largest; tsmi_corr_dist turns it into d. */
static inline TSM_HD double tsmi_eff_corr(double q, double lm, double ia, double mu, double inv,
                                          int kind) {
    if (kind == TSM_SUB_NORMAL)
        return (q - lm * mu) * ia * inv;
    return kind == TSM_SUB_CONSTANT ? 0.5 : -INFINITY;
}

/* The same for any candidate kind: a constant candidate (kind_a) is at corr 1 from
 * constants (d = 0) and 0.5 from normals (d = 1). */
static inline TSM_HD double tsmi_match_corr(int kind_a, double q, double lm, double ia, double mu,
                                            double inv, int kind) {
    if (kind_a != TSM_SUB_CONSTANT)
        return tsmi_eff_corr(q, lm, ia, mu, inv, kind);
    return kind == TSM_SUB_CONSTANT ? 1.0 : (kind == TSM_SUB_NORMAL ? 0.5 : -INFINITY);
}

/* Length-normalised distance sqrt(d2 / l) = sqrt(2 (1 - corr)), corr clamped at 1;
 * +inf when there was no match (corr = -inf). */
static inline TSM_HD double tsmi_corr_dist(double c) {
    if (c == -INFINITY)
        return INFINITY;
    c = c > 1.0 ? 1.0 : c;
    return sqrt(2.0 * (1.0 - c));
}

/* z-normalisation factor of a subsequence of length l with inverse centred norm inv
 * (stats.h): z = (t - mu) inv sqrt(l); 0 for constants (their z is all zeros). */
static inline TSM_HD double tsmi_z_factor(double inv, size_t l) {
    return inv * sqrt((double)l);
}

/* DTW cost with squared point costs between za[x] = (ta[x] - mua) ka and
 * zb[y] = (tb[y] - mub) kb, x, y < l, inside the band |x - y| <= w (seed 003
 * Algorithm 2.2), in two band rows prev, cur of 2w + 1 cells: cell k of row x is
 * y = x + k - w. Returns INFINITY as soon as a whole row exceeds bsf (every path
 * crosses every row and costs are >= 0). w = 0 is the squared Euclidean distance. */
static inline TSM_HD double tsmi_dtw_band(const double *ta, double mua, double ka, const double *tb,
                                          double mub, double kb, size_t l, size_t w, double bsf,
                                          double *prev, double *cur) {
    const size_t W = 2 * w + 1;
    for (size_t k = 0; k < W; k++)
        prev[k] = INFINITY;
    for (size_t x = 0; x < l; x++) {
        const double za = (ta[x] - mua) * ka;
        double rowmin = INFINITY;
        for (size_t k = 0; k < W; k++) {
            if (x + k < w || x + k - w >= l) {
                cur[k] = INFINITY;
                continue;
            }
            const size_t y = x + k - w;
            const double diff = za - (tb[y] - mub) * kb;
            double m = prev[k]; /* (x-1, y-1) */
            if (k + 1 < W && prev[k + 1] < m)
                m = prev[k + 1]; /* (x-1, y) */
            if (k > 0 && cur[k - 1] < m)
                m = cur[k - 1]; /* (x, y-1) */
            if (x == 0 && y == 0)
                m = 0.0;
            const double v = diff * diff + m;
            cur[k] = v;
            rowmin = v < rowmin ? v : rowmin;
        }
        if (rowmin > bsf)
            return INFINITY;
        double *sw = prev;
        prev = cur;
        cur = sw;
    }
    return prev[w];
}

/* The DTW distance sqrt(D / l) of candidate a to the U subsequences b .. b + U - 1 of
 * the working series t (means mu, inverse norms inv, kinds kind; non-finite ones
 * skipped), starting at alignment u0 (the Euclidean best: a good early bound) and then
 * every other u in order, abandoning those that exceed the best so far. *pos gets the
 * best u (the smallest among equals). prev, cur: 2w + 1 doubles each. */
static inline TSM_HD double tsmi_dtw_min(const double *t, const double *mu, const double *inv,
                                         const uint8_t *kind, size_t a, size_t b, size_t U,
                                         size_t l, size_t w, size_t u0, double *prev, double *cur,
                                         int64_t *pos) {
    const double ka = tsmi_z_factor(inv[a], l);
    double bsf = INFINITY;
    size_t bu = u0;
    for (size_t step = 0; step <= U; step++) {
        const size_t u = step == 0 ? u0 : step - 1;
        if ((step > 0 && u == u0) || u >= U)
            continue;
        const size_t g = b + u;
        if (kind[g] == TSM_SUB_NONFINITE)
            continue;
        const double D = tsmi_dtw_band(t + a, mu[a], ka, t + g, mu[g], tsmi_z_factor(inv[g], l), l,
                                       w, bsf, prev, cur);
        if (D < bsf || (D == bsf && u < bu))
            bsf = D, bu = u;
    }
    *pos = (int64_t)bu;
    return sqrt(bsf / (double)l);
}

#endif
