/* SPDX-License-Identifier: Apache-2.0 */
/* sets.h - operations on sorted multisets of unsigned integers (DESIGN 4.5, seed 004).
 *
 * A multiset is a sorted (non-decreasing) array of uint32_t or uint64_t keys; a key of
 * multiplicity c appears c times. For a key with ca copies in A and cb in B the result
 * holds, like C++ std::set_intersection / set_union / set_difference /
 * set_symmetric_difference:
 *   intersect   min(ca, cb) copies      union    max(ca, cb)
 *   difference  max(0, ca - cb)         symdiff  |ca - cb|
 * and it is sorted. Keys are plain values, so which operand a copy comes from does not
 * show.
 *
 * Methods (both backends implement both; AUTO chooses):
 * - MERGE_PATH: the merged order of A and B is cut into equal pieces ("merge path"
 *   partitioning), moved where a key's run crosses a cut so that the copies of the key
 *   before the cut are paired, as far as they can be, one from A with one from B
 *   ("balanced path": the multiplicities of every piece then add up exactly). Every
 *   piece is merged independently. Work O(|A| + |B|), balanced over the threads or
 *   thread blocks whatever the shape of the data.
 * - RANGE_SEARCH: seed 004's RangeBinarySearch scheme: each key of the smaller operand
 *   is searched in the larger (lower and upper bound), the rank of a copy within its
 *   run tells whether it has a partner, and prefix sums place the results. Work
 *   O(s log l + output) for sizes s <= l: far less than a merge when l >> s (on the CPU
 *   AUTO takes it from a size ratio of 32).
 *
 * The size of the result is computed before anything is placed, piece by piece, so the
 * output may be exactly as large as the result: out == NULL only computes the size,
 * and tsm_set_bound gives a capacity that is always enough without computing it.
 *
 * Unsorted input is not detected here (tsm_first_descent does that in one pass): the
 * result is then unspecified, but nothing is read or written out of bounds. */
#ifndef TSM_SETS_H
#define TSM_SETS_H

#include "tsm.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TSM_SET_INTERSECT = 0, /* min(ca, cb) */
    TSM_SET_UNION,         /* max(ca, cb) */
    TSM_SET_DIFFERENCE,    /* max(0, ca - cb): A minus B */
    TSM_SET_SYMDIFF,       /* |ca - cb| */
} tsm_set_op;
#define TSM_SET_NOPS 4

typedef enum {
    TSM_SET_AUTO = 0,     /* the backend's choice for these sizes */
    TSM_SET_MERGE_PATH,   /* balanced merge-path partitions, merged independently */
    TSM_SET_RANGE_SEARCH, /* seed 004: bound search of the smaller side + prefix sums */
} tsm_set_method;

/* "intersect", "union", "difference", "symdiff"; "?" for anything else. */
const char *tsm_set_op_name(tsm_set_op op);
/* Parses one of the names above; returns -1 for anything else. */
int tsm_set_op_parse(const char *s, tsm_set_op *out);
/* "auto", "merge_path", "range_search". */
const char *tsm_set_method_name(tsm_set_method m);

/* The most elements op can produce from na and nb: min(na, nb) for intersect, na for
 * difference, na + nb otherwise (SIZE_MAX if that overflows). */
size_t tsm_set_bound(tsm_set_op op, size_t na, size_t nb);

/* Computes op(A, B) into out[0..*count-1] with A = a[0..na-1] and B = b[0..nb-1]
 * sorted. cap is the room in out. On success *count is the size of the result. When
 * out is NULL only the size is computed. When cap is smaller than the result, returns
 * TSM_EINVAL with the size needed in *count and out's contents unspecified. out must
 * not overlap a or b. CPU: O(na + nb) work over the ctx's threads for MERGE_PATH,
 * O(min log max + result) for RANGE_SEARCH; a few KiB to a few MiB of scratch. */
