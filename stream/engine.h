/* SPDX-License-Identifier: Apache-2.0 */
/* engine.h - the detection engine of tsmined: every stream's window, its online
 * left-NN score and its windowed discord and motif passes (DESIGN.md 5.1, 5.3).
 * No sockets, no protobuf: the daemon decodes messages and calls in; unit tests drive
 * it directly. Its checkpoints (save, load, the incremental walk) are declared in
 * engine_checkpoint.h.
 *
 * Data flow. tss_engine_ingest validates a run of samples of one stream and appends
 * it to that stream's staging. tss_engine_tick then, for all streams at once (batched
 * kernel calls on both backends, never one per stream; stream/arena.h holds every
 * window where the kernels read it):
 *   0. chooses the subsequence length of every stream with `subsequence = auto` once
 *      its first `warmup` samples are staged (their dominant period, kernels/period.h);
 *   1. appends the samples to the stream's mirrored ring (each sample at p and p + W,
 *      so any window is one contiguous array), updates the statistics and the QT row
 *      of every subsequence completed since the last tick and scores it by its left
 *      nearest neighbour within the window: that raw score becomes a calibrated score
 *      and the scores become events (detect.h, calib.h: ANOMALY when an event opens,
 *      ANOMALY_END when it closes; LEFT_DISCORD per subsequence when asked for), once
 *      the window holds its warm-up;
 *   2. for every stream that received hop samples since its last pass (and holds its
 *      warm-up): runs PD3 over its window for the distance that scores the threshold
 *      (DISCORD for each top discord that overlaps nothing the stream published) and
 *      MK (MOTIF when the top pair shares no member with a pair published before).
 *
 * Alert order. The tick works in rounds (tick.c): a round takes from each stream
 * the samples up to its next pass point, scores them (step 1), then runs the passes of
 * the streams that reached a pass point (step 2). The online alerts of a round (GAP,
 * ANOMALY, ANOMALY_END, LEFT_DISCORD) reach the callback BEFORE that round's passes
 * run (the passes take most of a tick: the low-latency alert does not wait for them),
 * then the DISCORD and MOTIF alerts of the round's passes; each group in stream
 * creation order. So each stream's alerts come in the order of the samples that
 * produced them (a GAP before the samples after it; an ANOMALY or LEFT_DISCORD when the
 * sample completing its subsequence is processed; a pass's DISCORDs, best first, then
 * its MOTIF, right after the sample of its pass point),
 * and that per-stream order does not depend on how samples were grouped into batches
 * and ticks, nor on the thread count. The interleaving of different streams does
 * depend on the grouping (it is deterministic for a given sequence of calls; with
 * overlap_passes also on when the passes finish). With overlap_passes, an online alert
 * is not held back for the passes in flight of its stream either (DESIGN 5.3: it is
 * published as soon as its subsequence completes), so a pass's DISCORD and MOTIF
 * alerts may come after online alerts of later samples; each kind's order per stream,
 * the alerts themselves, and everything else above, hold all the same.
 *
 * Sequence numbers: a batch must start at the stream's next expected sequence number.
 * A batch starting later opens a gap: a GAP alert is emitted and the window restarts
 * after it (nothing is compared across a gap). A batch starting earlier is rejected
 * (DUPLICATE, or OUT_OF_ORDER when it falls inside a gap seen before); one starting
 * more than limits.max_seq_jump later is SEQ_JUMP, one with a timestamp more than
 * limits.max_ahead_s ahead of the clock FUTURE_TIME, so that one bad batch cannot
 * move a stream where its sender's next real ones are all refused. A sender that
 * restarts its numbering says so with a newer epoch (tss_engine_ingest_epoch: a RESET
 * alert, the window starts over); an operator can do the same for a sender that cannot
 * (tss_engine_reset_stream) or remove the stream (tss_engine_delete_stream).
 *
 * Stream lifetime: a stream is created by its first accepted batch and lives until it
 * is idle for limits.idle_expiry_s, deleted, or evicted to make room for a new one
 * (limits.when_full); an event still open then ends first (its ANOMALY_END reaches
 * the callback at the removal). A new stream's window memory is taken when its samples
 * first enter the window (after an automatic m's warm-up), not at creation. */
