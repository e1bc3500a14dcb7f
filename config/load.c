/* SPDX-License-Identifier: Apache-2.0 */
/* load.c - a libconfig file -> a validated tsc_config (DESIGN.md 5.4).
 *
 * The tree libconfig builds is walked once: every setting must be a row of the
 * settings table (or a group above rows), every value passes its row's type, bounds
 * and validator, and strings are copied out before config_destroy. The result goes to
 * the caller only when all of it is valid. */
#include <libconfig.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "settings.h"

typedef struct {
    const char *name; /* the file, for messages (a setting from an @include has its own) */
    char *err;        /* TSC_ERROR_LEN bytes */
} parse_ctx;

/* Writes "FILE:LINE: PATH: message" into the error buffer; returns -1. */
static int fail(const parse_ctx *p, const config_setting_t *s, const char *path, const char *fmt,
                ...) {
    const char *file = config_setting_source_file(s) ? config_setting_source_file(s) : p->name;
    int n =
        snprintf(p->err, TSC_ERROR_LEN, "%s:%u: %s: ", file, config_setting_source_line(s), path);
    if (n > 0 && n < TSC_ERROR_LEN) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, TSC_ERROR_LEN - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* What a setting holds, for the "(got X)" part of messages. */
static const char *describe(const config_setting_t *s, char *buf, size_t len) {
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64: snprintf(buf, len, "%lld", config_setting_get_int64(s)); break;
    case CONFIG_TYPE_FLOAT: snprintf(buf, len, "%g", config_setting_get_float(s)); break;
    case CONFIG_TYPE_STRING: snprintf(buf, len, "\"%.64s\"", config_setting_get_string(s)); break;
    case CONFIG_TYPE_BOOL:
        snprintf(buf, len, "%s", config_setting_get_bool(s) ? "true" : "false");
        break;
    case CONFIG_TYPE_GROUP: snprintf(buf, len, "a group"); break;
    case CONFIG_TYPE_ARRAY: snprintf(buf, len, "an array"); break;
    default: snprintf(buf, len, "a list"); break;
    }
    return buf;
}

static int wrong_type(const parse_ctx *p, const config_setting_t *s, const char *path,
                      const char *expected) {
    char got[80];
    return fail(p, s, path, "must be %s (got %s)", expected, describe(s, got, sizeof got));
}

static int is_number(const config_setting_t *s) {
    int t = config_setting_type(s);
    return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64 || t == CONFIG_TYPE_FLOAT;
}

