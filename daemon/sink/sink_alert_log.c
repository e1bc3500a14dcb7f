/* SPDX-License-Identifier: Apache-2.0 */
/* sink_alert_log.c - the alert log sink (sink.h): one JSON line per alert, the fields of
 * `tsmine alerts` (lib/alert_json.h), appended to alert_log.path ("" = off), for
 * tail -F, jq or a log shipper.
 *
 * The publisher thread formats the line and copies it into a bounded queue of
 * QUEUE_BYTES (full: the alert is counted as a drop, never waited for); a writer thread
 * of its own appends what is queued (write(2), O_APPEND), so a slow disk holds neither
 * the publisher nor the main loop. Every SIGHUP or RELOAD reopens the path, for
 * logrotate (its postrotate sends SIGHUP); a reopen that fails keeps the file open
 * before. Counters: alert_log_lines, alert_log_drops, alert_log_errors (STATUS),
 * tsmine_alert_log_*_total (/metrics). */
#include "daemon/sink/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "daemon/core/log.h"
#include "lib/alert_json.h"

/* Bytes of lines waiting for the writer: about 10,000 alerts. */
#define QUEUE_BYTES (4u << 20)

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t wake; /* lines queued, reopen or stop */
    pthread_t thread;
    char *ring;                    /* QUEUE_BYTES; [head, head + n) mod QUEUE_BYTES queued */
    size_t head, n;                /* under mu */
    int stop, reopen;              /* under mu */
    uint64_t lines, drops, errors; /* under mu */
    int fd;                        /* the writer's */
    char path[sizeof(((tsc_config *)0)->alert_log_path)];
} alert_log;

static void *run(void *arg);

static int open_path(const char *path) {
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
}

static int log_open(void **self, const tsd_sink_env *env, char *err, size_t errlen) {
    *self = NULL;
    const char *path = env->cfg->alert_log_path;
    if (!path[0])
        return 0;
    alert_log *l = calloc(1, sizeof *l);
    if (!l || !(l->ring = malloc(QUEUE_BYTES))) {
        free(l);
        snprintf(err, errlen, "alert_log: out of memory");
        return EX_OSERR;
    }
    snprintf(l->path, sizeof l->path, "%s", path);
    if ((l->fd = open_path(path)) < 0) {
        snprintf(err, errlen, "alert_log.path: cannot open %s: %s", path, strerror(errno));
        free(l->ring), free(l);
        return EX_CANTCREAT;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->wake, NULL);
    const int rc = pthread_create(&l->thread, NULL, run, l);
    if (rc != 0) {
        snprintf(err, errlen, "alert_log: pthread_create: %s", strerror(rc));
        close(l->fd);
        pthread_cond_destroy(&l->wake), pthread_mutex_destroy(&l->mu);
        free(l->ring), free(l);
        return EX_OSERR;
    }
    tsd_log(TSD_LOG_INFO, "alert_log: one JSON line per alert to %s", path);
    *self = l;
    return 0;
}

