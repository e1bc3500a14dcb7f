/* SPDX-License-Identifier: Apache-2.0 */
/* stumpi.c - _tsmine.Stumpi: the incremental matrix profile behind tsmine.stumpi
 * (tsmine/_stream.py), STUMPY's stumpi (egress on and off) by the kernels' online
 * left nearest neighbour (kernels/online.h).
 *
 * What STUMPY's stumpi keeps, and so this object: a history T (egress: its last n
 * samples, n fixed; without egress: every sample), and for every subsequence of it
 *   P[j], I[j]    the nearest neighbour among the subsequences that shared a history
 *                 with j (without egress: all of them; with egress: those at most
 *                 n - m after or before it that arrived while j was held, so an entry
 *                 may name a neighbour that left since);
 *   LP[j], LI[j]  the nearest neighbour on the left, fixed when j completed;
 * indices counted from the first sample of the initial T. Non-self-matches are
 * |i - j| >= excl (STUMPY's exclusion zone ceil(m / 4) plus one: tsmine/_stumpy.py).
 * The initial profile is the batch one (tsm_mp, exact). Each update(t) then:
 *   1. writes t behind the window of a tsm_online_job (its mirrored ring holds the
 *      history: W = n with egress, else a capacity that doubles) and runs
 *      tsm_online_update on it: the statistics of the new subsequence i, the QT row of
 *      i against every left neighbour in the window (centred, recomputed exactly every
 *      TSM_QT_REFRESH steps: drift bounded as DESIGN 4.1 requires) and lnn(i);
 *   2. reads that row back (job.qt, by lag) and, with the same formula (distance.h,
 *      tsm_d2_pair), updates P[j], I[j] of every j the new subsequence is nearer to
 *      than their neighbour so far (STUMPY's right-hand update, strictly nearer: the
 *      earlier neighbour keeps a tie); a vectorised filter on the squared distance
 *      (B[j], a bound from P[j]) finds those rare j, and only they get the exact
 *      distance, which decides;
 *   3. sets P[i] = LP[i] = lnn(i) (the kernel's, ties to the smaller index).
 * Missing values as STUMPY has them: a non-finite t is held as 0 (T_ shows 0 there,
 * the QT recurrence stays finite) and every subsequence that contains one is excluded:
 * inf and -1, nobody's neighbour. The kernel takes finite windows only, so while a
 * missing value lies in the window step 3 takes lnn(i) from the row of step 2 with
 * those subsequences left out, instead of the kernel's (which would count them).
 *
 * Cost of an update: O(window) for the row and the scan over it, O(window m) every
 * TSM_QT_REFRESH updates and after a growth (without egress: amortised O(m)); memory
 * O(window). Measured (python/bench/bench.py stumpi, 2-core AMD EPYC, m = 100): about
 * 7 us at a history of 2,000, 70 us at 20,000, of which the kernel takes two thirds.
 * The GIL is held throughout (an update is microseconds; one object is
 * never used by two threads at once). */
#include "tsmpy.h" /* Python.h first */

#include "distance.h"
#include "mp.h"
#include "online.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    /* clang-format off */
    PyObject_HEAD /* (a macro without its semicolon) */
    tsm_ctx *ctx;
    /* clang-format on */
    int egress;
    uint32_t m, excl; /* tsmine's excl: non-self-matches |i - j| >= excl */
    /* The online job's window: ring of cap = W + 1 samples, mirrored (2 cap), with mu, inv
     * and kind beside it; x = ring + pos0 holds the fill samples of the window. */
    uint32_t W, cap, pos0, fill;
    double *ring, *mu, *inv, *qt;
    uint8_t *kind;
    tsm_online_state st;
    uint64_t x0;       /* absolute index of x[0], the window's first sample and subsequence */
    uint64_t last_bad; /* absolute index + 1 of the last non-finite sample; 0: none yet */
    /* The profile of the window's subsequences, x[0]'s at entry poff, pn entries of pcap.
     * B[j] = bound(P[j]): a squared distance below which a new neighbour may be nearer,
     * -1 for a subsequence that holds a missing value (nothing is below). */
    double *P, *LP, *B;
    int64_t *I, *LI;
    size_t poff, pn, pcap;
} stumpi_obj;

static void free_window(stumpi_obj *s) {
    free(s->ring), free(s->mu), free(s->inv), free(s->qt), free(s->kind);
    s->ring = s->mu = s->inv = s->qt = NULL;
    s->kind = NULL;
}

/* Allocates the window's arrays for window W (ring of W + 1, mirrored); the samples are
 * the caller's to write. Returns 0, or -1 when out of memory (nothing changed). */