#ifndef TSS_ENGINE_H
#define TSS_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "params.h"
#include "tsm.h" /* kernels/: tsm_backend */

typedef struct tss_engine tss_engine;

/* Alert kinds; the values equal tsmine.v1.AlertKind. */
typedef enum {
    TSS_ALERT_DISCORD = 1,
    TSS_ALERT_LEFT_DISCORD = 2,
    TSS_ALERT_MOTIF = 3,
    TSS_ALERT_GAP = 4,
    TSS_ALERT_ANOMALY = 5,
    TSS_ALERT_ANOMALY_END = 6,
    TSS_ALERT_RESET = 7,
} tss_alert_kind;
#define TSS_ALERT_KINDS 8 /* array size for counters indexed by kind */

/* The views of DESIGN 5.3 rev. 3; the values equal tsmine.v1.View. */
typedef enum {
    TSS_VIEW_NONE = 0,
    TSS_VIEW_SHAPE = 1,     /* the z-normalised left-NN distance (and DISCORD's two-sided one) */
    TSS_VIEW_MAGNITUDE = 2, /* the plain Euclidean left-NN distance */
    TSS_VIEW_LEVEL = 3,     /* beyond the range of the window before the subsequence */
} tss_view;

/* One alert (DESIGN 5.3; proto/tsmine.proto's Alert says what each kind carries). */
typedef struct {
    tss_alert_kind kind;
    uint64_t start_seq;         /* first sample of the subsequence (or of the gap) */
    int64_t start_timestamp_ns; /* its timestamp (GAP: the expected one, 0 if unknown) */
    uint32_t length;            /* m (GAP: samples missing) */
    double distance;            /* raw distance to the neighbour (MOTIF: the pair's; GAP: 0) */
    uint64_t neighbor_seq;      /* the neighbour's (or other motif member's) start */
    double threshold;           /* the score threshold, or the configured range (MOTIF, GAP: 0) */
    double score;               /* calibrated score in [0, 1]; NAN for MOTIF and GAP */
    uint64_t event_start_seq;   /* ANOMALY, ANOMALY_END: the event's extent */
    uint64_t event_end_seq;
    uint64_t detected_seq; /* the sample whose processing produced the alert */
    int tail;              /* tss_tail (calib.h): FAR, NEAR, or 0 */
    uint64_t seq;          /* set when the engine hands it over: the stream's alerts so far, of
                            * every kind, this one included (1, 2, ...; kept across checkpoints) */
    /* The views (DESIGN 5.3 rev. 3), meaningful when view is not TSS_VIEW_NONE: the view
     * whose score decided (ANOMALY, ANOMALY_END, LEFT_DISCORD: the event's; DISCORD:
     * SHAPE), each view's score in [0, 1] (NAN: not computed for this alert), the
     * magnitude view's distance and neighbour, and the level view's value. */
    tss_view view;
    double shape_score, magnitude_score, level_score;
    double magnitude;
    uint64_t magnitude_neighbor_seq;
    double level;
} tss_alert;

/* One scored subsequence with its views (DESIGN 5.3 rev. 3), as its stream's events
 * judge it and tss_engine_options.on_score receives it: the shape view (the
 * z-normalised left-NN distance), the magnitude view (the plain Euclidean left-NN
 * distance, online.h) and the level view (level.h), each view's score, and the score
 * the events follow (detect.h: the magnitude view's; with a numeric `range`, the shape
 * view's raw distance decides instead). */
