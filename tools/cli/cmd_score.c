/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_score.c - `tsmine score`: measures an alert stream (JSON lines as `tsmine alerts`
 * and `tsmine detect` print them) against labelled anomaly windows in the format of
 * the Numenta Anomaly Benchmark's combined_windows.json, with NAB's scoring rules
 * (nab_score.h) and event counts, and the per-row scores of `tsmine detect --scores` by
 * the area under the precision-recall curve (auc_pr.h; DESIGN 5.3).
 *
 *   tsmine score --windows combined_windows.json --data DIR [--at detected|start]
 *                [--kinds K1,K2] [--per-file] [--probation F]
 *                [--scores FILE [--labels combined_labels.json] [--score-field NAME]
 *                 [--subsequence M]] [ALERTS...]
 *
 * This file does the reading: the windows file (json.h), each data file's timestamp
 * column (rows, and the rows the window bounds and point labels name), the alerts (one
 * JSON object a line), which become one anomaly score per row of each file, and the
 * score lines, whose subsequence scores are placed on rows twice: on the subsequence's
 * last row and on its centre. Then, per profile, the threshold NAB would choose and the
 * scores, the event figures of the stream as published, and the precision-recall areas
 * of each file's rows. It reads no series values, so it is neither a batch command
 * (cli.h) nor a daemon companion: tsmine.c calls score_main. */
#include "cli.h"
#include "commands.h"
#include "lib/auc_pr.h"
#include "lib/emit.h"
#include "lib/json.h"
#include "lib/nab_score.h"
#include "lib/series_io.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

/* ---- Options ---------------------------------------------------------------------- */

/* The alert kinds that exist (DESIGN 5.2), as --kinds and the alerts name them. */
static const char *const kind_names[] = {"ANOMALY",      "ANOMALY_END", "DISCORD",
                                         "LEFT_DISCORD", "MOTIF",       "GAP"};
#define N_KINDS       (sizeof kind_names / sizeof kind_names[0])
#define KINDS_DEFAULT "ANOMALY,DISCORD"

enum {
    K_WINDOWS = CLI_KEY_LONG,
    K_DATA,
    K_AT,
    K_KINDS,
    K_PER_FILE,
    K_PROBATION,
    K_SCORES,
    K_LABELS,
    K_FIELD,
    K_SUBSEQUENCE
};

static const cli_option options[] = {
    {"windows", K_WINDOWS, 1, "FILE", 1, "labelled windows, as NAB's combined_windows.json"},
    {"data", K_DATA, 1, "DIR", 1, "the folder of the data files the windows file names"},
    {"at", K_AT, 1, "detected|start", 1, "row of an alert: detected_seq (default) or start_seq"},
    {"kinds", K_KINDS, 1, "LIST", 1, "kinds that count (default " KINDS_DEFAULT ")"},
    {"per-file", K_PER_FILE, 0, NULL, 1, "also print one line per data file"},
    {"probation", K_PROBATION, 1, "F", 1, "unscored leading fraction of each file (default 0.15)"},
    {"scores", K_SCORES, 1, "FILE", 1, "per-row scores ('tsmine detect --scores'): AUC-PR"},
    {"labels", K_LABELS, 1, "FILE", 1, "point labels, as NAB's combined_labels.json: AUC-PR"},
    {"score-field", K_FIELD, 1, "NAME", 1, "the member of a score line ranked (default score)"},
    {"subsequence", K_SUBSEQUENCE, 1, "M", 1, "m of the score lines that do not name theirs"},
    {"help", 'h', 0, NULL, 1, "print this help and exit"},
};

typedef struct {
    const char *windows, *data;
    int at_start;         /* --at start */
    unsigned kinds;       /* bit k: kind_names[k] counts */
    int per_file;         /* --per-file */
    double probation;     /* --probation */
    const char **scores;  /* --scores, each time it is given (n_scores) */
    size_t n_scores;      /* 0: no AUC-PR */
    const char *labels;   /* --labels, or NULL */
    const char *field;    /* --score-field */
    uint64_t subsequence; /* --subsequence; 0: every score line names its m */
} score_args;

/* Parses --kinds into a bit set of kind_names; returns 0, or EX_USAGE after saying why. */
static int parse_kinds(const char *list, unsigned *out) {
    *out = 0;
    for (const char *s = list;;) {
        size_t len = strcspn(s, ",");
        size_t k = 0;
        while (k < N_KINDS && (strlen(kind_names[k]) != len || strncmp(s, kind_names[k], len)))
            k++;
        if (k == N_KINDS) {
            cli_error("score: --kinds: unknown kind '%.*s' (ANOMALY, ANOMALY_END, DISCORD, "
                      "LEFT_DISCORD, MOTIF or GAP)",
                      (int)len, s);
            return EX_USAGE;
        }
        *out |= 1u << k;
        if (s[len] == '\0')
            return 0;
        s += len + 1;
    }
}

/* Applies one option (cli_apply_fn; dest is the score_args). */
static int apply(const cli_optable *t, const cli_option *o, const char *arg, void *dest) {
    score_args *a = dest;
    switch (o->key) {
    case K_WINDOWS: a->windows = arg; return 0;
    case K_DATA: a->data = arg; return 0;
    case K_PER_FILE: a->per_file = 1; return 0;
    case K_KINDS: return parse_kinds(arg, &a->kinds);
    case K_LABELS: a->labels = arg; return 0;
    case K_FIELD: a->field = arg; return 0;
    case K_SUBSEQUENCE: return cli_parse_count(t, o, arg, 1, UINT32_MAX, &a->subsequence);
    case K_SCORES: {
        const char **more = realloc(a->scores, (a->n_scores + 1) * sizeof *more);
        if (!more) {
            cli_error("score: out of memory");
            return EX_SOFTWARE;
        }
        a->scores = more;
        a->scores[a->n_scores++] = arg;
        return 0;
    }
    case K_AT:
        if (strcmp(arg, "detected") == 0 || strcmp(arg, "start") == 0) {
            a->at_start = arg[0] == 's';
            return 0;
        }
        cli_error("score: --at: unknown place '%s' (detected or start)", arg);
        return EX_USAGE;
    case K_PROBATION: {
        char *end;
        errno = 0;
        double f = strtod(arg, &end);
        if (end == arg || *end != '\0' || errno == ERANGE || !(f >= 0 && f <= 1)) {
            cli_error("score: --probation: invalid fraction '%s' (need a number in [0, 1])", arg);
            return EX_USAGE;
        }
        a->probation = f;
        return 0;
    }
    }
    return EX_SOFTWARE;
}

