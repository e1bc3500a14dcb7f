/* alerts.h - publishing the engine's alerts on the PUB socket: two frames, the stream
 * id (topic) then a packed tsmine.v1.Alert with an increasing alert_id and
 * detected_at_ns from CLOCK_REALTIME. Never blocks the main loop: an alert that a
 * full subscriber queue refuses (EAGAIN at the HWM) is dropped and counted. Its
 * alert_id is used anyway, so subscribers see the drop as a gap in alert_id. */
#ifndef TSD_ALERTS_H
#define TSD_ALERTS_H

#include <stdint.h>

#include "engine.h"

typedef struct {
    void *pub;                           /* the PUB socket (not owned) */
    uint64_t next_id;                    /* alert_id of the next alert (from 1) */
    uint64_t found[TSS_ALERT_KINDS];     /* handed to tsd_alerts_publish, by kind */
    uint64_t published[TSS_ALERT_KINDS]; /* sent */
    uint64_t drops;                      /* refused at the HWM */
    uint64_t errors;                     /* other send failures (logged) */
} tsd_alerts;

void tsd_alerts_init(tsd_alerts *a, void *pub);

/* Encodes and sends one alert; the engine's on_alert callback (user = the tsd_alerts).
 * O(length of the stream id). */
void tsd_alerts_publish(void *user, const char *stream_id, const tss_alert *alert);

#endif
