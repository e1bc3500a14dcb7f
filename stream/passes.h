/* passes.h - the windowed passes of a round (DESIGN 5.3): r calibration, PD3 range
 * discords with de-duplication (DISCORD), MK top motif (MOTIF), for every stream that
 * is due (a full window and hop samples since its last pass). */
#ifndef TSS_PASSES_H
#define TSS_PASSES_H

#include "arena.h"
#include "tsm.h"

#include <stddef.h>

typedef struct tss_stream tss_stream;

/* Runs the passes of the n due streams of list over their windows in the arena a:
 * ONE tsm_window_passes call on ctx (the arena's ctx) per group of streams with equal
 * (m, excl, motif on/off), plus one per (m, excl) for the streams that calibrate r
 * first; never a call per stream. The per-window results then become alerts on the
 * host, over the streams in parallel (OpenMP), thread t using workers[t] (CPU ctxs,
 * nworkers of them) for the de-duplication. Each stream's alerts go to its tick queue,
 * its failures to its fail message and counters; one group's failure does not stop the
 * others. Every pass resets since_pass. Returns TSM_OK, or the worst failure
 * (TSM_EDEVICE first) with its message on ctx. */
tsm_status tss_passes_run(tsm_ctx *ctx, const tss_arena *a, tsm_ctx **workers, int nworkers,
                          tss_stream **list, size_t n);

#endif
