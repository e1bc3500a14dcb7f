/* SPDX-License-Identifier: Apache-2.0 */
/* mp.h - the matrix profile: nearest-neighbour distance of every subsequence
 * (DESIGN 3: nn(i), and the left variant lnn(i) over j <= i - excl), computed by the
 * diagonal traversal of the QT matrix with the recurrence of dot.h.
 *
 * Output conventions (shared by every kernel that reports profiles):
 *   dist[i] = sqrt(d2) of the nearest non-self-match, index[i] its position;
 *   dist[i] = +INFINITY, index[i] = -1 when i has no eligible neighbour;
 *   dist[i] = NAN,       index[i] = -1 when i itself contains a non-finite value.
 * Ties: the smaller neighbour index wins. */
#ifndef TSM_MP_H
#define TSM_MP_H

#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Computes the two-sided profile (mp, mpi) and/or the left profile (lmp, lmpi) of the
 * series described by s, exclusion zone excl; pass NULL for a profile not wanted
 * (both arrays of a pair NULL together). Arrays hold s->N entries. O(N^2) work,
 * O(threads N) extra memory. */
tsm_status tsm_mp(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double *mp, int64_t *mpi,
                  double *lmp, int64_t *lmpi);

/* ---- Internal (tsmi_): the backends of tsm_mp; not part of the library's interface. ---- */

/* The CUDA backend of tsm_mp (mp.cu), called by tsm_mp after it validated the
 * arguments; same contract, outputs in host memory. */
tsm_status tsmi_mp_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double *mp, int64_t *mpi,
                        double *lmp, int64_t *lmpi);

/* The O(N) last pass shared by both backends (mp.c): from the best normal left
 * neighbour of every subsequence (lc: correlation, -inf when none; lj: index) and the
 * best normal right one (rc, rj; NULL when mp is not wanted), applies the conventions
 * for constants and non-finite subsequences and writes the wanted profiles. */
tsm_status tsmi_mp_finish(tsm_ctx *ctx, const tsm_stats *s, size_t excl, const double *lc,
                          const int64_t *lj, const double *rc, const int64_t *rj, double *mp,
                          int64_t *mpi, double *lmp, int64_t *lmpi);

#ifdef __cplusplus
}
#endif
#endif
