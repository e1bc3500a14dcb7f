/* SPDX-License-Identifier: Apache-2.0 */
/* calib.h - a stream's calibrated score (DESIGN 5.3): how unusual the raw score of a
 * completed subsequence (its exact left-NN distance, DESIGN 3) is among the stream's
 * own last TSS_CALIB_HISTORY raw scores, as a number in [0, 1] that means the same for
 * every stream, so that one threshold serves them all.
 *
 * The score is 1 - p, p the two-sided p-value of the raw score r among the history H
 * (the raw scores before it):
 *   p = min(1, 2 min(p_far, p_near))
 * where p_far is the probability of a raw score at least as large as r and p_near of
 * one at least as small. In the body of H they are ranks (the conformal p-value of
 * KNN-CAD): p_far = (1 + #{h in H : h >= r}) / (n + 1). Beyond the TSS_CALIB_TAIL
 * quantile on either side, where ranks run out (a rank p-value never goes below
 * 1 / (n + 1)), the tail is a generalised Pareto distribution fitted to the excesses
 * over that quantile by the method of moments (the peaks-over-threshold model of SPOT,
 * Siffer et al., KDD 2017): with t the quantile, k the values beyond it, mu and s^2 the
 * mean and variance of their excesses,
 *   gamma = (1 - mu^2 / s^2) / 2,  sigma = mu (1 + mu^2 / s^2) / 2,
 *   p_far(r) = k / (n + 1) * (1 + gamma (r - t) / sigma)^(-1 / gamma)
 * (exp(-(r - t) / sigma) as gamma -> 0; gamma clamped to [-1/2, 1/2]), and mirrored for
 * p_near. Both sides count: FAR, a shape the stream has not shown before; NEAR, a
 * subsequence far closer to an earlier one than this stream's usual, which is how a
 * spike or a step shows in a noisy stream (once it dominates the z-normalised shape, it
 * matches an earlier one of its kind better than noise ever matches noise). The
 * measurements behind these choices are in docs/detection.md.
 *
 * Scale and degenerate streams. Raw scores are kept on a grid of TSS_CALIB_BINS bins
 * over [0, 2 sqrt(m)] (the whole range of the z-normalised distance), so the score is
 * a function of the bin. A raw score below TSS_CALIB_FLOOR * 2 sqrt(m) (a repeat with a
 * correlation above 0.9992) is an exact repeat: bin 0, never anomalous; so is a stream
 * that repeats itself exactly, whatever tiny numeric noise its distances carry. A tail
 * whose mean excess is below TSS_CALIB_EXCESS times its quantile is taken as
 * exponential with that mean, so a tail of nearly equal values does not make a small
 * step beyond them look extreme, nor a large one ordinary.
 *
 * Candidates. A nearest-neighbour distance shrinks as its candidates grow: among n of
 * them it falls as n^(-1/k), k the dimension the stream's z-normalised subsequences
 * spread in (the Weibull law of nearest-neighbour distances; for white noise k is 0.69
 * to 0.78 m, measured for m = 8 to 64, and the left-NN distances of noisy NAB feeds
 * fall the same way while their windows fill). While a window fills, each raw score has
 * more candidates than the ones before it, so the history would judge it against
 * larger values: a noisy stream drifts to the NEAR side during its first W samples.
 * The score therefore compares raw scores scaled to the candidates of a full window
 * (tss_calib_comparable), k = TSS_CALIB_DIM m; a full window's are unchanged.
 *
 * Cost. Adding a raw score is O(1) amortised: a ring of bins, their counts, and the two
 * tails' counts and sums, whose edges move as values come and go. A score is one pow()
 * inside a tail and a rank (O(sqrt(bins))) in the body. Everything is exact and
 * deterministic: the same raw scores give the same scores on every backend and after
 * a checkpoint. (Since the views, events follow the magnitude view's score (detect.h):
 * this one is the shape view's, and the DISCORD passes judge by it.) */
#ifndef TSS_CALIB_H
#define TSS_CALIB_H

#include <stdint.h>

