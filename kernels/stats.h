/* SPDX-License-Identifier: Apache-2.0 */
/* stats.h - per-subsequence statistics of a series: the preprocessing every distance
 * kernel shares (seed 001 section 3.3, the "preprocessing phase").
 *
 * For a series t[0..n-1] and subsequence length m, tsm_stats holds a working copy of
 * the series and, for each of the N = n - m + 1 subsequences, its mean, the inverse
 * of its centred norm and its kind (normal, constant, non-finite). */
#ifndef TSM_STATS_H
#define TSM_STATS_H

#include "tsm.h"

#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Kind of a subsequence, which fixes how distances to it are defined (DESIGN 3). */
enum {
    TSM_SUB_NORMAL = 0,    /* finite and not constant: z-normalised distance */
    TSM_SUB_CONSTANT = 1,  /* max == min: d2 = 0 to constants, m to normals */
    TSM_SUB_NONFINITE = 2, /* contains NaN or +-Inf: excluded from everything */
};

typedef struct {
    size_t n, m, N;
    /* Working series: t[k] - c for finite t[k], where c is the mean of the finite
     * values, and 0 for non-finite ones. Distances are invariant under the shift, it
     * keeps QT - m*mu_i*mu_j away from cancellation, and the zeros keep dot-product
     * recurrences finite across NaN stretches (those subsequences are masked). */
    double *t;
    double *mu;    /* mean of each subsequence of the working series */
    double *inv;   /* 1 / sqrt(sum_k (t[i+k] - mu_i)^2) = 1/(sqrt(m) sigma_i); 0 unless normal */
    double *sig;   /* population standard deviation sigma_i; 0 for constants */
    uint8_t *kind; /* TSM_SUB_* */
    size_t n_normal, n_constant, n_nonfinite;
    /* CUDA backend: device copies of t, mu, inv, sig and kind (equal to the host
     * arrays); NULL for the CPU backend. */
    struct tsm_stats_dev *dev;
} tsm_stats;

/* Device copies of a tsm_stats (device pointers). */
typedef struct tsm_stats_dev {
    double *t, *mu, *inv, *sig;
    uint8_t *kind;
} tsm_stats_dev;

/* Exact mean and centred sum of squares of w[0..m-1] (two passes), shared by the CPU
 * statistics and the device kernels that compute a window's moments afresh. */
static inline TSM_HD void tsm_exact_moments(const double *w, size_t m, double *mean, double *m2) {
    double sum = 0.0;
    for (size_t k = 0; k < m; k++)
        sum += w[k];
    const double mu = sum / (double)m;
    double acc = 0.0;
    for (size_t k = 0; k < m; k++)
        acc += (w[k] - mu) * (w[k] - mu);
    *mean = mu;
    *m2 = acc;
}

/* The working series of the statistics: raw less the mean of its finite values, the
 * non-finite values replaced by 0 (so sums stay finite), into t[0..n-1]. */
void tsm_centre_series(const double *raw, size_t n, double *t);

/* Turns the centred sum of squares m2 of a window into sigma and inv, shared by the
 * CPU and CUDA moments: a normal window whose rounded spread is zero behaves as a
 * constant; inv = 0 for everything that is not normal. */
static inline TSM_HD void tsm_finish_moments(uint8_t *kind, double m2, size_t m, double *sig,
                                             double *inv) {
    if (*kind == TSM_SUB_NORMAL && m2 > 0.0) {
        *sig = sqrt(m2 / (double)m);
        *inv = 1.0 / sqrt(m2);
        return;
    }
    if (*kind == TSM_SUB_NORMAL)
        *kind = TSM_SUB_CONSTANT;
    *sig = 0.0;
    *inv = 0.0;
}

/* Computes the statistics of t[0..n-1] for length m. Means and variances slide in
 * O(1) per step (Welford-style add/remove) and are recomputed exactly every
 * TSM_STATS_REFRESH steps, so error stays bounded on long series; O(n) plus
 * O(n m / TSM_STATS_REFRESH). Fails with TSM_EINVAL for m < 3 or m > n. */
tsm_status tsm_stats_new(tsm_ctx *ctx, const double *t, size_t n, size_t m, tsm_stats **out);
void tsm_stats_destroy(tsm_stats **self_p);

#define TSM_STATS_REFRESH 64

#ifdef __cplusplus
}
#endif
#endif
