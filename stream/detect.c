/* SPDX-License-Identifier: Apache-2.0 */
/* detect.c - a stream's anomaly events from its calibrated scores (detect.h). */
#include "detect.h"

#include "stream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void tss_detect_reset(tss_detect *d, const tss_params *p, uint32_t m) {
    tss_calib_init(&d->cal, m ? m : 1, p->threshold);
    tss_robust_free(&d->mag);
    d->last_value = NAN;
    d->open = 0;
    d->below = 0;
}

void tss_detect_free(tss_detect *d) {
    tss_robust_free(&d->mag);
    free(d->pub);
    free(d->motif);
    d->pub = d->motif = NULL;
    d->npub = d->cappub = d->nmotif = d->capmotif = 0;
}

uint64_t tss_detect_candidates(const tss_stream *s, uint64_t fill) {
    const uint64_t m = s->p.subsequence, excl = s->p.excl;
    if (fill > s->p.window)
        fill = s->p.window;
    return fill >= m + excl ? fill - m - excl + 1 : 0;
}

double tss_detect_value(const tss_stream *s, double raw, uint64_t fill) {
    return tss_calib_comparable(&s->det.cal, raw, tss_detect_candidates(s, fill),
                                tss_detect_candidates(s, s->p.window));
}

/* Whether subsequence sc reaches `level` (threshold opens an event, threshold_end keeps
 * one open): its score, or with a numeric range its raw shape distance against the
 * range. */
static int passes(const tss_stream *s, const tss_scored *sc, double level) {
    if (!isnan(s->p.range))
        return sc->raw >= s->p.range;
    return sc->score >= level;
}

/* The alert of one subsequence (kind ANOMALY or LEFT_DISCORD). */
static tss_alert subsequence_alert(const tss_stream *s, tss_alert_kind kind, const tss_scored *sc) {
    const uint32_t m = s->p.subsequence;
    const int by_range = !isnan(s->p.range);
    return (tss_alert){
        .kind = kind,
        .start_seq = sc->start,
        .length = m,
        .distance = sc->raw,
        .neighbor_seq = sc->neighbor,
        .threshold = by_range ? s->p.range : s->p.threshold,
        .score = by_range ? sc->shape_score : sc->score,
        .event_start_seq = sc->start,
        .event_end_seq = sc->start + m,
        .detected_seq = sc->start + m - 1,
        .tail = TSS_TAIL_FAR,
        .view = sc->view,
        .shape_score = sc->shape_score,
        .magnitude_score = sc->magnitude_score,
        .level_score = sc->level_score,
        .magnitude = sc->magnitude,
        .magnitude_neighbor_seq = sc->magnitude_neighbor,
        .level = sc->level,
    };
}

/* Queues the open event's ANOMALY_END (closed at sample `detected`) and records its
 * extent as published. */
static void end_event(tss_stream *s, uint64_t detected) {
    tss_detect *d = &s->det;
    tss_alert a = d->peak;
    a.kind = TSS_ALERT_ANOMALY_END;
    a.event_start_seq = d->first;
    a.event_end_seq = d->last + s->p.subsequence;
    a.detected_seq = detected;
    a.tail = d->tail;
    tss_stream_alert(s, &a);
    (void)tss_detect_publish(d, a.event_start_seq, a.event_end_seq);
    d->open = 0;
}

void tss_detect_close(tss_stream *s, uint64_t detected) {
    if (s->det.open)
        end_event(s, detected);
}

/* The scores of sc that events do not follow: the shape view's (its comparable value v
 * against the history before it) and the level's; with a numeric range the shape
 * score is also sc's score. */
static void fill_scores(const tss_stream *s, tss_scored *sc, double v) {
    sc->shape_score = tss_calib_score(&s->det.cal, v).score;
    sc->level_score = tss_level_score(sc->level);
    if (!isnan(s->p.range))
        sc->score = sc->shape_score;
}

