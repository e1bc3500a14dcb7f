/* stream_engine_test.c - the stream engine (stream/engine.h) driven directly and
 * compared with the batch kernels on the same windows.
 *
 * A model replays each prepared stream sample by sample from the definitions of
 * DESIGN 5.3: the window restarts at every gap; after each sample the subsequence it
 * completes is scored by brute force over its left neighbours in the window
 * (LEFT_DISCORD when lnn >= r and r is known), and at every pass point (window just
 * full, then every hop samples) the window goes through tsm_discords_topk (calibration
 * of r = auto), tsm_pd3_range (DISCORD for starts not alerted before) and tsm_mk_motifs
 * (MOTIF when the pair changes). The engine's alerts must equal the model's: DISCORD
 * and MOTIF positions exact and distances within 1e-9 relative; LEFT_DISCORD distances
 * within 1e-9 relative or TU_D2_TOL(m) on d2, neighbours exact unless tied, and each
 * also equal to the batch left matrix profile (tsm_mp) of its window; those within
 * 1e-9 of r may go either way. */
#include "stream_testutil.h"
#include "testutil.h"

#include "mk.h"
#include "mp.h"
#include "pd3.h"
#include "reference.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define REL 1e-9

/* ---- the model ------------------------------------------------------------------- */

typedef struct {
    tss_alert *v;
    uint8_t *optional; /* LEFT_DISCORD near r: may be missing */
    size_t n, cap;
} expect_list;

typedef struct {
    expect_list kind[TSS_ALERT_KINDS];
} expect;

static void expect_push(expect *x, tss_alert a, int optional) {
    expect_list *l = &x->kind[a.kind];
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        l->optional = realloc(l->optional, l->cap);
        assert_true(l->v && l->optional);
    }
    l->optional[l->n] = (uint8_t)optional;
    l->v[l->n++] = a;
}

static void expect_free(expect *x) {
    for (int k = 0; k < TSS_ALERT_KINDS; k++)
        free(x->kind[k].v), free(x->kind[k].optional);
}

/* Whether d matches the squared reference distance want2 (see the top of the file). */
static int close_d(double d, double want2, size_t m) {
    double want = sqrt(want2);
    return fabs(d * d - want2) <= TU_D2_TOL(m) || fabs(d - want) <= REL * want;
}

/* The batch left profile of window w[0..len-1] at its last subsequence. */
static double batch_lnn(tsm_ctx *ctx, const double *w, size_t len, size_t m, size_t excl) {
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, w, len, m, &s), TSM_OK);
    double *lmp = malloc(s->N * sizeof *lmp);
    int64_t *lmpi = malloc(s->N * sizeof *lmpi);
    assert_int_equal(tsm_mp(ctx, s, excl, NULL, NULL, lmp, lmpi), TSM_OK);
    double d = lmp[s->N - 1];
    free(lmp), free(lmpi);
    tsm_stats_destroy(&s);
    return d;
}

typedef struct {
    int calibrated;
    double r;
    uint64_t *alerted;
    size_t nalerted;
    int have_motif;
    uint64_t ma, mb;
} model_state;

/* The passes of one full window w (first sample w0). */
static void model_pass(tsm_ctx *ctx, const tss_params *p, size_t excl, model_state *ms,
                       const double *w, uint64_t w0, expect *x) {
    const size_t W = p->window, m = p->subsequence;
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, w, W, m, &s), TSM_OK);
    if (!ms->calibrated) {
        tsm_discord top;
        size_t c = 0;
        assert_int_equal(tsm_discords_topk(ctx, s, excl, 1, 0, &top, &c, NULL), TSM_OK);
        if (c == 1 && top.distance > 0) {
            ms->calibrated = 1;
            ms->r = top.distance * (1.0 + p->range_margin);
        }
    }
    if (ms->calibrated) {
        tsm_discord *d = NULL;
        size_t nd = 0;
        assert_int_equal(tsm_pd3_range(ctx, s, excl, ms->r, 0, &d, &nd, NULL), TSM_OK);
        for (size_t k = 0; k < nd; k++) {
            uint64_t seq = w0 + (uint64_t)d[k].index;
            int seen = 0;
            for (size_t q = 0; q < ms->nalerted && !seen; q++)
                seen = ms->alerted[q] == seq;
            if (seen)
                continue;
            ms->alerted = realloc(ms->alerted, (ms->nalerted + 1) * sizeof *ms->alerted);
            ms->alerted[ms->nalerted++] = seq;
            expect_push(x,
                        (tss_alert){TSS_ALERT_DISCORD, seq, (int64_t)seq * ST_PERIOD, (uint32_t)m,
                                    d[k].distance, w0 + (uint64_t)d[k].neighbor, ms->r, 0},
                        0);
        }
        free(d);
    }
    if (p->motif) {
        tsm_motif mo;
        size_t c = 0;
        assert_int_equal(
            tsm_mk_motifs(ctx, s, excl, 1, p->references, TSM_MK_SEED_DEFAULT, &mo, &c, NULL),
            TSM_OK);
        uint64_t a = w0 + (uint64_t)mo.a, b = w0 + (uint64_t)mo.b;
        if (c == 1 && !(ms->have_motif && ms->ma == a && ms->mb == b)) {
            ms->have_motif = 1, ms->ma = a, ms->mb = b;
            expect_push(x,
                        (tss_alert){TSS_ALERT_MOTIF, a, (int64_t)a * ST_PERIOD, (uint32_t)m,
                                    mo.distance, b, 0.0, 0},
                        0);
        }
    }
    tsm_stats_destroy(&s);
}

