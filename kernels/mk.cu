/* SPDX-License-Identifier: Apache-2.0 */
/* mk.cu - exact motifs by MK on the GPU: the CUDA backend of mk.h.
 *
 * Seed 000 section 4.3 (Algorithm 2 GPUMotifDiscovery with Algorithms 4-9) with the
 * termination rule of DESIGN 4.3, the same contract as the CPU backend (mk.c):
 *   references   drawn on the host exactly as the CPU draws them (tsmi_mk_draw_refs)
 *   D            R x N true distances (Algorithm 4, formula (11)): mk_distances, one
 *                thread per column j, vectorised across columns
 *   SD           the standard deviation of each row (Algorithm 5): mk_row_sd, a block
 *                reduction per row; the host orders the references by it (I_SD,
 *                tsmi_mk_order_refs), Z = the one with the largest SD
 *   I_S          the finite subsequences sorted by (D(Z, j), j): CUB DeviceRadixSort
 *                (SortPairs, stable, so ties keep index order); each search keeps the
 *                unmasked ones (DeviceSelect::If)
 *   bsf          from D (Algorithm 6): mk_prepare, a block reduction with the tie rule,
 *                which also writes P, the float copy of D permuted into the I_S order,
 *                one record of R floats (padded to a multiple of 4, Z first) per
 *                position, so that one float4 load brings four references' values
 *   offset loop  (Algorithms 7-9): mk_batch runs a batch of offsets [o0, o1) per
 *                launch; every thread owns one position k of I_S and tests the pairs
 *                (I_S[k], I_S[k + o]) against the lower bounds |D(r, a) - D(r, b)| of
 *                all references, queues the pairs that survive every bound (the bitmap
 *                B of formula (13), one warp ballot per offset) and computes their
 *                exact distances in double, one warp per pair with coalesced loads and
 *                early abandoning (an addition to Algorithm 9: a pair whose partial sum
 *                of squared z-normalised differences already exceeds (bsf + margin)^2
 *                cannot be the motif; see mk_dot_terms).
 *   termination  DESIGN 4.3: the ordering reference's gap D(Z, I_S[k + o]) - D(Z, I_S[k])
 *                grows with o for a fixed k, so a k whose gap exceeds bsf + margin is
 *                out for good; a warp stops when all its k are out, a tile (block) that
 *                has no k left is dropped from the live tile list (DeviceSelect::
 *                Flagged), and the search ends when the list is empty, i.e. at the first
 *                offset where the ordering bound fails for every k. The other
 *                references only prune pairs.
 * Top-k masks the members of each pair found and searches again (tsmi_mk_topk, shared
 * with the CPU); the mask lives on the device too.
 *
 * Exactness. Every distance is sqrt(tsm_d2_pair) of a double dot product; the float
 * bounds on P and the rounding of every distance are covered by tsmi_mk_margin, as on
 * the CPU (mk.c explains the budget), so the pair that comes first in the order
 * (computed d, a, b) is never pruned and the answer is the minimum over all pairs.
 * Every dot product here has one summation order (mk_warp_dot: 32 lane sums with fma,
 * then a fixed tree), which mk_thread_dot reproduces in one thread, and one finishing
 * function (mk_finish, not inlined), so a pair gets the same bits from D and from the
 * offset loop. bsf tightens per warp inside a batch and globally between batches (the
 * tile bests are merged by mk_merge with the tie rule); nothing depends on timing, so
 * the answer and the counters are the same on every run.
 *
 * Performance (H200, random walks, m = 128; tsmine-bench motif_top1): 0.045 s at
 * n = 2^16, 0.21 s at 2^18, 1.2 s at 2^20, 13 s at 2^22, against 0.18 s and 1.9 s for
 * the CPU backend on the machine's 16 cores at 2^16 and 2^18. The bound sweep is
 * latency-bound (ncu: L1 hit rate 96%, DRAM and L2 nearly idle, issue limited by
 * dependent arithmetic and occupancy): every pair within the ordering reference's
 * bound, some 20-40% of all pairs on random walks, costs a few float4 loads. The GPU
 * matrix profile (mp.cu), which evaluates every pair in O(1), is faster at every n
 * measured. The #ifndef constants below can be set with -D for such experiments. */
#include "cuda_util.cuh"
#include "distance.h"
#include "mk.h"

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MK_WARPS 8               /* warps per block of the offset loop */
#define MK_TILE  (32 * MK_WARPS) /* positions k of I_S per block: a tile */
#define MK_QUEUE 64              /* queued survivors per warp (flushed 32 at a time) */
#ifndef MK_MINBLOCKS
#define MK_MINBLOCKS 4 /* resident blocks of mk_batch per multiprocessor (caps registers) */
#endif
#ifndef MK_RG
#define MK_RG 3 /* groups of 4 references whose P values at k stay in registers */
#endif
#ifndef MK_PIPE
#define MK_PIPE 1 /* pairs whose exact distances a warp computes at once */
#endif
#ifndef MK_BATCH_MAX
#define MK_BATCH_MAX 1024 /* offsets per launch at most */
#endif
#define MK_THREADS     256  /* block size of the other kernels */
#define MK_COL_THREADS 128  /* block size of mk_distances (32 partial sums a thread) */
#define MK_SD_THREADS  1024 /* block size of mk_row_sd and mk_merge */
#define MK_FULL        0xffffffffu

typedef tsmi_mk_pair mk_pair;

/* The series' device statistics (stats.h) as the kernels read them. */
typedef struct {
    const double *t, *mu, *inv;
    const uint8_t *kind;
    size_t m;
} mk_series;

