/* stream.c - a stream's lifecycle: creation, restart, new parameters, alert queue. */
#include "stream.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t tss_stream_slack(const tss_params *p) {
    /* a round stops at every pass (every hop samples), so hop is enough in the steady
     * state; at least 256 (or W) lets a filling window take few rounds when hop is small */
    uint32_t floor = p->window < 256 ? p->window : 256;
    return p->hop > floor ? p->hop : floor;
}

/* Allocates the host ring for p into s and describes its arena region (placed on
 * the stream's first round); 0 or -1 with nothing held. */
static int alloc_window(tss_stream *s, const tss_params *p) {
    if (tss_ring_init(&s->ring, p->window, tss_stream_slack(p)) != 0)
        return -1;
    tss_online_init(&s->on, &s->ring, p->subsequence);
    return 0;
}

int tss_stream_new(const char *id, const tss_params *p, tss_stream **out) {
    *out = NULL;
    tss_stream *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    snprintf(s->id, sizeof s->id, "%s", id);
    s->p = *p;
    s->p.excl = tss_params_excl(p);
    s->r = NAN;
    s->cal_nn = NAN;
    if (!isnan(p->range)) {
        s->calibrated = 1;
        s->r = p->range;
    }
    if (alloc_window(s, &s->p) != 0) {
        free(s);
        return -1;
    }
    *out = s;
    return 0;
}

void tss_stream_destroy(tss_stream **self_p) {
    if (*self_p) {
        tss_stream *s = *self_p;
        tss_staging_free(&s->stage);
        tss_ring_free(&s->ring);
        tss_seqset_free(&s->alerted);
        free(s->out.item);
        free(s->pass_out.item);
        free(s);
        *self_p = NULL;
    }
}

void tss_stream_restart(tss_stream *s) {
    tss_ring_clear(&s->ring);
    s->on.st.valid = 0;
    s->since_pass = 0;
}

int tss_stream_set_params(tss_stream *s, const tss_params *np) {
    tss_params p = *np;
    p.excl = tss_params_excl(np);
    const tss_params *o = &s->p;
    if (p.window != o->window || p.subsequence != o->subsequence || p.hop != o->hop ||
        p.excl != o->excl) {
        tss_stream t = {0};
        if (alloc_window(&t, &p) != 0)
            return -1;
        tss_ring_free(&s->ring); /* the old arena region is not reused (arena.h) */
        s->ring = t.ring;
        s->on = t.on;
        tss_stream_restart(s);
    }
    if (isnan(p.range)) {
        if (!isnan(o->range)) /* numeric -> auto: calibrate on the next full window */
            s->calibrated = 0, s->r = NAN, s->cal_nn = NAN;
        else if (s->calibrated) /* a new margin applies at once */
            s->r = s->cal_nn * (1.0 + p.range_margin);
    } else {
        s->calibrated = 1;
        s->r = p.range;
    }
    s->p = p;
    return 0;
}

int64_t tss_stream_ts(const tss_stream *s, uint64_t seq) {
    if (seq >= s->proc_seq || s->proc_seq - seq > s->ring.cap)
        return 0;
    return tss_ring_ts_back(&s->ring, s->proc_seq - seq);
}

void tss_alert_push(tss_alert_buf *b, const tss_alert *a) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        tss_alert *item = realloc(b->item, cap * sizeof *item);
        if (!item) {
            b->lost++;
            return;
        }
        b->item = item;
        b->cap = cap;
    }
    b->item[b->n] = *a;
    b->n++;
}

/* Counts a failure and keeps the first message of the tick in buf. */
static void fail_into(tss_stream *s, char *buf, size_t size, const char *what, const char *msg) {
    s->pass_failures++;
    if (!buf[0])
        snprintf(buf, size, "stream %s: %s: %s", s->id, what, msg);
}

void tss_stream_fail(tss_stream *s, const char *what, const char *msg) {
    fail_into(s, s->fail, sizeof s->fail, what, msg);
}

void tss_stream_pass_fail(tss_stream *s, const char *what, const char *msg) {
    fail_into(s, s->pass_fail, sizeof s->pass_fail, what, msg);
}
