/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.h - Prometheus text exposition of tsmined's counters (GET /metrics).
 *
 * Threads: the HTTP server (libmicrohttpd) answers from its own thread. It never
 * touches the engine or the daemon's counters: the main loop copies them into a
 * snapshot every 100 ms at most (tsd_metrics_publish, a mutex-protected memcpy of a
 * few hundred bytes) and the handler formats its own copy of the latest snapshot. */
#ifndef TSD_METRICS_H
#define TSD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/guard/guard.h"
#include "daemon/guard/security.h"
#include "daemon/sink/sink.h"
#include "daemon/source/decode.h"
#include "daemon/state/ckpt_job.h"
#include "engine.h"

enum { TSD_PASS_ONLINE, TSD_PASS_DISCORD, TSD_PASS_MOTIF, TSD_PASSES };

/* Where the main thread's busy time (outside zmq_poll) goes; disjoint, they add up to
 * busy_ns. receive: reading messages off the ingest sockets; decode: protobuf unpack
 * and wire checks; stage: the engine's checks and the copy into its staging; online:
 * ring append and the batched online kernel; passes: the windowed PD3/MK passes (wall
 * time); publish: alert encoding and zmq_send; other: the rest (tick bookkeeping,
 * control requests, metrics snapshots, checkpoints). */
enum {
    TSD_PHASE_RECEIVE,
    TSD_PHASE_DECODE,
    TSD_PHASE_STAGE,
    TSD_PHASE_ONLINE,
    TSD_PHASE_PASSES,
    TSD_PHASE_PUBLISH,
    TSD_PHASE_OTHER,
    TSD_PHASES
};
/* The lower-case name of a phase ("receive" ... "other"), NULL when out of range. */
const char *tsd_phase_name(int phase);

/* Counters of the /metrics server's defences against slow and greedy clients
 * (metrics_http.c): connections refused by the per-host limit, refused with every slot
 * taken by requests under way, and cut (no complete request within 5 s of the start,
 * or evicted for a new one). */
typedef struct {
    uint64_t refused_per_host, refused_full, cut_slow;
} tsd_metrics_http;

/* The process as Prometheus's client libraries describe it (process_*). */
typedef struct {
    double start_time_s; /* since the epoch */
    double cpu_s;        /* user + system */
    uint64_t resident_bytes, virtual_bytes;
    uint64_t open_fds, max_fds;
} tsd_process_stats;

/* Reads them (/proc/self/statm, getrusage, getrlimit; open_fds: known_fds when not 0,
 * else a count of /proc/self/fd). started_realtime_ns: the start, CLOCK_REALTIME. */
void tsd_process_stats_get(int64_t started_realtime_ns, uint64_t known_fds, tsd_process_stats *out);

typedef struct {
    const char *version, *backend; /* static strings: build_info's labels */
    tsd_process_stats process;
    uint64_t reloads, reload_failures;
    int last_reload_ok;        /* 1 before any reload */
    double last_reload_time_s; /* since the epoch; 0 before any */
    uint64_t samples;          /* accepted */
    uint64_t bytes;            /* ingest payload bytes received */
    uint64_t messages;         /* ingest messages received */
    uint64_t accepted;         /* batches accepted */
    uint64_t rejected[TSD_REASON_COUNT];
    uint64_t alerts[TSS_ALERT_KINDS];           /* found, by kind (published + dropped + queued) */
    uint64_t alerts_published[TSS_ALERT_KINDS]; /* handed to ZeroMQ */
    uint64_t alerts_dropped[TSS_ALERT_KINDS];   /* not handed to ZeroMQ: no subscriber got them */
    uint64_t alerts_queued[TSS_ALERT_KINDS];    /* on their way to the publisher thread's send */
    uint64_t alert_drops;                       /* the sum of alerts_dropped */
    uint64_t alert_errors;                      /* of the dropped, failures other than no room */
    uint64_t pass_failures;
    double pass_seconds[TSD_PASSES]; /* online: wall; discord, motif: over pass threads */
    uint64_t ring_samples, ring_bytes, streams;
    uint64_t processed;      /* samples the ticks moved into the windows */
    uint64_t pending;        /* accepted, not yet processed */
    uint64_t pending_passes; /* streams whose windowed passes wait or run now */
    uint64_t ticks;
    uint64_t streams_expired, streams_evicted, streams_deleted; /* tss_engine_counters */
    uint64_t samples_dropped;            /* staged samples of streams removed */
    uint64_t busy_ns;                    /* main thread outside zmq_poll */
    uint64_t publisher_ns;               /* the publisher thread's time sending alerts */
    uint64_t phase_ns[TSD_PHASES];       /* busy_ns by phase */
    tsd_security_counters curve;         /* CURVE handshakes (all zero when it is off) */
    tsd_metrics_http http;               /* the /metrics server's slow and greedy clients */
    uint64_t checkpoints;                /* written */
    uint64_t checkpoint_failures;        /* not written (the previous one kept), retried later */
    uint64_t checkpoint_streams_dropped; /* restored beyond max_streams, left out */
    uint64_t checkpoint_duplicates;      /* stream records set aside for a newer one */
    tsd_ckpt_stats ckpt;                 /* the checkpoints' work (ckpt_job.h) */
    tsd_guard_counters guard;            /* memory and connections of peers (guard.h) */
    uint64_t control_requests;           /* control requests answered or refused */
    uint64_t control_errors;             /* of them, refused; and messages without an envelope */
    uint64_t control_reply_drops;        /* replies to control clients gone or not reading */
    uint64_t uptime_s;                   /* since the start, whole seconds */
    uint64_t log_dropped;                /* log lines over the process-wide budget (log.h) */
    tsd_counter io_counters[TSD_IO_COUNTERS]; /* the open sources' then sinks' (source.h, sink.h) */
    size_t n_io_counters;
} tsd_metrics_snapshot;

/* The lower-case name of an alert kind ("discord", "left_discord", "motif", "gap", ...),
 * NULL for values that are not kinds. */
const char *tsd_alert_kind_label(int kind);

/* Formats s as Prometheus text (version 0.0.4) into buf (size len, NUL-terminated
 * when len > 0). Returns the length the full text needs, as snprintf does. */
size_t tsd_metrics_format(const tsd_metrics_snapshot *s, char *buf, size_t len);

typedef struct tsd_metrics tsd_metrics;

/* Starts the HTTP server on listen ("HOST:PORT", "[V6]:PORT"). listen "" or a build
 * without libmicrohttpd: *out = NULL and 0 (msg says why when it is the build).
 * Returns -1 with msg when the address is bad or cannot be bound. */
int tsd_metrics_start(const char *listen, tsd_metrics **out, char *msg, size_t msglen);
/* Replaces the snapshot the server answers with (m may be NULL). */
void tsd_metrics_publish(tsd_metrics *m, const tsd_metrics_snapshot *s);
/* The server's counters (tsd_metrics_http); all 0 when m is NULL. Any thread. */
void tsd_metrics_http_counters(tsd_metrics *m, tsd_metrics_http *out);
/* Stops the server and frees it; *m_p = NULL. */
void tsd_metrics_stop(tsd_metrics **m_p);

#endif
