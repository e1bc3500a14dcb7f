/* SPDX-License-Identifier: Apache-2.0 */
/* tsm.h - the kernel library's common contract: status codes, backends and the
 * context every kernel entry point takes (DESIGN.md section 2).
 *
 * A tsm_ctx carries the chosen backend, the OpenMP thread count and the message of
 * the last failure. Every public kernel function returns a tsm_status and, on
 * failure, leaves a human-readable message in the ctx (tsm_ctx_error). Nothing in
 * this library aborts on bad input. */
#ifndef TSM_H
#define TSM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TSM_HD __host__ __device__ /* shared by host code and CUDA kernels */
#else
#define TSM_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TSM_OK = 0,
    TSM_EINVAL,    /* invalid argument (sizes, parameters); message says which */
    TSM_ENOMEM,    /* allocation failed (host or device) */
    TSM_EBACKEND,  /* requested backend not available in this build or machine */
    TSM_EDEVICE,   /* sticky device error: the CUDA context is unusable */
    TSM_EINTERNAL, /* a bug: an invariant did not hold */
} tsm_status;

typedef enum {
    TSM_BACKEND_AUTO = 0, /* CUDA when a usable device is present, else CPU */
    TSM_BACKEND_CPU,
    TSM_BACKEND_CUDA,
} tsm_backend;

typedef struct tsm_ctx tsm_ctx;

/* Creates a context for the wanted backend. AUTO resolves at once to CPU or CUDA
 * (tsm_ctx_backend says which). Asking for CUDA in a build or on a machine without
 * it fails with TSM_EBACKEND and *out = NULL; *why (if not NULL) then points to a
 * static explanation. */
tsm_status tsm_ctx_new(tsm_ctx **out, tsm_backend want, const char **why);
void tsm_ctx_destroy(tsm_ctx **self_p);

tsm_backend tsm_ctx_backend(const tsm_ctx *ctx);
const char *tsm_backend_name(tsm_backend b);
/* Parses "auto", "cpu" or "cuda"; returns -1 for anything else. */
int tsm_backend_parse(const char *s, tsm_backend *out);

/* Makes ctx's work urgent: on CUDA its kernels are scheduled ahead of those of other
 * ctxs whenever blocks of both wait for the device (the highest stream priority), so
 * latency-bound work is not queued behind throughput-bound work sharing the GPU. No
 * effect on the CPU backend. Call before the ctx has work queued. TSM_OK or a CUDA
 * failure (the ctx then keeps its stream). */
tsm_status tsm_ctx_set_urgent(tsm_ctx *ctx);

/* Confines ctx's kernels to about `share` (0 < share < 1) of the GPU's multiprocessors,
 * rounded to the device's partition granularity, so that the others are always free
 * for the work of other ctxs (priorities alone do not preempt a resident block).
 * Memory is shared as before. *sms gets the number of SMs ctx keeps (0 on the CPU
 * backend, where this does nothing). Call before the ctx has work queued. TSM_OK, or a
 * failure (e.g. a driver without green contexts: CUDA < 12.5) with ctx unchanged. */
tsm_status tsm_ctx_set_sm_share(tsm_ctx *ctx, double share, int *sms);

/* Makes the CUDA contexts created afterwards by this thread use device ordinal mod the
 * number of visible devices (one GPU per MPI rank on a node: ordinal = the local rank);
 * *device gets the device chosen. TSM_EBACKEND (nothing changed) in a build without
 * CUDA or on a machine without a device. */
tsm_status tsm_cuda_select(int ordinal, int *device);

/* OpenMP threads the CPU backend uses; 0 (the default) means OpenMP's own default. */
void tsm_ctx_set_threads(tsm_ctx *ctx, int threads);
int tsm_ctx_threads(const tsm_ctx *ctx);

/* Progress of long kernels: fn is called as work completes, with the stage's name
 * ("profile", "pass"), the units of work done and the stage's total; done rises
 * within a run of a stage and starts again from 0 when the stage runs again (the next
 * pass of a search). Called from one thread at a time, at chunk boundaries only (so it
 * costs nothing measurable), never after the kernel returned; it must return quickly.
 * NULL (the default) turns it off. */
typedef void (*tsm_progress_fn)(void *user, const char *stage, uint64_t done, uint64_t total);
void tsm_ctx_set_progress(tsm_ctx *ctx, tsm_progress_fn fn, void *user);

/* Internal (tsmi_): whether ctx has a progress hook, and the call to it (a no-op
 * without one). */
int tsmi_progress_on(const tsm_ctx *ctx);
void tsmi_progress(const tsm_ctx *ctx, const char *stage, uint64_t done, uint64_t total);

/* The message of the last failure on this ctx ("" when none). */
const char *tsm_ctx_error(const tsm_ctx *ctx);

/* Records a failure message on ctx (printf-style) and returns st, so that callers
 * can write `return tsm_fail(ctx, TSM_EINVAL, "m = %zu < 3", m);`. */
tsm_status tsm_fail(tsm_ctx *ctx, tsm_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

const char *tsm_status_name(tsm_status st);

/* Checks the common shape arguments of every subsequence kernel: 3 <= m <= n,
 * excl >= 1. Returns TSM_OK or TSM_EINVAL with a message. */
tsm_status tsm_check_shape(tsm_ctx *ctx, size_t n, size_t m, size_t excl);

#ifdef __cplusplus
}
#endif
#endif
