/* SPDX-License-Identifier: Apache-2.0 */
/* stream_checkpoint_test.c - tss_engine_save / tss_engine_load.
 *
 * A checkpoint taken mid-stream (with samples still staged, a gap pending, an event
 * open, the score histories of both the shape and the magnitude view, an automatic m
 * chosen and one still waiting for its warm-up) and loaded into a fresh engine
 * continues exactly like the engine that was never stopped: the same alerts and score
 * lines (every view's fields) for the same further samples, positions and event extents
 * exact, distances within 1e-9 relative (the online state is rebuilt from the window,
 * so its rounding may differ in the last bits) and scores within 1e-9 - the magnitude
 * view's plain distance, whose cancellation shows that rounding near 0, within 1e-6 of
 * its subsequences' norms (a neighbour that differs only in a tie within that, its
 * score within 1e-5 then: same_magnitude_view); the magnitude history comes back bit
 * for bit (a wrapped ring too: saving the loaded engine gives the same bytes). The
 * "open event" is test_magnitude_history_round_trip's. A version 4 file (built here from a version
 * 5 one by an independent walk of the layout, dropping what version 5 added) still loads: its
 * streams are those of the version 5 file with an empty magnitude history, so their magnitude
 * scores restart their TSS_ROBUST_MIN-value history, and so does the score of the last
 * subsequence (STATUS last_score); only version 6 (version 5's layout) is written. Hostile
 * files - every truncation of a small checkpoint, random byte flips, byte flips with a
 * recomputed checksum (so that the field checks, not the CRC, must catch them), a wrong
 * version, each field of the magnitude history and the peak's views out of its range -
 * are refused with a message and leave the engine empty, or load into a state the
 * engine can run on; nothing crashes (the suite also runs under ASan and UBSan). More
 * streams than max_streams load the first ones; a read that fails is reported as such
 * (read_errno), not as corruption. */
#define _GNU_SOURCE /* fopencookie */
#include "engine_checkpoint.h"
#include "engine_impl.h" /* the streams' magnitude histories, compared field by field */
#include "stream_testutil.h"
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Saves e into a malloc'ed buffer. */
static unsigned char *save_bytes(tss_engine *e, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    char err[256] = "";
    if (tss_engine_save(e, f, err, sizeof err) != 0)
        fail_msg("save: %s", err);
    assert_int_equal(fclose(f), 0);
    return (unsigned char *)buf;
}

/* Loads len bytes into e; returns tss_engine_load's result (message in err). */
static int load_bytes(tss_engine *e, const unsigned char *buf, size_t len, char *err,
                      unsigned errlen) {
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    rewind(f);
    int rc = tss_engine_load(e, f, err, errlen);
    fclose(f);
    return rc;
}

/* The samples [from, to) of an input, as an input of their own. */
static st_input part(const st_input *in, size_t from, size_t to) {
    return (st_input){in->id, in->v + from, in->seq + from, to - from};
}

static void assert_same_info(tss_engine *a, tss_engine *b, const char *id) {
    tss_stream_info x, y;
    assert_int_equal(tss_engine_stream_find(a, id, &x), 0);
    assert_int_equal(tss_engine_stream_find(b, id, &y), 0);
    assert_int_equal(x.samples, y.samples);
    assert_int_equal(x.rejected, y.rejected);
    assert_int_equal(x.next_seq, y.next_seq);
    assert_int_equal(x.window_fill, y.window_fill);
    assert_int_equal(x.gaps, y.gaps);
    assert_int_equal(x.calibrated, y.calibrated);
    assert_true((isnan(x.range) && isnan(y.range)) || x.range == y.range);
    assert_int_equal(x.params.subsequence, y.params.subsequence);
    assert_int_equal(x.subsequence_auto, y.subsequence_auto);
    assert_int_equal(x.period, y.period);
    assert_int_equal(x.event_open, y.event_open);
    assert_int_equal(x.events, y.events);
    assert_memory_equal(x.alerts, y.alerts, sizeof x.alerts);
    assert_int_equal(x.params.window, y.params.window);
    assert_int_equal(x.params.excl, y.params.excl);
}

/* Whether x and y agree: both NAN, or within rel of the larger magnitude (0: equal). */
static int near_rel(double x, double y, double rel) {
    return (isnan(x) && isnan(y)) || x == y || fabs(x - y) <= rel * fmax(fabs(x), fabs(y));
}

/* Whether scores x and y agree within 1e-9, or are both NAN. */
static int near_score(double x, double y) {
    return (isnan(x) && isnan(y)) || fabs(x - y) <= 1e-9;
}

/* Whether magnitude scores x and y of distances dx, dy agree: within 1e-9 when the
 * distances are the same, else within 1e-5 (their rounding, below, through the robust
 * z-score: up to 0.375 of it over the history's spread). */
static int near_magnitude_score(double x, double y, double dx, double dy) {
    return near_score(x, y) || (dx != dy && fabs(x - y) <= 1e-5);
}

/* The samples fed to both runs, to judge the magnitude view's near ties. */
typedef struct {
    const st_input *in;
    size_t nin;
} fed;

/* The sum of squares of the m samples from sequence number seq of stream id, and
 * their values into x (m at most 64); -1 when fed does not hold them all. */
static double subsequence(const fed *f, const char *id, uint64_t seq, uint32_t m, double *x) {
    for (size_t k = 0; k < f->nin; k++) {
        const st_input *in = &f->in[k];
        if (strcmp(in->id, id) != 0)
            continue;
        size_t lo = 0, hi = in->n; /* the first sample at or after seq */
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (in->seq[mid] < seq)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (m > 64 || lo + m > in->n || in->seq[lo] != seq || in->seq[lo + m - 1] != seq + m - 1)
            return -1;
        double ss = 0;
        for (uint32_t j = 0; j < m; j++)
            x[j] = in->v[lo + j], ss += x[j] * x[j];
        return ss;
    }
    return -1;
}

/* Whether the magnitude view of subsequence (id, start, m) agrees in two runs: its
 * distances dx, dy and neighbours nx, ny. The plain distance comes from
 * sum x^2 + sum y^2 - 2 QT with QT kept incrementally, which a restore rebuilds from the
 * window: its rounding (cancellation) is about eps times the sums of squares, so the
 * distances agree within 1e-6 sqrt(sum x^2 + sum y^2) (and 1e-9 relative), and a
 * different neighbour is the same minimum when the two are a tie within that: their
 * brute-force distances from the samples fed agree. */
static int same_magnitude_view(const fed *f, const char *id, uint64_t start, uint32_t m, double dx,
                               double dy, uint64_t nx, uint64_t ny) {
    if (isnan(dx) || isnan(dy) || isinf(dx) || isinf(dy))
        return nx == ny && ((isnan(dx) && isnan(dy)) || dx == dy);
    double xs[64], ys[64], zs[64];
    const double sx = subsequence(f, id, start, m, xs), sy = subsequence(f, id, nx, m, ys);
    if (sx < 0 || sy < 0)
        return nx == ny && near_rel(dx, dy, 1e-9);
    const double tol = 1e-9 * fmax(fabs(dx), fabs(dy)) + 1e-6 * sqrt(sx + sy);
    if (fabs(dx - dy) > tol)
        return 0;
    if (nx == ny)
        return 1;
    if (subsequence(f, id, ny, m, zs) < 0)
        return 0;
    double d2x = 0, d2y = 0; /* brute force, to each neighbour */
    for (uint32_t j = 0; j < m; j++)
        d2x += (xs[j] - ys[j]) * (xs[j] - ys[j]), d2y += (xs[j] - zs[j]) * (xs[j] - zs[j]);
    return fabs(sqrt(d2x) - sqrt(d2y)) <= tol;
}

/* The first field (its name) in which an alert after a restore differs from the
 * uninterrupted run's, beyond the tolerances above; NULL when none. */
static const char *alert_diff(const fed *fd, const st_alert *x, const st_alert *y) {
    const tss_alert *a = &x->a, *b = &y->a;
    const struct {
        const char *name;
        int same;
    } f[] = {
        {"id", strcmp(x->id, y->id) == 0},
        {"kind", a->kind == b->kind},
        {"start_seq", a->start_seq == b->start_seq},
        {"neighbor_seq", a->neighbor_seq == b->neighbor_seq},
        {"start_timestamp_ns", a->start_timestamp_ns == b->start_timestamp_ns},
        {"length", a->length == b->length},
        {"distance", near_rel(a->distance, b->distance, 1e-9)},
        {"threshold", near_rel(a->threshold, b->threshold, 1e-9)},
        {"score", a->view == TSS_VIEW_MAGNITUDE
                      ? near_magnitude_score(a->score, b->score, a->magnitude, b->magnitude)
                      : near_score(a->score, b->score)},
        {"event_start_seq", a->event_start_seq == b->event_start_seq},
        {"event_end_seq", a->event_end_seq == b->event_end_seq},
        {"detected_seq", a->detected_seq == b->detected_seq},
        {"tail", a->tail == b->tail},
        {"seq", a->seq == b->seq},
        {"view", a->view == b->view},
        {"shape_score", near_score(a->shape_score, b->shape_score)},
        {"magnitude_score",
         near_magnitude_score(a->magnitude_score, b->magnitude_score, a->magnitude, b->magnitude)},
        {"level_score", near_score(a->level_score, b->level_score)},
        {"magnitude and its neighbour",
         same_magnitude_view(fd, x->id, a->start_seq, a->length, a->magnitude, b->magnitude,
                             a->magnitude_neighbor_seq, b->magnitude_neighbor_seq)},
        {"level", near_rel(a->level, b->level, 1e-9)},
    };
    for (size_t k = 0; k < sizeof f / sizeof *f; k++)
        if (!f[k].same)
            return f[k].name;
    return NULL;
}

