/* SPDX-License-Identifier: Apache-2.0 */
/* py_engine.c - _tsmine.Engine: tsmined's stream engine (stream/engine.h) in the process,
 * behind tsmine.Detector and tsmine.detect (tsmine/_stream.py), and
 * _tsmine._stream_params, a stream's settings as the configuration resolves them.
 *
 * The engine is driven as `tsmine detect` drives it (tools/cli/cmd_detect.c, feed()):
 * a run of samples of one stream has sequence numbers first_seq + k and timestamps
 * (given, or first_ts + k period); missing values (NaN, +-Inf) are left out as `tsmine
 * replay` leaves them out, so the engine sees the gap the daemon would; the finite runs
 * go in batches of at most `batch` samples with a tick after each, then a flush. The
 * alerts and scored subsequences the engine hands to its callbacks are kept in C
 * arrays while it runs without the GIL, then become what `tsmine detect` prints: each
 * alert a dict with the keys and values of its JSON line (lib/alert_json.c:
 * alert_id numbered from 1 per engine, detected_at_ns the wall clock, event_start_seq
 * and event_end_seq for ANOMALY and ANOMALY_END only, tail when FAR or NEAR, the views
 * for an alert that has one, None for a number that is not finite), each score line a
 * record of the fields of its `--scores` line (score_rec below; NaN where the line has
 * null; the view as its number, which tsmine/_stream.py names). python/tests/
 * test_detect.py compares both with the command's output, so that a field added
 * there and not here fails a test.
 *
 * One Engine is used by one thread at a time (a second one gets RuntimeError). */
#include "tsmpy.h" /* Python.h first */

#include "calib.h" /* tss_tail */
#include "engine.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- settings ----------------------------------------------------------------------- */

/* The keys of a stream's settings (config/settings.c, tsci_stream_settings), their
 * field in tss_params and the tss_params_fit bit of each (0: no other key follows it). */
enum { P_U32, P_DOUBLE, P_BOOL };
static const struct {
    const char *name;
    int type;
    size_t offset;
    unsigned set;
} settings[] = {
    {"window", P_U32, offsetof(tss_params, window), TSS_SET_WINDOW},
    {"subsequence", P_U32, offsetof(tss_params, subsequence), TSS_SET_SUBSEQUENCE},
    {"hop", P_U32, offsetof(tss_params, hop), TSS_SET_HOP},
    {"excl", P_U32, offsetof(tss_params, excl), TSS_SET_EXCL},
    {"warmup", P_U32, offsetof(tss_params, warmup), TSS_SET_WARMUP},
    {"threshold", P_DOUBLE, offsetof(tss_params, threshold), TSS_SET_THRESHOLD},
    {"threshold_end", P_DOUBLE, offsetof(tss_params, threshold_end), TSS_SET_THRESHOLD_END},
    {"range", P_DOUBLE, offsetof(tss_params, range), 0},
    {"motif", P_BOOL, offsetof(tss_params, motif), 0},
    {"references", P_U32, offsetof(tss_params, references), 0},
    {"left_discord", P_BOOL, offsetof(tss_params, left_discord), 0},
};
#define N_SETTINGS (sizeof settings / sizeof settings[0])

/* The params of dict d (keys of settings[], values already checked for type and bounds
 * by the caller: ints, floats (range NaN for auto), bools) over the defaults, the
 * defaults that d leaves out fitted to those it sets (tss_params_fit), then checked
 * (tss_params_check). 0, or -1 with an exception set (InvalidArgumentError with
 * tss_params_check's message for a conflict). */
