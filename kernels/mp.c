/* mp.c - placeholder until the implementation lands (being written now). */
#include "mp.h"
tsm_status tsm_mp(tsm_ctx *ctx, const tsm_stats *s, size_t excl, double *mp, int64_t *mpi,
                  double *lmp, int64_t *lmpi) {
    (void)s, (void)excl, (void)mp, (void)mpi, (void)lmp, (void)lmpi;
    return tsm_fail(ctx, TSM_EINTERNAL, "tsm_mp: not implemented yet");
}
