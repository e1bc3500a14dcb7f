/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet_ref.h - brute-force shapelet definitions (shapelet.h), in plain loops:
 * z-normalisation by two passes, the full DTW cost matrix with a band, and every
 * split threshold tried with entropies computed from scratch. Slow and obviously
 * correct; kernels/shapelet is tested against it. */
#ifndef TSM_SHAPELET_REF_H
#define TSM_SHAPELET_REF_H

#include "shapelet.h"

#include <stddef.h>
#include <stdint.h>

/* Distance (length-normalised, z-normalised; DTW with band w, w = 0 Euclidean) from
 * pattern c[0..l-1] to series x[0..len-1]: the minimum over its subsequences. *pos
 * (may be NULL) gets the first best start. */
double ref_shapelet_subdist(const double *c, size_t l, const double *x, size_t len, size_t w,
                            size_t *pos);

/* Information gain and separation gap of the split {d <= th} | {d > th}. Returns 0
 * when one side is empty. */
int ref_shapelet_split_at(const double *d, const int *y, size_t n, int nc, double th, double *gain,
                          double *gap);

/* The exact best split: every midpoint between distinct sorted distances, best gain,
 * then larger gap (tolerances of shapelet.h), then the smallest threshold. */
tsm_split ref_shapelet_split(const double *d, const int *y, size_t n, int nc);

/* The heuristic split of seed 003 section 4.3 (shapelet.h), written out plainly: the
 * same shuffle (splitmix64 from seed, Knuth), Lomuto partitions around the last item
 * of the range, counts recomputed from scratch at every step; gain and gap of the
 * chosen threshold by ref_shapelet_split_at. */
tsm_split ref_shapelet_split_heuristic(const double *d, const int *y, size_t n, int nc,
                                       uint64_t seed);

/* The best shapelet over all candidates of data under opts (exact splits; with
 * opts->op, each candidate's distances combined with opts->base first). */
tsm_shapelet ref_shapelet_best(const tsm_shapelet_data *data, const tsm_shapelet_opts *opts);

#endif
