/* SPDX-License-Identifier: Apache-2.0 */
/* mp_tile.cuh - the work grid and tile pieces of the matrix profile's CUDA traversal,
 * shared by the profile (mp.cu) and the best pair (mp_pair.cu), so that both compute
 * every pair's correlation from the same starts and the same updates (mp.cu's opening
 * comment describes the grid: bands of MPG_W diagonals, work items of MPG_S rows,
 * sub-tiles of MPG_H rows, MPG_D diagonals by MPG_U rows per register block). */
#ifndef TSM_MP_TILE_CUH
#define TSM_MP_TILE_CUH

#include "cuda_util.cuh"
#include "stats.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define MPG_D 4   /* diagonals per thread */
#define MPG_U 4   /* rows per register block */
#define MPG_B 256 /* threads per block */
#ifndef MPG_H
#define MPG_H 256 /* rows per sub-tile (one fill of shared memory) */
#endif
#ifndef MPG_S
#define MPG_S 2048 /* rows per work item: covariances are exact at each item's start */
#endif
#define MPG_NW    (MPG_B / 32)                      /* warps per block */
#define MPG_W     (MPG_B * MPG_D)                   /* diagonals per band */
#define MPG_CW    (MPG_H + 32 * MPG_D)              /* column slots per warp */
#define MPG_FULL  0xffffffffu                       /* all lanes */
#define MPG_NONE  0x7fffffff                        /* index of an empty slot */
#define MPG_FLOOR (-2.0)                            /* below every correlation of normal pairs */
#define MPG_CHUNK (1ll << 30)                       /* work items per launch at most */
#define MPG_STEPS 100                               /* launches when progress is reported */
#define MPG_MAX_N ((size_t)0x7fffffff - (1u << 16)) /* indices are int on the device */

static_assert(MPG_D == 4 && MPG_U == 4, "the 16-byte loads and slot merges assume 4 x 4 blocks");
static_assert(MPG_H % MPG_U == 0 && MPG_S % MPG_H == 0, "tiles must nest");
static_assert(MPG_B % 32 == 0, "whole warps");

/* Order-preserving map of a non-NaN double to 64 bits: a < b iff key(a) < key(b),
 * with -0 and +0 one key. Key 0 lies below every double and means "none". */
__device__ static inline unsigned long long corr_key(double v) {
    if (v == 0.0)
        v = 0.0;
    const unsigned long long b = (unsigned long long)__double_as_longlong(v);
    return (b >> 63) ? ~b : b | 0x8000000000000000ull;
}

/* Inverse of corr_key; -inf for "none". Host code reads the keys it copies back too. */
__host__ __device__ static inline double key_corr(unsigned long long k) {
    if (k == 0)
        return -INFINITY;
    const unsigned long long b = (k >> 63) ? k & 0x7fffffffffffffffull : ~k;
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* Thread p < P (the padded length): df, dg of mp.c's make_plan (0 where k + 1 >= N:
 * the recurrence never leaves those), and inv, NaN for subsequences that are not
 * normal, that mask leaves out (mask may be NULL) and for the padding. */
__global__ static void mpg_prep_kernel(const double *__restrict__ t, const double *__restrict__ mu,
                                       const double *__restrict__ inv,
                                       const uint8_t *__restrict__ kind,
                                       const uint8_t *__restrict__ mask, size_t N, size_t m,
                                       size_t P, double *__restrict__ df, double *__restrict__ dg,
                                       double *__restrict__ ninv) {
    const size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= P)
        return;
    const bool last = k + 1 >= N;
    df[k] = last ? 0.0 : (t[k + m] - t[k]) / 2;
    dg[k] = last ? 0.0 : (t[k + m] - mu[k + 1]) + (t[k] - mu[k]);
    ninv[k] = k < N && kind[k] == TSM_SUB_NORMAL && !(mask && mask[k]) ? inv[k] : NAN;
}

/* cov(i, j + d), d < MPG_D, directly from centred values: O(m MPG_D). Diagonals past
 * the matrix (j + d >= N) get 0; all their pairs are masked. */
__device__ static void mpg_exact_cov(const double *t, const double *mu, int N, int m, int i, int j,
                                     double cov[MPG_D]) {
    const int nd = N - j; /* diagonals of this thread inside the matrix, if < MPG_D */
    const double mi = mu[i];
    double mj[MPG_D];
#pragma unroll
    for (int d = 0; d < MPG_D; d++) {
        cov[d] = 0.0;
        mj[d] = d < nd ? mu[j + d] : 0.0;
    }
    if (nd <= 0)
        return;
    for (int q = 0; q < m; q++) {
        const double x = t[i + q] - mi;
#pragma unroll
        for (int d = 0; d < MPG_D; d++)
            if (d < nd)
                cov[d] = fma(x, t[j + d + q] - mj[d], cov[d]);
    }
}

/* The band of work item `item`: the largest b < nb with first[b] <= item. */
__device__ static int mpg_item_band(const long long *first, int nb, long long item) {
    int bl = 0, bh = nb - 1;
    while (bl < bh) {
        const int mid = (bl + bh + 1) / 2;
        if (first[mid] <= item)
            bl = mid;
        else
            bh = mid - 1;
    }
    return bl;
}

