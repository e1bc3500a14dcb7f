/* SPDX-License-Identifier: Apache-2.0 */
/* pd3.c - PD3 range discords (seed 001) on the CPU: the OpenMP twin of pd3.cu.
 *
 * The N subsequences are cut into segments of seglen consecutive subsequences; one
 * segment is what one thread block processes on the GPU and one OpenMP iteration
 * here. Its subsequences are the local candidates. Rows of the QT matrix are
 * visited one subsequence j ("chunk subsequence") at a time; for a row the segment
 * keeps QTrow[tid] = QT[c0 + tid][j] for all its candidates c0 + tid, updated by
 * formula (9) of seed 001 in O(1) per element:
 *
 *   QTrow_j[tid] = QTrow_{j-1}[tid-1] - t[c0+tid-1] t[j-1] + t[c0+tid+m-1] t[j+m-1]
 *   QTrow_j[0]   = QTcol[j] = QT[c0][j]   (a direct dot product, O(m))
 *
 * so every value comes from a diagonal chain of at most seglen steps that starts
 * at an exact dot product: the drift is bounded by the segment length.
 *
 * Phase 1 (selection, Alg. 2): each segment scans the rows to its right
 * (j >= c + excl). A pair closer than r proves neither member is a discord: the
 * candidate is dropped (Bitmap.Subseq) and so is the row subsequence
 * (Bitmap.Neighbor). A segment whose candidates are all gone stops (early exit).
 * Then Subseq &= Neighbor (the conjunction kernel).
 * Phase 2 (refinement, Alg. 3): only segments with surviving candidates scan the
 * rows to their left (j <= c - excl), dropping candidates closer than r to anyone.
 * A survivor has then met every non-self-match at distance >= r on both sides, so the
 * survivors are exactly the range discords, and the minima kept on the way are their
 * exact nn distances and neighbours.
 *
 * The seed's chunks (seglen rows loaded into shared memory at a time) and its
 * right-padding with +inf (formula (8)) exist for the GPU's memory hierarchy and
 * load balance; here a row is one step of the scan and the last segment is simply
 * shorter.
 *
 * Backends: tsm_pd3_range validates its arguments and hands a CUDA ctx to
 * tsmi_pd3_range_cuda (pd3.cu), which runs the whole pass on the device; the top-k
 * driver below is shared by both backends and calls tsm_pd3_range for every r it
 * tries, so on CUDA the series stays on the device between passes. */
#include "pd3.h"

#include "dispatch.h"
#include "distance.h"
#include "dot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Rows whose chain-start dot products are computed together. */
#define COL_BLOCK 64

/* Per-segment working state (one per thread, reused across segments). */
typedef struct {
    size_t c0, len; /* candidates c0 .. c0+len-1 */
    size_t lo, hi;  /* lanes [lo, hi) hold every candidate still alive */
    size_t nalive;  /* candidates alive in [lo, hi) */
    double *col;    /* QT[c0 + lo][col_j0 ..]: the chain starts of the next rows */
    size_t col_j0, col_len;
    double *qt, *qt_prev;  /* QTrow for the current and previous row */
    double *mmu;           /* m * mu_c */
    double *inv;           /* 1/(sqrt(m) sigma_c), 0 unless normal */
    double *d2_normal_row; /* d2 of a special candidate to a normal row: m or +inf */
    double *d2_const_row;  /* d2 of any candidate to a constant row: 0, m or +inf */
    /* lane flags as 64-bit words, the width of the doubles beside them, so the row
     * loop vectorises without conversions */
    int64_t *normal; /* candidate is normal */
    int64_t *alive;  /* Bitmap.Subseq for the segment */
    double *best;    /* smallest d2 met so far */
    int64_t *best_j; /* its row */
    uint64_t distances;
} segment;

static void segment_free(segment *g) {
    free(g->qt), free(g->qt_prev), free(g->col), free(g->mmu), free(g->inv);
    free(g->d2_normal_row), free(g->d2_const_row);
    free(g->normal), free(g->alive), free(g->best), free(g->best_j);
}

