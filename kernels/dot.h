/* SPDX-License-Identifier: Apache-2.0 */
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

/* The block of dot products out[r * len + q] = QT[i0 + r][j0 + q], r < rows, q < len,
 * each computed directly (no recurrence: every entry is exact to rounding whatever
 * the block's size), on the ctx's backend, into host memory. Needs i0 + rows <= N and
 * j0 + len <= N; rows or len 0 is a no-op. CPU: tsm_qt_row_direct per row, rows spread
 * over the ctx's threads. CUDA: from the device copy of the working series (s->dev,
 * or a temporary copy when s was computed on the CPU), in pieces of rows that bound
 * the device buffer. O(rows len m) multiply-adds either way. */
tsm_status tsm_qt_rows(tsm_ctx *ctx, const tsm_stats *s, size_t i0, size_t rows, size_t j0,
                       size_t len, double *out);

#ifdef TSMINE_HAVE_CUDA
/* The same block into device memory, row r at d_out + r * ld (ld >= len), from the
 * device series d_t (n values, subsequence length m: s->dev->t for a tsm_stats);
 * asynchronous on the ctx's stream. Arguments are checked by the caller. For other .cu
 * files and tsm_qt_rows. */
tsm_status tsmi_qt_rows_dev(tsm_ctx *ctx, const double *d_t, size_t n, size_t m, size_t i0,
                            size_t rows, size_t j0, size_t len, double *d_out, size_t ld);

/* tsm_qt_rows on the CUDA backend (host output); arguments checked by tsm_qt_rows. */
tsm_status tsmi_qt_rows_cuda(tsm_ctx *ctx, const tsm_stats *s, size_t i0, size_t rows, size_t j0,
                             size_t len, double *out);
#endif

/* Recomputes a row exactly every this many recurrence steps in streaming use, so
 * that drift stays bounded (DESIGN 4.1). */
#define TSM_QT_REFRESH 4096

#ifdef __cplusplus
}
#endif
#endif
