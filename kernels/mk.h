/* SPDX-License-Identifier: Apache-2.0 */
/* mk.h - exact motifs by MK (Mueen-Keogh with reference subsequences), seed 000, with
 * the termination rule of DESIGN 4.3.
 *
 * Motif (top-1): the pair (a, b), a < b, |a - b| >= excl, with the smallest distance;
 * ties to the smaller a, then the smaller b. Top-k: greedily, each pair
 * non-overlapping (every member at least excl from every member of earlier pairs). */
#ifndef TSM_MK_H
#define TSM_MK_H

#include "mp.h"
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

/* ---- MK over several processes (tools/cli/dist_mk.c, under MPI). ---- */

/* The exchange after each batch of offsets (collective: every part calls it the same
 * number of times). On entry *best is this part's best pair so far (all parts start a
 * batch from the same one) and live[0 .. *nlive) the positions its chunks keep; it
 * must leave the best over all parts (tsm_mk_before) in *best and every part's kept
 * positions, concatenated in part order, in live (at most cap) and *nlive. Returns 0,
 * or non-zero when it failed. */
typedef int (*tsm_mk_sync_fn)(void *user, tsm_motif *best, size_t *live, size_t *nlive, size_t cap);

/* Whether motif x comes before y: smaller distance, then smaller a, then smaller b. */
static inline int tsm_mk_before(const tsm_motif *x, const tsm_motif *y) {
    if (x->distance != y->distance)
        return x->distance < y->distance;
    if (x->a != y->a)
        return x->a < y->a;
    return x->b < y->b;
}

/* Part `part` of `parts` of tsm_mk_motifs on the CPU backend: every part computes the
 * references' distances, and the chunks of the live list of each batch of offsets are
 * cut into `parts` contiguous ranges, one per part, merged by sync after each batch.
 * Every chunk then starts each batch from the same bsf as in one process, so every
 * part returns tsm_mk_motifs's motifs bit for bit (the counters count this part's
 * work). parts = 1 is tsm_mk_motifs (any backend); several parts on a CUDA ctx fail
 * with TSM_EBACKEND. */
tsm_status tsm_mk_motifs_part(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t refs,
                              uint64_t seed, size_t part, size_t parts, tsm_mk_sync_fn sync,
                              void *user, tsm_motif *out, size_t *count, tsm_mk_stats *counters);

/* ---- Motifs by the profile's traversal (motif_scan.c): the scan path. ---- */

/* Top-k motif pairs as tsm_mk_motifs defines them, each search one pass of
 * tsm_mp_best_pair over all pairs of normal subsequences (no references, no bounds),
 * whose pair then gets its distance exactly as MK computes it (the dot-product formula),
 * and the pairs with constants by DESIGN 3's conventions in O(N). It costs about half a
 * profile per motif whatever the data, where MK's cost depends on how well its bounds
 * prune: on every series measured (docs/performance.md) it was the faster path. The
 * pair is MK's except where two pairs' distances tie to rounding. counters: distances
 * = pairs scanned (this part's), offsets and refs 0. */
tsm_status tsm_motifs_scan(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, tsm_motif *out,
                           size_t *count, tsm_mk_stats *counters);

/* Whether motifs found by the scan may differ from MK's: some pair is a near-exact
 * repeat, d^2 <= 2 m TSM_MOTIF_NEAR_EXACT (1 - corr <= TSM_MOTIF_NEAR_EXACT for normal
 * subsequences; two constants are at 0). There many pairs can tie (every copy of a
 * repeated shape is at distance 0 from the others, and from a constant pair) and the
 * scan ranks them by its correlation's rounding, MK by its distance's, so the two may
 * name different pairs: NAB's art_increase_spike_density at m = 100, MK (0, 100) and the
 * scan (896, 2896); windows of TSB-UAD's Occupancy, where the scan's constant pair at 0
 * came before MK's normal pair at 0 that the scan's rounding put just above 0. */
#define TSM_MOTIF_NEAR_EXACT 1e-9
int tsm_motifs_near_exact(const tsm_stats *s, const tsm_motif *m, size_t count);

/* Whether tsm_motifs_auto goes to MK without the scan: the series has two constant
 * subsequences or more, whose pair at distance 0 would send it there anyway (flat
 * stretches of sensor feeds), so the scan would only add its cost. */
int tsm_motifs_auto_mk(const tsm_stats *s);

/* Top-k motifs by the faster exact path: MK (tsm_mk_motifs, refs and seed as there)
 * where tsm_motifs_auto_mk says so, else the scan (tsm_motifs_scan), then MK when the
 * scan's pairs are near-exact repeats (tsm_motifs_near_exact); so the answer is always
 * MK's but for pairs whose distances tie to rounding away from 0. *by_mk (may be NULL)
 * says whether MK answered; counters are the last search's. */