/* The left-NN of the subsequence that sample k completes, window starting at ws. */
static void model_left(tsm_ctx *ctx, const st_input *in, const tss_params *p, size_t excl,
                       const model_state *ms, size_t ws, size_t k, expect *x) {
    const size_t m = p->subsequence;
    if (k + 1 - ws < m || !ms->calibrated || !p->left_discord)
        return;
    size_t i = k + 1 - m;
    double best = INFINITY;
    size_t bj = 0;
    for (size_t j = ws; j + excl <= i; j++) {
        double d2 = ref_d2(in->v, m, i, j);
        if (d2 < best)
            best = d2, bj = j;
    }
    double d = sqrt(best);
    if (!isfinite(d) || d < ms->r * (1 - REL))
        return;
    double lmp = batch_lnn(ctx, in->v + ws, k + 1 - ws, m, excl);
    if (!close_d(lmp, best, m))
        fail_msg("seed %llu: %s at %zu: brute lnn %.17g, tsm_mp %.17g", (unsigned long long)tu_seed,
                 in->id, i, d, lmp);
    expect_push(x,
                (tss_alert){TSS_ALERT_LEFT_DISCORD, in->seq[i], (int64_t)in->seq[i] * ST_PERIOD,
                            (uint32_t)m, d, in->seq[bj], ms->r, 0},
                d < ms->r * (1 + REL));
}

/* Replays one input through the definitions. */
static void model(tsm_ctx *ctx, const st_input *in, const tss_params *p, expect *x) {
    const size_t W = p->window, excl = tss_params_excl(p);
    model_state ms = {.calibrated = !isnan(p->range), .r = p->range};
    size_t seg0 = 0;
    for (size_t k = 0; k < in->n; k++) {
        if (k > 0 && in->seq[k] != in->seq[k - 1] + 1) {
            uint64_t from = in->seq[k - 1] + 1;
            expect_push(x,
                        (tss_alert){TSS_ALERT_GAP, from, (int64_t)from * ST_PERIOD,
                                    (uint32_t)(in->seq[k] - from), 0, 0, 0, 0},
                        0);
            seg0 = k;
        }
        size_t len = k - seg0 + 1, ws = len > W ? k + 1 - W : seg0;
        model_left(ctx, in, p, excl, &ms, ws, k, x);
        if (len >= W && (len - W) % p->hop == 0)
            model_pass(ctx, p, excl, &ms, in->v + k + 1 - W, in->seq[k + 1 - W], x);
    }
    free(ms.alerted);
}

/* ---- comparison -------------------------------------------------------------------- */

static int by_start(const void *a, const void *b) {
    const tss_alert *x = a, *y = b;
    if (x->start_seq != y->start_seq)
        return x->start_seq < y->start_seq ? -1 : 1;
    return (x->neighbor_seq > y->neighbor_seq) - (x->neighbor_seq < y->neighbor_seq);
}

static int by_alert_start(const void *a, const void *b) {
    return by_start(&((const st_alert *)a)->a, &((const st_alert *)b)->a);
}

static void check_same_positions(const char *id, const char *what, const tss_alert *want,
                                 const st_alert *got, size_t n) {
    for (size_t k = 0; k < n; k++) {
        const tss_alert *w = &want[k], *g = &got[k].a;
        if (w->start_seq != g->start_seq || w->neighbor_seq != g->neighbor_seq ||
            w->length != g->length || fabs(w->distance - g->distance) > REL * w->distance ||
            fabs(w->threshold - g->threshold) > REL * w->threshold ||
            g->start_timestamp_ns != (int64_t)g->start_seq * ST_PERIOD)
            fail_msg("seed %llu: %s %s %zu: engine (%llu, %llu, %.17g, r %.17g), batch (%llu, "
                     "%llu, %.17g, r %.17g)",
                     (unsigned long long)tu_seed, id, what, k, (unsigned long long)g->start_seq,
                     (unsigned long long)g->neighbor_seq, g->distance, g->threshold,
                     (unsigned long long)w->start_seq, (unsigned long long)w->neighbor_seq,
                     w->distance, w->threshold);
    }
}

/* Index in `in` of the sample numbered seq. */
static size_t index_of(const st_input *in, uint64_t seq) {
    size_t a = 0, b = in->n;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (in->seq[mid] < seq)
            a = mid + 1;
        else
            b = mid;
    }
    assert_true(a < in->n && in->seq[a] == seq);
    return a;
}