static void usage(const cli_optable *t) {
    cli_help(t, "--windows FILE --data DIR [OPTIONS] [ALERTS...]",
             "Scores an alert stream (JSON lines, as 'tsmine alerts' and 'tsmine detect' print\n"
             "them) against labelled anomaly windows with the rules of the Numenta Anomaly\n"
             "Benchmark. Each file of the windows file is a data file under DIR (CSV, timestamp\n"
             "first); an alert belongs to the file whose name without folder and extension is\n"
             "the last part of its stream_id (with or without an extension), and sample k of\n"
             "a stream is row k of the file.");
    printf("\nALERTS are files of alerts, one JSON object a line; none or - reads standard\n"
           "input (with --scores, none reads no alerts). A row's anomaly score is the highest\n"
           "\"score\" (absent or null: 1) of the alerts of the chosen kinds placed on it, 0\n"
           "without any.\n\n"
           "Prints one JSON line per profile (standard, reward_low_FP_rate,\n"
           "reward_low_FN_rate): the normalised NAB score at the threshold NAB's optimiser\n"
           "picks and as published (every alert a detection), the raw, null and perfect\n"
           "scores; then one summary line of event counts of the stream as published\n"
           "(windows hit, false alerts, precision, recall, delays).\n\n"
           "With --scores (the lines of 'tsmine detect --scores', given once or more; -:\n"
           "standard input), one line per labelling (windows; points with --labels) and\n"
           "placement: the mean over the files that have labelled rows of the area under the\n"
           "precision-recall curve of the rows' scores, as average precision (the step-wise\n"
           "area over the distinct scores: ties enter together) and as the trapezoid area\n"
           "TSB-UAD publishes, every row of a file ranked, none on probation. A subsequence's\n"
           "score (the member --score-field names; null: none) is placed on its last row\n"
           "(\"at\":\"end\", start_seq + m - 1) and on its centre (\"at\":\"centre\",\n"
           "start_seq + floor(m / 2), as TSB-UAD places the matrix profile's); m is the\n"
           "line's \"m\" (or \"subsequence\" or \"length\"), else --subsequence. A row\n"
           "without a score ranks below every score; a stream's lines start over when its\n"
           "start_seq goes back. With --per-file, one line per data file.\n\n"
           "Exit status: 0 success, 64 usage, 65 bad input data (FILE:LINE: what), 66 cannot\n"
           "open an input, 70 internal error, 74 write error.\n");
}

/* Reports a failed read of an input (series_read_bytes' message err) and returns its
 * exit status: EX_NOINPUT, EX_DATAERR or EX_SOFTWARE. */
static int read_failed(series_status st, const char *err) {
    cli_error("score: %s", err);
    return st == SERIES_EOPEN ? EX_NOINPUT : st == SERIES_EDATA ? EX_DATAERR : EX_SOFTWARE;
}

/* ---- Data files: rows and their timestamps ---------------------------------------- */

/* A timestamp normalised to "YYYY-MM-DD HH:MM:SS" (empty: a row without one). */
typedef struct {
    char text[20];
    size_t row;
} stamp;

/* Normalises the timestamp s[0..len) ("YYYY-MM-DD HH:MM:SS" or with 'T' between date
 * and time, optionally with fractional seconds, which are dropped) into out; returns
 * 0, or -1 when it is not one. */
static int normalize_timestamp(const char *s, size_t len, char out[20]) {
    static const char shape[] = "dddd-dd-dd dd:dd:dd";
    if (len < 19)
        return -1;
    for (size_t k = 0; k < 19; k++) {
        char c = s[k];
        int ok = shape[k] == 'd'   ? c >= '0' && c <= '9'
                 : shape[k] == ' ' ? c == ' ' || c == 'T'
                                   : c == shape[k];
        if (!ok)
            return -1;
    }
    if (len > 19) { /* ".digits" */
        if (s[19] != '.' || len == 20)
            return -1;
        for (size_t k = 20; k < len; k++)
            if (s[k] < '0' || s[k] > '9')
                return -1;
    }
    memcpy(out, s, 19);
    out[10] = ' ';
    out[19] = '\0';
    return 0;
}

/* The first field of the CSV line line[0..n), trimmed of blanks and of one pair of
 * double quotes. */
static void first_field(const char *line, size_t n, const char **field, size_t *len) {
    const char *s = line, *e = memchr(line, ',', n);
    if (!e)
        e = line + n;
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    if (e - s >= 2 && *s == '"' && e[-1] == '"')
        s++, e--;
    *field = s;
    *len = (size_t)(e - s);
}

/* Appends a stamp (text: a normalised timestamp, or "" for a row without one) for row
 * *n to the growing array *s of *cap; returns 0, or -1 when out of memory. */
static int push_stamp(stamp **s, size_t *n, size_t *cap, const char *text) {
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 1024;
        stamp *ns = realloc(*s, nc * sizeof *ns);
        if (!ns)
            return -1;
        *s = ns, *cap = nc;
    }
    snprintf((*s)[*n].text, sizeof(*s)[*n].text, "%s", text);
    (*s)[*n].row = *n;
    (*n)++;
    return 0;
}

/* Reads the timestamp column of the CSV file path into a new array *out of *n_rows
 * stamps, one per data row, in row order, counting rows as the series reader
 * (series_io.c, and so `tsmine detect`) does: blank lines inside the data are rows
 * (without a timestamp), blank lines before the first row and after the last are not,
 * and the first row is a header when its first field is not a timestamp (the series
 * reader asks whether its value is not a number: the same for NAB's files). Returns 0
 * or an exit status after printing why. */
static int read_stamps(const char *path, stamp **out, size_t *n_rows) {
    char err[512];
    unsigned char *buf;
    size_t len;
    series_status st = series_read_bytes(path, &buf, &len, err, sizeof err);
    *out = NULL;
    *n_rows = 0;
    if (st != SERIES_OK)
        return read_failed(st, err);
    if (memchr(buf, '\0', len)) {
        free(buf);
        cli_error("score: %s: NUL byte: not a text file", path);
        return EX_DATAERR;
    }
    stamp *s = NULL;
    size_t n = 0, cap = 0, blanks = 0, lineno = 0;
    int rc = 0, seen = 0; /* seen: a non-blank line came */
    for (const char *row = (const char *)buf, *end = row + len, *next; rc == 0 && row < end;
         row = next) {
        const char *nl = memchr(row, '\n', (size_t)(end - row));
        size_t ll = (size_t)((nl ? nl : end) - row);
        next = nl ? nl + 1 : end;
        lineno++;
        if (lineno == 1 && ll >= 3 && memcmp(row, "\xEF\xBB\xBF", 3) == 0)
            row += 3, ll -= 3; /* a UTF-8 byte-order mark */
        if (ll > 0 && row[ll - 1] == '\r')
            ll--;
        size_t lead = 0;
        while (lead < ll && (row[lead] == ' ' || row[lead] == '\t'))
            lead++;
        if (lead == ll) { /* blank: a row only when more rows follow */
            blanks += seen;
            continue;
        }
        const char *field;
        size_t flen;
        char ts[20];
        first_field(row, ll, &field, &flen);
        int ok = normalize_timestamp(field, flen, ts) == 0;
        if (!ok && !seen) { /* a header row such as NAB's "timestamp,value" */
            seen = 1;
            continue;
        }
        seen = 1;
        if (!ok) {
            cli_error("score: %s:%zu: '%.*s' is not a timestamp (YYYY-MM-DD HH:MM:SS)", path,
                      lineno, (int)(flen > 40 ? 40 : flen), field);
            rc = EX_DATAERR;
            break;
        }
        for (; blanks > 0 && rc == 0; blanks--)
            rc = push_stamp(&s, &n, &cap, "");
        if (rc == 0)
            rc = push_stamp(&s, &n, &cap, ts);
        if (rc != 0) {
            cli_error("score: %s: out of memory", path);
            rc = EX_SOFTWARE;
        }
    }
    free(buf);
    if (rc != 0) {
        free(s);
        return rc;
    }
    *out = s;
    *n_rows = n;
    return 0;
}

