/* mk.c - placeholder until the implementation lands (being written now). */
#include "mk.h"
tsm_status tsm_mk_motifs(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k, size_t refs,
                         uint64_t seed, tsm_motif *out, size_t *count, tsm_mk_stats *counters) {
    (void)s, (void)excl, (void)k, (void)refs, (void)seed, (void)out, (void)count, (void)counters;
    return tsm_fail(ctx, TSM_EINTERNAL, "not implemented yet");
}
