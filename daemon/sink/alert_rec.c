/* SPDX-License-Identifier: Apache-2.0 */
/* alert_rec.c - the Alert message of a numbered alert (sink.h tsd_alert_rec_msg): what
 * every sink sends, apart from the registry (sink.c) so that the sinks, which the
 * registry names, do not call back into it. */
#include "daemon/sink/sink.h"

#include "daemon/source/decode.h" /* TSD_SCHEMA_VERSION */
#include "lib/alert_msg.h"

void tsd_alert_rec_msg(const tsd_alert_rec *r, Tsmine__V1__Alert *out) {
    Tsmine__V1__Alert msg = TSMINE__V1__ALERT__INIT;
    tsm_alert_msg_fill(&msg, &r->alert);
    msg.schema_version = TSD_SCHEMA_VERSION;
    msg.alert_id = r->alert_id;
    msg.stream_id = (char *)r->stream_id;
    msg.detected_at_ns = r->detected_at_ns;
    msg.seq = r->seq;
    *out = msg;
}
