/* SPDX-License-Identifier: Apache-2.0 */
/* mqtt_int.h - what mqtt.c (connection), daemon/source/mqtt_ingest.c (queue, payloads)
 * and daemon/sink/mqtt_alerts.c (alert topics) share; internal to those three (mqtt.h is
 * the interface). */
#ifndef TSD_MQTT_INT_H
#define TSD_MQTT_INT_H

#include <pthread.h>
#include <stdint.h>

#include "daemon/mqtt/mqtt.h"

/* One received message, as the queue keeps it: topic and payload in one block. */
typedef struct tsd_mqtt_msg {
    struct tsd_mqtt_msg *next;
    size_t len;  /* payload bytes */
    char *topic; /* NUL-terminated, after the payload */
    char data[]; /* the payload, then the topic */
} tsd_mqtt_msg;

/* Bytes the queue holds before the receiving thread waits for the main loop. */
#define TSD_MQTT_QUEUE_BYTES (16u << 20)
/* Alerts handed to libmosquitto and not yet acknowledged, beyond which more are dropped
 * (libmosquitto keeps them in memory while the broker is away). */
#define TSD_MQTT_MAX_UNACKED 100000u

struct tsd_mqtt {
    struct mosquitto *mosq;
    pthread_t thread;
    int thread_running;
    pthread_mutex_t mu;  /* the queue, the counters, stop */
    pthread_cond_t room; /* the queue has room, or stopping */
    pthread_cond_t wake; /* stopping: ends the backoff's wait */
    int stop;            /* the thread is to disconnect and end */
    tsd_mqtt_msg *head, *tail;
    size_t queued_bytes;
    int efd; /* eventfd: messages wait */
    tsd_mqtt_counters count;
    uint64_t unacked;
    /* from the configuration */
    int qos;
    int format;      /* tsd_payload_format */
    int reason_base; /* the number of its first rejection reason (source.h) */
    uint32_t strip_levels;
    char stream_prefix[64];
    char alerts_topic[128], state_topic[128];
    char subscribe[TSC_MAX_ENDPOINTS][256];
    size_t n_subscribe;
    uint32_t keepalive_s, reconnect_max_s;
    char broker[256];
};

/* mqtt_ingest.c: the receiving thread's side of the queue (copies topic and payload;
 * waits while the queue is full unless stopping). */
void tsd_mqtt__push(tsd_mqtt *m, const char *topic, const void *payload, size_t len);
/* Frees what the queue holds (close). */
void tsd_mqtt__queue_free(tsd_mqtt *m);

/* mqtt.c: publishes on the connection; 0, or -1 when not handed to libmosquitto
 * (counted by the caller). Any thread. */
int tsd_mqtt__publish(tsd_mqtt *m, const char *topic, const void *payload, size_t len, int retain);

#endif
