/* SPDX-License-Identifier: Apache-2.0 */
/* config_test.c - tsmined's configuration (config/): embedded defaults, every key,
 * per-stream overrides, each kind of error with its file:line and key, the shipped
 * tsmined.conf, and the reload diff. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

/* Loads text (named "t.conf" in messages); fails the test on an error. */
static void load_ok(const char *text, tsc_config *cfg) {
    char err[TSC_ERROR_LEN] = "";
    int rc = tsc_load_string(text, "t.conf", cfg, err);
    if (rc != 0)
        fail_msg("unexpected error: %s\nfor: %s", err, text);
}

static void test_defaults(void **state) {
    (void)state;
    tsc_config c;
    tsc_defaults(&c);
    assert_int_equal(c.n_ingest_endpoints, 1);
    assert_string_equal(c.ingest_endpoints[0], "tcp://127.0.0.1:5555");
    assert_int_equal(c.n_ingest_sub_endpoints, 0);
    assert_string_equal(c.alerts_endpoint, "tcp://127.0.0.1:5556");
    assert_string_equal(c.control_endpoint, "tcp://127.0.0.1:5557");
    assert_string_equal(c.metrics_listen, "127.0.0.1:9464");
    assert_string_equal(c.state_dir, "/var/lib/tsmine");
    assert_string_equal(c.backend, "auto");
    assert_int_equal(c.threads, 0);
    assert_int_equal(c.max_streams, 10000);
    assert_int_equal(c.max_message_size, 1 << 18);
    assert_int_equal(c.ingest_hwm, 100000);
    assert_int_equal(c.alerts_hwm, 100000);
    assert_int_equal(c.tick_ms, 10);
    assert_int_equal(c.checkpoint_interval_s, 60);
    assert_int_equal(c.log_rate_per_s, 5);
    assert_int_equal(c.peer_buffer, 32 << 20);
    assert_int_equal(c.memory_budget, 0);   /* auto */
    assert_int_equal(c.max_connections, 0); /* auto */
    assert_int_equal(c.stream_default.window, 4096);
    assert_int_equal(c.stream_default.subsequence, 0); /* auto */
    assert_int_equal(c.stream_default.hop, 1024);
    assert_int_equal(c.stream_default.excl, 0);
    assert_int_equal(c.stream_default.warmup, 300);
    assert_true(c.stream_default.threshold == 0.997);
    assert_true(c.stream_default.threshold_end == 0.98);
    assert_true(isnan(c.stream_default.range));
    assert_int_equal(c.stream_default.motif, 1);
    assert_int_equal(c.stream_default.references, 10);
    assert_int_equal(c.stream_default.left_discord, 0);
    assert_int_equal(c.n_rules, 0);
    assert_string_equal(c.curve_secret_key_file, "");
    assert_string_equal(c.source, "");

    /* an empty file is the defaults, from that file */
    tsc_config e;
    char diff[256];
    load_ok("# nothing\n", &e);
    assert_int_equal(tsc_diff(&c, &e, diff, sizeof diff), 0);
    assert_string_equal(diff, "");
    assert_string_equal(e.source, "t.conf");
}

/* Every key set to something other than its default. */
static const char every_key[] =
    "ingest = { endpoints = [\"tcp://*:6000\", \"ipc:///run/tsmine/in\"];\n"
    "           subscribe = [\"tcp://10.0.0.1:7000\"]; };\n"
    "alerts = { endpoint = \"tcp://*:6001\"; hwm = 500; };\n"
    "control = { endpoint = \"inproc://control\"; };\n"
    "metrics = { listen = \"[::1]:9100\"; };\n"
    "state_dir = \"/srv/tsmine\";\n"
    "backend = \"cpu\";\n"
    "threads = 3;\n"
    "limits = { max_streams = 77; max_message_size = 4096; ingest_hwm = 9; tick_ms = 20;\n"
    "           checkpoint_interval = 0; log_rate = 2; };\n"
    "security = { curve = { secret_key_file = \"/etc/tsmine/server.key\";\n"
    "                       authorized_keys = \"/etc/tsmine/clients\";\n"
    "                       stream_owners = true; }; };\n"
    "streams = { default = { window = 1000; subsequence = 50; hop = 100; excl = 25;\n"
    "                        warmup = 400; threshold = 0.99; threshold_end = 0.5;\n"
    "                        range = 2; motif = false; references = 4;\n"
    "                        left_discord = true; }; };\n";

