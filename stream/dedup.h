/* dedup.h - alert de-duplication of DISCORD alerts (DESIGN 5.1: "new discords minus
 * already-alerted set").
 *
 * A stream keeps the sorted set of absolute starts it has already published as
 * discords. A pass finds its range discords F; the new ones are F MINUS alerted, by
 * the kernels' multiset difference (kernels/sets.h; starts are distinct, so multiset
 * and set agree). Starts that left the window can never be found again and are pruned,
 * so the set holds at most one window's subsequences. */
#ifndef TSS_DEDUP_H
#define TSS_DEDUP_H

#include "tsm.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t *v; /* sorted, distinct */
    size_t n, cap;
} tss_seqset;

void tss_seqset_free(tss_seqset *s);
/* Removes the starts below lo; O(log n + kept). */
void tss_seqset_prune(tss_seqset *s, uint64_t lo);

/* found[0..nfound-1] (sorted, distinct): writes the starts not in alerted to fresh
 * (room for nfound) and adds them to alerted. O(nfound + alerted) plus the set
 * kernels' cost. TSM_OK, or the kernels' status (message in ctx); alerted is then
 * unchanged. */
tsm_status tss_dedup(tsm_ctx *ctx, tss_seqset *alerted, const uint64_t *found, size_t nfound,
                     uint64_t *fresh, size_t *nfresh);

#endif
