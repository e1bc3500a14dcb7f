/* SPDX-License-Identifier: Apache-2.0 */
/* mp.cu - the matrix profile on the GPU (the CUDA backend of mp.h), in the style of
 * SCAMP: tiled diagonal traversal of the upper triangle of the distance matrix, each
 * thread carrying MPG_D diagonals down a run of rows with the centred covariance
 * recurrence in double registers.
 *
 * Math (as in mp.c). With cov(i,j) = QT[i][j] - m mu_i mu_j, corr = cov inv_i inv_j
 * (distance.h), and along a diagonal (SCAMP's update, exact in real arithmetic):
 *   cov(i+1,j+1) = cov(i,j) + df[i] dg[j] + df[j] dg[i],
 *   df[k] = (t[k+m] - t[k]) / 2,   dg[k] = (t[k+m] - mu[k+1]) + (t[k] - mu[k]).
 * Each work item starts from covariances computed exactly from centred values and
 * runs the recurrence for at most MPG_S rows, so the error is bounded for any n.
 * Everything is compared in correlation space (max corr = min distance), clamped at 1
 * so that exact matches tie; inv = NaN for subsequences that are not normal makes
 * their correlations NaN, which never win a comparison. Pair (i, j = i + k), k >= excl,
 * is a candidate right neighbour of row i and left neighbour of column j; the last
 * pass (constants, merge of left and right) is mp.c's tsmi_mp_finish.
 *
 * Work. The diagonals excl.. are cut into bands of MPG_W = MPG_B * MPG_D, and each
 * band into items of MPG_S rows; one thread block per item (longest bands first).
 * Thread x carries the diagonals k0 + MPG_D x + d, d < MPG_D. The block walks its
 * item in sub-tiles of MPG_H rows; per sub-tile, shared memory holds df, dg, inv of the
 * MPG_W + MPG_H columns and the MPG_H rows it touches, and per warp the best candidate
 * (corr, index) of each column and row it touched (warp-private slots: no atomics).
 *
 * Register blocks. A thread does MPG_U rows at a time: its columns are then the
 * MPG_D + MPG_U - 1 consecutive ones from its first diagonal, read from shared memory
 * with 16-byte loads (half of them carried over from the previous block, the two
 * halves swapping roles from block to block). Rows and columns are both filters: each
 * correlation is compared with the warp's current best of its row and of its column
 * (slots seeded with the global bests), two comparisons per pair. Only when some lane
 * reaches a row's best does the warp reduce (corr, index) with shuffles; only when some
 * lane reaches a column's does the warp run the block's columns again from its saved
 * covariances, keeping each column's best (corr, row) in registers and merging it into
 * the slots (the tail columns of lane l are the head of lane l + 1, which takes them by
 * a shuffle, so every slot has one writer per block). After the first items both are
 * rare: a profile's bests only grow, and few pairs beat them.
 *
 * Cost. Per pair: 2 DMUL + 2 DFMA (correlation, recurrence) and the two tests (DSETP):
 * 6 fp64-pipe and about 10 issued instructions in all on the path with no hit (sm_90
 * SASS, tools/scripts/sass-mix --path: 315 for two blocks of 16 pairs; 726 when every
 * column's best was kept in registers). What bounds it is shared memory's latency and
 * bandwidth, not the fp64 pipe: the column loads (df, dg, inv and the 7 column slots a
 * block) were 2- and 4-way bank conflicts until the arrays took the split layout
 * (mp_tile.cuh, mpg_split_ix), and ncu then reads FP64 52%, issue 50% with 4 warps a
 * scheduler (H100, 2^18; docs/performance.md). Global traffic is O(1 / MPG_H) a pair.
 *
 * Global update. At the end of a sub-tile the warps' slots are merged per column and
 * per row, and the result goes to the global bests: a 64-bit key that orders like the
 * double correlation is read as a filter (it only grows, so a stale read is safe), and
 * a candidate that can win takes the entry's lock to write key and index together, so
 * (corr, index) always stay consistent and ties go to the smaller index whatever the
 * order in which blocks finish. Results are deterministic: every pair's correlation
 * depends only on the fixed work grid, and the merges keep the (corr, -index) maximum. */