static void test_every_key(void **state) {
    (void)state;
    tsc_config c;
    load_ok(every_key, &c);
    assert_int_equal(c.n_ingest_endpoints, 2);
    assert_string_equal(c.ingest_endpoints[0], "tcp://*:6000");
    assert_string_equal(c.ingest_endpoints[1], "ipc:///run/tsmine/in");
    assert_int_equal(c.n_ingest_sub_endpoints, 1);
    assert_string_equal(c.ingest_sub_endpoints[0], "tcp://10.0.0.1:7000");
    assert_string_equal(c.alerts_endpoint, "tcp://*:6001");
    assert_int_equal(c.alerts_hwm, 500);
    assert_string_equal(c.control_endpoint, "inproc://control");
    assert_string_equal(c.metrics_listen, "[::1]:9100");
    assert_string_equal(c.state_dir, "/srv/tsmine");
    assert_string_equal(c.backend, "cpu");
    assert_int_equal(c.threads, 3);
    assert_int_equal(c.max_streams, 77);
    assert_int_equal(c.max_message_size, 4096);
    assert_int_equal(c.ingest_hwm, 9);
    assert_int_equal(c.tick_ms, 20);
    assert_int_equal(c.checkpoint_interval_s, 0);
    assert_int_equal(c.log_rate_per_s, 2);
    assert_string_equal(c.curve_secret_key_file, "/etc/tsmine/server.key");
    assert_string_equal(c.curve_authorized_keys, "/etc/tsmine/clients");
    assert_int_equal(c.curve_stream_owners, 1);
    const tss_params *p = &c.stream_default;
    assert_int_equal(p->window, 1000);
    assert_int_equal(p->subsequence, 50);
    assert_int_equal(p->hop, 100);
    assert_int_equal(p->excl, 25);
    assert_int_equal(p->warmup, 400);
    assert_true(p->threshold == 0.99);
    assert_true(p->threshold_end == 0.5);
    assert_true(p->range == 2.0);
    assert_int_equal(p->motif, 0);
    assert_int_equal(p->references, 4);
    assert_int_equal(p->left_discord, 1);

    /* the diff from the defaults names every key, and that a restart is needed */
    tsc_config d;
    char diff[2048];
    tsc_defaults(&d);
    assert_int_equal(tsc_diff(&d, &c, diff, sizeof diff), 1);
    static const char *const keys[] = {"ingest.endpoints (needs restart)",
                                       "ingest.subscribe (needs restart)",
                                       "alerts.endpoint",
                                       "alerts.hwm",
                                       "control.endpoint",
                                       "metrics.listen",
                                       "state_dir",
                                       "backend",
                                       "threads",
                                       "limits.max_streams",
                                       "limits.max_message_size",
                                       "limits.ingest_hwm",
                                       "limits.tick_ms",
                                       "limits.checkpoint_interval",
                                       "limits.log_rate",
                                       "security.curve.secret_key_file",
                                       "security.curve.authorized_keys",
                                       "security.curve.stream_owners,",
                                       "streams.default.window",
                                       "streams.default.subsequence",
                                       "streams.default.hop",
                                       "streams.default.excl",
                                       "streams.default.warmup",
                                       "streams.default.threshold,",
                                       "streams.default.threshold_end",
                                       "streams.default.range,",
                                       "streams.default.motif",
                                       "streams.default.references",
                                       "streams.default.left_discord"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strstr(diff, keys[i]))
            fail_msg("diff lacks %s: %s", keys[i], diff);
    assert_null(strstr(diff, "limits.tick_ms (needs restart)"));
}

static void test_overrides(void **state) {
    (void)state;
    tsc_config c;
    /* the default comes after the overrides in the file: they still start from it */
    load_ok("streams = {\n"
            "  overrides = (\n"
            "    { match = \"sensor-1*\"; window = 2048; range = 3.5; },\n"
            "    { match = \"sensor-*\"; motif = false; range = \"auto\"; },\n"
            "    { match = \"lab/[ab]?\"; subsequence = 10; excl = 4; left_discord = true; },\n"
            "    { match = \"auto/*\"; subsequence = \"auto\"; warmup = 240; threshold = 0.99; }\n"
            "  );\n"
            "  default = { window = 1024; subsequence = 64; hop = 256; range = 7; };\n"
            "};\n",
            &c);
    assert_int_equal(c.n_rules, 4);
    assert_string_equal(c.rules[0].pattern, "sensor-1*");

    tss_params p = tsc_stream_params_for(&c, "sensor-17"); /* the first rule wins */
    assert_int_equal(p.window, 2048);
    assert_int_equal(p.subsequence, 64);
    assert_int_equal(p.hop, 256);
    assert_int_equal(p.excl, 0); /* 0 stays 0: the engine resolves it to m */
    assert_true(p.range == 3.5);
    assert_int_equal(p.motif, 1);

    p = tsc_stream_params_for(&c, "sensor-27"); /* the second */
    assert_int_equal(p.window, 1024);
    assert_true(isnan(p.range));
    assert_int_equal(p.motif, 0);

    p = tsc_stream_params_for(&c, "lab/a7");
    assert_int_equal(p.subsequence, 10);
    assert_int_equal(p.excl, 4);
    assert_int_equal(p.left_discord, 1);
    assert_true(p.range == 7.0);

    p = tsc_stream_params_for(&c, "auto/x"); /* "auto" over a numeric default */
    assert_int_equal(p.subsequence, 0);
    assert_int_equal(p.warmup, 240);
    assert_true(p.threshold == 0.99);
    assert_true(p.threshold_end == 0.98);
    assert_int_equal(p.window, 1024);

    p = tsc_stream_params_for(&c, "lab/c7"); /* no rule: the default */
    assert_int_equal(p.window, 1024);
    assert_int_equal(p.subsequence, 64);
    assert_int_equal(p.excl, 0);
    assert_int_equal(p.warmup, 300);
    assert_true(p.range == 7.0);
    assert_int_equal(p.left_discord, 0);
}

