/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - stderr logging with priority prefixes and the per-reason rate limiter. */
#include "daemon/core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef TSMINE_HAVE_SYSTEMD
#include <systemd/sd-journal.h>
#endif

static atomic_int max_prio = TSD_LOG_INFO; /* log_level */

/* The process-wide budget (log.h), shared by every thread. */
static pthread_mutex_t budget_mu = PTHREAD_MUTEX_INITIALIZER;
static tsd_ratelimit budget = {.rate = TSD_LOG_BUDGET};
static uint64_t dropped_total;

/* Whether a line may be written now; when it may and lines were dropped before, writes
 * the line that says how many. */
static int within_budget(void) {
    uint64_t suppressed;
    pthread_mutex_lock(&budget_mu);
    const int ok = tsd_ratelimit_allow(&budget, tsd_now_ns(), &suppressed);
    dropped_total += !ok;
    pthread_mutex_unlock(&budget_mu);
    if (ok && suppressed) {
        char note[128];
        int n =
            snprintf(note, sizeof note, "<%d>log: %llu lines dropped (over %d lines per second)\n",
                     TSD_LOG_WARNING, (unsigned long long)suppressed, TSD_LOG_BUDGET);
        ssize_t w = write(STDERR_FILENO, note, (size_t)n);
        (void)w;
    }
    return ok;
}

uint64_t tsd_log_dropped(void) {
    pthread_mutex_lock(&budget_mu);
    uint64_t n = dropped_total;
    pthread_mutex_unlock(&budget_mu);
    return n;
}

void tsd_log_flush(void) {
    uint64_t n;
    pthread_mutex_lock(&budget_mu);
    n = budget.suppressed;
    budget.suppressed = 0;
    pthread_mutex_unlock(&budget_mu);
    if (n) {
        char note[128];
        int k =
            snprintf(note, sizeof note, "<%d>log: %llu lines dropped (over %d lines per second)\n",
                     TSD_LOG_WARNING, (unsigned long long)n, TSD_LOG_BUDGET);
        ssize_t w = write(STDERR_FILENO, note, (size_t)k);
        (void)w;
    }
}

void tsd_log_set_level(int prio) {
    atomic_store(&max_prio, prio);
}

int tsd_log_level_parse(const char *name) {
    static const struct {
        const char *name;
        int prio;
    } levels[] = {{"err", TSD_LOG_ERR},
                  {"warning", TSD_LOG_WARNING},
                  {"notice", TSD_LOG_NOTICE},
                  {"info", TSD_LOG_INFO},
                  {"debug", TSD_LOG_DEBUG}};
    for (size_t k = 0; k < sizeof levels / sizeof levels[0]; k++)
        if (strcmp(name, levels[k].name) == 0)
            return levels[k].prio;
    return -1;
}

/* Whether stderr is journald's stream for this service ($JOURNAL_STREAM is its
 * "device:inode"), decided once. */
static int stderr_is_journal(void) {
    static atomic_int known = -1;
    int v = atomic_load(&known);
    if (v >= 0)
        return v;
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    v = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
        (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
    atomic_store(&known, v);
    return v;
}

/* Writes "<prio>" and the formatted text as one line to stderr (tsd_log's body). */
static void write_line(int prio, const char *fmt, va_list ap) {
    char line[4096];
    int k = snprintf(line, sizeof line, "<%d>", prio);
    int n = vsnprintf(line + k, sizeof line - (size_t)k - 1, fmt, ap);
    size_t len = (size_t)k + (n < 0 ? 0 : (size_t)n);
    if (len > sizeof line - 2)
        len = sizeof line - 2; /* cut: keep room for the newline */
    line[len++] = '\n';
    /* One write: atomic for lines up to PIPE_BUF on pipes, and in practice for the
     * journal's stream socket; a short write is not retried (logging must not block). */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void tsd_log(int prio, const char *fmt, ...) {
    if (prio > atomic_load(&max_prio) || !within_budget())
        return;
    va_list ap;
    va_start(ap, fmt);
    write_line(prio, fmt, ap);
    va_end(ap);
}

void tsd_log_fields(int prio, const char *stream_id, const char *reason, const char *fmt, ...) {
    if (prio > atomic_load(&max_prio) || !within_budget())
        return;
    va_list ap;
    va_start(ap, fmt);
#ifdef TSMINE_HAVE_SYSTEMD
    if (stderr_is_journal()) {
        char msg[4096];
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        /* a NULL field is left out (sd_journal_send's list ends at the first NULL) */
        const char *a = stream_id ? "STREAM_ID=%s" : reason ? "REASON=%s" : NULL;
        const char *av = stream_id ? stream_id : reason;
        const char *b = stream_id && reason ? "REASON=%s" : NULL;
        sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", prio, "SYSLOG_IDENTIFIER=tsmined", a, av,
                        b, reason, NULL);
        return;
    }
#else
    (void)stream_id, (void)reason, (void)stderr_is_journal;
#endif
    write_line(prio, fmt, ap);
    va_end(ap);
}

void tsd_ratelimit_init(tsd_ratelimit *rl, uint32_t rate) {
    *rl = (tsd_ratelimit){.rate = rate};
}

int tsd_ratelimit_allow(tsd_ratelimit *rl, uint64_t now_ns, uint64_t *suppressed) {
    *suppressed = 0;
    if (rl->rate == 0)
        return 1;
    if (rl->used == 0 && rl->window_start == 0 && rl->suppressed == 0)
        rl->window_start = now_ns; /* first use */
    if (now_ns - rl->window_start >= 1000000000ull || now_ns < rl->window_start) {
        rl->window_start = now_ns;
        rl->used = 0;
    }
    if (rl->used >= rl->rate) {
        rl->suppressed++;
        return 0;
    }
    rl->used++;
    *suppressed = rl->suppressed;
    rl->suppressed = 0;
    return 1;
}

void tsd_ratelimit_flush(tsd_ratelimit *rl, uint64_t now_ns, int prio, const char *what) {
    if (rl->suppressed == 0 || now_ns - rl->window_start < 1000000000ull)
        return;
    tsd_log(prio, "%llu more %s not logged", (unsigned long long)rl->suppressed, what);
    rl->suppressed = 0;
}

static uint64_t clock_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t tsd_now_ns(void) {
    return clock_ns(CLOCK_MONOTONIC);
}
int64_t tsd_realtime_ns(void) {
    return (int64_t)clock_ns(CLOCK_REALTIME);
}
