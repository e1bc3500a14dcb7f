/* SPDX-License-Identifier: Apache-2.0 */
/* alertmanager.c - the Alertmanager sender (alertmanager.h): a bounded queue from the
 * publisher thread, a table of events, and one libcurl multi handle driven by a thread
 * of its own.
 *
 * Delivery is by state, not by message: each event has a version (1 when opened, 2
 * once resolved) and, per URL, the version that URL acknowledged. A URL's next
 * request carries up to AM_BATCH events whose acknowledged version is behind; a
 * success records the versions it carried, a failure leaves them behind, to be
 * retried after the backoff. Re-sending an open event is the same thing: every
 * resend_interval a URL's acknowledgements of open events are cleared. A resolved
 * event leaves the table once every URL acknowledged it. */
#include "daemon/sink/alertmanager.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/log.h"

#ifdef TSMINE_HAVE_ALERTMANAGER
#include <curl/curl.h>

#define AM_BATCH       64 /* events per request, as Prometheus's notifier */
#define BACKOFF_MIN_NS 500000000ull
#define BACKOFF_MAX_NS 30000000000ull
#define SECRET_MAX     4096

typedef struct {
    uint64_t id;                     /* unique, from 1 */
    uint32_t ver;                    /* 1 open, 2 resolved */
    uint32_t missed;                 /* reconciles in a row whose list lacked its stream */
    uint32_t acked[TSC_MAX_AM_URLS]; /* per URL: the version it acknowledged (0: none) */
    tsd_alert_rec open, end;         /* end valid when ver == 2 */
} event;

/* One Alertmanager URL and its request under way (easy is in the multi handle). */
typedef struct {
    char url[300]; /* BASE/api/v2/alerts */
    CURL *easy;
    int busy;
    char *body;
    size_t body_cap;
    uint64_t ids[AM_BATCH];
    uint32_t vers[AM_BATCH];
    size_t nbatch;
    uint64_t next_try_ns, backoff_ns, resend_at_ns; /* tsd_now_ns clock */
    char resp[200];                                 /* the start of the answer, for logs */
    size_t nresp;
} target;

struct tsd_am {
    pthread_mutex_t mu; /* the queue, the counters, stop */
    tsd_alert_rec *ring;
    size_t cap, head, n;
    int stop;
    tsd_am_counters c;
    char (*rec_ids)[TSS_MAX_ID + 1]; /* tsd_am_reconcile's list, not yet taken */
    size_t rec_n;
    int64_t rec_at; /* 0: none */
    /* the thread's own */
    CURLM *multi;
    pthread_t thread;
    tsd_alert_rec *taken; /* cap entries: the queue's content, moved out under mu */
    event *ev;
    size_t nev, max_ev;
    uint64_t next_id;
    target t[TSC_MAX_AM_URLS];
    size_t nt;
    struct curl_slist *headers;
    char daemon[256], generator[300];
    char username[128], password[SECRET_MAX];
    char ca_file[512];
    uint64_t resend_ns;
    long timeout_ms;
    tsd_ratelimit limit;
};

/* Reads a credential file (at most SECRET_MAX - 1 bytes, trailing white space cut);
 * 0, or -1 with the reason in err. */
static int read_secret(const char *path, char *out, const char *key, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "alertmanager.%s: %s: %s", key, path, strerror(errno));
        return -1;
    }
    size_t n = fread(out, 1, SECRET_MAX - 1, f);
    const int big = n == SECRET_MAX - 1 && fgetc(f) != EOF;
    fclose(f);
    out[n] = '\0';
    while (n && strchr(" \t\r\n", out[n - 1]))
        out[--n] = '\0';
    if (big || n == 0 || strlen(out) != n) {
        snprintf(err, errlen, "alertmanager.%s: %s: %s", key, path,
                 big ? "longer than 4 KiB"
                 : n ? "holds a NUL byte"
                     : "empty");
        return -1;
    }
    return 0;
}

