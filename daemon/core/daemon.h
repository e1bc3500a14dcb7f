/* SPDX-License-Identifier: Apache-2.0 */
/* daemon.h - the state of one tsmined process and its life cycle:
 *   tsd_daemon_open   engine, checkpoint restore, sockets, alerts, the configured
 *                     parameters applied to the restored streams, metrics; READY=1
 *                     comes from the loop
 *   tsd_daemon_run    the main loop (loop.c) until SIGTERM/SIGINT or a fatal error
 *   tsd_daemon_close  frees everything
 * Everything here is touched by the main thread only; the metrics thread sees
 * snapshots (metrics.h). */
#ifndef TSD_DAEMON_H
#define TSD_DAEMON_H

#include <stddef.h>
#include <stdint.h>
#include <sysexits.h>

#include "config.h"
#include "daemon/core/log.h"
#include "daemon/core/notify.h"
#include "daemon/guard/guard.h"
#include "daemon/guard/resources.h"
#include "daemon/guard/sockets.h"
#include "daemon/ops/metrics.h"
#include "daemon/sink/alerts.h"
#include "daemon/sink/sink.h"
#include "daemon/source/decode.h"
#include "daemon/source/source.h"
#include "engine.h"
#include "engine_checkpoint.h" /* tss_load_report */

typedef struct {
    tsc_config cfg;        /* in force; a reload swaps in the keys that apply live */
    char config_path[512]; /* -c FILE, "" for the embedded defaults */
    char state_dir[4096];  /* where checkpoints go, "" = none (resolved at start) */
    tss_engine *engine;
    tsd_sockets sock;
    tsd_ingest ingest;
    tsd_alerts alerts;
    tsd_sink sinks[TSD_SINKS_MAX]; /* the open alert sinks (sink.h), in the registry's order */
    size_t nsinks;
    tsd_metrics *metrics;
    tsd_notify notify;
    struct tsd_ckpt_job *ckpt; /* checkpoints (ckpt_job.h); NULL without a state_dir */
    tsd_resources res;         /* the process's limits (resources.h) */
    tsd_guard *guard;          /* memory and descriptors of peers (guard.h); NULL if it failed */
    tsd_source sources[TSD_SOURCES_MAX]; /* the open sample sources (source.h) */
    size_t nsources;
    uint64_t started_ns;
    uint64_t checkpoints, checkpoint_failures, reloads, control_requests, control_errors;
    uint64_t reload_failures;    /* reloads refused: the running configuration stayed */
    int last_reload_ok;          /* the last reload's outcome (1 before any) */
    int64_t last_reload_ns;      /* when it happened (CLOCK_REALTIME), 0 before any */
    int64_t started_realtime_ns; /* the process's start, for process_start_time_seconds */
    /* $RUNTIME_DIRECTORY (systemd's RuntimeDirectory=): each reload's outcome is written
     * there for `tsmined --reload` (reload_status.h); "" = not written */
    char runtime_dir[512];
    uint64_t checkpoint_streams_dropped; /* restored beyond max_streams, left out */
    uint64_t checkpoint_duplicates;      /* stream records set aside for a newer one */
    int legacy_pending; /* the file of every stream is removed after the next checkpoint */
    int ingest_stopped; /* stopping: the sources take no more (loop.c) */
    tss_load_report restore_report; /* what the restore at start said */
    uint64_t ns_busy;               /* main loop time outside zmq_poll */
    /* control replies dropped: the client was gone or did not read them (control.c) */
    uint64_t control_reply_drops;
    uint64_t ns_drain;           /* time reading the ingest sockets (receive, decode, stage) */
    tsd_ratelimit control_limit; /* log lines about malformed control requests */
    tsd_ratelimit tick_limit;    /* log lines about failed (recoverable) ticks */
} tsd_daemon;

/* Starts everything from cfg (copied). Returns 0, or a sysexits code with the reason
 * already logged; d is then closed. */
int tsd_daemon_open(tsd_daemon *d, const tsc_config *cfg, const char *config_path);
/* The exit status after a sticky device error (tss_engine_device_lost), once the
 * checkpoint is written: EX_TEMPFAIL (75, "try again later"), which no start-up
 * failure uses, so that it tells this case apart and systemd's Restart=on-failure
 * starts a fresh process (a new CUDA context). */
#define TSD_EXIT_DEVICE_LOST EX_TEMPFAIL
/* The longest a tick should take (loop.c; the engine's tick_budget_s). */
#define TSD_TICK_TARGET_NS 200000000.0

/* Runs until asked to stop; returns the process exit status (0 after SIGTERM,
 * TSD_EXIT_DEVICE_LOST after a sticky device error). */
int tsd_daemon_run(tsd_daemon *d);
/* Under an address-space limit, the bytes that may still be mapped beyond the room the
 * guard keeps free for libzmq (0: none); UINT64_MAX without a limit. */
uint64_t tsd_daemon_as_room(const tsd_daemon *d);
void tsd_daemon_close(tsd_daemon *d);

/* Writes the checkpoint now, all at once: finishes the one in progress, then writes
 * every group whose streams changed (no-op without a state_dir); 0 or -1 (logged). For
 * SIGTERM and fatal errors; the periodic ones go in steps (loop.c, ckpt_job.h). */
int tsd_daemon_checkpoint(tsd_daemon *d);
/* Starts a checkpoint in steps (the interval, SIGUSR1), unless one is in progress. */
void tsd_daemon_checkpoint_start(tsd_daemon *d);
/* One step of the checkpoint in progress (at most about TSD_CKPT_STEP_S of the loop's
 * time); returns in how many ms it wants the next (-1: none in progress). */
long tsd_daemon_checkpoint_step(tsd_daemon *d);

/* The SIGHUP / RELOAD path: loads config_path into a fresh struct; when it is valid,
 * swaps in the keys that apply live and re-resolves every stream's parameters; when
 * it is not, keeps the running configuration. msg says what happened (also logged).
 * Returns 0 or -1. */
int tsd_daemon_reload(tsd_daemon *d, char *msg, size_t msglen);

/* Calls the periodic hook of every sink that is due at now (tsd_now_ns) with the events
 * the engine has open (sink.h; Alertmanager resolves those whose ANOMALY_END will never
 * come); returns when the next is due (UINT64_MAX: never). O(streams) when one is due. */
uint64_t tsd_daemon_sinks_periodic(tsd_daemon *d, uint64_t now);

/* The engine's limits (tss_limits) from the configuration's limits group. */
tss_limits tsd_limits_of(const tsc_config *cfg);

/* The counters of the daemon and the engine, as metrics and control report them. */
void tsd_daemon_snapshot(const tsd_daemon *d, tsd_metrics_snapshot *s);

#endif
