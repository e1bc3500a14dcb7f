/* SPDX-License-Identifier: Apache-2.0 */
/* distance.h - the squared z-normalised Euclidean distance of DESIGN section 3,
 * shared by every backend (plain C, usable from CUDA device code too).
 *
 *   d2(i,j) = 2m (1 - corr),  corr = (QT[i][j] - m mu_i mu_j) / (m sigma_i sigma_j)
 *
 * (seed 001 formula (7)), with corr clamped to [-1, 1]. With inv_i = 1/(sqrt(m)
 * sigma_i) the correlation is (QT - m mu_i mu_j) inv_i inv_j. Constants and
 * non-finite subsequences follow the conventions of DESIGN 3. */
#ifndef TSM_DISTANCE_H
#define TSM_DISTANCE_H

#include "stats.h"

#include <math.h>

/* Correlation of two normal subsequences from their dot product and mmu_i = m mu_i,
 * clamped: the form for loops that keep m mu_i of their candidates (pd3). */
static inline TSM_HD double tsm_corr_mmu(double qt, double mmu_i, double inv_i, double mu_j,
                                         double inv_j) {
    double c = (qt - mmu_i * mu_j) * inv_i * inv_j;
    return c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c);
}

/* Correlation of two normal subsequences from their dot product, clamped. */
static inline TSM_HD double tsm_corr(double qt, double mu_i, double inv_i, double mu_j,
                                     double inv_j, size_t m) {
    return tsm_corr_mmu(qt, (double)m * mu_i, inv_i, mu_j, inv_j);
}

/* Squared distance of a pair of which at least one is not normal; NAN when either
 * is non-finite (the pair does not exist). */
static inline TSM_HD double tsm_d2_special(int kind_i, int kind_j, size_t m) {
    if (kind_i == TSM_SUB_NONFINITE || kind_j == TSM_SUB_NONFINITE)
        return NAN;
    if (kind_i == TSM_SUB_CONSTANT && kind_j == TSM_SUB_CONSTANT)
        return 0.0;
    return (double)m;
}

/* Squared distance of two subsequences from their kinds, dot product, means and
 * inverse norms; NAN when the pair is excluded (non-finite member). The form for
 * device code, which holds the statistics in device arrays. */
static inline TSM_HD double tsm_d2_pair(int kind_i, int kind_j, double qt, double mu_i,
                                        double inv_i, double mu_j, double inv_j, size_t m) {
    if (kind_i != TSM_SUB_NORMAL || kind_j != TSM_SUB_NORMAL)
        return tsm_d2_special(kind_i, kind_j, m);
    return 2.0 * (double)m * (1.0 - tsm_corr(qt, mu_i, inv_i, mu_j, inv_j, m));
}

/* Squared distance of subsequences i and j given their dot product QT[i][j] over the
 * working series s->t; NAN when the pair is excluded (non-finite member). */
static inline double tsm_d2(const tsm_stats *s, size_t i, size_t j, double qt) {
    return tsm_d2_pair(s->kind[i], s->kind[j], qt, s->mu[i], s->inv[i], s->mu[j], s->inv[j], s->m);
}

/* Whether i and j are a non-self-match for exclusion zone excl. */
static inline TSM_HD int tsm_non_self(size_t i, size_t j, size_t excl) {
    return (i > j ? i - j : j - i) >= excl;
}

#endif
