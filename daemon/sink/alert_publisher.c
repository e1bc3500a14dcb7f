/* SPDX-License-Identifier: Apache-2.0 */
/* alert_publisher.c - the alert publisher thread and its bounded queues (alert_publisher.h).
 *
 * Each queue is a ring of bytes holding variable-size entries, so that short stream
 * ids take little room: an entry is a uint64_t size (the entry's bytes, a multiple of
 * 8) followed by a tsd_alert_rec cut after its stream id's NUL (the id is the last
 * field). An entry never wraps: when one does not fit before the end, a size of 0
 * marks the rest of the ring as skipped and the entry goes at offset 0.
 *
 * Two lanes. A pass join hands over its DISCORD and MOTIF alerts in bursts of tens of
 * thousands; a LEFT_DISCORD (the low-latency alert) or GAP queued behind such a burst
 * would wait for all of it. So those go to the urgent lane, which the thread drains
 * before every entry of the bulk lane, unless their stream has bulk entries queued
 * or being sent: then they take the bulk lane behind them. Each stream's alerts thus
 * leave in queue order: an urgent one follows only bulk ones already sent, and a bulk
 * one queued after an urgent one of its stream waits for the urgent lane to drain.
 * Streams are told apart by a hash of their id into TSD_PUB_BUCKETS counters of bulk
 * entries in flight; a collision only sends an alert by the bulk lane (in order). */
#include "daemon/sink/alert_publisher.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/log.h" /* tsd_now_ns */

#define TSD_PUB_BUCKETS (1u << 16)
#define URGENT_SHARE    8 /* the urgent lane gets 1/URGENT_SHARE of the capacity */
/* Bytes of entries sent between two returns of their room to the lane (a few hundred
 * alerts): taking a whole burst at once would keep its room until the last was sent. */
#define SLICE_BYTES (64u << 10)

typedef struct {
    unsigned char *ring; /* cap bytes, 8-aligned; [head, head + n) mod cap are queued */
    size_t cap, head, n; /* under mu */
} lane;

struct tsd_publisher {
    pthread_mutex_t mu;
    pthread_cond_t wake;           /* a lane became non-empty, or stop */
    lane urgent, bulk;             /* under mu */
    atomic_size_t urgent_n;        /* urgent.n, read by the thread without mu between entries */
    int stop;                      /* under mu */
    int held;                      /* under mu: tsd_publisher_hold (tests) */
    int asleep;                    /* under mu: the thread waits on wake */
    tsd_alert_sends sent;          /* under mu */
    atomic_uint *in_bulk;          /* per bucket: bulk entries queued or being sent */
    tsd_sink sinks[TSD_SINKS_MAX]; /* where the alerts go, in order */
    size_t nsinks;
    pthread_t thread;
};

/* The bucket of a stream id (FNV-1a). */
static uint32_t bucket(const char *id) {
    uint32_t h = 2166136261u;
    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 16777619u;
    return h & (TSD_PUB_BUCKETS - 1);
}

/* Sends the entries in the take bytes from *head of q (bulk: decrementing their
 * buckets, and stopping early once urgent entries wait); advances *head and returns
 * the bytes consumed. */
static size_t send_entries(tsd_publisher *p, const lane *q, size_t *head, size_t take, int bulk,
                           tsd_alert_sends *sent) {
    size_t done = 0;
    while (done < take) {
        if (bulk && atomic_load_explicit(&p->urgent_n, memory_order_relaxed))
            break;
        uint64_t size;
        memcpy(&size, q->ring + *head, sizeof size);
        if (size == 0) { /* the rest of the ring was skipped */
            done += q->cap - *head;
            *head = 0;
            continue;
        }
        const tsd_alert_rec *r = (const tsd_alert_rec *)(q->ring + *head + sizeof size);
        tsd_sinks_offer(p->sinks, p->nsinks, r, sent);
        if (bulk)
            atomic_fetch_sub_explicit(&p->in_bulk[bucket(r->stream_id)], 1, memory_order_release);
        done += size;
        *head = *head + size == q->cap ? 0 : *head + size;
    }
    return done;
}

/* Sends about SLICE_BYTES of what q holds (outside the lock; the bytes stay taken
 * until sent, so push cannot overwrite them) and frees them. Called and returns with
 * mu held. */
static void drain(tsd_publisher *p, lane *q, int bulk) {
    size_t head = q->head;
    /* whole entries: the last one may end past SLICE_BYTES */
    const size_t take = q->n < SLICE_BYTES ? q->n : SLICE_BYTES;
    pthread_mutex_unlock(&p->mu);
    tsd_alert_sends sent = {0};
    const uint64_t t0 = tsd_now_ns();
    const size_t done = send_entries(p, q, &head, take, bulk, &sent);
    sent.ns_send = tsd_now_ns() - t0;
    pthread_mutex_lock(&p->mu);
    for (int k = 0; k < TSS_ALERT_KINDS; k++) /* from queued to published or dropped */
        p->sent.queued[k] -= sent.published[k] + sent.dropped[k];
    q->n -= done;
    q->head = q->n ? head : 0; /* empty: start over, so that a queue that keeps up stays
                                * in the ring's first pages (memory touched) */
    if (!bulk)
        atomic_store_explicit(&p->urgent_n, q->n, memory_order_relaxed);
    tsd_alert_sends_add(&p->sent, &sent);
}

/* The thread: waits for alerts and sends them, the urgent lane first (and again
 * whenever urgent entries arrive while a bulk batch is being sent), until stop with
 * both lanes empty. */
