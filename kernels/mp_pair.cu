/* SPDX-License-Identifier: Apache-2.0 */
/* mp_pair.cu - the best pair of the matrix profile's traversal on the GPU (mp.h,
 * tsm_mp_best_pair; the CPU twin, mp_pair.c, explains the filter).
 *
 * The work grid, the covariance starts and the update are mp.cu's (mp_tile.cuh), so
 * every pair's correlation is the profile's. What a pair costs differs: the profile
 * keeps per-warp bests of every row and column it touches (two multiplications, the
 * clamp, a row test and a column test), the best pair only the thread's own (corr,
 * pair). Per sub-tile the block reads the best so far T from the global entry and puts
 * cut = T / inv (less a relative 1e-12) beside each column's df and dg in shared
 * memory; the exact test of a pair is w = cov inv_i >= cut, and a register block
 * filters it with no fp64 instruction a pair (pair_block): its two fused updates, an
 * integer compare and, per block of 32 pairs, 11 DMUL. The rare pair that passes is
 * evaluated as the profile evaluates it and kept when it beats the thread's best in the
 * pair order (larger correlation, then smaller a, then smaller b). At the end of each
 * sub-tile the warp's best goes to the global entry (a 64-bit key ordered like the
 * correlation and the pair (a << 32 | b) written together under a lock; the key is read
 * without it as a filter, since it only grows), so T tightens for every block.
 *
 * A thread carries 8 diagonals (the profile 4), so that a column loaded from shared
 * memory serves 8 pairs: with 4, the loads bound the kernel (docs/performance.md).
 *
 * The first blocks start from T = -inf, where every pair passes and is evaluated in
 * full until their first sub-tile ends: a few hundred thousand pairs of the N^2 / 2. */
#include "cuda_util.cuh"
#include "mp.h"
#include "mp_tile.cuh"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* Diagonals per thread: twice the profile's MPG_D, so that each column a register
 * block loads from shared memory serves 8 pairs instead of 4 (the loads, not the
 * arithmetic, bound the kernel at 4). A block of MPP_B threads covers one band of the
 * shared grid (MPG_W diagonals). */
#define MPP_D   8
#define MPP_B   (MPG_W / MPP_D)
#define MPP_WIN 3 /* column sets of 4 in a thread's window: (MPP_D + MPG_U - 1) / 4 + 1 */
/* Blocks per multiprocessor that the launch bounds ask for (202 registers a thread;
 * at 3, 168 registers, it spills in the hot block). */
#define MPP_BLOCKS 2
/* A quarter of a sub-tile's column array: the pair kernel's arrays are split in four
 * (mpg_split_ix), so that lanes 8 columns apart read 16 bytes apart. */
#define MPP_Q ((MPG_W + MPG_H) / 4)
static_assert(MPP_Q % 2 == 0 && MPP_D == 8 && MPG_U == 4, "the window is 3 sets of 4 columns");
#define MPP_NOPAIR 0xffffffffffffffffull

/* Kernel arguments (device pointers). */
typedef struct {
    const double *t, *mu;        /* working series, means */
    const double *df, *dg, *inv; /* per subsequence, padded with MPG_W + MPG_H entries */
    const long long *first;      /* first work item of each band (nb + 1 entries) */
    long long item0;             /* work item of blockIdx.x 0 (launches in chunks) */
    int nb, band0, N, excl, m;   /* bands band0 .. band0 + nb - 1 */
    unsigned long long *key;     /* the best pair: corr_key of its correlation (0: none), */
    unsigned long long *pair;    /* (a << 32) | b, */
    int *lock;                   /* and the lock that writes both together */
} mpp_args;

/* Merges the candidate (corr v, pair p) into the global best: larger key, then the
 * smaller pair. */
