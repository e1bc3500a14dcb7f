/* SPDX-License-Identifier: Apache-2.0 */
/* counters.c - the table of tsmined's counters (counters.h) and its walk. Adding a
 * counter: its field in tsd_metrics_snapshot (metrics.h), filled by
 * tsd_daemon_snapshot, and its row below. */
#include "daemon/ops/counters.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "tsmine.pb-c.h"

const char *tsd_alert_kind_label(int kind) {
    switch (kind) {
    case TSS_ALERT_DISCORD: return "discord";
    case TSS_ALERT_LEFT_DISCORD: return "left_discord";
    case TSS_ALERT_MOTIF: return "motif";
    case TSS_ALERT_GAP: return "gap";
    case TSS_ALERT_ANOMALY: return "anomaly";
    case TSS_ALERT_ANOMALY_END: return "anomaly_end";
    case TSS_ALERT_RESET: return "reset";
    default: return NULL;
    }
}

const char *tsd_phase_name(int phase) {
    static const char *const names[TSD_PHASES] = {
        [TSD_PHASE_RECEIVE] = "receive", [TSD_PHASE_DECODE] = "decode",
        [TSD_PHASE_STAGE] = "stage",     [TSD_PHASE_ONLINE] = "online",
        [TSD_PHASE_PASSES] = "passes",   [TSD_PHASE_PUBLISH] = "publish",
        [TSD_PHASE_OTHER] = "other",
    };
    return phase >= 0 && phase < TSD_PHASES ? names[phase] : NULL;
}

/* What a row stands for. */
enum {
    ROW_ONE,        /* one series */
    ROW_EACH,       /* one series per index of a set (each_name, each_range) */
    ROW_IO,         /* the open sources' and sinks' own rows (s->io_counters) */
    ROW_BUILD_INFO, /* tsmine_build_info: 1, labelled with the version and the backend */
};

/* The index sets of ROW_EACH rows: their names are the label values, and the STATUS
 * keys' %s. */
enum { EACH_REASON, EACH_KIND, EACH_PHASE, EACH_SOCKET, EACH_AUTH };

/* The unit of a value, which says its C type and how each exporter shows it. */
enum {
    V_COUNT,   /* uint64_t: as is */
    V_FLAG,    /* int: as is */
    V_NS,      /* uint64_t nanoseconds: STATUS as is, /metrics in seconds (%.9g) */
    V_SECONDS, /* double seconds: STATUS in ns, /metrics %.9g */
    V_REAL,    /* double: /metrics %.6f */
    V_TIME,    /* double seconds (since the epoch; of CPU): /metrics %.3f */
    V_TIME_NS, /* int64_t ns since the epoch: STATUS whole seconds, /metrics seconds %.3f */
    V_NONE,    /* no value of the snapshot (ROW_IO, ROW_BUILD_INFO) */
};

/* When a row is shown. */
enum {
    WHEN_ALWAYS,
    WHEN_CURVE,   /* CURVE is on */
    WHEN_NONZERO, /* the value is not 0 (0: unknown) */
};

typedef struct {
    unsigned char how, each, unit, when, field;
    size_t at;              /* the value's offset in tsd_metrics_snapshot (ROW_EACH: index 0) */
    const char *status;     /* STATUS key (ROW_EACH: with %s for the index's name); NULL: none
                             * (TSD_STATUS_ALERTS_BY_KIND: the AlertKind enum's names) */
    const char *status_sum; /* ROW_EACH: STATUS key of the sum over the set */
    const char *metric, *type, *help; /* family (type, help: on its first row only) */
    const char *label, *label_value;  /* ROW_ONE: its label; ROW_EACH: the label's name */
} row;

/* 1 when snapshot field f is of type T; a compile error (an array of size -1) otherwise. */
#define IS(f, T) sizeof(char[_Generic(((tsd_metrics_snapshot *)0)->f, T : 1, default : -1)])
/* The offset of snapshot field f, which must be of type T. */
#define AT(f, T) (offsetof(tsd_metrics_snapshot, f) + 0 * IS(f, T))