/* Per-search results on the device, read back by the host. */
typedef struct {
    mk_pair best;             /* bsf and its pair */
    unsigned long long ndist; /* exact distances of the search (outer pair and offset loop) */
    unsigned long long reach; /* largest offset that passed the ordering bound */
} mk_state;

/* What the offset loop reads. */
typedef struct {
    mk_series s;
    const float *P;      /* D(ref r in SD order, I_S[q]) at P[MK_P(r, q, RS)] */
    const uint32_t *I_S; /* Ne eligible positions in the linear order */
    size_t Ne, RS, excl; /* RS: the number of references rounded up to a multiple of 4 */
    double margin;
} mk_loop;

/* Where P keeps D(ref r, I_S[q]): one record of RS floats per position q (the
 * references of a position together, so that a float4 load brings four of them). */
#define MK_P(r, q, RS) ((size_t)(q) * (RS) + (size_t)(r))

__device__ static inline mk_pair mk_make(double d, int64_t a, int64_t b) {
    mk_pair p;
    p.d = d;
    p.a = a;
    p.b = b;
    return p;
}

__device__ static inline mk_pair mk_none(void) {
    return mk_make(INFINITY, -1, -1);
}

/* The first of x and y in the motif order. */
__device__ static inline mk_pair mk_min(mk_pair x, mk_pair y) {
    return tsmi_mk_before(y.d, y.a, y.b, &x) ? y : x;
}

/* The warp's first pair in the motif order, in every lane (xor butterfly; the order is
 * total, so every lane gets the same pair whatever the combination order). */
__device__ static mk_pair mk_warp_min(mk_pair p) {
    for (int s = 16; s > 0; s >>= 1) {
        mk_pair o;
        o.d = __shfl_xor_sync(MK_FULL, p.d, s);
        o.a = __shfl_xor_sync(MK_FULL, p.a, s);
        o.b = __shfl_xor_sync(MK_FULL, p.b, s);
        p = mk_min(p, o);
    }
    return p;
}

/* The block's first pair, valid in thread 0; sw: 32 pairs of shared memory. Every
 * thread of the block must call it. */
__device__ static mk_pair mk_block_min(mk_pair p, mk_pair *sw) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = (int)(blockDim.x + 31) >> 5;
    p = mk_warp_min(p);
    if (lane == 0)
        sw[warp] = p;
    __syncthreads();
    if (warp == 0)
        p = mk_warp_min(lane < nwarps ? sw[lane] : mk_none());
    return p;
}

/* QT(a, b) = sum_k t[a + k] t[b + k] computed by a whole warp: lane l sums the terms
 * k = l, l + 32, ... with fma (coalesced loads of both subsequences), then the lanes'
 * sums are added in a fixed tree (shfl_down 16, 8, 4, 2, 1). The sum is in lane 0. This
 * order defines every dot product of this file. */
__device__ static double mk_warp_dot(const double *__restrict__ t, size_t a, size_t b, size_t m,
                                     int lane) {
    double acc = 0.0;
    for (size_t k = (size_t)lane; k < m; k += 32)
        acc = fma(t[a + k], t[b + k], acc);
    for (int s = 16; s > 0; s >>= 1)
        acc += __shfl_down_sync(MK_FULL, acc, s);
    return acc;
}

/* The same sum as mk_warp_dot, bit for bit, computed by one thread: 32 partial sums
 * acc[l] over k = l (mod 32), then the same tree. For column-per-thread kernels. */
__device__ static double mk_thread_dot(const double *__restrict__ x, const double *__restrict__ y,
                                       size_t m) {
    double acc[32];
#pragma unroll
    for (int l = 0; l < 32; l++)
        acc[l] = 0.0;
    size_t c = 0;
    for (; c + 32 <= m; c += 32) {
#pragma unroll
        for (int l = 0; l < 32; l++)
            acc[l] = fma(x[c + l], y[c + l], acc[l]);
    }
#pragma unroll
    for (int l = 0; l < 32; l++)
        if (c + l < m)
            acc[l] = fma(x[c + l], y[c + l], acc[l]);
            /* The tree, one level at a time (constant bounds keep acc in registers). */
#pragma unroll
    for (int l = 0; l < 16; l++)
        acc[l] = acc[l] + acc[l + 16];
#pragma unroll
    for (int l = 0; l < 8; l++)
        acc[l] = acc[l] + acc[l + 8];
#pragma unroll
    for (int l = 0; l < 4; l++)
        acc[l] = acc[l] + acc[l + 4];
    acc[0] = acc[0] + acc[2];
    acc[1] = acc[1] + acc[3];
    return acc[0] + acc[1];
}

/* d(a, b) = sqrt(d2) from the dot product qt (distance.h), a < b; qt is ignored unless
 * both are normal. Not inlined: every kernel finishes a distance with the same
 * instructions, so the same pair always gets the same bits. */
__device__ __noinline__ static double mk_finish(mk_series s, size_t a, size_t b, double qt) {
    return sqrt(tsm_d2_pair(s.kind[a], s.kind[b], qt, s.mu[a], s.inv[a], s.mu[b], s.inv[b], s.m));
}

/* D(r, j) = d(T[ref_r], T[j]) for the references in drawing order (seed 000 Algorithm 4,
 * formula (11)). Thread j computes column j for every reference: its dot product with
 * each reference by mk_thread_dot, vectorised across columns (consecutive threads read
 * consecutive t[j + k]; the reference's values are the same for the whole warp), then
 * mk_finish. 0 exactly on the diagonal, NAN for non-finite columns. No shared memory. */
