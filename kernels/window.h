/* SPDX-License-Identifier: Apache-2.0 */
/* window.h - the daemon's windowed passes batched over many streams (DESIGN 5.1: one
 * launch per tick for all due streams, never one per stream).
 *
 * For each of B windows (a stream's last n samples, one contiguous array thanks to
 * the mirrored ring) and a common subsequence length m and exclusion zone excl, the
 * call finds
 *   - the range discords of the window for its own r: { i : nn(i) >= r }, nn the
 *     two-sided nearest-neighbour distance within the window (DESIGN 3), ordered by
 *     index, each with its neighbour: exactly what tsm_pd3_range returns on that
 *     window;
 *   - optionally its top-1 motif pair: what tsm_mk_motifs (k = 1) returns, but for
 *     pairs whose distances tie to rounding away from 0 (the CPU finds it by
 *     tsm_motifs_auto, CUDA reads it off the window's profile).
 * Statistics follow stats.h on each window alone (centred by the window's finite
 * mean), so results equal the batch kernels run on a copy of the window; distances to
 * within 1e-9 relative.
 *
 * CPU backend: the windows in parallel (OpenMP over windows), each by tsm_pd3_range
 * and tsm_motifs_auto with one thread. CUDA backend: the windows' samples are device
 * pointers (into the daemon's ring allocation); the profile of every window is
 * computed in one batched tiled launch (grid over window x tile), and the discords
 * and the motif are read off it on the device; outputs come back to the host. */
#ifndef TSM_WINDOW_H
#define TSM_WINDOW_H

#include "mk.h"
#include "pd3.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const double *x; /* n samples, finite; host memory (CPU ctx) or device memory (CUDA),
                        written in the order of the ctx's stream (or synchronised) */
    uint32_t n;      /* window length, >= m */
    double r;        /* range; +INFINITY reports no discords, 0 every defined one */
} tsm_window;

typedef struct {
    size_t ndiscords; /* range discords found, written at discords + offset (below) */
    int has_motif;    /* 0 when no pair exists (or motifs were not asked for) */
    tsm_motif motif;  /* indices relative to the window's first sample */
} tsm_window_result;

/* Runs the passes of B windows. discords has room for sum over b of (n_b - m + 1)
 * entries; window b's discords go at offset sum_{c < b} (n_c - m + 1). res[B] receives
 * the counts and motifs (host memory). Fails with TSM_EINVAL for m < 3, a window
 * shorter than m or excl = 0, with a message naming the window. */
tsm_status tsm_window_passes(tsm_ctx *ctx, const tsm_window *w, size_t B, size_t m, size_t excl,
                             int want_motif, tsm_discord *discords, tsm_window_result *res);

#ifdef TSMINE_HAVE_CUDA
/* The CUDA backend, called by tsm_window_passes with validated arguments. */
tsm_status tsmi_window_passes_cuda(tsm_ctx *ctx, const tsm_window *w, size_t B, size_t m,
                                   size_t excl, int want_motif, tsm_discord *discords,
                                   tsm_window_result *res);
#endif

#ifdef __cplusplus
}
#endif
#endif
