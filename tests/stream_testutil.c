/* SPDX-License-Identifier: Apache-2.0 */
/* stream_testutil.c - see stream_testutil.h. */
#include "stream_testutil.h"

#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_alert(void *user, const char *id, const tss_alert *a) {
    st_log *log = &((st_env *)user)->log;
    if (log->n == log->cap) {
        log->cap = log->cap ? 2 * log->cap : 256;
        log->v = realloc(log->v, log->cap * sizeof *log->v);
        assert_non_null(log->v);
    }
    st_alert *x = &log->v[log->n++];
    snprintf(x->id, sizeof x->id, "%s", id);
    x->a = *a;
}

static void on_score(void *user, const char *id, const tss_scored *sc) {
    st_scores *l = &((st_env *)user)->scores;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        assert_non_null(l->v);
    }
    st_score *x = &l->v[l->n++];
    snprintf(x->id, sizeof x->id, "%s", id);
    x->start = sc->start, x->neighbor = sc->neighbor, x->raw = sc->raw, x->score = sc->score;
    x->m = sc->m, x->magnitude = sc->magnitude, x->magnitude_neighbor = sc->magnitude_neighbor;
    x->level = sc->level, x->shape_score = sc->shape_score;
    x->magnitude_score = sc->magnitude_score, x->level_score = sc->level_score;
    x->view = sc->view;
}

static int params_for(void *user, const char *id, tss_params *out) {
    const st_env *env = user;
    for (size_t k = 0; k < env->nids; k++)
        if (strcmp(env->ids[k], id) == 0) {
            *out = env->params[k];
            return 0;
        }
    return -1;
}

void st_env_add(st_env *env, const char *id, tss_params p) {
    for (size_t k = 0; k < env->nids; k++)
        if (strcmp(env->ids[k], id) == 0) {
            env->params[k] = p;
            return;
        }
    assert_true(env->nids < ST_MAX_STREAMS);
    env->ids[env->nids] = id;
    env->params[env->nids++] = p;
}

void st_env_free(st_env *env) {
    free(env->log.v);
    env->log = (st_log){0};
    free(env->scores.v);
    env->scores = (st_scores){0};
}

tsm_backend st_backend(void) {
    tsm_ctx *ctx = tu_ctx(); /* skips the case when the backend is unavailable */
    tsm_backend b = tsm_ctx_backend(ctx);
    tsm_ctx_destroy(&ctx);
    return b;
}

tss_engine *st_engine(st_env *env, int threads, uint32_t max_streams) {
    tss_engine_options opt = {
        .backend = st_backend(),
        .threads = threads,
        .max_streams = max_streams,
        .on_alert = on_alert,
        .params_for = params_for,
        .on_score = env->keep_scores ? on_score : NULL,
        .user = env,
        .overlap_passes = env->overlap_passes,
    };
    tss_engine *e = NULL;
    char err[256] = "";
    if (tss_engine_new(&opt, &e, err, sizeof err) != 0)
        fail_msg("tss_engine_new: %s", err);
    return e;
}

static void tick(tss_engine *e) {
    char err[512] = "";
    if (tss_engine_tick(e, err, sizeof err) != 0)
        fail_msg("seed %llu: tick failed: %s", (unsigned long long)tu_seed, err);
}

void st_settle(tss_engine *e) {
    char err[512] = "";
    tick(e);
    while (tss_engine_pending(e) > 0) { /* streams waiting for their passes (a thread) */
        if (tss_engine_flush(e, err, sizeof err) != 0)
            fail_msg("seed %llu: flush failed: %s", (unsigned long long)tu_seed, err);
        tick(e);
    }
}

void st_feed(tss_engine *e, const st_input *in, size_t nin, size_t max_batch, double p_tick) {
    size_t at[ST_MAX_STREAMS] = {0}, left = 0;
    for (size_t s = 0; s < nin; s++)
        left += in[s].n;
    while (left > 0) {
        size_t s = (size_t)(tu_uniform() * (double)nin);
        if (at[s] == in[s].n)
            continue;
        size_t k0 = at[s], want = 1 + (size_t)(tu_uniform() * (double)max_batch), n = 1;
        while (n < want && k0 + n < in[s].n && in[s].seq[k0 + n] == in[s].seq[k0] + n)
            n++;
        uint64_t seq0 = in[s].seq[k0];
        tss_reject r = tss_engine_ingest(e, in[s].id, seq0, NULL, (int64_t)seq0 * ST_PERIOD,
                                         ST_PERIOD, in[s].v + k0, n);
        if (r != TSS_OK)
            fail_msg("seed %llu: ingest %s at %llu refused: %s", (unsigned long long)tu_seed,
                     in[s].id, (unsigned long long)seq0, tss_reject_name(r));
        at[s] += n;
        left -= n;
        if (tu_uniform() < p_tick)
            tick(e);
    }
    st_settle(e);
}

st_alert *st_select(const st_log *log, const char *id, int kind, size_t *count) {
    st_alert *out = malloc((log->n + 1) * sizeof *out);
    assert_non_null(out);
    *count = 0;
    for (size_t k = 0; k < log->n; k++)
        if (strcmp(log->v[k].id, id) == 0 && (int)log->v[k].a.kind == kind)
            out[(*count)++] = log->v[k];
    return out;
}

st_input st_make_input(const char *id, size_t n, uint64_t seq0, size_t gap_at, uint64_t gap) {
    st_input in = {.id = id, .v = tu_series(n), .seq = malloc(n * sizeof(uint64_t)), .n = n};
    assert_non_null(in.seq);
    for (size_t at = 150; at + 80 < n; at += 200 + (size_t)(tu_uniform() * 300)) {
        if (tu_uniform() < 0.4)
            tu_fill(in.v, at, 20 + (size_t)(tu_uniform() * 30), in.v[at]);
        else
            tu_plant_anomaly(in.v, at, 24, 2.0);
    }
    for (size_t k = 0; k < n; k++)
        in.seq[k] = seq0 + k + (gap && k > gap_at ? gap : 0);
    return in;
}

void st_input_free(st_input *in) {
    free(in->v);
    free(in->seq);
    *in = (st_input){0};
}

void st_ckpt_fix_crc(unsigned char *buf, size_t len) {
    uint32_t c = 0xffffffffu;
    for (size_t k = 0; k + 12 < len; k++) {
        c ^= buf[k];
        for (int b = 0; b < 8; b++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    c = ~c;
    for (int k = 0; k < 4; k++)
        buf[len - 4 + k] = (unsigned char)(c >> (8 * k));
}
