/* SPDX-License-Identifier: Apache-2.0 */
/* scan.c - prefix sums, stream compaction and vectorised search: argument checks, the
 * dispatch on the ctx's backend, and the OpenMP implementations (see scan.h). */
#include "scan.h"

#include "omp_team.h"

#include <math.h>
#include <stdlib.h>

/* Keys searched together by one thread: their loads are independent, so the cache
 * misses of a group overlap instead of forming one chain. */
#define SEARCH_GROUP 16

/* Sorted keys searched at once by one thread (scan.inc, search_sorted), and the
 * interpolation steps a key may take before it is found by galloping instead. */
#define SEARCH_RING  32
#define INTERP_STEPS 4

/* Common checks of a scan call. */
static tsm_status check_scan(tsm_ctx *ctx, tsm_scan_kind kind, const void *in, const void *out,
                             size_t n) {
    if (kind != TSM_SCAN_EXCLUSIVE && kind != TSM_SCAN_INCLUSIVE)
        return tsm_fail(ctx, TSM_EINVAL, "scan: unknown kind %d", (int)kind);
    if (n > 0 && (!in || !out))
        return tsm_fail(ctx, TSM_EINVAL, "scan: NULL input or output for %zu elements", n);
    return TSM_OK;
}

/* Common checks of a select call. */
static tsm_status check_select(tsm_ctx *ctx, int need_in, const void *in, const uint8_t *flags,
                               size_t n, const void *out, size_t *count) {
    if (!count)
        return tsm_fail(ctx, TSM_EINVAL, "select: NULL count");
    *count = 0;
    if (n > 0 && ((need_in && !in) || !flags || !out))
        return tsm_fail(ctx, TSM_EINVAL, "select: NULL input, flags or output for %zu elements", n);
    return TSM_OK;
}

/* Common checks of a search call. */
static tsm_status check_search(tsm_ctx *ctx, tsm_bound_kind kind, const void *sorted, size_t n,
                               const void *keys, size_t nkeys, const uint64_t *out) {
    if (kind != TSM_LOWER_BOUND && kind != TSM_UPPER_BOUND)
        return tsm_fail(ctx, TSM_EINVAL, "search: unknown bound kind %d", (int)kind);
    if ((n > 0 && !sorted) || (nkeys > 0 && (!keys || !out)))
        return tsm_fail(ctx, TSM_EINVAL, "search: NULL array, keys or output");
    return TSM_OK;
}

/* Once per key type: the CPU bodies (scan.inc: scan_SFX_cpu, select_SFX_cpu,
 * search_SFX_cpu) and the public entry points (scan_api.inc: tsm_scan_SFX, ...). */
#define K   uint32_t
#define SFX u32
#include "scan.inc"
#include "scan_api.inc"
#undef K
#undef SFX
#define K   uint64_t
#define SFX u64
#include "scan.inc"
#include "scan_api.inc"
#undef K
#undef SFX

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
