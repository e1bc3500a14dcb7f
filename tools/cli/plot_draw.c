/* SPDX-License-Identifier: Apache-2.0 */
/* plot_draw.c - a figure (plot.h) as a PNG or SVG picture, drawn with cairo: the
 * series on top with its marked regions as translucent bands (the marked samples also
 * redrawn in the band's colour), the (left) matrix profile beneath on the same x axis
 * (subsequence i at the x of sample i, where it starts), ticks, labels and a legend.
 * Built without cairo (no TSMINE_HAVE_PLOT), plot_draw says so and fails. */
#include "cli.h"
#include "plot.h"

#include <sysexits.h>

#ifndef TSMINE_HAVE_PLOT

int plot_available(void) {
    return 0;
}

int plot_draw(const plot_figure *f, const char *path, int width, int height, plot_frame *frame) {
    (void)f, (void)path, (void)width, (void)height, (void)frame;
    cli_error("plot: this tsmine was built without cairo, so it cannot draw (install "
              "libcairo2-dev and rebuild; CMake option TSMINE_PLOT)");
    return EX_UNAVAILABLE;
}

#else

#include <cairo-svg.h>
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int plot_available(void) {
    return 1;
}

/* Colours: the series, the profile, and the marks (kinds; motif pairs cycle). */
typedef struct {
    double r, g, b;
} rgb;
static const rgb ink = {0.15, 0.15, 0.15}, series_rgb = {0.25, 0.25, 0.30},
                 profile_rgb = {0.20, 0.35, 0.55}, grid_rgb = {0.88, 0.88, 0.88};
static const rgb discord_rgb = {0.84, 0.15, 0.16}, event_rgb = {1.00, 0.50, 0.05},
                 window_rgb = {0.20, 0.62, 0.30};
static const rgb motif_rgb[] = {{0.12, 0.47, 0.71}, {0.17, 0.63, 0.17}, {0.58, 0.40, 0.74},
                                {0.55, 0.34, 0.29}, {0.89, 0.47, 0.76}, {0.09, 0.75, 0.81}};
#define N_MOTIF_RGB  (sizeof motif_rgb / sizeof motif_rgb[0])
#define BAND_ALPHA   0.22 /* the marks' bands; tests/plot_test.py looks for it */
#define WINDOW_ALPHA 0.16 /* the labelled windows' bands, beneath the marks' (idem) */
#define FONT_SIZE    13.0

/* A panel: its pixel rectangle and the value range its y axis spans. */
typedef struct {
    double x, y, w, h;
    double lo, hi;
} panel;

static const rgb *mark_rgb(const plot_mark *k) {
    if (k->kind == PLOT_DISCORD)
        return &discord_rgb;
    if (k->kind == PLOT_EVENT)
        return &event_rgb;
    if (k->kind == PLOT_WINDOW)
        return &window_rgb;
    return &motif_rgb[(size_t)(k->group - 1) % N_MOTIF_RGB];
}

static void set_rgb(cairo_t *cr, const rgb *c, double alpha) {
    cairo_set_source_rgba(cr, c->r, c->g, c->b, alpha);
}

/* x of sample i, n samples across the panel. */
static double x_of(const panel *p, size_t n, double i) {
    return p->x + p->w * i / (double)(n > 1 ? n - 1 : 1);
}

static double y_of(const panel *p, double v) {
    return p->y + p->h * (p->hi - v) / (p->hi - p->lo);
}

/* The finite range of v[0..count), padded by 5%; [0, 1] around a constant. */
static void value_range(const double *v, size_t count, int from_zero, double *lo, double *hi) {
    double a = INFINITY, b = -INFINITY;
    for (size_t i = 0; i < count; i++)
        if (isfinite(v[i]))
            a = v[i] < a ? v[i] : a, b = v[i] > b ? v[i] : b;
    if (a > b)
        a = 0, b = 1;
    if (from_zero && a > 0)
        a = 0;
    if (b - a < 1e-12 * (fabs(a) + fabs(b)) || b == a)
        a -= 0.5, b += 0.5;
    double pad = 0.05 * (b - a);
    *lo = from_zero && a == 0 ? 0 : a - pad;
    *hi = b + pad;
}

/* A step of 1, 2 or 5 times a power of ten giving about `want` ticks over span. */
static double nice_step(double span, int want) {
    double raw = span / want, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* Prints a tick value compactly ("0.5", "12000", "1.5e+06"). */
static void tick_label(char *buf, size_t len, double v, double step) {
    if (fabs(v) < step * 1e-9)
        v = 0;
    snprintf(buf, len, "%.6g", v);
}

static void text_at(cairo_t *cr, double x, double y, const char *s, double align_x,
                    double align_y) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    cairo_move_to(cr, x - align_x * e.width - e.x_bearing, y - align_y * e.height - e.y_bearing);
    cairo_show_text(cr, s);
}

