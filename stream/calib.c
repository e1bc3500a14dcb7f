/* SPDX-License-Identifier: Apache-2.0 */
/* calib.c - the calibrated score of a stream's raw scores (calib.h).
 *
 * A bin b stands for the value x(b) = v(b) / 2048 of the scale, v(b) = 2b + 1 (its
 * centre; v(0) = 0, an exact repeat). The tails keep the integer sums of v and v^2 of
 * their values, so adding and removing values never drifts and the fit is the same
 * whatever order the values came in. */
#include "calib.h"

#include <math.h>
#include <string.h>

#define BINS   TSS_CALIB_BINS
#define BLOCK  32
#define BLOCKS (BINS / BLOCK)

static int64_t v_of(int b) {
    return b == 0 ? 0 : 2 * (int64_t)b + 1;
}

static double center(int b) {
    return (double)v_of(b) / (2.0 * BINS);
}

void tss_calib_init(tss_calib *c, uint32_t m, double threshold) {
    memset(c, 0, sizeof *c);
    c->scale = 2.0 * sqrt((double)m);
    c->threshold = threshold;
    c->far.edge = BINS; /* empty: above every bin */
    c->near.edge = -1;  /* empty: below every bin */
}

int tss_calib_bin(const tss_calib *c, double raw) {
    double u = raw / c->scale;
    if (!(u >= TSS_CALIB_FLOOR)) /* also NaN */
        return 0;
    return u >= 1.0 ? BINS - 1 : (int)(u * BINS);
}

double tss_calib_shrink(const tss_calib *c, uint64_t n, uint64_t n_full) {
    if (n >= n_full || n == 0)
        return 1.0;
    const double m = c->scale * c->scale / 4.0; /* scale = 2 sqrt(m) */
    return pow((double)n / (double)n_full, 1.0 / (TSS_CALIB_DIM * m));
}

double tss_calib_comparable(const tss_calib *c, double raw, uint64_t n, uint64_t n_full) {
    if (n >= n_full || n == 0) /* a full window's: every score once the window is full */
        return raw;
    const double v = raw * tss_calib_shrink(c, n, n_full);
    return tss_calib_bin(c, v) || !tss_calib_bin(c, raw) ? v : raw;
}

/* ---- the tails ----------------------------------------------------------------- */

/* The values a tail must hold: TSS_CALIB_TAIL of the history, at least 5. */
static uint32_t tail_want(const tss_calib *c) {
    uint32_t w = (uint32_t)(TSS_CALIB_TAIL * c->n);
    return w < 5 ? 5 : w;
}

/* Adds k values of bin b to tail t (k < 0 removes them). */
static void tail_put(tss_calib_tail *t, int b, int k) {
    const int64_t v = v_of(b);
    t->n = (uint32_t)((int64_t)t->n + k);
    t->s += (double)(k * v);
    t->s2 += (double)(k * v * v);
}

/* Moves the FAR tail's edge to the highest bin whose bins and those above hold at
 * least tail_want values (bin 0 when the history holds fewer). Amortised O(1): the
 * edge moves by the bins the last change crossed, empty blocks in one step. */
static void balance_far(tss_calib *c) {
    tss_calib_tail *t = &c->far;
    const uint32_t want = tail_want(c);
    while (t->n < want && t->edge > 0) {
        if (t->edge % BLOCK == 0 && c->block[t->edge / BLOCK - 1] == 0) {
            t->edge -= BLOCK;
            continue;
        }
        t->edge--;
        tail_put(t, t->edge, c->count[t->edge]);
    }
    while (t->edge < BINS && t->n - c->count[t->edge] >= want) {
        if (t->edge % BLOCK == 0 && c->block[t->edge / BLOCK] == 0) {
            t->edge += BLOCK;
            continue;
        }
        tail_put(t, t->edge, -(int)c->count[t->edge]);
        t->edge++;
    }
}

/* The NEAR tail's edge: the lowest bin whose bins and those below hold tail_want. */
static void balance_near(tss_calib *c) {
    tss_calib_tail *t = &c->near;
    const uint32_t want = tail_want(c);
    while (t->n < want && t->edge < BINS - 1) {
        if ((t->edge + 1) % BLOCK == 0 && c->block[(t->edge + 1) / BLOCK] == 0) {
            t->edge += BLOCK;
            continue;
        }
        t->edge++;
        tail_put(t, t->edge, c->count[t->edge]);
    }
    while (t->edge >= 0 && t->n - c->count[t->edge] >= want) {
        if ((t->edge + 1) % BLOCK == 0 && c->block[t->edge / BLOCK] == 0) {
            t->edge -= BLOCK;
            continue;
        }
        tail_put(t, t->edge, -(int)c->count[t->edge]);
        t->edge--;
    }
}

