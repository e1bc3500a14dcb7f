/* SPDX-License-Identifier: Apache-2.0 */
/* robust.h - a view's score against the stream's own recent values of that view (DESIGN
 * 5.3; the rule chosen on the development corpora, docs/detection.md "Views"):
 *   z = (v - med) / max(1.4826 MAD, unit),  score = 1 - t4(z)
 * med and MAD the median and median absolute deviation of the last TSS_ROBUST_HISTORY
 * values before v as of the history's last refresh (every TSS_ROBUST_REFRESH values, and
 * when it first holds TSS_ROBUST_MIN), unit the caller's floor in the stream's own units (for the
 * magnitude view 1% of sqrt(m) times the range of the window before the subsequence:
 * a difference immaterial against the stream's range never scores high), t4 the
 * survival function of Student's t with 4 degrees of freedom (a heavy tail, about
 * 3 / z^4, so that scores keep the order of z far out; 0.997 is z = 5.6). No score
 * while the history holds fewer than TSS_ROBUST_MIN values.
 *
 * Cost: O(1) amortised per value (a refresh selects the median and MAD over a copy of the
 * history, O(H), once every TSS_ROBUST_REFRESH values: about 0.03 us a value at H =
 * 1000), O(1) per score; memory 8 bytes per value held. A refresh every quarter of the
 * history scores every development corpus within noise of a refresh every value (mean
 * AUC-PR within 0.005 on each of the nine against every 64 values, and that within
 * 0.003 of every value: docs/detection.md "Views"). */
#ifndef TSS_ROBUST_H
#define TSS_ROBUST_H

#include <stdint.h>

#define TSS_ROBUST_HISTORY 1000
#define TSS_ROBUST_MIN     250 /* a quarter of the history */
#define TSS_ROBUST_REFRESH 256 /* a quarter of the history */
/* The magnitude view's unit: this share of sqrt(m) times the width of the window's range
 * before the subsequence (its materiality gate, online_round.c). */
#define TSS_MAGNITUDE_FLOOR 0.01

typedef struct {
    double *ring; /* TSS_ROBUST_HISTORY values, oldest at head - n (NULL until the first) */
    uint32_t n, head;
    uint32_t since; /* values added since the last refresh */
    int ready;      /* med and mad hold the last refresh's (n >= TSS_ROBUST_MIN then) */
    double med, mad;
} tss_robust;

/* Frees the history; it is empty again. */
void tss_robust_free(tss_robust *r);
/* Adds a value (a non-finite one is ignored), then refreshes the median and MAD when
 * the history first holds TSS_ROBUST_MIN values and every TSS_ROBUST_REFRESH values
 * after; 0, or -1 when out of memory (the value is then not added). O(1) amortised. */
int tss_robust_add(tss_robust *r, double v);
/* Recomputes the median and MAD of the values held (r->ready: whether there are at least
 * TSS_ROBUST_MIN) and restarts the refresh count; for a history loaded from a
 * checkpoint written before the stats were kept. O(n). */
void tss_robust_refresh(tss_robust *r);
/* The score of v (1 - t4(z) as above) against the last refresh's median and MAD; NAN
 * when not ready or v is not finite. O(1). */
double tss_robust_score(const tss_robust *r, double v, double unit);
/* Student's t with 4 degrees of freedom: P(T >= z), without cancellation. */
double tss_t4_sf(double z);

#endif
