/* SPDX-License-Identifier: Apache-2.0 */
/* sink_alertmanager.c - the Alertmanager sink (sink.h) over its sender
 * (alertmanager.h): ANOMALY and ANOMALY_END as alerts; the events open in the checkpoint
 * re-sent at start (restore); every resend_interval, the events the engine has open, so
 * that those whose ANOMALY_END will never come are resolved (periodic). */
#include "daemon/sink/sink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "daemon/core/log.h"
#include "daemon/sink/alertmanager.h"

typedef struct {
    tsd_am *am;
    uint64_t resend_ns; /* alertmanager.resend_interval */
} am_sink;

static int am_open(void **self, const tsd_sink_env *env, char *err, size_t errlen) {
    const tsc_config *cfg = env->cfg;
    tsd_am *am;
    *self = NULL;
    if (tsd_am_start(&am, cfg, err, errlen) != 0) /* a credential file, the build */
        return EX_CONFIG;
    if (!am)
        return 0;
    am_sink *s = malloc(sizeof *s);
    if (!s) {
        tsd_am_stop(&am);
        snprintf(err, errlen, "alertmanager: out of memory");
        return EX_OSERR;
    }
    *s = (am_sink){am, (uint64_t)cfg->am_resend_interval_s * 1000000000ull};
    tsd_log(TSD_LOG_INFO, "alertmanager: %zu URL(s), first %s, resend every %u s", cfg->n_am_urls,
            cfg->am_urls[0], cfg->am_resend_interval_s);
    *self = s;
    return 0;
}

static int am_offer(void *self, const tsd_alert_rec *r) {
    return tsd_am_offer(((am_sink *)self)->am, r);
}

/* Events the checkpoint left open go on being re-sent (tsd_am_resume). */
static void am_restore(void *self, const tsd_open_events *ev) {
    for (size_t i = 0; i < ev->n; i++)
        tsd_am_resume(((am_sink *)self)->am, ev->ids[i]);
    if (ev->n)
        tsd_log(TSD_LOG_INFO, "alertmanager: %zu events open in the checkpoint, re-sent", ev->n);
}

/* Open alerts whose end will not come (tsd_am_reconcile, which takes a copy). */
static uint64_t am_periodic(void *self, const tsd_open_events *ev) {
    am_sink *s = self;
    char(*ids)[TSS_MAX_ID + 1] = ev->n ? malloc(ev->n * sizeof *ids) : NULL;
    if (!ev->n || ids) { /* out of memory: next time */
        if (ev->n)
            memcpy(ids, ev->ids, ev->n * sizeof *ids);
        tsd_am_reconcile(s->am, ids, ev->n, ev->at_ns);
    }
    return s->resend_ns;
}

static size_t am_counters(void *self, tsd_counter out[]) {
    tsd_am_counters c;
    tsd_am_counts(((am_sink *)self)->am, &c);
    return tsd_am_counter_rows(&c, out);
}

static void am_close(void *self) {
    am_sink *s = self;
    tsd_am_stop(&s->am);
    free(s);
}

const tsd_sink_ops tsd_sink_alertmanager = {
    .name = "alertmanager",
    .open = am_open,
    .offer = am_offer,
    .restore = am_restore,
    .periodic = am_periodic,
    .counters = am_counters,
    .close = am_close,
};