/* libcurl's write callback: keeps the first bytes of the answer for log lines. */
static size_t on_data(char *ptr, size_t size, size_t nmemb, void *user) {
    target *t = user;
    size_t n = size * nmemb, room = sizeof t->resp - 1 - t->nresp;
    memcpy(t->resp + t->nresp, ptr, n < room ? n : room);
    t->nresp += n < room ? n : room;
    t->resp[t->nresp] = '\0';
    return n;
}

/* The event of stream id that is still open, or NULL. O(events). */
static event *find_open(tsd_am *am, const char *id) {
    for (size_t i = 0; i < am->nev; i++)
        if (am->ev[i].ver == 1 && strcmp(am->ev[i].open.stream_id, id) == 0)
            return &am->ev[i];
    return NULL;
}

/* A free slot of the table: a new one, else the oldest resolved event (its resolution
 * then never reaches the URLs that had not acknowledged it: Alertmanager ends it at
 * its endsAt), else NULL. */
static event *new_slot(tsd_am *am) {
    if (am->nev < am->max_ev)
        return &am->ev[am->nev++];
    event *old = NULL;
    for (size_t i = 0; i < am->nev; i++)
        if (am->ev[i].ver == 2 && (!old || am->ev[i].id < old->id))
            old = &am->ev[i];
    return old;
}

/* One alert from the queue into the table. An ANOMALY_END without an open event (the
 * ANOMALY came before a restart) still resolves: the alert's labels are its identity. */
static void apply(tsd_am *am, const tsd_alert_rec *r) {
    event *e = find_open(am, r->stream_id);
    if (!e || r->alert.kind == TSS_ALERT_ANOMALY) {
        if (!e && !(e = new_slot(am))) {
            pthread_mutex_lock(&am->mu);
            am->c.queue_drops++;
            pthread_mutex_unlock(&am->mu);
            return;
        }
        memset(e, 0, sizeof *e);
        e->id = ++am->next_id;
        e->open = *r;
        e->ver = 1;
    }
    if (r->alert.kind == TSS_ALERT_ANOMALY_END)
        e->end = *r, e->ver = 2;
}

static int by_id(const void *a, const void *b) {
    return strcmp(a, b);
}

/* Resolves the open events, opened before at, of streams not in ids (sorted here) for
 * the second time in a row: an ANOMALY_END with no details (length 0), closed now. The
 * list is the engine's at `at`, but alerts reach this thread through the publisher's:
 * an ANOMALY_END the engine emitted before `at` may still be on its way, and resolving
 * at the first miss would make it a second, detached event. O(n log n + events log n). */
static void reconcile(tsd_am *am, char (*ids)[TSS_MAX_ID + 1], size_t n, int64_t at) {
    if (n)
        qsort(ids, n, sizeof *ids, by_id);
    uint64_t orphaned = 0;
    for (size_t i = 0; i < am->nev; i++) {
        event *e = &am->ev[i];
        if (e->ver != 1 || e->open.detected_at_ns >= at)
            continue;
        if (n && bsearch(e->open.stream_id, ids, n, sizeof *ids, by_id)) {
            e->missed = 0;
            continue;
        }
        if (++e->missed < 2)
            continue;
        e->end = e->open;
        e->end.alert = (tss_alert){.kind = TSS_ALERT_ANOMALY_END, .distance = NAN, .score = NAN};
        e->end.detected_at_ns = tsd_realtime_ns();
        e->ver = 2;
        orphaned++;
    }
    if (orphaned) {
        pthread_mutex_lock(&am->mu);
        am->c.orphaned += orphaned;
        pthread_mutex_unlock(&am->mu);
        tsd_log(TSD_LOG_NOTICE,
                "alertmanager: %llu open events resolved: their streams have none open now "
                "(removed, or the ANOMALY_END was lost)",
                (unsigned long long)orphaned);
    }
}

/* Removes the resolved events every URL acknowledged. O(events). */
static void sweep(tsd_am *am) {
    for (size_t i = 0; i < am->nev;) {
        size_t k = 0;
        while (k < am->nt && am->ev[i].acked[k] == am->ev[i].ver)
            k++;
        if (am->ev[i].ver == 2 && k == am->nt)
            am->ev[i] = am->ev[--am->nev];
        else
            i++;
    }
}

