/* SPDX-License-Identifier: Apache-2.0 */
/* sets_tile.cuh - what the tiled kernels of both CUDA set methods share (sets_merge.cu's
 * tile_kernel, sets_range.cu's search_kernel): a block of SET_NT threads per tile whose
 * results are placed by a block scan and a decoupled look-back over the tiles before, and
 * written out in 16-byte vectors (put_tile); the counting and writing passes
 * (tile_passes) and their scratch from the ctx (tile_scratch). Static, as
 * sets_search.cuh. */
#ifndef TSM_SETS_TILE_CUH
#define TSM_SETS_TILE_CUH

#include "scan.cuh"
#include "sets.h"

#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/block/block_scan.cuh>

/* Threads per tile (sets_merge.cu says how it was chosen, with the keys per thread).
 * Overridable at compile time for tuning runs. */
#ifndef SET_NT
#define SET_NT 256
#endif

typedef unsigned long long set_count; /* counts and offsets on the device */
typedef cub::ScanTileState<set_count> set_tile_state;

/* What a tiled kernel does with a tile's results. */
enum set_pass {
    SET_COUNT, /* atomicAdd the tile's count to *d_count (zeroed before) */
    SET_WRITE, /* look-back for the tile's offset, write the results; the last tile
                  writes min(total, bound) to *d_count */
};

/* Shared memory of put_tile. */
struct set_put_smem {
    typedef cub::BlockScan<unsigned, SET_NT> block_scan;
    typedef cub::TilePrefixCallbackOp<set_count, tsmi_sum, set_tile_state> look_back;
    typename block_scan::TempStorage scan;
    typename look_back::TempStorage prefix;
    set_count base;
};

/* ---- 16-byte vectors between global and shared memory ---------------------------------- */

/* Keys per 16-byte vector. */
template <typename K> struct set_vec {
    enum { W = 16 / sizeof(K) };
};

/* Misalignment of x in keys: x - off is 16-byte aligned (K* is aligned to sizeof(K)). */
template <typename K> static __device__ unsigned misalign(const K *x) {
    return (unsigned)(((uintptr_t)x & 15) / sizeof(K));
}

/* Writes keys [lo, hi) of a staged run src (16-byte aligned shared memory) to out, whose
 * element 0 has the alignment of src's (out - shift is 16-byte aligned, shift < W):
 * vector u of src with one 16-byte store when all its keys are in [lo, hi), else key
 * by key. */
template <typename K>
static __device__ void write_vec(K *out, unsigned u, unsigned lo, unsigned hi, const K *src) {
    enum { W = set_vec<K>::W };
    const unsigned e0 = u * W;
    if (e0 >= lo && e0 + W <= hi) {
        reinterpret_cast<uint4 *>(out)[u] = reinterpret_cast<const uint4 *>(src)[u];
        return;
    }
#pragma unroll
    for (int q = 0; q < W; q++)
        if (e0 + q >= lo && e0 + q < hi)
            out[e0 + q] = src[e0 + q];
}

/* The end of every tiled kernel (block t of the grid): each thread holds ITEMS results
 * in res, those with their bit set in mask are emitted, in the order of the threads
 * then of the items. A block scan of the threads' counts gives each result its place in
 * the tile. SET_COUNT adds the tile's count to *d_count. SET_WRITE: the tile's offset
 * comes from the tiles before (CUB's decoupled look-back by the first warp: it waits
 * only for the aggregates of its predecessors); the results are staged in stage (16-byte
 * aligned shared memory that no thread reads any more, room for NT * ITEMS + W keys) at
 * the alignment they have in out, so that the block writes them out in 16-byte vectors
 * (the partial ones at the ends key by key), positions >= cap never; the last tile
 * writes min(total, bound) to *d_count. (A block scan seeded by the look-back, one
 * barrier fewer, measured slower on the H100.) */
