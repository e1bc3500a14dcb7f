/* passes.h - the windowed passes of a tick (DESIGN 5.3): r calibration, PD3 range
 * discords with de-duplication (DISCORD), MK top motif (MOTIF), for every stream that
 * is due (a full window and hop samples since its last pass). */
#ifndef TSS_PASSES_H
#define TSS_PASSES_H

#include "tsm.h"

#include <stddef.h>

typedef struct tss_stream tss_stream;

/* Runs the passes of the n due streams of list: over the streams in parallel (OpenMP,
 * schedule dynamic), thread t using workers[t] (single-threaded ctxs, nworkers of
 * them); a single due stream uses wide (all threads) instead. Each stream's alerts go
 * to its tick queue, its failures to its fail message and counters; one stream's
 * failure does not stop the others. Every pass resets since_pass. */
void tss_passes_run(tsm_ctx *wide, tsm_ctx **workers, int nworkers, tss_stream **list, size_t n);

#endif
