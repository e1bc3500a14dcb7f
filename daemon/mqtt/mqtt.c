/* SPDX-License-Identifier: Apache-2.0 */
/* mqtt.c - the MQTT connection (mqtt.h): libmosquitto client, TLS and credentials, and
 * the thread that connects, runs the client's loop and reconnects with backoff. Why a
 * thread of our own rather than mosquitto_loop_start: its loop gives up for good on a
 * TLS or protocol error and cannot be told how long to back off from the first
 * attempt; here every failure is retried, 1 s doubling up to reconnect_max, and the
 * stop is ours to order (mqtt.h, "Delivery"). */
#include "daemon/mqtt/mqtt_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#ifdef TSMINE_HAVE_MQTT
#include <mosquitto.h>
#endif

#include "daemon/core/log.h"
#include "daemon/source/mqtt_payload.h"

void tsd_mqtt_counters_get(tsd_mqtt *m, tsd_mqtt_counters *out) {
    memset(out, 0, sizeof *out);
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    *out = m->count;
    pthread_mutex_unlock(&m->mu);
}

/* Starts the client (tsd_mqtt_share says what of), and stops and frees it; defined
 * below, with and without libmosquitto. */
static int tsd_mqtt_open(tsd_mqtt **out, const tsc_config *cfg, char *err, size_t errlen);
static void tsd_mqtt_close(tsd_mqtt **m_p);

/* The connection tsd_mqtt_share hands out, and its references (main thread). */
static tsd_mqtt *shared;
static unsigned shared_refs;

int tsd_mqtt_share(tsd_mqtt **out, const tsc_config *cfg, char *err, size_t errlen) {
    if (shared_refs == 0) {
        const int rc = tsd_mqtt_open(&shared, cfg, err, errlen);
        if (rc != 0)
            return rc;
    }
    shared_refs++;
    *out = shared;
    return 0;
}

void tsd_mqtt_unshare(tsd_mqtt **m_p) {
    *m_p = NULL;
    if (shared_refs && --shared_refs == 0)
        tsd_mqtt_close(&shared);
}

size_t tsd_mqtt_counter_rows(const tsd_mqtt_counters *c, tsd_counter out[8]) {
    const tsd_counter rows[] = {
        TSD_COUNTER("mqtt_connected", "tsmine_mqtt_connected", "gauge",
                    "1 while the MQTT broker's connection is up.", (uint64_t)c->connected),
        TSD_COUNTER("mqtt_connects", "tsmine_mqtt_connects_total", "counter",
                    "Connections the MQTT broker accepted (the first, then reconnections).",
                    c->connects),
        TSD_COUNTER("mqtt_connect_errors", "tsmine_mqtt_connect_errors_total", "counter",
                    "MQTT connection attempts that failed (unreachable, refused, TLS, auth).",
                    c->connect_errors),
        TSD_COUNTER("mqtt_connection_losses", "tsmine_mqtt_connection_losses_total", "counter",
                    "Accepted MQTT connections lost afterwards.", c->losses),
        TSD_COUNTER("mqtt_messages", "tsmine_mqtt_messages_total", "counter",
                    "MQTT messages received on the subscribed topics.", c->messages),
        TSD_COUNTER("mqtt_queue_waits", "tsmine_mqtt_queue_waits_total", "counter",
                    "Times MQTT's receiving thread waited for the main loop (its queue was full).",
                    c->queue_waits),
        TSD_COUNTER("mqtt_alerts_sent", "tsmine_mqtt_alerts_sent_total", "counter",
                    "Alert and state messages the MQTT broker acknowledged.", c->alerts_sent),
        TSD_COUNTER(
            "mqtt_alert_drops", "tsmine_mqtt_alert_drops_total", "counter",
            "Alert and state messages not handed to the MQTT broker (not connected, or too many "
            "unacknowledged).",
            c->alerts_dropped),
    };
    memcpy(out, rows, sizeof rows);
    return sizeof rows / sizeof rows[0];
}

