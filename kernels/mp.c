/* SPDX-License-Identifier: Apache-2.0 */
/* mp.c - the matrix profile on the CPU (OpenMP): diagonal traversal of the upper
 * triangle of the QT matrix, in tiles of MP_W diagonals by MP_H rows. On a CUDA ctx
 * tsm_mp hands over to mp.cu, which shares the last pass (tsmi_mp_finish: merge of
 * the left and right bests and the conventions for constants) with this file.
 *
 * Math. On the centred covariance cov(i,j) = QT[i][j] - m mu_i mu_j the correlation
 * is corr = cov(i,j) inv_i inv_j (distance.h), and along a diagonal (SCAMP's update,
 * exact in real arithmetic for any means mu_k):
 *   cov(i+1,j+1) = cov(i,j) + df[i] dg[j] + df[j] dg[i],
 *   df[k] = (t[k+m] - t[k]) / 2,   dg[k] = (t[k+m] - mu[k+1]) + (t[k] - mu[k]).
 * (Expand with t[k+m] - t[k] = m (mu[k+1] - mu[k]): the products give
 * t[i+m] t[j+m] - t[i] t[j], the mean terms m (mu_i' mu_j' - mu_i mu_j).) Its terms are
 * centred, so it drifts far less than the QT recurrence; each tile still starts from
 * an exactly computed cov, so the error is bounded by MP_H steps for any n.
 *
 * Traversal. Pair (i, j = i + k), k >= excl, updates row i's right best and column
 * j's left best; nn(i) is the better of the two, lnn(i) the left one. Everything runs
 * in correlation space (max corr = min distance), clamped at 1 so that exact matches
 * tie. A tile is the W diagonals k0..k0+W-1 over rows i0..i1-1: for a fixed row i the
 * columns j = i + k0 + w are contiguous, so the W lanes are SIMD vectors. Non-normal
 * subsequences carry inv = NaN, which makes every correlation involving them NaN and
 * every comparison with it false: they never win, at no cost in the hot loop. The
 * conventions for constants (d2 = 0 or m) are applied afterwards in O(N).
 *
 * Parallelism. Blocks of MP_W diagonals go to OpenMP threads dynamically, longest
 * first; each thread keeps its own row and column bests (O(N) per thread), and the
 * threads' results are merged per subsequence at the end.
 *
 * Determinism. cov values depend only on the tile grid (fixed, whatever the thread
 * count), and every merge of partial results compares (corr, index) - larger corr,
 * then smaller index - so ties go to the smaller index and 1 thread and T threads give
 * bitwise identical profiles. */
#include "mp.h"

#include "dispatch.h"
#include "mp_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#if TSMI_HAVE_AVX512
#include <immintrin.h>
#endif

/* One thread's partial results: best right neighbour of each row (rv: corr, ri:
 * index) and best left neighbour of each column (lv, li). */
typedef struct {
    double *rv, *lv;
    int64_t *ri, *li;
    double *cv; /* portable kernel only: column bests of one tile (MP_H + MP_W) */
    int64_t *ci;
} mp_best;

/* Whether (v, idx) beats (best, best_idx): larger correlation, then smaller index. */
static inline int beats(double v, int64_t idx, double best, int64_t best_idx) {
    return tsm_mp_beats(v, idx, best, best_idx);
}

static inline void merge_left(mp_best *b, size_t j, double v, int64_t idx) {
    if (beats(v, idx, b->lv[j], b->li[j]))
        b->lv[j] = v, b->li[j] = idx;
}

static inline void merge_right(mp_best *b, size_t i, double v, int64_t idx) {
    if (beats(v, idx, b->rv[i], b->ri[i]))
        b->rv[i] = v, b->ri[i] = idx;
}

#if TSMI_HAVE_AVX512
/* Tile of diagonals k0..k0+MP_W-1, rows i0..i1-1, with AVX-512: O((i1 - i0) MP_W).
 * The column bests of the W columns a row touches live in registers: row i's lane w
 * is column i + k0 + w, which is lane w - 1 of row i + 1, so after each row the
 * vectors shift down one lane (valignq); the column leaving lane 0 has seen all its
 * rows of the tile and is merged into the thread's left bests. The row best is a
 * per-lane max, compared with the thread's right best of the row as a vector; only
 * when some lane reaches it (rare after the first tiles) is the argmax found. */
