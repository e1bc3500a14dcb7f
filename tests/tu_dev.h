/* SPDX-License-Identifier: Apache-2.0 */
/* tu_dev.h - device copies of test arrays, for the kernels whose CUDA backend takes
 * device pointers (online.h, window.h): a test builds its inputs on the host and, on
 * a CUDA ctx, moves them to the device around the call. Without a CUDA build the
 * functions are never reached (tu_on_device is 0) and fail the test if they are. */
#ifndef TSM_TU_DEV_H
#define TSM_TU_DEV_H

#include "testutil.h"

#ifdef TSMINE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* Whether the ctx's kernels take device pointers. */
static inline int tu_on_device(const tsm_ctx *ctx) {
    return tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA;
}

/* A device copy of h[0 .. bytes-1] (cudaMalloc; free with tu_dev_free). */
static inline void *tu_dev_dup(const void *h, size_t bytes) {
#ifdef TSMINE_HAVE_CUDA
    void *d = NULL;
    assert_int_equal(cudaMalloc(&d, bytes ? bytes : 1), cudaSuccess);
    assert_int_equal(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    /* A copy from pageable memory may return before its DMA lands, and the ctx's stream
     * is non-blocking (not ordered after this legacy-stream copy): without the wait a
     * kernel may read the array before it arrives (window_cuda failed that way). */
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    return d;
#else
    (void)h, (void)bytes;
    fail_msg("tu_dev_dup without a CUDA build");
    return NULL;
#endif
}

/* Copies d[0 .. bytes-1] back into h. */
static inline void tu_dev_get(void *h, const void *d, size_t bytes) {
#ifdef TSMINE_HAVE_CUDA
    assert_int_equal(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
#else
    (void)h, (void)d, (void)bytes;
    fail_msg("tu_dev_get without a CUDA build");
#endif
}

static inline void tu_dev_free(void *d) {
#ifdef TSMINE_HAVE_CUDA
    cudaFree(d);
#else
    (void)d;
#endif
}

#endif
