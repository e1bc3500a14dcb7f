/* dot.h - dot products of subsequences: direct rows and the QT recurrence.
 *
 * QT[i][j] = sum_{k<m} t[i+k] t[j+k] over the working series of tsm_stats. The row
 * recurrence (seed 001 formula (9), seed 002 eq. (6)) is
 *   QT[i][j] = QT[i-1][j-1] - t[i-1] t[j-1] + t[i+m-1] t[j+m-1]. */
#ifndef TSM_DOT_H
#define TSM_DOT_H

#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Plain dot product of two length-m arrays; the compiler vectorises it. */
double tsm_dot(const double *a, const double *b, size_t m);

/* QT[i][j0 .. j0+len-1] computed directly, O(len m), vectorised across columns. By
 * symmetry it is also the column QT[j0 .. j0+len-1][i]. */
void tsm_qt_row_direct(const tsm_stats *s, size_t i, size_t j0, size_t len, double *out);

/* Row i (i >= 1) from row i-1 by formula (9):
 *   out[k] = QT[i][j0+k]  from  prev[k] = QT[i-1][j0+k-1],  k < len,
 * so j0 >= 1; column 0 is computed separately (QT[i][0] = QT[0][i]). O(len).
 * out and prev must not overlap. */
void tsm_qt_row_next(const tsm_stats *s, size_t i, size_t j0, size_t len, const double *prev,
                     double *out);

/* Recomputes a row exactly every this many recurrence steps in streaming use, so
 * that drift stays bounded (DESIGN 4.1). */
#define TSM_QT_REFRESH 4096

#ifdef __cplusplus
}
#endif
#endif