typedef struct {
    uint64_t start;    /* the subsequence's first sample */
    uint32_t m;        /* its length */
    double raw;        /* shape: z-normalised left-NN distance */
    uint64_t neighbor; /* its neighbour's start */
    double magnitude;  /* magnitude: plain Euclidean left-NN distance */
    uint64_t magnitude_neighbor;
    double level; /* level: beyond the history's range, in its widths */
    /* each view's score: shape calibrated against its raw scores (calib.h; 0 before its
     * history is long enough), magnitude against its own recent values (robust.h; NAN
     * until that history holds TSS_ROBUST_MIN), level as level_score (detect.h) */
    double shape_score, magnitude_score, level_score;
    double score;  /* the score the events follow: magnitude_score (NAN: none yet) */
    tss_view view; /* the view score comes from */
} tss_scored;

/* Receives each alert; stream_id stays valid only during the call. */
typedef void (*tss_alert_fn)(void *user, const char *stream_id, const tss_alert *alert);

/* Gives the parameters of a stream id the engine sees for the first time (the
 * daemon resolves its configuration's overrides here). Returns 0, or -1 to refuse
 * the stream. */
typedef int (*tss_params_fn)(void *user, const char *stream_id, tss_params *out);

/* Why ingest refused a batch. Each has a stable name (tss_reject_name) that the daemon
 * uses as the label of its per-reason counter. */
typedef enum {
    TSS_OK = 0,
    TSS_REJECT_BAD_ID,           /* empty, longer than TSS_MAX_ID, or not printable */
    TSS_REJECT_EMPTY,            /* no values */
    TSS_REJECT_TOO_LARGE,        /* more values than the window */
    TSS_REJECT_NONFINITE,        /* a NaN or +-Inf value */
    TSS_REJECT_TIMESTAMPS,       /* timestamps given but not one per value, or period < 0 */
    TSS_REJECT_TIME_BACKWARDS,   /* timestamps decrease (within the batch or vs the last) */
    TSS_REJECT_DUPLICATE,        /* starts before the next expected sequence number */
    TSS_REJECT_OUT_OF_ORDER,     /* arrives late into a gap that was already declared */
    TSS_REJECT_TOO_MANY_STREAMS, /* a new stream beyond max_streams */
    TSS_REJECT_STREAM_REFUSED,   /* the params callback refused it, or its params are invalid */
    TSS_REJECT_SEQ_JUMP,         /* starts more than max_seq_jump past the next expected one */
    TSS_REJECT_FUTURE_TIME,      /* a timestamp more than max_ahead_s ahead of the clock */
    TSS_REJECT_STALE_EPOCH,      /* an epoch older than the stream's */
    TSS_REJECT_COUNT
} tss_reject;
const char *tss_reject_name(tss_reject r);

#define TSS_MAX_ID              255
#define TSS_MAX_STREAMS_DEFAULT 10000

/* What a full stream table does with a new stream id (tss_limits.when_full). */
typedef enum {
    TSS_FULL_REFUSE = 0, /* refuse it (too_many_streams) */
    TSS_FULL_EVICT_IDLE, /* remove the longest idle stream, if idle evict_min_idle_s or more:
                          * first among those that never delivered their warm-up */
} tss_when_full;

/* Bounds on what one sender can do to the stream table (issue 17); 0 turns each off.
 * Idle: no batch accepted; measured on the engine's clock (tss_engine_options.now). */
typedef struct {
    uint64_t max_seq_jump; /* a batch may start at most this far past the next expected
                            * sequence number (further: seq_jump) */
    double max_ahead_s;    /* timestamps at most this far ahead of the wall clock */
    double idle_expiry_s;  /* a stream idle this long is removed (its state forgotten) */
    tss_when_full when_full;
    double evict_min_idle_s;
} tss_limits;

