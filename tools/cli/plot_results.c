/* SPDX-License-Identifier: Apache-2.0 */
/* plot_results.c - a figure's marks, and reading them (with a profile) from the JSON
 * lines of `tsmine discord|motif|profile|detect` (plot.h). */
#include "cli.h"
#include "lib/json.h"
#include "lib/series_io.h"
#include "plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

int plot_add_mark(plot_figure *f, plot_mark_kind kind, int group, uint64_t start, uint64_t len) {
    if (f->n_marks == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        plot_mark *p = realloc(f->marks, cap * sizeof *p);
        if (!p)
            return -1;
        f->marks = p, f->cap = cap;
    }
    f->marks[f->n_marks++] = (plot_mark){kind, group, start, len};
    return 0;
}

void plot_figure_free(plot_figure *f) {
    free(f->profile);
    free(f->marks);
    f->profile = NULL, f->marks = NULL;
    f->n_marks = f->cap = 0;
}

/* Where a line is, for messages, and what the lines so far have set. */
typedef struct {
    const char *name; /* the path, or "(standard input)" */
    size_t line;
    plot_figure *f;
    int discords, motifs, events; /* groups given so far (alerts are numbered in order) */
    char stream[128];             /* the stream_id of the first alert, "" before one */
} reader;

/* Prints "tsmine: plot: NAME:LINE: what" and returns EX_DATAERR. */
static int bad(const reader *r, const char *what, const char *key) {
    cli_error("plot: %s:%zu: %s%s%s", r->name, r->line, what, key ? " " : "", key ? key : "");
    return EX_DATAERR;
}

/* Member key of o as a whole number in [0, max] into *out; returns 0 or EX_DATAERR
 * after saying why. */
static int get_index(const reader *r, const json_value *o, const char *key, uint64_t max,
                     uint64_t *out) {
    const json_value *v = json_member(o, key);
    if (!v || v->type != JSON_NUMBER)
        return bad(r, "missing or non-numeric member", key);
    if (!(v->number >= 0) || v->number != floor(v->number) || v->number > (double)max) {
        char what[160];
        snprintf(what, sizeof what,
                 "%s = %.17g is not a position in this series (n = %zu, m = %zu:"
                 " wrong FILE or -m?)",
                 key, v->number, r->f->n, r->f->m);
        return bad(r, what, NULL);
    }
    *out = (uint64_t)v->number;
    return 0;
}

/* Adds one mark, reporting a failed allocation. */
static int add(const reader *r, plot_mark_kind kind, int group, uint64_t start, uint64_t len) {
    if (plot_add_mark(r->f, kind, group, start, len) == 0)
        return 0;
    cli_error("plot: %s:%zu: out of memory for the marks", r->name, r->line);
    return EX_SOFTWARE;
}

/* The open event (from an ANOMALY alert) that starts at start, or NULL. */
static plot_mark *open_event(plot_figure *f, uint64_t start) {
    for (size_t i = f->n_marks; i-- > 0;)
        if (f->marks[i].kind == PLOT_EVENT && f->marks[i].start == start)
            return &f->marks[i];
    return NULL;
}

/* One alert of `tsmine detect` / `tsmine alerts` (client_print_alert's fields). */
static int take_alert(reader *r, const json_value *o, const char *kind) {
    plot_figure *f = r->f;
    const json_value *id = json_member(o, "stream_id");
    if (id && id->type == JSON_STRING) {
        if (!r->stream[0])
            snprintf(r->stream, sizeof r->stream, "%s", id->string);
        else if (strcmp(r->stream, id->string) != 0)
            return bad(r, "alerts of a second stream (plot one stream's alerts):", id->string);
    }
    uint64_t start, len, other, end;
    int rc = get_index(r, o, "start_seq", f->n - 1, &start);
    if (rc == 0)
        rc = get_index(r, o, "length", f->n - start, &len);
    if (rc != 0)
        return rc;
    if (strcmp(kind, "DISCORD") == 0 || strcmp(kind, "LEFT_DISCORD") == 0)
        return add(r, PLOT_DISCORD, ++r->discords, start, len);
    if (strcmp(kind, "MOTIF") == 0) {
        if ((rc = get_index(r, o, "neighbor_seq", f->n - len, &other)) != 0)
            return rc;
        r->motifs++;
        rc = add(r, PLOT_MOTIF, r->motifs, start, len);
        return rc ? rc : add(r, PLOT_MOTIF, r->motifs, other, len);
    }
    if (strcmp(kind, "ANOMALY") == 0 || strcmp(kind, "ANOMALY_END") == 0) {
        if ((rc = get_index(r, o, "event_start_seq", f->n - 1, &start)) != 0)
            return rc;
        plot_mark *e = open_event(f, start);
        if (kind[7] == '\0') /* ANOMALY: open until its END says where it ends */
            return e ? 0 : add(r, PLOT_EVENT, ++r->events, start, f->n - start);
        if ((rc = get_index(r, o, "event_end_seq", f->n, &end)) != 0)
            return rc;
        if (end <= start)
            return bad(r, "event_end_seq is not after event_start_seq", NULL);
        if (e) {
            e->len = end - start;
            return 0;
        }
        return add(r, PLOT_EVENT, ++r->events, start, end - start);
    }
    return 0; /* GAP and kinds to come: nothing to draw */
}

