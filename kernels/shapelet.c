/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet.c - shapelet discovery on the CPU (OpenMP); the contract is shapelet.h.
 * On a CUDA ctx a discovery runs whole in shapelet.cu (distances, splits and the
 * choice of the shapelet, with the same split functions of shapelet_split.h) and
 * tsm_shapelet_dist's distances come from there too; the checks, the patterns of saved
 * models and the decoding of the winner's order index stay here for both backends.
 *
 * Layout. The training set is one concatenated series X = T_0 T_1 ... T_{n-1} (it is
 * already stored that way), so tsm_stats on X with length l gives the mean, inverse
 * norm and kind of every length-l subsequence of every series (those that straddle
 * two series are never used), and the dot products of kernels/dot work unchanged:
 * subsequence (j, u) is X[j L + u, l].
 *
 * Euclidean path (seed 002 Algorithm 4). For a candidate series i, a series j and
 * rows s of the batch: row s0 of QT_ij[s][u] = <X[iL+s, l], X[jL+u, l]> computed
 * directly (tsm_qt_row_direct), each next row from the previous one by the diagonal
 * recurrence (tsm_qt_row_next, seed 002 eq. (6)) with its column u = 0 computed
 * directly. Per row, the best match is the largest "effective" correlation:
 * cov * inv_s * inv_u for normal u, plus 0.5 for constant u (inv_u = 0, and corr 0.5
 * is d2 = l, the DESIGN 3 convention); d = sqrt(2 (1 - corr)). O(U (U + l)) per
 * (i, j) pair for U = L - l + 1 rows.
 *
 * DTW path. Euclidean pass first (it gives every pair's best Euclidean alignment), then
 * per (candidate, series) the band DP at that alignment, then at every other with
 * early abandoning against the best so far (shapelet.h). */
#include "shapelet.h"

#include "dot.h"
#include "omp_team.h"
#include "shapelet_dist.h"
#include "shapelet_split.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

tsm_status tsm_shapelet_check(tsm_ctx *ctx, const tsm_shapelet_data *data,
                              const tsm_shapelet_opts *opts) {
    if (!data || !data->x || !data->y || !opts)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet: missing data or options");
    if (data->n < 2)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet: need at least 2 training series, got %zu",
                        data->n);
    if (data->n_classes < 1)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet: n_classes = %d", data->n_classes);
    if (opts->step < 1)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet: step must be at least 1");
    if (opts->min_len < 3 || opts->min_len > opts->max_len || opts->max_len > data->len)
        return tsm_fail(ctx, TSM_EINVAL,
                        "shapelet: need 3 <= min_len (%zu) <= max_len (%zu) <= series length "
                        "(%zu)",
                        opts->min_len, opts->max_len, data->len);
    if (opts->op != TSM_SHAPELET_SINGLE &&
        (!opts->base || (opts->op != TSM_SHAPELET_AND && opts->op != TSM_SHAPELET_OR)))
        return tsm_fail(ctx, TSM_EINVAL,
                        "shapelet: logical op %d needs AND or OR and base distances", opts->op);
    for (size_t j = 0; opts->base && j < data->n; j++)
        if (isnan(opts->base[j]))
            return tsm_fail(ctx, TSM_EINVAL, "shapelet: base distance %zu is NaN", j);
    for (size_t j = 0; j < data->n; j++)
        if (data->y[j] < 0 || data->y[j] >= data->n_classes)
            return tsm_fail(ctx, TSM_EINVAL, "shapelet: series %zu has label %d outside [0, %d)", j,
                            data->y[j], data->n_classes);
    for (size_t k = 0; k < data->n * data->len; k++)
        if (!isfinite(data->x[k]))
            return tsm_fail(ctx, TSM_EINVAL,
                            "shapelet: series %zu has a non-finite value at position %zu",
                            k / data->len, k % data->len);
    return TSM_OK;
}

/* ---- Euclidean path ---------------------------------------------------------------- */

/* Best match of each candidate row a0 + r (r < rows) in the U subsequences starting at
 * b of S (all of one series): d[r * stride] and pos[r * stride] (pos may be NULL).
 * prev, cur, val: U doubles of scratch each. */
