/* SPDX-License-Identifier: Apache-2.0 */
/* stream.h - one stream's state inside the engine (internal to stream/).
 *
 * Three parts, each advanced by one side of the engine:
 * - ingest side (stream/ingest.c): the sequence number and timestamp the next batch
 *   must continue from, recent gaps (to tell a late sample from a duplicate), and the
 *   staging of accepted samples;
 * - window side (tick): the mirrored ring of the window, the online left-NN state
 *   (stream/online_round.c), and the sequence number of the next sample to enter the window;
 * - detection: the subsequence length in force (automatic: chosen when the warm-up
 *   history is in), the calibrated score and the events, the published spans and
 *   MOTIF pairs (detect.h).
 * Plus the alerts of the tick in progress and the counters the daemon reports. */
#ifndef TSS_STREAM_H
#define TSS_STREAM_H

#include "detect.h"
#include "engine.h"
#include "level.h"
#include "online_round.h"
#include "params.h"
#include "ring.h"
#include "staging.h"

/* Gaps remembered per stream for OUT_OF_ORDER (older ones read as DUPLICATE). */
#define TSS_GAPS_KEPT 16

/* A discord a pass found past the threshold, waiting for its join (passes.c). */
typedef struct {
    uint64_t start, neighbor;
    double distance, score;
} tss_discord_cand;

/* The alerts of the tick in progress, in the order they are emitted. */
typedef struct {
    tss_alert *item;
    size_t n, cap;
    uint64_t lost; /* alerts dropped for lack of memory */
} tss_alert_buf;

struct tss_stream {
    char id[TSS_MAX_ID + 1];
    size_t index;    /* creation order */
    tss_params cfg;  /* as configured (subsequence 0: auto) */
    tss_params p;    /* in force: m chosen (0 while an automatic m waits for its warm-up
                      * history) and excl resolved (never 0 once m is known) */
    uint32_t period; /* the period an automatic m was chosen from (0: none, fallback) */
    /* an automatic m without a period yet: the window fill at which the next pass point
     * chooses it again (0: m is final, or not automatic) */
    uint32_t next_check;

    /* ingest side */
    int started;       /* a batch was accepted */
    uint64_t next_seq; /* the next batch must start here */
    int64_t last_ts;   /* timestamp of the last accepted sample */
    uint64_t epoch;    /* of the last accepted batch (tss_engine_ingest_epoch) */
    int reset_pending; /* tss_engine_reset_stream: the next batch starts the stream over */
    uint64_t gap_lo[TSS_GAPS_KEPT], gap_hi[TSS_GAPS_KEPT]; /* missing [lo, hi) */
    uint32_t ngaps, gap_next; /* kept gaps; the next one overwrites gap_next */
    tss_staging stage;
    int dirty; /* on the engine's list of streams with staged samples */

    /* window side */
    tss_ring ring;
    tss_online on;
    tss_level level;     /* the level view's sliding runs (level.h), host side */
    uint64_t proc_seq;   /* sequence number of the next sample to enter the window */
    uint64_t since_pass; /* samples since the last pass or restart */

    /* detection */
    tss_detect det;

    /* the tick in progress */
    uint32_t chunk; /* samples this round */
    tss_alert_buf out;
    /* the windowed passes of this stream (passes.h; with overlap_passes they run on a
     * thread while the engine goes on): their DISCORD and MOTIF alerts and their first
     * failure, handed over when the engine joins them. inflight: launched, not joined;
     * waiting: at a pass point, not launched yet (pass_thread.c). */
    int inflight, waiting;
    tss_alert_buf pass_out;
    char pass_fail[512];
    tss_discord_cand *cand; /* the last pass's discords past the threshold, by distance */
    size_t ncand, capcand;
    double sec_discord, sec_motif;
    uint32_t passes_discord, passes_motif, pass_failures;
    char fail[512]; /* the first failure of this tick, "" if none */

    /* counters */
    uint64_t samples, rejected, alerts[TSS_ALERT_KINDS], gaps;
    /* tss_stream_fingerprint when its record was last serialised (checkpoint.c), 0 never */
    uint64_t ckpt_mark;

    /* lifetime (lifetime.c): on one of the engine's two lists by idleness, those that
     * have not delivered their warm-up yet (cold) and the others */
    double last_active; /* engine clock: the last accepted batch, creation or restore */
    tss_stream *older, *newer;
    int warm_list; /* which list: 0 cold, 1 warm */
};

