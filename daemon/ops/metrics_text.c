/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_text.c - the Prometheus text format of a metrics snapshot (pure): the series
 * of the counter table (counters.h) that have a family. */
#include "daemon/core/text_buf.h"
#include "daemon/ops/counters.h"

#include <string.h>

/* The text under construction, and the family of the last series written. */
typedef struct {
    tsd_text t;
    const char *family;
} page;

/* One sample line, after the family's HELP and TYPE when it starts one. */
static void sample(void *ctx, const tsd_series *x) {
    page *p = ctx;
    if (!x->metric)
        return;
    if (!p->family || strcmp(p->family, x->metric) != 0)
        tsd_text_put(&p->t, "# HELP %s %s\n# TYPE %s %s\n", x->metric, x->help, x->metric, x->type);
    p->family = x->metric;
    tsd_text_put(&p->t, "%s", x->metric);
    for (int k = 0; k < 2 && x->label[k]; k++)
        tsd_text_put(&p->t, "%c%s=\"%s\"", k ? ',' : '{', x->label[k], x->label_value[k]);
    if (x->label[0])
        tsd_text_put(&p->t, "}");
    switch (x->format) {
    case TSD_FMT_INT: tsd_text_put(&p->t, " %llu\n", (unsigned long long)x->count); break;
    case TSD_FMT_F3: tsd_text_put(&p->t, " %.3f\n", x->real); break;
    case TSD_FMT_F6: tsd_text_put(&p->t, " %.6f\n", x->real); break;
    default: tsd_text_put(&p->t, " %.9g\n", x->real); break;
    }
}

size_t tsd_metrics_format(const tsd_metrics_snapshot *s, char *buf, size_t len) {
    page p = {.t = {buf, len, 0}};
    if (len)
        buf[0] = '\0';
    tsd_counters_walk(s, sample, &p);
    return p.t.used;
}
