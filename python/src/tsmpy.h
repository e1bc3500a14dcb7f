/* SPDX-License-Identifier: Apache-2.0 */
/* tsmpy.h - what the files of the extension module tsmine._tsmine share (_tsmine.c is
 * the module; each other file adds one type or a few functions to it):
 *   stumpi.c     _tsmine.Stumpi, the incremental profile behind tsmine.stumpi
 *                (kernels/online.h);
 *   py_engine.c  _tsmine.Engine, the stream engine of tsmined in the process
 *                (stream/engine.h), behind tsmine.Detector and tsmine.detect;
 *   score.c      _tsmine._score, `tsmine score` itself (tools/cli/cmd_score.c),
 *                behind tsmine.score.
 * Internal to the module: the tsmpy_ prefix, nothing of it is installed. */
#ifndef TSMPY_H
#define TSMPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tsm.h"

/* The exception class of a status: InvalidArgumentError for TSM_EINVAL, ... (_tsmine.c
 * says which); a borrowed reference, valid once the module is initialised. */
PyObject *tsmpy_error_type(tsm_status st);

/* Raises the exception of st with ctx's message (the status's name when the ctx has
 * none, or when ctx is NULL); returns NULL. */
PyObject *tsmpy_raise_ctx(const tsm_ctx *ctx, tsm_status st);

/* Each adds its type or functions to the module; 0, or -1 with an exception set. */
int tsmpy_stumpi_add(PyObject *mod);
int tsmpy_engine_add(PyObject *mod);
int tsmpy_score_add(PyObject *mod);

#endif
