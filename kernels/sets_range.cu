/* SPDX-License-Identifier: Apache-2.0 */
/* sets_range.cu - RANGE_SEARCH of the CUDA backend of sets.h on device arrays (sets.cu
 * chooses it for AUTO when one side is far smaller and the larger is not emitted): seed
 * 004's IntersectParallel / UniteParallel, generalised to the four operations; s is the
 * smaller side, l the other:
 *   step 1 RangeBinarySearch: lo[i], hi[i] = lower and upper bound of s[i] in l;
 *   steps 2-3 MaxScatter: C[i] = i at the start of a run of equal keys, else 0, then an
 *      inclusive max-scan (CUB) - C[i] is the start of i's run, r = i - C[i] its rank;
 *   step 4: copy r of a key has a partner in l iff r < hi[i] - lo[i] (the seed's D);
 *      eS[i] = 1 when s[i] is emitted (paired: eq; unpaired: the operation keeps s-only
 *      copies), eL[j] = 1 when l[j] is emitted (l-only copies kept, and not the partner
 *      of an s copy: partners are marked at lo[i] + r);
 *   step 5: prefix sums of eS and eL;
 *   steps 6-11 (union-like results, which interleave s and l): s[i] goes to position
 *      ES[i] + KL[hi[i]] (emitted s before it plus emitted l up to its key), every other
 *      position gets the next emitted l: R = 1 on free positions, 0 on s's, H = scan(R),
 *      out[p] = compact(l)[H[p]]. l - s is one compaction of l.
 *   Intersection and s - l (a part of s) run all of it in one kernel (search_kernel:
 *   the searches, the rank in the run, the flag, and the compaction with the same
 *   look-back as MERGE_PATH, sets_tile.cuh): it reads s and O(s log l) keys of l, which is why AUTO
 *   takes it when s << l and l is not emitted (measured 4-7x faster than Thrust's
 *   merge at 1:1000). The interleaving cases take many passes and stay behind
 *   MERGE_PATH, which AUTO uses for them.
 *   Nothing is written to the output when the result does not fit cap (checked on the
 *   device against the device-side count). */
#include "scan.cuh"
#include "sets_cuda.cuh"
#include "sets_rule.h"
#include "sets_search.cuh"
#include "sets_tile.cuh"

/* Step 2: C[i] = i where a run of equal keys starts, else 0. */
template <typename K>
static __global__ void run_start_kernel(const K *__restrict__ s, size_t ns, uint64_t *C) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < ns;
         i += (size_t)gridDim.x * blockDim.x)
        C[i] = (i == 0 || s[i] != s[i - 1]) ? i : 0;
}

/* x[q] = v for q < n. */
static __global__ void fill_kernel(uint64_t *x, size_t n, uint64_t v) {
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < n;
         q += (size_t)gridDim.x * blockDim.x)
        x[q] = v;
}

/* Step 4: with C the max-scanned run starts, copy r = i - C[i] of s[i]'s key has a
 * partner iff r < hi[i] - lo[i]; eS[i] = whether s[i] is emitted; the partner l[lo + r]
 * is not emitted as an l-only element (eL was filled with el). eS[ns] = eL[nl] = 0
 * for the scans' totals. */
static __global__ void flag_kernel(tsmi_set_emits e, int s_is_a, size_t ns, size_t nl,
                                   const uint64_t *C, const uint64_t *lo, const uint64_t *hi,
                                   uint64_t *eS, uint64_t *eL) {
    const int es = s_is_a ? e.a : e.b, el = s_is_a ? e.b : e.a;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < ns;
         i += (size_t)gridDim.x * blockDim.x) {
        uint64_t r = i - C[i];
        int paired = hi[i] >= lo[i] && r < hi[i] - lo[i] && lo[i] + r < nl;
        eS[i] = paired ? e.eq : es;
        if (paired && el)
            eL[lo[i] + r] = 0;
    }
}

/* The result's size: emitted s plus emitted l (both exclusive scans with a zero last
 * entry, so their last entries are the totals). */
static __global__ void total_kernel(const uint64_t *ES, size_t ns, const uint64_t *KL, size_t nl,
                                    uint64_t *d_count) {
    *d_count = ES[ns] + KL[nl];
}

/* Steps 7-8: R[p] = 1 for the result's positions, 0 at every emitted s's position
 * ES[i] + KL[hi[i]] (two kernels: all ones first, then the zeros). */
static __global__ void free_slots_kernel(uint64_t *R, size_t n, const uint64_t *d_count) {
    uint64_t total = *d_count;
    for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < n;
         p += (size_t)gridDim.x * blockDim.x)
        R[p] = p < total ? 1 : 0;
}

