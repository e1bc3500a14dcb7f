/* SPDX-License-Identifier: Apache-2.0 */
/* stream_room_test.c - the engine under a bound on the host memory its windows take
 * (tss_engine_set_room, as tsmined sets it under ulimit -v): when the arena cannot grow,
 * the streams it has room for run their rounds and are scored, the others are skipped
 * alone (their samples still enter their windows) and the tick reports why; once room
 * comes back, every stream is placed and scored. The bound is on host memory: on the
 * CUDA backend the arena is device memory and the cases skip, visibly. */
#include "stream.h" /* tss_stream_bytes_for */
#include "stream_testutil.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Regions of several MiB: the arena's first 16 MiB hold a few. */
#define WINDOW      32768
#define FIRST_ARENA ((uint64_t)1 << 24)
#define CHUNK       100

static const char *const IDS[] = {"a", "b", "c", "d", "e", "f"};
#define NIDS (sizeof IDS / sizeof *IDS)

static uint64_t room_of(void *user) {
    return *(const uint64_t *)user;
}

/* The streams' parameters; returns how many of their arena regions fit in the
 * arena's first growth. */
static size_t setup(st_env *env) {
    memset(env, 0, sizeof *env);
    env->keep_scores = 1;
    tss_params p = tss_params_default();
    p.window = WINDOW, p.subsequence = 12, p.hop = WINDOW, p.warmup = 64, p.range = 3.0;
    for (size_t k = 0; k < NIDS; k++)
        st_env_add(env, IDS[k], p);
    const uint64_t region = tss_stream_bytes_for(&p, 1) - tss_stream_bytes_for(&p, 0);
    return (size_t)(FIRST_ARENA / region);
}

/* Ingests CHUNK more samples of stream id, whose next sequence number is *next. */
static void feed(tss_engine *e, const char *id, uint64_t *next) {
    double v[CHUNK];
    for (size_t k = 0; k < CHUNK; k++)
        v[k] = (double)((*next + k) * 7919 % 101) / 10.0 + (double)(id[0] - 'a');
    assert_int_equal(
        tss_engine_ingest(e, id, *next, NULL, (int64_t)*next * ST_PERIOD, ST_PERIOD, v, CHUNK),
        TSS_OK);
    *next += CHUNK;
}

/* Scores of stream id recorded so far. */
static size_t scores_of(const st_env *env, const char *id) {
    size_t n = 0;
    for (size_t k = 0; k < env->scores.n; k++)
        n += strcmp(env->scores.v[k].id, id) == 0;
    return n;
}

static void test_streams_without_room_are_skipped_alone(void **state) {
    (void)state;
    if (st_backend() != TSM_BACKEND_CPU)
        skip(); /* prints "[  SKIPPED ]": the room bounds host memory only */
    st_env env;
    const size_t fit = setup(&env);
    /* "a", then some but not all of the others */
    assert_true(fit >= 2 && fit < NIDS);
    tss_engine *e = st_engine(&env, 2, 0);
    uint64_t room = UINT64_MAX, next[NIDS] = {0};
    tss_engine_set_room(e, room_of, &room);
    char err[512] = "";

    /* "a" alone: the arena takes its first 16 MiB */
    feed(e, "a", &next[0]);
    assert_int_equal(tss_engine_tick(e, err, sizeof err), 0);
    const size_t a0 = scores_of(&env, "a");
    assert_true(a0 > 0);

    /* no room left: fit - 1 of the new streams get what the arena has left */
    room = 0;
    for (size_t k = 0; k < NIDS; k++)
        feed(e, IDS[k], &next[k]);
    assert_int_equal(tss_engine_tick(e, err, sizeof err), -1);
    assert_non_null(strstr(err, "address space"));
    assert_true(scores_of(&env, "a") > a0); /* the round went on for the placed ones */
    size_t scored = 0, unscored = 0;
    for (size_t k = 1; k < NIDS; k++) {
        scored += scores_of(&env, IDS[k]) > 0;
        unscored += scores_of(&env, IDS[k]) == 0;
        tss_stream_info info;
        assert_int_equal(tss_engine_stream_find(e, IDS[k], &info), 0);
        assert_int_equal(info.window_fill, CHUNK); /* the samples are in every window */
    }
    assert_int_equal(scored, fit - 1);
    assert_int_equal(unscored, NIDS - fit);

    /* room again: the rest are placed and scored with the others */
    room = UINT64_MAX;
    size_t before[NIDS];
    for (size_t k = 0; k < NIDS; k++) {
        before[k] = scores_of(&env, IDS[k]);
        feed(e, IDS[k], &next[k]);
    }
    if (tss_engine_tick(e, err, sizeof err) != 0)
        fail_msg("tick with room again: %s", err);
    st_settle(e);
    for (size_t k = 0; k < NIDS; k++)
        assert_true(scores_of(&env, IDS[k]) > before[k]);
    tss_engine_destroy(&e);
    st_env_free(&env);
}

/* A bound below what the arena's first growth needs: nothing is allocated past it. */
static void test_first_growth_beyond_room_fails(void **state) {
    (void)state;
    if (st_backend() != TSM_BACKEND_CPU)
        skip();
    st_env env;
    setup(&env);
    tss_engine *e = st_engine(&env, 2, 0);
    uint64_t room = (uint64_t)1 << 20, next = 0; /* less than the first growth */
    tss_engine_set_room(e, room_of, &room);
    char err[512] = "";
    feed(e, "a", &next);
    assert_int_equal(tss_engine_tick(e, err, sizeof err), -1);
    assert_non_null(strstr(err, "address space"));
    assert_int_equal(scores_of(&env, "a"), 0);
    room = UINT64_MAX;
    feed(e, "a", &next);
    if (tss_engine_tick(e, err, sizeof err) != 0)
        fail_msg("tick with room: %s", err);
    assert_true(scores_of(&env, "a") > 0);
    tss_engine_destroy(&e);
    st_env_free(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_streams_without_room_are_skipped_alone),
        cmocka_unit_test(test_first_growth_beyond_room_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
