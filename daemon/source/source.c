/* SPDX-License-Identifier: Apache-2.0 */
/* source.c - the registry of sample sources (source.h) and the numbers of their own
 * rejection reasons. Adding a source: its file, which fills one tsd_source_ops, and its
 * row below. */
#include "daemon/source/source.h"

#include <stdio.h>
#include <sysexits.h>

extern const tsd_source_ops tsd_source_zmq, tsd_source_mqtt;

/* Every source, in the order the loop drains them. */
static const tsd_source_ops *const tsd_source_table[] = {
    &tsd_source_zmq,
    &tsd_source_mqtt,
};
#define ROWS (sizeof tsd_source_table / sizeof tsd_source_table[0])

/* The number of row i's first reason. O(rows). */
static int reason_base(size_t i) {
    int base = TSD_REASON_SOURCES;
    for (size_t k = 0; k < i; k++)
        base += (int)tsd_source_table[k]->n_reasons;
    return base;
}

int tsd_reason_count(void) {
    return reason_base(ROWS);
}

const char *tsd_source_reason_name(int reason) {
    for (size_t i = 0; reason >= TSD_REASON_SOURCES && i < ROWS; i++) {
        const int k = reason - reason_base(i);
        if (k >= 0 && (size_t)k < tsd_source_table[i]->n_reasons)
            return tsd_source_table[i]->reasons[k];
    }
    return NULL;
}

int tsd_sources_open(tsd_source out[TSD_SOURCES_MAX], size_t *n, const tsd_source_env *env,
                     char *err, size_t errlen) {
    *n = 0;
    err[0] = '\0';
    _Static_assert(ROWS <= TSD_SOURCES_MAX, "TSD_SOURCES_MAX");
    if (tsd_reason_count() > TSD_REASON_COUNT) {
        snprintf(err, errlen, "sources: more reasons than TSD_REASON_COUNT has room for");
        return EX_SOFTWARE;
    }
    for (size_t i = 0; i < ROWS; i++) {
        tsd_source_env e = *env;
        e.reason_base = reason_base(i);
        void *self = NULL;
        const int rc = tsd_source_table[i]->open(&self, &e, err, errlen);
        if (rc != 0) {
            tsd_sources_close(out, n);
            return rc;
        }
        if (self)
            out[(*n)++] = (tsd_source){.ops = tsd_source_table[i], .self = self};
    }
    return 0;
}

void tsd_sources_close(tsd_source *s, size_t *n) {
    for (size_t i = *n; i-- > 0;)
        s[i].ops->close(s[i].self);
    *n = 0;
}

void tsd_sources_reload(const tsd_source *s, size_t n, const tsc_config *cfg) {
    for (size_t i = 0; i < n; i++)
        if (s[i].ops->reload)
            s[i].ops->reload(s[i].self, cfg);
}

size_t tsd_sources_counters(const tsd_source *s, size_t n, tsd_counter *out, size_t max) {
    size_t got = 0;
    for (size_t i = 0; i < n; i++)
        got += tsd_counters_take(s[i].ops->counters, s[i].self, out + got, max - got);
    return got;
}