/* Frame, horizontal grid, y ticks and the rotated axis label of one panel. */
static void draw_y_axis(cairo_t *cr, const panel *p, const char *label) {
    double step = nice_step(p->hi - p->lo, p->h > 200 ? 6 : 4);
    char buf[32];
    cairo_set_line_width(cr, 1);
    for (double v = ceil(p->lo / step) * step; v <= p->hi; v += step) {
        double y = round(y_of(p, v)) + 0.5;
        set_rgb(cr, &grid_rgb, 1);
        cairo_move_to(cr, p->x, y);
        cairo_line_to(cr, p->x + p->w, y);
        cairo_stroke(cr);
        set_rgb(cr, &ink, 1);
        cairo_move_to(cr, p->x - 5, y);
        cairo_line_to(cr, p->x, y);
        cairo_stroke(cr);
        tick_label(buf, sizeof buf, v, step);
        text_at(cr, p->x - 8, y, buf, 1, 0.5);
    }
    set_rgb(cr, &ink, 1);
    cairo_rectangle(cr, p->x + 0.5, p->y + 0.5, p->w - 1, p->h - 1);
    cairo_stroke(cr);
    cairo_save(cr);
    cairo_translate(cr, p->x - 58, p->y + p->h / 2);
    cairo_rotate(cr, -M_PI / 2);
    text_at(cr, 0, 0, label, 0.5, 0.5);
    cairo_restore(cr);
}

/* The x ticks (sample index) under the bottom panel, with grid lines through top..p. */
static void draw_x_axis(cairo_t *cr, const panel *top, const panel *p, size_t n) {
    double step = nice_step((double)(n - 1), p->w > 600 ? 10 : 5);
    char buf[32];
    cairo_set_line_width(cr, 1);
    for (double i = 0; i <= (double)(n - 1); i += step) {
        double x = round(x_of(p, n, i)) + 0.5;
        set_rgb(cr, &grid_rgb, 1);
        for (const panel *q = top; q; q = q == p ? NULL : p) {
            cairo_move_to(cr, x, q->y);
            cairo_line_to(cr, x, q->y + q->h);
            cairo_stroke(cr);
        }
        set_rgb(cr, &ink, 1);
        cairo_move_to(cr, x, p->y + p->h);
        cairo_line_to(cr, x, p->y + p->h + 5);
        cairo_stroke(cr);
        tick_label(buf, sizeof buf, i, step);
        text_at(cr, x, p->y + p->h + 8, buf, 0.5, 0);
    }
    text_at(cr, p->x + p->w / 2, p->y + p->h + 26, "sample index", 0.5, 0);
}

/* v[first..first+count) as a line at x of samples first.., broken at missing values.
 * More than two values a pixel column are drawn as each column's min-max stroke,
 * which looks the same and keeps an SVG of a long series small. */
static void trace(cairo_t *cr, const panel *p, size_t n, const double *v, size_t first,
                  size_t count) {
    int pen = 0;
    double cols = p->w, per_col = (double)n / cols;
    for (size_t i = first; i < first + count;) {
        if (!isfinite(v[i])) {
            pen = 0, i++;
            continue;
        }
        size_t j = i + 1;
        double a = v[i], b = v[i];
        if (per_col > 2) { /* the rest of this pixel column, up to a missing value */
            size_t stop = (size_t)ceil((floor((double)i / per_col) + 1) * per_col);
            while (j < first + count && j < stop && isfinite(v[j]))
                a = v[j] < a ? v[j] : a, b = v[j] > b ? v[j] : b, j++;
        }
        double x = x_of(p, n, (double)i);
        if (pen)
            cairo_line_to(cr, x, y_of(p, v[i]));
        else
            cairo_move_to(cr, x, y_of(p, v[i]));
        if (a != b) {
            cairo_line_to(cr, x, y_of(p, a));
            cairo_line_to(cr, x, y_of(p, b));
        }
        pen = 1, i = j;
    }
    cairo_stroke(cr);
}

/* The x range [*x0, *x1] of mark k's band: at least 2 pixels, so that every mark shows. */
static void band_of(const panel *p, const plot_figure *f, const plot_mark *k, double *x0,
                    double *x1) {
    *x0 = x_of(p, f->n, (double)k->start);
    *x1 = x_of(p, f->n, (double)(k->start + k->len - 1));
    if (*x1 - *x0 < 2)
        *x0 -= 1, *x1 += 1;
}