void tss_detect_step(tss_stream *s, tss_scored *sc, uint64_t fill, int armed, int every) {
    tss_detect *d = &s->det;
    const double v = tss_detect_value(s, sc->raw, fill);
    d->last_value = isnan(s->p.range) ? sc->magnitude_score : v;
    sc->view = isnan(s->p.range) ? TSS_VIEW_MAGNITUDE : TSS_VIEW_SHAPE;
    sc->score = isnan(s->p.range) ? sc->magnitude_score : NAN;
    sc->shape_score = sc->level_score = NAN;
    int filled = every;
    if (every)
        fill_scores(s, sc, v);
    if (d->open) {
        /* the peak is the event's highest subsequence among those that keep it open,
         * so that it lies within the extent ANOMALY_END reports */
        if (passes(s, sc, s->p.threshold_end)) {
            if (isnan(s->p.range) ? sc->score > d->peak.score : sc->raw > d->peak.distance) {
                if (!filled)
                    fill_scores(s, sc, v), filled = 1;
                d->peak = subsequence_alert(s, TSS_ALERT_ANOMALY, sc);
            }
            d->last = sc->start;
            d->below = 0;
        } else if (++d->below >= s->p.subsequence) {
            end_event(s, sc->start + s->p.subsequence - 1);
        }
    } else if (armed && passes(s, sc, s->p.threshold)) {
        if (!filled)
            fill_scores(s, sc, v), filled = 1;
        tss_alert a = subsequence_alert(s, TSS_ALERT_ANOMALY, sc);
        tss_stream_alert(s, &a);
        d->open = 1;
        d->events++;
        d->tail = a.tail;
        d->first = d->last = sc->start;
        d->below = 0;
        d->peak = a;
    }
    if (s->p.left_discord && armed && passes(s, sc, s->p.threshold)) {
        if (!filled)
            fill_scores(s, sc, v), filled = 1;
        tss_alert a = subsequence_alert(s, TSS_ALERT_LEFT_DISCORD, sc);
        tss_stream_alert(s, &a);
    }
    tss_calib_add(&d->cal, v);
}

/* The first published span whose start is >= a (binary search). */
static size_t lower(const tss_detect *d, uint64_t a) {
    size_t lo = 0, hi = d->npub;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->pub[mid].a < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int tss_detect_overlaps(const tss_detect *d, uint64_t a, uint64_t b) {
    if (d->open && b > d->first)
        return 1;
    /* spans starting before b that end after a; spans are at most a window long, but
     * may nest, so look back over every span that starts before b */
    for (size_t k = lower(d, b); k-- > 0;)
        if (d->pub[k].b > a)
            return 1;
    return 0;
}

int tss_detect_publish(tss_detect *d, uint64_t a, uint64_t b) {
    if (d->npub == d->cappub) {
        size_t cap = d->cappub ? 2 * d->cappub : 16;
        tss_span *p = realloc(d->pub, cap * sizeof *p);
        if (!p)
            return -1;
        d->pub = p;
        d->cappub = cap;
    }
    size_t k = lower(d, a);
    memmove(d->pub + k + 1, d->pub + k, (d->npub - k) * sizeof *d->pub);
    d->pub[k] = (tss_span){a, b};
    d->npub++;
    return 0;
}

void tss_detect_prune(tss_detect *d, uint64_t lo, uint32_t excl) {
    size_t kept = 0;
    for (size_t k = 0; k < d->npub; k++)
        if (d->pub[k].b > lo)
            d->pub[kept++] = d->pub[k];
    d->npub = kept;
    kept = 0;
    for (size_t k = 0; k < d->nmotif; k++) /* b is the later member */
        if (d->motif[k].b + excl > lo)
            d->motif[kept++] = d->motif[k];
    d->nmotif = kept;
}

void tss_detect_forget_spans(tss_detect *d) {
    d->npub = 0;
    d->nmotif = 0;
}

/* Whether x and y are within excl of each other. */
static int near(uint64_t x, uint64_t y, uint32_t excl) {
    return (x > y ? x - y : y - x) < excl;
}

int tss_detect_motif_seen(const tss_detect *d, uint64_t a, uint64_t b, uint32_t excl) {
    for (size_t k = 0; k < d->nmotif; k++) {
        const tss_span *p = &d->motif[k];
        if (near(a, p->a, excl) || near(a, p->b, excl) || near(b, p->a, excl) ||
            near(b, p->b, excl))
            return 1;
    }
    return 0;
}

int tss_detect_motif_add(tss_detect *d, uint64_t a, uint64_t b) {
    if (d->nmotif == d->capmotif) {
        size_t cap = d->capmotif ? 2 * d->capmotif : 8;
        tss_span *p = realloc(d->motif, cap * sizeof *p);
        if (!p)
            return -1;
        d->motif = p;
        d->capmotif = cap;
    }
    d->motif[d->nmotif++] = (tss_span){a < b ? a : b, a < b ? b : a};
    return 0;
}
