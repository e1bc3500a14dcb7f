/* SPDX-License-Identifier: Apache-2.0 */
/* series_io_test.c - the timestamps of a text series (lib/series_io.h): the
 * forms series_parse_time reads, and the lines series_time_line names. The rest of the
 * reader is tested through the tool (tests/cli_test.sh).
 *
 * Expected values are worked out by hand: 2014-04-01T00:00:00Z is 1396310400 s after
 * the epoch (16161 days * 86400); 2000-02-29T12:00:00Z is 951825600 s. The limits of
 * 64-bit nanoseconds are INT64_MAX = 2262-04-11T23:47:16.854775807Z and INT64_MIN =
 * 1677-09-21T00:12:43.145224192Z. Every comparison is exact. */
#include "testutil.h"

#include "lib/series_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S          1000000000LL
#define APRIL_2014 (1396310400LL * S)

/* One case: the text and the nanoseconds it reads as (ok), or a refusal. */
typedef struct {
    const char *text;
    int ok;
    int64_t ns;
} time_case;

static const time_case cases[] = {
    /* NAB's form and ISO 8601's, UTC without a zone */
    {"2014-04-01 00:00:00", 1, APRIL_2014},
    {"2014-04-01T00:00:00", 1, APRIL_2014},
    {"2014-04-01t00:00:00z", 1, APRIL_2014},
    {"2014-04-01T00:00:00Z", 1, APRIL_2014},
    {"2014-04-01 00:05:00", 1, APRIL_2014 + 300 * S},
    {"2014-04-01 00:00", 1, APRIL_2014},
    {"2014-04-01", 1, APRIL_2014},
    {"2014-04-01T00:00:00.5Z", 1, APRIL_2014 + 500000000},
    {"2014-04-01T00:00:00.000000001", 1, APRIL_2014 + 1},
    {"2014-04-01T00:00:00.1234567899", 1, APRIL_2014 + 123456789}, /* the 10th is dropped */
    /* offsets: the same instant */
    {"2014-04-01T02:00:00+02:00", 1, APRIL_2014},
    {"2014-04-01T02:00:00+0200", 1, APRIL_2014},
    {"2014-04-01T02:00:00+02", 1, APRIL_2014},
    {"2014-03-31T19:00:00-05:00", 1, APRIL_2014},
    {"2014-04-01T05:30:00.25+05:30", 1, APRIL_2014 + 250000000},
    /* the calendar */
    {"1970-01-01 00:00:00", 1, 0},
    {"1969-12-31 23:59:59", 1, -S},
    {"2000-02-29 12:00:00", 1, 951825600LL * S},
    {"2001-02-29 00:00:00", 0, 0},
    {"1900-02-29 00:00:00", 0, 0},
    {"2014-13-01", 0, 0},
    {"2014-00-01", 0, 0},
    {"2014-04-31", 0, 0},
    {"2014-04-00", 0, 0},
    {"2014-04-01 24:00:00", 0, 0},
    {"2014-04-01 00:60:00", 0, 0},
    {"2014-04-01 00:00:60", 0, 0},
    {"2014-04-01T00:00:00+24:00", 0, 0},
    /* the limits of 64-bit nanoseconds */
    {"2262-04-11T23:47:16.854775807Z", 1, INT64_MAX},
    {"2262-04-11T23:47:16.854775808Z", 0, 0},
    {"1677-09-21T00:12:43.145224192Z", 1, INT64_MIN},
    {"1677-09-21T00:12:43.145224191Z", 0, 0},
    /* seconds since the epoch */
    {"1396310400", 1, APRIL_2014},
    {"1396310400.25", 1, APRIL_2014 + 250000000},
    {"+1396310400", 1, APRIL_2014},
    {"0", 1, 0},
    {"-1.5", 1, -S - 500000000},
    {"9223372036.854775807", 1, INT64_MAX},
    {"9223372037", 0, 0},
    /* not timestamps */
    {"", 0, 0},
    {"t", 0, 0},
    {"soon", 0, 0},
    {"1e9", 0, 0},
    {"1.", 0, 0},
    {"1.2.3", 0, 0},
    {"2014-4-1", 0, 0},
    {"2014-04-01x", 0, 0},
    {"2014-04-01 00", 0, 0},
    {"2014-04-01 00:00:00.", 0, 0},
    {"2014-04-01 00:00:00 UTC", 0, 0},
    {"12:00:00", 0, 0},
};

/* Every case of the table: the value it reads as, or -1 with *ns untouched. */
static void test_parse_time(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const time_case *c = &cases[i];
        int64_t ns = 42;
        int rc = series_parse_time(c->text, &ns);
        if (rc != (c->ok ? 0 : -1) || ns != (c->ok ? c->ns : 42)) {
            print_error("'%s': returned %d, ns %lld; want %s %lld\n", c->text, rc, (long long)ns,
                        c->ok ? "0," : "-1, untouched", (long long)(c->ok ? c->ns : 42));
            fail();
        }
    }
}

/* Writes text to a new temporary file; returns its path (static storage). */
static const char *temp_file(const char *text) {
    static char path[] = "/tmp/tsmine-series-io-XXXXXX.csv";
    memcpy(path + strlen(path) - 10, "XXXXXX", 6);
    int fd = mkstemps(path, 4);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* The lines of a timed file's values: after a header and a blank line before the data
 * (ignored), with a blank row inside it (a missing value with no timestamp) and blank
 * lines after it (ignored). */
static void test_time_lines(void **state) {
    (void)state;
    const char *path = temp_file("timestamp,value\n"
                                 "\n"
                                 "2014-04-01 00:00:00,1\n"
                                 "2014-04-01 00:05:00,2\n"
                                 "\n"
                                 "2014-04-01 00:15:00,\n"
                                 "2014-04-01 00:20:00,5\n"
                                 "\n");
    series s;
    char err[256];
    assert_int_equal(series_read(path, SERIES_FMT_AUTO, &s, err, sizeof err), SERIES_OK);
    unlink(path);
    /* the blank line after the header is a missing value once a row was seen */
    const size_t want_line[] = {2, 3, 4, 5, 6, 7};
    const char *want_time[] = {"", "2014-04-01 00:00:00", "2014-04-01 00:05:00",
                               "", "2014-04-01 00:15:00", "2014-04-01 00:20:00"};
    assert_int_equal(s.n, 6);
    for (size_t i = 0; i < s.n; i++) {
        assert_int_equal(series_time_line(&s, (int64_t)i), want_line[i]);
        assert_string_equal(series_time(&s, (int64_t)i), want_time[i]);
    }
    assert_int_equal(series_time_line(&s, -1), 0);
    assert_int_equal(series_time_line(&s, 6), 0);
    series_free(&s);
}

/* Without a timestamp column there are no lines either. */
static void test_no_time_no_lines(void **state) {
    (void)state;
    const char *path = temp_file("1\n2\n3\n");
    series s;
    char err[256];
    assert_int_equal(series_read(path, SERIES_FMT_AUTO, &s, err, sizeof err), SERIES_OK);
    unlink(path);
    assert_int_equal(s.n, 3);
    assert_null(s.time_line);
    assert_int_equal(series_time_line(&s, 0), 0);
    series_free(&s);
}

int main(void) {
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_time),
        cmocka_unit_test(test_time_lines),
        cmocka_unit_test(test_no_time_no_lines),
    };
    /* clang-format on */
    return cmocka_run_group_tests_name("series_io", tests, NULL, NULL);
}
