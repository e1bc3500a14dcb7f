/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_metrics_test.c - the Prometheus text of a snapshot (daemon/ops/metrics.h): the
 * values land in the right series, every series has HELP and TYPE, every sample line
 * has the exposition format's shape, and truncation behaves like snprintf. */
#include "testutil.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/mqtt/mqtt.h"
#include "daemon/ops/metrics.h"
#include "daemon/sink/alertmanager.h"

/* The number of a rejection reason by its name (the sources' are numbered by their
 * registry, source.h). */
static int reason(const char *name) {
    for (int r = 1; r < tsd_reason_count(); r++)
        if (strcmp(tsd_reason_name(r), name) == 0)
            return r;
    fail_msg("no reason \"%s\"", name);
    return 0;
}

static tsd_metrics_snapshot sample_snapshot(void) {
    tsd_metrics_snapshot s;
    memset(&s, 0, sizeof s);
    s.version = "9.8.7";
    s.backend = "cpu";
    s.process = (tsd_process_stats){.start_time_s = 1700000000.5,
                                    .cpu_s = 2.25,
                                    .resident_bytes = 1 << 20,
                                    .open_fds = 9,
                                    .max_fds = 1024};
    s.reloads = 3;
    s.reload_failures = 1;
    s.last_reload_ok = 0;
    s.last_reload_time_s = 1700000100.0;
    s.samples = 123456789012ull;
    s.bytes = 42;
    s.messages = 7;
    s.rejected[TSD_REASON_DECODE] = 3;
    s.rejected[TSS_REJECT_NONFINITE] = 5;
    s.alerts[TSS_ALERT_LEFT_DISCORD] = 11;
    s.alerts[TSS_ALERT_GAP] = 2;
    s.alerts_published[TSS_ALERT_LEFT_DISCORD] = 4;
    s.alerts_dropped[TSS_ALERT_LEFT_DISCORD] = 6;
    s.alerts_queued[TSS_ALERT_LEFT_DISCORD] = 1;
    s.alerts_published[TSS_ALERT_GAP] = 2;
    s.alert_drops = 6;
    s.checkpoints = 5;
    s.checkpoint_failures = 2;
    s.checkpoint_streams_dropped = 8;
    s.pass_seconds[TSD_PASS_DISCORD] = 1.5;
    s.ring_samples = 4096;
    s.ring_bytes = 65536;
    s.streams = 17;
    s.processed = 123456789000ull;
    s.pending = 12;
    s.ticks = 3;
    s.busy_ns = 2500000000ull;
    s.phase_ns[TSD_PHASE_DECODE] = 250000000ull;
    s.phase_ns[TSD_PHASE_OTHER] = 1000;
    const tsd_am_counters am = {.enabled = 1,
                                .sent = 4,
                                .resolved = 2,
                                .failures = 3,
                                .queue_drops = 1,
                                .open = 2,
                                .last_success_s = 1700000200.25};
    s.rejected[reason("json")] = 4;
    const tsd_mqtt_counters mqtt = {.enabled = 1,
                                    .connected = 1,
                                    .connects = 2,
                                    .losses = 1,
                                    .messages = 99,
                                    .alerts_dropped = 3};
    /* the sinks' counters, as the open Alertmanager and MQTT sinks report them (sink.h) */
    s.n_io_counters = tsd_am_counter_rows(&am, s.io_counters);
    s.n_io_counters += tsd_mqtt_counter_rows(&mqtt, s.io_counters + s.n_io_counters);
    return s;
}

/* Checks one sample line: NAME[{k="v",...}] VALUE with a numeric VALUE. */
static void check_line(const char *line) {
    const char *p = line;
    assert_true(isalpha((unsigned char)*p) || *p == '_');
    while (isalnum((unsigned char)*p) || *p == '_')
        p++;
    if (*p == '{') {
        p = strchr(p, '}');
        assert_non_null(p);
        p++;
    }
    assert_int_equal(*p, ' ');
    char *end;
    strtod(p + 1, &end);
    if (end == p + 1 || (*end != '\0' && *end != '\n'))
        fail_msg("not a sample line: \"%s\"", line);
}

