/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet.h - exact shapelet discovery (DESIGN 4.4; seeds 002 and 003).
 *
 * A labelled training set of n series of equal length L. A candidate is a
 * subsequence (series i, start s, length l) of a training series, for every i, every
 * s and every l in min_len, min_len + step, ..., <= max_len. Its distance to a series
 * T_j is the minimum over the length-l subsequences T_j[u, l] of
 *
 *   w = 0 : d = sqrt(d2 / l), d2 the squared z-normalised Euclidean distance of
 *           DESIGN 3 (seed 002 eq. (2): the "length-normalised" distance), computed
 *           from dot products with the diagonal reuse of seed 002 Algorithm 4
 *           (QT[s+1][u+1] = QT[s][u] - T_i[s] T_j[u] + T_i[s+l] T_j[u+l], eq. (6));
 *   w > 0 : d = sqrt(D / l), D the DTW cost with squared point costs between the two
 *           z-normalised subsequences inside a Sakoe-Chiba band |x - y| <= w (seed 003
 *           Algorithm 2.2), in O(w) working memory per pair. D <= d2 (the diagonal is
 *           one warping path), and w = 0 would give d2: the Euclidean path is that case.
 *
 * Z-normalisation is per subsequence (population sigma), with the constant
 * conventions of DESIGN 3: a constant subsequence z-normalises to zeros, so it is at
 * d = 0 from constants and d = 1 from everything else. Seed 003's reuse of the DTW
 * matrix across candidate lengths holds for raw values only (the z-normalised values
 * of a prefix change with its length), so the DTW path reuses the Euclidean path
 * instead: it starts each (candidate, series) minimum at the alignment where the
 * Euclidean distance is smallest and abandons every other alignment as soon as a
 * whole band row exceeds the best so far (all costs are >= 0). Results are exact.
 *
 * The split of a candidate (seed 002 section II): sort its n distances (the order
 * line); every threshold between two consecutive distinct distances splits the set
 * into left (d <= threshold, the midpoint) and right; information gain (3) with
 * natural logarithms, the best gain wins and, among gains equal within
 * TSM_SHAPELET_GAIN_TOL, the larger separation gap mean(right) - mean(left). The
 * heuristic split (seed 003 section 4.3, Algorithms 4.5-4.7) is an option: a
 * Knuth shuffle seeded per candidate, then quickselect-style partitions that move
 * towards the side with the larger weighted entropy until the conditional entropy
 * rises; O(n) expected instead of O(n log n), not always the best split.
 *
 * The shapelet of a training set: the candidate with the best split; ties (gain
 * within TSM_SHAPELET_GAIN_TOL and gap within TSM_SHAPELET_GAP_TOL) go to the
 * candidate met first in the order (length, series, start), so every backend returns
 * the same shapelet. Training data must be finite. */
#ifndef TSM_SHAPELET_H
#define TSM_SHAPELET_H

#include "stats.h"
#include "tsm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TSM_SHAPELET_GAIN_TOL 1e-12
/* Gaps are means of distances, and a distance near 0 (a candidate against itself)
 * carries an absolute error up to ~sqrt(eps) ~ 1e-8 in the correlation form
 * sqrt(2 (1 - corr)): gaps closer than this count as tied. */
#define TSM_SHAPELET_GAP_TOL 1e-7

/* A labelled set of n series of length len, row-major in x (n * len values); labels
 * y[j] in [0, n_classes). The arrays belong to the caller. */
typedef struct {
    size_t n, len;
    const double *x;
    const int *y;
    int n_classes;
} tsm_shapelet_data;

/* Search parameters. */
typedef struct {
    size_t min_len, max_len, step; /* 3 <= min_len <= max_len <= len, step >= 1 */
    size_t w;                      /* Sakoe-Chiba band; 0 = Euclidean */
    int heuristic;                 /* 1: seed 003's heuristic split instead of the exact one */
    uint64_t seed;                 /* heuristic: seeds the per-candidate shuffles */
    /* Bytes of candidate-to-series distances held at once (seed 002 V-C, seed 003
     * 3.2.1): candidates are evaluated in batches of about budget / (8 n) (at least
     * one); 0 means TSM_SHAPELET_BUDGET_DEFAULT. */
    size_t budget;
    /* Logical shapelets (seed 002 section II, after Mueen et al.): with op
     * TSM_SHAPELET_AND or TSM_SHAPELET_OR, base[j] (n values, the distances of a shapelet
     * found before) is combined with each candidate's distance d_c[j] before the split:
     * max(base[j], d_c[j]) for AND (near both), min for OR (near either). */
    int op;
    const double *base;
    /* Called after each batch with the candidates done and their total (may be NULL);
     * from the calling thread. */
    void (*progress)(void *arg, size_t done, size_t total);
    void *progress_arg;
} tsm_shapelet_opts;

