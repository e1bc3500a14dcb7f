/* SPDX-License-Identifier: Apache-2.0 */
/* array_out.h - writing result arrays as NumPy .npy (format 1.0, readable by
 * numpy.load) or raw little-endian float64 (.f64, numpy.fromfile(..., '<f8')). */
#ifndef TSMINE_ARRAY_OUT_H
#define TSMINE_ARRAY_OUT_H

#include <stddef.h>
#include <stdint.h>

typedef enum { ARRAY_NPY, ARRAY_F64 } array_format;

/* Writes n doubles to path. Returns 0, or -1 with errno set; *created tells whether
 * the file was opened (so a failure is a write error rather than one to create it). */
int array_write_f64(const char *path, array_format fmt, const double *v, size_t n, int *created);

/* Writes n int64 values to path: as '<i8' in .npy, as float64 (exact up to 2^53) in raw
 * f64. Same return and *created as array_write_f64. */
int array_write_i64(const char *path, array_format fmt, const int64_t *v, size_t n, int *created);

/* The name of a companion file of path: suffix inserted before path's extension
 * ("p.npy", ".neighbor" -> "p.neighbor.npy"; "p" -> "p.neighbor"). malloc'ed, NULL when
 * out of memory. */
char *array_companion(const char *path, const char *suffix);

#endif
