/* SPDX-License-Identifier: Apache-2.0 */
/* bench.c - `tsmine-bench`, the benchmark driver (DESIGN 7): times the matrix profile,
 * top-10 discords (PD3) and the top motif (MK) on seeded random walks with planted
 * anomalies and on given data files, and prints one JSON object per run:
 *
 *   {"bench":"profile","backend":"cpu","series":"random_walk","n":65536,"m":128,
 *    "subsequences":65409,"threads":16,"seconds":S,"stats_seconds":S0,
 *    "distances":D,"fraction":F,...}
 *
 * seconds covers the statistics and the kernel (the best of --repeat runs);
 * stats_seconds is the statistics part of that run. distances counts the pairwise
 * distances the kernel evaluated (its counters; for the profile, every pair i < j with
 * j - i >= excl), and fraction = distances / (N^2 / 2) with N = n - m + 1 subsequences,
 * so the pruning of PD3 and MK shows as a fraction well below 1.
 *
 * The sorted-multiset benchmarks (opt-in: --bench sets_intersect, sets_union,
 * sets_difference, sets_symdiff) time kernels/sets on generated inputs of seed 004's
 * shapes and print, per operation, key width, shape and size n = |A| + |B|,
 *
 *   {"bench":"sets_union","backend":"cpu","shape":"random","width":32,"n":N,"m":null,
 *    "na":NA,"nb":NB,"threads":2,"repeat":R,"seconds":S,"elements_per_second":E,
 *    "result":C,"speedup":X}
 *
 * with elements_per_second = n / seconds (the best of --repeat runs) and speedup the
 * ratio to a plain serial merge (std::set_* semantics) on the same inputs, which is
 * printed as its own line with "backend":"serial" (--no-serial skips it). Those
 * backends take host arrays, so the CUDA figure includes the copies over PCIe.
 *
 * --thrust (CUDA builds) adds the device side: the inputs copied to the device once,
 * then each operation by tsmine on device arrays ("backend":"cuda_device") and by
 * Thrust's set_* on the same arrays ("backend":"thrust"), with
 *   "bytes": (na + nb + result) * key bytes, the least the operation must move,
 *   "bw_fraction": bytes / seconds / copy bandwidth,
 *   "vs_thrust" (on the cuda_device line): Thrust's seconds / tsmine's,
 *   "gpu_seconds" (on the cuda_device line): the GPU time of tsmine's kernels alone
 *     (CUDA events on the stream, as the copy bandwidth is timed: without the host's
 *     launch latency and the size's trip back, which "seconds" includes),
 * after one line {"bench":"copy_bandwidth",...,"bytes_per_second":B} with the device's
 * measured copy bandwidth (bytes read plus written). --no-host skips the host-array
 * backends (for sizes where the copies and the serial merge would dominate). */
#include "bench_shapelet.h"
#include "lib/emit.h"
#ifdef TSMINE_HAVE_CUDA
#include "bench_thrust.h"
#endif
#include "lib/series_io.h"
#include "mk.h"
#include "mp.h"
#include "pd3.h"
#include "sets.h"
#include "stats.h"
#include "tsm.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#ifndef TSMINE_VERSION
#define TSMINE_VERSION "unknown"
#endif

#define MAX_LIST 32

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

typedef enum { BENCH_PROFILE, BENCH_DISCORDS, BENCH_MOTIF, N_BENCH } bench_id;
static const char *const bench_names[N_BENCH] = {"profile", "discords_top10", "motif_top1"};

/* The sorted-multiset benchmarks: one per operation, "sets_" + tsm_set_op_name. */
static const char *const sets_bench_names[TSM_SET_NOPS] = {"sets_intersect", "sets_union",
                                                           "sets_difference", "sets_symdiff"};

/* Input shapes of the set benchmarks: seed 004's six (balanced sizes), heavy duplicates
 * (mod 13) and random keys at size ratios 1:1000 and 1000:1. */
typedef enum {
    SHAPE_RANDOM,
    SHAPE_ODD_EVEN,
    SHAPE_DISJOINT,
    SHAPE_PAIRS,
    SHAPE_IDENTICAL,
    SHAPE_ZEROS,
    SHAPE_MOD13, /* heavy duplicates: uniform keys mod 13, sorted */
    SHAPE_RANDOM_1_1000,
    SHAPE_RANDOM_1000_1,
    N_SHAPES
} set_shape;
static const char *const shape_names[N_SHAPES] = {"random", "odd_even",       "disjoint",
                                                  "pairs",  "identical",      "zeros",
                                                  "mod13",  "random_1to1000", "random_1000to1"};

typedef struct {
    int bench[N_BENCH];              /* which to run */
    int sets[TSM_SET_NOPS];          /* which set operations to time */
    int shapes[N_SHAPES], widths[2]; /* their shapes; widths[0]: 32 bits, [1]: 64 */
    size_t sets_n[MAX_LIST], sets_n_count;
    int serial; /* also time the serial merge */
    int host;   /* time the backends on host arrays */
    int thrust; /* CUDA builds: device arrays, tsmine beside Thrust */
    size_t n[MAX_LIST], m[MAX_LIST];
    size_t n_count, m_count;
    const char *data[MAX_LIST];
    size_t data_count;
    int walks, threads, repeat;
    double max_seconds; /* 0: no limit */
    uint64_t seed;
    tsm_backend backend[2]; /* --backend, repeatable: each configuration runs on each */
    size_t backend_count;
} bench_opts;