/* One result line: an alert, a motif pair, a discord or a profile row, told apart by
 * their members (DESIGN 6). */
static int take_line(reader *r, const json_value *o) {
    plot_figure *f = r->f;
    size_t N = f->n - f->m + 1;
    uint64_t a, b, i;
    int rc;
    if (o->type != JSON_OBJECT)
        return bad(r, "expected a JSON object, found", json_type_name(o->type));
    const json_value *kind = json_member(o, "kind");
    if (kind)
        return kind->type == JSON_STRING ? take_alert(r, o, kind->string)
                                         : bad(r, "\"kind\" is not a string", NULL);
    if (json_member(o, "a")) { /* motif: {"rank","a","b","distance"} */
        if ((rc = get_index(r, o, "a", N - 1, &a)) || (rc = get_index(r, o, "b", N - 1, &b)))
            return rc;
        r->motifs++;
        rc = add(r, PLOT_MOTIF, r->motifs, a, f->m);
        return rc ? rc : add(r, PLOT_MOTIF, r->motifs, b, f->m);
    }
    if ((rc = get_index(r, o, "index", N - 1, &i)) != 0)
        return rc;
    if (json_member(o, "rank")) /* discord: {"rank","index","distance","neighbor"} */
        return add(r, PLOT_DISCORD, ++r->discords, i, f->m);
    /* profile row: {"index","distance","neighbor"}, distance null when undefined */
    const json_value *d = json_member(o, "distance");
    if (!d || (d->type != JSON_NUMBER && d->type != JSON_NULL))
        return bad(r, "missing or non-numeric member", "distance");
    if (!f->profile) {
        if (!(f->profile = malloc(N * sizeof *f->profile))) {
            cli_error("plot: out of memory for a profile of %zu subsequences", N);
            return EX_SOFTWARE;
        }
        for (size_t k = 0; k < N; k++)
            f->profile[k] = NAN;
    }
    f->profile[i] = d->type == JSON_NUMBER ? d->number : NAN;
    return 0;
}

int plot_read_results(const char *path, plot_figure *f) {
    char err[512];
    unsigned char *buf;
    size_t len;
    series_status st = series_read_bytes(path, &buf, &len, err, sizeof err);
    if (st != SERIES_OK) {
        cli_error("plot: %s", err);
        return st == SERIES_EOPEN ? EX_NOINPUT : st == SERIES_EDATA ? EX_DATAERR : EX_SOFTWARE;
    }
    reader r = {.name = strcmp(path, "-") == 0 ? "(standard input)" : path, .f = f};
    const char *text = (const char *)buf, *end = text + len;
    int rc = 0;
    for (const char *line = text; rc == 0 && line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *stop = nl ? nl : end;
        size_t n = (size_t)(stop - line);
        r.line++;
        if (strspn(line, " \t\r") < n) {
            json_value o;
            int jr = json_parse(line, n, r.name, r.line, &o, err, sizeof err);
            if (jr != JSON_OK) {
                cli_error("plot: %s (results are read as JSON lines: --format json)", err);
                rc = jr == JSON_ENOMEM ? EX_SOFTWARE : EX_DATAERR;
            } else {
                rc = take_line(&r, &o);
                json_free(&o);
            }
        }
        line = nl ? nl + 1 : end;
    }
    free(buf);
    return rc;
}