TSMI_TARGET_AVX512 static void tile_avx512(const mp_plan *p, mp_best *b, size_t k0, size_t i0,
                                           size_t i1, int rows) {
    enum { V = MP_W / 8 };
    const double *df = p->df, *dg = p->dg, *inv = p->inv;
    double init[MP_W];
    tsmi_mp_exact_cov(p, i0, i0 + k0, init);

    const __m512d ninf = _mm512_set1_pd(-INFINITY), one = _mm512_set1_pd(1.0);
    __m512d cov[V], colv[V];
    __m512i coli[V];
    for (int v = 0; v < V; v++) {
        cov[v] = _mm512_loadu_pd(init + 8 * v);
        colv[v] = ninf;
        coli[v] = _mm512_set1_epi64(-1);
    }
    for (size_t i = i0; i < i1; i++) {
        const size_t j0 = i + k0;
        const __m512d invi = _mm512_set1_pd(inv[i]);
        const __m512d dfi = _mm512_set1_pd(df[i]), dgi = _mm512_set1_pd(dg[i]);
        const __m512i iv = _mm512_set1_epi64((int64_t)i);
        __m512d corr[V], rmax = ninf;
        for (int v = 0; v < V; v++) {
            const double *jp = inv + j0 + 8 * v;
            /* min(1, c) clamps and keeps NaN (the second operand wins on NaN). */
            __m512d c = _mm512_mul_pd(_mm512_mul_pd(cov[v], invi), _mm512_loadu_pd(jp));
            c = _mm512_min_pd(one, c);
            corr[v] = c;
            rmax = _mm512_max_pd(c, rmax); /* NaN c keeps rmax */
            __mmask8 gt = _mm512_cmp_pd_mask(c, colv[v], _CMP_GT_OQ);
            colv[v] = _mm512_mask_mov_pd(colv[v], gt, c);
            coli[v] = _mm512_mask_mov_epi64(coli[v], gt, iv);
            cov[v] = tsmi_mp_step_avx512(cov[v], dfi, dgi, dg + j0 + 8 * v, df + j0 + 8 * v);
        }
        if (rows && _mm512_cmp_pd_mask(rmax, _mm512_set1_pd(b->rv[i]), _CMP_GE_OQ)) {
            double r = _mm512_reduce_max_pd(rmax);
            if (r > -INFINITY) {
                const __m512d rb = _mm512_set1_pd(r);
                for (int v = 0; v < V; v++) {
                    __mmask8 eq = _mm512_cmp_pd_mask(corr[v], rb, _CMP_EQ_OQ);
                    if (eq) {
                        merge_right(b, i, r, (int64_t)(j0 + 8 * v + (size_t)__builtin_ctz(eq)));
                        break;
                    }
                }
            }
        }
        merge_left(b, j0, _mm512_cvtsd_f64(colv[0]),
                   _mm_cvtsi128_si64(_mm512_castsi512_si128(coli[0])));
        for (int v = 0; v < V; v++) {
            __m512i nv = v + 1 < V ? _mm512_castpd_si512(colv[v + 1]) : _mm512_castpd_si512(ninf);
            __m512i ni = v + 1 < V ? coli[v + 1] : _mm512_set1_epi64(-1);
            colv[v] = _mm512_castsi512_pd(_mm512_alignr_epi64(nv, _mm512_castpd_si512(colv[v]), 1));
            coli[v] = _mm512_alignr_epi64(ni, coli[v], 1);
        }
    }
    /* Columns still in flight: i1 + k0 + w, w < MP_W - 1. */
    double lv[MP_W];
    int64_t li[MP_W];
    for (int v = 0; v < V; v++) {
        _mm512_storeu_pd(lv + 8 * v, colv[v]);
        _mm512_storeu_si512(li + 8 * v, coli[v]);
    }
    for (size_t w = 0; w + 1 < MP_W && i1 + k0 + w < p->N; w++)
        merge_left(b, i1 + k0 + w, lv[w], li[w]);
}
#endif

/* The same tile in plain C (CPUs without AVX-512, other architectures): column bests
 * in a tile-local buffer indexed by j - (i0 + k0), merged at the end of the tile. Each
 * row is a few simple loops over the lanes that the compiler vectorises (TSMI_HOT:
 * AVX2 + FMA where the CPU has it); the row's argmax is searched only when some lane
 * reaches the thread's best of the row. O((i1 - i0) MP_W). */
