/* SPDX-License-Identifier: Apache-2.0 */
/* score_ref.h - the calibrated score and the events of DESIGN 5.3 straight from their
 * definitions (stream/calib.h, stream/detect.h), in plain loops: the history is an
 * array of raw scores, sorted afresh for every query. Slow and meant to be obviously
 * correct; stream/calib.c and stream/detect.c are tested against it. */
#ifndef TSM_SCORE_REF_H
#define TSM_SCORE_REF_H

#include <stddef.h>
#include <stdint.h>

/* The score of raw against the raw scores hist[0..n) (the last ones of the stream, at
 * most TSS_CALIB_HISTORY) for subsequence length m: 1 - min(1, 2 min(p_far, p_near)),
 * 0 with fewer than TSS_CALIB_MIN. *tail (may be NULL): 1 FAR, 2 NEAR, 0 none. far_only:
 * the FAR side alone (1 - min(1, 2 p_far)). */
double ref_score(const double *hist, size_t n, double raw, uint32_t m, int far_only, int *tail);

/* The raw-score history of a stream: the last TSS_CALIB_HISTORY finite raw scores. */
typedef struct {
    double v[1000];
    size_t n, head;
} ref_history;

void ref_history_add(ref_history *h, double raw);
/* The history in arrival order into out (room for 1000); returns its length. */
size_t ref_history_get(const ref_history *h, double *out);

/* A nearest-neighbour distance raw found among n candidates, as the score compares it
 * with a history of distances found among n_full (a full window's left candidates,
 * W - m - excl + 1): raw (n / n_full)^(1 / (TSS_CALIB_DIM m)) for 1 <= n < n_full,
 * unless that makes an exact repeat of a raw that is not one; else raw. */
double ref_comparable(double raw, uint32_t m, double n, double n_full);

/* A magnitude view's history (stream/robust.h): every finite value in arrival order,
 * and how many there were at the last refresh (0: none yet). */
typedef struct {
    double *v;
    size_t n, cap, refreshed;
} ref_robust;

/* Adds v (a non-finite one is ignored); refreshes when TSS_ROBUST_MIN values are first
 * held and every TSS_ROBUST_REFRESH values after. */
void ref_robust_add(ref_robust *r, double v);
/* 1 - t4((v - med) / max(1.4826 MAD, unit)), med and MAD by sorting the last
 * TSS_ROBUST_HISTORY values as of the last refresh; NAN before one or for a v that is not
 * finite. */
double ref_robust_score(const ref_robust *r, double v, double unit);
void ref_robust_free(ref_robust *r);

/* One event model (detect.h), fed the views of a stream's subsequences: the shape
 * view's raw score (calibrated here against its history) and the magnitude view's score
 * (given: robust.h, tested against its own definition), which the events follow. */
typedef struct {
    uint32_t m, excl, window;
    double threshold, threshold_end, range; /* range NAN: scores decide */
    int left_discord;
    ref_history hist;
    int open, tail;
    uint64_t first, last, below;
    uint64_t peak_start, peak_neighbor;
    double peak_raw, peak_score, peak_shape;
} ref_events;

/* What one step produced: up to three alerts (LEFT_DISCORD, ANOMALY, ANOMALY_END). */
typedef struct {
    int kind; /* tss_alert_kind values: 2 LEFT_DISCORD, 5 ANOMALY, 6 ANOMALY_END */
    uint64_t start, neighbor, event_start, event_end, detected;
    double raw, score, shape_score;
    int tail;
} ref_alert;

/* One completed subsequence (start, raw, neighbor; mag_score: its magnitude score, NAN
 * for none; fill: the window's samples when it completed; armed: the window holds its
 * warm-up). Writes the alerts it produces to out (room for 3) in the order the engine
 * queues them; returns their count. Then adds raw's comparable value to the history.
 * The event score is mag_score, or with a numeric range the raw score decides and the
 * alerts carry the shape score. */
size_t ref_events_step(ref_events *ev, uint64_t start, double raw, uint64_t neighbor,
                       double mag_score, uint64_t fill, int armed, ref_alert *out);
/* A restart of the window at sample `detected`: closes an open event. Returns 0 or 1
 * alert in out. */
size_t ref_events_close(ref_events *ev, uint64_t detected, ref_alert *out);

#endif
