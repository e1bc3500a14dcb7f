/* SPDX-License-Identifier: Apache-2.0 */
/* engine.c - the engine's life cycle: creation (backend, test hook, the passes' ctx and
 * thread), destruction, the growth of its stream lists, and what changes a running
 * engine's configuration (room, recalibration, new parameters on a reload). The tick is
 * in tick.c, the windowed passes in pass_thread.c, the queries in query.c, ingest in
 * ingest.c, stream lifetime and limits in lifetime.c, checkpoints in checkpoint.c. */
#include "engine_impl.h"

#include "test_fault.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int tss_engine_new(const tss_engine_options *opt, tss_engine **out, char *err, unsigned errlen) {
    *out = NULL;
    tss_engine *e = calloc(1, sizeof *e);
    if (!e) {
        tssi_say(err, errlen, "out of memory for the engine");
        return -1;
    }
    e->opt = *opt;
    if (tssi_test_fault_read(e, err, errlen) != 0)
        goto fail;
    if (e->opt.max_streams == 0)
        e->opt.max_streams = TSS_MAX_STREAMS_DEFAULT;
    const char *why = NULL;
    if (tsm_ctx_new(&e->wide, opt->backend, &why) != TSM_OK) {
        tssi_say(err, errlen, "backend %s unavailable: %s", tsm_backend_name(opt->backend),
                 why ? why : "unknown reason");
        goto fail;
    }
    e->backend = tsm_ctx_backend(e->wide);
    if (tssi_test_fault_check(e, err, errlen) != 0)
        goto fail;
    tsm_ctx_set_threads(e->wide, opt->threads); /* wide: the device on CUDA, T threads on the CPU */
    e->threads = tsm_ctx_threads(e->wide);
    tss_arena_init(&e->arena, e->wide);
    if (tssi_pass_thread_open(e, err, errlen) != 0)
        goto fail;
    *out = e;
    return 0;
fail:
    tsm_ctx_destroy(&e->side);
    tsm_ctx_destroy(&e->wide);
    free(e);
    return -1;
}

void tss_engine_destroy(tss_engine **self_p) {
    if (*self_p) {
        tss_engine *e = *self_p;
        tssi_engine_join(e, 0, NULL, 0);
        tssi_pass_thread_close(e);
        tss_registry_free(&e->reg);
        tss_arena_free(&e->arena);
        tsm_ctx_destroy(&e->side);
        tsm_ctx_destroy(&e->wide);
        free(e->dirty);
        free(e->fly);
        free(e->wait);
        free(e);
        *self_p = NULL;
    }
}

void tss_engine_set_room(tss_engine *e, uint64_t (*room)(void *user), void *user) {
    tss_arena_set_room(&e->arena, room, user);
}

int tssi_reserve_streams(tss_stream ***list, size_t *cap, size_t need) {
    if (need <= *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 64;
    while (c < need)
        c *= 2;
    tss_stream **l = realloc(*list, c * sizeof *l);
    if (!l)
        return -1;
    *list = l;
    *cap = c;
    return 0;
}

size_t tss_engine_recalibrate(tss_engine *e, const char *prefix) {
    size_t len = strlen(prefix), n = 0;
    tssi_engine_join(e, 1, NULL, 0); /* a launch in flight (bounded) publishes first */
    for (size_t k = 0; k < e->reg.n; k++) {
        tss_stream *s = e->reg.list[k];
        if (strncmp(s->id, prefix, len) == 0) {
            if (s->cfg.subsequence == 0) /* its window restarts: no pass point to keep */
                tssi_engine_unwait(e, s);
            tss_stream_recalibrate(s);
            tssi_engine_emit(e, s, &s->out); /* the ANOMALY_END of an event it closed */
            n++;
        }
    }
    tssi_engine_emitted(e);
    return n;
}

/* Whether two parameter sets are the same; NAN range equals NAN. */
static int same_params(const tss_params *a, const tss_params *b) {
    int same_range = (isnan(a->range) && isnan(b->range)) || a->range == b->range;
    return a->window == b->window && a->subsequence == b->subsequence && a->hop == b->hop &&
           a->excl == b->excl && a->warmup == b->warmup && a->threshold == b->threshold &&
           a->threshold_end == b->threshold_end && same_range && a->motif == b->motif &&
           a->references == b->references && a->left_discord == b->left_discord;
}

size_t tss_engine_reparam(tss_engine *e) {
    size_t n = 0;
    if (!e->opt.params_for)
        return 0;
    tssi_engine_join(e, 1, NULL, 0); /* a new shape frees the window the passes read */
    for (size_t k = 0; k < e->reg.n; k++) {
        tss_stream *s = e->reg.list[k];
        tss_params p;
        if (e->opt.params_for(e->opt.user, s->id, &p) != 0 || tss_params_check(&p, NULL, 0) != 0)
            continue; /* refused or invalid now: the stream keeps what it has */
        if (same_params(&p, &s->cfg))
            continue;
        const int shape = p.window != s->cfg.window || p.subsequence != s->cfg.subsequence ||
                          p.hop != s->cfg.hop || p.excl != s->cfg.excl;
        if (shape) /* its window restarts: no pass point to keep */
            tssi_engine_unwait(e, s);
        if (tss_stream_set_params(s, &p) != 0)
            continue;
        tssi_engine_emit(e, s, &s->out); /* the ANOMALY_END of an event it closed */
        n++;
    }
    tssi_engine_emitted(e);
    return n;
}
