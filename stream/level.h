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
 * for m subsequences, then belong to the range.
 *
 * Cost: the ranges come from the least and largest value of each block of
 * TSS_LEVEL_BLOCK samples (by sequence number), kept for the blocks of the last window,
 * plus the samples of the partial blocks at the ends: O(W / TSS_LEVEL_BLOCK +
 * TSS_LEVEL_BLOCK) per subsequence, and 16 bytes a block (about 1.5 KB at W = 4096).
 * Everything is derived from the window: a restart, a restore or a gap in the calls
 * rebuilds it from the samples. Exact: the same min and max as a scan. */
#ifndef TSS_LEVEL_H
#define TSS_LEVEL_H

#include <stddef.h>
#include <stdint.h>

#define TSS_LEVEL_BLOCK 64
#define TSS_LEVEL_FLOOR 1e-9
#define TSS_LEVEL_UNIT  0.01 /* the level score's unit: a hundredth of the range's width */

typedef struct {
    double *lo, *hi; /* per block, at block number % nb */
    uint64_t *id;    /* the block number each slot holds (UINT64_MAX: none) */
    uint32_t nb;     /* slots */
    uint64_t next;   /* sequence number of the next sample expected (continuity) */
} tss_level;

/* Frees the blocks; the state is empty again (rebuilt at the next call). */
void tss_level_free(tss_level *l);

/* The samples x[from .. to) (x[k]: sequence number x0 + k) enter: the blocks they
 * complete get their range. x[0 .. from) must be the samples before them in the same
 * window (the caller's window, which starts at x0): when from is not where the last
 * call ended (a restart, a restore), the state is rebuilt from them. window: W (the
 * blocks kept). 0, or -1 when out of memory (the level is then NAN: tss_level_of). */
int tss_level_feed(tss_level *l, const double *x, uint64_t x0, size_t from, size_t to,
                   uint32_t window);

/* The least and largest of the history x[base .. i - 1] (base < i; x as fed) into *lo,
 * *hi. O(W / TSS_LEVEL_BLOCK + TSS_LEVEL_BLOCK). */
void tss_level_range(const tss_level *l, const double *x, uint64_t x0, size_t base, size_t i,
                     double *lo, double *hi);

/* The width of the range [lo, hi] as the level view divides by it, floored as above. */
double tss_level_width(double lo, double hi);

/* The level of the subsequence x[i .. i + m - 1] against the history x[base .. i - 1]
 * (base < i; x as fed); NAN when the state could not be kept. O(W / TSS_LEVEL_BLOCK +
 * TSS_LEVEL_BLOCK + m / TSS_LEVEL_BLOCK). */
double tss_level_of(const tss_level *l, const double *x, uint64_t x0, size_t base, size_t i,
                    size_t m);

/* The level of the subsequence x[i .. i + m - 1] against a history whose least and
 * largest values are lo and hi (tss_level_range's); as tss_level_of. */
double tss_level_beyond(const tss_level *l, const double *x, uint64_t x0, size_t i, size_t m,
                        double lo, double hi);

/* The level view as a score in [0, 1): 1 - 2 t4(level / TSS_LEVEL_UNIT) (robust.h's
 * Student's t tail), 0 inside the range (level 0), 0.995 at 0.056 widths beyond it;
 * NAN for NAN. Reported beside the other views' scores (detect.h). */
double tss_level_score(double level);

#endif
