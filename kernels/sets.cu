/* sets.cu - the CUDA backend of sets.h: both methods on the device, and the host side
 * that copies inputs over (in pieces when they do not fit) and results back.
 *
 * Validated on the GPU by the CUDA twins of tests/sets_test.c and tests/scan_test.c
 * (sets_cuda, scan_cuda; tools/gpu-check runs them).
 *
 * MERGE_PATH (the default for sizes within a factor 32 of each other):
 *   1. cut_kernel: one thread per tile boundary computes the balanced-path cut of the
 *      merged order at diagonal t * SET_NV (the rule of tsmi_set_split in sets.inc:
 *      merge-path binary search, then pairing the copies of a key that runs across the
 *      cut), so every tile of SET_NV = SET_NT * SET_VT merged elements has equal work;
 *   2. tile_kernel<count>: a block loads its tile's slices of A and B into shared
 *      memory (coalesced), each thread cuts the tile again at its own diagonal
 *      (threadIdx * SET_VT, same rule on the tile's local runs) and merges its SET_VT
 *      elements serially, counting what the operation emits; a block scan sums them;
 *   3. an exclusive scan of the tile counts (CUB) gives every tile its output offset
 *      and the total (the result's size, on the device, before anything is written);
 *   4. tile_kernel<write>: the same merge again, each thread's results go to shared
 *      memory at its block-scan offset, then the block writes its tile out coalesced.
 *   Reads the inputs twice, writes the result once. The local-run rule is valid inside
 *   a tile because a balanced cut leaves every piece with paired copies or the tail of
 *   a run without partners, and the same holds for the pieces of a piece.
 *
 * RANGE_SEARCH (seed 004's IntersectParallel / UniteParallel, generalised to the four
 * operations; the default from a size ratio of 32; s is the smaller side, l the other):
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
 *      out[p] = compact(l)[H[p]]. Intersection and s - l are one compaction of s,
 *      l - s one compaction of l.
 *   Work O(s log l + result); many passes, so it only wins when s << l.
 * Both write nothing to the output when the result does not fit cap (checked on the
 * device against the device-side count). */
#include "scan.cuh"
#include "sets.h"

#include <cub/block/block_scan.cuh>
#include <stdlib.h>

#define SET_NT 256               /* threads per tile */
#define SET_VT 8                 /* merged elements per thread */
#define SET_NV (SET_NT * SET_VT) /* merged elements per tile */

/* Size ratio from which AUTO takes RANGE_SEARCH (to be tuned on the GPU). */
#define SET_SEARCH_RATIO 32

/* What an operation emits: an element of A without partner, of B without partner, one
 * copy per matched pair (as op_emits in sets.c). */
struct set_emits {
    int a, b, eq;
};

static set_emits emits_of(tsm_set_op op) {
    switch (op) {
    case TSM_SET_INTERSECT: return {0, 0, 1};
    case TSM_SET_UNION: return {1, 1, 1};
    case TSM_SET_DIFFERENCE: return {1, 0, 0};
    case TSM_SET_SYMDIFF: return {1, 1, 0};
    }
    return {0, 0, 0};
}

/* ---- device searches (the rule of sets.inc, by bisection) ----------------------------- */

