/* SPDX-License-Identifier: Apache-2.0 */
/* arena.c - the streams' shared window storage and the round's transfers (arena.h):
 * host memory for a CPU ctx, the CUDA side in arena_cuda.cu for a CUDA ctx. */
#include "arena.h"

#include "online.h" /* tsm_online_state */

#include <stdlib.h>
#include <string.h>

void tss_arena_init(tss_arena *a, tsm_ctx *ctx) {
    *a = (tss_arena){.ctx = ctx, .device = tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA};
}

void tss_arena_set_room(tss_arena *a, uint64_t (*room)(void *user), void *user) {
    a->room = room;
    a->room_user = user;
}

/* Whether `bytes` more host memory fit in the room (tss_arena_set_room). */
static int fits(tss_arena *a, uint64_t bytes) {
    return !a->room || a->room(a->room_user) >= bytes;
}

static tsm_status no_room(tss_arena *a, uint64_t bytes) {
    return tsm_fail(a->ctx, TSM_ENOMEM,
                    "stream arena: %llu bytes more would leave too little address space for "
                    "the rest of the process (ulimit -v, LimitAS=)",
                    (unsigned long long)bytes);
}

/* A new buffer of bytes: device (or pinned host when pinned) memory for a CUDA
 * arena, plain host memory otherwise. */
static tsm_status alloc_buf(tss_arena *a, void **p, uint64_t bytes, int pinned) {
#ifdef TSMINE_HAVE_CUDA
    if (a->device)
        return tssi_arena_cuda_alloc(a->ctx, p, bytes, pinned);
#endif
    (void)pinned;
    if (!fits(a, bytes))
        return no_room(a, bytes);
    *p = malloc(bytes);
    if (!*p)
        return tsm_fail(a->ctx, TSM_ENOMEM, "stream arena: out of memory for %llu bytes",
                        (unsigned long long)bytes);
    return TSM_OK;
}

static void release_buf(tss_arena *a, void *p, int pinned) {
#ifdef TSMINE_HAVE_CUDA
    if (a->device) {
        tssi_arena_cuda_release(p, pinned);
        return;
    }
#endif
    (void)a, (void)pinned;
    free(p);
}

/* Zeroes `bytes` of arena memory at p and waits: every region starts defined, so no
 * kernel or checkpoint copy ever reads bytes nothing wrote (compute-sanitizer's
 * initcheck holds the daemon's kernels to that), whatever the backend. */
static tsm_status zero(tss_arena *a, void *p, uint64_t bytes) {
#ifdef TSMINE_HAVE_CUDA
    if (a->device)
        return tssi_arena_cuda_zero(a->ctx, p, bytes);
#endif
    (void)a;
    memset(p, 0, bytes);
    return TSM_OK;
}

/* Copies bytes between host and arena memory (either direction); waits when sync. */
static tsm_status copy(tss_arena *a, void *dst, const void *src, uint64_t bytes, int sync) {
#ifdef TSMINE_HAVE_CUDA
    if (a->device)
        return tssi_arena_cuda_copy(a->ctx, dst, src, bytes, sync);
#endif
    (void)a, (void)sync;
    if (dst != src && bytes)
        memmove(dst, src, bytes);
    return TSM_OK;
}

void tss_arena_free(tss_arena *a) {
    if (a->base)
        release_buf(a, a->base, 0);
    if (a->host_io)
        release_buf(a, a->host_io, 1);
    if (a->device && a->dev_io)
        release_buf(a, a->dev_io, 0);
    free(a->free_off);
    free(a->free_bytes);
    *a =
        (tss_arena){.ctx = a->ctx, .device = a->device, .room = a->room, .room_user = a->room_user};
}

void tss_arena_give(tss_arena *a, uint64_t off, uint64_t bytes) {
    if (a->nfree == a->free_cap) {
        size_t cap = a->free_cap ? 2 * a->free_cap : 64;
        uint64_t *o = realloc(a->free_off, cap * sizeof *o);
        if (o)
            a->free_off = o;
        uint64_t *b = o ? realloc(a->free_bytes, cap * sizeof *b) : NULL;
        if (!b)
            return; /* not reused; the arena stays consistent */
        a->free_bytes = b;
        a->free_cap = cap;
    }
    a->free_off[a->nfree] = off;
    a->free_bytes[a->nfree] = bytes;
    a->nfree++;
}

tsm_status tss_arena_reuse(tss_arena *a, uint64_t bytes, uint64_t *off) {
    for (size_t k = a->nfree; k-- > 0;)
        if (a->free_bytes[k] == bytes) {
            tsm_status st = zero(a, a->base + a->free_off[k], bytes);
            if (st != TSM_OK)
                return st;
            *off = a->free_off[k];
            a->nfree--;
            a->free_off[k] = a->free_off[a->nfree];
            a->free_bytes[k] = a->free_bytes[a->nfree];
            return TSM_OK;
        }
    return TSM_EINVAL;
}

/* Grows a host arena to size in place where it can: glibc's realloc moves a large
 * block with mremap, so only the growth takes new address space (allocate, copy, free
 * needed the old and the new buffer at once). Bounded by the room callback. */