TSMI_HOT static void tile_portable(const mp_plan *p, mp_best *b, size_t k0, size_t i0, size_t i1,
                                   int rows) {
    const double *df = p->df, *dg = p->dg, *inv = p->inv;
    double cov[MP_W], corr[MP_W];
    tsmi_mp_exact_cov(p, i0, i0 + k0, cov);
    size_t ncol = i1 - i0 + MP_W - 1;
    for (size_t c = 0; c < ncol; c++)
        b->cv[c] = -INFINITY, b->ci[c] = -1;
    for (size_t i = i0; i < i1; i++) {
        const size_t j0 = i + k0;
        const double invi = inv[i], dfi = df[i], dgi = dg[i], rbest = b->rv[i];
        const double *invj = inv + j0, *dfj = df + j0, *dgj = dg + j0;
        double *cv = b->cv + (i - i0);
        int64_t *ci = b->ci + (i - i0);
        int hit = 0;
        for (size_t w = 0; w < MP_W; w++) {
            double c = cov[w] * invi * invj[w];
            c = c > 1.0 ? 1.0 : c; /* NaN stays NaN */
            corr[w] = c;
            hit |= c >= rbest;
            int gt = c > cv[w]; /* strict: rows come in increasing order */
            ci[w] = gt ? (int64_t)i : ci[w];
            cv[w] = gt ? c : cv[w];
            cov[w] += dfi * dgj[w] + dgi * dfj[w];
        }
        if (rows && hit) {
            double r = -INFINITY;
            int64_t rj = -1;
            for (size_t w = 0; w < MP_W; w++)
                if (corr[w] > r) /* strict: the smaller j wins ties */
                    r = corr[w], rj = (int64_t)(j0 + w);
            merge_right(b, i, r, rj);
        }
    }
    for (size_t c = 0; c < ncol && i0 + k0 + c < p->N; c++)
        merge_left(b, i0 + k0 + c, b->cv[c], b->ci[c]);
}

/* Squared distance (distance.h's formula) from a correlation the kernels already
 * clamped at 1. */
static inline double d2_of_corr(double c, size_t m) {
    c = c < -1.0 ? -1.0 : c;
    return 2.0 * (double)m * (1.0 - c);
}

/* next[p] = smallest index >= p whose kind is k (N when none), p <= N. O(N). */
static void next_of_kind(const uint8_t *kind, size_t N, int k, int64_t *next) {
    next[N] = (int64_t)N;
    for (size_t q = N; q-- > 0;)
        next[q] = kind[q] == k ? (int64_t)q : next[q + 1];
}

/* Smallest index of kind k (per next[]) that is a non-self-match of i (left: only
 * j <= i - excl); -1 when none. O(1). */
static int64_t first_eligible(const int64_t *next, size_t N, size_t i, size_t excl, int left) {
    int64_t first = next[0];
    if (first < (int64_t)N && i >= excl && (size_t)first <= i - excl)
        return first;
    if (left || excl >= N - i)
        return -1;
    int64_t j = next[i + excl];
    return j < (int64_t)N ? j : -1;
}

/* Final (dist, index) of subsequence i from its best normal neighbour (corr c,
 * index j; c = -inf when none), applying the conventions for constants. */
static void finish(const tsm_stats *s, const int64_t *next_c, const int64_t *next_n, size_t i,
                   size_t excl, int left, double c, int64_t j, double *dist, int64_t *index) {
    size_t N = s->N, m = s->m;
    double d2 = INFINITY;
    int64_t nb = -1;
    switch (s->kind[i]) {
    case TSM_SUB_NONFINITE: *dist = NAN, *index = -1; return;
    case TSM_SUB_NORMAL:
        if (c > -INFINITY)
            d2 = d2_of_corr(c, m), nb = j;
        if (next_c) {
            int64_t jc = first_eligible(next_c, N, i, excl, left);
            if (jc >= 0 && ((double)m < d2 || ((double)m == d2 && jc < nb)))
                d2 = (double)m, nb = jc;
        }
        break;
    case TSM_SUB_CONSTANT: {
        int64_t jc = first_eligible(next_c, N, i, excl, left);
        int64_t jn = first_eligible(next_n, N, i, excl, left);
        if (jc >= 0)
            d2 = 0.0, nb = jc;
        else if (jn >= 0)
            d2 = (double)m, nb = jn;
        break;
    }
    }
    *dist = sqrt(d2);
    *index = nb;
}

/* Both profiles of subsequence i from its best left (lc, lj) and right (rc, rj) normal
 * neighbours (corr = -inf when none); next holds next_of_kind for constants then
 * normals (NULL when the series has no constants). Left indices are smaller than
 * right ones, so the left neighbour wins ties. */