template <typename K> static __device__ size_t d_lower(const K *x, size_t lo, size_t hi, K key) {
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (x[m] < key)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

template <typename K> static __device__ size_t d_upper(const K *x, size_t lo, size_t hi, K key) {
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (x[m] <= key)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* Elements of a among the first d of the merge, a first on ties. */
template <typename K>
static __device__ size_t d_merge_path(const K *a, size_t na, const K *b, size_t nb, size_t d) {
    size_t lo = d > nb ? d - nb : 0, hi = d < na ? d : na;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] <= b[d - 1 - mid])
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The balanced-path cut at diagonal d (sets.h, tsmi_set_split). */
template <typename K>
static __device__ void d_split(const K *a, size_t na, const K *b, size_t nb, size_t d, size_t *pi,
                               size_t *pj) {
    size_t i = d_merge_path(a, na, b, nb, d), j = d - i;
    *pi = i, *pj = j;
    K x;
    if (i < na && (j >= nb || a[i] <= b[j]))
        x = a[i];
    else if (j < nb)
        x = b[j];
    else
        return;
    if (!((i > 0 && a[i - 1] == x) || (j > 0 && b[j - 1] == x)))
        return;
    size_t la = d_lower(a, 0, i, x), lb = d_lower(b, 0, j, x);
    size_t ca = d_upper(a, i, na, x) - la, cb = d_upper(b, j, nb, x) - lb;
    size_t t = (i - la) + (j - lb), mn = ca < cb ? ca : cb, ra, rb;
    if (t <= 2 * mn)
        ra = rb = t / 2;
    else if (ca >= cb)
        rb = cb, ra = t - cb;
    else
        ra = ca, rb = t - ca;
    *pi = la + ra, *pj = lb + rb;
}

/* ---- MERGE_PATH ------------------------------------------------------------------------- */

/* Thread t: the cut at diagonal min(t * SET_NV, na + nb), t < ncuts. */
template <typename K>
static __global__ void cut_kernel(const K *__restrict__ a, size_t na, const K *__restrict__ b,
                                  size_t nb, size_t ncuts, size_t *cut_a, size_t *cut_b) {
    size_t total = na + nb;
    for (size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x; t < ncuts;
         t += (size_t)gridDim.x * blockDim.x) {
        size_t d = t * (size_t)SET_NV < total ? t * (size_t)SET_NV : total;
        d_split(a, na, b, nb, d, &cut_a[t], &cut_b[t]);
    }
}

/* Block t: tile t, between cuts t and t + 1. Shared memory: the tile's keys (A's slice
 * then B's, at most SET_NV + 1 for sorted input: cuts are d or d - 1), reused for the
 * tile's output, which is never longer than its input. Cuts are clamped to monotone
 * and to the buffer (they are already for sorted input; for unsorted input the result
 * is unspecified but both passes clamp alike, so counts match what is written).
 * WRITE = false: tile_count[t] = what the tile emits. WRITE = true: writes the tile's
 * result at tile_off[t], if the total *d_total fits cap. */
template <typename K, bool WRITE>
static __global__ void __launch_bounds__(SET_NT)
    tile_kernel(set_emits e, const K *__restrict__ a, const K *__restrict__ b,
                const size_t *__restrict__ cut_a, const size_t *__restrict__ cut_b,
                uint64_t *tile_count, const uint64_t *tile_off, const uint64_t *d_total,
                K *__restrict__ out, size_t cap) {
    typedef cub::BlockScan<unsigned, SET_NT> block_scan;
    __shared__ K keys[SET_NV + 2];
    __shared__ typename block_scan::TempStorage scan_tmp;
    const size_t t = blockIdx.x;
    size_t a0 = cut_a[t], a1 = cut_a[t + 1], b0 = cut_b[t], b1 = cut_b[t + 1];
    a1 = a1 < a0 ? a0 : a1;
    b1 = b1 < b0 ? b0 : b1;
    if (a1 - a0 > SET_NV + 1)
        a1 = a0 + SET_NV + 1;
    if (b1 - b0 > SET_NV + 1 - (a1 - a0))
        b1 = b0 + (SET_NV + 1 - (a1 - a0));
    const size_t na = a1 - a0, nb = b1 - b0, tot = na + nb;
    for (size_t q = threadIdx.x; q < tot; q += SET_NT)
        keys[q] = q < na ? a[a0 + q] : b[b0 + q - na];
    __syncthreads();

    /* This thread's piece of the tile: diagonals [d0, d1), cut by the same rule. */
    const K *sa = keys, *sb = keys + na;
    size_t d0 = (size_t)threadIdx.x * SET_VT < tot ? (size_t)threadIdx.x * SET_VT : tot;
    size_t d1 = threadIdx.x == SET_NT - 1 ? tot : (d0 + SET_VT < tot ? d0 + SET_VT : tot);
    size_t i, j, i1, j1;
    d_split(sa, na, sb, nb, d0, &i, &j);
    d_split(sa, na, sb, nb, d1, &i1, &j1);
    i1 = i1 < i ? i : i1;
    j1 = j1 < j ? j : j1;
    if (i1 - i > SET_VT + 2)
        i1 = i + SET_VT + 2;
    if (j1 - j > SET_VT + 2 - (i1 - i))
        j1 = j + (SET_VT + 2 - (i1 - i));

    /* Serial merge of at most SET_VT + 2 elements into registers. */
    K reg[SET_VT + 2];
    unsigned k = 0;
    while (i < i1 && j < j1) {
        K x = sa[i], y = sb[j];
        if (x < y) {
            if (e.a)
                reg[k++] = x;
            i++;
        } else if (y < x) {
            if (e.b)
                reg[k++] = y;
            j++;
        } else {
            if (e.eq)
                reg[k++] = x;
            i++, j++;
        }
    }
    for (; i < i1; i++)
        if (e.a)
            reg[k++] = sa[i];
    for (; j < j1; j++)
        if (e.b)
            reg[k++] = sb[j];

    unsigned at, tile_total;
    block_scan(scan_tmp).ExclusiveSum(k, at, tile_total);
    /* For sorted input the pieces partition the tile, so tile_total <= tot <= SET_NV + 1.
     * For unsorted input the threads' cuts need not be monotone and pieces may overlap:
     * keep what fits the buffer, the same in both passes, so that counts and writes
     * agree and nothing is written out of bounds. */
    k = at >= SET_NV + 1 ? 0 : (at + k > SET_NV + 1 ? SET_NV + 1 - at : k);
    tile_total = tile_total > SET_NV + 1 ? SET_NV + 1 : tile_total;
    if (!WRITE) {
        if (threadIdx.x == 0)
            tile_count[t] = tile_total;
        return;
    }
    __syncthreads(); /* every thread has finished reading the keys */
    for (unsigned q = 0; q < k; q++)
        keys[at + q] = reg[q];
    __syncthreads();
    const uint64_t total = *d_total; /* clamped to the operation's bound */
    if (total > cap)
        return;
    const size_t base = tile_off[t];
    for (unsigned q = threadIdx.x; q < tile_total && base + q < total; q += SET_NT)
        out[base + q] = keys[q];
}

/* *d_total = min(*d_total, bound). A no-op for sorted input; for unsorted input the
 * tiles' cuts need not be monotone, tiles may overlap and their counts add up to more
 * than the operation can produce: the result is unspecified, but its size stays within
 * tsm_set_bound, as on the CPU, and the write pass stops there. */
static __global__ void clamp_total_kernel(uint64_t *d_total, uint64_t bound) {
    if (*d_total > bound)
        *d_total = bound;
}

/* MERGE_PATH on device arrays (see the top of the file). Synchronises the stream. */
template <typename K>
static tsm_status merge_path_dev(tsm_ctx *ctx, tsm_set_op op, const K *d_a, size_t na, const K *d_b,
                                 size_t nb, K *d_out, size_t cap, uint64_t *d_count) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    const size_t total = na + nb, tiles = (total + SET_NV - 1) / SET_NV;
    const set_emits e = emits_of(op);
    size_t *cut_a = NULL, *cut_b = NULL;
    uint64_t *counts = NULL;
    TSM_CUDA_ALLOC(ctx, cut_a, (tiles + 1) * sizeof *cut_a);
    TSM_CUDA_ALLOC(ctx, cut_b, (tiles + 1) * sizeof *cut_b);
    TSM_CUDA_ALLOC(ctx, counts, (tiles + 1) * sizeof *counts);
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(counts, 0, (tiles + 1) * sizeof *counts, s));
    cut_kernel<<<tsmi_grid(tiles + 1), TSMI_THREADS, 0, s>>>(d_a, na, d_b, nb, tiles + 1, cut_a,
                                                             cut_b);
    TSM_CUDA_LAUNCHED(ctx);
    tile_kernel<K, false>
        <<<(unsigned)tiles, SET_NT, 0, s>>>(e, d_a, d_b, cut_a, cut_b, counts, NULL, NULL, NULL, 0);
    TSM_CUDA_LAUNCHED(ctx);
    /* counts[tiles] = 0, so the exclusive scan's total is the sum of all tiles */
    st = tsmi_scan_dev<uint64_t>(ctx, 0, counts, counts, tiles + 1, tsmi_sum(), (uint64_t)0,
                                 d_count);
    if (st != TSM_OK)
        goto done;
    clamp_total_kernel<<<1, 1, 0, s>>>(d_count, (uint64_t)tsm_set_bound(op, na, nb));
    TSM_CUDA_LAUNCHED(ctx);
    if (d_out) {
        tile_kernel<K, true><<<(unsigned)tiles, SET_NT, 0, s>>>(e, d_a, d_b, cut_a, cut_b, NULL,
                                                                counts, d_count, d_out, cap);
        TSM_CUDA_LAUNCHED(ctx);
    }
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s));
done:
    cudaFree(cut_a);
    cudaFree(cut_b);
    cudaFree(counts);
    return st;
}

