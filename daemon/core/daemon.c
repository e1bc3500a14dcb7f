/* SPDX-License-Identifier: Apache-2.0 */
/* daemon.c - start-up and shut-down of tsmined, checkpoints and counter snapshots. */
#include "daemon/core/daemon.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "daemon/state/ckpt_job.h"
#include "daemon/state/state_files.h"
#include "engine_checkpoint.h"

/* Engine callbacks (user = the daemon). */
static void on_alert(void *user, const char *stream_id, const tss_alert *alert) {
    tsd_daemon *d = user;
    tsd_alerts_publish(&d->alerts, stream_id, alert);
}

static void on_alerts_end(void *user) {
    tsd_daemon *d = user;
    tsd_alerts_flush(&d->alerts);
}

static int params_for(void *user, const char *stream_id, tss_params *out) {
    tsd_daemon *d = user;
    *out = tsc_stream_params_for(&d->cfg, stream_id);
    return 0;
}

/* Reading one file of the restore at start (tsd_ckpt_read's fn). */
typedef struct {
    tsd_daemon *d;
    tss_restore *rs;
    uint32_t group, count;
} restore_file;

static int load_fn(void *user, FILE *f, char *err, unsigned errlen) {
    restore_file *rf = user;
    tss_load_report *rep = &rf->d->restore_report;
    rep->read_errno = 0;
    if (tss_restore_read(rf->rs, f, rf->group, &rf->count, rep, err, errlen) == 0)
        return 0;
    return rep->read_errno ? TSD_CKPT_EIO : -1;
}

/* Removes the file of every stream once every group's file holds what the engine does
 * (a checkpoint succeeded after the restore that read it), then makes the removal
 * durable. Until then it stays: a start that finds it beside the group files keeps the
 * newer record of each stream (tss_restore_finish), so a conversion cut short by a
 * crash or a full disk loses nothing. */
static void remove_legacy(tsd_daemon *d) {
    char path[4200], err[1024];
    snprintf(path, sizeof path, "%s/%s", d->state_dir, TSD_CKPT_NAME);
    if (unlink(path) != 0 && errno != ENOENT) {
        tsd_log(TSD_LOG_ERR, "checkpoint: cannot remove %s: %s (retried after the next one)", path,
                strerror(errno));
        return;
    }
    d->legacy_pending = 0;
    if (tsd_ckpt_sync_dir(d->state_dir, err, sizeof err) != 0)
        tsd_log(TSD_LOG_WARNING, "checkpoint: %s", err);
    tsd_log(TSD_LOG_NOTICE, "checkpoint: %s rewritten as one file per group", path);
}

/* A checkpoint has ended (ck: its result, err its message): the counters, the log. */
static void checkpoint_ended(tsd_daemon *d, int ck, const char *err) {
    tsd_ckpt_stats st;
    tsd_ckpt_job_stats(d->ckpt, &st);
    d->checkpoints = st.done;
    d->checkpoint_failures = st.failures;
    if (ck == 0 && d->legacy_pending)
        remove_legacy(d);
    if (ck != 0)
        tsd_log(TSD_LOG_ERR,
                "checkpoint: %s (the files not written keep the previous checkpoint of their "
                "streams; retried at the next one)",
                err);
    else
        tsd_log(TSD_LOG_DEBUG,
                "checkpoint: %llu streams written (%llu bytes) in %.3f s; the main loop held "
                "%.3f ms (longest step %.3f ms, most CPU in a step %.3f ms)",
                (unsigned long long)st.last_records, (unsigned long long)st.last_bytes,
                st.last_duration_s, 1e3 * st.last_stall_s, 1e3 * st.last_max_step_s,
                1e3 * st.last_max_step_cpu_s);
}

void tsd_daemon_checkpoint_start(tsd_daemon *d) {
    if (d->ckpt && tsd_ckpt_job_start(d->ckpt) != 0)
        tsd_log(TSD_LOG_ERR, "checkpoint: out of memory; retried at the next one");
}