/* qsort order of stamps: by text, then by row. */
static int by_text_row(const void *pa, const void *pb) {
    const stamp *a = pa, *b = pb;
    int c = strcmp(a->text, b->text);
    return c ? c : (a->row > b->row) - (a->row < b->row);
}

/* The first row (in row order) of the sorted stamps whose timestamp is ts, or
 * NAB_NO_ROW. O(log n). */
static size_t find_row(const stamp *sorted, size_t n, const char *ts) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(sorted[mid].text, ts) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && strcmp(sorted[lo].text, ts) == 0 ? sorted[lo].row : NAB_NO_ROW;
}

/* ---- The corpus: data files, windows, per-row scores ------------------------------ */

/* The rows a subsequence's score is placed on (--scores): its last row, its centre. */
enum { AT_END, AT_CENTRE, N_AT };
static const char *const at_names[N_AT] = {"end", "centre"};

/* What labels a row (AUC-PR): a labelled window holds it; a point label names it. */
enum { BY_WINDOWS, BY_POINTS, N_BY };
static const char *const by_names[N_BY] = {"windows", "points"};

typedef struct {
    char *key;               /* the name in the windows file, e.g. "realKnownCause/x.csv" */
    nab_window *windows;     /* f.n_windows, rows of the labelled windows */
    nab_file f;              /* rows, probation, windows */
    double *score;           /* f.n_rows: the highest alert score on each row, else 0 */
    unsigned char *alerted;  /* f.n_rows: 1 where an alert of the chosen kinds lies */
    unsigned char *detected; /* f.n_rows: scratch for one detection set */
    /* --scores: */
    double *ranked[N_AT];          /* f.n_rows each: the score placed on a row, NaN for none */
    unsigned char *labelled[N_BY]; /* f.n_rows each: 1 on a labelled row (points: --labels) */
    size_t score_lines;            /* lines placed since the stream last started over */
    uint64_t last_start;           /* the start_seq of the last of them */
    size_t restarts;               /* times the stream's lines started over */
    auc_pr_result auc[N_BY][N_AT];
} data_file;

/* A stream id that matched no data file, and how many alerts or score lines it had. */
typedef struct {
    char *id;
    size_t lines;
} lost_stream;

typedef struct {
    data_file *files;
    size_t n_files;
    size_t beyond;     /* alerts of the chosen kinds past the end of their file */
    lost_stream *lost; /* streams of alerts without a data file */
    size_t n_lost;
    size_t beyond_scores;     /* score lines placed past the end of their file */
    lost_stream *lost_scores; /* streams of score lines without a data file */
    size_t n_lost_scores;
} corpus;

static void corpus_free(corpus *c) {
    for (size_t k = 0; k < c->n_files; k++) {
        data_file *d = &c->files[k];
        free(d->key), free(d->windows), free(d->score), free(d->alerted), free(d->detected);
        for (int at = 0; at < N_AT; at++)
            free(d->ranked[at]);
        for (int by = 0; by < N_BY; by++)
            free(d->labelled[by]);
    }
    for (size_t k = 0; k < c->n_lost; k++)
        free(c->lost[k].id);
    for (size_t k = 0; k < c->n_lost_scores; k++)
        free(c->lost_scores[k].id);
    free(c->files), free(c->lost), free(c->lost_scores);
    memset(c, 0, sizeof *c);
}

/* Marks the rows of d that the point labels points (the JSON array of timestamps of the
 * labels file, --labels) name. Returns 0 or an exit status after printing why. */
static int label_points(const score_args *a, const json_value *points, const stamp *sorted,
                        size_t n, const char *path, data_file *d) {
    if (points->type != JSON_ARRAY) {
        cli_error("score: %s:%zu: the labels of \"%s\" must be an array of timestamp strings",
                  a->labels, points->line, d->key);
        return EX_DATAERR;
    }
    for (size_t k = 0; k < points->n; k++) {
        const json_value *p = &points->items[k];
        char ts[20];
        size_t row = NAB_NO_ROW;
        if (p->type == JSON_STRING && normalize_timestamp(p->string, strlen(p->string), ts) == 0)
            row = find_row(sorted, n, ts);
        if (row == NAB_NO_ROW) {
            cli_error("score: %s:%zu: label %s%s%s of \"%s\" matches no row of %s", a->labels,
                      p->line, p->type == JSON_STRING ? "'" : "",
                      p->type == JSON_STRING ? p->string : json_type_name(p->type),
                      p->type == JSON_STRING ? "'" : "", d->key, path);
            return EX_DATAERR;
        }
        d->labelled[BY_POINTS][row] = 1;
    }
    return 0;
}

/* Reads the data file of d (DIR/key), maps the windows of list (the JSON array of
 * [start, end] pairs; wpath names the windows file in messages) and, with --scores, the
 * point labels of points (NULL: none) to rows, and sets up the per-row arrays. Returns 0
 * or an exit status after printing why. */
