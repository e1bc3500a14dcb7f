/* SPDX-License-Identifier: Apache-2.0 */
/* ckpt_job.c - incremental checkpoints: the main loop's steps and the writer thread
 * (see ckpt_job.h). */
#include "daemon/state/ckpt_job.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/state/state_files.h"
#include "engine_checkpoint.h"

#define UNTOUCHED INT64_MIN /* outcome of a group this checkpoint did not write */

/* What the main loop hands the writer, in order. */
typedef enum { ITEM_RECORD, ITEM_END, ITEM_DONE } item_kind;
typedef struct item {
    struct item *next;
    item_kind kind;
    uint32_t g;
    void *rec; /* ITEM_RECORD: the record (freed by the writer) */
    size_t n;  /* its bytes; ITEM_END: the group's record count */
} item;

struct tsd_ckpt_job {
    char dir[4096];
    pthread_t thread;
    int have_thread;
    pthread_mutex_t mu; /* everything down to last_err */
    pthread_cond_t cv;  /* an item queued, bytes written, a checkpoint finished, stop */
    item *head, *tail;
    size_t queued; /* bytes of records queued */
    int stop;
    int finished;                     /* the writer reached the checkpoint's ITEM_DONE */
    int64_t outcome[TSS_CKPT_GROUPS]; /* streams written per group, -1 failed, UNTOUCHED */
    int failed;                       /* a file of this checkpoint failed */
    int all_failed;                   /* out of memory mid-walk: no stream is sure */
    uint64_t failed_streams;          /* streams of the groups whose file failed */
    uint64_t written_streams;         /* streams of the files written (before the dir's fsync) */
    char first_err[1024];             /* its message */
    uint64_t bytes, files;            /* written in all */
    /* main thread only */
    int64_t disk[TSS_CKPT_GROUPS]; /* what each group's file holds */
    int busy, sync;                /* a checkpoint in progress; room() waits (run) */
    tss_ckpt_walk *walk;           /* while its streams are walked */
    double started;
    tsd_ckpt_stats st;
    int last_rc;
    char last_err[1024];
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the writer thread ----------------------------------------------------------- */

/* The next item (waits for it); NULL once stopped with nothing queued. */
static item *next_item(tsd_ckpt_job *j) {
    pthread_mutex_lock(&j->mu);
    while (!j->head && !j->stop)
        pthread_cond_wait(&j->cv, &j->mu);
    item *it = j->head;
    if (it && !(j->head = it->next))
        j->tail = NULL;
    pthread_mutex_unlock(&j->mu);
    return it;
}

/* Frees a record item and tells a waiting main loop there is room again. */
static void done_with(tsd_ckpt_job *j, item *it) {
    pthread_mutex_lock(&j->mu);
    j->queued -= it->kind == ITEM_RECORD ? it->n : 0;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    free(it->rec);
    free(it);
}

/* One group's file being written: its first item, then the queue up to its end. */
typedef struct {
    tsd_ckpt_job *j;
    item *first;
    uint32_t g;
    int ended;          /* its ITEM_END was consumed */
    uint32_t count;     /* records written */
    uint64_t announced; /* records its ITEM_END announced (the group's streams) */
    uint64_t bytes;
} group_write;

/* Consumes the group's items up to its ITEM_END, writing them to f when f is not NULL.
 * Returns 0, or -1 when the writing failed or the count disagrees. */
static int consume_group(group_write *gw, FILE *f, char *err, unsigned errlen) {
    tss_ckpt_file cf;
    if (f)
        tss_ckpt_file_begin(&cf, f, gw->g);
    int rc = 0;
    for (item *it = gw->first; it; it = next_item(gw->j)) {
        gw->first = NULL;
        if (it->kind == ITEM_DONE) { /* the group never ended (a walk cut short): back it goes */
            pthread_mutex_lock(&gw->j->mu);
            it->next = gw->j->head;
            gw->j->head = it;
            gw->j->tail = gw->j->tail ? gw->j->tail : it;
            pthread_mutex_unlock(&gw->j->mu);
            if (err)
                snprintf(err, errlen, "group %u: incomplete", gw->g);
            rc = -1;
            break;
        }
        if (it->kind == ITEM_RECORD && f)
            tss_ckpt_file_record(&cf, it->rec, it->n);
        const int end = it->kind != ITEM_RECORD;
        if (end)
            gw->announced = it->n;
        if (end && f && it->n != cf.count) {
            snprintf(err, errlen, "group %u: %u records, %zu announced", gw->g, cf.count, it->n);
            rc = -1;
        }
        done_with(gw->j, it);
        if (end)
            break;
    }
    gw->ended = 1;
    if (f && (tss_ckpt_file_end(&cf) != 0 || rc != 0)) {
        if (rc == 0)
            snprintf(err, errlen, "write failed");
        return -1;
    }
    gw->bytes = f ? cf.len : 0;
    gw->count = f ? cf.count : 0;
    return 0;
}

static int group_fn(void *user, FILE *f, char *err, unsigned errlen) {
    return consume_group(user, f, err, errlen);
}

/* Writes (or, empty, removes) the file of the group whose first item is it. Returns
 * 0, or -1 with err. */
static int write_group(tsd_ckpt_job *j, item *it, char *err, size_t errlen) {
    char name[64], path[4200];
    const uint32_t g = it->g;
    tsd_ckpt_group_name(g, name, sizeof name);
    int rc = 0;
    uint32_t count = 0;
    uint64_t announced = 0; /* the group's streams, whose state a failure leaves unsaved */
    if (it->kind == ITEM_END && it->n == 0) { /* the group has no stream left */
        snprintf(path, sizeof path, "%s/%s", j->dir, name);
        if (unlink(path) != 0 && errno != ENOENT) {
            snprintf(err, errlen, "removing %.900s: %s", path, strerror(errno));
            rc = -1;
        }
        done_with(j, it);
    } else {
        group_write gw = {.j = j, .first = it, .g = g};
        rc = tsd_ckpt_write_file(j->dir, name, group_fn, &gw, 0, err, errlen);
        if (!gw.ended) /* it failed before reading the group: its records are dropped */
            consume_group(&gw, NULL, NULL, 0);
        count = gw.count, announced = gw.announced;
        pthread_mutex_lock(&j->mu);
        j->bytes += rc == 0 ? gw.bytes : 0;
        pthread_mutex_unlock(&j->mu);
    }
    pthread_mutex_lock(&j->mu);
    j->files++;
    j->outcome[g] = rc == 0 ? (int64_t)count : -1;
    if (rc == 0)
        j->written_streams += count;
    else
        j->failed_streams += announced;
    pthread_mutex_unlock(&j->mu);
    return rc;
}

static void note_failure(tsd_ckpt_job *j, const char *err) {
    pthread_mutex_lock(&j->mu);
    if (!j->failed)
        snprintf(j->first_err, sizeof j->first_err, "%s", err);
    j->failed = 1;
    pthread_mutex_unlock(&j->mu);
}

static void *writer(void *arg) {
    tsd_ckpt_job *j = arg;
    int touched = 0; /* files written or removed since the last fsync of the directory */
    item *it;
    while ((it = next_item(j))) {
        char err[1024] = "";
        if (it->kind != ITEM_DONE) {
            touched = 1;
            if (write_group(j, it, err, sizeof err) != 0)
                note_failure(j, err);
            continue;
        }
        free(it);
        if (touched && tsd_ckpt_sync_dir(j->dir, err, sizeof err) != 0) {
            note_failure(j, err);
            pthread_mutex_lock(&j->mu); /* the files renamed may not survive a power cut */
            j->failed_streams += j->written_streams;
            pthread_mutex_unlock(&j->mu);
        }
        touched = 0;
        pthread_mutex_lock(&j->mu);
        j->finished = 1;
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
    }
    return NULL;
}

/* ---- the main loop's side -------------------------------------------------------- */

static void push(tsd_ckpt_job *j, item_kind kind, uint32_t g, void *rec, size_t n) {
    item *it = malloc(sizeof *it);
    pthread_mutex_lock(&j->mu);
    if (!it) { /* the group's file then fails its count check, or the DONE never comes */
        free(rec);
        if (!j->failed)
            snprintf(j->first_err, sizeof j->first_err, "out of memory");
        j->failed = j->all_failed = 1; /* which groups lack a record is not known */
        if (kind != ITEM_DONE) {
            pthread_mutex_unlock(&j->mu);
            return;
        }
        j->finished = 1; /* nothing follows the walk's last item: done without the writer */
        pthread_mutex_unlock(&j->mu);
        return;
    }
    *it = (item){.kind = kind, .g = g, .rec = rec, .n = n};
    if (j->tail)
        j->tail->next = it;
    else
        j->head = it;
    j->tail = it;
    j->queued += kind == ITEM_RECORD ? n : 0;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* The sink of the walks (tss_ckpt_sink). */
static int sink_room(void *user) {
    tsd_ckpt_job *j = user;
    pthread_mutex_lock(&j->mu);
    while (j->sync && j->queued >= TSD_CKPT_QUEUE)
        pthread_cond_wait(&j->cv, &j->mu);
    const int room = j->queued < TSD_CKPT_QUEUE;
    pthread_mutex_unlock(&j->mu);
    return room;
}

static void sink_record(void *user, uint32_t g, void *rec, size_t n) {
    push(user, ITEM_RECORD, g, rec, n);
}

static void sink_end(void *user, uint32_t g, uint32_t count) {
    push(user, ITEM_END, g, NULL, count);
}

int tsd_ckpt_job_open(const char *dir, tsd_ckpt_job **out, char *err, size_t errlen) {
    tsd_ckpt_job *j = calloc(1, sizeof *j);
    if (!j || strlen(dir) >= sizeof j->dir) {
        snprintf(err, errlen, "checkpoints: %s",
                 j ? "state directory path too long" : "out of memory");
        free(j);
        return -1;
    }
    strcpy(j->dir, dir);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    int rc = pthread_create(&j->thread, NULL, writer, j);
    if (rc != 0) {
        snprintf(err, errlen, "checkpoints: cannot start the writer thread: %s", strerror(rc));
        pthread_cond_destroy(&j->cv);
        pthread_mutex_destroy(&j->mu);
        free(j);
        return -1;
    }
    j->have_thread = 1;
    *out = j;
    return 0;
}

void tsd_ckpt_job_close(tsd_ckpt_job **self_p) {
    tsd_ckpt_job *j = *self_p;
    if (!j)
        return;
    tss_ckpt_walk_destroy(&j->walk);
    if (j->busy) /* a walk left unfinished: its groups end, so the writer can finish them */
        push(j, ITEM_DONE, 0, NULL, 0);
    pthread_mutex_lock(&j->mu);
    j->stop = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (j->have_thread)
        pthread_join(j->thread, NULL);
    for (item *it = j->head, *next; it; it = next) {
        next = it->next;
        free(it->rec);
        free(it);
    }
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
    *self_p = NULL;
}

void tsd_ckpt_job_set_disk(tsd_ckpt_job *j, unsigned g, int64_t count) {
    if (g < TSS_CKPT_GROUPS)
        j->disk[g] = count;
}

int tsd_ckpt_job_busy(const tsd_ckpt_job *j) {
    return j->busy;
}

int tsd_ckpt_job_start(tsd_ckpt_job *j) {
    if (j->busy)
        return 0;
    if (tss_ckpt_walk_new(j->disk, 0, &j->walk) != 0)
        return -1;
    pthread_mutex_lock(&j->mu);
    j->finished = j->failed = j->all_failed = 0;
    j->failed_streams = j->written_streams = 0;
    j->first_err[0] = '\0';
    for (unsigned g = 0; g < TSS_CKPT_GROUPS; g++)
        j->outcome[g] = UNTOUCHED;
    pthread_mutex_unlock(&j->mu);
    j->busy = 1;
    j->started = now_s();
    return 0;
}

/* The walk is over (rc: its last step's): its stats, and the writer's ITEM_DONE. */
static void walk_over(tsd_ckpt_job *j, int rc) {
    const tss_ckpt_walk_stats *ws = tss_ckpt_walk_stats_of(j->walk);
    j->st.last_stall_s = ws->held_s;
    j->st.last_max_step_s = ws->max_held_s;
    j->st.last_max_step_cpu_s = ws->max_cpu_s;
    j->st.last_records = ws->records;
    tss_ckpt_walk_destroy(&j->walk);
    if (rc < 0) { /* out of memory mid-walk: the groups it had begun are not complete */
        pthread_mutex_lock(&j->mu);
        if (!j->failed)
            snprintf(j->first_err, sizeof j->first_err, "out of memory serialising the streams");
        j->failed = j->all_failed = 1;
        pthread_mutex_unlock(&j->mu);
        for (unsigned g = 0; g < TSS_CKPT_GROUPS; g++)
            j->disk[g] = -1; /* every group is written again next time */
    }
    push(j, ITEM_DONE, 0, NULL, 0);
}

/* The writer finished the checkpoint: what each group's file holds now, the stats. */
static void finish(tsd_ckpt_job *j) {
    pthread_mutex_lock(&j->mu);
    for (unsigned g = 0; g < TSS_CKPT_GROUPS; g++)
        if (j->outcome[g] != UNTOUCHED)
            j->disk[g] = j->outcome[g];
    j->last_rc = j->failed ? -1 : 0;
    j->st.last_failed_streams = j->failed_streams;
    j->st.last_all_failed = j->all_failed;
    snprintf(j->last_err, sizeof j->last_err, "%s", j->first_err);
    j->st.last_bytes = j->bytes - j->st.bytes;
    j->st.bytes = j->bytes;
    j->st.files = j->files;
    j->finished = 0;
    pthread_mutex_unlock(&j->mu);
    j->st.done++;
    j->st.failures += j->last_rc != 0;
    j->st.last_duration_s = now_s() - j->started;
    if (j->last_rc == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        j->st.last_success_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    j->busy = 0;
}

int tsd_ckpt_job_step(tsd_ckpt_job *j, tss_engine *e, long *wait_ms) {
    *wait_ms = -1;
    if (!j->busy)
        return 0;
    if (j->walk) {
        const tss_ckpt_sink sink = {sink_room, sink_record, sink_end, j};
        const double held = tss_ckpt_walk_stats_of(j->walk)->held_s;
        const int rc = tss_ckpt_walk_step(e, j->walk, TSD_CKPT_STEP_S, 0, &sink);
        if (rc != 0)
            walk_over(j, rc);
        else { /* a step cut short waits for a join or for the writer: not at once */
            const double took = tss_ckpt_walk_stats_of(j->walk)->held_s - held;
            *wait_ms = took < TSD_CKPT_STEP_S / 2 ? 2 : 0;
            return 0;
        }
    }
    pthread_mutex_lock(&j->mu);
    const int finished = j->finished;
    pthread_mutex_unlock(&j->mu);
    if (!finished) {
        *wait_ms = 5;
        return 0;
    }
    finish(j);
    return 1;
}

/* Drives the checkpoint in progress to its end, all at once. */
static void complete(tsd_ckpt_job *j, tss_engine *e) {
    const tss_ckpt_sink sink = {sink_room, sink_record, sink_end, j};
    j->sync = 1;
    int rc = 0;
    while (j->walk && (rc = tss_ckpt_walk_step(e, j->walk, 1e9, 1, &sink)) == 0)
        ;
    if (j->walk)
        walk_over(j, rc);
    j->sync = 0;
    pthread_mutex_lock(&j->mu);
    while (!j->finished)
        pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    finish(j);
}

int tsd_ckpt_job_run(tsd_ckpt_job *j, tss_engine *e, char *err, size_t errlen) {
    if (j->busy)
        complete(j, e);
    if (tsd_ckpt_job_start(j) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    complete(j, e);
    return tsd_ckpt_job_result(j, err, errlen);
}

int tsd_ckpt_job_result(const tsd_ckpt_job *j, char *err, size_t errlen) {
    if (j->last_rc != 0)
        snprintf(err, errlen, "%s", j->last_err);
    return j->last_rc;
}

void tsd_ckpt_job_stats(const tsd_ckpt_job *j, tsd_ckpt_stats *out) {
    *out = j->st;
}