/* The first field in which a score line after a restore differs from the uninterrupted
 * run's; NULL when none. Every subsequence has one, quiet ones too, whose z-normalised
 * distance amplifies the rounding of the rebuilt online state: within 1e-6 relative or
 * 1e-4 absolute (the alerts' large ones within 1e-9 relative). */
static const char *score_diff(const fed *fd, const st_score *x, const st_score *y) {
    const struct {
        const char *name;
        int same;
    } f[] = {
        {"id", strcmp(x->id, y->id) == 0},
        {"start", x->start == y->start},
        {"m", x->m == y->m},
        {"neighbor", x->neighbor == y->neighbor},
        {"raw", near_rel(x->raw, y->raw, 1e-6) || fabs(x->raw - y->raw) <= 1e-4},
        {"magnitude and its neighbour",
         same_magnitude_view(fd, x->id, x->start, x->m, x->magnitude, y->magnitude,
                             x->magnitude_neighbor, y->magnitude_neighbor)},
        {"level", near_rel(x->level, y->level, 1e-9)},
        {"score", x->view == TSS_VIEW_MAGNITUDE
                      ? near_magnitude_score(x->score, y->score, x->magnitude, y->magnitude)
                      : near_score(x->score, y->score)},
        {"shape_score", near_score(x->shape_score, y->shape_score)},
        {"magnitude_score",
         near_magnitude_score(x->magnitude_score, y->magnitude_score, x->magnitude, y->magnitude)},
        {"level_score", near_score(x->level_score, y->level_score)},
        {"view", x->view == y->view},
    };
    for (size_t k = 0; k < sizeof f / sizeof *f; k++)
        if (!f[k].same)
            return f[k].name;
    return NULL;
}

/* The alerts and score lines a and b produced from a_from and b_from on, from the
 * samples in fd, are the same (count and content). */
static void assert_same_output(const fed *fd, const st_env *a, size_t a_from, size_t a_scores_from,
                               const st_env *b, size_t b_from, size_t b_scores_from) {
    const size_t n = a->log.n - a_from, ns = a->scores.n - a_scores_from;
    assert_int_equal(b->log.n - b_from, n);
    assert_int_equal(b->scores.n - b_scores_from, ns);
    for (size_t k = 0; k < n; k++) {
        const st_alert *x = &a->log.v[a_from + k], *y = &b->log.v[b_from + k];
        const char *field = alert_diff(fd, x, y);
        if (field)
            fail_msg("seed %llu: alert %zu after the checkpoint differs in %s: %s kind %d at %llu "
                     "(distance %.17g, magnitude %.17g, its neighbour %llu) vs restored %s kind "
                     "%d at %llu (%.17g, %.17g, %llu)",
                     (unsigned long long)tu_seed, k, field, x->id, x->a.kind,
                     (unsigned long long)x->a.start_seq, x->a.distance, x->a.magnitude,
                     (unsigned long long)x->a.magnitude_neighbor_seq, y->id, y->a.kind,
                     (unsigned long long)y->a.start_seq, y->a.distance, y->a.magnitude,
                     (unsigned long long)y->a.magnitude_neighbor_seq);
    }
    for (size_t k = 0; k < ns; k++) {
        const st_score *x = &a->scores.v[a_scores_from + k], *y = &b->scores.v[b_scores_from + k];
        const char *field = score_diff(fd, x, y);
        if (field)
            fail_msg("seed %llu: score %zu after the checkpoint differs in %s: %s at %llu (raw "
                     "%.17g, neighbour %llu, magnitude %.17g, its neighbour %llu, its score "
                     "%.17g) vs restored %s at %llu (%.17g, %llu, %.17g, %llu, %.17g)",
                     (unsigned long long)tu_seed, k, field, x->id, (unsigned long long)x->start,
                     x->raw, (unsigned long long)x->neighbor, x->magnitude,
                     (unsigned long long)x->magnitude_neighbor, x->magnitude_score, y->id,
                     (unsigned long long)y->start, y->raw, (unsigned long long)y->neighbor,
                     y->magnitude, (unsigned long long)y->magnitude_neighbor, y->magnitude_score);
    }
}

/* The stream id of engine e (internal: its detection state). */
static tss_stream *stream_of(tss_engine *e, const char *id) {
    tss_stream *s = tss_registry_find(&e->reg, id);
    assert_non_null(s);
    return s;
}

/* The i-th oldest value of a magnitude history. */
static double mag_at(const tss_robust *g, uint32_t i) {
    return g->ring[(g->head + TSS_ROBUST_HISTORY - g->n + i) % TSS_ROBUST_HISTORY];
}

/* x and y hold the same magnitude history (the values in arrival order, the refresh
 * count, the last refresh's median and MAD) and the same event peak: bit for bit when
 * exact, else the numbers within 1e-9 relative or 1e-6 of the largest value held (the
 * distances computed after a restore come from an online state rebuilt from the
 * window, and the plain distance's cancellation, see same_magnitude_view, shows near
 * 0). */
static void assert_same_magnitude(const tss_stream *x, const tss_stream *y, int exact) {
    const tss_robust *g = &x->det.mag, *h = &y->det.mag;
    assert_int_equal(g->n, h->n);
    assert_int_equal(g->since, h->since);
    assert_int_equal(g->ready, h->ready);
    assert_int_equal(x->det.open, y->det.open);
    const tss_alert *p = &x->det.peak, *q = &y->det.peak;
    if (x->det.open) {
        assert_int_equal(p->view, q->view);
        if (exact) /* (else a near tie may be another: same_magnitude_view judges it in
                    * the alerts) */
            assert_int_equal(p->magnitude_neighbor_seq, q->magnitude_neighbor_seq);
    }
    const size_t nv = 2 + (size_t)g->n + (x->det.open ? 5 : 0);
    double *u = malloc(2 * nv * sizeof *u), *v = u + nv;
    assert_non_null(u);
    u[0] = g->med, u[1] = g->mad, v[0] = h->med, v[1] = h->mad;
    for (uint32_t i = 0; i < g->n; i++)
        u[2 + i] = mag_at(g, i), v[2 + i] = mag_at(h, i);
    if (x->det.open) {
        const double pu[5] = {p->shape_score, p->magnitude_score, p->level_score, p->magnitude,
                              p->level},
                     qv[5] = {q->shape_score, q->magnitude_score, q->level_score, q->magnitude,
                              q->level};
        memcpy(u + 2 + g->n, pu, sizeof pu), memcpy(v + 2 + g->n, qv, sizeof qv);
    }
    double top = 1.0;
    for (uint32_t i = 0; i < g->n; i++)
        top = fmax(top, fmax(fabs(u[2 + i]), fabs(v[2 + i])));
    for (size_t i = 0; i < nv; i++)
        if (exact ? memcmp(&u[i], &v[i], sizeof *u) != 0
                  : !near_rel(u[i], v[i], 1e-9) && !(fabs(u[i] - v[i]) <= 1e-6 * top))
            fail_msg("%s: magnitude history field %zu of %zu (0: median, 1: MAD, then the values "
                     "oldest first, then the peak's views): %.17g vs %.17g",
                     x->id, i, nv, u[i], v[i]);
    free(u);
}