/* LEFT_DISCORD: every required one present, every one present expected, values close. */
static void check_left(const st_input *in, const tss_params *p, const expect_list *want,
                       st_alert *got, size_t ngot) {
    if (ngot > 1)
        qsort(got, ngot, sizeof *got, by_alert_start);
    size_t g = 0;
    for (size_t k = 0; k < want->n; k++) {
        const tss_alert *w = &want->v[k];
        if (g < ngot && got[g].a.start_seq == w->start_seq) {
            const tss_alert *a = &got[g++].a;
            size_t i = index_of(in, w->start_seq), j = index_of(in, a->neighbor_seq);
            if (!close_d(a->distance, w->distance * w->distance, p->subsequence) ||
                fabs(a->threshold - w->threshold) > REL * w->threshold ||
                (a->neighbor_seq != w->neighbor_seq &&
                 !close_d(sqrt(ref_d2(in->v, p->subsequence, i, j)), w->distance * w->distance,
                          p->subsequence)))
                fail_msg("seed %llu: %s LEFT_DISCORD at %llu: engine %.17g (neighbour %llu), "
                         "brute force %.17g (neighbour %llu)",
                         (unsigned long long)tu_seed, in->id, (unsigned long long)w->start_seq,
                         a->distance, (unsigned long long)a->neighbor_seq, w->distance,
                         (unsigned long long)w->neighbor_seq);
            assert_int_equal(a->start_timestamp_ns, (int64_t)a->start_seq * ST_PERIOD);
        } else if (!want->optional[k]) {
            fail_msg("seed %llu: %s: LEFT_DISCORD at %llu (lnn %.17g >= r %.17g) missing",
                     (unsigned long long)tu_seed, in->id, (unsigned long long)w->start_seq,
                     w->distance, w->threshold);
        }
    }
    if (g != ngot)
        fail_msg("seed %llu: %s: unexpected LEFT_DISCORD at %llu (distance %.17g)",
                 (unsigned long long)tu_seed, in->id, (unsigned long long)got[g].a.start_seq,
                 got[g].a.distance);
}

/* Removes from v (n items of size sz, the tss_alert at byte at of each) the DISCORDs
 * whose distance is within REL of their r: rounding decides those (with margin 0 the
 * calibration window's top discord has nn = r exactly). Returns the items kept. */
static size_t drop_boundary(void *v, size_t sz, size_t n, size_t at) {
    size_t kept = 0;
    for (size_t k = 0; k < n; k++) {
        char *item = (char *)v + k * sz;
        const tss_alert *a = (const tss_alert *)(item + at);
        if (fabs(a->distance - a->threshold) <= REL * a->threshold)
            continue;
        memmove((char *)v + kept * sz, item, sz);
        kept++;
    }
    return kept;
}

/* Compares the log of one stream with the model; returns the alerts of each kind. */
static void check_stream(tsm_ctx *ctx, const st_log *log, const st_input *in, const tss_params *p,
                         size_t counts[TSS_ALERT_KINDS]) {
    expect x = {0};
    model(ctx, in, p, &x);
    static const char *const names[] = {"", "DISCORD", "LEFT_DISCORD", "MOTIF", "GAP"};
    for (int kind = 1; kind < TSS_ALERT_KINDS; kind++) {
        size_t n = 0;
        st_alert *got = st_select(log, in->id, kind, &n);
        expect_list *w = &x.kind[kind];
        counts[kind] += n;
        if (kind == TSS_ALERT_LEFT_DISCORD) {
            check_left(in, p, w, got, n);
        } else {
            if (kind == TSS_ALERT_DISCORD) { /* nn within 1e-9 of r may go either way */
                w->n = drop_boundary(w->v, sizeof *w->v, w->n, 0);
                n = drop_boundary(got, sizeof *got, n, offsetof(st_alert, a));
            }
            if (n != w->n) {
                for (size_t k = 0; k < w->n; k++)
                    print_message("batch  %s at %llu d %.17g r %.17g\n", names[kind],
                                  (unsigned long long)w->v[k].start_seq, w->v[k].distance,
                                  w->v[k].threshold);
                for (size_t k = 0; k < n; k++)
                    print_message("engine %s at %llu d %.17g r %.17g\n", names[kind],
                                  (unsigned long long)got[k].a.start_seq, got[k].a.distance,
                                  got[k].a.threshold);
                fail_msg("seed %llu: %s: %zu %s alerts, batch %zu", (unsigned long long)tu_seed,
                         in->id, n, names[kind], w->n);
            }
            if (kind != TSS_ALERT_GAP && n > 1) { /* GAPs come in sequence order already */
                qsort(w->v, n, sizeof *w->v, by_start);
                qsort(got, n, sizeof *got, by_alert_start);
            }
            check_same_positions(in->id, names[kind], w->v, got, n);
        }
        free(got);
    }
    expect_free(&x);
}

static tss_params params(uint32_t W, uint32_t m, uint32_t hop, uint32_t excl, double range) {
    tss_params p = tss_params_default();
    p.window = W, p.subsequence = m, p.hop = hop, p.excl = excl, p.range = range;
    return p;
}

/* Three streams of different shapes (auto and fixed r, margin 0, a gap, constants,
 * planted bursts), fed in random batches and ticks: every alert against the model. */
