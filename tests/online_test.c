/* SPDX-License-Identifier: Apache-2.0 */
/* online_test.c - the batched online left-NN kernel (kernels/online.h) against the
 * brute-force reference and the batch left matrix profile, on either backend (on a
 * CUDA ctx the harness's arrays are copied to the device around each call).
 *
 * A small harness keeps one or several mirrored rings the way the stream engine does
 * and feeds them in runs of random length; after every run each new subsequence's
 * lnn and neighbour are compared with the reference over the window it completed in.
 * Tolerances: distances within TOL_REL relative (1e-9; 1e-6 for the drift case, the
 * figure DESIGN 4.1 asks for), neighbours exact unless the reference's choice is tied
 * within that tolerance. The drift case streams 10^7 samples (10^6 with
 * TSM_TEST_QUICK) with a large offset through a small window. */
#include "testutil.h"
#include "tu_dev.h"

#include "online.h"
#include "online_slices.h"
#include "mp.h"
#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One stream: a mirrored ring of cap = W + slack samples and the kernel's arrays. */
typedef struct {
    uint32_t W, m, excl, cap, head, fill;
    double *ring, *mu, *inv, *qt, *nn;
    uint8_t *kind;
    int64_t *idx;
    double *m2, *mag; /* the magnitude view (NULL: not asked for) */
    int64_t *midx;
    tsm_online_state st;
} harness;

static void h_init(harness *h, uint32_t W, uint32_t m, uint32_t excl, uint32_t slack) {
    memset(h, 0, sizeof *h);
    h->W = W, h->m = m, h->excl = excl, h->cap = W + slack;
    h->ring = calloc(2 * h->cap, sizeof *h->ring);
    h->mu = calloc(2 * h->cap, sizeof *h->mu);
    h->inv = calloc(2 * h->cap, sizeof *h->inv);
    h->kind = calloc(2 * h->cap, 1);
    h->qt = calloc(W - m + 1, sizeof *h->qt);
    h->nn = calloc(slack, sizeof *h->nn);
    h->idx = calloc(slack, sizeof *h->idx);
    h->m2 = calloc(2 * h->cap, sizeof *h->m2);
    h->mag = calloc(slack, sizeof *h->mag);
    h->midx = calloc(slack, sizeof *h->midx);
    assert_true(h->ring && h->mu && h->inv && h->kind && h->qt && h->nn && h->idx && h->m2 &&
                h->mag && h->midx);
}

static void h_free(harness *h) {
    free(h->ring), free(h->mu), free(h->inv), free(h->kind), free(h->qt), free(h->nn);
    free(h->idx), free(h->m2), free(h->mag), free(h->midx);
}

/* Appends v[0..n-1] (n <= slack) to the ring and describes the kernel's job. */
static void h_job(harness *h, const double *v, uint32_t n, tsm_online_job *jb) {
    uint32_t pos0 = (h->head + h->cap - h->fill) % h->cap;
    *jb =
        (tsm_online_job){h->ring, h->mu,   h->inv, h->kind, h->qt, &h->st,  h->nn, h->idx, h->cap,
                         pos0,    h->fill, n,      h->W,    h->m,  h->excl, h->m2, h->mag, h->midx};
    for (uint32_t k = 0; k < n; k++) {
        h->ring[h->head] = h->ring[h->head + h->cap] = v[k];
        h->head = (h->head + 1) % h->cap;
    }
}

/* tsm_online_update on the jobs (host arrays); on a CUDA
 * ctx through device copies of every array, copied back afterwards. */