static void *run(void *arg) {
    tsd_publisher *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while ((p->urgent.n == 0 && p->bulk.n == 0 && !p->stop) || (p->held && !p->stop)) {
            p->asleep = 1;
            pthread_cond_wait(&p->wake, &p->mu);
            p->asleep = 0;
        }
        if (p->urgent.n)
            drain(p, &p->urgent, 0);
        else if (p->bulk.n)
            drain(p, &p->bulk, 1);
        else
            break; /* stop, and everything sent */
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Allocates q's ring of cap bytes (a multiple of 8); 0 or -1. */
static int lane_init(lane *q, size_t cap) {
    *q = (lane){.ring = malloc(cap ? cap : 8), .cap = cap};
    return q->ring ? 0 : -1;
}

int tsd_publisher_start(tsd_publisher **out, const tsd_sink *sinks, size_t nsinks, size_t capacity,
                        char *err, size_t errlen) {
    *out = NULL;
    const size_t urgent = (capacity / URGENT_SHARE) & ~(size_t)7;
    tsd_publisher *p = calloc(1, sizeof *p);
    if (p)
        p->in_bulk = calloc(TSD_PUB_BUCKETS, sizeof *p->in_bulk);
    if (!p || !p->in_bulk || lane_init(&p->urgent, urgent) != 0 ||
        lane_init(&p->bulk, (capacity - urgent) & ~(size_t)7) != 0) {
        if (p)
            free(p->in_bulk), free(p->urgent.ring), free(p->bulk.ring);
        free(p);
        snprintf(err, errlen, "publisher: out of memory for a queue of %zu bytes", capacity);
        return -1;
    }
    p->nsinks = nsinks < TSD_SINKS_MAX ? nsinks : TSD_SINKS_MAX;
    memcpy(p->sinks, sinks, p->nsinks * sizeof *sinks);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    int rc = pthread_create(&p->thread, NULL, run, p);
    if (rc != 0) {
        snprintf(err, errlen, "publisher: pthread_create: %s", strerror(rc));
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
        free(p->in_bulk), free(p->urgent.ring), free(p->bulk.ring);
        free(p);
        return -1;
    }
    *out = p;
    return 0;
}

/* Copies the entry (size bytes, r cut to bytes) into q; 0, or -1 when it does not fit.
 * Under mu. */
static int put(lane *q, const tsd_alert_rec *r, size_t bytes, uint64_t size) {
    size_t tail = q->head + q->n;
    tail = tail >= q->cap ? tail - q->cap : tail;
    const size_t skip = tail + size > q->cap ? q->cap - tail : 0; /* wrap to offset 0 */
    if (q->n + skip + size > q->cap)
        return -1;
    if (skip) {
        memset(q->ring + tail, 0, sizeof size); /* a size of 0: skipped to the end */
        tail = 0;
    }
    memcpy(q->ring + tail, &size, sizeof size);
    memcpy(q->ring + tail + sizeof size, r, bytes);
    q->n += skip + size;
    return 0;
}

/* Queues r in its lane (under mu); 0, or -1 when neither lane has room. */
static int push_locked(tsd_publisher *p, const tsd_alert_rec *r) {
    const size_t bytes = offsetof(tsd_alert_rec, stream_id) + strlen(r->stream_id) + 1;
    const uint64_t size = (sizeof size + bytes + 7) & ~(uint64_t)7;
    const uint32_t b = bucket(r->stream_id);
    const int kind_urgent = r->alert.kind == TSS_ALERT_ANOMALY ||
                            r->alert.kind == TSS_ALERT_ANOMALY_END ||
                            r->alert.kind == TSS_ALERT_LEFT_DISCORD ||
                            r->alert.kind == TSS_ALERT_GAP || r->alert.kind == TSS_ALERT_RESET;
    /* the thread decrements a bucket only after sending: 0 = nothing of this stream
     * left in the bulk lane (read under mu, so in order with the pushes) */
    int urgent = kind_urgent && atomic_load_explicit(&p->in_bulk[b], memory_order_acquire) == 0;
    if (urgent && put(&p->urgent, r, bytes, size) != 0)
        urgent = 0; /* the urgent lane is full: behind the bulk ones, still in order */
    if (!urgent && put(&p->bulk, r, bytes, size) != 0)
        return -1;
    if (urgent)
        atomic_store_explicit(&p->urgent_n, p->urgent.n, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&p->in_bulk[b], 1, memory_order_relaxed);
    p->sent.queued[tsd_alert_slot(r->alert.kind)]++;
    return 0;
}

size_t tsd_publisher_push(tsd_publisher *p, const tsd_alert_rec *r, size_t n,
                          uint64_t refused[TSS_ALERT_KINDS]) {
    size_t queued = 0;
    pthread_mutex_lock(&p->mu);
    for (size_t k = 0; k < n; k++) {
        const int ok = push_locked(p, &r[k]) == 0;
        queued += ok;
        refused[tsd_alert_slot(r[k].alert.kind)] += !ok;
    }
    if (queued && p->asleep)
        pthread_cond_signal(&p->wake); /* one wake-up for the whole batch */
    pthread_mutex_unlock(&p->mu);
    return queued;
}

void tsd_publisher_hold(tsd_publisher *p, int hold) {
    pthread_mutex_lock(&p->mu);
    p->held = hold;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
}

void tsd_publisher_counts(tsd_publisher *p, tsd_alert_sends *out) {
    pthread_mutex_lock(&p->mu);
    *out = p->sent;
    pthread_mutex_unlock(&p->mu);
}

void tsd_publisher_stop(tsd_publisher **pp, tsd_alert_sends *out) {
    tsd_publisher *p = *pp;
    *pp = NULL;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    *out = p->sent;
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->in_bulk);
    free(p->urgent.ring);
    free(p->bulk.ring);
    free(p);
}