static void test_format(void **state) {
    (void)state;
    tsd_metrics_snapshot s = sample_snapshot();
    size_t need = tsd_metrics_format(&s, NULL, 0);
    char *buf = malloc(need + 1);
    assert_non_null(buf);
    assert_int_equal(tsd_metrics_format(&s, buf, need + 1), need);
    assert_int_equal(strlen(buf), need);
    const char *want[] = {
        "\ntsmine_build_info{version=\"9.8.7\",backend=\"cpu\"} 1\n",
        "\nprocess_start_time_seconds 1700000000.500\n",
        "\nprocess_cpu_seconds_total 2.250\n",
        "\nprocess_resident_memory_bytes 1048576\n",
        "\nprocess_open_fds 9\n",
        "\nprocess_max_fds 1024\n",
        "\ntsmine_reloads_total 3\n",
        "\ntsmine_reload_failures_total 1\n",
        "\ntsmine_last_reload_success 0\n",
        "\ntsmine_last_reload_timestamp_seconds 1700000100.000\n",
        "\ntsmine_ingest_samples_total 123456789012\n",
        "\ntsmine_ingest_bytes_total 42\n",
        "\ntsmine_ingest_messages_rejected_total{reason=\"decode\"} 3\n",
        "\ntsmine_ingest_messages_rejected_total{reason=\"nonfinite\"} 5\n",
        "\ntsmine_ingest_messages_rejected_total{reason=\"duplicate\"} 0\n",
        "\ntsmine_alerts_total{kind=\"left_discord\"} 11\n",
        "\ntsmine_alerts_total{kind=\"gap\"} 2\n",
        "\ntsmine_alerts_total{kind=\"discord\"} 0\n",
        "\ntsmine_alerts_published_total{kind=\"left_discord\"} 4\n",
        "\ntsmine_alert_drops_total{kind=\"left_discord\"} 6\n",
        "\ntsmine_alerts_queued{kind=\"left_discord\"} 1\n",
        "\ntsmine_alerts_published_total{kind=\"gap\"} 2\n",
        "\ntsmine_alert_drops_total{kind=\"gap\"} 0\n",
        "\n# TYPE tsmine_alerts_queued gauge\n",
        "\ntsmine_checkpoints_total 5\n",
        "\ntsmine_checkpoint_failures_total 2\n",
        "\ntsmine_checkpoint_streams_dropped_total 8\n",
        "\ntsmine_pass_seconds_total{pass=\"discord\"} 1.5\n",
        "\ntsmine_pass_seconds_total{pass=\"online\"} 0\n",
        "\ntsmine_ring_samples 4096\n",
        "\ntsmine_ring_bytes 65536\n",
        "\ntsmine_streams 17\n",
        "\ntsmine_processed_samples_total 123456789000\n",
        "\ntsmine_pending_samples 12\n",
        "\n# TYPE tsmine_pending_samples gauge\n",
        "\ntsmine_ticks_total 3\n",
        "\ntsmine_alertmanager_alerts_sent_total 4\n",
        "\ntsmine_alertmanager_alerts_resolved_total 2\n",
        "\ntsmine_alertmanager_send_failures_total 3\n",
        "\ntsmine_alertmanager_alerts_rejected_total 0\n",
        "\ntsmine_alertmanager_queue_drops_total 1\n",
        "\ntsmine_alertmanager_open_alerts 2\n",
        "\n# TYPE tsmine_alertmanager_open_alerts gauge\n",
        "\ntsmine_alertmanager_last_success_timestamp_seconds 1700000200.250\n",
        "\ntsmine_busy_seconds_total 2.5\n",
        "\ntsmine_phase_seconds_total{phase=\"decode\"} 0.25\n",
        "\ntsmine_phase_seconds_total{phase=\"other\"} 1e-06\n",
        "\ntsmine_phase_seconds_total{phase=\"receive\"} 0\n",
        "\n# TYPE tsmine_streams gauge\n",
        "\n# TYPE tsmine_ingest_samples_total counter\n",
        "\ntsmine_ingest_messages_rejected_total{reason=\"json\"} 4\n",
        "\ntsmine_ingest_messages_rejected_total{reason=\"influx\"} 0\n",
        "\ntsmine_mqtt_connected 1\n",
        "\n# TYPE tsmine_mqtt_connected gauge\n",
        "\ntsmine_mqtt_connects_total 2\n",
        "\ntsmine_mqtt_connection_losses_total 1\n",
        "\ntsmine_mqtt_messages_total 99\n",
        "\ntsmine_mqtt_alert_drops_total 3\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(buf, want[i]))
            fail_msg("missing %s in:\n%s", want[i], buf);
    /* Every line is a comment or a sample; every series name has a TYPE line. */
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') {
            assert_true(strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0);
            continue;
        }
        check_line(line);
    }
    free(buf);
    /* No alert kind 0 ("unspecified") series. */
    assert_null(tsd_alert_kind_label(0));
    /* Phase names: distinct, none missing. */
    for (int p = 0; p < TSD_PHASES; p++) {
        assert_non_null(tsd_phase_name(p));
        for (int q = 0; q < p; q++)
            assert_string_not_equal(tsd_phase_name(p), tsd_phase_name(q));
    }
    assert_null(tsd_phase_name(TSD_PHASES));
}

static void test_truncation(void **state) {
    (void)state;
    tsd_metrics_snapshot s = sample_snapshot();
    size_t need = tsd_metrics_format(&s, NULL, 0);
    char small[64];
    memset(small, 'x', sizeof small);
    assert_int_equal(tsd_metrics_format(&s, small, sizeof small), need);
    assert_int_equal(strlen(small), sizeof small - 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_truncation),
    };
    return cmocka_run_group_tests_name("daemon_metrics", tests, NULL, NULL);
}
