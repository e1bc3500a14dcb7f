/* SPDX-License-Identifier: Apache-2.0 */
/* level.c - the level view (level.h): ranges of sample runs from per-block ranges. */
#include "level.h"

#include "robust.h"

#include <math.h>
#include <stdlib.h>

void tss_level_free(tss_level *l) {
    free(l->lo);
    free(l->hi);
    free(l->id);
    *l = (tss_level){0};
}

/* Room for the blocks of a window of W samples (and the ones a round adds beyond it);
 * 0 or -1. */
static int ensure(tss_level *l, uint32_t window) {
    const uint32_t nb = window / TSS_LEVEL_BLOCK + 3;
    if (l->nb == nb)
        return 0;
    tss_level_free(l);
    l->lo = malloc(nb * sizeof *l->lo);
    l->hi = malloc(nb * sizeof *l->hi);
    l->id = malloc(nb * sizeof *l->id);
    if (!l->lo || !l->hi || !l->id) {
        tss_level_free(l);
        return -1;
    }
    l->nb = nb;
    for (uint32_t b = 0; b < nb; b++)
        l->id[b] = UINT64_MAX;
    return 0;
}

/* Least and largest of x[a .. b) into *lo, *hi (left as they are when a == b). */
static void scan(const double *x, size_t a, size_t b, double *lo, double *hi) {
    double mn = *lo, mx = *hi;
    for (size_t k = a; k < b; k++) {
        mn = x[k] < mn ? x[k] : mn;
        mx = x[k] > mx ? x[k] : mx;
    }
    *lo = mn, *hi = mx;
}

/* The block of sequence number `blk` ends at x[k] (k + 1 >= TSS_LEVEL_BLOCK): its range. */
static void close_block(tss_level *l, const double *x, size_t k, uint64_t blk) {
    const uint32_t slot = (uint32_t)(blk % l->nb);
    double lo = INFINITY, hi = -INFINITY;
    scan(x, k + 1 - TSS_LEVEL_BLOCK, k + 1, &lo, &hi);
    l->lo[slot] = lo, l->hi[slot] = hi, l->id[slot] = blk;
}

int tss_level_feed(tss_level *l, const double *x, uint64_t x0, size_t from, size_t to,
                   uint32_t window) {
    if (ensure(l, window) != 0)
        return -1;
    if (l->next != x0 + from) { /* not where the last call ended: rebuild */
        for (uint32_t b = 0; b < l->nb; b++)
            l->id[b] = UINT64_MAX;
        from = 0;
    }
    for (size_t k = from; k < to; k++) {
        const uint64_t seq = x0 + k;
        /* a block whose first sample is before x[0] is partial here: never closed */
        if (seq % TSS_LEVEL_BLOCK == TSS_LEVEL_BLOCK - 1 && k + 1 >= TSS_LEVEL_BLOCK)
            close_block(l, x, k, seq / TSS_LEVEL_BLOCK);
    }
    l->next = x0 + to;
    return 0;
}

/* Least and largest of x[a .. b) (a < b): the whole blocks inside from their ranges,
 * the ends by a scan. */
static void range(const tss_level *l, const double *x, uint64_t x0, size_t a, size_t b, double *lo,
                  double *hi) {
    *lo = INFINITY, *hi = -INFINITY;
    const uint64_t sa = x0 + a, sb = x0 + b;                       /* sequence numbers [sa, sb) */
    uint64_t first = (sa + TSS_LEVEL_BLOCK - 1) / TSS_LEVEL_BLOCK; /* whole blocks [first, end) */
    const uint64_t end = sb / TSS_LEVEL_BLOCK;
    if (first >= end) {
        scan(x, a, b, lo, hi);
        return;
    }
    scan(x, a, (size_t)(first * TSS_LEVEL_BLOCK - x0), lo, hi);
    for (uint64_t blk = first; blk < end; blk++) {
        const uint32_t slot = (uint32_t)(blk % l->nb);
        if (l->id[slot] == blk) {
            *lo = l->lo[slot] < *lo ? l->lo[slot] : *lo;
            *hi = l->hi[slot] > *hi ? l->hi[slot] : *hi;
        } else { /* not kept (cannot happen for a window the calls fed): scanned */
            const size_t at = (size_t)(blk * TSS_LEVEL_BLOCK - x0);
            scan(x, at, at + TSS_LEVEL_BLOCK, lo, hi);
        }
    }
    scan(x, (size_t)(end * TSS_LEVEL_BLOCK - x0), b, lo, hi);
}

void tss_level_range(const tss_level *l, const double *x, uint64_t x0, size_t base, size_t i,
                     double *lo, double *hi) {
    range(l, x, x0, base, i, lo, hi);
}

double tss_level_width(double lo, double hi) {
    double scale = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
    scale = scale > 1.0 ? scale : 1.0;
    return hi - lo > TSS_LEVEL_FLOOR * scale ? hi - lo : TSS_LEVEL_FLOOR * scale;
}

double tss_level_beyond(const tss_level *l, const double *x, uint64_t x0, size_t i, size_t m,
                        double lo, double hi) {
    double slo, shi;
    range(l, x, x0, i, i + m, &slo, &shi);
    const double dev = shi - hi > lo - slo ? shi - hi : lo - slo;
    return dev > 0.0 ? dev / tss_level_width(lo, hi) : 0.0;
}

double tss_level_of(const tss_level *l, const double *x, uint64_t x0, size_t base, size_t i,
                    size_t m) {
    if (!l->nb || base >= i)
        return NAN;
    double lo, hi;
    range(l, x, x0, base, i, &lo, &hi);
    return tss_level_beyond(l, x, x0, i, m, lo, hi);
}

double tss_level_score(double level) {
    if (isnan(level))
        return NAN;
    return level > 0.0 ? 1.0 - 2.0 * tss_t4_sf(level / TSS_LEVEL_UNIT) : 0.0;
}
