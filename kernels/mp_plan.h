/* SPDX-License-Identifier: Apache-2.0 */
/* mp_plan.h - the CPU traversal's tile grid and read-only inputs, shared by the
 * profile (mp.c) and the best pair (mp_pair.c) so that both compute every pair's
 * correlation from the same tiles, bit for bit (internal). */
#ifndef TSM_MP_PLAN_H
#define TSM_MP_PLAN_H

#include "dispatch.h"
#include "stats.h"

#if TSMI_HAVE_AVX512
#include <immintrin.h>
#endif

#define MP_W 48   /* diagonals per tile: the SIMD lanes of a row */
#define MP_H 4096 /* rows per tile: cov is recomputed exactly at every tile start */

/* Read-only inputs of the traversal, padded with MP_W entries past the end so that
 * the lanes of diagonals running off the matrix read harmless values (inv = NaN). */
typedef struct {
    size_t N, m;
    const double *t;   /* working series (n + MP_W) */
    const double *mu;  /* means (N + MP_W) */
    const double *df;  /* (t[k+m] - t[k]) / 2 */
    const double *dg;  /* (t[k+m] - mu[k+1]) + (t[k] - mu[k]) */
    const double *inv; /* inv of normal subsequences, NaN for the others */
} mp_plan;

/* Builds the padded plan arrays in one allocation, which it returns (the caller
 * frees it; NULL when out of memory). Subsequences with mask[k] != 0 (mask may be
 * NULL) are left out as if they were not normal. O(n). */
double *tsmi_mp_make_plan(const tsm_stats *s, const uint8_t *mask, mp_plan *p);

/* cov(i, j + w) for w < MP_W, computed directly from centred values: O(m MP_W). */
void tsmi_mp_exact_cov(const mp_plan *p, size_t i, size_t j, double *out);

#if TSMI_HAVE_AVX512
/* One step down the diagonals of 8 lanes: cov(i + 1, j + 1) = cov(i, j) + df_i dg_j +
 * dg_i df_j as two fused steps in this order (dfi, dgi broadcast; dgj, dfj the lanes'
 * columns). The profile's tile and the best pair's both step with it, so they agree bit
 * for bit. */
TSMI_TARGET_AVX512 static inline __m512d tsmi_mp_step_avx512(__m512d cov, __m512d dfi, __m512d dgi,
                                                             const double *dgj, const double *dfj) {
    cov = _mm512_fmadd_pd(dfi, _mm512_loadu_pd(dgj), cov);
    return _mm512_fmadd_pd(dgi, _mm512_loadu_pd(dfj), cov);
}
#endif

/* Bands of the traversal of N subsequences with exclusion zone excl, width diagonals
 * each. */
size_t tsmi_mp_band_count(size_t N, size_t excl, size_t width);

#endif