/* A string value for row d into dst (d->size bytes): type, length, validator. */
static int get_string(const parse_ctx *p, const tsci_setting *d, const config_setting_t *s,
                      const char *path, char *dst) {
    if (config_setting_type(s) != CONFIG_TYPE_STRING)
        return wrong_type(p, s, path, "a string");
    const char *v = config_setting_get_string(s);
    char why[160];
    if (strlen(v) >= d->size)
        return fail(p, s, path, "longer than %zu characters (got \"%.40s...\")", d->size - 1, v);
    if (d->check && d->check(v, why, sizeof why) != 0)
        return fail(p, s, path, "%s (got \"%s\")", why, v);
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

/* A number for row d into *out: integers must be integers; bounds [min, max]. */
static int get_number(const parse_ctx *p, const tsci_setting *d, const config_setting_t *s,
                      const char *path, double *out) {
    int integral = d->type != TSCI_DOUBLE && d->type != TSCI_RANGE;
    if (!is_number(s) || (integral && config_setting_type(s) == CONFIG_TYPE_FLOAT))
        return wrong_type(p, s, path, integral ? "an integer" : "a number");
    double v = config_setting_type(s) == CONFIG_TYPE_FLOAT ? config_setting_get_float(s)
                                                           : (double)config_setting_get_int64(s);
    char got[80];
    describe(s, got, sizeof got);
    if (isinf(d->max) && !(v >= d->min && isfinite(v)))
        return fail(p, s, path, "must be a finite number >= %g (got %s)", d->min, got);
    if (!(v >= d->min && v <= d->max))
        return fail(p, s, path, "must be in %.15g..%.15g (got %s)", d->min, d->max, got);
    *out = v;
    return 0;
}

static int parse_streams(const parse_ctx *p, const config_setting_t *s, tsc_config *cfg);

/* The value of s for row d into the struct at base. */
static int set_value(const parse_ctx *p, const tsci_setting *d, const config_setting_t *s,
                     const char *path, void *base) {
    void *f = (char *)base + d->offset;
    double v = 0;
    switch (d->type) {
    case TSCI_STRING: return get_string(p, d, s, path, f);
    case TSCI_STRINGS: {
        int t = config_setting_type(s);
        if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
            return wrong_type(p, s, path, "an array of strings");
        size_t n = (size_t)config_setting_length(s);
        if (n < d->min || n > d->max)
            return fail(p, s, path, "must have %g to %g entries (got %zu)", d->min, d->max, n);
        for (size_t i = 0; i < n; i++) {
            char elem_path[96];
            snprintf(elem_path, sizeof elem_path, "%s[%zu]", path, i);
            if (get_string(p, d, config_setting_get_elem(s, (unsigned)i), elem_path,
                           (char *)f + i * d->size) != 0)
                return -1;
        }
        *(size_t *)((char *)base + d->count_offset) = n;
        return 0;
    }
    case TSCI_RANGE:
        if (config_setting_type(s) == CONFIG_TYPE_STRING) {
            if (strcmp(config_setting_get_string(s), "auto") != 0)
                return wrong_type(p, s, path, "a number >= 0 or \"auto\"");
            *(double *)f = NAN;
            return 0;
        }
        if (!is_number(s))
            return wrong_type(p, s, path, "a number >= 0 or \"auto\"");
        /* fall through */
    case TSCI_DOUBLE:
        if (get_number(p, d, s, path, &v) != 0)
            return -1;
        *(double *)f = v;
        return 0;
    case TSCI_U32_AUTO:
        if (config_setting_type(s) == CONFIG_TYPE_STRING) {
            if (strcmp(config_setting_get_string(s), "auto") != 0)
                return wrong_type(p, s, path, "an integer or \"auto\"");
            *(uint32_t *)f = 0;
            return 0;
        }
        if (!is_number(s))
            return wrong_type(p, s, path, "an integer or \"auto\"");
        /* fall through */
    case TSCI_INT:
    case TSCI_U32:
    case TSCI_U64:
        if (get_number(p, d, s, path, &v) != 0)
            return -1;
        if (d->type == TSCI_INT)
            *(int *)f = (int)v;
        else if (d->type == TSCI_U32 || d->type == TSCI_U32_AUTO)
            *(uint32_t *)f = (uint32_t)v;
        else
            *(uint64_t *)f = (uint64_t)v;
        return 0;
    case TSCI_BOOL:
        if (config_setting_type(s) != CONFIG_TYPE_BOOL)
            return wrong_type(p, s, path, "true or false");
        *(int *)f = config_setting_get_bool(s);
        return 0;
    case TSCI_STREAMS:
        if (config_setting_type(s) != CONFIG_TYPE_GROUP)
            return wrong_type(p, s, path, "a group");
        return parse_streams(p, s, base);
    }
    return fail(p, s, path, "internal error: unknown setting type");
}

static int unknown_key(const parse_ctx *p, const config_setting_t *s, const char *path,
                       const tsci_setting *table, const char *prefix, const char *extra) {
    char known[400];
    tsci_known_keys(table, prefix, known, sizeof known);
    return fail(p, s, path, "unknown key (known here: %s%s%s)", extra, *extra ? ", " : "", known);
}

/* The members of group s (path prefix, "" at the top) against table, into base. Nested
 * groups recurse; their depth is that of the table's paths. */
static int walk(const parse_ctx *p, const config_setting_t *group, const char *prefix,
                const tsci_setting *table, void *base) {
    for (int i = 0; i < config_setting_length(group); i++) {
        const config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        char path[128];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", config_setting_name(s));
        const tsci_setting *d = tsci_find(table, path);
        int rc;
        if (d)
            rc = set_value(p, d, s, path, base);
        else if (!tsci_is_group(table, path))
            rc = unknown_key(p, s, path, table, prefix, "");
        else if (config_setting_type(s) != CONFIG_TYPE_GROUP)
            rc = wrong_type(p, s, path, "a group");
        else
            rc = walk(p, s, path, table, base);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The tss_params_fit bit of a stream key: 0 for keys no other key depends on. */
static unsigned set_bit(const tsci_setting *d) {
    switch (d->offset) {
    case offsetof(tss_params, window): return TSS_SET_WINDOW;
    case offsetof(tss_params, subsequence): return TSS_SET_SUBSEQUENCE;
    case offsetof(tss_params, hop): return TSS_SET_HOP;
    case offsetof(tss_params, excl): return TSS_SET_EXCL;
    case offsetof(tss_params, warmup): return TSS_SET_WARMUP;
    case offsetof(tss_params, threshold): return TSS_SET_THRESHOLD;
    case offsetof(tss_params, threshold_end): return TSS_SET_THRESHOLD_END;
    default: return 0;
    }
}

/* One group of stream parameters (streams.default, or an override when pattern is not
 * NULL: then `match` is required and goes to pattern) over the values already in
 * *params; the keys it sets are added to *set. */
static int parse_params(const parse_ctx *p, const config_setting_t *s, const char *path,
                        tss_params *params, unsigned *set, char *pattern, size_t pattern_len) {
    if (config_setting_type(s) != CONFIG_TYPE_GROUP)
        return wrong_type(p, s, path, "a group");
    int have_match = 0;
    for (int i = 0; i < config_setting_length(s); i++) {
        const config_setting_t *m = config_setting_get_elem(s, (unsigned)i);
        const char *name = config_setting_name(m);
        char key[160];
        snprintf(key, sizeof key, "%s.%s", path, name);
        int rc;
        if (pattern && strcmp(name, "match") == 0) {
            tsci_setting match = {.path = "match", .type = TSCI_STRING, .size = pattern_len};
            rc = get_string(p, &match, m, key, pattern);
            if (rc == 0 && *pattern == '\0')
                rc = fail(p, m, key, "must be a non-empty stream id pattern (got \"\")");
            have_match = 1;
        } else {
            const tsci_setting *d = tsci_find(tsci_stream_settings, name);
            rc = d ? set_value(p, d, m, key, params)
                   : unknown_key(p, m, key, tsci_stream_settings, "", pattern ? "match" : "");
            *set |= d ? set_bit(d) : 0;
        }
        if (rc != 0)
            return rc;
    }
    if (pattern && !have_match)
        return fail(p, s, path, "an override needs match = \"PATTERN\"");
    return 0;
}

/* The parameters of group s (at path) into *out: the defaults it leaves out fitted to
 * the keys it sets (tss_params_fit), then the whole checked (tss_params_check), so
 * that only a conflict between set keys is refused. raw holds the set values and the
 * embedded defaults; inherited: the keys an override takes from what streams.default
 * sets, named in the message when the conflict is with one of them (the conflict
 * reported changes without it). */
static int resolve(const parse_ctx *p, const config_setting_t *s, const char *path,
                   const tss_params *raw, unsigned set, unsigned inherited, tss_params *out) {
    tss_params fit = *raw;
    char why[256], other[256], from[160] = "";
    tss_params_fit(&fit, set);
    if (tss_params_check(&fit, why, sizeof why) == 0) {
        *out = fit;
        return 0;
    }
    const tss_params embedded = tss_params_default();
    size_t used = 0;
    for (const tsci_setting *d = tsci_stream_settings; d->path; d++) {
        if (!(set_bit(d) & inherited))
            continue;
        tss_params without = *raw; /* this key at its embedded default, and fitted */
        memcpy((char *)&without + d->offset, (const char *)&embedded + d->offset, d->size);
        tss_params_fit(&without, set & ~set_bit(d));
        if (tss_params_check(&without, other, sizeof other) == 0 || strcmp(other, why) != 0)
            used += (size_t)snprintf(from + used, sizeof from - used, "%s%s", used ? ", " : "",
                                     d->path);
    }
    if (used)
        return fail(p, s, path, "%s; streams.default sets %s", why, from);
    return fail(p, s, path, "%s", why);
}

/* streams = { default = {...}; overrides = ( { match = "..."; ... }, ... ); }. The
 * default applies first, whatever the order in the file: overrides start from the
 * values it sets, and fit the defaults it leaves out afresh. */
static int parse_streams(const parse_ctx *p, const config_setting_t *s, tsc_config *cfg) {
    const config_setting_t *def = config_setting_get_member(s, "default");
    tss_params raw = tss_params_default();
    unsigned def_set = 0;
    if (def && parse_params(p, def, "streams.default", &raw, &def_set, NULL, 0) != 0)
        return -1;
    if (def && resolve(p, def, "streams.default", &raw, def_set, 0, &cfg->stream_default) != 0)
        return -1;
    for (int i = 0; i < config_setting_length(s); i++) {
        const config_setting_t *m = config_setting_get_elem(s, (unsigned)i);
        const char *name = config_setting_name(m);
        char path[64];
        snprintf(path, sizeof path, "streams.%s", name);
        if (strcmp(name, "default") == 0)
            continue;
        if (strcmp(name, "overrides") != 0)
            return fail(p, m, path, "unknown key (known here: default, overrides)");
        if (config_setting_type(m) != CONFIG_TYPE_LIST)
            return wrong_type(p, m, path, "a list ( {...}, {...} )");
        size_t n = (size_t)config_setting_length(m);
        if (n > TSC_MAX_STREAM_RULES)
            return fail(p, m, path, "at most %d overrides (got %zu)", TSC_MAX_STREAM_RULES, n);
        for (size_t k = 0; k < n; k++) {
            tsc_stream_rule *rule = &cfg->rules[k];
            const config_setting_t *o = config_setting_get_elem(m, (unsigned)k);
            char rule_path[64];
            snprintf(rule_path, sizeof rule_path, "streams.overrides[%zu]", k);
            tss_params params = raw;
            unsigned own = 0;
            if (parse_params(p, o, rule_path, &params, &own, rule->pattern, sizeof rule->pattern))
                return -1;
            if (resolve(p, o, rule_path, &params, def_set | own, def_set & ~own, &rule->params))
                return -1;
        }
        cfg->n_rules = n;
    }
    return 0;
}

/* Checks across keys: CURVE needs both of its keys, and stream_owners needs CURVE;
 * Alertmanager's basic auth needs both of its keys and no bearer token; an MQTT client
 * certificate needs its key and a CA, a password a user name; the sockets tsmined
 * binds must not collide. */
static int check_whole(const parse_ctx *p, const config_t *c, const tsc_config *cfg) {
    if (!cfg->curve_secret_key_file[0] != !cfg->curve_authorized_keys[0]) {
        const char *given = cfg->curve_secret_key_file[0] ? "secret_key_file" : "authorized_keys";
        const config_setting_t *s = config_lookup(c, "security.curve");
        return fail(p, s ? s : config_root_setting(c), "security.curve",
                    "%s is set but not %s: CURVE needs the server's secret key file and the "
                    "directory of allowed client keys",
                    given, given[0] == 's' ? "authorized_keys" : "secret_key_file");
    }
    if (cfg->curve_stream_owners && !cfg->curve_secret_key_file[0]) {
        const config_setting_t *s = config_lookup(c, "security.curve.stream_owners");
        return fail(p, s ? s : config_root_setting(c), "security.curve.stream_owners",
                    "needs CURVE (secret_key_file and authorized_keys): without client keys "
                    "there is no owner to check (got true)");
    }
    if (!cfg->am_username[0] != !cfg->am_password_file[0] ||
        (cfg->am_username[0] && cfg->am_bearer_token_file[0])) {
        const char *key = cfg->am_bearer_token_file[0] ? "bearer_token_file"
                          : cfg->am_username[0]        ? "username"
                                                       : "password_file";
        char path[64];
        snprintf(path, sizeof path, "alertmanager.%s", key);
        const config_setting_t *s = config_lookup(c, path);
        return fail(p, s ? s : config_root_setting(c), path,
                    "basic auth needs both username and password_file, and excludes "
                    "bearer_token_file");
    }
    if (!cfg->mqtt_tls_cert_file[0] != !cfg->mqtt_tls_key_file[0] ||
        (cfg->mqtt_tls_cert_file[0] && !cfg->mqtt_tls_ca_file[0])) {
        const config_setting_t *s = config_lookup(c, "mqtt.tls");
        return fail(p, s ? s : config_root_setting(c), "mqtt.tls",
                    "a client certificate needs cert_file, key_file and ca_file (TLS)");
    }
    if (cfg->mqtt_password_file[0] && !cfg->mqtt_username[0]) {
        const config_setting_t *s = config_lookup(c, "mqtt.password_file");
        return fail(p, s ? s : config_root_setting(c), "mqtt.password_file", "needs mqtt.username");
    }
    const char *bound[TSC_MAX_ENDPOINTS + 2];
    const char *names[TSC_MAX_ENDPOINTS + 2];
    size_t n = 0;
    for (size_t i = 0; i < cfg->n_ingest_endpoints; i++, n++) {
        bound[n] = cfg->ingest_endpoints[i];
        names[n] = "ingest.endpoints";
    }
    bound[n] = cfg->alerts_endpoint, names[n++] = "alerts.endpoint";
    bound[n] = cfg->control_endpoint, names[n++] = "control.endpoint";
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            if (strcmp(bound[i], bound[j]) != 0)
                continue;
            /* name and point at the one the file sets (the other may be a default) */
            size_t here = config_lookup(c, names[j]) ? j : i, other = here == j ? i : j;
            const config_setting_t *s = config_lookup(c, names[here]);
            return fail(p, s ? s : config_root_setting(c), names[here],
                        "binds the same endpoint as %s (got \"%s\")", names[other], bound[j]);
        }
    }
    return 0;
}

/* Parses the config c has read into *cfg (left untouched on failure). */
static int load_parsed(const config_t *c, const char *name, tsc_config *cfg, char *err) {
    parse_ctx p = {name, err};
    tsc_config *fresh = malloc(sizeof *fresh);
    if (!fresh) {
        snprintf(err, TSC_ERROR_LEN, "%s: out of memory", name);
        return -1;
    }
    tsc_defaults(fresh);
    int rc = walk(&p, config_root_setting(c), "", tsci_settings, fresh);
    if (rc == 0)
        rc = check_whole(&p, c, fresh);
    if (rc == 0) {
        snprintf(fresh->source, sizeof fresh->source, "%s", name);
        *cfg = *fresh;
    }
    free(fresh);
    return rc;
}

/* After config_read*: parses the config (read_ok) or reports libconfig's syntax
 * error, then frees libconfig's tree. */
static int finish(config_t *c, int read_ok, const char *name, tsc_config *cfg, char *err) {
    int rc = -1;
    if (read_ok) {
        rc = load_parsed(c, name, cfg, err);
    } else {
        const char *file = config_error_file(c) ? config_error_file(c) : name;
        snprintf(err, TSC_ERROR_LEN, "%s:%d: %s", file, config_error_line(c), config_error_text(c));
    }
    config_destroy(c);
    return rc;
}

int tsc_load_string(const char *text, const char *name, tsc_config *cfg, char *err) {
    config_t c;
    config_init(&c);
    return finish(&c, config_read_string(&c, text), name, cfg, err);
}

/* ---- reading the file: regular files only, bounded, never blocking ----
 *
 * libconfig 1.5 reads through stdio and its flex scanner calls exit(2) when a read
 * fails ("input in flex scanner failed"): a directory given as the file (or as an
 * @include) ended the daemon on SIGHUP, and a FIFO blocked it forever in fopen. So
 * the file is opened here without blocking (O_NONBLOCK: a FIFO with no writer opens at
 * once), must be a regular file on the descriptor that is read (fstat after open, so
 * a symlink to a regular file is fine and nothing can be swapped in between), is read
 * whole within TSC_FILE_MAX bytes and handed to libconfig as a string. */
#define TSC_FILE_MAX      (16u << 20) /* bytes; a configuration is a few KiB */
#define TSC_INCLUDES_MAX  100         /* @include files checked per load */
#define TSC_INCLUDE_DEPTH 10          /* libconfig's own nesting limit (MAX_INCLUDE_DEPTH) */

/* What a non-regular file is, for messages. */
static const char *file_kind(mode_t m) {
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
                         : "not a regular file";
}

/* Opens path (following symlinks) without blocking and checks that it is a regular
 * file of at most TSC_FILE_MAX bytes. Returns the descriptor, or -1 with "PATH:
 * reason" in err; *missing is set when the path does not exist. */
static int open_regular(const char *path, char *err, int *missing) {
    *missing = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 && errno == ENXIO && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, TSC_ERROR_LEN, "%s: not a regular file (%s): not a configuration file", path,
                 file_kind(st.st_mode)); /* a socket, or a device without a driver */
        return -1;
    }
    if (fd < 0) {
        *missing = errno == ENOENT;
        snprintf(err, TSC_ERROR_LEN, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        snprintf(err, TSC_ERROR_LEN, "%s: cannot stat: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(err, TSC_ERROR_LEN, "%s: not a regular file (%s): not a configuration file", path,
                 file_kind(st.st_mode));
    } else if ((uintmax_t)st.st_size > TSC_FILE_MAX) {
        snprintf(err, TSC_ERROR_LEN, "%s: larger than %u bytes (%jd): not a configuration file",
                 path, TSC_FILE_MAX, (intmax_t)st.st_size);
    } else {
        return fd;
    }
    close(fd);
    return -1;
}

