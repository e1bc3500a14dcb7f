/* scan.c - prefix sums, stream compaction and vectorised search: argument checks, the
 * dispatch on the ctx's backend, and the OpenMP implementations (see scan.h). */
#include "scan.h"

#include "omp_team.h"

#include <stdlib.h>

/* Keys searched together by one thread: their loads are independent, so the cache
 * misses of a group overlap instead of forming one chain. */
#define SEARCH_GROUP 16

/* The CPU bodies, once per key type: scan_SFX_cpu, select_SFX_cpu, search_SFX_cpu. */
#define K   uint32_t
#define SFX u32
#include "scan.inc"
#undef K
#undef SFX
#define K   uint64_t
#define SFX u64
#include "scan.inc"
#undef K
#undef SFX

/* Common checks of a scan call. */
static tsm_status check_scan(tsm_ctx *ctx, tsm_scan_kind kind, const void *in, const void *out,
                             size_t n) {
    if (kind != TSM_SCAN_EXCLUSIVE && kind != TSM_SCAN_INCLUSIVE)
        return tsm_fail(ctx, TSM_EINVAL, "scan: unknown kind %d", (int)kind);
    if (n > 0 && (!in || !out))
        return tsm_fail(ctx, TSM_EINVAL, "scan: NULL input or output for %zu elements", n);
    return TSM_OK;
}

tsm_status tsm_scan_u32(tsm_ctx *ctx, tsm_scan_kind kind, const uint32_t *in, uint32_t *out,
                        size_t n, uint32_t *total) {
    tsm_status st = check_scan(ctx, kind, in, out, n);
    if (st != TSM_OK)
        return st;
    if (n == 0) {
        if (total)
            *total = 0;
        return TSM_OK;
    }
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_scan_u32_cuda(ctx, kind, in, out, n, total);
#endif
    return scan_cpu_u32(ctx, kind, in, out, n, total);
}

tsm_status tsm_scan_u64(tsm_ctx *ctx, tsm_scan_kind kind, const uint64_t *in, uint64_t *out,
                        size_t n, uint64_t *total) {
    tsm_status st = check_scan(ctx, kind, in, out, n);
    if (st != TSM_OK)
        return st;
    if (n == 0) {
        if (total)
            *total = 0;
        return TSM_OK;
    }
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_scan_u64_cuda(ctx, kind, in, out, n, total);
#endif
    return scan_cpu_u64(ctx, kind, in, out, n, total);
}

static tsm_status check_select(tsm_ctx *ctx, int need_in, const void *in, const uint8_t *flags,
                               size_t n, const void *out, size_t *count) {
    if (!count)
        return tsm_fail(ctx, TSM_EINVAL, "select: NULL count");
    *count = 0;
    if (n > 0 && ((need_in && !in) || !flags || !out))
        return tsm_fail(ctx, TSM_EINVAL, "select: NULL input, flags or output for %zu elements", n);
    return TSM_OK;
}

tsm_status tsm_select_index(tsm_ctx *ctx, const uint8_t *flags, size_t n, uint64_t *out,
                            size_t *count) {
    tsm_status st = check_select(ctx, 0, NULL, flags, n, out, count);
    if (st != TSM_OK || n == 0)
        return st;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_select_index_cuda(ctx, flags, n, out, count);
#endif
    return select_cpu_u64(ctx, NULL, flags, n, out, count);
}

tsm_status tsm_select_u32(tsm_ctx *ctx, const uint32_t *in, const uint8_t *flags, size_t n,
                          uint32_t *out, size_t *count) {
    tsm_status st = check_select(ctx, 1, in, flags, n, out, count);
    if (st != TSM_OK || n == 0)
        return st;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_select_u32_cuda(ctx, in, flags, n, out, count);
#endif
    return select_cpu_u32(ctx, in, flags, n, out, count);
}

tsm_status tsm_select_u64(tsm_ctx *ctx, const uint64_t *in, const uint8_t *flags, size_t n,
                          uint64_t *out, size_t *count) {
    tsm_status st = check_select(ctx, 1, in, flags, n, out, count);
    if (st != TSM_OK || n == 0)
        return st;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_select_u64_cuda(ctx, in, flags, n, out, count);
#endif
    return select_cpu_u64(ctx, in, flags, n, out, count);
}

static tsm_status check_search(tsm_ctx *ctx, tsm_bound_kind kind, const void *sorted, size_t n,
                               const void *keys, size_t nkeys, const uint64_t *out) {
    if (kind != TSM_LOWER_BOUND && kind != TSM_UPPER_BOUND)
        return tsm_fail(ctx, TSM_EINVAL, "search: unknown bound kind %d", (int)kind);
    if ((n > 0 && !sorted) || (nkeys > 0 && (!keys || !out)))
        return tsm_fail(ctx, TSM_EINVAL, "search: NULL array, keys or output");
    return TSM_OK;
}

tsm_status tsm_search_u32(tsm_ctx *ctx, tsm_bound_kind kind, const uint32_t *sorted, size_t n,
                          const uint32_t *keys, size_t nkeys, uint64_t *out) {
    tsm_status st = check_search(ctx, kind, sorted, n, keys, nkeys, out);
    if (st != TSM_OK || nkeys == 0)
        return st;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_search_u32_cuda(ctx, kind, sorted, n, keys, nkeys, out);
#endif
    search_cpu_u32(ctx, kind == TSM_UPPER_BOUND, sorted, n, keys, nkeys, out, NULL);
    return TSM_OK;
}

tsm_status tsm_search_u64(tsm_ctx *ctx, tsm_bound_kind kind, const uint64_t *sorted, size_t n,
                          const uint64_t *keys, size_t nkeys, uint64_t *out) {
    tsm_status st = check_search(ctx, kind, sorted, n, keys, nkeys, out);
    if (st != TSM_OK || nkeys == 0)
        return st;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_search_u64_cuda(ctx, kind, sorted, n, keys, nkeys, out);
#endif
    search_cpu_u64(ctx, kind == TSM_UPPER_BOUND, sorted, n, keys, nkeys, out, NULL);
    return TSM_OK;
}

tsm_status tsm_search_range_u32(tsm_ctx *ctx, const uint32_t *sorted, size_t n,
                                const uint32_t *keys, size_t nkeys, uint64_t *lo, uint64_t *hi) {
    tsm_status st = check_search(ctx, TSM_LOWER_BOUND, sorted, n, keys, nkeys, lo);
    if (st == TSM_OK && nkeys > 0 && !hi)
        st = tsm_fail(ctx, TSM_EINVAL, "search: NULL output");
    if (st != TSM_OK || nkeys == 0)
        return st;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_search_range_u32_cuda(ctx, sorted, n, keys, nkeys, lo, hi);
#endif
    search_cpu_u32(ctx, 0, sorted, n, keys, nkeys, lo, hi);
    return TSM_OK;
}

tsm_status tsm_search_range_u64(tsm_ctx *ctx, const uint64_t *sorted, size_t n,
                                const uint64_t *keys, size_t nkeys, uint64_t *lo, uint64_t *hi) {
    tsm_status st = check_search(ctx, TSM_LOWER_BOUND, sorted, n, keys, nkeys, lo);
    if (st == TSM_OK && nkeys > 0 && !hi)
        st = tsm_fail(ctx, TSM_EINVAL, "search: NULL output");
    if (st != TSM_OK || nkeys == 0)
        return st;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_search_range_u64_cuda(ctx, sorted, n, keys, nkeys, lo, hi);
#endif
    search_cpu_u64(ctx, 0, sorted, n, keys, nkeys, lo, hi);
    return TSM_OK;
}