static void euclid_rows(const tsm_stats *S, size_t a0, size_t rows, size_t b, size_t U,
                        double *prev, double *cur, double *val, double *d, int64_t *pos,
                        size_t stride) {
    const size_t l = S->m;
    const double *mu = S->mu + b, *inv = S->inv + b;
    const uint8_t *kind = S->kind + b;
    for (size_t r = 0; r < rows; r++) {
        const size_t a = a0 + r;
        if (r == 0) {
            tsm_qt_row_direct(S, a, b, U, cur);
        } else {
            cur[0] = tsm_dot(S->t + a, S->t + b, l);
            if (U > 1)
                tsm_qt_row_next(S, a, b + 1, U - 1, prev, cur + 1);
        }
        double best;
        size_t bu = 0;
        if (S->kind[a] == TSM_SUB_CONSTANT) {
            /* corr 1 (d = 0) to the first constant subsequence, else 0.5 (d = 1) */
            best = 0.5;
            for (size_t u = 0; u < U; u++)
                if (kind[u] == TSM_SUB_CONSTANT) {
                    best = 1.0, bu = u;
                    break;
                }
        } else {
            const double lm = (double)l * S->mu[a], ia = S->inv[a];
            double mx = -INFINITY;
#pragma omp simd reduction(max : mx)
            for (size_t u = 0; u < U; u++) {
                double c = tsmi_eff_corr(cur[u], lm, ia, mu[u], inv[u], kind[u]);
                val[u] = c;
                mx = c > mx ? c : mx;
            }
            while (bu + 1 < U && val[bu] != mx)
                bu++;
            best = mx;
        }
        d[r * stride] = tsmi_corr_dist(best);
        if (pos)
            pos[r * stride] = (int64_t)bu;
        double *sw = prev;
        prev = cur;
        cur = sw;
    }
}

/* ---- Distances of a batch -------------------------------------------------------- */

/* Distances of the flat candidate range [c0, c0 + count) of length l (candidate c is
 * series c / U, start c % U) to every series, on the CPU: out[(c - c0) n + j]. */
static tsm_status dist_cpu(tsm_ctx *ctx, const tsm_shapelet_data *data, const tsm_stats *S,
                           size_t c0, size_t count, size_t w, double *out, int64_t *pos) {
    const size_t n = data->n, L = data->len, l = S->m, U = L - l + 1;
    int64_t *epos = pos;
    if (w > 0 && !epos) {
        epos = malloc(count * n * sizeof *epos);
        if (!epos)
            return tsm_fail(ctx, TSM_ENOMEM, "shapelet: out of memory for %zu positions",
                            count * n);
    }
    const size_t i_first = c0 / U, i_last = (c0 + count - 1) / U;
    const size_t tasks = (i_last - i_first + 1) * n;
    const int threads = tsmi_threads_for(ctx, count * n * (U + l));
    int failed = 0;
    (void)threads;
#pragma omp parallel num_threads(threads)
    {
        double *scratch = malloc(3 * U * sizeof *scratch);
        if (!scratch) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (size_t t = 0; t < tasks; t++) {
            if (!scratch)
                continue;
            const size_t i = i_first + t / n, j = t % n;
            size_t lo = i * U > c0 ? i * U : c0,
                   hi = (i + 1) * U < c0 + count ? (i + 1) * U : c0 + count;
            euclid_rows(S, i * L + (lo - i * U), hi - lo, j * L, U, scratch, scratch + U,
                        scratch + 2 * U, out + (lo - c0) * n + j,
                        epos ? epos + (lo - c0) * n + j : NULL, n);
        }
        free(scratch);
    }
    if (!failed && w > 0) {
#pragma omp parallel num_threads(threads)
        {
            double *band = malloc(2 * (2 * w + 1) * sizeof *band);
            if (!band) {
#pragma omp atomic write
                failed = 1;
            }
#pragma omp for schedule(dynamic, 16)
            for (size_t t = 0; t < count * n; t++) {
                if (!band)
                    continue;
                const size_t c = c0 + t / n, j = t % n;
                const size_t a = (c / U) * L + c % U;
                out[t] = tsmi_dtw_min(S->t, S->mu, S->inv, S->kind, a, j * L, U, l, w,
                                      (size_t)epos[t], band, band + 2 * w + 1, epos + t);
            }
            free(band);
        }
    }
    if (epos != pos)
        free(epos);
    if (failed)
        return tsm_fail(ctx, TSM_ENOMEM, "shapelet: out of memory for thread scratch");
    return TSM_OK;
}