#ifndef TSMINE_HAVE_MQTT

static int tsd_mqtt_open(tsd_mqtt **out, const tsc_config *cfg, char *err, size_t errlen) {
    *out = NULL;
    (void)err, (void)errlen;
    if (cfg->mqtt_broker[0])
        tsd_log(TSD_LOG_WARNING, "mqtt: this tsmined is built without libmosquitto: the mqtt "
                                 "group is ignored");
    return 0;
}

void tsd_mqtt_stop_ingest(tsd_mqtt *m) {
    (void)m;
}

static void tsd_mqtt_close(tsd_mqtt **m_p) {
    *m_p = NULL;
}

int tsd_mqtt__publish(tsd_mqtt *m, const char *topic, const void *payload, size_t len, int retain) {
    (void)m, (void)topic, (void)payload, (void)len, (void)retain;
    return -1;
}

#else

/* ---- libmosquitto's callbacks, on the client's thread ---- */

static void on_connect(struct mosquitto *mosq, void *user, int rc, int flags) {
    tsd_mqtt *m = user;
    if (rc != 0) {
        pthread_mutex_lock(&m->mu);
        m->count.connect_errors++;
        pthread_mutex_unlock(&m->mu);
        tsd_log(TSD_LOG_ERR, "mqtt: %s refused the connection: %s", m->broker,
                mosquitto_connack_string(rc));
        return;
    }
    pthread_mutex_lock(&m->mu);
    m->count.connected = 1;
    m->count.connects++;
    pthread_mutex_unlock(&m->mu);
    tsd_log(TSD_LOG_NOTICE, "mqtt: connected to %s (%s session)", m->broker,
            flags & 1 ? "resumed" : "new");
    for (size_t i = 0; i < m->n_subscribe; i++) {
        int e = mosquitto_subscribe(mosq, NULL, m->subscribe[i], m->qos);
        if (e != MOSQ_ERR_SUCCESS)
            tsd_log(TSD_LOG_ERR, "mqtt: subscribe %s: %s", m->subscribe[i], mosquitto_strerror(e));
    }
}

static void on_disconnect(struct mosquitto *mosq, void *user, int rc) {
    (void)mosq;
    tsd_mqtt *m = user;
    pthread_mutex_lock(&m->mu);
    const int was = m->count.connected;
    m->count.connected = 0;
    m->count.losses += was && rc != 0;
    pthread_mutex_unlock(&m->mu);
    if (was && rc != 0)
        tsd_log(TSD_LOG_WARNING, "mqtt: connection to %s lost: %s", m->broker,
                mosquitto_strerror(rc));
}

static void on_message(struct mosquitto *mosq, void *user, const struct mosquitto_message *msg) {
    (void)mosq;
    tsd_mqtt__push(user, msg->topic, msg->payload,
                   msg->payloadlen > 0 ? (size_t)msg->payloadlen : 0);
}

static void on_publish(struct mosquitto *mosq, void *user, int mid) {
    (void)mosq, (void)mid;
    tsd_mqtt *m = user;
    pthread_mutex_lock(&m->mu);
    m->count.alerts_sent++;
    m->unacked -= m->unacked > 0;
    pthread_mutex_unlock(&m->mu);
}

/* libmosquitto's own log lines (TLS and socket errors say more there) at debug. */
static void on_log(struct mosquitto *mosq, void *user, int level, const char *str) {
    (void)mosq, (void)user;
    if (level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING))
        tsd_log(TSD_LOG_DEBUG, "mqtt: libmosquitto: %s", str);
}

/* ---- the thread ---- */

static int stopping(tsd_mqtt *m) {
    pthread_mutex_lock(&m->mu);
    int s = m->stop;
    pthread_mutex_unlock(&m->mu);
    return s;
}

/* Reads a counter under the lock. */
static uint64_t locked(tsd_mqtt *m, const uint64_t *field) {
    pthread_mutex_lock(&m->mu);
    uint64_t v = *field;
    pthread_mutex_unlock(&m->mu);
    return v;
}