static int load_file(const score_args *a, const char *wpath, const json_value *list,
                     const json_value *points, data_file *d) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", a->data, d->key) >= sizeof path) {
        cli_error("score: %s/%s: path too long", a->data, d->key);
        return EX_NOINPUT;
    }
    stamp *st;
    size_t n;
    int rc = read_stamps(path, &st, &n);
    if (rc != 0)
        return rc;
    qsort(st, n, sizeof *st, by_text_row);
    d->windows = malloc((list->n ? list->n : 1) * sizeof *d->windows);
    d->score = calloc(n ? n : 1, sizeof *d->score);
    d->alerted = calloc(n ? n : 1, 1);
    d->detected = calloc(n ? n : 1, 1);
    int short_of_memory = !d->windows || !d->score || !d->alerted || !d->detected;
    for (int k = 0; a->n_scores && k < N_AT; k++) {
        if ((d->ranked[k] = malloc((n ? n : 1) * sizeof *d->ranked[k])))
            for (size_t i = 0; i < n; i++)
                d->ranked[k][i] = NAN;
        short_of_memory |= !d->ranked[k];
    }
    for (int k = 0; a->n_scores && k < N_BY; k++)
        short_of_memory |= !(d->labelled[k] = calloc(n ? n : 1, 1));
    if (short_of_memory) {
        free(st);
        cli_error("score: out of memory");
        return EX_SOFTWARE;
    }
    for (size_t w = 0; w < list->n; w++) {
        const json_value *pair = &list->items[w];
        size_t row[2];
        if (pair->type != JSON_ARRAY || pair->n != 2 || pair->items[0].type != JSON_STRING ||
            pair->items[1].type != JSON_STRING) {
            cli_error("score: %s:%zu: a window of \"%s\" must be a pair [start, end] of "
                      "timestamp strings",
                      wpath, pair->line, d->key);
            free(st);
            return EX_DATAERR;
        }
        for (int e = 0; e < 2; e++) {
            const json_value *bound = &pair->items[e];
            char ts[20];
            row[e] = NAB_NO_ROW;
            if (normalize_timestamp(bound->string, strlen(bound->string), ts) == 0)
                row[e] = find_row(st, n, ts);
            if (row[e] == NAB_NO_ROW) {
                cli_error("score: %s:%zu: window bound '%s' of \"%s\" matches no row of %s", wpath,
                          bound->line, bound->string, d->key, path);
                free(st);
                return EX_DATAERR;
            }
        }
        if (row[1] < row[0] || (w > 0 && row[0] <= d->windows[w - 1].b)) {
            cli_error("score: %s:%zu: a window of \"%s\" %s", wpath, pair->line, d->key,
                      row[1] < row[0] ? "ends before it starts"
                                      : "overlaps or precedes the one before it");
            free(st);
            return EX_DATAERR;
        }
        d->windows[w] = (nab_window){row[0], row[1]};
        if (d->labelled[BY_WINDOWS])
            memset(d->labelled[BY_WINDOWS] + row[0], 1, row[1] - row[0] + 1);
    }
    rc = points && d->labelled[BY_POINTS] ? label_points(a, points, st, n, path, d) : 0;
    free(st);
    d->f = (nab_file){n, nab_probation(n, a->probation), d->windows, list->n};
    return rc;
}

/* Reads the JSON document of path into *doc, which must be an object (what names its
 * kind in messages). Returns 0 or an exit status after printing why. */
static int read_object(const char *path, const char *what, json_value *doc) {
    char err[512];
    unsigned char *buf;
    size_t len;
    series_status st = series_read_bytes(path, &buf, &len, err, sizeof err);
    if (st != SERIES_OK)
        return read_failed(st, err);
    int jr = json_parse((const char *)buf, len, path, 1, doc, err, sizeof err);
    free(buf);
    if (jr != JSON_OK) {
        cli_error("score: %s", err);
        return jr == JSON_ENOMEM ? EX_SOFTWARE : EX_DATAERR;
    }
    if (doc->type != JSON_OBJECT) {
        cli_error("score: %s:%zu: the %s file must be one object {\"FILE\": [...], ...}", path,
                  doc->line, what);
        json_free(doc);
        return EX_DATAERR;
    }
    return 0;
}

/* Reads the windows file and every data file it names into c. Returns 0 or an exit
 * status after printing why. */
static int load_corpus(const score_args *a, corpus *c) {
    json_value doc, labels = {0};
    int rc = read_object(a->windows, "windows", &doc);
    if (rc != 0)
        return rc;
    if (a->labels && (rc = read_object(a->labels, "labels", &labels)) != 0) {
        json_free(&doc);
        return rc;
    }
    if (!(c->files = calloc(doc.n ? doc.n : 1, sizeof *c->files))) {
        cli_error("score: out of memory");
        rc = EX_SOFTWARE;
    }
    for (size_t k = 0; rc == 0 && k < doc.n; k++) {
        const json_value *list = &doc.items[k];
        for (size_t j = 0; j < k && rc == 0; j++)
            if (strcmp(doc.keys[j], doc.keys[k]) == 0) {
                cli_error("score: %s:%zu: \"%s\" is listed twice", a->windows, list->line,
                          doc.keys[k]);
                rc = EX_DATAERR;
            }
        if (rc == 0 && list->type != JSON_ARRAY) {
            cli_error("score: %s:%zu: the windows of \"%s\" must be an array of [start, end] "
                      "pairs",
                      a->windows, list->line, doc.keys[k]);
            rc = EX_DATAERR;
        }
        if (rc != 0)
            break;
        data_file *d = &c->files[c->n_files++];
        if (!(d->key = strdup(doc.keys[k]))) {
            cli_error("score: out of memory");
            rc = EX_SOFTWARE;
            break;
        }
        rc = load_file(a, a->windows, list, a->labels ? json_member(&labels, d->key) : NULL, d);
    }
    json_free(&doc);
    json_free(&labels);
    return rc;
}

/* ---- Alerts -> per-row scores ----------------------------------------------------- */

/* The last path component of s without its extension: [*base, *base + *len). */
static void base_name(const char *s, size_t n, const char **base, size_t *len) {
    const char *b = s, *e = s + n;
    for (const char *q = s; q < e; q++)
        if (*q == '/')
            b = q + 1;
    for (const char *q = e; q > b + 1; q--)
        if (q[-1] == '.') {
            e = q - 1;
            break;
        }
    *base = b;
    *len = (size_t)(e - b);
}

/* Where the name s ends when compared: at its end, or (strip) before the extension of its
 * last component. */
static size_t name_end(const char *s, int strip) {
    const char *b;
    size_t len;
    base_name(s, strlen(s), &b, &len);
    return strip ? (size_t)(b - s) + len : strlen(s);
}

/* Whether file key (without its extension) is the stream id (up to id_end), or its end
 * after a '/': "realKnownCause/nyc_taxi.csv" suits "nab/realKnownCause/nyc_taxi". */
static int path_suffix(const char *key, const char *id, size_t id_end) {
    size_t klen = name_end(key, 1);
    return klen <= id_end && memcmp(id + id_end - klen, key, klen) == 0 &&
           (klen == id_end || id[id_end - klen - 1] == '/');
}

/* The data file of stream id: the one whose base name without extension is the id's
 * last component; among several, the one whose path the id ends with. The id is taken
 * as it is first (`tsmine detect` names a stream after its file without the extension,
 * so "1.test" is the stream of "MGAB/1.test.csv"), and only when no file suits it
 * without its own extension ("nyc_taxi.csv"). *file gets the file's index or NAB_NO_ROW
 * (no file); returns 0, or -1 when the id matches several files equally. */
