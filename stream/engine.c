/* SPDX-License-Identifier: Apache-2.0 */
/* engine.c - the engine's life cycle: creation (backend, test hook, the passes' ctx and
 * thread), destruction, and what changes a running engine's configuration (room,
 * recalibration, new parameters on a reload); and its queries. The tick is in tick.c,
 * the windowed passes in pass_thread.c, ingest in ingest.c, stream lifetime and limits
 * in lifetime.c, checkpoints in checkpoint.c. */
#include "engine_impl.h"

#include "online_round.h"
#include "passes.h"
#include "test_fault.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tss_reject_name(tss_reject r) {
    static const char *const names[TSS_REJECT_COUNT] = {
        [TSS_OK] = "ok",
        [TSS_REJECT_BAD_ID] = "bad_id",
        [TSS_REJECT_EMPTY] = "empty",
        [TSS_REJECT_TOO_LARGE] = "too_large",
        [TSS_REJECT_NONFINITE] = "nonfinite",
        [TSS_REJECT_TIMESTAMPS] = "timestamps",
        [TSS_REJECT_TIME_BACKWARDS] = "time_backwards",
        [TSS_REJECT_DUPLICATE] = "duplicate",
        [TSS_REJECT_OUT_OF_ORDER] = "out_of_order",
        [TSS_REJECT_TOO_MANY_STREAMS] = "too_many_streams",
        [TSS_REJECT_STREAM_REFUSED] = "stream_refused",
        [TSS_REJECT_SEQ_JUMP] = "seq_jump",
        [TSS_REJECT_FUTURE_TIME] = "future_time",
        [TSS_REJECT_STALE_EPOCH] = "stale_epoch",
    };
    return (unsigned)r < TSS_REJECT_COUNT ? names[r] : "unknown";
}

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
    tsm_ctx_set_threads(e->wide, opt->threads); /* CUDA: the device; CPU: T threads */
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

int tss_engine_pass_sms(const tss_engine *e, const char **why) {
    *why = e->pass_sms_why;
    return e->pass_sms;
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

tsm_backend tss_engine_backend(const tss_engine *e) {
    return e->backend;
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

size_t tss_engine_pending(const tss_engine *e) {
    return e->pending;
}

int tss_engine_device_lost(const tss_engine *e) {
    return e->device_lost;
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

static void info_of(const tss_engine *e, const tss_stream *s, tss_stream_info *out) {
    *out = (tss_stream_info){0};
    snprintf(out->id, sizeof out->id, "%s", s->id);
    out->params = s->p;
    out->subsequence_auto = s->cfg.subsequence == 0;
    out->period = s->period;
    out->samples = s->samples;
    out->rejected = s->rejected;
    memcpy(out->alerts, s->alerts, sizeof out->alerts);
    out->next_seq = s->next_seq;
    out->window_fill = s->ring.fill;
    out->gaps = s->gaps;
    const tss_detect *d = &s->det;
    out->calibrated = s->p.subsequence && s->ring.fill >= tss_stream_warm(s) &&
                      (!isnan(s->p.range) || tss_calib_ready(&d->cal));
    out->range = !isnan(s->p.range) ? s->p.range
                 : out->calibrated  ? tss_calib_far_raw(&d->cal)
                                    : NAN;
    out->event_open = d->open;
    out->events = d->events;
    out->last_score = isnan(d->last_value) || !tss_calib_ready(&d->cal)
                          ? NAN
                          : tss_calib_score(&d->cal, d->last_value).score;
    out->epoch = s->epoch;
    out->idle_s = tssi_engine_now(e) - s->last_active;
}

size_t tss_engine_stream_count(const tss_engine *e) {
    return e->reg.n;
}

int tss_engine_stream_at(const tss_engine *e, size_t i, tss_stream_info *out) {
    if (i >= e->reg.n)
        return -1;
    info_of(e, e->reg.list[i], out);
    return 0;
}

int tss_engine_stream_find(const tss_engine *e, const char *id, tss_stream_info *out) {
    const tss_stream *s = tss_registry_find(&e->reg, id);
    if (!s)
        return -1;
    if (out)
        info_of(e, s, out);
    return 0;
}

void tss_engine_counters_get(const tss_engine *e, tss_engine_counters *out) {
    *out = e->c;
    out->passes_pending = e->nwait + e->nfly;
    out->ring_bytes = out->ring_samples = 0;
    for (size_t k = 0; k < e->reg.n; k++) {
        const tss_stream *s = e->reg.list[k];
        out->ring_bytes += tss_ring_bytes(&s->ring) + (s->on.placed ? tss_online_bytes(&s->on) : 0);
        out->ring_samples += s->ring.fill;
    }
}
