/* SPDX-License-Identifier: Apache-2.0 */
/* counters.h - the one table of tsmined's counters (STYLE: "Counters live in one
 * table"). Each row of counters.c names a value of the metrics snapshot (metrics.h)
 * once: its STATUS key, its /metrics family with help and type, its label, its unit.
 * A row may stand for one series, for one series per index of a set (rejection
 * reasons, alert kinds, phases, sockets, CURVE refusals), or for the open sources' and
 * sinks' own rows (tsd_counter, sink.h), which join the walk where the table says.
 *
 * Exporters never list counters: STATUS and COUNTERS (control.c) and /metrics
 * (metrics_text.c) walk the table with tsd_counters_walk and keep the series they
 * show. A new counter is one row. */
#ifndef TSD_COUNTERS_H
#define TSD_COUNTERS_H

#include <stdint.h>

#include "daemon/ops/metrics.h"

/* The repeated Counter field of the STATUS reply a series goes to. */
enum {
    TSD_STATUS_COUNTERS,       /* counters */
    TSD_STATUS_REJECTED,       /* rejected: keyed by reason */
    TSD_STATUS_ALERTS_BY_KIND, /* alerts_by_kind: keyed by the AlertKind enum's names */
    TSD_STATUS_FIELDS
};

/* How /metrics prints a series' value. */
enum {
    TSD_FMT_INT, /* count, %llu */
    TSD_FMT_F3,  /* real, %.3f (timestamps, CPU seconds) */
    TSD_FMT_F6,  /* real, %.6f */
    TSD_FMT_G9,  /* real, %.9g (seconds totals) */
};

/* One series, as the walk hands it to an exporter; its strings live until the
 * callback returns. */
typedef struct {
    const char *status;                    /* STATUS key; NULL: not in STATUS */
    int field;                             /* TSD_STATUS_... */
    uint64_t status_value;                 /* what STATUS shows (integers: ns, whole seconds) */
    const char *metric;                    /* /metrics family; NULL: not in /metrics */
    const char *type;                      /* "counter" or "gauge" (the family's first series) */
    const char *help;                      /* the family's help (its first series) */
    const char *label[2], *label_value[2]; /* label[k] NULL: no more labels */
    int format;                            /* TSD_FMT_... */
    uint64_t count;                        /* TSD_FMT_INT */
    double real;                           /* the other formats */
} tsd_series;

typedef void (*tsd_series_fn)(void *ctx, const tsd_series *x);

/* Calls fn with every series of s, in the table's order (that of /metrics, whose
 * families are consecutive rows); rows whose condition s does not meet (CURVE off,
 * a zero that means "unknown") are left out. O(rows + reasons + io counters). */
void tsd_counters_walk(const tsd_metrics_snapshot *s, tsd_series_fn fn, void *ctx);

#endif
