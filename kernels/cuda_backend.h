/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_backend.h - the C side of the CUDA backend: device probing, the per-ctx CUDA state
 * (its stream and grow-only scratch memory). Only built with TSMINE_HAVE_CUDA; ctx.c,
 * stats.c and stream/ call these, the .cu files implement them. Internal (tsmi_
 * prefix): not part of the library's interface. */
#ifndef TSM_CUDA_BACKEND_H
#define TSM_CUDA_BACKEND_H

#include "stats.h"
#include "tsm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a usable CUDA device is present; *why explains when not (static text). */
int tsmi_cuda_probe(const char **why);

/* tsm_cuda_select on a machine with a device: cudaSetDevice(ordinal mod count). */
tsm_status tsmi_cuda_select(int ordinal, int *device);

/* Selects the device and creates the ctx's CUDA state (*state: its stream and its
 * scratch buffers; ctx.c keeps it as an opaque pointer). Close waits for the stream
 * and releases everything. */
tsm_status tsmi_cuda_open(tsm_ctx *ctx, int *device, void **state);
void tsmi_cuda_close(void *state);

/* Grow-only scratch memory owned by a CUDA ctx, so that a kernel call allocates
 * nothing in the steady state (cudaMalloc of large sizes costs milliseconds and
 * cudaFree waits for the whole device). Each user takes its own slot (the list
 * below: a call that needs two live buffers takes two slots). A request no larger
 * than the slot's buffer returns it as is; a larger one waits for the ctx's stream
 * (queued work may still use the old buffer), frees it and allocates
 * max(bytes, 1.5 x old), rounded up to 1 MiB. Contents are undefined after a call.
 * Memory stays held until the ctx is destroyed. Not thread-safe (neither is a ctx).
 * Returns TSM_OK, or TSM_ENOMEM / the CUDA failure recorded on ctx. */
enum {
    TSMI_SCRATCH_ONLINE,      /* online.cu: the jobs */
    TSMI_SCRATCH_WINDOW,      /* window.cu: plan, per-subsequence arrays, results */
    TSMI_SCRATCH_WINDOW_LIST, /* window.cu: the discord list (host side) */
    TSMI_SCRATCH_SETS,        /* sets.cu */
    TSMI_SCRATCH_SHAPELET,    /* shapelet.cu: series, statistics, distances, splits */
    TSMI_SCRATCH_SLOTS
};
/* Device memory of slot, at least bytes, into *p. */
tsm_status tsmi_scratch(tsm_ctx *ctx, int slot, size_t bytes, void **p);
/* Pinned host memory of slot (cudaMallocHost: asynchronous copies), into *p. */
tsm_status tsmi_scratch_host(tsm_ctx *ctx, int slot, size_t bytes, void **p);

/* Moments (mu, sig, inv, and the downgrade of zero-spread windows to constants) of
 * every subsequence on the device, from s->t and s->kind computed on the host; fills
 * s->dev and the host arrays. */
tsm_status tsmi_stats_cuda(tsm_ctx *ctx, tsm_stats *s);
void tsmi_stats_dev_free(tsm_stats_dev *dev);

/* TEST ONLY (the daemon's device-loss test, stream/engine.h TSMINE_TEST_FAULT): queues
 * on ctx's stream a kernel that executes a trap instruction, which leaves the CUDA
 * context with a sticky error (cudaErrorLaunchFailure) that the next checked CUDA call
 * of the process reports, as a faulting kernel would. TSM_OK when queued. */
tsm_status tsmi_cuda_test_trap(tsm_ctx *ctx);

/* tsm_ctx_set_urgent on CUDA: replaces the stream of state (tsmi_cuda_open's) by one
 * of the device's highest priority. */
tsm_status tsmi_cuda_set_urgent(tsm_ctx *ctx, void *state);

/* tsm_ctx_set_sm_share on CUDA (sm_share.cu): replaces the stream of state by one of a
 * green context over about `share` of the device's multiprocessors; *sms = how many. */
tsm_status tsmi_cuda_set_sm_share(tsm_ctx *ctx, void *state, double share, int *sms);
/* Destroys the green context of state, if any (after its stream). */
void tsmi_cuda_green_release(void *state);

/* The ctx's CUDA state (what tsmi_cuda_open made; cuda_util.cuh reads its stream). */
void *tsmi_ctx_stream(const tsm_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
