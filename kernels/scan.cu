/* SPDX-License-Identifier: Apache-2.0 */
/* scan.cu - the CUDA backend of scan.h: the C entry points (host arrays, copied to the
 * device and back) and the device-pointer forms, both over the templates of scan.cuh
 * (CUB DeviceScan / DeviceSelect, and a branch-free binary-search kernel). */
#include "scan.cuh"

#include <thrust/iterator/counting_iterator.h>

/* ---- device-pointer forms ------------------------------------------------------------- */

extern "C" tsm_status tsmi_scan_u32_dev(tsm_ctx *ctx, tsm_scan_kind kind, const uint32_t *d_in,
                                        uint32_t *d_out, size_t n, uint32_t *d_total) {
    return tsmi_scan_dev<uint32_t>(ctx, kind == TSM_SCAN_INCLUSIVE, d_in, d_out, n, tsmi_sum(), 0u,
                                   d_total);
}

extern "C" tsm_status tsmi_scan_u64_dev(tsm_ctx *ctx, tsm_scan_kind kind, const uint64_t *d_in,
                                        uint64_t *d_out, size_t n, uint64_t *d_total) {
    return tsmi_scan_dev<uint64_t>(ctx, kind == TSM_SCAN_INCLUSIVE, d_in, d_out, n, tsmi_sum(),
                                   (uint64_t)0, d_total);
}

extern "C" tsm_status tsmi_select_index_dev(tsm_ctx *ctx, const uint8_t *d_flags, size_t n,
                                            uint64_t *d_out, uint64_t *d_count) {
    return tsmi_select_dev(ctx, thrust::counting_iterator<uint64_t>(0), d_flags, n, d_out, d_count);
}

extern "C" tsm_status tsmi_select_u32_dev(tsm_ctx *ctx, const uint32_t *d_in,
                                          const uint8_t *d_flags, size_t n, uint32_t *d_out,
                                          uint64_t *d_count) {
    return tsmi_select_dev(ctx, d_in, d_flags, n, d_out, d_count);
}

extern "C" tsm_status tsmi_select_u64_dev(tsm_ctx *ctx, const uint64_t *d_in,
                                          const uint8_t *d_flags, size_t n, uint64_t *d_out,
                                          uint64_t *d_count) {
    return tsmi_select_dev(ctx, d_in, d_flags, n, d_out, d_count);
}

extern "C" tsm_status tsmi_search_u32_dev(tsm_ctx *ctx, tsm_bound_kind kind,
                                          const uint32_t *d_sorted, size_t n,
                                          const uint32_t *d_keys, size_t nkeys, uint64_t *d_out) {
    return tsmi_search_dev(ctx, kind, d_sorted, n, d_keys, nkeys, d_out);
}

extern "C" tsm_status tsmi_search_u64_dev(tsm_ctx *ctx, tsm_bound_kind kind,
                                          const uint64_t *d_sorted, size_t n,
                                          const uint64_t *d_keys, size_t nkeys, uint64_t *d_out) {
    return tsmi_search_dev(ctx, kind, d_sorted, n, d_keys, nkeys, d_out);
}

/* ---- host-array forms ------------------------------------------------------------------ */

/* Copies in[0..n) to the device, scans it there and copies the result (and total) back. */
template <typename T>
static tsm_status scan_host(tsm_ctx *ctx, tsm_scan_kind kind, const T *in, T *out, size_t n,
                            T *total) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    T *d = NULL; /* in place on the device: n + 1 items, the last is the total */
    TSM_CUDA_ALLOC(ctx, d, (n + 1) * sizeof(T));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(d, in, n * sizeof(T), cudaMemcpyHostToDevice, s));
    st = tsmi_scan_dev<T>(ctx, kind == TSM_SCAN_INCLUSIVE, d, d, n, tsmi_sum(), (T)0, d + n);
    if (st != TSM_OK)
        goto done;
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(out, d, n * sizeof(T), cudaMemcpyDeviceToHost, s));
    if (total)
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(total, d + n, sizeof(T), cudaMemcpyDeviceToHost, s));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
done:
    cudaFree(d);
    return st;
}