/* Distances of a flat candidate range on the ctx's backend. */
static tsm_status dist_batch(tsm_ctx *ctx, const tsm_shapelet_data *data, const tsm_stats *S,
                             size_t c0, size_t count, size_t w, double *out, int64_t *pos) {
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_shapelet_dist_cuda(ctx, S, data->n, data->len, c0, count, w, out, pos);
#endif
    return dist_cpu(ctx, data, S, c0, count, w, out, pos);
}

tsm_status tsm_shapelet_dist(tsm_ctx *ctx, const tsm_shapelet_data *data, size_t series,
                             size_t start0, size_t count, size_t length, size_t w, double *out,
                             int64_t *pos) {
    tsm_shapelet_opts o = {.min_len = length, .max_len = length, .step = 1, .w = w};
    tsm_status st = tsm_shapelet_check(ctx, data, &o);
    if (st != TSM_OK)
        return st;
    const size_t U = data->len - length + 1;
    if (series >= data->n || start0 > U || count > U - start0)
        return tsm_fail(ctx, TSM_EINVAL,
                        "shapelet: candidates %zu..%zu+%zu of series %zu outside %zu starts x %zu "
                        "series",
                        start0, start0, count, series, U, data->n);
    if (count == 0)
        return TSM_OK;
    if (!out)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet: NULL output");
    tsm_stats *S = NULL;
    st = tsm_stats_new(ctx, data->x, data->n * data->len, length, &S);
    if (st != TSM_OK)
        return st;
    st = dist_batch(ctx, data, S, series * U + start0, count, w, out, pos);
    tsm_stats_destroy(&S);
    return st;
}

/* ---- Distances of a saved pattern ------------------------------------------------- */

/* z-normalises v[0..l-1] into z (two passes; zeros for a constant); returns 0 when v
 * holds a non-finite value. */
static int znorm(const double *v, size_t l, double *z) {
    double sum = 0.0;
    for (size_t k = 0; k < l; k++) {
        if (!isfinite(v[k]))
            return 0;
        sum += v[k];
    }
    double mu = sum / (double)l, m2 = 0.0;
    for (size_t k = 0; k < l; k++)
        m2 += (v[k] - mu) * (v[k] - mu);
    double f = m2 > 0.0 ? sqrt((double)l / m2) : 0.0;
    for (size_t k = 0; k < l; k++)
        z[k] = (v[k] - mu) * f;
    return 1;
}

tsm_status tsm_shapelet_dist_pattern(tsm_ctx *ctx, const double *p, size_t length, const double *x,
                                     size_t n, size_t len, size_t w, double *out) {
    if (!p || !x || !out)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet: missing pattern, series or output");
    if (length < 3 || length > len)
        return tsm_fail(ctx, TSM_EINVAL,
                        "shapelet: pattern length %zu must be in [3, series length %zu]", length,
                        len);
    double *zp = malloc(length * sizeof *zp);
    if (!zp)
        return tsm_fail(ctx, TSM_ENOMEM, "shapelet: out of memory");
    if (!znorm(p, length, zp)) {
        free(zp);
        return tsm_fail(ctx, TSM_EINVAL, "shapelet: the pattern holds a non-finite value");
    }
    const int threads = tsmi_threads_for(ctx, n * len * length * (2 * w + 1));
    int failed = 0;
    (void)threads;
#pragma omp parallel num_threads(threads)
    {
        double *zb = malloc((length + 2 * (2 * w + 1)) * sizeof *zb);
        if (!zb) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (size_t j = 0; j < n; j++) {
            if (!zb)
                continue;
            double bsf = INFINITY;
            for (size_t u = 0; u + length <= len; u++) {
                if (!znorm(x + j * len + u, length, zb))
                    continue;
                /* zb is already normalised: mean 0, factor 1 */
                double D = tsmi_dtw_band(zp, 0.0, 1.0, zb, 0.0, 1.0, length, w, bsf, zb + length,
                                         zb + length + 2 * w + 1);
                bsf = D < bsf ? D : bsf;
            }
            out[j] = sqrt(bsf / (double)length);
        }
        free(zb);
    }
    free(zp);
    if (failed)
        return tsm_fail(ctx, TSM_ENOMEM, "shapelet: out of memory for thread scratch");
    return TSM_OK;
}