/* Starts target k's next request when one is due and events wait for it. */
static void start_request(tsd_am *am, size_t k, uint64_t now) {
    target *t = &am->t[k];
    if (t->busy || now < t->next_try_ns)
        return;
    if (now >= t->resend_at_ns) { /* resend every open event */
        for (size_t i = 0; i < am->nev; i++)
            if (am->ev[i].ver == 1)
                am->ev[i].acked[k] = 0;
        t->resend_at_ns = now + am->resend_ns;
    }
    tsd_am_event batch[AM_BATCH];
    t->nbatch = 0;
    for (size_t i = 0; i < am->nev && t->nbatch < AM_BATCH; i++) {
        const event *e = &am->ev[i];
        if (e->acked[k] == e->ver)
            continue;
        batch[t->nbatch] = (tsd_am_event){&e->open, e->ver == 2 ? &e->end : NULL};
        t->ids[t->nbatch] = e->id, t->vers[t->nbatch++] = e->ver;
    }
    if (t->nbatch == 0)
        return;
    const tsd_am_ident id = {am->daemon, am->generator};
    const int64_t ends = tsd_realtime_ns() + 4 * (int64_t)am->resend_ns;
    size_t need = tsd_am_body(NULL, 0, batch, t->nbatch, &id, ends) + 1;
    if (need > t->body_cap) {
        char *b = realloc(t->body, need);
        if (!b) { /* try again later */
            t->next_try_ns = now + BACKOFF_MIN_NS;
            return;
        }
        t->body = b, t->body_cap = need;
    }
    tsd_am_body(t->body, t->body_cap, batch, t->nbatch, &id, ends);
    t->nresp = 0, t->resp[0] = '\0';
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, t->body);
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE, (long)(need - 1));
    if (curl_multi_add_handle(am->multi, t->easy) == CURLM_OK)
        t->busy = 1;
    else
        t->next_try_ns = now + BACKOFF_MIN_NS;
}

/* A request of target k ended: records what it delivered, or schedules the retry. */
static void finish_request(tsd_am *am, size_t k, CURLcode rc) {
    target *t = &am->t[k];
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    curl_multi_remove_handle(am->multi, t->easy);
    t->busy = 0;
    const uint64_t now = tsd_now_ns();
    const int ok = rc == CURLE_OK && code >= 200 && code < 300;
    const int refused = rc == CURLE_OK && code >= 400 && code < 500 && code != 429;
    uint64_t sent = 0, resolved = 0;
    if (ok || refused) {
        for (size_t b = 0; b < t->nbatch; b++) {
            for (size_t i = 0; i < am->nev; i++) {
                event *e = &am->ev[i];
                if (e->id != t->ids[b])
                    continue;
                if (e->acked[k] < t->vers[b])
                    e->acked[k] = t->vers[b];
                break;
            }
            sent += t->vers[b] == 1, resolved += t->vers[b] == 2;
        }
        t->backoff_ns = 0;
        t->next_try_ns = now;
    } else {
        t->backoff_ns = t->backoff_ns ? 2 * t->backoff_ns : BACKOFF_MIN_NS;
        const uint64_t cap = am->resend_ns < BACKOFF_MAX_NS ? am->resend_ns : BACKOFF_MAX_NS;
        t->backoff_ns = t->backoff_ns > cap ? cap : t->backoff_ns;
        t->next_try_ns = now + t->backoff_ns;
    }
    pthread_mutex_lock(&am->mu);
    if (ok) {
        am->c.sent += sent, am->c.resolved += resolved;
        am->c.last_success_s = (double)tsd_realtime_ns() * 1e-9;
    } else if (refused) {
        am->c.rejected += t->nbatch;
    } else {
        am->c.failures++;
    }
    pthread_mutex_unlock(&am->mu);
    uint64_t suppressed;
    if (!ok && tsd_ratelimit_allow(&am->limit, now, &suppressed)) {
        char why[200];
        if (rc != CURLE_OK)
            snprintf(why, sizeof why, "%s", curl_easy_strerror(rc));
        else
            snprintf(why, sizeof why, "HTTP %ld %.120s", code, t->resp);
        tsd_log(TSD_LOG_WARNING, "alertmanager: %s: %zu alerts %s: %s (%llu similar not logged)",
                t->url, t->nbatch, refused ? "refused, dropped" : "not delivered, retried", why,
                (unsigned long long)suppressed);
    }
    sweep(am);
}

