/* SPDX-License-Identifier: Apache-2.0 */
/* mqtt_alerts.c - alerts out over MQTT (mqtt.h): every alert as the JSON of `tsmine
 * alerts` (lib/alert_json.h) to ALERTS_TOPIC/STREAM, and at ANOMALY / ANOMALY_END
 * the stream's state, retained, to STATE_TOPIC/STREAM:
 *   {"state":"anomaly","alert":{...the ANOMALY...}}
 *   {"state":"normal","alert":{...the ANOMALY_END...}}
 * so that a dashboard connecting later gets the current state of every stream that
 * has had an event at once. Stream ids may hold '+' and '#', which a topic may not:
 * they become '_' in the topic (the JSON keeps the id).
 *
 * A sink (sink.h) on the connection MQTT ingest shares (tsd_mqtt_share): open while a
 * broker is set, and it reports the connection's counters. */
#include "daemon/mqtt/mqtt_int.h"

#include <stdio.h>
#include <string.h>

#include "lib/alert_json.h"

/* PREFIX/STREAM into topic (size TSS_MAX_ID + 130), wildcards of the id as '_'. */
static void stream_topic(char *topic, size_t len, const char *prefix, const char *stream_id) {
    int n = snprintf(topic, len, "%s/%s", prefix, stream_id);
    for (char *p = topic + (n > 0 ? strlen(prefix) : 0); *p; p++)
        if (*p == '+' || *p == '#')
            *p = '_';
}

static int mqtt_open(void **self, const tsd_sink_env *env, char *err, size_t errlen) {
    tsd_mqtt *m = NULL;
    const int rc = tsd_mqtt_share(&m, env->cfg, err, errlen);
    *self = m;
    return rc;
}

/* Publishes r as JSON to alerts_topic/STREAM and, for ANOMALY and ANOMALY_END, the
 * stream's retained state to state_topic/STREAM; TSD_SINK_NO_ROOM when one was not
 * handed to libmosquitto (counted as an mqtt alert drop). Never blocks. */
static int mqtt_offer(void *user, const tsd_alert_rec *r) {
    tsd_mqtt *m = user;
    const int kind = r->alert.kind,
              state = kind == TSS_ALERT_ANOMALY || kind == TSS_ALERT_ANOMALY_END;
    if (!m->alerts_topic[0] && !(state && m->state_topic[0]))
        return TSD_SINK_TAKEN;
    int rc = 0;
    Tsmine__V1__Alert msg;
    tsd_alert_rec_msg(r, &msg);
    char json[TSM_ALERT_JSON_MAX], topic[TSS_MAX_ID + 160];
    const size_t n = tsm_alert_json(json, sizeof json, &msg);
    if (m->alerts_topic[0]) {
        stream_topic(topic, sizeof topic, m->alerts_topic, r->stream_id);
        rc |= tsd_mqtt__publish(m, topic, json, n, 0);
    }
    if (state && m->state_topic[0]) {
        char payload[TSM_ALERT_JSON_MAX + 40];
        int k = snprintf(payload, sizeof payload, "{\"state\":\"%s\",\"alert\":%s}",
                         kind == TSS_ALERT_ANOMALY ? "anomaly" : "normal", json);
        stream_topic(topic, sizeof topic, m->state_topic, r->stream_id);
        rc |= tsd_mqtt__publish(m, topic, payload, (size_t)k, 1);
    }
    return rc ? TSD_SINK_NO_ROOM : TSD_SINK_TAKEN;
}

static size_t mqtt_counters(void *self, tsd_counter out[]) {
    tsd_mqtt_counters c;
    tsd_mqtt_counters_get(self, &c);
    return tsd_mqtt_counter_rows(&c, out);
}

static void mqtt_close(void *self) {
    tsd_mqtt *m = self;
    tsd_mqtt_unshare(&m);
}

const tsd_sink_ops tsd_sink_mqtt = {
    .name = "mqtt",
    .open = mqtt_open,
    .offer = mqtt_offer,
    .counters = mqtt_counters,
    .close = mqtt_close,
};
