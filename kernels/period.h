/* SPDX-License-Identifier: Apache-2.0 */
/* period.h - the dominant period of a series, and the subsequence length m chosen from it
 * (DESIGN 5.3: `subsequence = "auto"` in the daemon, `-m auto` in the batch tool; both
 * call tsm_auto_m, so a stream and a batch run of the same samples choose the same m).
 *
 * CPU only, single-threaded, on purpose: it runs once per stream on its warm-up history
 * (a few thousand samples, well under a millisecond) and once per batch run; moving a
 * few thousand samples to a GPU would cost more than the work.
 *
 * Method: the sample autocorrelation function (ACF) of the series, linearly detrended
 * (least squares over the finite samples), with every pair that holds a non-finite
 * sample left out:
 *     r(k) = [sum_i y_i y_{i+k} / c(k)] / [sum_i y_i^2 / c(0)],
 * y the residual, the sums and c(k) over the pairs (i, i+k) with both samples finite.
 * A period P shows as hills of r around lags P, 2P, 3P, ... The candidates are the
 * local maxima of r at lags k in [min_p, L], L = min(max_p, n/6), that are
 *   - high: r(k) >= TSM_PERIOD_MIN_R and >= 4/sqrt(n) (white noise's ACF stays within
 *     a few 1/sqrt(n) of zero);
 *   - a hill of their own: r(k) rises >= TSM_PERIOD_MIN_RISE above the lowest r at any
 *     smaller lag, so that wiggles on the ACF's initial decay are not peaks;
 *   - significant, and confirmed: r(k) >= 1.5 se(k), and some lag within k/8 of 2k has
 *     r >= 1.5 se there, se Bartlett's standard error
 *         se(j)^2 = (1 + 2 sum_{0<i<j} r(i)^2) / n.
 *     Slow drifts (random walks, red noise) make r large at small lags and so widen the
 *     band, and the chance hills of their ACF at large lags do not repeat at twice the
 *     lag. This is why 2L <= n/3: a period needs six of its length in view. A clean
 *     one passes from six on; a noisy one needs a few more, and its r must clear
 *     4/sqrt(n) (a sine in white noise of its own amplitude has r = 1/3: n >= 150).
 * Of these, the first whose r is nearly as high as the best one (>= 0.8 of it, or within
 * 2/sqrt(n)) wins: the smallest lag, so that a multiple of the period is not chosen, and
 * a daily cycle is preferred to the weekly one that contains it unless the weekly one is
 * clearly stronger. The period is the centre of that hill: halfway between the lags,
 * interpolated, where r crosses half the hill's top on either side, which noise moves
 * less than the top itself.
 *
 * Cost: O(n max_p) multiply-adds for the ACF. A long series is estimated on its first
 * n' = min(n, max(TSM_PERIOD_WORK / (2 max_p), sqrt(2 TSM_PERIOD_WORK))) samples, so a
 * call costs about TSM_PERIOD_WORK multiply-adds at most, whatever n is: with max_p = 2048
 * the first 131072 samples (64 periods or more of any lag it looks at), about 0.05 s on
 * one core of a 2020s x86 server. */
#ifndef TSM_PERIOD_H
#define TSM_PERIOD_H

#include "tsm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TSM_PERIOD_MIN_R    0.2        /* lowest ACF value a period may have */
#define TSM_PERIOD_MIN_RISE 0.2        /* rise of its hill above every earlier lag */
#define TSM_PERIOD_WORK     (1u << 29) /* bound on the ACF's multiply-adds (see above) */
#define TSM_PERIOD_MIN_LAG  2          /* smallest min_p: a lag-1 "period" is noise */
#define TSM_PERIOD_MAX_LAG  (1u << 24) /* largest max_p */

/* The dominant period of x[0..n) in [min_p, max_p] (samples) into *period, or 0 when x
 * shows none there: white noise, random walks, red noise, trends, constants, a straight
 * line, a series with fewer than 6 * min_p finite samples, or one whose residual after
 * the linear fit is at rounding level. Non-finite samples are skipped. A period shorter
 * than min_p shows as its first multiple >= min_p; one longer than max_p, or than a
 * sixth of the samples looked at, is not seen.
 * TSM_OK (also for period 0), or TSM_EINVAL with a message for x == NULL with n > 0,
 * period == NULL, min_p < TSM_PERIOD_MIN_LAG, max_p > TSM_PERIOD_MAX_LAG or
 * min_p > max_p; TSM_ENOMEM. ctx may be NULL (no message then). */
tsm_status tsm_period_estimate(tsm_ctx *ctx, const double *x, size_t n, uint32_t min_p,
                               uint32_t max_p, uint32_t *period);

/* How strongly x[0..n) repeats with period lag: its autocorrelation there, r(lag) as
 * above (the linearly detrended series, pairs with a non-finite sample left out), in
 * [-1, 1]; 0 for a constant or too short a series. Costs O(n). */
tsm_status tsm_period_strength(tsm_ctx *ctx, const double *x, size_t n, uint32_t lag, double *r);

/* The subsequence length for x[0..n): its dominant period P (tsm_period_estimate over
 * [min_m, max_m]) when it has one, else fallback clamped to [min_m, max_m]. *period (when
 * not NULL) gets P, 0 when the fallback was used. Measured on the UCR anomaly archive,
 * m = P (one period) found more anomalies than m = P/2, 3P/4, 3P/2, 2P or a fixed m
 * (docs/detection.md, "Automatic m on the UCR anomaly archive").
 * For the daemon, windows of W samples: min_m = 8, max_m = W / 8 (a window then holds
 * 8 or more non-overlapping subsequences to be each other's neighbours) and fallback 100
 * (clamped, so m = W / 8 for W < 800); estimated on a history of H samples it sees
 * periods up to H / 6, so H = 6 max_m = 3W / 4 sees every period in range. The batch
 * tool uses [8, min(2048, n / 4)] and 100.
 * Fails like tsm_period_estimate (min_m >= 3 instead of 2), or with TSM_EINVAL for m ==
 * NULL. */
tsm_status tsm_auto_m(tsm_ctx *ctx, const double *x, size_t n, uint32_t min_m, uint32_t max_m,
                      uint32_t fallback, uint32_t *m, uint32_t *period);

#ifdef __cplusplus
}
#endif
#endif
