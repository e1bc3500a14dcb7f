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

/* ---- Partial profiles: the traversal cut into bands of diagonals, so that several
 * processes (tools/cli/dist_*.c, under MPI) can share one profile. Band b holds the
 * diagonals excl + b W .. excl + (b + 1) W - 1, W fixed by the backend (its tile
 * grid). Every pair's correlation depends only on that grid, so merging the partial
 * results of disjoint band ranges that cover all bands - larger correlation, then
 * smaller index (tsm_mp_beats) - and finishing them with tsm_mp_finish gives exactly
 * tsm_mp's profile, bit for bit, on the same backend. ---- */

/* Number of bands of a traversal of N subsequences on ctx's backend. */
size_t tsm_mp_bands(const tsm_ctx *ctx, size_t N, size_t excl);

/* Pairs (i, j) on band b: its share of the work. O(W). */
uint64_t tsm_mp_band_pairs(const tsm_ctx *ctx, size_t N, size_t excl, size_t b);

/* The bands [*b0, *b1) of part `part` of `parts`: contiguous ranges with equal numbers
 * of pairs to within one band (empty when there are fewer bands than parts); together
 * they cover every band. O(N). */
void tsm_mp_split(const tsm_ctx *ctx, size_t N, size_t excl, size_t part, size_t parts, size_t *b0,
                  size_t *b1);

/* The pairs on bands b0 .. b1-1 only: for every subsequence, its best normal left
 * neighbour (lc: correlation, lj: index) and best normal right one (rc, rj; both NULL
 * when only the left profile is wanted), -inf and -1 when none. Arrays of s->N.
 * O(pairs) work, the same memory as tsm_mp. */
tsm_status tsm_mp_part(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t b0, size_t b1,
                       double *lc, int64_t *lj, double *rc, int64_t *rj);

/* The profiles (as tsm_mp writes them) from merged partial results covering every
 * band; mp needs rc. O(N). */
tsm_status tsm_mp_finish(tsm_ctx *ctx, const tsm_stats *s, size_t excl, const double *lc,
                         const int64_t *lj, const double *rc, const int64_t *rj, double *mp,
                         int64_t *mpi, double *lmp, int64_t *lmpi);

/* Whether partial result (v, idx) beats (best, best_idx): the merge rule. */
static inline int tsm_mp_beats(double v, int64_t idx, double best, int64_t best_idx) {
    return v > best || (v == best && idx < best_idx);
}

/* ---- The best pair: the same traversal keeping only the pair (a, b), a < b,
 * b - a >= excl, of normal subsequences with the largest correlation (clamped at 1),
 * ties to the smaller a, then the smaller b. Each pair's correlation is the one the
 * profile computes from the same tiles; a filter per column (cov inv_a >= T / inv_b,
 * with a relative 1e-12 to spare) skips the bookkeeping of pairs that cannot reach
 * the best so far T, so a pair costs about half of what it costs the profile. The
 * motifs' scan path (mk.h). ---- */

typedef struct {
    double corr;  /* -inf when none */
    int64_t a, b; /* -1 when none */
} tsm_mp_pair;

/* Whether x comes before y: larger correlation, then smaller a, then smaller b. */
static inline int tsm_mp_pair_beats(const tsm_mp_pair *x, const tsm_mp_pair *y) {
    if (x->corr != y->corr)
        return x->corr > y->corr;
    return x->a != y->a ? x->a < y->a : x->b < y->b;
}

/* The best pair on bands b0 .. b1-1 (tsm_mp_bands), leaving out the subsequences with
 * mask[k] != 0 (mask may be NULL). O(pairs) work, O(n) memory. */
tsm_status tsm_mp_best_pair(tsm_ctx *ctx, const tsm_stats *s, size_t excl, const uint8_t *mask,
                            size_t b0, size_t b1, tsm_mp_pair *best);

/* ---- Internal (tsmi_): the backends of tsm_mp; not part of the library's interface. ---- */

/* The checks that tsm_mp_part and tsm_mp_best_pair share: the shape of s with excl,
 * and bands [b0, b1) within tsm_mp_bands; fails on ctx with `what` in the message. */
tsm_status tsmi_mp_check_bands(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t b0, size_t b1,
                               const char *what);

/* The CUDA backend of tsm_mp (mp.cu), called by tsm_mp after it validated the
 * arguments; same contract, outputs in host memory. */
tsm_status tsmi_mp_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double *mp, int64_t *mpi,
                        double *lmp, int64_t *lmpi);

#ifdef TSMINE_HAVE_CUDA
/* tsm_mp_part and the band width on the CUDA backend (mp.cu). */
tsm_status tsmi_mp_part_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t b0, size_t b1,
                             double *lc, int64_t *lj, double *rc, int64_t *rj);
size_t tsmi_mp_band_width_cuda(void);
/* tsm_mp_best_pair on the CUDA backend (mp_pair.cu). */
tsm_status tsmi_mp_best_pair_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t excl,
                                  const uint8_t *mask, size_t b0, size_t b1, tsm_mp_pair *best);
#endif

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