static void test_alerts_equal_batch(void **state) {
    (void)state;
    tu_case_seed(777);
    tsm_ctx *ctx = tu_ctx();
    st_env env = {0};
    tss_params pa = params(128, 16, 32, 0, NAN), pb = params(96, 8, 96, 12, 3.0),
               pc = params(100, 10, 25, 0, NAN);
    pc.range_margin = 0.0;
    pc.motif = 0;
    st_env_add(&env, "a", pa);
    st_env_add(&env, "b", pb);
    st_env_add(&env, "c", pc);
    st_input in[3] = {st_make_input("a", 1500, 0, 700, 45), st_make_input("b", 1200, 1000, 0, 0),
                      st_make_input("c", 900, 7, 150, 3)};
    tss_engine *e = st_engine(&env, 2, 0);
    st_feed(e, in, 3, 90, 0.3);
    size_t counts[TSS_ALERT_KINDS] = {0};
    check_stream(ctx, &env.log, &in[0], &pa, counts);
    check_stream(ctx, &env.log, &in[1], &pb, counts);
    check_stream(ctx, &env.log, &in[2], &pc, counts);
    print_message("alerts: discord %zu left %zu motif %zu gap %zu\n", counts[1], counts[2],
                  counts[3], counts[4]);
    /* the scenario must exercise every kind */
    for (int kind = 1; kind < TSS_ALERT_KINDS; kind++)
        if (counts[kind] == 0)
            fail_msg("seed %llu: no alert of kind %d: the case tests nothing",
                     (unsigned long long)tu_seed, kind);
    tss_engine_counters c;
    tss_engine_counters_get(e, &c);
    assert_int_equal(c.samples, 1500 + 1200 + 900);
    assert_int_equal(c.alerts[TSS_ALERT_GAP], 2);
    assert_int_equal(tss_engine_pending(e), 0);
    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "a", &info), 0);
    assert_int_equal(info.window_fill, 128);
    assert_int_equal(info.gaps, 1);
    assert_int_equal(info.next_seq, 1500 + 45);
    assert_true(info.calibrated && isfinite(info.range));
    tss_engine_destroy(&e);
    for (int s = 0; s < 3; s++)
        st_input_free(&in[s]);
    st_env_free(&env);
    tsm_ctx_destroy(&ctx);
}

/* Orders a log by stream, kind, start and neighbour (alerts of one stream are emitted
 * tick by tick, so the grouping into ticks may reorder them across ticks). */
static int by_everything(const void *a, const void *b) {
    const st_alert *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    if (c)
        return c;
    if (x->a.kind != y->a.kind)
        return x->a.kind < y->a.kind ? -1 : 1;
    return by_start(&x->a, &y->a);
}

/* Field by field, doubles bit for bit, the per-stream seq too. */
static int same_alert(const tss_alert *x, const tss_alert *y) {
    return x->kind == y->kind && x->seq == y->seq && x->start_seq == y->start_seq &&
           x->start_timestamp_ns == y->start_timestamp_ns && x->length == y->length &&
           memcmp(&x->distance, &y->distance, sizeof x->distance) == 0 &&
           x->neighbor_seq == y->neighbor_seq &&
           memcmp(&x->threshold, &y->threshold, sizeof x->threshold) == 0;
}

static void assert_same_log(const st_log *a, const st_log *b, int sort) {
    assert_int_equal(a->n, b->n);
    if (sort) {
        qsort(a->v, a->n, sizeof *a->v, by_everything);
        qsort(b->v, b->n, sizeof *b->v, by_everything);
    }
    for (size_t k = 0; k < a->n; k++)
        if (strcmp(a->v[k].id, b->v[k].id) != 0 || !same_alert(&a->v[k].a, &b->v[k].a))
            fail_msg("seed %llu: alert %zu differs: %s kind %d at %llu (%.17g) vs %s kind %d at "
                     "%llu (%.17g)",
                     (unsigned long long)tu_seed, k, a->v[k].id, a->v[k].a.kind,
                     (unsigned long long)a->v[k].a.start_seq, a->v[k].a.distance, b->v[k].id,
                     b->v[k].a.kind, (unsigned long long)b->v[k].a.start_seq, b->v[k].a.distance);
}

/* Runs the same inputs through an engine with `threads`, batching drawn from seed. */
/* The alerts of one stream in the order they came. */
static st_log only(const st_log *log, const char *id) {
    st_log out = {malloc((log->n + 1) * sizeof *out.v), 0, log->n};
    assert_non_null(out.v);
    for (size_t k = 0; k < log->n; k++)
        if (strcmp(log->v[k].id, id) == 0)
            out.v[out.n++] = log->v[k];
    return out;
}

/* With overlapped passes a stream's LEFT_DISCORDs are not held for its passes in
 * flight (engine.h, "Alert order"), so its DISCORDs and MOTIFs may come later than in
 * the synchronous log a: per stream, each kind's alerts are those of a in the same
 * order (field by field, seq aside), and the stream's seq counts 1, 2, 3, ... in the
 * order they came. */