typedef struct {
    tsm_backend backend;  /* AUTO resolves as tsm_ctx_new does */
    int threads;          /* CPU threads for the tick; 0 = OpenMP default */
    uint32_t max_streams; /* streams the engine accepts (0: TSS_MAX_STREAMS_DEFAULT) */
    tss_alert_fn on_alert;
    /* Called after each burst of on_alert calls (a round's alerts, those of joined
     * passes), so that a caller that batches alerts hands them on without waiting for
     * the end of the tick; NULL: none. */
    void (*on_alerts_end)(void *user);
    tss_params_fn params_for;
    /* Receives every scored subsequence (tss_scored: its views and calibrated score), in
     * the order of the samples; NULL: none (the score of a subsequence is then only
     * computed where an alert needs it). For diagnosis (`tsmine detect --scores`); called
     * on the engine's thread. */
    void (*on_score)(void *user, const char *stream_id, const tss_scored *sc);
    void *user; /* passed to the callbacks */
    /* CUDA backend: 1 runs the windowed passes on a thread of their own (own device
     * stream) while the engine goes on; a round never waits for them: it joins them
     * once they are done (hands over their DISCORD and MOTIF alerts) and then launches
     * the passes of the streams that reached a pass point meanwhile, at most
     * TSS_PASS_BATCH_S worth of them per launch (measured cost per subsequence pair). Those
     * streams take no samples until their passes are launched. A stream's online
     * alerts are not held for its passes in flight (top of this file, "Alert order").
     * A tick never waits for the passes: it may return with passes in flight or
     * waiting, and later ticks move them on (the caller keeps ticking while samples
     * are staged); tss_engine_flush finishes them all; save, recalibrate and reparam
     * wait only for the launch in flight. 0, and 1 on the CPU backend: the passes run
     * within the tick, in launches of the same bounded size (on the CPU a thread of
     * their own would share the cores with the rounds: measured 22% slower).
     * TSS_OVERLAP_ALWAYS: the thread on every backend (the tests of this path where
     * no GPU is). */
    int overlap_passes;
    /* Seconds a tick may run before it returns with samples still staged (0: no bound);
     * the next tick goes on from there, so the caller's loop is never held much longer
     * than this plus a launch of passes (TSS_PASS_BATCH_S), whatever arrived. */
    double tick_budget_s;
    tss_limits limits; /* tss_engine_set_limits changes them later */
    /* The clocks (NULL: CLOCK_MONOTONIC and CLOCK_REALTIME): seconds for idleness,
     * nanoseconds since the epoch for max_ahead_s. Tests drive them. */
    double (*now)(void *user);
    int64_t (*wall_ns)(void *user);
} tss_engine_options;

#define TSS_OVERLAP_ALWAYS 2 /* tss_engine_options.overlap_passes on every backend */

/* Creates an engine; err (size errlen) says why on failure (e.g. CUDA requested but
 * unavailable). */
int tss_engine_new(const tss_engine_options *opt, tss_engine **out, char *err, unsigned errlen);
void tss_engine_destroy(tss_engine **self_p);
tsm_backend tss_engine_backend(const tss_engine *e);

/* The longest a launch of passes should take (its windows are chosen by their
 * measured cost): what a join waits for at most, about. */
#define TSS_PASS_BATCH_S 0.2

/* Share of the GPU's multiprocessors the overlapped passes may use; the others are
 * always free for the rounds, whose LEFT_DISCORD latency would otherwise be that of
 * the pass kernels resident beside them (tsm_ctx_set_sm_share). */
#define TSS_PASS_SM_SHARE 0.66
/* The multiprocessors the overlapped passes are confined to, or 0 with why (static or
 * the engine's text) saying why they are not. */
int tss_engine_pass_sms(const tss_engine *e, const char **why);

/* Validates and appends n samples of stream_id starting at sequence number first_seq.
 * timestamps_ns: one per value, or NULL to use first_ts_ns + k * period_ns. O(n) plus
 * a hash lookup; no distances are computed here. A refused batch changes nothing. */
tss_reject tss_engine_ingest(tss_engine *e, const char *stream_id, uint64_t first_seq,
                             const int64_t *timestamps_ns, int64_t first_ts_ns, int64_t period_ns,
                             const double *values, size_t n);
/* The same for a sender that numbers its runs (SampleBatch.epoch, e.g. its boot count
 * or boot time): a batch of a newer epoch than the stream's restarts the stream there,
 * whatever its sequence numbers and timestamps (a RESET alert, then a new window at
 * first_seq; the score history and m stay); one of an older epoch is stale_epoch.
 * tss_engine_ingest is epoch 0. */