static int alloc_window(stumpi_obj *s, uint32_t W) {
    const size_t cap = (size_t)W + 1;
    double *ring = malloc(2 * cap * sizeof *ring), *mu = malloc(2 * cap * sizeof *mu);
    double *inv = malloc(2 * cap * sizeof *inv), *qt = malloc((W - s->m + 1) * sizeof *qt);
    uint8_t *kind = malloc(2 * cap);
    if (!ring || !mu || !inv || !qt || !kind) {
        free(ring), free(mu), free(inv), free(qt), free(kind);
        return -1;
    }
    free_window(s);
    s->ring = ring, s->mu = mu, s->inv = inv, s->qt = qt, s->kind = kind;
    s->W = W, s->cap = (uint32_t)cap, s->pos0 = 0;
    memset(&s->st, 0, sizeof s->st); /* valid = 0: the next update rebuilds from the samples */
    return 0;
}

/* Without egress, a full window doubles: the samples move to the start of a new ring
 * and the next update rebuilds the statistics and the row (O(W m), once per doubling).
 * Returns 0, or -1 when out of memory or past the kernel's limits (nothing changed). */
static int grow_window(stumpi_obj *s) {
    if (s->W > UINT32_MAX / 4 - 1)
        return -1;
    const uint32_t fill = s->fill, pos0 = s->pos0;
    double *old = s->ring;
    s->ring = NULL; /* kept aside: alloc_window frees the rest */
    if (alloc_window(s, 2 * s->W) != 0) {
        s->ring = old;
        return -1;
    }
    memcpy(s->ring, old + pos0, fill * sizeof *old); /* mirrored: fill samples from pos0 */
    memcpy(s->ring + s->cap, s->ring, fill * sizeof *old);
    free(old);
    return 0;
}

/* Room for one more profile entry after the last: egress moves the entries to the
 * front once the free tail is gone (O(1) amortised), growth doubles. 0 or -1 (memory). */
static int profile_room(stumpi_obj *s) {
    if (s->poff + s->pn < s->pcap)
        return 0;
    if (s->poff > 0) {
        memmove(s->P, s->P + s->poff, s->pn * sizeof *s->P);
        memmove(s->LP, s->LP + s->poff, s->pn * sizeof *s->LP);
        memmove(s->I, s->I + s->poff, s->pn * sizeof *s->I);
        memmove(s->LI, s->LI + s->poff, s->pn * sizeof *s->LI);
        memmove(s->B, s->B + s->poff, s->pn * sizeof *s->B);
        s->poff = 0;
        return 0;
    }
    size_t cap = s->pcap ? 2 * s->pcap : 64;
    double *P = realloc(s->P, cap * sizeof *P);
    if (P)
        s->P = P;
    double *LP = realloc(s->LP, cap * sizeof *LP);
    if (LP)
        s->LP = LP;
    int64_t *I = realloc(s->I, cap * sizeof *I);
    if (I)
        s->I = I;
    int64_t *LI = realloc(s->LI, cap * sizeof *LI);
    if (LI)
        s->LI = LI;
    double *B = realloc(s->B, cap * sizeof *B);
    if (B)
        s->B = B;
    if (!P || !LP || !I || !LI || !B)
        return -1;
    s->pcap = cap;
    return 0;
}

/* A bound on the squared distances whose root may be below distance d: d^2 with a margin
 * for the rounding of the root (a filter; the distance itself then decides). inf for
 * inf. */
#define ROW_BLOCK 64 /* subsequences the filter looks at before it scans (step) */

static inline double bound(double d) {
    return d * d * (1.0 + 1e-12);
}