#include "cuda_util.cuh"
#include "mp.h"
#include "mp_tile.cuh"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* Kernel arguments (device pointers). */
typedef struct {
    const double *t, *mu;        /* working series, means */
    const double *df, *dg, *inv; /* per subsequence, padded with MPG_W + MPG_H entries */
    const long long *first;      /* first work item of each band (nb + 1 entries) */
    long long item0;             /* work item of blockIdx.x 0 (launches in chunks) */
    int nb, band0, N, m, excl;   /* bands band0 .. band0 + nb - 1 (tsm_mp_part) */
    unsigned long long *key;     /* best left (0..N-1) and right (N..2N-1): ordered corr */
    int *idx, *lock;             /* its index, and the entry's lock */
} mpg_args;

/* Merges candidate (corr v, index j) into global entry e: a larger correlation wins,
 * then the smaller index. The key only grows, so reading it without the lock is a
 * safe filter; a candidate that may win takes the entry's spin lock and writes key
 * and index together. */
__device__ static void merge_global(const mpg_args &a, int e, double v, int j) {
    const unsigned long long k = corr_key(v);
    volatile unsigned long long *vk = a.key + e;
    volatile int *vi = a.idx + e;
    if (k < *vk)
        return;
    while (atomicCAS(a.lock + e, 0, 1) != 0)
        __nanosleep(64);
    __threadfence();
    const unsigned long long cur = *vk;
    if (k > cur || (k == cur && j < *vi)) {
        *vi = j;
        *vk = k;
    }
    __threadfence();
    atomicExch(a.lock + e, 0);
}

/* A row's candidates reached the warp's best of that row in some lane: the warp's
 * best (corr, smallest index) of the row by a butterfly of shuffles, merged into the
 * warp's slot (sv, si) by lane 0. c: this lane's correlations (not clamped yet), j0 the
 * column of its first diagonal, T the slot's value (<= 1) that every lane compared. */
__device__ static void row_hit(const double c[MPG_D], double T, int j0, double *sv, int *si,
                               int lane) {
    double mx = -INFINITY;
    int dd = 0;
#pragma unroll
    for (int d = 0; d < MPG_D; d++) {
        const double v = c[d] > 1.0 ? 1.0 : c[d];
        if (v > mx) /* strict: the smaller column wins ties; NaN never wins */
            mx = v, dd = d;
    }
    const bool hit = mx >= T;
    double v = hit ? mx : -INFINITY;
    int j = hit ? j0 + dd : MPG_NONE;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const double v2 = __shfl_xor_sync(MPG_FULL, v, off);
        const int j2 = __shfl_xor_sync(MPG_FULL, j, off);
        if (v2 > v || (v2 == v && j2 < j))
            v = v2, j = j2;
    }
    __syncwarp();
    if (lane == 0 && (v > T || (v == T && j < *si)))
        *sv = v, *si = j;
}

/* A sub-tile as one thread sees it: the shared arrays, its warp's slots, and where
 * its first diagonal lies. */
typedef struct {
    const double *cdf, *cdg, *cinv, *rowd; /* columns and rows of the sub-tile */
    double *wcv, *wrv;                     /* this warp's column and row slots */
    int *wci, *wri;
    int ri, cbase; /* first row, first column (global) */
    int lo, so;    /* first column of this thread: in the sub-tile, in the warp's slots */
    int lane;
} mpg_tile;

/* Columns c .. c + 3 of the sub-tile into x (mp_tile.cuh). */
__device__ __forceinline__ static void load_cols(const mpg_tile &tl, int c, mpg_cols &x) {
    mpg_load_cols(tl.cdf, tl.cdg, tl.cinv, c, 2, MPG_CH, x);
}

/* Whether candidate (v, i) beats slot (sv, si): the larger correlation, then the
 * smaller index (a slot seeded with the global best has index MPG_NONE, so an equal
 * correlation at any real index enters it and the global merge breaks the tie). */
__device__ __forceinline__ static bool slot_better(double v, int i, double sv, int si) {
    return v > sv || (v == sv && i < si);
}

#define MPG_X(field, e) ((e) < 4 ? x0.field[(e)] : x1.field[(e)-4])

/* The column candidates of a register block, run again because some lane's pair
 * reached its column's slot in the filter pass: the same products from the block's
 * starting covariances cov0, each entry's best (corr, row) over the block's rows, then
 * merged into the warp's slots. Warp-uniform (every lane of the warp calls it). */