#define TSS_CALIB_HISTORY 1000 /* raw scores the score is judged against */
#define TSS_CALIB_MIN     100  /* raw scores needed before a score is defined */
#define TSS_CALIB_BINS    1024 /* grid over [0, 2 sqrt(m)] */
#define TSS_CALIB_TAIL    0.02 /* share of the history in each fitted tail (at least 5) */
#define TSS_CALIB_FLOOR   0.02 /* raw / (2 sqrt m) below this: an exact repeat */
#define TSS_CALIB_EXCESS  0.05 /* least mean excess of a tail, relative to its quantile */
#define TSS_CALIB_DIM     0.75 /* k / m, the dimension of the candidate scaling */

typedef enum { TSS_TAIL_NONE = 0, TSS_TAIL_FAR = 1, TSS_TAIL_NEAR = 2 } tss_tail;

/* A score: p the two-sided p-value, score = 1 - p; tail: the side that gave it
 * (NONE when p = 1 or the score is not defined yet). */
typedef struct {
    double score, p;
    tss_tail tail;
} tss_score;

/* One tail: the bins from its edge outwards (FAR: edge and above; NEAR: edge and
 * below), the fewest whole bins holding the tail's share of the history. */
typedef struct {
    int32_t edge;
    uint32_t n;   /* history values in those bins */
    double s, s2; /* the sum and sum of squares of their values (bin centres) */
} tss_calib_tail;

typedef struct {
    double scale;                        /* 2 sqrt(m) */
    double threshold;                    /* the score a DISCORD must reach (the stream's) */
    uint32_t n, head;                    /* raw scores held (<= HISTORY), next ring slot */
    uint16_t ring[TSS_CALIB_HISTORY];    /* their bins, oldest at head - n (mod HISTORY) */
    uint16_t count[TSS_CALIB_BINS];      /* of the ring's bins */
    uint16_t block[TSS_CALIB_BINS / 32]; /* the same by blocks of 32 bins */
    tss_calib_tail far, near;
} tss_calib;

/* An empty calibrator for subsequence length m and the score levels open and stay
 * (0 < stay <= open < 1). */
void tss_calib_init(tss_calib *c, uint32_t m, double threshold);
/* Whether scores are defined (TSS_CALIB_MIN raw scores in the history). */
static inline int tss_calib_ready(const tss_calib *c) {
    return c->n >= TSS_CALIB_MIN;
}
/* A raw score found among n candidates, as the history compares it: scaled to the
 * n_full candidates of a full window, raw (n / n_full)^(1 / (TSS_CALIB_DIM m)) for
 * n < n_full, raw itself otherwise (and where the scaling would make an exact repeat of
 * a raw score that is not one). */
double tss_calib_comparable(const tss_calib *c, double raw, uint64_t n, uint64_t n_full);
/* The factor of that scaling, (n / n_full)^(1 / (TSS_CALIB_DIM m)) (1 for n >= n_full). */
double tss_calib_shrink(const tss_calib *c, uint64_t n, uint64_t n_full);
/* The bin of a raw score (0: an exact repeat, or not finite). */
int tss_calib_bin(const tss_calib *c, double raw);
/* The score of a raw score; score 0, p 1 when not ready. O(1) in the tails,
 * O(sqrt(bins)) in the body. */
tss_score tss_calib_score(const tss_calib *c, double raw);
/* The score of a raw score on the FAR side only (a two-sided nearest-neighbour distance,
 * whose NEAR side means nothing): 1 - min(1, 2 p_far). */
tss_score tss_calib_score_far(const tss_calib *c, double raw);
/* The smallest raw score whose FAR side reaches the threshold (the DISCORD pass's range):
 * the lower edge of the first bin that does; INFINITY when not ready or none does. */
double tss_calib_far_raw(const tss_calib *c);
/* Adds a raw score to the history (a non-finite one is ignored); O(1) amortised. */
void tss_calib_add(tss_calib *c, double raw);
/* Recomputes the counts and the tails from the ring (after a checkpoint is read). */
void tss_calib_rebuild(tss_calib *c);

#endif