static tsm_status update(tsm_ctx *ctx, tsm_online_job *jobs, size_t nj) {
    if (!tu_on_device(ctx))
        return tsm_online_update(ctx, jobs, nj);
    tsm_online_job *dj = malloc(nj * sizeof *dj);
    assert_non_null(dj);
    for (size_t q = 0; q < nj; q++) {
        const tsm_online_job *jb = &jobs[q];
        const size_t c2 = 2 * (size_t)jb->cap, nq = jb->window - jb->m + 1;
        dj[q] = *jb;
        dj[q].ring = tu_dev_dup(jb->ring, c2 * sizeof *jb->ring);
        dj[q].mu = tu_dev_dup(jb->mu, c2 * sizeof *jb->mu);
        dj[q].inv = tu_dev_dup(jb->inv, c2 * sizeof *jb->inv);
        dj[q].kind = tu_dev_dup(jb->kind, c2);
        dj[q].qt = tu_dev_dup(jb->qt, nq * sizeof *jb->qt);
        dj[q].state = tu_dev_dup(jb->state, sizeof *jb->state);
        dj[q].nn = tu_dev_dup(jb->nn, jb->nnew * sizeof *jb->nn);
        dj[q].nn_index = tu_dev_dup(jb->nn_index, jb->nnew * sizeof *jb->nn_index);
        if (jb->mag) {
            dj[q].m2 = tu_dev_dup(jb->m2, c2 * sizeof *jb->m2);
            dj[q].mag = tu_dev_dup(jb->mag, jb->nnew * sizeof *jb->mag);
            dj[q].mag_index = tu_dev_dup(jb->mag_index, jb->nnew * sizeof *jb->mag_index);
        }
    }
    tsm_status st = tsm_online_update(ctx, dj, nj);
    for (size_t q = 0; q < nj; q++) {
        const tsm_online_job *jb = &jobs[q], *d = &dj[q];
        const size_t c2 = 2 * (size_t)jb->cap, nq = jb->window - jb->m + 1;
        tu_dev_get(jb->mu, d->mu, c2 * sizeof *jb->mu);
        tu_dev_get(jb->inv, d->inv, c2 * sizeof *jb->inv);
        tu_dev_get(jb->kind, d->kind, c2);
        tu_dev_get(jb->qt, d->qt, nq * sizeof *jb->qt);
        tu_dev_get(jb->state, d->state, sizeof *jb->state);
        tu_dev_get(jb->nn, d->nn, jb->nnew * sizeof *jb->nn);
        tu_dev_get(jb->nn_index, d->nn_index, jb->nnew * sizeof *jb->nn_index);
        tu_dev_free((void *)d->ring), tu_dev_free(d->mu), tu_dev_free(d->inv);
        tu_dev_free(d->kind), tu_dev_free(d->qt), tu_dev_free(d->state), tu_dev_free(d->nn);
        tu_dev_free(d->nn_index);
        if (jb->mag) {
            tu_dev_get(jb->m2, d->m2, c2 * sizeof *jb->m2);
            tu_dev_get(jb->mag, d->mag, jb->nnew * sizeof *jb->mag);
            tu_dev_get(jb->mag_index, d->mag_index, jb->nnew * sizeof *jb->mag_index);
            tu_dev_free(d->m2), tu_dev_free(d->mag), tu_dev_free(d->mag_index);
        }
    }
    free(dj);
    return st;
}

/* Whether got matches the reference's squared distance want2: d2 within tol_d2
 * (absolute) or d within tol_rel (relative). */
static int close_enough(double got, double want2, double tol_d2, double tol_rel) {
    double want = sqrt(want2);
    return fabs(got * got - want2) <= tol_d2 || fabs(got - want) <= tol_rel * want;
}

/* The scale of the plain distances of subsequence i's row (issue 28): 2m times the
 * largest squared deviation of the window x[base .. i + m - 1] from the kernel's
 * centre c. The kernel forms S_i + S_j - 2 QT from sums centred at c (re-chosen at each
 * exact refresh, so a wandering series drifts away from it between two), and rounding
 * errs by a small multiple of eps times that much: the distance of two subsequences
 * that match closely cancels it out, so its tolerance is absolute. */
static double raw_scale(const double *x, size_t base, size_t i, size_t m, double c) {
    double most = 0;
    for (size_t k = base; k < i + m; k++)
        most = fmax(most, (x[k] - c) * (x[k] - c));
    return 2.0 * (double)m * most;
}

/* The least d2(x, m, i, j) over the left neighbours j in [base, i - excl] (ref_d2 or
 * ref_raw_d2), by brute force; *bj its j (the smallest of ties), -1 when there is none. */
