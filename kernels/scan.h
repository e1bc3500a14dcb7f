/* SPDX-License-Identifier: Apache-2.0 */
/* scan.h - the shared data-parallel primitives (DESIGN 1 and 4.5): prefix sums, stream
 * compaction and vectorised lower/upper-bound search of many keys in a sorted array.
 * One implementation of each, used by the set operations (kernels/sets), by PD3's
 * candidate compaction and by the daemon's alert de-duplication.
 *
 * Public entry points take host arrays and a tsm_ctx, and run on its backend: OpenMP
 * on the CPU, CUB (DeviceScan, DeviceSelect) and plain kernels on CUDA, with a copy
 * to the device and back. Other CUDA code calls the tsmi_*_dev variants declared at
 * the end, which take device pointers, run on the ctx's stream and do no host round
 * trips (except where a size exceeds what one CUB call takes, see there).
 *
 * Every function returns a tsm_status and leaves a message in the ctx on failure.
 * Sizes of 0 are valid everywhere (nothing is read or written, counts are 0). */
#ifndef TSM_SCAN_H
#define TSM_SCAN_H

#include "tsm.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Prefix sums. Exclusive: out[i] = in[0] + ... + in[i-1] (out[0] = 0); inclusive:
 * out[i] = in[0] + ... + in[i]. Sums wrap modulo 2^32 (u32) or 2^64 (u64), like the
 * unsigned arithmetic of C. in == out is allowed (in place); other overlaps are not.
 * *total (optional, may be NULL) receives the sum of all n inputs.
 * O(n) work in two passes over the data; O(n / threads) time. */
typedef enum { TSM_SCAN_EXCLUSIVE = 0, TSM_SCAN_INCLUSIVE = 1 } tsm_scan_kind;

tsm_status tsm_scan_u32(tsm_ctx *ctx, tsm_scan_kind kind, const uint32_t *in, uint32_t *out,
                        size_t n, uint32_t *total);
tsm_status tsm_scan_u64(tsm_ctx *ctx, tsm_scan_kind kind, const uint64_t *in, uint64_t *out,
                        size_t n, uint64_t *total);

/* Stream compaction: the elements (or the indices) i with flags[i] != 0, in order, into
 * out[0..*count-1]. out has room for n elements (the most there can be) and must not
 * overlap the inputs. The _u64 form moves any 8-byte element (int64_t, double) as
 * bits; the _u32 form any 4-byte one. O(n) work in two passes over the flags. */
tsm_status tsm_select_index(tsm_ctx *ctx, const uint8_t *flags, size_t n, uint64_t *out,
                            size_t *count);
tsm_status tsm_select_u32(tsm_ctx *ctx, const uint32_t *in, const uint8_t *flags, size_t n,
                          uint32_t *out, size_t *count);
tsm_status tsm_select_u64(tsm_ctx *ctx, const uint64_t *in, const uint8_t *flags, size_t n,
                          uint64_t *out, size_t *count);

/* Vectorised search of nkeys keys (in any order) in sorted[0..n-1] (non-decreasing):
 * lower bound: out[k] = the first i with sorted[i] >= keys[k] (n if none);
 * upper bound: out[k] = the first i with sorted[i] >  keys[k] (n if none).
 * upper - lower is the number of copies of a key. O(nkeys log n) work; on the CPU the
 * searches of a thread run in interleaved groups so that their cache misses overlap,
 * and runs of non-decreasing keys search only near their predecessor's answer
 * (O(log(n / nkeys)) each). With an unsorted array the results are unspecified but
 * within [0, n]. */
typedef enum { TSM_LOWER_BOUND = 0, TSM_UPPER_BOUND = 1 } tsm_bound_kind;

tsm_status tsm_search_u32(tsm_ctx *ctx, tsm_bound_kind kind, const uint32_t *sorted, size_t n,
                          const uint32_t *keys, size_t nkeys, uint64_t *out);
tsm_status tsm_search_u64(tsm_ctx *ctx, tsm_bound_kind kind, const uint64_t *sorted, size_t n,
                          const uint64_t *keys, size_t nkeys, uint64_t *out);

/* Both bounds at once (seed 004's RangeBinarySearch): lo[k] the lower and hi[k] the
 * upper bound of keys[k]; on the CPU the upper bound gallops from the lower while its
 * cache line is fresh. */
tsm_status tsm_search_range_u32(tsm_ctx *ctx, const uint32_t *sorted, size_t n,
                                const uint32_t *keys, size_t nkeys, uint64_t *lo, uint64_t *hi);