/* Whether alerts wait for the broker's acknowledgement on a live connection. */
static int in_flight(tsd_mqtt *m) {
    pthread_mutex_lock(&m->mu);
    int v = m->count.connected && m->unacked;
    pthread_mutex_unlock(&m->mu);
    return v;
}

/* Waits `s` seconds or until stopping. */
static void backoff(tsd_mqtt *m, unsigned s) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += s;
    pthread_mutex_lock(&m->mu);
    while (!m->stop && pthread_cond_timedwait(&m->wake, &m->mu, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&m->mu);
}

/* Splits "HOST:PORT" ("[V6]:PORT") into host and port (config validated the form). */
static void split_broker(const char *broker, char *host, size_t hostlen, int *port) {
    const char *colon = strrchr(broker, ':');
    size_t n = (size_t)(colon - broker);
    if (broker[0] == '[' && n >= 2 && broker[n - 1] == ']')
        snprintf(host, hostlen, "%.*s", (int)(n - 2), broker + 1);
    else
        snprintf(host, hostlen, "%.*s", (int)n, broker);
    *port = atoi(colon + 1);
}

/* Writes what libmosquitto has queued (PUBACKs, DISCONNECT), for at most 1 s. */
static void flush(struct mosquitto *mosq) {
    const uint64_t until = tsd_now_ns() + 1000000000ull;
    while (mosquitto_want_write(mosq) && tsd_now_ns() < until &&
           mosquitto_loop_write(mosq, 1) == MOSQ_ERR_SUCCESS)
        ;
}

/* Connect, loop until the connection ends, back off, again; at the stop, give the
 * alerts in flight up to a second, then DISCONNECT (which keeps a persistent session).
 * The connection is made asynchronously (a broker that does not answer a SYN holds
 * nothing: the loop below comes back every 100 ms to look at the stop); only the name
 * lookup blocks. */
static void *run(void *arg) {
    tsd_mqtt *m = arg;
    char host[256];
    int port;
    split_broker(m->broker, host, sizeof host, &port);
    unsigned delay = 1;
    int first = 1;
    while (!stopping(m)) {
        const uint64_t connects = locked(m, &m->count.connects),
                       refused = locked(m, &m->count.connect_errors);
        int rc = first ? mosquitto_connect_async(m->mosq, host, port, (int)m->keepalive_s)
                       : mosquitto_reconnect_async(m->mosq);
        first = 0;
        if (rc == MOSQ_ERR_SUCCESS) {
            while (!stopping(m) && (rc = mosquitto_loop(m->mosq, 100, 1)) == MOSQ_ERR_SUCCESS)
                ;
            /* ended before the broker accepted it (a TLS handshake refused, a CONNACK
             * that never came): as much a failed connection as a refused SYN */
            if (!stopping(m) && locked(m, &m->count.connects) == connects &&
                locked(m, &m->count.connect_errors) == refused) { /* on_connect counts a refusal */
                pthread_mutex_lock(&m->mu);
                m->count.connect_errors++;
                pthread_mutex_unlock(&m->mu);
                tsd_log(TSD_LOG_WARNING, "mqtt: cannot connect to %s: %s; retrying in %u s",
                        m->broker, rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc),
                        delay);
            }
        } else {
            pthread_mutex_lock(&m->mu);
            m->count.connect_errors++;
            pthread_mutex_unlock(&m->mu);
            tsd_log(TSD_LOG_WARNING, "mqtt: cannot connect to %s: %s; retrying in %u s", m->broker,
                    rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc), delay);
        }
        if (stopping(m))
            break;
        if (locked(m, &m->count.connects) > connects)
            delay = 1; /* a connection that was accepted starts the backoff over */
        backoff(m, delay);
        delay = delay * 2 > m->reconnect_max_s ? m->reconnect_max_s : delay * 2;
    }
    const uint64_t until = tsd_now_ns() + 1000000000ull;
    while (in_flight(m) && tsd_now_ns() < until &&
           mosquitto_loop(m->mosq, 50, 1) == MOSQ_ERR_SUCCESS)
        ;
    /* the PUBACKs of what was received, then DISCONNECT: a message whose PUBACK the
     * broker never saw would come again at the next start (and count twice) */
    flush(m->mosq);
    mosquitto_disconnect(m->mosq);
    flush(m->mosq);
    return NULL;
}