/* One timed run: totals and what the kernel reports. */
typedef struct {
    double seconds, stats_seconds;
    uint64_t distances;
    tsm_pd3_stats pd3;
    tsm_mk_stats mk;
    size_t found;
    tsm_discord top_discord;
    tsm_motif top_motif;
} bench_result;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tsmine-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- series ------------------------------------------------------------------- */

/* splitmix64: the driver's seeded generator (the same sequence on every machine). */
static uint64_t next_u64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *state) {
    return (double)(next_u64(state) >> 11) * 0x1p-53;
}

/* A standard normal deviate (Box-Muller). */
static double normal(uint64_t *state) {
    double u = uniform(state), v = uniform(state);
    return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}

/* Fills t with a random walk of n unit-variance steps and plants three anomalies of
 * length m (a zigzag burst, a near-flat stretch, a slow sine) at 30%, 60% and 85% of
 * the series, so that the discords are where a reader expects them. */
static void random_walk(double *t, size_t n, size_t m, uint64_t seed) {
    uint64_t st = seed;
    double x = 0.0;
    for (size_t i = 0; i < n; i++)
        t[i] = x += normal(&st);
    if (n < 4 * m)
        return;
    size_t a = n * 3 / 10, b = n * 6 / 10, c = n * 85 / 100;
    double level = t[b];
    for (size_t k = 0; k < m; k++) {
        t[a + k] += 6.0 * sin(M_PI / 2.0 * (double)k + 0.5);
        t[b + k] = level + 0.05 * normal(&st);
        t[c + k] += 4.0 * sin(2.0 * M_PI * (double)k / (double)m);
    }
}

/* ---- runs --------------------------------------------------------------------- */

/* Runs one benchmark once on t[0..n-1] with length m (excl = m) and fills r. */
static tsm_status run_once(tsm_ctx *ctx, bench_id b, const double *t, size_t n, size_t m,
                           bench_result *r) {
    memset(r, 0, sizeof *r);
    double t0 = now();
    tsm_stats *s = NULL;
    tsm_status st = tsm_stats_new(ctx, t, n, m, &s);
    if (st != TSM_OK)
        return st;
    double t1 = now();
    size_t N = s->N, excl = m;
    if (b == BENCH_PROFILE) {
        double *mp = malloc(N * sizeof *mp);
        int64_t *mpi = malloc(N * sizeof *mpi);
        st = mp && mpi ? tsm_mp(ctx, s, excl, mp, mpi, NULL, NULL)
                       : tsm_fail(ctx, TSM_ENOMEM, "out of memory for the profile");
        free(mp);
        free(mpi);
        uint64_t span = N > excl ? (uint64_t)(N - excl) : 0;
        r->distances = span * (span + 1) / 2;
        r->found = N;
    } else if (b == BENCH_DISCORDS) {
        tsm_discord out[10];
        st = tsm_discords_topk(ctx, s, excl, 10, 0, out, &r->found, &r->pd3);
        r->distances = r->pd3.distances;
        if (st == TSM_OK && r->found > 0)
            r->top_discord = out[0];
    } else {
        st = tsm_mk_motifs(ctx, s, excl, 1, 0, TSM_MK_SEED_DEFAULT, &r->top_motif, &r->found,
                           &r->mk);
        r->distances = r->mk.distances;
    }
    double t2 = now();
    tsm_stats_destroy(&s);
    r->seconds = t2 - t0;
    r->stats_seconds = t1 - t0;
    return st;
}

/* Prints a double as a JSON number (null when not finite). */
static void put_double(const char *key, double x) {
    char buf[40];
    if (isfinite(x)) {
        emit_double(buf, sizeof buf, x);
        printf(",\"%s\":%s", key, buf);
    } else {
        printf(",\"%s\":null", key);
    }
}

/* Prints one result line. */
static void report(const tsm_ctx *ctx, bench_id b, const char *series, size_t n, size_t m,
                   int repeat, const bench_result *r) {
    size_t N = n - m + 1;
    printf("{\"bench\":\"%s\",\"backend\":\"%s\",\"series\":", bench_names[b],
           tsm_backend_name(tsm_ctx_backend(ctx)));
    emit_json_string(stdout, series);
    printf(",\"n\":%zu,\"m\":%zu,\"subsequences\":%zu,\"threads\":%d,\"repeat\":%d", n, m, N,
           tsm_ctx_threads(ctx), repeat);
    put_double("seconds", r->seconds);
    put_double("stats_seconds", r->stats_seconds);
    printf(",\"distances\":%" PRIu64, r->distances);
    put_double("fraction", (double)r->distances / ((double)N * (double)N / 2.0));
    if (b == BENCH_PROFILE) {
        put_double("pairs_per_second", (double)r->distances / (r->seconds - r->stats_seconds));
    } else if (b == BENCH_DISCORDS) {
        printf(",\"found\":%zu,\"passes\":%" PRIu64 ",\"candidates\":%zu", r->found, r->pd3.passes,
               r->pd3.candidates);
        put_double("r", r->pd3.r);
        printf(",\"top_index\":%" PRId64, r->found ? r->top_discord.index : -1);
        put_double("top_distance", r->found ? r->top_discord.distance : NAN);
    } else {
        printf(",\"found\":%zu,\"refs\":%zu,\"offsets\":%" PRIu64, r->found, r->mk.refs,
               r->mk.offsets);
        printf(",\"a\":%" PRId64 ",\"b\":%" PRId64, r->found ? r->top_motif.a : -1,
               r->found ? r->top_motif.b : -1);
        put_double("distance", r->found ? r->top_motif.distance : NAN);
    }
    printf("}\n");
    fflush(stdout);
}