/* One error case: the text, then a fragment the message must contain. */
typedef struct {
    const char *text;
    const char *want;
} error_case;

static const error_case errors[] = {
    /* syntax, with its line */
    {"backend = \"cpu\";\nthreads = 2;\nlimits = { tick_ms = ; };\n", "t.conf:3: syntax error"},
    {"a = 1;\na = 2;\n", "t.conf:2: duplicate setting name"},
    /* wrong types */
    {"threads = \"four\";", "t.conf:1: threads: must be an integer (got \"four\")"},
    {"threads = 2.5;", "threads: must be an integer (got 2.5)"},
    {"backend = 1;", "backend: must be a string (got 1)"},
    {"ingest = { endpoints = \"tcp://*:1\"; };",
     "ingest.endpoints: must be an array of strings (got \"tcp://*:1\")"},
    {"ingest = { endpoints = [1, 2]; };", "ingest.endpoints[0]: must be a string (got 1)"},
    {"limits = 3;", "limits: must be a group (got 3)"},
    {"limits = { peer_buffer = 4096; };",
     "t.conf:1: limits.peer_buffer: must be in 1048576..1099511627776 (got 4096)"},
    {"limits = { memory_budget = -1; };", "limits.memory_budget: must be in 0..70368744177664"},
    {"limits = { max_connections = \"x\"; };",
     "limits.max_connections: must be an integer (got \"x\")"},
    {"streams = { default = { motif = 1; }; };",
     "streams.default.motif: must be true or false (got 1)"},
    {"streams = { default = 4; };", "streams.default: must be a group (got 4)"},
    {"streams = { overrides = { match = \"x\"; }; };",
     "streams.overrides: must be a list ( {...}, {...} ) (got a group)"},
    /* out of range */
    {"limits = { max_streams = 0; };", "limits.max_streams: must be in 1..10000000 (got 0)"},
    {"limits = { tick_ms = -5; };", "limits.tick_ms: must be in 1..60000 (got -5)"},
    {"limits = {\n max_message_size = 2147483647; };",
     "t.conf:2: limits.max_message_size: must be in 1024..1073741824 (got 2147483647)"},
    {"streams = { default = { range = -1; }; };",
     "streams.default.range: must be a finite number >= 0 (got -1)"},
    {"ingest = { endpoints = []; };", "ingest.endpoints: must have 1 to 8 entries (got 0)"},
    /* unknown keys, at every level */
    {"\n\nbakend = \"cpu\";", "t.conf:3: bakend: unknown key (known here: ingest, alerts,"},
    {"limits = { tickms = 3; };", "limits.tickms: unknown key (known here: max_streams,"},
    {"security = { curve = { key = \"/k\"; }; };",
     "security.curve.key: unknown key (known here: secret_key_file, authorized_keys, "
     "stream_owners)"},
    {"streams = { defaults = {}; };",
     "streams.defaults: unknown key (known here: default, overrides)"},
    {"streams = { default = { match = \"x\"; }; };",
     "streams.default.match: unknown key (known here: window,"},
    {"streams = { overrides = ( { match = \"a\"; windw = 5; } ); };",
     "streams.overrides[0].windw: unknown key (known here: match, window,"},
    /* a key that is gone (range calibration went with issue 16) */
    {"streams = { default = { range_margin = 0.1; }; };",
     "streams.default.range_margin: unknown key (known here: window,"},
    /* subsequence: an integer or "auto" */
    {"streams = { default = { subsequence = \"automatic\"; }; };",
     "streams.default.subsequence: must be an integer or \"auto\" (got \"automatic\")"},
    {"streams = { default = { subsequence = 2; }; };",
     "streams.default.subsequence: must be in 3..8388608 (got 2)"},
    {"streams = { default = { subsequence = true; }; };",
     "streams.default.subsequence: must be an integer or \"auto\" (got true)"},
    /* scores */
    {"streams = { default = { threshold = 1.5; }; };",
     "streams.default.threshold: must be in 0..1 (got 1.5)"},
    {"streams = { default = { threshold_end = \"high\"; }; };",
     "streams.default.threshold_end: must be a number (got \"high\")"},
    /* bad range strings */
    {"streams = { default = { range = \"automatic\"; }; };",
     "streams.default.range: must be a number >= 0 or \"auto\" (got \"automatic\")"},
    {"streams = { overrides = ( {match=\"a\";}, {match=\"b\"; range = \"\";} ); };",
     "streams.overrides[1].range: must be a number >= 0 or \"auto\" (got \"\")"},
    /* values a validator refuses */
    {"backend = \"gpu\";", "backend: must be \"auto\", \"cpu\" or \"cuda\" (got \"gpu\")"},
    {"alerts = { endpoint = \"udp://x:1\"; };", "alerts.endpoint: must be an endpoint"},
    {"alerts = { endpoint = \"tcp://localhost\"; };",
     "alerts.endpoint: a tcp endpoint needs a port"},
    {"metrics = { listen = \"localhost\"; };", "metrics.listen: must be HOST:PORT"},
    {"metrics = { listen = \"h:70000\"; };", "metrics.listen: must be HOST:PORT"},
    {"state_dir = \"var/lib\";", "state_dir: must be an absolute path"},
    {"security = { curve = { authorized_keys = \"keys\"; }; };",
     "security.curve.authorized_keys: must be an absolute path"},
    {"security = { curve = { secret_key_file = \"/k/s.key_secret\"; }; };",
     "t.conf:1: security.curve: secret_key_file is set but not authorized_keys"},
    {"security = {\n curve = { authorized_keys = \"/k/clients\"; }; };",
     "t.conf:2: security.curve: authorized_keys is set but not secret_key_file"},
    {"security = { curve = {\n stream_owners = true; }; };",
     "t.conf:2: security.curve.stream_owners: needs CURVE"},
    {"security = { curve = { stream_owners = 1; }; };",
     "security.curve.stream_owners: must be true or false (got 1)"},
    /* alertmanager: URLs, credentials in pairs */
    {"alertmanager = { urls = [ \"127.0.0.1:9093\" ]; };",
     "alertmanager.urls[0]: must be a URL http://HOST:PORT or https://HOST:PORT"},
    {"alertmanager = { urls = [ \"http://\" ]; };", "alertmanager.urls[0]: must be a URL"},
    {"alertmanager = { urls = [ \"http://a:1?x\" ]; };", "alertmanager.urls[0]: must be a URL"},
    {"alertmanager = { urls = [\"http://a\", \"http://b\", \"http://c\", \"http://d\", "
     "\"http://e\"]; };",
     "alertmanager.urls: must have 0 to 4 entries (got 5)"},
    {"alertmanager = { resend_interval = 0; };", "alertmanager.resend_interval: must be"},
    {"alertmanager = {\n username = \"u\"; };",
     "t.conf:2: alertmanager.username: basic auth needs both username and password_file"},
    {"alertmanager = { password_file = \"/p\";\n bearer_token_file = \"/t\"; };",
     "alertmanager.bearer_token_file: basic auth needs both"},
    {"alertmanager = { bearer_token_file = \"token\"; };",
     "alertmanager.bearer_token_file: must be an absolute path"},
    {"mqtt = { broker = \"localhost\"; };", "mqtt.broker: must be HOST:PORT"},
    {"mqtt = { subscribe = [\"a/b#\"]; };", "mqtt.subscribe[0]: an MQTT topic filter has '#'"},
    {"mqtt = { subscribe = [\"a/+x\"]; };", "mqtt.subscribe[0]: an MQTT topic filter has '+'"},
    {"mqtt = { qos = 3; };", "mqtt.qos: must be"},
    {"mqtt = { format = \"xml\"; };", "mqtt.format: must be \"auto\""},
    {"mqtt = { client_id = \"a b\"; };", "mqtt.client_id: must be 1 to 23"},
    {"mqtt = { alerts_topic = \"t/#\"; };", "mqtt.alerts_topic: must be a topic without"},
    {"mqtt = { tls = { cert_file = \"/c.pem\"; key_file = \"/k.pem\"; }; };",
     "mqtt.tls: a client certificate needs cert_file, key_file and ca_file"},
    {"mqtt = { password_file = \"/p\"; };", "mqtt.password_file: needs mqtt.username"},
    {"state_dir = "
     "\"/"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\";",
     "state_dir: longer than 511 characters"},
    /* overrides */
    {"streams = { overrides = ( { window = 2048; } ); };",
     "streams.overrides[0]: an override needs match = \"PATTERN\""},
    {"streams = { overrides = ( { match = \"\"; } ); };",
     "streams.overrides[0].match: must be a non-empty stream id pattern"},
    /* cross-field: tss_params_check, and sockets that collide */
    {"streams = {\n default = { window = 100; subsequence = 64; }; };",
     "t.conf:2: streams.default: "},
    {"streams = { overrides = ( {match=\"a\";},\n {match=\"b\"; window = 64; hop = 100;} ); };",
     "t.conf:2: streams.overrides[1]: "},
    {"streams = {\n default = { window = 256; warmup = 300; }; };",
     "t.conf:2: streams.default: warmup must be <= window (warmup 300, window 256)"},
    {"streams = { default = { subsequence = \"auto\"; warmup = 20; }; };",
     "streams.default: warmup must be >= 24 with subsequence = auto (got 20)"},
    {"streams = { default = { threshold = 1; }; };",
     "streams.default: threshold must be a score in (0, 1) (got 1)"},
    {"streams = { default = { threshold = 0.9; threshold_end = 0.95; }; };",
     "streams.default: threshold_end must be in (0, threshold] (got 0.95, threshold 0.9)"},
    {"alerts = { endpoint = \"tcp://127.0.0.1:5557\"; };",
     "t.conf:1: alerts.endpoint: binds the same endpoint as control.endpoint (got "
     "\"tcp://127.0.0.1:5557\")"},
    {"ingest = { endpoints = [\"ipc:///a\", \"ipc:///a\"]; };",
     "ingest.endpoints: binds the same endpoint as ingest.endpoints (got \"ipc:///a\")"},
};