/* ---- Splits ------------------------------------------------------------------------- */

/* Checks split arguments and copies d, y into the scratch dd, yy. */
static tsm_status split_args(tsm_ctx *ctx, const double *d, const int *y, size_t n, int nc,
                             double **dd, int **yy, int **cnt) {
    if (!d || !y || n < 1 || nc < 1)
        return tsm_fail(ctx, TSM_EINVAL, "shapelet split: need n >= 1 distances and classes");
    for (size_t j = 0; j < n; j++) {
        if (y[j] < 0 || y[j] >= nc)
            return tsm_fail(ctx, TSM_EINVAL, "shapelet split: label %d outside [0, %d)", y[j], nc);
        if (isnan(d[j]))
            return tsm_fail(ctx, TSM_EINVAL, "shapelet split: distance %zu is NaN", j);
    }
    *dd = malloc(n * sizeof **dd);
    *yy = malloc(n * sizeof **yy);
    *cnt = malloc(3 * (size_t)nc * sizeof **cnt);
    if (!*dd || !*yy || !*cnt) {
        free(*dd), free(*yy), free(*cnt);
        return tsm_fail(ctx, TSM_ENOMEM, "shapelet split: out of memory");
    }
    memcpy(*dd, d, n * sizeof **dd);
    memcpy(*yy, y, n * sizeof **yy);
    return TSM_OK;
}

tsm_status tsm_shapelet_split(tsm_ctx *ctx, const double *d, const int *y, size_t n, int n_classes,
                              tsm_split *out) {
    double *dd;
    int *yy, *cnt;
    tsm_status st = split_args(ctx, d, y, n, n_classes, &dd, &yy, &cnt);
    if (st != TSM_OK)
        return st;
    *out = tsmi_split_exact(dd, yy, n, n_classes, cnt, NULL);
    free(dd), free(yy), free(cnt);
    return TSM_OK;
}

tsm_status tsm_shapelet_split_heuristic(tsm_ctx *ctx, const double *d, const int *y, size_t n,
                                        int n_classes, uint64_t seed, tsm_split *out) {
    double *dd;
    int *yy, *cnt;
    tsm_status st = split_args(ctx, d, y, n, n_classes, &dd, &yy, &cnt);
    if (st != TSM_OK)
        return st;
    *out = tsmi_split_heuristic(dd, yy, n, n_classes, cnt, seed, NULL);
    free(dd), free(yy), free(cnt);
    return TSM_OK;
}

int tsm_shapelet_better(const tsm_split *a, size_t ia, const tsm_split *b, size_t ib) {
    return tsmi_split_better(a, ia, b, ib);
}

/* ---- Discovery ----------------------------------------------------------------------- */

/* The best split among the batch's count candidates (distances dist, n per candidate;
 * order index of the first: ord0, consecutive after it), merged into best, best_ord.
 * xlx: the c log c table for c <= n. */
static tsm_status best_of_batch(tsm_ctx *ctx, const tsm_shapelet_data *data,
                                const tsm_shapelet_opts *opts, const double *xlx,
                                const double *dist, size_t count, size_t ord0, tsm_split *best,
                                size_t *best_ord) {
    const size_t n = data->n;
    const int nc = data->n_classes;
    const int threads = tsmi_threads_for(ctx, count * n * 16);
    int failed = 0;
    (void)threads;
#pragma omp parallel num_threads(threads)
    {
        double *dd = malloc(n * sizeof *dd);
        int *yy = malloc(n * sizeof *yy), *cnt = malloc(3 * (size_t)nc * sizeof *cnt);
        tsm_split mine = {0.0, 0.0, 0.0, 0};
        size_t mine_ord = 0;
        if (!dd || !yy || !cnt) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static)
        for (size_t c = 0; c < count; c++) {
            if (!dd || !yy || !cnt)
                continue;
            for (size_t j = 0; j < n; j++)
                dd[j] = tsmi_combine(opts->op, opts->base ? opts->base[j] : 0.0, dist[c * n + j]);
            memcpy(yy, data->y, n * sizeof *yy);
            const size_t ord = ord0 + c;
            tsm_split s =
                opts->heuristic
                    ? tsmi_split_heuristic(dd, yy, n, nc, cnt,
                                           opts->seed ^ (ord * 0xD1B54A32D192ED03ull), xlx)
                    : tsmi_split_exact(dd, yy, n, nc, cnt, xlx);
            if (tsmi_split_better(&s, ord, &mine, mine_ord))
                mine = s, mine_ord = ord;
        }
#pragma omp critical(tsm_shapelet_best)
        if (tsmi_split_better(&mine, mine_ord, best, *best_ord))
            *best = mine, *best_ord = mine_ord;
        free(dd), free(yy), free(cnt);
    }
    if (failed)
        return tsm_fail(ctx, TSM_ENOMEM, "shapelet: out of memory for split scratch");
    return TSM_OK;
}

