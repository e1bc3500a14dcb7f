/* dot.c - direct and recurrent dot products of subsequences (CPU). */
#include "dot.h"

double tsm_dot(const double *a, const double *b, size_t m) {
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (size_t k = 0; k < m; k++)
        acc += a[k] * b[k];
    return acc;
}

void tsm_qt_row_direct(const tsm_stats *s, size_t i, size_t j0, size_t len, double *out) {
    const double *ti = s->t + i;
    for (size_t j = j0; j < j0 + len; j++)
        out[j - j0] = tsm_dot(ti, s->t + j, s->m);
}

void tsm_qt_row_next(const tsm_stats *s, size_t i, size_t j0, size_t len, const double *prev,
                     double *out) {
    const double *t = s->t;
    const size_t m = s->m;
    const double head = t[i - 1], tail = t[i + m - 1];
    const double *lo = t + j0 - 1, *hi = t + j0 + m - 1;
    for (size_t k = 0; k < len; k++)
        out[k] = prev[k] - head * lo[k] + tail * hi[k];
}