/* Milliseconds until the earliest due request (at most 1000), 0 when one is due. */
static int next_wait_ms(const tsd_am *am, uint64_t now) {
    uint64_t wait = 1000000000ull;
    int open = 0, behind = 0;
    for (size_t i = 0; i < am->nev; i++)
        open |= am->ev[i].ver == 1;
    for (size_t k = 0; k < am->nt; k++) {
        const target *t = &am->t[k];
        if (t->busy)
            continue;
        behind = 0;
        for (size_t i = 0; i < am->nev && !behind; i++)
            behind = am->ev[i].acked[k] != am->ev[i].ver;
        uint64_t due = behind ? t->next_try_ns : UINT64_MAX;
        if (open && t->resend_at_ns < due)
            due = t->resend_at_ns > t->next_try_ns ? t->resend_at_ns : t->next_try_ns;
        if (due != UINT64_MAX)
            wait = due <= now ? 0 : (due - now < wait ? due - now : wait);
    }
    return (int)(wait / 1000000);
}

/* The thread: takes queued alerts, starts due requests, waits in curl_multi_poll
 * (woken by tsd_am_offer and tsd_am_stop), collects finished requests. */
static void *run(void *arg) {
    tsd_am *am = arg;
    for (;;) {
        pthread_mutex_lock(&am->mu);
        const int stop = am->stop;
        size_t n = 0;
        for (; am->n; am->n--, n++) {
            am->taken[n] = am->ring[am->head];
            am->head = am->head + 1 == am->cap ? 0 : am->head + 1;
        }
        char(*rec_ids)[TSS_MAX_ID + 1] = am->rec_ids;
        const size_t rec_n = am->rec_n;
        const int64_t rec_at = am->rec_at;
        am->rec_ids = NULL, am->rec_n = 0, am->rec_at = 0;
        pthread_mutex_unlock(&am->mu);
        if (stop) {
            free(rec_ids);
            break;
        }
        for (size_t i = 0; i < n; i++)
            apply(am, &am->taken[i]);
        if (rec_at)
            reconcile(am, rec_ids, rec_n, rec_at);
        free(rec_ids);
        uint64_t now = tsd_now_ns();
        for (size_t k = 0; k < am->nt; k++)
            start_request(am, k, now);
        int running;
        curl_multi_perform(am->multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(am->multi, &left))) {
            for (size_t k = 0; msg->msg == CURLMSG_DONE && k < am->nt; k++)
                if (am->t[k].easy == msg->easy_handle) {
                    finish_request(am, k, msg->data.result);
                    break;
                }
        }
        uint64_t open = 0;
        for (size_t i = 0; i < am->nev; i++)
            open += am->ev[i].ver == 1;
        pthread_mutex_lock(&am->mu);
        am->c.open = open;
        const int more = am->n > 0 || am->stop || am->rec_at;
        pthread_mutex_unlock(&am->mu);
        if (!more)
            curl_multi_poll(am->multi, NULL, 0, next_wait_ms(am, tsd_now_ns()), NULL);
    }
    return NULL;
}

/* One easy handle per URL, with every option but the body. 0 or -1. */
static int setup_target(tsd_am *am, target *t, const char *base) {
    size_t n = strlen(base);
    while (n && base[n - 1] == '/')
        n--;
    snprintf(t->url, sizeof t->url, "%.*s/api/v2/alerts", (int)n, base);
    if (!(t->easy = curl_easy_init()))
        return -1;
    CURL *e = t->easy;
    curl_easy_setopt(e, CURLOPT_URL, t->url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, am->timeout_ms);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, am->headers);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "tsmined/" TSMINE_VERSION);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    if (am->username[0]) {
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(e, CURLOPT_USERNAME, am->username);
        curl_easy_setopt(e, CURLOPT_PASSWORD, am->password);
    }
    if (am->ca_file[0])
        curl_easy_setopt(e, CURLOPT_CAINFO, am->ca_file);
    return 0;
}

