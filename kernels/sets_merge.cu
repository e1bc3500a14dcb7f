/* SPDX-License-Identifier: Apache-2.0 */
/* sets_merge.cu - MERGE_PATH of the CUDA backend of sets.h on device arrays: the method
 * AUTO takes unless one side is far smaller and the larger one is not emitted (sets.cu
 * chooses, and pages host arrays through it). The method of the fast GPU set libraries
 * (ModernGPU, Thrust), one pass:
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
 *   Nothing is written to the output when the result does not fit cap (checked on the
 *   device against the device-side count). */
#include "sets_cuda.cuh"
#include "sets_rule.h"
#include "sets_search.cuh"
#include "sets_tile.cuh"

/* Merged elements per thread of a tile of SET_NT threads (sets_tile.cuh), for 32- and
 * 64-bit keys: odd (fewer shared-memory bank conflicts when a thread's results are
 * staged), fewer for wider keys (registers, shared memory); within 64 registers without
 * spilling, and VT + 1 <= 32 (a thread's results are a 32-bit mask): the kernel is bound
 * by instruction issue (ncu on the H100: about 60% of the issue slots busy, as in
 * Thrust's), and more keys per thread share the per-thread search and scan
 * (docs/performance.md, sessions 4 and 5: 31 / 17 beat 23 / 13 and 27 / 15 on every
 * shape; NT 256). Overridable at compile time for tuning runs. */
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

/* ---- the cuts --------------------------------------------------------------------------- */

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

/* ---- the tiles ------------------------------------------------------------------------- */

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

/* ---- entry points (sets_cuda.cuh) ---------------------------------------------------- */

tsm_status tsmi_set_merge_path_dev(tsm_ctx *ctx, tsm_set_op op, const uint32_t *d_a, size_t na,
                                   const uint32_t *d_b, size_t nb, uint32_t *d_out, size_t cap,
                                   uint64_t *d_count) {
    return merge_path_dev(ctx, op, d_a, na, d_b, nb, d_out, cap, d_count);
}

tsm_status tsmi_set_merge_path_dev(tsm_ctx *ctx, tsm_set_op op, const uint64_t *d_a, size_t na,
                                   const uint64_t *d_b, size_t nb, uint64_t *d_out, size_t cap,
                                   uint64_t *d_count) {
    return merge_path_dev(ctx, op, d_a, na, d_b, nb, d_out, cap, d_count);
}