/* Ring slack (samples a round may append at most) for these parameters. */
uint32_t tss_stream_slack(const tss_params *p);
/* The host bytes a stream of parameters p takes once it runs: the stream itself, its
 * host ring and, when the arena is host memory (host_arena), its arena region. For
 * memory admission (engine.h, tss_engine_new_stream_bytes): the staged samples and the
 * alert buffers come on top and vary. */
uint64_t tss_stream_bytes_for(const tss_params *p, int host_arena);
/* A new stream with validated parameters p (excl may be 0, subsequence 0 for auto); 0
 * or -1 (out of memory). */
int tss_stream_new(const char *id, const tss_params *p, tss_stream **out);
/* Sets the subsequence length in force to m (with an automatic m: once chosen; period:
 * the period it came from), resolving excl, laying out the online state (in place when
 * it has its region: the next round rebuilds it) and starting the score history (an
 * open event closes first). */
void tss_stream_set_m(tss_stream *s, uint32_t m, uint32_t period);
/* subsequence = auto: chooses m from the history x[0..n) (kernels/period.h,
 * tss_params_auto_max) and sets it when it differs. The first choice is made on the
 * warm-up history (tick.c); while it finds no period, m is the fallback and is
 * chosen again on the window at the first pass point where the window holds twice as
 * many samples as the last time (2 warmup, 4 warmup, ..., and a full window), so that a
 * period too long for the warm-up (a daily cycle of 5-minute samples) is still found.
 * Such a second look moves m only to a strong period (autocorrelation at least
 * TSS_AUTO_M_RECHECK_ACF there): a weak one, in a noisy series that showed none in its
 * warm-up, serves a z-normalised distance worse than the short fallback, and the move
 * costs a fresh score history. Once a period is found, or after the full window, m
 * stays. */
void tss_stream_choose_m(tss_stream *s, const double *x, size_t n);
/* The samples the window holds before it scores (tss_params_warm of the m in force). */
static inline uint32_t tss_stream_warm(const tss_stream *s) {
    return tss_params_warm(&s->p, s->p.subsequence);
}
void tss_stream_destroy(tss_stream **self_p);
/* Empties the window: the next samples start a new one (a gap, a resize, a restore).
 * An open event closes first (its ANOMALY_END queued). */
void tss_stream_restart(tss_stream *s);
/* Starts s over at sequence number seq (a newer epoch, a reset): the window restarts,
 * the published spans and MOTIF pairs (numbered in the old run) are forgotten, and a
 * RESET alert is queued (neighbor_seq: where the old run had got to). The score
 * history and m stay: the same sender. */
void tss_stream_restart_run(tss_stream *s, uint64_t seq, uint64_t old_next);
/* Restarts the warm-up: forgets the score history and, with an automatic m, m itself
 * (the window restarts too: the next warm-up history chooses m again). */
void tss_stream_recalibrate(tss_stream *s);
/* Takes new parameters; the window restarts when its shape (window, subsequence, hop,
 * excl) changes, the score history when warmup, threshold or threshold_end does. 0, or
 * -1 (out of memory: nothing changed). */
int tss_stream_set_params(tss_stream *s, const tss_params *p);
/* Absolute sequence number of the window's oldest sample. */
static inline uint64_t tss_stream_window_seq(const tss_stream *s) {
    return s->proc_seq - s->ring.fill;
}
/* Timestamp of sample seq if the ring still holds it, else 0. */
int64_t tss_stream_ts(const tss_stream *s, uint64_t seq);
/* Appends an alert to b (counted in b->lost when out of memory). */
void tss_alert_push(tss_alert_buf *b, const tss_alert *a);
/* Queues an alert of the tick in progress (counted in out.lost when out of memory). */
static inline void tss_stream_alert(tss_stream *s, const tss_alert *a) {
    tss_alert_push(&s->out, a);
}
/* Records the first failure message of this tick (fail: tss_stream_fail; the passes'
 * own message, taken over when they are joined: tss_stream_pass_fail). */
void tss_stream_fail(tss_stream *s, const char *what, const char *msg);
/* A hash of what the stream's saved state depends on (checkpoint.c): it changes with
 * every change of that state. */
uint64_t tss_stream_fingerprint(const tss_stream *s);
void tss_stream_pass_fail(tss_stream *s, const char *what, const char *msg);

#endif
