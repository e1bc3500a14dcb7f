/* SPDX-License-Identifier: Apache-2.0 */
/* scan.cuh - the device side of scan.h as C++ templates, for the .cu files that need a
 * scan, a compaction or a bound search inside their own pipelines (scan.cu wraps them
 * for the C interface; sets.cu uses them directly). Everything runs on the ctx's
 * stream; errors become tsm_status through TSM_CUDA_TRY (cuda_util.cuh).
 *
 * CUB does the scans and the compactions. Older CCCL takes an int item count, so
 * inputs are processed in pieces of TSMI_CUB_PIECE = 2^30 items with the carry of a
 * scan kept on the device; one piece (the usual case) costs one CUB call. */
#ifndef TSM_SCAN_CUH
#define TSM_SCAN_CUH

#include "cuda_util.cuh"
#include "scan.h"

#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#define TSMI_CUB_PIECE ((size_t)1 << 30)
#define TSMI_THREADS   256u

/* A grid for n items of a grid-stride loop: at most 2^16 blocks (every kernel below
 * loops), at least 1. */
static inline unsigned tsmi_grid(size_t n) {
    unsigned b = tsmi_blocks(n, TSMI_THREADS);
    return b == 0 ? 1 : b > 65536u ? 65536u : b;
}

/* The associative operators the scans use. */
struct tsmi_sum {
    template <typename T> __host__ __device__ T operator()(const T &x, const T &y) const {
        return x + y;
    }
};
struct tsmi_max {
    template <typename T> __host__ __device__ T operator()(const T &x, const T &y) const {
        return x < y ? y : x;
    }
};

/* out[q] = op(*carry, out[q]) for the n items of a piece after the first. */
template <typename T, typename Op>
static __global__ void tsmi_apply_carry_kernel(T *out, size_t n, const T *carry, Op op) {
    T c = *carry;
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < n;
         q += (size_t)gridDim.x * blockDim.x)
        out[q] = op(c, out[q]);
}

/* aux[1] = in[at]: the last input of a piece, kept before an in-place scan overwrites
 * it. */
template <typename T> static __global__ void tsmi_save_kernel(const T *in, size_t at, T *aux) {
    aux[1] = in[at];
}

/* The carry into the next piece: the last output of this one (inclusive), combined
 * with its last input (exclusive). */
template <typename T, typename Op>
static __global__ void tsmi_carry_kernel(const T *out, size_t last, int inclusive, T *aux, Op op) {
    aux[0] = inclusive ? out[last] : op(out[last], aux[1]);
}

/* Scan of d_in[0..n) into d_out (in place allowed) with op and its identity; d_total
 * (device, may be NULL) gets the reduction of all n. Pieces of TSMI_CUB_PIECE items:
 * each is scanned by CUB, then the carry of the pieces before is applied. Synchronises
 * the stream before freeing its scratch. O(n) work. */
template <typename T, typename Op>
static tsm_status tsmi_scan_dev(tsm_ctx *ctx, int inclusive, const T *d_in, T *d_out, size_t n,
                                Op op, T identity, T *d_total) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    void *temp = NULL;
    size_t temp_bytes = 0;
    T *aux = NULL; /* aux[0]: carry; aux[1]: the piece's last input */
    int first = (int)(n < TSMI_CUB_PIECE ? n : TSMI_CUB_PIECE);
    if (n == 0) {
        if (d_total)
            TSM_CUDA_TRY(ctx,
                         cudaMemcpyAsync(d_total, &identity, sizeof(T), cudaMemcpyHostToDevice, s));
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s)); /* &identity lives on this stack */
        return TSM_OK;
    }
    if (inclusive)
        TSM_CUDA_TRY(ctx,
                     cub::DeviceScan::InclusiveScan(NULL, temp_bytes, d_in, d_out, op, first, s));
    else
        TSM_CUDA_TRY(ctx, cub::DeviceScan::ExclusiveScan(NULL, temp_bytes, d_in, d_out, op,
                                                         identity, first, s));
    TSM_CUDA_ALLOC(ctx, temp, temp_bytes);
    TSM_CUDA_ALLOC(ctx, aux, 2 * sizeof(T));
    for (size_t off = 0; off < n; off += TSMI_CUB_PIECE) {
        size_t len = n - off < TSMI_CUB_PIECE ? n - off : TSMI_CUB_PIECE;
        size_t bytes = temp_bytes;
        tsmi_save_kernel<<<1, 1, 0, s>>>(d_in, off + len - 1, aux);
        TSM_CUDA_LAUNCHED(ctx);
        if (inclusive)
            TSM_CUDA_TRY(ctx, cub::DeviceScan::InclusiveScan(temp, bytes, d_in + off, d_out + off,
                                                             op, (int)len, s));
        else
            TSM_CUDA_TRY(ctx, cub::DeviceScan::ExclusiveScan(temp, bytes, d_in + off, d_out + off,
                                                             op, identity, (int)len, s));
        if (off > 0) {
            tsmi_apply_carry_kernel<<<tsmi_grid(len), TSMI_THREADS, 0, s>>>(d_out + off, len, aux,
                                                                            op);
            TSM_CUDA_LAUNCHED(ctx);
        }
        tsmi_carry_kernel<<<1, 1, 0, s>>>(d_out, off + len - 1, inclusive, aux, op);
        TSM_CUDA_LAUNCHED(ctx);
    }
    if (d_total)
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(d_total, aux, sizeof(T), cudaMemcpyDeviceToDevice, s));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
done:
    cudaFree(temp);
    cudaFree(aux);
    return st;
}