static void assert_same_per_stream_kind(const st_log *a, const st_log *b, const char *const *ids,
                                        size_t nids) {
    assert_int_equal(a->n, b->n);
    for (size_t k = 0; k < nids; k++) {
        st_log x = only(a, ids[k]), y = only(b, ids[k]);
        assert_int_equal(x.n, y.n);
        for (size_t q = 0; q < y.n; q++)
            if (y.v[q].a.seq != q + 1)
                fail_msg("%s: alert %zu has seq %llu", ids[k], q, (unsigned long long)y.v[q].a.seq);
        for (unsigned kind = 0; kind < TSS_ALERT_KINDS; kind++) {
            size_t i = 0, j = 0;
            for (;;) {
                while (i < x.n && (unsigned)x.v[i].a.kind != kind)
                    i++;
                while (j < y.n && (unsigned)y.v[j].a.kind != kind)
                    j++;
                if (i == x.n || j == y.n)
                    break;
                tss_alert u = x.v[i].a, v = y.v[j].a;
                u.seq = v.seq = 0;
                if (!same_alert(&u, &v))
                    fail_msg("%s: kind %u: alert at %llu vs %llu", ids[k], kind,
                             (unsigned long long)u.start_seq, (unsigned long long)v.start_seq);
                i++, j++;
            }
            assert_true(i == x.n && j == y.n); /* as many of this kind */
        }
        free(x.v), free(y.v);
    }
}

/* Feeds in to a new engine of env in random batches, finishes its passes; returns how
 * many pass points were reached while passes were in flight. */
static uint64_t run_case(st_env *env, const st_input *in, size_t nin, int threads, uint64_t seed,
                         size_t max_batch) {
    tss_engine *e = st_engine(env, threads, 0);
    tu_rng_init(seed);
    st_feed(e, in, nin, max_batch, 0.5);
    char err[512] = "";
    if (tss_engine_flush(e, err, sizeof err) != 0) /* passes still running (overlap) */
        fail_msg("flush: %s", err);
    tss_engine_counters c;
    tss_engine_counters_get(e, &c);
    tss_engine_destroy(&e);
    return c.pass_waits;
}

/* 1 and 2 threads give identical alerts in identical order; the passes overlapped with
 * the next rounds (overlap_passes: a thread and a second device stream on the CUDA
 * backend; TSS_OVERLAP_ALWAYS: a thread on the CPU too, with small batches so that
 * streams reach pass points while passes are in flight and wait) give each stream's
 * alerts of each kind in the same order, interleaved differently across streams and
 * kinds (assert_same_per_stream_kind); other batch sizes
 * and tick points give the same alerts (bit for bit), only grouped differently. */
static void test_threads_and_batching(void **state) {
    (void)state;
    tu_case_seed(99);
    const char *ids[] = {"s0", "s1", "s2", "s3", "s4"};
    st_input in[5];
    st_env env1 = {0}, env2 = {0}, env3 = {0}, env4 = {.overlap_passes = 1};
    st_env env5 = {.overlap_passes = TSS_OVERLAP_ALWAYS};
    for (int s = 0; s < 5; s++) {
        in[s] = st_make_input(ids[s], 700 + 50 * (size_t)s, 0, 300, s == 2 ? 10 : 0);
        tss_params p = params(96 + 8 * (uint32_t)s, 8 + (uint32_t)s, 16, 0, NAN);
        st_env_add(&env1, ids[s], p);
        st_env_add(&env2, ids[s], p);
        st_env_add(&env3, ids[s], p);
        st_env_add(&env4, ids[s], p);
        st_env_add(&env5, ids[s], p);
    }
    run_case(&env1, in, 5, 1, 5, 40);
    run_case(&env2, in, 5, 2, 5, 40);
    run_case(&env3, in, 5, 2, 6, 7);
    run_case(&env4, in, 5, 2, 5, 40);
    uint64_t waits = run_case(&env5, in, 5, 2, 6, 7);
    print_message("overlapped passes on every backend: %llu pass points waited\n",
                  (unsigned long long)waits);
    assert_true(env1.log.n > 0);
    assert_same_log(&env1.log, &env2.log, 0);
    assert_same_per_stream_kind(&env1.log, &env4.log, ids, 5);
    assert_same_per_stream_kind(&env1.log, &env5.log, ids, 5);
    assert_same_log(&env1.log, &env3.log, 1); /* sorts both */
    for (int s = 0; s < 5; s++)
        st_input_free(&in[s]);
    st_env_free(&env1), st_env_free(&env2), st_env_free(&env3), st_env_free(&env4);
    st_env_free(&env5);
}

/* Each stream's alerts come in the same order (not only the same set) whatever the
 * batching and tick points: the order of the samples that produced them. */
static void test_stream_order_independent_of_batching(void **state) {
    (void)state;
    tu_case_seed(41);
    const char *ids[] = {"o0", "o1", "o2"};
    st_input in[3];
    st_env env1 = {0}, env2 = {0};
    for (int s = 0; s < 3; s++) {
        in[s] = st_make_input(ids[s], 900, 0, 400, s == 1 ? 20 : 0);
        tss_params p = params(96, 8 + 2 * (uint32_t)s, 24, 0, s == 2 ? 2.5 : NAN);
        st_env_add(&env1, ids[s], p);
        st_env_add(&env2, ids[s], p);
    }
    run_case(&env1, in, 3, 2, 11, 96);
    run_case(&env2, in, 3, 1, 12, 5);
    for (int s = 0; s < 3; s++) {
        st_log a = only(&env1.log, ids[s]), b = only(&env2.log, ids[s]);
        assert_true(a.n > 0);
        assert_same_log(&a, &b, 0);
        free(a.v), free(b.v);
        st_input_free(&in[s]);
    }
    st_env_free(&env1), st_env_free(&env2);
}

/* What test_online_before_passes's callback sees: per alert, how many PD3 passes the
 * engine had run when the alert reached the callback. */