#define COUNT(f)   .unit = V_COUNT, .at = AT(f, uint64_t)
#define FLAG(f)    .unit = V_FLAG, .at = AT(f, int)
#define NS(f)      .unit = V_NS, .at = AT(f, uint64_t)
#define SECONDS(f) .unit = V_SECONDS, .at = AT(f, double)
#define REAL(f)    .unit = V_REAL, .at = AT(f, double)
#define TIME(f)    .unit = V_TIME, .at = AT(f, double)
#define TIME_NS(f) .unit = V_TIME_NS, .at = AT(f, int64_t)

#define STATUS(k)       .status = (k)
#define COUNTER(m, h)   .metric = (m), .type = "counter", .help = (h)
#define GAUGE(m, h)     .metric = (m), .type = "gauge", .help = (h)
#define SERIES(m, l, v) .metric = (m), .label = (l), .label_value = (v)
#define EACH(set, l)    .how = ROW_EACH, .each = (set), .label = (l)

#define REJECTED_TOTAL "tsmine_ingest_messages_rejected_total"
#define PASS_SECONDS   "tsmine_pass_seconds_total"
#define REMOVED        "tsmine_streams_removed_total"
#define HTTP_REFUSED   "tsmine_http_connections_refused_total"
#define PEERS_CUT      "tsmine_peers_cut_total"

