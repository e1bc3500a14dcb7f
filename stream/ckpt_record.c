/* SPDX-License-Identifier: Apache-2.0 */
/* ckpt_record.c - one stream's record in a checkpoint, written and read from one
 * table of its parts (integers little-endian, doubles as their IEEE-754 bits).
 *
 * A record is its parts in the order of the tables head[] and body[] below: its
 * creation index, id, parameters, the m in force (its period, the next look), ingest
 * state (next sequence number, last timestamp, epoch, a pending reset, recent gaps),
 * counters (by alert kind: TSS_ALERT_KINDS of them), window (samples and timestamps),
 * the shape view's score history (calib.h), the magnitude view's history (robust.h:
 * its state, then its values oldest first), the event state (detect.h: the last
 * subsequence's value, events, the open event and its peak), the peak's views, the
 * published spans and MOTIF pairs, and the staged samples and gap marks not yet
 * processed. Version 4 lacks the magnitude history and the peak's views (their parts
 * say since 5): a stream of a version 4 file starts its magnitude history empty and
 * an event open in it ends with its peak's views unknown. Version 6 has version 5's
 * layout; the last subsequence's value (detect.h last_value) became its magnitude
 * score where events follow that view, so a version 4 or 5 file's is dropped (NAN: none
 * yet) there.
 *
 * A part is a table of fixed fields (where each lives in memory, its width in the
 * file, the range a value read must be in), then optionally a pair of functions, side
 * by side, for what a table cannot say (arrays of a counted length, the checks that
 * relate fields); the writer and the reader walk the same tables, so that a new field
 * is one row. The reader checks every field as it comes against the limits the engine
 * itself keeps (parameters valid, fill <= window, finite samples, an m the parameters
 * allow, bins on the grid and counts that add up, marks inside the staging, a
 * magnitude history as tss_robust_add leaves one, ...; nothing allocated for more than
 * the rest of the file holds), and names the part, the field and its value when one is
 * wrong. What is derived from the window (the online statistics and QT row, the level
 * view's block ranges) is not stored: the first tick after a load rebuilds it. */
#include "ckpt_record.h"

#include "engine_checkpoint.h"
#include "params.h"
#include "util.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- fixed fields: one table row each --------------------------------------- */

/* What a value read must be: anything, at most max, a finite double, or a view's score
 * as the engine computes one (NAN or in [0, 1]). */
enum { ANY, UPTO, FINITE, SCORE };

typedef struct {
    const char *name; /* the member, as a refusal names it */
    uint32_t off;     /* its offset in the part's struct */
    uint8_t size;     /* one element in memory: 1, 2, 4 or 8 bytes (a double: its bits) */
    uint8_t wire;     /* one element in the file: 1, 2, 4 or 8 bytes */
    uint16_t count;   /* elements: 1, or an array member's length */
    uint8_t rule;
    uint64_t max; /* UPTO: the largest value read */
} ck_field;

/* A row for member m of struct T, count elements of wire bytes each. A member narrower
 * than its wire width does not compile (ELEM's array of size -1). */
#define MEMBER(T, m) sizeof(((T *)0)->m)
#define ELEM(T, m, n, wire)                                                                        \
    (MEMBER(T, m) / (n) + 0 * sizeof(char[MEMBER(T, m) / (n) >= (wire) ? 1 : -1]))