/* Reads the whole regular file at path into a new NUL-terminated buffer (*text, free
 * it). Refuses what libconfig would misread: more than TSC_FILE_MAX bytes (a file
 * that grows while read), a NUL byte (the rest would be silently ignored). 0 or -1
 * with err. O(size). */
static int read_text(const char *path, char **text, char *err, int *missing) {
    *text = NULL;
    int fd = open_regular(path, err, missing);
    if (fd < 0)
        return -1;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap + 1);
    int rc = buf ? 0 : -1;
    if (!buf)
        snprintf(err, TSC_ERROR_LEN, "%s: out of memory", path);
    while (rc == 0) {
        if (len == cap) {
            char *more = cap > TSC_FILE_MAX ? NULL : realloc(buf, 2 * cap + 1);
            if (!more) {
                snprintf(err, TSC_ERROR_LEN, "%s: larger than %u bytes: not a configuration file",
                         path, TSC_FILE_MAX);
                rc = -1;
                break;
            }
            buf = more, cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, TSC_ERROR_LEN, "%s: cannot read: %s", path, strerror(errno));
            rc = -1;
        } else if (n == 0) {
            break;
        }
        len += n > 0 ? (size_t)n : 0;
    }
    close(fd);
    if (rc == 0 && len > TSC_FILE_MAX) {
        snprintf(err, TSC_ERROR_LEN, "%s: larger than %u bytes: not a configuration file", path,
                 TSC_FILE_MAX);
        rc = -1;
    }
    if (rc == 0 && memchr(buf, '\0', len)) {
        snprintf(err, TSC_ERROR_LEN, "%s: a NUL byte at offset %zu: not a configuration file", path,
                 (size_t)((char *)memchr(buf, '\0', len) - buf));
        rc = -1;
    }
    if (rc != 0) {
        free(buf);
        return -1;
    }
    buf[len] = '\0';
    *text = buf;
    return 0;
}

