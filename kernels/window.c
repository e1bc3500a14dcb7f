/* SPDX-License-Identifier: Apache-2.0 */
/* window.c - the daemon's windowed passes (window.h), CPU backend: OpenMP over the
 * windows, each run by the batch kernels (tsm_stats_new, tsm_pd3_range, and for the
 * motif tsm_motifs_auto: the scan, MK on constants or near-exact repeats; 2-6x faster
 * than MK alone on windows of 4096 samples without constants) on a single-threaded CPU
 * ctx of the OpenMP thread, so a window's result is exactly what those kernels return on
 * a copy of it. On a CUDA ctx the call goes to window.cu after the same validation. */
#include "window.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Discords and motif of one window on a one-thread CPU ctx: O(n^2) worst case, the
 * kernels' own cost otherwise. The discords go to out (room for n - m + 1). */
static tsm_status run_window(tsm_ctx *tc, const tsm_window *w, size_t m, size_t excl,
                             int want_motif, tsm_discord *out, tsm_window_result *res) {
    tsm_stats *s = NULL;
    tsm_discord *found = NULL;
    size_t count = 0;
    *res = (tsm_window_result){0};
    tsm_status st = tsm_stats_new(tc, w->x, w->n, m, &s);
    if (st == TSM_OK && !isinf(w->r))
        st = tsm_pd3_range(tc, s, excl, w->r, 0, &found, &count, NULL);
    if (st == TSM_OK) {
        if (count)
            memcpy(out, found, count * sizeof *found);
        res->ndiscords = count;
    }
    if (st == TSM_OK && want_motif) {
        size_t nm = 0;
        st = tsm_motifs_auto(tc, s, excl, 1, 0, TSM_MK_SEED_DEFAULT, &res->motif, &nm, NULL, NULL);
        res->has_motif = st == TSM_OK && nm == 1;
    }
    free(found);
    tsm_stats_destroy(&s);
    return st;
}

/* Checks the arguments; TSM_OK or TSM_EINVAL naming the window. */
static tsm_status check_windows(tsm_ctx *ctx, const tsm_window *w, size_t B, size_t m, size_t excl,
                                const tsm_discord *discords, const tsm_window_result *res) {
    if (m < 3 || excl == 0)
        return tsm_fail(ctx, TSM_EINVAL,
                        "tsm_window_passes: needs m >= 3 and excl >= 1 (m %zu, "
                        "excl %zu)",
                        m, excl);
    if (B && (!w || !res || !discords))
        return tsm_fail(ctx, TSM_EINVAL, "tsm_window_passes: %zu windows but a NULL array", B);
    for (size_t b = 0; b < B; b++) {
        if (!w[b].x || w[b].n < m)
            return tsm_fail(ctx, TSM_EINVAL,
                            "tsm_window_passes: window %zu has %u samples (%s), needs m = %zu", b,
                            w[b].n, w[b].x ? "given" : "NULL", m);
        if (!(w[b].r >= 0.0))
            return tsm_fail(ctx, TSM_EINVAL,
                            "tsm_window_passes: window %zu: range r = %g must be >= 0", b, w[b].r);
    }
    return TSM_OK;
}

tsm_status tsm_window_passes(tsm_ctx *ctx, const tsm_window *w, size_t B, size_t m, size_t excl,
                             int want_motif, tsm_discord *discords, tsm_window_result *res) {
    tsm_status st = check_windows(ctx, w, B, m, excl, discords, res);
    if (st != TSM_OK || B == 0)
        return st;
#ifdef TSMINE_HAVE_CUDA
    if (tsm_ctx_backend(ctx) == TSM_BACKEND_CUDA)
        return tsmi_window_passes_cuda(ctx, w, B, m, excl, want_motif, discords, res);
#endif
    size_t *off = malloc(B * sizeof *off);
    if (!off)
        return tsm_fail(ctx, TSM_ENOMEM, "tsm_window_passes: out of memory for %zu windows", B);
    for (size_t b = 0, o = 0; b < B; b++)
        off[b] = o, o += w[b].n - m + 1;

    /* The first failure (lowest window index) with its message. */
    size_t bad = B;
    tsm_status bad_st = TSM_OK;
    char bad_msg[256] = "";
    const int threads = B < 2 ? 1 : tsm_ctx_threads(ctx);
    (void)threads; /* a build without OpenMP ignores the pragma */
#pragma omp parallel num_threads(threads)
    {
        tsm_ctx *tc = NULL;
        const char *why = NULL;
        tsm_status ts = tsm_ctx_new(&tc, TSM_BACKEND_CPU, &why);
        if (ts == TSM_OK)
            tsm_ctx_set_threads(tc, 1);
#pragma omp for schedule(dynamic, 1)
        for (size_t b = 0; b < B; b++) {
            tsm_status s = ts == TSM_OK ? run_window(tc, &w[b], m, excl, want_motif,
                                                     discords + off[b], &res[b])
                                        : ts;
            if (s != TSM_OK) {
#pragma omp critical(tsm_window_fail)
                if (b < bad) {
                    bad = b, bad_st = s;
                    snprintf(bad_msg, sizeof bad_msg, "%s", tc ? tsm_ctx_error(tc) : why);
                }
            }
        }
        tsm_ctx_destroy(&tc);
    }
    free(off);
    if (bad < B)
        return tsm_fail(ctx, bad_st, "tsm_window_passes: window %zu: %s", bad, bad_msg);
    return TSM_OK;
}