static int match_stream(const corpus *c, const char *id, size_t *file) {
    for (int strip = 0; strip < 2; strip++) {
        size_t id_end = name_end(id, strip), n = 0, suffix = 0, last = 0, last_suffix = 0;
        const char *ib = id;
        for (const char *q = id; q < id + id_end; q++)
            if (*q == '/')
                ib = q + 1;
        size_t il = (size_t)(id + id_end - ib);
        for (size_t k = 0; k < c->n_files; k++) {
            const char *kb;
            size_t kl;
            base_name(c->files[k].key, strlen(c->files[k].key), &kb, &kl);
            if (kl != il || memcmp(kb, ib, il) != 0)
                continue;
            n++, last = k;
            if (path_suffix(c->files[k].key, id, id_end))
                suffix++, last_suffix = k;
        }
        if (n > 0) {
            *file = n == 1 ? last : last_suffix;
            return n > 1 && suffix != 1 ? -1 : 0;
        }
    }
    *file = NAB_NO_ROW;
    return 0;
}

/* Counts a line (an alert or a score line) of a stream that has no data file in the list
 * *lost of *n. Returns 0, or -1 when out of memory. */
static int note_lost(lost_stream **lost, size_t *n, const char *id) {
    for (size_t k = 0; k < *n; k++)
        if (strcmp((*lost)[k].id, id) == 0) {
            (*lost)[k].lines++;
            return 0;
        }
    lost_stream *nl = realloc(*lost, (*n + 1) * sizeof *nl);
    if (!nl)
        return -1;
    *lost = nl;
    if (!(nl[*n].id = strdup(id)))
        return -1;
    nl[(*n)++].lines = 1;
    return 0;
}

/* A member of an alert that must be a whole number in [0, 2^53] (a sequence number or
 * a length): its value in *out; returns 1 when it is one, 0 when it is absent or null
 * (and optional), -1 (after printing why) otherwise. */
static int get_seq(const json_value *alert, const char *key, int optional, const char *path,
                   uint64_t *out) {
    const json_value *v = json_member(alert, key);
    if (optional && (!v || v->type == JSON_NULL))
        return 0;
    if (!v || v->type != JSON_NUMBER || !(v->number >= 0) || v->number > 9007199254740992.0 ||
        v->number != floor(v->number)) {
        cli_error("score: %s:%zu: \"%s\" must be a whole number >= 0", path, alert->line, key);
        return -1;
    }
    *out = (uint64_t)v->number;
    return 1;
}

/* Places one alert (a parsed line) on its row. Returns 0 or an exit status after
 * printing why. */
static int place_alert(const score_args *a, corpus *c, const json_value *alert, const char *path) {
    const json_value *id = json_member(alert, "stream_id"), *kind = json_member(alert, "kind");
    const json_value *score = json_member(alert, "score");
    if (alert->type != JSON_OBJECT) {
        cli_error("score: %s:%zu: an alert must be a JSON object", path, alert->line);
        return EX_DATAERR;
    }
    if (!id || id->type != JSON_STRING || !kind || kind->type != JSON_STRING) {
        cli_error("score: %s:%zu: an alert needs \"stream_id\" and \"kind\" strings", path,
                  alert->line);
        return EX_DATAERR;
    }
    uint64_t start, length, detected = 0;
    int have_detected;
    if (get_seq(alert, "start_seq", 0, path, &start) < 0 ||
        get_seq(alert, "length", 0, path, &length) < 0 ||
        (have_detected = get_seq(alert, "detected_seq", 1, path, &detected)) < 0)
        return EX_DATAERR;
    double s = 1.0; /* no score: the alert counts at every threshold */
    if (score && score->type != JSON_NULL) {
        if (score->type != JSON_NUMBER || !(score->number >= 0 && score->number <= 1)) {
            cli_error("score: %s:%zu: \"score\" must be a number in [0, 1] or null", path,
                      alert->line);
            return EX_DATAERR;
        }
        s = score->number;
    }
    size_t k = 0;
    while (k < N_KINDS && strcmp(kind->string, kind_names[k]) != 0)
        k++;
    if (k == N_KINDS || !(a->kinds & (1u << k)))
        return 0; /* not a detection */

    size_t file;
    if (match_stream(c, id->string, &file) != 0) {
        cli_error("score: %s:%zu: stream \"%s\" matches several files of %s", path, alert->line,
                  id->string, a->windows);
        return EX_DATAERR;
    }
    if (file == NAB_NO_ROW) {
        if (note_lost(&c->lost, &c->n_lost, id->string) == 0)
            return 0;
        cli_error("score: out of memory");
        return EX_SOFTWARE;
    }
    uint64_t row = a->at_start     ? start
                   : have_detected ? detected
                   : length > 0    ? start + length - 1
                                   : start;
    data_file *d = &c->files[file];
    if (row >= d->f.n_rows) {
        c->beyond++;
        return 0;
    }
    d->alerted[row] = 1;
    if (s > d->score[row])
        d->score[row] = s;
    return 0;
}

/* Reads the alerts of path ("-": standard input), one JSON object a line (blank lines
 * skipped), onto the rows of c. Returns 0 or an exit status after printing why. */
static int read_alerts(const score_args *a, corpus *c, const char *path) {
    char err[512];
    unsigned char *buf;
    size_t len;
    series_status st = series_read_bytes(path, &buf, &len, err, sizeof err);
    if (st != SERIES_OK)
        return read_failed(st, err);
    const char *name = strcmp(path, "-") == 0 ? "(standard input)" : path;
    const char *text = (const char *)buf, *end = text + len;
    size_t lineno = 0;
    int rc = 0;
    for (const char *line = text; rc == 0 && line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *stop = nl ? nl : end;
        lineno++;
        size_t n = (size_t)(stop - line);
        if (strspn(line, " \t\r") < n) {
            json_value alert;
            int jr = json_parse(line, n, name, lineno, &alert, err, sizeof err);
            if (jr != JSON_OK) {
                cli_error("score: %s", err);
                rc = jr == JSON_ENOMEM ? EX_SOFTWARE : EX_DATAERR;
            } else {
                rc = place_alert(a, c, &alert, name);
                json_free(&alert);
            }
        }
        line = nl ? nl + 1 : end;
    }
    free(buf);
    return rc;
}

/* ---- Score lines -> per-row scores (--scores) -------------------------------------- */

/* The subsequence length of a score line: the member that names it ("m", "subsequence"
 * or "length", the first there), else --subsequence. Returns 1 with it in *m, 0 when
 * neither gives one, -1 (after printing why) when the member is not a whole number
 * >= 1. */
static int line_m(const score_args *a, const json_value *line, const char *path, uint64_t *m) {
    static const char *const names[] = {"m", "subsequence", "length"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        if (!json_member(line, names[k]))
            continue;
        if (get_seq(line, names[k], 0, path, m) < 0)
            return -1;
        if (*m == 0) {
            cli_error("score: %s:%zu: \"%s\" must be >= 1", path, line->line, names[k]);
            return -1;
        }
        return 1;
    }
    *m = a->subsequence;
    return a->subsequence > 0;
}