static void test_errors(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        tsc_config c, before;
        char err[TSC_ERROR_LEN] = "";
        memset(&c, 0xab, sizeof c);
        before = c;
        if (tsc_load_string(errors[i].text, "t.conf", &c, err) == 0)
            fail_msg("case %zu accepted: %s", i, errors[i].text);
        if (!strstr(err, errors[i].want))
            fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, err, errors[i].want);
        if (memcmp(&c, &before, sizeof c) != 0)
            fail_msg("case %zu: the config was changed by a failed load", i);
    }
}

/* tsc_load reads a real file (name and line in messages), and the shipped example. */
static void test_files(void **state) {
    (void)state;
    tsc_config c, d;
    char err[TSC_ERROR_LEN] = "", diff[512];
    tsc_defaults(&d);
    if (tsc_load(TSC_SHIPPED_CONF, &c, err) != 0)
        fail_msg("shipped tsmined.conf: %s", err);
    assert_int_equal(tsc_diff(&d, &c, diff, sizeof diff), 0);
    assert_string_equal(diff, "");
    assert_string_equal(c.source, TSC_SHIPPED_CONF);

    /* the shipped file's commented-out example, uncommented, is valid too */
    FILE *f = fopen(TSC_SHIPPED_CONF, "r");
    assert_non_null(f);
    char path[] = "/tmp/tsmine_config_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    char line[512];
    while (fgets(line, sizeof line, f)) {
        /* "#key" or "#  key": an example setting; "# text": prose, stays a comment */
        int example = line[0] == '#' && line[1] != ' ' && line[1] != '\n' && line[1] != '-';
        int indented = line[0] == '#' && line[1] == ' ' && line[2] == ' ';
        fputs(example || indented ? line + 1 : line, out);
    }
    fclose(f);
    fclose(out);
    if (tsc_load(path, &c, err) != 0)
        fail_msg("uncommented tsmined.conf: %s", err);
    assert_int_equal(c.n_rules, 3);
    /* its default group shows the defaults: only the overrides differ */
    assert_int_equal(tsc_diff(&d, &c, diff, sizeof diff), 0);
    assert_string_equal(diff, "streams.overrides (0 -> 3)");

    out = fopen(path, "w");
    fputs("threads = 1;\n\nbackend = ;\n", out);
    fclose(out);
    assert_int_equal(tsc_load(path, &c, err), -1);
    char want[128];
    snprintf(want, sizeof want, "%s:3: syntax error", path);
    assert_string_equal(err, want);
    unlink(path);

    assert_int_equal(tsc_load("/nonexistent/tsmined.conf", &c, err), -1);
    assert_string_equal(err, "/nonexistent/tsmined.conf: cannot open: No such file or directory");
}

