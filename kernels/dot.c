/* SPDX-License-Identifier: Apache-2.0 */
/* dot.c - direct and recurrent dot products of subsequences (CPU).
 *
 * The bodies are static and carry TSMI_HOT (one build per instruction-set level, chosen
 * at load time: dispatch.h); the public functions are plain symbols that call them, so
 * that callers in other files need not know (clang needs every declaration of a cloned
 * extern function to say so). */
#include "dot.h"

#include "dispatch.h"
#include "omp_team.h"

#define TSM_DOT_LANES 16
#define TSM_DOT_BLOCK 256

TSMI_HOT static double dot(const double *a, const double *b, size_t m) {
    /* independent partial sums keep the FMA pipeline full */
    double part[TSM_DOT_LANES] = {0};
    size_t k = 0;
    for (; k + TSM_DOT_LANES <= m; k += TSM_DOT_LANES)
#pragma omp simd
        for (size_t l = 0; l < TSM_DOT_LANES; l++)
            part[l] += a[k + l] * b[k + l];
    double acc = 0.0;
    for (; k < m; k++)
        acc += a[k] * b[k];
    for (size_t l = 0; l < TSM_DOT_LANES; l++)
        acc += part[l];
    return acc;
}

TSMI_HOT static void qt_row_direct(const tsm_stats *s, size_t i, size_t j0, size_t len,
                                   double *out) {
    /* Consecutive columns share the query t[i..i+m-1]: accumulate
     * out[q] += t[i+k] t[j0+q+k] for k outer and q inner, which vectorises across
     * columns without reductions; blocks of columns stay in L1. */
    const double *t = s->t;
    const size_t m = s->m;
    for (size_t b = 0; b < len; b += TSM_DOT_BLOCK) {
        size_t w = len - b < TSM_DOT_BLOCK ? len - b : TSM_DOT_BLOCK;
        double *o = out + b;
        const double *col = t + j0 + b;
        for (size_t q = 0; q < w; q++)
            o[q] = 0.0;
        for (size_t k = 0; k < m; k++) {
            const double a = t[i + k];
            const double *c = col + k;
#pragma omp simd
            for (size_t q = 0; q < w; q++)
                o[q] += a * c[q];
        }
    }
}

TSMI_HOT static void qt_row_next(const tsm_stats *s, size_t i, size_t j0, size_t len,
                                 const double *prev, double *out) {
    const double *t = s->t;
    const size_t m = s->m;
    const double head = t[i - 1], tail = t[i + m - 1];
    const double *lo = t + j0 - 1, *hi = t + j0 + m - 1;
    for (size_t k = 0; k < len; k++)
        out[k] = prev[k] - head * lo[k] + tail * hi[k];
}

double tsm_dot(const double *a, const double *b, size_t m) {
    return dot(a, b, m);
}

void tsm_qt_row_direct(const tsm_stats *s, size_t i, size_t j0, size_t len, double *out) {
    qt_row_direct(s, i, j0, len, out);
}

void tsm_qt_row_next(const tsm_stats *s, size_t i, size_t j0, size_t len, const double *prev,
                     double *out) {
    qt_row_next(s, i, j0, len, prev, out);
}

tsm_status tsm_qt_rows(tsm_ctx *ctx, const tsm_stats *s, size_t i0, size_t rows, size_t j0,
                       size_t len, double *out) {
    if (!s)
        return tsm_fail(ctx, TSM_EINVAL, "qt_rows: no statistics");
    if (i0 > s->N || rows > s->N - i0 || j0 > s->N || len > s->N - j0)
        return tsm_fail(ctx, TSM_EINVAL,
                        "qt_rows: rows [%zu, %zu + %zu) or columns [%zu, %zu + %zu) outside the "
                        "%zu subsequences",
                        i0, i0, rows, j0, j0, len, s->N);
    if (rows == 0 || len == 0)
        return TSM_OK;
    if (!out)
        return tsm_fail(ctx, TSM_EINVAL, "qt_rows: NULL output");
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_qt_rows_cuda(ctx, s, i0, rows, j0, len, out);
#endif
    /* one row per iteration: rows are independent and equally long */
    const int threads = tsmi_threads_for(ctx, rows * len * s->m);
    (void)threads; /* without OpenMP */
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t r = 0; r < rows; r++)
        qt_row_direct(s, i0 + r, j0, len, out + r * len);
    return TSM_OK;
}
