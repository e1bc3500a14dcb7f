/* SPDX-License-Identifier: Apache-2.0 */
/* mqtt_payload.c - JSON and InfluxDB line protocol payloads -> sample batches
 * (mqtt_payload.h). The JSON tree comes from lib/json.c, the tool's reader. */
#include "daemon/source/mqtt_payload.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h" /* TSS_MAX_ID */
#include "lib/json.h"

int tsd_payload_format_parse(const char *name) {
    static const char *const names[] = {"auto", "protobuf", "json", "influx"};
    for (int k = 0; k < 4; k++)
        if (strcmp(name, names[k]) == 0)
            return k;
    return -1;
}

tsd_payload_format tsd_payload_detect(const void *buf, size_t len) {
    const unsigned char *p = buf, *end = p + len;
    for (const unsigned char *q = p; q < end; q++)
        if ((*q < 0x20 && *q != '\t' && *q != '\n' && *q != '\r') || *q == 0x7f)
            return TSD_PAYLOAD_PROTOBUF;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    if (p < end && strchr("-0123456789[{", *p))
        return TSD_PAYLOAD_JSON;
    return TSD_PAYLOAD_INFLUX;
}

static void fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- JSON ---- */

/* Unix seconds that fit in int64 nanoseconds (about year 2262). */
#define TS_MAX_S 9.2e9

/* One sample of a JSON payload: a number, or {"value": V, "ts": S, "seq": N}. Sets
 * *has_ts / *has_seq for the members present. 0, or -1 with err. */
static int json_sample(const json_value *v, double *value, int64_t *ts, int *has_ts, uint64_t *seq,
                       int *has_seq, char *err, size_t errlen) {
    *has_ts = *has_seq = 0;
    if (v->type == JSON_NUMBER) {
        *value = v->number;
        return 0;
    }
    if (v->type != JSON_OBJECT) {
        fail(err, errlen, "%s is not a number or an object", json_type_name(v->type));
        return -1;
    }
    for (size_t k = 0; k < v->n; k++)
        if (strcmp(v->keys[k], "value") && strcmp(v->keys[k], "ts") && strcmp(v->keys[k], "seq")) {
            fail(err, errlen, "unknown member \"%.40s\" (expected value, ts, seq)", v->keys[k]);
            return -1;
        }
    const json_value *x = json_member(v, "value"), *t = json_member(v, "ts"),
                     *s = json_member(v, "seq");
    if (!x || x->type != JSON_NUMBER) {
        fail(err, errlen, "\"value\" %s", x ? "is not a number" : "is missing");
        return -1;
    }
    *value = x->number;
    if (t) {
        if (t->type != JSON_NUMBER || !(fabs(t->number) < TS_MAX_S)) {
            fail(err, errlen, "\"ts\" is not Unix seconds");
            return -1;
        }
        const double whole = floor(t->number); /* exact; then the fraction's ns */
        *ts = (int64_t)whole * 1000000000 + llround((t->number - whole) * 1e9);
        *has_ts = 1;
    }
    if (s) {
        if (s->type != JSON_NUMBER || !(s->number >= 0) || s->number >= 0x1p64 ||
            s->number != floor(s->number)) {
            fail(err, errlen, "\"seq\" is not an integer >= 0");
            return -1;
        }
        *seq = (uint64_t)s->number;
        *has_seq = 1;
    }
    return 0;
}

/* The samples of a parsed JSON payload: one value, or the elements of an array. */
static int json_batch(const json_value *root, tsd_payload_fn fn, void *user, char *err,
                      size_t errlen) {
    const int array = root->type == JSON_ARRAY;
    const size_t n = array ? root->n : 1;
    if (n == 0) {
        fail(err, errlen, "an empty array");
        return -1;
    }
    double *values = malloc(n * sizeof *values);
    int64_t *ts = malloc(n * sizeof *ts);
    int rc = values && ts ? 0 : -1;
    if (rc)
        fail(err, errlen, "out of memory");
    tsd_payload_batch b = {.values = values, .n = n};
    int any_ts = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char why[160];
        int has_ts, has_seq;
        uint64_t seq;
        if (json_sample(array ? &root->items[i] : root, &values[i], &ts[i], &has_ts, &seq, &has_seq,
                        why, sizeof why) != 0) {
            rc = -1;
        } else if (i > 0 && has_ts != any_ts) {
            snprintf(why, sizeof why, "\"ts\" on some elements only");
            rc = -1;
        } else if (has_seq && i == 0) {
            b.has_seq = 1, b.first_seq = seq;
        } else if (has_seq && (!b.has_seq || seq != b.first_seq + i)) {
            snprintf(why, sizeof why, "\"seq\" does not follow the first element's");
            rc = -1;
        }
        any_ts = i == 0 ? has_ts : any_ts;
        if (rc && array)
            fail(err, errlen, "element %zu: %s", i, why);
        else if (rc)
            fail(err, errlen, "%s", why);
    }
    if (rc == 0) {
        b.ts_ns = any_ts ? ts : NULL;
        fn(user, &b);
    }
    free(values);
    free(ts);
    return rc;
}

