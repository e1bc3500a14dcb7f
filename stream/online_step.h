/* online_step.h - per-stream storage of the online left-NN and the per-tick step
 * that feeds staged samples through it (DESIGN 5.1 "online, every sample").
 *
 * The numeric core is kernels/online.h (tsm_online_update), batched over every stream
 * with samples this round. This file owns the arrays it works in (statistics mirrored
 * like the ring, the QT row, the outputs of a round) and turns its outputs into
 * LEFT_DISCORD alerts. */
#ifndef TSS_ONLINE_STEP_H
#define TSS_ONLINE_STEP_H

#include "online.h" /* kernels/: tsm_online_update */
#include "ring.h"

#include <stdint.h>

typedef struct tss_stream tss_stream;

typedef struct {
    double *mu, *inv; /* 2 cap each, mirrored like the ring */
    uint8_t *kind;    /* 2 cap */
    double *qt;       /* window - m + 1 */
    double *nn;       /* slack: outputs of one round */
    int64_t *nn_index;
    tsm_online_state st;
} tss_online;

/* Arrays for a ring and subsequence length m; 0 or -1 (out of memory, o empty). */
int tss_online_init(tss_online *o, const tss_ring *ring, uint32_t m);
void tss_online_free(tss_online *o);
/* Bytes held. */
uint64_t tss_online_bytes(const tss_online *o, const tss_ring *ring);

/* One round for the n streams of list, each with s->chunk > 0 staged samples (no gap
 * among them): appends them to the rings, runs the batched kernel on ctx, queues
 * LEFT_DISCORD alerts (calibrated streams with left_discord on, lnn >= r) and
 * advances proc_seq and since_pass. On a kernel failure the samples still enter the
 * windows, no LEFT_DISCORD is scored this round, the online states rebuild on the next
 * one, and the status is returned with the message in ctx. */
tsm_status tss_online_round(tsm_ctx *ctx, tss_stream **list, size_t n);

#endif
