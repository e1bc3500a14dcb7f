/* SPDX-License-Identifier: Apache-2.0 */
/* mqtt.h - tsmined as an MQTT client (issue 20; docs/integrations.md): samples in
 * from topic filters (mqtt_ingest.c, a source of source.h), alerts out as JSON with a retained
 * per-stream state (mqtt_alerts.c, a sink of sink.h), over one connection (mqtt.c) through
 * libmosquitto.
 *
 * Threads. The connection has a thread of its own (mqtt.c) that connects, runs
 * libmosquitto's loop and reconnects with backoff: a broker that is slow to answer, a
 * TLS handshake or a DNS lookup never holds the main loop or its watchdog. Received
 * messages are copied into a bounded queue (mqtt_ingest.c); the main thread, which
 * owns the engine, drains it when the queue's eventfd (the source's poll item, polled
 * beside the ZeroMQ sockets) says so, through the ingest path of ZeroMQ (decode.h), with the same
 * per-reason counters. A full queue makes the receiving thread wait, so that TCP and
 * the broker hold the rest: nothing is dropped for want of room. Alerts are published
 * from the alert publisher thread (alert_publisher.h) with mosquitto_publish, which is
 * thread-safe (mosquitto_threaded_set).
 *
 * Delivery. libmosquitto acknowledges a QoS 1 message (PUBACK) before it hands it over,
 * so a message is the daemon's once it is in the queue: tsd_mqtt_stop_ingest
 * disconnects (no more arrive), then the caller drains the queue into the engine
 * before the final checkpoint, which keeps staged samples. With clean_session false
 * and a fixed client id the broker keeps what is published while tsmined is down (a
 * persistent session) and delivers it at the next connection: across a clean restart
 * nothing is lost. A crash loses the queue, as it loses staged samples. The alerts of
 * the final tick leave after the disconnection: they reach ZeroMQ, not MQTT (counted
 * as mqtt alert drops). */
#ifndef TSD_MQTT_H
#define TSD_MQTT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "daemon/sink/sink.h"
#include "daemon/source/decode.h"
#include "engine.h"

typedef struct tsd_mqtt tsd_mqtt;

/* What STATUS and /metrics say about MQTT (all 0 with enabled 0: no broker set). */
typedef struct {
    int enabled;
    int connected;           /* the broker accepted the connection and it is up */
    uint64_t connects;       /* connections the broker accepted */
    uint64_t connect_errors; /* connection attempts that failed (refused, TLS, auth) */
    uint64_t losses;         /* accepted connections that were lost afterwards */
    uint64_t messages;       /* messages received (queued for the main loop) */
    uint64_t queue_waits;    /* times the receiving thread waited for room */
    uint64_t alerts_sent;    /* alert and state messages the broker acknowledged (QoS 0: sent) */
    uint64_t alerts_dropped; /* not handed to the broker: not connected, too many unacknowledged */
} tsd_mqtt_counters;

/* The process's one connection, which MQTT ingest and the MQTT alert sink share: the
 * first call starts the client from cfg's mqtt group, the others take a reference to
 * it (cfg is the first caller's). *out NULL and 0 when cfg->mqtt_broker is "" or the
 * build has no libmosquitto (then with a warning when a broker is set). The connection
 * is made by the client's thread: an unreachable broker is retried, not an error.
 * Returns EX_CONFIG when a file it names cannot be read (password, TLS), or EX_OSERR
 * when the client or its thread cannot be created, with err. Main thread. */
int tsd_mqtt_share(tsd_mqtt **out, const tsc_config *cfg, char *err, size_t errlen);
/* Gives a reference back; the last one stops (if needed) and frees the client.
 * *m_p = NULL. */
void tsd_mqtt_unshare(tsd_mqtt **m_p);

/* Disconnects and stops the client's thread (after it waits up to a second for the
 * broker to acknowledge the alerts in flight); the queue keeps what arrived. No-op on
 * NULL or when stopped. */
void tsd_mqtt_stop_ingest(tsd_mqtt *m);

/* A consistent copy of the counters (any thread); zeros for NULL. */
void tsd_mqtt_counters_get(tsd_mqtt *m, tsd_mqtt_counters *out);
/* The counters as STATUS and /metrics name them (mqtt_connected, tsmine_mqtt_connected,
 * ...): 8 rows into out; returns 8. */
size_t tsd_mqtt_counter_rows(const tsd_mqtt_counters *c, tsd_counter out[8]);

#endif
