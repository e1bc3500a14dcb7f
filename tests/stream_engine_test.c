/* SPDX-License-Identifier: Apache-2.0 */
/* stream_engine_test.c - the stream engine (stream/engine.h) driven directly and
 * compared with the definitions of DESIGN 5.3 on the same samples.
 *
 * A model replays each prepared stream sample by sample: the window restarts at every
 * gap (an open event closes there, then the GAP); the subsequence each sample completes
 * is scored by brute force over its left neighbours in the window, and the engine's raw
 * score for it (tss_engine_options.on_score) must be there and equal it (within 1e-9
 * relative or TU_D2_TOL(m) on d2; the neighbour exact unless tied); fed those raw
 * scores, the reference events (tests/reference/score_ref.c) give the ANOMALY,
 * ANOMALY_END and LEFT_DISCORD alerts the engine must publish, exactly (scores to
 * 1e-12). At every pass point (hop samples since the last pass or the restart, with
 * the window's warm-up in) the window's two-sided profile by brute force gives the
 * discords whose FAR score passes the threshold, published best first when they
 * overlap nothing published (closed events, earlier DISCORDs, the open event), and
 * tsm_mk_motifs the MOTIF when its pair shares no member with a pair published before. DISCORD
 * positions exact and distances within 1e-9 relative; MOTIF as tsm_mk_motifs gives. */
#include "stream_testutil.h"
#include "testutil.h"

#include "calib.h"
#include "mk.h"
#include "period.h"
#include "reference.h"
#include "robust.h"
#include "score_ref.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define REL 1e-9
#define TOL 1e-12

/* ---- the model ------------------------------------------------------------------- */

typedef struct {
    tss_alert *v;
    size_t n, cap;
} expect_list;

typedef struct {
    expect_list kind[TSS_ALERT_KINDS];
} expect;

static void expect_push(expect *x, tss_alert a) {
    expect_list *l = &x->kind[a.kind];
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        assert_non_null(l->v);
    }
    l->v[l->n++] = a;
}

static void expect_free(expect *x) {
    for (int k = 0; k < TSS_ALERT_KINDS; k++)
        free(x->kind[k].v);
}

/* Whether d matches the squared reference distance want2 (see the top of the file). */
static int close_d(double d, double want2, size_t m) {
    double want = sqrt(want2);
    return fabs(d * d - want2) <= TU_D2_TOL(m) || fabs(d - want) <= REL * want;
}

/* Index in `in` of the sample numbered seq. */
/* Whether x and y are within TOL of each other, or both NAN. */
static int same_or_nan(double x, double y) {
    return fabs(x - y) <= TOL || (isnan(x) && isnan(y));
}

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

typedef struct {
    uint64_t a, b;
} span;

/* What the model keeps of a stream besides the reference events. */
typedef struct {
    ref_events ev;
    ref_robust mag; /* the magnitude view's history */
    span *pub;      /* published spans: closed events, DISCORDs */
    size_t npub;
    span *motif; /* published MOTIF pairs */
    size_t nmotif;
    const st_score *sc; /* the engine's scores of this stream, in order */
    size_t nsc, next;
    int switched; /* an automatic m moved after the warm-up */
} model_state;

static void publish(model_state *ms, uint64_t a, uint64_t b) {
    ms->pub = realloc(ms->pub, (ms->npub + 1) * sizeof *ms->pub);
    assert_non_null(ms->pub);
    ms->pub[ms->npub++] = (span){a, b};
}

static int overlaps(const model_state *ms, uint64_t a, uint64_t b, uint64_t w0) {
    if (ms->ev.open && b > ms->ev.first)
        return 1;
    for (size_t k = 0; k < ms->npub; k++)
        if (ms->pub[k].b > w0 && ms->pub[k].a < b && ms->pub[k].b > a)
            return 1;
    return 0;
}

/* The reference's alerts as engine alerts, expected; closed events are published. */
static void expect_ref(model_state *ms, const ref_alert *r, size_t n, double threshold, expect *x) {
    for (size_t k = 0; k < n; k++) {
        tss_alert a = {
            .kind = (tss_alert_kind)r[k].kind,
            .start_seq = r[k].start,
            .length = ms->ev.m,
            .distance = r[k].raw,
            .neighbor_seq = r[k].neighbor,
            .threshold = threshold,
            .score = r[k].score,
            .event_start_seq = r[k].event_start,
            .event_end_seq = r[k].event_end,
            .detected_seq = r[k].detected,
            .tail = r[k].tail,
            .view = isnan(ms->ev.range) ? TSS_VIEW_MAGNITUDE : TSS_VIEW_SHAPE,
            .shape_score = r[k].shape_score,
        };
        if (a.kind == TSS_ALERT_ANOMALY_END)
            publish(ms, a.event_start_seq, a.event_end_seq);
        expect_push(x, a);
    }
}