__device__ __forceinline__ static void col_block(const mpg_tile &tl, int r, double cov0[MPG_D],
                                                 const mpg_cols &x0, const mpg_cols &x1) {
    double cbv[MPG_D + MPG_U - 1]; /* best (corr, row) of entry e in this block */
    int cbi[MPG_D + MPG_U - 1];
#pragma unroll
    for (int e = 0; e < MPG_D + MPG_U - 1; e++)
        cbv[e] = -INFINITY, cbi[e] = MPG_NONE;
#pragma unroll
    for (int u = 0; u < MPG_U; u++) {
        const double2 rdfg = *(const double2 *)(tl.rowd + 4 * (r + u));
        const double rinv = tl.rowd[4 * (r + u) + 2];
        const int row = tl.ri + r + u;
#pragma unroll
        for (int d = 0; d < MPG_D; d++) {
            const int e = u + d;
            const double v = cov0[d] * rinv * MPG_X(v, e); /* as reg_block, bit for bit */
            const double vc = v > 1.0 ? 1.0 : v;           /* NaN stays NaN */
            if (vc > cbv[e]) /* strict: rows come in increasing order */
                cbv[e] = vc, cbi[e] = row;
            cov0[d] = fma(rdfg.x, MPG_X(dg, e), cov0[d]);
            cov0[d] = fma(rdfg.y, MPG_X(df, e), cov0[d]);
        }
    }
    /* Lane l's tail entries 4..6 are lane l + 1's head 0..2, seen at later rows: taken
     * only when strictly better. Then each lane merges its head into its four slots,
     * and lane 31 its tail, which no other lane of the warp holds. */
#pragma unroll
    for (int e = 0; e < MPG_U - 1; e++) {
        const double tv = __shfl_up_sync(MPG_FULL, cbv[MPG_D + e], 1);
        const int ti = __shfl_up_sync(MPG_FULL, cbi[MPG_D + e], 1);
        if (tl.lane > 0 && tv > cbv[e])
            cbv[e] = tv, cbi[e] = ti;
    }
    __syncwarp(); /* every lane has read its thresholds from the slots written below */
    double2 *pv0 = (double2 *)(tl.wcv + mpg_split_ix(r + tl.so, 2, MPG_CW / 2));     /* 0, 1 */
    double2 *pv1 = (double2 *)(tl.wcv + mpg_split_ix(r + tl.so + 2, 2, MPG_CW / 2)); /* 2, 3 */
    int4 *pi = (int4 *)(tl.wci + r + tl.so);
    double2 s0 = *pv0, s1 = *pv1;
    int4 si = *pi;
    if (slot_better(cbv[0], cbi[0], s0.x, si.x))
        s0.x = cbv[0], si.x = cbi[0];
    if (slot_better(cbv[1], cbi[1], s0.y, si.y))
        s0.y = cbv[1], si.y = cbi[1];
    if (slot_better(cbv[2], cbi[2], s1.x, si.z))
        s1.x = cbv[2], si.z = cbi[2];
    if (slot_better(cbv[3], cbi[3], s1.y, si.w))
        s1.y = cbv[3], si.w = cbi[3];
    *pv0 = s0, *pv1 = s1, *pi = si;
    if (tl.lane == 31) {
#pragma unroll
        for (int e = 0; e < MPG_U - 1; e++) {
            const int sl = r + tl.so + MPG_D + e;
            const int sx = mpg_split_ix(sl, 2, MPG_CW / 2);
            if (slot_better(cbv[MPG_D + e], cbi[MPG_D + e], tl.wcv[sx], tl.wci[sl]))
                tl.wcv[sx] = cbv[MPG_D + e], tl.wci[sl] = cbi[MPG_D + e];
        }
    }
    __syncwarp(); /* the next block's lanes read these slots */
}

/* One register block: rows r .. r + 3 of the sub-tile, this thread's four diagonals.
 * The thread's columns are entries e = column - (r + lo) < 7 of a window whose first
 * four are x0 (carried from the previous block) and last four x1 (loaded here; the
 * next block carries them). Pair (row r + u, diagonal d) is entry e = u + d.
 * Rows and columns are both filters: a pair's correlation is compared with its row's
 * warp slot (T) and with its column's (ct[e], read at the block's start: slots only
 * grow, so a value read before another lane raised it is a weaker test, never a wrong
 * one). Column slots start from the global bests, so after the first items almost no
 * block passes; one that does runs its columns again in col_block. */
