/* SPDX-License-Identifier: Apache-2.0 */
/* robust.c - robust z-scores of a view against its recent values (robust.h). */
#include "robust.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void tss_robust_free(tss_robust *r) {
    free(r->ring);
    *r = (tss_robust){0};
}

int tss_robust_add(tss_robust *r, double v) {
    if (!isfinite(v))
        return 0;
    if (!r->ring && !(r->ring = malloc(TSS_ROBUST_HISTORY * sizeof *r->ring)))
        return -1;
    r->ring[r->head] = v;
    r->head = (r->head + 1) % TSS_ROBUST_HISTORY;
    r->n += r->n < TSS_ROBUST_HISTORY;
    if (r->n >= TSS_ROBUST_MIN && (!r->ready || ++r->since >= TSS_ROBUST_REFRESH))
        tss_robust_refresh(r);
    return 0;
}

/* The k-th smallest of a[0..n) (k < n; a is reordered): quickselect, median of three
 * pivots. O(n) expected. */
static double select_kth(double *a, uint32_t n, uint32_t k) {
    uint32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        double x = a[lo], y = a[mid], z = a[hi]; /* the median of the three */
        const double piv = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
        uint32_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < piv)
                i++;
            while (a[j] > piv)
                j--;
            if (i <= j) {
                const double t = a[i];
                a[i] = a[j], a[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return a[k];
    }
    return a[k];
}

/* The median of a[0..n) (n >= 1; a is reordered): the mean of the two middle values
 * when n is even, as numpy's median. */
static double median(double *a, uint32_t n) {
    const double hi = select_kth(a, n, n / 2);
    if (n % 2)
        return hi;
    double lo = a[0]; /* the largest of the lower half, which selection left below */
    for (uint32_t k = 1; k < n / 2; k++)
        lo = a[k] > lo ? a[k] : lo;
    return 0.5 * (lo + hi);
}

void tss_robust_refresh(tss_robust *r) {
    r->since = 0;
    r->ready = r->n >= TSS_ROBUST_MIN;
    if (!r->ready)
        return;
    double a[TSS_ROBUST_HISTORY];
    memcpy(a, r->ring, r->n * sizeof *a); /* (the ring's order does not matter) */
    r->med = median(a, r->n);
    for (uint32_t k = 0; k < r->n; k++)
        a[k] = fabs(a[k] - r->med);
    r->mad = median(a, r->n);
}

double tss_t4_sf(double z) {
    const double a = fabs(z), rr = sqrt(a * a + 4.0);
    const double one_minus_x = 4.0 / (rr * (rr + a)), x = 1.0 - one_minus_x;
    const double upper = 0.25 * one_minus_x * one_minus_x * (2.0 + x);
    return z >= 0 ? upper : 1.0 - upper;
}

double tss_robust_score(const tss_robust *r, double v, double unit) {
    if (!isfinite(v) || !r->ready)
        return NAN;
    double den = 1.4826 * r->mad;
    den = den > unit ? den : unit;
    den = den > 1e-300 ? den : 1e-300;
    return 1.0 - tss_t4_sf((v - r->med) / den);
}