static double brute_lnn(const double *x, size_t m, size_t base, size_t i, size_t excl,
                        double (*d2)(const double *, size_t, size_t, size_t), int64_t *bj) {
    double best = INFINITY;
    *bj = -1;
    for (size_t j = base; j + excl <= i; j++) {
        const double d = d2(x, m, i, j);
        if (d < best)
            best = d, *bj = (int64_t)j;
    }
    return best;
}

/* Checks the magnitude view of new sample k (completing subsequence i over the window
 * from base) against the brute-force plain distances: within tol_rel of the scale
 * (raw_scale) on d^2, neighbours exact unless tied within that. */
static void check_mag(const harness *h, const double *x, size_t k, size_t base, size_t i,
                      double tol_rel) {
    int64_t bj;
    const double best = brute_lnn(x, h->m, base, i, h->excl, ref_raw_d2, &bj);
    if (bj < 0) {
        assert_true(isinf(h->mag[k]) && h->midx[k] == -1);
        return;
    }
    const double tol = tol_rel * (raw_scale(x, base, i, h->m, h->st.c) + 1e-300);
    const double got = h->mag[k];
    if (!(fabs(got * got - best) <= tol))
        fail_msg("seed %llu: W %u m %u sample %zu: magnitude %.17g, reference %.17g (neighbour "
                 "%lld vs %lld)",
                 (unsigned long long)tu_seed, h->W, h->m, i + h->m - 1, got, sqrt(best),
                 (long long)h->midx[k], (long long)bj);
    const int64_t j = h->midx[k];
    if (j != bj && (j < (int64_t)base || (size_t)j + h->excl > i ||
                    !(fabs(ref_raw_d2(x, h->m, i, (size_t)j) - best) <= 2 * tol)))
        fail_msg("seed %llu: W %u sample %zu: magnitude neighbour %lld, reference %lld (not tied)",
                 (unsigned long long)tu_seed, h->W, i + h->m - 1, (long long)j, (long long)bj);
}

/* Checks the outputs of a job against the reference on x = ring + pos0. */
static void h_check(const harness *h, const tsm_online_job *jb, double tol_d2, double tol_rel) {
    const double *x = h->ring + jb->pos0;
    for (uint32_t k = 0; k < jb->nnew; k++) {
        size_t e = jb->fill + k, base = e + 1 > h->W ? e + 1 - h->W : 0;
        if (e + 1 - base < h->m) {
            assert_true(isnan(h->nn[k]) && h->idx[k] == -1);
            if (jb->mag)
                assert_true(isnan(h->mag[k]) && h->midx[k] == -1);
            continue;
        }
        if (jb->mag)
            check_mag(h, x, k, base, e + 1 - h->m, tol_rel > 1e-9 ? tol_rel : 1e-10);
        size_t i = e + 1 - h->m;
        int64_t bj;
        const double best = brute_lnn(x, h->m, base, i, h->excl, ref_d2, &bj);
        if (bj < 0) {
            assert_true(isinf(h->nn[k]) && h->idx[k] == -1);
            continue;
        }
        if (!close_enough(h->nn[k], best, tol_d2, tol_rel))
            fail_msg("seed %llu: W %u m %u sample %zu: lnn %.17g, reference %.17g (neighbour "
                     "%lld vs %lld)",
                     (unsigned long long)tu_seed, h->W, h->m, e, h->nn[k], sqrt(best),
                     (long long)h->idx[k], (long long)bj);
        int64_t j = h->idx[k];
        if (j != bj && (j < (int64_t)base || (size_t)j + h->excl > i ||
                        !close_enough(sqrt(ref_d2(x, h->m, i, (size_t)j)), best, tol_d2, tol_rel)))
            fail_msg("seed %llu: W %u sample %zu: neighbour %lld, reference %lld (not tied)",
                     (unsigned long long)tu_seed, h->W, e, (long long)j, (long long)bj);
    }
}

/* Series with constant stretches, planted bursts, level shifts and changes of scale
 * (what the magnitude view is for), around offset. */