__device__ static void merge_pair(const mpp_args &a, double v, unsigned long long p) {
    const unsigned long long k = corr_key(v);
    volatile unsigned long long *vk = a.key, *vp = a.pair;
    if (k < *vk)
        return;
    while (atomicCAS(a.lock, 0, 1) != 0)
        __nanosleep(64);
    __threadfence();
    const unsigned long long cur = *vk;
    if (k > cur || (k == cur && p < *vp)) {
        *vp = p;
        *vk = k;
    }
    __threadfence();
    atomicExch(a.lock, 0);
}

/* Pair (i, j) that passed the filter with w = cov inv_i: its correlation as the
 * profile computes it, kept in (bv, bp) when it beats them. */
__device__ __forceinline__ static void offer(double w, double invj, int i, int j, double &bv,
                                             unsigned long long &bp) {
    double c = w * invj;
    c = c > 1.0 ? 1.0 : c; /* NaN stays NaN and never wins */
    const unsigned long long p = ((unsigned long long)i << 32) | (unsigned)j;
    if (c > bv || (c == bv && p < bp))
        bv = c, bp = p;
}

/* A sub-tile as one thread sees it. */
typedef struct {
    const double *cdf, *cdg, *ccut, *cinv, *fcut, *rowd;
    int ri, cbase, lo; /* first row and column (global), this thread's first column in it */
} mpp_tile;

/* One register block: rows r .. r + 3 of the sub-tile, this thread's eight diagonals
 * (mp.cu's reg_block without the bests): pair (row r + u, diagonal d) is entry e =
 * u + d < 11 of the thread's column window, three sets of four columns in win that
 * rotate roles from block to block (P: the block's place in the rotation); the third
 * set is loaded here, the other two carried over.
 *
 * The filter costs no fp64 instruction a pair. A pair can pass the exact test
 * cov inv_i >= ccut_j only if cov >= ccut_j / inv_i >= fcut_j smin, where smin (rowd's
 * fourth entry of the block's first row) is a little below every 1 / inv_i of the
 * block's rows and fcut_j a little below ccut_j, both kept in [2^-400, 2^400] or
 * made 0 / -0 (filter_cut, filter_smin). For positive doubles the order of the bit patterns is
 * the order of the values, so cov >= p implies hi(cov) >= hi(p) for the high 32 bits
 * as signed integers. Each block thus costs 11 DMUL (one per column, p_e = fcut_e smin)
 * and an integer compare per pair; p = -0 (no positive threshold) has hi = INT_MIN and
 * passes everything, NaN (a column or all rows not normal) nothing.
 *
 * The outcome is gathered over the block's 32 pairs, so the hot path has no branch
 * per row; in the rare block where some pair passed, the block runs again from its
 * starting covariances (the same operations, so the same values) and offers the pairs
 * that pass the exact test. */
template <int P>
__device__ __forceinline__ static void pair_block(const mpp_tile &tl, int r, double cov[MPP_D],
                                                  mpg_cols win[MPP_WIN], double &bv,
                                                  unsigned long long &bp) {
/* entry e of the window: set (P + e / 4) % 3 holds columns 4 (e / 4) .. of it */
#define MPP_X(field, e) (win[(P + (e) / 4) % MPP_WIN].field[(e) % 4])
    mpg_load_cols(tl.cdf, tl.cdg, tl.fcut, r + tl.lo + 8, 4, MPP_Q, win[(P + 2) % MPP_WIN]);
    double c0[MPP_D];
    bool pass = false;
    const double smin = tl.rowd[4 * r + 3];
    int lim[MPP_D + MPG_U - 1];
#pragma unroll
    for (int e = 0; e < MPP_D + MPG_U - 1; e++)
        lim[e] = __double2hiint(MPP_X(v, e) * smin);
#pragma unroll
    for (int d = 0; d < MPP_D; d++)
        c0[d] = cov[d];
#pragma unroll
    for (int u = 0; u < MPG_U; u++) {
        const double2 rdfg = *(const double2 *)(tl.rowd + 4 * (r + u));
#pragma unroll
        for (int d = 0; d < MPP_D; d++) {
            const int e = u + d;
            pass |= __double2hiint(cov[d]) >= lim[e];
            cov[d] = fma(rdfg.x, MPP_X(dg, e), cov[d]);
            cov[d] = fma(rdfg.y, MPP_X(df, e), cov[d]);
        }
    }
    if (pass) {
#pragma unroll
        for (int u = 0; u < MPG_U; u++) {
            const double2 rdfg = *(const double2 *)(tl.rowd + 4 * (r + u));
            const double rinv = tl.rowd[4 * (r + u) + 2];
#pragma unroll
            for (int d = 0; d < MPP_D; d++) {
                const int e = u + d;
                const double w = c0[d] * rinv;
                if (w >= tl.ccut[r + tl.lo + e]) /* NaN (not normal) never passes */
                    offer(w, tl.cinv[r + tl.lo + e], tl.ri + r + u, tl.cbase + r + tl.lo + e, bv,
                          bp);
                c0[d] = fma(rdfg.x, MPP_X(dg, e), c0[d]);
                c0[d] = fma(rdfg.y, MPP_X(df, e), c0[d]);
            }
        }
    }
#undef MPP_X
}