typedef struct {
    const char *dir; /* libconfig's include_dir: every @include is DIR/NAME */
    size_t files;    /* @include files checked so far (TSC_INCLUDES_MAX) */
} include_walk;

static int check_includes(include_walk *w, const char *name, const char *text, int depth,
                          char *err);

/* One @include target: when it exists it must be a regular file (libconfig's fopen
 * and read would block on a FIFO or exit(2) on a directory), and its own @includes are
 * checked in turn. One that does not exist is left to libconfig ("cannot open include
 * file", with the line). 0 or -1 with err. */
static int check_include(include_walk *w, const char *name, unsigned line, const char *file,
                         int depth, char *err) {
    char path[4096], why[TSC_ERROR_LEN];
    snprintf(path, sizeof path, "%s/%s", w->dir, file);
    char *text;
    int missing;
    if (read_text(path, &text, why, &missing) != 0) {
        if (missing)
            return 0;
        snprintf(err, TSC_ERROR_LEN, "%s:%u: @include \"%.100s\": %.280s", name, line, file, why);
        return -1;
    }
    int rc = check_includes(w, path, text, depth + 1, err);
    free(text);
    return rc;
}

/* Checks the targets of the @include directives of text (the file name, for
 * messages) before libconfig opens them. libconfig 1.5 takes a directive only at the
 * start of a line: blanks, "@include", blanks, then a quoted name in which a backslash
 * keeps the next character. This scan does not know about comments and strings, so a
 * directive inside a block comment is checked too (refused only when it names
 * something that exists and is not a regular file). O(size) per file; at most
 * TSC_INCLUDES_MAX files, TSC_INCLUDE_DEPTH deep (libconfig refuses deeper ones). */
