/* SPDX-License-Identifier: Apache-2.0 */
/* stream_lifetime_test.c - what one sender can do to the stream table, and how streams
 * end (stream/engine.h "Sequence numbers" and "Stream lifetime", issue 17 items 4-5):
 * the sequence and time jumps refused, epochs and resets that start a stream over
 * (the RESET alert, in order with the stream's other alerts), deletion, idle expiry,
 * eviction when the table is full, window memory taken only when samples reach the
 * window, arena regions reused exactly, and the registry's removal. Clocks are the
 * test's own (tss_engine_options.now, wall_ns). Both backends (stream_lifetime_cuda). */
#include "engine_checkpoint.h"
#include "engine_impl.h"
#include "stream_testutil.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WALL0 1700000000000000000LL /* the test's wall clock at its start, ns */

typedef struct {
    st_log log;
    double now;      /* engine clock, s */
    int64_t wall_ns; /* wall clock */
    tss_params p;    /* of every stream */
} env_t;

static void on_alert(void *user, const char *id, const tss_alert *a) {
    env_t *env = user;
    st_log *l = &env->log;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        assert_non_null(l->v);
    }
    snprintf(l->v[l->n].id, sizeof l->v[l->n].id, "%s", id);
    l->v[l->n++].a = *a;
}

static int params_for(void *user, const char *id, tss_params *out) {
    (void)id;
    *out = ((env_t *)user)->p;
    return 0;
}

static double now_of(void *user) {
    return ((env_t *)user)->now;
}

static int64_t wall_of(void *user) {
    return ((env_t *)user)->wall_ns;
}

/* Small windows: W 256, m 16, hop 64, warm-up 64, scores on a range. */
static tss_params small_params(void) {
    tss_params p = tss_params_default();
    p.window = 256, p.subsequence = 16, p.hop = 64, p.warmup = 64, p.range = 2.5;
    return p;
}

static tss_engine *engine(env_t *env, uint32_t max_streams, tss_limits limits) {
    tss_engine_options opt = {
        .backend = st_backend(),
        .threads = 2,
        .max_streams = max_streams,
        .on_alert = on_alert,
        .params_for = params_for,
        .user = env,
        .limits = limits,
        .now = now_of,
        .wall_ns = wall_of,
    };
    tss_engine *e = NULL;
    char err[256] = "";
    if (tss_engine_new(&opt, &e, err, sizeof err) != 0)
        fail_msg("tss_engine_new: %s", err);
    return e;
}

static void env_init(env_t *env) {
    *env = (env_t){.now = 1000.0, .wall_ns = WALL0, .p = small_params()};
}

/* n samples of a random walk, timestamps 1 us apart from WALL0 on, over all calls
 * (never backwards, never ahead of the wall clock by much). */
static tss_reject feed(tss_engine *e, const char *id, uint64_t epoch, uint64_t seq, size_t n) {
    double v[128];
    static double level;
    static int64_t t = WALL0;
    for (size_t done = 0, b; done < n; done += b) { /* batches up to 128 < W */
        b = n - done < 128 ? n - done : 128;
        for (size_t k = 0; k < b; k++)
            v[k] = level += tu_normal();
        tss_reject r = tss_engine_ingest_epoch(e, id, epoch, seq + done, NULL, t, 1000, v, b);
        if (r != TSS_OK)
            return r;
        t += 1000 * (int64_t)b;
    }
    return TSS_OK;
}

static void settle(tss_engine *e) {
    st_settle(e);
}

/* One tick (where samples stay staged on purpose: st_settle would wait for them). */
static void tick(tss_engine *e) {
    char err[512] = "";
    if (tss_engine_tick(e, err, sizeof err) != 0)
        fail_msg("tick: %s", err);
}

static size_t count_kind(const env_t *env, const char *id, int kind) {
    size_t n = 0;
    for (size_t k = 0; k < env->log.n; k++)
        n += env->log.v[k].a.kind == (tss_alert_kind)kind && strcmp(env->log.v[k].id, id) == 0;
    return n;
}

static uint64_t counter_rejected(tss_engine *e, tss_reject why) {
    tss_engine_counters c;
    tss_engine_counters_get(e, &c);
    return c.rejected[why];
}

/* A batch further than max_seq_jump past the next expected number is refused; at the
 * bound it is a gap; with the bound off (0), anything goes (the old behaviour). */