/* Shared-memory index of entry q of a column array split into `ways` parts of `part`
 * entries each (ways a power of two): q's 16-byte pair q / 2 goes to part
 * (q / 2) % ways, at entry 2 (q / (2 ways)) + q % 2 there. A register block reads four
 * consecutive entries per lane as two 16-byte loads, lanes 4 ways entries apart (the
 * profile: 4 diagonals a thread, ways 2; the best pair: 8, ways 4); in a plain array
 * those loads' lanes lie 16 ways bytes apart and hit each bank `ways` times (that many
 * times the shared-memory wavefronts, which bound both kernels), split they lie 16
 * bytes apart. */
__host__ __device__ __forceinline__ static int mpg_split_ix(int q, int ways, int part) {
    const unsigned u = (unsigned)q >> 1;
    return (int)((u & (unsigned)(ways - 1)) * (unsigned)part + u / (unsigned)ways * 2u +
                 ((unsigned)q & 1u));
}

#define MPG_CH ((MPG_W + MPG_H) / 2) /* half of a sub-tile's column array (the profile's) */
static_assert(MPG_CH % 2 == 0 && MPG_CW % 4 == 0, "split parts must keep 16-byte alignment");

/* Column data of four consecutive columns of a register block: df, dg and v (the
 * profile: inv; the best pair: its filter threshold). */
typedef struct {
    double df[4], dg[4], v[4];
} mpg_cols;

/* Entries c .. c + 3 (c % 4 == 0) of a split array (mpg_split_ix with ways, part)
 * into x, with two 16-byte loads: c + 2's pair lies in the next part at c's entry. */
__device__ __forceinline__ static void mpg_load4(const double *a, int c, int ways, int part,
                                                 double x[4]) {
    const int a0 = mpg_split_ix(c & ~3, ways, part); /* c & ~3 == c: said so it folds */
    const double2 lo = *(const double2 *)(a + a0), hi = *(const double2 *)(a + a0 + part);
    x[0] = lo.x, x[1] = lo.y, x[2] = hi.x, x[3] = hi.y;
}

/* Columns c .. c + 3 (c % 4 == 0) of a sub-tile's split column arrays into x. */
__device__ __forceinline__ static void mpg_load_cols(const double *cdf, const double *cdg,
                                                     const double *cv, int c, int ways, int part,
                                                     mpg_cols &x) {
    mpg_load4(cdf, c, ways, part, x.df);
    mpg_load4(cdg, c, ways, part, x.dg);
    mpg_load4(cv, c, ways, part, x.v);
}

/* The first work item of each of the bands b0 .. b0 + nb - 1 into first[0 .. nb - 1],
 * and the total into first[nb]: band b (diagonals excl + b MPG_W + [0, MPG_W)) has
 * N - k0 rows, cut into items of MPG_S. Returns the total. */
static inline long long mpg_items(size_t N, size_t excl, size_t b0, size_t nb, long long *first) {
    long long items = 0;
    for (size_t b = 0; b < nb; b++) {
        first[b] = items;
        items += (long long)((N - excl - (b0 + b) * MPG_W + MPG_S - 1) / MPG_S);
    }
    first[nb] = items;
    return items;
}

/* The traversal's inputs on the device: s's own device copies, or uploads of its host
 * arrays (a CPU ctx made the statistics), which mpg_inputs_free releases. */
typedef struct {
    const double *t, *mu, *inv;
    const uint8_t *kind;
    double *up_t, *up_mu, *up_inv;
    uint8_t *up_kind;
} mpg_inputs;

static inline tsm_status mpg_inputs_get(tsm_ctx *ctx, const tsm_stats *s, cudaStream_t stream,
                                        mpg_inputs *in) {
    tsm_status st = TSM_OK;
    const size_t n = s->n, N = s->N;
    *in = mpg_inputs{};
    if (s->dev) {
        in->t = s->dev->t, in->mu = s->dev->mu, in->inv = s->dev->inv, in->kind = s->dev->kind;
        return TSM_OK;
    }
    TSM_CUDA_ALLOC(ctx, in->up_t, n * sizeof(double));
    TSM_CUDA_ALLOC(ctx, in->up_mu, N * sizeof(double));
    TSM_CUDA_ALLOC(ctx, in->up_inv, N * sizeof(double));
    TSM_CUDA_ALLOC(ctx, in->up_kind, N);
    TSM_CUDA_TRY(
        ctx, cudaMemcpyAsync(in->up_t, s->t, n * sizeof(double), cudaMemcpyHostToDevice, stream));
    TSM_CUDA_TRY(
        ctx, cudaMemcpyAsync(in->up_mu, s->mu, N * sizeof(double), cudaMemcpyHostToDevice, stream));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(in->up_inv, s->inv, N * sizeof(double),
                                      cudaMemcpyHostToDevice, stream));
    TSM_CUDA_TRY(ctx, cudaMemcpyAsync(in->up_kind, s->kind, N, cudaMemcpyHostToDevice, stream));
    in->t = in->up_t, in->mu = in->up_mu, in->inv = in->up_inv, in->kind = in->up_kind;
done:
    return st;
}

static inline void mpg_inputs_free(mpg_inputs *in) {
    cudaFree(in->up_t), cudaFree(in->up_mu), cudaFree(in->up_inv), cudaFree(in->up_kind);
    *in = mpg_inputs{};
}

#endif