/* One update (see the top of this file). TSM_OK, or a status with the ctx's message. */
static tsm_status step(stumpi_obj *s, double t) {
    if (!s->egress && s->fill == s->W && grow_window(s) != 0)
        return tsm_fail(s->ctx, TSM_ENOMEM, "stumpi: out of memory for a history of %u samples",
                        2 * s->W);
    if (profile_room(s) != 0)
        return tsm_fail(s->ctx, TSM_ENOMEM, "stumpi: out of memory for the profile");
    const int finite = isfinite(t);
    uint32_t p = s->pos0 + s->fill;
    p = p < s->cap ? p : p - s->cap;
    s->ring[p] = s->ring[p + s->cap] = finite ? t : 0.0;
    if (!finite)
        s->last_bad = s->x0 + s->fill + 1;

    double nn;
    int64_t nn_index;
    tsm_online_job jb = {
        .ring = s->ring,
        .mu = s->mu,
        .inv = s->inv,
        .kind = s->kind,
        .qt = s->qt,
        .state = &s->st,
        .nn = &nn,
        .nn_index = &nn_index,
        .cap = s->cap,
        .pos0 = s->pos0,
        .fill = s->fill,
        .nnew = 1,
        .window = s->W,
        .m = s->m,
        .excl = s->excl,
    };
    tsm_status st = tsm_online_update(s->ctx, &jb, 1);
    if (st != TSM_OK)
        return st;

    /* The window after the sample: x[base .. e], subsequence i new. */
    const size_t m = s->m, excl = s->excl, e = s->fill, base = e + 1 > s->W ? e + 1 - s->W : 0;
    const size_t i = e + 1 - m;
    const uint64_t gi = s->x0 + i;
    if (base) /* egress: the oldest subsequence leaves with the oldest sample */
        s->poff++, s->pn--;
    const size_t k = s->poff + s->pn; /* the new subsequence's entry */
    s->pn++;
    /* the entries of the window's subsequences j (indices into x) at Pw[j], ... */
    double *Pw = s->P + s->poff - base, *Bw = s->B + s->poff - base;
    int64_t *Iw = s->I + s->poff - base;
    const int bad_i = s->last_bad > gi;
    double best = INFINITY;
    int64_t best_j = -1;
    if (!bad_i && i >= base + excl) {
        const double *mu = s->mu + s->pos0, *inv = s->inv + s->pos0, *qt = s->qt;
        const uint8_t *kind = s->kind + s->pos0;
        const size_t K = s->W - m, off = K - i; /* qt[off + j] = QT[i][j] (online.c) */
        const size_t jend = i - excl;
        const int kind_i = kind[i];
        const double mu_i = mu[i], inv_i = inv[i];
        /* The filter, in blocks of ROW_BLOCK: r, the squared distance of a normal pair
         * without the clamp of its correlation, against the bound of j; a pair with a
         * constant (inv = 0: tsm_finish_moments) always passes, one with a missing value
         * (B < 0; r is never below -1e-13 or so) never. A block without a candidate (the
         * rule: they are rare) costs one vectorised pass; the others are scanned, every
         * candidate getting its exact distance (tsm_d2_pair), which then decides. */
        const double fm = (double)m, two_m = 2.0 * fm;
        const int normal_i = kind_i == TSM_SUB_NORMAL;
        for (size_t b0 = base; b0 <= jend; b0 += ROW_BLOCK) {
            const size_t b1 = jend - b0 < ROW_BLOCK ? jend + 1 : b0 + ROW_BLOCK;
            int any = !normal_i;
#pragma omp simd reduction(| : any)
            for (size_t j = b0; j < b1; j++) {
                const double r = two_m * (1.0 - (qt[off + j] - fm * mu_i * mu[j]) * inv_i * inv[j]);
                any |= (r < Bw[j]) | ((Bw[j] >= 0.0) & (inv[j] == 0.0));
            }
            if (!any)
                continue;
            for (size_t j = b0; j < b1; j++) {
                if (Bw[j] < 0.0)
                    continue;
                const double r = two_m * (1.0 - (qt[off + j] - fm * mu_i * mu[j]) * inv_i * inv[j]);
                if (r < Bw[j] || !normal_i || kind[j] != TSM_SUB_NORMAL) {
                    const double d = sqrt(
                        tsm_d2_pair(kind_i, kind[j], qt[off + j], mu_i, inv_i, mu[j], inv[j], m));
                    if (d < Pw[j])
                        Pw[j] = d, Iw[j] = (int64_t)gi, Bw[j] = bound(d);
                }
            }
        }
        if (s->last_bad <= s->x0 + base) { /* a finite window: the kernel's left neighbour */
            best = nn, best_j = nn_index >= 0 ? (int64_t)s->x0 + nn_index : -1;
        } else { /* the nearest of the j without a missing value (the first of equals) */
            for (size_t j = base; j <= jend; j++) {
                if (Bw[j] < 0.0)
                    continue;
                const double d =
                    sqrt(tsm_d2_pair(kind_i, kind[j], qt[off + j], mu_i, inv_i, mu[j], inv[j], m));
                if (d < best)
                    best = d, best_j = (int64_t)(s->x0 + j);
            }
        }
    }
    s->P[k] = s->LP[k] = best;
    s->I[k] = s->LI[k] = best_j;
    s->B[k] = bad_i ? -1.0 : bound(best);
    if (base) {
        s->pos0 = s->pos0 + 1 < s->cap ? s->pos0 + 1 : 0;
        s->x0++;
    } else {
        s->fill++;
    }
    return TSM_OK;
}

