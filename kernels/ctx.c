/* SPDX-License-Identifier: Apache-2.0 */
/* ctx.c - tsm_ctx: backend selection, thread count and error messages. */
#include "tsm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef TSMINE_HAVE_CUDA
#include "cuda_backend.h"
#endif

struct tsm_ctx {
    tsm_backend backend; /* resolved: CPU or CUDA, never AUTO */
    int threads;
    int device;   /* CUDA device ordinal (CUDA backend) */
    void *stream; /* cudaStream_t of this ctx (CUDA backend) */
    char error[512];
    tsm_progress_fn progress; /* tsm_ctx_set_progress: NULL when off */
    void *progress_user;
};

/* Whether a usable CUDA device is present. */
static int cuda_available(const char **why) {
#ifdef TSMINE_HAVE_CUDA
    return tsmi_cuda_probe(why);
#else
    if (why)
        *why = "this build has no CUDA backend (configured with TSMINE_CUDA=OFF or without nvcc)";
    return 0;
#endif
}

tsm_status tsm_ctx_new(tsm_ctx **out, tsm_backend want, const char **why) {
    *out = NULL;
    const char *reason = NULL;
    int have_cuda = cuda_available(&reason);
    if (want == TSM_BACKEND_CUDA && !have_cuda) {
        if (why)
            *why = reason;
        return TSM_EBACKEND;
    }
    tsm_ctx *self = calloc(1, sizeof *self);
    if (!self) {
        if (why)
            *why = "out of memory";
        return TSM_ENOMEM;
    }
    self->backend = (want == TSM_BACKEND_CPU || !have_cuda) ? TSM_BACKEND_CPU : TSM_BACKEND_CUDA;
#ifdef TSMINE_HAVE_CUDA
    if (self->backend == TSM_BACKEND_CUDA &&
        tsmi_cuda_open(self, &self->device, &self->stream) != TSM_OK) {
        static _Thread_local char failed[512];
        snprintf(failed, sizeof failed, "%s", self->error);
        free(self);
        if (why)
            *why = failed;
        return TSM_EBACKEND;
    }
#endif
    if (why)
        *why = (want == TSM_BACKEND_AUTO && !have_cuda) ? reason : NULL;
    *out = self;
    return TSM_OK;
}

tsm_status tsm_cuda_select(int ordinal, int *device) {
#ifdef TSMINE_HAVE_CUDA
    if (tsmi_cuda_probe(NULL))
        return tsmi_cuda_select(ordinal, device);
#endif
    (void)ordinal, (void)device;
    return TSM_EBACKEND;
}

tsm_status tsm_ctx_set_urgent(tsm_ctx *ctx) {
#ifdef TSMINE_HAVE_CUDA
    if (ctx->backend == TSM_BACKEND_CUDA)
        return tsmi_cuda_set_urgent(ctx, ctx->stream);
#endif
    (void)ctx;
    return TSM_OK;
}

tsm_status tsm_ctx_set_sm_share(tsm_ctx *ctx, double share, int *sms) {
    *sms = 0;
    if (!(share > 0 && share < 1))
        return tsm_fail(ctx, TSM_EINVAL, "SM share %g: not in (0, 1)", share);
#ifdef TSMINE_HAVE_CUDA
    if (ctx->backend == TSM_BACKEND_CUDA)
        return tsmi_cuda_set_sm_share(ctx, ctx->stream, share, sms);
#endif
    return TSM_OK;
}

void *tsmi_ctx_stream(const tsm_ctx *ctx) {
    return ctx->stream;
}

void tsm_ctx_destroy(tsm_ctx **self_p) {
    if (*self_p) {
#ifdef TSMINE_HAVE_CUDA
        tsmi_cuda_close((*self_p)->stream);
#endif
        free(*self_p);
        *self_p = NULL;
    }
}

tsm_backend tsm_ctx_backend(const tsm_ctx *ctx) {
    return ctx->backend;
}

const char *tsm_backend_name(tsm_backend b) {
    switch (b) {
    case TSM_BACKEND_AUTO: return "auto";
    case TSM_BACKEND_CPU: return "cpu";
    case TSM_BACKEND_CUDA: return "cuda";
    }
    return "?";
}

int tsm_backend_parse(const char *s, tsm_backend *out) {
    static const tsm_backend all[] = {TSM_BACKEND_AUTO, TSM_BACKEND_CPU, TSM_BACKEND_CUDA};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(s, tsm_backend_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    return -1;
}

void tsm_ctx_set_progress(tsm_ctx *ctx, tsm_progress_fn fn, void *user) {
    ctx->progress = fn;
    ctx->progress_user = user;
}

int tsmi_progress_on(const tsm_ctx *ctx) {
    return ctx->progress != NULL;
}

void tsmi_progress(const tsm_ctx *ctx, const char *stage, uint64_t done, uint64_t total) {
    if (ctx->progress)
        ctx->progress(ctx->progress_user, stage, done, total);
}

void tsm_ctx_set_threads(tsm_ctx *ctx, int threads) {
    ctx->threads = threads > 0 ? threads : 0;
}

int tsm_ctx_threads(const tsm_ctx *ctx) {
#ifdef _OPENMP
    return ctx->threads > 0 ? ctx->threads : omp_get_max_threads();
#else
    (void)ctx;
    return 1;
#endif
}

const char *tsm_ctx_error(const tsm_ctx *ctx) {
    return ctx->error;
}

tsm_status tsm_fail(tsm_ctx *ctx, tsm_status st, const char *fmt, ...) {
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
        va_end(ap);
    }
    return st;
}

const char *tsm_status_name(tsm_status st) {
    switch (st) {
    case TSM_OK: return "ok";
    case TSM_EINVAL: return "invalid argument";
    case TSM_ENOMEM: return "out of memory";
    case TSM_EBACKEND: return "backend unavailable";
    case TSM_EDEVICE: return "device failure";
    case TSM_EINTERNAL: return "internal error";
    }
    return "unknown status";
}

tsm_status tsm_check_shape(tsm_ctx *ctx, size_t n, size_t m, size_t excl) {
    if (m < 3)
        return tsm_fail(ctx, TSM_EINVAL, "subsequence length m = %zu is too short (need m >= 3)",
                        m);
    if (m > n)
        return tsm_fail(ctx, TSM_EINVAL,
                        "subsequence length m = %zu is longer than the series (n = %zu)", m, n);
    if (excl < 1)
        return tsm_fail(ctx, TSM_EINVAL, "exclusion zone excl = %zu must be at least 1", excl);
    return TSM_OK;
}
