/* params.c - defaults and validation of a stream's detection parameters. */
#include "params.h"

#include "util.h"

#include <math.h>

tss_params tss_params_default(void) {
    return (tss_params){
        .window = 4096,
        .subsequence = 128,
        .hop = 1024,
        .excl = 0,
        .range = NAN,
        .range_margin = 0.1,
        .motif = 1,
        .references = 10,
        .left_discord = 1,
    };
}

uint32_t tss_params_excl(const tss_params *p) {
    return p->excl ? p->excl : p->subsequence;
}

/* Writes the message; returns -1. */
#define fail(err, errlen, ...) (tssi_say(err, errlen, __VA_ARGS__), -1)

int tss_params_check(const tss_params *p, char *err, unsigned errlen) {
    if (p->subsequence < 3)
        return fail(err, errlen, "subsequence must be >= 3 (got %u)", p->subsequence);
    if (p->window > TSS_WINDOW_MAX)
        return fail(err, errlen, "window must be <= %u (got %u)", TSS_WINDOW_MAX, p->window);
    if (p->window < 2 * (uint64_t)p->subsequence)
        return fail(err, errlen, "window must be >= 2 * subsequence (window %u, subsequence %u)",
                    p->window, p->subsequence);
    if (p->hop < 1 || p->hop > p->window)
        return fail(err, errlen, "hop must be in [1, window] (hop %u, window %u)", p->hop,
                    p->window);
    if (p->excl > p->window - p->subsequence)
        return fail(err, errlen,
                    "excl must be <= window - subsequence, or 0 for subsequence (excl %u, "
                    "window %u, subsequence %u)",
                    p->excl, p->window, p->subsequence);
    if (!isnan(p->range) && !(p->range >= 0.0 && isfinite(p->range)))
        return fail(err, errlen, "range must be a finite distance >= 0 or auto (got %g)", p->range);
    if (!(p->range_margin >= 0.0 && isfinite(p->range_margin)))
        return fail(err, errlen, "range_margin must be finite and >= 0 (got %g)", p->range_margin);
    if (p->references > TSS_REFERENCES_MAX)
        return fail(err, errlen, "references must be <= %u (got %u)", TSS_REFERENCES_MAX,
                    p->references);
    if (p->motif != 0 && p->motif != 1)
        return fail(err, errlen, "motif must be 0 or 1 (got %d)", p->motif);
    if (p->left_discord != 0 && p->left_discord != 1)
        return fail(err, errlen, "left_discord must be 0 or 1 (got %d)", p->left_discord);
    return 0;
}
