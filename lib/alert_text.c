/* SPDX-License-Identifier: Apache-2.0 */
/* alert_text.c - alerts, times and durations for a person (alert_text.h). */
#include "lib/alert_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/alert_json.h" /* tsm_alert_kind_name */
#include "lib/textbuf.h"

size_t tsm_time_text(char *buf, size_t len, int64_t ns, int local) {
    tsm_text t = tsm_text_of(buf, len);
    int64_t s = ns / 1000000000, rem = ns % 1000000000;
    if (rem < 0) /* floor, for times before 1970 */
        s--, rem += 1000000000;
    time_t tt = (time_t)s;
    struct tm tm;
    if (!(local ? localtime_r(&tt, &tm) : gmtime_r(&tt, &tm))) {
        tsm_text_put(&t, "%-*s", local ? 29 : 24, "(time out of range)");
        return t.n;
    }
    tsm_text_put(&t, "%04d-%02d-%02dT%02d:%02d:%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(rem / 1000000));
    if (!local) {
        tsm_text_put(&t, "Z");
    } else {
        long off = tm.tm_gmtoff / 60;
        tsm_text_put(&t, "%c%02ld:%02ld", off < 0 ? '-' : '+', labs(off) / 60, labs(off) % 60);
    }
    return t.n;
}

size_t tsm_duration_text(char *buf, size_t len, double s) {
    tsm_text t = tsm_text_of(buf, len);
    if (!(s >= 0) || !isfinite(s)) {
        tsm_text_put(&t, "-");
    } else if (s < 9.95) {
        tsm_text_put(&t, "%.2g s", s);
    } else if (s < 59.5) {
        tsm_text_put(&t, "%.0f s", s);
    } else if (s < 3599.5) { /* whole seconds */
        long long v = llround(s);
        v % 60 ? tsm_text_put(&t, "%lld min %lld s", v / 60, v % 60)
               : tsm_text_put(&t, "%lld min", v / 60);
    } else if (s < 86370) { /* whole minutes */
        long long v = llround(s / 60);
        v % 60 ? tsm_text_put(&t, "%lld h %lld min", v / 60, v % 60)
               : tsm_text_put(&t, "%lld h", v / 60);
    } else { /* whole hours */
        long long v = llround(s / 3600);
        v % 24 ? tsm_text_put(&t, "%lld d %lld h", v / 24, v % 24)
               : tsm_text_put(&t, "%lld d", v / 24);
    }
    return t.n;
}

size_t tsm_term_safe(char *buf, size_t len, const char *s) {
    tsm_text t = tsm_text_of(buf, len);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            tsm_text_put(&t, "\\x%02x", *p);
        else
            tsm_text_put(&t, "%c", *p);
    }
    return t.n;
}

int tsm_text_columns(const char *s) {
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xc0) != 0x80; /* UTF-8: a character per byte that starts one */
    return n;
}

/* ---- Streams: the sample period each one's alerts show ------------------------- */

/* What the lines remember of a stream: the first alert's sample and timestamp since
 * the stream (re)started, and the period between them and a later alert's. */
typedef struct {
    char *id; /* NULL: a free slot */
    uint64_t seq0;
    int64_t ts0;
    double period_ns; /* 0: not known yet */
} stream_memo;

#define STREAMS_MAX (1u << 20)

struct tsm_alert_text {
    int local;
    int stream_width; /* the widest (term-safe) stream id so far */
    stream_memo *slot;
    size_t cap, used; /* slots (a power of two) and those taken */
};

tsm_alert_text *tsm_alert_text_new(int local) {
    tsm_alert_text *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->local = local;
    self->cap = 64;
    if (!(self->slot = calloc(self->cap, sizeof *self->slot))) {
        free(self);
        return NULL;
    }
    return self;
}

void tsm_alert_text_destroy(tsm_alert_text **self_p) {
    tsm_alert_text *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->cap; i++)
        free(self->slot[i].id);
    free(self->slot);
    free(self);
    *self_p = NULL;
}

static size_t hash_of(const char *s) { /* FNV-1a */
    size_t h = (size_t)14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * (size_t)1099511628211ull;
    return h;
}

/* The slot of id in slot[0..cap): its own, or the free one where it would go. */
static stream_memo *find_slot(stream_memo *slot, size_t cap, const char *id) {
    for (size_t i = hash_of(id) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!slot[i].id || strcmp(slot[i].id, id) == 0)
            return &slot[i];
}

