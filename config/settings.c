/* SPDX-License-Identifier: Apache-2.0 */
/* settings.c - the settings table and what only needs the table: the embedded
 * defaults, the reload diff and the per-stream lookup (DESIGN.md 5.4). */
#include "settings.h"

#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- validators of string values ---- */

/* A ZeroMQ endpoint tsmined binds or connects: transport://address. */
static int check_endpoint(const char *v, char *why, size_t whylen) {
    static const char *const schemes[] = {"tcp://", "ipc://", "inproc://"};
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i]);
        if (strncmp(v, schemes[i], n) != 0)
            continue;
        if (v[n] == '\0')
            break;
        if (i == 0 && !strchr(v + n, ':')) {
            snprintf(why, whylen, "a tcp endpoint needs a port, as in tcp://127.0.0.1:5555");
            return -1;
        }
        return 0;
    }
    snprintf(why, whylen, "must be an endpoint tcp://HOST:PORT, ipc://PATH or inproc://NAME");
    return -1;
}

/* "" (off) or HOST:PORT with a numeric port; HOST may be a bracketed IPv6 address. */
static int check_listen(const char *v, char *why, size_t whylen) {
    if (*v == '\0')
        return 0;
    const char *colon = strrchr(v, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || colon == v || end == colon + 1 || *end != '\0' || port < 1 || port > 65535) {
        snprintf(why, whylen, "must be HOST:PORT with a port in 1..65535, or \"\" for off");
        return -1;
    }
    return 0;
}

static int check_backend(const char *v, char *why, size_t whylen) {
    if (strcmp(v, "auto") == 0 || strcmp(v, "cpu") == 0 || strcmp(v, "cuda") == 0)
        return 0;
    snprintf(why, whylen, "must be \"auto\", \"cpu\" or \"cuda\"");
    return -1;
}

static int check_log_level(const char *v, char *why, size_t whylen) {
    static const char *const names[] = {"err", "warning", "notice", "info", "debug"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strcmp(v, names[k]) == 0)
            return 0;
    snprintf(why, whylen, "must be \"err\", \"warning\", \"notice\", \"info\" or \"debug\"");
    return -1;
}

static int check_when_full(const char *v, char *why, size_t whylen) {
    if (strcmp(v, "refuse") == 0 || strcmp(v, "evict_idle") == 0)
        return 0;
    snprintf(why, whylen, "must be \"refuse\" or \"evict_idle\"");
    return -1;
}

/* "" (off) or an absolute path: the daemon's working directory is no anchor. */
static int check_path(const char *v, char *why, size_t whylen) {
    if (*v == '\0' || *v == '/')
        return 0;
    snprintf(why, whylen, "must be an absolute path, or \"\" for off");
    return -1;
}

/* An Alertmanager base URL: http:// or https:// and a host. */
static int check_http_url(const char *v, char *why, size_t whylen) {
    const size_t n = strncmp(v, "http://", 7) == 0 ? 7 : strncmp(v, "https://", 8) == 0 ? 8 : 0;
    if (n && v[n] != '\0' && v[n] != '/' && !strpbrk(v, " \t\r\n\"?#"))
        return 0;
    snprintf(why, whylen,
             "must be a URL http://HOST:PORT or https://HOST:PORT (with an optional "
             "path prefix, no query)");
    return -1;
}

/* "" or a URL, as check_http_url. */
static int check_http_url_or_empty(const char *v, char *why, size_t whylen) {
    return *v == '\0' ? 0 : check_http_url(v, why, whylen);
}

/* An MQTT topic filter: levels split by '/', '+' a whole level, '#' only the whole
 * last one; no NUL, printable ASCII (they become log text). */
static int check_topic_filter(const char *v, char *why, size_t whylen) {
    const char *bad = NULL;
    if (*v == '\0')
        bad = "is empty";
    for (const char *p = v; *p && !bad; p++) {
        const int start = p == v || p[-1] == '/', end = p[1] == '\0' || p[1] == '/';
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            bad = "holds a byte that is not printable ASCII";
        else if (*p == '+' && !(start && end))
            bad = "has '+' that is not a whole level";
        else if (*p == '#' && !(start && p[1] == '\0'))
            bad = "has '#' that is not the whole last level";
    }
    if (!bad)
        return 0;
    snprintf(why, whylen, "an MQTT topic filter %s", bad);
    return -1;
}