static void test_seq_jump(void **state) {
    (void)state;
    tu_case_seed(1);
    env_t env;
    env_init(&env);
    tss_engine *e = engine(&env, 0, (tss_limits){.max_seq_jump = 1000});
    assert_int_equal(feed(e, "s", 0, 0, 100), TSS_OK);
    assert_int_equal(feed(e, "s", 0, 100 + 1001, 10), TSS_REJECT_SEQ_JUMP);
    assert_int_equal(feed(e, "s", 0, (uint64_t)1 << 62, 10), TSS_REJECT_SEQ_JUMP);
    assert_int_equal(counter_rejected(e, TSS_REJECT_SEQ_JUMP), 2);
    assert_int_equal(feed(e, "s", 0, 100, 10), TSS_OK); /* the real sender goes on */
    assert_int_equal(feed(e, "s", 0, 110 + 1000, 10), TSS_OK);
    settle(e);
    assert_int_equal(count_kind(&env, "s", TSS_ALERT_GAP), 1);
    tss_engine_destroy(&e);
    e = engine(&env, 0, (tss_limits){0});
    assert_int_equal(feed(e, "t", 0, 0, 10), TSS_OK);
    assert_int_equal(feed(e, "t", 0, (uint64_t)1 << 62, 10), TSS_OK);
    tss_engine_destroy(&e);
    free(env.log.v);
}

/* Timestamps more than max_ahead_s ahead of the wall clock are refused, for a new
 * stream too; at the bound they pass. */
static void test_future_time(void **state) {
    (void)state;
    tu_case_seed(2);
    env_t env;
    env_init(&env);
    tss_engine *e = engine(&env, 0, (tss_limits){.max_ahead_s = 60});
    double v[4] = {1, 2, 3, 4};
    const int64_t ahead = 60 * 1000000000LL;
    assert_int_equal(tss_engine_ingest(e, "new", 0, NULL, INT64_MAX - 10, 1, v, 4),
                     TSS_REJECT_FUTURE_TIME);
    assert_int_equal(tss_engine_stream_count(e), 0);
    assert_int_equal(tss_engine_ingest(e, "a", 0, NULL, WALL0 + ahead - 3, 1, v, 4), TSS_OK);
    int64_t ts[4] = {WALL0, WALL0, WALL0, WALL0 + ahead + 1}; /* only the last is too far */
    assert_int_equal(tss_engine_ingest(e, "a", 4, ts, 0, 0, v, 4), TSS_REJECT_TIME_BACKWARDS);
    for (int k = 0; k < 3; k++)
        ts[k] = WALL0 + ahead;
    assert_int_equal(tss_engine_ingest(e, "a", 4, ts, 0, 0, v, 4), TSS_REJECT_FUTURE_TIME);
    env.wall_ns += 1; /* the clock moves on: the same batch is now within the bound */
    assert_int_equal(tss_engine_ingest(e, "a", 4, ts, 0, 0, v, 4), TSS_OK);
    assert_int_equal(counter_rejected(e, TSS_REJECT_FUTURE_TIME), 2);
    tss_engine_destroy(&e);
    free(env.log.v);
}

/* The alerts of stream id in order, as kinds, into out (at most max). */
static size_t kinds_of(const env_t *env, const char *id, int *out, size_t max) {
    size_t n = 0;
    for (size_t k = 0; k < env->log.n && n < max; k++)
        if (strcmp(env->log.v[k].id, id) == 0)
            out[n++] = env->log.v[k].a.kind;
    return n;
}

/* A newer epoch starts the stream over at its first_seq, whatever the numbers: the
 * old run's samples are processed first, an open event closes, then RESET (start_seq:
 * the new first_seq; neighbor_seq: where the old run had got to), then a new window.
 * An older epoch is refused. */