/* The filter's column threshold fcut from the exact one c: a little below c, kept in
 * [2^-400, 2^400] so that fcut smin neither overflows nor rounds below the subnormal
 * range; -0 where c is not above 2^-400 (every pair passes), NaN stays NaN. */
__device__ __forceinline__ static double filter_cut(double c) {
    return c != c ? c : c > 0x1p-400 ? fmin(c * (1.0 - 0x1p-40), 0x1p400) : -0.0;
}

/* The filter's row factor of rows ri .. ri + 3 (inv NaN where not normal): a little
 * below each normal row's 1 / inv, at most 2^400, 0 if below 2^-400, +inf if no row
 * is normal. */
__device__ __forceinline__ static double filter_smin(const double *inv, int ri, int i1) {
    double s = INFINITY;
    for (int u = 0; u < MPG_U; u++) {
        const double v = ri + u < i1 ? inv[ri + u] : NAN;
        if (v == v)
            s = fmin(s, 1.0 / v);
    }
    if (s == INFINITY)
        return s;
    s *= 1.0 - 0x1p-40;
    return s < 0x1p-400 ? 0.0 : fmin(s, 0x1p400);
}

/* The traversal of one work item (mp.cu's tile_kernel grid). Shared memory per
 * sub-tile of rows [ri, ri + MPG_H): cdf, cdg, ccut, cinv, fcut of columns ri + k0 +
 * [0, MPG_W + MPG_H) and rowd of the rows as {df, dg, inv, smin} (inv NaN past i1;
 * smin, pair_block's row factor, in the first row of each register block). */