/* Adds (k = 1) or removes (k = -1) one value of bin b. */
static void put(tss_calib *c, int b, int k) {
    c->count[b] = (uint16_t)(c->count[b] + k);
    c->block[b / BLOCK] = (uint16_t)(c->block[b / BLOCK] + k);
    if (b >= c->far.edge)
        tail_put(&c->far, b, k);
    if (b <= c->near.edge)
        tail_put(&c->near, b, k);
}

void tss_calib_add(tss_calib *c, double raw) {
    if (!isfinite(raw))
        return;
    const int b = tss_calib_bin(c, raw);
    if (c->n == TSS_CALIB_HISTORY) /* the oldest leaves */
        put(c, c->ring[c->head], -1);
    else
        c->n++;
    c->ring[c->head] = (uint16_t)b;
    put(c, b, 1);
    c->head = c->head + 1 == TSS_CALIB_HISTORY ? 0 : c->head + 1;
    balance_far(c);
    balance_near(c);
}

void tss_calib_rebuild(tss_calib *c) {
    const uint32_t n = c->n;
    memset(c->count, 0, sizeof c->count);
    memset(c->block, 0, sizeof c->block);
    c->far = (tss_calib_tail){.edge = BINS};
    c->near = (tss_calib_tail){.edge = -1};
    for (uint32_t k = 0; k < n; k++)
        put(c, c->ring[(c->head + TSS_CALIB_HISTORY - n + k) % TSS_CALIB_HISTORY], 1);
    balance_far(c);
    balance_near(c);
}

/* ---- p-values ----------------------------------------------------------------- */

/* History values in bins >= b. O(BLOCKS + BLOCK). */
static uint32_t count_from(const tss_calib *c, int b) {
    if (b <= 0)
        return c->n;
    if (b >= BINS)
        return 0;
    uint32_t n = 0;
    for (int j = b / BLOCK + 1; j < BLOCKS; j++)
        n += c->block[j];
    for (int i = b; i < (b / BLOCK + 1) * BLOCK; i++)
        n += c->count[i];
    return n;
}

/* The GPD of a tail's excesses (peaks over threshold): the tail's k = tail_want
 * outermost values, t the k-th of them (its bin's centre, on the scale), the excesses
 * |x - t| of those k (the k-th itself at 0); method of moments. A tail whose mean
 * excess is below TSS_CALIB_EXCESS t is taken as exponential with that mean: a tail of
 * near-equal values then decays by e every such margin, so a raw score far beyond
 * everything the stream has shown counts as extreme and one barely beyond it does
 * not. k: the values it stands for (the tail's share of the history). */
typedef struct {
    double t, gamma, sigma;
    uint32_t k;
} gpd;

static gpd fit(const tss_calib *c, const tss_calib_tail *tl) {
    const double h = 2.0 * BINS;
    const uint32_t k = tail_want(c) < tl->n ? tail_want(c) : tl->n;
    const int64_t ve = v_of(tl->edge);
    /* the tail's bins beyond the edge hold tl->n - count[edge] < k values; the rest of
     * the k are at the edge, excess 0: sums of v - v_e over the k */
    const double out = tl->n - c->count[tl->edge];
    const double s1 = tl->s - c->count[tl->edge] * (double)ve - out * (double)ve;
    const double s2 = tl->s2 - c->count[tl->edge] * (double)(ve * ve) - 2.0 * (double)ve * s1 -
                      out * (double)(ve * ve);
    /* s1 = sum (v - ve), s2 = sum (v - ve)^2 over the values beyond the edge */
    gpd g = {.t = (double)ve / h, .k = k};
    double mu = fabs(s1) / h / k, var = s2 / (h * h) / k - mu * mu;
    const double floor = TSS_CALIB_EXCESS * g.t;
    if (mu < floor) { /* too tight a tail: an exponential one of mean excess floor */
        mu = floor;
        var = floor * floor;
    }
    if (mu <= 0.0)
        mu = 0.5 / BINS; /* every value at the same bin, t = 0 */
    if (var <= 1e-300) {
        g.gamma = 0.0, g.sigma = mu;
    } else {
        double r = mu * mu / var;
        g.gamma = 0.5 * (1.0 - r);
        g.sigma = 0.5 * mu * (1.0 + r);
        g.gamma = g.gamma < -0.5 ? -0.5 : g.gamma > 0.5 ? 0.5 : g.gamma;
    }
    return g;
}

