/* SPDX-License-Identifier: Apache-2.0 */
/* ring.c - the mirrored sample ring (see ring.h). */
#include "ring.h"

#include <stdlib.h>
#include <string.h>

void tss_ring_init(tss_ring *r, uint32_t window, uint32_t slack) {
    *r = (tss_ring){.window = window, .cap = window + slack};
}

int tss_ring_alloc(tss_ring *r) {
    if (r->v)
        return 0;
    r->v = malloc(2 * (size_t)r->cap * sizeof *r->v);
    r->ts = malloc((size_t)r->cap * sizeof *r->ts);
    if (!r->v || !r->ts) {
        tss_ring_free(r);
        return -1;
    }
    return 0;
}

void tss_ring_free(tss_ring *r) {
    free(r->v);
    free(r->ts);
    r->v = NULL;
    r->ts = NULL;
}

void tss_ring_clear(tss_ring *r) {
    r->head = 0;
    r->fill = 0;
    r->held = 0;
}

void tss_ring_push(tss_ring *r, double v, int64_t ts) {
    r->v[r->head] = v;
    r->v[r->head + r->cap] = v;
    r->ts[r->head] = ts;
    r->head = r->head + 1 == r->cap ? 0 : r->head + 1;
    if (r->fill < r->window)
        r->fill++;
    if (r->held < r->cap)
        r->held++;
}

void tss_ring_append(tss_ring *r, const double *v, const int64_t *ts, uint32_t n) {
    for (uint32_t done = 0; done < n;) {
        uint32_t run = r->cap - r->head; /* up to the end of the ring, then from 0 */
        run = run < n - done ? run : n - done;
        memcpy(r->v + r->head, v + done, run * sizeof *v);
        memcpy(r->v + r->head + r->cap, v + done, run * sizeof *v);
        memcpy(r->ts + r->head, ts + done, run * sizeof *ts);
        r->head = r->head + run == r->cap ? 0 : r->head + run;
        done += run;
    }
    r->fill = r->window - r->fill < n ? r->window : r->fill + n;
    r->held = r->cap - r->held < n ? r->cap : r->held + n;
}

uint32_t tss_ring_start(const tss_ring *r) {
    return r->head >= r->fill ? r->head - r->fill : r->head + r->cap - r->fill;
}

int64_t tss_ring_ts_back(const tss_ring *r, uint64_t back) {
    uint64_t p = r->head >= back ? r->head - back : r->head + r->cap - back;
    return r->ts[p];
}

uint64_t tss_ring_bytes(const tss_ring *r) {
    return r->v ? (uint64_t)r->cap * (2 * sizeof *r->v + sizeof *r->ts) : 0;
}
