/* SPDX-License-Identifier: Apache-2.0 */
/* params.c - defaults and validation of a stream's detection parameters. */
#include "params.h"

#include "util.h"

#include <math.h>

tss_params tss_params_default(void) {
    return (tss_params){
        .window = 4096,
        .subsequence = 0,
        .hop = 1024,
        .excl = 0,
        .warmup = 300,
        .threshold = 0.997,
        .threshold_end = 0.98,
        .range = NAN,
        .motif = 1,
        .references = 10,
        .left_discord = 0,
    };
}

uint32_t tss_params_excl(const tss_params *p, uint32_t m) {
    return p->excl ? p->excl : m;
}

uint32_t tss_params_warm(const tss_params *p, uint32_t m) {
    return p->warmup > 2 * m ? p->warmup : 2 * m;
}

uint32_t tss_params_auto_max(const tss_params *p, uint64_t n) {
    uint64_t most = n / 3 < p->window / 8 ? n / 3 : p->window / 8;
    return most > TSS_AUTO_M_MIN ? (uint32_t)most : TSS_AUTO_M_MIN;
}

/* The longest m subsequence = auto may choose in a window of p->window samples (its
 * fallback included). */
static uint32_t auto_longest(const tss_params *p) {
    const uint32_t most = tss_params_auto_max(p, p->window);
    return most > TSS_AUTO_M_FALLBACK ? most : TSS_AUTO_M_FALLBACK;
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

void tss_params_fit(tss_params *p, unsigned set) {
    const uint32_t m = set & TSS_SET_SUBSEQUENCE ? p->subsequence : 0; /* 0: auto or unset */
    if (!(set & TSS_SET_WINDOW)) {
        uint64_t w = MAX(p->window, 2 * (uint64_t)m);
        w = set & TSS_SET_WARMUP ? MAX(w, p->warmup) : w;
        w = set & TSS_SET_HOP ? MAX(w, p->hop) : w;
        w = m ? MAX(w, (uint64_t)p->excl + m) : w;
        p->window = (uint32_t)MIN(w, TSS_WINDOW_MAX);
        if (!m && p->excl > p->window - auto_longest(p)) {
            /* auto's longest m is max(W / 8, 16): W - W / 8 >= excl from here on */
            p->window = p->excl + MAX(p->excl / 7, TSS_AUTO_M_FALLBACK) - 1;
            while (p->window < TSS_WINDOW_MAX && p->excl > p->window - auto_longest(p))
                p->window++;
            p->window = MIN(p->window, TSS_WINDOW_MAX);
        }
    }
    if (!(set & TSS_SET_WARMUP))
        p->warmup = MIN(p->warmup, p->window);
    const int auto_fits = p->window >= 2 * TSS_AUTO_M_FALLBACK &&
                          (!(set & TSS_SET_WARMUP) || p->warmup >= TSS_AUTO_WARMUP_MIN) &&
                          p->excl <= p->window - auto_longest(p);
    if (!(set & TSS_SET_SUBSEQUENCE) && !auto_fits) {
        uint32_t fixed = MIN(TSS_AUTO_M_FALLBACK, p->window / 2);
        fixed = p->excl < p->window ? MIN(fixed, p->window - p->excl) : fixed;
        p->subsequence = fixed >= 3 ? fixed : 0;
    }
    if (!(set & TSS_SET_WARMUP) && p->subsequence == 0)
        p->warmup = MAX(p->warmup, MIN(TSS_AUTO_WARMUP_MIN, p->window));
    if (!(set & TSS_SET_HOP))
        p->hop = MIN(p->hop, p->window);
    if (!(set & TSS_SET_THRESHOLD) && set & TSS_SET_THRESHOLD_END)
        p->threshold = MAX(p->threshold, p->threshold_end);
    if (!(set & TSS_SET_THRESHOLD_END))
        p->threshold_end = MIN(p->threshold_end, p->threshold);
}

/* Writes the message; returns -1. */
#define fail(err, errlen, ...) (tssi_say(err, errlen, __VA_ARGS__), -1)

int tss_params_check(const tss_params *p, char *err, unsigned errlen) {
    const int automatic = p->subsequence == 0;
    if (!automatic && p->subsequence < 3)
        return fail(err, errlen, "subsequence must be >= 3 or auto (got %u)", p->subsequence);
    if (p->window > TSS_WINDOW_MAX)
        return fail(err, errlen, "window must be <= %u (got %u)", TSS_WINDOW_MAX, p->window);
    if (!automatic && p->window < 2 * (uint64_t)p->subsequence)
        return fail(err, errlen, "window must be >= 2 * subsequence (window %u, subsequence %u)",
                    p->window, p->subsequence);
    if (p->warmup > p->window)
        return fail(err, errlen, "warmup must be <= window (warmup %u, window %u)", p->warmup,
                    p->window);
    if (automatic && p->window < 2 * TSS_AUTO_M_FALLBACK)
        return fail(err, errlen, "window must be >= %u with subsequence = auto (got %u)",
                    2 * TSS_AUTO_M_FALLBACK, p->window);
    if (automatic && p->warmup < TSS_AUTO_WARMUP_MIN)
        return fail(err, errlen, "warmup must be >= %u with subsequence = auto (got %u)",
                    TSS_AUTO_WARMUP_MIN, p->warmup);
    if (!(p->threshold > 0.0 && p->threshold < 1.0))
        return fail(err, errlen, "threshold must be a score in (0, 1) (got %g)", p->threshold);
    if (!(p->threshold_end > 0.0 && p->threshold_end <= p->threshold))
        return fail(err, errlen, "threshold_end must be in (0, threshold] (got %g, threshold %g)",
                    p->threshold_end, p->threshold);
    if (p->hop < 1 || p->hop > p->window)
        return fail(err, errlen, "hop must be in [1, window] (hop %u, window %u)", p->hop,
                    p->window);
    if (p->excl > p->window - (automatic ? auto_longest(p) : p->subsequence))
        return fail(err, errlen,
                    "excl must be <= window - subsequence, or 0 for subsequence (excl %u, "
                    "window %u, subsequence %u)",
                    p->excl, p->window, p->subsequence);
    if (!isnan(p->range) && !(p->range >= 0.0 && isfinite(p->range)))
        return fail(err, errlen, "range must be a finite distance >= 0 or auto (got %g)", p->range);
    if (p->references > TSS_REFERENCES_MAX)
        return fail(err, errlen, "references must be <= %u (got %u)", TSS_REFERENCES_MAX,
                    p->references);
    if (p->motif != 0 && p->motif != 1)
        return fail(err, errlen, "motif must be 0 or 1 (got %d)", p->motif);
    if (p->left_discord != 0 && p->left_discord != 1)
        return fail(err, errlen, "left_discord must be 0 or 1 (got %d)", p->left_discord);
    return 0;
}
