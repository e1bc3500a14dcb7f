/* SPDX-License-Identifier: Apache-2.0 */
/* pd3.h - range and top-k discords by PD3, the parallel DRAG of seed 001.
 *
 * Range discords for r: { i : nn(i) >= r } (DESIGN 3), each with its exact nn
 * distance and neighbour; subsequences with no eligible neighbour (nn undefined) and
 * non-finite ones are never discords. */
#ifndef TSM_PD3_H
#define TSM_PD3_H

#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t index;    /* start of the discord */
    double distance;  /* nn(index) = sqrt(d2) to its nearest non-self-match */
    int64_t neighbor; /* that neighbour's start */
} tsm_discord;

/* Work counters of one call, for benchmarks and tests. */
typedef struct {
    uint64_t distances; /* pairwise distances evaluated */
    uint64_t passes;    /* PD3 passes run (top-k: one per r tried) */
    size_t candidates;  /* survivors of the selection phase (last pass) */
    double r;           /* range of the last pass */
} tsm_pd3_stats;

#define TSM_PD3_SEGLEN_DEFAULT 512

/* All range discords for range r (a distance, not squared), ordered by index.
 * seglen: subsequences per segment (0 = default). On success *out is a malloc'ed
 * array of *count entries (NULL when none) that the caller frees. counters may be
 * NULL. */
tsm_status tsm_pd3_range(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r, size_t seglen,
                         tsm_discord **out, size_t *count, tsm_pd3_stats *counters);

/* Top-k discords (DESIGN 3, greedy, best first) found by a descending search over r
 * with PD3 passes (DESIGN 4.2). out holds k entries; *count < k when fewer than k
 * non-overlapping subsequences have a defined nn. */
tsm_status tsm_discords_topk(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t seglen,
                             tsm_discord *out, size_t *count, tsm_pd3_stats *counters);

/* ---- PD3 over several processes (tools/cli/dist_mpi.c, under MPI). ---- */

/* ANDs the Neighbor bitmap (N bytes, 0 or 1) element-wise over all the parts, in
 * place (MPI_Allreduce with MPI_BAND); returns 0, or non-zero when it failed. */
typedef int (*tsm_pd3_sync_fn)(void *user, uint8_t *neighbor, size_t N);

/* Part `part` of `parts` of tsm_pd3_range on either backend: both phases over the
 * segments seg = part mod parts (on CUDA the device's segments), with sync called once between them
 * (by every part: it is collective). *out gets the range discords of its own segments, with the
 * exact nn of tsm_pd3_range; the union over the parts, ordered by index, is
 * tsm_pd3_range's result, bit for bit, when every part runs on the same backend.
 * parts = 1 is tsm_pd3_range. */
tsm_status tsm_pd3_range_part(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r,
                              size_t seglen, size_t part, size_t parts, tsm_pd3_sync_fn sync,
                              void *user, tsm_discord **out, size_t *count,
                              tsm_pd3_stats *counters);

/* A range search for the top-k driver: tsm_pd3_range's contract (all range discords
 * in *out, malloc'ed), user passed through. */
typedef tsm_status (*tsm_pd3_range_fn)(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r,
                                       size_t seglen, void *user, tsm_discord **out, size_t *count,
                                       tsm_pd3_stats *counters);

/* tsm_discords_topk with its range passes made by `range` (a distributed search
 * returns the discords of all parts, on every part, so that all take the same steps). */
tsm_status tsm_discords_topk_by(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                                size_t seglen, tsm_pd3_range_fn range, void *user, tsm_discord *out,
                                size_t *count, tsm_pd3_stats *counters);

/* ---- internal: the CUDA backend (pd3.cu), not part of the library's interface ---- */
#ifdef TSMINE_HAVE_CUDA
/* tsm_pd3_range (parts = 1) or tsm_pd3_range_part on the device for a CUDA ctx: the
 * arguments already validated (seglen > 0, r finite and >= 0); s must carry its device
 * copies (s->dev). A part owns the device's segments seg = part mod parts (they are not
 * the CPU's segments: the discords of all parts together are the same set); sync gets
 * the Neighbor bitmap on the host between the phases. Results equal the CPU backend's. */
tsm_status tsmi_pd3_range_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r,
                               size_t seglen, size_t part, size_t parts, tsm_pd3_sync_fn sync,
                               void *user, tsm_discord **out, size_t *count,
                               tsm_pd3_stats *counters);
#endif

#ifdef __cplusplus
}
#endif
#endif