static int params_from(PyObject *d, tss_params *out) {
    tss_params p = tss_params_default();
    unsigned set = 0;
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "the settings must be a dict");
        return -1;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        size_t k = 0;
        while (name && k < N_SETTINGS && strcmp(settings[k].name, name) != 0)
            k++;
        if (!name || k == N_SETTINGS) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "unknown stream setting %R", key);
            return -1;
        }
        char *field = (char *)&p + settings[k].offset;
        if (settings[k].type == P_DOUBLE) {
            double v = PyFloat_AsDouble(value);
            if (v == -1.0 && PyErr_Occurred())
                return -1;
            *(double *)field = v;
        } else {
            unsigned long v = PyLong_AsUnsignedLong(value);
            if (v == (unsigned long)-1 && PyErr_Occurred())
                return -1;
            if (settings[k].type == P_BOOL)
                *(int *)field = v != 0;
            else if (v > UINT32_MAX) {
                PyErr_Format(PyExc_OverflowError, "%s = %lu is too large", name, v);
                return -1;
            } else
                *(uint32_t *)field = (uint32_t)v;
        }
        set |= settings[k].set;
    }
    char why[256];
    tss_params_fit(&p, set);
    if (tss_params_check(&p, why, sizeof why) != 0) {
        PyErr_SetString(tsmpy_error_type(TSM_EINVAL), why);
        return -1;
    }
    *out = p;
    return 0;
}