static __global__ void take_slots_kernel(uint64_t *R, size_t n, size_t ns, const uint64_t *ES,
                                         const uint64_t *KL, const uint64_t *hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < ns;
         i += (size_t)gridDim.x * blockDim.x) {
        uint64_t p = ES[i] + KL[hi[i]];
        if (ES[i + 1] != ES[i] && p < n) /* p < n always, for sorted input */
            R[p] = 0;
    }
}

/* Steps 10-11: the free positions take the emitted l in order (lc: l compacted, or l
 * itself when every l is emitted), s's positions their s. Only when the result fits. */
template <typename K>
static __global__ void place_kernel(K *__restrict__ out, size_t cap, const uint64_t *d_count,
                                    const uint64_t *H, const K *__restrict__ lc,
                                    const K *__restrict__ s, size_t ns, const uint64_t *ES,
                                    const uint64_t *KL, size_t nl, const uint64_t *hi) {
    uint64_t total = *d_count, nlc = KL[nl]; /* the result's size; emitted l */
    if (total > cap)
        return;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < total; p += stride)
        if (H[p + 1] != H[p] && H[p] < nlc)
            out[p] = lc[H[p]];
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < ns; i += stride) {
        uint64_t p = ES[i] + KL[hi[i]];
        if (ES[i + 1] != ES[i] && p < total)
            out[p] = s[i];
    }
}

/* out[q] = src[q] for q < *d_count, when *d_count <= cap. */
template <typename K>
static __global__ void copy_if_fits_kernel(K *__restrict__ out, size_t cap, const uint64_t *d_count,
                                           const K *__restrict__ src) {
    uint64_t n = *d_count;
    if (n > cap)
        return;
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < n;
         q += (size_t)gridDim.x * blockDim.x)
        out[q] = src[q];
}

/* Keys of s per thread of search_kernel. */
#define SET_SEARCH_VT 4

/* Block t: keys s[t * NT * VT ...] of the smaller side, VT consecutive ones per thread,
 * for the results that are a part of s (el = 0: intersection, s - l): steps 1-4 and the
 * compaction in one kernel. Copy r of a key in s (r: its distance to the start of its
 * run, by galloping back in s, then counted along the thread's keys) has a partner in
 * l iff r < its count in l (lower bound by bisection, upper bound by galloping from it);
 * it is emitted when paired and eq, or unpaired and es. put_tile places and writes the
 * results. gate: as tile_kernel's. */
template <typename K, set_pass PASS>
static __global__ void __launch_bounds__(SET_NT)
    search_kernel(const K *__restrict__ s, size_t ns, const K *__restrict__ l, size_t nl, int es,
                  int eq, set_tile_state tiles, set_count *d_count, const set_count *gate,
                  set_count bound, K *__restrict__ out, size_t cap) {
    enum { VT = SET_SEARCH_VT, W = set_vec<K>::W };
    __shared__ uint4 stage[(SET_NT * VT + W + W - 1) / W];
    __shared__ set_put_smem put_smem;
    if (PASS == SET_WRITE && gate && (*gate < bound ? *gate : bound) > cap)
        return;
    const size_t i0 = ((size_t)blockIdx.x * SET_NT + threadIdx.x) * VT;
    K res[VT], prev = K(0);
    size_t r = 0, cnt = 0;
    unsigned mask = 0;
#pragma unroll
    for (int q = 0; q < VT; q++) {
        const size_t i = i0 + q;
        if (i >= ns)
            break;
        const K x = s[i];
        if (q == 0 || x != prev) {
            r = i - d_lower_back(s, (size_t)0, i, x);
            size_t lo = d_lower(l, (size_t)0, nl, x);
            cnt = d_upper_fwd(l, lo, nl, x) - lo;
        } else {
            r++;
        }
        res[q] = prev = x;
        mask |= (unsigned)(r < cnt ? eq : es) << q;
    }
    put_tile<K, VT, PASS>(res, mask, stage, put_smem, tiles, d_count, bound, out, cap);
}

/* Tile states reset for search_kernel (CUB's InitializeStatus, one thread per tile). */
static __global__ void init_tiles_kernel(set_tile_state tiles, int ntiles) {
    tiles.InitializeStatus(ntiles);
}

/* RANGE_SEARCH for the results that are a part of the smaller side s (intersection,
 * s - l): search_kernel's passes. Scratch: 16 bytes per tile state (one per 1024 keys of
 * s). */