static void test_epoch_restart(void **state) {
    (void)state;
    tu_case_seed(3);
    env_t env;
    env_init(&env);
    env.p.range = 0.0; /* every scored subsequence opens or keeps an event */
    tss_engine *e = engine(&env, 0, (tss_limits){.max_seq_jump = 1000});
    assert_int_equal(feed(e, "s", 5, 0, 300), TSS_OK);
    settle(e);
    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "s", &info), 0);
    assert_int_equal(info.epoch, 5);
    assert_true(info.event_open);
    const size_t before = env.log.n;
    /* the sender reboots: numbering from 0 again */
    assert_int_equal(feed(e, "s", 6, 0, 40), TSS_OK);
    assert_int_equal(feed(e, "s", 5, 300, 10), TSS_REJECT_STALE_EPOCH);
    assert_int_equal(feed(e, "s", 6, 0, 10), TSS_REJECT_DUPLICATE); /* continuity again */
    assert_int_equal(feed(e, "s", 6, 40, 100), TSS_OK);
    settle(e);
    int kinds[16];
    size_t n = kinds_of(&env, "s", kinds, 16);
    assert_true(n >= 2);
    size_t reset = SIZE_MAX;
    for (size_t k = before; k < env.log.n; k++)
        if (env.log.v[k].a.kind == TSS_ALERT_RESET)
            reset = k;
    assert_true(reset != SIZE_MAX);
    assert_int_equal(count_kind(&env, "s", TSS_ALERT_RESET), 1);
    const tss_alert *r = &env.log.v[reset].a;
    assert_int_equal(r->start_seq, 0);
    assert_int_equal(r->neighbor_seq, 300);
    /* the old run's event closed just before it */
    assert_int_equal(env.log.v[reset - 1].a.kind, TSS_ALERT_ANOMALY_END);
    assert_true(env.log.v[reset - 1].a.event_end_seq <= 300);
    /* and every alert after it is numbered in the new run */
    for (size_t k = reset + 1; k < env.log.n; k++)
        assert_true(env.log.v[k].a.start_seq < 140);
    assert_int_equal(tss_engine_stream_find(e, "s", &info), 0);
    assert_int_equal(info.epoch, 6);
    assert_int_equal(info.next_seq, 140);
    assert_int_equal(info.window_fill, 140);
    tss_engine_destroy(&e);
    free(env.log.v);
}

/* The red team's jam (one batch at 2^62 with no bound, then every real batch a
 * duplicate) and the way out for a sender without epochs: a reset on request. */
static void test_reset_on_request(void **state) {
    (void)state;
    tu_case_seed(4);
    env_t env;
    env_init(&env);
    tss_engine *e = engine(&env, 0, (tss_limits){0});
    assert_int_equal(feed(e, "s", 0, 0, 100), TSS_OK);
    assert_int_equal(feed(e, "s", 0, (uint64_t)1 << 62, 1), TSS_OK);     /* the jam */
    assert_int_equal(feed(e, "s", 0, 100, 10), TSS_REJECT_OUT_OF_ORDER); /* in its gap */
    assert_int_equal(tss_engine_reset_stream(e, "nope"), -1);
    assert_int_equal(tss_engine_reset_stream(e, "s"), 0);
    assert_int_equal(feed(e, "s", 0, 100, 10), TSS_OK);
    assert_int_equal(feed(e, "s", 0, 110, 10), TSS_OK);
    settle(e);
    assert_int_equal(count_kind(&env, "s", TSS_ALERT_GAP), 1); /* the jam's own */
    assert_int_equal(count_kind(&env, "s", TSS_ALERT_RESET), 1);
    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "s", &info), 0);
    assert_int_equal(info.next_seq, 120);
    assert_int_equal(info.window_fill, 20);
    tss_engine_destroy(&e);
    free(env.log.v);
}

/* Deleting a stream drops what it staged (counted) and forgets it: the next batch of
 * that id starts a new stream at any sequence number. */
static void test_delete(void **state) {
    (void)state;
    tu_case_seed(5);
    env_t env;
    env_init(&env);
    tss_engine *e = engine(&env, 0, (tss_limits){0});
    assert_int_equal(feed(e, "a", 0, 0, 200), TSS_OK);
    assert_int_equal(feed(e, "b", 0, 0, 200), TSS_OK);
    settle(e);
    assert_int_equal(feed(e, "a", 0, 200, 30), TSS_OK); /* staged, not processed */
    assert_int_equal(tss_engine_delete_stream(e, "a"), 0);
    assert_int_equal(tss_engine_delete_stream(e, "a"), -1);
    assert_int_equal(tss_engine_stream_count(e), 1);
    assert_int_equal(tss_engine_pending(e), 0);
    tss_engine_counters c;
    tss_engine_counters_get(e, &c);
    assert_int_equal(c.streams_deleted, 1);
    assert_int_equal(c.samples_dropped, 30);
    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "a", &info), -1);
    assert_int_equal(feed(e, "a", 0, 7, 20), TSS_OK);
    settle(e);
    assert_int_equal(tss_engine_stream_find(e, "a", &info), 0);
    assert_int_equal(info.samples, 20);
    assert_int_equal(info.next_seq, 27);
    assert_int_equal(tss_engine_stream_find(e, "b", &info), 0);
    assert_int_equal(info.samples, 200);
    tss_engine_destroy(&e);
    free(env.log.v);
}