static void test_resume_equals_uninterrupted(void **state) {
    (void)state;
    tu_case_seed(2024);
    st_env env_a = {0}, env_b = {0};
    tss_params p1 = tss_params_default(), p2 = tss_params_default(), p3 = tss_params_default();
    p1.window = 128, p1.subsequence = 12, p1.hop = 32, p1.warmup = 64, p1.left_discord = 1;
    p1.threshold = 0.95, p1.threshold_end = 0.8;
    p2.window = 80, p2.subsequence = 8, p2.hop = 80, p2.range = 3.0, p2.excl = 10;
    p2.warmup = 40;
    p3.window = 256, p3.hop = 64, p3.warmup = 96, p3.left_discord = 1; /* automatic m */
    st_env_add(&env_a, "one", p1), st_env_add(&env_a, "two", p2), st_env_add(&env_a, "three", p3);
    st_env_add(&env_b, "one", p1), st_env_add(&env_b, "two", p2), st_env_add(&env_b, "three", p3);
    env_a.keep_scores = env_b.keep_scores = 1;
    st_input in[3] = {st_make_input("one", 1400, 0, 760, 9), st_make_input("two", 1100, 50, 0, 0),
                      st_make_input("three", 1300, 0, 0, 0)};
    tss_engine *a = st_engine(&env_a, 2, 0);
    /* before the checkpoint: 700 samples with ticks, then some staged only (across the
     * gap of "one", so a GAP is pending too) */
    st_input first[3] = {part(&in[0], 0, 700), part(&in[1], 0, 700), part(&in[2], 0, 700)};
    st_feed(a, first, 3, 60, 0.4);
    for (int s = 0; s < 2; s++) {
        size_t k0 = 700, k1 = s == 0 ? 761 : 740; /* "one": 700..760, then past the gap */
        assert_int_equal(tss_engine_ingest(a, in[s].id, in[s].seq[k0], NULL,
                                           (int64_t)in[s].seq[k0] * ST_PERIOD, ST_PERIOD,
                                           in[s].v + k0, k1 - k0),
                         TSS_OK);
    }
    assert_int_equal(tss_engine_ingest(a, "one", in[0].seq[761], NULL,
                                       (int64_t)in[0].seq[761] * ST_PERIOD, ST_PERIOD,
                                       in[0].v + 761, 20),
                     TSS_OK);
    assert_true(tss_engine_pending(a) > 0);
    /* what the checkpoint must carry: magnitude histories that score (ready), one
     * between two refreshes (an open event: test_magnitude_history_round_trip) */
    const tss_robust *g1 = &stream_of(a, "one")->det.mag;
    assert_true(g1->ready && g1->since > 0);
    assert_true(stream_of(a, "three")->det.mag.ready);
    size_t len = 0;
    unsigned char *buf = save_bytes(a, &len);
    assert_int_equal(buf[8], 6); /* the version written */
    tss_engine *b = st_engine(&env_b, 2, 0);
    char err[256] = "";
    if (load_bytes(b, buf, len, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    assert_int_equal(tss_engine_pending(a), tss_engine_pending(b));
    assert_int_equal(tss_engine_stream_count(b), 3);
    const char *ids[3] = {"one", "two", "three"};
    for (int k = 0; k < 3; k++) {
        assert_same_info(a, b, ids[k]);
        assert_same_magnitude(stream_of(a, ids[k]), stream_of(b, ids[k]), 1);
    }
    /* the same further samples, batched the same way, into both */
    const size_t before = env_a.log.n, scores_before = env_a.scores.n;
    st_input rest[3] = {part(&in[0], 781, in[0].n), part(&in[1], 740, in[1].n),
                        part(&in[2], 700, in[2].n)};
    tu_rng_init(77);
    st_feed(a, rest, 3, 50, 0.5);
    tu_rng_init(77);
    st_feed(b, rest, 3, 50, 0.5);
    size_t n = env_a.log.n - before;
    assert_true(n > 10);
    const fed fd = {in, 3};
    assert_same_output(&fd, &env_a, before, scores_before, &env_b, 0, 0);
    /* the magnitude score (the one events follow) went on at once: the first score line
     * of "one" after the checkpoint has one */
    for (size_t k = 0; k < env_b.scores.n; k++)
        if (strcmp(env_b.scores.v[k].id, "one") == 0) {
            assert_false(isnan(env_b.scores.v[k].magnitude_score));
            break;
        }
    size_t gaps = 0;
    for (size_t k = 0; k < n; k++)
        gaps += env_b.log.v[k].a.kind == TSS_ALERT_GAP;
    assert_int_equal(gaps, 1); /* the pending gap survived the checkpoint */
    size_t kinds[TSS_ALERT_KINDS] = {0};
    for (size_t k = 0; k < n; k++)
        kinds[env_b.log.v[k].a.kind]++;
    assert_true(kinds[TSS_ALERT_ANOMALY] > 0 && kinds[TSS_ALERT_ANOMALY_END] > 0 &&
                kinds[TSS_ALERT_LEFT_DISCORD] > 0);
    for (int k = 0; k < 3; k++) {
        assert_same_info(a, b, ids[k]);
        assert_same_magnitude(stream_of(a, ids[k]), stream_of(b, ids[k]), 0);
    }
    free(buf);
    tss_engine_destroy(&a), tss_engine_destroy(&b);
    st_input_free(&in[0]), st_input_free(&in[1]), st_input_free(&in[2]);
    st_env_free(&env_a), st_env_free(&env_b);
}

/* A fresh engine takes bytes; on failure it must be empty and say why; on success it
 * must run. Returns 0 (loaded), 1 (refused by the framing: version, length or
 * checksum) or 2 (refused otherwise: size, magic or a field check). */
static int try_hostile(st_env *env, const unsigned char *buf, size_t len, int must_fail) {
    tss_engine *e = st_engine(env, 1, 4);
    char err[256] = "";
    int rc = load_bytes(e, buf, len, err, sizeof err);
    int outcome = rc == 0 ? 0 : strstr(err, "checksum") || strstr(err, "version") ? 1 : 2;
    if (rc != 0) {
        assert_int_equal(tss_engine_stream_count(e), 0);
        assert_int_equal(tss_engine_pending(e), 0);
        assert_true(strlen(err) > 0);
    } else {
        if (must_fail)
            fail_msg("seed %llu: a corrupt checkpoint of %zu bytes was accepted",
                     (unsigned long long)tu_seed, len);
        double v[8] = {1, 3, 2, 5, 4, 4, 7, 1};
        for (size_t k = 0; k < tss_engine_stream_count(e); k++) {
            tss_stream_info info;
            assert_int_equal(tss_engine_stream_at(e, k, &info), 0);
            tss_engine_ingest(e, info.id, info.next_seq, NULL, INT64_MAX / 2, 1, v, 8);
        }
        tss_engine_tick(e, err, sizeof err);
    }
    tss_engine_destroy(&e);
    return outcome;
}

static void test_hostile_checkpoints(void **state) {
    (void)state;
    tu_case_seed(31337);
    st_env env = {0};
    tss_params p = tss_params_default(), q = tss_params_default();
    p.window = 24, p.subsequence = 4, p.hop = 6, p.warmup = 8, p.left_discord = 1;
    q.window = 64, q.hop = 8, q.warmup = 24; /* automatic m */
    st_env_add(&env, "h", p);
    st_env_add(&env, "k", q);
    tss_engine *e = st_engine(&env, 1, 4);
    st_input in[2] = {st_make_input("h", 60, 0, 40, 3), st_make_input("k", 30, 0, 0, 0)};
    st_feed(e, in, 2, 5, 0.5);
    assert_int_equal(tss_engine_ingest(e, "h", in[0].seq[59] + 5, NULL,
                                       (int64_t)(in[0].seq[59] + 5) * ST_PERIOD, ST_PERIOD, in[0].v,
                                       4),
                     TSS_OK); /* a staged gap */
    size_t len = 0;
    unsigned char *buf = save_bytes(e, &len);
    char err[256] = "";
    /* loading into an engine that has streams is refused */
    assert_int_equal(load_bytes(e, buf, len, err, sizeof err), -1);
    assert_non_null(strstr(err, "already"));
    tss_engine_destroy(&e);
    try_hostile(&env, buf, len, 0); /* the intact file loads */
    for (size_t cut = 0; cut < len; cut++)
        try_hostile(&env, buf, cut, 1);
    unsigned char *bad = malloc(len);
    assert_non_null(bad);
    for (int trial = 0; trial < 200; trial++) { /* the checksum catches flips */
        memcpy(bad, buf, len);
        bad[(size_t)(tu_uniform() * (double)len)] ^= (unsigned char)(1 + tu_uniform() * 255);
        try_hostile(&env, bad, len, 1);
    }
    int outcomes[3] = {0, 0, 0};
    for (int trial = 0; trial < 2000; trial++) { /* the field checks, behind a valid CRC */
        memcpy(bad, buf, len);
        for (int f = 0; f < 1 + trial % 3; f++)
            bad[12 + (size_t)(tu_uniform() * (double)(len - 24))] ^=
                (unsigned char)(1 + tu_uniform() * 255);
        st_ckpt_fix_crc(bad, len);
        outcomes[try_hostile(&env, bad, len, 0)]++;
    }
    /* the CRC was valid, so the framing refused none: the field checks judged them all */
    assert_int_equal(outcomes[1], 0);
    assert_true(outcomes[2] > 100);
    for (int v = 0; v < 3; v++) { /* versions this build does not read: 7, 3, 0 */
        memcpy(bad, buf, len);
        bad[8] = (unsigned char)(v == 0 ? 7 : v == 1 ? 3 : 0);
        st_ckpt_fix_crc(bad, len);
        e = st_engine(&env, 1, 4);
        assert_int_equal(load_bytes(e, bad, len, err, sizeof err), -1);
        assert_non_null(strstr(err, "this build reads versions 4 to 6"));
        assert_int_equal(tss_engine_stream_count(e), 0);
        tss_engine_destroy(&e);
    }
    /* more streams than the engine accepts (max_streams lowered): the first ones in
     * creation order load, as they were, and the others are counted as dropped */
    tss_engine *all = st_engine(&env, 1, 4);
    assert_int_equal(load_bytes(all, buf, len, err, sizeof err), 0);
    e = st_engine(&env, 1, 1);
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    rewind(f);
    tss_load_report rep;
    assert_int_equal(tss_engine_load_report(e, f, &rep, err, sizeof err), 0);
    fclose(f);
    assert_int_equal(tss_engine_stream_count(e), 1);
    assert_int_equal(rep.dropped, 1);
    /* (which stream came first depends on the batches the seed drew) */
    tss_stream_info first;
    assert_int_equal(tss_engine_stream_at(all, 0, &first), 0);
    const char *later = strcmp(first.id, "h") == 0 ? "k" : "h";
    assert_string_equal(rep.first_dropped, later);
    assert_int_equal(rep.read_errno, 0);
    assert_same_info(all, e, first.id);
    tss_engine_destroy(&e), tss_engine_destroy(&all);
    /* a dropped record is still checked: a bad field in it refuses the file */
    memcpy(bad, buf, len);
    bad[len - 16 - 1] ^= 0x40; /* the top byte of the last record's last field */
    st_ckpt_fix_crc(bad, len);
    e = st_engine(&env, 1, 1);
    assert_int_equal(load_bytes(e, bad, len, err, sizeof err), -1);
    assert_non_null(strstr(err, "stream 1"));
    assert_int_equal(tss_engine_stream_count(e), 0);
    tss_engine_destroy(&e);
    free(bad);
    free(buf);
    st_input_free(&in[0]), st_input_free(&in[1]);
    st_env_free(&env);
}

/* A memory stream whose reads fail with EIO from byte fail_at on (fopencookie). */
typedef struct {
    const unsigned char *b;
    size_t n, at, fail_at;
} failing;

static ssize_t failing_read(void *c, char *buf, size_t size) {
    failing *f = c;
    if (f->at >= f->fail_at) {
        errno = EIO;
        return -1;
    }
    size_t k = f->n - f->at < size ? f->n - f->at : size;
    k = f->fail_at - f->at < k ? f->fail_at - f->at : k;
    memcpy(buf, f->b + f->at, k);
    f->at += k;
    return (ssize_t)k;
}

static int failing_seek(void *c, off64_t *pos, int whence) {
    failing *f = c;
    off64_t to = whence == SEEK_SET   ? *pos
                 : whence == SEEK_CUR ? (off64_t)f->at + *pos
                                      : (off64_t)f->n + *pos;
    if (to < 0 || to > (off64_t)f->n)
        return -1;
    f->at = (size_t)to;
    *pos = to;
    return 0;
}

/* A read that fails (an I/O error, not the content) is said so (read_errno), whether it
 * fails in the header, a record or the tail: the file may be good, and the daemon must
 * not treat it as corrupt. The engine stays empty. */
static void test_read_error_is_not_corruption(void **state) {
    (void)state;
    st_env env = {0};
    tss_params p = tss_params_default();
    p.window = 64, p.subsequence = 8, p.hop = 16, p.warmup = 32;
    st_env_add(&env, "r", p);
    tss_engine *e = st_engine(&env, 1, 4);
    st_input in = st_make_input("r", 100, 0, 0, 0);
    st_feed(e, &in, 1, 5, 0.5);
    size_t len = 0;
    unsigned char *buf = save_bytes(e, &len);
    tss_engine_destroy(&e);
    const size_t at[] = {0, 5, 40, len / 2, len - 3};
    for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
        failing c = {buf, len, 0, at[k]};
        cookie_io_functions_t io = {.read = failing_read, .seek = failing_seek};
        FILE *f = fopencookie(&c, "rb", io);
        assert_non_null(f);
        e = st_engine(&env, 1, 4);
        tss_load_report rep;
        char err[256] = "";
        assert_int_equal(tss_engine_load_report(e, f, &rep, err, sizeof err), -1);
        fclose(f);
        if (rep.read_errno != EIO || !strstr(err, "Input/output error"))
            fail_msg("a read failing at byte %zu of %zu: errno %d, \"%s\"", at[k], len,
                     rep.read_errno, err);
        assert_int_equal(tss_engine_stream_count(e), 0);
        tss_engine_destroy(&e);
    }
    failing c = {buf, len, 0, len}; /* never fails: loads */
    cookie_io_functions_t io = {.read = failing_read, .seek = failing_seek};
    FILE *f = fopencookie(&c, "rb", io);
    e = st_engine(&env, 1, 4);
    char err[256] = "";
    assert_int_equal(tss_engine_load(e, f, err, sizeof err), 0);
    fclose(f);
    assert_int_equal(tss_engine_stream_count(e), 1);
    tss_engine_destroy(&e);
    free(buf);
    st_input_free(&in);
    st_env_free(&env);
}

/* ---- incremental checkpoints: groups, fingerprints, the stepped walk ------------- */

/* A sink that keeps each group's last file in memory, as the daemon's writer keeps
 * them on disk: a group's records become a file (tss_ckpt_file_*) at its end. */
typedef struct {
    unsigned char *file[TSS_CKPT_GROUPS]; /* NULL: no file */
    size_t len[TSS_CKPT_GROUPS];
    int64_t disk[TSS_CKPT_GROUPS];
    char *open; /* the group being written */
    size_t openlen;
    FILE *f;
    tss_ckpt_file cf;
    uint32_t group;
    int ends, room; /* groups ended by the last walk; room: the sink accepts records */
} mem_sink;

static int ms_room(void *user) {
    return ((mem_sink *)user)->room;
}

static void ms_record(void *user, uint32_t g, void *rec, size_t n) {
    mem_sink *m = user;
    if (!m->f) {
        m->f = open_memstream(&m->open, &m->openlen);
        assert_non_null(m->f);
        tss_ckpt_file_begin(&m->cf, m->f, g);
        m->group = g;
    }
    assert_int_equal(m->group, g);
    tss_ckpt_file_record(&m->cf, rec, n);
    free(rec);
}

static void ms_end(void *user, uint32_t g, uint32_t count) {
    mem_sink *m = user;
    m->ends++;
    free(m->file[g]);
    m->file[g] = NULL, m->len[g] = 0, m->disk[g] = count;
    if (!count) {
        assert_null(m->f);
        return;
    }
    assert_int_equal(m->group, g);
    assert_int_equal(m->cf.count, count);
    assert_int_equal(tss_ckpt_file_end(&m->cf), 0);
    assert_int_equal(fclose(m->f), 0);
    m->f = NULL;
    m->file[g] = (unsigned char *)m->open, m->len[g] = m->openlen;
}

/* One checkpoint of e into m, in steps of budget_s; returns the walk's stats. */
static tss_ckpt_walk_stats ms_checkpoint(tss_engine *e, mem_sink *m, double budget_s) {
    tss_ckpt_walk *w;
    assert_int_equal(tss_ckpt_walk_new(m->disk, 0, &w), 0);
    const tss_ckpt_sink sink = {ms_room, ms_record, ms_end, m};
    m->ends = 0, m->room = 1;
    int rc, steps = 0;
    while ((rc = tss_ckpt_walk_step(e, w, budget_s, 1, &sink)) == 0)
        assert_true(++steps < 1000000);
    assert_int_equal(rc, 1);
    tss_ckpt_walk_stats st = *tss_ckpt_walk_stats_of(w);
    tss_ckpt_walk_destroy(&w);
    return st;
}

/* A fresh engine restored from m's files; its stream count is checked against want. */
static tss_engine *ms_restore(st_env *env, const mem_sink *m, size_t want) {
    tss_engine *e = st_engine(env, 1, 100);
    tss_restore *rs;
    tss_load_report rep = {0};
    char err[256] = "";
    assert_int_equal(tss_restore_new(100, &rs), 0);
    for (uint32_t g = 0; g < TSS_CKPT_GROUPS; g++) {
        if (!m->file[g])
            continue;
        FILE *f = tmpfile();
        assert_non_null(f);
        assert_int_equal(fwrite(m->file[g], 1, m->len[g], f), m->len[g]);
        rewind(f);
        uint32_t count;
        if (tss_restore_read(rs, f, g, &count, &rep, err, sizeof err) != 0)
            fail_msg("group %u: %s", g, err);
        assert_int_equal(count, m->disk[g]);
        fclose(f);
        /* the file of one group is refused as another's */
        f = tmpfile();
        assert_int_equal(fwrite(m->file[g], 1, m->len[g], f), m->len[g]);
        rewind(f);
        assert_int_equal(
            tss_restore_read(rs, f, (g + 1) % TSS_CKPT_GROUPS, &count, &rep, err, sizeof err), -1);
        assert_non_null(strstr(err, "group"));
        fclose(f);
    }
    if (tss_restore_finish(e, rs, &rep, err, sizeof err) != 0)
        fail_msg("finish: %s", err);
    tss_restore_destroy(&rs);
    assert_int_equal(tss_engine_stream_count(e), want);
    return e;
}

/* Only what changed is written: a first checkpoint writes every stream's group, a
 * second one with nothing changed writes nothing, new samples for one stream rewrite
 * its group alone, a deleted stream empties its group; files restored from the groups
 * give the streams exactly as the engine has them, in creation order; steps of any
 * budget (down to none: one stream a step) give the same files. */
static void test_incremental_groups(void **state) {
    (void)state;
    tu_case_seed(4242);
    st_env env = {0};
    tss_params p = tss_params_default();
    p.window = 64, p.subsequence = 8, p.hop = 16, p.warmup = 24;
    const char *ids[] = {"a", "b", "c", "d"}; /* groups 32, 233, 94, and d's */
    st_input in[4];
    for (int k = 0; k < 4; k++) {
        st_env_add(&env, ids[k], p);
        in[k] = st_make_input(ids[k], 120 + 10 * k, 0, 0, 0);
    }
    st_env_add(&env, "e", p); /* created after a restore, below */
    tss_engine *e = st_engine(&env, 1, 100);
    for (int k = 0; k < 4; k++) /* created in this order: a, b, c, d */
        st_feed(e, &in[k], 1, 7, 0.5);
    mem_sink m = {0}, slow = {0};
    tss_ckpt_walk_stats st = ms_checkpoint(e, &m, 1.0);
    assert_int_equal(st.records, 4);
    tss_ckpt_walk_stats st0 = ms_checkpoint(e, &slow, 0.0); /* one stream a step */
    assert_int_equal(st0.records, 4);
    for (uint32_t g = 0; g < TSS_CKPT_GROUPS; g++) {
        assert_int_equal(m.len[g], slow.len[g]);
        if (m.len[g])
            assert_memory_equal(m.file[g], slow.file[g], m.len[g]);
    }
    /* nothing changed: nothing written, not even a group's end */
    st = ms_checkpoint(e, &m, 1.0);
    assert_int_equal(st.records, 0);
    assert_int_equal(st.groups, 0);
    assert_int_equal(m.ends, 0);
    /* new samples of b: b's group alone */
    st_input more = st_make_input("b", 20, in[1].seq[in[1].n - 1] + 1, 0, 0);
    st_feed(e, &more, 1, 5, 1.0);
    st = ms_checkpoint(e, &m, 1.0);
    assert_int_equal(st.records, 1);
    assert_int_equal(m.ends, 1);
    assert_int_equal(m.disk[tss_ckpt_group("b")], 1);
    /* b and c deleted: their groups are written empty (the files go) */
    assert_int_equal(tss_engine_delete_stream(e, "b"), 0);
    assert_int_equal(tss_engine_delete_stream(e, "c"), 0);
    st = ms_checkpoint(e, &m, 1.0);
    assert_int_equal(st.records, 0);
    assert_int_equal(m.ends, 2);
    assert_null(m.file[tss_ckpt_group("b")]);
    assert_null(m.file[tss_ckpt_group("c")]);
    /* the files restore the engine's streams as they are */
    tss_engine *r = ms_restore(&env, &m, 2);
    assert_same_info(e, r, "a");
    assert_same_info(e, r, "d");
    /* a restored engine's streams are as on disk: its first checkpoint writes nothing */
    mem_sink again = {0}; /* a copy of m's files */
    for (uint32_t g = 0; g < TSS_CKPT_GROUPS; g++) {
        again.disk[g] = m.disk[g], again.len[g] = m.len[g];
        if (m.file[g]) {
            again.file[g] = malloc(m.len[g]);
            assert_non_null(again.file[g]);
            memcpy(again.file[g], m.file[g], m.len[g]);
        }
    }
    st = ms_checkpoint(r, &again, 1.0);
    assert_int_equal(st.records, 0);
    /* a stream created after the restore comes after the restored ones at the next
     * restore, though their groups were not written again (the saved creation indexes
     * stay: renumbered 0, 1 at the restore, e would have come before d, saved as 3) */
    st_input late = st_make_input("e", 30, 0, 0, 0);
    st_feed(r, &late, 1, 5, 1.0);
    st = ms_checkpoint(r, &again, 1.0);
    assert_int_equal(st.records, 1);
    tss_engine *r2 = ms_restore(&env, &again, 3);
    const char *order[] = {"a", "d", "e"};
    for (size_t k = 0; k < 3; k++) {
        tss_stream_info x;
        assert_int_equal(tss_engine_stream_at(r2, k, &x), 0);
        assert_string_equal(x.id, order[k]);
    }
    tss_engine_destroy(&r2);
    tss_engine_destroy(&r);
    st_input_free(&late);
    for (uint32_t g = 0; g < TSS_CKPT_GROUPS; g++)
        free(again.file[g]);
    /* a sink without room: a step writes nothing and the walk waits */
    st_input last = st_make_input("a", 10, in[0].seq[in[0].n - 1] + 1, 0, 0);
    st_feed(e, &last, 1, 5, 1.0);
    tss_ckpt_walk *w;
    assert_int_equal(tss_ckpt_walk_new(m.disk, 0, &w), 0);
    const tss_ckpt_sink sink = {ms_room, ms_record, ms_end, &m};
    m.room = 0;
    assert_int_equal(tss_ckpt_walk_step(e, w, 1.0, 1, &sink), 0);
    assert_int_equal(tss_ckpt_walk_stats_of(w)->records, 0);
    m.room = 1;
    assert_int_equal(tss_ckpt_walk_step(e, w, 1.0, 1, &sink), 1);
    assert_int_equal(tss_ckpt_walk_stats_of(w)->records, 1);
    tss_ckpt_walk_destroy(&w);
    for (uint32_t g = 0; g < TSS_CKPT_GROUPS; g++)
        free(m.file[g]), free(slow.file[g]);
    tss_engine_destroy(&e);
    st_input_free(&more), st_input_free(&last);
    for (int k = 0; k < 4; k++)
        st_input_free(&in[k]);
    st_env_free(&env);
}

/* The fingerprint that decides which groups an incremental checkpoint rewrites moves
 * with the magnitude history alone (nothing else of the stream changed): a value added,
 * a refresh's worth of equal values, the history emptied; the walk then writes that
 * stream's group, and the files restore the history as it is. */
static void test_fingerprint_follows_magnitude_history(void **state) {
    (void)state;
    tu_case_seed(4343);
    st_env env = {0};
    tss_params p = tss_params_default();
    p.window = 64, p.subsequence = 8, p.hop = 16, p.warmup = 24;
    st_env_add(&env, "f", p);
    tss_engine *e = st_engine(&env, 1, 100);
    st_input in = st_make_input("f", 400, 0, 0, 0);
    st_feed(e, &in, 1, 7, 0.5);
    tss_stream *s = stream_of(e, "f");
    assert_true(s->det.mag.ready);
    mem_sink m = {0};
    assert_int_equal(ms_checkpoint(e, &m, 1.0).records, 1);
    assert_int_equal(ms_checkpoint(e, &m, 1.0).records, 0); /* nothing changed */
    for (int step = 0; step < 3; step++) {
        const uint64_t before = tss_stream_fingerprint(s);
        if (step == 0)
            assert_int_equal(tss_robust_add(&s->det.mag, 1.0), 0);
        else if (step == 1) /* the same value, up to the next refresh: head and since move */
            for (int k = 0; k < TSS_ROBUST_REFRESH; k++)
                assert_int_equal(tss_robust_add(&s->det.mag, 1.0), 0);
        else
            tss_robust_free(&s->det.mag);
        assert_true(tss_stream_fingerprint(s) != before);
        assert_int_equal(ms_checkpoint(e, &m, 1.0).records, 1);
        tss_engine *r = ms_restore(&env, &m, 1);
        assert_same_magnitude(s, stream_of(r, "f"), 1);
        tss_engine_destroy(&r);
    }
    for (uint32_t g = 0; g < TSS_CKPT_GROUPS; g++)
        free(m.file[g]);
    tss_engine_destroy(&e);
    st_input_free(&in);
    st_env_free(&env);
}

/* A fresh engine restored from two files of every stream, read in that order. */
static tss_engine *restore_two(st_env *env, const unsigned char *first, size_t n1,
                               const unsigned char *second, size_t n2, tss_load_report *rep) {
    tss_engine *e = st_engine(env, 1, 8);
    tss_restore *rs;
    char err[256] = "";
    *rep = (tss_load_report){0};
    assert_int_equal(tss_restore_new(8, &rs), 0);
    const unsigned char *b[2] = {first, second};
    const size_t n[2] = {n1, n2};
    for (int k = 0; k < 2; k++) {
        FILE *f = tmpfile();
        assert_non_null(f);
        assert_int_equal(fwrite(b[k], 1, n[k], f), n[k]);
        rewind(f);
        if (tss_restore_read(rs, f, TSS_CKPT_ALL, NULL, rep, err, sizeof err) != 0)
            fail_msg("file %d: %s", k, err);
        fclose(f);
    }
    if (tss_restore_finish(e, rs, rep, err, sizeof err) != 0)
        fail_msg("finish: %s", err);
    tss_restore_destroy(&rs);
    return e;
}

/* A stream saved twice (a conversion cut short leaves it in the file of every stream and
 * in its group's file; a file written by hand may hold it twice) never fails the
 * restore (issue 27): the record of the later epoch, then of the higher next_seq, then
 * the one read first is kept, the other counted and described. */
static void test_duplicate_records(void **state) {
    (void)state;
    tu_case_seed(2727);
    st_env env = {0};
    tss_params p = tss_params_default();
    p.window = 64, p.subsequence = 8, p.hop = 16, p.warmup = 32;
    st_env_add(&env, "a", p);
    st_env_add(&env, "b", p);
    tss_engine *e = st_engine(&env, 1, 8);
    st_input in[2] = {st_make_input("a", 160, 0, 0, 0), st_make_input("b", 160, 0, 0, 0)};
    st_input early[2] = {part(&in[0], 0, 100), part(&in[1], 0, 100)};
    st_input late[2] = {part(&in[0], 100, 160), part(&in[1], 100, 160)};
    st_feed(e, early, 2, 7, 0.5);
    size_t nold, nnew, nepoch;
    unsigned char *old = save_bytes(e, &nold);
    st_feed(e, late, 2, 7, 0.5);
    unsigned char *new = save_bytes(e, &nnew);
    /* a newer epoch of "a" restarts it at sequence number 5: fewer samples, later */
    const double v[3] = {1.0, 2.0, 3.0};
    assert_int_equal(
        tss_engine_ingest_epoch(e, "a", 7, 5, NULL, 1700000000000000000, 1000000, v, 3), TSS_OK);
    st_settle(e);
    unsigned char *epoch = save_bytes(e, &nepoch);
    tss_engine_destroy(&e);

    tss_load_report rep;
    for (int order = 0; order < 2; order++) { /* the newer read first, then last */
        e = order ? restore_two(&env, old, nold, new, nnew, &rep)
                  : restore_two(&env, new, nnew, old, nold, &rep);
        assert_int_equal(tss_engine_stream_count(e), 2);
        tss_stream_info info;
        for (int k = 0; k < 2; k++) {
            assert_int_equal(tss_engine_stream_find(e, k ? "b" : "a", &info), 0);
            assert_int_equal(info.next_seq, 160);
            assert_int_equal(info.samples, 160);
        }
        assert_int_equal(rep.duplicates, 2);
        assert_string_equal(rep.dup[0].id, "a");
        assert_int_equal(rep.dup[0].next_seq, 100);
        assert_int_equal(rep.dup[0].kept_next_seq, 160);
        assert_int_equal(rep.dup[0].file, TSS_CKPT_ALL);
        tss_engine_destroy(&e);
    }
    /* the later epoch wins over the higher next_seq */
    e = restore_two(&env, new, nnew, epoch, nepoch, &rep);
    tss_stream_info info;
    assert_int_equal(tss_engine_stream_find(e, "a", &info), 0);
    assert_int_equal(info.next_seq, 8);
    assert_int_equal(rep.duplicates, 2);
    assert_int_equal(rep.dup[0].epoch, 0);
    assert_int_equal(rep.dup[0].kept_epoch, 7);
    tss_engine_destroy(&e);
    /* the same records twice: one of each, the one read first */
    e = restore_two(&env, new, nnew, new, nnew, &rep);
    assert_int_equal(tss_engine_stream_count(e), 2);
    assert_int_equal(rep.duplicates, 2);
    assert_int_equal(rep.dup[1].kept_next_seq, 160);
    tss_engine_destroy(&e);
    free(old), free(new), free(epoch);
    st_input_free(&in[0]), st_input_free(&in[1]);
    st_env_free(&env);
}

/* ---- the magnitude history (format 5) and version 4 files ----------------------- */

static uint64_t get_le(const unsigned char *b, int nbytes) {
    uint64_t v = 0;
    for (int k = 0; k < nbytes; k++)
        v |= (uint64_t)b[k] << (8 * k);
    return v;
}

static void put_le(unsigned char *b, uint64_t v, int nbytes) {
    for (int k = 0; k < nbytes; k++)
        b[k] = (unsigned char)(v >> (8 * k));
}

static void put_f64(unsigned char *b, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    put_le(b, u, 8);
}

/* Where one stream record's fields are (offsets into the file), by an independent walk
 * of the layout that stream/checkpoint.c's header comment gives. */
typedef struct {
    size_t start;
    size_t m;   /* the m in force */
    size_t mag; /* version 5: the magnitude history: u32 n, u32 since, u8 ready, f64 med,
                 * f64 mad, then n f64 values */
    uint32_t mag_n;
    size_t event; /* the event state (its first field: the last comparable score) */
    size_t views; /* version 5: the peak's views: u8 view, f64 shape, magnitude and level
                   * scores, f64 magnitude, u64 its neighbour, f64 level */
    size_t end;
} ck_record;
#define CK_MAG_HEAD 25 /* the magnitude history's fields before its values */
#define CK_VIEWS    49 /* the peak's views */

/* The record of a file of that version at offset at; returns its end. */
static size_t ck_walk(const unsigned char *b, size_t at, int version, ck_record *r) {
    r->start = at;
    at += 8;                         /* creation index */
    at += 4 + get_le(b + at, 4);     /* id */
    at += 5 * 4 + 3 * 8 + 1 + 4 + 1; /* parameters */
    r->m = at;
    at += 3 * 4;                         /* m in force, its period, the next look */
    at += 1 + 8 + 8 + 8 + 1;             /* started, next_seq, last_ts, epoch, reset */
    at += 8 + 16 * get_le(b + at, 4);    /* gaps kept, the next one, the gaps */
    at += 8 * (2 + TSS_ALERT_KINDS + 1); /* samples, rejected, by kind, gaps */
    at += 8 + 8;                         /* proc_seq, since_pass */
    at += 4 + 16 * get_le(b + at, 4);    /* window fill, samples, timestamps */
    at += 4 + 4 + 2 * TSS_CALIB_HISTORY; /* the shape view's score history */
    if (version >= 5) {
        r->mag = at;
        r->mag_n = (uint32_t)get_le(b + at, 4);
        at += CK_MAG_HEAD + 8 * (size_t)r->mag_n;
    }
    r->event = at;
    at += 8 + 8 + 1 + 1 + 8 + 8 + 4; /* last score, events, the open event */
    at += 8 + 8 + 8 + 8 + 8 + 1;     /* the peak */
    if (version >= 5) {
        r->views = at;
        at += CK_VIEWS;
    }
    at += 8 + 16 * get_le(b + at, 8); /* published spans */
    at += 8 + 16 * get_le(b + at, 8); /* MOTIF pairs */
    at += 8 + 16 * get_le(b + at, 8); /* staged samples and timestamps */
    at += 8 + 41 * get_le(b + at, 8); /* gap marks */
    r->end = at;
    return at;
}

/* The records of a file (len bytes) of that version into r (at most max); returns how
 * many, checking that they end where the record count begins. */
static size_t ck_records(const unsigned char *b, size_t len, int version, ck_record *r,
                         size_t max) {
    size_t n = 0, at = 16;
    while (at < len - 16) {
        assert_true(n < max);
        at = ck_walk(b, at, version, &r[n++]);
    }
    assert_int_equal(at, len - 16);
    assert_int_equal(get_le(b + at, 4), n);
    return n;
}

/* Frames len bytes of header and records (b, with room for 16 more) as a file: the
 * record count, the payload length and the CRC; returns the file's length. */
static size_t ck_frame(unsigned char *b, size_t len, uint32_t count) {
    put_le(b + len, count, 4);
    put_le(b + len + 4, len + 4 - 16, 8);
    st_ckpt_fix_crc(b, len + 16);
    return len + 16;
}

/* A version 4 file of the streams of a version 5 file: each record without what version
 * 5 added (the magnitude history, the peak's views). Caller frees. */
static unsigned char *to_v4(const unsigned char *b, size_t len, size_t *len4) {
    ck_record r[8];
    const size_t n = ck_records(b, len, 5, r, 8);
    unsigned char *o = malloc(len);
    assert_non_null(o);
    memcpy(o, b, 16);
    put_le(o + 8, 4, 4);
    size_t at = 16;
    for (size_t k = 0; k < n; k++) {
        const size_t keep[3][2] = {
            {r[k].start, r[k].mag}, {r[k].event, r[k].views}, {r[k].views + CK_VIEWS, r[k].end}};
        for (int j = 0; j < 3; j++) {
            memcpy(o + at, b + keep[j][0], keep[j][1] - keep[j][0]);
            at += keep[j][1] - keep[j][0];
        }
    }
    *len4 = ck_frame(o, at, (uint32_t)n);
    return o;
}

/* A magnitude history that wrapped its ring (more than TSS_ROBUST_HISTORY values),
 * between two refreshes, with an event open (a level shift just before the checkpoint)
 * comes back bit for bit, the open event's peak and its views too: the loaded engine
 * saves the same bytes, and goes on with the same scores and alerts (the event's
 * ANOMALY_END among them). */
static void test_magnitude_history_round_trip(void **state) {
    (void)state;
    tu_case_seed(5005);
    st_env env_a = {0}, env_b = {0};
    tss_params p = tss_params_default();
    p.window = 64, p.subsequence = 8, p.hop = 16, p.warmup = 32;
    st_env_add(&env_a, "w", p), st_env_add(&env_b, "w", p);
    env_a.keep_scores = env_b.keep_scores = 1;
    st_input in = st_make_input("w", 2000, 0, 0, 0);
    double lo = in.v[0], hi = in.v[0];
    for (size_t k = 0; k < in.n; k++)
        lo = fmin(lo, in.v[k]), hi = fmax(hi, in.v[k]);
    for (size_t k = 1440; k < in.n; k++) /* a level shift of 2 ranges at 1440 */
        in.v[k] += 2 * (hi - lo);
    tss_engine *a = st_engine(&env_a, 1, 0);
    st_input first = part(&in, 0, 1450);
    st_feed(a, &first, 1, 9, 0.5);
    const tss_robust *g = &stream_of(a, "w")->det.mag;
    assert_int_equal(g->n, TSS_ROBUST_HISTORY);
    assert_true(g->head != 0 && g->ready && g->since > 0); /* wrapped: two runs on disk */
    assert_true(stream_of(a, "w")->det.open);
    assert_int_equal(stream_of(a, "w")->det.peak.view, TSS_VIEW_MAGNITUDE);
    size_t len, len2;
    unsigned char *buf = save_bytes(a, &len);
    ck_record r;
    ck_records(buf, len, 5, &r, 1);
    assert_int_equal(r.mag_n, TSS_ROBUST_HISTORY);
    for (uint32_t i = 0; i < g->n; i++) { /* oldest first */
        const double v = mag_at(g, i);
        assert_memory_equal(buf + r.mag + CK_MAG_HEAD + 8 * i, &v, 8);
    }
    tss_engine *b = st_engine(&env_b, 1, 0);
    char err[256] = "";
    if (load_bytes(b, buf, len, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    assert_same_magnitude(stream_of(a, "w"), stream_of(b, "w"), 1);
    unsigned char *again = save_bytes(b, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(again, buf, len);
    const size_t before = env_a.log.n, scores_before = env_a.scores.n;
    st_input rest = part(&in, 1450, in.n);
    tu_rng_init(78);
    st_feed(a, &rest, 1, 9, 0.5);
    tu_rng_init(78);
    st_feed(b, &rest, 1, 9, 0.5);
    assert_true(env_a.scores.n - scores_before >= rest.n - 1);
    const fed fd = {&in, 1};
    assert_same_output(&fd, &env_a, before, scores_before, &env_b, 0, 0);
    size_t ends = 0;
    st_alert *end = st_select(&env_b.log, "w", TSS_ALERT_ANOMALY_END, &ends);
    assert_true(ends > 0 && end[0].a.event_start_seq < 1450); /* the event open at the save */
    assert_int_equal(end[0].a.view, TSS_VIEW_MAGNITUDE);
    free(end);
    assert_same_magnitude(stream_of(a, "w"), stream_of(b, "w"), 0);
    free(buf), free(again);
    tss_engine_destroy(&a), tss_engine_destroy(&b);
    st_input_free(&in);
    st_env_free(&env_a), st_env_free(&env_b);
}

/* A version 4 file still loads: its streams are the version 5 file's with an empty
 * magnitude history and their peak's views unknown, everything else as it was (the
 * two engines save the same bytes and go on with the same alerts and scores), and the
 * magnitude score of each stream restarts: none until TSS_ROBUST_MIN values of it came
 * after the restore. Saving writes version 5. */
static void test_version_4_loads(void **state) {
    (void)state;
    tu_case_seed(4004);
    st_env env_a = {0}, env_4 = {0}, env_5 = {0};
    tss_params p1 = tss_params_default(), p2 = tss_params_default(), p3 = tss_params_default();
    p1.window = 128, p1.subsequence = 12, p1.hop = 32, p1.warmup = 64, p1.left_discord = 1;
    p1.threshold = 0.95, p1.threshold_end = 0.8;
    p2.window = 80, p2.subsequence = 8, p2.hop = 80, p2.range = 3.0, p2.excl = 10;
    p2.warmup = 40;
    p3.window = 256, p3.hop = 64, p3.warmup = 96; /* automatic m */
    st_env *envs[3] = {&env_a, &env_4, &env_5};
    for (int k = 0; k < 3; k++) {
        st_env_add(envs[k], "one", p1), st_env_add(envs[k], "two", p2);
        st_env_add(envs[k], "three", p3);
        envs[k]->keep_scores = 1;
    }
    const char *ids[3] = {"one", "two", "three"};
    st_input in[3] = {st_make_input("one", 1500, 0, 0, 0), st_make_input("two", 1500, 0, 0, 0),
                      st_make_input("three", 1500, 0, 0, 0)};
    tss_engine *a = st_engine(&env_a, 1, 0);
    st_input first[3] = {part(&in[0], 0, 700), part(&in[1], 0, 700), part(&in[2], 0, 700)};
    st_feed(a, first, 3, 40, 0.5);
    size_t len, len4, len4s, len5s;
    unsigned char *buf = save_bytes(a, &len);
    unsigned char *buf4 = to_v4(buf, len, &len4);
    ck_record r[3];
    assert_int_equal(ck_records(buf, len, 5, r, 3), 3);
    size_t added = 0;
    for (int k = 0; k < 3; k++) {
        assert_true(r[k].mag_n > 0);
        added += CK_MAG_HEAD + 8 * (size_t)r[k].mag_n + CK_VIEWS;
    }
    assert_int_equal(len4, len - added);
    assert_int_equal(ck_records(buf4, len4, 4, r, 3), 3);
    char err[256] = "";
    tss_engine *e4 = st_engine(&env_4, 1, 0), *e5 = st_engine(&env_5, 1, 0);
    if (load_bytes(e4, buf4, len4, err, sizeof err) != 0)
        fail_msg("load of version 4: %s", err);
    if (load_bytes(e5, buf, len, err, sizeof err) != 0)
        fail_msg("load of version 5: %s", err);
    /* e5 as version 4 leaves it: no magnitude history, the peak's views unknown */
    for (int k = 0; k < 3; k++) {
        tss_stream *s4 = stream_of(e4, ids[k]), *s5 = stream_of(e5, ids[k]);
        assert_int_equal(s4->det.mag.n, 0);
        assert_false(s4->det.mag.ready);
        assert_int_equal(s4->det.peak.view, TSS_VIEW_NONE);
        assert_true(isnan(s4->det.peak.magnitude_score) && isnan(s4->det.peak.level));
        assert_true(s5->det.mag.ready);
        tss_robust_free(&s5->det.mag);
        if (isnan(s4->p.range)) { /* the magnitude score of its last subsequence: none */
            assert_true(isnan(s4->det.last_value));
            s5->det.last_value = NAN;
        }
        tss_alert *pk = &s5->det.peak;
        pk->view = TSS_VIEW_NONE;
        pk->shape_score = pk->magnitude_score = pk->level_score = NAN;
        pk->magnitude = pk->level = NAN;
        pk->magnitude_neighbor_seq = 0;
        assert_same_info(e4, e5, ids[k]);
    }
    unsigned char *s4 = save_bytes(e4, &len4s), *s5 = save_bytes(e5, &len5s);
    assert_int_equal(s4[8], 6); /* written as version 6 */
    assert_int_equal(len4s, len5s);
    assert_memory_equal(s4, s5, len4s);
    st_input rest[3] = {part(&in[0], 700, in[0].n), part(&in[1], 700, in[1].n),
                        part(&in[2], 700, in[2].n)};
    tu_rng_init(79);
    st_feed(e4, rest, 3, 40, 0.5);
    tu_rng_init(79);
    st_feed(e5, rest, 3, 40, 0.5);
    const fed fd = {in, 3};
    assert_same_output(&fd, &env_4, 0, 0, &env_5, 0, 0);
    /* the magnitude score restarted: none before TSS_ROBUST_MIN finite magnitudes after
     * the restore, then some (the uninterrupted engine has them at once) */
    for (int k = 0; k < 3; k++) {
        size_t seen = 0, scored = 0;
        for (size_t j = 0; j < env_4.scores.n; j++) {
            const st_score *x = &env_4.scores.v[j];
            if (strcmp(x->id, ids[k]) != 0)
                continue;
            if (seen < TSS_ROBUST_MIN && !isnan(x->magnitude_score))
                fail_msg("%s: a magnitude score after %zu values of a version 4 restore", ids[k],
                         seen);
            scored += !isnan(x->magnitude_score);
            seen += isfinite(x->magnitude);
        }
        assert_true(seen > TSS_ROBUST_MIN + 100);
        assert_true(scored > 100);
    }
    free(buf), free(buf4), free(s4), free(s5);
    tss_engine_destroy(&a), tss_engine_destroy(&e4), tss_engine_destroy(&e5);
    for (int k = 0; k < 3; k++)
        st_input_free(&in[k]), st_env_free(envs[k]);
}

/* One hostile edit of a version 5 file (b, *n, room for 16 more bytes) whose records
 * are r. */
typedef void (*ck_edit)(unsigned char *b, size_t *n, const ck_record *r);

static void set_mag_n(unsigned char *b, const ck_record *r, uint32_t n) {
    put_le(b + r->mag, n, 4);
}
static void e_n_over(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, set_mag_n(b, &r[0], TSS_ROBUST_HISTORY + 1);
}
static void e_n_huge(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, set_mag_n(b, &r[0], UINT32_MAX);
}
static void e_n_past_end(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, set_mag_n(b, &r[1], TSS_ROBUST_HISTORY); /* the file ends before 8000 more bytes */
}
static void e_nan_value(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, put_f64(b + r[0].mag + CK_MAG_HEAD + 8 * 3, NAN);
}
static void e_inf_value(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, put_f64(b + r[0].mag + CK_MAG_HEAD + 8 * (r[0].mag_n - 1), -INFINITY);
}
static void e_since_refresh(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, put_le(b + r[0].mag + 4, TSS_ROBUST_REFRESH, 4);
}
static void e_since_unready(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, put_le(b + r[1].mag + 4, 1, 4);
}
static void e_ready_two(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, b[r[0].mag + 8] = 2;
}
static void e_unready_full(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, b[r[0].mag + 8] = 0;
}
static void e_ready_short(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, b[r[1].mag + 8] = 1;
}
static void e_nan_median(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, put_f64(b + r[0].mag + 9, NAN);
}
static void e_inf_mad(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, put_f64(b + r[0].mag + 17, INFINITY);
}
static void e_negative_mad(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, put_f64(b + r[0].mag + 17, -1.0);
}
/* One value in the history of stream 2, whose automatic m is not known yet. */
static void e_values_without_m(unsigned char *b, size_t *n, const ck_record *r) {
    const size_t at = r[2].mag + CK_MAG_HEAD; /* one value inserted here */
    memmove(b + at + 8, b + at, *n - at);
    put_f64(b + at, 1.0);
    *n += 8;
    set_mag_n(b, &r[2], 1);
    put_le(b + *n - 12, *n - 28, 8);
}
static void e_view(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, b[r[0].views] = TSS_VIEW_LEVEL + 1;
}
static void e_peak_score_over(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, put_f64(b + r[0].views + 1 + 8, 1.5); /* the magnitude score */
}
static void e_peak_score_negative(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, put_f64(b + r[0].views + 1, -0.25); /* the shape score */
}
static void e_peak_score_inf(unsigned char *b, size_t *n, const ck_record *r) {
    (void)n, put_f64(b + r[0].views + 1 + 16, INFINITY); /* the level score */
}

/* Each field of the magnitude history and of the peak's views out of what the engine
 * can hold, behind a valid checksum: refused with a message naming the stream and the
 * field, the engine left empty. Stream 0 of the file holds a full history (scoring),
 * stream 1 a short one (not yet), stream 2 none (its automatic m is not known yet). */
static void test_hostile_magnitude_history(void **state) {
    (void)state;
    tu_case_seed(6006);
    st_env env = {0};
    tss_params p = tss_params_default(), q = tss_params_default();
    p.window = 64, p.subsequence = 8, p.hop = 16, p.warmup = 32;
    q.window = 64, q.subsequence = 8, q.hop = 64, q.warmup = 32;
    tss_params c = tss_params_default();
    c.window = 64, c.hop = 16, c.warmup = 32; /* automatic m */
    st_env_add(&env, "full", p), st_env_add(&env, "short", q), st_env_add(&env, "cold", c);
    tss_engine *e = st_engine(&env, 1, 4);
    st_input in[3] = {st_make_input("full", 1200, 0, 0, 0), st_make_input("short", 150, 0, 0, 0),
                      st_make_input("cold", 20, 0, 0, 0)};
    for (int k = 0; k < 2; k++) /* in this order: records 0, 1, 2 */
        st_feed(e, &in[k], 1, 9, 0.5);
    /* (staged until the warm-up is in: st_feed would wait for them) */
    assert_int_equal(tss_engine_ingest(e, "cold", 0, NULL, 0, ST_PERIOD, in[2].v, in[2].n), TSS_OK);
    char err[256] = "";
    if (tss_engine_tick(e, err, sizeof err) != 0)
        fail_msg("tick: %s", err);
    assert_true(stream_of(e, "full")->det.mag.ready);
    assert_false(stream_of(e, "short")->det.mag.ready);
    assert_true(stream_of(e, "short")->det.mag.n > 0);
    assert_int_equal(stream_of(e, "cold")->p.subsequence, 0);
    size_t len;
    unsigned char *buf = save_bytes(e, &len);
    tss_engine_destroy(&e);
    ck_record r[3];
    assert_int_equal(ck_records(buf, len, 5, r, 3), 3);
    assert_true(r[0].mag_n == TSS_ROBUST_HISTORY && r[1].mag_n < TSS_ROBUST_MIN);
    assert_int_equal(r[2].mag_n, 0);
    assert_true(len - (r[1].mag + CK_MAG_HEAD) < 8 * TSS_ROBUST_HISTORY);
    static const struct {
        const char *name;
        ck_edit edit;
        const char *reason;
    } cases[] = {
        {"more values than the history holds", e_n_over,
         "stream 0: bad magnitude history: 1001 values"},
        {"a count of 2^32 - 1", e_n_huge, "stream 0: bad magnitude history: 4294967295 values"},
        {"more values than the rest of the file", e_n_past_end,
         "stream 1: bad magnitude history: 1000 values"},
        {"a NaN value", e_nan_value, "stream 0: non-finite value in the magnitude history"},
        {"an infinite value", e_inf_value, "stream 0: non-finite value in the magnitude history"},
        {"a refresh's worth since the last", e_since_refresh,
         "stream 0: bad magnitude history state: 1000 values, "},
        {"values since a refresh before the first", e_since_unready,
         "stream 1: bad magnitude history state"},
        {"ready 2", e_ready_two, "stream 0: bad magnitude history state"},
        {"not ready with a full history", e_unready_full, "stream 0: bad magnitude history state"},
        {"ready with a short history", e_ready_short, "stream 1: bad magnitude history state"},
        {"a NaN median", e_nan_median, "stream 0: bad magnitude history state"},
        {"an infinite MAD", e_inf_mad, "stream 0: bad magnitude history state"},
        {"a negative MAD", e_negative_mad, "stream 0: bad magnitude history state"},
        {"values before m is known", e_values_without_m,
         "stream 2: bad magnitude history: 1 values"},
        {"a peak view past the last", e_view, "stream 0: bad event peak views (view 4)"},
        {"a peak score over 1", e_peak_score_over, "stream 0: bad event peak views"},
        {"a negative peak score", e_peak_score_negative, "stream 0: bad event peak views"},
        {"an infinite peak score", e_peak_score_inf, "stream 0: bad event peak views"},
    };
    unsigned char *bad = malloc(len + 16);
    assert_non_null(bad);
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        memcpy(bad, buf, len);
        size_t n = len;
        cases[k].edit(bad, &n, r);
        st_ckpt_fix_crc(bad, n);
        e = st_engine(&env, 1, 4);
        const int rc = load_bytes(e, bad, n, err, sizeof err);
        if (rc == 0 || !strstr(err, cases[k].reason))
            fail_msg("%s: expected a refusal naming \"%s\", got %d \"%s\"", cases[k].name,
                     cases[k].reason, rc, err);
        assert_int_equal(tss_engine_stream_count(e), 0);
        tss_engine_destroy(&e);
    }
    e = st_engine(&env, 1, 4); /* the intact file loads */
    if (load_bytes(e, buf, len, err, sizeof err) != 0)
        fail_msg("the intact file: %s", err);
    tss_engine_destroy(&e);
    free(bad), free(buf);
    for (int k = 0; k < 3; k++)
        st_input_free(&in[k]);
    st_env_free(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_equals_uninterrupted),
        cmocka_unit_test(test_hostile_checkpoints),
        cmocka_unit_test(test_read_error_is_not_corruption),
        cmocka_unit_test(test_incremental_groups),
        cmocka_unit_test(test_fingerprint_follows_magnitude_history),
        cmocka_unit_test(test_duplicate_records),
        cmocka_unit_test(test_magnitude_history_round_trip),
        cmocka_unit_test(test_version_4_loads),
        cmocka_unit_test(test_hostile_magnitude_history),
    };
    return TU_RUN_GROUP("stream_checkpoint", tests, NULL, NULL);
}
