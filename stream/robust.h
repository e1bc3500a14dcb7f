/* SPDX-License-Identifier: Apache-2.0 */
/* robust.h - a view's score against the stream's own recent values of that view (DESIGN
 * 5.3; the rule chosen on the development corpora, docs/detection.md "Views"):
 *   z = (v - med) / max(1.4826 MAD, unit),  score = 1 - t4(z)
 * med and MAD the median and median absolute deviation of the last TSS_ROBUST_HISTORY
 * values before v, unit the caller's floor in the stream's own units (for the
 * magnitude view 1% of sqrt(m) times the range of the window before the subsequence:
 * a difference immaterial against the stream's range never scores high), t4 the
 * survival function of Student's t with 4 degrees of freedom (a heavy tail, about
 * 3 / z^4, so that scores keep the order of z far out; 0.997 is z = 5.6). No score
 * while the history holds fewer than TSS_ROBUST_MIN values.
 *
 * Cost: O(H) per score (the median and MAD by selection over a copy of the history),
 * memory 8 bytes per value held. */
#ifndef TSS_ROBUST_H
#define TSS_ROBUST_H

#include <stdint.h>

#define TSS_ROBUST_HISTORY 1000
#define TSS_ROBUST_MIN     250 /* a quarter of the history */

typedef struct {
    double *ring; /* TSS_ROBUST_HISTORY values, oldest at head - n (NULL until the first) */
    uint32_t n, head;
} tss_robust;

/* Frees the history; it is empty again. */
void tss_robust_free(tss_robust *r);
/* Adds a value (a non-finite one is ignored); 0, or -1 when out of memory. O(1). */
int tss_robust_add(tss_robust *r, double v);
/* The median and MAD of the values held into *med, *mad; 0 when ready, -1 when fewer
 * than TSS_ROBUST_MIN are held. O(n). */
int tss_robust_stats(const tss_robust *r, double *med, double *mad);
/* The score of v (1 - t4(z) as above); NAN when not ready or v is not finite. */
double tss_robust_score(const tss_robust *r, double v, double unit);
/* Student's t with 4 degrees of freedom: P(T >= z), without cancellation. */
double tss_t4_sf(double z);

#endif
