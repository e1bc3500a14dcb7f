/* cuda.cu - device probing, the ctx's stream and the mapping of CUDA errors to
 * tsm_status (see cuda.h and cuda_util.cuh). */
#include "cuda_util.cuh"

#include <stdio.h>

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

extern "C" tsm_status tsmi_cuda_open(tsm_ctx *ctx, int *device, void **stream) {
    tsm_status st = TSM_OK;
    cudaStream_t s = NULL;
    TSM_CUDA_TRY(ctx, cudaGetDevice(device));
    TSM_CUDA_TRY(ctx, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *stream = (void *)s;
done:
    return st;
}

extern "C" void tsmi_cuda_close(void *stream) {
    if (stream)
        cudaStreamDestroy((cudaStream_t)stream);
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
