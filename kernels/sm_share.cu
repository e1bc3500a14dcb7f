/* SPDX-License-Identifier: Apache-2.0 */
/* sm_share.cu - confining a ctx's kernels to part of the GPU's multiprocessors (the
 * CUDA side of tsm_ctx_set_sm_share, tsm.h), through a green context: a partition of
 * the device's SMs that shares the primary context's memory, so every allocation of
 * the other ctxs stays usable from it.
 *
 * Why: stream priorities order the blocks that WAIT for a multiprocessor, but a
 * resident block is never preempted, and the blocks of a long throughput kernel (the
 * daemon's windowed passes) share each SM's FP64 units with whatever else runs there.
 * The daemon's latency-bound online rounds then took 2-16 ms instead of 0.3-1 ms
 * whenever a pass kernel was on the device. Confining the passes to a partition leaves
 * the other SMs to the rounds.
 *
 * The driver functions come through cudaGetDriverEntryPointByVersion (the runtime has
 * the driver loaded), so the binaries do not link libcuda and still start on machines
 * without an NVIDIA driver (the CPU backend). */
#include "cuda_util.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

/* The driver function `name` of the CUDA 12.4/12.5 ABI into *fn; TSM_OK, or a failure
 * on ctx naming it (a driver older than green contexts). */
static tsm_status driver_fn(tsm_ctx *ctx, const char *name, unsigned version, void **fn) {
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t err = cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, &q);
    if (err != cudaSuccess || q != cudaDriverEntryPointSuccess || !*fn) {
        cudaGetLastError(); /* not sticky */
        return tsm_fail(ctx, TSM_EINVAL,
                        "the NVIDIA driver has no %s (green contexts need CUDA 12.5 or newer)",
                        name);
    }
    return TSM_OK;
}

/* A driver call in sm_share's functions: on failure, records it and jumps to done. */
#define DRIVER_TRY(call)                                                                           \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *name_ = "unknown";                                                         \
            if (get_name)                                                                          \
                get_name(r_, &name_);                                                              \
            st = tsm_fail(ctx, TSM_EINVAL, "%s: %s", #call, name_);                                \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

extern "C" tsm_status tsmi_cuda_set_sm_share(tsm_ctx *ctx, void *state, double share, int *sms) {
    tsmi_cuda_state *cs = (tsmi_cuda_state *)state;
    tsm_status st = TSM_OK;
    PFN_cuGetErrorName_v6000 get_name = NULL;
    PFN_cuDeviceGet_v2000 device_get;
    PFN_cuDeviceGetDevResource_v12040 get_resource;
    PFN_cuDevSmResourceSplitByCount_v12040 split;
    PFN_cuDevResourceGenerateDesc_v12040 describe;
    PFN_cuGreenCtxCreate_v12040 create;
    PFN_cuGreenCtxDestroy_v12040 destroy = NULL;
    PFN_cuGreenCtxStreamCreate_v12050 stream_create;
    CUgreenCtx green = NULL;
    CUstream stream = NULL;
    CUdevice dev;
    CUdevResource all, part;
    CUdevResourceDesc desc;
    unsigned groups = 1, want;
    int ordinal;
    *sms = 0;
    if ((st = driver_fn(ctx, "cuGetErrorName", 6000, (void **)&get_name)) != TSM_OK ||
        (st = driver_fn(ctx, "cuDeviceGet", 2000, (void **)&device_get)) != TSM_OK ||
        (st = driver_fn(ctx, "cuDeviceGetDevResource", 12040, (void **)&get_resource)) != TSM_OK ||
        (st = driver_fn(ctx, "cuDevSmResourceSplitByCount", 12040, (void **)&split)) != TSM_OK ||
        (st = driver_fn(ctx, "cuDevResourceGenerateDesc", 12040, (void **)&describe)) != TSM_OK ||
        (st = driver_fn(ctx, "cuGreenCtxCreate", 12040, (void **)&create)) != TSM_OK ||
        (st = driver_fn(ctx, "cuGreenCtxDestroy", 12040, (void **)&destroy)) != TSM_OK ||
        (st = driver_fn(ctx, "cuGreenCtxStreamCreate", 12050, (void **)&stream_create)) != TSM_OK)
        return st;
    TSM_CUDA_TRY(ctx, cudaGetDevice(&ordinal));
    DRIVER_TRY(device_get(&dev, ordinal));
    DRIVER_TRY(get_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
    /* one group of at least `want` SMs: the driver rounds up to its granularity */
    want = (unsigned)(share * all.sm.smCount);
    want = want < all.sm.minSmPartitionSize ? all.sm.minSmPartitionSize : want;
    if (want >= all.sm.smCount)
        return tsm_fail(ctx, TSM_EINVAL, "SM share %g of %u SMs leaves none out", share,
                        all.sm.smCount);
    DRIVER_TRY(split(&part, &groups, &all, NULL, 0, want));
    if (groups != 1 || part.sm.smCount >= all.sm.smCount) {
        st = tsm_fail(ctx, TSM_EINVAL, "SM share %g: no partition of %u of the %u SMs", share, want,
                      all.sm.smCount);
        goto done;
    }
    DRIVER_TRY(describe(&desc, &part, 1));
    DRIVER_TRY(create(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    DRIVER_TRY(stream_create(&stream, green, CU_STREAM_NON_BLOCKING, 0));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(cs->stream));
    TSM_CUDA_TRY(ctx, cudaStreamDestroy(cs->stream));
    if (cs->green)
        destroy((CUgreenCtx)cs->green);
    cs->stream = (cudaStream_t)stream;
    cs->green = green;
    cs->green_destroy = (void *)destroy;
    *sms = (int)part.sm.smCount;
    stream = NULL, green = NULL;
done:
    if (stream)
        cudaStreamDestroy((cudaStream_t)stream);
    if (green && destroy)
        destroy(green);
    return st;
}

extern "C" void tsmi_cuda_green_release(void *state) {
    tsmi_cuda_state *cs = (tsmi_cuda_state *)state;
    if (cs->green)
        ((PFN_cuGreenCtxDestroy_v12040)cs->green_destroy)((CUgreenCtx)cs->green);
    cs->green = NULL;
}
