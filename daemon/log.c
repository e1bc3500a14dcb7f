/* log.c - stderr logging with priority prefixes and the per-reason rate limiter. */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

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

void tsd_log(int prio, const char *fmt, ...) {
    if (!within_budget())
        return;
    char line[4096];
    int k = snprintf(line, sizeof line, "<%d>", prio);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + k, sizeof line - (size_t)k - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)k + (n < 0 ? 0 : (size_t)n);
    if (len > sizeof line - 2)
        len = sizeof line - 2; /* cut: keep room for the newline */
    line[len++] = '\n';
    /* One write: atomic for lines up to PIPE_BUF on pipes, and in practice for the
     * journal's stream socket; a short write is not retried (logging must not block). */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
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
