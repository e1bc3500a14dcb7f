/* SPDX-License-Identifier: Apache-2.0 */
/* log.h - tsmined's logging: one line per message on stderr with an sd-daemon(3)
 * priority prefix ("<3>" error ... "<7>" debug) that journald turns into the entry's
 * priority, and a per-reason rate limiter for messages that hostile or broken peers
 * can trigger at line rate (rejected batches, malformed control requests). */
#ifndef TSD_LOG_H
#define TSD_LOG_H

#include <stdint.h>

/* Priorities of syslog(3) / sd-daemon(3). */
enum {
    TSD_LOG_ERR = 3,
    TSD_LOG_WARNING = 4,
    TSD_LOG_NOTICE = 5,
    TSD_LOG_INFO = 6,
    TSD_LOG_DEBUG = 7
};

/* Writes "<prio>message\n" to stderr with one write(2), so that lines of concurrent
 * writers (the metrics thread) never interleave. Messages longer than 4 KiB are cut.
 * Prefixes are always written: journald strips them, and on a terminal they still
 * read as a severity. Thread-safe.
 *
 * Every line, whatever its source, also passes a process-wide budget of TSD_LOG_BUDGET
 * lines per second: a backstop under the per-reason limiters below, so that a source
 * without one (a library's error callback, a new code path) or many reasons at once
 * cannot flood the journal (libmicrohttpd's accept errors wrote 362 MB in 8.5 s,
 * issue 17). Lines over the budget are dropped and counted; the next line let through
 * says how many. */
#define TSD_LOG_BUDGET 100
void tsd_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same with structured fields for the journal: when stderr is journald's stream
 * ($JOURNAL_STREAM) and libsystemd is built in, the entry goes to the journal with
 * STREAM_ID= and REASON= (NULL: left out) beside MESSAGE= and PRIORITY=, so that
 * `journalctl -u tsmined STREAM_ID=pump-7` finds a stream's lines; else as tsd_log. */
void tsd_log_fields(int prio, const char *stream_id, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Lines of a priority above prio (less severe) are not written: the log_level
 * setting ("err", "warning", "notice", "info" (default), "debug"). Thread-safe. */
void tsd_log_set_level(int prio);
/* The priority of a level name, or -1. */
int tsd_log_level_parse(const char *name);

/* Says how many lines the process-wide budget dropped since it last said so, if any
 * (the next line let through says it too; this is the timer's turn, so that a burst
 * that ends is reported all the same). */
void tsd_log_flush(void);

/* Lines the process-wide budget has dropped since start. */
uint64_t tsd_log_dropped(void);

/* A token bucket of `rate` lines per second (rate 0 = unlimited), refilled each second.
 * Pure: the caller passes the time, so tests are deterministic. */
typedef struct {
    uint32_t rate;         /* lines per second */
    uint64_t window_start; /* ns, start of the current one-second window */
    uint32_t used;         /* lines let through in this window */
    uint64_t suppressed;   /* lines refused since the last report */
} tsd_ratelimit;

void tsd_ratelimit_init(tsd_ratelimit *rl, uint32_t rate);

/* Whether a line may be written at time now_ns (monotonic). When it may and earlier
 * lines were suppressed, *suppressed gets their count (then reset) so the caller can
 * say "N similar messages suppressed"; otherwise *suppressed is 0. O(1). */
int tsd_ratelimit_allow(tsd_ratelimit *rl, uint64_t now_ns, uint64_t *suppressed);

/* The lines rl held back that no later line has reported: once its one-second window
 * is over, logs "N more WHAT not logged" at prio and forgets them. For a timer, so that
 * the summary of a burst comes even when nothing follows it. */
void tsd_ratelimit_flush(tsd_ratelimit *rl, uint64_t now_ns, int prio, const char *what);

/* Monotonic and wall-clock time in nanoseconds. */
uint64_t tsd_now_ns(void);
int64_t tsd_realtime_ns(void);

#endif