/* ---- set-up ---- */

/* The first line of path into out (without its newline); 0 or -1 with err. */
static int read_first_line(const char *path, char *out, size_t outlen, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "mqtt.password_file: %s: %s", path, strerror(errno));
        return -1;
    }
    if (!fgets(out, (int)outlen, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

/* Every TLS file must be readable now: a typo is a configuration error at start. */
static int check_readable(const char *key, const char *path, char *err, size_t errlen) {
    if (!path[0] || access(path, R_OK) == 0)
        return 0;
    snprintf(err, errlen, "%s: %s: %s", key, path, strerror(errno));
    return -1;
}

/* Options, credentials, TLS and callbacks of a new client; EX_CONFIG / EX_OSERR. */
static int configure(tsd_mqtt *m, const tsc_config *cfg, char *err, size_t errlen) {
    m->mosq = mosquitto_new(cfg->mqtt_client_id, !!cfg->mqtt_clean_session, m);
    if (!m->mosq) {
        snprintf(err, errlen, "mqtt: cannot create the client: %s", strerror(errno));
        return EX_OSERR;
    }
    mosquitto_threaded_set(m->mosq, true); /* publish comes from the alert thread */
    mosquitto_int_option(m->mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
    mosquitto_connect_with_flags_callback_set(m->mosq, on_connect);
    mosquitto_disconnect_callback_set(m->mosq, on_disconnect);
    mosquitto_message_callback_set(m->mosq, on_message);
    mosquitto_publish_callback_set(m->mosq, on_publish);
    mosquitto_log_callback_set(m->mosq, on_log);
    if (cfg->mqtt_username[0]) {
        char pw[512] = "";
        if (cfg->mqtt_password_file[0] &&
            read_first_line(cfg->mqtt_password_file, pw, sizeof pw, err, errlen) != 0)
            return EX_CONFIG;
        int rc = mosquitto_username_pw_set(m->mosq, cfg->mqtt_username, pw[0] ? pw : NULL);
        memset(pw, 0, sizeof pw);
        if (rc != MOSQ_ERR_SUCCESS) {
            snprintf(err, errlen, "mqtt.username: %s", mosquitto_strerror(rc));
            return EX_CONFIG;
        }
    }
    if (cfg->mqtt_tls_ca_file[0]) {
        if (check_readable("mqtt.tls.ca_file", cfg->mqtt_tls_ca_file, err, errlen) ||
            check_readable("mqtt.tls.cert_file", cfg->mqtt_tls_cert_file, err, errlen) ||
            check_readable("mqtt.tls.key_file", cfg->mqtt_tls_key_file, err, errlen))
            return EX_CONFIG;
        int rc = mosquitto_tls_set(m->mosq, cfg->mqtt_tls_ca_file, NULL,
                                   cfg->mqtt_tls_cert_file[0] ? cfg->mqtt_tls_cert_file : NULL,
                                   cfg->mqtt_tls_key_file[0] ? cfg->mqtt_tls_key_file : NULL, NULL);
        if (rc != MOSQ_ERR_SUCCESS) {
            snprintf(err, errlen, "mqtt.tls: %s", mosquitto_strerror(rc));
            return EX_CONFIG;
        }
    }
    return 0;
}

static int tsd_mqtt_open(tsd_mqtt **out, const tsc_config *cfg, char *err, size_t errlen) {
    *out = NULL;
    if (!cfg->mqtt_broker[0])
        return 0;
    tsd_mqtt *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "mqtt: out of memory");
        return EX_OSERR;
    }
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->room, NULL);
    pthread_cond_init(&m->wake, NULL);
    m->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    m->count.enabled = 1;
    m->qos = cfg->mqtt_qos;
    m->format = tsd_payload_format_parse(cfg->mqtt_format);
    m->strip_levels = cfg->mqtt_strip_levels;
    m->keepalive_s = cfg->mqtt_keepalive_s;
    m->reconnect_max_s = cfg->mqtt_reconnect_max_s;
    snprintf(m->stream_prefix, sizeof m->stream_prefix, "%s", cfg->mqtt_stream_prefix);
    snprintf(m->alerts_topic, sizeof m->alerts_topic, "%s", cfg->mqtt_alerts_topic);
    snprintf(m->state_topic, sizeof m->state_topic, "%s", cfg->mqtt_state_topic);
    snprintf(m->broker, sizeof m->broker, "%s", cfg->mqtt_broker);
    memcpy(m->subscribe, cfg->mqtt_subscribe, sizeof m->subscribe);
    m->n_subscribe = cfg->n_mqtt_subscribe;
    mosquitto_lib_init();
    int rc = m->efd < 0 ? EX_OSERR : configure(m, cfg, err, errlen);
    if (m->efd < 0)
        snprintf(err, errlen, "mqtt: eventfd: %s", strerror(errno));
    if (rc == EX_CONFIG && cfg->source[0]) { /* "FILE: key: what", as config errors read */
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "%s: %s", cfg->source, why);
    }
    if (rc == 0 && (errno = pthread_create(&m->thread, NULL, run, m)) != 0) {
        snprintf(err, errlen, "mqtt: cannot start its thread: %s", strerror(errno));
        rc = EX_OSERR;
    }
    if (rc != 0) {
        tsd_mqtt_close(&m);
        return rc;
    }
    m->thread_running = 1;
    tsd_log(TSD_LOG_INFO, "mqtt: broker %s%s, %zu topic filters, QoS %d, %s session", m->broker,
            cfg->mqtt_tls_ca_file[0] ? " (TLS)" : "", m->n_subscribe, m->qos,
            cfg->mqtt_clean_session ? "clean" : "persistent");
    *out = m;
    return 0;
}