long tsd_daemon_checkpoint_step(tsd_daemon *d) {
    long wait = -1;
    if (d->ckpt && tsd_ckpt_job_step(d->ckpt, d->engine, &wait) == 1) {
        char err[1024] = "";
        int ck = tsd_ckpt_job_result(d->ckpt, err, sizeof err);
        checkpoint_ended(d, ck, err);
    }
    return wait;
}

int tsd_daemon_checkpoint(tsd_daemon *d) {
    if (!d->ckpt)
        return 0;
    char err[1024] = "";
    int ck = tsd_ckpt_job_run(d->ckpt, d->engine, err, sizeof err);
    checkpoint_ended(d, ck, err);
    return ck;
}

/* Reads one checkpoint file into rf->rs; 0, or EX_IOERR when it could not be read. *n
 * counts the files loaded. */
static int restore_one(tsd_daemon *d, const char *name, restore_file *rf, size_t *n) {
    char err[5200];
    switch (tsd_ckpt_read(d->state_dir, name, load_fn, rf, err, sizeof err)) {
    case TSD_CKPT_LOADED: ++*n; break;
    case TSD_CKPT_NONE: break;
    case TSD_CKPT_REJECTED:
        tsd_log(TSD_LOG_WARNING, "checkpoint: %s; its streams start empty", err);
        break;
    case TSD_CKPT_UNREADABLE: tsd_log(TSD_LOG_ERR, "checkpoint: %s", err); return EX_IOERR;
    }
    return 0;
}

/* A checkpoint file's name for messages: its group's, or the file of every stream. */
static void file_name_of(uint32_t file, char *name, size_t len) {
    if (file == TSS_CKPT_ALL)
        snprintf(name, len, "%s", TSD_CKPT_NAME);
    else
        tsd_ckpt_group_name(file, name, len);
}

/* Logs the stream records the restore set aside (tss_load_report.duplicates). */
static void log_duplicates(const tsd_daemon *d) {
    const tss_load_report *rep = &d->restore_report;
    for (size_t k = 0; k < rep->duplicates && k < TSS_LOAD_DUPS_NOTED; k++) {
        const tss_load_dup *dup = &rep->dup[k];
        char from[64], kept[64];
        file_name_of(dup->file, from, sizeof from);
        file_name_of(dup->kept_file, kept, sizeof kept);
        tsd_log(TSD_LOG_WARNING,
                "checkpoint: stream \"%s\" saved twice: the record in %s (epoch %llu, next_seq "
                "%llu) is set aside for the one in %s (epoch %llu, next_seq %llu)",
                dup->id, from, (unsigned long long)dup->epoch, (unsigned long long)dup->next_seq,
                kept, (unsigned long long)dup->kept_epoch, (unsigned long long)dup->kept_next_seq);
    }
    if (rep->duplicates > TSS_LOAD_DUPS_NOTED)
        tsd_log(TSD_LOG_WARNING, "checkpoint: %zu more stream records set aside likewise",
                rep->duplicates - TSS_LOAD_DUPS_NOTED);
}

/* Restores the checkpoint: every group's file (tsd_ckpt_group_name), and a file of
 * every stream (TSD_CKPT_NAME) if there is one (refused when of format 3 or before; its
 * streams are written as groups at the first checkpoint, and it is removed once that
 * succeeded: remove_legacy). A stream found twice keeps its newer record (tss_load_report).
 * A rejected file is set aside and its streams start empty; the others load. Returns 0,
 * or EX_IOERR when a file could not be read (it is left in place: starting would
 * overwrite it at the first checkpoint), or EX_OSERR when out of memory (nothing on
 * disk is touched). */