static int segment_alloc(segment *g, size_t seglen) {
    memset(g, 0, sizeof *g);
    g->qt = malloc(seglen * sizeof(double));
    g->qt_prev = malloc(seglen * sizeof(double));
    g->col = malloc(COL_BLOCK * sizeof(double));
    g->mmu = malloc(seglen * sizeof(double));
    g->inv = malloc(seglen * sizeof(double));
    g->d2_normal_row = malloc(seglen * sizeof(double));
    g->d2_const_row = malloc(seglen * sizeof(double));
    g->normal = malloc(seglen * sizeof(int64_t));
    g->alive = malloc(seglen * sizeof(int64_t));
    g->best = malloc(seglen * sizeof(double));
    g->best_j = malloc(seglen * sizeof(int64_t));
    if (!g->qt || !g->qt_prev || !g->col || !g->mmu || !g->inv || !g->d2_normal_row ||
        !g->d2_const_row || !g->normal || !g->alive || !g->best || !g->best_j) {
        segment_free(g);
        return -1;
    }
    return 0;
}

/* Narrows [lo, hi) to the first and last alive lanes; O(lanes skipped), so O(len)
 * per scan in all. */
static void narrow_live(segment *g) {
    while (g->lo < g->hi && !g->alive[g->lo])
        g->lo++;
    while (g->hi > g->lo && !g->alive[g->hi - 1])
        g->hi--;
}

/* Loads segment [c0, c0+len): per-candidate constants of the distance formula and
 * the special-case distances of DESIGN 3 (so the row loop stays branch-free).
 * alive starts from subseq (phase 1: finite candidates; phase 2: survivors). */
static void segment_load(segment *g, const tsm_stats *s, size_t c0, size_t len,
                         const uint8_t *subseq) {
    const double m = (double)s->m;
    g->c0 = c0, g->len = len;
    for (size_t tid = 0; tid < len; tid++) {
        size_t c = c0 + tid;
        int kind = s->kind[c];
        g->mmu[tid] = m * s->mu[c];
        g->inv[tid] = s->inv[c];
        g->normal[tid] = kind == TSM_SUB_NORMAL;
        g->d2_normal_row[tid] = kind == TSM_SUB_CONSTANT ? m : INFINITY;
        g->d2_const_row[tid] =
            kind == TSM_SUB_NORMAL ? m : (kind == TSM_SUB_CONSTANT ? 0.0 : INFINITY);
        g->alive[tid] = subseq[c];
        g->best[tid] = INFINITY;
        g->best_j[tid] = -1;
    }
    g->lo = 0, g->hi = len;
    narrow_live(g);
    g->nalive = 0;
    for (size_t tid = g->lo; tid < g->hi; tid++)
        g->nalive += g->alive[tid];
}

/* Moves a scan to row j (j_first <= j < j_end, rows visited in order) and makes
 * QTrow hold QT[c0 + tid][j] for the lanes [lo, hi).
 *
 * The first row of a scan is computed directly, O((hi - lo) m). After it, formula
 * (9) advances each lane from its diagonal predecessor in O(1); the lowest live lane
 * lo starts the chains with an exact value QT[c0 + lo][j] (the seed's QTcol when
 * lo = 0), computed for COL_BLOCK rows at a time, vectorised across rows. Lanes below
 * lo are dead for good, so nothing needs their values again; [lo, hi) narrows to the
 * live lanes at block boundaries, where the next column block is computed for the
 * new lo. */
TSMI_HOT static void advance_row(segment *g, const tsm_stats *s, size_t j, size_t j_first,
                                 size_t j_end) {
    if (j == j_first) {
        tsm_qt_row_direct(s, j, g->c0 + g->lo, g->hi - g->lo, g->qt + g->lo);
        g->col_j0 = j + 1, g->col_len = 0;
        return;
    }
    if (j >= g->col_j0 + g->col_len) {
        narrow_live(g);
        size_t len = j_end - j < COL_BLOCK ? j_end - j : COL_BLOCK;
        tsm_qt_row_direct(s, g->c0 + g->lo, j, len, g->col);
        g->col_j0 = j, g->col_len = len;
    }
    double *tmp = g->qt_prev;
    g->qt_prev = g->qt, g->qt = tmp;
    const double *t = s->t;
    const double head = t[j - 1], tail = t[j + s->m - 1];
    const double *lo = t + g->c0 - 1, *hi = t + g->c0 + s->m - 1;
    const double *prev = g->qt_prev;
    double *qt = g->qt;
    qt[g->lo] = g->col[j - g->col_j0];
#pragma omp simd
    for (size_t tid = g->lo + 1; tid < g->hi; tid++)
        qt[tid] = prev[tid - 1] - lo[tid] * head + hi[tid] * tail;
}

