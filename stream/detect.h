/* SPDX-License-Identifier: Apache-2.0 */
/* detect.h - a stream's anomaly events (DESIGN 5.3): each completed subsequence's raw
 * score (its exact left-NN distance) becomes a calibrated score (calib.h), and the
 * scores become events.
 *
 * An event opens when a subsequence's score reaches the stream's threshold, once the
 * window holds its warm-up (tss_params_warm) and the score history is long enough:
 * one ANOMALY alert, at once (in the round that processes the subsequence's last
 * sample), carrying that subsequence. While it is open nothing more is published for
 * it; it stays open while scores reach threshold_end, and closes after m subsequences
 * in a row score below it: one ANOMALY_END alert with the event's extent [first start,
 * last start scoring >= threshold_end + m) and its peak (the highest score; the
 * earliest of equal ones). Events of a stream never overlap. With a numeric `range`
 * the raw distance decides instead (>= range opens and keeps an event open).
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
#include "engine.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tss_stream tss_stream;

/* A span of sample sequence numbers [a, b). */
typedef struct {
    uint64_t a, b;
} tss_span;

typedef struct {
    tss_calib cal;
    double last_value; /* the last completed subsequence's comparable raw score (NAN: none) */
    uint64_t events;   /* events opened */
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

/* Starts over for subsequence length m (0: not known yet): empty score history, no
 * event; the published spans are kept. */
void tss_detect_reset(tss_detect *d, const tss_params *p, uint32_t m);
void tss_detect_free(tss_detect *d);

/* The left candidates (lags excl .. fill - m) of a subsequence completed when the
 * window held fill samples (at most W), 0 if none; fill = W gives a full window's. */
uint64_t tss_detect_candidates(const tss_stream *s, uint64_t fill);
/* Raw score raw of a subsequence completed when the window held fill samples, as the
 * score history compares it (tss_calib_comparable). */
double tss_detect_value(const tss_stream *s, double raw, uint64_t fill);

/* One completed subsequence of s: starting at `start`, raw score raw (finite) to its
 * neighbour at neighbor, completed when the window held fill samples; armed when the
 * window holds its warm-up. Queues ANOMALY, ANOMALY_END and LEFT_DISCORD alerts on s
 * (their timestamps filled in by the caller's round; they carry raw, and the score of
 * its comparable value), then adds that value to the history. O(1) while no event is
 * open. */
void tss_detect_step(tss_stream *s, uint64_t start, double raw, uint64_t neighbor, uint64_t fill,
                     int armed);

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