/* Runs every selected benchmark on one series with the j-th m. too_slow[b] marks the
 * benchmarks that passed --max-seconds on a smaller walk with this m: those are skipped,
 * and set here when this run passes it. Returns 0 or the exit status of a failure. */
static int bench_m(tsm_ctx *ctx, const bench_opts *o, const char *name, const double *t, size_t n,
                   size_t m, int too_slow[N_BENCH]) {
    int rc = 0;
    if (m > n) {
        fail("%s: skipping m = %zu > n = %zu", name, m, n);
        return 0;
    }
    for (int b = 0; b < N_BENCH; b++) {
        if (!o->bench[b])
            continue;
        if (too_slow[b]) {
            fail("%s n=%zu m=%zu: skipped, a smaller n took over %g s", bench_names[b], n, m,
                 o->max_seconds);
            continue;
        }
        if (isatty(STDERR_FILENO))
            fprintf(stderr, "tsmine-bench: %s %s n=%zu m=%zu ...\n", bench_names[b], name, n, m);
        bench_result best = {0}, r;
        int runs = 0;
        tsm_status st = TSM_OK;
        for (int k = 0; k < o->repeat; k++) {
            st = run_once(ctx, (bench_id)b, t, n, m, &r);
            if (st != TSM_OK)
                break;
            if (runs++ == 0 || r.seconds < best.seconds)
                best = r;
            if (o->max_seconds > 0 && r.seconds > o->max_seconds)
                break; /* one slow run is measurement enough */
        }
        if (st != TSM_OK) {
            fail("%s %s n=%zu m=%zu: %s", bench_names[b], name, n, m, tsm_ctx_error(ctx));
            rc = st == TSM_EINVAL ? EX_USAGE : st == TSM_EDEVICE ? EX_UNAVAILABLE : EX_SOFTWARE;
            continue;
        }
        report(ctx, (bench_id)b, name, n, m, runs, &best);
        if (o->max_seconds > 0 && best.seconds > o->max_seconds)
            too_slow[b] = 1;
    }
    return rc;
}

/* ---- sorted multisets -------------------------------------------------------- */

/* A value uniform on [0, r) from the generator (multiply-high: no division). */
static uint64_t below(uint64_t *state, uint64_t r) {
    return (uint64_t)(((unsigned __int128)next_u64(state) * r) >> 64);
}

/* Fills x[0..m) with m sorted keys drawn uniformly from [0, r): the draws are counted
 * per value, then the counts expanded in order (exactly sorted uniform draws, in
 * O(m + r) instead of a sort). Returns -1 when out of memory. */
static int sorted_uniform(uint64_t *x, size_t m, uint64_t r, uint64_t *state) {
    uint32_t *count = calloc(r ? r : 1, sizeof *count);
    if (!count)
        return -1;
    for (size_t i = 0; i < m; i++)
        count[below(state, r)]++;
    size_t k = 0;
    for (uint64_t v = 0; v < r; v++)
        for (uint32_t c = count[v]; c > 0; c--)
            x[k++] = v;
    free(count);
    return 0;
}

/* Operand `which` (0: A, 1: B) of a shape with sizes na, nb into x (64-bit keys; the
 * 32-bit runs narrow them: every value stays below 2^32 for n < 2^31). */
static int make_operand(set_shape sh, int which, uint64_t *x, size_t na, size_t nb,
                        uint64_t *state) {
    size_t m = which ? nb : na, big = na > nb ? na : nb;
    switch (sh) {
    case SHAPE_RANDOM:
    case SHAPE_RANDOM_1_1000:
    case SHAPE_RANDOM_1000_1: return sorted_uniform(x, m, big, state);
    case SHAPE_MOD13: return sorted_uniform(x, m, 13, state);
    default: break;
    }
    for (size_t i = 0; i < m; i++) {
        switch (sh) {
        case SHAPE_ODD_EVEN: x[i] = 2 * (uint64_t)i + (which == 0); break;
        case SHAPE_DISJOINT: x[i] = which == 0 ? nb + i : i; break;
        case SHAPE_PAIRS: x[i] = (i / 2) * 4 + (i & 1) + (which == 0 ? 0 : 2); break;
        case SHAPE_IDENTICAL: x[i] = i + 1; break;
        default: x[i] = 0; break; /* zeros */
        }
    }
    return 0;
}

/* SERIAL_DEFINE(K, SFX) defines serial_SFX: the plain serial merge of std::set_*
 * (branching; each operation's loop specialised by constant flags, as a hand-written
 * std::set_intersection etc. would be). The baseline of the set benchmarks. */
