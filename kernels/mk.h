/* mk.h - exact motifs by MK (Mueen-Keogh with reference subsequences), seed 000, with
 * the termination rule of DESIGN 4.3.
 *
 * Motif (top-1): the pair (a, b), a < b, |a - b| >= excl, with the smallest distance;
 * ties to the smaller a, then the smaller b. Top-k: greedily, each pair
 * non-overlapping (every member at least excl from every member of earlier pairs). */
#ifndef TSM_MK_H
#define TSM_MK_H

#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t a, b;    /* a < b */
    double distance; /* sqrt(d2) */
} tsm_motif;

typedef struct {
    uint64_t distances; /* exact pairwise distances evaluated (including the R x N matrix) */
    uint64_t offsets;   /* offsets of the ordered list visited (last search) */
    size_t refs;        /* references used */
} tsm_mk_stats;

#define TSM_MK_REFS_DEFAULT 10
#define TSM_MK_SEED_DEFAULT 20261121u

/* Top-k motif pairs, best first, into out[0..k-1]; *count < k when no further
 * non-overlapping pair exists. refs: number of reference subsequences (0 = default),
 * chosen distinct and at random with the given seed. counters may be NULL. */
tsm_status tsm_mk_motifs(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t refs,
                         uint64_t seed, tsm_motif *out, size_t *count, tsm_mk_stats *counters);

#ifdef __cplusplus
}
#endif
#endif