#define TSM_SHAPELET_BUDGET_DEFAULT ((size_t)64 << 20)

/* How the distances of two shapelets combine (tsm_shapelet_opts.op). */
enum { TSM_SHAPELET_SINGLE = 0, TSM_SHAPELET_AND = 1, TSM_SHAPELET_OR = 2 };

/* The best split of one candidate's distances. valid = 0 when every distance is
 * equal (no threshold separates anything): then gain = 0, gap = 0. */
typedef struct {
    double gain, gap, threshold; /* left: d <= threshold */
    int valid;
} tsm_split;

/* A shapelet: the candidate and its split. */
typedef struct {
    size_t series, start, length;
    tsm_split split;
} tsm_shapelet;

/* Checks opts against data (lengths, step, labels, finite values); TSM_OK or
 * TSM_EINVAL with a message. */
tsm_status tsm_shapelet_check(tsm_ctx *ctx, const tsm_shapelet_data *data,
                              const tsm_shapelet_opts *opts);

/* Distances of the count candidates (series, start0 + c, length), c < count, to every
 * series of data: out[c * data->n + j]; pos (may be NULL) gets the start u of the
 * best match in T_j (the smallest u among equals). Band w (0 = Euclidean). On the
 * ctx's backend. O(count n L l w) for w > 0 at worst, O(n (L + count) (L + l)) for
 * w = 0. */
tsm_status tsm_shapelet_dist(tsm_ctx *ctx, const tsm_shapelet_data *data, size_t series,
                             size_t start0, size_t count, size_t length, size_t w, double *out,
                             int64_t *pos);

/* Distances of an arbitrary pattern p[0..length-1] (a shapelet of a saved model) to
 * the n series x[j * len ..] of length len: out[j], same definition as above (the
 * series need not be finite: subsequences holding non-finite values are skipped, and
 * a series without a finite one is at +INFINITY). CPU, O(n len length (2w + 1)). */
tsm_status tsm_shapelet_dist_pattern(tsm_ctx *ctx, const double *p, size_t length, const double *x,
                                     size_t n, size_t len, size_t w, double *out);

/* The exact best split of n distances d with labels y (n_classes classes). */
tsm_status tsm_shapelet_split(tsm_ctx *ctx, const double *d, const int *y, size_t n, int n_classes,
                              tsm_split *out);

/* The heuristic split of seed 003 section 4.3, shuffled with seed. */
tsm_status tsm_shapelet_split_heuristic(tsm_ctx *ctx, const double *d, const int *y, size_t n,
                                        int n_classes, uint64_t seed, tsm_split *out);

/* Whether candidate a (gain/gap, order index ia) beats b (ib): the order of the
 * header comment. */
int tsm_shapelet_better(const tsm_split *a, size_t ia, const tsm_split *b, size_t ib);

/* Searches every candidate of data under opts and returns the best in *best
 * (best->split.valid = 0 when no candidate separates anything). Memory: the batch of
 * distances (opts->budget) and O(threads (n + L)) scratch. */
tsm_status tsm_shapelet_discover(tsm_ctx *ctx, const tsm_shapelet_data *data,
                                 const tsm_shapelet_opts *opts, tsm_shapelet *best);

/* ---- Internal (tsmi_): shared by shapelet.c and shapelet.cu. ---- */

/* The CUDA backend of the candidate-to-series distances (shapelet.cu): the flat
 * candidate range [c0, c0 + count) of length S->m over n series of length L stored
 * back to back in S (candidate c is series c / U, start c % U, U = L - S->m + 1), to
 * every series: out[(c - c0) n + j] and pos (may be NULL) in host memory. Arguments
 * are checked by the caller; S has device copies (computed on this ctx). */
tsm_status tsmi_shapelet_dist_cuda(tsm_ctx *ctx, const tsm_stats *S, size_t n, size_t L, size_t c0,
                                   size_t count, size_t w, double *out, int64_t *pos);

/* The CUDA backend of the whole search (shapelet.cu): every candidate of data under
 * opts, in batches of batch candidates, splits on the device with the c log c table
 * xlx (c <= n, the same values as the CPU's); the best split and its order index
 * (lengths in turn, then series, then start) into *best, *best_ord. Arguments are
 * checked by the caller. */
tsm_status tsmi_shapelet_discover_cuda(tsm_ctx *ctx, const tsm_shapelet_data *data,
                                       const tsm_shapelet_opts *opts, size_t batch,
                                       const double *xlx, tsm_split *best, size_t *best_ord);

#ifdef __cplusplus
}
#endif
#endif