/* The band of every mark over panel p: the labelled windows first, beneath the rest. */
static void draw_bands(cairo_t *cr, const plot_figure *f, const panel *p) {
    for (int windows = 1; windows >= 0; windows--)
        for (size_t k = 0; k < f->n_marks; k++) {
            if ((f->marks[k].kind == PLOT_WINDOW) != windows)
                continue;
            double x0, x1;
            band_of(p, f, &f->marks[k], &x0, &x1);
            set_rgb(cr, mark_rgb(&f->marks[k]), windows ? WINDOW_ALPHA : BAND_ALPHA);
            cairo_rectangle(cr, x0, p->y + 1, x1 - x0, p->h - 2);
            cairo_fill(cr);
        }
}

static int by_start(const void *a, const void *b) {
    const plot_mark *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

#define LABEL_ROWS 4

/* Each mark's label ("D1": discord of rank 1, "M2": a member of motif pair 2, "E1":
 * event 1; none for a labelled window) at the top of panel p, left to right, each in
 * the first of LABEL_ROWS rows where it overlaps no other (left out where none is
 * free). O(marks log marks). */
static void draw_labels(cairo_t *cr, const plot_figure *f, const panel *p) {
    if (f->n_marks == 0)
        return;
    plot_mark *sorted = malloc(f->n_marks * sizeof *sorted);
    if (!sorted)
        return; /* labels are a help, not the picture */
    size_t n = 0;
    for (size_t k = 0; k < f->n_marks; k++)
        if (f->marks[k].kind != PLOT_WINDOW)
            sorted[n++] = f->marks[k];
    qsort(sorted, n, sizeof *sorted, by_start);
    double right[LABEL_ROWS];
    for (int r = 0; r < LABEL_ROWS; r++)
        right[r] = -INFINITY;
    for (size_t k = 0; k < n; k++) {
        const plot_mark *mk = &sorted[k];
        char buf[24];
        snprintf(buf, sizeof buf, "%c%d", "DME"[mk->kind], mk -> group);
        cairo_text_extents_t e;
        cairo_text_extents(cr, buf, &e);
        double x0, x1;
        band_of(p, f, mk, &x0, &x1);
        double left = (x0 + x1) / 2 - e.width / 2 - 2;
        for (int r = 0; r < LABEL_ROWS; r++) {
            if (left < right[r])
                continue;
            set_rgb(cr, mark_rgb(mk), 1);
            text_at(cr, (x0 + x1) / 2, p->y + 4 + r * (FONT_SIZE + 3), buf, 0.5, 0);
            right[r] = left + e.width + 4;
            break;
        }
    }
    free(sorted);
}

/* One legend entry: a swatch of its colour and its label. */
typedef struct {
    const rgb *c;
    char label[32];
} legend_entry;

/* The legend: one entry per kind of mark present (each motif pair its own colour, up
 * to the palette's size), right-aligned at x = right on the title's line y, or on the
 * line below (y + below) where it would run into the title, which ends at title_end. */
static void draw_legend(cairo_t *cr, const plot_figure *f, double right, double y, double title_end,
                        double below) {
    legend_entry e[3 + N_MOTIF_RGB];
    int has[4] = {0}, pairs = 0, n = 0;
    for (size_t k = 0; k < f->n_marks; k++) {
        has[f->marks[k].kind] = 1;
        if (f->marks[k].kind == PLOT_MOTIF && f->marks[k].group > pairs)
            pairs = f->marks[k].group;
    }
    pairs = pairs > (int)N_MOTIF_RGB ? (int)N_MOTIF_RGB : pairs;
    if (has[PLOT_DISCORD])
        e[n++] = (legend_entry){&discord_rgb, "discord"};
    for (int g = 1; g <= pairs; g++, n++) {
        e[n].c = &motif_rgb[g - 1];
        snprintf(e[n].label, sizeof e[n].label, pairs > 1 ? "motif pair %d" : "motif pair", g);
    }
    if (has[PLOT_EVENT])
        e[n++] = (legend_entry){&event_rgb, "anomaly event"};
    if (has[PLOT_WINDOW])
        e[n++] = (legend_entry){&window_rgb, "labelled window"};
    double width[3 + N_MOTIF_RGB], x = right;
    for (int i = 0; i < n; i++) {
        cairo_text_extents_t t;
        cairo_text_extents(cr, e[i].label, &t);
        width[i] = 19 + t.x_advance + 16;
        x -= width[i];
    }
    if (x < title_end)
        y += below;
    for (int i = 0; i < n; i++) {
        set_rgb(cr, e[i].c, 1);
        cairo_rectangle(cr, x + 16, y - 5, 14, 10);
        cairo_fill(cr);
        set_rgb(cr, &ink, 1);
        text_at(cr, x + 16 + 19, y, e[i].label, 0, 0.5);
        x += width[i];
    }
}

/* Draws the whole figure on cr, width x height, and says where in *frame. */
static void draw(cairo_t *cr, const plot_figure *f, int width, int height, plot_frame *frame) {
    const double left = 78, right = 20, top = 46, bottom = 48, gap = 22;
    size_t N = f->n - f->m + 1;
    double inner = height - top - bottom - (f->profile ? gap : 0);
    panel sp = {left, top, width - left - right, f->profile ? 0.62 * inner : inner, 0, 0};
    panel pp = {left, top + sp.h + gap, sp.w, inner - sp.h, 0, 0};
    *frame = (plot_frame){sp.x, sp.x + sp.w, sp.y, sp.y + sp.h, 0, 0};
    if (f->profile)
        frame->profile_y0 = pp.y, frame->profile_y1 = pp.y + pp.h;

    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, FONT_SIZE);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);

    value_range(f->v, f->n, 0, &sp.lo, &sp.hi);
    draw_y_axis(cr, &sp, "value");
    if (f->profile) {
        value_range(f->profile, N, 1, &pp.lo, &pp.hi);
        draw_y_axis(cr, &pp, f->left ? "left matrix profile" : "matrix profile");
    }
    draw_x_axis(cr, &sp, f->profile ? &pp : &sp, f->n);

    cairo_save(cr);
    cairo_rectangle(cr, sp.x, sp.y, sp.w, sp.h);
    cairo_clip(cr);
    draw_bands(cr, f, &sp);
    cairo_set_line_width(cr, 1.2);
    set_rgb(cr, &series_rgb, 1);
    trace(cr, &sp, f->n, f->v, 0, f->n);
    cairo_set_line_width(cr, 2.2);
    for (size_t k = 0; k < f->n_marks; k++) {
        if (f->marks[k].kind == PLOT_WINDOW)
            continue; /* a label, not a result: the band alone */
        set_rgb(cr, mark_rgb(&f->marks[k]), 1);
        trace(cr, &sp, f->n, f->v, f->marks[k].start, f->marks[k].len);
    }
    draw_labels(cr, f, &sp);
    cairo_restore(cr);

    if (f->profile) {
        cairo_save(cr);
        cairo_rectangle(cr, pp.x, pp.y, pp.w, pp.h);
        cairo_clip(cr);
        draw_bands(cr, f, &pp);
        cairo_set_line_width(cr, 1.2);
        set_rgb(cr, &profile_rgb, 1);
        trace(cr, &pp, f->n, f->profile, 0, N);
        cairo_restore(cr);
    }

    set_rgb(cr, &ink, 1);
    cairo_set_font_size(cr, FONT_SIZE + 2);
    cairo_text_extents_t te;
    cairo_text_extents(cr, f->title ? f->title : "", &te);
    text_at(cr, left, top - 28, f->title ? f->title : "", 0, 0.5);
    cairo_set_font_size(cr, FONT_SIZE);
    draw_legend(cr, f, left + sp.w, top - 28, left + te.x_advance, 16);
}

