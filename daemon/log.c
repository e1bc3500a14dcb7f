/* log.c - stderr logging with priority prefixes and the per-reason rate limiter. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

void tsd_log(int prio, const char *fmt, ...) {
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