/* Compaction of the items of d_in (any random-access iterator: a pointer, or a counting
 * iterator for indices) whose flag (any integer type) is non-zero, in order, into
 * d_out; *d_count (device) gets how many. One CUB DeviceSelect::Flagged call per TSMI_CUB_PIECE
 * items; with several pieces each piece's count is read back to place the next piece's output.
 * Synchronises the stream before returning. O(n) work. */
template <typename It, typename Flag, typename T>
static tsm_status tsmi_select_dev(tsm_ctx *ctx, It d_in, const Flag *d_flags, size_t n, T *d_out,
                                  uint64_t *d_count) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    void *temp = NULL;
    size_t temp_bytes = 0, done_items = 0;
    int first = (int)(n < TSMI_CUB_PIECE ? n : TSMI_CUB_PIECE);
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(d_count, 0, sizeof *d_count, s));
    if (n == 0) {
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
        return TSM_OK;
    }
    TSM_CUDA_TRY(
        ctx, cub::DeviceSelect::Flagged(NULL, temp_bytes, d_in, d_flags, d_out, d_count, first, s));
    TSM_CUDA_ALLOC(ctx, temp, temp_bytes);
    for (size_t off = 0; off < n; off += TSMI_CUB_PIECE) {
        size_t len = n - off < TSMI_CUB_PIECE ? n - off : TSMI_CUB_PIECE;
        size_t bytes = temp_bytes;
        TSM_CUDA_TRY(ctx, cub::DeviceSelect::Flagged(temp, bytes, d_in + off, d_flags + off,
                                                     d_out + done_items, d_count, (int)len, s));
        if (len < n) { /* several pieces: the next one's output starts after this one's */
            uint64_t got = 0;
            TSM_CUDA_TRY(ctx,
                         cudaMemcpyAsync(&got, d_count, sizeof got, cudaMemcpyDeviceToHost, s));
            TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
            done_items += got;
        }
    }
    if (n > TSMI_CUB_PIECE) {
        uint64_t all = done_items;
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(d_count, &all, sizeof all, cudaMemcpyHostToDevice, s));
    }
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
done:
    cudaFree(temp);
    return st;
}

/* Thread k: the lower (upper) bound of keys[k] in sorted[0..n), n >= 1, by the same
 * branch-free halving as the CPU (scan.inc): the answer stays in [base, base + len].
 * Neighbouring threads search neighbouring keys; for sorted keys their paths share
 * the cached top of the array. */
template <typename T>
static __global__ void tsmi_search_kernel(int upper, const T *__restrict__ sorted, size_t n,
                                          const T *__restrict__ keys, size_t nkeys,
                                          uint64_t *__restrict__ out) {
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < nkeys;
         k += (size_t)gridDim.x * blockDim.x) {
        T key = keys[k];
        size_t base = 0, len = n;
        while (len > 1) {
            size_t half = len / 2;
            T x = sorted[base + half - 1];
            base += (upper ? x <= key : x < key) ? half : 0;
            len -= half;
        }
        T x = sorted[base];
        out[k] = base + (size_t)(upper ? x <= key : x < key);
    }
}

/* Bounds of nkeys keys in sorted[0..n) (n may be 0: every bound is 0). Asynchronous. */
template <typename T>
static tsm_status tsmi_search_dev(tsm_ctx *ctx, tsm_bound_kind kind, const T *d_sorted, size_t n,
                                  const T *d_keys, size_t nkeys, uint64_t *d_out) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    if (nkeys == 0)
        return TSM_OK;
    if (n == 0) {
        TSM_CUDA_TRY(ctx, cudaMemsetAsync(d_out, 0, nkeys * sizeof *d_out, s));
        return TSM_OK;
    }
    tsmi_search_kernel<<<tsmi_grid(nkeys), TSMI_THREADS, 0, s>>>(kind == TSM_UPPER_BOUND, d_sorted,
                                                                 n, d_keys, nkeys, d_out);
    TSM_CUDA_LAUNCHED(ctx);
done:
    return st;
}

#endif
