/* SPDX-License-Identifier: Apache-2.0 */
/* bench_thrust.h - the device side of tsmine-bench's set benchmarks (CUDA builds only):
 * tsmine's set operations and Thrust's on the same device arrays, and the device's
 * copy bandwidth that both are measured against. Implemented in bench_thrust.cu. */
#ifndef TSM_BENCH_THRUST_H
#define TSM_BENCH_THRUST_H

#include "sets.h"
#include "tsm.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The device copy bandwidth: cudaMemcpyAsync device to device of a `bytes` buffer on
 * the ctx's stream, the median of `repeat` timed copies after one warm-up, counted as
 * bytes read plus bytes written (2 bytes per byte copied). Returns 0, or -1 with the
 * reason in err. */
int bench_copy_bandwidth(tsm_ctx *ctx, size_t bytes, int repeat, double *bytes_per_second,
                         char *err, size_t errlen);

/* One pair of inputs on the device: A, B and two outputs of |A| + |B| keys (tsmine's
 * and Thrust's). Opaque. */
typedef struct bench_dev_case bench_dev_case;

/* Copies A and B (keys of `width` bits: 32 or 64) to the device on the ctx's stream.
 * Returns NULL with the reason in err when the device memory is not there. */
bench_dev_case *bench_dev_new(tsm_ctx *ctx, int width, const void *a, size_t na, const void *b,
                              size_t nb, char *err, size_t errlen);
void bench_dev_free(bench_dev_case **self_p);

/* One operation on one case, timed both ways. */
typedef struct {
    double tsmine_seconds, thrust_seconds; /* best of the timed runs (host clock, stream synced) */
    size_t count;                          /* the result's size (equal for both) */
    double tsmine_gpu_seconds;             /* best GPU time of tsmine's kernels alone (events on the
                                              stream around the call, before the size goes back) */
} bench_dev_result;

/* Times op on the case by tsmine (tsmi_set_*_dev, method AUTO) and by Thrust
 * (thrust::set_intersection, set_union, set_difference, set_symmetric_difference on
 * device pointers, on the ctx's stream), one warm-up and `repeat` timed runs each, each
 * run from a synchronised stream to a synchronised stream, and checks that both
 * results are equal (on the device), and equal to ref[0..nref) when ref is not NULL.
 * Returns 0, or -1 with the reason in err. */
int bench_dev_set(tsm_ctx *ctx, bench_dev_case *c, tsm_set_op op, const void *ref, size_t nref,
                  int repeat, bench_dev_result *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