static void finish_both(const tsm_stats *s, const int64_t *next, size_t i, size_t excl, double lc,
                        int64_t lj, double rc, int64_t rj, double *mp, int64_t *mpi, double *lmp,
                        int64_t *lmpi) {
    const int64_t *nc = next, *nn = next ? next + s->N + 1 : NULL;
    if (lmp)
        finish(s, nc, nn, i, excl, 1, lc, lj, &lmp[i], &lmpi[i]);
    if (mp) {
        if (rc > lc)
            lc = rc, lj = rj;
        finish(s, nc, nn, i, excl, 0, lc, lj, &mp[i], &mpi[i]);
    }
}

/* next_of_kind for constants (next[0..N]) and normals (next[N+1..2N+1]) in one
 * allocation, or NULL (with *st = TSM_OK) when the series has no constants. */
static int64_t *make_next(tsm_ctx *ctx, const tsm_stats *s, tsm_status *st) {
    *st = TSM_OK;
    if (s->n_constant == 0)
        return NULL;
    int64_t *next = malloc(2 * (s->N + 1) * sizeof *next);
    if (!next) {
        *st = tsm_fail(ctx, TSM_ENOMEM, "tsm_mp: out of memory for a profile of %zu subsequences",
                       s->N);
        return NULL;
    }
    next_of_kind(s->kind, s->N, TSM_SUB_CONSTANT, next);
    next_of_kind(s->kind, s->N, TSM_SUB_NORMAL, next + s->N + 1);
    return next;
}

tsm_status tsmi_mp_finish(tsm_ctx *ctx, const tsm_stats *s, size_t excl, const double *lc,
                          const int64_t *lj, const double *rc, const int64_t *rj, double *mp,
                          int64_t *mpi, double *lmp, int64_t *lmpi) {
    tsm_status st;
    int64_t *next = make_next(ctx, s, &st);
    if (st != TSM_OK)
        return st;
    const size_t N = s->N;
    int T = tsm_ctx_threads(ctx);
    if (T < 1)
        T = 1;
    (void)T;
#pragma omp parallel for schedule(static) num_threads(T)
    for (size_t i = 0; i < N; i++)
        finish_both(s, next, i, excl, lc[i], lj[i], rc ? rc[i] : -INFINITY, rc ? rj[i] : -1, mp,
                    mpi, lmp, lmpi);
    free(next);
    return TSM_OK;
}

/* The working memory of a traversal: the plan and, per thread, its row and column
 * bests and tile buffer (per entries each in vals and idxs). */
typedef struct {
    mp_plan p;
    double *plan_mem, *vals;
    int64_t *idxs;
    size_t per;
    int T;    /* threads asked for */
    int team; /* threads that ran, and have partial results */
} mp_work;

static void work_free(mp_work *w) {
    free(w->plan_mem), free(w->vals), free(w->idxs);
}

/* Allocates the working memory of a traversal of nblk bands on ctx's threads (at most
 * one per band). O(n + T N) memory. */
static tsm_status work_alloc(tsm_ctx *ctx, const tsm_stats *s, size_t nblk, mp_work *w) {
    const size_t N = s->N;
    int T = tsm_ctx_threads(ctx);
    if (T < 1)
        T = 1;
    if ((size_t)T > nblk)
        T = nblk > 0 ? (int)nblk : 1;
    memset(w, 0, sizeof *w);
    w->T = w->team = T;
    w->per = 2 * N + MP_H + MP_W; /* per thread: rv, lv, then the tile buffer */
    w->plan_mem = tsmi_mp_make_plan(s, NULL, &w->p);
    w->vals = malloc((size_t)T * w->per * sizeof *w->vals);
    w->idxs = malloc((size_t)T * w->per * sizeof *w->idxs);
    if (!w->plan_mem || !w->vals || !w->idxs) {
        work_free(w);
        return tsm_fail(ctx, TSM_ENOMEM, "tsm_mp: out of memory for a profile of %zu subsequences",
                        N);
    }
    return TSM_OK;
}

/* Runs the tiles of the bands b0 .. b1-1 (band b: diagonals excl + b MP_W + [0, MP_W))
 * on w's threads, each into its own bests; sets w->team. Longest bands first, handed
 * out dynamically. O(pairs / threads). */
