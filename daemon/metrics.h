/* metrics.h - Prometheus text exposition of tsmined's counters (GET /metrics).
 *
 * Threads: the HTTP server (libmicrohttpd) answers from its own thread. It never
 * touches the engine or the daemon's counters: the main loop copies them into a
 * snapshot after every tick (tsd_metrics_publish, a mutex-protected memcpy of a few
 * hundred bytes) and the handler formats its own copy of the latest snapshot. */
#ifndef TSD_METRICS_H
#define TSD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "ingest.h"

enum { TSD_PASS_ONLINE, TSD_PASS_DISCORD, TSD_PASS_MOTIF, TSD_PASSES };

typedef struct {
    uint64_t samples;  /* accepted */
    uint64_t bytes;    /* ingest payload bytes received */
    uint64_t messages; /* ingest messages received */
    uint64_t rejected[TSD_REASON_COUNT];
    uint64_t alerts[TSS_ALERT_KINDS]; /* found, by kind (published + dropped) */
    uint64_t alert_drops;             /* not sent: a subscriber's queue was at its HWM */
    uint64_t pass_failures;
    double pass_seconds[TSD_PASSES];
    uint64_t ring_samples, ring_bytes, streams;
} tsd_metrics_snapshot;

/* The lower-case name of an alert kind ("discord", "left_discord", "motif", "gap"),
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
/* Stops the server and frees it; *m_p = NULL. */
void tsd_metrics_stop(tsd_metrics **m_p);

#endif
