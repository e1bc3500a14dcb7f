/* pd3.c - placeholder until the implementation lands (being written now). */
#include "pd3.h"
tsm_status tsm_pd3_range(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double r, size_t seglen,
                         tsm_discord **out, size_t *count, tsm_pd3_stats *counters) {
    (void)s, (void)excl, (void)r, (void)seglen, (void)out, (void)count, (void)counters;
    return tsm_fail(ctx, TSM_EINTERNAL, "not implemented yet");
}
tsm_status tsm_discords_topk(tsm_ctx *ctx, const tsm_stats *s, size_t excl, size_t k,
                             size_t seglen, tsm_discord *out, size_t *count,
                             tsm_pd3_stats *counters) {
    (void)s, (void)excl, (void)k, (void)seglen, (void)out, (void)count, (void)counters;
    return tsm_fail(ctx, TSM_EINTERNAL, "not implemented yet");
}