/* Doubles the table; returns 0, or -1 when out of memory (the table stays). */
static int grow(tsm_alert_text *self) {
    size_t cap = 2 * self->cap;
    stream_memo *slot = calloc(cap, sizeof *slot);
    if (!slot)
        return -1;
    for (size_t i = 0; i < self->cap; i++)
        if (self->slot[i].id)
            *find_slot(slot, cap, self->slot[i].id) = self->slot[i];
    free(self->slot);
    self->slot = slot, self->cap = cap;
    return 0;
}

/* The memo of stream id, made when new; NULL when there is no room for it (then no
 * period is learnt for it: its lines say no time spans). O(length of id) on average. */
static stream_memo *memo_of(tsm_alert_text *self, const char *id) {
    stream_memo *m = find_slot(self->slot, self->cap, id);
    if (m->id)
        return m;
    if (self->used >= STREAMS_MAX || (4 * (self->used + 1) > 3 * self->cap && grow(self) != 0))
        return NULL;
    m = find_slot(self->slot, self->cap, id);
    if (!(m->id = strdup(id)))
        return NULL;
    m->seq0 = UINT64_MAX; /* no anchor yet */
    self->used++;
    return m;
}

/* Whether alert a carries its sample's timestamp: a RESET does not (it is 0). */
static int stamped(const Tsmine__V1__Alert *a) {
    return a->kind != TSMINE__V1__ALERT_KIND__RESET || a->start_timestamp_ns != 0;
}

/* Learns the stream's sample period from alert a: the first alert anchors it, a later
 * one at another sample gives the period (from the anchor: the longer the span, the
 * finer); after a RESET (its numbering restarts) the next stamped alert anchors it
 * afresh, and the period stays. */
static void learn(stream_memo *m, const Tsmine__V1__Alert *a) {
    if (!m)
        return;
    if (a->kind == TSMINE__V1__ALERT_KIND__RESET)
        m->seq0 = UINT64_MAX;
    if (!stamped(a))
        return;
    if (m->seq0 == UINT64_MAX) {
        m->seq0 = a->start_seq, m->ts0 = a->start_timestamp_ns;
        return;
    }
    if (a->start_seq == m->seq0)
        return;
    /* the differences first: exact in 64 bits, where timestamps near 2^60 ns are not
     * in a double's 53 (a later alert may be about an earlier sample: both negative) */
    double p = (double)(a->start_timestamp_ns - m->ts0) / (double)(int64_t)(a->start_seq - m->seq0);
    if (p > 0 && isfinite(p))
        m->period_ns = p;
}

/* ---- The line ------------------------------------------------------------------- */

/* "N samples, SPAN", or "N samples" while the stream's period is not known. */
static void span(tsm_text *t, uint64_t samples, const stream_memo *m) {
    tsm_text_put(t, "%llu sample%s", (unsigned long long)samples, samples == 1 ? "" : "s");
    if (m && m->period_ns > 0) {
        char d[48];
        tsm_duration_text(d, sizeof d, 1e-9 * m->period_ns * (double)samples);
        tsm_text_put(t, ", %s", d);
    }
}

/* "#A..#B" for the n samples from a (n >= 1), "#A" for one. */
static void extent(tsm_text *t, uint64_t a, uint64_t n) {
    if (n <= 1)
        tsm_text_put(t, "#%llu", (unsigned long long)a);
    else
        tsm_text_put(t, "#%llu..#%llu", (unsigned long long)a, (unsigned long long)(a + n - 1));
}

/* What the tail says of a scored subsequence and its nearest neighbour at j. */
static void neighbour(tsm_text *t, const Tsmine__V1__Alert *a, const char *which) {
    if (a->tail == TSMINE__V1__TAIL__FAR)
        tsm_text_put(t, ", unlike anything %s (", which);
    else if (a->tail == TSMINE__V1__TAIL__NEAR)
        tsm_text_put(t, ", an unusually close repeat (");
    else
        tsm_text_put(t, " (");
    tsm_text_put(t, "nearest #%llu", (unsigned long long)a->neighbor_seq);
    if (isfinite(a->distance))
        tsm_text_put(t, ", distance %.3g", a->distance);
    tsm_text_put(t, ")");
}

/* "; view V (shape S, magnitude M, level L)": the view behind the score and each view's
 * score that was computed (NaN: not); nothing for an alert without views. */
static void views(tsm_text *t, const Tsmine__V1__Alert *a) {
    const char *view = tsm_alert_view_name(a->view);
    if (!view)
        return;
    const struct {
        const char *name;
        double score;
    } s[] = {
        {"shape", a->shape_score}, {"magnitude", a->magnitude_score}, {"level", a->level_score}};
    tsm_text_put(t, "; view %s", view);
    int n = 0;
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        if (isfinite(s[i].score))
            tsm_text_put(t, "%s%s %.4f", n++ ? ", " : " (", s[i].name, s[i].score);
    if (n)
        tsm_text_put(t, ")");
}