template <bool ROWS>
__device__ __forceinline__ static void reg_block(const mpg_tile &tl, int r, double cov[MPG_D],
                                                 const mpg_cols &x0, mpg_cols &x1) {
    load_cols(tl, r + tl.lo + 4, x1);
    double cov0[MPG_D], ct[MPG_D + MPG_U]; /* ct[7] unused */
#pragma unroll
    for (int d = 0; d < MPG_D; d++)
        cov0[d] = cov[d];
    mpg_load4(tl.wcv, r + tl.so, 2, MPG_CW / 2, ct);         /* slots 0 .. 3 */
    mpg_load4(tl.wcv, r + tl.so + 4, 2, MPG_CW / 2, ct + 4); /* and 4 .. 7 */
    bool col = false;
#pragma unroll
    for (int u = 0; u < MPG_U; u++) {
        const double2 rdfg = *(const double2 *)(tl.rowd + 4 * (r + u));
        const double rinv = tl.rowd[4 * (r + u) + 2];
        const double T = ROWS ? tl.wrv[r + u] : 0.0;
        double c[MPG_D];
        bool hit = false;
#pragma unroll
        for (int d = 0; d < MPG_D; d++) {
            const int e = u + d;
            const double v = cov[d] * rinv * MPG_X(v, e);
            c[d] = v;
            hit |= v >= T;     /* unclamped: T <= 1, so the same test; NaN never hits */
            col |= v >= ct[e]; /* likewise: slots hold clamped values */
            cov[d] = fma(rdfg.x, MPG_X(dg, e), cov[d]);
            cov[d] = fma(rdfg.y, MPG_X(df, e), cov[d]);
        }
        if (ROWS && __any_sync(MPG_FULL, hit))
            row_hit(c, T, tl.cbase + r + u + tl.lo, tl.wrv + r + u, tl.wri + r + u, tl.lane);
    }
    if (__any_sync(MPG_FULL, col))
        col_block(tl, r, cov0, x0, x1);
}
#undef MPG_X

/* The traversal (see the top of the file). Block = one work item: band of diagonals
 * k0 = excl + band MPG_W + [0, MPG_W), rows [i0, i1) with i1 - i0 <= MPG_S; thread x
 * carries diagonals k0 + 4x + d. Shared memory, per sub-tile of rows [ri, ri + MPG_H):
 *   cdf, cdg, cinv  columns ri + k0 + [0, MPG_W + MPG_H), split (mpg_split_ix)
 *   rowd            rows ri + [0, MPG_H) as {df, dg, inv, 0} (inv NaN past i1)
 *   csv, csi        per warp: best (corr, row) of its columns (csv split), slot s = column - (ri +
 *                   k0) - 128 warp (a warp touches MPG_CW columns), seeded with the
 *                   global best (index MPG_NONE) as the filter
 *   rsv, rsi        per warp (ROWS): best (corr, column) of each row, seeded with the
 *                   global best (index MPG_NONE) as the filter.
 * ROWS: whether the right neighbours (the two-sided profile) are wanted. */
