/* SPDX-License-Identifier: Apache-2.0 */
/* sets.cu - the CUDA backend of sets.h: both methods on the device, and the host side
 * that copies inputs over (in pieces when they do not fit) and results back.
 *
 * Validated on the GPU by the CUDA twins of tests/sets_test.c and tests/scan_test.c
 * (sets_cuda, scan_cuda; tools/scripts/gpu-check runs them).
 *
 * MERGE_PATH (the default unless one side is far smaller and the larger one is not
 * emitted): the method of the fast GPU set libraries (ModernGPU, Thrust), one pass:
 *   1. cut_kernel: four lanes per tile boundary compute the balanced-path cut of the
 *      merged order at diagonal t * NV (the rule of tsmi_set_split in sets.inc:
 *      merge-path search, 4-ary over the lanes, then pairing the copies of a key that
 *      runs across the cut, the four bounds of its run one per lane), so every tile of
 *      NV = NT * VT merged elements has the same work; it also resets the tiles'
 *      look-back states. A run longer than CUT_REACH is left to balance_kernel, which
 *      finds its bounds between the neighbouring cuts (a tile's keys away at most);
 *   2. tile_kernel: a block loads its tile's slices of A and B into shared memory
 *      (coalesced 16-byte vectors of the arrays' own alignment, all of a thread's loads
 *      in flight before the stores; a full tile also the key after each slice); each
 *      thread cuts the tile once, at its own diagonal threadIdx * VT (same rule on the
 *      tile's local runs, 32-bit indices, a branch-free search) and takes the end of its
 *      piece from its neighbour's cut; it runs the operation serially over its piece
 *      (at most VT + 1 steps, fully unrolled, the current keys of A and B in registers,
 *      the results in registers with a bit mask of what is emitted; in a full tile the
 *      keys after the slices stand in for sides that run out, so a step only compares
 *      two keys: merge_sentinel); a block scan of the threads' counts and the tile's offset
 *      from a decoupled look-back over the tiles before (CUB's tile states) give every
 *      result its position; the block stages its results in shared memory at the
 *      alignment of their place in the output and writes them out in 16-byte vectors.
 *      The last tile writes the total. A tile inside one run of a single key (heavy
 *      duplicates: cuts t and t + 1 have the same key after them) skips the loads and
 *      the merge: its result follows from the two slices' lengths (one_key_tile).
 *   Scratch (cuts, tile states) comes from the ctx's grow-only SETS slot (cuda_backend.h): no
 *   allocation per call in the steady state.
 *   Inputs are read once and the result written once when the output surely has room
 *   (cap >= tsm_set_bound). Otherwise (and for a size-only call) a counting pass
 *   (atomicAdd of tile counts) comes first and the writing pass runs only if the total
 *   fits cap. The local-run rule is valid inside a tile because a balanced cut leaves
 *   every piece with paired copies or the tail of a run without partners, and the same
 *   holds for the pieces of a piece.
 *
 * RANGE_SEARCH (seed 004's IntersectParallel / UniteParallel, generalised to the four
 * operations; s is the smaller side, l the other):
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
 *   look-back as MERGE_PATH): it reads s and O(s log l) keys of l, which is why AUTO
 *   takes it when s << l and l is not emitted (measured 4-7x faster than Thrust's
 *   merge at 1:1000). The interleaving cases take many passes and stay behind
 *   MERGE_PATH, which AUTO uses for them.
 * Both write nothing to the output when the result does not fit cap (checked on the
 * device against the device-side count). */
#include "scan.cuh"
#include "sets.h"
#include "sets_rule.h"

#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/block/block_scan.cuh>
#include <stdlib.h>

/* Threads per tile, and merged elements per thread for 32- and 64-bit keys: odd (fewer
 * shared-memory bank conflicts when a thread's results are staged), fewer for wider keys
 * (registers, shared memory); within 64 registers without spilling, and VT + 1 <= 32 (a
 * thread's results are a 32-bit mask): the kernel is bound by instruction issue (ncu on
 * the H100: about 60% of the issue slots busy, as in Thrust's), and more keys per thread
 * share the per-thread search and scan (docs/performance.md, sessions 4 and 5: 31 / 17
 * beat 23 / 13 and 27 / 15 on every shape). Overridable at compile time for tuning
 * runs. */
#ifndef SET_NT
#define SET_NT 256
#endif
#ifndef SET_VT32
#define SET_VT32 31
#endif
#ifndef SET_VT64
#define SET_VT64 17
#endif
#ifndef SET_MINB /* resident tiles per SM asked of the compiler: at most 64 registers */
#define SET_MINB (1024 / SET_NT)
#endif
template <typename K> struct set_tuning {
    enum { VT = sizeof(K) == 4 ? SET_VT32 : SET_VT64, NV = SET_NT * VT };
    static_assert(VT + 1 <= 32, "a thread's results are flagged in a 32-bit mask");
};

/* Size ratio from which AUTO may take RANGE_SEARCH (see gpu_method). */
#define SET_SEARCH_RATIO 32

/* ---- device searches (the rule of sets.inc, by bisection; I: the index type) -------- */