/* Frees what tsd_am_start allocated (the thread is not running). */
static void destroy(tsd_am *am) {
    for (size_t k = 0; k < am->nt; k++) {
        if (am->t[k].busy)
            curl_multi_remove_handle(am->multi, am->t[k].easy);
        if (am->t[k].easy)
            curl_easy_cleanup(am->t[k].easy);
        free(am->t[k].body);
    }
    if (am->multi)
        curl_multi_cleanup(am->multi);
    curl_slist_free_all(am->headers);
    memset(am->password, 0, sizeof am->password);
    pthread_mutex_destroy(&am->mu);
    free(am->ring), free(am->taken), free(am->ev), free(am->rec_ids);
    free(am);
    curl_global_cleanup();
}

int tsd_am_start(tsd_am **out, const tsc_config *cfg, char *err, size_t errlen) {
    *out = NULL;
    err[0] = '\0';
    if (cfg->n_am_urls == 0)
        return 0;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "alertmanager: curl_global_init failed");
        return -1;
    }
    tsd_am *am = calloc(1, sizeof *am);
    if (!am) {
        curl_global_cleanup();
        snprintf(err, errlen, "alertmanager: out of memory");
        return -1;
    }
    pthread_mutex_init(&am->mu, NULL);
    am->cap = cfg->am_queue;
    am->max_ev = (size_t)cfg->max_streams + cfg->am_queue; /* one open event per stream */
    am->ring = calloc(am->cap, sizeof *am->ring);
    am->taken = calloc(am->cap, sizeof *am->taken);
    am->ev = calloc(am->max_ev, sizeof *am->ev); /* untouched pages cost nothing */
    am->resend_ns = (uint64_t)cfg->am_resend_interval_s * 1000000000ull;
    am->timeout_ms = (long)cfg->am_timeout_s * 1000;
    tsd_ratelimit_init(&am->limit, cfg->log_rate_per_s);
    if (cfg->am_instance[0])
        snprintf(am->daemon, sizeof am->daemon, "%s", cfg->am_instance);
    else if (gethostname(am->daemon, sizeof am->daemon - 1) != 0)
        snprintf(am->daemon, sizeof am->daemon, "tsmined");
    if (cfg->am_generator_url[0])
        snprintf(am->generator, sizeof am->generator, "%s", cfg->am_generator_url);
    else if (cfg->metrics_listen[0])
        snprintf(am->generator, sizeof am->generator, "http://%s/metrics", cfg->metrics_listen);
    snprintf(am->username, sizeof am->username, "%s", cfg->am_username);
    snprintf(am->ca_file, sizeof am->ca_file, "%s", cfg->am_ca_file);
    char token[SECRET_MAX + 32] = "Authorization: Bearer ";
    if (!am->ring || !am->taken || !am->ev) {
        snprintf(err, errlen, "alertmanager: out of memory for a queue of %zu", am->cap);
        goto fail;
    }
    if (cfg->am_password_file[0] &&
        read_secret(cfg->am_password_file, am->password, "password_file", err, errlen) != 0)
        goto fail;
    am->headers = curl_slist_append(NULL, "Content-Type: application/json");
    am->headers = curl_slist_append(am->headers, "Expect:"); /* no 100-continue round trip */
    if (cfg->am_bearer_token_file[0]) {
        if (read_secret(cfg->am_bearer_token_file, token + strlen(token), "bearer_token_file", err,
                        errlen) != 0)
            goto fail;
        am->headers = curl_slist_append(am->headers, token);
        memset(token, 0, sizeof token);
    }
    if (!(am->multi = curl_multi_init()))
        goto nomem;
    for (size_t k = 0; k < cfg->n_am_urls; k++, am->nt++)
        if (setup_target(am, &am->t[am->nt], cfg->am_urls[k]) != 0)
            goto nomem;
    int rc = pthread_create(&am->thread, NULL, run, am);
    if (rc != 0) {
        snprintf(err, errlen, "alertmanager: pthread_create: %s", strerror(rc));
        goto fail;
    }
    am->c.enabled = 1;
    *out = am;
    return 0;