tsm_status tsm_motifs_auto(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t refs,
                           uint64_t seed, tsm_motif *out, size_t *count, tsm_mk_stats *counters,
                           int *by_mk);

/* The exchange after each search of part-wise scans (collective: every part calls it
 * the same number of times): on entry *best is this part's best pair, on return it
 * must be the best over all parts (tsm_mp_pair_beats). Returns 0, or non-zero when it
 * failed. */
typedef int (*tsm_scan_sync_fn)(void *user, tsm_mp_pair *best);

/* Part `part` of `parts` of tsm_motifs_scan: each part scans a contiguous range of the
 * bands holding about 1 / parts of the pairs, on its own backend, and sync merges the
 * parts' pairs after every search, so every part returns tsm_motifs_scan's motifs.
 * parts = 1 (sync may be NULL) is tsm_motifs_scan. */
tsm_status tsm_motifs_scan_part(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                                size_t part, size_t parts, tsm_scan_sync_fn sync, void *user,
                                tsm_motif *out, size_t *count, tsm_mk_stats *counters);

/* ---- Internal (tsmi_ prefix): shared by the CPU (mk.c) and CUDA (mk.cu) backends, not
 * part of the library's interface. ------------------------------------------------------ */

/* A candidate motif: distance and members, a < b. */
typedef struct {
    double d;
    int64_t a, b;
} tsmi_mk_pair;

/* Whether (d, a, b) comes before p in the motif order: smaller distance, then smaller a,
 * then smaller b (DESIGN 3). Host and device code. */
static inline TSM_HD int tsmi_mk_before(double d, int64_t a, int64_t b, const tsmi_mk_pair *p) {
    if (d != p->d)
        return d < p->d;
    if (a != p->a)
        return a < p->a;
    return b < p->b;
}

/* Distance of subsequences i and j as MK evaluates it exactly: sqrt of distance.h's d2
 * from their dot product, always taken as (min, max). O(m). */
double tsmi_mk_dist(const tsm_stats *s, size_t i, size_t j);

/* Safety margin added to bsf in every pruning test, in units of distance (mk.c says
 * why it covers the rounding of D, of the exact distances and of the float bounds). */
double tsmi_mk_margin(size_t m);

/* The finite positions of s into *finite (malloc'ed, *nfinite of them) and, when there
 * are at least two, the R = min(refs or the default, nfinite) references drawn by a
 * partial Fisher-Yates shuffle with splitmix64(seed): finite[0 .. R-1] in drawing order.
 * *R = 0 when there are fewer than two. Fails only for lack of memory. */
tsm_status tsmi_mk_draw_refs(tsm_ctx *ctx, const tsm_stats *s, size_t refs, uint64_t seed,
                             size_t **finite, size_t *nfinite, size_t *R);

/* row[0 .. R-1]: the references (indices into the drawing order) by decreasing standard
 * deviation sd of their row of D, ties in drawing order; row[0] is the ordering
 * reference Z (seed 000 Algorithm 5 and I_SD). */
void tsmi_mk_order_refs(const double *sd, size_t R, size_t *row);

/* The outermost pair of finite subsequences that mask leaves: 1 and (*lo, *hi) when
 * hi - lo >= excl (then some non-self-match pair exists), else 0 (none exists). */
int tsmi_mk_outer_pair(const tsm_stats *s, const uint8_t *mask, size_t excl, size_t *lo,
                       size_t *hi);

/* One search of the top-k driver: the best pair among the finite subsequences that mask
 * (1 = excluded) leaves, d = +INFINITY when there is none; adds the exact distances it
 * evaluated to *ndist and sets *noffsets to the offsets it visited. */
typedef tsm_status (*tsmi_mk_search_fn)(void *state, const uint8_t *mask, tsmi_mk_pair *best,
                                        uint64_t *ndist, uint64_t *noffsets);
/* Tells a backend that positions lo .. hi-1 were just masked (NULL: nothing to do). */
typedef tsm_status (*tsmi_mk_mask_fn)(void *state, size_t lo, size_t hi);

/* Top-k by masking, for both backends: runs search, reports its pair, masks every
 * subsequence within excl of either member, and repeats until k pairs are found or no
 * pair is left. *count is set; *ndist and *noffsets as search leaves them. */
tsm_status tsmi_mk_topk(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                        tsmi_mk_search_fn search, tsmi_mk_mask_fn masked, void *state,
                        tsm_motif *out, size_t *count, uint64_t *ndist, uint64_t *noffsets);

#ifdef TSMINE_HAVE_CUDA
/* The CUDA backend of tsm_mk_motifs (mk.cu), called with validated arguments; the same
 * references, pairs and (to rounding) distances as the CPU backend. */
tsm_status tsmi_mk_motifs_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t refs,
                               uint64_t seed, tsm_motif *out, size_t *count,
                               tsm_mk_stats *counters);
#endif

#ifdef __cplusplus
}
#endif
#endif
