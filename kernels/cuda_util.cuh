/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_util.cuh - what every .cu file in kernels/ shares: turning CUDA errors into tsm_status
 * (STYLE.md "Kernels": check after every call and launch, never exit), the ctx's
 * CUDA state and stream, and plain device allocations (cudaMalloc, never managed
 * memory; per-call scratch through tsmi_scratch, cuda_backend.h). */
#ifndef TSM_CUDA_UTIL_CUH
#define TSM_CUDA_UTIL_CUH

#include "cuda_backend.h"
#include "tsm.h"

#include <cuda_runtime.h>

/* Records err on ctx as "WHAT: cuda error NAME: TEXT (file:line)" and returns its
 * status: TSM_ENOMEM for allocation failures, TSM_EINVAL for invalid arguments and
 * launch configurations, TSM_EDEVICE for the sticky errors that poison the context
 * (illegal address, launch failure, device assert, ...): after those the process
 * must stop using the GPU (DESIGN 2). */
tsm_status tsmi_cuda_fail(tsm_ctx *ctx, cudaError_t err, const char *what, const char *file,
                          int line);

/* A grow-only buffer (cuda_backend.h, tsmi_scratch). */
typedef struct {
    void *p;
    size_t size;
} tsmi_buf;

/* The CUDA state of a ctx (tsmi_cuda_open): its non-blocking stream, on which every
 * kernel and copy of the ctx runs, and its scratch slots, device and pinned host; the
 * green context the stream belongs to after tsmi_cuda_set_sm_share (else NULL) and the
 * driver's function that destroys it. */
typedef struct {
    cudaStream_t stream;
    tsmi_buf dev[TSMI_SCRATCH_SLOTS], host[TSMI_SCRATCH_SLOTS];
    void *green, *green_destroy;
} tsmi_cuda_state;

static inline cudaStream_t tsmi_stream(const tsm_ctx *ctx) {
    return ((const tsmi_cuda_state *)tsmi_ctx_stream(ctx))->stream;
}

/* In a function with a `tsm_status st` and a `done:` cleanup label: runs CALL and, on
 * failure, records it and jumps to done. */
#define TSM_CUDA_TRY(ctx, call)                                                                    \
    do {                                                                                           \
        cudaError_t tsm_err_ = (call);                                                             \
        if (tsm_err_ != cudaSuccess) {                                                             \
            st = tsmi_cuda_fail((ctx), tsm_err_, #call, __FILE__, __LINE__);                       \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* After a <<<...>>> launch: the launch's own error (configuration, resources). */
#define TSM_CUDA_LAUNCHED(ctx) TSM_CUDA_TRY(ctx, cudaGetLastError())

/* Allocates bytes of device memory into *p (typed), recording failure on ctx. */
#define TSM_CUDA_ALLOC(ctx, p, bytes) TSM_CUDA_TRY(ctx, cudaMalloc((void **)&(p), (bytes)))

/* Grid size for n items at threads per block. */
static inline unsigned tsmi_blocks(size_t n, unsigned threads) {
    return (unsigned)((n + threads - 1) / threads);
}

#endif