tss_reject tss_engine_ingest_epoch(tss_engine *e, const char *stream_id, uint64_t epoch,
                                   uint64_t first_seq, const int64_t *timestamps_ns,
                                   int64_t first_ts_ns, int64_t period_ns, const double *values,
                                   size_t n);

/* Makes stream id's next batch start it over, as a newer epoch would (an operator's
 * way out for a sender that restarted its numbering without an epoch): any sequence
 * number and timestamp is then accepted, and a RESET alert comes before its samples.
 * 0, or -1 for an unknown id. */
int tss_engine_reset_stream(tss_engine *e, const char *stream_id);
/* Removes stream id and everything it holds (samples staged and not processed are
 * dropped and counted: samples_dropped); a later batch creates it afresh. Waits for
 * its passes in flight. 0, or -1 for an unknown id. */
int tss_engine_delete_stream(tss_engine *e, const char *stream_id);
/* Bounds the host memory the CPU backend's window storage grows into: a growth that
 * does not fit in room(user) bytes fails like any allocation (the passes concerned are
 * skipped and counted, the tick reports it). The daemon passes what its address-space
 * limit leaves (daemon.c, tsd_daemon_as_room), so that libzmq, which aborts when an
 * allocation fails, keeps its share. NULL: no bound. Call before the first batch. */
void tss_engine_set_room(tss_engine *e, uint64_t (*room)(void *user), void *user);
/* New limits (a reload); they apply from the next batch and tick. */
void tss_engine_set_limits(tss_engine *e, const tss_limits *limits);

/* Processes everything ingested since the last tick (see the top of this file) and
 * emits the alerts. Returns 0, or -1 with a message in err when a kernel failed: the
 * passes of the streams concerned are skipped and counted, the others go on. After a
 * sticky device error (tss_engine_device_lost) every later tick fails at once and
 * processes nothing. */
int tss_engine_tick(tss_engine *e, char *err, unsigned errlen);

/* Finishes every pending pass (overlap_passes: those running and those waiting to be
 * launched) and emits their alerts; 0, or -1 with a message in err when they failed. */
int tss_engine_flush(tss_engine *e, char *err, unsigned errlen);

/* Whether a kernel of a tick failed with TSM_EDEVICE: the device context is unusable
 * for the rest of the process (DESIGN 2). The caller checkpoints what the host holds
 * and exits; the engine cannot recover. Sticky: once set, stays set.
 *
 * TEST ONLY: the environment variable TSMINE_TEST_FAULT, read by tss_engine_new, makes
 * the first tick after N ticks with staged samples fail on the device:
 *   device_lost:N  the tick's online round status is replaced by TSM_EDEVICE where the
 *                  engine checks it (any backend; the CUDA context is not poisoned);
 *   device_trap:N  (cuda backend only) a kernel that executes a trap instruction runs
 *                  just before the round, so the context really carries a sticky
 *                  error and the round's own CUDA checks report it.
 * Either way the real path runs (the tick fails, this flag latches, every later tick
 * fails). Samples, windows and staging stay as a real failure leaves them (on the
 * host), so tss_engine_save still writes them. Unset or empty: inert; any other
 * value makes tss_engine_new fail with a message. */
int tss_engine_device_lost(const tss_engine *e);

/* Samples staged and not yet processed by a tick (the daemon ticks early when large). */
size_t tss_engine_pending(const tss_engine *e);

/* Restarts the warm-up of every stream whose id starts with prefix ("" = all): its
 * score history starts over (an open event closes), and with subsequence = auto its
 * window too, so that the next warm-up history chooses m again. Returns the streams
 * affected. */
size_t tss_engine_recalibrate(tss_engine *e, const char *prefix);

