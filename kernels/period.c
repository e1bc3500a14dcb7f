/* SPDX-License-Identifier: Apache-2.0 */
/* period.c - the dominant period by autocorrelation, and the automatic m (period.h). */
#include "period.h"

#include <math.h>
#include <stdlib.h>

/* Fraction of the best candidate's r that an earlier candidate needs to win. */
#define NEAR_BEST 0.8
/* Bartlett band: the hills at P and near 2P must both reach this many standard errors
 * (one-sided about 7% each for noise, well under 1% for both). */
#define SIGNIFICANT 1.5
/* A residual RMS below this fraction of the largest |x| is rounding: no period. */
#define ROUNDING 1e-10

/* Detrends the finite samples of x[0..n) into y (least-squares line over the finite
 * samples removed) and sets y[i] = 0, w[i] = 0 where x[i] is not finite (w[i] = 1
 * elsewhere). Two passes (means, then centred sums) so that a large offset or slope does
 * not cost precision. Returns the number of finite samples; *flat is set when what is
 * left is at rounding level (a constant or a straight line). O(n). */
static size_t detrend(const double *x, size_t n, double *y, unsigned char *w, int *flat) {
    size_t nf = 0;
    double st = 0, sx = 0, big = 0;
    for (size_t i = 0; i < n; i++) {
        w[i] = isfinite(x[i]) != 0;
        if (w[i]) {
            nf++;
            st += (double)i;
            sx += x[i];
            big = fmax(big, fabs(x[i]));
        }
    }
    *flat = 1;
    if (nf < 2)
        return nf;
    double tm = st / (double)nf, xm = sx / (double)nf, stt = 0, stx = 0;
    for (size_t i = 0; i < n; i++)
        if (w[i]) {
            stt += ((double)i - tm) * ((double)i - tm);
            stx += ((double)i - tm) * (x[i] - xm);
        }
    double b = stx / stt, ss = 0; /* stt > 0: two distinct finite indices */
    for (size_t i = 0; i < n; i++) {
        y[i] = w[i] ? x[i] - xm - b * ((double)i - tm) : 0.0;
        ss += y[i] * y[i];
    }
    *flat = !(sqrt(ss / (double)nf) > ROUNDING * big);
    return nf;
}

/* r[k] for k = 0..K (r[0] = 1): the ACF of y with pair counts from w (all pairs count
 * when every sample is finite). r[k] = 0 when lag k has no finite pair. O(n K). */
static void acf(const double *y, const unsigned char *w, size_t n, size_t nf, size_t K, double *r) {
    double c0 = 0;
    for (size_t i = 0; i < n; i++)
        c0 += y[i] * y[i];
    c0 /= (double)nf;
    for (size_t k = 0; k <= K; k++) {
        double s = 0;
        size_t pairs = n - k;
#pragma omp simd reduction(+ : s)
        for (size_t i = 0; i < n - k; i++)
            s += y[i] * y[i + k];
        if (nf < n) {
            pairs = 0;
            for (size_t i = 0; i < n - k; i++)
                pairs += w[i] & w[i + k];
        }
        r[k] = pairs ? s / (double)pairs / c0 : 0.0;
    }
}

/* The maximal run [*a, *b] of lags around k (1 <= lag <= K) where r >= level. */
static void run_above(const double *r, size_t K, size_t k, double level, size_t *a, size_t *b) {
    *a = *b = k;
    while (*a > 1 && r[*a - 1] >= level)
        --*a;
    while (*b < K && r[*b + 1] >= level)
        ++*b;
}

/* se[k] for k = 0..K: Bartlett's standard error of r[k] when the true ACF vanishes
 * beyond lag k - 1, se[k]^2 = (1 + 2 sum_{0<j<k} r[j]^2) / nf. O(K). */
static void bartlett(const double *r, size_t K, size_t nf, double *se) {
    double sum2 = 0;
    se[0] = 0;
    for (size_t k = 1; k <= K; k++) {
        se[k] = sqrt((1.0 + 2.0 * sum2) / (double)nf);
        sum2 += r[k] * r[k];
    }
}

/* Whether lag k is a candidate period (period.h): a local maximum of r, high, significant,
 * rising >= TSM_PERIOD_MIN_RISE above low (the lowest r below k), and confirmed by a
 * significant hill within k/8 of 2k. Needs 2k + k/8 + 2 <= K. */
static int candidate(const double *r, const double *se, size_t k, double low, double high) {
    if (!(r[k] >= r[k - 1] && r[k] > r[k + 1] && r[k] >= high && r[k] >= SIGNIFICANT * se[k] &&
          r[k] - low >= TSM_PERIOD_MIN_RISE))
        return 0;
    size_t d = k / 8 > 2 ? k / 8 : 2;
    for (size_t j = 2 * k - d; j <= 2 * k + d; j++)
        if (r[j] >= SIGNIFICANT * se[j])
            return 1;
    return 0;
}

/* The period in r[0..K] by the rules of period.h, or 0: candidates at lags lo..L
 * (2 <= lo <= L, 2L + L/8 + 2 <= K), nf finite samples behind r, se from bartlett().
 * O(K). */
