/* SPDX-License-Identifier: Apache-2.0 */
/* bench_thrust.cu - the device side of tsmine-bench's set benchmarks (see
 * bench_thrust.h): tsmine's device-array set operations side by side with Thrust's on
 * the same device buffers, and the device's copy bandwidth.
 *
 * Both are timed alike: the stream is synchronised, the host clock read, the operation
 * run until its result's size is known on the host (Thrust returns the end iterator;
 * tsmine's size is copied back), the clock read again. Both allocate their scratch
 * inside the call (Thrust through its default allocator, tsmine with cudaMalloc), so
 * that cost is in both figures. After timing, the results are checked against each
 * other, and once more on the arrays less their first 1 and 3 keys (check_skewed: the
 * device code's paths for arrays that are not 16-byte aligned). */
#include "bench_thrust.h"
#include "cuda_util.cuh"

#include <thrust/device_ptr.h>
#include <thrust/equal.h>
#include <thrust/execution_policy.h>
#include <thrust/set_operations.h>

#include <algorithm>
#include <exception>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <vector>

struct bench_dev_case {
    int width;
    size_t na, nb;
    void *a, *b, *out_tsm, *out_thr; /* device; outputs of na + nb keys */
    uint64_t *d_count;               /* tsmine's result size (device) */
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Records a failed CUDA call in err; 0 when call succeeded. */
static int failed(cudaError_t e, const char *what, char *err, size_t errlen) {
    if (e == cudaSuccess)
        return 0;
    snprintf(err, errlen, "%s: CUDA error %s: %s", what, cudaGetErrorName(e),
             cudaGetErrorString(e));
    return 1;
}
#define CHECK(call)                                                                                \
    do {                                                                                           \
        if (failed((call), #call, err, errlen))                                                    \
            goto done;                                                                             \
    } while (0)

extern "C" int bench_copy_bandwidth(tsm_ctx *ctx, size_t bytes, int repeat,
                                    double *bytes_per_second, char *err, size_t errlen) {
    cudaStream_t s = tsmi_stream(ctx);
    void *src = NULL, *dst = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    std::vector<float> ms;
    int rc = -1;
    repeat = repeat < 1 ? 1 : repeat;
    CHECK(cudaMalloc(&src, bytes));
    CHECK(cudaMalloc(&dst, bytes));
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    CHECK(cudaMemsetAsync(src, 0x5a, bytes, s));
    CHECK(cudaMemsetAsync(dst, 0, bytes, s));
    for (int r = -1; r < repeat; r++) { /* r = -1: warm-up */
        float t = 0;
        CHECK(cudaEventRecord(e0, s));
        CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
        CHECK(cudaEventRecord(e1, s));
        CHECK(cudaEventSynchronize(e1));
        CHECK(cudaEventElapsedTime(&t, e0, e1));
        if (r >= 0)
            ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    *bytes_per_second = 2.0 * (double)bytes / (1e-3 * (double)ms[ms.size() / 2]);
    rc = 0;
done:
    cudaFree(src);
    cudaFree(dst);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    return rc;
}

extern "C" void bench_dev_free(bench_dev_case **self_p) {
    if (*self_p) {
        bench_dev_case *c = *self_p;
        cudaFree(c->a);
        cudaFree(c->b);
        cudaFree(c->out_tsm);
        cudaFree(c->out_thr);
        cudaFree(c->d_count);
        delete c;
        *self_p = NULL;
    }
}

extern "C" bench_dev_case *bench_dev_new(tsm_ctx *ctx, int width, const void *a, size_t na,
                                         const void *b, size_t nb, char *err, size_t errlen) {
    cudaStream_t s = tsmi_stream(ctx);
    const size_t key = (size_t)width / 8, total = na + nb;
    bench_dev_case *c = new bench_dev_case{width, na, nb, NULL, NULL, NULL, NULL, NULL};
    CHECK(cudaMalloc(&c->a, (na ? na : 1) * key));
    CHECK(cudaMalloc(&c->b, (nb ? nb : 1) * key));
    CHECK(cudaMalloc(&c->out_tsm, (total ? total : 1) * key));
    CHECK(cudaMalloc(&c->out_thr, (total ? total : 1) * key));
    CHECK(cudaMalloc(&c->d_count, sizeof *c->d_count));
    CHECK(cudaMemcpyAsync(c->a, a, na * key, cudaMemcpyHostToDevice, s));
    CHECK(cudaMemcpyAsync(c->b, b, nb * key, cudaMemcpyHostToDevice, s));
    CHECK(cudaStreamSynchronize(s));
    return c;
done:
    bench_dev_free(&c);
    return NULL;
}

/* Thrust's op on A[0, na) and B[0, nb) into O; returns the result's size. Throws
 * thrust::system_error on CUDA errors. */
template <typename K>
static size_t thrust_op(cudaStream_t s, tsm_set_op op, const K *a, size_t na, const K *b, size_t nb,
                        K *o) {
    thrust::device_ptr<const K> A(a), B(b);
    thrust::device_ptr<K> O(o), e = O;
    auto pol = thrust::cuda::par.on(s);
    switch (op) {
    case TSM_SET_INTERSECT: e = thrust::set_intersection(pol, A, A + na, B, B + nb, O); break;
    case TSM_SET_UNION: e = thrust::set_union(pol, A, A + na, B, B + nb, O); break;
    case TSM_SET_DIFFERENCE: e = thrust::set_difference(pol, A, A + na, B, B + nb, O); break;
    case TSM_SET_SYMDIFF: e = thrust::set_symmetric_difference(pol, A, A + na, B, B + nb, O); break;
    }
    return (size_t)(e - O);
}

template <typename K>
static size_t thrust_op(cudaStream_t s, tsm_set_op op, const bench_dev_case *c) {
    return thrust_op(s, op, (const K *)c->a, c->na, (const K *)c->b, c->nb, (K *)c->out_thr);
}

/* tsmine's device-array entry point for either key width. */
static tsm_status tsmine_dev(tsm_ctx *ctx, tsm_set_op op, const uint32_t *a, size_t na,
                             const uint32_t *b, size_t nb, uint32_t *out, size_t cap, uint64_t *n) {
    return tsmi_set_u32_dev(ctx, TSM_SET_AUTO, op, a, na, b, nb, out, cap, n);
}
static tsm_status tsmine_dev(tsm_ctx *ctx, tsm_set_op op, const uint64_t *a, size_t na,
                             const uint64_t *b, size_t nb, uint64_t *out, size_t cap, uint64_t *n) {
    return tsmi_set_u64_dev(ctx, TSM_SET_AUTO, op, a, na, b, nb, out, cap, n);
}

/* The result's size from the device: tsmine's calls on device arrays do not wait for
 * their kernels, so the copy goes on the ctx's stream (non-blocking) and is waited for. */
static cudaError_t count_back(tsm_ctx *ctx, const uint64_t *d_count, uint64_t *n) {
    cudaStream_t s = tsmi_stream(ctx);
    cudaError_t e = cudaMemcpyAsync(n, d_count, sizeof *n, cudaMemcpyDeviceToHost, s);
    return e == cudaSuccess ? cudaStreamSynchronize(s) : e;
}

/* tsmine's op on the case into out_tsm; the result's size copied back to *count. The
 * events are recorded on the ctx's stream around the call's kernels (before the size is
 * copied back). */
static tsm_status tsmine_op(tsm_ctx *ctx, tsm_set_op op, const bench_dev_case *c, cudaEvent_t e0,
                            cudaEvent_t e1, size_t *count) {
    const size_t cap = c->na + c->nb;
    cudaStream_t s = tsmi_stream(ctx);
    if (cudaEventRecord(e0, s) != cudaSuccess)
        return tsm_fail(ctx, TSM_EDEVICE, "recording an event failed");
    tsm_status st = c->width == 32
                        ? tsmine_dev(ctx, op, (const uint32_t *)c->a, c->na, (const uint32_t *)c->b,
                                     c->nb, (uint32_t *)c->out_tsm, cap, c->d_count)
                        : tsmine_dev(ctx, op, (const uint64_t *)c->a, c->na, (const uint64_t *)c->b,
                                     c->nb, (uint64_t *)c->out_tsm, cap, c->d_count);
    if (st == TSM_OK && cudaEventRecord(e1, s) != cudaSuccess)
        st = tsm_fail(ctx, TSM_EDEVICE, "recording an event failed");
    uint64_t n = 0;
    if (st == TSM_OK && count_back(ctx, c->d_count, &n) != cudaSuccess)
        st = tsm_fail(ctx, TSM_EDEVICE, "copying the result's size back failed");
    *count = (size_t)n;
    return st;
}

/* tsmine and Thrust on the case's arrays less their first skew keys, into the outputs
 * less theirs: inputs and output not 16-byte aligned when skew is not a multiple of
 * 16 / key size (the device code's unaligned paths), the inputs still
 * ending at their buffers' ends. 0 when both agree, else -1 with err set. Throws
 * thrust::system_error on CUDA errors. */
template <typename K>
static int check_skewed(tsm_ctx *ctx, tsm_set_op op, const bench_dev_case *c, size_t skew,
                        char *err, size_t errlen) {
    cudaStream_t s = tsmi_stream(ctx);
    if (c->na <= skew || c->nb <= skew)
        return 0;
    const K *a = (const K *)c->a + skew, *b = (const K *)c->b + skew;
    const size_t na = c->na - skew, nb = c->nb - skew;
    K *ot = (K *)c->out_tsm + skew, *oh = (K *)c->out_thr + skew;
    uint64_t n_tsm = 0;
    if (tsmine_dev(ctx, op, a, na, b, nb, ot, na + nb + skew, c->d_count) != TSM_OK) {
        snprintf(err, errlen, "tsmine, %zu keys in: %s", skew, tsm_ctx_error(ctx));
        return -1;
    }
    if (failed(count_back(ctx, c->d_count, &n_tsm), "copying the size back", err, errlen))
        return -1;
    size_t n_thr = thrust_op(s, op, a, na, b, nb, oh);
    if (n_tsm != n_thr ||
        !thrust::equal(thrust::cuda::par.on(s), thrust::device_ptr<K>(ot),
                       thrust::device_ptr<K>(ot) + n_thr, thrust::device_ptr<K>(oh))) {
        snprintf(err, errlen,
                 "%zu keys in: tsmine's result (%llu keys) differs from Thrust's (%zu)", skew,
                 (unsigned long long)n_tsm, n_thr);
        return -1;
    }
    return 0;
}

extern "C" int bench_dev_set(tsm_ctx *ctx, bench_dev_case *c, tsm_set_op op, const void *ref,
                             size_t nref, int repeat, bench_dev_result *out, char *err,
                             size_t errlen) {
    cudaStream_t s = tsmi_stream(ctx);
    const size_t key = (size_t)c->width / 8;
    size_t n_tsm = 0, n_thr = 0;
    int rc = -1;
    std::vector<char> host;
    cudaEvent_t e0 = NULL, e1 = NULL;
    *out = bench_dev_result{0, 0, 0, 0};
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    try {
        for (int r = -1; r < repeat; r++) { /* r = -1: warm-up */
            CHECK(cudaStreamSynchronize(s));
            double t0 = now();
            tsm_status st = tsmine_op(ctx, op, c, e0, e1, &n_tsm);
            double t1 = now();
            float ms = 0;
            if (st != TSM_OK) {
                snprintf(err, errlen, "tsmine: %s", tsm_ctx_error(ctx));
                goto done;
            }
            CHECK(cudaEventElapsedTime(&ms, e0, e1));
            if (r == 0 || (r > 0 && ms * 1e-3 < out->tsmine_gpu_seconds))
                out->tsmine_gpu_seconds = ms * 1e-3;
            n_thr = c->width == 32 ? thrust_op<uint32_t>(s, op, c) : thrust_op<uint64_t>(s, op, c);
            CHECK(cudaStreamSynchronize(s));
            double t2 = now();
            if (r == 0 || (r > 0 && t1 - t0 < out->tsmine_seconds))
                out->tsmine_seconds = t1 - t0;
            if (r == 0 || (r > 0 && t2 - t1 < out->thrust_seconds))
                out->thrust_seconds = t2 - t1;
        }
        if (n_tsm != n_thr) {
            snprintf(err, errlen, "tsmine's result has %zu keys, Thrust's %zu", n_tsm, n_thr);
            goto done;
        }
        bool same =
            c->width == 32
                ? thrust::equal(thrust::cuda::par.on(s),
                                thrust::device_ptr<uint32_t>((uint32_t *)c->out_tsm),
                                thrust::device_ptr<uint32_t>((uint32_t *)c->out_tsm) + n_tsm,
                                thrust::device_ptr<uint32_t>((uint32_t *)c->out_thr))
                : thrust::equal(thrust::cuda::par.on(s),
                                thrust::device_ptr<uint64_t>((uint64_t *)c->out_tsm),
                                thrust::device_ptr<uint64_t>((uint64_t *)c->out_tsm) + n_tsm,
                                thrust::device_ptr<uint64_t>((uint64_t *)c->out_thr));
        if (!same) {
            snprintf(err, errlen, "tsmine's and Thrust's results differ (%zu keys)", n_tsm);
            goto done;
        }
    } catch (const std::exception &ex) {
        snprintf(err, errlen, "thrust: %s", ex.what());
        goto done;
    }
    if (ref) {
        if (nref != n_tsm) {
            snprintf(err, errlen, "%zu keys on the device, %zu in the serial merge", n_tsm, nref);
            goto done;
        }
        host.resize(n_tsm * key + 1);
        CHECK(cudaMemcpy(host.data(), c->out_tsm, n_tsm * key, cudaMemcpyDeviceToHost));
        if (memcmp(host.data(), ref, n_tsm * key) != 0) {
            snprintf(err, errlen, "the device result differs from the serial merge's");
            goto done;
        }
    }
    try {                                           /* last: it overwrites the outputs */
        for (size_t skew = 1; skew <= 3; skew += 2) /* misaligned by 1 and 3 keys */
            if ((c->width == 32 ? check_skewed<uint32_t>(ctx, op, c, skew, err, errlen)
                                : check_skewed<uint64_t>(ctx, op, c, skew, err, errlen)) != 0)
                goto done;
    } catch (const std::exception &ex) {
        snprintf(err, errlen, "thrust: %s", ex.what());
        goto done;
    }
    out->count = n_tsm;
    rc = 0;
done:
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    return rc;
}