/* Every counter, in the order of /metrics. */
static const row table[] = {
    {.how = ROW_BUILD_INFO,
     .unit = V_NONE,
     GAUGE("tsmine_build_info",
           "Always 1: the version and the compute backend in use, as labels.")},
    /* the process_* series of Prometheus's client libraries */
    {GAUGE("process_start_time_seconds", "Start time of the process since unix epoch in seconds."),
     TIME(process.start_time_s)},
    {COUNTER("process_cpu_seconds_total", "Total user and system CPU time spent in seconds."),
     TIME(process.cpu_s)},
    {GAUGE("process_resident_memory_bytes", "Resident memory size in bytes."),
     COUNT(process.resident_bytes)},
    {GAUGE("process_virtual_memory_bytes", "Virtual memory size in bytes."),
     COUNT(process.virtual_bytes)},
    {GAUGE("process_open_fds", "Number of open file descriptors."), COUNT(process.open_fds)},
    {GAUGE("process_max_fds", "Maximum number of open file descriptors."), COUNT(process.max_fds),
     .when = WHEN_NONZERO},
    {STATUS("reloads"),
     COUNTER("tsmine_reloads_total", "Configuration reloads asked for (SIGHUP, RELOAD)."),
     COUNT(reloads)},
    {STATUS("reload_failures"),
     COUNTER("tsmine_reload_failures_total", "Reloads refused: the running configuration stayed."),
     COUNT(reload_failures)},
    {GAUGE("tsmine_last_reload_success",
           "1 when the last reload took the new configuration (and before any), else 0."),
     FLAG(last_reload_ok)},
    {GAUGE("tsmine_last_reload_timestamp_seconds",
           "When the last reload happened (seconds since the epoch; 0: none yet)."),
     TIME(last_reload_time_s)},
    {STATUS("samples"), COUNTER("tsmine_ingest_samples_total", "Samples accepted into streams."),
     COUNT(samples)},
    {STATUS("bytes"), COUNTER("tsmine_ingest_bytes_total", "Ingest message bytes received."),
     COUNT(bytes)},
    {STATUS("messages"), COUNTER("tsmine_ingest_messages_total", "Ingest messages received."),
     COUNT(messages)},
    {STATUS("batches_accepted"), COUNT(accepted)},
    {EACH(EACH_REASON, "reason"), .field = TSD_STATUS_REJECTED, STATUS("%s"),
     COUNTER(REJECTED_TOTAL, "Ingest messages rejected, by reason."), COUNT(rejected[0])},
    /* alerts by kind (alerts.h); alerts_by_kind's keys are the AlertKind enum's names */
    {EACH(EACH_KIND, "kind"), .field = TSD_STATUS_ALERTS_BY_KIND,
     COUNTER("tsmine_alerts_total",
             "Alerts found, by kind: each one is published, dropped or queued (the three "
             "series below add up to this one at every scrape)."),
     COUNT(alerts[0])},
    {EACH(EACH_KIND, "kind"), STATUS("alerts_published_%s"), .status_sum = "alerts_published",
     COUNTER("tsmine_alerts_published_total", "Alerts handed to ZeroMQ, by kind."),
     COUNT(alerts_published[0])},
    {EACH(EACH_KIND, "kind"), STATUS("alert_drops_%s"),
     COUNTER("tsmine_alert_drops_total",
             "Alerts that could not be handed to ZeroMQ and reached no subscriber, by kind "
             "(the publisher queue was full, or encoding or sending failed). Alerts a slow "
             "subscriber loses at its own high-water mark (alerts.hwm) are invisible to the "
             "publisher and not counted here: that subscriber sees gaps in the seq of its "
             "streams' alerts."),
     COUNT(alerts_dropped[0])},
    {STATUS("alert_drops"), COUNT(alert_drops)},
    {EACH(EACH_KIND, "kind"), STATUS("alerts_queued_%s"), .status_sum = "alerts_queued",
     GAUGE("tsmine_alerts_queued",
           "Alerts found and not yet published nor dropped (the publisher's queue), by kind."),
     COUNT(alerts_queued[0])},
    {STATUS("alert_errors"), COUNT(alert_errors)},
    {STATUS("pass_failures"),
     COUNTER("tsmine_pass_failures_total",
             "Detection passes that failed (skipped for the streams concerned)."),
     COUNT(pass_failures)},
    {COUNTER(PASS_SECONDS,
             "Time spent in each detection phase (discord, motif: summed over pass threads)."),
     .label = "pass", .label_value = "online", SECONDS(pass_seconds[TSD_PASS_ONLINE])},
    {STATUS("thread_ns_discord"), SERIES(PASS_SECONDS, "pass", "discord"),
     SECONDS(pass_seconds[TSD_PASS_DISCORD])},
    {STATUS("thread_ns_motif"), SERIES(PASS_SECONDS, "pass", "motif"),
     SECONDS(pass_seconds[TSD_PASS_MOTIF])},
    {STATUS("thread_ns_publisher"), NS(publisher_ns)},
    {STATUS("processed_samples"),
     COUNTER("tsmine_processed_samples_total",
             "Samples the ticks moved into the windows and scored."),
     COUNT(processed)},
    {STATUS("pending_passes"),
     GAUGE("tsmine_pending_passes", "Streams whose windowed passes wait or run now."),
     COUNT(pending_passes)},
    {STATUS("pending_samples"),
     GAUGE("tsmine_pending_samples", "Samples accepted and not yet processed."), COUNT(pending)},
    {STATUS("ticks"), COUNTER("tsmine_ticks_total", "Engine ticks."), COUNT(ticks)},
    {STATUS("streams_expired"),
     COUNTER(REMOVED, "Streams removed: idle past idle_expiry, evicted for a new one, or deleted."),
     .label = "why", .label_value = "expired", COUNT(streams_expired)},
    {STATUS("streams_evicted"), SERIES(REMOVED, "why", "evicted"), COUNT(streams_evicted)},
    {STATUS("streams_deleted"), SERIES(REMOVED, "why", "deleted"), COUNT(streams_deleted)},
    {STATUS("samples_dropped"),
     COUNTER("tsmine_samples_dropped_total",
             "Samples accepted and never processed: their stream was removed."),
     COUNT(samples_dropped)},
    {STATUS("ns_busy"),
     COUNTER("tsmine_busy_seconds_total", "Time the main thread spent outside zmq_poll."),
     NS(busy_ns)},
    {EACH(EACH_PHASE, "phase"), STATUS("ns_%s"),
     COUNTER(
         "tsmine_phase_seconds_total",
         "Main-thread busy time by phase (disjoint: they add up to tsmine_busy_seconds_total)."),
     NS(phase_ns[0])},
    {STATUS("ring_samples"), GAUGE("tsmine_ring_samples", "Samples held in all stream windows."),
     COUNT(ring_samples)},
    {STATUS("ring_bytes"), GAUGE("tsmine_ring_bytes", "Memory held by the ring buffers."),
     COUNT(ring_bytes)},
    {STATUS("streams"), GAUGE("tsmine_streams", "Streams known to the daemon."), COUNT(streams)},
    {STATUS("http_refused_per_host"),
     COUNTER(HTTP_REFUSED, "Connections to this server refused: per_host (4 open from one host), "
                           "full (16 requests under way)."),
     .label = "reason", .label_value = "per_host", COUNT(http.refused_per_host)},
    {STATUS("http_refused_full"), SERIES(HTTP_REFUSED, "reason", "full"), COUNT(http.refused_full)},
    {STATUS("http_cut_slow"),
     COUNTER("tsmine_http_connections_cut_total",
             "Connections to this server cut: no complete request within 5 s, or the longest "
             "waiting for one, evicted for a new connection with all 16 slots taken."),
     COUNT(http.cut_slow)},
    {STATUS("checkpoints"),
     COUNTER("tsmine_checkpoints_total",
             "Checkpoints done (each writes only the groups of streams that changed)."),
     COUNT(checkpoints)},
    {STATUS("checkpoint_failures"),
     COUNTER("tsmine_checkpoint_failures_total",
             "Checkpoints of which a file could not be written (its previous one is kept; "
             "retried at the next checkpoint)."),
     COUNT(checkpoint_failures)},
    /* the checkpoints' work (ckpt_job.h) */
    {GAUGE("tsmine_checkpoint_duration_seconds",
           "The last checkpoint, from its start to its last fsync."),
     REAL(ckpt.last_duration_s)},
    {GAUGE("tsmine_checkpoint_stall_seconds",
           "Main loop time the last checkpoint took (looking at the streams, copying the "
           "changed ones), in all."),
     REAL(ckpt.last_stall_s)},
    {GAUGE("tsmine_checkpoint_stall_max_seconds",
           "The longest the last checkpoint held the main loop at once."),
     REAL(ckpt.last_max_step_s)},
    {GAUGE("tsmine_checkpoint_streams_written",
           "Streams the last checkpoint wrote (those that changed since the one before)."),
     COUNT(ckpt.last_records)},
    {COUNTER("tsmine_checkpoint_written_bytes_total", "Bytes of checkpoint files written."),
     COUNT(ckpt.bytes)},
    {COUNTER("tsmine_checkpoint_files_total",
             "Checkpoint files written or removed (one per group of streams that changed)."),
     COUNT(ckpt.files)},
    {STATUS("checkpoint_last_success_time"),
     GAUGE("tsmine_checkpoint_last_success_timestamp_seconds",
           "When the last checkpoint that wrote every file it had to ended (0: none yet)."),
     TIME_NS(ckpt.last_success_ns)},
    {STATUS("checkpoint_streams_dropped"),
     COUNTER("tsmine_checkpoint_streams_dropped_total",
             "Streams of the checkpoint restored at start that were left out, beyond "
             "max_streams (the first streams created are kept)."),
     COUNT(checkpoint_streams_dropped)},
    {STATUS("checkpoint_duplicates"),
     COUNTER("tsmine_checkpoint_duplicates_total",
             "Stream records of the checkpoint restored at start that were set aside because "
             "another record of the stream was newer (later epoch, then higher next_seq)."),
     COUNT(checkpoint_duplicates)},
    {STATUS("log_lines_dropped"),
     COUNTER("tsmine_log_lines_dropped_total",
             "Log lines dropped over the process-wide budget of lines per second."),
     COUNT(log_dropped)},
    {STATUS("control_requests"), COUNT(control_requests)},
    {STATUS("control_errors"), COUNT(control_errors)},
    {STATUS("control_reply_drops"),
     COUNTER("tsmine_control_reply_drops_total",
             "Control replies dropped: the client was gone or did not read its replies."),
     COUNT(control_reply_drops)},
    {STATUS("uptime_seconds"), COUNT(uptime_s)},
    /* memory and connections of peers (guard.h) */
    {STATUS("resident_bytes"), COUNT(guard.rss)},
    {STATUS("address_space_bytes"), COUNT(guard.vm)},
    {STATUS("memory_budget_bytes"),
     GAUGE("tsmine_memory_budget_bytes",
           "Resident memory above which peers are shed and new streams refused."),
     COUNT(guard.memory_budget)},
    {STATUS("memory_pressure"), GAUGE("tsmine_memory_pressure", "1 while memory is over budget."),
     COUNT(guard.pressure)},
    {STATUS("memory_pressure_episodes"), COUNT(guard.pressure_episodes)},
    {STATUS("peers_cut_memory"),
     COUNTER(PEERS_CUT,
             "Peer connections cut, by reason (memory: held too many unread bytes, or the most "
             "while memory was over budget; connections: beyond their socket's share)."),
     .label = "reason", .label_value = "memory", COUNT(guard.cut_memory)},
    {STATUS("peers_cut_connections"), SERIES(PEERS_CUT, "reason", "connections"),
     COUNT(guard.cut_connections)},
    {STATUS("descriptors_open"), COUNT(guard.fds)},
    {EACH(EACH_SOCKET, "socket"), STATUS("connections_%s"),
     GAUGE("tsmine_connections", "Peer connections, by socket."), COUNT(guard.connections[0])},
    {EACH(EACH_SOCKET, NULL), STATUS("connections_%s_max"), COUNT(guard.max_peers[0])},
    /* CURVE (security.h) */
    {STATUS("curve_handshakes"), .when = WHEN_CURVE,
     COUNTER("tsmine_curve_handshakes_total", "CURVE handshakes completed by allowed clients."),
     COUNT(curve.handshakes)},
    {EACH(EACH_AUTH, "reason"), STATUS("curve_rejected_%s"), .when = WHEN_CURVE,
     COUNTER("tsmine_curve_rejected_total",
             "Refused handshakes, by reason (key: not in the allow-list; protocol: not a "
             "CURVE client or a malformed handshake; other: cut short). A refused client "
             "counts once per reconnection attempt."),
     COUNT(curve.rejected[0])},
    {STATUS("curve_authorized_keys"), .when = WHEN_CURVE,
     GAUGE("tsmine_curve_authorized_keys", "Client keys in the allow-list."), COUNT(curve.keys)},
    {STATUS("curve_revoked_messages"), .when = WHEN_CURVE,
     COUNTER("tsmine_curve_revoked_messages_total",
             "Messages refused because their key left the allow-list at a reload."),
     COUNT(curve.revoked)},
    {STATUS("curve_connections_cut"), .when = WHEN_CURVE,
     COUNTER("tsmine_curve_connections_cut_total",
             "Connections cut: of keys removed from the allow-list, and every alert "
             "subscriber's at a reload that removed keys."),
     COUNT(curve.cut)},
    /* the sources' and sinks' (source.h, sink.h) */
    {.how = ROW_IO, .unit = V_NONE},
};

