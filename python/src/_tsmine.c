/* SPDX-License-Identifier: Apache-2.0 */
/* _tsmine.c - the CPython extension behind the tsmine package: thin calls into
 * libtsmine_kernels (DESIGN 1), one per batch function of tsmine/_batch.py.
 *
 * The Python side (tsmine/) checks and converts the arguments, allocates the output
 * arrays with numpy and hands everything over as buffers: float64 and int64, C-contiguous,
 * of the right lengths. This module needs no numpy headers (the buffer protocol only), so
 * the package builds against any numpy and needs numpy at run time only.
 *
 * Every function builds a ctx for the backend asked for and the series' statistics, runs
 * one kernel and frees both, all without the GIL: other Python threads run meanwhile, and
 * several threads may call tsmine at once (each call has its own ctx). A ctx costs nothing
 * measurable on the CPU backend; on CUDA the device's context outlives it, so only the
 * first call of a process pays the device's start.
 *
 * Failures raise the exceptions below with the library's own message (tsm_ctx_error):
 *   TSM_EINVAL    -> InvalidArgumentError (also a ValueError)
 *   TSM_ENOMEM    -> OutOfMemoryError     (also a MemoryError)
 *   TSM_EBACKEND  -> BackendError         (also a RuntimeError)
 *   TSM_EDEVICE   -> DeviceError          (also a RuntimeError)
 *   TSM_EINTERNAL -> Error
 * The streaming types and `tsmine score` live in files of their own (tsmpy.h). */
#include "tsmpy.h" /* Python.h first */

#include "mk.h"
#include "mp.h"
#include "pd3.h"
#include "period.h"
#include "stats.h"
#include "tsm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static PyObject *Error, *InvalidArgumentError, *OutOfMemoryError, *BackendError, *DeviceError;

/* One call's ctx and statistics. why: tsm_ctx_new's explanation when it failed (or, for
 * auto, why CUDA was not taken). */
typedef struct {
    tsm_ctx *ctx;
    tsm_stats *stats;
    const char *why;
} session;

/* Without the GIL: a ctx for backend want (device >= 0: that CUDA device), the statistics
 * of t[0..n) for m, and the shape check with excl. */
static tsm_status session_open(session *s, tsm_backend want, int device, int threads,
                               const double *t, size_t n, size_t m, size_t excl) {
    if (device >= 0 && want != TSM_BACKEND_CPU) {
        int chosen;
        tsm_cuda_select(device, &chosen); /* without a device, tsm_ctx_new says why */
    }
    tsm_status st = tsm_ctx_new(&s->ctx, want, &s->why);
    if (st != TSM_OK)
        return st;
    tsm_ctx_set_threads(s->ctx, threads);
    if ((st = tsm_stats_new(s->ctx, t, n, m, &s->stats)) != TSM_OK)
        return st;
    return tsm_check_shape(s->ctx, n, m, excl);
}

static void session_close(session *s) {
    tsm_stats_destroy(&s->stats);
    tsm_ctx_destroy(&s->ctx);
}

PyObject *tsmpy_error_type(tsm_status st) {
    return st == TSM_EINVAL     ? InvalidArgumentError
           : st == TSM_ENOMEM   ? OutOfMemoryError
           : st == TSM_EBACKEND ? BackendError
           : st == TSM_EDEVICE  ? DeviceError
                                : Error;
}

PyObject *tsmpy_raise_ctx(const tsm_ctx *ctx, tsm_status st) {
    const char *msg = ctx ? tsm_ctx_error(ctx) : "";
    PyErr_SetString(tsmpy_error_type(st), msg && msg[0] ? msg : tsm_status_name(st));
    return NULL;
}

/* Raises the exception of status st with the library's message; returns NULL. */
static PyObject *raise_status(const session *s, tsm_backend want, tsm_status st) {
    PyObject *type = tsmpy_error_type(st);
    if (!s->ctx && st == TSM_EBACKEND)
        PyErr_Format(type, "backend %s is unavailable: %s", tsm_backend_name(want),
                     s->why ? s->why : "no reason given");
    else if (!s->ctx)
        PyErr_Format(type, "cannot create the compute context: %s",
                     s->why ? s->why : tsm_status_name(st));
    else
        PyErr_SetString(type,
                        tsm_ctx_error(s->ctx)[0] ? tsm_ctx_error(s->ctx) : tsm_status_name(st));
    return NULL;
}