static double *mixed_series(size_t n, double offset) {
    double *t = tu_series(n);
    for (size_t at = 40; at + 60 < n; at += 97 + (size_t)(tu_uniform() * 200)) {
        const double u = tu_uniform();
        if (u < 0.3)
            tu_fill(t, at, 10 + (size_t)(tu_uniform() * 40), t[at]);
        else if (u < 0.45)
            tu_plant_anomaly(t, at, 20, 3.0);
        else if (u < 0.55) /* a level shift from here on */
            for (size_t k = at; k < n; k++)
                t[k] += 25.0;
        else if (u < 0.65) /* a stretch at four times the scale */
            for (size_t k = at + 1; k < at + 50; k++)
                t[k] = t[at] + 4.0 * (t[k] - t[at]);
    }
    for (size_t k = 0; k < n; k++)
        t[k] += offset;
    return t;
}

/* Feeds the S series t[s] (n samples each) through the harnesses h[s] in batched
 * calls, each stream a random run of 0 .. slack samples per call, and checks every
 * call's outputs against the reference; stream restart_s restarts its window (fill 0,
 * state invalid) at call 7 (-1: none). */
static void feed_checked(tsm_ctx *ctx, harness *h, double *const *t, int S, size_t n,
                         uint32_t slack, int restart_s) {
    tsm_online_job jobs[8];
    size_t fed[8] = {0};
    assert_true(S <= 8);
    for (int round = 0;; round++) {
        size_t nj = 0;
        int idx[8];
        for (int s = 0; s < S; s++) {
            uint32_t k = (uint32_t)(tu_uniform() * (slack + 1));
            if (fed[s] + k > n)
                k = (uint32_t)(n - fed[s]);
            if (k == 0)
                continue;
            if (round == 7 && s == restart_s) /* a restart: the window empties */
                h[s].fill = 0, h[s].st.valid = 0;
            h_job(&h[s], t[s] + fed[s], k, &jobs[nj]);
            idx[nj++] = s;
            fed[s] += k;
        }
        if (nj == 0)
            break;
        assert_int_equal(update(ctx, jobs, nj), TSM_OK);
        for (size_t q = 0; q < nj; q++) {
            harness *hs = &h[idx[q]];
            h_check(hs, &jobs[q], TU_D2_TOL(hs->m), 1e-9);
            uint32_t f = hs->fill + jobs[q].nnew;
            hs->fill = f < hs->W ? f : hs->W;
        }
    }
}

/* S streams (window W[s], m[s], excl[s]) of n samples each, stream far_s's series
 * offset by 1e6, through feed_checked (runs of up to slack samples; restart_s as
 * there). */
static void check_streams(tsm_ctx *ctx, int S, const uint32_t *W, const uint32_t *m,
                          const uint32_t *excl, uint32_t slack, size_t n, int far_s,
                          int restart_s) {
    harness h[8];
    double *t[8];
    assert_true(S <= 8);
    for (int s = 0; s < S; s++) {
        h_init(&h[s], W[s], m[s], excl[s], slack);
        t[s] = mixed_series(n, s == far_s ? 1e6 : 0.0);
    }
    feed_checked(ctx, h, t, S, n, slack, restart_s);
    for (int s = 0; s < S; s++) {
        h_free(&h[s]);
        free(t[s]);
    }
}

/* Several streams of different shapes in one batched call, fed in random runs: every
 * new subsequence against the reference (exactness, constants, ties, window slide). */
static void test_batched_exact(void **state) {
    (void)state;
    tu_case_seed(41);
    tsm_ctx *ctx = tu_ctx();
    enum { S = 4 };
    const uint32_t W[S] = {40, 64, 100, 33}, m[S] = {8, 16, 5, 3}, excl[S] = {8, 4, 5, 1};
    check_streams(ctx, S, W, m, excl, 50, tu_quick() ? 800 : 2500, 1, 2);
    tsm_ctx_destroy(&ctx);
}

/* Long runs (up to 700 new samples per call, the CUDA backend splits them into chunks
 * of OB_C = 128 rows with a direct first row each) through an exact refresh of the QT
 * row (every 4096 rows) inside a run: every new subsequence against the reference. */
static void test_long_runs(void **state) {
    (void)state;
    tu_case_seed(43);
    tsm_ctx *ctx = tu_ctx();
    enum { S = 2 };
    const uint32_t W[S] = {300, 90}, m[S] = {16, 8}, excl[S] = {4, 8};
    check_streams(ctx, S, W, m, excl, 700, tu_quick() ? 5000 : 9000, 0, -1);
    tsm_ctx_destroy(&ctx);
}