static int check_includes(include_walk *w, const char *name, const char *text, int depth,
                          char *err) {
    unsigned line = 1;
    for (const char *p = text; *p; line++) {
        const char *q = p + strspn(p, " \t");
        const char *eol = strchr(p, '\n');
        p = eol ? eol + 1 : q + strlen(q);
        if (strncmp(q, "@include", 8) != 0 || !strchr(" \t", q[8]) || !q[8])
            continue;
        q += 8 + strspn(q + 8, " \t");
        if (*q != '"')
            continue;
        char file[1024];
        size_t n = 0;
        for (q++; *q && *q != '"'; q++) {
            if (*q == '\\' && q[1])
                q++;
            if (n + 1 < sizeof file)
                file[n++] = *q;
        }
        file[n] = '\0';
        if (!*q || depth >= TSC_INCLUDE_DEPTH)
            continue; /* unterminated or too deep: libconfig says so */
        if (++w->files > TSC_INCLUDES_MAX) {
            snprintf(err, TSC_ERROR_LEN, "%s:%u: more than %d @include files", name, line,
                     TSC_INCLUDES_MAX);
            return -1;
        }
        if (check_include(w, name, line, file, depth, err) != 0)
            return -1;
    }
    return 0;
}

int tsc_load(const char *path, tsc_config *cfg, char *err) {
    char *text;
    int missing;
    if (read_text(path, &text, err, &missing) != 0)
        return -1;
    /* @include "x.conf" is read relative to the file's own directory. */
    char dir[sizeof cfg->source];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    include_walk w = {*dir ? dir : "/", 0};
    if (check_includes(&w, path, text, 0, err) != 0) {
        free(text);
        return -1;
    }
    config_t c;
    config_init(&c);
    config_set_include_dir(&c, w.dir);
    int rc = finish(&c, config_read_string(&c, text), path, cfg, err);
    free(text);
    return rc;
}
