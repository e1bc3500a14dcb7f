/* stream.h - one stream's state inside the engine (internal to stream/).
 *
 * Three parts, each advanced by one side of the engine:
 * - ingest side (stream/ingest.c): the sequence number and timestamp the next batch
 *   must continue from, recent gaps (to tell a late sample from a duplicate), and the
 *   staging of accepted samples;
 * - window side (tick): the mirrored ring of the window, the online left-NN state
 *   (stream/online_round.c), and the sequence number of the next sample to enter the window;
 * - detection: r and its calibration, the alerted discord starts, the last motif pair.
 * Plus the alerts of the tick in progress and the counters the daemon reports. */
#ifndef TSS_STREAM_H
#define TSS_STREAM_H

#include "dedup.h"
#include "engine.h"
#include "online_round.h"
#include "params.h"
#include "ring.h"
#include "staging.h"

/* Gaps remembered per stream for OUT_OF_ORDER (older ones read as DUPLICATE). */
#define TSS_GAPS_KEPT 16

/* The alerts of the tick in progress, in the order they are emitted. */
typedef struct {
    tss_alert *item;
    size_t n, cap;
    uint64_t lost; /* alerts dropped for lack of memory */
} tss_alert_buf;

struct tss_stream {
    char id[TSS_MAX_ID + 1];
    size_t index; /* creation order */
    tss_params p; /* excl resolved (never 0) */

    /* ingest side */
    int started;       /* a batch was accepted */
    uint64_t next_seq; /* the next batch must start here */
    int64_t last_ts;   /* timestamp of the last accepted sample */
    uint64_t gap_lo[TSS_GAPS_KEPT], gap_hi[TSS_GAPS_KEPT]; /* missing [lo, hi) */
    uint32_t ngaps, gap_next; /* kept gaps; the next one overwrites gap_next */
    tss_staging stage;
    int dirty; /* on the engine's list of streams with staged samples */

    /* window side */
    tss_ring ring;
    tss_online on;
    uint64_t proc_seq;   /* sequence number of the next sample to enter the window */
    uint64_t since_pass; /* samples since the last pass or restart */

    /* detection */
    int calibrated;
    double r;      /* in force when calibrated */
    double cal_nn; /* auto: the largest nn of the calibration window */
    tss_seqset alerted;
    int have_motif;
    uint64_t motif_a, motif_b;

    /* the tick in progress */
    uint32_t chunk; /* samples this round */
    tss_alert_buf out;
    /* the windowed passes of this stream (passes.h; with overlap_passes they run on a
     * thread while the engine goes on): their DISCORD and MOTIF alerts and their first
     * failure, handed over when the engine joins them. inflight: launched, not joined;
     * waiting: at a pass point, not launched yet; held: launched to calibrate r, takes
     * no samples until joined (its r is written by the passes; engine.c). */
    int inflight, waiting, held;
    tss_alert_buf pass_out;
    char pass_fail[512];
    double sec_discord, sec_motif;
    uint32_t passes_discord, passes_motif, pass_failures;
    char fail[512]; /* the first failure of this tick, "" if none */

    /* counters */
    uint64_t samples, rejected, alerts[TSS_ALERT_KINDS], gaps;
};

/* Ring slack (samples a round may append at most) for these parameters. */
uint32_t tss_stream_slack(const tss_params *p);
/* A new stream with validated parameters p (excl may be 0); 0 or -1 (out of memory). */
int tss_stream_new(const char *id, const tss_params *p, tss_stream **out);
void tss_stream_destroy(tss_stream **self_p);
/* Empties the window: the next samples start a new one (a gap, a resize, a restore). */
void tss_stream_restart(tss_stream *s);
/* Takes new parameters; the window restarts when its shape (window, subsequence, hop,
 * excl) changes. 0, or -1 (out of memory: nothing changed). */
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
void tss_stream_pass_fail(tss_stream *s, const char *what, const char *msg);

#endif