/* Runs longer than a pass of the CUDA backend (OB_PASS = 4096 new samples: such a job
 * goes through several passes, advanced over the samples done): against the
 * reference, as above. */
static void test_runs_over_a_pass(void **state) {
    (void)state;
    tu_case_seed(44);
    tsm_ctx *ctx = tu_ctx();
    const uint32_t W = 64, m = 8, excl = 8, slack = 9000;
    harness h;
    h_init(&h, W, m, excl, slack);
    double *t = mixed_series(tu_quick() ? 12000 : 30000, 5e5);
    feed_checked(ctx, &h, &t, 1, tu_quick() ? 12000 : 30000, slack, 0);
    h_free(&h);
    free(t);
    tsm_ctx_destroy(&ctx);
}

/* The CUDA backend's cut of a call into passes, slices and chunks (online_slices.h),
 * on the host: every job appears once per pass it needs, advanced over the samples
 * done; a slice's chunk rows fit OB_ROWS_BYTES unless it holds one job; its chunk table
 * lists chunks_of(nnew) chunks per job; row offsets follow each other. */
static void test_cuda_slices(void **state) {
    (void)state;
    enum { NJ = 7 };
    const uint32_t W[NJ] = {64, 64, 64, 64, 64, 1u << 20, 1u << 20};
    const uint32_t nnew[NJ] = {0, 9000, 100, 4096, 4097, 4096, 300};
    static double nn[NJ][10000];
    tsm_online_job jobs[NJ];
    for (int q = 0; q < NJ; q++)
        jobs[q] = (tsm_online_job){.nn = nn[q],
                                   .nn_index = (int64_t *)nn[q],
                                   .cap = W[q] + 9000,
                                   .pos0 = 17,
                                   .fill = W[q] / 2,
                                   .nnew = nnew[q],
                                   .window = W[q],
                                   .m = 8,
                                   .excl = 8};
    ob_slice sl[NJ * 3];
    size_t bytes, maxrows, maxjobs;
    const size_t ns = plan_slices(jobs, NJ, sl, &bytes, &maxrows, &maxjobs);
    unsigned char *buf = malloc(bytes);
    assert_non_null(buf);
    fill_slices(jobs, NJ, sl, ns, buf);
    uint32_t seen[NJ] = {0}; /* samples done per job so far */
    int last_q = -1, last_pass = 0;
    for (size_t s = 0; s < ns; s++) {
        const tsm_online_job *jj = (const tsm_online_job *)(buf + sl[s].at_jobs);
        const ob_place *off = (const ob_place *)(buf + sl[s].at_off);
        const ob_chunk *ch = (const ob_chunk *)(buf + sl[s].at_chunks);
        size_t rows = 0, c = 0;
        for (size_t n = 0; n < sl[s].n; n++) {
            const int q = (int)((jj[n].nn - &nn[0][0]) / 10000);
            assert_true(q >= 0 && q < NJ);
            const uint32_t done = (uint32_t)(jj[n].nn - nn[q]);
            assert_int_equal(done, seen[q]);
            const int pass = (int)(done / OB_PASS); /* passes in order, jobs in order */
            assert_true(pass > last_pass || (pass == last_pass && q > last_q));
            const uint32_t fill = jobs[q].fill + done < W[q] ? jobs[q].fill + done : W[q];
            assert_int_equal(jj[n].fill, fill);
            assert_int_equal(jj[n].pos0, (17 + jobs[q].fill + done - fill) % jobs[q].cap);
            assert_int_equal(jj[n].nnew, nnew[q] - done < OB_PASS ? nnew[q] - done : OB_PASS);
            assert_int_equal(off[n].row, rows / sizeof(double));
            assert_int_equal(off[n].shift, jobs[q].fill + done - fill); /* x[0] moved by */
            for (uint32_t k = 0; k < chunks_of(jj[n].nnew); k++, c++)
                assert_true(ch[c].q == n && ch[c].c == k);
            rows += row_bytes(&jj[n]);
            seen[q] += jj[n].nnew, last_q = q, last_pass = pass;
        }
        assert_int_equal(c, sl[s].nchunks);
        assert_true(rows <= OB_ROWS_BYTES || sl[s].n == 1);
        assert_true(rows <= maxrows && sl[s].n <= maxjobs);
    }
    for (int q = 0; q < NJ; q++)
        assert_int_equal(seen[q], nnew[q]);
    free(buf);
}

