/* SPDX-License-Identifier: Apache-2.0 */
/* plot.h - what `tsmine plot` draws (a figure) and how it gets it: the series, the
 * (left) matrix profile beneath it, and marked regions of the series (discords, motif
 * pairs, anomaly events), either computed (cmd_plot.c) or read from the JSON lines
 * that `tsmine discord|motif|profile|detect|alerts` print (plot_results.c), and the
 * labelled anomaly windows of a windows file (plot_windows.c). plot_draw.c turns a
 * figure into a PNG or SVG file with cairo. */
#ifndef TSMINE_PLOT_H
#define TSMINE_PLOT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/series_io.h"

/* PLOT_WINDOW: a labelled anomaly window, shaded behind the series (not a result). */
typedef enum { PLOT_DISCORD, PLOT_MOTIF, PLOT_EVENT, PLOT_WINDOW } plot_mark_kind;

/* One marked region of the series: samples [start, start + len). */
typedef struct {
    plot_mark_kind kind;
    int group;      /* discord, event, window: its rank 1..; motif: the pair's rank 1.. */
    uint64_t start; /* first sample */
    uint64_t len;   /* samples: m for discords and motifs, the extent for events */
} plot_mark;

typedef struct {
    const double *v; /* the series, n values (NaN: missing) */
    size_t n, m;
    double *profile;     /* N = n - m + 1 distances (NaN: undefined), owned; or NULL */
    int left;            /* the profile is the left one */
    plot_mark *marks;    /* owned */
    size_t n_marks, cap; /* marks used and allocated */
    const char *title;   /* first line above the plot */
} plot_figure;

/* Appends a mark to f; returns 0, or -1 when out of memory. Amortised O(1). */
int plot_add_mark(plot_figure *f, plot_mark_kind kind, int group, uint64_t start, uint64_t len);

/* Frees the profile and the marks of f (not the series). */
void plot_figure_free(plot_figure *f);

/* Reads results from path ("-": standard input), one JSON object a line as `tsmine
 * discord|motif|profile|detect` print them (--format json), into f's marks and, for
 * profile rows, f's profile (allocated here with every distance NaN first). f->v, n
 * and m must be set: every index is checked against them. Returns 0, or an exit
 * status (EX_NOINPUT, EX_DATAERR, EX_SOFTWARE) after printing "tsmine: plot: PATH:LINE:
 * what". Detect alerts: an ANOMALY ... ANOMALY_END pair is one event over the END's
 * extent (an event still open at the end runs to the last sample), DISCORD and
 * LEFT_DISCORD mark discords, MOTIF a pair; GAP is not drawn. O(lines + marks). */
int plot_read_results(const char *path, plot_figure *f);

/* Reads the labelled windows of FILE (the series s, read with its timestamps) from the
 * windows file path, as `tsmine score --windows` reads it (NAB's combined_windows.json:
 * {"folder/file.csv": [["YYYY-MM-DD HH:MM:SS", "..."], ...], ...}), into f's marks as
 * PLOT_WINDOW: the entry whose path FILE's ends in, else the only one named as FILE
 * (without folder and extension); each bound must be a row's timestamp, as score
 * requires. Returns 0, or an exit status (EX_NOINPUT, EX_DATAERR, EX_SOFTWARE) after
 * printing why. O(n) per window. */
int plot_read_windows(const char *path, const char *file, const series *s, plot_figure *f);

/* Where plot_draw put things, in pixels: sample i at x = x0 + (x1 - x0) i / (n - 1);
 * the series panel spans y in [series_y0, series_y1], the profile panel [profile_y0,
 * profile_y1] (both 0 without a profile). `tsmine plot -v` prints it; tests use it. */
typedef struct {
    double x0, x1, series_y0, series_y1, profile_y0, profile_y1;
} plot_frame;

/* Draws f into path as PNG or SVG (by its extension), width x height pixels (points
 * for SVG), and says where in *frame (may be NULL). Returns 0, or an exit status after printing
 * why: EX_CANTCREAT when the file cannot be written, EX_UNAVAILABLE when built without cairo.
 * O(n_marks + min(n, width) per column). */
int plot_draw(const plot_figure *f, const char *path, int width, int height, plot_frame *frame);

/* Whether this build can draw (built with cairo). */
int plot_available(void);

#endif