/* The initial profile of the n samples t (tsm_mp: the two-sided and the left one, exact)
 * into the profile arrays, STUMPY's way: inf and -1 where tsm_mp gives NaN (a missing
 * value). Returns a status with the ctx's message. */
static tsm_status initial_profile(stumpi_obj *s, const double *t, size_t n) {
    tsm_stats *stats = NULL;
    tsm_status st = tsm_stats_new(s->ctx, t, n, s->m, &stats);
    if (st == TSM_OK)
        st = tsm_check_shape(s->ctx, n, s->m, s->excl);
    if (st != TSM_OK) {
        tsm_stats_destroy(&stats);
        return st;
    }
    const size_t N = stats->N;
    s->pcap = 2 * N + 64;
    s->P = malloc(s->pcap * sizeof *s->P), s->LP = malloc(s->pcap * sizeof *s->LP);
    s->I = malloc(s->pcap * sizeof *s->I), s->LI = malloc(s->pcap * sizeof *s->LI);
    s->B = malloc(s->pcap * sizeof *s->B);
    if (!s->P || !s->LP || !s->I || !s->LI || !s->B)
        st = tsm_fail(s->ctx, TSM_ENOMEM, "stumpi: out of memory for %zu subsequences", N);
    if (st == TSM_OK)
        st = tsm_mp(s->ctx, stats, s->excl, s->P, s->I, s->LP, s->LI);
    for (size_t j = 0; st == TSM_OK && j < N; j++) {
        s->B[j] = stats->kind[j] == TSM_SUB_NONFINITE ? -1.0 : bound(s->P[j]);
        if (isnan(s->P[j]))
            s->P[j] = INFINITY, s->I[j] = -1;
        if (isnan(s->LP[j]))
            s->LP[j] = INFINITY, s->LI[j] = -1;
    }
    s->poff = 0, s->pn = N;
    tsm_stats_destroy(&stats);
    return st;
}

/* Everything but the Python object: the ctx, the window holding t and its profile.
 * Without the GIL. */
static tsm_status setup(stumpi_obj *s, const double *t, size_t n, int threads, const char **why) {
    tsm_status st = tsm_ctx_new(&s->ctx, TSM_BACKEND_CPU, why);
    if (st != TSM_OK)
        return st;
    tsm_ctx_set_threads(s->ctx, threads);
    if ((st = initial_profile(s, t, n)) != TSM_OK)
        return st;
    /* egress: the window is the history, n >= 2m (the kernel's least window); without:
     * room to grow into */
    uint64_t W = s->egress ? n : 2 * (uint64_t)n;
    W = W > 2 * (uint64_t)s->m ? W : 2 * (uint64_t)s->m;
    if (s->egress && n < 2 * (size_t)s->m)
        return tsm_fail(s->ctx, TSM_EINVAL,
                        "stumpi with egress needs a history of at least 2 m = %u values (the "
                        "online kernel's least window), not %zu",
                        2 * s->m, n);
    if (W > UINT32_MAX / 4)
        return tsm_fail(s->ctx, TSM_EINVAL, "stumpi: a history of %zu values is too long", n);
    if (alloc_window(s, (uint32_t)W) != 0)
        return tsm_fail(s->ctx, TSM_ENOMEM, "stumpi: out of memory for a window of %llu",
                        (unsigned long long)W);
    for (size_t k = 0; k < n; k++) {
        const int finite = isfinite(t[k]);
        s->ring[k] = s->ring[k + s->cap] = finite ? t[k] : 0.0;
        if (!finite)
            s->last_bad = k + 1;
    }
    s->fill = (uint32_t)n, s->x0 = 0;
    return TSM_OK;
}

static int stumpi_init(PyObject *self, PyObject *args, PyObject *kwds) {
    stumpi_obj *s = (stumpi_obj *)self;
    static char *kwlist[] = {"T", "m", "excl", "egress", "threads", NULL};
    Py_buffer t;
    Py_ssize_t m, excl;
    int egress, threads;
    if (s->ctx) {
        PyErr_SetString(PyExc_RuntimeError, "Stumpi is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*nnpi", kwlist, &t, &m, &excl, &egress,
                                     &threads))
        return -1;
    int rc = -1;
    if (t.len % (Py_ssize_t)sizeof(double) != 0 || m < 0 || excl < 0 || m > UINT32_MAX / 4 ||
        excl > UINT32_MAX / 4) {
        PyErr_SetString(PyExc_ValueError, "Stumpi(T, m, excl, egress, threads): a float64 "
                                          "buffer and sizes in range");
        goto done;
    }
    s->m = (uint32_t)m, s->excl = (uint32_t)excl, s->egress = egress;
    const char *why = NULL;
    tsm_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = setup(s, t.buf, (size_t)t.len / sizeof(double), threads, &why);
    Py_END_ALLOW_THREADS;
    if (st != TSM_OK && !s->ctx)
        PyErr_Format(tsmpy_error_type(st), "cannot create the compute context: %s",
                     why ? why : tsm_status_name(st));
    else if (st != TSM_OK)
        tsmpy_raise_ctx(s->ctx, st);
    else
        rc = 0;
done:
    PyBuffer_Release(&t);
    return rc;
}

