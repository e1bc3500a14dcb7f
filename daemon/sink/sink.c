/* SPDX-License-Identifier: Apache-2.0 */
/* sink.c - the registry of alert sinks (sink.h) and the one loop that hands an alert to
 * them. Adding a sink: its file, which fills one tsd_sink_ops, and its row below. */
#include "daemon/sink/sink.h"

#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "daemon/core/log.h"

extern const tsd_sink_ops tsd_sink_zmq, tsd_sink_alertmanager, tsd_sink_mqtt, tsd_sink_alert_log;

/* Every sink, in the order alerts reach them (ZeroMQ's subscribers first, as ever). */
static const tsd_sink_ops *const tsd_sink_table[] = {
    &tsd_sink_zmq,
    &tsd_sink_alertmanager,
    &tsd_sink_mqtt,
    &tsd_sink_alert_log,
};

void tsd_sinks_offer(const tsd_sink *s, size_t n, const tsd_alert_rec *r, tsd_alert_sends *out) {
    const int slot = tsd_alert_slot(r->alert.kind);
    for (size_t i = 0; i < n; i++) {
        const int rc = s[i].ops->offer(s[i].self, r);
        if (!s[i].ops->counted)
            continue;
        if (rc == TSD_SINK_TAKEN)
            out->published[slot]++;
        else
            out->dropped[slot]++, out->errors += rc == TSD_SINK_FAILED;
    }
}

int tsd_sinks_open(tsd_sink out[TSD_SINKS_MAX], size_t *n, const tsd_sink_env *env, char *err,
                   size_t errlen) {
    *n = 0;
    err[0] = '\0';
    for (size_t i = 0; i < sizeof tsd_sink_table / sizeof tsd_sink_table[0]; i++) {
        const tsd_sink_ops *ops = tsd_sink_table[i];
        void *self = NULL;
        const int rc = *n < TSD_SINKS_MAX ? ops->open(&self, env, err, errlen) : EX_SOFTWARE;
        if (*n == TSD_SINKS_MAX)
            snprintf(err, errlen, "%s: more than %d sinks", ops->name, TSD_SINKS_MAX);
        if (rc != 0) {
            tsd_sinks_close(out, n);
            return rc;
        }
        if (self)
            out[(*n)++] = (tsd_sink){.ops = ops, .self = self};
    }
    return 0;
}

void tsd_sinks_close(tsd_sink *s, size_t *n) {
    for (size_t i = *n; i-- > 0;)
        s[i].ops->close(s[i].self);
    *n = 0;
}

size_t tsd_counters_take(size_t (*counters)(void *self, tsd_counter out[]), void *self,
                         tsd_counter *out, size_t max) {
    tsd_counter rows[TSD_SINK_ROWS];
    size_t k = counters ? counters(self, rows) : 0;
    k = k < max ? k : max;
    memcpy(out, rows, k * sizeof *rows);
    return k;
}

size_t tsd_sinks_counters(const tsd_sink *s, size_t n, tsd_counter *out, size_t max) {
    size_t got = 0;
    for (size_t i = 0; i < n; i++)
        got += tsd_counters_take(s[i].ops->counters, s[i].self, out + got, max - got);
    return got;
}

void tsd_sinks_reload(const tsd_sink *s, size_t n, const tsc_config *cfg) {
    for (size_t i = 0; i < n; i++)
        if (s[i].ops->reload)
            s[i].ops->reload(s[i].self, cfg);
}
