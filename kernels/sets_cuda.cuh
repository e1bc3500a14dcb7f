/* SPDX-License-Identifier: Apache-2.0 */
/* sets_cuda.cuh - between the files of the CUDA backend of sets.h: the two methods on
 * device arrays, one overload per key width, defined in sets_merge.cu and sets_range.cu
 * and chosen by sets.cu. Arguments as tsmi_set_u32_dev's (sets.h), with both operands
 * non-empty: the result's size goes to *d_count (device), the result to d_out when it
 * fits cap elements (nothing is written to it otherwise; d_out NULL computes the size
 * only). MERGE_PATH does not wait for its kernels; RANGE_SEARCH synchronises the
 * stream. */
#ifndef TSM_SETS_CUDA_CUH
#define TSM_SETS_CUDA_CUH

#include "cuda_util.cuh"
#include "sets.h"

tsm_status tsmi_set_merge_path_dev(tsm_ctx *ctx, tsm_set_op op, const uint32_t *d_a, size_t na,
                                   const uint32_t *d_b, size_t nb, uint32_t *d_out, size_t cap,
                                   uint64_t *d_count);
tsm_status tsmi_set_merge_path_dev(tsm_ctx *ctx, tsm_set_op op, const uint64_t *d_a, size_t na,
                                   const uint64_t *d_b, size_t nb, uint64_t *d_out, size_t cap,
                                   uint64_t *d_count);

tsm_status tsmi_set_range_search_dev(tsm_ctx *ctx, tsm_set_op op, const uint32_t *d_a, size_t na,
                                     const uint32_t *d_b, size_t nb, uint32_t *d_out, size_t cap,
                                     uint64_t *d_count);
tsm_status tsmi_set_range_search_dev(tsm_ctx *ctx, tsm_set_op op, const uint64_t *d_a, size_t na,
                                     const uint64_t *d_b, size_t nb, uint64_t *d_out, size_t cap,
                                     uint64_t *d_count);

#endif
