/* SPDX-License-Identifier: Apache-2.0 */
/* arena_cuda.cu - the CUDA side of the stream arena (arena.h): plain device
 * allocations (cudaMalloc, never managed memory), pinned host transfer buffers,
 * copies on the ctx's stream, and the scatter of a round's samples into the rings.
 *
 * Scatter mapping: one block per stream of the round, its threads stride over the
 * stream's new values; value k goes to ring position (head + k) mod cap and to its
 * mirror + cap, so any window stays one contiguous array. Thread 0 also clears the
 * state's valid flag when the host asks for a rebuild. Cost O(samples) global stores;
 * the rounds' kernels that follow on the same stream see the values. */
#include "arena.h"
#include "cuda_util.cuh"
#include "online.h"

#include <limits.h>

#define SC_T 128 /* threads per scatter block */

__global__ static void __launch_bounds__(SC_T)
    scatter_kernel(unsigned char *base, const tss_scatter *desc, const double *vals) {
    const tss_scatter d = desc[blockIdx.x];
    double *ring = (double *)(base + d.ring);
    if (threadIdx.x == 0 && d.reset)
        ((tsm_online_state *)(base + d.state))->valid = 0;
    for (uint32_t k = threadIdx.x; k < d.n; k += SC_T) {
        uint32_t p = d.head + k;
        p = p >= d.cap ? p - d.cap : p; /* n <= cap - head + cap: one wrap at most */
        const double v = vals[d.src + k];
        ring[p] = v;
        ring[p + d.cap] = v;
    }
}

extern "C" tsm_status tssi_arena_cuda_alloc(tsm_ctx *ctx, void **p, uint64_t bytes, int pinned) {
    tsm_status st = TSM_OK;
    *p = NULL;
    if (pinned)
        TSM_CUDA_TRY(ctx, cudaMallocHost(p, bytes));
    else
        TSM_CUDA_TRY(ctx, cudaMalloc(p, bytes));
done:
    return st;
}

extern "C" void tssi_arena_cuda_release(void *p, int pinned) {
    if (pinned)
        cudaFreeHost(p);
    else
        cudaFree(p);
}

extern "C" tsm_status tssi_arena_cuda_copy(tsm_ctx *ctx, void *dst, const void *src, uint64_t bytes,
                                           int sync) {
    tsm_status st = TSM_OK;
    cudaStream_t stream = tsmi_stream(ctx);
    if (bytes)
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
    if (sync)
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
done:
    return st;
}

extern "C" tsm_status tssi_arena_cuda_zero(tsm_ctx *ctx, void *p, uint64_t bytes) {
    tsm_status st = TSM_OK;
    cudaStream_t stream = tsmi_stream(ctx);
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(p, 0, bytes, stream));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
done:
    return st;
}

extern "C" tsm_status tssi_arena_cuda_scatter(tsm_ctx *ctx, unsigned char *base,
                                              const tss_scatter *desc, size_t n,
                                              const double *vals) {
    tsm_status st = TSM_OK;
    if (n > INT_MAX)
        return tsm_fail(ctx, TSM_EINVAL, "stream arena: %zu streams in one round", n);
    scatter_kernel<<<(unsigned)n, SC_T, 0, tsmi_stream(ctx)>>>(base, desc, vals);
    TSM_CUDA_LAUNCHED(ctx);
done:
    return st;
}