extern "C" tsm_status tsmi_scan_u32_cuda(tsm_ctx *ctx, tsm_scan_kind kind, const uint32_t *in,
                                         uint32_t *out, size_t n, uint32_t *total) {
    return scan_host(ctx, kind, in, out, n, total);
}

extern "C" tsm_status tsmi_scan_u64_cuda(tsm_ctx *ctx, tsm_scan_kind kind, const uint64_t *in,
                                         uint64_t *out, size_t n, uint64_t *total) {
    return scan_host(ctx, kind, in, out, n, total);
}

/* Copies the flags (and the items) to the device, compacts there, copies the selection
 * and its count back. in == NULL selects indices (T is then uint64_t). */
template <typename T>
static tsm_status select_host(tsm_ctx *ctx, const T *in, const uint8_t *flags, size_t n, T *out,
                              size_t *count) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    uint8_t *d_flags = NULL;
    T *d_in = NULL, *d_out = NULL;
    uint64_t *d_count = NULL, got = 0;
    TSM_CUDA_ALLOC(ctx, d_flags, n);
    TSM_CUDA_ALLOC(ctx, d_out, n * sizeof(T));
    TSM_CUDA_ALLOC(ctx, d_count, sizeof *d_count);
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(d_flags, flags, n, cudaMemcpyHostToDevice, s));
    if (in) {
        TSM_CUDA_ALLOC(ctx, d_in, n * sizeof(T));
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(d_in, in, n * sizeof(T), cudaMemcpyHostToDevice, s));
        st = tsmi_select_dev(ctx, (const T *)d_in, d_flags, n, d_out, d_count);
    } else {
        st = tsmi_select_dev(ctx, thrust::counting_iterator<uint64_t>(0), d_flags, n,
                             (uint64_t *)d_out, d_count);
    }
    if (st != TSM_OK)
        goto done;
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(&got, d_count, sizeof got, cudaMemcpyDeviceToHost, s));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(out, d_out, got * sizeof(T), cudaMemcpyDeviceToHost, s));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
    *count = (size_t)got;
done:
    cudaFree(d_flags);
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_count);
    return st;
}

extern "C" tsm_status tsmi_select_index_cuda(tsm_ctx *ctx, const uint8_t *flags, size_t n,
                                             uint64_t *out, size_t *count) {
    return select_host<uint64_t>(ctx, NULL, flags, n, out, count);
}

extern "C" tsm_status tsmi_select_u32_cuda(tsm_ctx *ctx, const uint32_t *in, const uint8_t *flags,
                                           size_t n, uint32_t *out, size_t *count) {
    return select_host(ctx, in, flags, n, out, count);
}

extern "C" tsm_status tsmi_select_u64_cuda(tsm_ctx *ctx, const uint64_t *in, const uint8_t *flags,
                                           size_t n, uint64_t *out, size_t *count) {
    return select_host(ctx, in, flags, n, out, count);
}

/* Copies the array and the keys to the device, searches there, copies the bounds back. */
template <typename T>
static tsm_status search_host(tsm_ctx *ctx, tsm_bound_kind kind, const T *sorted, size_t n,
                              const T *keys, size_t nkeys, uint64_t *out) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    T *d_sorted = NULL, *d_keys = NULL;
    uint64_t *d_out = NULL;
    TSM_CUDA_ALLOC(ctx, d_sorted, (n ? n : 1) * sizeof(T));
    TSM_CUDA_ALLOC(ctx, d_keys, nkeys * sizeof(T));
    TSM_CUDA_ALLOC(ctx, d_out, nkeys * sizeof *d_out);
    if (n)
        TSM_CUDA_TRY(ctx,
                     cudaMemcpyAsync(d_sorted, sorted, n * sizeof(T), cudaMemcpyHostToDevice, s));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(d_keys, keys, nkeys * sizeof(T), cudaMemcpyHostToDevice, s));
    st = tsmi_search_dev(ctx, kind, (const T *)d_sorted, n, (const T *)d_keys, nkeys, d_out);
    if (st != TSM_OK)
        goto done;
    TSM_CUDA_TRY(ctx,
                 cudaMemcpyAsync(out, d_out, nkeys * sizeof *d_out, cudaMemcpyDeviceToHost, s));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