__global__ static void mk_distances(mk_series s, size_t N, const uint64_t *__restrict__ ref,
                                    size_t R, double *__restrict__ D) {
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= N)
        return;
    const int kj = s.kind[j];
    for (size_t r = 0; r < R; r++) {
        const size_t x = (size_t)ref[r];
        double d = NAN;
        if (j == x) {
            d = 0.0; /* exact: the formula would leave rounding noise */
        } else if (kj != TSM_SUB_NONFINITE) {
            const size_t a = x < j ? x : j, b = x < j ? j : x;
            double qt = 0.0;
            if (kj == TSM_SUB_NORMAL && s.kind[x] == TSM_SUB_NORMAL)
                qt = mk_thread_dot(s.t + a, s.t + b, s.m);
            d = mk_finish(s, a, b, qt);
        }
        D[r * N + j] = d;
    }
}

/* SD(r) = sqrt(sum_j (D(r, j) - mean_r)^2 / nfinite) over the finite columns (seed 000
 * Algorithm 5, in two passes as on the CPU). Block r reduces row r: the threads stride
 * over the columns, cub::BlockReduce adds their sums (its temporary storage and the
 * mean live in shared memory). */
__global__ static void __launch_bounds__(MK_SD_THREADS)
    mk_row_sd(const double *__restrict__ D, const uint8_t *__restrict__ kind, size_t N,
              size_t nfinite, double *__restrict__ sd) {
    typedef cub::BlockReduce<double, MK_SD_THREADS> reduce;
    __shared__ typename reduce::TempStorage tmp;
    __shared__ double mean;
    const double *row = D + (size_t)blockIdx.x * N;
    double x = 0.0;
    for (size_t j = threadIdx.x; j < N; j += MK_SD_THREADS)
        if (kind[j] != TSM_SUB_NONFINITE)
            x += row[j];
    const double sum = reduce(tmp).Sum(x);
    if (threadIdx.x == 0)
        mean = sum / (double)nfinite;
    __syncthreads();
    x = 0.0;
    for (size_t j = threadIdx.x; j < N; j += MK_SD_THREADS)
        if (kind[j] != TSM_SUB_NONFINITE)
            x += (row[j] - mean) * (row[j] - mean);
    const double acc = reduce(tmp).Sum(x);
    if (threadIdx.x == 0)
        sd[blockIdx.x] = sqrt(acc / (double)nfinite);
}

/* Sort keys of the linear order: key D(Z, j) (+INFINITY for non-finite columns, which
 * thus sort last) and value j. Thread j. */
__global__ static void mk_keys(const double *__restrict__ Dz, const uint8_t *__restrict__ kind,
                               size_t N, double *__restrict__ keys, uint32_t *__restrict__ vals) {
    const size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= N)
        return;
    keys[j] = kind[j] != TSM_SUB_NONFINITE ? Dz[j] : INFINITY;
    vals[j] = (uint32_t)j;
}

/* DeviceSelect::If predicate: position j is not masked. */
struct mk_unmasked {
    const uint8_t *mask;
    __device__ bool operator()(uint32_t j) const { return !mask[j]; }
};

/* For the eligible positions q < Ne of the linear order: P[r Ne + q] = (float)D(ref_r,
 * I_S[q]) with the references in SD order (row 0 is Z), the bound sweeps' copy of D;
 * and bsf from D (seed 000 Algorithm 6): the first (reference, subsequence) non-self-match
 * pair among unmasked references. Thread q, all references; the block's first pair goes
 * to part[blockIdx] (32 pairs of shared memory for the reduction). */
__global__ static void __launch_bounds__(MK_THREADS)
    mk_prepare(const double *__restrict__ D, size_t N, const uint32_t *__restrict__ I_S, size_t Ne,
               const uint64_t *__restrict__ ref, const uint32_t *__restrict__ row, size_t R,
               size_t RS, const uint8_t *__restrict__ mask, size_t excl, float *__restrict__ P,
               mk_pair *__restrict__ part) {
    __shared__ mk_pair sw[32];
    const size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    mk_pair best = mk_none();
    if (q < Ne) {
        const size_t j = I_S[q];
        for (size_t r = 0; r < R; r++) {
            const double d = D[(size_t)row[r] * N + j];
            const size_t x = (size_t)ref[r];
            P[MK_P(r, q, RS)] = (float)d;
            if (!mask[x] && tsm_non_self(x, j, excl)) {
                const int64_t a = (int64_t)(x < j ? x : j), b = (int64_t)(x < j ? j : x);
                if (tsmi_mk_before(d, a, b, &best))
                    best = mk_make(d, a, b);
            }
        }
        for (size_t r = R; r < RS; r++)
            P[MK_P(r, q, RS)] = 0.0f; /* padding: bound |0 - 0| = 0 */
    }
    best = mk_block_min(best, sw);
    if (threadIdx.x == 0)
        part[blockIdx.x] = best;
}

/* state->best = the first of state->best and part[0 .. n-1] (the tie rule): one block. */
__global__ static void __launch_bounds__(MK_SD_THREADS)
    mk_merge(const mk_pair *__restrict__ part, size_t n, mk_state *state) {
    __shared__ mk_pair sw[32];
    mk_pair best = mk_none();
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        best = mk_min(best, part[i]);
    best = mk_block_min(best, sw);
    if (threadIdx.x == 0)
        state->best = mk_min(state->best, best);
}

/* When no reference pair exists: the outermost eligible pair (lo, hi), which the host
 * found, sets bsf (one warp; nothing when bsf is already finite). */