/* WHAT: the alert in words. */
static void what(tsm_text *t, const Tsmine__V1__Alert *a, const stream_memo *m) {
    uint64_t s = a->start_seq, n = a->length;
    switch (a->kind) {
    case TSMINE__V1__ALERT_KIND__ANOMALY:
        tsm_text_put(t, "event opens at ");
        extent(t, s, n);
        tsm_text_put(t, " (m %llu)", (unsigned long long)n);
        neighbour(t, a, "before");
        views(t, a);
        break;
    case TSMINE__V1__ALERT_KIND__ANOMALY_END: {
        uint64_t len =
            a->event_end_seq > a->event_start_seq ? a->event_end_seq - a->event_start_seq : 0;
        tsm_text_put(t, "event closed: ");
        extent(t, a->event_start_seq, len);
        tsm_text_put(t, ", ");
        span(t, len, m);
        tsm_text_put(t, "; peak at #%llu", (unsigned long long)s);
        if (isfinite(a->distance))
            tsm_text_put(t, " (distance %.3g)", a->distance);
        views(t, a);
        break;
    }
    case TSMINE__V1__ALERT_KIND__DISCORD:
        tsm_text_put(t, "discord ");
        extent(t, s, n);
        tsm_text_put(t, " (m %llu)", (unsigned long long)n);
        neighbour(t, a, "else in the window");
        views(t, a);
        break;
    case TSMINE__V1__ALERT_KIND__LEFT_DISCORD:
        tsm_text_put(t, "subsequence ");
        extent(t, s, n);
        tsm_text_put(t, " (m %llu) past the threshold", (unsigned long long)n);
        neighbour(t, a, "before");
        views(t, a);
        break;
    case TSMINE__V1__ALERT_KIND__MOTIF:
        tsm_text_put(t, "motif: ");
        extent(t, s, n);
        tsm_text_put(t, " and ");
        extent(t, a->neighbor_seq, n);
        tsm_text_put(t, " repeat each other (m %llu", (unsigned long long)n);
        if (isfinite(a->distance))
            tsm_text_put(t, ", distance %.3g", a->distance);
        tsm_text_put(t, ")");
        break;
    case TSMINE__V1__ALERT_KIND__GAP:
        tsm_text_put(t, "samples ");
        extent(t, s, n);
        tsm_text_put(t, " never arrived (");
        span(t, n, m);
        tsm_text_put(t, "); the window starts again after them");
        break;
    case TSMINE__V1__ALERT_KIND__RESET:
        tsm_text_put(t,
                     "the stream starts over at #%llu (it had reached #%llu); its window and alert "
                     "spans start afresh",
                     (unsigned long long)s, (unsigned long long)a->neighbor_seq);
        break;
    default: tsm_text_put(t, "an alert of kind %d, unknown to this tsmine", (int)a->kind); break;
    }
}

size_t tsm_alert_text_line(tsm_alert_text *self, const Tsmine__V1__Alert *a, char *buf,
                           size_t len) {
    tsm_text t = tsm_text_of(buf, len);
    const char *id = a->stream_id ? a->stream_id : "";
    stream_memo *m = memo_of(self, id);
    learn(m, a);

    char when[40], safe[4 * 255 + 1];
    if (stamped(a))
        tsm_time_text(when, sizeof when, a->start_timestamp_ns, self->local);
    else /* no time to show: as wide as one */
        snprintf(when, sizeof when, "%-*s", self->local ? 29 : 24, "-");
    tsm_term_safe(safe, sizeof safe, id); /* a longer id than the daemon takes: cut */
    int w = tsm_text_columns(safe);
    if (w > self->stream_width)
        self->stream_width = w;
    tsm_text_put(&t, "%s  %s%*s  %-12s  ", when, safe, self->stream_width - w, "",
                 tsm_alert_kind_name(a->kind));
    int scored = a->kind != TSMINE__V1__ALERT_KIND__MOTIF &&
                 a->kind != TSMINE__V1__ALERT_KIND__GAP && a->kind != TSMINE__V1__ALERT_KIND__RESET;
    if (scored && isfinite(a->score))
        tsm_text_put(&t, "score %.4f  ", a->score);
    else
        tsm_text_put(&t, "%-12s  ", "");
    what(&t, a, m);
    return t.n;
}