/* The name of index i of set; NULL: no series. */
static const char *each_name(int set, int i) {
    switch (set) {
    case EACH_REASON: return tsd_reason_name(i);
    case EACH_KIND: return tsd_alert_kind_label(i);
    case EACH_PHASE: return tsd_phase_name(i);
    case EACH_SOCKET: return tsd_sock_kind_name(i);
    default: return tsd_auth_reason_name(i);
    }
}

/* The range [*first, *end) of set. */
static void each_range(int set, int *first, int *end) {
    static const int ends[] = {[EACH_KIND] = TSS_ALERT_KINDS,
                               [EACH_PHASE] = TSD_PHASES,
                               [EACH_SOCKET] = TSD_SOCK_KINDS,
                               [EACH_AUTH] = TSD_AUTH_REASONS};
    *first = set == EACH_REASON; /* reason 0 is none */
    *end = set == EACH_REASON ? tsd_reason_count() : ends[set];
}

/* The value at p, of unit, into x: what STATUS and /metrics show. */
static void value_of(int unit, const char *p, tsd_series *x) {
    uint64_t u = 0;
    double d = 0;
    int64_t i = 0;
    int flag = 0;
    switch (unit) {
    case V_COUNT:
    case V_NS: memcpy(&u, p, sizeof u); break;
    case V_FLAG: memcpy(&flag, p, sizeof flag), u = (uint64_t)flag; break;
    case V_TIME_NS: memcpy(&i, p, sizeof i); break;
    case V_NONE: break;
    default: memcpy(&d, p, sizeof d); break;
    }
    x->format = TSD_FMT_INT;
    x->count = x->status_value = u;
    switch (unit) {
    case V_NS: x->format = TSD_FMT_G9, x->real = 1e-9 * (double)u; break;
    case V_SECONDS:
        x->format = TSD_FMT_G9, x->real = d, x->status_value = (uint64_t)(d * 1e9);
        break;
    case V_REAL: x->format = TSD_FMT_F6, x->real = d; break;
    case V_TIME: x->format = TSD_FMT_F3, x->real = d, x->status_value = (uint64_t)d; break;
    case V_TIME_NS:
        x->format = TSD_FMT_F3, x->real = (double)i * 1e-9;
        x->status_value = (uint64_t)(i / 1000000000);
        break;
    }
}