/* Distances from row j to candidates tid in [lo, hi) (all non-self-matches of j);
 * drops candidates closer than r (d2 < r2), records minima, and returns whether
 * any candidate, dropped or not, was closer than r (then j is not a discord
 * either). Returns the number of candidates dropped through *dropped. */
TSMI_HOT static int row_distances(segment *g, const tsm_stats *s, size_t j, size_t lo, size_t hi,
                                  double r2, size_t *dropped) {
    int kind = s->kind[j];
    if (kind == TSM_SUB_NONFINITE || lo >= hi)
        return 0;
    g->distances += hi - lo;
    const double two_m = 2.0 * (double)s->m;
    const double mu_j = s->mu[j], inv_j = s->inv[j];
    const int normal_row = kind == TSM_SUB_NORMAL;
    const double *special = normal_row ? g->d2_normal_row : g->d2_const_row;
    const double *restrict qt = g->qt, *restrict mmu = g->mmu, *restrict inv = g->inv;
    const int64_t *restrict normal = g->normal;
    int64_t *restrict alive = g->alive;
    double *restrict best = g->best;
    int64_t *restrict best_j = g->best_j;
    int64_t hit = 0, drop = 0;
#pragma omp simd reduction(| : hit) reduction(+ : drop)
    for (size_t tid = lo; tid < hi; tid++) {
        double corr = tsm_corr_mmu(qt[tid], mmu[tid], inv[tid], mu_j, inv_j);
        double d2 = (normal_row && normal[tid]) ? two_m * (1.0 - corr) : special[tid];
        int64_t close = d2 < r2;
        hit |= close;
        drop += alive[tid] & close;
        alive[tid] &= !close;
        int64_t better = d2 < best[tid]; /* strict: rows ascend, the smaller index wins */
        best[tid] = better ? d2 : best[tid];
        best_j[tid] = better ? (int64_t)j : best_j[tid];
    }
    *dropped = (size_t)drop;
    return hit != 0;
}

/* Phase 1 for one segment: scan rows j >= c0 + excl left to right. Candidates keep
 * their right-side minimum in right_d2/right_j. */
static void select_segment(segment *g, const tsm_stats *s, size_t excl, double r2, uint8_t *subseq,
                           uint8_t *neighbor, double *right_d2, int64_t *right_j) {
    const size_t N = s->N, c0 = g->c0, j_first = c0 + g->lo + excl;
    for (size_t j = j_first; g->nalive > 0 && j < N; j++) {
        advance_row(g, s, j, j_first, N);
        /* candidate c0+tid pairs with j when tid <= j - excl - c0 */
        size_t upto = j - excl - c0 + 1;
        size_t dropped = 0;
        if (row_distances(g, s, j, g->lo, upto < g->hi ? upto : g->hi, r2, &dropped)) {
#pragma omp atomic write
            neighbor[j] = 0;
        }
        g->nalive -= dropped; /* early exit when none is left */
    }
    for (size_t tid = 0; tid < g->len; tid++) {
        subseq[c0 + tid] = g->alive[tid];
        right_d2[c0 + tid] = g->best[tid];
        right_j[c0 + tid] = g->best_j[tid];
    }
}

/* Phase 2 for one segment: scan rows j <= c - excl left to right; survivors end
 * with their exact nn (the better of the left and right minima). */
