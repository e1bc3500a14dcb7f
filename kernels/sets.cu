/* SPDX-License-Identifier: Apache-2.0 */
/* sets.cu - the CUDA backend of sets.h: the choice between its two methods, and the host
 * side that copies inputs over (in pieces when they do not fit) and results back.
 *
 * Validated on the GPU by the CUDA twins of tests/sets_test.c and tests/scan_test.c
 * (sets_cuda, scan_cuda; tools/scripts/gpu-check runs them).
 *
 * The backend's files, each with one job:
 *   sets.cu          this file: AUTO's choice on the device, empty operands, host arrays
 *                    in pieces, the C entry points of sets.h;
 *   sets_merge.cu    MERGE_PATH on device arrays: balanced merge-path tiles, merged
 *                    independently;
 *   sets_range.cu    RANGE_SEARCH on device arrays: seed 004's bound searches and prefix
 *                    sums;
 *   sets_tile.cuh    what both methods' tiled kernels share: a tile's results placed and
 *                    written, the counting and writing passes, their scratch;
 *   sets_search.cuh  the bound searches on the device;
 *   sets_cuda.cuh    the two methods' entry points, between these files;
 *   sets_rule.h      the rules the CPU backend (sets.c, sets.inc) applies too: what each
 *                    operation emits, how a cut pairs the copies of a key's run.
 * Each .cu is a translation unit of its own, built without relocatable device code: the
 * device code both methods use is in the .cuh headers, compiled into each. */
#include "sets_cuda.cuh"
#include "sets_rule.h"

#include <stdlib.h>

/* Size ratio from which AUTO may take RANGE_SEARCH (see gpu_method). */
#define SET_SEARCH_RATIO 32

/* AUTO on the device: RANGE_SEARCH when one side is SET_SEARCH_RATIO times smaller
 * and the larger is not emitted (intersect; A - B with B the larger): it then reads
 * little of the larger side. Otherwise MERGE_PATH, which reads and writes each key once
 * and runs at the speed of memory: a result that holds most of the larger side costs
 * that much whatever the method. */
static tsm_set_method gpu_method(tsm_set_method m, tsm_set_op op, size_t na, size_t nb) {
    if (m != TSM_SET_AUTO)
        return m;
    size_t lo = na < nb ? na : nb, hi = na < nb ? nb : na;
    tsmi_set_emits e = tsmi_set_emits_of(op);
    int large_emitted = na <= nb ? e.b : e.a;
    return lo > 0 && hi / SET_SEARCH_RATIO >= lo && !large_emitted ? TSM_SET_RANGE_SEARCH
                                                                   : TSM_SET_MERGE_PATH;
}

/* One operation on device arrays: empty sides are a copy or nothing; else the method. */
template <typename K>
static tsm_status set_dev(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op, const K *d_a,
                          size_t na, const K *d_b, size_t nb, K *d_out, size_t cap,
                          uint64_t *d_count) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    if (na == 0 || nb == 0) {
        tsmi_set_emits e = tsmi_set_emits_of(op);
        uint64_t n = na == 0 ? (e.b ? nb : 0) : (e.a ? na : 0);
        const K *src = na == 0 ? d_b : d_a;
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(d_count, &n, sizeof n, cudaMemcpyHostToDevice, s));
        if (d_out && n > 0 && n <= cap)
            TSM_CUDA_TRY(ctx,
                         cudaMemcpyAsync(d_out, src, n * sizeof(K), cudaMemcpyDeviceToDevice, s));
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s)); /* n lives on this stack */
        return TSM_OK;
    }
    if (gpu_method(method, op, na, nb) == TSM_SET_RANGE_SEARCH)
        return tsmi_set_range_search_dev(ctx, op, d_a, na, d_b, nb, d_out, cap, d_count);
    return tsmi_set_merge_path_dev(ctx, op, d_a, na, d_b, nb, d_out, cap, d_count);
done:
    return st;
}

/* Merged elements per piece of a host-array call: TSM_SETS_CHUNK from the environment
 * (tests force pieces with it), else what a third of the free device memory holds at
 * the worst case of the methods' scratch (RANGE_SEARCH: about 48 bytes per merged
 * element plus inputs and output). */
template <typename K> static size_t piece_elements(void) {
    const char *env = getenv("TSM_SETS_CHUNK");
    if (env && *env) {
        size_t v = strtoull(env, NULL, 10);
        return v > 2 ? v : 2;
    }
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        cudaGetLastError();
        free_b = (size_t)1 << 30;
    }
    size_t per = 3 * sizeof(K) + 48;
    size_t n = free_b / 3 / per;
    return n < ((size_t)1 << 20) ? ((size_t)1 << 20) : n;
}

/* Host arrays: pieces of the merged order cut by the balanced rule on the host (each
 * piece's result is a contiguous part of the whole), each copied over, computed and
 * copied back. The output is checked against cap piece by piece; past the first piece
 * that does not fit, pieces are only counted, so *count is the size needed. */
