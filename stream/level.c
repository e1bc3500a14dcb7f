/* SPDX-License-Identifier: Apache-2.0 */
/* level.c - the level view (level.h): the extremes of the history and of the
 * subsequence from two sliding runs. */
#include "level.h"

#include "robust.h"

#include <math.h>

void tss_level_free(tss_level *l) {
    tss_slide_free(&l->hist);
    tss_slide_free(&l->sub);
}

void tss_level_reset(tss_level *l) {
    tss_slide_reset(&l->hist);
    tss_slide_reset(&l->sub);
}

double tss_level_width(double lo, double hi) {
    double scale = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
    scale = scale > 1.0 ? scale : 1.0;
    return hi - lo > TSS_LEVEL_FLOOR * scale ? hi - lo : TSS_LEVEL_FLOOR * scale;
}

int tss_level_at(tss_level *l, const double *x, uint64_t x0, size_t base, size_t i, size_t m,
                 double *width, double *level) {
    double lo, hi, slo, shi;
    if (tss_slide_to(&l->hist, x, x0, x0 + base, x0 + i, &lo, &hi) != 0 ||
        tss_slide_to(&l->sub, x, x0, x0 + i, x0 + i + m, &slo, &shi) != 0) {
        *width = *level = NAN;
        return -1;
    }
    *width = tss_level_width(lo, hi);
    const double dev = shi - hi > lo - slo ? shi - hi : lo - slo;
    *level = dev > 0.0 ? dev / *width : 0.0;
    return 0;
}

double tss_level_score(double level) {
    if (isnan(level))
        return NAN;
    return level > 0.0 ? 1.0 - 2.0 * tss_t4_sf(level / TSS_LEVEL_UNIT) : 0.0;
}