static void refine_segment(segment *g, const tsm_stats *s, size_t excl, double r2, uint8_t *subseq,
                           double *nn_d2, int64_t *nn_j) {
    const size_t c0 = g->c0;
    const size_t j_end = c0 + g->hi > excl ? c0 + g->hi - excl : 0;
    for (size_t j = 0; g->nalive > 0 && j < j_end; j++) {
        advance_row(g, s, j, 0, j_end);
        /* candidate c0+tid pairs with j when c0 + tid >= j + excl */
        size_t from = j + excl > c0 + g->lo ? j + excl - c0 : g->lo;
        size_t dropped = 0;
        row_distances(g, s, j, from, g->hi, r2, &dropped);
        g->nalive -= dropped;
    }
    for (size_t tid = 0; tid < g->len; tid++) {
        size_t c = c0 + tid;
        subseq[c] = g->alive[tid];
        if (!g->alive[tid])
            continue;
        /* left neighbours have smaller indices: they win ties */
        if (g->best[tid] <= nn_d2[c]) {
            nn_d2[c] = g->best[tid];
            nn_j[c] = g->best_j[tid];
        }
    }
}

/* Counts one segment of a pass done and, on the reporting thread, reports the pass's
 * progress (tsm_ctx_set_progress). */
static void segment_done(const tsm_ctx *ctx, uint64_t *done, int reporter, uint64_t total) {
    uint64_t now;
#pragma omp atomic capture
    now = *done += 1;
    if (reporter)
        tsmi_progress(ctx, "pass", now, total);
}

/* Checks the arguments of a range search and applies the default seglen. */
static tsm_status check_range(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r,
                              size_t *seglen) {
    tsm_status st = tsm_check_shape(ctx, s->n, s->m, excl);
    if (st != TSM_OK)
        return st;
    if (!(r >= 0.0) || isinf(r))
        return tsm_fail(ctx, TSM_EINVAL, "range r = %g must be a finite distance >= 0", r);
    if (*seglen == 0)
        *seglen = TSM_PD3_SEGLEN_DEFAULT;
    return TSM_OK;
}

/* The CPU pass over the segments seg = part mod parts (all of them for parts = 1);
 * sync (NULL for one part) ANDs the Neighbor bitmap over the parts between the
 * phases. Its discords are those of its own segments. */
static tsm_status range_cpu(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r, size_t seglen,
                            size_t part, size_t parts, tsm_pd3_sync_fn sync, void *user,
                            tsm_discord **out, size_t *count, tsm_pd3_stats *counters) {
    const size_t N = s->N, nseg = (N + seglen - 1) / seglen;
    const double r2 = r * r;
    uint8_t *subseq = malloc(N), *neighbor = malloc(N);
    double *nn_d2 = malloc(N * sizeof *nn_d2);
    int64_t *nn_j = malloc(N * sizeof *nn_j);
    int failed = 0;
    uint64_t distances = 0;
    if (!subseq || !neighbor || !nn_d2 || !nn_j) {
        failed = 1;
        goto done;
    }
    for (size_t i = 0; i < N; i++) {
        subseq[i] = s->kind[i] != TSM_SUB_NONFINITE;
        neighbor[i] = 1;
    }

    /* Progress (tsm_ctx_set_progress): this part's segments of both phases done. */
    const int prog = tsmi_progress_on(ctx);
    const uint64_t own = part < nseg ? (nseg - part + parts - 1) / parts : 0;
    uint64_t segs_done = 0;
#pragma omp parallel num_threads(tsm_ctx_threads(ctx)) reduction(+ : distances)
    {
        segment g;
        int reporter = 1; /* one thread reports: the hook is called one at a time */
#ifdef _OPENMP
        reporter = omp_get_thread_num() == 0;
#endif
        int ok = segment_alloc(&g, seglen) == 0;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
        /* Phase 1: candidate selection, one segment per iteration. */
#pragma omp for schedule(dynamic, 1)
        for (size_t seg = part; seg < nseg; seg += parts) {
            if (!ok)
                continue;
            size_t c0 = seg * seglen, len = c0 + seglen <= N ? seglen : N - c0;
            segment_load(&g, s, c0, len, subseq);
            select_segment(&g, s, excl, r2, subseq, neighbor, nn_d2, nn_j);
            if (prog)
                segment_done(ctx, &segs_done, reporter, 2 * own);
        }
        /* The other parts' rows: Neighbor over all of them (the master thread calls
         * sync, as MPI_THREAD_FUNNELED wants). */
#pragma omp master
        if (sync && sync(user, neighbor, N) != 0)
            failed = 2;
#pragma omp barrier
            /* The conjunction: candidates that are someone's close neighbour go too. */
#pragma omp for schedule(static)
        for (size_t i = 0; i < N; i++)
            subseq[i] &= neighbor[i];
            /* Phase 2: refinement, only segments that still hold candidates. */
#pragma omp for schedule(dynamic, 1)
        for (size_t seg = part; seg < nseg; seg += parts) {
            size_t c0 = seg * seglen, len = c0 + seglen <= N ? seglen : N - c0;
            if (!ok || failed || !memchr(subseq + c0, 1, len)) {
                if (prog)
                    segment_done(ctx, &segs_done, reporter, 2 * own);
                continue;
            }
            segment_load(&g, s, c0, len, subseq);
            refine_segment(&g, s, excl, r2, subseq, nn_d2, nn_j);
            if (prog)
                segment_done(ctx, &segs_done, reporter, 2 * own);
        }
        if (ok) {
            distances += g.distances;
            segment_free(&g);
        }
    }
    if (failed)
        goto done;

    /* Only the own segments' entries are this part's. */
    for (size_t seg = 0; parts > 1 && seg < nseg; seg++)
        if (seg % parts != part)
            memset(subseq + seg * seglen, 0, seg + 1 < nseg ? seglen : N - seg * seglen);
    size_t found = 0;
    for (size_t i = 0; i < N; i++)
        found += subseq[i] && isfinite(nn_d2[i]);
    size_t candidates = 0;
    for (size_t i = 0; i < N; i++)
        candidates += subseq[i];
    if (found > 0) {
        *out = malloc(found * sizeof **out);
        if (!*out) {
            failed = 1;
            goto done;
        }
        /* a survivor without any eligible neighbour has no nn: not a discord */
        for (size_t i = 0; i < N; i++)
            if (subseq[i] && isfinite(nn_d2[i]))
                (*out)[(*count)++] = (tsm_discord){(int64_t)i, sqrt(nn_d2[i]), nn_j[i]};
    }
    if (counters) {
        counters->distances += distances;
        counters->passes += 1;
        counters->candidates = candidates;
        counters->r = r;
    }
done:
    free(subseq), free(neighbor), free(nn_d2), free(nn_j);
    if (failed == 2)
        return tsm_fail(ctx, TSM_EINTERNAL, "PD3: the exchange of the Neighbor bitmap failed");
    if (failed)
        return tsm_fail(ctx, TSM_ENOMEM, "out of memory for PD3 over %zu subsequences", N);
    return TSM_OK;
}