template <typename K, typename I>
static __host__ __device__ I d_lower(const K *x, I lo, I hi, K key) {
    while (lo < hi) {
        I m = lo + (hi - lo) / 2;
        if (x[m] < key)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

template <typename K, typename I>
static __host__ __device__ I d_upper(const K *x, I lo, I hi, K key) {
    while (lo < hi) {
        I m = lo + (hi - lo) / 2;
        if (x[m] <= key)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* The same bounds found by galloping from the end where the answer is expected: the
 * lower bound near hi (the start of a run that ends at a cut), the upper bound near lo
 * (its end after the cut). O(log distance) instead of O(log(hi - lo)): a run's length
 * rather than the tile's or the array's. A run that reaches the far end of the range
 * (all keys equal, a tile inside one long run) is answered by one probe there. With
 * far, one more probe at `reach` from the expected end tells a bound further than that
 * (a long run, left to balance_kernel: *far is set and the result is meaningless) from
 * one within reach, which the gallop then finds. */
template <typename K, typename I>
static __host__ __device__ I d_lower_back(const K *x, I lo, I hi, K key, I reach = ~(I)0,
                                          bool *far = nullptr) {
    if (hi > lo && !(x[lo] < key))
        return lo;
    if (far && hi - lo > reach) { /* one probe says whether the answer is within reach */
        if (!(x[hi - reach] < key)) {
            *far = true;
            return hi;
        }
        lo = hi - reach + 1;
    }
    for (I step = 1; hi > lo; step *= 2) { /* the answer is <= hi */
        I probe = hi - lo > step ? hi - step : lo;
        if (x[probe] < key) {
            lo = probe + 1;
            break;
        }
        hi = probe;
    }
    return d_lower(x, lo, hi, key);
}

template <typename K, typename I>
static __host__ __device__ I d_upper_fwd(const K *x, I lo, I hi, K key, I reach = ~(I)0,
                                         bool *far = nullptr) {
    if (lo < hi && !(key < x[hi - 1]))
        return hi;
    if (far && hi - lo > reach) { /* one probe says whether the answer is within reach */
        if (!(key < x[lo + reach - 1])) {
            *far = true;
            return lo;
        }
        hi = lo + reach - 1;
    }
    for (I step = 1; lo < hi; step *= 2) { /* the answer is >= lo */
        I probe = hi - lo > step ? lo + step - 1 : hi - 1;
        if (key < x[probe]) {
            hi = probe;
            break;
        }
        lo = probe + 1;
    }
    return d_upper(x, lo, hi, key);
}

/* The elements of a among the first d of the merge (a first on ties), on a tile (fewer
 * than 2^LOG keys a side), by LOG halving steps of fixed count and no branch (binary
 * lifting: a[c - 1] <= b[d - c] holds for the c up to the answer); a probe past the
 * range is clamped into it and not taken. */
template <int LOG, typename K>
static __device__ unsigned tile_merge_path(const K *a, unsigned na, const K *b, unsigned nb,
                                           unsigned d) {
    unsigned lo = d > nb ? d - nb : 0;
    const unsigned hi = d < na ? d : na;
    if (hi <= lo)
        return lo;
#pragma unroll
    for (int k = LOG - 1; k >= 0; k--) {
        const unsigned c = lo + (1u << k), m = (c < hi ? c : hi) - 1; /* lo <= m < hi */
        const bool take = (c <= hi) & (a[m] <= b[d - 1 - m]);
        lo = take ? c : lo;
    }
    return lo;
}

/* The key x at a merge-path cut (i, j), the first after it in the merge, when its run
 * crosses the cut (a copy of x just before it in a or b); false otherwise. */
template <typename K, typename I>
static __device__ bool d_run_at(const K *a, I na, const K *b, I nb, I i, I j, K *x) {
    if (i < na && (j >= nb || a[i] <= b[j]))
        *x = a[i];
    else if (j < nb)
        *x = b[j];
    else
        return false;
    return (i > 0 && a[i - 1] == *x) || (j > 0 && b[j - 1] == *x);
}

/* The balanced-path correction of a merge-path cut (i, j) (sets.h, tsmi_set_split; the
 * pairing rule of sets_rule.h). */
template <typename K, typename I>
static __device__ void d_balance(const K *a, I na, const K *b, I nb, I *pi, I *pj) {
    const I i = *pi, j = *pj;
    K x;
    if (!d_run_at(a, na, b, nb, i, j, &x))
        return;
    tsmi_set_pair_run(d_lower_back(a, (I)0, i, x), d_upper_fwd(a, i, na, x),
                      d_lower_back(b, (I)0, j, x), d_upper_fwd(b, j, nb, x), pi, pj);
}

/* ---- MERGE_PATH ------------------------------------------------------------------------- */

typedef unsigned long long set_count; /* counts and offsets on the device */
typedef cub::ScanTileState<set_count> set_tile_state;

/* The elements of a among the first d of the merge, a first on ties, by the four lanes
 * of a group (lane & ~3 .. + 3, all with the same arguments): each round lanes 1-3
 * probe the quarter points of the range and a ballot keeps the quarter that holds the
 * answer, so the dependent loads are log4 of the range instead of log2. */
template <typename K>
static __device__ size_t d_merge_path4(const K *a, size_t na, const K *b, size_t nb, size_t d,
                                       unsigned lane) {
    const unsigned r = lane & 3, group = 0xfu << (lane & ~3u);
    size_t lo = d > nb ? d - nb : 0, hi = d < na ? d : na;
    while (lo < hi) { /* the answer is in [lo, hi]; a[m] <= b[d - 1 - m] for m below it */
        const size_t n = hi - lo, m = lo + r * n / 4;
        const bool below = r != 0 && a[m] <= b[d - 1 - m];
        const unsigned k = __popc(__ballot_sync(group, below)); /* lanes 1..k */
        const size_t lo1 = k ? lo + k * n / 4 + 1 : lo;
        hi = k < 3 ? lo + (k + 1) * n / 4 : hi;
        lo = lo1;
    }
    return lo;
}

/* What the first pass over the cuts leaves for the second (cut_kernel, balance_kernel). */
enum { CUT_END, CUT_KEY, CUT_LONG }; /* no key after the cut; a key; a long run crosses it */

/* A bound of a run further than this from the cut is left to balance_kernel. */
#define CUT_REACH 64

/* Lanes 4t .. 4t + 3 of a warp, for t < ncuts = tiles + 1: the cut at diagonal
 * min(t * NV, na + nb) (tsmi_set_split's rule), with the merge-path search shared by the four lanes
 * (d_merge_path4) and the four searches for the bounds of a run that crosses it done
 * one per lane, into cut_a, cut_b. The merge-path cut also goes to raw_a, raw_b and the
 * key after it in the merge to key. A bound more than CUT_REACH away (a long run: one
 * thread galloping took about 45 dependent loads in a run of millions of equal keys)
 * makes the cut a CUT_LONG, which balance_kernel finishes. Every thread also resets the
 * look-back state of its index (CUB's InitializeStatus). */
template <typename K>
static __global__ void cut_kernel(const K *__restrict__ a, size_t na, const K *__restrict__ b,
                                  size_t nb, size_t ncuts, size_t *cut_a, size_t *cut_b,
                                  size_t *raw_a, size_t *raw_b, K *key, unsigned char *kind,
                                  set_tile_state tiles) {
    const size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x, total = na + nb;
    const size_t t = g / 4 < ncuts ? g / 4 : ncuts - 1; /* all lanes take part in the shuffles */
    const unsigned lane = threadIdx.x & 31, r = lane & 3, first = lane & ~3u;
    tiles.InitializeStatus((int)(ncuts - 1));
    const size_t d = t * (size_t)set_tuning<K>::NV < total ? t * (size_t)set_tuning<K>::NV : total;
    size_t i = d_merge_path4(a, na, b, nb, d, lane), j = d - i, bound = 0;
    const size_t i0 = i, j0 = j, reach = CUT_REACH;
    K x = 0;
    bool far = false;
    const bool run = d_run_at(a, na, b, nb, i, j, &x);
    if (run)
        bound = r == 0   ? d_lower_back(a, (size_t)0, i, x, reach, &far)
                : r == 1 ? d_upper_fwd(a, i, na, x, reach, &far)
                : r == 2 ? d_lower_back(b, (size_t)0, j, x, reach, &far)
                         : d_upper_fwd(b, j, nb, x, reach, &far);
    const size_t la = __shfl_sync(~0u, bound, first), ua = __shfl_sync(~0u, bound, first + 1),
                 lb = __shfl_sync(~0u, bound, first + 2), ub = __shfl_sync(~0u, bound, first + 3);
    const bool is_long = (__ballot_sync(~0u, far) >> first) & 0xfu;
    if (r != 0 || g / 4 >= ncuts)
        return;
    if (run && !is_long)
        tsmi_set_pair_run(la, ua, lb, ub, &i, &j);
    raw_a[t] = i0, raw_b[t] = j0, key[t] = x;
    kind[t] = is_long ? CUT_LONG : (i0 < na || j0 < nb) ? CUT_KEY : CUT_END;
    if (!is_long)
        cut_a[t] = i, cut_b[t] = j;
}

/* The first t in [lo, hi) whose cut key is >= x (upper: > x), hi if none; the keys are
 * non-decreasing and only the last cut can be a CUT_END (after every key). */
template <typename K>
static __device__ size_t cut_search(const K *key, const unsigned char *kind, size_t lo, size_t hi,
                                    K x, bool upper) {
    while (lo < hi) {
        const size_t m = lo + (hi - lo) / 2;
        const bool below = kind[m] != CUT_END && (upper ? !(x < key[m]) : key[m] < x);
        lo = below ? m + 1 : lo;
        hi = below ? hi : m;
    }
    return lo;
}

/* Lanes 4t .. 4t + 3 for t < ncuts: the final cut t (tsmi_set_split's rule) of a CUT_LONG, moved
 * along its run of key x (tsmi_set_pair_run). The run's bounds lie between the merge-path cuts
 * next to it: its start in a between the last cut with a smaller key (t0 - 1) and the
 * first with key x (t0), its end between the last with key x and the first with a
 * larger key (t1), since a merge-path prefix holds every element below the key that
 * follows it. So each bound is a search over at most a tile's keys, one per lane,
 * whatever the run's length. */
template <typename K>
static __global__ void balance_kernel(const K *__restrict__ a, size_t na, const K *__restrict__ b,
                                      size_t nb, size_t ncuts, const size_t *raw_a,
                                      const size_t *raw_b, const K *key, const unsigned char *kind,
                                      size_t *cut_a, size_t *cut_b) {
    const size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const size_t t = g / 4 < ncuts ? g / 4 : ncuts - 1;
    const unsigned lane = threadIdx.x & 31, r = lane & 3, first = lane & ~3u;
    const bool is_long = kind[t] == CUT_LONG;
    size_t bound = 0;
    if (is_long) {
        const K x = key[t];
        const size_t t0 = cut_search(key, kind, 0, t, x, false),
                     t1 = cut_search(key, kind, t, ncuts, x, true); /* < ncuts: the end cut */
        bound = r == 0   ? d_lower(a, t0 ? raw_a[t0 - 1] : 0, raw_a[t0], x)
                : r == 1 ? d_upper(a, raw_a[t1 - 1], raw_a[t1], x)
                : r == 2 ? d_lower(b, t0 ? raw_b[t0 - 1] : 0, raw_b[t0], x)
                         : d_upper(b, raw_b[t1 - 1], raw_b[t1], x);
    }
    const size_t la = __shfl_sync(~0u, bound, first), ua = __shfl_sync(~0u, bound, first + 1),
                 lb = __shfl_sync(~0u, bound, first + 2), ub = __shfl_sync(~0u, bound, first + 3);
    if (r != 0 || g / 4 >= ncuts || !is_long)
        return;
    size_t i = raw_a[t], j = raw_b[t];
    tsmi_set_pair_run(la, ua, lb, ub, &i, &j);
    cut_a[t] = i, cut_b[t] = j;
}

/* What a tiled kernel does with a tile's results. */
enum set_pass {
    SET_COUNT, /* atomicAdd the tile's count to *d_count (zeroed before) */
    SET_WRITE, /* look-back for the tile's offset, write the results; the last tile
                  writes min(total, bound) to *d_count */
};

/* Shared memory of put_tile. */
struct set_put_smem {
    typedef cub::BlockScan<unsigned, SET_NT> block_scan;
    typedef cub::TilePrefixCallbackOp<set_count, tsmi_sum, set_tile_state> look_back;
    typename block_scan::TempStorage scan;
    typename look_back::TempStorage prefix;
    set_count base;
};

/* ---- 16-byte vectors between global and shared memory ---------------------------------- */

/* Keys per 16-byte vector. */
template <typename K> struct set_vec {
    enum { W = 16 / sizeof(K) };
};

/* Misalignment of x in keys: x - off is 16-byte aligned (K* is aligned to sizeof(K)). */
template <typename K> static __device__ unsigned misalign(const K *x) {
    return (unsigned)(((uintptr_t)x & 15) / sizeof(K));
}

/* A slice x[s0, s0 + len) of an array of n keys as 16-byte vectors of x's aligned grid
 * (grid key e is x[e - off], off = misalign(x)): vector u of the slice is grid vector
 * v0 + u, and x[s0] is key lead of vector 0. Vectors [full_lo, full_hi) lie wholly in
 * x[0, n) and are read with one 16-byte load; the others (the array's first and last,
 * when it is misaligned or its end is) key by key, so nothing outside x is read. */
template <typename K> struct vec_slice {
    const K *x;
    const uint4 *vp; /* grid vector v0 */
    size_t n, v0;
    unsigned off, lead, nv, full_lo, full_hi;
};

template <typename K>
static __device__ vec_slice<K> slice_of(const K *x, size_t n, size_t s0, unsigned len) {
    enum { W = set_vec<K>::W };
    vec_slice<K> sl;
    sl.x = x, sl.n = n, sl.off = misalign(x);
    sl.v0 = (s0 + sl.off) / W, sl.lead = (unsigned)((s0 + sl.off) % W);
    sl.vp = reinterpret_cast<const uint4 *>(x - sl.off) + sl.v0;
    sl.nv = len ? (sl.lead + len + W - 1) / W : 0;
    const size_t head = sl.off ? 1 : 0, end = (n + sl.off) / W; /* full grid vectors */
    sl.full_lo = sl.v0 < head ? (unsigned)(head - sl.v0) : 0;
    sl.full_hi = end <= sl.v0 ? 0 : end - sl.v0 < sl.nv ? (unsigned)(end - sl.v0) : sl.nv;
    return sl;
}

/* Vector u of the slice (u < nv) as 16 bytes; keys outside x[0, n) are zero. */
template <typename K> static __device__ uint4 load_vec(const vec_slice<K> &sl, unsigned u) {
    enum { W = set_vec<K>::W };
    if (u >= sl.full_lo && u < sl.full_hi)
        return __ldg(sl.vp + u);
    union {
        uint4 v;
        K k[W];
    } r;
    r.v = make_uint4(0, 0, 0, 0);
    const size_t e0 = (sl.v0 + u) * W;
#pragma unroll
    for (int q = 0; q < W; q++)
        if (e0 + q >= sl.off && e0 + q < sl.n + sl.off)
            r.k[q] = sl.x[e0 + q - sl.off];
    return r.v;
}

/* Writes keys [lo, hi) of a staged run src (16-byte aligned shared memory) to out, whose
 * element 0 has the alignment of src's (out - shift is 16-byte aligned, shift < W):
 * vector u of src with one 16-byte store when all its keys are in [lo, hi), else key
 * by key. */
template <typename K>
static __device__ void write_vec(K *out, unsigned u, unsigned lo, unsigned hi, const K *src) {
    enum { W = set_vec<K>::W };
    const unsigned e0 = u * W;
    if (e0 >= lo && e0 + W <= hi) {
        reinterpret_cast<uint4 *>(out)[u] = reinterpret_cast<const uint4 *>(src)[u];
        return;
    }
#pragma unroll
    for (int q = 0; q < W; q++)
        if (e0 + q >= lo && e0 + q < hi)
            out[e0 + q] = src[e0 + q];
}

/* The end of every tiled kernel (block t of the grid): each thread holds ITEMS results
 * in res, those with their bit set in mask are emitted, in the order of the threads
 * then of the items. A block scan of the threads' counts gives each result its place in
 * the tile. SET_COUNT adds the tile's count to *d_count. SET_WRITE: the tile's offset
 * comes from the tiles before (CUB's decoupled look-back by the first warp: it waits
 * only for the aggregates of its predecessors); the results are staged in stage (16-byte
 * aligned shared memory that no thread reads any more, room for NT * ITEMS + W keys) at
 * the alignment they have in out, so that the block writes them out in 16-byte vectors
 * (the partial ones at the ends key by key), positions >= cap never; the last tile
 * writes min(total, bound) to *d_count. (A block scan seeded by the look-back, one
 * barrier fewer, measured slower on the H100.) */
template <typename K, int ITEMS, set_pass PASS>
static __device__ void put_tile(const K (&res)[ITEMS], unsigned mask, uint4 *stage,
                                set_put_smem &sm, set_tile_state tiles, set_count *d_count,
                                set_count bound, K *__restrict__ out, size_t cap) {
    enum { W = set_vec<K>::W };
    const unsigned tid = threadIdx.x;
    const int t = blockIdx.x;
    unsigned at, total;
    set_put_smem::block_scan(sm.scan).ExclusiveSum((unsigned)__popc(mask), at, total);
    if (PASS == SET_COUNT) {
        if (tid == 0)
            atomicAdd(d_count, (set_count)total);
        return;
    }
    if (t == 0) {
        if (tid == 0) {
            tiles.SetInclusive(0, total);
            sm.base = 0;
        }
    } else if (tid < 32) {
        set_put_smem::look_back prefix(tiles, sm.prefix, tsmi_sum(), t);
        set_count before = prefix((set_count)total);
        if (tid == 0)
            sm.base = before;
    }
    __syncthreads(); /* also: every thread has finished reading what stage held */
    const set_count base = sm.base;
    if (tid == 0 && t == (int)gridDim.x - 1)
        *d_count = base + total < bound ? base + total : bound;
    /* Staged at the alignment of out + base: stage key k goes to out[base - shift + k]. */
    const unsigned shift = (unsigned)((base + misalign(out)) % W);
    K *keys = reinterpret_cast<K *>(stage);
    K *put = keys + shift + at;
#pragma unroll
    for (int q = 0; q < ITEMS; q++)
        if (mask >> q & 1)
            *put++ = res[q];
    __syncthreads();
    if (base >= cap)
        return;
    const unsigned room = cap - base < total ? (unsigned)(cap - base) : total;
    const unsigned nv = (shift + room + W - 1) / W;
    K *const dst = out + base - shift; /* 16-byte aligned; written from dst[shift] on */
    for (unsigned u = tid; u < nv; u += SET_NT)
        write_vec(dst, u, shift, shift + room, keys);
}

/* Shared-memory sizes of tile_kernel, in 16-byte vectors: LOADV for a tile's inputs,
 * loaded by vectors of their own alignment (each slice may take two vectors more than
 * its keys fill; at most NV + 1 keys for sorted input, where cuts are d or d - 1, plus
 * the two sentinels of merge_sentinel), CAPK the keys that always fit (a tile of
 * unsorted input is clipped to it), ROOM_V the whole buffer: the inputs and the VT + 1
 * keys that merge_sentinel may read past them, or the staged results (NT * (VT + 1) +
 * W keys), plus one vector. LOG: bits of a tile-local index (tile_merge_path). */
template <typename K> struct set_tile_room {
    enum {
        W = set_vec<K>::W,
        VT = set_tuning<K>::VT,
        VQ = (VT * SET_NT + 1 + 4 * W + SET_NT * W - 1) / (SET_NT * W), /* vectors per thread */
        LOADV = SET_NT * VQ,
        CAPK = (LOADV - 4) * W,
        READV = LOADV + (VT + W) / W,
        STAGEV = (SET_NT * (VT + 1) + W + W - 1) / W,
        ROOM_V = (READV > STAGEV ? READV : STAGEV) + 1,
        LOG = CAPK < 4096    ? 12
              : CAPK < 8192  ? 13
              : CAPK < 16384 ? 14
                             : 15,
    };
    static_assert(CAPK < 32768, "LOG covers a tile's keys");
};

/* Reads keys of shared memory by their 32-bit shared-memory byte addresses (ld.shared:
 * the address needs no conversion and no register for the buffer's base). */
template <typename K> static __device__ K lds_key(unsigned at) {
    if (sizeof(K) == 4) {
        unsigned v;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(at));
        return (K)v;
    }
    unsigned long long v;
    asm volatile("ld.shared.u64 %0, [%1];" : "=l"(v) : "r"(at));
    return (K)v;
}

/* The operation OP over one thread's piece of a tile, from sa + i and sb + j to
 * sa + i1 and sb + j1: each step takes one key of A, one of B, or a pair, and emits at
 * most one (res[q], with bit q of the returned mask); a piece has at most VT + 1
 * elements. The current keys of A and B stay in registers, and a step reads the next
 * key of the side(s) it took (sa[i1] and sb[j1] lie in the buffer: they may be any key,
 * never used). Any tile; merge_sentinel is the faster form for full ones. */
template <typename K, int OP, int VT>
static __device__ unsigned merge_checked(const K *pa, const K *pb, unsigned ra, unsigned rb,
                                         K (&res)[VT + 1]) {
    constexpr tsmi_set_emits e = tsmi_set_emits_of((tsm_set_op)OP);
    unsigned mask = 0;
    K x = *pa, y = *pb;
#pragma unroll
    for (int q = 0; q < VT + 1; q++) {
        const bool ha = ra != 0, hb = rb != 0, lt = x < y, gt = y < x;
        const bool ta = ha && (!hb || lt), tb = hb && (!ha || gt), eq = ha && hb && !lt && !gt;
        const bool emit = (ta && e.a) || (tb && e.b) || (eq && e.eq);
        res[q] = tb ? y : x;
        mask |= (unsigned)emit << q;
        if (q < VT) {
            if (ta || eq)
                x = *++pa, ra--;
            if (tb || eq)
                y = *++pb, rb--;
        }
    }
    return mask;
}

/* merge_checked on a piece of a full tile (at least VT - 1 elements) whose sides are
 * each followed in the buffer by the next key of their array (the tile's sentinels).
 * For sorted input cut by balanced paths, when one side of a piece runs out, the key
 * after it is larger than every key left on the other side (a balanced cut keeps the
 * copies of a key that runs across it paired, or all of the shorter run before it):
 * so a step only compares the current keys, as if neither had run out. Its first VT / 2
 * steps lie surely in the piece; a later one counts only while the keys taken so far
 * are fewer than the piece's: oa + ob < lim, with oa and ob the byte offsets of the
 * current keys in buf and lim the sum of the piece's ends. It may read up to VT keys
 * past a side's start (never used); for unsorted input the result is unspecified. */
template <typename K, int OP, int VT>
static __device__ unsigned merge_sentinel(const K *buf, unsigned oa, unsigned ob, unsigned lim,
                                          K (&res)[VT + 1]) {
    constexpr tsmi_set_emits e = tsmi_set_emits_of((tsm_set_op)OP);
    const unsigned base = (unsigned)__cvta_generic_to_shared(buf);
    oa += base, ob += base, lim += 2 * base; /* shared-memory addresses from here on */
    unsigned mask = 0;
    K x = lds_key<K>(oa), y = lds_key<K>(ob);
#pragma unroll
    for (int q = 0; q < VT + 1; q++) {
        const bool lt = x < y, gt = y < x;
        /* e's row written out per operation: nvcc does not fold the general form
         * (lt && e.a) || (gt && e.b) || (!lt && !gt && e.eq) to true for union */
        bool emit = OP == TSM_SET_INTERSECT    ? !lt && !gt
                    : OP == TSM_SET_UNION      ? true
                    : OP == TSM_SET_DIFFERENCE ? lt
                                               : lt || gt;
        if (q >= VT / 2)
            emit = emit && oa + ob < lim;
        res[q] = e.b && gt ? y : x;
        if (emit)
            mask |= 1u << q;
        if (q < VT) {
            if (!gt) {
                oa += sizeof(K);
                x = lds_key<K>(oa);
            }
            if (!lt) {
                ob += sizeof(K);
                y = lds_key<K>(ob);
            }
        }
    }
    return mask;
}

/* Whether tile t lies inside one run of a single key (heavy duplicates): its cuts have
 * the same key after them. Every key of the tile is at least the key after cut t (a
 * balanced cut moves only along the run of that key) and at most the key after cut
 * t + 1 (a merge-path prefix holds nothing above the key that follows it), so then all
 * of its keys are that one key, and its result follows from the counts alone. */
template <typename K>
static __device__ bool one_key_tile(const K *key, const unsigned char *kind, int t) {
    return kind[t] != CUT_END && kind[t + 1] != CUT_END && key[t] == key[t + 1];
}

/* The results of a tile of na copies of x in A and nb in B (one_key_tile): the merge
 * pairs min(na, nb) copies and leaves the rest of the longer side alone. Spread over
 * the threads VT each (odd: staged without bank conflicts), the last thread also taking
 * the one a tile of NV + 1 keys may have over; a larger count (unsorted input only) is
 * cut there, the same in both passes. */
template <typename K, int OP, int VT>
static __device__ unsigned one_key_results(K x, unsigned na, unsigned nb, K (&res)[VT + 1]) {
    constexpr tsmi_set_emits e = tsmi_set_emits_of((tsm_set_op)OP);
    const unsigned n = tsmi_set_copies(e, na, nb);
    const unsigned from = threadIdx.x * VT, most = threadIdx.x == SET_NT - 1 ? VT + 1 : VT;
    const unsigned mine = n <= from ? 0 : n - from < most ? n - from : most;
#pragma unroll
    for (int q = 0; q < VT + 1; q++)
        res[q] = x;
    return mine >= 32 ? ~0u : (1u << mine) - 1;
}

/* Block t: tile t, between cuts t and t + 1, of A (na keys) and B (nb); OP is the
 * operation (compile-time, so the merge step has no run-time flags). The tile's slices
 * of A and B are loaded into shared memory in 16-byte vectors (set_tile_room), then its
 * results are staged there (put_tile). A full tile (NV - 1 to NV + 1 keys) whose sides
 * both have a next key in their arrays loads those keys too, after its slices, and
 * takes merge_sentinel; the others (the last tiles, unsorted input) merge_checked. For
 * unsorted input the result is unspecified, but both passes compute the same counts and
 * nothing is read or written out of bounds. cut_key, cut_kind: the key after each
 * merge-path cut and its kind (cut_kernel), for one_key_tile. gate (SET_WRITE, may be
 * NULL): the counting pass's total; the tile writes nothing when min(*gate, bound) > cap. */
template <typename K, int OP, set_pass PASS>
static __global__ void __launch_bounds__(SET_NT, SET_MINB)
    tile_kernel(const K *__restrict__ a, size_t na_all, const K *__restrict__ b, size_t nb_all,
                const size_t *__restrict__ cut_a, const size_t *__restrict__ cut_b,
                const K *__restrict__ cut_key, const unsigned char *__restrict__ cut_kind,
                set_tile_state tiles, set_count *d_count, const set_count *gate, set_count bound,
                K *__restrict__ out, size_t cap) {
    typedef set_tile_room<K> room;
    enum { VT = set_tuning<K>::VT, NV = set_tuning<K>::NV, W = room::W, VQ = room::VQ };
    enum { CAPK = room::CAPK };
    __shared__ uint4 keys_v[room::ROOM_V];
    __shared__ unsigned cut_ij[SET_NT + 1]; /* a thread's cut: i << 16 | j */
    __shared__ set_put_smem put_smem;
    static_assert(room::ROOM_V * W < 65536, "a tile's cut is packed in 16 + 16 bits");
    K *const keys = reinterpret_cast<K *>(keys_v);
    const unsigned tid = threadIdx.x;
    const int t = blockIdx.x;
    if (PASS == SET_WRITE && gate && (*gate < bound ? *gate : bound) > cap)
        return; /* every block leaves: nobody waits on a look-back */

    /* The tile's slices, clipped to CAPK keys (and the sentinels of a full tile), in
     * vectors of their arrays' aligned grids: A's nva vectors, then B's nvb; x[s] is
     * grid key s + misalign(x). */
    const size_t a0 = cut_a[t], b0 = cut_b[t];
    size_t a1 = cut_a[t + 1], b1 = cut_b[t + 1];
    a1 = a1 < a0 ? a0 : a1;
    b1 = b1 < b0 ? b0 : b1;
    const unsigned na = (unsigned)(a1 - a0 < CAPK ? a1 - a0 : CAPK);
    const unsigned nb = (unsigned)(b1 - b0 < CAPK - na ? b1 - b0 : CAPK - na);
    const unsigned tot = na + nb;
    if (one_key_tile(cut_key, cut_kind, t)) {
        K res[VT + 1];
        const unsigned mask = one_key_results<K, OP, VT>(cut_key[t], na, nb, res);
        put_tile<K, VT + 1, PASS>(res, mask, keys_v, put_smem, tiles, d_count, bound, out, cap);
        return;
    }
    const bool full = a1 < na_all && b1 < nb_all && tot + 1 >= NV && tot <= NV + 1;
    const vec_slice<K> sla = slice_of(a, na_all, a0, na + full),
                       slb = slice_of(b, nb_all, b0, nb + full);
    const unsigned nva = sla.nv, nvb = slb.nv;
    {
        uint4 v[VQ];
#pragma unroll
        for (int q = 0; q < VQ; q++) {
            const unsigned u = tid + q * SET_NT;
            if (u < nva + nvb)
                v[q] = u < nva ? load_vec(sla, u) : load_vec(slb, u - nva);
        }
#pragma unroll
        for (int q = 0; q < VQ; q++) {
            const unsigned u = tid + q * SET_NT;
            if (u < nva + nvb)
                keys_v[u] = v[q];
        }
    }
    __syncthreads();

    /* This thread's piece: from its cut at diagonal tid * VT to the next thread's. */
    const unsigned oa0 = sla.lead, ob0 = nva * W + slb.lead; /* sides' starts in keys */
    const K *sa = keys + oa0, *sb = keys + ob0;
    unsigned i, j;
    {
        unsigned d = tid * VT < tot ? tid * VT : tot;
        i = tile_merge_path<room::LOG>(sa, na, sb, nb, d), j = d - i;
        d_balance(sa, na, sb, nb, &i, &j);
        cut_ij[tid] = i << 16 | j;
        if (tid == 0)
            cut_ij[SET_NT] = na << 16 | nb;
    }
    __syncthreads();
    const unsigned i1 = cut_ij[tid + 1] >> 16, j1 = cut_ij[tid + 1] & 0xffff;

    K res[VT + 1];
    unsigned mask;
    if (full)
        mask = merge_sentinel<K, OP, VT>(keys, (oa0 + i) * (unsigned)sizeof(K),
                                         (ob0 + j) * (unsigned)sizeof(K),
                                         (oa0 + i1 + ob0 + j1) * (unsigned)sizeof(K), res);
    else
        mask =
            merge_checked<K, OP, VT>(sa + i, sb + j, i1 > i ? i1 - i : 0, j1 > j ? j1 - j : 0, res);
    put_tile<K, VT + 1, PASS>(res, mask, keys_v, put_smem, tiles, d_count, bound, out, cap);
}

/* *d_total = min(*d_total, bound). A no-op for sorted input; for unsorted input the
 * tiles' cuts need not be monotone, tiles may overlap and their counts add up to more
 * than the operation can produce: the result is unspecified, but its size stays within
 * tsm_set_bound, as on the CPU. */
static __global__ void clamp_total_kernel(set_count *d_total, set_count bound) {
    if (*d_total > bound)
        *d_total = bound;
}

/* Scratch of a tiled method from the ctx's grow-only SETS slot (no allocation in the
 * steady state): `extra` bytes at *extra_p (256-aligned), then the look-back states of
 * `tiles` tiles in *state (reset by the method's first kernel). */
static tsm_status tile_scratch(tsm_ctx *ctx, size_t tiles, size_t extra, void **extra_p,
                               set_tile_state *state) {
    tsm_status st = TSM_OK;
    size_t state_bytes = 0;
    char *p = NULL;
    extra = (extra + 255) & ~(size_t)255;
    TSM_CUDA_TRY(ctx, set_tile_state::AllocationSize((int)tiles, state_bytes));
    st = tsmi_scratch(ctx, TSMI_SCRATCH_SETS, extra + state_bytes, (void **)&p);
    if (st != TSM_OK)
        return st;
    TSM_CUDA_TRY(ctx, state->Init((int)tiles, p + extra, state_bytes));
    *extra_p = p;
done:
    return st;
}

/* The passes of a tiled method after its first kernel: when the result surely fits
 * (d_out and cap >= bound) one writing pass; otherwise a counting pass, then (d_out)
 * a writing pass gated by the count. launch(pass, gate) launches the method's kernel.
 * Does not wait for them (sets.h: no host round trip on device arrays; a fault shows
 * at the caller's next synchronisation, set_host's read of the count). */
template <typename Launch>
static tsm_status tile_passes(tsm_ctx *ctx, void *d_out, size_t cap, set_count bound,
                              set_count *count, Launch launch) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    const int one_pass = d_out && cap >= bound;
    if (!one_pass) {
        TSM_CUDA_TRY(ctx, cudaMemsetAsync(count, 0, sizeof *count, s));
        launch(SET_COUNT, (const set_count *)NULL);
        TSM_CUDA_LAUNCHED(ctx);
        clamp_total_kernel<<<1, 1, 0, s>>>(count, bound);
        TSM_CUDA_LAUNCHED(ctx);
    }
    if (d_out) {
        launch(SET_WRITE, one_pass ? (const set_count *)NULL : count);
        TSM_CUDA_LAUNCHED(ctx);
    }
done:
    return st;
}

/* MERGE_PATH on device arrays for the operation OP (see the top of the file). Scratch:
 * 16 bytes per cut and 16 per tile state, about 9 bytes per 1000 merged keys. */
template <typename K, int OP>
static tsm_status merge_path_op(tsm_ctx *ctx, const K *d_a, size_t na, const K *d_b, size_t nb,
                                K *d_out, size_t cap, uint64_t *d_count) {
    tsm_status st = TSM_OK;
    cudaStream_t s = tsmi_stream(ctx);
    const size_t total = na + nb, tiles = (total + set_tuning<K>::NV - 1) / set_tuning<K>::NV;
    const set_count bound = tsm_set_bound((tsm_set_op)OP, na, nb);
    set_count *count = (set_count *)d_count;
    set_tile_state state;
    void *cuts = NULL;
    /* the final cuts, the first pass's cuts, their keys and kinds */
    const size_t nc = tiles + 1;
    st = tile_scratch(ctx, tiles, 4 * nc * sizeof(size_t) + nc * (sizeof(K) + 1), &cuts, &state);
    if (st != TSM_OK)
        return st;
    {
        size_t *cut_a = (size_t *)cuts, *cut_b = cut_a + nc, *raw_a = cut_b + nc,
               *raw_b = raw_a + nc;
        K *key = (K *)(raw_b + nc);
        unsigned char *kind = (unsigned char *)(key + nc);
        const unsigned blocks = tsmi_blocks(4 * nc, TSMI_THREADS);
        cut_kernel<<<blocks, TSMI_THREADS, 0, s>>>(d_a, na, d_b, nb, nc, cut_a, cut_b, raw_a, raw_b,
                                                   key, kind, state);
        TSM_CUDA_LAUNCHED(ctx);
        balance_kernel<<<blocks, TSMI_THREADS, 0, s>>>(d_a, na, d_b, nb, nc, raw_a, raw_b, key,
                                                       kind, cut_a, cut_b);
        TSM_CUDA_LAUNCHED(ctx);
        st = tile_passes(ctx, d_out, cap, bound, count, [&](set_pass pass, const set_count *gate) {
            if (pass == SET_COUNT)
                tile_kernel<K, OP, SET_COUNT><<<(unsigned)tiles, SET_NT, 0, s>>>(
                    d_a, na, d_b, nb, cut_a, cut_b, key, kind, state, count, NULL, bound, NULL, 0);
            else
                tile_kernel<K, OP, SET_WRITE>
                    <<<(unsigned)tiles, SET_NT, 0, s>>>(d_a, na, d_b, nb, cut_a, cut_b, key, kind,
                                                        state, count, gate, bound, d_out, cap);
        });
    }
done:
    return st;
}

/* MERGE_PATH: the operation as a template argument. */
template <typename K>
static tsm_status merge_path_dev(tsm_ctx *ctx, tsm_set_op op, const K *d_a, size_t na, const K *d_b,
                                 size_t nb, K *d_out, size_t cap, uint64_t *d_count) {
    switch (op) {
    case TSM_SET_INTERSECT:
        return merge_path_op<K, TSM_SET_INTERSECT>(ctx, d_a, na, d_b, nb, d_out, cap, d_count);
    case TSM_SET_UNION:
        return merge_path_op<K, TSM_SET_UNION>(ctx, d_a, na, d_b, nb, d_out, cap, d_count);
    case TSM_SET_DIFFERENCE:
        return merge_path_op<K, TSM_SET_DIFFERENCE>(ctx, d_a, na, d_b, nb, d_out, cap, d_count);
    case TSM_SET_SYMDIFF: break;
    }
    return merge_path_op<K, TSM_SET_SYMDIFF>(ctx, d_a, na, d_b, nb, d_out, cap, d_count);
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

/* ---- dispatch -------------------------------------------------------------------------- */

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
