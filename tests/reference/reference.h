/* SPDX-License-Identifier: Apache-2.0 */
/* reference.h - brute-force definitions of DESIGN section 3, in plain loops.
 *
 * Everything here is computed straight from the definitions: each distance from the
 * two z-normalised subsequences (population standard deviation), every pair visited.
 * It is slow (O(N^2 m)) and meant to be obviously correct; every fast kernel is
 * tested against it. Results use the kernel types and conventions (mp.h, pd3.h, mk.h). */
#ifndef TSM_REFERENCE_H
#define TSM_REFERENCE_H

#include "mk.h"
#include "pd3.h"

#include <stddef.h>
#include <stdint.h>

/* TSM_SUB_* kind of subsequence t[i..i+m-1]. */
int ref_kind(const double *t, size_t m, size_t i);

/* Squared z-normalised distance of subsequences i and j; NAN if either has a
 * non-finite value. */
double ref_d2(const double *t, size_t m, size_t i, size_t j);
/* The plain squared Euclidean distance of T[i,m] and T[j,m] (the magnitude view of
 * DESIGN 5.3), summed term by term; NAN if either holds a non-finite value. */
double ref_raw_d2(const double *t, size_t m, size_t i, size_t j);
/* The level view of DESIGN 5.3 (stream/level.h) by its definition, from scans: how far
 * T[i,m] lies outside the range of t[base .. i - 1], in widths of that range. */
double ref_level(const double *t, size_t base, size_t i, size_t m);

/* Nearest-neighbour profile (left only when left != 0), conventions of mp.h. */
void ref_profile(const double *t, size_t n, size_t m, size_t excl, int left, double *dist,
                 int64_t *index);

/* Range discords from a two-sided profile: every i with finite dist[i] >= r, by index.
 * Returns the count; out must hold N entries. */
size_t ref_range_discords(const double *dist, const int64_t *index, size_t N, double r,
                          tsm_discord *out);

/* Top-k discords from a two-sided profile: greedy by (distance desc, index asc), each
 * a non-self-match of those chosen before. Returns the count (<= k). */
size_t ref_topk_discords(const double *dist, const int64_t *index, size_t N, size_t excl, size_t k,
                         tsm_discord *out);

/* Top-k motifs: all non-self-match pairs sorted by (d, a, b), chosen greedily with
 * no member within excl of a member of an earlier pair. Returns the count (<= k). */
size_t ref_topk_motifs(const double *t, size_t n, size_t m, size_t excl, size_t k, tsm_motif *out);

#endif