/* ---- RANGE_SEARCH ----------------------------------------------------------------------- */

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
static __global__ void flag_kernel(set_emits e, int s_is_a, size_t ns, size_t nl, const uint64_t *C,
                                   const uint64_t *lo, const uint64_t *hi, uint64_t *eS,
                                   uint64_t *eL) {
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
    const set_emits e = emits_of(op);
    const int es = s_is_a ? e.a : e.b, el = s_is_a ? e.b : e.a;
    uint64_t *lo = NULL, *hi = NULL, *C = NULL, *eS = NULL, *eL = NULL, *R = NULL;
    K *lc = NULL;
    const K *lsrc = L;

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

    if (!el) { /* intersect, s - l: the emitted s, in order */
        st = compact_into(ctx, S, eS, ns, d_out, cap, d_count);
        goto done;
    }
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

/* ---- dispatch -------------------------------------------------------------------------- */

static tsm_set_method gpu_method(tsm_set_method m, size_t na, size_t nb) {
    if (m != TSM_SET_AUTO)
        return m;
    size_t lo = na < nb ? na : nb, hi = na < nb ? nb : na;
    return lo > 0 && hi / SET_SEARCH_RATIO >= lo ? TSM_SET_RANGE_SEARCH : TSM_SET_MERGE_PATH;
}

/* One operation on device arrays: empty sides are a copy or nothing; else the method. */
template <typename K>
static tsm_status set_dev(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op, const K *d_a,
                          size_t na, const K *d_b, size_t nb, K *d_out, size_t cap,
                          uint64_t *d_count) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    if (na == 0 || nb == 0) {
        set_emits e = emits_of(op);
        uint64_t n = na == 0 ? (e.b ? nb : 0) : (e.a ? na : 0);
        const K *src = na == 0 ? d_b : d_a;
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(d_count, &n, sizeof n, cudaMemcpyHostToDevice, s));
        if (d_out && n > 0 && n <= cap)
            TSM_CUDA_TRY(ctx,
                         cudaMemcpyAsync(d_out, src, n * sizeof(K), cudaMemcpyDeviceToDevice, s));
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(s)); /* n lives on this stack */
        return TSM_OK;
    }
    if (gpu_method(method, na, nb) == TSM_SET_RANGE_SEARCH)
        return range_search_dev(ctx, op, d_a, na, d_b, nb, d_out, cap, d_count);
    return merge_path_dev(ctx, op, d_a, na, d_b, nb, d_out, cap, d_count);
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
    method = gpu_method(method, na, nb);
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