#define SERIAL_DEFINE(K, SFX)                                                                      \
    static inline size_t serial_loop_##SFX(const K *a, size_t na, const K *b, size_t nb, K *o,     \
                                           const int ea, const int eb, const int eq) {             \
        size_t i = 0, j = 0, k = 0;                                                                \
        while (i < na && j < nb) {                                                                 \
            if (a[i] < b[j]) {                                                                     \
                if (ea)                                                                            \
                    o[k++] = a[i];                                                                 \
                i++;                                                                               \
            } else if (b[j] < a[i]) {                                                              \
                if (eb)                                                                            \
                    o[k++] = b[j];                                                                 \
                j++;                                                                               \
            } else {                                                                               \
                if (eq)                                                                            \
                    o[k++] = a[i];                                                                 \
                i++, j++;                                                                          \
            }                                                                                      \
        }                                                                                          \
        while (ea && i < na)                                                                       \
            o[k++] = a[i++];                                                                       \
        while (eb && j < nb)                                                                       \
            o[k++] = b[j++];                                                                       \
        return k;                                                                                  \
    }                                                                                              \
    static size_t serial_##SFX(tsm_set_op op, const K *a, size_t na, const K *b, size_t nb,        \
                               K *o) {                                                             \
        switch (op) {                                                                              \
        case TSM_SET_INTERSECT: return serial_loop_##SFX(a, na, b, nb, o, 0, 0, 1);                \
        case TSM_SET_UNION: return serial_loop_##SFX(a, na, b, nb, o, 1, 1, 1);                    \
        case TSM_SET_DIFFERENCE: return serial_loop_##SFX(a, na, b, nb, o, 1, 0, 0);               \
        case TSM_SET_SYMDIFF: return serial_loop_##SFX(a, na, b, nb, o, 1, 1, 0);                  \
        }                                                                                          \
        return 0;                                                                                  \
    }
SERIAL_DEFINE(uint32_t, u32)
SERIAL_DEFINE(uint64_t, u64)

/* One configuration's inputs and output buffers (keys of width 32 or 64). */
typedef struct {
    int width;
    void *a, *b, *out,
        *ref; /* host; out and ref only when host runs or the serial merge need them */
    size_t na, nb, room;
#ifdef TSMINE_HAVE_CUDA
    bench_dev_case *dev; /* --thrust: the inputs on the device */
    tsm_ctx *dev_ctx;    /* the CUDA ctx they live on */
    double copy_bw;      /* the device's copy bandwidth, bytes/s (read + written) */
#endif
} sets_case;

/* Runs op once: on ctx, or the serial merge when ctx is NULL. */
static tsm_status sets_once(tsm_ctx *ctx, tsm_set_op op, const sets_case *c, void *out,
                            size_t *count) {
    if (!ctx) {
        *count = c->width == 32 ? serial_u32(op, c->a, c->na, c->b, c->nb, out)
                                : serial_u64(op, c->a, c->na, c->b, c->nb, out);
        return TSM_OK;
    }
    return c->width == 32 ? tsm_set_u32(ctx, op, c->a, c->na, c->b, c->nb, out, c->room, count)
                          : tsm_set_u64(ctx, op, c->a, c->na, c->b, c->nb, out, c->room, count);
}

/* Prints one set benchmark line; speedup, and the device fields bytes, bw_fraction,
 * vs_thrust and gpu_seconds, are printed when positive. */
static void sets_report(const char *backend, int threads, tsm_set_op op, set_shape sh,
                        const sets_case *c, int repeat, double seconds, size_t count,
                        double speedup, double bw_fraction, double vs_thrust, double gpu_seconds) {
    printf("{\"bench\":\"%s\",\"backend\":\"%s\",\"shape\":\"%s\",\"width\":%d,\"n\":%zu,"
           "\"m\":null,\"na\":%zu,\"nb\":%zu,\"threads\":%d,\"repeat\":%d",
           sets_bench_names[op], backend, shape_names[sh], c->width, c->na + c->nb, c->na, c->nb,
           threads, repeat);
    put_double("seconds", seconds);
    put_double("elements_per_second", (double)(c->na + c->nb) / seconds);
    printf(",\"result\":%zu", count);
    if (speedup > 0)
        put_double("speedup", speedup);
    if (bw_fraction > 0) {
        printf(",\"bytes\":%zu", (c->na + c->nb + count) * (size_t)(c->width / 8));
        put_double("bw_fraction", bw_fraction);
    }
    if (vs_thrust > 0)
        put_double("vs_thrust", vs_thrust);
    if (gpu_seconds > 0)
        put_double("gpu_seconds", gpu_seconds);
    printf("}\n");
    fflush(stdout);
}

#ifdef TSMINE_HAVE_CUDA
/* --thrust: op on the device arrays by tsmine and by Thrust, checked against each other
 * and against ref[0..nref) when ref is not NULL; two lines. Returns 0 or an exit
 * status. */
static int sets_bench_device(const bench_opts *o, tsm_set_op op, set_shape sh, const sets_case *c,
                             const void *ref, size_t nref) {
    bench_dev_result r;
    char err[512];
    if (bench_dev_set(c->dev_ctx, c->dev, op, ref, nref, o->repeat, &r, err, sizeof err) != 0) {
        fail("%s %s u%d on the device: %s", sets_bench_names[op], shape_names[sh], c->width, err);
        return EX_SOFTWARE;
    }
    double bytes = (double)((c->na + c->nb + r.count) * (size_t)(c->width / 8));
    sets_report("cuda_device", 0, op, sh, c, o->repeat, r.tsmine_seconds, r.count, 0,
                bytes / r.tsmine_seconds / c->copy_bw, r.thrust_seconds / r.tsmine_seconds,
                r.tsmine_gpu_seconds);
    sets_report("thrust", 0, op, sh, c, o->repeat, r.thrust_seconds, r.count, 0,
                bytes / r.thrust_seconds / c->copy_bw, 0, 0);
    return 0;
}
#endif

/* Times the selected operations on one case: the serial merge first (its result is the
 * reference every backend's result is checked against; it runs when printed or when
 * host runs need it), then each backend on host arrays, then (--thrust) the device
 * side; the best of o->repeat runs each. Returns 0 or an exit status. */