/* Places the score of one score line (a parsed line) on its file's rows: the
 * subsequence [start, start + m) on its last row and on its centre, start + floor(m/2)
 * (TSB-UAD pads the matrix profile ceil((m - 1) / 2) rows in front: the same row). A
 * row keeps the highest score placed on it (a number beats none). A line whose start
 * does not follow the stream's last one starts the stream's scores over. Returns 0 or
 * an exit status after printing why. */
static int place_score(const score_args *a, corpus *c, const json_value *line, const char *path) {
    if (line->type != JSON_OBJECT) {
        cli_error("score: %s:%zu: a score line must be a JSON object", path, line->line);
        return EX_DATAERR;
    }
    const json_value *id = json_member(line, "stream_id"), *v = json_member(line, a->field);
    if (!id || id->type != JSON_STRING) {
        cli_error("score: %s:%zu: a score line needs a \"stream_id\" string", path, line->line);
        return EX_DATAERR;
    }
    uint64_t start, m;
    if (get_seq(line, "start_seq", 0, path, &start) < 0)
        return EX_DATAERR;
    if (!v || (v->type != JSON_NUMBER && v->type != JSON_NULL)) {
        cli_error("score: %s:%zu: \"%s\" must be a number or null (see --score-field)", path,
                  line->line, a->field);
        return EX_DATAERR;
    }
    int has_m = line_m(a, line, path, &m);
    if (has_m < 0)
        return EX_DATAERR;
    if (has_m == 0) {
        cli_error("score: %s:%zu: the score line does not name its subsequence length (\"m\"): "
                  "give --subsequence M",
                  path, line->line);
        return EX_DATAERR;
    }
    size_t file;
    if (match_stream(c, id->string, &file) != 0) {
        cli_error("score: %s:%zu: stream \"%s\" matches several files of %s", path, line->line,
                  id->string, a->windows);
        return EX_DATAERR;
    }
    if (file == NAB_NO_ROW) {
        if (note_lost(&c->lost_scores, &c->n_lost_scores, id->string) == 0)
            return 0;
        cli_error("score: out of memory");
        return EX_SOFTWARE;
    }
    data_file *d = &c->files[file];
    if (d->score_lines > 0 && start <= d->last_start) { /* the stream started over */
        for (int at = 0; at < N_AT; at++)
            for (size_t i = 0; i < d->f.n_rows; i++)
                d->ranked[at][i] = NAN;
        d->score_lines = 0;
        d->restarts++;
    }
    d->score_lines++;
    d->last_start = start;
    const double x = v->type == JSON_NUMBER ? v->number : NAN;
    const uint64_t row[N_AT] = {start + m - 1, start + m / 2};
    c->beyond_scores += row[AT_END] >= d->f.n_rows;
    for (int at = 0; at < N_AT; at++) {
        if (row[at] >= d->f.n_rows)
            continue;
        double *r = &d->ranked[at][row[at]];
        if (isnan(*r) || x > *r)
            *r = x;
    }
    return 0;
}

/* Reads the score lines of path ("-": standard input), one JSON object a line (blank
 * lines skipped), onto the rows of c, a line at a time. Returns 0 or an exit status
 * after printing why. */
static int read_scores(const score_args *a, corpus *c, const char *path) {
    const int is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "(standard input)" : path;
    FILE *in = is_stdin ? stdin : fopen(path, "r");
    if (!in) {
        cli_error("score: %s: %s", path, strerror(errno));
        return EX_NOINPUT;
    }
    char *text = NULL, err[512];
    size_t cap = 0, lineno = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&text, &cap, in)) >= 0) {
        lineno++;
        if (strspn(text, " \t\r\n") >= (size_t)n)
            continue;
        json_value line;
        int jr = json_parse(text, (size_t)n, name, lineno, &line, err, sizeof err);
        if (jr != JSON_OK) {
            cli_error("score: %s", err);
            rc = jr == JSON_ENOMEM ? EX_SOFTWARE : EX_DATAERR;
        } else {
            rc = place_score(a, c, &line, name);
            json_free(&line);
        }
    }
    if (rc == 0 && ferror(in)) {
        cli_error("score: %s: %s", name, strerror(errno));
        rc = EX_IOERR;
    }
    free(text);
    if (!is_stdin)
        fclose(in);
    return rc;
}

/* ---- Scores and figures ----------------------------------------------------------- */

/* Prints a number as JSON: the shortest exact decimal, null when not finite. */
static void put_number(double x) {
    char buf[40];
    if (isfinite(x)) {
        emit_double(buf, sizeof buf, x);
        fputs(buf, stdout);
    } else {
        fputs("null", stdout);
    }
}

/* Sets every file's detection flags: rows whose score is >= threshold, or (published)
 * rows with an alert. */
static void detect(corpus *c, int published, double threshold) {
    for (size_t k = 0; k < c->n_files; k++) {
        data_file *d = &c->files[k];
        for (size_t i = 0; i < d->f.n_rows; i++)
            d->detected[i] = published ? d->alerted[i] : d->score[i] >= threshold;
    }
}

/* Scores the current detection sets of every file under p: the corpus total in *sum,
 * each file's raw score in raw[k] (when not NULL). */
static void score_corpus(const corpus *c, const nab_profile *p, nab_counts *sum, double *raw) {
    *sum = (nab_counts){0};
    for (size_t k = 0; k < c->n_files; k++) {
        nab_counts f;
        nab_score_file(&c->files[k].f, p, c->files[k].detected, &f);
        if (raw)
            raw[k] = f.raw;
        sum->raw += f.raw;
        sum->windows += f.windows;
        sum->windows_hit += f.windows_hit;
        sum->detections += f.detections;
        sum->in_windows += f.in_windows;
        sum->false_detections += f.false_detections;
    }
}