#define ROW(T, m, w, n, r, x)                                                                      \
    { #m, offsetof(T, m), ELEM(T, m, n, w), w, n, r, x }
#define F(T, m, wire)          ROW(T, m, wire, 1, ANY, 0)
#define F_UPTO(T, m, wire, mx) ROW(T, m, wire, 1, UPTO, mx)
#define F_RULE(T, m, rule)     ROW(T, m, 8, 1, rule, 0) /* a double */
#define F_ARRAY(T, m, wire, n) ROW(T, m, wire, n, ANY, 0)
#define NFIELDS(t)             (sizeof(t) / sizeof *(t))

static uint64_t load(const unsigned char *at, unsigned size) {
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (size) {
    case 1: memcpy(&u8, at, 1); return u8;
    case 2: memcpy(&u16, at, 2); return u16;
    case 4: memcpy(&u32, at, 4); return u32;
    default: memcpy(&u64, at, 8); return u64;
    }
}

static void store(unsigned char *at, unsigned size, uint64_t v) {
    const uint8_t u8 = (uint8_t)v;
    const uint16_t u16 = (uint16_t)v;
    const uint32_t u32 = (uint32_t)v;
    switch (size) {
    case 1: memcpy(at, &u8, 1); break;
    case 2: memcpy(at, &u16, 2); break;
    case 4: memcpy(at, &u32, 4); break;
    default: memcpy(at, &v, 8); break;
    }
}

static void put_fields(tssi_ckbuf *w, const void *base, const ck_field *f, size_t nf) {
    for (size_t k = 0; k < nf; k++)
        for (unsigned j = 0; j < f[k].count; j++)
            tssi_ck_put(w, load((const unsigned char *)base + f[k].off + j * f[k].size, f[k].size),
                        f[k].wire);
}

static int rule_ok(const ck_field *f, uint64_t v) {
    double d;
    memcpy(&d, &v, sizeof d);
    switch (f->rule) {
    case UPTO: return v <= f->max;
    case FINITE: return isfinite(d);
    case SCORE: return isnan(d) || (d >= 0.0 && d <= 1.0);
    default: return 1;
    }
}

/* Reads the fields into base; 0, or -1 with "bad WHAT (FIELD VALUE)" or "truncated"
 * in why. */
static int get_fields(tssi_ckread *r, void *base, const ck_field *f, size_t nf, const char *what,
                      char *why, size_t whylen) {
    for (size_t k = 0; k < nf; k++) {
        for (unsigned j = 0; j < f[k].count; j++) {
            const uint64_t v = tssi_ck_get(r, f[k].wire);
            if (r->bad) {
                snprintf(why, whylen, "truncated");
                return -1;
            }
            if (!rule_ok(&f[k], v)) {
                const char *name =
                    strrchr(f[k].name, '.') ? strrchr(f[k].name, '.') + 1 : f[k].name;
                double d;
                memcpy(&d, &v, sizeof d);
                if (f[k].rule == UPTO)
                    snprintf(why, whylen, "bad %s (%s %llu)", what, name, (unsigned long long)v);
                else
                    snprintf(why, whylen, "bad %s (%s %g)", what, name, d);
                return -1;
            }
            store((unsigned char *)base + f[k].off + j * f[k].size, f[k].size, v);
        }
    }
    return 0;
}

/* ---- parts: fields, then what a table cannot say ------------------------------- */

/* What a part's reader knows of the record and where it says what is wrong. */
typedef struct {
    uint32_t version, group;
    char why[TSS_MAX_ID + 128]; /* (an id fits) */
} ck_ctx;

typedef struct {
    const char *what;                             /* what a refusal of a field says is bad */
    uint32_t since;                               /* the first version that has the part */
    const ck_field *f;                            /* its fixed fields, in order (NULL: none) */
    size_t nf;                                    /* how many */
    void (*put)(tssi_ckbuf *w, const void *base); /* after the fields (NULL: nothing) */
    /* after the fields: reads what put wrote and checks what the field rules alone
     * cannot; 0, or -1 with c->why */
    int (*get)(tssi_ckread *r, void *base, ck_ctx *c);
    void (*absent)(void *base); /* a version without the part (NULL: nothing to do) */
} ck_part;

#define PART(what, since, fields, put, get, absent)                                                \
    { what, since, fields, NFIELDS(fields), put, get, absent }
#define HOOKS(what, since, put, get, absent)                                                       \
    { what, since, NULL, 0, put, get, absent }

static void put_parts(tssi_ckbuf *w, const void *base, const ck_part *p, size_t np) {
    for (size_t k = 0; k < np; k++) { /* (every part: the version written is the latest) */
        put_fields(w, base, p[k].f, p[k].nf);
        if (p[k].put)
            p[k].put(w, base);
    }
}

static int get_parts(tssi_ckread *r, void *base, const ck_part *p, size_t np, ck_ctx *c) {
    for (size_t k = 0; k < np; k++) {
        if (c->version < p[k].since) {
            if (p[k].absent)
                p[k].absent(base);
            continue;
        }
        if (get_fields(r, base, p[k].f, p[k].nf, p[k].what, c->why, sizeof c->why) != 0 ||
            (p[k].get && p[k].get(r, base, c) != 0))
            return -1;
    }
    return 0;
}

/* ---- the head: what the stream is made from ------------------------------------ */

/* The head of a record, read before the stream exists (the writer fills one from it). */
typedef struct {
    uint64_t index; /* the creation order */
    char id[TSS_MAX_ID + 1];
    tss_params p;                   /* as configured */
    uint32_t m, period, next_check; /* the m in force, tss_stream's period and next_check */
} ck_head;

static const ck_field index_fields[] = {F(ck_head, index, 8)};

static void put_id(tssi_ckbuf *w, const void *base) {
    const ck_head *h = base;
    const size_t idlen = strlen(h->id);
    tssi_ck_put(w, idlen, 4);
    tssi_ck_put_bytes(w, h->id, idlen);
}

static int get_id(tssi_ckread *r, void *base, ck_ctx *c) {
    ck_head *h = base;
    const uint32_t idlen = (uint32_t)tssi_ck_get(r, 4);
    const unsigned char *idb = idlen <= TSS_MAX_ID ? tssi_ck_take(r, idlen) : NULL;
    if (!idb || idlen == 0) {
        snprintf(c->why, sizeof c->why, "bad id length %u", idlen);
        return -1;
    }
    for (uint32_t k = 0; k < idlen; k++) {
        if (idb[k] < 0x20 || idb[k] > 0x7e) {
            snprintf(c->why, sizeof c->why, "id is not printable");
            return -1;
        }
    }
    memcpy(h->id, idb, idlen);
    h->id[idlen] = '\0';
    if (c->group != TSS_CKPT_ALL && tss_ckpt_group(h->id) != c->group) {
        snprintf(c->why, sizeof c->why, "id \"%s\" belongs to group %u, not %u", h->id,
                 tss_ckpt_group(h->id), c->group);
        return -1;
    }
    return 0;
}

static const ck_field param_fields[] = {
    F(ck_head, p.window, 4),        F(ck_head, p.subsequence, 4),  F(ck_head, p.hop, 4),
    F(ck_head, p.excl, 4),          F(ck_head, p.warmup, 4),       F(ck_head, p.threshold, 8),
    F(ck_head, p.threshold_end, 8), F(ck_head, p.range, 8),        F(ck_head, p.motif, 1),
    F(ck_head, p.references, 4),    F(ck_head, p.left_discord, 1),
};

static int get_params(tssi_ckread *r, void *base, ck_ctx *c) {
    (void)r;
    return tss_params_check(&((ck_head *)base)->p, c->why, sizeof c->why);
}

static const ck_field m_fields[] = {
    F(ck_head, m, 4),
    F(ck_head, period, 4),
    F(ck_head, next_check, 4),
};

/* The m in force must be one the parameters allow: theirs, or an automatic one in its
 * range (0: not chosen yet); the next look only for an automatic m without a period. */
static int get_m(tssi_ckread *r, void *base, ck_ctx *c) {
    (void)r;
    const ck_head *h = base;
    const tss_params *p = &h->p;
    const uint32_t m = h->m;
    if (p->subsequence ? m != p->subsequence
                       : m != 0 && (m < TSS_AUTO_M_MIN || m > tss_params_auto_max(p, p->window)) &&
                             m != TSS_AUTO_M_FALLBACK) {
        snprintf(c->why, sizeof c->why, "subsequence %u in force does not fit the parameters", m);
        return -1;
    }
    if (h->next_check > p->window || (h->next_check && (p->subsequence || !m || h->period))) {
        snprintf(c->why, sizeof c->why, "bad automatic m state");
        return -1;
    }
    return 0;
}

static const ck_part head[] = {
    PART("index", 0, index_fields, NULL, NULL, NULL),
    HOOKS("id", 0, put_id, get_id, NULL),
    PART("parameters", 0, param_fields, NULL, get_params, NULL),
    PART("m", 0, m_fields, NULL, get_m, NULL),
};

/* ---- the body: the stream's state ---------------------------------------------- */

static const ck_field ingest_fields[] = {
    F_UPTO(tss_stream, started, 1, 1),
    F(tss_stream, next_seq, 8),
    F(tss_stream, last_ts, 8),
    F(tss_stream, epoch, 8),
    F_UPTO(tss_stream, reset_pending, 1, 1),
    F_UPTO(tss_stream, ngaps, 4, TSS_GAPS_KEPT),
    F_UPTO(tss_stream, gap_next, 4, TSS_GAPS_KEPT - 1),
};

/* The recent gaps, [lo, hi) each, the oldest overwritten next once they are all kept. */
static void put_gaps(tssi_ckbuf *w, const void *base) {
    const tss_stream *s = base;
    for (uint32_t g = 0; g < s->ngaps; g++) {
        tssi_ck_put(w, s->gap_lo[g], 8);
        tssi_ck_put(w, s->gap_hi[g], 8);
    }
}

static int get_gaps(tssi_ckread *r, void *base, ck_ctx *c) {
    tss_stream *s = base;
    if (s->ngaps < TSS_GAPS_KEPT && s->gap_next != s->ngaps) {
        snprintf(c->why, sizeof c->why, "bad sequence state (%u gaps, the next at %u)", s->ngaps,
                 s->gap_next);
        return -1;
    }
    for (uint32_t g = 0; g < s->ngaps; g++) {
        s->gap_lo[g] = tssi_ck_get(r, 8);
        s->gap_hi[g] = tssi_ck_get(r, 8);
        if (s->gap_lo[g] >= s->gap_hi[g] || s->gap_hi[g] > s->next_seq) {
            snprintf(c->why, sizeof c->why, "bad gap %u", g);
            return -1;
        }
    }
    return 0;
}

static const ck_field counter_fields[] = {
    F(tss_stream, samples, 8),
    F(tss_stream, rejected, 8),
    F_ARRAY(tss_stream, alerts, 8, TSS_ALERT_KINDS),
    F(tss_stream, gaps, 8),
};

static const ck_field window_fields[] = {
    F(tss_stream, proc_seq, 8),
    F(tss_stream, since_pass, 8),
};

/* The window: u32 fill, its samples (contiguous in the mirrored ring), then its
 * timestamps (a plain ring of cap: up to two runs), oldest first. */
static void put_window(tssi_ckbuf *w, const void *base) {
    const tss_ring *r = &((const tss_stream *)base)->ring;
    tssi_ck_put(w, r->fill, 4);
    if (r->fill) {
        const uint32_t at = tss_ring_start(r);
        tssi_ck_put_array64(w, r->v + at, r->fill);
        const uint32_t run = r->cap - at < r->fill ? r->cap - at : r->fill;
        tssi_ck_put_array64(w, r->ts + at, run);
        tssi_ck_put_array64(w, r->ts, r->fill - run);
    }
}

static int get_window(tssi_ckread *r, void *base, ck_ctx *c) {
    tss_stream *s = base;
    const uint32_t fill = (uint32_t)tssi_ck_get(r, 4);
    if (fill > s->cfg.window || fill > s->proc_seq || !tssi_ck_fits(r, fill, 16)) {
        snprintf(c->why, sizeof c->why, "bad window (fill %u, window %u)", fill, s->cfg.window);
        return -1;
    }
    if (fill && tss_ring_alloc(&s->ring) != 0) {
        snprintf(c->why, sizeof c->why, "out of memory");
        return -1;
    }
    const unsigned char *xb = tssi_ck_take(r, 16 * (size_t)fill); /* samples, timestamps */
    tssi_ckread xr = {.p = xb, .n = xb ? 8 * (size_t)fill : 0},
                tr = {.p = xb ? xb + 8 * (size_t)fill : NULL, .n = xr.n};
    for (uint32_t k = 0; k < fill; k++) {
        const double v = tssi_ck_get_f64(&xr);
        if (!isfinite(v)) {
            snprintf(c->why, sizeof c->why, "non-finite sample in the window");
            return -1;
        }
        tss_ring_push(&s->ring, v, (int64_t)tssi_ck_get(&tr, 8));
    }
    return 0;
}

static const ck_field calib_fields[] = {
    F_UPTO(tss_stream, det.cal.n, 4, TSS_CALIB_HISTORY),
    F_UPTO(tss_stream, det.cal.head, 4, TSS_CALIB_HISTORY - 1),
    ROW(tss_stream, det.cal.ring, 2, TSS_CALIB_HISTORY, UPTO, TSS_CALIB_BINS - 1),
};

/* The score history's ring is full, or filled from 0; empty while m is not known. The
 * bins' counts are derived. */
static int get_calib(tssi_ckread *r, void *base, ck_ctx *c) {
    (void)r;
    tss_stream *s = base;
    tss_calib *cal = &s->det.cal;
    if ((cal->n < TSS_CALIB_HISTORY && cal->head != cal->n) || (s->p.subsequence == 0 && cal->n)) {
        snprintf(c->why, sizeof c->why, "bad score history (%u values, the next at %u)", cal->n,
                 cal->head);
        return -1;
    }
    tss_calib_rebuild(cal);
    return 0;
}

/* Its state (checked by get_robust: the message names the count and the values since
 * the last refresh), then its values. */
static const ck_field robust_fields[] = {
    F(tss_stream, det.mag.n, 4),   F(tss_stream, det.mag.since, 4), F(tss_stream, det.mag.ready, 1),
    F(tss_stream, det.mag.med, 8), F(tss_stream, det.mag.mad, 8),
};

/* The magnitude history's values oldest first (the ring holds them from head - n on:
 * up to two runs). */
static void put_robust(tssi_ckbuf *w, const void *base) {
    const tss_robust *g = &((const tss_stream *)base)->det.mag;
    if (g->n) {
        const uint32_t at = (g->head + TSS_ROBUST_HISTORY - g->n) % TSS_ROBUST_HISTORY;
        const uint32_t run = TSS_ROBUST_HISTORY - at < g->n ? TSS_ROBUST_HISTORY - at : g->n;
        tssi_ck_put_array64(w, g->ring + at, run);
        tssi_ck_put_array64(w, g->ring, g->n - run);
    }
}

/* The history must be as tss_robust_add leaves one: at most TSS_ROBUST_HISTORY finite
 * values, ready exactly when it holds TSS_ROBUST_MIN, fewer than TSS_ROBUST_REFRESH
 * values since the last refresh (none before the first, and no more than were added
 * after it), the last refresh's median and MAD finite (the MAD not negative); and
 * empty while m is not known (such a stream has scored nothing). The values, oldest
 * first, go into ring[0 .. n) with head n % TSS_ROBUST_HISTORY: the next value replaces
 * the oldest, as it would have in the ring saved. */
static int get_robust(tssi_ckread *r, void *base, ck_ctx *c) {
    tss_stream *s = base;
    tss_robust *g = &s->det.mag;
    const uint32_t n = g->n, since = g->since;
    if (n > TSS_ROBUST_HISTORY || (n && !s->p.subsequence) || !tssi_ck_fits(r, n, 8)) {
        snprintf(c->why, sizeof c->why, "bad magnitude history: %u values", n);
        return -1;
    }
    if (g->ready != (n >= TSS_ROBUST_MIN) || since >= TSS_ROBUST_REFRESH ||
        (g->ready ? since > n - TSS_ROBUST_MIN : since != 0) || !isfinite(g->med) ||
        !isfinite(g->mad) || g->mad < 0.0) {
        snprintf(c->why, sizeof c->why,
                 "bad magnitude history state: %u values, %u since its refresh", n, since);
        return -1;
    }
    if (n && !(g->ring = malloc(TSS_ROBUST_HISTORY * sizeof *g->ring))) {
        snprintf(c->why, sizeof c->why, "out of memory");
        return -1;
    }
    const unsigned char *b = tssi_ck_take(r, 8 * (size_t)n);
    tssi_ckread vr = {.p = b, .n = b ? 8 * (size_t)n : 0};
    for (uint32_t k = 0; k < n; k++) {
        const double v = tssi_ck_get_f64(&vr);
        if (!isfinite(v)) {
            snprintf(c->why, sizeof c->why, "non-finite value in the magnitude history");
            return -1; /* (g is freed with its stream) */
        }
        g->ring[k] = v;
    }
    g->head = n % TSS_ROBUST_HISTORY;
    return 0;
}

static const ck_field event_fields[] = {
    F(tss_stream, det.last_value, 8),
    F(tss_stream, det.events, 8),
    F_UPTO(tss_stream, det.open, 1, 1),
    F_UPTO(tss_stream, det.tail, 1, TSS_TAIL_NEAR),
    F(tss_stream, det.first, 8),
    F(tss_stream, det.last, 8),
    F(tss_stream, det.below, 4),
    F(tss_stream, det.peak.start_seq, 8),
    F(tss_stream, det.peak.start_timestamp_ns, 8),
    F(tss_stream, det.peak.distance, 8),
    F(tss_stream, det.peak.neighbor_seq, 8),
    F(tss_stream, det.peak.score, 8),
    F_UPTO(tss_stream, det.peak.tail, 1, TSS_TAIL_NEAR),
};

/* An open event lies in what was processed, its peak in it; the peak's alert fields
 * that are not stored follow from the parameters. */
static int get_event(tssi_ckread *r, void *base, ck_ctx *c) {
    (void)r;
    tss_stream *s = base;
    tss_detect *d = &s->det;
    tss_alert *pk = &d->peak;
    pk->kind = TSS_ALERT_ANOMALY;
    pk->length = s->p.subsequence;
    pk->threshold = isnan(s->p.range) ? s->p.threshold : s->p.range;
    if (c->version < 6 && isnan(s->p.range))
        d->last_value = NAN; /* the shape view's comparable score then (file comment) */
    if (d->open && (s->p.subsequence == 0 || d->first > d->last || d->last >= s->proc_seq ||
                    pk->start_seq < d->first || d->below > s->p.subsequence)) {
        snprintf(c->why, sizeof c->why, "bad event state (open from %llu to %llu, peak at %llu)",
                 (unsigned long long)d->first, (unsigned long long)d->last,
                 (unsigned long long)pk->start_seq);
        return -1;
    }
    return 0;
}

static const ck_field view_fields[] = {
    F_UPTO(tss_stream, det.peak.view, 1, TSS_VIEW_LEVEL),
    F_RULE(tss_stream, det.peak.shape_score, SCORE),
    F_RULE(tss_stream, det.peak.magnitude_score, SCORE),
    F_RULE(tss_stream, det.peak.level_score, SCORE),
    F(tss_stream, det.peak.magnitude, 8),
    F(tss_stream, det.peak.magnitude_neighbor_seq, 8),
    F(tss_stream, det.peak.level, 8),
};

/* Not in the file (version 4): unknown. */
static void views_unknown(void *base) {
    tss_alert *pk = &((tss_stream *)base)->det.peak;
    pk->view = TSS_VIEW_NONE;
    pk->shape_score = pk->magnitude_score = pk->level_score = NAN;
    pk->magnitude = pk->level = NAN;
    pk->magnitude_neighbor_seq = 0;
}

/* A span or a MOTIF pair: u64 a, u64 b. */
static const ck_field span_fields[] = {F(tss_span, a, 8), F(tss_span, b, 8)};

static void put_spans(tssi_ckbuf *w, const tss_span *v, size_t n) {
    tssi_ck_put(w, n, 8);
    for (size_t k = 0; k < n; k++)
        put_fields(w, &v[k], span_fields, NFIELDS(span_fields));
}

/* Reads the published spans (motifs 0: sorted by a, each ending inside what was
 * processed) or MOTIF pairs (1: in the order published, each starting before
 * proc_seq), u64 count then each, into s. */
static int get_spans(tssi_ckread *r, tss_stream *s, int motifs, ck_ctx *c) {
    tss_detect *d = &s->det;
    const char *what = motifs ? "motif pair" : "published span";
    const uint64_t n = tssi_ck_get(r, 8);
    if (!tssi_ck_fits(r, n, 16)) {
        snprintf(c->why, sizeof c->why, "bad %s count %llu", motifs ? "motif" : what,
                 (unsigned long long)n);
        return -1;
    }
    for (uint64_t k = 0; k < n; k++) {
        tss_span v;
        if (get_fields(r, &v, span_fields, NFIELDS(span_fields), what, c->why, sizeof c->why))
            return -1;
        if (v.a >= v.b || (motifs ? v.b >= s->proc_seq
                                  : v.b > s->proc_seq || (k && v.a < d->pub[d->npub - 1].a))) {
            snprintf(c->why, sizeof c->why, "bad %s", what);
            return -1;
        }
        if ((motifs ? tss_detect_motif_add(d, v.a, v.b) : tss_detect_publish(d, v.a, v.b)) != 0) {
            snprintf(c->why, sizeof c->why, "out of memory");
            return -1;
        }
    }
    return 0;
}

/* The published spans. */
static void put_published(tssi_ckbuf *w, const void *base) {
    const tss_detect *d = &((const tss_stream *)base)->det;
    put_spans(w, d->pub, d->npub);
}

static int get_published(tssi_ckread *r, void *base, ck_ctx *c) {
    return get_spans(r, base, 0, c);
}

/* The MOTIF pairs published. */
static void put_motifs(tssi_ckbuf *w, const void *base) {
    const tss_detect *d = &((const tss_stream *)base)->det;
    put_spans(w, d->motif, d->nmotif);
}

static int get_motifs(tssi_ckread *r, void *base, ck_ctx *c) {
    return get_spans(r, base, 1, c);
}

/* The staged samples: u64 count, the values, then the timestamps. */
static void put_staged(tssi_ckbuf *w, const void *base) {
    const tss_staging *q = &((const tss_stream *)base)->stage;
    const size_t n = tss_staging_pending(q);
    tssi_ck_put(w, n, 8);
    if (n) { /* (no staging may have been allocated yet) */
        tssi_ck_put_array64(w, q->v + q->head, n);
        tssi_ck_put_array64(w, q->ts + q->head, n);
    }
}

static int get_staged(tssi_ckread *r, void *base, ck_ctx *c) {
    tss_staging *q = &((tss_stream *)base)->stage;
    const uint64_t n = tssi_ck_get(r, 8);
    if (!tssi_ck_fits(r, n, 16) || tss_staging_reserve(q, n, 0) != 0) {
        snprintf(c->why, sizeof c->why, "bad staging size %llu", (unsigned long long)n);
        return -1;
    }
    const unsigned char *b = tssi_ck_take(r, 16 * n); /* values, then timestamps */
    tssi_ckread vr = {.p = b, .n = b ? 8 * n : 0}, tr = {.p = b ? b + 8 * n : NULL, .n = vr.n};
    for (uint64_t k = 0; k < n; k++) {
        const double v = tssi_ck_get_f64(&vr);
        if (!isfinite(v)) {
            snprintf(c->why, sizeof c->why, "non-finite staged sample");
            return -1;
        }
        tss_staging_push(q, v, (int64_t)tssi_ck_get(&tr, 8));
    }
    return 0;
}

/* A gap mark; at counts from the first staged sample. */
static const ck_field mark_fields[] = {
    F(tss_gap_mark, seq, 8),     F(tss_gap_mark, expected, 8),
    F(tss_gap_mark, missing, 8), F(tss_gap_mark, expected_ts, 8),
    F(tss_gap_mark, at, 8),      F_UPTO(tss_gap_mark, reset, 1, 1),
};

/* The gap marks of the staged samples: u64 count, then each. */
static void put_marks(tssi_ckbuf *w, const void *base) {
    const tss_staging *q = &((const tss_stream *)base)->stage;
    tssi_ck_put(w, q->nmark - q->mhead, 8);
    for (size_t k = q->mhead; k < q->nmark; k++) {
        tss_gap_mark m = q->mark[k];
        m.at -= q->head;
        put_fields(w, &m, mark_fields, NFIELDS(mark_fields));
    }
}

/* Marks fall on staged samples, in order; a gap's count is what it skipped, a reset's
 * none. */
static int get_marks(tssi_ckread *r, void *base, ck_ctx *c) {
    tss_staging *q = &((tss_stream *)base)->stage;
    const uint64_t staged = tss_staging_pending(q), n = tssi_ck_get(r, 8);
    if (!tssi_ck_fits(r, n, 41) || n > staged || tss_staging_reserve(q, 0, n) != 0) {
        snprintf(c->why, sizeof c->why, "bad gap mark count");
        return -1;
    }
    for (uint64_t k = 0; k < n; k++) {
        tss_gap_mark m;
        if (get_fields(r, &m, mark_fields, NFIELDS(mark_fields), "gap mark", c->why,
                       sizeof c->why) != 0)
            return -1;
        if (m.at >= staged || (k && m.at <= q->mark[k - 1].at) ||
            (m.reset ? m.missing != 0 : m.expected >= m.seq || m.missing != m.seq - m.expected)) {
            snprintf(c->why, sizeof c->why, "bad gap mark %llu", (unsigned long long)k);
            return -1;
        }
        q->mark[q->nmark++] = m;
    }
    return 0;
}

/* The stream's state, after the head, in the order of the file. */
static const ck_part body[] = {
    PART("sequence state", 0, ingest_fields, put_gaps, get_gaps, NULL),
    PART("counters", 0, counter_fields, NULL, NULL, NULL),
    PART("window", 0, window_fields, put_window, get_window, NULL),
    PART("score history", 0, calib_fields, NULL, get_calib, NULL),
    PART("magnitude history state", 5, robust_fields, put_robust, get_robust, NULL),
    PART("event state", 0, event_fields, NULL, get_event, NULL),
    PART("event peak views", 5, view_fields, NULL, NULL, views_unknown),
    HOOKS("published spans", 0, put_published, get_published, NULL),
    HOOKS("motif pairs", 0, put_motifs, get_motifs, NULL),
    HOOKS("staged samples", 0, put_staged, get_staged, NULL),
    HOOKS("gap marks", 0, put_marks, get_marks, NULL),
};

/* ---- a record: the head, then the body ---------------------------------------- */

void tssi_ckpt_record_put(tssi_ckbuf *w, const tss_stream *s) {
    const tss_staging *q = &s->stage;
    /* 1024: more than the fixed-size fields (about 670 bytes with the longest id) */
    tssi_ck_reserve(w, 1024 + 16 * TSS_GAPS_KEPT + 16 * (size_t)s->ring.fill +
                           2 * TSS_CALIB_HISTORY + 8 * (size_t)s->det.mag.n + 16 * s->det.npub +
                           16 * s->det.nmotif + 16 * tss_staging_pending(q) +
                           41 * (q->nmark - q->mhead)); /* one allocation for the record */
    ck_head h = {.index = s->index,
                 .p = s->cfg,
                 .m = s->p.subsequence,
                 .period = s->period,
                 .next_check = s->next_check};
    memcpy(h.id, s->id, sizeof h.id);
    put_parts(w, &h, head, NFIELDS(head));
    put_parts(w, s, body, NFIELDS(body));
}

int tssi_ckpt_record_get(tssi_ckread *r, size_t idx, uint32_t group, uint32_t version,
                         tss_stream **out, char *err, unsigned errlen) {
    ck_ctx c = {.version = version, .group = group};
    ck_head h;
    tss_stream *s = NULL;
    if (get_parts(r, &h, head, NFIELDS(head), &c) != 0)
        goto fail;
    if (tss_stream_new(h.id, &h.p, &s) != 0) {
        snprintf(c.why, sizeof c.why, "out of memory");
        goto fail;
    }
    if (h.p.subsequence == 0 && h.m)
        tss_stream_set_m(s, h.m, h.period);
    s->next_check = h.next_check;
    if (get_parts(r, s, body, NFIELDS(body), &c) != 0)
        goto fail;
    if (r->bad) {
        snprintf(c.why, sizeof c.why, "truncated");
        goto fail;
    }
    s->index = h.index; /* the creation order, until tss_restore_finish registers it */
    *out = s;
    return 0;
fail:
    tssi_say(err, errlen, "checkpoint: stream %zu: %s", idx, c.why);
    tss_stream_destroy(&s);
    return -1;
}