tsm_status tsm_set_u32(tsm_ctx *ctx, tsm_set_op op, const uint32_t *a, size_t na, const uint32_t *b,
                       size_t nb, uint32_t *out, size_t cap, size_t *count);
tsm_status tsm_set_u64(tsm_ctx *ctx, tsm_set_op op, const uint64_t *a, size_t na, const uint64_t *b,
                       size_t nb, uint64_t *out, size_t cap, size_t *count);

/* The same with the method chosen by the caller (tests and benchmarks compare them). */
tsm_status tsm_set_with_u32(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op, const uint32_t *a,
                            size_t na, const uint32_t *b, size_t nb, uint32_t *out, size_t cap,
                            size_t *count);
tsm_status tsm_set_with_u64(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op, const uint64_t *a,
                            size_t na, const uint64_t *b, size_t nb, uint64_t *out, size_t cap,
                            size_t *count);

/* Where a[0..n-1] stops being sorted: *at = the first i with a[i] < a[i-1], or n when
 * the array is non-decreasing. One parallel pass; runs on the CPU on every backend
 * (it is a host-side input check). */
tsm_status tsm_first_descent_u32(tsm_ctx *ctx, const uint32_t *a, size_t n, size_t *at);
tsm_status tsm_first_descent_u64(tsm_ctx *ctx, const uint64_t *a, size_t n, size_t *at);

/* ---- internal (tsmi_, not part of the library's interface) ------------------------ */

/* The balanced-path cut of the merged order of A and B at diagonal d (0 <= d <= na+nb):
 * *i elements of A and *j of B come before it, *i + *j = d or d - 1 (one less when the
 * cut would separate a pair). Where a key x runs across the cut with ca copies in A and
 * cb in B, the copies before it are balanced: equal numbers from A and B, or all of the
 * shorter run and the rest from the longer. Cuts are monotone in d. O(log(na + nb))
 * plus O(log run) for the run. The CUDA backend uses it to cut inputs that do not fit
 * the device into pieces, and implements the same rule on the device. */
void tsmi_set_split_u32(const uint32_t *a, size_t na, const uint32_t *b, size_t nb, size_t d,
                        size_t *i, size_t *j);
void tsmi_set_split_u64(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, size_t d,
                        size_t *i, size_t *j);

#ifdef TSMINE_HAVE_CUDA
/* The CUDA backend on host arrays: copies the inputs to the device (in pieces cut by
 * tsmi_set_split when they do not fit; TSM_SETS_CHUNK=N in the environment forces
 * pieces of at most N merged elements, for tests), runs the method there, copies the
 * result back. method is MERGE_PATH or RANGE_SEARCH (AUTO resolved by the caller). */
tsm_status tsmi_set_u32_cuda(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op, const uint32_t *a,
                             size_t na, const uint32_t *b, size_t nb, uint32_t *out, size_t cap,
                             size_t *count);
tsm_status tsmi_set_u64_cuda(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op, const uint64_t *a,
                             size_t na, const uint64_t *b, size_t nb, uint64_t *out, size_t cap,
                             size_t *count);

/* On device arrays, on the ctx's stream, without host round trips: the result's size
 * goes to *d_count (device) and the result to d_out when it fits in cap elements (when
 * it does not, nothing is written to d_out and *d_count still says how many are
 * needed). d_out may be NULL to compute the size only. AUTO picks by the sizes. */
tsm_status tsmi_set_u32_dev(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op, const uint32_t *d_a,
                            size_t na, const uint32_t *d_b, size_t nb, uint32_t *d_out, size_t cap,
                            uint64_t *d_count);
tsm_status tsmi_set_u64_dev(tsm_ctx *ctx, tsm_set_method method, tsm_set_op op, const uint64_t *d_a,
                            size_t na, const uint64_t *d_b, size_t nb, uint64_t *d_out, size_t cap,
                            uint64_t *d_count);
#endif

#ifdef __cplusplus
}
#endif
#endif
