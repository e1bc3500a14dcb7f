/* cuda.h - the C side of the CUDA backend: device probing and the per-ctx stream.
 * Only built with TSMINE_HAVE_CUDA; ctx.c and stats.c call these, the .cu files
 * implement them. Internal (tsmi_ prefix): not part of the library's interface. */
#ifndef TSM_CUDA_H
#define TSM_CUDA_H

#include "stats.h"
#include "tsm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a usable CUDA device is present; *why explains when not (static text). */
int tsmi_cuda_probe(const char **why);

/* Selects the device and creates the ctx's stream (*stream is a cudaStream_t). */
tsm_status tsmi_cuda_open(tsm_ctx *ctx, int *device, void **stream);
void tsmi_cuda_close(void *stream);

/* Moments (mu, sig, inv, and the downgrade of zero-spread windows to constants) of
 * every subsequence on the device, from s->t and s->kind computed on the host; fills
 * s->dev and the host arrays. */
tsm_status tsmi_stats_cuda(tsm_ctx *ctx, tsm_stats *s);
void tsmi_stats_dev_free(tsm_stats_dev *dev);

/* The ctx's stream, as a cudaStream_t behind a void pointer (for .cu files). */
void *tsmi_ctx_stream(const tsm_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