static int restore(tsd_daemon *d) {
    if (!d->state_dir[0])
        return 0;
    char err[1024];
    restore_file rf = {.d = d};
    if (tsd_ckpt_job_open(d->state_dir, &d->ckpt, err, sizeof err) != 0 ||
        tss_restore_new(d->cfg.max_streams, &rf.rs) != 0) {
        tsd_log(TSD_LOG_ERR, "%s", err);
        return EX_OSERR;
    }
    size_t files = 0, whole = 0;
    int rc = 0;
    for (uint32_t g = 0; g < TSS_CKPT_GROUPS && rc == 0; g++) {
        char name[64];
        tsd_ckpt_group_name(g, name, sizeof name);
        rf.group = g, rf.count = 0;
        rc = restore_one(d, name, &rf, &files);
        tsd_ckpt_job_set_disk(d->ckpt, g, rf.count);
    }
    rf.group = TSS_CKPT_ALL, rf.count = 0;
    if (rc == 0)
        rc = restore_one(d, TSD_CKPT_NAME, &rf, &whole);
    if (rc == 0 && tss_restore_finish(d->engine, rf.rs, &d->restore_report, err, sizeof err) != 0) {
        /* starting empty would rewrite every group's file empty at the first checkpoint */
        tsd_log(TSD_LOG_ERR, "checkpoint: %s; not starting (the files are left as they are)", err);
        rc = EX_OSERR;
    }
    tss_restore_destroy(&rf.rs);
    if (rc != 0)
        return rc;
    if (files + whole)
        tsd_log(TSD_LOG_INFO, "checkpoint: restored %zu streams from %zu files in %s",
                tss_engine_stream_count(d->engine), files + whole, d->state_dir);
    else
        tsd_log(TSD_LOG_INFO, "checkpoint: none in %s, starting empty", d->state_dir);
    log_duplicates(d);
    d->checkpoint_duplicates = d->restore_report.duplicates;
    d->checkpoint_streams_dropped = d->restore_report.dropped;
    if (d->restore_report.dropped)
        tsd_log(TSD_LOG_WARNING,
                "checkpoint: %zu more streams dropped, beyond max_streams = %u (the "
                "first streams created are kept; the first dropped: \"%s\")",
                d->restore_report.dropped, d->cfg.max_streams, d->restore_report.first_dropped);
    if (whole) { /* a file of every stream: into groups now; it goes once they are written */
        for (uint32_t g = 0; g < TSS_CKPT_GROUPS; g++)
            tsd_ckpt_job_set_disk(d->ckpt, g, -1);
        d->legacy_pending = 1;
        tsd_daemon_checkpoint(d); /* (checkpoint_ended removes it when this succeeded) */
    }
    return 0;
}

/* The restored streams take the configuration's parameters now, as a SIGHUP would
 * apply them (tss_engine_reparam), rather than keep those of the checkpoint until
 * one. After the alerts are set up: an event a new threshold closes publishes its
 * ANOMALY_END. */
static void apply_params(tsd_daemon *d) {
    if (!tss_engine_stream_count(d->engine))
        return;
    size_t n = tss_engine_reparam(d->engine);
    if (n)
        tsd_log(TSD_LOG_NOTICE,
                "checkpoint: %zu streams of the checkpoint took the configuration's parameters", n);
}

/* The streams with an event open in the engine now into ev, the ids malloc'd in *mem
 * (the caller frees it); 0, or -1 when out of memory. O(streams). */
static int open_events(const tsd_daemon *d, tsd_open_events *ev, void **mem) {
    ev->at_ns = tsd_realtime_ns(); /* before the walk: what opened later is kept */
    const size_t streams = tss_engine_stream_count(d->engine);
    size_t n = 0, k = 0;
    tss_stream_info info;
    for (size_t i = 0; i < streams; i++)
        n += tss_engine_stream_at(d->engine, i, &info) == 0 && info.event_open;
    char(*ids)[TSS_MAX_ID + 1] = n ? malloc(n * sizeof *ids) : NULL;
    *mem = ids;
    if (n && !ids)
        return -1;
    for (size_t i = 0; i < streams && k < n; i++)
        if (tss_engine_stream_at(d->engine, i, &info) == 0 && info.event_open)
            memcpy(ids[k++], info.id, sizeof ids[0]);
    ev->ids = (const char(*)[TSS_MAX_ID + 1]) ids, ev->n = k;
    return 0;
}