/* Writes len bytes of text to dir/name; returns the path (a static buffer). */
static const char *put_file(const char *dir, const char *name, const char *text, size_t len) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(text, 1, len, f);
    fclose(f);
    return path;
}

/* What is not a regular file (as the file or an @include) is refused at once, naming
 * it, and never reaches libconfig, whose scanner exit(2)s on a read error (issue 17
 * item 7): a directory, a FIFO (which would block the open), a device; a symlink to a
 * regular file and real includes still work. */
static void test_not_regular(void **state) {
    (void)state;
    char dir[] = "/tmp/tsmine_config_test_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[600], err[TSC_ERROR_LEN];
    tsc_config c;
    const struct {
        const char *name, *text, *want; /* text NULL: made below */
    } cases[] = {
        {"sub", NULL, "/sub: not a regular file (a directory)"},
        {"fifo.conf", NULL, "/fifo.conf: not a regular file (a FIFO)"},
        {"inc-fifo.conf", "threads = 2;\n  @include \"fifo.conf\"\n",
         "inc-fifo.conf:2: @include \"fifo.conf\": "},
        {"inc-dir.conf", "@include \"s\\ub\"\n", "inc-dir.conf:1: @include \"sub\": "},
        {"nul.conf", NULL, "nul.conf: a NUL byte at offset 12"},
    };
    snprintf(path, sizeof path, "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/fifo.conf", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    put_file(dir, "nul.conf", "threads = 1;\0backend = 1;\n", 26);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].text)
            put_file(dir, cases[i].name, cases[i].text, strlen(cases[i].text));
        snprintf(path, sizeof path, "%s/%s", dir, cases[i].name);
        err[0] = '\0';
        if (tsc_load(path, &c, err) != -1 || !strstr(err, cases[i].want))
            fail_msg("case %zu (%s): \"%s\" lacks \"%s\"", i, cases[i].name, err, cases[i].want);
    }
    assert_int_equal(tsc_load("/dev/null", &c, err), -1);
    assert_string_equal(err, "/dev/null: not a regular file (a character device): not a "
                             "configuration file");
    /* an @include of a regular file, through a symlink to the main file */
    static const char part[] = "threads = 4;\n", main_conf[] = "backend = \"cpu\";\n"
                                                               "@include \"part.conf\"\n";
    put_file(dir, "part.conf", part, strlen(part));
    put_file(dir, "main.conf", main_conf, strlen(main_conf));
    char link[600];
    snprintf(link, sizeof link, "%s/link.conf", dir);
    assert_int_equal(symlink("main.conf", link), 0);
    if (tsc_load(link, &c, err) != 0)
        fail_msg("link.conf: %s", err);
    assert_int_equal(c.threads, 4);
    assert_string_equal(c.backend, "cpu");
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Defaults that adapt (issue 28 item 5, tss_params_fit): a key a group leaves out
 * follows those it sets. Each case: the keys set, then the parameters they give, the
 * same in streams.default and in an override. */