static int sets_bench_case(tsm_ctx *const *ctx, size_t nctx, const bench_opts *o, set_shape sh,
                           sets_case *c) {
    size_t key = c->width / 8;
    const int need_ref = o->serial || o->host;
    for (int q = 0; q < TSM_SET_NOPS; q++) {
        if (!o->sets[q])
            continue;
        tsm_set_op op = (tsm_set_op)q;
        size_t want = 0, got = 0;
        double serial_best = 0;
        if (isatty(STDERR_FILENO))
            fprintf(stderr, "tsmine-bench: %s %s u%d n=%zu ...\n", sets_bench_names[q],
                    shape_names[sh], c->width, c->na + c->nb);
        for (int r = 0; need_ref && (r < o->repeat || (!o->serial && r == 0)); r++) {
            double t0 = now();
            sets_once(NULL, op, c, c->ref, &want);
            double t = now() - t0;
            serial_best = r == 0 || t < serial_best ? t : serial_best;
        }
        if (o->serial)
            sets_report("serial", 1, op, sh, c, o->repeat, serial_best, want, 0, 0, 0, 0);
        for (size_t b = 0; o->host && b < nctx; b++) {
            double best = 0;
            for (int r = 0; r < o->repeat; r++) {
                double t0 = now();
                tsm_status st = sets_once(ctx[b], op, c, c->out, &got);
                double t = now() - t0;
                if (st != TSM_OK) {
                    fail("%s %s u%d: %s", sets_bench_names[q], shape_names[sh], c->width,
                         tsm_ctx_error(ctx[b]));
                    return st == TSM_EDEVICE ? EX_UNAVAILABLE : EX_SOFTWARE;
                }
                best = r == 0 || t < best ? t : best;
            }
            if (got != want || memcmp(c->out, c->ref, got * key) != 0) {
                fail("%s %s u%d: the %s result differs from the serial merge's (%zu vs %zu keys)",
                     sets_bench_names[q], shape_names[sh], c->width,
                     tsm_backend_name(tsm_ctx_backend(ctx[b])), got, want);
                return EX_SOFTWARE;
            }
            sets_report(tsm_backend_name(tsm_ctx_backend(ctx[b])), tsm_ctx_threads(ctx[b]), op, sh,
                        c, o->repeat, best, got, o->serial ? serial_best / best : 0, 0, 0, 0);
        }
#ifdef TSMINE_HAVE_CUDA
        if (c->dev) {
            int r = sets_bench_device(o, op, sh, c, need_ref ? c->ref : NULL, want);
            if (r)
                return r;
        }
#endif
    }
    return 0;
}

/* The device's copy bandwidth for bw_fraction (--thrust), printed as its own line; 0 or
 * an exit status. */
static int sets_copy_bandwidth(tsm_ctx *dev_ctx, int repeat, double *copy_bw) {
#ifdef TSMINE_HAVE_CUDA
    const size_t bytes = (size_t)1 << 31;
    char err[512];
    if (bench_copy_bandwidth(dev_ctx, bytes, repeat < 5 ? 5 : repeat, copy_bw, err, sizeof err)) {
        fail("copy bandwidth: %s", err);
        return EX_SOFTWARE;
    }
    printf("{\"bench\":\"copy_bandwidth\",\"backend\":\"cuda\",\"bytes\":%zu", bytes);
    put_double("bytes_per_second", *copy_bw);
    printf("}\n");
    fflush(stdout);
#else
    (void)dev_ctx, (void)repeat, (void)copy_bw;
#endif
    return 0;
}

/* Every selected size, width and shape of the set benchmarks. Inputs are generated once
 * per (size, shape) as 64-bit keys and narrowed for the 32-bit runs; the output buffers
 * are written once before timing so that page faults are not timed. dev_ctx (--thrust)
 * is the CUDA ctx the device side runs on, copy_bw its copy bandwidth. */
static int sets_bench(tsm_ctx *const *ctx, size_t nctx, const bench_opts *o, tsm_ctx *dev_ctx,
                      double copy_bw) {
    int rc = 0;
    const int need_out = o->serial || o->host;
    (void)dev_ctx, (void)copy_bw; /* without CUDA */
    for (size_t ni = 0; ni < o->sets_n_count; ni++) {
        size_t n = o->sets_n[ni];
        for (int sh = 0; sh < N_SHAPES; sh++) {
            if (!o->shapes[sh])
                continue;
            size_t na = n / 2;
            if (sh == SHAPE_RANDOM_1_1000)
                na = n / 1001 ? n / 1001 : 1;
            else if (sh == SHAPE_RANDOM_1000_1)
                na = n - (n / 1001 ? n / 1001 : 1);
            size_t nb = n - na;
            uint64_t state = o->seed * 0x9e3779b97f4a7c15u + (uint64_t)sh;
            sets_case c = {.na = na, .nb = nb, .room = n};
            c.a = malloc(na * 8), c.b = malloc(nb * 8);
            if (need_out)
                c.out = malloc(n * 8), c.ref = malloc(n * 8);
            if (!c.a || !c.b || (need_out && (!c.out || !c.ref)) ||
                make_operand(sh, 0, c.a, na, nb, &state) ||
                make_operand(sh, 1, c.b, na, nb, &state)) {
                fail("out of memory for the sets inputs of n = %zu", n);
                rc = EX_SOFTWARE;
            }
            for (int w = 1; rc == 0 && w >= 0; w--) { /* 64 first: narrowing is in place */
                if (!o->widths[w])
                    continue;
                c.width = w ? 64 : 32;
                if (!w) {
                    uint64_t *a64 = c.a, *b64 = c.b;
                    uint32_t *a32 = c.a, *b32 = c.b;
                    for (size_t i = 0; i < na; i++)
                        a32[i] = (uint32_t)a64[i];
                    for (size_t i = 0; i < nb; i++)
                        b32[i] = (uint32_t)b64[i];
                }
                if (need_out) {
                    memset(c.out, 0, n * 8);
                    memset(c.ref, 0, n * 8);
                }
#ifdef TSMINE_HAVE_CUDA
                char err[512];
                c.dev_ctx = dev_ctx, c.copy_bw = copy_bw;
                if (dev_ctx &&
                    !(c.dev = bench_dev_new(dev_ctx, c.width, c.a, na, c.b, nb, err, sizeof err))) {
                    fail("sets n=%zu %s u%d: the inputs do not go to the device: %s", n,
                         shape_names[sh], c.width, err);
                    rc = EX_SOFTWARE;
                    continue;
                }
#endif
                int r = sets_bench_case(ctx, nctx, o, (set_shape)sh, &c);
                rc = r ? r : rc;
#ifdef TSMINE_HAVE_CUDA
                bench_dev_free(&c.dev);
#endif
            }
            free(c.a), free(c.b), free(c.out), free(c.ref);
            if (rc == EX_SOFTWARE || rc == EX_UNAVAILABLE)
                return rc;
        }
    }
    return rc;
}

