/* dedup.c - see dedup.h. */
#include "dedup.h"

#include "sets.h"

#include <stdlib.h>
#include <string.h>

void tss_seqset_free(tss_seqset *s) {
    free(s->v);
    *s = (tss_seqset){0};
}

void tss_seqset_prune(tss_seqset *s, uint64_t lo) {
    size_t a = 0, b = s->n; /* first element >= lo */
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (s->v[mid] < lo)
            a = mid + 1;
        else
            b = mid;
    }
    if (a > 0) {
        memmove(s->v, s->v + a, (s->n - a) * sizeof *s->v);
        s->n -= a;
    }
}

tsm_status tss_dedup(tsm_ctx *ctx, tss_seqset *alerted, const uint64_t *found, size_t nfound,
                     uint64_t *fresh, size_t *nfresh) {
    *nfresh = 0;
    if (nfound == 0)
        return TSM_OK;
    tsm_status st = tsm_set_u64(ctx, TSM_SET_DIFFERENCE, found, nfound, alerted->v, alerted->n,
                                fresh, nfound, nfresh);
    if (st != TSM_OK || *nfresh == 0)
        return st;
    /* alerted = alerted UNION fresh, into a new array */
    size_t cap = alerted->n + *nfresh, n = 0;
    uint64_t *merged = malloc(cap * sizeof *merged);
    if (!merged)
        return tsm_fail(ctx, TSM_ENOMEM, "out of memory for %zu alerted starts", cap);
    st = tsm_set_u64(ctx, TSM_SET_UNION, alerted->v, alerted->n, fresh, *nfresh, merged, cap, &n);
    if (st != TSM_OK) {
        free(merged);
        *nfresh = 0;
        return st;
    }
    free(alerted->v);
    alerted->v = merged;
    alerted->n = n;
    alerted->cap = cap;
    return TSM_OK;
}
