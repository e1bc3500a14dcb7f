/* SPDX-License-Identifier: Apache-2.0 */
/* online_step.h - the per-stream scalar steps of the online left-NN (online.h),
 * written once for both backends: online.c runs them per job on a CPU thread,
 * online.cu in the job's plan block (the row loops are the backends' own).
 * Internal (tsmi_ prefix): not part of the library's interface. */
#ifndef TSM_ONLINE_STEP_H
#define TSM_ONLINE_STEP_H

#include "dot.h"
#include "online.h"
#include "stats.h"

#include <math.h>

/* Writes v at index i (relative to pos0) of a mirrored array: both copies. */
static inline TSM_HD void tsmi_put_d(double *a, const tsm_online_job *jb, size_t i, double v) {
    size_t p = jb->pos0 + i, q = p < jb->cap ? p : p - jb->cap;
    a[q] = v;
    a[q + jb->cap] = v;
}

static inline TSM_HD void tsmi_put_u8(uint8_t *a, const tsm_online_job *jb, size_t i, uint8_t v) {
    size_t p = jb->pos0 + i, q = p < jb->cap ? p : p - jb->cap;
    a[q] = v;
    a[q + jb->cap] = v;
}

/* sum_k (a[k] - c)(b[k] - c) over k < m: one QT entry of the centred series, O(m). */
static inline TSM_HD double tsmi_centred_dot(const double *a, const double *b, double c, size_t m) {
    double acc = 0.0;
#ifndef __CUDACC__
#pragma omp simd reduction(+ : acc)
#endif
    for (size_t k = 0; k < m; k++)
        acc += (a[k] - c) * (b[k] - c);
    return acc;
}

/* Moments of subsequence i into st->mu, st->m2: exact (two passes) when i == 0 or the
 * sliding chain is TSM_STATS_REFRESH long, else the sliding update of stats.c
 *   mu' = mu + (x_in - x_out) / m,  M2' = M2 + (x_in - x_out)(x_in - mu' + x_out - mu). */
static inline TSM_HD void tsmi_online_moments(const double *x, size_t i, size_t m,
                                              tsm_online_state *st) {
    const double c = st->c;
    if (i == 0 || st->age_stats >= TSM_STATS_REFRESH) {
        double sum = 0.0, acc = 0.0;
        for (size_t k = 0; k < m; k++)
            sum += x[i + k] - c;
        double mu = sum / (double)m;
        for (size_t k = 0; k < m; k++)
            acc += (x[i + k] - c - mu) * (x[i + k] - c - mu);
        st->mu = mu, st->m2 = acc, st->age_stats = 0;
        return;
    }
    double x_in = x[i + m - 1] - c, x_out = x[i - 1] - c;
    double mu_new = st->mu + (x_in - x_out) / (double)m;
    st->m2 += (x_in - x_out) * (x_in - mu_new + x_out - st->mu);
    st->mu = mu_new;
    st->age_stats++;
}

/* The run of equal samples ending at x[e], capped at m (a subsequence is constant,
 * max == min, exactly when the run ending at its last sample is >= m). */
static inline TSM_HD uint32_t tsmi_next_run(const double *x, size_t e, uint32_t run, size_t m) {
    if (e == 0 || x[e] != x[e - 1])
        return 1;
    return run < m ? run + 1 : (uint32_t)m;
}

/* Mean, kind and inverse norm of subsequence i into the mirrored arrays, from its
 * moments (mu, m2) and the run of equal samples ending at its last sample. O(1). */
static inline TSM_HD void tsmi_store_stats(tsm_online_job *jb, size_t i, uint32_t run, double mu,
                                           double m2) {
    const size_t m = jb->m;
    uint8_t kind = run >= m ? TSM_SUB_CONSTANT : TSM_SUB_NORMAL;
    double sig, inv;
    tsm_finish_moments(&kind, m2, m, &sig, &inv);
    tsmi_put_d(jb->mu, jb, i, mu);
    tsmi_put_d(jb->inv, jb, i, inv);
    tsmi_put_u8(jb->kind, jb, i, kind);
    if (jb->m2) /* a constant subsequence's is 0 exactly, whatever the sliding sums say */
        tsmi_put_d(jb->m2, jb, i, kind == TSM_SUB_NORMAL && m2 > 0.0 ? m2 : 0.0);
}

/* The plain squared Euclidean distance of subsequences i and j from their centred
 * sums of squares S = M2 + m mu^2 and centred dot product qt (online.h). Clamped at 0:
 * rounding may take an exact repeat a little below. */
static inline TSM_HD double tsmi_raw_d2(double s_i, double m2_j, double mu_j, double m, double qt) {
    const double d2 = s_i + fma(m * mu_j, mu_j, m2_j) - 2.0 * qt;
    return d2 > 0.0 ? d2 : 0.0;
}

/* Statistics of subsequence i (moments, kind, inverse norm) into the state and the
 * mirrored arrays. O(1), O(m) on an exact refresh of the moments. */
static inline TSM_HD void tsmi_complete_stats(tsm_online_job *jb, const double *x, size_t i) {
    tsm_online_state *st = jb->state;
    tsmi_online_moments(x, i, jb->m, st);
    tsmi_store_stats(jb, i, st->run, st->mu, st->m2);
}

/* Rebuilds the state of a window whose arrays are not valid (restart or restore): the
 * centre, the trailing run and the statistics of every subsequence in x[0 .. fill-1];
 * the next row is then computed exactly. O(fill + fill m / TSM_STATS_REFRESH). */
static inline TSM_HD void tsmi_online_rebuild(tsm_online_job *jb, const double *x) {
    tsm_online_state *st = jb->state;
    const size_t fill = jb->fill, m = jb->m;
    st->c = fill ? x[fill - 1] : x[0];
    st->mu = st->m2 = 0.0;
    st->run = st->age_stats = st->valid = 0;
    st->age_qt = TSM_QT_REFRESH;
    for (size_t e = 0; e < fill; e++) {
        st->run = tsmi_next_run(x, e, st->run, m);
        if (e + 1 >= m)
            tsmi_complete_stats(jb, x, e + 1 - m);
    }
    st->valid = 1;
}

/* Moves the centre to the mean of the newest subsequence: returns the shift that
 * every stored mean of the window must then undergo (mu[j] -= shift). The shift is
 * what c actually moved by (c + mu rounds; c_new - c_old is exact, the two are close). */
static inline TSM_HD double tsmi_online_recentre(tsm_online_state *st) {
    const double c_new = st->c + st->mu, delta = c_new - st->c;
    st->c = c_new;
    st->mu -= delta;
    return delta;
}

#endif