template <typename K, int ITEMS, set_pass PASS>
static __device__ void put_tile(const K (&res)[ITEMS], unsigned mask, uint4 *stage,
                                set_put_smem &sm, set_tile_state tiles, set_count *d_count,
                                set_count bound, K *__restrict__ out, size_t cap) {
    enum { W = set_vec<K>::W };
    const unsigned tid = threadIdx.x;
    const int t = blockIdx.x;
    unsigned at, total;
    set_put_smem::block_scan(sm.scan).ExclusiveSum((unsigned)__popc(mask), at, total);
    if (PASS == SET_COUNT) {
        if (tid == 0)
            atomicAdd(d_count, (set_count)total);
        return;
    }
    if (t == 0) {
        if (tid == 0) {
            tiles.SetInclusive(0, total);
            sm.base = 0;
        }
    } else if (tid < 32) {
        set_put_smem::look_back prefix(tiles, sm.prefix, tsmi_sum(), t);
        set_count before = prefix((set_count)total);
        if (tid == 0)
            sm.base = before;
    }
    __syncthreads(); /* also: every thread has finished reading what stage held */
    const set_count base = sm.base;
    if (tid == 0 && t == (int)gridDim.x - 1)
        *d_count = base + total < bound ? base + total : bound;
    /* Staged at the alignment of out + base: stage key k goes to out[base - shift + k]. */
    const unsigned shift = (unsigned)((base + misalign(out)) % W);
    K *keys = reinterpret_cast<K *>(stage);
    K *put = keys + shift + at;
#pragma unroll
    for (int q = 0; q < ITEMS; q++)
        if (mask >> q & 1)
            *put++ = res[q];
    __syncthreads();
    if (base >= cap)
        return;
    const unsigned room = cap - base < total ? (unsigned)(cap - base) : total;
    const unsigned nv = (shift + room + W - 1) / W;
    K *const dst = out + base - shift; /* 16-byte aligned; written from dst[shift] on */
    for (unsigned u = tid; u < nv; u += SET_NT)
        write_vec(dst, u, shift, shift + room, keys);
}

/* *d_total = min(*d_total, bound). A no-op for sorted input; for unsorted input the
 * tiles' cuts need not be monotone, tiles may overlap and their counts add up to more
 * than the operation can produce: the result is unspecified, but its size stays within
 * tsm_set_bound, as on the CPU. */
static __global__ void clamp_total_kernel(set_count *d_total, set_count bound) {
    if (*d_total > bound)
        *d_total = bound;
}

/* Scratch of a tiled method from the ctx's grow-only SETS slot (no allocation in the
 * steady state): `extra` bytes at *extra_p (256-aligned), then the look-back states of
 * `tiles` tiles in *state (reset by the method's first kernel). */
static tsm_status tile_scratch(tsm_ctx *ctx, size_t tiles, size_t extra, void **extra_p,
                               set_tile_state *state) {
    tsm_status st = TSM_OK;
    size_t state_bytes = 0;
    char *p = NULL;
    extra = (extra + 255) & ~(size_t)255;
    TSM_CUDA_TRY(ctx, set_tile_state::AllocationSize((int)tiles, state_bytes));
    st = tsmi_scratch(ctx, TSMI_SCRATCH_SETS, extra + state_bytes, (void **)&p);
    if (st != TSM_OK)
        return st;
    TSM_CUDA_TRY(ctx, state->Init((int)tiles, p + extra, state_bytes));
    *extra_p = p;
done:
    return st;
}

/* The passes of a tiled method after its first kernel: when the result surely fits
 * (d_out and cap >= bound) one writing pass; otherwise a counting pass, then (d_out)
 * a writing pass gated by the count. launch(pass, gate) launches the method's kernel.
 * Does not wait for them (sets.h: no host round trip on device arrays; a fault shows
 * at the caller's next synchronisation, set_host's read of the count). */
template <typename Launch>
static tsm_status tile_passes(tsm_ctx *ctx, void *d_out, size_t cap, set_count bound,
                              set_count *count, Launch launch) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    const int one_pass = d_out && cap >= bound;
    if (!one_pass) {
        TSM_CUDA_TRY(ctx, cudaMemsetAsync(count, 0, sizeof *count, s));
        launch(SET_COUNT, (const set_count *)NULL);
        TSM_CUDA_LAUNCHED(ctx);
        clamp_total_kernel<<<1, 1, 0, s>>>(count, bound);
        TSM_CUDA_LAUNCHED(ctx);
    }
    if (d_out) {
        launch(SET_WRITE, one_pass ? (const set_count *)NULL : count);
        TSM_CUDA_LAUNCHED(ctx);
    }
done:
    return st;
}

#endif
