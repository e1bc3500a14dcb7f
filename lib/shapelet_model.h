/* SPDX-License-Identifier: Apache-2.0 */
/* shapelet_model.h - the model file of `tsmine shapelet` (JSON): a shapelet tree
 * (kernels/shapelet_tree.h) with its class names and search parameters, everything
 * that `predict` needs, the shapelets' values included. Numbers are written in their
 * shortest exact form, so a saved and reloaded model predicts bit for bit the same.
 *
 *   {"format":"tsmine-shapelet-tree","version":1,"classes":["1","2"],"w":0,
 *    "series_length":150,"min_len":3,"max_len":150,"step":1,"heuristic":false,
 *    "nodes":[{"id":0,"leaf":false,"label":"1","n":50,"series":3,"start":10,
 *              "length":20,"threshold":0.4,"gain":0.6,"gap":0.3,"left":1,"right":2,
 *              "shapelet":[...]},
 *             {"id":1,"leaf":true,"label":"2","n":25}, ...]}
 *
 * A logical node (`train --logical`, shapelet_tree.h) adds its second shapelet:
 *   "op":"and" (or "or"),"series2":7,"start2":40,"length2":15,"shapelet2":[...]
 * and its threshold, gain and gap are those of the two shapelets' combined distance. */
#ifndef TSMINE_SHAPELET_MODEL_H
#define TSMINE_SHAPELET_MODEL_H

#include "lib/series_io.h"
#include "shapelet_tree.h"

#include <stdio.h>

typedef struct {
    tsm_stree *tree;
    char **classes; /* tree->n_classes names */
    size_t series_length, min_len, max_len, step;
    int heuristic;
} shapelet_model;

/* Writes m as one JSON object and a newline. Returns 0, or -1 when writing failed. */
int shapelet_model_write(FILE *out, const shapelet_model *m);

/* Writes node k of m as one JSON object (the form of the model's "nodes"), no newline. */
void shapelet_model_write_node(FILE *out, const shapelet_model *m, size_t k);

/* Reads a model file; on failure *m is empty and err holds "FILE:LINE: what" (JSON
 * syntax) or "FILE: what" (a valid JSON that is not a model). */
series_status shapelet_model_read(const char *path, shapelet_model *m, char *err, size_t errlen);

void shapelet_model_free(shapelet_model *m);

#endif
