/* SPDX-License-Identifier: Apache-2.0 */
/* config.h - tsmined's settings: a libconfig file turned into a typed, validated
 * struct with embedded defaults (DESIGN.md 5.4).
 *
 * Every key is optional. Parsing fills a fresh struct from the defaults, overlays the
 * file, validates everything and only then hands the struct over, so that a reload
 * (SIGHUP) swaps in a complete valid configuration or nothing. Errors name the file,
 * the line and the key. The settings table in config.c holds, for each key, its type,
 * default, validator and whether a change needs a restart. */
#ifndef TSM_CONFIG_H
#define TSM_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "params.h" /* stream/: tss_params */

#define TSC_MAX_ENDPOINTS    8
#define TSC_MAX_STREAM_RULES 64
#define TSC_ERROR_LEN        512
#define TSC_MAX_AM_URLS      4 /* alertmanager.urls */

/* An override: streams whose id matches pattern (fnmatch(3) glob) take params. Keys
 * the override leaves out keep the values of streams.default. */
typedef struct {
    char pattern[128];
    tss_params params;
} tsc_stream_rule;

typedef struct {
    char ingest_endpoints[TSC_MAX_ENDPOINTS][256]; /* PULL, bound */
    size_t n_ingest_endpoints;
    char ingest_sub_endpoints[TSC_MAX_ENDPOINTS][256]; /* optional SUB, connected */
    size_t n_ingest_sub_endpoints;
    char alerts_endpoint[256];  /* PUB, bound */
    char control_endpoint[256]; /* REP, bound */
    char metrics_listen[256];   /* "host:port" for HTTP /metrics; "" = off */
    char state_dir[512];        /* checkpoints; "" = no checkpoints */
    char backend[16];           /* "auto" | "cpu" | "cuda" */
    int threads;                /* CPU backend threads, 0 = OpenMP default */

    /* limits */
    uint32_t max_streams;           /* default 10000 */
    uint64_t max_message_size;      /* bytes: larger messages are rejected as oversized; libzmq
                                     * disconnects a sender beyond twice this (256 KiB) */
    int ingest_hwm;                 /* ZMQ_RCVHWM (default 100000) */
    int alerts_hwm;                 /* ZMQ_SNDHWM (default 100000) */
    uint32_t tick_ms;               /* the longest a sample waits before a tick (default 10) */
    uint32_t checkpoint_interval_s; /* periodic checkpoints (default 60; 0 = only on SIGTERM) */
    uint32_t log_rate_per_s;        /* log lines per second per reason (default 5) */
    char log_level[16];             /* "err" .. "debug" (default "info"), live */
    uint64_t max_seq_jump;          /* a batch may skip at most this many (default 1e9) */
    uint32_t max_time_ahead_s;      /* timestamps at most this far ahead (default 1 day) */
    uint32_t stream_idle_expiry_s;  /* an idle stream is removed (default 7 days) */
    char when_full[16];             /* "evict_idle" (default) or "refuse" */
    uint32_t evict_min_idle_s;      /* evict_idle takes streams idle this long (default 60) */

    /* memory and descriptors of hostile peers (issue 17, daemon/guard/guard.h) */
    uint64_t peer_buffer;     /* bytes one peer may have queued in the daemon: sets the ingest
                               * ZMQ_RCVHWM; a peer holding more unread bytes is cut off */
    uint64_t memory_budget;   /* resident bytes above which peers are shed and new streams
                               * refused (0 = auto: from RAM, the cgroup and ulimit -v) */
    uint32_t max_connections; /* peer connections over all sockets (0 = auto: from the
                               * descriptor limit, keeping a reserve) */

    tss_params stream_default;
    tsc_stream_rule rules[TSC_MAX_STREAM_RULES]; /* first match wins, in file order */
    size_t n_rules;

    /* security (the hardening issue): empty strings = off */
    char curve_secret_key_file[512];
    char curve_authorized_keys[512];
    int curve_stream_owners; /* 1: a client key writes only the streams its key file names */

    /* Alertmanager (daemon/sink/alertmanager.h): no url = off */
    char am_urls[TSC_MAX_AM_URLS][256]; /* http(s)://HOST:PORT[/PREFIX] */
    size_t n_am_urls;
    uint32_t am_resend_interval_s; /* open events re-sent this often (default 60) */
    uint32_t am_timeout_s;         /* one request's limit (default 10) */
    uint32_t am_queue;             /* events waiting for the sender thread (default 1024) */
    char am_instance[128];         /* the `daemon` label; "" = the host name */
    char am_generator_url[256];    /* "" = http://metrics.listen/metrics when metrics are on */
    char am_username[128];         /* basic auth, with am_password_file */
    char am_password_file[512];
    char am_bearer_token_file[512];
    char am_ca_file[512]; /* CA bundle for https URLs ("" = the system's) */
    /* MQTT ingest and alerts (issue 20, daemon/mqtt/mqtt.h): broker "" = off */
    char mqtt_broker[256];                       /* HOST:PORT */
    char mqtt_client_id[128];                    /* the persistent session's name */
    char mqtt_subscribe[TSC_MAX_ENDPOINTS][256]; /* topic filters */
    size_t n_mqtt_subscribe;
    int mqtt_qos;                  /* 0, 1 (default) or 2 */
    int mqtt_clean_session;        /* 0 (default): the broker keeps samples */
    char mqtt_format[16];          /* auto | protobuf | json | influx */
    uint32_t mqtt_strip_levels;    /* topic levels dropped from stream ids */
    char mqtt_stream_prefix[64];   /* put before stream ids from topics */
    uint32_t mqtt_keepalive_s;     /* default 30 */
    uint32_t mqtt_reconnect_max_s; /* backoff 1 s doubling up to this (30) */
    char mqtt_username[128];       /* "" = none */
    char mqtt_password_file[512];  /* its first line is the password */
    char mqtt_tls_ca_file[512];    /* "" = no TLS */
    char mqtt_tls_cert_file[512], mqtt_tls_key_file[512]; /* client certificate */
    char mqtt_alerts_topic[128];                          /* alerts go to PREFIX/<stream>; "" off */
    char mqtt_state_topic[128]; /* retained state PREFIX/<stream>; "" off */
    char alert_log_path[512];   /* one JSON line per alert appended here; "" off */

    char source[512]; /* the file it came from, "" for embedded defaults */
} tsc_config;