tsm_status tsm_pd3_range(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r, size_t seglen,
                         tsm_discord **out, size_t *count, tsm_pd3_stats *counters) {
    *out = NULL;
    *count = 0;
    tsm_status st = check_range(ctx, s, excl, r, &seglen);
    if (st != TSM_OK)
        return st;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_pd3_range_cuda(ctx, s, excl, r, seglen, 0, 1, NULL, NULL, out, count, counters);
#endif
    return range_cpu(ctx, s, excl, r, seglen, 0, 1, NULL, NULL, out, count, counters);
}

tsm_status tsm_pd3_range_part(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r,
                              size_t seglen, size_t part, size_t parts, tsm_pd3_sync_fn sync,
                              void *user, tsm_discord **out, size_t *count,
                              tsm_pd3_stats *counters) {
    *out = NULL;
    *count = 0;
    tsm_status st = check_range(ctx, s, excl, r, &seglen);
    if (st != TSM_OK)
        return st;
    if (parts == 0 || part >= parts || (parts > 1 && !sync))
        return tsm_fail(ctx, TSM_EINVAL, "PD3: part %zu of %zu (with an exchange when several)",
                        part, parts);
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA && parts > 1)
        return tsmi_pd3_range_cuda(ctx, s, excl, r, seglen, part, parts, sync, user, out, count,
                                   counters);
#endif
    if (parts == 1)
        return tsm_pd3_range(ctx, s, excl, r, seglen, out, count, counters);
    return range_cpu(ctx, s, excl, r, seglen, part, parts, sync, user, out, count, counters);
}