/* Parses a backend name into *out; 0, or -1 with ValueError set. */
static int parse_backend(const char *name, tsm_backend *out) {
    if (tsm_backend_parse(name, out) == 0)
        return 0;
    PyErr_Format(PyExc_ValueError, "unknown backend '%s' (auto, cpu or cuda)", name);
    return -1;
}

/* Checks the sizes shared by every call: a float64 series, m and excl not negative;
 * sets *n. 0, or -1 with ValueError set. */
static int check_series(const Py_buffer *t, Py_ssize_t m, Py_ssize_t excl, size_t *n) {
    if (t->len % (Py_ssize_t)sizeof(double) != 0) {
        PyErr_SetString(PyExc_ValueError, "the series must be a float64 buffer");
        return -1;
    }
    if (m < 0 || excl < 0) {
        PyErr_Format(PyExc_ValueError, "%s must not be negative", m < 0 ? "m" : "excl");
        return -1;
    }
    *n = (size_t)t->len / sizeof(double);
    return 0;
}

/* Whether buffer b holds N items of size bytes; else sets an internal error. */
static int check_out(const Py_buffer *b, size_t N, size_t size, const char *what) {
    if ((size_t)b->len == N * size)
        return 0;
    PyErr_Format(Error, "internal: %s holds %zd bytes, not %zu", what, b->len, N * size);
    return -1;
}

static PyObject *backend_used(const session *s) {
    return PyUnicode_FromString(tsm_backend_name(tsm_ctx_backend(s->ctx)));
}

PyDoc_STRVAR(profile_doc, "_profile(T, m, excl, left, backend, threads, dist, index) -> backend\n"
                          "The (left) matrix profile of T into dist and index (tsm_mp).");