template <bool ROWS> __global__ static void __launch_bounds__(MPG_B, 2) tile_kernel(mpg_args a) {
    extern __shared__ double2 mpg_smem[];
    double *cdf = (double *)mpg_smem, *cdg = cdf + MPG_W + MPG_H, *cinv = cdg + MPG_W + MPG_H;
    double *rowd = cinv + MPG_W + MPG_H;
    double *csv = rowd + 4 * MPG_H;
    double *rsv = csv + MPG_NW * MPG_CW;
    int *csi = (int *)(rsv + (ROWS ? MPG_NW * MPG_H : 0));
    int *rsi = csi + MPG_NW * MPG_CW;
    __shared__ int s_band;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const long long item = a.item0 + blockIdx.x;
    if (tid == 0)
        s_band = mpg_item_band(a.first, a.nb, item);
    __syncthreads();
    const int band = s_band;
    const int k0 = a.excl + (a.band0 + band) * MPG_W;
    const int i0 = (int)(item - a.first[band]) * MPG_S;
    const int i1 = min(i0 + MPG_S, a.N - k0);
    mpg_tile tl;
    tl.cdf = cdf, tl.cdg = cdg, tl.cinv = cinv, tl.rowd = rowd;
    tl.wcv = csv + warp * MPG_CW, tl.wci = csi + warp * MPG_CW;
    tl.wrv = rsv + warp * MPG_H, tl.wri = rsi + warp * MPG_H;
    tl.lo = MPG_D * tid, tl.so = MPG_D * lane, tl.lane = lane;

    double cov[MPG_D];
    mpg_exact_cov(a.t, a.mu, a.N, a.m, i0, i0 + k0 + tl.lo, cov);

    for (int ri = i0; ri < i1; ri += MPG_H) {
        const int nr = min(MPG_H, i1 - ri), cbase = ri + k0;
        const int nru = (nr + MPG_U - 1) / MPG_U * MPG_U;
        tl.ri = ri, tl.cbase = cbase;
        __syncthreads(); /* the previous flush is done with shared memory */
        for (int q = tid; q < MPG_W + MPG_H; q += MPG_B) {
            const int x = mpg_split_ix(q, 2, MPG_CH);
            cdf[x] = a.df[cbase + q];
            cdg[x] = a.dg[cbase + q];
            cinv[x] = a.inv[cbase + q];
        }
        for (int q = tid; q < MPG_H; q += MPG_B) {
            const int i = ri + q;
            rowd[4 * q] = a.df[i];
            rowd[4 * q + 1] = a.dg[i];
            rowd[4 * q + 2] = i < i1 ? a.inv[i] : NAN;
            rowd[4 * q + 3] = 0.0;
            if (ROWS) {
                double g = MPG_FLOOR;
                if (i < i1)
                    g = fmax(key_corr(*(volatile unsigned long long *)(a.key + a.N + i)), g);
#pragma unroll
                for (int w = 0; w < MPG_NW; w++)
                    rsv[w * MPG_H + q] = g, rsi[w * MPG_H + q] = MPG_NONE;
            }
        }
        /* column slots seeded with the global best left neighbour (index MPG_NONE), as
         * the rows: the filter of reg_block; slot s of warp w is column cbase + s + 128 w */
        for (int q = tid; q < MPG_NW * MPG_CW; q += MPG_B) {
            const int w = q / MPG_CW, c = cbase + q - w * MPG_CW + 32 * MPG_D * w;
            double g = MPG_FLOOR;
            if (c < a.N)
                g = fmax(key_corr(*(volatile unsigned long long *)(a.key + c)), g);
            csv[w * MPG_CW + mpg_split_ix(q - w * MPG_CW, 2, MPG_CW / 2)] = g, csi[q] = MPG_NONE;
        }
        __syncthreads();

        /* Register blocks in pairs, so that the carried columns swap roles instead of
         * moving between registers. */
        mpg_cols xa, xb;
        load_cols(tl, tl.lo, xa);
        for (int r = 0; r < nru; r += 2 * MPG_U) {
            reg_block<ROWS>(tl, r, cov, xa, xb);
            if (r + MPG_U < nru)
                reg_block<ROWS>(tl, r + MPG_U, cov, xb, xa);
        }
        __syncthreads();

        /* Flush: the best of the warps' slots per column and per row, then the global
         * bests (left neighbours of columns, right neighbours of rows). */
        for (int q = tid; q < MPG_W + MPG_H && cbase + q < a.N; q += MPG_B) {
            double v = -INFINITY;
            int i = MPG_NONE;
#pragma unroll
            for (int w = 0; w < MPG_NW; w++) {
                const int sl = q - 32 * MPG_D * w;
                if (sl >= 0 && sl < MPG_CW) {
                    const double sv = csv[w * MPG_CW + mpg_split_ix(sl, 2, MPG_CW / 2)];
                    const int si = csi[w * MPG_CW + sl];
                    if (sv > v || (sv == v && si < i))
                        v = sv, i = si;
                }
            }
            if (i != MPG_NONE)
                merge_global(a, cbase + q, v, i);
        }
        if (ROWS) {
            for (int q = tid; q < nr; q += MPG_B) {
                double v = -INFINITY;
                int j = MPG_NONE;
#pragma unroll
                for (int w = 0; w < MPG_NW; w++) {
                    const double sv = rsv[w * MPG_H + q];
                    const int si = rsi[w * MPG_H + q];
                    if (sv > v || (sv == v && si < j))
                        v = sv, j = si;
                }
                if (j != MPG_NONE)
                    merge_global(a, a.N + ri + q, v, j);
            }
        }
    }
}