typedef struct {
    const char *keys;
    uint32_t window, subsequence, hop, excl, warmup;
    double threshold, threshold_end;
} adapt_case;

/* clang-format off */
static const adapt_case adapts[] = {
    /* keys,                         W, m (0 auto), hop, excl, warmup, thr, thr_end */
    {"window = 64;",                 64, 0, 64, 0, 64, 0.997, 0.98},
    {"window = 64; subsequence = 8;", 64, 8, 64, 0, 64, 0.997, 0.98},
    {"window = 64; excl = 50;",      64, 14, 64, 50, 64, 0.997, 0.98}, /* auto's 16 would not fit */
    {"window = 20;",                 20, 10, 20, 0, 20, 0.997, 0.98},  /* auto needs 32 */
    {"window = 20; warmup = 10;",    20, 10, 20, 0, 10, 0.997, 0.98},
    {"warmup = 10;",                 4096, 16, 1024, 0, 10, 0.997, 0.98}, /* auto needs 24 */
    {"subsequence = 3000;",          6000, 3000, 1024, 0, 300, 0.997, 0.98},
    {"hop = 5000;",                  5000, 0, 5000, 0, 300, 0.997, 0.98},
    {"warmup = 5000;",               5000, 0, 1024, 0, 5000, 0.997, 0.98},
    {"excl = 5000;",                 5714, 0, 1024, 5000, 300, 0.997, 0.98}, /* 5714 - 5714 / 8 = 5000 */
    {"excl = 100; subsequence = 4000;", 8000, 4000, 1024, 100, 300, 0.997, 0.98},
    {"threshold = 0.9;",             4096, 0, 1024, 0, 300, 0.9, 0.9},
    {"threshold_end = 0.999;",       4096, 0, 1024, 0, 300, 0.999, 0.999},
};
/* clang-format on */