/* Re-resolves every stream's parameters through params_for (after a reload). Changes
 * of range, motif, references and left_discord apply at once; changes of warmup,
 * threshold or threshold_end restart the score history; changes of window,
 * subsequence, hop or excl restart that stream's window (and its m). Returns the
 * streams whose parameters changed. */
size_t tss_engine_reparam(tss_engine *e);

/* What the control socket and the metrics report about one stream. */
typedef struct {
    char id[TSS_MAX_ID + 1];
    tss_params params; /* in force: subsequence is the m chosen (0 while auto waits) */
    int subsequence_auto;
    uint32_t period;   /* the period an automatic m came from (0: none, the fallback) */
    uint64_t samples;  /* accepted */
    uint64_t rejected; /* batches refused */
    uint64_t alerts[TSS_ALERT_KINDS];
    uint64_t next_seq;
    uint64_t window_fill; /* samples in the window (<= W) */
    uint64_t gaps;
    double range;   /* the configured range, or the shape view's distance that scores the
                     * threshold now (what passes a DISCORD); NAN while its history is
                     * short or the window not warm */
    int calibrated; /* events can open: a warm window and, without a numeric range, a
                     * magnitude history of TSS_ROBUST_MIN values (robust.h) */
    int event_open;
    uint64_t events;   /* ANOMALY events opened */
    double last_score; /* the score events follow (magnitude; shape with a numeric range)
                        * of the last completed subsequence; NAN: none yet */
    uint64_t epoch;    /* of the last batch accepted */
    double idle_s;     /* since the last batch accepted (or the creation, or the restore) */
} tss_stream_info;

size_t tss_engine_stream_count(const tss_engine *e);
/* Info of the i-th stream (0 <= i < count, in creation order); -1 when out of range. */
int tss_engine_stream_at(const tss_engine *e, size_t i, tss_stream_info *out);
/* Info of a stream by id (out may be NULL: whether it exists, O(1)); -1 when unknown. */
int tss_engine_stream_find(const tss_engine *e, const char *id, tss_stream_info *out);
/* The host bytes a new stream of that id will take once it runs (tss_stream_bytes_for
 * with its parameters), for admission before its first batch; 0 when its parameters
 * are refused. */
uint64_t tss_engine_new_stream_bytes(tss_engine *e, const char *stream_id);

/* Engine-wide counters for metrics. Times are seconds of CLOCK_MONOTONIC since the
 * engine was created. */
typedef struct {
    uint64_t samples, ticks, passes_discord, passes_motif, pass_failures;
    uint64_t alerts[TSS_ALERT_KINDS];
    uint64_t rejected[TSS_REJECT_COUNT];
    /* seconds_online: wall time of step 1 (ring append and the batched online kernel);
     * seconds_discord, seconds_motif: time of the passes summed over the streams. PD3
     * and MK run in one batched call per group (passes.c): a group's wall time is
     * shared among its windows and counted as motif time for streams with motif on,
     * else discord time; scoring the discords counts as discord time (it runs over
     * several threads, so the sum can exceed seconds_passes somewhat). */
    double seconds_online, seconds_discord, seconds_motif;
    uint64_t ring_bytes;        /* memory held by the rings (device or host) */
    uint64_t ring_samples;      /* samples held in all windows */
    uint64_t samples_processed; /* samples a tick moved into the windows (accepted ones
                                 * not yet processed: tss_engine_pending) */
    double seconds_passes;      /* wall time of step 2 */
    double seconds_tick;        /* wall time of tss_engine_tick, alert callbacks included */
    uint64_t pass_waits;        /* pass points reached while passes were in flight (the stream
                                 * waited for its own to be launched: overlap_passes) */
    uint64_t passes_pending;    /* streams whose passes are waiting or in flight now */
    /* streams removed: idle past idle_expiry_s, evicted for a new one (when_full), or
     * deleted on request; and the staged samples that went with them */
    uint64_t streams_expired, streams_evicted, streams_deleted, samples_dropped;
} tss_engine_counters;
void tss_engine_counters_get(const tss_engine *e, tss_engine_counters *out);

#endif