/* The events the checkpoint left open go to the sinks' restore hooks (Alertmanager
 * goes on re-sending them), after apply_params (a new threshold may have closed some). */
static void restore_sinks(tsd_daemon *d) {
    tsd_open_events ev;
    void *mem = NULL;
    if (open_events(d, &ev, &mem) == 0) /* once: every sink gets the same list */
        for (size_t i = 0; i < d->nsinks; i++)
            if (d->sinks[i].ops->restore)
                d->sinks[i].ops->restore(d->sinks[i].self, &ev);
    free(mem);
}

uint64_t tsd_daemon_sinks_periodic(tsd_daemon *d, uint64_t now) {
    uint64_t next = UINT64_MAX;
    tsd_open_events ev;
    void *mem = NULL;
    int have = 0; /* 1: ev holds the open events, -1: out of memory (retried next call) */
    for (size_t i = 0; i < d->nsinks; i++) {
        tsd_sink *s = &d->sinks[i];
        if (!s->ops->periodic)
            continue;
        if (now >= s->next_periodic && !have)
            have = open_events(d, &ev, &mem) == 0 ? 1 : -1;
        if (now >= s->next_periodic && have > 0)
            s->next_periodic = now + s->ops->periodic(s->self, &ev);
        next = s->next_periodic < next ? s->next_periodic : next;
    }
    free(mem);
    return next;
}

tss_limits tsd_limits_of(const tsc_config *c) {
    return (tss_limits){
        .max_seq_jump = c->max_seq_jump,
        .max_ahead_s = c->max_time_ahead_s,
        .idle_expiry_s = c->stream_idle_expiry_s,
        .when_full = strcmp(c->when_full, "refuse") == 0 ? TSS_FULL_REFUSE : TSS_FULL_EVICT_IDLE,
        .evict_min_idle_s = c->evict_min_idle_s,
    };
}

static int open_engine(tsd_daemon *d) {
    tsm_backend want;
    if (tsm_backend_parse(d->cfg.backend, &want) != 0) {
        tsd_log(TSD_LOG_ERR, "backend \"%s\": expected auto, cpu or cuda", d->cfg.backend);
        return EX_CONFIG;
    }
    tss_engine_options opt = {.backend = want,
                              .threads = d->cfg.threads,
                              .max_streams = d->cfg.max_streams,
                              .on_alert = on_alert,
                              .on_alerts_end = on_alerts_end,
                              .params_for = params_for,
                              .user = d,
                              .overlap_passes = 1,
                              .tick_budget_s = TSD_TICK_TARGET_NS * 1e-9,
                              .limits = tsd_limits_of(&d->cfg)};
    char err[512];
    if (tss_engine_new(&opt, &d->engine, err, sizeof err) != 0) {
        tsd_log(TSD_LOG_ERR, "engine (backend %s): %s", d->cfg.backend, err);
        return EX_UNAVAILABLE;
    }
    tsd_log(TSD_LOG_INFO, "backend: %s%s", tsm_backend_name(tss_engine_backend(d->engine)),
            want == TSM_BACKEND_AUTO ? " (auto)" : "");
    const char *why;
    int sms = tss_engine_pass_sms(d->engine, &why);
    if (sms)
        tsd_log(TSD_LOG_INFO, "passes: confined to %d SMs, the others kept for the rounds", sms);
    else if (tss_engine_backend(d->engine) == TSM_BACKEND_CUDA)
        tsd_log(TSD_LOG_WARNING, "passes: not confined, they share every SM with the rounds: %s",
                why);
    return 0;
}