static void run_bands(const tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t b0, size_t b1,
                      int rows, mp_work *w) {
    const size_t N = s->N, per = w->per;
    const mp_plan *p = &w->p;
    int team = 1;
    /* Progress (tsm_ctx_set_progress): rows of the bands' tiles done, of all. */
    const int prog = tsmi_progress_on(ctx);
    uint64_t work = 0, done = 0;
    for (size_t blk = b0; prog && blk < b1; blk++)
        work += N - (excl + blk * MP_W);
    /* The AVX-512 tile where this CPU has it (dispatch.h), else the portable one. */
    const int wide = tsmi_cpu_avx512();
    (void)wide; /* unused where no AVX-512 tile is built */
#pragma omp parallel num_threads(w->T)
    {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
        if (tid == 0)
            team = omp_get_num_threads(); /* may be fewer than asked for */
#endif
        double *vb = w->vals + (size_t)tid * per;
        int64_t *xb = w->idxs + (size_t)tid * per;
        mp_best b = {vb, vb + N, xb, xb + N, vb + 2 * N, xb + 2 * N};
        /* Rows that are not normal start at +inf so the row test never fires. */
        for (size_t i = 0; i < N; i++) {
            b.rv[i] = s->kind[i] == TSM_SUB_NORMAL ? -INFINITY : INFINITY;
            b.lv[i] = -INFINITY;
            b.ri[i] = b.li[i] = -1;
        }
#pragma omp for schedule(dynamic, 1)
        for (size_t blk = b0; blk < b1; blk++) {
            size_t k0 = excl + blk * MP_W;
            for (size_t i0 = 0; i0 < N - k0; i0 += MP_H) {
                size_t i1 = N - k0 - i0 < MP_H ? N - k0 : i0 + MP_H;
#if TSMI_HAVE_AVX512
                if (wide)
                    tile_avx512(p, &b, k0, i0, i1, rows);
                else
#endif
                    tile_portable(p, &b, k0, i0, i1, rows);
            }
            if (prog) {
                uint64_t now;
#pragma omp atomic capture
                now = done += N - k0;
                if (tid == 0) /* one thread reports: the hook is called one at a time */
                    tsmi_progress(ctx, "profile", now, work);
            }
        }
    }
    w->team = team;
}

/* The best left (lc, lj) and right (rc, rj) neighbour of subsequence i over the
 * threads' partial results: larger corr, then smaller index. O(threads). */
static void merge_threads(const mp_work *w, size_t N, size_t i, int rows, double *lc, int64_t *lj,
                          double *rc, int64_t *rj) {
    *lc = *rc = -INFINITY;
    *lj = *rj = -1;
    for (int q = 0; q < w->team; q++) {
        const double *v = w->vals + (size_t)q * w->per;
        const int64_t *x = w->idxs + (size_t)q * w->per;
        if (beats(v[N + i], x[N + i], *lc, *lj))
            *lc = v[N + i], *lj = x[N + i];
        if (rows && beats(v[i], x[i], *rc, *rj))
            *rc = v[i], *rj = x[i];
    }
}

tsm_status tsm_mp(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double *mp, int64_t *mpi,
                  double *lmp, int64_t *lmpi) {
    if (!s)
        return tsm_fail(ctx, TSM_EINVAL, "tsm_mp: no statistics given");
    tsm_status st = tsm_check_shape(ctx, s->n, s->m, excl);
    if (st != TSM_OK)
        return st;
    if (!mp != !mpi || !lmp != !lmpi)
        return tsm_fail(ctx, TSM_EINVAL,
                        "tsm_mp: a profile needs both its distance and index arrays");
    if (!mp && !lmp)
        return TSM_OK;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_mp_cuda(ctx, s, excl, mp, mpi, lmp, lmpi);
#endif

    const size_t N = s->N;
    const int rows = mp != NULL;
    const size_t nblk = tsmi_mp_band_count(N, excl, MP_W);
    mp_work w;
    int64_t *next = make_next(ctx, s, &st);
    if (st != TSM_OK)
        return st;
    if ((st = work_alloc(ctx, s, nblk, &w)) != TSM_OK) {
        free(next);
        return st;
    }
    run_bands(ctx, s, excl, 0, nblk, rows, &w);
    /* Merge the threads' partial results and finish each subsequence. */
#pragma omp parallel for schedule(static) num_threads(w.T)
    for (size_t i = 0; i < N; i++) {
        double lc, rc;
        int64_t lj, rj;
        merge_threads(&w, N, i, rows, &lc, &lj, &rc, &rj);
        finish_both(s, next, i, excl, lc, lj, rc, rj, mp, mpi, lmp, lmpi);
    }
    work_free(&w);
    free(next);
    return TSM_OK;
}

