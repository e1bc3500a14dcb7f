/* SPDX-License-Identifier: Apache-2.0 */
/* score.c - _tsmine._score: `tsmine score` itself (tools/cli/cmd_score.c, score_main),
 * behind tsmine.score (tsmine/_score.py).
 *
 * The command is called, not re-written: the Python side writes the alerts, windows and
 * score lines into files as the command reads them and passes its arguments; this
 * function runs score_main on them with the C library's stdout and stderr turned, for
 * the call, into memory streams (glibc lets a program assign them), and hands back its
 * exit status and both texts: its JSON lines, and what it said on stderr (the messages
 * of its failures, the notes on alerts that fit no file). The GIL is held throughout,
 * so no two calls swap the streams at once; scoring takes milliseconds. */
#include "tsmpy.h" /* Python.h first */

#include "commands.h" /* score_main */

#include <stdio.h>
#include <stdlib.h>

#ifdef __GLIBC__
/* Runs score_main(argc, argv) with stdout and stderr into *out and *err (malloc'ed,
 * NUL-terminated). Returns its status, or -1 when the memory streams cannot be made. */
static int run_captured(int argc, char **argv, char **out, size_t *out_len, char **err,
                        size_t *err_len) {
    FILE *o = open_memstream(out, out_len), *e = open_memstream(err, err_len);
    if (!o || !e) {
        if (o)
            fclose(o);
        if (e)
            fclose(e);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    FILE *saved_out = stdout, *saved_err = stderr;
    stdout = o, stderr = e;
    int rc = score_main(argc, argv);
    stdout = saved_out, stderr = saved_err;
    fclose(o);
    fclose(e);
    return rc;
}
#endif

PyDoc_STRVAR(score_doc, "_score(args) -> (status, stdout, stderr)\n"
                        "Runs `tsmine score ARGS...` in the process; its exit status and "
                        "what it printed.");
static PyObject *py_score(PyObject *self, PyObject *arg) {
    (void)self;
#ifndef __GLIBC__
    (void)arg;
    PyErr_SetString(PyExc_NotImplementedError,
                    "tsmine.score needs the GNU C library (its stdout is captured)");
    return NULL;
#else
    PyObject *seq = PySequence_Fast(arg, "_score: a sequence of str arguments");
    if (!seq)
        return NULL;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    char **argv = calloc((size_t)n + 2, sizeof *argv);
    PyObject *ret = NULL;
    if (!argv) {
        PyErr_NoMemory();
        goto done;
    }
    argv[0] = "score";
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *s = PySequence_Fast_GET_ITEM(seq, k);
        if (!PyUnicode_Check(s)) {
            PyErr_SetString(PyExc_TypeError, "_score: every argument must be a str");
            goto done;
        }
        if (!(argv[k + 1] = (char *)PyUnicode_AsUTF8(s)))
            goto done;
    }
    char *out = NULL, *err = NULL;
    size_t out_len = 0, err_len = 0;
    int rc = run_captured((int)n + 1, argv, &out, &out_len, &err, &err_len);
    if (rc < 0)
        PyErr_SetString(PyExc_MemoryError, "tsmine.score: cannot capture the output");
    else
        ret = Py_BuildValue("(is#s#)", rc, out ? out : "", (Py_ssize_t)out_len, err ? err : "",
                            (Py_ssize_t)err_len);
    free(out);
    free(err);
done:
    free(argv);
    Py_DECREF(seq);
    return ret;
#endif
}

static PyMethodDef functions[] = {
    {"_score", py_score, METH_O, score_doc},
    {NULL, NULL, 0, NULL},
};

int tsmpy_score_add(PyObject *mod) {
    return PyModule_AddFunctions(mod, functions);
}