/* What the engine's window storage may still take: tsd_daemon_as_room. */
static uint64_t engine_room(void *d) {
    return tsd_daemon_as_room(d);
}

int tsd_daemon_open(tsd_daemon *d, const tsc_config *cfg, const char *config_path) {
    memset(d, 0, sizeof *d);
    d->cfg = *cfg;
    snprintf(d->config_path, sizeof d->config_path, "%s", config_path ? config_path : "");
    d->started_ns = tsd_now_ns();
    d->started_realtime_ns = tsd_realtime_ns();
    d->last_reload_ok = 1;
    /* systemd's RuntimeDirectory= (a list: the first) holds the reload outcome */
    const char *rt = getenv("RUNTIME_DIRECTORY");
    if (rt)
        snprintf(d->runtime_dir, sizeof d->runtime_dir, "%.*s", (int)strcspn(rt, ":"), rt);
    tsd_log_set_level(tsd_log_level_parse(cfg->log_level));
    tsd_ingest_init(&d->ingest, cfg->max_message_size, cfg->log_rate_per_s);
    tsd_ratelimit_init(&d->control_limit, cfg->log_rate_per_s);
    tsd_ratelimit_init(&d->tick_limit, cfg->log_rate_per_s);
    tsd_notify_init(&d->notify);

    char msg[4200];
    if (tsd_resources_init(&d->res, msg, sizeof msg) != 0) { /* before any thread starts */
        tsd_log(TSD_LOG_ERR, "%s", msg);
        return EX_OSERR;
    }
    if (tsd_ckpt_resolve_dir(cfg->state_dir, d->config_path[0] != '\0', d->state_dir,
                             sizeof d->state_dir, msg, sizeof msg) != 0) {
        tsd_log(TSD_LOG_ERR, "%s", msg);
        return EX_CANTCREAT;
    }
    if (msg[0])
        tsd_log(TSD_LOG_WARNING, "%s", msg);
    else
        tsd_log(TSD_LOG_INFO, "checkpoints: %s/streams-XX.ckpt", d->state_dir);

    int rc = open_engine(d);
    if (rc || (rc = restore(d)) != 0)
        goto fail;
    if ((rc = tsd_sockets_open(&d->sock, cfg, msg, sizeof msg)) != 0) {
        tsd_log(TSD_LOG_ERR, "%s", msg);
        rc = rc == TSD_SOCKETS_EKEYS ? EX_CONFIG : EX_UNAVAILABLE; /* key files: config */
        goto fail;
    }
    if (d->sock.security) { /* CURVE: every ingest message is checked against the allow-list */
        tsd_security_set_stream_owners(d->sock.security, cfg->curve_stream_owners);
        tsd_ingest_set_admit(&d->ingest, tsd_security_admit, d->sock.security);
    }
    tsd_alerts_init(&d->alerts, cfg->log_rate_per_s);
    const tsd_sink_env env = {.cfg = &d->cfg, .pub = d->sock.pub};
    if ((rc = tsd_sinks_open(d->sinks, &d->nsinks, &env, msg, sizeof msg)) != 0) {
        tsd_log(TSD_LOG_ERR, "%s", msg);
        goto fail;
    }
    for (size_t i = 0; i < d->nsinks; i++) /* TSD_SINKS_MAX each: always room */
        tsd_alerts_add_sink(&d->alerts, d->sinks[i].ops, d->sinks[i].self);
    apply_params(d);
    restore_sinks(d);
    const tsd_source_env senv = {.cfg = &d->cfg, .sock = &d->sock};
    if ((rc = tsd_sources_open(d->sources, &d->nsources, &senv, msg, sizeof msg)) != 0) {
        tsd_log(TSD_LOG_ERR, "%s", msg);
        goto fail;
    }
    if (tsd_metrics_start(cfg->metrics_listen, &d->metrics, msg, sizeof msg) != 0) {
        tsd_log(TSD_LOG_ERR, "%s", msg);
        rc = EX_UNAVAILABLE;
        goto fail;
    }
    if (msg[0])
        tsd_log(TSD_LOG_WARNING, "%s", msg);
    else if (d->metrics)
        tsd_log(TSD_LOG_INFO, "metrics: http://%s/metrics", cfg->metrics_listen);
    /* last: the descriptors open now are the daemon's own, the rest is for peers */
    if (d->res.address_space) {
        tsd_process_stats p;
        tsd_process_stats_get(0, 0, &p);
        tsd_resources_fit_descriptors(&d->res, tsd_daemon_as_room(d), p.open_fds);
    }
    tsd_guard_limits limits;
    tsd_resources_guard_limits(&d->res, cfg, &d->sock, &limits);
    if (tsd_guard_start(&d->guard, &limits, d->sock.bound, d->sock.n_bound, msg, sizeof msg))
        tsd_log(TSD_LOG_WARNING, "%s: peers' memory and connections are not limited", msg);
    else
        d->ingest.admit_new = tsd_guard_admit, d->ingest.admit_new_user = d->guard;
    if (d->res.address_space && (!d->guard || tsd_daemon_as_room(d) == 0)) {
        /* libzmq aborts when one of its allocations fails: a daemon started with less
         * than the guard's room (or without the guard) would die at its first busy moment */
        tsd_process_stats p;
        tsd_process_stats_get(0, 0, &p);
        tsd_log(TSD_LOG_ERR,
                "cannot run: the address space is limited to %llu MB and %llu MB are mapped "
                "once started, too little left for libzmq and the streams (raise ulimit -v or "
                "LimitAS=)",
                (unsigned long long)(d->res.address_space >> 20),
                (unsigned long long)(p.virtual_bytes >> 20));
        rc = EX_OSERR;
        goto fail;
    }
    if (d->res.address_space) /* the streams' windows grow only within that room too */
        tss_engine_set_room(d->engine, engine_room, d);
    tsd_metrics_snapshot snap;
    tsd_daemon_snapshot(d, &snap);
    tsd_metrics_publish(d->metrics, &snap);
    return 0;
fail:
    tsd_daemon_close(d);
    return rc;
}