tsm_status tsm_search_range_u64(tsm_ctx *ctx, const uint64_t *sorted, size_t n,
                                const uint64_t *keys, size_t nkeys, uint64_t *lo, uint64_t *hi);

/* ---- internal: the CUDA backend (tsmi_, not part of the library's interface) ------
 * The public functions above call the host-array forms on a CUDA ctx. The _dev forms
 * take device pointers (d_*), queue their work on the ctx's stream and return without
 * synchronising unless said otherwise; a device-side result (d_total, d_count) is
 * written to device memory so that a caller can chain kernels without copying back.
 * Temporary device memory is allocated with cudaMalloc and freed before returning. */
#ifdef TSMINE_HAVE_CUDA
tsm_status tsmi_scan_u32_cuda(tsm_ctx *ctx, tsm_scan_kind kind, const uint32_t *in, uint32_t *out,
                              size_t n, uint32_t *total);
tsm_status tsmi_scan_u64_cuda(tsm_ctx *ctx, tsm_scan_kind kind, const uint64_t *in, uint64_t *out,
                              size_t n, uint64_t *total);
tsm_status tsmi_select_index_cuda(tsm_ctx *ctx, const uint8_t *flags, size_t n, uint64_t *out,
                                  size_t *count);
tsm_status tsmi_select_u32_cuda(tsm_ctx *ctx, const uint32_t *in, const uint8_t *flags, size_t n,
                                uint32_t *out, size_t *count);
tsm_status tsmi_select_u64_cuda(tsm_ctx *ctx, const uint64_t *in, const uint8_t *flags, size_t n,
                                uint64_t *out, size_t *count);
tsm_status tsmi_search_u32_cuda(tsm_ctx *ctx, tsm_bound_kind kind, const uint32_t *sorted, size_t n,
                                const uint32_t *keys, size_t nkeys, uint64_t *out);
tsm_status tsmi_search_u64_cuda(tsm_ctx *ctx, tsm_bound_kind kind, const uint64_t *sorted, size_t n,
                                const uint64_t *keys, size_t nkeys, uint64_t *out);
tsm_status tsmi_search_range_u32_cuda(tsm_ctx *ctx, const uint32_t *sorted, size_t n,
                                      const uint32_t *keys, size_t nkeys, uint64_t *lo,
                                      uint64_t *hi);
tsm_status tsmi_search_range_u64_cuda(tsm_ctx *ctx, const uint64_t *sorted, size_t n,
                                      const uint64_t *keys, size_t nkeys, uint64_t *lo,
                                      uint64_t *hi);

/* Device-pointer forms. d_total (may be NULL) receives the sum of all inputs. In place
 * (d_in == d_out) is allowed. Inputs of more than 2^30 elements are scanned in pieces
 * of 2^30 with the carry kept on the device (CUB takes an int count in older CCCL). */
tsm_status tsmi_scan_u32_dev(tsm_ctx *ctx, tsm_scan_kind kind, const uint32_t *d_in,
                             uint32_t *d_out, size_t n, uint32_t *d_total);
tsm_status tsmi_scan_u64_dev(tsm_ctx *ctx, tsm_scan_kind kind, const uint64_t *d_in,
                             uint64_t *d_out, size_t n, uint64_t *d_total);

/* d_count (device, one uint64_t) receives the number selected. Up to 2^30 elements this
 * is one CUB DeviceSelect::Flagged call with no synchronisation; larger inputs go in
 * pieces of 2^30, and each piece's count is read back before the next (one host round
 * trip per 2^30 elements). */
tsm_status tsmi_select_index_dev(tsm_ctx *ctx, const uint8_t *d_flags, size_t n, uint64_t *d_out,
                                 uint64_t *d_count);
tsm_status tsmi_select_u32_dev(tsm_ctx *ctx, const uint32_t *d_in, const uint8_t *d_flags, size_t n,
                               uint32_t *d_out, uint64_t *d_count);
tsm_status tsmi_select_u64_dev(tsm_ctx *ctx, const uint64_t *d_in, const uint8_t *d_flags, size_t n,
                               uint64_t *d_out, uint64_t *d_count);

/* One thread per key, branch-free binary search over the whole array. */
tsm_status tsmi_search_u32_dev(tsm_ctx *ctx, tsm_bound_kind kind, const uint32_t *d_sorted,
                               size_t n, const uint32_t *d_keys, size_t nkeys, uint64_t *d_out);
tsm_status tsmi_search_u64_dev(tsm_ctx *ctx, tsm_bound_kind kind, const uint64_t *d_sorted,
                               size_t n, const uint64_t *d_keys, size_t nkeys, uint64_t *d_out);
#endif

#ifdef __cplusplus
}
#endif
#endif