nomem:
    snprintf(err, errlen, "alertmanager: libcurl could not set up its handles");
fail:
    destroy(am);
    return -1;
}

int tsd_am_offer(void *user, const tsd_alert_rec *r) {
    tsd_am *am = user;
    if (r->alert.kind != TSS_ALERT_ANOMALY && r->alert.kind != TSS_ALERT_ANOMALY_END)
        return TSD_SINK_TAKEN;
    pthread_mutex_lock(&am->mu);
    const int room = am->n < am->cap;
    if (room) {
        size_t tail = am->head + am->n;
        am->ring[tail >= am->cap ? tail - am->cap : tail] = *r;
        am->n++;
    } else {
        am->c.queue_drops++;
    }
    pthread_mutex_unlock(&am->mu);
    if (room)
        curl_multi_wakeup(am->multi);
    return room ? TSD_SINK_TAKEN : TSD_SINK_NO_ROOM;
}

void tsd_am_resume(tsd_am *am, const char *stream_id) {
    tsd_alert_rec r;
    memset(&r, 0, sizeof r);
    r.alert = (tss_alert){.kind = TSS_ALERT_ANOMALY, .distance = NAN, .score = NAN};
    r.detected_at_ns = tsd_realtime_ns();
    snprintf(r.stream_id, sizeof r.stream_id, "%s", stream_id);
    tsd_am_offer(am, &r);
}

void tsd_am_reconcile(tsd_am *am, char (*ids)[TSS_MAX_ID + 1], size_t n, int64_t at_ns) {
    pthread_mutex_lock(&am->mu);
    free(am->rec_ids);
    am->rec_ids = ids, am->rec_n = n, am->rec_at = at_ns;
    pthread_mutex_unlock(&am->mu);
    curl_multi_wakeup(am->multi);
}

void tsd_am_counts(tsd_am *am, tsd_am_counters *out) {
    if (!am) {
        memset(out, 0, sizeof *out);
        return;
    }
    pthread_mutex_lock(&am->mu);
    *out = am->c;
    pthread_mutex_unlock(&am->mu);
}

void tsd_am_stop(tsd_am **am_p) {
    tsd_am *am = *am_p;
    if (!am)
        return;
    *am_p = NULL;
    pthread_mutex_lock(&am->mu);
    am->stop = 1;
    pthread_mutex_unlock(&am->mu);
    curl_multi_wakeup(am->multi);
    pthread_join(am->thread, NULL);
    destroy(am);
}

#else /* built without libcurl */

int tsd_am_start(tsd_am **out, const tsc_config *cfg, char *err, size_t errlen) {
    *out = NULL;
    err[0] = '\0';
    if (cfg->n_am_urls == 0)
        return 0;
    snprintf(err, errlen,
             "alertmanager.urls: this tsmined was built without libcurl "
             "(libcurl4-openssl-dev), so it cannot send to Alertmanager");
    return -1;
}

int tsd_am_offer(void *user, const tsd_alert_rec *r) {
    (void)user, (void)r;
    return TSD_SINK_TAKEN;
}

void tsd_am_resume(tsd_am *am, const char *stream_id) {
    (void)am, (void)stream_id;
}

void tsd_am_reconcile(tsd_am *am, char (*ids)[TSS_MAX_ID + 1], size_t n, int64_t at_ns) {
    (void)am, (void)n, (void)at_ns;
    free(ids);
}

void tsd_am_counts(tsd_am *am, tsd_am_counters *out) {
    (void)am;
    memset(out, 0, sizeof *out);
}

void tsd_am_stop(tsd_am **am_p) {
    *am_p = NULL;
}

#endif