static size_t pick(const double *r, const double *se, size_t K, size_t lo, size_t L, size_t nf) {
    double noise = 1.0 / sqrt((double)nf);
    double high = fmax(TSM_PERIOD_MIN_R, 4.0 * noise);
    /* The best candidate's r, then the first candidate nearly as high. */
    double low = r[1], best = -1;
    for (size_t k = 2; k <= L; k++) {
        low = fmin(low, r[k - 1]);
        if (k >= lo && candidate(r, se, k, low, high))
            best = fmax(best, r[k]);
    }
    if (best < 0)
        return 0;
    double level = fmin(NEAR_BEST * best, best - 2.0 * noise);
    size_t first = 0;
    low = r[1];
    for (size_t k = 2; k <= L && !first; k++) {
        low = fmin(low, r[k - 1]);
        if (k >= lo && r[k] >= level && candidate(r, se, k, low, high))
            first = k;
    }
    /* The hill of `first`: its top, then the lags around the top within half of it. */
    size_t a, b, top = first;
    run_above(r, K, first, r[first] / 2, &a, &b);
    for (size_t k = a; k <= b; k++)
        if (r[k] > r[top])
            top = k;
    double half = r[top] / 2;
    run_above(r, K, top, half, &a, &b);
    if (a == 1 || b == K)
        return top; /* the hill runs off the lags computed */
    /* Its centre: halfway between the lags where r crosses half the top, each
     * interpolated linearly between the lags around it (r[a - 1] < half <= r[a], and
     * r[b] >= half > r[b + 1]). */
    double left = (double)a - (r[a] - half) / (r[a] - r[a - 1]);
    double right = (double)b + (r[b] - half) / (r[b] - r[b + 1]);
    return (size_t)floor((left + right) / 2 + 0.5);
}

tsm_status tsm_period_estimate(tsm_ctx *ctx, const double *x, size_t n, uint32_t min_p,
                               uint32_t max_p, uint32_t *period) {
    if (!period || (!x && n > 0))
        return tsm_fail(ctx, TSM_EINVAL, "period estimate: NULL %s", period ? "series" : "result");
    *period = 0;
    if (min_p < TSM_PERIOD_MIN_LAG || max_p > TSM_PERIOD_MAX_LAG || min_p > max_p)
        return tsm_fail(ctx, TSM_EINVAL,
                        "period estimate: lag range [%u, %u] is invalid (need %u <= min <= max "
                        "<= %u)",
                        min_p, max_p, TSM_PERIOD_MIN_LAG, TSM_PERIOD_MAX_LAG);
    /* The samples looked at (see period.h), the largest candidate lag L (its double, the
     * confirming hill, within a third of them) and the lags computed: up to the far side
     * of the confirming hill's window, and far enough to see the half-height ends of a
     * hill at L. */
    size_t cap = (size_t)fmax((double)TSM_PERIOD_WORK / (2.0 * max_p), sqrt(2.0 * TSM_PERIOD_WORK));
    size_t nu = n < cap ? n : cap;
    size_t L = nu / 6 < max_p ? nu / 6 : max_p;
    if (L < min_p)
        return TSM_OK;            /* fewer than six periods of min_p in view */
    size_t K = 2 * L + L / 4 + 2; /* <= nu / 3 + 2 < nu */

    double *y = malloc(nu * sizeof *y), *r = malloc((K + 1) * sizeof *r);
    double *se = malloc((K + 1) * sizeof *se);
    unsigned char *w = malloc(nu);
    if (!y || !r || !se || !w) {
        free(y), free(r), free(se), free(w);
        return tsm_fail(ctx, TSM_ENOMEM, "period estimate: out of memory for %zu samples", nu);
    }
    int flat;
    size_t nf = detrend(x, nu, y, w, &flat);
    if (!flat && nf >= 6 * (size_t)min_p) {
        acf(y, w, nu, nf, K, r);
        bartlett(r, K, nf, se);
        size_t p = pick(r, se, K, min_p, L, nf);
        if (p)
            *period = (uint32_t)(p < min_p ? min_p : p > max_p ? max_p : p);
    }
    free(y), free(r), free(se), free(w);
    return TSM_OK;
}

tsm_status tsm_period_strength(tsm_ctx *ctx, const double *x, size_t n, uint32_t lag, double *r) {
    if (!r || (!x && n > 0))
        return tsm_fail(ctx, TSM_EINVAL, "period strength: NULL %s", r ? "series" : "result");
    *r = 0.0;
    if (lag == 0 || lag >= n)
        return TSM_OK;
    double *y = malloc(n * sizeof *y), rr[2];
    unsigned char *w = malloc(n);
    if (!y || !w) {
        free(y), free(w);
        return tsm_fail(ctx, TSM_ENOMEM, "period strength: out of memory for %zu samples", n);
    }
    int flat;
    size_t nf = detrend(x, n, y, w, &flat);
    if (!flat && nf > lag) {
        /* r(0) and r(lag) by the same sums acf() makes, without the lags between */
        double c0 = 0, cl = 0;
        size_t n0 = 0, nl = 0;
        for (size_t i = 0; i < n; i++)
            if (w[i])
                c0 += y[i] * y[i], n0++;
        for (size_t i = 0; i + lag < n; i++)
            if (w[i] && w[i + lag])
                cl += y[i] * y[i + lag], nl++;
        rr[0] = c0 / (double)n0, rr[1] = nl ? cl / (double)nl : 0.0;
        *r = rr[0] > 0 ? rr[1] / rr[0] : 0.0;
    }
    free(y), free(w);
    return TSM_OK;
}

tsm_status tsm_auto_m(tsm_ctx *ctx, const double *x, size_t n, uint32_t min_m, uint32_t max_m,
                      uint32_t fallback, uint32_t *m, uint32_t *period) {
    if (!m)
        return tsm_fail(ctx, TSM_EINVAL, "automatic m: NULL result");
    if (min_m < 3)
        return tsm_fail(ctx, TSM_EINVAL, "automatic m: min_m = %u < 3", min_m);
    uint32_t p = 0;
    tsm_status st = tsm_period_estimate(ctx, x, n, min_m, max_m, &p);
    if (st != TSM_OK)
        return st;
    uint32_t v = p ? p : fallback;
    *m = v < min_m ? min_m : v > max_m ? max_m : v;
    if (period)
        *period = p;
    return TSM_OK;
}
