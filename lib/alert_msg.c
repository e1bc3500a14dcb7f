/* SPDX-License-Identifier: Apache-2.0 */
/* alert_msg.c - the engine's alert as a tsmine.v1.Alert (alert_msg.h). */
#include "lib/alert_msg.h"

#include "calib.h" /* tss_tail */

/* The enums share their values (engine.h): tss_alert_kind, tss_tail and tss_view are
 * tsmine.v1.AlertKind, Tail and View. */
_Static_assert((int)TSS_ALERT_ANOMALY == (int)TSMINE__V1__ALERT_KIND__ANOMALY &&
                   (int)TSS_ALERT_RESET == (int)TSMINE__V1__ALERT_KIND__RESET,
               "tss_alert_kind is tsmine.v1.AlertKind");
_Static_assert((int)TSS_TAIL_FAR == (int)TSMINE__V1__TAIL__FAR &&
                   (int)TSS_TAIL_NEAR == (int)TSMINE__V1__TAIL__NEAR,
               "tss_tail is tsmine.v1.Tail");
_Static_assert((int)TSS_VIEW_SHAPE == (int)TSMINE__V1__VIEW__SHAPE &&
                   (int)TSS_VIEW_MAGNITUDE == (int)TSMINE__V1__VIEW__MAGNITUDE &&
                   (int)TSS_VIEW_LEVEL == (int)TSMINE__V1__VIEW__LEVEL,
               "tss_view is tsmine.v1.View");

void tsm_alert_msg_fill(Tsmine__V1__Alert *msg, const tss_alert *a) {
    msg->kind = (Tsmine__V1__AlertKind)a->kind;
    msg->start_seq = a->start_seq;
    msg->start_timestamp_ns = a->start_timestamp_ns;
    msg->length = a->length;
    msg->distance = a->distance;
    msg->neighbor_seq = a->neighbor_seq;
    msg->threshold = a->threshold;
    msg->seq = a->seq;
    msg->score = a->score;
    msg->event_start_seq = a->event_start_seq;
    msg->event_end_seq = a->event_end_seq;
    msg->detected_seq = a->detected_seq;
    msg->tail = (Tsmine__V1__Tail)a->tail;
    if (a->view == TSS_VIEW_NONE)
        return;
    msg->view = (Tsmine__V1__View)a->view;
    msg->shape_score = a->shape_score;
    msg->magnitude_score = a->magnitude_score;
    msg->level_score = a->level_score;
    msg->magnitude_distance = a->magnitude;
    msg->magnitude_neighbor_seq = a->magnitude_neighbor_seq;
    msg->level = a->level;
}