__global__ static void mk_outer(mk_series s, size_t lo, size_t hi, mk_state *state) {
    if (!isinf(state->best.d))
        return;
    const int lane = threadIdx.x & 31;
    double qt = 0.0;
    if (s.kind[lo] == TSM_SUB_NORMAL && s.kind[hi] == TSM_SUB_NORMAL)
        qt = mk_warp_dot(s.t, lo, hi, s.m, lane);
    if (lane == 0) {
        state->best = mk_make(mk_finish(s, lo, hi, qt), (int64_t)lo, (int64_t)hi);
        state->ndist++;
    }
}

/* tiles[i] = i: every tile is live before the first batch. */
__global__ static void mk_iota(uint32_t *tiles, size_t n) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        tiles[i] = (uint32_t)i;
}

/* Exact distances with early abandoning. The dot product QT(a, b) of a queued pair,
 * a < b both normal, is computed by the whole warp in mk_warp_dot's order (the same fma
 * per lane, the same tree), so that it has the bits D would give it. Beside it the lanes
 * add up the squared differences of the z-normalised values, w_k = (x_k - mu_a) inv_a -
 * (y_k - mu_b) inv_b, whose sum times m is d2 (distance.h). After every 32 values but
 * the last, a pair whose partial m sum w_k^2 already exceeds lim = (bsf + margin)^2 is
 * abandoned: its exact d2 is at least the partial sum, and the margin covers the
 * rounding of both forms (the partial form's error is O(m^2 eps), the dot form's is
 * within mk.c's budget delta = 1e-8 m, and (bsf + margin)^2 >= bsf^2 + 9 delta), so
 * its computed distance is above bsf and it cannot be the motif. Most survivors of the
 * bounds are far from bsf and stop after the first 32 values, which saves most of the
 * loads. */

/* The lane's terms of values k of pair (a, b): acc += x_k y_k, dir += w_k^2. */
__device__ static inline void mk_dot_terms(const mk_series &s, size_t a, size_t b, size_t k,
                                           double *acc, double *dir) {
    const double u = s.t[a + k], v = s.t[b + k];
    const double w = (u - s.mu[a]) * s.inv[a] - (v - s.mu[b]) * s.inv[b];
    *acc = fma(u, v, *acc);
    *dir = fma(w, w, *dir);
}

/* The warp's sum of v, the same in every lane. */
__device__ static inline double mk_warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(MK_FULL, v, o);
    return __shfl_sync(MK_FULL, v, 0);
}

/* Finishes pair (a, b) whose first 32 values are in the lane's acc and dir and whose
 * partial sum of squares over them is tot (the same in every lane): the remaining
 * chunks, with the abandoning test before each. Returns whether the pair was completed
 * (in every lane) and then QT in *qt. */
__device__ static bool mk_dot_finish(const mk_series &s, size_t a, size_t b, double lim, int lane,
                                     double acc, double dir, double tot, double *qt) {
    const size_t m = s.m;
    for (size_t c = 32; c < m; c += 32) {
        if ((double)m * tot > lim)
            return false;
        if (c + (size_t)lane < m)
            mk_dot_terms(s, a, b, c + (size_t)lane, &acc, &dir);
        if (c + 32 < m)
            tot = mk_warp_sum(dir);
    }
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_down_sync(MK_FULL, acc, o);
    *qt = __shfl_sync(MK_FULL, acc, 0);
    return true;
}

/* Exact distances (seed 000 Algorithm 9) of the n <= 32 pairs queued by this warp in
 * qa/qb (positions) and ql (their float lower bounds). Lane i takes pair i and re-checks
 * its bound against the current bsf (which may have tightened since it was queued); the
 * warp then computes the dot products of the pairs still wanted, all lanes together on
 * each pair (coalesced loads, early abandoning), MK_PIPE pairs at a time so that their
 * loads and reductions overlap; each lane finishes its own distance, and the warp's
 * first pair tightens best and thr. Every lane of the warp calls it. */
__device__ static void mk_flush(const mk_loop &g, const uint32_t *qa, const uint32_t *qb,
                                const float *ql, unsigned n, int lane, mk_pair *best, float *thr,
                                unsigned long long *nd) {
    uint32_t a = 0, b = 0;
    bool want = false;
    if ((unsigned)lane < n) {
        const uint32_t x = qa[lane], y = qb[lane];
        a = x < y ? x : y;
        b = x < y ? y : x;
        want = (double)ql[lane] <= best->d + g.margin;
    }
    const bool normal = want && g.s.kind[a] == TSM_SUB_NORMAL && g.s.kind[b] == TSM_SUB_NORMAL;
    const double lim = (best->d + g.margin) * (best->d + g.margin);
    unsigned need = __ballot_sync(MK_FULL, normal);
    double qt = 0.0;
    bool done = true;
    while (need) {
        int p[MK_PIPE];
        uint32_t pa[MK_PIPE], pb[MK_PIPE];
        double acc[MK_PIPE], dir[MK_PIPE], tot[MK_PIPE];
#pragma unroll
        for (int i = 0; i < MK_PIPE; i++) {
            p[i] = need ? __ffs((int)need) - 1 : -1;
            need &= need - 1;
            pa[i] = __shfl_sync(MK_FULL, a, p[i] < 0 ? 0 : p[i]);
            pb[i] = __shfl_sync(MK_FULL, b, p[i] < 0 ? 0 : p[i]);
            acc[i] = dir[i] = 0.0;
            if (p[i] >= 0 && (size_t)lane < g.s.m)
                mk_dot_terms(g.s, pa[i], pb[i], (size_t)lane, &acc[i], &dir[i]);
            tot[i] = dir[i];
        }
        for (int o = 16; o > 0; o >>= 1) {
#pragma unroll
            for (int i = 0; i < MK_PIPE; i++)
                tot[i] += __shfl_xor_sync(MK_FULL, tot[i], o);
        }
#pragma unroll
        for (int i = 0; i < MK_PIPE; i++) {
            tot[i] = __shfl_sync(MK_FULL, tot[i], 0);
            if (p[i] >= 0) {
                double dot = 0.0;
                const bool ok =
                    mk_dot_finish(g.s, pa[i], pb[i], lim, lane, acc[i], dir[i], tot[i], &dot);
                if (lane == p[i]) {
                    qt = dot;
                    done = ok;
                }
            }
        }
    }
    mk_pair mine = mk_none();
    if (want) {
        (*nd)++;
        if (done)
            mine = mk_make(mk_finish(g.s, a, b, qt), (int64_t)a, (int64_t)b);
    }
    mine = mk_warp_min(mine);
    if (tsmi_mk_before(mine.d, mine.a, mine.b, best)) {
        *best = mine;
        *thr = (float)(best->d + g.margin);
    }
}