void tsd_mqtt_stop_ingest(tsd_mqtt *m) {
    if (!m || !m->thread_running)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_cond_broadcast(&m->room); /* a receiver waiting for room goes on */
    pthread_cond_broadcast(&m->wake);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->thread, NULL);
    m->thread_running = 0;
    pthread_mutex_lock(&m->mu);
    m->count.connected = 0;
    pthread_mutex_unlock(&m->mu);
}

static void tsd_mqtt_close(tsd_mqtt **m_p) {
    tsd_mqtt *m = *m_p;
    if (!m)
        return;
    tsd_mqtt_stop_ingest(m);
    if (m->mosq)
        mosquitto_destroy(m->mosq);
    mosquitto_lib_cleanup();
    tsd_mqtt__queue_free(m);
    if (m->efd >= 0)
        close(m->efd);
    pthread_cond_destroy(&m->room);
    pthread_cond_destroy(&m->wake);
    pthread_mutex_destroy(&m->mu);
    free(m);
    *m_p = NULL;
}

int tsd_mqtt__publish(tsd_mqtt *m, const char *topic, const void *payload, size_t len, int retain) {
    pthread_mutex_lock(&m->mu);
    const int ok = m->count.connected && m->unacked < TSD_MQTT_MAX_UNACKED;
    m->unacked += ok;
    m->count.alerts_dropped += !ok;
    pthread_mutex_unlock(&m->mu);
    if (!ok)
        return -1;
    int rc = mosquitto_publish(m->mosq, NULL, topic, (int)len, payload, m->qos, retain);
    if (rc == MOSQ_ERR_SUCCESS)
        return 0;
    pthread_mutex_lock(&m->mu);
    m->unacked--;
    m->count.alerts_dropped++;
    pthread_mutex_unlock(&m->mu);
    return -1;
}

#endif