done:
    cudaFree(d_sorted);
    cudaFree(d_keys);
    cudaFree(d_out);
    return st;
}

extern "C" tsm_status tsmi_search_u32_cuda(tsm_ctx *ctx, tsm_bound_kind kind,
                                           const uint32_t *sorted, size_t n, const uint32_t *keys,
                                           size_t nkeys, uint64_t *out) {
    return search_host(ctx, kind, sorted, n, keys, nkeys, out);
}

extern "C" tsm_status tsmi_search_u64_cuda(tsm_ctx *ctx, tsm_bound_kind kind,
                                           const uint64_t *sorted, size_t n, const uint64_t *keys,
                                           size_t nkeys, uint64_t *out) {
    return search_host(ctx, kind, sorted, n, keys, nkeys, out);
}

/* Both bounds (RangeBinarySearch): two searches on the device, the copies shared. */
template <typename T>
static tsm_status search_range_host(tsm_ctx *ctx, const T *sorted, size_t n, const T *keys,
                                    size_t nkeys, uint64_t *lo, uint64_t *hi) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    T *d_sorted = NULL, *d_keys = NULL;
    uint64_t *d_lo = NULL, *d_hi = NULL;
    TSM_CUDA_ALLOC(ctx, d_sorted, (n ? n : 1) * sizeof(T));
    TSM_CUDA_ALLOC(ctx, d_keys, nkeys * sizeof(T));
    TSM_CUDA_ALLOC(ctx, d_lo, nkeys * sizeof *d_lo);
    TSM_CUDA_ALLOC(ctx, d_hi, nkeys * sizeof *d_hi);
    if (n)
        TSM_CUDA_TRY(ctx,
                     cudaMemcpyAsync(d_sorted, sorted, n * sizeof(T), cudaMemcpyHostToDevice, s));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(d_keys, keys, nkeys * sizeof(T), cudaMemcpyHostToDevice, s));
    st = tsmi_search_dev(ctx, TSM_LOWER_BOUND, (const T *)d_sorted, n, (const T *)d_keys, nkeys,
                         d_lo);
    if (st == TSM_OK)
        st = tsmi_search_dev(ctx, TSM_UPPER_BOUND, (const T *)d_sorted, n, (const T *)d_keys, nkeys,
                             d_hi);
    if (st != TSM_OK)
        goto done;
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(lo, d_lo, nkeys * sizeof *lo, cudaMemcpyDeviceToHost, s));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(hi, d_hi, nkeys * sizeof *hi, cudaMemcpyDeviceToHost, s));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
done:
    cudaFree(d_sorted);
    cudaFree(d_keys);
    cudaFree(d_lo);
    cudaFree(d_hi);
    return st;
}

extern "C" tsm_status tsmi_search_range_u32_cuda(tsm_ctx *ctx, const uint32_t *sorted, size_t n,
                                                 const uint32_t *keys, size_t nkeys, uint64_t *lo,
                                                 uint64_t *hi) {
    return search_range_host(ctx, sorted, n, keys, nkeys, lo, hi);
}

extern "C" tsm_status tsmi_search_range_u64_cuda(tsm_ctx *ctx, const uint64_t *sorted, size_t n,
                                                 const uint64_t *keys, size_t nkeys, uint64_t *lo,
                                                 uint64_t *hi) {
    return search_range_host(ctx, sorted, n, keys, nkeys, lo, hi);
}