/* A stream removed with an event open (deleted, expired or evicted) ends the event
 * first: its ANOMALY_END reaches the callback at the removal, within what was
 * processed, so no subscriber is left with an anomaly that never closes. */
static void test_remove_ends_open_event(void **state) {
    (void)state;
    tu_case_seed(12);
    env_t env;
    env_init(&env);
    env.p.range = 1e-9; /* every scored subsequence passes: an event opens, stays open */
    tss_engine *e = engine(&env, 0, (tss_limits){.idle_expiry_s = 100});
    for (int k = 0; k < 2; k++) {
        const char *id = k ? "expired" : "deleted";
        assert_int_equal(feed(e, id, 0, 0, 300), TSS_OK);
        settle(e);
        assert_int_equal(count_kind(&env, id, TSS_ALERT_ANOMALY), 1);
        assert_int_equal(count_kind(&env, id, TSS_ALERT_ANOMALY_END), 0);
    }
    const size_t before = env.log.n;
    assert_int_equal(tss_engine_delete_stream(e, "deleted"), 0);
    assert_int_equal(env.log.n, before + 1);
    const tss_alert *end = &env.log.v[before].a;
    assert_string_equal(env.log.v[before].id, "deleted");
    assert_int_equal(end->kind, TSS_ALERT_ANOMALY_END);
    assert_true(end->event_start_seq < end->event_end_seq);
    assert_true(end->event_end_seq <= 300);
    assert_int_equal(end->detected_seq, 299);
    env.now += 101;
    settle(e);
    assert_int_equal(tss_engine_stream_count(e), 0);
    assert_int_equal(count_kind(&env, "expired", TSS_ALERT_ANOMALY_END), 1);
    tss_engine_destroy(&e);
    free(env.log.v);
}

/* Streams idle past idle_expiry_s go at the next tick (looked for at most once a
 * second); a batch keeps a stream alive. */
static void test_idle_expiry(void **state) {
    (void)state;
    tu_case_seed(6);
    env_t env;
    env_init(&env);
    tss_engine *e = engine(&env, 0, (tss_limits){.idle_expiry_s = 100});
    assert_int_equal(feed(e, "a", 0, 0, 100), TSS_OK);
    assert_int_equal(feed(e, "b", 0, 0, 1), TSS_OK);
    settle(e);
    env.now += 60;
    assert_int_equal(feed(e, "b", 0, 1, 1), TSS_OK);
    assert_int_equal(feed(e, "c", 0, 0, 1), TSS_OK);
    settle(e);
    assert_int_equal(tss_engine_stream_count(e), 3);
    env.now += 41; /* a: 101 s idle; b, c: 41 s */
    settle(e);
    assert_int_equal(tss_engine_stream_count(e), 2);
    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "a", &info), -1);
    assert_int_equal(tss_engine_stream_find(e, "b", &info), 0);
    assert_true(fabs(info.idle_s - 41) < 1e-9);
    env.now += 100;
    settle(e);
    assert_int_equal(tss_engine_stream_count(e), 0);
    tss_engine_counters c;
    tss_engine_counters_get(e, &c);
    assert_int_equal(c.streams_expired, 3);
    tss_engine_destroy(&e);
    free(env.log.v);
}

/* A full table: evict_idle removes the longest idle stream that has not delivered its
 * warm-up first, then the longest idle one, never one idle less than evict_min_idle_s;
 * refuse keeps every stream. */