__global__ static void __launch_bounds__(MPP_B, MPP_BLOCKS) pair_kernel(mpp_args a) {
    extern __shared__ double2 mpp_smem[];
    double *cdf = (double *)mpp_smem, *cdg = cdf + MPG_W + MPG_H, *ccut = cdg + MPG_W + MPG_H;
    double *cinv = ccut + MPG_W + MPG_H, *fcut = cinv + MPG_W + MPG_H;
    double *rowd = fcut + MPG_W + MPG_H;
    __shared__ int s_band;
    __shared__ double s_best;

    const int tid = threadIdx.x, lane = tid & 31;
    const long long item = a.item0 + blockIdx.x;
    if (tid == 0)
        s_band = mpg_item_band(a.first, a.nb, item);
    __syncthreads();
    const int band = s_band;
    const int k0 = a.excl + (a.band0 + band) * MPG_W;
    const int i0 = (int)(item - a.first[band]) * MPG_S;
    const int i1 = min(i0 + MPG_S, a.N - k0);
    mpp_tile tl = {cdf, cdg, ccut, cinv, fcut, rowd, 0, 0, MPP_D * tid};

    double cov[MPP_D];
    mpg_exact_cov(a.t, a.mu, a.N, a.m, i0, i0 + k0 + tl.lo, cov);
    mpg_exact_cov(a.t, a.mu, a.N, a.m, i0, i0 + k0 + tl.lo + MPG_D, cov + MPG_D);
    double bv = -INFINITY;
    unsigned long long bp = MPP_NOPAIR;

    for (int ri = i0; ri < i1; ri += MPG_H) {
        const int nr = min(MPG_H, i1 - ri), cbase = ri + k0;
        const int nru = (nr + MPG_U - 1) / MPG_U * MPG_U;
        tl.ri = ri, tl.cbase = cbase;
        __syncthreads(); /* the previous sub-tile is done with shared memory */
        if (tid == 0)
            s_best = key_corr(*(volatile unsigned long long *)a.key);
        __syncthreads();
        const double T = s_best;
        for (int q = tid; q < MPG_W + MPG_H; q += MPP_B) {
            const double v = a.inv[cbase + q], x = T / v;
            const double c = x - fabs(x) * 1e-12 - 0x1p-1000; /* -inf stays -inf, NaN NaN */
            const int sx = mpg_split_ix(q, 4, MPP_Q);         /* the arrays mpg_load_cols reads */
            cdf[sx] = a.df[cbase + q];
            cdg[sx] = a.dg[cbase + q];
            fcut[sx] = filter_cut(c);
            cinv[q] = v; /* plain: only the rare rerun reads these two */
            ccut[q] = c;
        }
        for (int q = tid; q < MPG_H; q += MPP_B) {
            const int i = ri + q;
            rowd[4 * q] = a.df[i];
            rowd[4 * q + 1] = a.dg[i];
            rowd[4 * q + 2] = i < i1 ? a.inv[i] : NAN;
            rowd[4 * q + 3] = q % MPG_U == 0 ? filter_smin(a.inv, i, i1) : 0.0;
        }
        __syncthreads();

        /* Register blocks in threes, so that the window's sets rotate roles instead of
         * moving between registers. */
        mpg_cols w[MPP_WIN];
        mpg_load_cols(cdf, cdg, fcut, tl.lo, 4, MPP_Q, w[0]);
        mpg_load_cols(cdf, cdg, fcut, tl.lo + 4, 4, MPP_Q, w[1]);
        for (int r = 0; r < nru; r += 3 * MPG_U) {
            pair_block<0>(tl, r, cov, w, bv, bp);
            if (r + MPG_U < nru)
                pair_block<1>(tl, r + MPG_U, cov, w, bv, bp);
            if (r + 2 * MPG_U < nru)
                pair_block<2>(tl, r + 2 * MPG_U, cov, w, bv, bp);
        }

        /* The warp's best to the global entry, so that T tightens for everyone. */
        double v = bv;
        unsigned long long p = bp;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            const double v2 = __shfl_xor_sync(MPG_FULL, v, off);
            const unsigned long long p2 = __shfl_xor_sync(MPG_FULL, p, off);
            if (v2 > v || (v2 == v && p2 < p))
                v = v2, p = p2;
        }
        if (lane == 0 && p != MPP_NOPAIR)
            merge_pair(a, v, p);
    }
}