/* ---- options ------------------------------------------------------------------ */

static void usage(void) {
    printf("Usage: tsmine-bench [OPTIONS]\n\n"
           "Times the CPU/CUDA kernels and prints one JSON object per run.\n\n"
           "Options (the list options repeat):\n"
           "  --bench NAME          profile, discords_top10 or motif_top1 (default: all\n"
           "                        three), or sets_intersect, sets_union, sets_difference,\n"
           "                        sets_symdiff (only when named)\n"
           "  --n N                 random-walk length; N or 2^K (default: 2^14 2^16 2^18)\n"
           "  --m M                 subsequence length (default: 64 128 512)\n"
           "  --data FILE           also run on this series (.csv/.txt/.npy/.f64)\n"
           "  --no-walks            only the --data series\n"
           "  --backend B           auto, cpu or cuda (default auto); give two, e.g.\n"
           "                        --backend cuda --backend cpu, to compare them\n"
           "  --threads T           CPU threads (default: all)\n"
           "  --repeat R            runs per configuration; the best is reported (default 1)\n"
           "  --max-seconds S       after a run over S seconds, skip larger n for that\n"
           "                        benchmark and m (default: no limit)\n"
           "  --seed S              seed of the random walks and keys (default 1)\n"
           "  --sets-n N            sets: |A| + |B|; N, 2^K or 1eK (default: 1e6 1e8)\n"
           "  --sets-shape S        sets: random, odd_even, disjoint, pairs, identical,\n"
           "                        zeros, random_1to1000, random_1000to1 (default: all)\n"
           "  --sets-width W        sets: key width 32 or 64 (default: both)\n"
           "  --no-serial           sets: skip the serial-merge baseline\n"
           "  --no-host             sets: skip the backends on host arrays\n"
           "  --thrust              sets (CUDA builds): also on device arrays, tsmine\n"
           "                        (cuda_device) beside Thrust (thrust), with the copy\n"
           "                        bandwidth and bw_fraction\n"
           "  -h, --help            print this help and exit\n"
           "  (tsmine-bench shapelet --help: the shapelet discovery benchmark)\n"
           "  -V, --version         print the version and exit\n\n"
           "Fields: bench, backend, series, n, m, subsequences (N = n-m+1), threads, repeat,\n"
           "seconds (statistics + kernel), stats_seconds, distances (evaluated), fraction\n"
           "(distances / (N^2/2)); profile: pairs_per_second (kernel only); discords_top10:\n"
           "found, passes, candidates, r, top_index, top_distance; motif_top1: found, refs,\n"
           "offsets, a, b, distance; sets_*: shape, width, na, nb, elements_per_second\n"
           "((na + nb) / seconds), result (its size), speedup (over the serial merge, whose\n"
           "line has backend \"serial\"); --thrust: bytes, bw_fraction, vs_thrust.\n");
}

/* Parses a count: a whole decimal number or 2^K. Returns -1 if arg is neither. */
static int parse_size(const char *arg, size_t *out) {
    char *end;
    errno = 0;
    if (strncmp(arg, "2^", 2) == 0) {
        unsigned long k = strtoul(arg + 2, &end, 10);
        if (end == arg + 2 || *end || k >= 8 * sizeof(size_t) - 1)
            return -1;
        *out = (size_t)1 << k;
        return 0;
    }
    if (arg[0] < '0' || arg[0] > '9')
        return -1;
    if (arg[0] == '1' && arg[1] == 'e') { /* 1eK: 10^K */
        unsigned long k = strtoul(arg + 2, &end, 10);
        if (end == arg + 2 || *end || k > 19)
            return -1;
        size_t p = 1;
        while (k-- > 0)
            p *= 10;
        *out = p;
        return 0;
    }
    unsigned long long v = strtoull(arg, &end, 10);
    if (*end || errno == ERANGE || v > SIZE_MAX)
        return -1;
    *out = (size_t)v;
    return 0;
}