/* "" (off) or an MQTT topic prefix for publishing: no wildcards, no trailing '/'. */
static int check_topic_prefix(const char *v, char *why, size_t whylen) {
    size_t n = strlen(v);
    if (strpbrk(v, "+#") || (n && v[n - 1] == '/')) {
        snprintf(why, whylen,
                 "must be a topic without '+', '#' or a trailing '/', or \"\" for off");
        return -1;
    }
    return 0;
}

static int check_mqtt_format(const char *v, char *why, size_t whylen) {
    if (strcmp(v, "auto") == 0 || strcmp(v, "protobuf") == 0 || strcmp(v, "json") == 0 ||
        strcmp(v, "influx") == 0)
        return 0;
    snprintf(why, whylen, "must be \"auto\", \"protobuf\", \"json\" or \"influx\"");
    return -1;
}

/* An MQTT client id: 1..23 bytes of [0-9a-zA-Z_-] are what every broker must accept. */
static int check_client_id(const char *v, char *why, size_t whylen) {
    size_t n = strspn(v, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-");
    if (n >= 1 && n <= 23 && v[n] == '\0')
        return 0;
    snprintf(why, whylen, "must be 1 to 23 letters, digits, '_' or '-'");
    return -1;
}

/* ---- the tables ---- */

#define CFG(field) offsetof(tsc_config, field), sizeof(((tsc_config *)0)->field)
#define CFG_LIST(field, count)                                                                     \
    offsetof(tsc_config, field), sizeof(((tsc_config *)0)->field[0]), offsetof(tsc_config, count)
#define PAR(field) offsetof(tss_params, field), sizeof(((tss_params *)0)->field)

/* clang-format off */
const tsci_setting tsci_settings[] = {
    /* path, type, offset, size, count_offset (CFG gives the first two, CFG_LIST all
     * three), min, max, default number, default string, validator, restart */
    {"ingest.endpoints",           TSCI_STRINGS, CFG_LIST(ingest_endpoints, n_ingest_endpoints),         1, TSC_MAX_ENDPOINTS, 0, "tcp://127.0.0.1:5555", check_endpoint, 1},
    {"ingest.subscribe",           TSCI_STRINGS, CFG_LIST(ingest_sub_endpoints, n_ingest_sub_endpoints), 0, TSC_MAX_ENDPOINTS, 0, "",                     check_endpoint, 1},
    {"alerts.endpoint",            TSCI_STRING,  CFG(alerts_endpoint),       0, 0, 0,             0,       "tcp://127.0.0.1:5556", check_endpoint, 1},
    {"alerts.hwm",                 TSCI_INT,     CFG(alerts_hwm),            0, 1, INT_MAX,       100000,  NULL,                   NULL,           1},
    {"control.endpoint",           TSCI_STRING,  CFG(control_endpoint),      0, 0, 0,             0,       "tcp://127.0.0.1:5557", check_endpoint, 1},
    {"metrics.listen",             TSCI_STRING,  CFG(metrics_listen),        0, 0, 0,             0,       "127.0.0.1:9464",       check_listen,   1},
    {"state_dir",                  TSCI_STRING,  CFG(state_dir),             0, 0, 0,             0,       "/var/lib/tsmine",      check_path,     1},
    {"backend",                    TSCI_STRING,  CFG(backend),               0, 0, 0,             0,       "auto",                 check_backend,  1},
    {"threads",                    TSCI_INT,     CFG(threads),               0, 0, 1024,          0,       NULL,                   NULL,           1},
    {"log_level",                  TSCI_STRING,  CFG(log_level),             0, 0, 0,             0,       "info",                 check_log_level, 0},
    {"limits.max_streams",         TSCI_U32,     CFG(max_streams),           0, 1, 10000000,      10000,   NULL,                   NULL,           1},
    {"limits.max_message_size",    TSCI_U64,     CFG(max_message_size),      0, 1024, 1 << 30,    1 << 18, NULL,                   NULL,           1},
    {"limits.ingest_hwm",          TSCI_INT,     CFG(ingest_hwm),            0, 1, INT_MAX,       100000,  NULL,                   NULL,           1},
    {"limits.tick_ms",             TSCI_U32,     CFG(tick_ms),               0, 1, 60000,         10,      NULL,                   NULL,           0},
    {"limits.checkpoint_interval", TSCI_U32,     CFG(checkpoint_interval_s), 0, 0, 86400,         60,       NULL,                   NULL,           0},
    {"limits.log_rate",            TSCI_U32,     CFG(log_rate_per_s),        0, 1, 1000000,       5,       NULL,                   NULL,           0},
    /* what one sender can do to the stream table (issue 17); 0 turns a bound off */
    {"limits.max_seq_jump",        TSCI_U64,     CFG(max_seq_jump),          0, 0, 9.2e18,        1e9,     NULL,                   NULL,           0},
    {"limits.max_time_ahead",      TSCI_U32,     CFG(max_time_ahead_s),      0, 0, 315360000,     86400,   NULL,                   NULL,           0},
    {"limits.stream_idle_expiry",  TSCI_U32,     CFG(stream_idle_expiry_s),  0, 0, 315360000,     604800,  NULL,                   NULL,           0},
    {"limits.when_full",           TSCI_STRING,  CFG(when_full),             0, 0, 0,             0,       "evict_idle",           check_when_full, 0},
    {"limits.evict_min_idle",      TSCI_U32,     CFG(evict_min_idle_s),      0, 0, 315360000,     60,      NULL,                   NULL,           0},
    /* memory and descriptors of hostile peers (issue 17; daemon/guard/guard.h) */
    {"limits.peer_buffer",         TSCI_U64,     CFG(peer_buffer),           0, 1 << 20, 1ull << 40, 1 << 25, NULL,                  NULL,           1},
    {"limits.memory_budget",       TSCI_U64,     CFG(memory_budget),         0, 0, 1ull << 46,    0,       NULL,                   NULL,           1},
    {"limits.max_connections",     TSCI_U32,     CFG(max_connections),       0, 0, 10000000,      0,       NULL,                   NULL,           1},
    {"security.curve.secret_key_file", TSCI_STRING, CFG(curve_secret_key_file), 0, 0, 0,          0,       "",                     check_path,     1},
    {"security.curve.authorized_keys", TSCI_STRING, CFG(curve_authorized_keys), 0, 0, 0,          0,       "",                     check_path,     1},
    /* issue 17: stream ids bound to client keys (daemon/guard/security.h); live */
    {"security.curve.stream_owners",   TSCI_BOOL,   CFG(curve_stream_owners),   0, 0, 1,          0,       NULL,                   NULL,           0},
    /* Alertmanager (daemon/sink/alertmanager.h): ANOMALY / ANOMALY_END as alerts; no url = off */
    {"alertmanager.urls",          TSCI_STRINGS, CFG_LIST(am_urls, n_am_urls), 0, TSC_MAX_AM_URLS, 0, "",              check_http_url, 1},
    {"alertmanager.resend_interval", TSCI_U32,   CFG(am_resend_interval_s),  0, 1, 86400,         60,      NULL,                   NULL,           1},
    {"alertmanager.timeout",       TSCI_U32,     CFG(am_timeout_s),          0, 1, 300,           10,      NULL,                   NULL,           1},
    {"alertmanager.queue",         TSCI_U32,     CFG(am_queue),              0, 16, 1 << 20,      1024,    NULL,                   NULL,           1},
    {"alertmanager.instance",      TSCI_STRING,  CFG(am_instance),           0, 0, 0,             0,       "",                     NULL,           1},
    {"alertmanager.generator_url", TSCI_STRING,  CFG(am_generator_url),      0, 0, 0,             0,       "",                     check_http_url_or_empty, 1},
    {"alertmanager.username",      TSCI_STRING,  CFG(am_username),           0, 0, 0,             0,       "",                     NULL,           1},
    {"alertmanager.password_file", TSCI_STRING,  CFG(am_password_file),      0, 0, 0,             0,       "",                     check_path,     1},
    {"alertmanager.bearer_token_file", TSCI_STRING, CFG(am_bearer_token_file), 0, 0, 0,          0,       "",                     check_path,     1},
    {"alertmanager.ca_file",       TSCI_STRING,  CFG(am_ca_file),            0, 0, 0,             0,       "",                     check_path,     1},
    /* MQTT ingest and alerts (issue 20; daemon/mqtt/mqtt.h): off while broker is "" */
    {"mqtt.broker",                TSCI_STRING,  CFG(mqtt_broker),           0, 0, 0,             0,       "",                     check_listen,   1},
    {"mqtt.client_id",             TSCI_STRING,  CFG(mqtt_client_id),        0, 0, 0,             0,       "tsmined",              check_client_id, 1},
    {"mqtt.subscribe",             TSCI_STRINGS, CFG_LIST(mqtt_subscribe, n_mqtt_subscribe),             0, TSC_MAX_ENDPOINTS, 0, "",                   check_topic_filter, 1},
    {"mqtt.qos",                   TSCI_INT,     CFG(mqtt_qos),              0, 0, 2,             1,       NULL,                   NULL,           1},
    {"mqtt.clean_session",         TSCI_BOOL,    CFG(mqtt_clean_session),    0, 0, 1,             0,       NULL,                   NULL,           1},
    {"mqtt.format",                TSCI_STRING,  CFG(mqtt_format),           0, 0, 0,             0,       "auto",                 check_mqtt_format, 1},
    {"mqtt.strip_levels",          TSCI_U32,     CFG(mqtt_strip_levels),     0, 0, 64,            0,       NULL,                   NULL,           1},
    {"mqtt.stream_prefix",         TSCI_STRING,  CFG(mqtt_stream_prefix),    0, 0, 0,             0,       "",                     NULL,           1},
    {"mqtt.keepalive",             TSCI_U32,     CFG(mqtt_keepalive_s),      0, 5, 65535,         30,      NULL,                   NULL,           1},
    {"mqtt.reconnect_max",         TSCI_U32,     CFG(mqtt_reconnect_max_s),  0, 1, 3600,          30,      NULL,                   NULL,           1},
    {"mqtt.username",              TSCI_STRING,  CFG(mqtt_username),         0, 0, 0,             0,       "",                     NULL,           1},
    {"mqtt.password_file",         TSCI_STRING,  CFG(mqtt_password_file),    0, 0, 0,             0,       "",                     check_path,     1},
    {"mqtt.tls.ca_file",           TSCI_STRING,  CFG(mqtt_tls_ca_file),      0, 0, 0,             0,       "",                     check_path,     1},
    {"mqtt.tls.cert_file",         TSCI_STRING,  CFG(mqtt_tls_cert_file),    0, 0, 0,             0,       "",                     check_path,     1},
    {"mqtt.tls.key_file",          TSCI_STRING,  CFG(mqtt_tls_key_file),     0, 0, 0,             0,       "",                     check_path,     1},
    {"mqtt.alerts_topic",          TSCI_STRING,  CFG(mqtt_alerts_topic),     0, 0, 0,             0,       "tsmine/alerts",        check_topic_prefix, 1},
    {"mqtt.state_topic",           TSCI_STRING,  CFG(mqtt_state_topic),      0, 0, 0,             0,       "tsmine/state",         check_topic_prefix, 1},
    /* the alert log (daemon/sink/sink_alert_log.c): one JSON line per alert; "" = off */
    {"alert_log.path",             TSCI_STRING,  CFG(alert_log_path),        0, 0, 0,             0,       "",                     check_path,     1},
    /* streams.default and streams.overrides: tsci_stream_settings, reloadable (the
     * engine re-resolves every stream's parameters, tss_engine_reparam) */
    {"streams",                    TSCI_STREAMS, 0, 0,                       0, 0, 0,             0,       NULL,                   NULL,           0},
    {NULL, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 0},
};

/* Bounds that keep values representable and sane; tss_params_check judges how they
 * fit together (2m <= W, hop <= W, ...). Defaults: tss_params_default(). */
const tsci_setting tsci_stream_settings[] = {
    {"window",       TSCI_U32,    PAR(window),       0, 4, TSS_WINDOW_MAX,     0, NULL, NULL, 0},
    {"subsequence",  TSCI_U32_AUTO, PAR(subsequence), 0, 3, TSS_WINDOW_MAX / 2, 0, NULL, NULL, 0},
    {"hop",          TSCI_U32,    PAR(hop),          0, 1, TSS_WINDOW_MAX,     0, NULL, NULL, 0},
    {"excl",         TSCI_U32,    PAR(excl),         0, 0, TSS_WINDOW_MAX,     0, NULL, NULL, 0},
    {"warmup",       TSCI_U32,    PAR(warmup),       0, 1, TSS_WINDOW_MAX,     0, NULL, NULL, 0},
    {"threshold",    TSCI_DOUBLE, PAR(threshold),    0, 0, 1,                  0, NULL, NULL, 0},
    {"threshold_end", TSCI_DOUBLE, PAR(threshold_end), 0, 0, 1,                0, NULL, NULL, 0},
    {"range",        TSCI_RANGE,  PAR(range),        0, 0, HUGE_VAL,           0, NULL, NULL, 0},
    {"motif",        TSCI_BOOL,   PAR(motif),        0, 0, 1,                  0, NULL, NULL, 0},
    {"references",   TSCI_U32,    PAR(references),   0, 0, TSS_REFERENCES_MAX, 0, NULL, NULL, 0},
    {"left_discord", TSCI_BOOL,   PAR(left_discord), 0, 0, 1,                  0, NULL, NULL, 0},
    {NULL, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 0},
};
/* clang-format on */

const tsci_setting *tsci_find(const tsci_setting *table, const char *path) {
    for (const tsci_setting *d = table; d->path; d++)
        if (strcmp(d->path, path) == 0)
            return d;
    return NULL;
}

int tsci_is_group(const tsci_setting *table, const char *path) {
    size_t n = strlen(path);
    for (const tsci_setting *d = table; d->path; d++)
        if (strncmp(d->path, path, n) == 0 && d->path[n] == '.')
            return 1;
    return 0;
}

/* The component of d->path right under prefix (length in *len), or NULL when d is not
 * under prefix. */
static const char *child(const tsci_setting *d, const char *prefix, size_t *len) {
    size_t n = strlen(prefix);
    const char *rest = d->path;
    if (n) {
        if (strncmp(rest, prefix, n) != 0 || rest[n] != '.')
            return NULL;
        rest += n + 1;
    }
    *len = strcspn(rest, ".");
    return rest;
}

void tsci_known_keys(const tsci_setting *table, const char *prefix, char *out, size_t outlen) {
    size_t used = 0;
    out[0] = '\0';
    for (const tsci_setting *d = table; d->path; d++) {
        size_t len, elen;
        const char *name = child(d, prefix, &len);
        int seen = 0;
        for (const tsci_setting *e = table; name && e < d && !seen; e++) {
            const char *other = child(e, prefix, &elen);
            seen = other && elen == len && strncmp(other, name, len) == 0;
        }
        if (!name || seen || used >= outlen)
            continue;
        used +=
            (size_t)snprintf(out + used, outlen - used, "%s%.*s", used ? ", " : "", (int)len, name);
    }
}

/* ---- defaults ---- */

static void *field(void *base, const tsci_setting *d) {
    return (char *)base + d->offset;
}
static const void *cfield(const void *base, const tsci_setting *d) {
    return (const char *)base + d->offset;
}

void tsc_defaults(tsc_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (const tsci_setting *d = tsci_settings; d->path; d++) {
        void *f = field(cfg, d);
        switch (d->type) {
        case TSCI_STRING: snprintf(f, d->size, "%s", d->def_str); break;
        case TSCI_STRINGS:
            snprintf(f, d->size, "%s", d->def_str);
            *(size_t *)((char *)cfg + d->count_offset) = *d->def_str != '\0';
            break;
        case TSCI_INT: *(int *)f = (int)d->def_num; break;
        case TSCI_U32: *(uint32_t *)f = (uint32_t)d->def_num; break;
        case TSCI_U64: *(uint64_t *)f = (uint64_t)d->def_num; break;
        case TSCI_BOOL: *(int *)f = d->def_num != 0; break;
        case TSCI_STREAMS: cfg->stream_default = tss_params_default(); break;
        default: break; /* stream-only types */
        }
    }
}

/* ---- the reload diff ---- */

static size_t strings_count(const void *base, const tsci_setting *d) {
    return *(const size_t *)((const char *)base + d->count_offset);
}

/* 1 when the field of row d holds the same value in a and b (NAN equals NAN: `auto`). */
static int same(const tsci_setting *d, const void *a, const void *b) {
    const void *fa = cfield(a, d), *fb = cfield(b, d);
    switch (d->type) {
    case TSCI_STRING: return strcmp(fa, fb) == 0;
    case TSCI_STRINGS:
        if (strings_count(a, d) != strings_count(b, d))
            return 0;
        for (size_t i = 0; i < strings_count(a, d); i++)
            if (strcmp((const char *)fa + i * d->size, (const char *)fb + i * d->size) != 0)
                return 0;
        return 1;
    case TSCI_DOUBLE:
    case TSCI_RANGE: {
        double x = *(const double *)fa, y = *(const double *)fb;
        return x == y || (isnan(x) && isnan(y));
    }
    default: return memcmp(fa, fb, d->size) == 0; /* integers and booleans */
    }
}

typedef struct {
    char *out;
    size_t len, used;
    int restart, full;
} diff_out;

/* Appends one changed key; a list that does not fit ends with "...". */
static void changed(diff_out *o, int restart, const char *fmt, ...) {
    char key[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(key, sizeof key, fmt, ap);
    va_end(ap);
    o->restart |= restart;
    if (o->len == 0 || o->full)
        return;
    const char *sep = o->used ? ", " : "";
    const char *mark = restart ? " (needs restart)" : "";
    size_t need = strlen(sep) + strlen(key) + strlen(mark);
    if (o->used + need + 4 < o->len) {
        o->used += (size_t)snprintf(o->out + o->used, o->len - o->used, "%s%s%s", sep, key, mark);
    } else {
        o->full = 1;
        if (o->used + 6 < o->len)
            snprintf(o->out + o->used, o->len - o->used, "%s...", sep);
    }
}

static void diff_params(diff_out *o, const char *path, const tss_params *a, const tss_params *b) {
    for (const tsci_setting *d = tsci_stream_settings; d->path; d++)
        if (!same(d, a, b))
            changed(o, 0, "%s.%s", path, d->path);
}

int tsc_diff(const tsc_config *old_cfg, const tsc_config *new_cfg, char *out, size_t outlen) {
    diff_out o = {out, outlen, 0, 0, 0};
    if (outlen)
        out[0] = '\0';
    for (const tsci_setting *d = tsci_settings; d->path; d++) {
        if (d->type != TSCI_STREAMS) {
            if (!same(d, old_cfg, new_cfg))
                changed(&o, d->restart, "%s", d->path);
            continue;
        }
        diff_params(&o, "streams.default", &old_cfg->stream_default, &new_cfg->stream_default);
        if (old_cfg->n_rules != new_cfg->n_rules) {
            changed(&o, d->restart, "streams.overrides (%zu -> %zu)", old_cfg->n_rules,
                    new_cfg->n_rules);
            continue;
        }
        for (size_t i = 0; i < new_cfg->n_rules; i++) {
            const tsc_stream_rule *a = &old_cfg->rules[i], *b = &new_cfg->rules[i];
            char path[64];
            snprintf(path, sizeof path, "streams.overrides[%zu]", i);
            if (strcmp(a->pattern, b->pattern) != 0)
                changed(&o, d->restart, "%s.match", path);
            diff_params(&o, path, &a->params, &b->params);
        }
    }
    return o.restart;
}

void tsc_keep_restart_keys(tsc_config *next, const tsc_config *running) {
    for (const tsci_setting *s = tsci_settings; s->path; s++) {
        if (!s->restart)
            continue;
        size_t bytes = s->type == TSCI_STRINGS ? s->size * (size_t)s->max : s->size;
        memcpy((char *)next + s->offset, (const char *)running + s->offset, bytes);
        if (s->type == TSCI_STRINGS)
            memcpy((char *)next + s->count_offset, (const char *)running + s->count_offset,
                   sizeof(size_t));
    }
}

/* ---- per-stream parameters ---- */

/* O(rules) fnmatch calls: the engine asks once per new stream, and on a reload. */
tss_params tsc_stream_params_for(const tsc_config *cfg, const char *stream_id) {
    tss_params p = cfg->stream_default;
    for (size_t i = 0; i < cfg->n_rules; i++) {
        if (fnmatch(cfg->rules[i].pattern, stream_id, 0) == 0) {
            p = cfg->rules[i].params;
            break;
        }
    }
    return p; /* excl 0 stays 0: the engine resolves it once m is known */
}