static void test_when_full(void **state) {
    (void)state;
    tu_case_seed(7);
    env_t env;
    env_init(&env);
    tss_limits lim = {.when_full = TSS_FULL_EVICT_IDLE, .evict_min_idle_s = 10};
    tss_engine *e = engine(&env, 3, lim);
    assert_int_equal(feed(e, "warm1", 0, 0, 100), TSS_OK); /* oldest, warm */
    env.now += 1;
    assert_int_equal(feed(e, "cold1", 0, 0, 1), TSS_OK);
    env.now += 1;
    assert_int_equal(feed(e, "warm2", 0, 0, 100), TSS_OK);
    settle(e);
    assert_int_equal(feed(e, "new1", 0, 0, 1), TSS_REJECT_TOO_MANY_STREAMS); /* none idle 10 s */
    env.now += 20;
    assert_int_equal(feed(e, "new1", 0, 0, 1), TSS_OK); /* cold1 goes, not the idler warm1 */
    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "cold1", &info), -1);
    assert_int_equal(tss_engine_stream_find(e, "warm1", &info), 0);
    assert_int_equal(feed(e, "warm2", 0, 100, 100), TSS_OK); /* busy again */
    assert_int_equal(feed(e, "new2", 0, 0, 1), TSS_OK);      /* new1 is fresh: warm1 goes */
    assert_int_equal(tss_engine_stream_find(e, "warm1", &info), -1);
    assert_int_equal(feed(e, "new3", 0, 0, 1), TSS_REJECT_TOO_MANY_STREAMS); /* all fresh */
    env.now += 20;
    assert_int_equal(feed(e, "new3", 0, 0, 1), TSS_OK); /* new1 (cold) before warm2 */
    assert_int_equal(tss_engine_stream_find(e, "new1", &info), -1);
    assert_int_equal(tss_engine_stream_find(e, "warm2", &info), 0);
    tss_engine_counters c;
    tss_engine_counters_get(e, &c);
    assert_int_equal(c.streams_evicted, 3);
    assert_int_equal(c.rejected[TSS_REJECT_TOO_MANY_STREAMS], 2);
    lim.when_full = TSS_FULL_REFUSE;
    tss_engine_set_limits(e, &lim);
    env.now += 1000;
    assert_int_equal(feed(e, "new4", 0, 0, 1), TSS_REJECT_TOO_MANY_STREAMS);
    assert_int_equal(tss_engine_stream_count(e), 3);
    settle(e);
    tss_engine_destroy(&e);
    free(env.log.v);
}

/* The red team's 10,000 one-sample streams: with an automatic m nothing reaches the
 * windows, so no ring and no arena memory is taken; a stream that warms up takes its
 * own. */
static void test_memory_follows_samples(void **state) {
    (void)state;
    tu_case_seed(8);
    env_t env;
    env_init(&env);
    env.p.subsequence = 0; /* auto: the first window waits for the warm-up */
    tss_engine *e = engine(&env, 20000, (tss_limits){0});
    char id[32];
    for (int k = 0; k < 10000; k++) {
        snprintf(id, sizeof id, "junk%d", k);
        assert_int_equal(feed(e, id, 0, 0, 1), TSS_OK);
    }
    tick(e); /* their one sample each stays staged: an automatic m waits for 64 */
    tss_engine_counters c;
    tss_engine_counters_get(e, &c);
    assert_int_equal(c.ring_bytes, 0);
    assert_int_equal(e->arena.used, 0);
    assert_int_equal(feed(e, "real", 0, 0, 200), TSS_OK);
    tick(e);
    tss_engine_counters_get(e, &c);
    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "real", &info), 0);
    assert_true(info.params.subsequence > 0);
    assert_true(c.ring_bytes > 0);
    assert_true(c.ring_bytes < 64 * 1024); /* one stream's: W 256 */
    tss_engine_destroy(&e);
    free(env.log.v);
}

/* The alerts of stream id, start_seq and kind only, as a string (comparison). */
static void alerts_of(const env_t *env, const char *id, char *out, size_t len) {
    size_t at = 0;
    out[0] = '\0';
    for (size_t k = 0; k < env->log.n && at + 40 < len; k++)
        if (strcmp(env->log.v[k].id, id) == 0)
            at += (size_t)snprintf(out + at, len - at, "%d@%llu:%.9g ", env->log.v[k].a.kind,
                                   (unsigned long long)env->log.v[k].a.start_seq,
                                   env->log.v[k].a.distance);
}

/* A stream placed in a region given back by a deleted one finds exactly what it finds
 * in a fresh engine (the region starts zeroed and its state rebuilt), and the arena
 * does not grow for it. */
