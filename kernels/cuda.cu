/* SPDX-License-Identifier: Apache-2.0 */
/* cuda.cu - device probing, the ctx's CUDA state (stream, scratch) and the mapping of
 * CUDA errors to tsm_status (see cuda_backend.h and cuda_util.cuh). */
#include "cuda_util.cuh"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" int tsmi_cuda_probe(const char **why) {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        if (why)
            *why = err == cudaErrorNoDevice ? "no CUDA device is present"
                   : err == cudaErrorInsufficientDriver
                       ? "no NVIDIA driver (or one older than this build's CUDA runtime)"
                       : "the CUDA runtime could not enumerate devices";
        cudaGetLastError(); /* clear the (non-sticky) error */
        return 0;
    }
    if (count == 0) {
        if (why)
            *why = "no CUDA device is present";
        return 0;
    }
    return 1;
}

extern "C" tsm_status tsmi_cuda_select(int ordinal, int *device) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError();
        return TSM_EBACKEND;
    }
    const int d = (ordinal < 0 ? -ordinal : ordinal) % count;
    if (cudaSetDevice(d) != cudaSuccess) {
        cudaGetLastError();
        return TSM_EBACKEND;
    }
    *device = d;
    return TSM_OK;
}

extern "C" tsm_status tsmi_cuda_open(tsm_ctx *ctx, int *device, void **state) {
    tsm_status st = TSM_OK;
    tsmi_cuda_state *cs = (tsmi_cuda_state *)calloc(1, sizeof *cs);
    *state = NULL;
    if (!cs)
        return tsm_fail(ctx, TSM_ENOMEM, "out of memory for the CUDA state");
    TSM_CUDA_TRY(ctx, cudaGetDevice(device));
    TSM_CUDA_TRY(ctx, cudaStreamCreateWithFlags(&cs->stream, cudaStreamNonBlocking));
    *state = cs;
    cs = NULL;
done:
    free(cs);
    return st;
}

extern "C" tsm_status tsmi_cuda_set_urgent(tsm_ctx *ctx, void *state) {
    tsm_status st = TSM_OK;
    tsmi_cuda_state *cs = (tsmi_cuda_state *)state;
    cudaStream_t urgent = NULL;
    int least, greatest; /* numerically: greatest priority < least */
    TSM_CUDA_TRY(ctx, cudaDeviceGetStreamPriorityRange(&least, &greatest));
    TSM_CUDA_TRY(ctx, cudaStreamCreateWithPriority(&urgent, cudaStreamNonBlocking, greatest));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(cs->stream));
    TSM_CUDA_TRY(ctx, cudaStreamDestroy(cs->stream));
    cs->stream = urgent;
    urgent = NULL;
done:
    if (urgent)
        cudaStreamDestroy(urgent);
    return st;
}

extern "C" void tsmi_cuda_close(void *state) {
    tsmi_cuda_state *cs = (tsmi_cuda_state *)state;
    if (!cs)
        return;
    if (cs->stream)
        cudaStreamSynchronize(cs->stream); /* nothing queued may use the scratch */
    for (int k = 0; k < TSMI_SCRATCH_SLOTS; k++) {
        cudaFree(cs->dev[k].p);
        cudaFreeHost(cs->host[k].p);
    }
    if (cs->stream)
        cudaStreamDestroy(cs->stream);
    tsmi_cuda_green_release(cs);
    free(cs);
}

/* The grow-only buffer b of at least bytes (cuda_backend.h, tsmi_scratch); pinned: host. */
static tsm_status grow(tsm_ctx *ctx, tsmi_buf *b, size_t bytes, int pinned, void **p) {
    tsm_status st = TSM_OK;
    const size_t mib = (size_t)1 << 20;
    size_t size = b->size + b->size / 2;
    *p = NULL;
    if (bytes <= b->size && b->p) {
        *p = b->p;
        return TSM_OK;
    }
    size = bytes > size ? bytes : size;
    size = size > SIZE_MAX - mib ? size : (size + mib - 1) / mib * mib;
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(tsmi_stream(ctx)));
    if (pinned)
        cudaFreeHost(b->p);
    else
        cudaFree(b->p);
    b->p = NULL, b->size = 0;
    if (pinned)
        TSM_CUDA_TRY(ctx, cudaMallocHost(&b->p, size));
    else
        TSM_CUDA_TRY(ctx, cudaMalloc(&b->p, size));
    b->size = size;
    *p = b->p;
done:
    return st;
}

/* The state's slot, or NULL with a failure on ctx for a slot out of range. */
static tsmi_cuda_state *state_of(tsm_ctx *ctx, int slot) {
    if (slot < 0 || slot >= TSMI_SCRATCH_SLOTS) {
        tsm_fail(ctx, TSM_EINVAL, "scratch slot %d out of range", slot);
        return NULL;
    }
    return (tsmi_cuda_state *)tsmi_ctx_stream(ctx);
}

extern "C" tsm_status tsmi_scratch(tsm_ctx *ctx, int slot, size_t bytes, void **p) {
    tsmi_cuda_state *cs = state_of(ctx, slot);
    return cs ? grow(ctx, &cs->dev[slot], bytes, 0, p) : TSM_EINVAL;
}

extern "C" tsm_status tsmi_scratch_host(tsm_ctx *ctx, int slot, size_t bytes, void **p) {
    tsmi_cuda_state *cs = state_of(ctx, slot);
    return cs ? grow(ctx, &cs->host[slot], bytes, 1, p) : TSM_EINVAL;
}

/* Errors after which the CUDA context cannot be used again (CUDA runtime docs:
 * "the process must be terminated and relaunched"). */
static int sticky(cudaError_t err) {
    switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable: return 1;
    default: return 0;
    }
}

tsm_status tsmi_cuda_fail(tsm_ctx *ctx, cudaError_t err, const char *what, const char *file,
                          int line) {
    tsm_status st = sticky(err)                        ? TSM_EDEVICE
                    : err == cudaErrorMemoryAllocation ? TSM_ENOMEM
                    : (err == cudaErrorInvalidValue || err == cudaErrorInvalidConfiguration ||
                       err == cudaErrorLaunchOutOfResources)
                        ? TSM_EINVAL
                        : TSM_EDEVICE;
    return tsm_fail(ctx, st, "%s: CUDA error %s: %s (%s:%d)%s", what, cudaGetErrorName(err),
                    cudaGetErrorString(err), file, line,
                    st == TSM_EDEVICE ? "; the GPU context is unusable for this process" : "");
}

/* The test-only trap (cuda_backend.h): one thread executes a trap instruction, which aborts
 * the kernel and poisons the context (cudaErrorLaunchFailure). */
__global__ static void trap_kernel() {
    __trap();
}

extern "C" tsm_status tsmi_cuda_test_trap(tsm_ctx *ctx) {
    tsm_status st = TSM_OK;
    trap_kernel<<<1, 1, 0, tsmi_stream(ctx)>>>();
    TSM_CUDA_LAUNCHED(ctx);
done:
    return st;
}