/* The GPD survival function of an excess y >= 0. */
static double survival(const gpd *g, double y) {
    if (fabs(g->gamma) < 1e-6)
        return exp(-y / g->sigma);
    double base = 1.0 + g->gamma * y / g->sigma;
    return base <= 0.0 ? 0.0 : pow(base, -1.0 / g->gamma);
}

/* Its inverse: the excess whose survival is q (0 < q <= 1). */
static double excess_at(const gpd *g, double q) {
    if (fabs(g->gamma) < 1e-6)
        return -g->sigma * log(q);
    return g->sigma / g->gamma * (pow(q, -g->gamma) - 1.0);
}

static gpd fit_far(const tss_calib *c) {
    return fit(c, &c->far);
}

static gpd fit_near(const tss_calib *c) {
    return fit(c, &c->near);
}

/* p_far of bin b. */
static double p_far(const tss_calib *c, int b) {
    const double n1 = (double)c->n + 1.0;
    if (c->far.n > 0 && b > c->far.edge) {
        gpd g = fit_far(c);
        return g.k / n1 * survival(&g, center(b) - g.t);
    }
    return (1.0 + count_from(c, b)) / n1;
}

/* p_near of bin b >= 1, likewise. */
static double p_near(const tss_calib *c, int b) {
    const double n1 = (double)c->n + 1.0;
    if (c->near.n > 0 && b < c->near.edge) {
        gpd g = fit_near(c);
        return g.k / n1 * survival(&g, g.t - center(b));
    }
    return (1.0 + c->n - count_from(c, b + 1)) / n1;
}

/* The score of side p (p < 1/2), or none. */
static tss_score make(double p, tss_tail tail) {
    p = 2.0 * p;
    if (p >= 1.0)
        return (tss_score){.score = 0.0, .p = 1.0, .tail = TSS_TAIL_NONE};
    return (tss_score){.score = 1.0 - p, .p = p, .tail = tail};
}

static const tss_score NO_SCORE = {.score = 0.0, .p = 1.0, .tail = TSS_TAIL_NONE};

tss_score tss_calib_score(const tss_calib *c, double raw) {
    if (!tss_calib_ready(c))
        return NO_SCORE;
    const int b = tss_calib_bin(c, raw);
    if (b == 0)
        return NO_SCORE; /* an exact repeat */
    double pf = p_far(c, b), pn = p_near(c, b);
    return pf <= pn ? make(pf, TSS_TAIL_FAR) : make(pn, TSS_TAIL_NEAR);
}

tss_score tss_calib_score_far(const tss_calib *c, double raw) {
    if (!tss_calib_ready(c))
        return NO_SCORE;
    const int b = tss_calib_bin(c, raw);
    return b == 0 ? NO_SCORE : make(p_far(c, b), TSS_TAIL_FAR);
}

double tss_calib_far_raw(const tss_calib *c) {
    if (!tss_calib_ready(c))
        return INFINITY;
    const double q = (1.0 - c->threshold) / 2.0;
    const double n1 = (double)c->n + 1.0;
    int b = BINS - 1;
    if (c->far.n > 0 && q < tail_want(c) / n1) { /* in the tail: from the GPD's inverse */
        gpd g = fit_far(c);
        double u = g.t + excess_at(&g, q * n1 / g.k);
        b = isfinite(u) && u * BINS < BINS ? (int)ceil(u * BINS - 0.5) : BINS - 1;
        b = b <= c->far.edge ? c->far.edge + 1 : b;
    }
    /* settle on the lowest bin that passes (p_far is non-increasing in the bin) */
    while (b < BINS && tss_calib_score_far(c, (b + 0.5) / BINS * c->scale).score < c->threshold)
        b++;
    while (b > 1 && tss_calib_score_far(c, (b - 0.5) / BINS * c->scale).score >= c->threshold)
        b--;
    return b >= BINS ? INFINITY : (double)b / BINS * c->scale;
}