static tsm_status grow_host(tss_arena *a, uint64_t size) {
    if (!fits(a, size - a->size))
        return no_room(a, size - a->size);
    unsigned char *p = realloc(a->base, size);
    if (!p)
        return tsm_fail(a->ctx, TSM_ENOMEM, "stream arena: out of memory for %llu bytes",
                        (unsigned long long)size);
    a->base = p;
    a->size = size;
    return TSM_OK;
}

/* The size a host arena grows to for `bytes` more, doubling to `size`: near a memory
 * bound at most half of what is left, or just what is needed (in MiB), since doubling
 * would take the room others need. */
static uint64_t host_size(const tss_arena *a, uint64_t size, uint64_t bytes) {
    const uint64_t mib = (uint64_t)1 << 20, exact = (a->used + bytes + mib - 1) / mib * mib;
    const uint64_t half = a->room ? a->room(a->room_user) / 2 : UINT64_MAX;
    if (size - a->size <= half)
        return size;
    const uint64_t most = (a->size + half) / mib * mib;
    return most > exact ? most : exact;
}

tsm_status tss_arena_reserve(tss_arena *a, uint64_t bytes) {
    bytes = tss_arena_align(bytes);
    if (bytes == 0) /* the common round: every stream already placed */
        return TSM_OK;
    if (a->size - a->used < bytes) {
        uint64_t size = a->size ? 2 * a->size : (uint64_t)1 << 24;
        while (size - a->used < bytes)
            size *= 2;
        tsm_status st;
        if (!a->device) {
            if ((st = grow_host(a, host_size(a, size, bytes))) != TSM_OK)
                return st;
        } else {
            void *p = NULL;
            st = alloc_buf(a, &p, size, 0);
            if (st == TSM_OK && a->used)
                st = copy(a, p, a->base, a->used, 1);
            if (st != TSM_OK) {
                if (p)
                    release_buf(a, p, 0);
                return st;
            }
            if (a->base)
                release_buf(a, a->base, 0);
            a->base = p;
            a->size = size;
        }
    }
    /* only the bytes about to be handed out: zeroing the whole new buffer cost an
     * engine's first stream 16 MiB of memset (a quarter of the fuzzer's speed) */
    return zero(a, a->base + a->used, bytes);
}

uint64_t tss_arena_take(tss_arena *a, uint64_t bytes) {
    uint64_t off = a->used;
    a->used += tss_arena_align(bytes);
    return off;
}

tsm_status tss_arena_put(tss_arena *a, uint64_t off, const void *host, uint64_t bytes) {
    return copy(a, a->base + off, host, bytes, 1);
}

tsm_status tss_arena_io(tss_arena *a, uint64_t bytes) {
    if (bytes <= a->io_size)
        return TSM_OK;
    uint64_t size = a->io_size ? a->io_size : (uint64_t)1 << 20;
    while (size < bytes)
        size *= 2;
    void *h = NULL, *d = NULL;
    tsm_status st = alloc_buf(a, &h, size, 1);
    if (st == TSM_OK && a->device)
        st = alloc_buf(a, &d, size, 0);
    /* zeroed: a round's transfers span the alignment gaps between its arrays */
    if (st == TSM_OK)
        memset(h, 0, size);
    if (st == TSM_OK && a->device)
        st = zero(a, d, size);
    if (st != TSM_OK) {
        if (h)
            release_buf(a, h, 1);
        if (d)
            release_buf(a, d, 0);
        return st;
    }
    if (a->host_io)
        release_buf(a, a->host_io, 1);
    if (a->device && a->dev_io)
        release_buf(a, a->dev_io, 0);
    a->host_io = h;
    a->dev_io = a->device ? d : h;
    a->io_size = size;
    return TSM_OK;
}

/* The host scatter: what the CUDA kernel does, one descriptor after the other. */
static void scatter_host(unsigned char *base, const tss_scatter *desc, size_t n,
                         const double *vals) {
    for (size_t q = 0; q < n; q++) {
        const tss_scatter *d = &desc[q];
        double *ring = (double *)(base + d->ring);
        if (d->reset)
            ((tsm_online_state *)(base + d->state))->valid = 0;
        for (uint32_t k = 0, p = d->head; k < d->n; k++) {
            ring[p] = ring[p + d->cap] = vals[d->src + k];
            p = p + 1 == d->cap ? 0 : p + 1;
        }
    }
}

tsm_status tss_arena_scatter(tss_arena *a, uint64_t up, size_t n, uint64_t vals_off) {
    if (n == 0)
        return TSM_OK;
    tsm_status st = copy(a, a->dev_io, a->host_io, up, 0);
    if (st != TSM_OK)
        return st;
#ifdef TSMINE_HAVE_CUDA
    if (a->device)
        return tssi_arena_cuda_scatter(a->ctx, a->base, (const tss_scatter *)a->dev_io, n,
                                       (const double *)(a->dev_io + vals_off));
#endif
    scatter_host(a->base, (const tss_scatter *)a->host_io, n,
                 (const double *)(a->host_io + vals_off));
    return TSM_OK;
}

tsm_status tss_arena_fetch(tss_arena *a, uint64_t off, uint64_t bytes) {
    return copy(a, a->host_io + off, a->dev_io + off, bytes, 1);
}