static int by_distance(const void *a, const void *b) {
    const tsm_discord *x = a, *y = b;
    if (x->distance != y->distance)
        return x->distance > y->distance ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int pairs_overlap(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t excl) {
#define NEAR(u, v) ((u) > (v) ? (u) - (v) < excl : (v) - (u) < excl)
    return NEAR(a, c) || NEAR(a, d) || NEAR(b, c) || NEAR(b, d);
#undef NEAR
}

/* Forgets the spans that left the window [w0, ...) and the MOTIF pairs no subsequence
 * in it can share a member with (detect.h, tss_detect_prune). */
static void model_prune(model_state *ms, uint64_t w0, size_t excl) {
    size_t kept = 0;
    for (size_t k = 0; k < ms->npub; k++)
        if (ms->pub[k].b > w0)
            ms->pub[kept++] = ms->pub[k];
    ms->npub = kept;
    kept = 0;
    for (size_t k = 0; k < ms->nmotif; k++)
        if (ms->motif[k].b + excl > w0)
            ms->motif[kept++] = ms->motif[k];
    ms->nmotif = kept;
}

/* The passes of window w[0..len) (first sample w0, last `last`). */
static void model_pass(tsm_ctx *ctx, const tss_params *p, uint32_t m, size_t excl, model_state *ms,
                       const double *w, size_t len, uint64_t w0, uint64_t last, expect *x) {
    const size_t N = len - m + 1;
    double *nn = malloc(N * sizeof *nn), hist[TSS_CALIB_HISTORY];
    int64_t *nj = malloc(N * sizeof *nj);
    tsm_discord *cand = malloc(N * sizeof *cand);
    assert_true(nn && nj && cand);
    ref_profile(w, len, m, excl, 0, nn, nj);
    size_t hn = ref_history_get(&ms->ev.hist, hist), nc = 0;
    model_prune(ms, w0, excl);
    int scoring = isnan(p->range) ? hn >= TSS_CALIB_MIN : 1;
    double *sc = malloc(N * sizeof *sc); /* FAR scores, by index */
    assert_non_null(sc);
    for (size_t i = 0; scoring && i < N; i++) {
        if (!isfinite(nn[i]))
            continue;
        /* two-sided: the non-self-matches left and right of i */
        double left = i + 1 > excl ? (double)(i + 1 - excl) : 0;
        double right = N > i + excl ? (double)(N - i - excl) : 0;
        double v = ref_comparable(nn[i], m, left + right, (double)(p->window - m - excl + 1));
        sc[i] = ref_score(hist, hn, v, m, 1, NULL);
        if (isnan(p->range) ? sc[i] >= p->threshold : nn[i] >= p->range)
            cand[nc++] = (tsm_discord){.index = (int64_t)i, .distance = nn[i], .neighbor = nj[i]};
    }
    qsort(cand, nc, sizeof *cand, by_distance);
    for (size_t k = 0; k < nc; k++) {
        uint64_t a = w0 + (uint64_t)cand[k].index;
        if (overlaps(ms, a, a + m, w0))
            continue;
        publish(ms, a, a + m);
        expect_push(x, (tss_alert){
                           .kind = TSS_ALERT_DISCORD,
                           .start_seq = a,
                           .start_timestamp_ns = (int64_t)a * ST_PERIOD,
                           .length = m,
                           .distance = cand[k].distance,
                           .neighbor_seq = w0 + (uint64_t)cand[k].neighbor,
                           .threshold = isnan(p->range) ? p->threshold : p->range,
                           .score = sc[cand[k].index],
                           .detected_seq = last,
                           .tail = 1,
                           .view = TSS_VIEW_SHAPE,
                           .shape_score = sc[cand[k].index],
                       });
    }
    if (p->motif) {
        tsm_stats *s = NULL;
        assert_int_equal(tsm_stats_new(ctx, w, len, m, &s), TSM_OK);
        tsm_motif mo;
        size_t c = 0;
        assert_int_equal(
            tsm_mk_motifs(ctx, s, excl, 1, p->references, TSM_MK_SEED_DEFAULT, &mo, &c, NULL),
            TSM_OK);
        uint64_t a = w0 + (uint64_t)mo.a, b = w0 + (uint64_t)mo.b;
        int seen = 0;
        for (size_t k = 0; k < ms->nmotif && !seen; k++)
            seen = pairs_overlap(a, b, ms->motif[k].a, ms->motif[k].b, excl);
        if (c == 1 && !seen) {
            ms->motif = realloc(ms->motif, (ms->nmotif + 1) * sizeof *ms->motif);
            assert_non_null(ms->motif);
            ms->motif[ms->nmotif++] = (span){a, b};
            expect_push(x, (tss_alert){.kind = TSS_ALERT_MOTIF,
                                       .start_seq = a,
                                       .start_timestamp_ns = (int64_t)a * ST_PERIOD,
                                       .length = m,
                                       .distance = mo.distance,
                                       .neighbor_seq = b,
                                       .detected_seq = last});
        }
        tsm_stats_destroy(&s);
    }
    free(nn), free(nj), free(cand), free(sc);
}

/* The magnitude and level views (DESIGN 5.3) of the engine's score e for subsequence i
 * (window from ws) against brute force: the plain Euclidean left-NN distance within
 * 1e-8 of the window's squared range times 2m on d^2 (the kernel's sums are centred
 * near the window's level: online.h; its neighbour exact unless tied within that), the
 * level exactly (tests/reference: ref_level); then the views' scores by their
 * definitions: the magnitude score against the model's history of the engine's
 * magnitudes (ref_robust; unit 1% of sqrt(m) times the width of the range before the
 * subsequence), the level score (detect.h), and the score the events follow (the
 * magnitude score; with a numeric range the shape score). Returns the magnitude score. */
static double check_views(const st_input *in, const tss_params *p, model_state *ms,
                          const st_score *e, size_t excl, size_t ws, size_t i, uint32_t m) {
    double best = INFINITY, lo = INFINITY, hi = -INFINITY;
    size_t bj = 0;
    for (size_t j = ws; j + excl <= i; j++) {
        const double d2 = ref_raw_d2(in->v, m, i, j);
        if (d2 < best)
            best = d2, bj = j;
    }
    for (size_t k = ws; k < i + m; k++)
        lo = fmin(lo, in->v[k]), hi = fmax(hi, in->v[k]);
    const double tol = 1e-8 * 2.0 * m * (hi - lo) * (hi - lo) + 1e-300;
    const size_t j = index_of(in, e->magnitude_neighbor);
    if (e->m != m || !(fabs(e->magnitude * e->magnitude - best) <= tol) ||
        (j != bj && !(fabs(ref_raw_d2(in->v, m, i, j) - best) <= 2 * tol)))
        fail_msg("seed %llu: %s at %llu: engine magnitude %.17g (neighbour %llu, m %u), brute "
                 "force %.17g (neighbour %llu, m %u)",
                 (unsigned long long)tu_seed, in->id, (unsigned long long)in->seq[i], e->magnitude,
                 (unsigned long long)e->magnitude_neighbor, e->m, sqrt(best),
                 (unsigned long long)in->seq[bj], m);
    const double want = ref_level(in->v, ws, i, m);
    if (e->level != want)
        fail_msg("seed %llu: %s at %llu: engine level %.17g, by definition %.17g",
                 (unsigned long long)tu_seed, in->id, (unsigned long long)in->seq[i], e->level,
                 want);
    double hlo = INFINITY, hhi = -INFINITY; /* the history before the subsequence */
    for (size_t k = ws; k < i; k++)
        hlo = fmin(hlo, in->v[k]), hhi = fmax(hhi, in->v[k]);
    const double scale = fmax(1.0, fmax(fabs(hlo), fabs(hhi)));
    const double unit = 0.01 * sqrt((double)m) * fmax(hhi - hlo, 1e-9 * scale);
    const double mag = ref_robust_score(&ms->mag, e->magnitude, unit);
    const double lev = want > 0 ? 1.0 - 2.0 * tss_t4_sf(want / 0.01) : 0.0;
    const double score = isnan(p->range) ? mag : e->shape_score;
    if (!same_or_nan(e->magnitude_score, mag) || !same_or_nan(e->level_score, lev) ||
        !same_or_nan(e->score, score) ||
        e->view != (isnan(p->range) ? TSS_VIEW_MAGNITUDE : TSS_VIEW_SHAPE))
        fail_msg("seed %llu: %s at %llu: engine magnitude score %.17g, level score %.17g, "
                 "score %.17g (view %d); by definition %.17g, %.17g, %.17g",
                 (unsigned long long)tu_seed, in->id, (unsigned long long)in->seq[i],
                 e->magnitude_score, e->level_score, e->score, (int)e->view, mag, lev, score);
    ref_robust_add(&ms->mag, e->magnitude);
    return mag;
}

/* The subsequence that sample k completes (window from ws): the engine's raw score
 * checked against brute force, then through the reference events. */
static void model_score(const st_input *in, const tss_params *p, size_t excl, model_state *ms,
                        size_t ws, size_t k, int armed, expect *x) {
    const uint32_t m = ms->ev.m;
    size_t i = k + 1 - m;
    double best = INFINITY;
    size_t bj = 0;
    for (size_t j = ws; j + excl <= i; j++) {
        double d2 = ref_d2(in->v, m, i, j);
        if (d2 < best)
            best = d2, bj = j;
    }
    if (!isfinite(best))
        return; /* no left neighbour in the window: no score */
    if (ms->next >= ms->nsc || ms->sc[ms->next].start != in->seq[i])
        fail_msg("seed %llu: %s: no engine score for the subsequence at %llu",
                 (unsigned long long)tu_seed, in->id, (unsigned long long)in->seq[i]);
    const st_score *e = &ms->sc[ms->next++];
    size_t j = index_of(in, e->neighbor);
    if (!close_d(e->raw, best, m) || (j != bj && !close_d(sqrt(ref_d2(in->v, m, i, j)), best, m)))
        fail_msg("seed %llu: %s at %llu: engine lnn %.17g (neighbour %llu), brute force %.17g "
                 "(neighbour %llu)",
                 (unsigned long long)tu_seed, in->id, (unsigned long long)in->seq[i], e->raw,
                 (unsigned long long)e->neighbor, sqrt(best), (unsigned long long)in->seq[bj]);
    const double mag = check_views(in, p, ms, e, excl, ws, i, m);
    ref_alert r[3];
    size_t n = ref_events_step(&ms->ev, e->start, e->raw, e->neighbor, mag, k + 1 - ws, armed, r);
    expect_ref(ms, r, n, isnan(p->range) ? p->threshold : p->range, x);
}

/* An automatic m chosen from x[0..n) (tss_stream_choose_m): recheck, a second look on
 * the window, takes only a strong period. *next_check: the window fill of the next look
 * (0: none); *period: the period found. */
static uint32_t choose_m(const double *x, size_t n, const tss_params *p, int recheck,
                         uint32_t *next_check, uint32_t *period) {
    uint32_t m = 0;
    assert_int_equal(tsm_auto_m(NULL, x, n, TSS_AUTO_M_MIN, tss_params_auto_max(p, n),
                                TSS_AUTO_M_FALLBACK, &m, period),
                     TSM_OK);
    double r = 1.0;
    if (*period && recheck) {
        assert_int_equal(tsm_period_strength(NULL, x, n, *period, &r), TSM_OK);
        if (r < TSS_AUTO_M_RECHECK_ACF)
            m = TSS_AUTO_M_FALLBACK, *period = 0;
    }
    uint32_t last = *next_check ? *next_check : p->warmup;
    *next_check = *period || last >= p->window ? 0 : 2 * last < p->window ? 2 * last : p->window;
    return m;
}

/* The m a stream with these parameters starts with for input in (chosen from its first
 * warm-up history when automatic, *next_check set), or 0 when it never gets one. */
static uint32_t model_m(const st_input *in, const tss_params *p, uint32_t *next_check,
                        uint32_t *period) {
    *next_check = *period = 0;
    if (p->subsequence)
        return p->subsequence;
    size_t run = 1;
    while (run < in->n && in->seq[run] == in->seq[run - 1] + 1)
        run++;
    if (run < p->warmup && run == in->n)
        return 0; /* waits for its warm-up history */
    return choose_m(in->v, run < p->warmup ? run : p->warmup, p, 0, next_check, period);
}

/* Replays one input through the definitions; scores: the engine's, in order. */
static void model(tsm_ctx *ctx, const st_input *in, const tss_params *p, const st_scores *scores,
                  expect *x) {
    uint32_t next_check, period, m = model_m(in, p, &next_check, &period);
    model_state ms = {.ev = {.m = m,
                             .threshold = p->threshold,
                             .threshold_end = p->threshold_end,
                             .range = p->range,
                             .left_discord = p->left_discord,
                             .window = p->window}};
    /* the engine's scores of this stream */
    st_score *own = malloc((scores->n + 1) * sizeof *own);
    assert_non_null(own);
    for (size_t k = 0; k < scores->n; k++)
        if (strcmp(scores->v[k].id, in->id) == 0)
            own[ms.nsc++] = scores->v[k];
    ms.sc = own;
    if (m == 0) {
        assert_int_equal(ms.nsc, 0);
        free(own);
        return;
    }
    const size_t W = p->window;
    size_t excl = tss_params_excl(p, m), warm = tss_params_warm(p, m), seg0 = 0, since = 0;
    ms.ev.excl = (uint32_t)excl;
    for (size_t k = 0; k < in->n; k++) {
        if (k > 0 && in->seq[k] != in->seq[k - 1] + 1) {
            ref_alert r[1];
            expect_ref(&ms, r, ref_events_close(&ms.ev, in->seq[k - 1], r), p->threshold, x);
            uint64_t from = in->seq[k - 1] + 1;
            expect_push(x, (tss_alert){.kind = TSS_ALERT_GAP,
                                       .start_seq = from,
                                       .start_timestamp_ns = (int64_t)from * ST_PERIOD,
                                       .length = (uint32_t)(in->seq[k] - from),
                                       .detected_seq = in->seq[k]});
            seg0 = k, since = 0;
        }
        size_t len = k - seg0 + 1, ws = len > W ? k + 1 - W : seg0;
        if (len >= m)
            model_score(in, p, excl, &ms, ws, k, len >= warm, x);
        if (++since >= p->hop && len >= warm) { /* a pass point */
            since = 0;
            if (next_check && k + 1 - ws >= next_check) { /* an automatic m: again? */
                uint32_t nm = choose_m(in->v + ws, k + 1 - ws, p, 1, &next_check, &period);
                if (nm != m) { /* a fresh score history for the new m */
                    ref_alert r[1];
                    expect_ref(&ms, r, ref_events_close(&ms.ev, in->seq[k], r), p->threshold, x);
                    ms.ev.m = m = nm;
                    ms.ev.hist = (ref_history){0};
                    ref_robust_free(&ms.mag);
                    excl = tss_params_excl(p, m), warm = tss_params_warm(p, m);
                    ms.ev.excl = (uint32_t)excl;
                    ms.switched = 1;
                }
            }
            model_pass(ctx, p, m, excl, &ms, in->v + ws, k + 1 - ws, in->seq[ws], in->seq[k], x);
        }
    }
    if (ms.next != ms.nsc)
        fail_msg("seed %llu: %s: %zu engine scores for no subsequence of the model",
                 (unsigned long long)tu_seed, in->id, ms.nsc - ms.next);
    ref_robust_free(&ms.mag);
    free(own);
    free(ms.pub);
    free(ms.motif);
}

/* ---- comparison -------------------------------------------------------------------- */

static const char *const kind_names[TSS_ALERT_KINDS] = {"",    "DISCORD", "LEFT_DISCORD", "MOTIF",
                                                        "GAP", "ANOMALY", "ANOMALY_END"};

/* Whether engine alert g is model alert w (see the top of the file). */
static int matches(const tss_alert *w, const tss_alert *g) {
    const int scored = w->kind != TSS_ALERT_MOTIF && w->kind != TSS_ALERT_GAP;
    return w->kind == g->kind && w->start_seq == g->start_seq && w->length == g->length &&
           w->neighbor_seq == g->neighbor_seq && w->detected_seq == g->detected_seq &&
           w->event_start_seq == g->event_start_seq && w->event_end_seq == g->event_end_seq &&
           (!scored || w->tail == g->tail) &&
           (w->kind == TSS_ALERT_GAP || fabs(w->distance - g->distance) <= REL * w->distance) &&
           (!scored || fabs(w->score - g->score) <= TOL) &&
           (!scored || (w->view == g->view && fabs(w->shape_score - g->shape_score) <= TOL)) &&
           (w->kind == TSS_ALERT_MOTIF || w->kind == TSS_ALERT_GAP ||
            w->threshold == g->threshold) &&
           (g->start_timestamp_ns == 0 ||
            g->start_timestamp_ns == (int64_t)g->start_seq * ST_PERIOD);
}

/* Compares the log of one stream with the model, kind by kind in the order they came;
 * adds the alerts of each kind to counts. */
static void check_stream(tsm_ctx *ctx, const st_env *env, const st_input *in, const tss_params *p,
                         size_t counts[TSS_ALERT_KINDS]) {
    expect x = {0};
    model(ctx, in, p, &env->scores, &x);
    for (int kind = 1; kind < TSS_ALERT_KINDS; kind++) {
        size_t n = 0;
        st_alert *got = st_select(&env->log, in->id, kind, &n);
        const expect_list *w = &x.kind[kind];
        counts[kind] += n;
        for (size_t k = 0; k < n || k < w->n; k++) {
            if (k < n && k < w->n && matches(&w->v[k], &got[k].a))
                continue;
            for (size_t q = 0; q < w->n; q++)
                print_message("model  %s at %llu d %.17g s %.17g [%llu, %llu) det %llu\n",
                              kind_names[kind], (unsigned long long)w->v[q].start_seq,
                              w->v[q].distance, w->v[q].score,
                              (unsigned long long)w->v[q].event_start_seq,
                              (unsigned long long)w->v[q].event_end_seq,
                              (unsigned long long)w->v[q].detected_seq);
            for (size_t q = 0; q < n; q++)
                print_message("engine %s at %llu d %.17g s %.17g [%llu, %llu) det %llu\n",
                              kind_names[kind], (unsigned long long)got[q].a.start_seq,
                              got[q].a.distance, got[q].a.score,
                              (unsigned long long)got[q].a.event_start_seq,
                              (unsigned long long)got[q].a.event_end_seq,
                              (unsigned long long)got[q].a.detected_seq);
            fail_msg("seed %llu: %s: %s alert %zu differs (%zu from the engine, %zu modelled)",
                     (unsigned long long)tu_seed, in->id, kind_names[kind], k, n, w->n);
        }
        free(got);
    }
    expect_free(&x);
}

/* Parameters for a test stream: window W, fixed m (0: auto), hop, excl, range; a
 * warm-up of half the window, LEFT_DISCORD on (a per-subsequence alert to compare). */
static tss_params params(uint32_t W, uint32_t m, uint32_t hop, uint32_t excl, double range) {
    tss_params p = tss_params_default();
    p.window = W, p.subsequence = m, p.hop = hop, p.excl = excl, p.range = range;
    p.warmup = W / 2;
    p.left_discord = 1;
    return p;
}

/* Four streams of different shapes (scores and a fixed range, an automatic m, a gap,
 * constants, planted bursts, thresholds that differ), fed in random batches and ticks:
 * every alert against the model. */
static void test_alerts_equal_model(void **state) {
    (void)state;
    tu_case_seed(777);
    tsm_ctx *ctx = tu_ctx();
    st_env env = {.keep_scores = 1};
    tss_params pa = params(256, 16, 32, 0, NAN), pb = params(96, 8, 96, 12, 3.0),
               pc = params(200, 10, 25, 0, NAN), pd = params(384, 0, 64, 0, NAN),
               pe = params(1024, 0, 64, 0, NAN);
    pc.motif = 0, pc.left_discord = 0, pc.threshold = 0.99, pc.threshold_end = 0.9;
    pd.warmup = 192;
    pe.warmup = 96, pe.motif = 0;
    st_env_add(&env, "a", pa);
    st_env_add(&env, "b", pb);
    st_env_add(&env, "c", pc);
    st_env_add(&env, "d", pd);
    st_env_add(&env, "e", pe);
    st_input in[5] = {st_make_input("a", 2500, 0, 1400, 45), st_make_input("b", 1200, 1000, 0, 0),
                      st_make_input("c", 2200, 7, 350, 3), st_make_input("d", 2000, 5, 0, 0),
                      st_make_input("e", 1500, 0, 0, 0)};
    for (size_t k = 0; k < in[3].n; k++) /* d: a period of 24 under its walk */
        in[3].v[k] += 4.0 * sin(2 * M_PI * (double)k / 24.0);
    for (size_t k = 0; k < in[4].n; k++) /* e: a period of 60, too long for its warm-up */
        in[4].v[k] = 0.05 * in[4].v[k] + 8.0 * sin(2 * M_PI * (double)k / 60.0);
    tss_engine *e = st_engine(&env, 2, 0);
    st_feed(e, in, 5, 90, 0.3);
    size_t counts[TSS_ALERT_KINDS] = {0};
    check_stream(ctx, &env, &in[0], &pa, counts);
    check_stream(ctx, &env, &in[1], &pb, counts);
    check_stream(ctx, &env, &in[2], &pc, counts);
    check_stream(ctx, &env, &in[3], &pd, counts);
    check_stream(ctx, &env, &in[4], &pe, counts);
    print_message("alerts: discord %zu left %zu motif %zu gap %zu anomaly %zu end %zu\n", counts[1],
                  counts[2], counts[3], counts[4], counts[5], counts[6]);
    /* the scenario must exercise every kind (but RESET: the senders never restart here;
     * test_epochs_and_resets) */
    for (int kind = 1; kind < TSS_ALERT_KINDS; kind++)
        if (counts[kind] == 0 && kind != TSS_ALERT_RESET)
            fail_msg("seed %llu: no %s alert: the case tests nothing", (unsigned long long)tu_seed,
                     kind_names[kind]);
    tss_engine_counters c;
    tss_engine_counters_get(e, &c);
    assert_int_equal(c.samples, 2500 + 1200 + 2200 + 2000 + 1500);
    assert_int_equal(c.alerts[TSS_ALERT_GAP], 2);
    assert_int_equal(tss_engine_pending(e), 0);
    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "a", &info), 0);
    assert_int_equal(info.window_fill, 256);
    assert_int_equal(info.gaps, 1);
    assert_int_equal(info.next_seq, 2500 + 45);
    assert_true(info.calibrated && isfinite(info.range));
    assert_false(info.subsequence_auto);
    assert_int_equal(tss_engine_stream_find(e, "d", &info), 0);
    assert_true(info.subsequence_auto);
    uint32_t next_check, period;
    assert_int_equal(info.params.subsequence, model_m(&in[3], &pd, &next_check, &period));
    assert_int_equal(info.period, info.params.subsequence); /* it found the period */
    assert_true(info.period >= 23 && info.period <= 25);
    /* e found none in its warm-up (the fallback), then its period on the window */
    assert_int_equal(model_m(&in[4], &pe, &next_check, &period), TSS_AUTO_M_FALLBACK);
    assert_true(period == 0 && next_check == 192);
    assert_int_equal(tss_engine_stream_find(e, "e", &info), 0);
    assert_true(info.period >= 59 && info.period <= 61);
    assert_int_equal(info.params.subsequence, info.period);
    tss_engine_destroy(&e);
    for (int s = 0; s < 5; s++)
        st_input_free(&in[s]);
    st_env_free(&env);
    tsm_ctx_destroy(&ctx);
}