/* Writes all of buf; 0, or -1 (errno). */
static int write_all(int fd, const char *buf, size_t len) {
    while (len) {
        const ssize_t k = write(fd, buf, len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        buf += k, len -= (size_t)k;
    }
    return 0;
}

/* The writer's reopen of the path (after logrotate moved the file away). */
static void reopen(alert_log *l) {
    const int fd = open_path(l->path);
    if (fd < 0) {
        const int errnum = errno;
        pthread_mutex_lock(&l->mu);
        l->errors++;
        pthread_mutex_unlock(&l->mu);
        tsd_log(TSD_LOG_ERR, "alert_log: cannot reopen %s: %s (writing on in the file before)",
                l->path, strerror(errnum));
        return;
    }
    close(l->fd);
    l->fd = fd;
    tsd_log(TSD_LOG_INFO, "alert_log: %s reopened", l->path);
}

/* The writer: appends the queued bytes, at most up to the ring's end at a time (they
 * stay taken until written, so offer cannot overwrite them), until stop with nothing
 * queued. */
static void *run(void *arg) {
    alert_log *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->n && !l->stop && !l->reopen)
            pthread_cond_wait(&l->wake, &l->mu);
        if (l->reopen) {
            l->reopen = 0;
            pthread_mutex_unlock(&l->mu);
            reopen(l);
            pthread_mutex_lock(&l->mu);
            continue;
        }
        if (!l->n)
            break; /* stop, and everything written */
        const size_t head = l->head, take = l->n < QUEUE_BYTES - head ? l->n : QUEUE_BYTES - head;
        pthread_mutex_unlock(&l->mu);
        const int rc = write_all(l->fd, l->ring + head, take), errnum = errno;
        uint64_t lines = 0;
        for (const char *p = l->ring + head, *end = p + take; (p = memchr(p, '\n', end - p)); p++)
            lines++;
        if (rc != 0)
            tsd_log(TSD_LOG_ERR, "alert_log: %s: %s (%llu alert lines lost)", l->path,
                    strerror(errnum), (unsigned long long)lines);
        pthread_mutex_lock(&l->mu);
        l->head = head + take == QUEUE_BYTES ? 0 : head + take;
        l->n -= take;
        if (rc == 0)
            l->lines += lines;
        else
            l->errors++;
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* Formats r as a line and queues it: O(the line), under the lock only for the copy. */
static int log_offer(void *self, const tsd_alert_rec *r) {
    alert_log *l = self;
    Tsmine__V1__Alert msg;
    tsd_alert_rec_msg(r, &msg);
    char line[TSM_ALERT_JSON_MAX + 1];
    size_t len = tsm_alert_json(line, TSM_ALERT_JSON_MAX, &msg);
    len = len < TSM_ALERT_JSON_MAX ? len : TSM_ALERT_JSON_MAX - 1;
    line[len++] = '\n';
    pthread_mutex_lock(&l->mu);
    const int room = l->n + len <= QUEUE_BYTES;
    if (room) {
        size_t tail = l->head + l->n;
        tail = tail >= QUEUE_BYTES ? tail - QUEUE_BYTES : tail;
        const size_t first = len < QUEUE_BYTES - tail ? len : QUEUE_BYTES - tail;
        memcpy(l->ring + tail, line, first);
        memcpy(l->ring, line + first, len - first);
        l->n += len;
        pthread_cond_signal(&l->wake);
    } else {
        l->drops++;
    }
    pthread_mutex_unlock(&l->mu);
    return room ? TSD_SINK_TAKEN : TSD_SINK_NO_ROOM;
}

/* SIGHUP or RELOAD: the writer reopens the path (the file's, as at the start). */
static void log_reload(void *self, const tsc_config *cfg) {
    alert_log *l = self;
    (void)cfg; /* alert_log.path needs a restart */
    pthread_mutex_lock(&l->mu);
    l->reopen = 1;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->mu);
}

static size_t log_counters(void *self, tsd_counter out[]) {
    alert_log *l = self;
    pthread_mutex_lock(&l->mu);
    const tsd_counter rows[] = {
        TSD_COUNTER("alert_log_lines", "tsmine_alert_log_lines_total", "counter",
                    "Alert lines appended to the alert log (alert_log.path).", l->lines),
        TSD_COUNTER("alert_log_drops", "tsmine_alert_log_drops_total", "counter",
                    "Alerts not written to the alert log: its queue was full.", l->drops),
        TSD_COUNTER("alert_log_errors", "tsmine_alert_log_errors_total", "counter",
                    "Failed writes (their lines lost) and reopens of the alert log.", l->errors),
    };
    pthread_mutex_unlock(&l->mu);
    memcpy(out, rows, sizeof rows);
    return sizeof rows / sizeof rows[0];
}

/* Writes what is queued, stops the writer, closes the file. */
static void log_close(void *self) {
    alert_log *l = self;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    close(l->fd);
    pthread_cond_destroy(&l->wake);
    pthread_mutex_destroy(&l->mu);
    free(l->ring);
    free(l);
}

const tsd_sink_ops tsd_sink_alert_log = {
    .name = "alert_log",
    .open = log_open,
    .offer = log_offer,
    .reload = log_reload,
    .counters = log_counters,
    .close = log_close,
};
