/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_text.c - the Prometheus text format of a metrics snapshot (pure). */
#include "text_buf.h"
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>

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

static void header(tsd_text *t, const char *name, const char *type, const char *help) {
    tsd_text_put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void scalar(tsd_text *t, const char *name, const char *type, const char *help, uint64_t v) {
    header(t, name, type, help);
    tsd_text_put(t, "%s %llu\n", name, (unsigned long long)v);
}

static void real(tsd_text *t, const char *name, const char *type, const char *help, double v) {
    header(t, name, type, help);
    tsd_text_put(t, "%s %.6f\n", name, v);
}

/* The checkpoints' work (ckpt_job.h). */
static void checkpoints(tsd_text *t, const tsd_ckpt_stats *c) {
    real(t, "tsmine_checkpoint_duration_seconds", "gauge",
         "The last checkpoint, from its start to its last fsync.", c->last_duration_s);
    real(t, "tsmine_checkpoint_stall_seconds", "gauge",
         "Main loop time the last checkpoint took (looking at the streams, copying the "
         "changed ones), in all.",
         c->last_stall_s);
    real(t, "tsmine_checkpoint_stall_max_seconds", "gauge",
         "The longest the last checkpoint held the main loop at once.", c->last_max_step_s);
    scalar(t, "tsmine_checkpoint_streams_written", "gauge",
           "Streams the last checkpoint wrote (those that changed since the one before).",
           c->last_records);
    scalar(t, "tsmine_checkpoint_written_bytes_total", "counter",
           "Bytes of checkpoint files written.", c->bytes);
    scalar(t, "tsmine_checkpoint_files_total", "counter",
           "Checkpoint files written or removed (one per group of streams that changed).",
           c->files);
    header(t, "tsmine_checkpoint_last_success_timestamp_seconds", "gauge",
           "When the last checkpoint that wrote every file it had to ended (0: none yet).");
    tsd_text_put(t, "tsmine_checkpoint_last_success_timestamp_seconds %.3f\n",
                 (double)c->last_success_ns * 1e-9);
}

/* One series per alert kind, labelled kind="discord" ... (tsd_alert_kind_label). */
static void by_kind(tsd_text *t, const char *name, const char *type, const char *help,
                    const uint64_t v[TSS_ALERT_KINDS]) {
    header(t, name, type, help);
    for (int k = 0; k < TSS_ALERT_KINDS; k++)
        if (tsd_alert_kind_label(k))
            tsd_text_put(t, "%s{kind=\"%s\"} %llu\n", name, tsd_alert_kind_label(k),
                         (unsigned long long)v[k]);
}

/* The process_* series of Prometheus's client libraries. */
static void process(tsd_text *t, const tsd_process_stats *p) {
    header(t, "process_start_time_seconds", "gauge",
           "Start time of the process since unix epoch in seconds.");
    tsd_text_put(t, "process_start_time_seconds %.3f\n", p->start_time_s);
    header(t, "process_cpu_seconds_total", "counter",
           "Total user and system CPU time spent in seconds.");
    tsd_text_put(t, "process_cpu_seconds_total %.3f\n", p->cpu_s);
    scalar(t, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
           p->resident_bytes);
    scalar(t, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
           p->virtual_bytes);
    scalar(t, "process_open_fds", "gauge", "Number of open file descriptors.", p->open_fds);
    if (p->max_fds)
        scalar(t, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
               p->max_fds);
}

size_t tsd_metrics_format(const tsd_metrics_snapshot *s, char *buf, size_t len) {
    tsd_text t = {buf, len, 0};
    if (len)
        buf[0] = '\0';
    header(&t, "tsmine_build_info", "gauge",
           "Always 1: the version and the compute backend in use, as labels.");
    tsd_text_put(&t, "tsmine_build_info{version=\"%s\",backend=\"%s\"} 1\n",
                 s->version ? s->version : "", s->backend ? s->backend : "");
    process(&t, &s->process);
    scalar(&t, "tsmine_reloads_total", "counter",
           "Configuration reloads asked for (SIGHUP, RELOAD).", s->reloads);
    scalar(&t, "tsmine_reload_failures_total", "counter",
           "Reloads refused: the running configuration stayed.", s->reload_failures);
    scalar(&t, "tsmine_last_reload_success", "gauge",
           "1 when the last reload took the new configuration (and before any), else 0.",
           (uint64_t)s->last_reload_ok);
    header(&t, "tsmine_last_reload_timestamp_seconds", "gauge",
           "When the last reload happened (seconds since the epoch; 0: none yet).");
    tsd_text_put(&t, "tsmine_last_reload_timestamp_seconds %.3f\n", s->last_reload_time_s);
    scalar(&t, "tsmine_ingest_samples_total", "counter", "Samples accepted into streams.",
           s->samples);
    scalar(&t, "tsmine_ingest_bytes_total", "counter", "Ingest message bytes received.", s->bytes);
    scalar(&t, "tsmine_ingest_messages_total", "counter", "Ingest messages received.", s->messages);
    header(&t, "tsmine_ingest_messages_rejected_total", "counter",
           "Ingest messages rejected, by reason.");
    for (int r = 1; r < tsd_reason_count(); r++)
        tsd_text_put(&t, "tsmine_ingest_messages_rejected_total{reason=\"%s\"} %llu\n",
                     tsd_reason_name(r), (unsigned long long)s->rejected[r]);
    by_kind(&t, "tsmine_alerts_total", "counter",
            "Alerts found, by kind: each one is published, dropped or queued (the three "
            "series below add up to this one at every scrape).",
            s->alerts);
    by_kind(&t, "tsmine_alerts_published_total", "counter", "Alerts handed to ZeroMQ, by kind.",
            s->alerts_published);
    by_kind(&t, "tsmine_alert_drops_total", "counter",
            "Alerts that could not be handed to ZeroMQ and reached no subscriber, by kind "
            "(the publisher queue was full, or encoding or sending failed). Alerts a slow "
            "subscriber loses at its own high-water mark (alerts.hwm) are invisible to the "
            "publisher and not counted here: that subscriber sees gaps in the seq of its "
            "streams' alerts.",
            s->alerts_dropped);
    by_kind(&t, "tsmine_alerts_queued", "gauge",
            "Alerts found and not yet published nor dropped (the publisher's queue), by kind.",
            s->alerts_queued);
    scalar(&t, "tsmine_pass_failures_total", "counter",
           "Detection passes that failed (skipped for the streams concerned).", s->pass_failures);
    static const char *const pass[TSD_PASSES] = {"online", "discord", "motif"};
    header(&t, "tsmine_pass_seconds_total", "counter",
           "Time spent in each detection phase (discord, motif: summed over pass threads).");
    for (int p = 0; p < TSD_PASSES; p++)
        tsd_text_put(&t, "tsmine_pass_seconds_total{pass=\"%s\"} %.9g\n", pass[p],
                     s->pass_seconds[p]);
    scalar(&t, "tsmine_processed_samples_total", "counter",
           "Samples the ticks moved into the windows and scored.", s->processed);
    scalar(&t, "tsmine_pending_passes", "gauge", "Streams whose windowed passes wait or run now.",
           s->pending_passes);
    scalar(&t, "tsmine_pending_samples", "gauge", "Samples accepted and not yet processed.",
           s->pending);
    scalar(&t, "tsmine_ticks_total", "counter", "Engine ticks.", s->ticks);
    header(&t, "tsmine_streams_removed_total", "counter",
           "Streams removed: idle past idle_expiry, evicted for a new one, or deleted.");
    tsd_text_put(&t, "tsmine_streams_removed_total{why=\"expired\"} %llu\n",
                 (unsigned long long)s->streams_expired);
    tsd_text_put(&t, "tsmine_streams_removed_total{why=\"evicted\"} %llu\n",
                 (unsigned long long)s->streams_evicted);
    tsd_text_put(&t, "tsmine_streams_removed_total{why=\"deleted\"} %llu\n",
                 (unsigned long long)s->streams_deleted);
    scalar(&t, "tsmine_samples_dropped_total", "counter",
           "Samples accepted and never processed: their stream was removed.", s->samples_dropped);
    header(&t, "tsmine_busy_seconds_total", "counter",
           "Time the main thread spent outside zmq_poll.");
    tsd_text_put(&t, "tsmine_busy_seconds_total %.9g\n", 1e-9 * (double)s->busy_ns);
    header(&t, "tsmine_phase_seconds_total", "counter",
           "Main-thread busy time by phase (disjoint: they add up to tsmine_busy_seconds_total).");
    for (int p = 0; p < TSD_PHASES; p++)
        tsd_text_put(&t, "tsmine_phase_seconds_total{phase=\"%s\"} %.9g\n", tsd_phase_name(p),
                     1e-9 * (double)s->phase_ns[p]);
    scalar(&t, "tsmine_ring_samples", "gauge", "Samples held in all stream windows.",
           s->ring_samples);
    scalar(&t, "tsmine_ring_bytes", "gauge", "Memory held by the ring buffers.", s->ring_bytes);
    scalar(&t, "tsmine_streams", "gauge", "Streams known to the daemon.", s->streams);
    header(&t, "tsmine_http_connections_refused_total", "counter",
           "Connections to this server refused: per_host (4 open from one host), full (16 "
           "requests under way).");
    tsd_text_put(&t, "tsmine_http_connections_refused_total{reason=\"per_host\"} %llu\n",
                 (unsigned long long)s->http.refused_per_host);
    tsd_text_put(&t, "tsmine_http_connections_refused_total{reason=\"full\"} %llu\n",
                 (unsigned long long)s->http.refused_full);
    scalar(&t, "tsmine_http_connections_cut_total", "counter",
           "Connections to this server cut: no complete request within 5 s, or the longest "
           "waiting for one, evicted for a new connection with all 16 slots taken.",
           s->http.cut_slow);
    scalar(&t, "tsmine_checkpoints_total", "counter",
           "Checkpoints done (each writes only the groups of streams that changed).",
           s->checkpoints);
    scalar(&t, "tsmine_checkpoint_failures_total", "counter",
           "Checkpoints of which a file could not be written (its previous one is kept; "
           "retried at the next checkpoint).",
           s->checkpoint_failures);
    checkpoints(&t, &s->ckpt);
    scalar(&t, "tsmine_checkpoint_streams_dropped_total", "counter",
           "Streams of the checkpoint restored at start that were left out, beyond "
           "max_streams (the first streams created are kept).",
           s->checkpoint_streams_dropped);
    scalar(&t, "tsmine_checkpoint_duplicates_total", "counter",
           "Stream records of the checkpoint restored at start that were set aside because "
           "another record of the stream was newer (later epoch, then higher next_seq).",
           s->checkpoint_duplicates);
    scalar(&t, "tsmine_log_lines_dropped_total", "counter",
           "Log lines dropped over the process-wide budget of lines per second.", s->log_dropped);
    scalar(&t, "tsmine_control_reply_drops_total", "counter",
           "Control replies dropped: the client was gone or did not read its replies.",
           s->control_reply_drops);
    /* memory and connections of peers (guard.h) */
    const tsd_guard_counters *g = &s->guard;
    scalar(&t, "tsmine_memory_budget_bytes", "gauge",
           "Resident memory above which peers are shed and new streams refused.", g->memory_budget);
    scalar(&t, "tsmine_memory_pressure", "gauge", "1 while memory is over budget.", g->pressure);
    header(&t, "tsmine_peers_cut_total", "counter",
           "Peer connections cut, by reason (memory: held too many unread bytes, or the most "
           "while memory was over budget; connections: beyond their socket's share).");
    tsd_text_put(&t, "tsmine_peers_cut_total{reason=\"memory\"} %llu\n",
                 (unsigned long long)g->cut_memory);
    tsd_text_put(&t, "tsmine_peers_cut_total{reason=\"connections\"} %llu\n",
                 (unsigned long long)g->cut_connections);
    header(&t, "tsmine_connections", "gauge", "Peer connections, by socket.");
    for (int k = 0; k < TSD_SOCK_KINDS; k++)
        tsd_text_put(&t, "tsmine_connections{socket=\"%s\"} %llu\n", tsd_sock_kind_name(k),
                     (unsigned long long)g->connections[k]);
    if (s->curve.enabled) {
        scalar(&t, "tsmine_curve_handshakes_total", "counter",
               "CURVE handshakes completed by allowed clients.", s->curve.handshakes);
        header(&t, "tsmine_curve_rejected_total", "counter",
               "Refused handshakes, by reason (key: not in the allow-list; protocol: not a "
               "CURVE client or a malformed handshake; other: cut short). A refused client "
               "counts once per reconnection attempt.");
        for (int r = 0; r < TSD_AUTH_REASONS; r++)
            tsd_text_put(&t, "tsmine_curve_rejected_total{reason=\"%s\"} %llu\n",
                         tsd_auth_reason_name(r), (unsigned long long)s->curve.rejected[r]);
        scalar(&t, "tsmine_curve_authorized_keys", "gauge", "Client keys in the allow-list.",
               s->curve.keys);
        scalar(&t, "tsmine_curve_revoked_messages_total", "counter",
               "Messages refused because their key left the allow-list at a reload.",
               s->curve.revoked);
        scalar(&t, "tsmine_curve_connections_cut_total", "counter",
               "Connections cut: of keys removed from the allow-list, and every alert "
               "subscriber's at a reload that removed keys.",
               s->curve.cut);
    }
    for (size_t i = 0; i < s->n_io_counters; i++) { /* the sources' and sinks' (source.h, sink.h) */
        const tsd_counter *c = &s->io_counters[i];
        if (!c->metric)
            continue;
        if (!c->timestamp) {
            scalar(&t, c->metric, c->type, c->help, c->value);
            continue;
        }
        header(&t, c->metric, c->type, c->help);
        tsd_text_put(&t, "%s %.3f\n", c->metric, c->seconds);
    }
    return t.used;
}