uint64_t tsd_daemon_as_room(const tsd_daemon *d) {
    const uint64_t as = d->res.address_space;
    if (!as)
        return UINT64_MAX;
    tsd_process_stats p;
    tsd_process_stats_get(0, 0, &p);
    const uint64_t keep = tsd_guard_as_margin(as);
    return p.virtual_bytes + keep < as ? as - keep - p.virtual_bytes : 0;
}

void tsd_daemon_close(tsd_daemon *d) {
    tsd_guard_stop(&d->guard);
    tsd_sources_close(d->sources, &d->nsources);
    tsd_metrics_stop(&d->metrics); /* first: its thread reads nothing else, but stop early */
    tsd_sinks_close(d->sinks, &d->nsinks); /* after the publisher thread, their caller, stopped */
    tsd_sockets_close(&d->sock);
    tsd_ckpt_job_close(&d->ckpt);
    tss_engine_destroy(&d->engine);
}

/* a - b, or 0 when b > a (phase times measured on either side of a clock read). */
static uint64_t minus(uint64_t a, uint64_t b) {
    return a > b ? a - b : 0;
}

void tsd_daemon_snapshot(const tsd_daemon *d, tsd_metrics_snapshot *s) {
    memset(s, 0, sizeof *s);
    const tsd_ingest_counters *in = &d->ingest.count;
    s->samples = in->samples;
    s->bytes = in->bytes;
    s->messages = in->messages;
    s->accepted = in->accepted;
    memcpy(s->rejected, in->rejected, sizeof s->rejected);
    memcpy(s->alerts, d->alerts.found, sizeof s->alerts);
    memcpy(s->alerts_published, d->alerts.published, sizeof s->alerts_published);
    memcpy(s->alerts_dropped, d->alerts.dropped, sizeof s->alerts_dropped);
    memcpy(s->alerts_queued, d->alerts.queued, sizeof s->alerts_queued);
    s->alert_drops = d->alerts.drops;
    s->alert_errors = d->alerts.errors;
    s->busy_ns = d->ns_busy;
    s->publisher_ns = d->alerts.ns_send;
    uint64_t *ph = s->phase_ns;
    ph[TSD_PHASE_DECODE] = in->ns_decode;
    ph[TSD_PHASE_STAGE] = in->ns_stage;
    ph[TSD_PHASE_RECEIVE] = minus(d->ns_drain, in->ns_decode + in->ns_stage);
    ph[TSD_PHASE_PUBLISH] = d->alerts.ns_publish;
    tss_engine_counters c = {0};
    if (d->engine)
        tss_engine_counters_get(d->engine, &c);
    ph[TSD_PHASE_ONLINE] = (uint64_t)(c.seconds_online * 1e9);
    ph[TSD_PHASE_PASSES] = (uint64_t)(c.seconds_passes * 1e9);
    uint64_t known = 0;
    for (int p = 0; p < TSD_PHASES; p++)
        known += p == TSD_PHASE_OTHER ? 0 : ph[p];
    ph[TSD_PHASE_OTHER] = minus(d->ns_busy, known);
    tsd_security_counters_get(d->sock.security, &s->curve);
    tsd_metrics_http_counters(d->metrics, &s->http);
    s->checkpoints = d->checkpoints;
    if (d->ckpt)
        tsd_ckpt_job_stats(d->ckpt, &s->ckpt);
    s->checkpoint_failures = d->checkpoint_failures;
    s->checkpoint_streams_dropped = d->checkpoint_streams_dropped;
    s->checkpoint_duplicates = d->checkpoint_duplicates;
    tsd_guard_counters_get(d->guard, &s->guard);
    s->control_requests = d->control_requests;
    s->control_errors = d->control_errors;
    s->control_reply_drops = d->control_reply_drops;
    s->uptime_s = (tsd_now_ns() - d->started_ns) / 1000000000ull;
    s->n_io_counters =
        tsd_sources_counters(d->sources, d->nsources, s->io_counters, TSD_IO_COUNTERS);
    s->n_io_counters += tsd_sinks_counters(d->sinks, d->nsinks, s->io_counters + s->n_io_counters,
                                           TSD_IO_COUNTERS - s->n_io_counters);
    s->log_dropped = tsd_log_dropped();
    s->version = TSMINE_VERSION;
    s->backend = d->engine ? tsm_backend_name(tss_engine_backend(d->engine)) : "";
    tsd_process_stats_get(d->started_realtime_ns, s->guard.fds, &s->process);
    s->reloads = d->reloads;
    s->reload_failures = d->reload_failures;
    s->last_reload_ok = d->last_reload_ok;
    s->last_reload_time_s = (double)d->last_reload_ns * 1e-9;
    if (!d->engine)
        return;
    s->pass_failures = c.pass_failures;
    s->pass_seconds[TSD_PASS_ONLINE] = c.seconds_online;
    s->pass_seconds[TSD_PASS_DISCORD] = c.seconds_discord;
    s->pass_seconds[TSD_PASS_MOTIF] = c.seconds_motif;
    s->ring_samples = c.ring_samples;
    s->ring_bytes = c.ring_bytes;
    s->streams = tss_engine_stream_count(d->engine);
    s->processed = c.samples_processed;
    s->pending = tss_engine_pending(d->engine);
    s->pending_passes = c.passes_pending;
    s->ticks = c.ticks;
    s->streams_expired = c.streams_expired;
    s->streams_evicted = c.streams_evicted;
    s->streams_deleted = c.streams_deleted;
    s->samples_dropped = c.samples_dropped;
}