/* Fills cfg with the embedded defaults (DESIGN 5.4: loopback endpoints, backend auto,
 * window 4096, subsequence auto, hop 1024, warmup 300, threshold 0.997). */
void tsc_defaults(tsc_config *cfg);

/* Reads path into *cfg (defaults for every key the file leaves out) and validates it.
 * Returns 0, or -1 with a message such as "tsmined.conf:12: streams.default.window:
 * must be >= 2 * subsequence (got 100)" in err (TSC_ERROR_LEN bytes). On failure
 * *cfg is left untouched. Unknown keys are errors (a typo must not pass silently).
 * path (symlinks followed) and every existing @include target must be regular files
 * of at most 16 MiB without NUL bytes: a directory, FIFO, socket or device is refused
 * ("PATH: not a regular file (a FIFO)") without blocking, and never reaches libconfig,
 * whose scanner exit(2)s on a read error. */
int tsc_load(const char *path, tsc_config *cfg, char *err);

/* The same from a string (tests; `name` stands for the file name in messages). */
int tsc_load_string(const char *text, const char *name, tsc_config *cfg, char *err);

/* The detection parameters for a stream id: the first matching rule, else the default.
 * excl 0 stays 0: the engine resolves it to m once m is known. */
tss_params tsc_stream_params_for(const tsc_config *cfg, const char *stream_id);

/* Compares two configurations for a reload: writes into out (size outlen) a
 * human-readable list of the keys that changed, and returns 1 when any of them can
 * only take effect after a restart (endpoints, backend, limits on sockets), else 0. */
int tsc_diff(const tsc_config *old_cfg, const tsc_config *new_cfg, char *out, size_t outlen);

/* Copies every restart-only key of running into next, so that next describes what is
 * really in force after a reload: sockets, backend and limits were set up at start and
 * do not move until a restart. O(keys). */
void tsc_keep_restart_keys(tsc_config *next, const tsc_config *running);

/* `tsmined --check-config`: every setting of cfg, defaults included, as one
 * "dotted.key = value;" line each. */
void tsc_print(FILE *f, const tsc_config *cfg);

#endif
