/* SPDX-License-Identifier: Apache-2.0 */
/* detect.h - a stream's anomaly events (DESIGN 5.3 rev. 3): each completed
 * subsequence's views (engine.h tss_scored: shape, magnitude, level) get their scores,
 * and one of them, the score the events follow, becomes events.
 *
 * The scores: shape, the z-normalised distance calibrated against the stream's raw
 * scores (calib.h); magnitude, the plain Euclidean distance against its own recent
 * values (robust.h, in the stream's units: the rule chosen on all development corpora,
 * docs/detection.md "Views"); level, 1 - 2 t4(level / TSS_LEVEL_UNIT) (level.h; 0
 * inside the range). The events follow the magnitude score: the views were combined
 * by maximum, Fisher, Bonferroni and weighted sums on the development corpora, and none
 * did better than magnitude alone; the others are carried in every alert and score line.
 * With a numeric `range` the shape view's raw distance decides instead (>= range opens
 * and keeps an event open), as before the views.
 *
 * An event opens when a subsequence's score reaches the stream's threshold, once the
 * window holds its warm-up and the score has a history: one ANOMALY alert, at once (in
 * the round that processes the subsequence's last sample), carrying that subsequence,
 * the view that opened it and each view's score. While it is open nothing more is
 * published for it; it stays open while scores reach threshold_end, and closes after m
 * subsequences in a row score below it (no score: below): one ANOMALY_END alert with the
 * event's extent [first start, last start scoring >= threshold_end + m) and its peak
 * (the highest score; the earliest of equal ones). Events of a stream never overlap.
 * LEFT_DISCORD (opt-in) is one alert per subsequence whose score reaches the
 * threshold.
 *
 * The stream also remembers the spans it published (closed events, DISCORDs, pruned
 * to its window) so that a windowed pass publishes only discords that overlap none of
 * them nor the open event, and the MOTIF pairs it published, so that a MOTIF comes
 * only for a pair that shares no member (within excl) with any of them (passes.c). */
#ifndef TSS_DETECT_H
#define TSS_DETECT_H

#include "calib.h"
#include "robust.h"
#include "engine.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tss_stream tss_stream;

/* A span of sample sequence numbers [a, b). */
typedef struct {
    uint64_t a, b;
} tss_span;

typedef struct {
    tss_calib cal;  /* the shape view's raw scores */
    tss_robust mag; /* the magnitude view's recent distances (robust.h) */
    /* the last completed subsequence's score as events follow it: its magnitude score,
     * or with a numeric range its shape view's comparable raw score (scored when read,
     * tss_calib_score); NAN: none */
    double last_value;
    uint64_t events; /* events opened */
    /* the open event */
    int open;
    int tail;             /* tss_tail of its first subsequence */
    uint64_t first, last; /* its first start, and the last start scoring >= threshold_end */
    uint32_t below;       /* subsequences since `last` */
    tss_alert peak;       /* its highest-scoring subsequence (as an ANOMALY alert) */
    tss_span *pub;        /* published spans, sorted by a, disjoint or not */
    size_t npub, cappub;
    tss_span *motif; /* published MOTIF pairs (a, b), in the order published */
    size_t nmotif, capmotif;
} tss_detect;

/* Starts over for subsequence length m (0: not known yet): empty score histories, no
 * event; the published spans are kept. */
void tss_detect_reset(tss_detect *d, const tss_params *p, uint32_t m);
void tss_detect_free(tss_detect *d);

/* The left candidates (lags excl .. fill - m) of a subsequence completed when the
 * window held fill samples (at most W), 0 if none; fill = W gives a full window's. */
uint64_t tss_detect_candidates(const tss_stream *s, uint64_t fill);
/* Raw score raw of a subsequence completed when the window held fill samples, as the
 * score history compares it (tss_calib_comparable). */
double tss_detect_value(const tss_stream *s, double raw, uint64_t fill);

/* One completed subsequence of s, its views in sc (start, m, raw finite, neighbor,
 * magnitude, magnitude_neighbor, magnitude_score, level), completed when the window held
 * fill samples; armed when the window holds its warm-up. Fills in sc's score and view,
 * and its shape_score (the raw score's comparable value against the history before it)
 * and level_score when `every` is set or an alert carries them (else NAN: they cost a
 * rank and a pow, and only alerts and on_score read them); queues ANOMALY, ANOMALY_END
 * and LEFT_DISCORD alerts on s (their timestamps filled in by the caller's round); then
 * adds the comparable value to the history. O(1) while no event is open. */
void tss_detect_step(tss_stream *s, tss_scored *sc, uint64_t fill, int armed, int every);

/* Closes the open event, if any, at sample `detected` (a restart of the window:
 * nothing is compared across it), queuing its ANOMALY_END on s. */
void tss_detect_close(tss_stream *s, uint64_t detected);

/* Whether [a, b) overlaps a published span or the open event. O(log n + overlaps). */
int tss_detect_overlaps(const tss_detect *d, uint64_t a, uint64_t b);
/* Records [a, b) as published; 0, or -1 when out of memory (then not recorded). */
int tss_detect_publish(tss_detect *d, uint64_t a, uint64_t b);
/* Forgets the spans that end at or before lo (they left the window), and the MOTIF
 * pairs no subsequence starting at lo or later can share a member with (both starts
 * at or before lo - excl). */
void tss_detect_prune(tss_detect *d, uint64_t lo, uint32_t excl);
/* Whether the pair (a, b) shares a member, within excl, with a published MOTIF pair. */
int tss_detect_motif_seen(const tss_detect *d, uint64_t a, uint64_t b, uint32_t excl);
/* Records (a, b) as a published MOTIF pair; 0, or -1 when out of memory. */
int tss_detect_motif_add(tss_detect *d, uint64_t a, uint64_t b);
/* Forgets every published span and MOTIF pair (a run that starts over renumbers its
 * samples). */
void tss_detect_forget_spans(tss_detect *d);

#endif