typedef struct {
    tss_engine *e;
    tss_params p;
    tss_alert *a;
    uint64_t *passes;
    size_t n, cap;
} pass_log;

static void on_alert_passes(void *user, const char *id, const tss_alert *a) {
    (void)id;
    pass_log *l = user;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->a = realloc(l->a, l->cap * sizeof *l->a);
        l->passes = realloc(l->passes, l->cap * sizeof *l->passes);
        assert_true(l->a && l->passes);
    }
    tss_engine_counters c;
    tss_engine_counters_get(l->e, &c);
    l->a[l->n] = *a;
    l->passes[l->n++] = c.passes_discord;
}

static int params_of_log(void *user, const char *id, tss_params *out) {
    (void)id;
    *out = ((pass_log *)user)->p;
    return 0;
}

/* A LEFT_DISCORD reaches the callback before the passes of its own round run, even
 * when one tick holds many rounds: the subsequence that sample c completes (c samples
 * in so far, no gap, fixed r so that every pass runs PD3) is seen after exactly the
 * passes at pass points before c (W, W + hop, ...), not after those the tick runs
 * later. A pass's DISCORDs and MOTIF come after that pass. Also checks the processed
 * and pending counters and the phase timers' nesting. */
static void test_online_before_passes(void **state) {
    (void)state;
    tu_case_seed(23);
    pass_log l = {.p = params(128, 16, 32, 0, 3.0)};
    tss_engine_options opt = {.backend = st_backend(),
                              .threads = 2,
                              .on_alert = on_alert_passes,
                              .params_for = params_of_log,
                              .user = &l};
    char err[256] = "";
    assert_int_equal(tss_engine_new(&opt, &l.e, err, sizeof err), 0);
    st_input in = st_make_input("p", 1600, 1000, 0, 0);
    st_feed(l.e, &in, 1, 128, 0.05); /* about 20 batches, so many rounds, per tick */
    const uint64_t W = l.p.window, hop = l.p.hop, m = l.p.subsequence;
    size_t left = 0, late = 0;
    for (size_t k = 0; k < l.n; k++) {
        const tss_alert *a = &l.a[k];
        if (k > 0 && l.passes[k] < l.passes[k - 1])
            fail_msg("seed %llu: alert %zu came after a later pass", (unsigned long long)tu_seed,
                     k);
        if (a->kind != TSS_ALERT_LEFT_DISCORD) {
            assert_true(l.passes[k] >= 1); /* DISCORD, MOTIF: from a pass, counted */
            continue;
        }
        uint64_t c = a->start_seq - 1000 + m, want = c <= W ? 0 : (c - W - 1) / hop + 1;
        if (l.passes[k] != want)
            fail_msg("seed %llu: LEFT_DISCORD at %llu (sample %llu) came after %llu passes, "
                     "want %llu",
                     (unsigned long long)tu_seed, (unsigned long long)a->start_seq,
                     (unsigned long long)c, (unsigned long long)l.passes[k],
                     (unsigned long long)want);
        left++;
        late += c > W + hop; /* a pass point lay before it in the window's life */
    }
    print_message("%zu alerts, %zu LEFT_DISCORD (%zu after the first passes)\n", l.n, left, late);
    if (late == 0)
        fail_msg("seed %llu: no LEFT_DISCORD after the first passes: the case tests nothing",
                 (unsigned long long)tu_seed);
    tss_engine_counters c;
    tss_engine_counters_get(l.e, &c);
    assert_int_equal(c.samples_processed, in.n);
    assert_int_equal(c.samples, in.n);
    assert_int_equal(tss_engine_pending(l.e), 0);
    assert_int_equal(c.passes_discord, (in.n - W) / hop + 1);
    assert_true(c.seconds_tick + 1e-9 >= c.seconds_online + c.seconds_passes);
    assert_true(c.seconds_passes > 0 && c.seconds_online > 0);
    assert_false(tss_engine_device_lost(l.e));
    tss_engine_destroy(&l.e);
    st_input_free(&in);
    free(l.a), free(l.passes);
}