template <typename K>
static tsm_status set_host(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op, const K *a,
                           size_t na, const K *b, size_t nb, K *out, size_t cap, size_t *count,
                           void (*split)(const K *, size_t, const K *, size_t, size_t, size_t *,
                                         size_t *)) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    const size_t total = na + nb, width = piece_elements<K>();
    const size_t per = total < width ? total : width; /* the largest piece */
    K *d_a = NULL, *d_b = NULL, *d_out = NULL;
    uint64_t *d_count = NULL;
    size_t pos = 0, i0 = 0, j0 = 0; /* output so far; the current cut */
    int fits = 1;
    /* AUTO is chosen once for the whole input, so every piece uses the same method. */
    method = gpu_method(method, op, na, nb);
    TSM_CUDA_ALLOC(ctx, d_a, per * sizeof(K));
    TSM_CUDA_ALLOC(ctx, d_b, per * sizeof(K));
    TSM_CUDA_ALLOC(ctx, d_out, per * sizeof(K));
    TSM_CUDA_ALLOC(ctx, d_count, sizeof *d_count);
    while (i0 + j0 < total) {
        /* The next cut, width merged elements on (the last piece takes the rest). For
         * sorted input a cut's total is its diagonal or one less, so a piece holds
         * width - 1 or width elements and every cut advances (width >= 2). */
        size_t i1 = na, j1 = nb;
        if (total - (i0 + j0) > width)
            split(a, na, b, nb, i0 + j0 + width, &i1, &j1);
        i1 = i1 < i0 ? i0 : i1;
        j1 = j1 < j0 ? j0 : j1;
        if ((i1 - i0) + (j1 - j0) > per || i1 + j1 == i0 + j0) { /* unsorted input */
            i1 = i0 + (na - i0 < per ? na - i0 : per);
            j1 = j0 + (nb - j0 < per - (i1 - i0) ? nb - j0 : per - (i1 - i0));
        }
        size_t pa = i1 - i0, pb = j1 - j0, room = out && fits ? cap - pos : 0;
        uint64_t got = 0;
        if (pa)
            TSM_CUDA_TRY(ctx,
                         cudaMemcpyAsync(d_a, a + i0, pa * sizeof(K), cudaMemcpyHostToDevice, s));
        if (pb)
            TSM_CUDA_TRY(ctx,
                         cudaMemcpyAsync(d_b, b + j0, pb * sizeof(K), cudaMemcpyHostToDevice, s));
        st = set_dev(ctx, method, op, (const K *)d_a, pa, (const K *)d_b, pb,
                     out && fits ? d_out : (K *)NULL, room < per ? room : per, d_count);
        if (st != TSM_OK)
            goto done;
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(&got, d_count, sizeof got, cudaMemcpyDeviceToHost, s));
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
        if (out && fits && got <= room) {
            TSM_CUDA_TRY(
                ctx, cudaMemcpyAsync(out + pos, d_out, got * sizeof(K), cudaMemcpyDeviceToHost, s));
            TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
        } else if (out) {
            fits = 0;
        }
        pos += (size_t)got;
        i0 = i1, j0 = j1;
    }
    *count = pos;
    if (out && !fits)
        st = tsm_fail(ctx, TSM_EINVAL, "sets: the result has %zu elements, the output room for %zu",
                      pos, cap);
done:
    cudaFree(d_a);
    cudaFree(d_b);
    cudaFree(d_out);
    cudaFree(d_count);
    return st;
}

/* ---- C entry points ---------------------------------------------------------------------- */

extern "C" tsm_status tsmi_set_u32_cuda(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op,
                                        const uint32_t *a, size_t na, const uint32_t *b, size_t nb,
                                        uint32_t *out, size_t cap, size_t *count) {
    return set_host<uint32_t>(ctx, method, op, a, na, b, nb, out, cap, count, tsmi_set_split_u32);
}

extern "C" tsm_status tsmi_set_u64_cuda(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op,
                                        const uint64_t *a, size_t na, const uint64_t *b, size_t nb,
                                        uint64_t *out, size_t cap, size_t *count) {
    return set_host<uint64_t>(ctx, method, op, a, na, b, nb, out, cap, count, tsmi_set_split_u64);
}

extern "C" tsm_status tsmi_set_u32_dev(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op,
                                       const uint32_t *d_a, size_t na, const uint32_t *d_b,
                                       size_t nb, uint32_t *d_out, size_t cap, uint64_t *d_count) {
    return set_dev(ctx, method, op, d_a, na, d_b, nb, d_out, cap, d_count);
}

extern "C" tsm_status tsmi_set_u64_dev(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op,
                                       const uint64_t *d_a, size_t na, const uint64_t *d_b,
                                       size_t nb, uint64_t *d_out, size_t cap, uint64_t *d_count) {
    return set_dev(ctx, method, op, d_a, na, d_b, nb, d_out, cap, d_count);
}
