/* SPDX-License-Identifier: Apache-2.0 */
/* query.c - what callers read of an engine without changing it (engine.h): each
 * stream's info (the control socket's and the metrics'), the engine-wide counters, the
 * names of the reject reasons, the backend, the passes' SMs, the staged samples, and
 * whether the device is lost. O(1) each, but the counters' sums over the streams. */
#include "engine_impl.h"

#include "online_round.h"

#include <math.h>
#include <stdio.h>
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

tsm_backend tss_engine_backend(const tss_engine *e) {
    return e->backend;
}

int tss_engine_pass_sms(const tss_engine *e, const char **why) {
    *why = e->pass_sms_why;
    return e->pass_sms;
}

size_t tss_engine_pending(const tss_engine *e) {
    return e->pending;
}

int tss_engine_device_lost(const tss_engine *e) {
    return e->device_lost;
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
    /* events can open: a warm window and, without a numeric range, a magnitude history
     * to score against (robust.h) */
    const int armed = s->p.subsequence && s->ring.fill >= tss_stream_warm(s);
    out->calibrated = armed && (!isnan(s->p.range) || d->mag.ready);
    out->range = !isnan(s->p.range)                  ? s->p.range
                 : armed && tss_calib_ready(&d->cal) ? tss_calib_far_raw(&d->cal)
                                                     : NAN;
    out->event_open = d->open;
    out->events = d->events;
    out->last_score = isnan(s->p.range) ? d->last_value
                      : isnan(d->last_value) || !tss_calib_ready(&d->cal)
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
