/* SPDX-License-Identifier: Apache-2.0 */
/* passes.h - the windowed passes of a round (DESIGN 5.3): PD3 range discords past the
 * threshold (DISCORD), MK top motif (MOTIF), for every stream that is due (a warm
 * window and hop samples since its last pass). */
#ifndef TSS_PASSES_H
#define TSS_PASSES_H

#include "arena.h"
#include "tsm.h"

#include <stddef.h>

typedef struct tss_stream tss_stream;

/* The passes of the n due streams of list over their windows in the arena a, in three
 * steps so that the second can run on another thread while the engine goes on:
 *
 * tss_passes_start (the engine's thread): resets since_pass, describes every window
 * and copies every stream's score history as it is now (*out; NULL only when out of
 * memory). Returns TSM_OK or TSM_ENOMEM.
 *
 * tss_passes_execute (any ONE thread; ctx: a CUDA ctx of its own when that is not the
 * engine's thread): ONE tsm_window_passes call per group of streams with equal (m,
 * excl, motif on/off), never a call per stream; then, over the streams in parallel
 * (OpenMP, nworkers threads), the discords past the threshold (scored against the
 * copied history) and the motif change. It writes only the streams' pass_out,
 * pass_fail, pass counters, discord candidates and last motif: the engine may
 * meanwhile run the online phase of one more round of the same streams (their windows
 * in the arena are not overwritten: a round appends at most the ring's slack) as long
 * as it neither restarts their windows nor grows the arena. One group's failure does
 * not stop the others.
 *
 * tss_passes_end (the engine's thread, after execute): publishes each stream's
 * candidates that overlap nothing published (DISCORD alerts), fills the alerts'
 * timestamps from the host rings, hands each pass_fail over to fail, frees *p and
 * returns execute's worst status (TSM_EDEVICE first; message on its ctx). list/n: the
 * streams given to start. */
typedef struct tss_passes tss_passes;
tsm_status tss_passes_start(tsm_ctx *ctx, const tss_arena *a, tss_stream **list, size_t n,
                            tss_passes **out);
void tss_passes_execute(tss_passes *p, tsm_ctx *ctx, int nworkers);
tsm_status tss_passes_end(tss_passes **p, tss_stream **list, size_t n);

#endif