/* Fills o from argv; returns 0, -1 after --help/--version, or EX_USAGE. */
static int parse_opts(int argc, char **argv, bench_opts *o) {
    enum {
        O_BENCH = 256,
        O_N,
        O_M,
        O_DATA,
        O_NOWALKS,
        O_BACKEND,
        O_THREADS,
        O_REPEAT,
        O_MAXS,
        O_SEED,
        O_SETS_N,
        O_SETS_SHAPE,
        O_SETS_WIDTH,
        O_NO_SERIAL,
        O_NO_HOST,
        O_THRUST
    };
    static const struct option longopts[] = {{"bench", 1, NULL, O_BENCH},
                                             {"n", 1, NULL, O_N},
                                             {"m", 1, NULL, O_M},
                                             {"data", 1, NULL, O_DATA},
                                             {"no-walks", 0, NULL, O_NOWALKS},
                                             {"backend", 1, NULL, O_BACKEND},
                                             {"threads", 1, NULL, O_THREADS},
                                             {"repeat", 1, NULL, O_REPEAT},
                                             {"max-seconds", 1, NULL, O_MAXS},
                                             {"seed", 1, NULL, O_SEED},
                                             {"sets-n", 1, NULL, O_SETS_N},
                                             {"sets-shape", 1, NULL, O_SETS_SHAPE},
                                             {"sets-width", 1, NULL, O_SETS_WIDTH},
                                             {"no-serial", 0, NULL, O_NO_SERIAL},
                                             {"no-host", 0, NULL, O_NO_HOST},
                                             {"thrust", 0, NULL, O_THRUST},
                                             {"help", 0, NULL, 'h'},
                                             {"version", 0, NULL, 'V'},
                                             {NULL, 0, NULL, 0}};
    *o = (bench_opts){.walks = 1, .repeat = 1, .seed = 1, .serial = 1, .host = 1};
    int any_bench = 0, any_shape = 0, any_width = 0, c;
    size_t v;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': usage(); return -1;
        case 'V': printf("tsmine-bench %s\n", TSMINE_VERSION); return -1;
        case O_BENCH: {
            int b = 0, q = 0;
            while (b < N_BENCH && strcmp(optarg, bench_names[b]) != 0)
                b++;
            while (q < TSM_SET_NOPS && strcmp(optarg, sets_bench_names[q]) != 0)
                q++;
            if (b == N_BENCH && q == TSM_SET_NOPS) {
                fail("unknown benchmark '%s' (profile, discords_top10, motif_top1, "
                     "sets_intersect, sets_union, sets_difference, sets_symdiff)",
                     optarg);
                return EX_USAGE;
            }
            if (b < N_BENCH)
                o->bench[b] = 1;
            else
                o->sets[q] = 1;
            any_bench = 1;
            break;
        }
        case O_SETS_N:
            if (parse_size(optarg, &v) != 0 || v < 2 || o->sets_n_count == MAX_LIST) {
                fail("--sets-n: invalid or one too many value '%s'", optarg);
                return EX_USAGE;
            }
            o->sets_n[o->sets_n_count++] = v;
            break;
        case O_SETS_SHAPE: {
            int q = 0;
            while (q < N_SHAPES && strcmp(optarg, shape_names[q]) != 0)
                q++;
            if (q == N_SHAPES) {
                fail("--sets-shape: unknown shape '%s' (see --help)", optarg);
                return EX_USAGE;
            }
            o->shapes[q] = any_shape = 1;
            break;
        }
        case O_SETS_WIDTH:
            if (strcmp(optarg, "32") != 0 && strcmp(optarg, "64") != 0) {
                fail("--sets-width: invalid width '%s' (32 or 64)", optarg);
                return EX_USAGE;
            }
            o->widths[optarg[0] == '6'] = any_width = 1;
            break;
        case O_NO_SERIAL: o->serial = 0; break;
        case O_NO_HOST: o->host = 0; break;
        case O_THRUST:
#ifndef TSMINE_HAVE_CUDA
            fail("--thrust needs a CUDA build");
            return EX_USAGE;
#endif
            o->thrust = 1;
            break;
        case O_N:
        case O_M: {
            size_t *list = c == O_N ? o->n : o->m, *count = c == O_N ? &o->n_count : &o->m_count;
            if (parse_size(optarg, &v) != 0 || v < 3 || *count == MAX_LIST) {
                fail("--%s: invalid or one too many value '%s'", c == O_N ? "n" : "m", optarg);
                return EX_USAGE;
            }
            list[(*count)++] = v;
            break;
        }
        case O_DATA:
            if (o->data_count == MAX_LIST) {
                fail("--data: at most %d files", MAX_LIST);
                return EX_USAGE;
            }
            o->data[o->data_count++] = optarg;
            break;
        case O_NOWALKS: o->walks = 0; break;
        case O_BACKEND:
            if (o->backend_count == 2) {
                fail("--backend: at most two backends");
                return EX_USAGE;
            }
            if (tsm_backend_parse(optarg, &o->backend[o->backend_count++]) != 0) {
                fail("--backend: unknown backend '%s' (auto, cpu or cuda)", optarg);
                return EX_USAGE;
            }
            break;
        case O_THREADS:
        case O_REPEAT:
            if (parse_size(optarg, &v) != 0 || v < 1 || v > 4096) {
                fail("--%s: invalid value '%s'", c == O_THREADS ? "threads" : "repeat", optarg);
                return EX_USAGE;
            }
            *(c == O_THREADS ? &o->threads : &o->repeat) = (int)v;
            break;
        case O_MAXS: {
            char *end;
            o->max_seconds = strtod(optarg, &end);
            if (end == optarg || *end || !(o->max_seconds >= 0) || isinf(o->max_seconds)) {
                fail("--max-seconds: invalid value '%s'", optarg);
                return EX_USAGE;
            }
            break;
        }
        case O_SEED:
            if (parse_size(optarg, &v) != 0) {
                fail("--seed: invalid value '%s'", optarg);
                return EX_USAGE;
            }
            o->seed = v;
            break;
        case ':': fail("option '%s' needs an argument", argv[optind - 1]); return EX_USAGE;
        default: fail("unknown option '%s' (see --help)", argv[optind - 1]); return EX_USAGE;
        }
    }
    if (optind < argc) {
        fail("unexpected argument '%s' (use --data FILE for series)", argv[optind]);
        return EX_USAGE;
    }
    if (!any_bench) /* the set benchmarks run only when named */
        for (int b = 0; b < N_BENCH; b++)
            o->bench[b] = 1;
    if (!any_shape)
        for (int q = 0; q < N_SHAPES; q++)
            o->shapes[q] = 1;
    if (!any_width)
        o->widths[0] = o->widths[1] = 1;
    if (!o->sets_n_count) {
        o->sets_n[0] = 1000000, o->sets_n[1] = 100000000;
        o->sets_n_count = 2;
    }
    if (!o->backend_count)
        o->backend[o->backend_count++] = TSM_BACKEND_AUTO;
    if (!o->n_count) {
        o->n[0] = (size_t)1 << 14, o->n[1] = (size_t)1 << 16, o->n[2] = (size_t)1 << 18;
        o->n_count = 3;
    }
    if (!o->m_count) {
        o->m[0] = 64, o->m[1] = 128, o->m[2] = 512;
        o->m_count = 3;
    }
    return 0;
}

