/* SPDX-License-Identifier: Apache-2.0 */
/* ring.h - one stream's mirrored sample ring (DESIGN 5.1).
 *
 * The ring has room for cap = window + slack samples. Each sample is written at its
 * position p and at p + cap, so any run of up to cap consecutive samples, in
 * particular the window (the last `window` of them), is one contiguous array. The
 * slack lets a tick append up to `slack` samples before the online update has read
 * the window they push out (stream/online.c). Timestamps live in a plain ring of cap
 * entries (they are only looked up, never scanned). Host memory; a device backend
 * keeps the same layout in one allocation for all streams. */
#ifndef TSS_RING_H
#define TSS_RING_H

#include <stdint.h>

typedef struct {
    uint32_t window, cap; /* W and cap = W + slack */
    uint32_t head;        /* position of the next write */
    uint32_t fill;        /* samples in the window, <= W */
    uint32_t held;        /* samples whose timestamps the ring holds, <= cap: the window
                           * and those that left it since it was last emptied */
    double *v;            /* 2 cap values, mirrored */
    int64_t *ts;          /* cap timestamps */
} tss_ring;

/* An empty ring of that shape, holding no memory yet (v and ts NULL): a stream's first
 * samples may be a long way off (an automatic m's warm-up), or never come. */
void tss_ring_init(tss_ring *r, uint32_t window, uint32_t slack);
/* Allocates the ring's arrays if it has none; 0, or -1 when out of memory. Needed
 * before the first push or append. */
int tss_ring_alloc(tss_ring *r);
void tss_ring_free(tss_ring *r);
/* Empties the window (a restart); O(1). */
void tss_ring_clear(tss_ring *r);
/* Appends one sample; O(1). */
void tss_ring_push(tss_ring *r, double v, int64_t ts);
/* Appends n <= cap samples: what n tss_ring_push calls do, in at most two block copies
 * per array. O(n). */
void tss_ring_append(tss_ring *r, const double *v, const int64_t *ts, uint32_t n);
/* Position of the window's oldest sample; the window is r->v[start .. start + fill). */
uint32_t tss_ring_start(const tss_ring *r);
/* Timestamp of the sample `back` places before the next write (1 = the newest), for
 * 1 <= back <= held. */
int64_t tss_ring_ts_back(const tss_ring *r, uint64_t back);
/* Bytes held (0 before tss_ring_alloc). */
uint64_t tss_ring_bytes(const tss_ring *r);

#endif