int tsd_payload_json(const char *buf, size_t len, tsd_payload_fn fn, void *user, char *err,
                     size_t errlen) {
    json_value root;
    char why[256];
    if (json_parse(buf, len, "payload", 1, &root, why, sizeof why) != JSON_OK) {
        fail(err, errlen, "%s", why);
        return -1;
    }
    int rc = json_batch(&root, fn, user, err, errlen);
    json_free(&root);
    return rc;
}

/* ---- InfluxDB line protocol ---- */

/* The end of the token that starts at p: the first unescaped byte of `stops` outside
 * double quotes (quotes count only when `quoted`: field values), or end. */
static const char *token_end(const char *p, const char *end, const char *stops, int quoted) {
    int in_quotes = 0;
    for (; p < end; p++) {
        if (*p == '\\' && p + 1 < end) {
            p++;
            continue;
        }
        if (quoted && *p == '"')
            in_quotes = !in_quotes;
        else if (!in_quotes && strchr(stops, *p))
            return p;
    }
    return end;
}

/* A numeric field value ("1.5", "-3", "12i", "12u") into *v: 1; a string or boolean
 * (skipped): 0; anything else: -1. */
static int field_number(const char *p, const char *end, double *v) {
    size_t n = (size_t)(end - p);
    if (n == 0)
        return -1;
    if (*p == '"')
        return n >= 2 && end[-1] == '"' ? 0 : -1;
    static const char *const bools[] = {"t", "T", "true",  "True",  "TRUE",
                                        "f", "F", "false", "False", "FALSE"};
    for (size_t k = 0; k < sizeof bools / sizeof bools[0]; k++)
        if (strlen(bools[k]) == n && memcmp(p, bools[k], n) == 0)
            return 0;
    if (end[-1] == 'i' || end[-1] == 'u')
        n--;
    char num[64];
    if (n >= sizeof num)
        return -1;
    memcpy(num, p, n);
    num[n] = '\0';
    char *stop;
    *v = strtod(num, &stop);
    return stop == num + n && isfinite(*v) ? 1 : -1;
}

/* One line: "series fields [timestamp]". Hands each numeric field to fn. */
static int influx_line(const char *p, const char *end, tsd_payload_fn fn, void *user, char *why,
                       size_t whylen) {
    const char *series_end = token_end(p, end, " ", 0);
    if (series_end == p || series_end == end) {
        fail(why, whylen, "no fields");
        return -1;
    }
    const char *fields = series_end + 1, *fields_end = token_end(fields, end, " ", 1);
    int64_t ts = 0;
    int has_ts = 0;
    if (fields_end < end) {
        const char *t = fields_end + 1;
        char num[24], *stop;
        size_t n = (size_t)(end - t);
        if (n == 0 || n >= sizeof num) {
            fail(why, whylen, "bad timestamp");
            return -1;
        }
        memcpy(num, t, n);
        num[n] = '\0';
        errno = 0;
        ts = strtoll(num, &stop, 10);
        if (stop != num + n || errno) {
            fail(why, whylen, "bad timestamp");
            return -1;
        }
        has_ts = 1;
    }
    for (const char *f = fields; f < fields_end;) {
        const char *f_end = token_end(f, fields_end, ",", 1), *eq = token_end(f, f_end, "=", 0);
        double v;
        int kind = eq < f_end && eq > f ? field_number(eq + 1, f_end, &v) : -1;
        if (kind < 0) {
            fail(why, whylen, "bad field \"%.*s\"", (int)(f_end - f < 60 ? f_end - f : 60), f);
            return -1;
        }
        if (kind == 1) {
            char id[TSS_MAX_ID + 2];
            int k =
                snprintf(id, sizeof id, "%.*s/%.*s", (int)(series_end - p), p, (int)(eq - f), f);
            if (k < 0 || (size_t)k > TSS_MAX_ID) {
                fail(why, whylen, "stream id longer than %d bytes", TSS_MAX_ID);
                return -1;
            }
            tsd_payload_batch b = {
                .stream_id = id, .values = &v, .n = 1, .ts_ns = has_ts ? &ts : NULL};
            fn(user, &b);
        }
        f = f_end + 1;
    }
    return 0;
}

int tsd_payload_influx(const char *buf, size_t len, tsd_payload_fn fn, void *user, char *err,
                       size_t errlen) {
    const char *p = buf, *end = buf + len;
    if (memchr(buf, '\0', len)) {
        fail(err, errlen, "a NUL byte");
        return -1;
    }
    for (size_t line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
        const char *le = e > p && e[-1] == '\r' ? e - 1 : e;
        while (p < le && (*p == ' ' || *p == '\t'))
            p++;
        char why[160];
        if (p < le && *p != '#' && influx_line(p, le, fn, user, why, sizeof why) != 0) {
            fail(err, errlen, "line %zu: %s", line, why);
            return -1;
        }
        p = e + 1;
    }
    return 0;
}
