/* SPDX-License-Identifier: Apache-2.0 */
/* stream.c - a stream's lifecycle: creation, restart, new parameters, alert queue. */
#include "stream.h"

#include "period.h" /* kernels/: tsm_auto_m */

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

/* Describes s's host ring for p and its arena region for the m in force; both take
 * memory only on the stream's first round (with an automatic m, once m is chosen). */
static void shape_window(tss_stream *s, const tss_params *p) {
    tss_ring_init(&s->ring, p->window, tss_stream_slack(p));
    if (p->subsequence)
        tss_online_init(&s->on, &s->ring, p->subsequence);
}

void tss_stream_set_m(tss_stream *s, uint32_t m, uint32_t period) {
    tss_detect_close(s, s->proc_seq ? s->proc_seq - 1 : 0);
    s->p.subsequence = m;
    s->p.excl = tss_params_excl(&s->cfg, m);
    s->period = period;
    if (s->on.placed)
        tss_online_set_m(&s->on, m);
    else
        tss_online_init(&s->on, &s->ring, m);
    tss_detect_reset(&s->det, &s->p, m);
}

void tss_stream_choose_m(tss_stream *s, const double *x, size_t n) {
    uint32_t m = TSS_AUTO_M_FALLBACK, period = 0;
    if (tsm_auto_m(NULL, x, n, TSS_AUTO_M_MIN, tss_params_auto_max(&s->cfg, n), TSS_AUTO_M_FALLBACK,
                   &m, &period) != TSM_OK)
        m = TSS_AUTO_M_FALLBACK, period = 0; /* only out of memory: the fallback */
    double r = 1.0;
    if (period && s->p.subsequence && /* a second look: only a strong period moves m */
        (tsm_period_strength(NULL, x, n, period, &r) != TSM_OK || r < TSS_AUTO_M_RECHECK_ACF))
        m = TSS_AUTO_M_FALLBACK, period = 0;
    const uint32_t w = s->cfg.window, last = s->next_check ? s->next_check : s->cfg.warmup;
    s->next_check = period || last >= w ? 0 : 2 * (uint64_t)last < w ? 2 * last : w;
    if (m != s->p.subsequence)
        tss_stream_set_m(s, m, period);
    else
        s->period = period;
}

uint64_t tss_stream_bytes_for(const tss_params *p, int host_arena) {
    tss_ring r;
    tss_ring_init(&r, p->window, tss_stream_slack(p));
    tss_online o;
    tss_online_init(&o, &r, 3); /* the region does not depend on m (online_round.c) */
    const uint64_t ring = (uint64_t)r.cap * (2 * sizeof(double) + sizeof(int64_t)); /* v, ts */
    return sizeof(tss_stream) + ring + (host_arena ? tss_arena_align(tss_online_bytes(&o)) : 0);
}

int tss_stream_new(const char *id, const tss_params *p, tss_stream **out) {
    *out = NULL;
    tss_stream *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    snprintf(s->id, sizeof s->id, "%s", id);
    s->cfg = *p;
    s->p = *p;
    s->p.excl = tss_params_excl(p, p->subsequence);
    shape_window(s, &s->p);
    tss_detect_reset(&s->det, &s->p, s->p.subsequence);
    *out = s;
    return 0;
}

void tss_stream_destroy(tss_stream **self_p) {
    if (*self_p) {
        tss_stream *s = *self_p;
        tss_staging_free(&s->stage);
        tss_ring_free(&s->ring);
        tss_detect_free(&s->det);
        tss_level_free(&s->level);
        free(s->out.item);
        free(s->pass_out.item);
        free(s->cand);
        free(s);
        *self_p = NULL;
    }
}

void tss_stream_restart(tss_stream *s) {
    tss_detect_close(s, s->proc_seq ? s->proc_seq - 1 : 0);
    tss_ring_clear(&s->ring);
    tss_level_reset(&s->level);
    s->on.st.valid = 0;
    s->since_pass = 0;
}

void tss_stream_restart_run(tss_stream *s, uint64_t seq, uint64_t old_next) {
    tss_stream_restart(s);
    tss_detect_forget_spans(&s->det);
    tss_alert a = {
        .kind = TSS_ALERT_RESET,
        .start_seq = seq,
        .neighbor_seq = old_next,
        .score = NAN,
        .detected_seq = seq,
    };
    tss_stream_alert(s, &a);
    s->proc_seq = seq;
}

/* Forgets the automatic m: the window restarts and the next warm-up chooses it. */
static void forget_m(tss_stream *s) {
    tss_stream_restart(s);
    s->p.subsequence = 0;
    s->p.excl = tss_params_excl(&s->cfg, 0);
    s->period = 0;
    s->next_check = 0;
    s->on = (tss_online){0}; /* the old arena region is not reused (arena.h) */
    tss_detect_reset(&s->det, &s->p, 0);
}

void tss_stream_recalibrate(tss_stream *s) {
    tss_detect_close(s, s->proc_seq ? s->proc_seq - 1 : 0);
    if (s->cfg.subsequence == 0)
        forget_m(s);
    else
        tss_detect_reset(&s->det, &s->p, s->p.subsequence);
}

int tss_stream_set_params(tss_stream *s, const tss_params *np) {
    const tss_params *o = &s->cfg;
    const int shape = np->window != o->window || np->subsequence != o->subsequence ||
                      np->hop != o->hop || np->excl != o->excl;
    const int scoring = shape || np->warmup != o->warmup || np->threshold != o->threshold ||
                        np->threshold_end != o->threshold_end;
    if (shape) {
        tss_stream_restart(s);
        tss_ring_free(&s->ring); /* the old arena region is not reused (arena.h) */
        tss_ring_init(&s->ring, np->window, tss_stream_slack(np));
        s->on = (tss_online){0};
    }
    s->cfg = *np;
    const uint32_t m = shape ? np->subsequence : s->p.subsequence;
    s->p = *np;
    s->p.subsequence = m;
    s->p.excl = tss_params_excl(np, m);
    if (shape && m)
        tss_online_init(&s->on, &s->ring, m);
    if (shape && !m)
        s->period = 0, s->next_check = 0;
    if (scoring) {
        tss_detect_close(s, s->proc_seq ? s->proc_seq - 1 : 0);
        tss_detect_reset(&s->det, &s->p, m);
    }
    return 0;
}

int64_t tss_stream_ts(const tss_stream *s, uint64_t seq) {
    /* (only the samples the ring still holds: after a restart or a restore the slots
     * beyond them hold other samples' timestamps, or none) */
    if (!s->ring.v || seq >= s->proc_seq || s->proc_seq - seq > s->ring.held)
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