/* Every reason of refusal, counted per stream and engine-wide, changing nothing. */
static void test_rejections(void **state) {
    (void)state;
    st_env env = {0};
    st_env_add(&env, "x", params(64, 8, 16, 0, 2.0));
    st_env_add(&env, "y", params(64, 8, 16, 0, 2.0));
    st_env_add(&env, "z", params(64, 8, 16, 0, 2.0));
    st_env_add(&env, "bad", params(64, 2, 16, 0, 2.0)); /* m < 3 */
    tss_engine *e = st_engine(&env, 1, 2);
    double v[70];
    for (int k = 0; k < 70; k++)
        v[k] = sin(k * 0.3);
    char longid[300];
    memset(longid, 'a', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    assert_int_equal(tss_engine_ingest(e, "", 0, NULL, 0, 1, v, 4), TSS_REJECT_BAD_ID);
    assert_int_equal(tss_engine_ingest(e, longid, 0, NULL, 0, 1, v, 4), TSS_REJECT_BAD_ID);
    assert_int_equal(tss_engine_ingest(e, "a\nb", 0, NULL, 0, 1, v, 4), TSS_REJECT_BAD_ID);
    assert_int_equal(tss_engine_ingest(e, "unknown", 0, NULL, 0, 1, v, 4),
                     TSS_REJECT_STREAM_REFUSED);
    assert_int_equal(tss_engine_ingest(e, "bad", 0, NULL, 0, 1, v, 4), TSS_REJECT_STREAM_REFUSED);
    assert_int_equal(tss_engine_stream_count(e), 0);
    assert_int_equal(tss_engine_ingest(e, "x", 100, NULL, 0, 10, v, 0), TSS_REJECT_EMPTY);
    assert_int_equal(tss_engine_ingest(e, "x", 100, NULL, 0, 10, v, 65), TSS_REJECT_TOO_LARGE);
    double nanv[4] = {1, NAN, 2, 3}, infv[4] = {1, 2, INFINITY, 3};
    assert_int_equal(tss_engine_ingest(e, "x", 100, NULL, 0, 10, nanv, 4), TSS_REJECT_NONFINITE);
    assert_int_equal(tss_engine_ingest(e, "x", 100, NULL, 0, 10, infv, 4), TSS_REJECT_NONFINITE);
    assert_int_equal(tss_engine_ingest(e, "x", 100, NULL, 0, -1, v, 4), TSS_REJECT_TIMESTAMPS);
    int64_t back[4] = {10, 20, 15, 30};
    assert_int_equal(tss_engine_ingest(e, "x", 100, back, 0, 0, v, 4), TSS_REJECT_TIME_BACKWARDS);
    assert_int_equal(tss_engine_stream_count(e), 0); /* no refused batch created it */
    /* accepted: x at 100..109 (ts 1000..1090), then a gap 110..119 */
    assert_int_equal(tss_engine_ingest(e, "x", 100, NULL, 1000, 10, v, 10), TSS_OK);
    assert_int_equal(tss_engine_ingest(e, "x", 120, NULL, 1200, 10, v, 10), TSS_OK);
    size_t pending = tss_engine_pending(e);
    assert_int_equal(pending, 20);
    assert_int_equal(tss_engine_ingest(e, "x", 125, NULL, 1250, 10, v, 3), TSS_REJECT_DUPLICATE);
    assert_int_equal(tss_engine_ingest(e, "x", 105, NULL, 1050, 10, v, 3), TSS_REJECT_DUPLICATE);
    assert_int_equal(tss_engine_ingest(e, "x", 112, NULL, 1120, 10, v, 3), TSS_REJECT_OUT_OF_ORDER);
    assert_int_equal(tss_engine_ingest(e, "x", 130, NULL, 10, 10, v, 3),
                     TSS_REJECT_TIME_BACKWARDS); /* before the last timestamp */
    assert_int_equal(tss_engine_ingest(e, "x", 130, NULL, 0, 10, v, 65), TSS_REJECT_TOO_LARGE);
    assert_int_equal(tss_engine_ingest(e, "y", 0, NULL, 0, 1, v, 3), TSS_OK);
    assert_int_equal(tss_engine_ingest(e, "z", 0, NULL, 0, 1, v, 3), TSS_REJECT_TOO_MANY_STREAMS);
    assert_int_equal(tss_engine_pending(e), pending + 3);

    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "x", &info), 0);
    assert_int_equal(info.samples, 20);
    assert_int_equal(info.rejected, 5);
    assert_int_equal(info.next_seq, 130);
    assert_int_equal(info.gaps, 1);
    assert_int_equal(tss_engine_stream_find(e, "z", &info), -1);
    tss_engine_counters c;
    tss_engine_counters_get(e, &c);
    const uint64_t want[TSS_REJECT_COUNT] = {
        [TSS_REJECT_BAD_ID] = 3,           [TSS_REJECT_EMPTY] = 1,
        [TSS_REJECT_TOO_LARGE] = 2,        [TSS_REJECT_NONFINITE] = 2,
        [TSS_REJECT_TIMESTAMPS] = 1,       [TSS_REJECT_TIME_BACKWARDS] = 2,
        [TSS_REJECT_DUPLICATE] = 2,        [TSS_REJECT_OUT_OF_ORDER] = 1,
        [TSS_REJECT_TOO_MANY_STREAMS] = 1, [TSS_REJECT_STREAM_REFUSED] = 2,
    };
    for (int r = 1; r < TSS_REJECT_COUNT; r++) {
        if (c.rejected[r] != want[r])
            fail_msg("%s: %llu rejections, want %llu", tss_reject_name((tss_reject)r),
                     (unsigned long long)c.rejected[r], (unsigned long long)want[r]);
        for (int q = 0; q < r; q++) /* stable, distinct names */
            assert_string_not_equal(tss_reject_name((tss_reject)r), tss_reject_name((tss_reject)q));
    }
    assert_int_equal(c.samples, 23);
    /* the gap becomes one GAP alert at the tick, with the expected timestamp */
    char err[256];
    assert_int_equal(tss_engine_tick(e, err, sizeof err), 0);
    size_t n = 0;
    st_alert *gaps = st_select(&env.log, "x", TSS_ALERT_GAP, &n);
    assert_int_equal(n, 1);
    assert_int_equal(gaps[0].a.start_seq, 110);
    assert_int_equal(gaps[0].a.length, 10);
    assert_int_equal(gaps[0].a.start_timestamp_ns, 1100);
    free(gaps);
    assert_int_equal(tss_engine_stream_find(e, "x", &info), 0);
    assert_int_equal(info.window_fill, 10); /* restarted after the gap */
    tss_engine_destroy(&e);
    st_env_free(&env);
}

