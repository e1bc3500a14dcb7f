/* publisher.c - the alert publisher thread and its bounded queue (publisher.h).
 *
 * The queue is a ring of bytes holding variable-size entries, so that short stream
 * ids take little room: an entry is a uint64_t size (the entry's bytes, a multiple of
 * 8) followed by a tsd_alert_rec cut after its stream id's NUL (the id is the last
 * field). An entry never wraps: when one does not fit before the end, a size of 0
 * marks the rest of the ring as skipped and the entry goes at offset 0. */
#include "publisher.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tsd_publisher {
    pthread_mutex_t mu;
    pthread_cond_t wake;  /* the queue became non-empty, or stop */
    unsigned char *ring;  /* cap bytes, 8-aligned; [head, head + n) mod cap are queued */
    size_t cap, head, n;  /* under mu */
    int stop;             /* under mu */
    tsd_alert_sends sent; /* under mu */
    void *pub;            /* the thread's only */
    tsd_ratelimit limit;  /* the thread's only */
    pthread_t thread;
};

/* Sends the entries in the take bytes from head; returns where they end. */
static size_t send_entries(tsd_publisher *p, size_t head, size_t take, tsd_alert_sends *sent) {
    while (take > 0) {
        uint64_t size;
        memcpy(&size, p->ring + head, sizeof size);
        if (size == 0) { /* the rest of the ring was skipped */
            take -= p->cap - head;
            head = 0;
            continue;
        }
        tsd_alerts_send(p->pub, (const tsd_alert_rec *)(p->ring + head + sizeof size), sent,
                        &p->limit);
        take -= size;
        head = head + size == p->cap ? 0 : head + size;
    }
    return head;
}

/* The thread: waits for alerts, sends all that are queued (their bytes stay taken
 * until they are sent, so push cannot overwrite them), frees them, and so on until
 * stop with an empty queue. */
static void *run(void *arg) {
    tsd_publisher *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->n == 0 && !p->stop)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->n == 0)
            break; /* stop, and everything sent */
        const size_t head = p->head, take = p->n;
        pthread_mutex_unlock(&p->mu);
        tsd_alert_sends sent = {0};
        const size_t end = send_entries(p, head, take, &sent);
        pthread_mutex_lock(&p->mu);
        p->n -= take;
        p->head = p->n ? end : 0; /* empty: start over, so that a queue that keeps up
                                   * stays in the ring's first pages (memory touched) */
        tsd_alert_sends_add(&p->sent, &sent);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int tsd_publisher_start(tsd_publisher **out, void *pub, size_t capacity, uint32_t log_rate_per_s,
                        char *err, size_t errlen) {
    *out = NULL;
    capacity &= ~(size_t)7;
    tsd_publisher *p = calloc(1, sizeof *p);
    unsigned char *ring = capacity ? malloc(capacity) : NULL;
    if (!p || !ring) {
        free(p);
        free(ring);
        snprintf(err, errlen, "publisher: out of memory for a queue of %zu bytes", capacity);
        return -1;
    }
    p->ring = ring, p->cap = capacity, p->pub = pub;
    tsd_ratelimit_init(&p->limit, log_rate_per_s);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    int rc = pthread_create(&p->thread, NULL, run, p);
    if (rc != 0) {
        snprintf(err, errlen, "publisher: pthread_create: %s", strerror(rc));
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
        free(ring);
        free(p);
        return -1;
    }
    *out = p;
    return 0;
}

int tsd_publisher_push(tsd_publisher *p, const tsd_alert_rec *r) {
    const size_t bytes = offsetof(tsd_alert_rec, stream_id) + strlen(r->stream_id) + 1;
    const uint64_t size = (sizeof size + bytes + 7) & ~(uint64_t)7;
    pthread_mutex_lock(&p->mu);
    size_t tail = p->head + p->n;
    tail = tail >= p->cap ? tail - p->cap : tail;
    const size_t skip = tail + size > p->cap ? p->cap - tail : 0; /* wrap to offset 0 */
    if (p->n + skip + size > p->cap) {
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    if (skip) {
        memset(p->ring + tail, 0, sizeof size); /* a size of 0: skipped to the end */
        tail = 0;
    }
    memcpy(p->ring + tail, &size, sizeof size);
    memcpy(p->ring + tail + sizeof size, r, bytes);
    const int was_empty = p->n == 0;
    p->n += skip + size;
    if (was_empty)
        pthread_cond_signal(&p->wake); /* the thread waits only on an empty queue */
    pthread_mutex_unlock(&p->mu);
    return 0;
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
    free(p->ring);
    free(p);
}
