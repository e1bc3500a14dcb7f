/* SPDX-License-Identifier: Apache-2.0 */
/* level.h - the level view of DESIGN 5.3: how far a completed subsequence's values lie
 * outside the range its stream has shown, as a share of that range's width.
 *
 * For subsequence i = [i, e] (e = i + m - 1) over the window [base, e] that its left-NN
 * search sees (online.h), the history is [base, i - 1] (the samples before it, at least
 * excl of them), lo and hi its least and largest value, and
 *   level(i) = max(0, max[i, e] - hi, lo - min[i, e]) / width,
 *   width = max(hi - lo, TSS_LEVEL_FLOOR * max(1, |lo|, |hi|))
 * so a stream that held one value scores any departure from it as large, never as
 * infinite. A value is scored against the range of the samples before it for as long
 * as it stays in the subsequence: a spike or the first samples of a new level score
 * for m subsequences, then belong to the range. The width also sets the magnitude
 * view's floor (online_round.c).
 *
 * Cost: the history and the subsequence are runs whose ends move forward from one
 * subsequence to the next, so their extremes come from two sliding runs (slide.h):
 * O(1) amortised per subsequence; O(W) after a restart, a restore or a new m. Exact:
 * the same min and max as a scan. */
#ifndef TSS_LEVEL_H
#define TSS_LEVEL_H

#include "slide.h"

#include <stddef.h>
#include <stdint.h>

#define TSS_LEVEL_FLOOR 1e-9
#define TSS_LEVEL_UNIT  0.01 /* the level score's unit: a hundredth of the range's width */

typedef struct {
    tss_slide hist, sub; /* the history [base, i) and the subsequence [i, i + m) */
} tss_level;

/* Frees the runs; the state is empty again. */
void tss_level_free(tss_level *l);
/* Forgets the runs (a restart: the samples behind their sequence numbers may change). */
void tss_level_reset(tss_level *l);

/* The level of the subsequence x[i .. i + m - 1] against the history x[base .. i - 1]
 * (base < i; x[k] the sample of sequence number x0 + k, from the window's start) into
 * *level and the history's width into *width. Consecutive calls of a stream move base
 * and i forward. 0, or -1 when out of memory (both NAN then). */
int tss_level_at(tss_level *l, const double *x, uint64_t x0, size_t base, size_t i, size_t m,
                 double *width, double *level);

/* The width of the range [lo, hi] as the level view divides by it, floored as above. */
double tss_level_width(double lo, double hi);

/* The level view as a score in [0, 1): 1 - 2 t4(level / TSS_LEVEL_UNIT) (robust.h's
 * Student's t tail), 0 inside the range (level 0), 0.995 at 0.056 widths beyond it;
 * NAN for NAN. Reported beside the other views' scores (detect.h). */
double tss_level_score(double level);

#endif