/* One batch of the offset loop, offsets [o0, o1) (seed 000 Algorithms 7-9 with the
 * termination of DESIGN 4.3). Block = one live tile of MK_TILE consecutive positions k
 * of I_S (tiles[blockIdx]); thread = one k; the warps run independently, each with its
 * own bsf, which starts from the global one (state->best, fixed during the launch).
 * For each offset o, as the seed orders it:
 *   LB(k, o) = max_r |P[r][k + o] - P[r][k]|  (formula (12); the record of k held in
 *              registers, MK_RG float4 groups; the record of k + o read four references
 *              at a time, a group only while the pair survives the previous ones),
 *              starting from the ordering reference's gap P[0][k + o] - P[0][k] >= 0,
 *              which grows with o: a k whose gap exceeds thr = bsf + margin is out for
 *              this and every later offset, and the warp stops when all its k are out;
 *   B(k)     = LB(k, o) <= thr and |a - b| >= excl (formula (13)), one warp ballot;
 *   survivors are queued in shared memory (qa, qb, ql: MK_QUEUE per warp), and every 32
 *   of them get their exact distance (mk_flush), which tightens the warp's bsf.
 * At the end the block writes its first pair to part[blockIdx], whether any of its k
 * is still in at o1 to live[blockIdx], and adds its exact-distance count and reach to
 * state. Work: O(R) per pair that passes the ordering bound, O(m) per survivor. */