static void test_region_reuse_exact(void **state) {
    (void)state;
    tu_case_seed(9);
    static double x[1200];
    tu_random_walk(x, 1200);
    tu_plant_anomaly(x, 700, 40, 6.0);
    env_t a, b;
    env_init(&a);
    env_init(&b);
    tss_engine *ea = engine(&a, 0, (tss_limits){0}), *eb = engine(&b, 0, (tss_limits){0});
    /* b: a stream that fills its region with other data, then goes */
    assert_int_equal(feed(eb, "old", 0, 0, 500), TSS_OK);
    settle(eb);
    const uint64_t used = eb->arena.used;
    assert_int_equal(tss_engine_delete_stream(eb, "old"), 0);
    for (size_t at = 0; at < 1200; at += 100) {
        assert_int_equal(tss_engine_ingest(ea, "x", at, NULL, 0, 0, x + at, 100), TSS_OK);
        assert_int_equal(tss_engine_ingest(eb, "x", at, NULL, 0, 0, x + at, 100), TSS_OK);
        settle(ea);
        settle(eb);
    }
    assert_int_equal(eb->arena.used, used);
    static char sa[1 << 16], sb[1 << 16];
    alerts_of(&a, "x", sa, sizeof sa);
    alerts_of(&b, "x", sb, sizeof sb);
    assert_true(strlen(sa) > 0);
    assert_string_equal(sa, sb);
    tss_engine_destroy(&ea);
    tss_engine_destroy(&eb);
    free(a.log.v);
    free(b.log.v);
}

/* Removal from the hash table keeps every other id findable (backward shift over
 * colliding probe runs), and the list in creation order. */
static void test_registry_remove(void **state) {
    (void)state;
    tu_case_seed(10);
    enum { N = 3000 };
    tss_registry r = {0};
    static tss_stream *all[N];
    static int gone[N];
    tss_params p = small_params();
    for (int k = 0; k < N; k++) {
        char id[32];
        snprintf(id, sizeof id, "id-%d", k);
        assert_int_equal(tss_stream_new(id, &p, &all[k]), 0);
        assert_int_equal(tss_registry_add(&r, all[k]), 0);
    }
    for (int round = 0; round < 2000; round++) {
        int k = (int)(tu_uniform() * N);
        if (gone[k])
            continue;
        tss_registry_remove(&r, all[k]);
        tss_stream_destroy(&all[k]);
        gone[k] = 1;
    }
    size_t left = 0;
    for (int k = 0; k < N; k++) {
        char id[32];
        snprintf(id, sizeof id, "id-%d", k);
        assert_true(tss_registry_find(&r, id) == (gone[k] ? NULL : all[k]));
        left += !gone[k];
    }
    assert_int_equal(r.n, left);
    for (size_t k = 1; k < r.n; k++)
        assert_true(r.list[k - 1]->index < r.list[k]->index);
    tss_registry_free(&r);
}

/* A reset waiting for its batch, a staged reset mark and the epoch survive a
 * checkpoint. */
static void test_checkpoint_keeps_epochs(void **state) {
    (void)state;
    tu_case_seed(11);
    env_t env;
    env_init(&env);
    tss_engine *e = engine(&env, 0, (tss_limits){0});
    assert_int_equal(feed(e, "a", 3, 0, 100), TSS_OK);
    assert_int_equal(feed(e, "a", 4, 0, 50), TSS_OK); /* a staged reset mark */
    assert_int_equal(feed(e, "b", 0, 0, 100), TSS_OK);
    assert_int_equal(tss_engine_reset_stream(e, "b"), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[256];
    assert_int_equal(tss_engine_save(e, f, err, sizeof err), 0);
    fclose(f);
    tss_engine_destroy(&e);
    e = engine(&env, 0, (tss_limits){0});
    f = fmemopen(buf, len, "rb");
    if (tss_engine_load(e, f, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    fclose(f);
    assert_int_equal(feed(e, "a", 3, 50, 10), TSS_REJECT_STALE_EPOCH);
    assert_int_equal(feed(e, "b", 0, 5, 10), TSS_OK); /* the reset held */
    settle(e);
    assert_int_equal(count_kind(&env, "a", TSS_ALERT_RESET), 1);
    assert_int_equal(count_kind(&env, "b", TSS_ALERT_RESET), 1);
    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "a", &info), 0);
    assert_int_equal(info.epoch, 4);
    assert_int_equal(info.next_seq, 50);
    tss_engine_destroy(&e);
    free(buf);
    free(env.log.v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seq_jump),
        cmocka_unit_test(test_future_time),
        cmocka_unit_test(test_epoch_restart),
        cmocka_unit_test(test_reset_on_request),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_remove_ends_open_event),
        cmocka_unit_test(test_idle_expiry),
        cmocka_unit_test(test_when_full),
        cmocka_unit_test(test_memory_follows_samples),
        cmocka_unit_test(test_region_reuse_exact),
        cmocka_unit_test(test_registry_remove),
        cmocka_unit_test(test_checkpoint_keeps_epochs),
    };
    tu_apply_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
