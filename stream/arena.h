/* SPDX-License-Identifier: Apache-2.0 */
/* arena.h - where the tick's kernels find every stream's window: ONE allocation for
 * all streams (device memory for a CUDA ctx, host memory for a CPU ctx), plus the
 * per-round transfer buffers (DESIGN 5.1).
 *
 * Each stream owns a region of the arena (stream/online_round.c lays it out: its
 * mirrored ring, the mirrored statistics of the online left-NN, its QT row and its
 * tsm_online_state). Regions are handed out by a bump pointer; the arena grows by
 * reallocating (at least doubling) and copying what is in use, so offsets stay valid
 * and a growth costs one copy of the used bytes, amortised O(1) per byte (host memory
 * grows with realloc, which moves a large block by remapping it; under a room bound,
 * tss_arena_set_room, by at most half of the room, else just what is needed). A region
 * given back (a stream removed: idle, evicted, deleted) is handed out again to the
 * next stream that needs one of exactly its size (streams of one configuration all
 * have the same), so a table that turns over does not grow the arena; one given up by
 * a shape change (a reload) is not reused. The arena never shrinks. Growth by
 * reallocation rather than fixed slabs keeps every window addressable from one base
 * pointer, whatever the streams' sizes, and costs nothing in the steady state.
 *
 * A round moves data in one direction at a time, each in ONE copy: the staged samples
 * of all streams (with a descriptor per stream) go up in one transfer, one launch
 * scatters them into the mirrored rings, the kernels run, and the round's outputs
 * come back in one transfer. For a CUDA ctx the host side of both transfers is pinned
 * memory and every copy runs on the ctx's stream; for a CPU ctx host and "device" are
 * the same buffer and the copies vanish, so both backends share one code path.
 * Not thread-safe: the engine's thread calls it. */
#ifndef TSS_ARENA_H
#define TSS_ARENA_H

#include "tsm.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One stream's share of a round's upload: its values go to ring positions head,
 * head + 1, ... (mod cap), each also at + cap (the mirror). */
typedef struct {
    uint64_t ring;  /* byte offset of the stream's ring in the arena */
    uint64_t state; /* byte offset of its tsm_online_state */
    uint64_t src;   /* index of its first value among the round's values */
    uint32_t cap, head, n;
    uint32_t reset; /* 1: mark the state invalid first (restart, restore, failure) */
} tss_scatter;

typedef struct {
    tsm_ctx *ctx;        /* the backend's ctx (not owned) */
    int device;          /* the arena is device memory (CUDA ctx) */
    unsigned char *base; /* the arena */
    uint64_t size, used;
    unsigned char *dev_io;  /* device side of the transfers (= host_io on the CPU) */
    unsigned char *host_io; /* host side (pinned for CUDA) */
    uint64_t io_size;
    uint64_t *free_off, *free_bytes; /* regions given back */
    size_t nfree, free_cap;
    /* host bytes the arena may still take (NULL: no bound); see tss_engine_set_room */
    uint64_t (*room)(void *user);
    void *room_user;
} tss_arena;

/* An empty arena on ctx's backend; allocates nothing yet. */
void tss_arena_init(tss_arena *a, tsm_ctx *ctx);
void tss_arena_free(tss_arena *a);
/* Bounds the host memory a CPU arena takes: each new buffer must fit in what room(user)
 * returns at that moment, else the growth fails as out of memory (a CUDA arena's
 * device memory is not bounded by it). */
void tss_arena_set_room(tss_arena *a, uint64_t (*room)(void *user), void *user);

/* Region size rounding: every region and sub-array starts 256-byte aligned. */
static inline uint64_t tss_arena_align(uint64_t bytes) {
    return (bytes + 255) & ~(uint64_t)255;
}

/* Makes room for `bytes` more (aligned) bytes, zero-filled; TSM_OK or the failure on
 * ctx. */
tsm_status tss_arena_reserve(tss_arena *a, uint64_t bytes);
/* Hands out a region of `bytes` (room reserved before); returns its offset. */
uint64_t tss_arena_take(tss_arena *a, uint64_t bytes);
/* Gives the region [off, off + bytes) back for reuse (bytes: as taken, aligned); a
 * region the list has no memory for is simply not reused. */
void tss_arena_give(tss_arena *a, uint64_t off, uint64_t bytes);
/* A region given back of exactly `bytes` (aligned), zero-filled again, at *off: TSM_OK;
 * TSM_EINVAL when there is none (take a new one), or the zeroing's failure. */
tsm_status tss_arena_reuse(tss_arena *a, uint64_t bytes, uint64_t *off);
/* Pointer to arena byte `off` (a device pointer for a CUDA arena). */
static inline void *tss_arena_at(const tss_arena *a, uint64_t off) {
    return a->base + off;
}

/* Copies `bytes` of host memory to arena byte `off` now (synchronously): a restored
 * window. Rare; the round path never uses it. */
tsm_status tss_arena_put(tss_arena *a, uint64_t off, const void *host, uint64_t bytes);

/* Transfer buffers of at least `bytes`, host and device side; their contents are
 * undefined after a growth. */
tsm_status tss_arena_io(tss_arena *a, uint64_t bytes);
/* Device-side pointer to transfer byte `off`. */
static inline void *tss_arena_io_dev(const tss_arena *a, uint64_t off) {
    return a->dev_io + off;
}

/* Uploads transfer bytes [0, up) (host_io holds n tss_scatter at 0, then the round's
 * double values at vals_off) and scatters the values into the rings (mirrored),
 * resetting the states the descriptors ask for. Asynchronous on a CUDA ctx (ordered
 * before the kernels the round runs next on the ctx's stream). */
tsm_status tss_arena_scatter(tss_arena *a, uint64_t up, size_t n, uint64_t vals_off);

/* Downloads transfer bytes [off, off + bytes) into host_io at the same offsets and
 * waits for them. */
tsm_status tss_arena_fetch(tss_arena *a, uint64_t off, uint64_t bytes);

#ifdef TSMINE_HAVE_CUDA
/* The CUDA side (arena_cuda.cu): plain cudaMalloc / pinned cudaMallocHost memory,
 * copies and the scatter launch on ctx's stream. Failures are recorded on ctx;
 * sticky device errors come back as TSM_EDEVICE. */
tsm_status tssi_arena_cuda_alloc(tsm_ctx *ctx, void **p, uint64_t bytes, int pinned);
void tssi_arena_cuda_release(void *p, int pinned);
/* cudaMemcpyAsync (direction inferred) on ctx's stream, then a wait when sync. */
tsm_status tssi_arena_cuda_copy(tsm_ctx *ctx, void *dst, const void *src, uint64_t bytes, int sync);
/* cudaMemsetAsync(0) on ctx's stream, then a wait. */
tsm_status tssi_arena_cuda_zero(tsm_ctx *ctx, void *p, uint64_t bytes);
/* The scatter kernel: one block per descriptor. */
tsm_status tssi_arena_cuda_scatter(tsm_ctx *ctx, unsigned char *base, const tss_scatter *desc,
                                   size_t n, const double *vals);
#endif

#ifdef __cplusplus
}
#endif
#endif