template <typename K>
static tsm_status search_compact_dev(tsm_ctx *ctx, tsm_set_op op, const K *S, size_t ns, const K *L,
                                     size_t nl, int es, int eq, size_t na, size_t nb, K *d_out,
                                     size_t cap, uint64_t *d_count) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    const size_t per = (size_t)SET_NT * SET_SEARCH_VT, tiles = (ns + per - 1) / per;
    const set_count bound = tsm_set_bound(op, na, nb);
    set_count *count = (set_count *)d_count;
    set_tile_state state;
    void *unused = NULL;
    st = tile_scratch(ctx, tiles, 0, &unused, &state);
    if (st != TSM_OK)
        return st;
    init_tiles_kernel<<<tsmi_blocks(tiles, TSMI_THREADS), TSMI_THREADS, 0, s>>>(state, (int)tiles);
    TSM_CUDA_LAUNCHED(ctx);
    st = tile_passes(ctx, d_out, cap, bound, count, [&](set_pass pass, const set_count *gate) {
        if (pass == SET_COUNT)
            search_kernel<K, SET_COUNT><<<(unsigned)tiles, SET_NT, 0, s>>>(
                S, ns, L, nl, es, eq, state, count, NULL, bound, NULL, 0);
        else
            search_kernel<K, SET_WRITE><<<(unsigned)tiles, SET_NT, 0, s>>>(
                S, ns, L, nl, es, eq, state, count, gate, bound, d_out, cap);
    });
done:
    return st;
}

/* Compacts src by the flags into d_out when it surely fits (cap >= n), else into
 * scratch and then to d_out only if the count fits; d_out NULL counts only. */
template <typename K>
static tsm_status compact_into(tsm_ctx *ctx, const K *src, const uint64_t *flags, size_t n,
                               K *d_out, size_t cap, uint64_t *d_count) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    K *tmp = NULL;
    if (d_out && cap >= n)
        return tsmi_select_dev(ctx, src, flags, n, d_out, d_count);
    TSM_CUDA_ALLOC(ctx, tmp, (n ? n : 1) * sizeof(K));
    st = tsmi_select_dev(ctx, src, flags, n, tmp, d_count);
    if (st != TSM_OK || !d_out)
        goto done;
    copy_if_fits_kernel<<<tsmi_grid(n), TSMI_THREADS, 0, s>>>(d_out, cap, d_count, (const K *)tmp);
    TSM_CUDA_LAUNCHED(ctx);
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
done:
    cudaFree(tmp);
    return st;
}

/* RANGE_SEARCH on device arrays (see the top of the file). Synchronises the stream.
 * Scratch: 8 bytes x (4 ns + 2 nl + result bound) plus a compacted copy of l. */
