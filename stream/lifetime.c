/* SPDX-License-Identifier: Apache-2.0 */
/* lifetime.c - how streams end (engine.h, "Stream lifetime"): idle expiry, eviction
 * when the stream table is full, deletion and reset on request; and the two lists by
 * idleness that make expiry and eviction O(1) per stream. */
#include "engine_impl.h"
#include "util.h"

#include <time.h>

double tssi_engine_now(const tss_engine *e) {
    return e->opt.now ? e->opt.now(e->opt.user) : tssi_now();
}

int64_t tssi_engine_wall_ns(const tss_engine *e) {
    if (e->opt.wall_ns)
        return e->opt.wall_ns(e->opt.user);
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int listed(const tss_engine *e, const tss_stream *s) {
    return s->older || s->newer || e->oldest[s->warm_list] == s;
}

static void unlink_stream(tss_engine *e, tss_stream *s) {
    if (!listed(e, s))
        return;
    const int l = s->warm_list;
    if (s->older)
        s->older->newer = s->newer;
    else
        e->oldest[l] = s->newer;
    if (s->newer)
        s->newer->older = s->older;
    else
        e->newest[l] = s->older;
    s->older = s->newer = NULL;
}

void tssi_engine_touch(tss_engine *e, tss_stream *s) {
    unlink_stream(e, s);
    const int l = s->samples >= s->cfg.warmup;
    s->last_active = tssi_engine_now(e);
    s->warm_list = l;
    s->older = e->newest[l];
    if (e->newest[l])
        e->newest[l]->newer = s;
    else
        e->oldest[l] = s;
    e->newest[l] = s;
}

/* Takes s off the dirty list. O(dirty streams). */
static void undirty(tss_engine *e, tss_stream *s) {
    if (!s->dirty)
        return;
    for (size_t k = 0; k < e->ndirty; k++)
        if (e->dirty[k] == s) {
            e->dirty[k] = e->dirty[--e->ndirty];
            break;
        }
    s->dirty = 0;
}

/* Removes s (whose passes are not in flight) and everything it holds; its staged
 * samples are counted as dropped, its arena region goes back for reuse. An event still
 * open ends first (its ANOMALY_END, at the last sample processed, reaches the callback
 * now), so that no subscriber is left with an anomaly that never closes. */
static void remove_stream(tss_engine *e, tss_stream *s, uint64_t *counter) {
    if (s->det.open) {
        const size_t queued = s->out.n;
        tss_detect_close(s, s->proc_seq ? s->proc_seq - 1 : 0);
        for (size_t q = queued; q < s->out.n; q++)
            s->out.item[q].start_timestamp_ns = tss_stream_ts(s, s->out.item[q].start_seq);
        tssi_engine_emit_queued(e, s);
    }
    tssi_engine_unwait(e, s);
    undirty(e, s);
    const size_t staged = tss_staging_pending(&s->stage);
    e->pending -= staged;
    e->c.samples_dropped += staged;
    unlink_stream(e, s);
    if (s->on.placed)
        tss_arena_give(&e->arena, s->on.off, tss_arena_align(tss_online_bytes(&s->on)));
    tss_registry_remove(&e->reg, s);
    (*counter)++;
    tss_stream_destroy(&s);
}

/* Whether s may go now: idle for at least `idle` seconds and no passes of its own
 * waiting or in flight. */
static int may_go(const tss_stream *s, double now, double idle) {
    return now - s->last_active >= idle && !s->inflight && !s->waiting;
}

int tssi_engine_make_room(tss_engine *e) {
    if (e->opt.limits.when_full != TSS_FULL_EVICT_IDLE)
        return 0;
    const double now = tssi_engine_now(e);
    for (int l = 0; l < 2; l++) { /* the cold first: a flood of new ids is mostly cold */
        tss_stream *s = e->oldest[l];
        if (s && may_go(s, now, e->opt.limits.evict_min_idle_s)) {
            remove_stream(e, s, &e->c.streams_evicted);
            return 1;
        }
    }
    return 0;
}

void tssi_engine_expire(tss_engine *e) {
    const double ttl = e->opt.limits.idle_expiry_s;
    if (ttl <= 0)
        return;
    const double now = tssi_engine_now(e);
    if (now < e->next_expiry)
        return;
    e->next_expiry = now + 1.0;
    for (int l = 0; l < 2; l++)
        for (tss_stream *s; (s = e->oldest[l]) != NULL && may_go(s, now, ttl);)
            remove_stream(e, s, &e->c.streams_expired);
}

int tss_engine_delete_stream(tss_engine *e, const char *stream_id) {
    tss_stream *s = tss_registry_find(&e->reg, stream_id);
    if (!s)
        return -1;
    if (s->inflight) /* its passes read its window: they finish first */
        tssi_engine_join(e, 1, NULL, 0);
    remove_stream(e, s, &e->c.streams_deleted);
    return 0;
}

int tss_engine_reset_stream(tss_engine *e, const char *stream_id) {
    tss_stream *s = tss_registry_find(&e->reg, stream_id);
    if (!s)
        return -1;
    s->reset_pending = 1;
    return 0;
}

void tss_engine_set_limits(tss_engine *e, const tss_limits *limits) {
    e->opt.limits = *limits;
    e->next_expiry = 0.0;
}