extern "C" tsm_status tsmi_mp_best_pair_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t excl,
                                             const uint8_t *mask, size_t b0, size_t b1,
                                             tsm_mp_pair *best) {
    tsm_status st = TSM_OK;
    cudaStream_t stream = tsmi_stream(ctx);
    const size_t N = s->N, m = s->m, P = N + MPG_W + MPG_H, nb = b1 - b0;
    const size_t smem = (5 * (MPG_W + MPG_H) + 4 * MPG_H) * sizeof(double);
    mpg_inputs in = {};
    double *plan = NULL;
    uint8_t *d_mask = NULL;
    long long *first = NULL, *h_first = NULL;
    unsigned long long *keypair = NULL, h_keypair[2];
    int *lock = NULL;
    long long items = 0;
    mpp_args a;

    if (N > MPG_MAX_N)
        return tsm_fail(ctx, TSM_EINVAL,
                        "tsm_mp_best_pair: %zu subsequences is more than the CUDA backend's %zu", N,
                        MPG_MAX_N);
    if (nb == 0)
        return TSM_OK;
    if ((st = mpg_inputs_get(ctx, s, stream, &in)) != TSM_OK)
        goto done;
    h_first = (long long *)malloc((nb + 1) * sizeof *h_first);
    if (!h_first) {
        st = tsm_fail(ctx, TSM_ENOMEM, "tsm_mp_best_pair: out of host memory for %zu bands", nb);
        goto done;
    }
    items = mpg_items(N, excl, b0, nb, h_first);
    TSM_CUDA_ALLOC(ctx, plan, 3 * P * sizeof(double));
    TSM_CUDA_ALLOC(ctx, first, (nb + 1) * sizeof(long long));
    TSM_CUDA_ALLOC(ctx, keypair, 2 * sizeof(unsigned long long));
    TSM_CUDA_ALLOC(ctx, lock, sizeof(int));
    if (mask) {
        TSM_CUDA_ALLOC(ctx, d_mask, N);
        TSM_CUDA_TRY(ctx, cudaMemcpyAsync(d_mask, mask, N, cudaMemcpyHostToDevice, stream));
    }
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(first, h_first, (nb + 1) * sizeof(long long),
                                      cudaMemcpyHostToDevice, stream));
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(keypair, 0, sizeof(unsigned long long), stream));
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(keypair + 1, 0xff, sizeof(unsigned long long), stream));
    TSM_CUDA_TRY(ctx, cudaMemsetAsync(lock, 0, sizeof(int), stream));
    mpg_prep_kernel<<<tsmi_blocks(P, 256), 256, 0, stream>>>(in.t, in.mu, in.inv, in.kind, d_mask,
                                                             N, m, P, plan, plan + P, plan + 2 * P);
    TSM_CUDA_LAUNCHED(ctx);
    a.t = in.t, a.mu = in.mu, a.df = plan, a.dg = plan + P, a.inv = plan + 2 * P;
    a.first = first, a.nb = (int)nb, a.band0 = (int)b0, a.N = (int)N, a.m = (int)m;
    a.excl = (int)excl, a.key = keypair, a.pair = keypair + 1, a.lock = lock;
    TSM_CUDA_TRY(ctx, cudaFuncSetAttribute(pair_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)smem));
    { /* launches as mp.cu's: about 100 with a progress hook, else as few as fit */
        const int prog = tsmi_progress_on(ctx);
        long long chunk = prog ? (items + MPG_STEPS - 1) / MPG_STEPS : MPG_CHUNK;
        chunk = chunk < 1 ? 1 : chunk > MPG_CHUNK ? MPG_CHUNK : chunk;
        for (long long base = 0; base < items; base += chunk) {
            const unsigned grid = (unsigned)(items - base < chunk ? items - base : chunk);
            a.item0 = base;
            pair_kernel<<<grid, MPP_B, smem, stream>>>(a);
            TSM_CUDA_LAUNCHED(ctx);
            if (prog) {
                TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
                tsmi_progress(ctx, "motif", (uint64_t)(base + grid), (uint64_t)items);
            }
        }
    }
    TSM_CUDA_TRY(
        ctx, cudaMemcpyAsync(h_keypair, keypair, sizeof h_keypair, cudaMemcpyDeviceToHost, stream));
    TSM_CUDA_TRY(ctx, cudaStreamSynchronize(stream));
    if (h_keypair[0] != 0)
        *best = tsm_mp_pair{key_corr(h_keypair[0]), (int64_t)(h_keypair[1] >> 32),
                            (int64_t)(h_keypair[1] & 0xffffffffull)};
done:
    if (st != TSM_OK && st != TSM_EDEVICE)
        cudaStreamSynchronize(stream); /* nothing queued may still use what is freed below */
    mpg_inputs_free(&in);
    cudaFree(plan), cudaFree(d_mask), cudaFree(first), cudaFree(keypair), cudaFree(lock);
    free(h_first);
    return st;
}