/* A ROW_EACH key pattern with its %s replaced by name, into key (size len). */
static const char *status_key(char *key, size_t len, const char *pattern, const char *name) {
    const char *at = strstr(pattern, "%s");
    snprintf(key, len, "%.*s%s%s", (int)(at - pattern), pattern, name, at + 2);
    return key;
}

/* The series of row r at index i (ROW_ONE: -1) named name. */
static void one(const tsd_metrics_snapshot *s, const row *r, int i, const char *name,
                tsd_series_fn fn, void *ctx) {
    tsd_series x = {.field = r->field, .metric = r->metric, .type = r->type, .help = r->help};
    /* ROW_EACH: an array of uint64_t (COUNT, NS) */
    value_of(r->unit, (const char *)s + r->at + (size_t)(i < 0 ? 0 : i) * sizeof(uint64_t), &x);
    if (r->when == WHEN_NONZERO && x.count == 0)
        return;
    x.label[0] = r->label;
    x.label_value[0] = i < 0 ? r->label_value : name;
    char key[48];
    if (r->field == TSD_STATUS_ALERTS_BY_KIND) { /* the enum's names: "DISCORD", ... */
        const ProtobufCEnumValue *v =
            protobuf_c_enum_descriptor_get_value(&tsmine__v1__alert_kind__descriptor, i);
        x.status = v ? v->name : NULL;
    } else if (r->status) {
        x.status = i < 0 ? r->status : status_key(key, sizeof key, r->status, name);
    }
    fn(ctx, &x);
}