/* Thread e < 2N: the global bests as (correlation, index), -inf and -1 for none. */
__global__ static void unpack_kernel(const unsigned long long *__restrict__ key,
                                     const int *__restrict__ idx, size_t n2,
                                     double *__restrict__ corr, int64_t *__restrict__ nb) {
    const size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n2)
        return;
    const unsigned long long k = key[e];
    corr[e] = key_corr(k);
    nb[e] = k ? (int64_t)idx[e] : -1;
}

/* The traversal of bands b0 .. b1-1 (all of them for tsm_mp): the best left (lc, lj)
 * and, when rows, right (rc, rj) neighbour of every subsequence, in host memory,
 * correlation -inf and index -1 for none. O(pairs) on the device, O(N) device memory. */
static tsm_status bests_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t b0, size_t b1,
                             bool rows, double *lc, int64_t *lj, double *rc, int64_t *rj) {
    tsm_status st = TSM_OK;
    cudaStream_t stream = tsmi_stream(ctx);
    const size_t N = s->N, m = s->m, P = N + MPG_W + MPG_H;
    const size_t nb = b1 - b0;
    const size_t smem =
        (3 * (MPG_W + MPG_H) + 4 * MPG_H + MPG_NW * MPG_CW + (rows ? MPG_NW * MPG_H : 0)) *
            sizeof(double) +
        (MPG_NW * MPG_CW + (rows ? MPG_NW * MPG_H : 0)) * sizeof(int);
    mpg_inputs in = {};
    double *plan = NULL, *corr = NULL;
    long long *first = NULL, *h_first = NULL;
    unsigned long long *key = NULL;
    int *idx = NULL, *lock = NULL;
    int64_t *nbr = NULL;
    long long items = 0;
    mpg_args a;

    if (N > MPG_MAX_N)
        return tsm_fail(ctx, TSM_EINVAL,
                        "tsm_mp: %zu subsequences is more than the CUDA backend's %zu", N,
                        MPG_MAX_N);
    if ((st = mpg_inputs_get(ctx, s, stream, &in)) != TSM_OK)
        goto done;
    h_first = (long long *)malloc((nb + 1) * sizeof *h_first);
    if (!h_first) {
        st = tsm_fail(ctx, TSM_ENOMEM, "tsm_mp: out of host memory for %zu subsequences", N);
        goto done;
    }
    items = mpg_items(N, excl, b0, nb, h_first);

    TSM_CUDA_ALLOC(ctx, plan, 3 * P * sizeof(double));
    TSM_CUDA_ALLOC(ctx, first, (nb + 1) * sizeof(long long));
    TSM_CUDA_ALLOC(ctx, key, 2 * N * sizeof(unsigned long long));
    TSM_CUDA_ALLOC(ctx, idx, 2 * N * sizeof(int));
    TSM_CUDA_ALLOC(ctx, lock, 2 * N * sizeof(int));
    TSM_CUDA_ALLOC(ctx, corr, 2 * N * sizeof(double));
    TSM_CUDA_ALLOC(ctx, nbr, 2 * N * sizeof(int64_t));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(first, h_first, (nb + 1) * sizeof(long long),
                                      cudaMemcpyHostToDevice, stream));
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(key, 0, 2 * N * sizeof(unsigned long long), stream));
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(idx, 0, 2 * N * sizeof(int), stream));
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(lock, 0, 2 * N * sizeof(int), stream));
    mpg_prep_kernel<<<tsmi_blocks(P, 256), 256, 0, stream>>>(in.t, in.mu, in.inv, in.kind, NULL, N,
                                                             m, P, plan, plan + P, plan + 2 * P);
    TSM_CUDA_LAUNCHED(ctx);

    a.t = in.t, a.mu = in.mu, a.df = plan, a.dg = plan + P, a.inv = plan + 2 * P;
    a.first = first, a.nb = (int)nb, a.band0 = (int)b0, a.N = (int)N, a.m = (int)m;
    a.excl = (int)excl, a.key = key, a.idx = idx, a.lock = lock;
    if (items > 0) {
        const void *fn = rows ? (const void *)tile_kernel<true> : (const void *)tile_kernel<false>;
        TSM_CUDA_TRY(
            ctx, cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    }
    /* With a progress hook (tsm_ctx_set_progress), about 100 launches with a wait after
     * each, so the progress reported is work the device finished; the launch gaps cost
     * microseconds against seconds of work. Without one, as few launches as fit. */
    { /* a scope of its own: the TSM_CUDA_TRY gotos above must not jump into it */
        const int prog = tsmi_progress_on(ctx);
        long long chunk = prog ? (items + MPG_STEPS - 1) / MPG_STEPS : MPG_CHUNK;
        chunk = chunk < 1 ? 1 : chunk > MPG_CHUNK ? MPG_CHUNK : chunk;
        for (long long base = 0; base < items; base += chunk) {
            const unsigned grid = (unsigned)(items - base < chunk ? items - base : chunk);
            a.item0 = base;
            if (rows)
                tile_kernel<true><<<grid, MPG_B, smem, stream>>>(a);
            else
                tile_kernel<false><<<grid, MPG_B, smem, stream>>>(a);
            TSM_CUDA_LAUNCHED(ctx);
            if (prog) {
                TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
                tsmi_progress(ctx, "profile", (uint64_t)(base + grid), (uint64_t)items);
            }
        }
    }
    unpack_kernel<<<tsmi_blocks(2 * N, 256), 256, 0, stream>>>(key, idx, 2 * N, corr, nbr);
    TSM_CUDA_LAUNCHED(ctx);
    TSM_CUDA_TRY(ctx,
                 cudaMemcpyAsync(lc, corr, N * sizeof(double), cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(ctx,
                 cudaMemcpyAsync(lj, nbr, N * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
    if (rows) {
        TSM_CUDA_TRY(
            ctx, cudaMemcpyAsync(rc, corr + N, N * sizeof(double), cudaMemcpyDeviceToHost, stream));
        TSM_CUDA_TRY(
            ctx, cudaMemcpyAsync(rj, nbr + N, N * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
    }
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
done:
    if (st != TSM_OK && st != TSM_EDEVICE)
        cudaStreamSynchronize(stream); /* nothing queued may still use what is freed below */
    mpg_inputs_free(&in);
    cudaFree(plan), cudaFree(first), cudaFree(key), cudaFree(idx), cudaFree(lock);
    cudaFree(corr), cudaFree(nbr);
    free(h_first);
    return st;
}

extern "C" size_t tsmi_mp_band_width_cuda(void) {
    return MPG_W;
}

extern "C" tsm_status tsmi_mp_part_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t b0,
                                        size_t b1, double *lc, int64_t *lj, double *rc,
                                        int64_t *rj) {
    return bests_cuda(ctx, s, excl, b0, b1, rc != NULL, lc, lj, rc, rj);
}

extern "C" tsm_status tsmi_mp_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double *mp,
                                   int64_t *mpi, double *lmp, int64_t *lmpi) {
    const size_t N = s->N;
    const bool rows = mp != NULL;
    const size_t nb = excl < N ? (N - excl + MPG_W - 1) / MPG_W : 0;
    double *h_corr = (double *)malloc(2 * N * sizeof *h_corr);
    int64_t *h_nbr = (int64_t *)malloc(2 * N * sizeof *h_nbr);
    tsm_status st;
    if (!h_corr || !h_nbr)
        st = tsm_fail(ctx, TSM_ENOMEM, "tsm_mp: out of host memory for %zu subsequences", N);
    else
        st = bests_cuda(ctx, s, excl, 0, nb, rows, h_corr, h_nbr, h_corr + N, h_nbr + N);
    if (st == TSM_OK)
        st = tsmi_mp_finish(ctx, s, excl, h_corr, h_nbr, rows ? h_corr + N : NULL,
                            rows ? h_nbr + N : NULL, mp, mpi, lmp, lmpi);
    free(h_corr), free(h_nbr);
    return st;
}