/* The top-1 discord of a window (what calibration uses). */
static double top_nn(const double *w, const tss_params *p) {
    tsm_ctx *ctx = tu_ctx();
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, w, p->window, p->subsequence, &s), TSM_OK);
    tsm_discord d;
    size_t c = 0;
    assert_int_equal(tsm_discords_topk(ctx, s, tss_params_excl(p), 1, 0, &d, &c, NULL), TSM_OK);
    assert_int_equal(c, 1);
    tsm_stats_destroy(&s);
    tsm_ctx_destroy(&ctx);
    return d.distance;
}

/* Recalibration forgets r until the next pass; reparam applies changed parameters. */
static void test_reparam_recalibrate(void **state) {
    (void)state;
    tu_case_seed(5);
    st_env env = {0};
    tss_params p = params(64, 8, 16, 0, NAN);
    p.range_margin = 0.5;
    st_env_add(&env, "r/1", p);
    tss_engine *e = st_engine(&env, 2, 0);
    st_input in = st_make_input("r/1", 64 + 16 + 48, 0, 0, 0);
    char err[256];
    tss_stream_info info;
    /* calibrates on the first full window */
    assert_int_equal(tss_engine_ingest(e, "r/1", 0, NULL, 0, 1, in.v, 64), TSS_OK);
    assert_int_equal(tss_engine_tick(e, err, sizeof err), 0);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_true(info.calibrated);
    assert_true(fabs(info.range - 1.5 * top_nn(in.v, &p)) <= 1e-12 * info.range);
    /* recalibrate: only matching prefixes; r unknown until the next pass */
    assert_int_equal(tss_engine_recalibrate(e, "q"), 0);
    assert_int_equal(tss_engine_recalibrate(e, "r/"), 1);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_false(info.calibrated);
    assert_true(isnan(info.range));
    assert_int_equal(tss_engine_ingest(e, "r/1", 64, NULL, 64, 1, in.v + 64, 16), TSS_OK);
    assert_int_equal(tss_engine_tick(e, err, sizeof err), 0);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_true(info.calibrated);
    assert_true(fabs(info.range - 1.5 * top_nn(in.v + 16, &p)) <= 1e-12 * info.range);
    /* a new margin applies at once */
    env.params[0].range_margin = 1.0;
    assert_int_equal(tss_engine_reparam(e), 1);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_true(fabs(info.range - 2.0 * top_nn(in.v + 16, &p)) <= 1e-12 * info.range);
    assert_int_equal(tss_engine_reparam(e), 0); /* nothing changed */
    /* a fixed range applies at once, without a restart */
    env.params[0].range = 4.0;
    assert_int_equal(tss_engine_reparam(e), 1);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_true(info.calibrated && info.range == 4.0 && info.window_fill == 64);
    /* a new window restarts it */
    env.params[0].window = 48;
    assert_int_equal(tss_engine_reparam(e), 1);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_int_equal(info.window_fill, 0);
    assert_int_equal(info.params.window, 48);
    assert_int_equal(tss_engine_ingest(e, "r/1", 80, NULL, 80, 1, in.v + 80, 48), TSS_OK);
    assert_int_equal(tss_engine_tick(e, err, sizeof err), 0);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_int_equal(info.window_fill, 48);
    /* refused or invalid parameters leave the stream as it is */
    env.params[0].subsequence = 1;
    assert_int_equal(tss_engine_reparam(e), 0);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_int_equal(info.params.subsequence, 8);
    tss_engine_destroy(&e);
    st_input_free(&in);
    st_env_free(&env);
}

/* Parameter validation names the field. */
static void test_params_check(void **state) {
    (void)state;
    char err[200];
    tss_params p = tss_params_default();
    assert_int_equal(tss_params_check(&p, err, sizeof err), 0);
    assert_true(isnan(p.range) && p.window == 4096 && p.subsequence == 128 && p.hop == 1024);
    p.window = 100, p.subsequence = 64;
    assert_int_equal(tss_params_check(&p, err, sizeof err), -1);
    assert_non_null(strstr(err, "window must be >= 2 * subsequence"));
    p = tss_params_default(), p.hop = 0;
    assert_int_equal(tss_params_check(&p, err, sizeof err), -1);
    assert_non_null(strstr(err, "hop"));
    p = tss_params_default(), p.range = -1;
    assert_int_equal(tss_params_check(&p, err, sizeof err), -1);
    assert_non_null(strstr(err, "range"));
    p = tss_params_default(), p.excl = 5000;
    assert_int_equal(tss_params_check(&p, err, sizeof err), -1);
    assert_non_null(strstr(err, "excl"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params_check),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_alerts_equal_batch),
        cmocka_unit_test(test_threads_and_batching),
        cmocka_unit_test(test_reparam_recalibrate),
        cmocka_unit_test(test_stream_order_independent_of_batching),
        cmocka_unit_test(test_online_before_passes),
    };
    return TU_RUN_GROUP("stream_engine", tests, NULL, NULL);
}