/* Conflicts between keys that are both set: refused, naming both. */
static const error_case conflicts[] = {
    {"window = 64; warmup = 300;", "warmup must be <= window (warmup 300, window 64)"},
    {"window = 64; hop = 100;", "hop must be in [1, window] (hop 100, window 64)"},
    {"window = 4096; subsequence = 3000;",
     "window must be >= 2 * subsequence (window 4096, subsequence 3000)"},
    {"window = 20; subsequence = \"auto\";",
     "window must be >= 32 with subsequence = auto (got 20)"},
    {"warmup = 20; subsequence = \"auto\";",
     "warmup must be >= 24 with subsequence = auto (got 20)"},
    {"window = 64; excl = 100;", "excl must be <= window - subsequence, or 0 for subsequence "
                                 "(excl 100, window 64, subsequence 16)"},
    {"threshold = 0.9; threshold_end = 0.95;",
     "threshold_end must be in (0, threshold] (got 0.95, threshold 0.9)"},
};

static void assert_adapted(const adapt_case *a, const tss_params *p, const char *where) {
    if (p->window != a->window || p->subsequence != a->subsequence || p->hop != a->hop ||
        p->excl != a->excl || p->warmup != a->warmup || p->threshold != a->threshold ||
        p->threshold_end != a->threshold_end)
        fail_msg("%s \"%s\": window %u subsequence %u hop %u excl %u warmup %u threshold %g "
                 "threshold_end %g",
                 where, a->keys, p->window, p->subsequence, p->hop, p->excl, p->warmup,
                 p->threshold, p->threshold_end);
}

/* Each case in streams.default and in an override; each conflict refused in both. */
static void test_adapt(void **state) {
    (void)state;
    char text[512], err[TSC_ERROR_LEN], want[256];
    tsc_config c;
    for (size_t i = 0; i < sizeof adapts / sizeof adapts[0]; i++) {
        snprintf(text, sizeof text, "streams = { default = { %s }; };", adapts[i].keys);
        load_ok(text, &c);
        assert_adapted(&adapts[i], &c.stream_default, "streams.default");
        snprintf(text, sizeof text, "streams = { overrides = ( { match = \"s-*\"; %s } ); };",
                 adapts[i].keys);
        load_ok(text, &c);
        tss_params p = tsc_stream_params_for(&c, "s-1");
        assert_adapted(&adapts[i], &p, "streams.overrides[0]");
        p = tsc_stream_params_for(&c, "t-1"); /* the embedded defaults */
        assert_int_equal(p.window, 4096);
        assert_int_equal(p.warmup, 300);
        assert_int_equal(p.hop, 1024);
        assert_int_equal(p.subsequence, 0);
    }
    for (size_t i = 0; i < sizeof conflicts / sizeof conflicts[0]; i++) {
        const char *const forms[] = {"streams = { default = { %s }; };",
                                     "streams = { overrides = ( { match = \"s-*\"; %s } ); };"};
        const char *const paths[] = {"streams.default", "streams.overrides[0]"};
        for (int k = 0; k < 2; k++) {
            snprintf(text, sizeof text, forms[k], conflicts[i].text);
            snprintf(want, sizeof want, "t.conf:1: %s: %s", paths[k], conflicts[i].want);
            if (tsc_load_string(text, "t.conf", &c, err) == 0)
                fail_msg("accepted: %s", text);
            if (strcmp(err, want) != 0)
                fail_msg("for %s\n got \"%s\"\nwant \"%s\"", text, err, want);
        }
    }
}

/* An override starts from the keys streams.default sets, and fits the defaults neither
 * sets afresh; a conflict with a key set in streams.default says so. */