/* Inconsistent sizes are refused before anything runs. */
static void test_rejects_bad_jobs(void **state) {
    (void)state;
    tsm_ctx *ctx = tu_ctx();
    harness h;
    h_init(&h, 40, 8, 8, 10);
    double v[5] = {1, 2, 3, 4, 5};
    tsm_online_job jb;
    h_job(&h, v, 5, &jb);
    jb.nnew = 51; /* fill + nnew > cap = 50 */
    assert_int_equal(tsm_online_update(ctx, &jb, 1), TSM_EINVAL);
    h_job(&h, v, 5, &jb);
    jb.m = 2;
    assert_int_equal(tsm_online_update(ctx, &jb, 1), TSM_EINVAL);
    assert_non_null(strstr(tsm_ctx_error(ctx), "job 0"));
    h_job(&h, v, 5, &jb);
    jb.qt = NULL;
    assert_int_equal(tsm_online_update(ctx, &jb, 1), TSM_EINVAL);
    assert_int_equal(h.st.valid, 0); /* nothing ran */
    h_free(&h);
    tsm_ctx_destroy(&ctx);
}

/* DESIGN 4.1: after 10^7 streamed samples (offset 10^6, a wandering random walk) the
 * online distances still match a batch recomputation to 1e-6 relative: checked
 * against the reference every 10^6 samples and against the batch left matrix profile
 * (tsm_mp) of the final window. */
static void test_drift_long_stream(void **state) {
    (void)state;
    tu_case_seed(4242);
    tsm_ctx *ctx = tu_ctx();
    const uint32_t W = 64, m = 8, slack = 1000;
    /* Quick (sanitizer) runs: 2 * 10^5 samples, checked every 10^5; compute-sanitizer
     * makes each call of the CUDA backend slow. The full run takes 10^7. */
    const size_t total = tu_quick() ? 200000 : 10000000, every = tu_quick() ? 100000 : 1000000;
    harness h;
    h_init(&h, W, m, m, slack);
    double *v = malloc(slack * sizeof *v), x = 1e6;
    assert_non_null(v);
    tsm_online_job jb;
    for (size_t fed = 0; fed < total; fed += slack) {
        for (uint32_t k = 0; k < slack; k++)
            v[k] = (x += tu_normal());
        h_job(&h, v, slack, &jb);
        assert_int_equal(update(ctx, &jb, 1), TSM_OK);
        if ((fed + slack) % every == 0)
            h_check(&h, &jb, 0.0, 1e-6);
        h.fill = W;
    }
    /* the batch left profile of the final window */
    const double *win = h.ring + (h.head + h.cap - W) % h.cap;
    tsm_stats *s = NULL;
    assert_int_equal(tsm_stats_new(ctx, win, W, m, &s), TSM_OK);
    double *lmp = malloc(s->N * sizeof *lmp);
    int64_t *lmpi = malloc(s->N * sizeof *lmpi);
    assert_int_equal(tsm_mp(ctx, s, m, NULL, NULL, lmp, lmpi), TSM_OK);
    double got = h.nn[slack - 1], want = lmp[s->N - 1];
    if (!(fabs(got - want) <= 1e-6 * want))
        fail_msg("seed %llu: after %zu samples lnn %.17g, batch %.17g", (unsigned long long)tu_seed,
                 total, got, want);
    free(lmp), free(lmpi), free(v);
    tsm_stats_destroy(&s);
    h_free(&h);
    tsm_ctx_destroy(&ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batched_exact),    cmocka_unit_test(test_long_runs),
        cmocka_unit_test(test_runs_over_a_pass), cmocka_unit_test(test_cuda_slices),
        cmocka_unit_test(test_rejects_bad_jobs), cmocka_unit_test(test_drift_long_stream),
    };
    return TU_RUN_GROUP("online", tests, NULL, NULL);
}