/* Every index of a ROW_EACH row, then the STATUS sum where it has one. */
static void each(const tsd_metrics_snapshot *s, const row *r, tsd_series_fn fn, void *ctx) {
    int first, end;
    each_range(r->each, &first, &end);
    uint64_t sum = 0;
    for (int i = first; i < end; i++) {
        const char *name = each_name(r->each, i);
        if (name)
            one(s, r, i, name, fn, ctx);
        uint64_t v; /* the sum is over every index, named or not (the kinds' slot 0) */
        memcpy(&v, (const char *)s + r->at + (size_t)i * sizeof v, sizeof v);
        sum += v;
    }
    if (r->status_sum)
        fn(ctx, &(tsd_series){.status = r->status_sum, .status_value = sum});
}

/* The open sources' and sinks' own rows (sink.h: tsd_counter). */
static void io(const tsd_metrics_snapshot *s, tsd_series_fn fn, void *ctx) {
    for (size_t i = 0; i < s->n_io_counters; i++) {
        const tsd_counter *c = &s->io_counters[i];
        fn(ctx, &(tsd_series){.status = c->status,
                              .status_value = c->value,
                              .metric = c->metric,
                              .type = c->type,
                              .help = c->help,
                              .format = c->timestamp ? TSD_FMT_F3 : TSD_FMT_INT,
                              .count = c->value,
                              .real = c->seconds});
    }
}

void tsd_counters_walk(const tsd_metrics_snapshot *s, tsd_series_fn fn, void *ctx) {
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++) {
        const row *r = &table[k];
        if (r->when == WHEN_CURVE && !s->curve.enabled)
            continue;
        switch (r->how) {
        case ROW_ONE: one(s, r, -1, NULL, fn, ctx); break;
        case ROW_EACH: each(s, r, fn, ctx); break;
        case ROW_IO: io(s, fn, ctx); break;
        case ROW_BUILD_INFO:
            fn(ctx, &(tsd_series){
                        .metric = r->metric,
                        .type = r->type,
                        .help = r->help,
                        .label = {"version", "backend"},
                        .label_value = {s->version ? s->version : "", s->backend ? s->backend : ""},
                        .count = 1});
            break;
        }
    }
}
