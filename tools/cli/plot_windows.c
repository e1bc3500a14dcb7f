/* SPDX-License-Identifier: Apache-2.0 */
/* plot_windows.c - the labelled anomaly windows of a series, read from a windows file
 * as `tsmine score --windows` takes it (NAB's combined_windows.json), as marks of a
 * figure (plot.h). */
#include "cli.h"
#include "lib/json.h"
#include "plot.h"

#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

/* The name of path without its folder and its last extension, into out. */
static void stem_of(const char *path, char *out, size_t len) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot > base ? (size_t)(dot - base) : strlen(base);
    snprintf(out, len, "%.*s", (int)n, base);
}

/* Whether key names file: its stem is file's; *exact: file's path ends in "/key" or
 * is key. */
static int names(const char *key, const char *file, int *exact) {
    char a[512], b[512];
    stem_of(key, a, sizeof a);
    stem_of(file, b, sizeof b);
    size_t kl = strlen(key), fl = strlen(file);
    *exact = fl >= kl && strcmp(file + fl - kl, key) == 0 && (fl == kl || file[fl - kl - 1] == '/');
    return strcmp(a, b) == 0;
}

/* The entry of doc for file: the one whose path file's ends in, else the only one of
 * its stem. Returns its index, or -1 after saying why. */
static int entry_of(const json_value *doc, const char *path, const char *file) {
    int found = -1, exact = -1, matches = 0;
    for (size_t k = 0; k < doc->n; k++) {
        int ex;
        if (!names(doc->keys[k], file, &ex))
            continue;
        matches++;
        found = (int)k;
        if (ex)
            exact = (int)k;
    }
    if (exact >= 0)
        return exact;
    if (matches == 1)
        return found;
    char stem[512];
    stem_of(file, stem, sizeof stem);
    if (matches == 0)
        cli_error("plot: --windows %s: no entry named after %s (entries are named by the data "
                  "file's path, e.g. \"%s\")",
                  path, stem, doc->n ? doc->keys[0] : "realKnownCause/nyc_taxi.csv");
    else
        cli_error("plot: --windows %s: %d entries named %s: give FILE by the path of one "
                  "(folder/%s.csv)",
                  path, matches, stem, stem);
    return -1;
}

/* The first row of s whose timestamp is bound, both read as "YYYY-MM-DD HH:MM:SS" (a
 * 'T' for the space, fractional seconds ignored), as `tsmine score` maps window bounds;
 * -1 when none is. O(n). */
static int64_t row_of(const series *s, const char *bound) {
    if (strlen(bound) < 19)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        const char *t = series_time(s, (int64_t)i);
        if (!t || strlen(t) < 19)
            continue;
        int same = 1;
        for (int k = 0; k < 19 && same; k++)
            same = t[k] == bound[k] || (k == 10 && (t[k] == 'T' || t[k] == ' ') &&
                                        (bound[k] == 'T' || bound[k] == ' '));
        if (same && (t[19] == '\0' || t[19] == '.'))
            return (int64_t)i;
    }
    return -1;
}

int plot_read_windows(const char *path, const char *file, const series *s, plot_figure *f) {
    char err[512];
    unsigned char *buf;
    size_t len;
    series_status st = series_read_bytes(path, &buf, &len, err, sizeof err);
    if (st != SERIES_OK) {
        cli_error("plot: --windows %s", err);
        return st == SERIES_EOPEN ? EX_NOINPUT : st == SERIES_EDATA ? EX_DATAERR : EX_SOFTWARE;
    }
    json_value doc;
    int jr = json_parse((const char *)buf, len, path, 1, &doc, err, sizeof err);
    free(buf);
    if (jr != JSON_OK) {
        cli_error("plot: --windows %s", err);
        return jr == JSON_ENOMEM ? EX_SOFTWARE : EX_DATAERR;
    }
    int rc = 0, k = -1;
    if (doc.type != JSON_OBJECT) {
        cli_error("plot: --windows %s: expected an object {\"folder/file.csv\": [[start, end], "
                  "...], ...}, found %s",
                  path, json_type_name(doc.type));
        rc = EX_DATAERR;
    } else if ((k = entry_of(&doc, path, file)) < 0) {
        rc = EX_DATAERR;
    } else if (!s->time_at) {
        cli_error("plot: --windows: %s has no timestamp column, and windows are timestamps", file);
        rc = EX_DATAERR;
    }
    const json_value *list = k >= 0 ? &doc.items[k] : NULL;
    if (rc == 0 && list->type != JSON_ARRAY) {
        cli_error("plot: %s:%zu: the windows of \"%s\" must be an array of [start, end] pairs",
                  path, list->line, doc.keys[k]);
        rc = EX_DATAERR;
    }
    for (size_t w = 0; rc == 0 && w < list->n; w++) {
        const json_value *p = &list->items[w];
        int64_t row[2] = {-1, -1};
        if (p->type != JSON_ARRAY || p->n != 2 || p->items[0].type != JSON_STRING ||
            p->items[1].type != JSON_STRING) {
            cli_error("plot: %s:%zu: a window of \"%s\" must be a pair [start, end] of "
                      "timestamp strings",
                      path, p->line, doc.keys[k]);
            rc = EX_DATAERR;
            break;
        }
        for (int e = 0; e < 2 && rc == 0; e++)
            if ((row[e] = row_of(s, p->items[e].string)) < 0) {
                cli_error("plot: %s:%zu: window bound '%s' of \"%s\" matches no row of %s", path,
                          p->line, p->items[e].string, doc.keys[k], file);
                rc = EX_DATAERR;
            }
        if (rc == 0 && row[1] < row[0]) {
            cli_error("plot: %s:%zu: a window of \"%s\" ends before it starts", path, p->line,
                      doc.keys[k]);
            rc = EX_DATAERR;
        }
        if (rc == 0 && plot_add_mark(f, PLOT_WINDOW, (int)w + 1, (uint64_t)row[0],
                                     (uint64_t)(row[1] - row[0] + 1)) != 0) {
            cli_error("plot: out of memory for the windows");
            rc = EX_SOFTWARE;
        }
    }
    json_free(&doc);
    return rc;
}