static void test_adapt_inherited(void **state) {
    (void)state;
    tsc_config c;
    load_ok("streams = { default = { window = 64; };\n"
            "            overrides = ( { match = \"big-*\"; window = 8192; },\n"
            "                          { match = \"fast-*\"; hop = 8; } ); };",
            &c);
    assert_int_equal(c.stream_default.warmup, 64);
    tss_params p = tsc_stream_params_for(&c, "big-1"); /* not the default's 64 */
    assert_int_equal(p.window, 8192);
    assert_int_equal(p.warmup, 300);
    assert_int_equal(p.hop, 1024);
    p = tsc_stream_params_for(&c, "fast-1"); /* the default's window, set there */
    assert_int_equal(p.window, 64);
    assert_int_equal(p.warmup, 64);
    assert_int_equal(p.hop, 8);

    const error_case cases[] = {
        {"streams = { default = { warmup = 300; };\n"
         "            overrides = ( { match = \"s-*\"; window = 64; } ); };",
         "t.conf:2: streams.overrides[0]: warmup must be <= window (warmup 300, window 64); "
         "streams.default sets warmup"},
        {"streams = { default = { window = 64; threshold = 0.99; };\n"
         "            overrides = ( { match = \"s-*\"; warmup = 100; } ); };",
         "t.conf:2: streams.overrides[0]: warmup must be <= window (warmup 100, window 64); "
         "streams.default sets window"},
        {"streams = { default = { warmup = 300; hop = 200; };\n" /* the first conflict's */
         "            overrides = ( { match = \"s-*\"; window = 64; } ); };",
         "t.conf:2: streams.overrides[0]: warmup must be <= window (warmup 300, window 64); "
         "streams.default sets warmup"},
        {"streams = { default = { window = 64; };\n" /* the override's own conflict */
         "            overrides = ( { match = \"s-*\"; window = 32; hop = 40; } ); };",
         "t.conf:2: streams.overrides[0]: hop must be in [1, window] (hop 40, window 32)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[TSC_ERROR_LEN] = "";
        if (tsc_load_string(cases[i].text, "t.conf", &c, err) == 0)
            fail_msg("case %zu accepted", i);
        if (strcmp(err, cases[i].want) != 0)
            fail_msg("case %zu:\n got \"%s\"\nwant \"%s\"", i, err, cases[i].want);
    }
}

/* A reload (daemon/core/reload.c: tsc_load, then tsc_diff against the running one) takes a
 * file that now sets only a small window, with the defaults that follow it, and refuses
 * one whose explicit warmup does not fit, leaving the running configuration. */
static void test_adapt_reload(void **state) {
    (void)state;
    char dir[] = "/tmp/tsmine_config_test_XXXXXX";
    assert_non_null(mkdtemp(dir));
    static const char start[] = "# the defaults\n";
    static const char small[] = "streams = { default = {\n  window = 64; }; };\n";
    static const char both[] = "streams = { default = {\n  window = 64; warmup = 300; }; };\n";
    char err[TSC_ERROR_LEN], diff[512], want[600];
    tsc_config running, next;
    const char *path = put_file(dir, "tsmined.conf", start, strlen(start));
    if (tsc_load(path, &running, err) != 0)
        fail_msg("%s", err);
    put_file(dir, "tsmined.conf", small, strlen(small));
    if (tsc_load(path, &next, err) != 0)
        fail_msg("reload of a window of 64: %s", err);
    assert_int_equal(tsc_diff(&running, &next, diff, sizeof diff), 0);
    assert_string_equal(diff, "streams.default.window, streams.default.hop, "
                              "streams.default.warmup");
    assert_int_equal(next.stream_default.warmup, 64);
    running = next;
    put_file(dir, "tsmined.conf", both, strlen(both));
    assert_int_equal(tsc_load(path, &next, err), -1);
    snprintf(want, sizeof want,
             "%s:1: streams.default: warmup must be <= window (warmup 300, window 64)", path);
    assert_string_equal(err, want);
    assert_int_equal(tsc_diff(&running, &next, diff, sizeof diff), 0); /* untouched */
    assert_string_equal(diff, "");
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

static void test_diff(void **state) {
    (void)state;
    tsc_config a, b;
    char diff[512];
    tsc_defaults(&a);
    load_ok("limits = { tick_ms = 5; };\n"
            "streams = { default = { range = 2.5; };\n"
            "            overrides = ( { match = \"x*\"; } ); };",
            &b);
    /* live changes only */
    assert_int_equal(tsc_diff(&a, &b, diff, sizeof diff), 0);
    assert_string_equal(diff, "limits.tick_ms, streams.default.range, streams.overrides (0 -> 1)");

    /* a rule changed in place: its match and fields are named */
    tsc_config c = b;
    snprintf(c.rules[0].pattern, sizeof c.rules[0].pattern, "y*");
    c.rules[0].params.range = NAN;
    assert_int_equal(tsc_diff(&b, &c, diff, sizeof diff), 0);
    assert_string_equal(diff, "streams.overrides[0].match, streams.overrides[0].range");
    assert_int_equal(tsc_diff(&c, &c, diff, sizeof diff), 0); /* NAN equals NAN: auto */
    assert_string_equal(diff, "");

    /* a restart key; and a buffer too small ends in "..." without overflowing */
    snprintf(c.backend, sizeof c.backend, "cuda");
    assert_int_equal(tsc_diff(&b, &c, diff, sizeof diff), 1);
    assert_non_null(strstr(diff, "backend (needs restart)"));
    char small[24];
    memset(small, 'z', sizeof small);
    assert_int_equal(tsc_diff(&a, &c, small, 20), 1);
    assert_true(strlen(small) < 20);
    assert_non_null(strstr(small, "..."));
    assert_int_equal(small[20], 'z');
    assert_int_equal(tsc_diff(&a, &c, NULL, 0), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),        cmocka_unit_test(test_every_key),
        cmocka_unit_test(test_overrides),       cmocka_unit_test(test_errors),
        cmocka_unit_test(test_files),           cmocka_unit_test(test_diff),
        cmocka_unit_test(test_not_regular),     cmocka_unit_test(test_adapt),
        cmocka_unit_test(test_adapt_inherited), cmocka_unit_test(test_adapt_reload),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
