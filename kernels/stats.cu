/* SPDX-License-Identifier: Apache-2.0 */
/* stats.cu - the preprocessing phase on the GPU (seed 001 section 3.3): the mean and
 * centred norm of every subsequence, one thread per subsequence.
 *
 * Each thread computes its window's moments exactly with two passes over t[i..i+m-1]
 * (O(m) per thread; neighbouring threads read neighbouring addresses, so every step
 * is a coalesced load). The host has already centred the series and classified the
 * windows (an O(n) scan); the device keeps its copies for the other kernels and the
 * host gets the same values back. */
#include "cuda_util.cuh"
#include "stats.h"

#include <stdlib.h>

/* Thread i: mu, sig, inv of window i (and its downgrade to constant if its rounded
 * spread is zero). */
__global__ static void moments_kernel(const double *__restrict__ t, size_t N, size_t m,
                                      uint8_t *__restrict__ kind, double *__restrict__ mu,
                                      double *__restrict__ sig, double *__restrict__ inv) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    double sum = 0.0;
    for (size_t k = 0; k < m; k++)
        sum += t[i + k];
    double mean = sum / (double)m, m2 = 0.0;
    for (size_t k = 0; k < m; k++) {
        double d = t[i + k] - mean;
        m2 += d * d;
    }
    uint8_t kd = kind[i];
    mu[i] = mean;
    tsm_finish_moments(&kd, m2, m, &sig[i], &inv[i]);
    kind[i] = kd;
}

extern "C" void tsmi_stats_dev_free(tsm_stats_dev *dev) {
    if (!dev)
        return;
    cudaFree(dev->t);
    cudaFree(dev->mu);
    cudaFree(dev->inv);
    cudaFree(dev->sig);
    cudaFree(dev->kind);
    free(dev);
}

extern "C" tsm_status tsmi_stats_cuda(tsm_ctx *ctx, tsm_stats *s) {
    tsm_status st = TSM_OK;
    cudaStream_t stream = tsmi_stream(ctx);
    const size_t n = s->n, N = s->N;
    tsm_stats_dev *dev = (tsm_stats_dev *)calloc(1, sizeof *dev);
    if (!dev)
        return tsm_fail(ctx, TSM_ENOMEM, "out of host memory for the device statistics");
    s->dev = dev; /* freed with s, also on failure */
    TSM_CUDA_ALLOC(ctx, dev->t, n * sizeof(double));
    TSM_CUDA_ALLOC(ctx, dev->mu, N * sizeof(double));
    TSM_CUDA_ALLOC(ctx, dev->inv, N * sizeof(double));
    TSM_CUDA_ALLOC(ctx, dev->sig, N * sizeof(double));
    TSM_CUDA_ALLOC(ctx, dev->kind, N);
    TSM_CUDA_TRY(ctx,
                 cudaMemcpyAsync(dev->t, s->t, n * sizeof(double), cudaMemcpyHostToDevice, stream));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(dev->kind, s->kind, N, cudaMemcpyHostToDevice, stream));
    moments_kernel<<<tsmi_blocks(N, 256), 256, 0, stream>>>(dev->t, N, s->m, dev->kind, dev->mu,
                                                            dev->sig, dev->inv);
    TSM_CUDA_LAUNCHED(ctx);
    TSM_CUDA_TRY(
        ctx, cudaMemcpyAsync(s->mu, dev->mu, N * sizeof(double), cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(
        ctx, cudaMemcpyAsync(s->sig, dev->sig, N * sizeof(double), cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(
        ctx, cudaMemcpyAsync(s->inv, dev->inv, N * sizeof(double), cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(s->kind, dev->kind, N, cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
done:
    return st;
}