/* The params as a dict of the settings' names (subsequence 0: "auto"; range NaN: None). */
static PyObject *params_dict(const tss_params *p) {
    PyObject *d = PyDict_New();
    for (size_t k = 0; d && k < N_SETTINGS; k++) {
        const char *field = (const char *)p + settings[k].offset;
        PyObject *v;
        if (settings[k].type == P_DOUBLE) {
            double x = *(const double *)field;
            v = isnan(x) ? (Py_INCREF(Py_None), Py_None) : PyFloat_FromDouble(x);
        } else if (settings[k].type == P_BOOL) {
            v = PyBool_FromLong(*(const int *)field);
        } else if (settings[k].offset == offsetof(tss_params, subsequence) &&
                   *(const uint32_t *)field == 0) {
            v = PyUnicode_FromString("auto");
        } else {
            v = PyLong_FromUnsignedLong(*(const uint32_t *)field);
        }
        if (!v || PyDict_SetItemString(d, settings[k].name, v) != 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

PyDoc_STRVAR(stream_params_doc,
             "_stream_params(settings) -> dict\n"
             "A stream's parameters as tsmined's configuration resolves a group that sets "
             "settings (tss_params_fit, then tss_params_check).");
static PyObject *py_stream_params(PyObject *self, PyObject *arg) {
    (void)self;
    tss_params p;
    return params_from(arg, &p) == 0 ? params_dict(&p) : NULL;
}

/* ---- what the callbacks keep ---------------------------------------------------------- */

/* One --scores line (cmd_detect.c on_score) of a stream: its fields in the line's order,
 * all of 8 bytes (no padding, which numpy would drop when it joins records), the view as
 * its tss_view (VIEW_NAMES names them); SCORE_FIELDS describes the layout to numpy. */
typedef struct {
    uint64_t start_seq;
    uint64_t m;
    double raw;
    uint64_t neighbor_seq;
    double magnitude;
    uint64_t magnitude_neighbor_seq;
    double level, shape_score, magnitude_score, level_score, score;
    uint64_t view;
} score_rec;

#define FIELD(name, fmt)                                                                           \
    { #name, fmt, offsetof(score_rec, name) }
static const struct {
    const char *name, *fmt;
    size_t offset;
} score_fields[] = {
    FIELD(start_seq, "<u8"),    FIELD(m, "<u8"),           FIELD(raw, "<f8"),
    FIELD(neighbor_seq, "<u8"), FIELD(magnitude, "<f8"),   FIELD(magnitude_neighbor_seq, "<u8"),
    FIELD(level, "<f8"),        FIELD(shape_score, "<f8"), FIELD(magnitude_score, "<f8"),
    FIELD(level_score, "<f8"),  FIELD(score, "<f8"),       FIELD(view, "<u8"),
};
#undef FIELD

typedef struct {
    tss_alert al;
    uint64_t alert_id;
    int64_t detected_at_ns;
    uint32_t id; /* index into the run's stream ids */
} alert_rec;

/* The alerts and score lines of one ingest call, and the stream ids they name. */
typedef struct {
    alert_rec *a;
    size_t na, capa;
    score_rec *s;
    uint32_t *sid;
    size_t ns, caps;
    char (*ids)[TSS_MAX_ID + 1];
    size_t nids, capids;
    uint32_t last_id;
    int oom; /* a record was lost for want of memory */
} run_sink;

static void sink_free(run_sink *k) {
    free(k->a), free(k->s), free(k->sid), free(k->ids);
    memset(k, 0, sizeof *k);
}

/* The index of stream id in k->ids (added when new); UINT32_MAX when out of memory. */
static uint32_t sink_id(run_sink *k, const char *id) {
    if (k->nids && strcmp(k->ids[k->last_id], id) == 0)
        return k->last_id;
    for (size_t q = 0; q < k->nids; q++)
        if (strcmp(k->ids[q], id) == 0)
            return k->last_id = (uint32_t)q;
    if (k->nids == k->capids) {
        size_t cap = k->capids ? 2 * k->capids : 4;
        void *more = realloc(k->ids, cap * sizeof *k->ids);
        if (!more)
            return UINT32_MAX;
        k->ids = more, k->capids = cap;
    }
    snprintf(k->ids[k->nids], sizeof k->ids[k->nids], "%s", id);
    return k->last_id = (uint32_t)k->nids++;
}

/* Makes room for one more of n items of size bytes in *arr (capacity *cap). 0 or -1. */
static int room(void **arr, size_t n, size_t *cap, size_t size) {
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 256;
    void *more = realloc(*arr, c * size);
    if (!more)
        return -1;
    *arr = more, *cap = c;
    return 0;
}

typedef struct {
    /* clang-format off */
    PyObject_HEAD /* (a macro without its semicolon) */
    tss_engine *engine;
    /* clang-format on */
    tss_params params; /* every stream's */
    uint64_t next_id;  /* the next alert_id */
    int busy;          /* an ingest is running (without the GIL) */
    int scores;        /* keep the score lines */
    run_sink sink;     /* the running ingest's records */
} engine_obj;

static int64_t realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_alert(void *user, const char *stream_id, const tss_alert *al) {
    engine_obj *e = user;
    run_sink *k = &e->sink;
    uint32_t id = sink_id(k, stream_id);
    if (id == UINT32_MAX || room((void **)&k->a, k->na, &k->capa, sizeof *k->a) != 0) {
        k->oom = 1;
        return;
    }
    k->a[k->na++] = (alert_rec){*al, e->next_id++, realtime_ns(), id};
}

static void on_score(void *user, const char *stream_id, const tss_scored *sc) {
    engine_obj *e = user;
    run_sink *k = &e->sink;
    uint32_t id = sink_id(k, stream_id);
    size_t cap = k->caps;
    if (id == UINT32_MAX || room((void **)&k->s, k->ns, &cap, sizeof *k->s) != 0 ||
        room((void **)&k->sid, k->ns, &k->caps, sizeof *k->sid) != 0) {
        k->oom = 1;
        return;
    }
    k->s[k->ns] = (score_rec){
        .start_seq = sc->start,
        .m = sc->m,
        .raw = sc->raw,
        .neighbor_seq = sc->neighbor,
        .magnitude = sc->magnitude,
        .magnitude_neighbor_seq = sc->magnitude_neighbor,
        .level = sc->level,
        .shape_score = sc->shape_score,
        .magnitude_score = sc->magnitude_score,
        .level_score = sc->level_score,
        .score = sc->score,
        .view = (uint64_t)sc->view,
    };
    k->sid[k->ns++] = id;
}

static int params_for(void *user, const char *stream_id, tss_params *out) {
    (void)stream_id;
    *out = ((engine_obj *)user)->params;
    return 0;
}

/* ---- records -> Python ------------------------------------------------------------- */

static const char *kind_name(int kind) { /* lib/alert_json.c, tsm_alert_kind_name */
    switch (kind) {
    case TSS_ALERT_DISCORD: return "DISCORD";
    case TSS_ALERT_LEFT_DISCORD: return "LEFT_DISCORD";
    case TSS_ALERT_MOTIF: return "MOTIF";
    case TSS_ALERT_GAP: return "GAP";
    case TSS_ALERT_ANOMALY: return "ANOMALY";
    case TSS_ALERT_ANOMALY_END: return "ANOMALY_END";
    case TSS_ALERT_RESET: return "RESET";
    }
    return "UNKNOWN";
}

/* The name of a view as the JSON lines write it (alert_json.c, tsm_alert_view_name; a
 * score line writes "none" where an alert writes no view); NULL for none. */
static const char *view_name(int view) {
    switch (view) {
    case TSS_VIEW_NONE: return NULL;
    case TSS_VIEW_SHAPE: return "shape";
    case TSS_VIEW_MAGNITUDE: return "magnitude";
    case TSS_VIEW_LEVEL: return "level";
    }
    return "unknown";
}

/* Sets d[key] = v (v's reference is taken); -1 when v is NULL or the set fails. */
static int put(PyObject *d, const char *key, PyObject *v) {
    int rc = v ? PyDict_SetItemString(d, key, v) : -1;
    Py_XDECREF(v);
    return rc;
}

/* A JSON number as alert_json.c writes it: None when not finite. */
static PyObject *number(double x) {
    if (isfinite(x))
        return PyFloat_FromDouble(x);
    Py_INCREF(Py_None);
    return Py_None;
}

/* One alert as the dict of its `tsmine detect` JSON line, keys in the line's order. */
static PyObject *alert_dict(const alert_rec *r, const char *stream_id) {
    const tss_alert *a = &r->al;
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    int bad = put(d, "alert_id", PyLong_FromUnsignedLongLong(r->alert_id)) ||
              put(d, "stream_id", PyUnicode_DecodeUTF8(stream_id, strlen(stream_id), "replace")) ||
              put(d, "kind", PyUnicode_FromString(kind_name(a->kind))) ||
              put(d, "start_seq", PyLong_FromUnsignedLongLong(a->start_seq)) ||
              put(d, "start_timestamp_ns", PyLong_FromLongLong(a->start_timestamp_ns)) ||
              put(d, "length", PyLong_FromUnsignedLong(a->length)) ||
              put(d, "distance", number(a->distance)) ||
              put(d, "neighbor_seq", PyLong_FromUnsignedLongLong(a->neighbor_seq)) ||
              put(d, "threshold", number(a->threshold)) || put(d, "score", number(a->score));
    if (!bad && (a->kind == TSS_ALERT_ANOMALY || a->kind == TSS_ALERT_ANOMALY_END))
        bad = put(d, "event_start_seq", PyLong_FromUnsignedLongLong(a->event_start_seq)) ||
              put(d, "event_end_seq", PyLong_FromUnsignedLongLong(a->event_end_seq));
    if (!bad && (a->tail == TSS_TAIL_FAR || a->tail == TSS_TAIL_NEAR))
        bad = put(d, "tail", PyUnicode_FromString(a->tail == TSS_TAIL_FAR ? "FAR" : "NEAR"));
    const char *view = view_name(a->view);
    if (!bad && view) /* the scored kinds: each view's score and value */
        bad = put(d, "view", PyUnicode_FromString(view)) ||
              put(d, "shape_score", number(a->shape_score)) ||
              put(d, "magnitude_score", number(a->magnitude_score)) ||
              put(d, "level_score", number(a->level_score)) ||
              put(d, "magnitude_distance", number(a->magnitude)) ||
              put(d, "magnitude_neighbor_seq",
                  isfinite(a->magnitude) ? PyLong_FromUnsignedLongLong(a->magnitude_neighbor_seq)
                                         : (Py_INCREF(Py_None), Py_None)) ||
              put(d, "level", number(a->level));
    if (!bad)
        bad = put(d, "detected_seq", PyLong_FromUnsignedLongLong(a->detected_seq)) ||
              put(d, "detected_at_ns", PyLong_FromLongLong(r->detected_at_ns)) ||
              put(d, "seq", PyLong_FromUnsignedLongLong(a->seq));
    if (bad)
        Py_CLEAR(d);
    return d;
}

/* (alerts, scores): the list of alert dicts, and (with scores on) the list of
 * (stream_id, bytes of its score_rec records) in the order the streams first scored. */
static PyObject *run_result(const engine_obj *e) {
    const run_sink *k = &e->sink;
    PyObject *alerts = PyList_New((Py_ssize_t)k->na), *scores = NULL;
    for (size_t q = 0; alerts && q < k->na; q++) {
        PyObject *d = alert_dict(&k->a[q], k->ids[k->a[q].id]);
        if (!d)
            Py_CLEAR(alerts);
        else
            PyList_SET_ITEM(alerts, (Py_ssize_t)q, d);
    }
    if (alerts && e->scores) {
        scores = PyList_New(0);
        score_rec *buf = k->ns ? malloc(k->ns * sizeof *buf) : NULL;
        if (k->ns && !buf) {
            PyErr_NoMemory();
            Py_CLEAR(scores);
        }
        for (uint32_t id = 0; scores && id < k->nids; id++) {
            size_t n = 0;
            for (size_t q = 0; q < k->ns; q++)
                if (k->sid[q] == id)
                    buf[n++] = k->s[q];
            if (n == 0)
                continue;
            PyObject *item = Py_BuildValue("(sy#)", k->ids[id], (const char *)buf,
                                           (Py_ssize_t)(n * sizeof *buf));
            if (!item || PyList_Append(scores, item) != 0)
                Py_CLEAR(scores);
            Py_XDECREF(item);
        }
        free(buf);
    } else if (alerts) {
        scores = Py_None, Py_INCREF(scores);
    }
    if (!alerts || !scores) {
        Py_XDECREF(alerts);
        Py_XDECREF(scores);
        return NULL;
    }
    return Py_BuildValue("(NN)", alerts, scores);
}

/* ---- the engine --------------------------------------------------------------------- */

static int engine_init(PyObject *self, PyObject *args, PyObject *kwds) {
    engine_obj *e = (engine_obj *)self;
    static char *kwlist[] = {"settings", "backend", "threads", "scores", NULL};
    PyObject *settings_dict;
    const char *bname;
    int threads, scores;
    if (e->engine) {
        PyErr_SetString(PyExc_RuntimeError, "Engine is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Osip", kwlist, &settings_dict, &bname, &threads,
                                     &scores))
        return -1;
    tsm_backend backend;
    if (tsm_backend_parse(bname, &backend) != 0) {
        PyErr_Format(PyExc_ValueError, "unknown backend '%s' (auto, cpu or cuda)", bname);
        return -1;
    }
    if (params_from(settings_dict, &e->params) != 0)
        return -1;
    e->next_id = 1;
    e->scores = scores;
    tss_engine_options opt = {
        .backend = backend,
        .threads = threads,
        .on_alert = on_alert,
        .params_for = params_for,
        .on_score = scores ? on_score : NULL,
        .user = e,
    };
    char err[512] = "";
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = tss_engine_new(&opt, &e->engine, err, sizeof err);
    Py_END_ALLOW_THREADS;
    if (rc != 0) {
        PyErr_SetString(tsmpy_error_type(TSM_EBACKEND), err[0] ? err : "cannot create the engine");
        return -1;
    }
    return 0;
}

static void engine_dealloc(PyObject *self) {
    engine_obj *e = (engine_obj *)self;
    tss_engine_destroy(&e->engine);
    sink_free(&e->sink);
    Py_TYPE(self)->tp_free(self);
}

/* What went wrong in feed(), for the exception raised once the GIL is back. */
typedef struct {
    PyObject *type; /* NULL: nothing */
    char msg[600];
} failure;

/* feed() of cmd_detect.c on one run of n samples of stream id: the finite runs in
 * batches of at most batch samples with a tick after each, then a flush. Without the
 * GIL. 0, or -1 with *f set. */
static int feed(engine_obj *e, const char *id, uint64_t first_seq, const double *v,
                const int64_t *ts, int64_t first_ts, int64_t period, size_t n, size_t batch,
                failure *f) {
    char err[512];
    for (size_t i = 0; i < n;) {
        if (!isfinite(v[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && j - i < batch && isfinite(v[j]))
            j++;
        tss_reject why = tss_engine_ingest(e->engine, id, first_seq + i, ts ? ts + i : NULL,
                                           first_ts + (int64_t)i * period, period, v + i, j - i);
        if (why != TSS_OK) {
            f->type = tsmpy_error_type(TSM_EINVAL);
            snprintf(f->msg, sizeof f->msg, "%s: samples %llu..%llu refused (%s)", id,
                     (unsigned long long)(first_seq + i), (unsigned long long)(first_seq + j - 1),
                     tss_reject_name(why));
            return -1;
        }
        if (tss_engine_tick(e->engine, err, sizeof err) != 0) {
            f->type =
                tsmpy_error_type(tss_engine_device_lost(e->engine) ? TSM_EDEVICE : TSM_EINTERNAL);
            snprintf(f->msg, sizeof f->msg, "%s: %s", id, err);
            return -1;
        }
        i = j;
    }
    if (tss_engine_flush(e->engine, err, sizeof err) != 0) {
        f->type = tsmpy_error_type(TSM_EINTERNAL);
        snprintf(f->msg, sizeof f->msg, "%s: %s", id, err);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(ingest_doc,
             "ingest(stream_id, first_seq, values, timestamps, first_ts, period, batch)\n"
             "    -> (alerts, scores)\n"
             "Feeds the float64 values (int64 timestamps, or None for first_ts + k period) "
             "as `tsmine detect` feeds a file; the alerts as dicts and, with scores on, "
             "[(stream_id, bytes of score records)].");
static PyObject *engine_ingest(PyObject *self, PyObject *args) {
    engine_obj *e = (engine_obj *)self;
    const char *id;
    unsigned long long first_seq;
    long long first_ts, period;
    Py_ssize_t batch;
    Py_buffer v, ts = {0};
    PyObject *ts_obj;
    if (!e->engine) {
        PyErr_SetString(PyExc_RuntimeError, "Engine was not initialised");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "sKy*OLLn", &id, &first_seq, &v, &ts_obj, &first_ts, &period,
                          &batch))
        return NULL;
    PyObject *ret = NULL;
    const size_t n = (size_t)v.len / sizeof(double);
    if (ts_obj != Py_None && PyObject_GetBuffer(ts_obj, &ts, PyBUF_SIMPLE) != 0)
        goto done;
    if (v.len % (Py_ssize_t)sizeof(double) != 0 || batch < 1 ||
        (ts.buf && (size_t)ts.len != n * sizeof(int64_t))) {
        PyErr_SetString(PyExc_ValueError, "ingest: float64 values, one int64 timestamp each, "
                                          "batch >= 1");
        goto done;
    }
    if (e->busy) {
        PyErr_SetString(PyExc_RuntimeError, "this Detector is in use by another thread");
        goto done;
    }
    e->busy = 1;
    sink_free(&e->sink);
    failure f = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = feed(e, id, first_seq, v.buf, ts.buf, first_ts, period, n, (size_t)batch, &f);
    Py_END_ALLOW_THREADS;
    e->busy = 0;
    if (rc != 0)
        PyErr_SetString(f.type, f.msg);
    else if (e->sink.oom)
        PyErr_NoMemory();
    else
        ret = run_result(e);
    sink_free(&e->sink);
done:
    PyBuffer_Release(&v);
    if (ts.buf)
        PyBuffer_Release(&ts);
    return ret;
}

PyDoc_STRVAR(info_doc, "info(stream_id) -> dict or None\n"
                       "What the engine holds for a stream (tss_engine_stream_find).");
static PyObject *engine_info(PyObject *self, PyObject *arg) {
    engine_obj *e = (engine_obj *)self;
    const char *id = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!id) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "info: the stream id must be a str");
        return NULL;
    }
    tss_stream_info in;
    if (!e->engine || e->busy || tss_engine_stream_find(e->engine, id, &in) != 0)
        Py_RETURN_NONE;
    PyObject *params = params_dict(&in.params);
    if (!params)
        return NULL;
    return Py_BuildValue(
        "{s:N,s:I,s:O,s:I,s:K,s:K,s:K,s:K,s:d,s:O,s:K,s:d}", "params", params, "m",
        in.params.subsequence, "subsequence_auto", in.subsequence_auto ? Py_True : Py_False,
        "period", in.period, "samples", (unsigned long long)in.samples, "next_seq",
        (unsigned long long)in.next_seq, "window_fill", (unsigned long long)in.window_fill,
        "events", (unsigned long long)in.events, "range", in.range, "calibrated",
        in.calibrated ? Py_True : Py_False, "gaps", (unsigned long long)in.gaps, "last_score",
        in.last_score);
}

static PyObject *get_backend(PyObject *self, void *closure) {
    (void)closure;
    engine_obj *e = (engine_obj *)self;
    if (!e->engine)
        Py_RETURN_NONE;
    return PyUnicode_FromString(tsm_backend_name(tss_engine_backend(e->engine)));
}

static PyObject *get_params(PyObject *self, void *closure) {
    (void)closure;
    return params_dict(&((engine_obj *)self)->params);
}

static PyMethodDef engine_methods[] = {
    {"ingest", engine_ingest, METH_VARARGS, ingest_doc},
    {"info", engine_info, METH_O, info_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef engine_getset[] = {
    {"backend", get_backend, NULL, "the backend the engine runs", NULL},
    {"params", get_params, NULL, "every stream's parameters, resolved", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject engine_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tsmine._tsmine.Engine",
    .tp_doc = PyDoc_STR("Engine(settings, backend, threads, scores): tsmined's stream engine "
                        "(use tsmine.Detector)."),
    .tp_basicsize = sizeof(engine_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = engine_init,
    .tp_dealloc = engine_dealloc,
    .tp_methods = engine_methods,
    .tp_getset = engine_getset,
};

static PyMethodDef functions[] = {
    {"_stream_params", py_stream_params, METH_O, stream_params_doc},
    {NULL, NULL, 0, NULL},
};

/* SCORE_FIELDS: ((name, numpy format, offset), ...) of score_rec; SCORE_SIZE its size. */
static PyObject *score_layout(void) {
    const size_t n = sizeof score_fields / sizeof score_fields[0];
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    for (size_t k = 0; t && k < n; k++) {
        PyObject *f = Py_BuildValue("(ssn)", score_fields[k].name, score_fields[k].fmt,
                                    (Py_ssize_t)score_fields[k].offset);
        if (!f)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, (Py_ssize_t)k, f);
    }
    return t;
}

int tsmpy_engine_add(PyObject *mod) {
    if (PyType_Ready(&engine_type) != 0 || PyModule_AddFunctions(mod, functions) != 0)
        return -1;
    Py_INCREF(&engine_type);
    if (PyModule_AddObject(mod, "Engine", (PyObject *)&engine_type) != 0) {
        Py_DECREF(&engine_type);
        return -1;
    }
    PyObject *layout = score_layout();
    if (!layout || PyModule_AddObject(mod, "SCORE_FIELDS", layout) != 0) {
        Py_XDECREF(layout);
        return -1;
    }
    PyObject *views = Py_BuildValue("(ssss)", "none", view_name(TSS_VIEW_SHAPE),
                                    view_name(TSS_VIEW_MAGNITUDE), view_name(TSS_VIEW_LEVEL));
    if (!views || PyModule_AddObject(mod, "VIEW_NAMES", views) != 0) {
        Py_XDECREF(views);
        return -1;
    }
    return PyModule_AddIntConstant(mod, "SCORE_SIZE", (long)sizeof(score_rec));
}
