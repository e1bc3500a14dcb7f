/* SPDX-License-Identifier: Apache-2.0 */
/* slide.h - the least and largest value of a run of samples [a, b) (sequence numbers)
 * whose ends only move forward, as the views' runs do from one subsequence to the next:
 * two monotonic queues (the minima and maxima of the run's suffixes; van Herk's
 * sliding window extremes in the form of a deque). Exact: the min and max of the same
 * samples as a scan.
 *
 * Cost: O(1) amortised per sample entering the run, O(b - a) when a run does not
 * continue the last one (the first, after a restart, or when an end moves back);
 * memory 16 bytes per queued sample, at most b - a (a few dozen on noisy data). */
#ifndef TSS_SLIDE_H
#define TSS_SLIDE_H

#include <stdint.h>

/* A ring of (sequence number, value), oldest first. */
typedef struct {
    uint64_t *seq;
    double *v;
    uint32_t head, n, cap;
} tss_monoq;

typedef struct {
    tss_monoq lo, hi; /* values increasing (lo) / decreasing (hi) from the oldest */
    uint64_t a, b;    /* the run the queues describe */
    int valid;
} tss_slide;

/* Frees the queues; the state is empty again. */
void tss_slide_free(tss_slide *s);
/* Forgets the run (the samples it holds may change: a restart); keeps the memory. */
void tss_slide_reset(tss_slide *s);
/* Moves the run to [a, b) (a < b), x[k] being the sample of sequence number x0 + k
 * for every k the move reads: [s->b, b) when the run continues (a >= s->a, b >= s->b,
 * a < s->b), else [a, b). Its least and largest value into *lo, *hi. 0, or -1 when out
 * of memory (the state is then reset). */
int tss_slide_to(tss_slide *s, const double *x, uint64_t x0, uint64_t a, uint64_t b, double *lo,
                 double *hi);

#endif