static PyObject *py_profile(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer t, dist, index;
    Py_ssize_t m, excl;
    int left, threads;
    const char *bname;
    if (!PyArg_ParseTuple(args, "y*nnpsiw*w*", &t, &m, &excl, &left, &bname, &threads, &dist,
                          &index))
        return NULL;
    PyObject *ret = NULL;
    session s = {0};
    tsm_backend want;
    size_t n;
    tsm_status st = TSM_OK;
    if (parse_backend(bname, &want) != 0 || check_series(&t, m, excl, &n) != 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS;
    st = session_open(&s, want, -1, threads, t.buf, n, (size_t)m, (size_t)excl);
    Py_END_ALLOW_THREADS;
    if (st != TSM_OK) {
        raise_status(&s, want, st);
        goto done;
    }
    if (check_out(&dist, s.stats->N, sizeof(double), "dist") != 0 ||
        check_out(&index, s.stats->N, sizeof(int64_t), "index") != 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS;
    st = left ? tsm_mp(s.ctx, s.stats, (size_t)excl, NULL, NULL, dist.buf, index.buf)
              : tsm_mp(s.ctx, s.stats, (size_t)excl, dist.buf, index.buf, NULL, NULL);
    Py_END_ALLOW_THREADS;
    ret = st == TSM_OK ? backend_used(&s) : raise_status(&s, want, st);
done:
    session_close(&s);
    PyBuffer_Release(&t);
    PyBuffer_Release(&dist);
    PyBuffer_Release(&index);
    return ret;
}

/* STUMPY's right index (stumpy.stump's fourth column) of every subsequence: its nearest
 * non-self-match j >= i + excl, with DESIGN 3's conventions for constants as tsm_mp
 * applies them on both sides (mp.c, finish): for a normal i, the best normal right
 * neighbour (rc, rj from tsm_mp_part) unless a constant is nearer (d2 = m) or as near
 * with a smaller index, and then the first such constant; for a constant i, the first
 * constant at or after i + excl, else the first normal one (d2 = m); -1 for a
 * non-finite i or when none. O(N) time and memory. */
static tsm_status right_index(tsm_ctx *ctx, const tsm_stats *s, size_t excl, const double *rc,
                              const int64_t *rj, int64_t *ir) {
    const size_t N = s->N;
    int64_t *next = malloc(2 * (N + 1) * sizeof *next); /* next constant, next normal */
    if (!next)
        return tsm_fail(ctx, TSM_ENOMEM, "stump: out of memory for %zu subsequences", N);
    int64_t *nc = next, *nn = next + N + 1;
    nc[N] = nn[N] = -1;
    for (size_t q = N; q-- > 0;) {
        nc[q] = s->kind[q] == TSM_SUB_CONSTANT ? (int64_t)q : nc[q + 1];
        nn[q] = s->kind[q] == TSM_SUB_NORMAL ? (int64_t)q : nn[q + 1];
    }
    const double m = (double)s->m;
    for (size_t i = 0; i < N; i++) {
        const size_t p = excl < N - i ? i + excl : N; /* first right non-self-match */
        int64_t j = -1;
        if (s->kind[i] == TSM_SUB_NORMAL) {
            double c = rc[i] < -1.0 ? -1.0 : rc[i];
            double d2 = rc[i] > -INFINITY ? 2.0 * m * (1.0 - c) : INFINITY;
            j = rc[i] > -INFINITY ? rj[i] : -1;
            if (nc[p] >= 0 && (m < d2 || (m == d2 && nc[p] < j)))
                j = nc[p];
        } else if (s->kind[i] == TSM_SUB_CONSTANT) {
            j = nc[p] >= 0 ? nc[p] : nn[p];
        }
        ir[i] = j;
    }
    free(next);
    return TSM_OK;
}

/* stump's four columns in one traversal: the left and right best normal neighbours of
 * every subsequence over all bands (tsm_mp_part), finished into the two-sided profile and
 * the left one by tsm_mp_finish (exactly tsm_mp's results), and the right index. */
static tsm_status stump_run(session *s, size_t excl, double *P, int64_t *I, int64_t *IL,
                            int64_t *IR) {
    const size_t N = s->stats->N;
    double *lc = malloc(N * sizeof *lc), *rc = malloc(N * sizeof *rc);
    double *lp = malloc(N * sizeof *lp);
    int64_t *lj = malloc(N * sizeof *lj), *rj = malloc(N * sizeof *rj);
    tsm_status st = TSM_OK;
    if (!lc || !rc || !lp || !lj || !rj)
        st = tsm_fail(s->ctx, TSM_ENOMEM, "stump: out of memory for %zu subsequences", N);
    const size_t bands = tsm_mp_bands(s->ctx, N, excl);
    if (st == TSM_OK)
        st = tsm_mp_part(s->ctx, s->stats, excl, 0, bands, lc, lj, rc, rj);
    if (st == TSM_OK)
        st = tsm_mp_finish(s->ctx, s->stats, excl, lc, lj, rc, rj, P, I, lp, IL);
    if (st == TSM_OK)
        st = right_index(s->ctx, s->stats, excl, rc, rj, IR);
    free(lc), free(rc), free(lp), free(lj), free(rj);
    return st;
}

PyDoc_STRVAR(stump_doc, "_stump(T, m, excl, backend, device, threads, P, I, IL, IR) -> backend\n"
                        "Profile, index, left index and right index of T (stumpy.stump's "
                        "columns).");
static PyObject *py_stump(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer t, P, I, IL, IR;
    Py_ssize_t m, excl;
    int device, threads;
    const char *bname;
    if (!PyArg_ParseTuple(args, "y*nnsiiw*w*w*w*", &t, &m, &excl, &bname, &device, &threads, &P, &I,
                          &IL, &IR))
        return NULL;
    PyObject *ret = NULL;
    session s = {0};
    tsm_backend want;
    size_t n;
    tsm_status st = TSM_OK;
    if (parse_backend(bname, &want) != 0 || check_series(&t, m, excl, &n) != 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS;
    st = session_open(&s, want, device, threads, t.buf, n, (size_t)m, (size_t)excl);
    Py_END_ALLOW_THREADS;
    if (st != TSM_OK) {
        raise_status(&s, want, st);
        goto done;
    }
    const size_t N = s.stats->N;
    if (check_out(&P, N, sizeof(double), "P") != 0 || check_out(&I, N, sizeof(int64_t), "I") ||
        check_out(&IL, N, sizeof(int64_t), "IL") || check_out(&IR, N, sizeof(int64_t), "IR"))
        goto done;
    Py_BEGIN_ALLOW_THREADS;
    st = stump_run(&s, (size_t)excl, P.buf, I.buf, IL.buf, IR.buf);
    Py_END_ALLOW_THREADS;
    ret = st == TSM_OK ? backend_used(&s) : raise_status(&s, want, st);
done:
    session_close(&s);
    PyBuffer_Release(&t);
    PyBuffer_Release(&P);
    PyBuffer_Release(&I);
    PyBuffer_Release(&IL);
    PyBuffer_Release(&IR);
    return ret;
}

/* (bytes of count records, backend name), or NULL; frees nothing. */
static PyObject *records(const session *s, const void *rec, size_t count, size_t size) {
    return Py_BuildValue("(y#N)", (const char *)rec, (Py_ssize_t)(count * size), backend_used(s));
}

PyDoc_STRVAR(discords_doc,
             "_discords(T, m, excl, k, seglen, backend, threads) -> (bytes, backend)\n"
             "Top-k discords (tsm_discords_topk) as tsm_discord records.");
static PyObject *py_discords(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer t;
    Py_ssize_t m, excl, k, seglen;
    int threads;
    const char *bname;
    if (!PyArg_ParseTuple(args, "y*nnnnsi", &t, &m, &excl, &k, &seglen, &bname, &threads))
        return NULL;
    PyObject *ret = NULL;
    session s = {0};
    tsm_backend want;
    size_t n, count = 0;
    tsm_status st = TSM_OK;
    tsm_discord *out = NULL;
    if (parse_backend(bname, &want) != 0 || check_series(&t, m, excl, &n) != 0)
        goto done;
    if (k < 0 || seglen < 0) {
        PyErr_SetString(PyExc_ValueError,
                        k < 0 ? "k must not be negative" : "seglen must not be negative");
        goto done;
    }
    if (!(out = malloc((k ? (size_t)k : 1) * sizeof *out))) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS;
    st = session_open(&s, want, -1, threads, t.buf, n, (size_t)m, (size_t)excl);
    if (st == TSM_OK)
        st = tsm_discords_topk(s.ctx, s.stats, (size_t)excl, (size_t)k, (size_t)seglen, out, &count,
                               NULL);
    Py_END_ALLOW_THREADS;
    ret = st == TSM_OK ? records(&s, out, count, sizeof *out) : raise_status(&s, want, st);
done:
    free(out);
    session_close(&s);
    PyBuffer_Release(&t);
    return ret;
}

PyDoc_STRVAR(range_doc,
             "_range_discords(T, m, excl, r, seglen, backend, threads) -> (bytes, backend)\n"
             "Every range discord for r (tsm_pd3_range) as tsm_discord records.");
static PyObject *py_range_discords(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer t;
    Py_ssize_t m, excl, seglen;
    double r;
    int threads;
    const char *bname;
    if (!PyArg_ParseTuple(args, "y*nndnsi", &t, &m, &excl, &r, &seglen, &bname, &threads))
        return NULL;
    PyObject *ret = NULL;
    session s = {0};
    tsm_backend want;
    size_t n, count = 0;
    tsm_status st = TSM_OK;
    tsm_discord *out = NULL;
    if (parse_backend(bname, &want) != 0 || check_series(&t, m, excl, &n) != 0)
        goto done;
    if (seglen < 0) {
        PyErr_SetString(PyExc_ValueError, "seglen must not be negative");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS;
    st = session_open(&s, want, -1, threads, t.buf, n, (size_t)m, (size_t)excl);
    if (st == TSM_OK)
        st = tsm_pd3_range(s.ctx, s.stats, (size_t)excl, r, (size_t)seglen, &out, &count, NULL);
    Py_END_ALLOW_THREADS;
    ret = st == TSM_OK ? records(&s, out, count, sizeof *out) : raise_status(&s, want, st);
done:
    free(out);
    session_close(&s);
    PyBuffer_Release(&t);
    return ret;
}

PyDoc_STRVAR(motifs_doc,
             "_motifs(T, m, excl, k, refs, seed, backend, threads, method) -> (bytes, backend)\n"
             "Top-k motif pairs as tsm_motif records: method 0 tsm_motifs_auto, 1 the scan\n"
             "(tsm_motifs_scan), 2 MK (tsm_mk_motifs).");
static PyObject *py_motifs(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer t;
    Py_ssize_t m, excl, k, refs;
    unsigned long long seed;
    int threads, method;
    const char *bname;
    if (!PyArg_ParseTuple(args, "y*nnnnKsii", &t, &m, &excl, &k, &refs, &seed, &bname, &threads,
                          &method))
        return NULL;
    PyObject *ret = NULL;
    session s = {0};
    tsm_backend want;
    size_t n, count = 0;
    tsm_status st = TSM_OK;
    tsm_motif *out = NULL;
    if (parse_backend(bname, &want) != 0 || check_series(&t, m, excl, &n) != 0)
        goto done;
    if (k < 0 || refs < 0) {
        PyErr_SetString(PyExc_ValueError,
                        k < 0 ? "k must not be negative" : "refs must not be negative");
        goto done;
    }
    if (!(out = malloc((k ? (size_t)k : 1) * sizeof *out))) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS;
    st = session_open(&s, want, -1, threads, t.buf, n, (size_t)m, (size_t)excl);
    if (st == TSM_OK && method == 2)
        st = tsm_mk_motifs(s.ctx, s.stats, (size_t)excl, (size_t)k, (size_t)refs, (uint64_t)seed,
                           out, &count, NULL);
    else if (st == TSM_OK && method == 1)
        st = tsm_motifs_scan(s.ctx, s.stats, (size_t)excl, (size_t)k, out, &count, NULL);
    else if (st == TSM_OK)
        st = tsm_motifs_auto(s.ctx, s.stats, (size_t)excl, (size_t)k, (size_t)refs, (uint64_t)seed,
                             out, &count, NULL, NULL);
    Py_END_ALLOW_THREADS;
    ret = st == TSM_OK ? records(&s, out, count, sizeof *out) : raise_status(&s, want, st);
done:
    free(out);
    session_close(&s);
    PyBuffer_Release(&t);
    return ret;
}

PyDoc_STRVAR(auto_m_doc, "_auto_m(T, min_m, max_m, fallback) -> (m, period)\n"
                         "The subsequence length for T (tsm_auto_m); period 0 when the "
                         "fallback was used.");
static PyObject *py_auto_m(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer t;
    unsigned int min_m, max_m, fallback;
    if (!PyArg_ParseTuple(args, "y*III", &t, &min_m, &max_m, &fallback))
        return NULL;
    PyObject *ret = NULL;
    session s = {0};
    size_t n;
    uint32_t m = 0, period = 0;
    tsm_status st = TSM_OK;
    if (check_series(&t, 0, 0, &n) != 0)
        goto done;
    Py_BEGIN_ALLOW_THREADS;
    st = tsm_ctx_new(&s.ctx, TSM_BACKEND_CPU, &s.why);
    if (st == TSM_OK)
        st = tsm_auto_m(s.ctx, t.buf, n, min_m, max_m, fallback, &m, &period);
    Py_END_ALLOW_THREADS;
    ret = st == TSM_OK ? Py_BuildValue("(II)", m, period) : raise_status(&s, TSM_BACKEND_CPU, st);
done:
    session_close(&s);
    PyBuffer_Release(&t);
    return ret;
}

PyDoc_STRVAR(probe_doc, "_probe() -> (cuda_built, backend_auto, why)\n"
                        "Whether this build has the CUDA backend, what backend='auto' picks "
                        "here, and why CUDA is not picked (None when it is).");
static PyObject *py_probe(PyObject *self, PyObject *noargs) {
    (void)self, (void)noargs;
    session s = {0};
    tsm_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = tsm_ctx_new(&s.ctx, TSM_BACKEND_AUTO, &s.why);
    Py_END_ALLOW_THREADS;
    if (st != TSM_OK)
        return raise_status(&s, TSM_BACKEND_AUTO, st);
#ifdef TSMINE_HAVE_CUDA
    PyObject *built = Py_True;
#else
    PyObject *built = Py_False;
#endif
    PyObject *ret = Py_BuildValue("(ONs)", built, backend_used(&s), s.why);
    session_close(&s);
    return ret;
}

static PyMethodDef methods[] = {
    {"_profile", py_profile, METH_VARARGS, profile_doc},
    {"_stump", py_stump, METH_VARARGS, stump_doc},
    {"_discords", py_discords, METH_VARARGS, discords_doc},
    {"_range_discords", py_range_discords, METH_VARARGS, range_doc},
    {"_motifs", py_motifs, METH_VARARGS, motifs_doc},
    {"_auto_m", py_auto_m, METH_VARARGS, auto_m_doc},
    {"_probe", py_probe, METH_NOARGS, probe_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tsmine._tsmine",
    .m_doc = "tsmine's C kernels (libtsmine_kernels); use the tsmine package, not this module.",
    .m_size = -1,
    .m_methods = methods,
};

/* Adds exception class tsmine.NAME (bases: base, and extra when not NULL) to mod. */
static PyObject *add_error(PyObject *mod, const char *name, const char *doc, PyObject *base,
                           PyObject *extra) {
    char qual[64];
    snprintf(qual, sizeof qual, "tsmine.%s", name);
    PyObject *bases = extra ? PyTuple_Pack(2, base, extra) : PyTuple_Pack(1, base);
    if (!bases)
        return NULL;
    PyObject *type = PyErr_NewExceptionWithDoc(qual, doc, bases, NULL);
    Py_DECREF(bases);
    if (!type)
        return NULL;
    Py_INCREF(type); /* one reference for the module, one kept here for the process */
    if (PyModule_AddObject(mod, name, type) != 0) {
        Py_DECREF(type);
        Py_DECREF(type);
        return NULL;
    }
    return type;
}

PyMODINIT_FUNC PyInit__tsmine(void) {
    PyObject *mod = PyModule_Create(&module);
    if (!mod)
        return NULL;
    if (!(Error = add_error(mod, "Error", "A tsmine kernel failed; the message is the library's.",
                            PyExc_Exception, NULL)) ||
        !(InvalidArgumentError =
              add_error(mod, "InvalidArgumentError",
                        "Invalid arguments for this series (m, excl, k, r, ...).", Error,
                        PyExc_ValueError)) ||
        !(OutOfMemoryError = add_error(mod, "OutOfMemoryError", "Host or device memory ran out.",
                                       Error, PyExc_MemoryError)) ||
        !(BackendError = add_error(mod, "BackendError",
                                   "The backend asked for is not available in this build or "
                                   "on this machine.",
                                   Error, PyExc_RuntimeError)) ||
        !(DeviceError = add_error(mod, "DeviceError",
                                  "A sticky CUDA error: the device is unusable in this process.",
                                  Error, PyExc_RuntimeError)) ||
        PyModule_AddIntConstant(mod, "DISCORD_SIZE", (long)sizeof(tsm_discord)) != 0 ||
        PyModule_AddIntConstant(mod, "MOTIF_SIZE", (long)sizeof(tsm_motif)) != 0 ||
        PyModule_AddIntConstant(mod, "MK_SEED_DEFAULT", (long)TSM_MK_SEED_DEFAULT) != 0 ||
        tsmpy_stumpi_add(mod) != 0 || tsmpy_engine_add(mod) != 0 || tsmpy_score_add(mod) != 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