/* Whether path ends in ext (".png"), ignoring case. */
static int has_ext(const char *path, const char *ext) {
    size_t n = strlen(path), e = strlen(ext);
    return n > e && strcasecmp(path + n - e, ext) == 0;
}

int plot_draw(const plot_figure *f, const char *path, int width, int height, plot_frame *frame) {
    plot_frame unused;
    int svg = has_ext(path, ".svg");
    cairo_surface_t *s = svg ? cairo_svg_surface_create(path, width, height)
                             : cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
    cairo_status_t st = cairo_surface_status(s);
    if (st == CAIRO_STATUS_SUCCESS) {
        cairo_t *cr = cairo_create(s);
        draw(cr, f, width, height, frame ? frame : &unused);
        st = cairo_status(cr);
        cairo_destroy(cr);
    }
    if (st == CAIRO_STATUS_SUCCESS && !svg)
        st = cairo_surface_write_to_png(s, path);
    cairo_surface_finish(s); /* an SVG is written here */
    if (st == CAIRO_STATUS_SUCCESS)
        st = cairo_surface_status(s);
    cairo_surface_destroy(s);
    /* Give back the fonts cairo and fontconfig cache for the life of the process (one
     * picture a process), so that leak checkers (ASan, valgrind) see no leak. */
    cairo_debug_reset_static_data();
    FcFini();
    if (st == CAIRO_STATUS_SUCCESS)
        return 0;
    cli_error("plot: cannot write %s: %s", path, cairo_status_to_string(st));
    return st == CAIRO_STATUS_NO_MEMORY ? EX_SOFTWARE : EX_CANTCREAT;
}

#endif