/* qsort order of sizes: ascending. */
static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "shapelet") == 0) /* its own options: bench_shapelet.c */
        return bench_shapelet_main(argc - 1, argv + 1);
    bench_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    qsort(o.n, o.n_count, sizeof o.n[0], cmp_size);

    tsm_ctx *ctx[2] = {NULL, NULL};
    for (size_t b = 0; b < o.backend_count; b++) {
        const char *why = NULL;
        tsm_status st = tsm_ctx_new(&ctx[b], o.backend[b], &why);
        if (st != TSM_OK) {
            fail("backend %s is unavailable: %s", tsm_backend_name(o.backend[b]), why ? why : "?");
            tsm_ctx_destroy(&ctx[0]);
            return st == TSM_EBACKEND ? EX_UNAVAILABLE : EX_SOFTWARE;
        }
        tsm_ctx_set_threads(ctx[b], o.threads);
    }

    /* Walks in ascending n, so that --max-seconds skips the larger ones. The anomalies
     * are m long, so each m gets its own walk (the same steps). Each configuration runs
     * on every backend asked for, one line each, side by side. */
    static int too_slow[2][MAX_LIST][N_BENCH];
    int any_series = 0, any_sets = 0;
    for (int b = 0; b < N_BENCH; b++)
        any_series |= o.bench[b];
    for (int q = 0; q < TSM_SET_NOPS; q++)
        any_sets |= o.sets[q];
    for (size_t i = 0; any_series && o.walks && i < o.n_count; i++) {
        size_t n = o.n[i];
        double *t = malloc(n * sizeof *t);
        if (!t) {
            fail("out of memory for a walk of %zu values", n);
            rc = EX_SOFTWARE;
            break;
        }
        for (size_t j = 0; j < o.m_count; j++) {
            random_walk(t, n, o.m[j], o.seed);
            for (size_t b = 0; b < o.backend_count; b++) {
                int r = bench_m(ctx[b], &o, "random_walk", t, n, o.m[j], too_slow[b][j]);
                rc = r ? r : rc;
            }
        }
        free(t);
    }
    for (size_t i = 0; any_series && i < o.data_count; i++) {
        series data;
        char err[512];
        series_status ss = series_read(o.data[i], SERIES_FMT_AUTO, &data, err, sizeof err);
        if (ss != SERIES_OK) {
            fail("%s", err);
            rc = ss == SERIES_EOPEN ? EX_NOINPUT : ss == SERIES_EDATA ? EX_DATAERR : EX_SOFTWARE;
            continue;
        }
        const char *base = strrchr(o.data[i], '/');
        for (size_t j = 0; j < o.m_count; j++)
            for (size_t b = 0; b < o.backend_count; b++) {
                int none[N_BENCH] = {0};
                int r =
                    bench_m(ctx[b], &o, base ? base + 1 : o.data[i], data.v, data.n, o.m[j], none);
                rc = r ? r : rc;
            }
        series_free(&data);
    }
    if (any_sets) {
        tsm_ctx *dev_ctx = NULL;
        double copy_bw = 0;
        for (size_t b = 0; o.thrust && b < o.backend_count; b++)
            if (tsm_ctx_backend(ctx[b]) == TSM_BACKEND_CUDA)
                dev_ctx = ctx[b];
        if (o.thrust && !dev_ctx) {
            fail("--thrust needs the CUDA backend (--backend cuda)");
            rc = EX_USAGE;
        } else if (dev_ctx) {
            rc = sets_copy_bandwidth(dev_ctx, o.repeat, &copy_bw);
        }
        if (rc != EX_USAGE && rc != EX_SOFTWARE) {
            int r = sets_bench(ctx, o.backend_count, &o, dev_ctx, copy_bw);
            rc = r ? r : rc;
        }
    }
    tsm_ctx_destroy(&ctx[0]);
    tsm_ctx_destroy(&ctx[1]);
    return rc;
}