__global__ static void __launch_bounds__(MK_TILE, MK_MINBLOCKS)
    mk_batch(mk_loop g, const uint32_t *__restrict__ tiles, size_t o0, size_t o1, mk_state *state,
             mk_pair *__restrict__ part, uint8_t *__restrict__ live) {
    __shared__ uint32_t qa[MK_WARPS][MK_QUEUE], qb[MK_WARPS][MK_QUEUE];
    __shared__ float ql[MK_WARPS][MK_QUEUE];
    __shared__ mk_pair wbest[MK_WARPS];
    __shared__ unsigned long long wnd[MK_WARPS], wreach[MK_WARPS];
    __shared__ int wlive[MK_WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const size_t Ne = g.Ne;
    const float *__restrict__ P = g.P;
    const size_t k = (size_t)tiles[blockIdx.x] * MK_TILE + threadIdx.x;
    mk_pair best = state->best;
    float thr = (float)(best.d + g.margin);
    bool alive = k + o0 < Ne;
    const size_t ng = g.RS / 4; /* float4 groups per record; group 0 starts with Z */
    const float4 *__restrict__ P4 = (const float4 *)P;
    float4 pk[MK_RG];
#pragma unroll
    for (int gi = 0; gi < MK_RG; gi++)
        pk[gi] = alive && (size_t)gi < ng ? P4[k * ng + gi] : make_float4(0.f, 0.f, 0.f, 0.f);
    const uint32_t ak = alive ? g.I_S[k] : 0;
    unsigned qn = 0;
    unsigned long long nd = 0, reach = 0;
    for (size_t o = o0; o < o1; o++) {
        const size_t q = k + o;
        bool pass = false;
        float lb = 0.0f;
        if (alive) {
            if (q >= Ne) {
                alive = false;
            } else {
                const float4 v = P4[q * ng], w = pk[0];
                lb = v.x - w.x; /* >= 0: I_S is sorted by D(Z, .) */
                alive = lb <= thr;
                lb = fmaxf(fmaxf(lb, fabsf(v.y - w.y)), fmaxf(fabsf(v.z - w.z), fabsf(v.w - w.w)));
                pass = alive && lb <= thr;
            }
        }
        if (!__any_sync(MK_FULL, alive))
            break; /* and for every later offset: the gaps only grow */
        if (alive)
            reach = o;
#pragma unroll
        for (int gi = 1; gi < MK_RG; gi++)
            if (pass && (size_t)gi < ng) {
                const float4 v = P4[q * ng + gi], w = pk[gi];
                lb = fmaxf(fmaxf(lb, fmaxf(fabsf(v.x - w.x), fabsf(v.y - w.y))),
                           fmaxf(fabsf(v.z - w.z), fabsf(v.w - w.w)));
                pass = lb <= thr;
            }
        for (size_t gi = MK_RG; pass && gi < ng; gi++) {
            const float4 v = P4[q * ng + gi], w = P4[k * ng + gi];
            lb = fmaxf(fmaxf(lb, fmaxf(fabsf(v.x - w.x), fabsf(v.y - w.y))),
                       fmaxf(fabsf(v.z - w.z), fabsf(v.w - w.w)));
            pass = lb <= thr;
        }
        uint32_t bq = 0;
        if (pass) {
            bq = g.I_S[q];
            pass = tsm_non_self(ak, bq, g.excl);
        }
        const unsigned ballot = __ballot_sync(MK_FULL, pass);
        if (pass) {
            const unsigned slot = qn + __popc(ballot & ((1u << lane) - 1u));
            qa[warp][slot] = ak;
            qb[warp][slot] = bq;
            ql[warp][slot] = lb;
        }
        qn += __popc(ballot);
        if (qn >= 32) {
            __syncwarp();
            qn -= 32;
            mk_flush(g, qa[warp] + qn, qb[warp] + qn, ql[warp] + qn, 32, lane, &best, &thr, &nd);
            __syncwarp();
        }
    }
    __syncwarp();
    if (qn > 0)
        mk_flush(g, qa[warp], qb[warp], ql[warp], qn, lane, &best, &thr, &nd);

    /* Still in at o1 (for the next batch)? The warp's totals. */
    const bool next = alive && k + o1 < Ne && P4[(k + o1) * ng].x - pk[0].x <= thr;
    const int any = __any_sync(MK_FULL, next);
    for (int s = 16; s > 0; s >>= 1) {
        nd += __shfl_xor_sync(MK_FULL, nd, s);
        const unsigned long long r = __shfl_xor_sync(MK_FULL, reach, s);
        reach = r > reach ? r : reach;
    }
    if (lane == 0) {
        wbest[warp] = best;
        wnd[warp] = nd;
        wreach[warp] = reach;
        wlive[warp] = any;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        mk_pair b = wbest[0];
        unsigned long long n = wnd[0], re = wreach[0];
        int l = wlive[0];
        for (int w = 1; w < MK_WARPS; w++) {
            b = mk_min(b, wbest[w]);
            n += wnd[w];
            re = wreach[w] > re ? wreach[w] : re;
            l |= wlive[w];
        }
        part[blockIdx.x] = b;
        live[blockIdx.x] = (uint8_t)(l != 0);
        if (n)
            atomicAdd(&state->ndist, n);
        if (re)
            atomicMax(&state->reach, re);
    }
}

/* Everything the searches of one call share (device pointers unless said). */
typedef struct {
    tsm_ctx *ctx;
    cudaStream_t stream;
    const tsm_stats *s; /* host */
    mk_series ser;
    size_t N, R, RS, nfinite, excl;
    double margin;
    double *D;        /* R x N, drawing order */
    uint64_t *ref_sd; /* the references in SD order */
    uint32_t *row_sd; /* their rows of D */
    uint32_t *order;  /* the finite positions in the linear order */
    uint32_t *I_S;    /* the eligible ones (this search) */
    float *P;         /* R x Ne */
    uint8_t *mask;    /* 1 = masked by an earlier pair */
    uint8_t *live;    /* per block of a batch: tile still live */
    uint32_t *tiles[2];
    mk_pair *part; /* per block: its first pair */
    mk_state *state;
    int *count; /* DeviceSelect output count */
    void *temp;
    size_t temp_bytes;
} mk_cuda;

/* One search (tsmi_mk_search_fn): I_S, P and bsf from D, then the offset loop in
 * batches of 1, 2, 4, ... MK_BATCH_MAX offsets (so that bsf tightens after offset 1
 * before the wide batches), one launch each, plus the merge of the blocks' bests and the
 * compaction of the live tiles; the host reads back only the number of live tiles. */
static tsm_status mk_cuda_search(void *state, const uint8_t *mask, mk_pair *best, uint64_t *ndist,
                                 uint64_t *noffsets) {
    mk_cuda *g = (mk_cuda *)state;
    tsm_ctx *ctx = g->ctx;
    cudaStream_t stream = g->stream;
    tsm_status st = TSM_OK;
    mk_state hs = {{INFINITY, -1, -1}, 0, 0};
    mk_loop L;
    size_t lo = 0, hi = 0, Ne = 0, nlive = 0, nb = 0, o0 = 1, width = 1, tb = 0;
    size_t tiles = 0; /* live tiles at the start: progress is the share retired */
    int ne = 0, cur = 0;
    *best = hs.best;
    *noffsets = 0;
    if (!tsmi_mk_outer_pair(g->s, mask, g->excl, &lo, &hi))
        return TSM_OK; /* no non-self-match pair is left */

    /* I_S: the linear order of the unmasked subsequences. */
    tb = g->temp_bytes;
    TSM_CUDA_TRY(ctx, cub::DeviceSelect::If(g->temp, tb, g->order, g->I_S, g->count,
                                            (int)g->nfinite, mk_unmasked{g->mask}, stream));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(&ne, g->count, sizeof ne, cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
    Ne = (size_t)ne;
    if (Ne < 2)
        goto done;

    /* P and bsf from D; the outermost pair when no reference pair exists. */
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(g->state, &hs, sizeof hs, cudaMemcpyHostToDevice, stream));
    nb = tsmi_blocks(Ne, MK_THREADS);
    mk_prepare<<<(unsigned)nb, MK_THREADS, 0, stream>>>(
        g->D, g->N, g->I_S, Ne, g->ref_sd, g->row_sd, g->R, g->RS, g->mask, g->excl, g->P, g->part);
    TSM_CUDA_LAUNCHED(ctx);
    mk_merge<<<1, MK_SD_THREADS, 0, stream>>>(g->part, nb, g->state);
    TSM_CUDA_LAUNCHED(ctx);
    mk_outer<<<1, 32, 0, stream>>>(g->ser, lo, hi, g->state);
    TSM_CUDA_LAUNCHED(ctx);

    /* The offset loop over the live tiles. */
    L.s = g->ser;
    L.P = g->P;
    L.I_S = g->I_S;
    L.Ne = Ne;
    L.RS = g->RS;
    L.excl = g->excl;
    L.margin = g->margin;
    nlive = (Ne - 1 + MK_TILE - 1) / MK_TILE;
    mk_iota<<<tsmi_blocks(nlive, MK_THREADS), MK_THREADS, 0, stream>>>(g->tiles[0], nlive);
    TSM_CUDA_LAUNCHED(ctx);
    tiles = nlive;
    while (nlive > 0) {
        const size_t o1 = o0 + width;
        mk_batch<<<(unsigned)nlive, MK_TILE, 0, stream>>>(L, g->tiles[cur], o0, o1, g->state,
                                                          g->part, g->live);
        TSM_CUDA_LAUNCHED(ctx);
        mk_merge<<<1, MK_SD_THREADS, 0, stream>>>(g->part, nlive, g->state);
        TSM_CUDA_LAUNCHED(ctx);
        tb = g->temp_bytes;
        TSM_CUDA_TRY(ctx,
                     cub::DeviceSelect::Flagged(g->temp, tb, g->tiles[cur], g->live,
                                                g->tiles[1 - cur], g->count, (int)nlive, stream));
        TSM_CUDA_TRY(ctx,
                     cudaMemcpyAsync(&ne, g->count, sizeof ne, cudaMemcpyDeviceToHost, stream));
        TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
        nlive = (size_t)ne;
        tsmi_progress(ctx, "search", tiles - nlive, tiles);
        cur = 1 - cur;
        o0 = o1;
        width = width * 2 < MK_BATCH_MAX ? width * 2 : MK_BATCH_MAX;
    }
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(&hs, g->state, sizeof hs, cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
    *best = hs.best;
    *ndist += hs.ndist;
    /* The offset that ended the search: one past the last that passed the bound. */
    *noffsets = hs.reach + 1 < Ne - 1 ? hs.reach + 1 : Ne - 1;
done:
    return st;
}

/* tsmi_mk_mask_fn: the device copy of the mask follows the host's. */
static tsm_status mk_cuda_mask(void *state, size_t lo, size_t hi) {
    mk_cuda *g = (mk_cuda *)state;
    tsm_ctx *ctx = g->ctx;
    tsm_status st = TSM_OK;
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(g->mask + lo, 1, hi - lo, g->stream));
done:
    return st;
}

extern "C" tsm_status tsmi_mk_motifs_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                                          size_t refs, uint64_t seed, tsm_motif *out, size_t *count,
                                          tsm_mk_stats *counters) {
    tsm_status st = TSM_OK;
    cudaStream_t stream = tsmi_stream(ctx);
    const size_t N = s->N;
    mk_cuda g;
    size_t *finite = NULL, *row = NULL, nfinite = 0, R = 0, ntiles = 0, nparts = 0;
    size_t b_sort = 0, b_sel = 0, b_flag = 0;
    double *sd = NULL, *sd_d = NULL, *keys = NULL, *keys_out = NULL;
    uint64_t *ref_h = NULL, *ref_d = NULL, ndist = 0, noffsets = 0;
    uint32_t *row_h = NULL, *vals = NULL;
    memset(&g, 0, sizeof g);
    if (!s->dev)
        return tsm_fail(ctx, TSM_EINVAL,
                        "tsm_mk_motifs: the statistics have no device copy (made on a CPU ctx)");
    if (N > (size_t)INT_MAX)
        return tsm_fail(ctx, TSM_EINVAL,
                        "tsm_mk_motifs: %zu subsequences exceed the CUDA backend's limit of %d", N,
                        INT_MAX);
    st = tsmi_mk_draw_refs(ctx, s, refs, seed, &finite, &nfinite, &R);
    if (st != TSM_OK || nfinite < 2)
        goto done; /* out of memory, or no pair at all */
    if (R > SIZE_MAX / sizeof(double) / N) {
        st =
            tsm_fail(ctx, TSM_ENOMEM, "out of memory for MK motif search over %zu subsequences", N);
        goto done;
    }

    g.ctx = ctx;
    g.stream = stream;
    g.s = s;
    g.ser.t = s->dev->t;
    g.ser.mu = s->dev->mu;
    g.ser.inv = s->dev->inv;
    g.ser.kind = s->dev->kind;
    g.ser.m = s->m;
    g.N = N;
    g.R = R;
    g.RS = (R + 3) / 4 * 4;
    g.nfinite = nfinite;
    g.excl = excl;
    g.margin = tsmi_mk_margin(s->m);
    ntiles = (N + MK_TILE - 1) / MK_TILE;
    nparts = tsmi_blocks(N, MK_THREADS);

    sd = (double *)malloc(R * sizeof *sd);
    row = (size_t *)malloc(R * sizeof *row);
    ref_h = (uint64_t *)malloc(R * sizeof *ref_h);
    row_h = (uint32_t *)malloc(R * sizeof *row_h);
    if (!sd || !row || !ref_h || !row_h) {
        st =
            tsm_fail(ctx, TSM_ENOMEM, "out of memory for MK motif search over %zu subsequences", N);
        goto done;
    }
    TSM_CUDA_ALLOC(ctx, g.D, R * N * sizeof(double));
    TSM_CUDA_ALLOC(ctx, g.P, g.RS * N * sizeof(float));
    TSM_CUDA_ALLOC(ctx, ref_d, R * sizeof(uint64_t));
    TSM_CUDA_ALLOC(ctx, g.ref_sd, R * sizeof(uint64_t));
    TSM_CUDA_ALLOC(ctx, g.row_sd, R * sizeof(uint32_t));
    TSM_CUDA_ALLOC(ctx, sd_d, R * sizeof(double));
    TSM_CUDA_ALLOC(ctx, keys, N * sizeof(double));
    TSM_CUDA_ALLOC(ctx, keys_out, N * sizeof(double));
    TSM_CUDA_ALLOC(ctx, vals, N * sizeof(uint32_t));
    TSM_CUDA_ALLOC(ctx, g.order, N * sizeof(uint32_t));
    TSM_CUDA_ALLOC(ctx, g.I_S, N * sizeof(uint32_t));
    TSM_CUDA_ALLOC(ctx, g.mask, N);
    TSM_CUDA_ALLOC(ctx, g.live, ntiles);
    TSM_CUDA_ALLOC(ctx, g.tiles[0], ntiles * sizeof(uint32_t));
    TSM_CUDA_ALLOC(ctx, g.tiles[1], ntiles * sizeof(uint32_t));
    TSM_CUDA_ALLOC(ctx, g.part, nparts * sizeof(mk_pair));
    TSM_CUDA_ALLOC(ctx, g.state, sizeof(mk_state));
    TSM_CUDA_ALLOC(ctx, g.count, sizeof(int));
    TSM_CUDA_TRY(ctx, cub::DeviceRadixSort::SortPairs(NULL, b_sort, keys, keys_out, vals, g.order,
                                                      (int)N, 0, 64, stream));
    TSM_CUDA_TRY(ctx, cub::DeviceSelect::If(NULL, b_sel, g.order, g.I_S, g.count, (int)N,
                                            mk_unmasked{g.mask}, stream));
    TSM_CUDA_TRY(ctx, cub::DeviceSelect::Flagged(NULL, b_flag, g.tiles[0], g.live, g.tiles[1],
                                                 g.count, (int)ntiles, stream));
    g.temp_bytes = b_sort > b_sel ? b_sort : b_sel;
    g.temp_bytes = g.temp_bytes > b_flag ? g.temp_bytes : b_flag;
    TSM_CUDA_ALLOC(ctx, g.temp, g.temp_bytes);
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(g.mask, 0, N, stream));

    /* D and SD, then the references in SD order (the host orders them as the CPU does). */
    for (size_t r = 0; r < R; r++)
        ref_h[r] = finite[r];
    TSM_CUDA_TRY(ctx,
                 cudaMemcpyAsync(ref_d, ref_h, R * sizeof *ref_h, cudaMemcpyHostToDevice, stream));
    mk_distances<<<tsmi_blocks(N, MK_COL_THREADS), MK_COL_THREADS, 0, stream>>>(g.ser, N, ref_d, R,
                                                                                g.D);
    TSM_CUDA_LAUNCHED(ctx);
    mk_row_sd<<<(unsigned)R, MK_SD_THREADS, 0, stream>>>(g.D, g.ser.kind, N, nfinite, sd_d);
    TSM_CUDA_LAUNCHED(ctx);
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(sd, sd_d, R * sizeof *sd, cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
    tsmi_mk_order_refs(sd, R, row);
    for (size_t r = 0; r < R; r++) {
        ref_h[r] = finite[row[r]];
        row_h[r] = (uint32_t)row[r];
    }
    TSM_CUDA_TRY(
        ctx, cudaMemcpyAsync(g.ref_sd, ref_h, R * sizeof *ref_h, cudaMemcpyHostToDevice, stream));
    TSM_CUDA_TRY(
        ctx, cudaMemcpyAsync(g.row_sd, row_h, R * sizeof *row_h, cudaMemcpyHostToDevice, stream));

    /* The linear order of all finite subsequences by (D(Z, j), j). */
    mk_keys<<<tsmi_blocks(N, MK_THREADS), MK_THREADS, 0, stream>>>(g.D + row[0] * N, g.ser.kind, N,
                                                                   keys, vals);
    TSM_CUDA_LAUNCHED(ctx);
    TSM_CUDA_TRY(ctx, cub::DeviceRadixSort::SortPairs(g.temp, b_sort, keys, keys_out, vals, g.order,
                                                      (int)N, 0, 64, stream));

    ndist = (uint64_t)R * nfinite;
    st = tsmi_mk_topk(ctx, s, excl, k, mk_cuda_search, mk_cuda_mask, &g, out, count, &ndist,
                      &noffsets);
    if (st == TSM_OK && counters) {
        counters->distances = ndist;
        counters->offsets = noffsets;
        counters->refs = R;
    }

done:
    if (st != TSM_OK)
        cudaStreamSynchronize(stream); /* nothing may still use the buffers freed below */
    cudaFree(g.D);
    cudaFree(g.P);
    cudaFree(ref_d);
    cudaFree(g.ref_sd);
    cudaFree(g.row_sd);
    cudaFree(sd_d);
    cudaFree(keys);
    cudaFree(keys_out);
    cudaFree(vals);
    cudaFree(g.order);
    cudaFree(g.I_S);
    cudaFree(g.mask);
    cudaFree(g.live);
    cudaFree(g.tiles[0]);
    cudaFree(g.tiles[1]);
    cudaFree(g.part);
    cudaFree(g.state);
    cudaFree(g.count);
    cudaFree(g.temp);
    free(finite);
    free(row);
    free(sd);
    free(ref_h);
    free(row_h);
    return st;
}