size_t tsm_mp_bands(const tsm_ctx *ctx, size_t N, size_t excl) {
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_mp_band_count(N, excl, tsmi_mp_band_width_cuda());
#endif
    (void)ctx;
    return tsmi_mp_band_count(N, excl, MP_W);
}

uint64_t tsm_mp_band_pairs(const tsm_ctx *ctx, size_t N, size_t excl, size_t b) {
    size_t W = MP_W;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        W = tsmi_mp_band_width_cuda();
#endif
    (void)ctx;
    uint64_t pairs = 0;
    size_t k0 = excl + b * W;
    for (size_t k = k0; k < k0 + W && k < N; k++)
        pairs += N - k;
    return pairs;
}

void tsm_mp_split(const tsm_ctx *ctx, size_t N, size_t excl, size_t part, size_t parts, size_t *b0,
                  size_t *b1) {
    const size_t nb = tsm_mp_bands(ctx, N, excl);
    const double total = excl < N ? (double)(N - excl) * (double)(N - excl + 1) / 2 : 0.0;
    const double lo = total * (double)part / (double)parts,
                 hi = total * (double)(part + 1) / (double)parts;
    double run = 0.0;
    *b0 = *b1 = nb;
    for (size_t b = 0; b < nb; b++) {
        if (*b0 == nb && run >= lo)
            *b0 = b;
        if (run >= hi) {
            *b1 = b;
            break;
        }
        run += (double)tsm_mp_band_pairs(ctx, N, excl, b);
    }
    if (part == parts - 1)
        *b1 = nb;
    if (*b0 > *b1)
        *b0 = *b1;
}

tsm_status tsmi_mp_check_bands(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t b0, size_t b1,
                               const char *what) {
    tsm_status st = tsm_check_shape(ctx, s->n, s->m, excl);
    if (st != TSM_OK)
        return st;
    const size_t nblk = tsm_mp_bands(ctx, s->N, excl);
    if (b0 > b1 || b1 > nblk)
        return tsm_fail(ctx, TSM_EINVAL, "%s: bands [%zu, %zu) outside the %zu bands", what, b0, b1,
                        nblk);
    return TSM_OK;
}

tsm_status tsm_mp_part(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t b0, size_t b1,
                       double *lc, int64_t *lj, double *rc, int64_t *rj) {
    if (!s || !lc || !lj || !rc != !rj)
        return tsm_fail(ctx, TSM_EINVAL, "tsm_mp_part: missing statistics or output arrays");
    tsm_status st = tsmi_mp_check_bands(ctx, s, excl, b0, b1, "tsm_mp_part");
    if (st != TSM_OK)
        return st;
    const size_t N = s->N;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_mp_part_cuda(ctx, s, excl, b0, b1, lc, lj, rc, rj);
#endif
    const int rows = rc != NULL;
    mp_work w;
    if ((st = work_alloc(ctx, s, b1 - b0, &w)) != TSM_OK)
        return st;
    run_bands(ctx, s, excl, b0, b1, rows, &w);
#pragma omp parallel for schedule(static) num_threads(w.T)
    for (size_t i = 0; i < N; i++) {
        double l, r;
        int64_t li, ri;
        merge_threads(&w, N, i, rows, &l, &li, &r, &ri);
        lc[i] = l, lj[i] = li;
        if (rows) /* rows that are not normal kept their +inf start: none */
            rc[i] = s->kind[i] == TSM_SUB_NORMAL ? r : -INFINITY,
            rj[i] = s->kind[i] == TSM_SUB_NORMAL ? ri : -1;
    }
    work_free(&w);
    return TSM_OK;
}

tsm_status tsm_mp_finish(tsm_ctx *ctx, const tsm_stats *s, size_t excl, const double *lc,
                         const int64_t *lj, const double *rc, const int64_t *rj, double *mp,
                         int64_t *mpi, double *lmp, int64_t *lmpi) {
    if (!s || !lc || !lj || !rc != !rj || !mp != !mpi || !lmp != !lmpi || (mp && !rc))
        return tsm_fail(ctx, TSM_EINVAL, "tsm_mp_finish: missing inputs or output arrays");
    tsm_status st = tsm_check_shape(ctx, s->n, s->m, excl);
    if (st != TSM_OK)
        return st;
    return tsmi_mp_finish(ctx, s, excl, lc, lj, rc, rj, mp, mpi, lmp, lmpi);
}