static void stumpi_dealloc(PyObject *self) {
    stumpi_obj *s = (stumpi_obj *)self;
    free_window(s);
    free(s->P), free(s->LP), free(s->I), free(s->LI), free(s->B);
    tsm_ctx_destroy(&s->ctx);
    Py_TYPE(self)->tp_free(self);
}

static int ready(const stumpi_obj *s) {
    if (s->ctx && s->ring)
        return 1;
    PyErr_SetString(PyExc_RuntimeError, "Stumpi was not initialised");
    return 0;
}

PyDoc_STRVAR(update_doc, "update(t)\nAppends the value t and updates the profile.");
static PyObject *stumpi_update(PyObject *self, PyObject *arg) {
    stumpi_obj *s = (stumpi_obj *)self;
    double t = PyFloat_AsDouble(arg);
    if ((t == -1.0 && PyErr_Occurred()) || !ready(s))
        return NULL;
    tsm_status st = step(s, t);
    if (st != TSM_OK)
        return tsmpy_raise_ctx(s->ctx, st);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(copy_doc, "_copy(what, out)\nCopies one array into the writable buffer out: "
                       "what 0 P, 1 I, 2 left P, 3 left I (len() entries), 4 T (length "
                       "entries).");
static PyObject *stumpi_copy(PyObject *self, PyObject *args) {
    stumpi_obj *s = (stumpi_obj *)self;
    int what;
    Py_buffer out;
    if (!ready(s) || !PyArg_ParseTuple(args, "iw*", &what, &out))
        return NULL;
    const void *src = what == 0   ? (const void *)(s->P + s->poff)
                      : what == 1 ? (const void *)(s->I + s->poff)
                      : what == 2 ? (const void *)(s->LP + s->poff)
                      : what == 3 ? (const void *)(s->LI + s->poff)
                                  : (const void *)(s->ring + s->pos0);
    const size_t len = (what == 4 ? s->fill : s->pn) * 8;
    PyObject *ret = NULL;
    if (what < 0 || what > 4 || (size_t)out.len != len)
        PyErr_Format(PyExc_ValueError, "_copy: what %d into %zd bytes (need %zu)", what, out.len,
                     len);
    else
        memcpy(out.buf, src, len), ret = Py_None, Py_INCREF(ret);
    PyBuffer_Release(&out);
    return ret;
}

static Py_ssize_t stumpi_len(PyObject *self) {
    const stumpi_obj *s = (const stumpi_obj *)self;
    return (Py_ssize_t)s->pn;
}

static PyObject *get_length(PyObject *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLong(((stumpi_obj *)self)->fill);
}

static PyObject *get_appended(PyObject *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLongLong(((stumpi_obj *)self)->x0);
}

static PyMethodDef stumpi_methods[] = {
    {"update", stumpi_update, METH_O, update_doc},
    {"_copy", stumpi_copy, METH_VARARGS, copy_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef stumpi_getset[] = {
    {"length", get_length, NULL, "samples in the history", NULL},
    {"first", get_appended, NULL, "index of the history's first sample (egress: those left)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods stumpi_seq = {.sq_length = stumpi_len};

static PyTypeObject stumpi_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tsmine._tsmine.Stumpi",
    .tp_doc = PyDoc_STR("Stumpi(T, m, excl, egress, threads): the incremental profile of "
                        "tsmine.stumpi (use that)."),
    .tp_basicsize = sizeof(stumpi_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = stumpi_init,
    .tp_dealloc = stumpi_dealloc,
    .tp_methods = stumpi_methods,
    .tp_getset = stumpi_getset,
    .tp_as_sequence = &stumpi_seq,
};

int tsmpy_stumpi_add(PyObject *mod) {
    if (PyType_Ready(&stumpi_type) != 0)
        return -1;
    Py_INCREF(&stumpi_type);
    if (PyModule_AddObject(mod, "Stumpi", (PyObject *)&stumpi_type) != 0) {
        Py_DECREF(&stumpi_type);
        return -1;
    }
    return 0;
}