static int by_double(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The median of x[0..n) (sorted in place); NaN when n = 0. */
static double median(double *x, size_t n) {
    if (n == 0)
        return NAN;
    qsort(x, n, sizeof *x, by_double);
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* Prints the summary line: event figures of the detection sets now set (as published).
 * Returns 0, or EX_SOFTWARE when out of memory (nothing printed). */
static int print_summary(const corpus *c) {
    size_t n_windows = 0;
    for (size_t k = 0; k < c->n_files; k++)
        n_windows += c->files[k].f.n_windows;
    size_t *first = malloc((n_windows ? n_windows : 1) * sizeof *first);
    size_t *count = malloc((n_windows ? n_windows : 1) * sizeof *count);
    double *per = malloc((n_windows ? n_windows : 1) * sizeof *per);
    double *delay = malloc((n_windows ? n_windows : 1) * sizeof *delay);
    double *frac = malloc((n_windows ? n_windows : 1) * sizeof *frac);
    if (!first || !count || !per || !delay || !frac) {
        free(first), free(count), free(per), free(delay), free(frac);
        return EX_SOFTWARE;
    }
    nab_counts t;
    score_corpus(c, &nab_profiles[0], &t, NULL);
    size_t hit = 0, max_per = 0;
    for (size_t k = 0; k < c->n_files; k++) {
        const nab_file *f = &c->files[k].f;
        nab_first_detections(f, c->files[k].detected, first, count);
        for (size_t w = 0; w < f->n_windows; w++) {
            if (first[w] == NAB_NO_ROW)
                continue;
            const nab_window *win = &f->windows[w];
            per[hit] = (double)count[w];
            delay[hit] = (double)(first[w] - win->a);
            frac[hit] = delay[hit] / (double)(win->b - win->a + 1);
            max_per = count[w] > max_per ? count[w] : max_per;
            hit++;
        }
    }
    printf("{\"summary\":true,\"files\":%zu,\"windows\":%zu,\"windows_hit\":%zu,\"alerts\":%zu,"
           "\"false_alerts\":%zu,\"alerts_per_window_median\":",
           c->n_files, t.windows, t.windows_hit, t.detections, t.false_detections);
    put_number(median(per, hit));
    printf(",\"alerts_per_window_max\":%zu,\"precision\":", max_per);
    put_number(t.detections ? (double)t.in_windows / (double)t.detections : NAN);
    fputs(",\"recall\":", stdout);
    put_number(t.windows ? (double)t.windows_hit / (double)t.windows : NAN);
    fputs(",\"delay_rows_median\":", stdout);
    put_number(median(delay, hit));
    fputs(",\"delay_fraction_median\":", stdout);
    put_number(median(frac, hit));
    fputs("}\n", stdout);
    free(first), free(count), free(per), free(delay), free(frac);
    return 0;
}

/* Prints the --per-file lines: each file's rows; with alerts (raw not NULL) its counts
 * as published and its raw score per profile at that profile's threshold (raw[p][k])
 * and as published (raw0[p][k]); with score lines (n_by > 0) its precision-recall areas
 * per labelling and placement. */
static void print_files(const corpus *c, double *const *raw, double *const *raw0, int n_by) {
    for (size_t k = 0; k < c->n_files; k++) {
        const data_file *d = &c->files[k];
        fputs("{\"file\":", stdout);
        emit_json_string(stdout, d->key);
        printf(",\"rows\":%zu", d->f.n_rows);
        if (raw) {
            nab_counts f;
            nab_score_file(&d->f, &nab_profiles[0], d->detected, &f);
            printf(",\"probation\":%zu,\"windows\":%zu,\"windows_hit\":%zu,\"alerts\":%zu,"
                   "\"false_alerts\":%zu",
                   d->f.probation, f.windows, f.windows_hit, f.detections, f.false_detections);
            for (int pass = 0; pass < 2; pass++) {
                fputs(pass ? ",\"raw_as_published\":{" : ",\"raw\":{", stdout);
                for (size_t p = 0; p < NAB_N_PROFILES; p++) {
                    printf("%s\"%s\":", p ? "," : "", nab_profiles[p].name);
                    put_number(pass ? raw0[p][k] : raw[p][k]);
                }
                fputc('}', stdout);
            }
        }
        if (n_by > 0) {
            printf(",\"score_lines\":%zu,\"restarts\":%zu,\"auc_pr\":{", d->score_lines,
                   d->restarts);
            for (int by = 0; by < n_by; by++) {
                printf("%s\"%s\":{\"labelled_rows\":%zu", by ? "," : "", by_names[by],
                       d->auc[by][0].positives);
                for (int at = 0; at < N_AT; at++) {
                    printf(",\"%s\":{\"average_precision\":", at_names[at]);
                    put_number(d->auc[by][at].average_precision);
                    fputs(",\"trapezoid\":", stdout);
                    put_number(d->auc[by][at].trapezoid);
                    fputc('}', stdout);
                }
                fputc('}', stdout);
            }
            fputc('}', stdout);
        }
        fputs("}\n", stdout);
    }
}

/* The NAB figures of the alerts: one line per profile and the summary; raw and raw0
 * (NAB_N_PROFILES arrays of c->n_files) get each file's raw scores for --per-file.
 * Returns 0 or EX_SOFTWARE (out of memory). */
static int report_alerts(corpus *c, double *const *raw, double *const *raw0) {
    size_t nf = c->n_files ? c->n_files : 1;
    const double **scores = malloc(nf * sizeof *scores);
    nab_file *files = malloc(nf * sizeof *files);
    int rc = scores && files ? 0 : EX_SOFTWARE;
    for (size_t k = 0; rc == 0 && k < c->n_files; k++) {
        scores[k] = c->files[k].score;
        files[k] = c->files[k].f;
    }
    for (size_t p = 0; p < NAB_N_PROFILES && rc == 0; p++) {
        const nab_profile *pr = &nab_profiles[p];
        double threshold, best;
        if (nab_optimize(files, scores, c->n_files, pr, &threshold, &best) != 0) {
            rc = EX_SOFTWARE;
            break;
        }
        nab_counts at, pub;
        detect(c, 0, threshold);
        score_corpus(c, pr, &at, raw[p]);
        detect(c, 1, 0);
        score_corpus(c, pr, &pub, raw0[p]);
        printf("{\"profile\":\"%s\",\"score\":", pr->name);
        put_number(nab_normalized(pr, at.windows, at.raw));
        fputs(",\"raw\":", stdout);
        put_number(at.raw);
        fputs(",\"null\":", stdout);
        put_number(nab_null_score(pr, at.windows));
        fputs(",\"perfect\":", stdout);
        put_number(nab_perfect_score(pr, at.windows));
        fputs(",\"threshold\":", stdout);
        put_number(threshold);
        fputs(",\"score_as_published\":", stdout);
        put_number(nab_normalized(pr, pub.windows, pub.raw));
        fputs(",\"raw_as_published\":", stdout);
        put_number(pub.raw);
        printf(",\"windows_hit\":%zu,\"detections\":%zu,\"false_detections\":%zu}\n",
               at.windows_hit, at.detections, at.false_detections);
    }
    if (rc == 0) {
        detect(c, 1, 0);
        rc = print_summary(c);
    }
    free(scores), free(files);
    return rc;
}

/* The precision-recall areas of the score lines: every file's, per labelling (n_by:
 * windows, and points with --labels) and placement, then one line for each of those
 * pairs: the means over the files that have labelled rows (a file without any has no
 * recall: it is counted, not averaged). O(rows log rows). Returns 0 or EX_SOFTWARE. */
static int report_auc(const score_args *a, corpus *c, int n_by) {
    for (size_t k = 0; k < c->n_files; k++) {
        data_file *d = &c->files[k];
        for (int by = 0; by < n_by; by++)
            for (int at = 0; at < N_AT; at++)
                if (auc_pr(d->ranked[at], d->labelled[by], d->f.n_rows, &d->auc[by][at]) != 0)
                    return EX_SOFTWARE;
    }
    for (int by = 0; by < n_by; by++)
        for (int at = 0; at < N_AT; at++) {
            size_t series = 0, without = 0, unscored = 0, rows = 0, labelled = 0;
            double ap = 0, trap = 0;
            for (size_t k = 0; k < c->n_files; k++) {
                const data_file *d = &c->files[k];
                const auc_pr_result *r = &d->auc[by][at];
                rows += r->rows;
                labelled += r->positives;
                if (r->positives == 0) {
                    without++;
                    continue;
                }
                series++;
                unscored += d->score_lines == 0;
                ap += r->average_precision;
                trap += r->trapezoid;
            }
            printf("{\"auc_pr\":\"%s\",\"at\":\"%s\",\"field\":", by_names[by], at_names[at]);
            emit_json_string(stdout, a->field);
            printf(",\"series\":%zu,\"series_unscored\":%zu,\"series_unlabelled\":%zu,"
                   "\"rows\":%zu,\"labelled_rows\":%zu,\"average_precision_mean\":",
                   series, unscored, without, rows, labelled);
            put_number(series ? ap / (double)series : NAN);
            fputs(",\"trapezoid_mean\":", stdout);
            put_number(series ? trap / (double)series : NAN);
            fputs("}\n", stdout);
        }
    return 0;
}

/* Scores the corpus and prints everything: the NAB figures when alerts were read
 * (alerts), the precision-recall areas when score lines were. Returns 0 or an exit
 * status. */
static int report(const score_args *a, corpus *c, int alerts) {
    double *raw[NAB_N_PROFILES] = {0}, *raw0[NAB_N_PROFILES] = {0};
    size_t nf = c->n_files ? c->n_files : 1;
    int rc = 0, n_by = a->n_scores == 0 ? 0 : a->labels ? N_BY : 1;
    for (size_t p = 0; alerts && p < NAB_N_PROFILES && rc == 0; p++)
        if (!(raw[p] = malloc(nf * sizeof *raw[p])) || !(raw0[p] = malloc(nf * sizeof *raw0[p])))
            rc = EX_SOFTWARE;
    if (rc == 0 && alerts)
        rc = report_alerts(c, raw, raw0);
    if (rc == 0 && n_by > 0)
        rc = report_auc(a, c, n_by);
    if (rc == 0 && a->per_file)
        print_files(c, alerts ? raw : NULL, raw0, n_by);
    if (rc == EX_SOFTWARE)
        cli_error("score: out of memory");
    for (size_t p = 0; p < NAB_N_PROFILES; p++)
        free(raw[p]), free(raw0[p]);
    return rc;
}

/* Says on stderr what of the input was not counted: streams without a file, lines past
 * the end of their file, files without a score line, streams that started over. */
static void report_unplaced(const score_args *a, const corpus *c) {
    for (int s = 0; s < 2; s++) {
        const lost_stream *lost = s ? c->lost_scores : c->lost;
        size_t n = s ? c->n_lost_scores : c->n_lost;
        const char *what = s ? "score line" : "alert";
        for (size_t k = 0; k < n && k < 10; k++)
            cli_error("score: %zu %s%s of stream \"%s\" match%s no file of %s", lost[k].lines, what,
                      lost[k].lines == 1 ? "" : "s", lost[k].id, lost[k].lines == 1 ? "es" : "",
                      a->windows);
        if (n > 10)
            cli_error("score: ... and %zu more streams of %ss without a file", n - 10, what);
    }
    if (c->beyond)
        cli_error("score: %zu alert%s past the last row of their file, not counted", c->beyond,
                  c->beyond == 1 ? " lies" : "s lie");
    if (c->beyond_scores)
        cli_error("score: %zu score line%s past the last row of their file", c->beyond_scores,
                  c->beyond_scores == 1 ? " ends" : "s end");
    size_t unscored = 0, restarted = 0;
    for (size_t k = 0; a->n_scores && k < c->n_files; k++) {
        const data_file *d = &c->files[k];
        int labelled = d->f.n_windows > 0;
        for (size_t i = 0; !labelled && a->labels && i < d->f.n_rows; i++)
            labelled = d->labelled[BY_POINTS][i];
        unscored += labelled && d->score_lines == 0;
        restarted += d->restarts > 0;
    }
    if (unscored)
        cli_error("score: %zu file%s with labelled rows %s no score line: every row of %s "
                  "ranks lowest",
                  unscored, unscored == 1 ? "" : "s", unscored == 1 ? "has" : "have",
                  unscored == 1 ? "it" : "them");
    if (restarted)
        cli_error("score: the score lines of %zu file%s started over (start_seq went back): the "
                  "lines from the last start count",
                  restarted, restarted == 1 ? "" : "s");
}

int score_main(int argc, char **argv) {
    cli_optable t = {"score", options, sizeof options / sizeof options[0], 1, 22};
    score_args a = {.probation = NAB_PROBATION_DEFAULT, .field = "score"};
    parse_kinds(KINDS_DEFAULT, &a.kinds);
    int rc = cli_getopt(&t, argc, argv, apply, &a);
    if (rc == CLI_HELP) {
        usage(&t);
        free(a.scores);
        return fflush(stdout) == 0 ? 0 : EX_IOERR;
    }
    if (rc == 0 && (!a.windows || !a.data)) {
        cli_error("score: missing %s (see 'tsmine score --help')",
                  !a.windows ? "--windows FILE" : "--data DIR");
        rc = EX_USAGE;
    }
    /* ALERTS: the operands; none reads standard input, unless only scores are asked for */
    const int alerts = optind < argc || a.n_scores == 0;
    int stdin_uses = optind >= argc && alerts;
    for (int k = optind; k < argc; k++)
        stdin_uses += strcmp(argv[k], "-") == 0;
    for (size_t k = 0; k < a.n_scores; k++)
        stdin_uses += strcmp(a.scores[k], "-") == 0;
    if (rc == 0 && stdin_uses > 1) {
        cli_error("score: standard input (-) can be read only once");
        rc = EX_USAGE;
    }
    if (rc == 0 && !a.n_scores && (a.labels || a.subsequence)) {
        cli_error("score: %s needs --scores", a.labels ? "--labels" : "--subsequence");
        rc = EX_USAGE;
    }
    if (rc != 0) {
        free(a.scores);
        return rc;
    }
    corpus c = {0};
    rc = load_corpus(&a, &c);
    for (int k = optind; rc == 0 && k < argc; k++)
        rc = read_alerts(&a, &c, argv[k]);
    if (rc == 0 && alerts && optind >= argc)
        rc = read_alerts(&a, &c, "-");
    for (size_t k = 0; rc == 0 && k < a.n_scores; k++)
        rc = read_scores(&a, &c, a.scores[k]);
    if (rc == 0) {
        report_unplaced(&a, &c);
        rc = report(&a, &c, alerts);
    }
    corpus_free(&c);
    free(a.scores);
    if (fflush(stdout) != 0 && rc == 0) {
        cli_error("score: writing the output: %s", strerror(errno));
        rc = EX_IOERR;
    }
    return rc;
}