template <typename K>
static tsm_status range_search_dev(tsm_ctx *ctx, tsm_set_op op, const K *d_a, size_t na,
                                   const K *d_b, size_t nb, K *d_out, size_t cap,
                                   uint64_t *d_count) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    const int s_is_a = na <= nb;
    const K *S = s_is_a ? d_a : d_b, *L = s_is_a ? d_b : d_a;
    const size_t ns = s_is_a ? na : nb, nl = s_is_a ? nb : na, bound = na + nb;
    const tsmi_set_emits e = tsmi_set_emits_of(op);
    const int es = s_is_a ? e.a : e.b, el = s_is_a ? e.b : e.a;
    uint64_t *lo = NULL, *hi = NULL, *C = NULL, *eS = NULL, *eL = NULL, *R = NULL;
    K *lc = NULL;
    const K *lsrc = L;

    if (!el) /* intersect, s - l: a part of s, in order */
        return search_compact_dev(ctx, op, S, ns, L, nl, es, e.eq, na, nb, d_out, cap, d_count);
    TSM_CUDA_ALLOC(ctx, lo, (ns + 1) * sizeof *lo);
    TSM_CUDA_ALLOC(ctx, hi, (ns + 1) * sizeof *hi);
    TSM_CUDA_ALLOC(ctx, C, (ns + 1) * sizeof *C);
    TSM_CUDA_ALLOC(ctx, eS, (ns + 1) * sizeof *eS);
    TSM_CUDA_ALLOC(ctx, eL, (nl + 1) * sizeof *eL);
    /* Step 1: RangeBinarySearch. */
    st = tsmi_search_dev(ctx, TSM_LOWER_BOUND, L, nl, S, ns, lo);
    if (st == TSM_OK)
        st = tsmi_search_dev(ctx, TSM_UPPER_BOUND, L, nl, S, ns, hi);
    if (st != TSM_OK)
        goto done;
    /* Steps 2-3: run starts, MaxScatter as an inclusive max-scan. */
    run_start_kernel<<<tsmi_grid(ns), TSMI_THREADS, 0, s>>>(S, ns, C);
    TSM_CUDA_LAUNCHED(ctx);
    st = tsmi_scan_dev<uint64_t>(ctx, 1, C, C, ns, tsmi_max(), (uint64_t)0, NULL);
    if (st != TSM_OK)
        goto done;
    /* Step 4: the emitted flags. */
    fill_kernel<<<tsmi_grid(nl + 1), TSMI_THREADS, 0, s>>>(eL, nl, (uint64_t)el);
    TSM_CUDA_LAUNCHED(ctx);
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(eL + nl, 0, sizeof *eL, s));
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(eS + ns, 0, sizeof *eS, s));
    flag_kernel<<<tsmi_grid(ns), TSMI_THREADS, 0, s>>>(e, s_is_a, ns, nl, C, lo, hi, eS, eL);
    TSM_CUDA_LAUNCHED(ctx);

    if (!es && !e.eq) { /* l - s: the emitted l, in order */
        st = compact_into(ctx, L, eL, nl, d_out, cap, d_count);
        goto done;
    }
    /* Union and symdiff interleave s and l. The emitted l in order: l itself when all
     * of it is emitted - never here, partners are not - so compact it. */
    if (d_out) {
        uint64_t *d_nlc = NULL;
        TSM_CUDA_ALLOC(ctx, lc, (nl ? nl : 1) * sizeof *lc);
        TSM_CUDA_ALLOC(ctx, d_nlc, sizeof *d_nlc);
        st = tsmi_select_dev(ctx, L, eL, nl, lc, d_nlc);
        cudaFree(d_nlc);
        if (st != TSM_OK)
            goto done;
        lsrc = lc;
    }
    /* Step 5: prefix sums (ES, KL) and the total. */
    st = tsmi_scan_dev<uint64_t>(ctx, 0, eS, eS, ns + 1, tsmi_sum(), (uint64_t)0, NULL);
    if (st == TSM_OK)
        st = tsmi_scan_dev<uint64_t>(ctx, 0, eL, eL, nl + 1, tsmi_sum(), (uint64_t)0, NULL);
    if (st != TSM_OK)
        goto done;
    total_kernel<<<1, 1, 0, s>>>(eS, ns, eL, nl, d_count);
    TSM_CUDA_LAUNCHED(ctx);
    if (!d_out) {
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
        goto done;
    }
    /* Steps 6-11: free slots, their ranks, placement. */
    TSM_CUDA_ALLOC(ctx, R, (bound + 1) * sizeof *R);
    free_slots_kernel<<<tsmi_grid(bound + 1), TSMI_THREADS, 0, s>>>(R, bound + 1, d_count);
    TSM_CUDA_LAUNCHED(ctx);
    take_slots_kernel<<<tsmi_grid(ns), TSMI_THREADS, 0, s>>>(R, bound + 1, ns, eS, eL, hi);
    TSM_CUDA_LAUNCHED(ctx);
    st = tsmi_scan_dev<uint64_t>(ctx, 0, R, R, bound + 1, tsmi_sum(), (uint64_t)0, NULL);
    if (st != TSM_OK)
        goto done;
    place_kernel<<<tsmi_grid(bound), TSMI_THREADS, 0, s>>>(d_out, cap, d_count, R, lsrc, S, ns, eS,
                                                           eL, nl, hi);
    TSM_CUDA_LAUNCHED(ctx);
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
done:
    cudaFree(lo);
    cudaFree(hi);
    cudaFree(C);
    cudaFree(eS);
    cudaFree(eL);
    cudaFree(R);
    cudaFree(lc);
    return st;
}

/* ---- entry points (sets_cuda.cuh) ---------------------------------------------------- */

tsm_status tsmi_set_range_search_dev(tsm_ctx *ctx, tsm_set_op op, const uint32_t *d_a, size_t na,
                                     const uint32_t *d_b, size_t nb, uint32_t *d_out, size_t cap,
                                     uint64_t *d_count) {
    return range_search_dev(ctx, op, d_a, na, d_b, nb, d_out, cap, d_count);
}

tsm_status tsmi_set_range_search_dev(tsm_ctx *ctx, tsm_set_op op, const uint64_t *d_a, size_t na,
                                     const uint64_t *d_b, size_t nb, uint64_t *d_out, size_t cap,
                                     uint64_t *d_count) {
    return range_search_dev(ctx, op, d_a, na, d_b, nb, d_out, cap, d_count);
}
