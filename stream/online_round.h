/* SPDX-License-Identifier: Apache-2.0 */
/* online_round.h - per-stream storage of the online left-NN and the per-round step
 * that feeds staged samples through it (DESIGN 5.1 "online, every sample").
 *
 * The numeric core is kernels/online.h (tsm_online_update), ONE call per round for
 * every stream with samples. Its arrays (the mirrored ring, the statistics mirrored
 * like it, the QT row, the tsm_online_state) live in the stream's region of the
 * engine's arena (stream/arena.h): device memory on the GPU, host memory on the CPU.
 * The stream keeps its host ring too (stream.h): checkpoints, timestamps and the
 * control socket read that one. This file lays the regions out, moves a round's
 * samples into both rings and hands the kernel's outputs, the raw scores, to the
 * stream's detection (detect.h: calibrated score, ANOMALY events, LEFT_DISCORD). */
#ifndef TSS_ONLINE_ROUND_H
#define TSS_ONLINE_ROUND_H

#include "arena.h"
#include "engine.h" /* tss_scored */
#include "online.h" /* kernels/: tsm_online_update */
#include "ring.h"

#include <stdint.h>

typedef struct tss_stream tss_stream;

typedef struct {
    tsm_online_state st; /* host side: only st.valid is kept; 0 makes the next round
                          * rebuild the state in the arena (restart, restore, failure) */
    uint32_t window, m, cap;
    int placed;   /* the stream has its region in the arena, at off */
    int stale;    /* the arena's ring differs from the host ring: upload it first */
    uint64_t off; /* byte offset of the region */
} tss_online;

/* Describes the region for a ring and subsequence length m (placed in the arena on
 * the stream's first round). Cannot fail. */
void tss_online_init(tss_online *o, const tss_ring *ring, uint32_t m);
/* A new subsequence length for the same ring (an automatic m chosen again): the region
 * keeps its place, the next round rebuilds the statistics and QT row from the window. */
void tss_online_set_m(tss_online *o, uint32_t m);
/* Bytes of the region in the arena (the same for every m). */
uint64_t tss_online_bytes(const tss_online *o);
/* The window in the arena (device memory for a CUDA arena): ring->fill samples. Only
 * for a placed, not stale stream. */
const double *tss_online_window(const tss_online *o, const tss_arena *a, const tss_ring *ring);

/* Gives every stream of list without a region one (one growth of the arena at most)
 * and uploads the host ring of every stale one (a restored window, or a failed
 * round), so that its window can be read there. O(streams) plus the uploads. When the
 * arena cannot grow (TSM_ENOMEM, returned), what it has left goes to the first streams
 * in list and the others stay without a region. */
tsm_status tss_online_place(tss_arena *a, tss_stream **list, size_t n);

/* One round for the n streams of list, each with s->chunk > 0 staged samples (no gap
 * among them): places streams new to the arena, appends the samples to the host rings
 * and (one upload, one scatter launch) to the arena's, runs the batched kernel on ctx
 * (the arena's ctx), copies its outputs back in one transfer, scores every completed
 * subsequence (detect.h: calibrated score, events; on_score, when not NULL, gets every
 * one with its score) and advances proc_seq and
 * since_pass. On a failure the samples still enter the host windows, nothing is
 * scored this round, the arena's rings are re-uploaded and the online states
 * rebuilt on the next round, and the status is returned with the message in ctx.
 * Streams the arena has no room for (memory) fail that way alone: the round goes on for
 * the others. */
typedef void (*tss_score_fn)(void *user, const char *stream_id, const tss_scored *sc);
tsm_status tss_online_round(tsm_ctx *ctx, tss_arena *a, tss_stream **list, size_t n,
                            tss_score_fn on_score, void *user);

#endif