static int by_start(const tss_alert *x, const tss_alert *y) {
    if (x->start_seq != y->start_seq)
        return x->start_seq < y->start_seq ? -1 : 1;
    return (x->neighbor_seq > y->neighbor_seq) - (x->neighbor_seq < y->neighbor_seq);
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
           memcmp(&x->threshold, &y->threshold, sizeof x->threshold) == 0 &&
           memcmp(&x->score, &y->score, sizeof x->score) == 0 &&
           x->event_start_seq == y->event_start_seq && x->event_end_seq == y->event_end_seq &&
           x->detected_seq == y->detected_seq && x->tail == y->tail && x->view == y->view &&
           memcmp(&x->shape_score, &y->shape_score, sizeof x->shape_score) == 0 &&
           memcmp(&x->magnitude_score, &y->magnitude_score, sizeof x->magnitude_score) == 0 &&
           memcmp(&x->level_score, &y->level_score, sizeof x->level_score) == 0 &&
           memcmp(&x->magnitude, &y->magnitude, sizeof x->magnitude) == 0 &&
           x->magnitude_neighbor_seq == y->magnitude_neighbor_seq &&
           memcmp(&x->level, &y->level, sizeof x->level) == 0;
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

/* With overlapped passes a stream's online alerts are not held for its passes in
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
 * in so far, no gap, a fixed range so that every pass runs PD3) is seen after exactly
 * the passes at pass points before c (the first at max(warm-up, hop) samples, then
 * every hop), not after those the tick runs later. A pass's DISCORDs and MOTIF come
 * after that pass. Also checks the processed and pending counters and the phase
 * timers' nesting. */
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
    const uint64_t hop = l.p.hop, m = l.p.subsequence;
    const uint64_t first =
        tss_params_warm(&l.p, (uint32_t)m) > hop ? tss_params_warm(&l.p, (uint32_t)m) : hop;
    size_t left = 0, late = 0;
    for (size_t k = 0; k < l.n; k++) {
        const tss_alert *a = &l.a[k];
        if (k > 0 && l.passes[k] < l.passes[k - 1])
            fail_msg("seed %llu: alert %zu came after a later pass", (unsigned long long)tu_seed,
                     k);
        if (a->kind == TSS_ALERT_DISCORD || a->kind == TSS_ALERT_MOTIF) {
            assert_true(l.passes[k] >= 1); /* from a pass, counted */
            continue;
        }
        if (a->kind != TSS_ALERT_LEFT_DISCORD)
            continue; /* ANOMALY, ANOMALY_END: the same round as a LEFT_DISCORD */
        uint64_t c = a->start_seq - 1000 + m, want = c <= first ? 0 : (c - first - 1) / hop + 1;
        if (l.passes[k] != want)
            fail_msg("seed %llu: LEFT_DISCORD at %llu (sample %llu) came after %llu passes, "
                     "want %llu",
                     (unsigned long long)tu_seed, (unsigned long long)a->start_seq,
                     (unsigned long long)c, (unsigned long long)l.passes[k],
                     (unsigned long long)want);
        left++;
        late += c > first + hop; /* a pass point lay before it in the window's life */
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
    assert_int_equal(c.passes_discord, (in.n - first) / hop + 1);
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

/* Ingests samples [from, from + n) of in as stream id in batches of 50 and ticks. */
static void feed_range(tss_engine *e, const st_input *in, size_t from, size_t n) {
    char err[256];
    for (size_t k = from; k < from + n; k += 50) {
        size_t c = from + n - k < 50 ? from + n - k : 50;
        assert_int_equal(tss_engine_ingest(e, in->id, in->seq[k], NULL,
                                           (int64_t)in->seq[k] * ST_PERIOD, ST_PERIOD, in->v + k,
                                           c),
                         TSS_OK);
    }
    if (tss_engine_tick(e, err, sizeof err) != 0)
        fail_msg("tick: %s", err);
}

/* Recalibration restarts the score history (and an automatic m with its window);
 * reparam applies changed parameters: a range at once, new thresholds with a fresh
 * history, a new window with a restart. */
static void test_reparam_recalibrate(void **state) {
    (void)state;
    tu_case_seed(5);
    st_env env = {0};
    tss_params p = params(256, 8, 64, 0, NAN);
    p.warmup = 64;
    st_env_add(&env, "r/1", p);
    tss_engine *e = st_engine(&env, 2, 0);
    st_input in = st_make_input("r/1", 1500, 0, 0, 0);
    tss_stream_info info;
    /* 100 samples: warm (64) but 85 raw scores, fewer than TSS_CALIB_MIN; then 350 more */
    feed_range(e, &in, 0, 100);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_false(info.calibrated);
    assert_true(isnan(info.range));
    feed_range(e, &in, 100, 350);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_true(info.calibrated && isfinite(info.range) && info.range > 0);
    assert_true(isfinite(info.last_score));
    /* recalibrate: only matching prefixes; a fresh history is not calibrated */
    assert_int_equal(tss_engine_recalibrate(e, "q"), 0);
    assert_int_equal(tss_engine_recalibrate(e, "r/"), 1);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_false(info.calibrated);
    assert_true(isnan(info.range) && isnan(info.last_score));
    assert_int_equal(info.window_fill, 256); /* a fixed m keeps its window */
    feed_range(e, &in, 450, 300);            /* TSS_ROBUST_MIN magnitudes arm the events again */
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_true(info.calibrated);
    assert_int_equal(tss_engine_reparam(e), 0); /* nothing changed */
    /* a new threshold: a fresh history */
    env.params[0].threshold = 0.999;
    assert_int_equal(tss_engine_reparam(e), 1);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_false(info.calibrated);
    assert_true(info.params.threshold == 0.999 && info.window_fill == 256);
    /* a fixed range applies at once, without a restart */
    env.params[0].range = 4.0;
    assert_int_equal(tss_engine_reparam(e), 1);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_true(info.calibrated && info.range == 4.0 && info.window_fill == 256);
    /* a new window restarts it */
    env.params[0].window = 128;
    assert_int_equal(tss_engine_reparam(e), 1);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_int_equal(info.window_fill, 0);
    assert_int_equal(info.params.window, 128);
    feed_range(e, &in, 750, 200);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_int_equal(info.window_fill, 128);
    /* an automatic m: chosen from the first warm-up history, forgotten by recalibrate */
    env.params[0].subsequence = 0;
    assert_int_equal(tss_engine_reparam(e), 1);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_true(info.subsequence_auto && info.params.subsequence == 0 && info.window_fill == 0);
    feed_range(e, &in, 950, 63);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_int_equal(info.params.subsequence, 0); /* 63 < warmup: waiting */
    assert_int_equal(info.window_fill, 0);
    assert_int_equal(tss_engine_pending(e), 63);
    feed_range(e, &in, 1013, 100);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    uint32_t m = 0, period = 0;
    assert_int_equal(tsm_auto_m(NULL, in.v + 950, 64, TSS_AUTO_M_MIN,
                                tss_params_auto_max(&env.params[0], 64), TSS_AUTO_M_FALLBACK, &m,
                                &period),
                     TSM_OK);
    assert_int_equal(info.params.subsequence, m);
    assert_int_equal(info.period, period);
    assert_int_equal(info.window_fill, 128);
    assert_int_equal(tss_engine_pending(e), 0);
    assert_int_equal(tss_engine_recalibrate(e, ""), 1);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_true(info.params.subsequence == 0 && info.window_fill == 0);
    /* refused or invalid parameters leave the stream as it is */
    env.params[0].subsequence = 1;
    assert_int_equal(tss_engine_reparam(e), 0);
    assert_int_equal(tss_engine_stream_find(e, "r/1", &info), 0);
    assert_true(info.subsequence_auto);
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
    assert_true(isnan(p.range) && p.window == 4096 && p.subsequence == 0 && p.hop == 1024);
    assert_true(p.warmup == 300 && p.threshold == 0.997 && p.threshold_end == 0.98);
    assert_true(p.motif == 1 && p.left_discord == 0);
    p.window = 100, p.subsequence = 64, p.warmup = 100;
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
    p = tss_params_default(), p.warmup = 5000;
    assert_int_equal(tss_params_check(&p, err, sizeof err), -1);
    assert_non_null(strstr(err, "warmup must be <= window"));
    p = tss_params_default(), p.warmup = 20; /* auto needs three periods of 8 */
    assert_int_equal(tss_params_check(&p, err, sizeof err), -1);
    assert_non_null(strstr(err, "warmup must be >= 24"));
    p.subsequence = 8; /* a fixed m does not */
    assert_int_equal(tss_params_check(&p, err, sizeof err), 0);
    p = tss_params_default(), p.threshold = 1.0;
    assert_int_equal(tss_params_check(&p, err, sizeof err), -1);
    assert_non_null(strstr(err, "threshold must be"));
    p = tss_params_default(), p.threshold_end = 0.999;
    assert_int_equal(tss_params_check(&p, err, sizeof err), -1);
    assert_non_null(strstr(err, "threshold_end"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params_check),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_alerts_equal_model),
        cmocka_unit_test(test_threads_and_batching),
        cmocka_unit_test(test_reparam_recalibrate),
        cmocka_unit_test(test_stream_order_independent_of_batching),
        cmocka_unit_test(test_online_before_passes),
    };
    return TU_RUN_GROUP("stream_engine", tests, NULL, NULL);
}