/* Orders discords by distance, largest first, then by index. */
static int by_distance_desc(const void *x, const void *y) {
    const tsm_discord *a = x, *b = y;
    if (a->distance != b->distance)
        return a->distance > b->distance ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Distances this close (relative) are ties. The two members of a mutual
 * nearest-neighbour pair have the same nn mathematically, but each backend's
 * rounding separates them in the last bits; without this band the "smaller index
 * wins" rule would be decided by rounding and the backends could disagree. The band
 * is far below the 1e-9 to which the backends' distances agree. */
#define TIE_REL 1e-10

/* Whether discord x lies within excl of any of the c picks. */
static int clashes(const tsm_discord *x, const tsm_discord *picks, size_t c, size_t excl) {
    for (size_t p = 0; p < c; p++)
        if (!tsm_non_self((size_t)x->index, (size_t)picks[p].index, excl))
            return 1;
    return 0;
}

/* Greedy top-k of DESIGN 3 over a set sorted by by_distance_desc: each pick is the
 * largest distance among the non-self-matches of the earlier picks, the smallest
 * index among those tied with it (TIE_REL). O(count k^2) at most. */
static size_t greedy_topk(const tsm_discord *sorted, size_t count, size_t excl, size_t k,
                          tsm_discord *out) {
    size_t c = 0;
    while (c < k) {
        const tsm_discord *best = NULL;
        double band = 0.0;
        for (size_t q = 0; q < count; q++) {
            const tsm_discord *x = &sorted[q];
            if (best && x->distance < band)
                break; /* sorted: nothing further is tied with the first eligible */
            if (clashes(x, out, c, excl))
                continue;
            if (!best)
                band = x->distance * (1.0 - TIE_REL);
            if (!best || x->index < best->index)
                best = x;
        }
        if (!best)
            break;
        out[c++] = *best;
    }
    return c;
}

/* The descending search of DESIGN 4.2 (MERLIN-style): r starts at the largest
 * possible distance 2 sqrt(m) and shrinks by TOPK_SHRINK until the range discords
 * hold k non-overlapping ones. Greedy selection over {nn >= r} equals greedy
 * selection over all subsequences as soon as it yields k picks, since every
 * subsequence outside the set ranks below every one inside. A pass with a large r
 * is cheap (candidates are refuted at once), so the cost is dominated by the last
 * pass, whose r is within a factor TOPK_SHRINK of the k-th discord's distance.
 * Below TOPK_FLOOR of the maximum the last pass uses r = 0 (every subsequence with a
 * neighbour), which returns what exists when fewer than k do. */
#define TOPK_SHRINK 0.9
#define TOPK_FLOOR  1e-3

/* tsm_pd3_range as a tsm_pd3_range_fn. */
static tsm_status range_whole(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r,
                              size_t seglen, void *user, tsm_discord **out, size_t *count,
                              tsm_pd3_stats *counters) {
    (void)user;
    return tsm_pd3_range(ctx, s, excl, r, seglen, out, count, counters);
}

tsm_status tsm_discords_topk(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t seglen,
                             tsm_discord *out, size_t *count, tsm_pd3_stats *counters) {
    return tsm_discords_topk_by(ctx, s, excl, k, seglen, range_whole, NULL, out, count, counters);
}

tsm_status tsm_discords_topk_by(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                                size_t seglen, tsm_pd3_range_fn range, void *user, tsm_discord *out,
                                size_t *count, tsm_pd3_stats *counters) {
    *count = 0;
    if (k == 0)
        return tsm_fail(ctx, TSM_EINVAL, "top-k discords: k must be at least 1");
    tsm_pd3_stats local = {0};
    const double r_max = 2.0 * sqrt((double)s->m);
    for (double r = r_max;; r *= TOPK_SHRINK) {
        if (r < TOPK_FLOOR * r_max)
            r = 0.0;
        tsm_discord *found = NULL;
        size_t nfound = 0;
        tsm_status st = range(ctx, s, excl, r, seglen, user, &found, &nfound, &local);
        if (st != TSM_OK)
            return st;
        if (nfound > 1)
            qsort(found, nfound, sizeof *found, by_distance_desc);
        size_t picked = greedy_topk(found, nfound, excl, k, out);
        free(found);
        if (picked == k || r == 0.0) {
            *count = picked;
            break;
        }
    }
    if (counters) {
        counters->distances += local.distances;
        counters->passes += local.passes;
        counters->candidates = local.candidates;
        counters->r = local.r;
    }
    return TSM_OK;
}
