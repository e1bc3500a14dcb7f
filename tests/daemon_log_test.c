/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_log_test.c - the per-reason log rate limiter and the process-wide budget of
 * log lines (daemon/core/log.h). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/core/log.h"

#define SEC 1000000000ull

static void test_rate_and_report(void **state) {
    (void)state;
    tsd_ratelimit rl;
    tsd_ratelimit_init(&rl, 3);
    uint64_t t = 5 * SEC, sup = 99;
    for (int i = 0; i < 3; i++) {
        assert_true(tsd_ratelimit_allow(&rl, t + (uint64_t)i, &sup));
        assert_int_equal(sup, 0);
    }
    for (int i = 0; i < 5; i++) /* over the rate within the same second */
        assert_false(tsd_ratelimit_allow(&rl, t + SEC / 2, &sup));
    /* The next second: allowed again, and told how many were suppressed, once. */
    assert_true(tsd_ratelimit_allow(&rl, t + SEC, &sup));
    assert_int_equal(sup, 5);
    assert_true(tsd_ratelimit_allow(&rl, t + SEC + 1, &sup));
    assert_int_equal(sup, 0);
}

static void test_windows_are_independent(void **state) {
    (void)state;
    tsd_ratelimit rl;
    tsd_ratelimit_init(&rl, 1);
    uint64_t sup;
    size_t allowed = 0;
    /* 100 lines per second for 10 seconds at a rate of 1: exactly one per second. */
    for (uint64_t ms = 0; ms < 10000; ms += 10)
        allowed += (size_t)tsd_ratelimit_allow(&rl, SEC + ms * 1000000ull, &sup);
    assert_int_equal(allowed, 10);
}

static void test_unlimited_and_clock_backwards(void **state) {
    (void)state;
    tsd_ratelimit rl;
    tsd_ratelimit_init(&rl, 0);
    uint64_t sup;
    for (int i = 0; i < 1000; i++)
        assert_true(tsd_ratelimit_allow(&rl, SEC, &sup));
    tsd_ratelimit_init(&rl, 1);
    assert_true(tsd_ratelimit_allow(&rl, 10 * SEC, &sup));
    assert_false(tsd_ratelimit_allow(&rl, 10 * SEC, &sup));
    /* A time before the window (a caller mixing clocks) starts a new window rather
     * than blocking for the length of the jump. */
    assert_true(tsd_ratelimit_allow(&rl, 2 * SEC, &sup));
    assert_int_equal(sup, 1);
}

/* A flood of lines from one source without a limiter of its own: at most TSD_LOG_BUDGET
 * a second reach stderr, the rest are counted, and the next line let through says how
 * many were dropped. */
static void test_process_budget(void **state) {
    (void)state;
    char path[] = "/tmp/tsmine_log_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    const uint64_t before = tsd_log_dropped();
    const uint64_t t0 = tsd_now_ns();
    for (int i = 0; i < 1000; i++)
        tsd_log(TSD_LOG_WARNING, "line %d", i);
    const uint64_t dropped = tsd_log_dropped() - before;
    const int one_window = tsd_now_ns() - t0 < 900000000ull; /* else a new second began */
    usleep(1100000);
    tsd_log(TSD_LOG_WARNING, "after the flood");
    dup2(saved, STDERR_FILENO);
    close(saved);
    FILE *f = fdopen(fd, "r");
    rewind(f);
    char line[256];
    size_t lines = 0, notes = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        notes += strstr(line, "lines dropped (over") != NULL;
    }
    fclose(f);
    unlink(path);
    if (one_window) {
        assert_int_equal(dropped, 1000 - TSD_LOG_BUDGET);
        assert_int_equal(lines, TSD_LOG_BUDGET + 2); /* and the note, and "after" */
    }
    assert_true(dropped >= 1000 - 2 * TSD_LOG_BUDGET);
    assert_true(notes >= 1);
}

/* What stderr receives while fn runs (at most len - 1 bytes). */
static void capture(void (*fn)(void), char *out, size_t len) {
    char path[] = "/tmp/tsmine_log_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, out, len - 1);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
}

static void log_each_level(void) {
    tsd_log(TSD_LOG_ERR, "an error");
    tsd_log(TSD_LOG_NOTICE, "a notice");
    tsd_log(TSD_LOG_INFO, "some info");
    tsd_log(TSD_LOG_DEBUG, "a detail");
    tsd_log_fields(TSD_LOG_DEBUG, "s1", "duplicate", "a detail with fields");
    tsd_log_fields(TSD_LOG_WARNING, "s1", "duplicate", "a warning with fields");
}

/* log_level: lines less severe than the level are not written, by either call; a
 * level name parses to its priority. (Outside the journal, fields are not printed.) */
static void test_level(void **state) {
    (void)state;
    assert_int_equal(tsd_log_level_parse("err"), TSD_LOG_ERR);
    assert_int_equal(tsd_log_level_parse("debug"), TSD_LOG_DEBUG);
    assert_int_equal(tsd_log_level_parse("loud"), -1);
    usleep(1100000); /* a fresh second of the process-wide budget */
    char out[4096];
    tsd_log_set_level(TSD_LOG_NOTICE);
    capture(log_each_level, out, sizeof out);
    assert_non_null(strstr(out, "<3>an error\n"));
    assert_non_null(strstr(out, "<5>a notice\n"));
    assert_non_null(strstr(out, "<4>a warning with fields\n"));
    assert_null(strstr(out, "info"));
    assert_null(strstr(out, "detail"));
    tsd_log_set_level(TSD_LOG_DEBUG);
    capture(log_each_level, out, sizeof out);
    assert_non_null(strstr(out, "<7>a detail\n"));
    assert_non_null(strstr(out, "<7>a detail with fields\n"));
    tsd_log_set_level(TSD_LOG_INFO);
}

static tsd_ratelimit flush_rl;

static void flush_now(void) {
    tsd_ratelimit_flush(&flush_rl, 11 * SEC, TSD_LOG_WARNING, "rejections for decode");
}

/* A burst the limiter held back is reported by the timer once its window is over,
 * once; not before, and not when nothing was held back. */
static void test_flush_summary(void **state) {
    (void)state;
    usleep(1100000);
    tsd_ratelimit_init(&flush_rl, 2);
    uint64_t sup;
    for (int i = 0; i < 7; i++)
        tsd_ratelimit_allow(&flush_rl, 9 * SEC + 100, &sup);
    char out[1024];
    tsd_ratelimit_flush(&flush_rl, 9 * SEC + 500, TSD_LOG_WARNING, "x"); /* window not over */
    assert_int_equal(flush_rl.suppressed, 5);
    capture(flush_now, out, sizeof out);
    assert_string_equal(out, "<4>5 more rejections for decode not logged\n");
    capture(flush_now, out, sizeof out);
    assert_string_equal(out, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_and_report),
        cmocka_unit_test(test_windows_are_independent),
        cmocka_unit_test(test_unlimited_and_clock_backwards),
        cmocka_unit_test(test_process_budget),
        cmocka_unit_test(test_level),
        cmocka_unit_test(test_flush_summary),
    };
    return cmocka_run_group_tests_name("daemon_log", tests, NULL, NULL);
}