tsm_status tsm_shapelet_discover(tsm_ctx *ctx, const tsm_shapelet_data *data,
                                 const tsm_shapelet_opts *opts, tsm_shapelet *best) {
    tsm_status st = tsm_shapelet_check(ctx, data, opts);
    if (st != TSM_OK)
        return st;
    const size_t n = data->n, L = data->len;
    const size_t budget = opts->budget ? opts->budget : TSM_SHAPELET_BUDGET_DEFAULT;
    size_t batch = budget / (n * (sizeof(double) + (opts->w > 0 ? sizeof(int64_t) : 0)));
    batch = batch < 1 ? 1 : batch;
    size_t total = 0;
    for (size_t l = opts->min_len; l <= opts->max_len; l += opts->step)
        total += n * (L - l + 1);
    batch = batch < total ? batch : total;
    int on_gpu = 0;
#ifdef TSMINE_HAVE_CUDA
    on_gpu = tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA;
#endif
    double *dist = on_gpu ? NULL : malloc(batch * n * sizeof *dist);
    double *xlx = malloc((n + 1) * sizeof *xlx);
    if ((!on_gpu && !dist) || !xlx) {
        free(dist), free(xlx);
        return tsm_fail(ctx, TSM_ENOMEM, "shapelet: out of memory for a batch of %zu candidates",
                        batch);
    }
    for (size_t c = 0; c <= n; c++)
        xlx[c] = tsmi_xlogx((double)c);
    tsm_split bs = {0.0, 0.0, 0.0, 0};
    size_t bord = 0, done = 0;
#ifdef TSMINE_HAVE_CUDA
    if (on_gpu) {
        /* the whole search on the device: only the best candidate comes back */
        st = tsmi_shapelet_discover_cuda(ctx, data, opts, batch, xlx, &bs, &bord);
        done = total; /* skips the CPU loop below */
    }
#endif
    for (size_t l = opts->min_len; l <= opts->max_len && st == TSM_OK && done < total;
         l += opts->step) {
        tsm_stats *S = NULL;
        st = tsm_stats_new(ctx, data->x, n * L, l, &S);
        const size_t U = L - l + 1;
        for (size_t c0 = 0; st == TSM_OK && c0 < n * U; c0 += batch) {
            size_t count = n * U - c0 < batch ? n * U - c0 : batch;
            st = dist_batch(ctx, data, S, c0, count, opts->w, dist, NULL);
            if (st != TSM_OK)
                break;
            st = best_of_batch(ctx, data, opts, xlx, dist, count, done + c0, &bs, &bord);
            if (opts->progress)
                opts->progress(opts->progress_arg, done + c0 + count, total);
        }
        done += n * U;
        tsm_stats_destroy(&S);
    }
    free(dist);
    free(xlx);
    if (st != TSM_OK)
        return st;
    /* decode the order index: lengths in turn, then series, then start. */
    *best = (tsm_shapelet){0};
    best->split = bs;
    for (size_t l = opts->min_len; bs.valid && l <= opts->max_len; l += opts->step) {
        const size_t U = L - l + 1;
        if (bord < n * U) {
            best->length = l, best->series = bord / U, best->start = bord % U;
            break;
        }
        bord -= n * U;
    }
    return TSM_OK;
}
