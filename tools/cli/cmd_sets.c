/* SPDX-License-Identifier: Apache-2.0 */
/* cmd_sets.c - `tsmine sets intersect|union|difference|symdiff A B [-o OUT]`: operations
 * on sorted multisets of unsigned integers (kernels/sets, DESIGN 4.5).
 *
 * Inputs: text, one unsigned decimal integer per line (blank lines are skipped), or raw
 * little-endian .u32 / .u64 files (by extension); - reads text from standard input.
 * Keys are 32 or 64 bits wide: --key-width, else 64 when a .u64 file is involved, 32
 * when only .u32 files are, 64 for text alone. Inputs must be non-decreasing; the first
 * descent is reported with its file, element index and line (or byte offset).
 * Output: OUT's format by its extension (.u32, .u64, else text), text on standard
 * output without -o. */
#include "cli.h"
#include "commands.h"
#include "sets.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>

typedef enum { KEYS_TEXT, KEYS_U32, KEYS_U64 } key_format;

/* The format of a file by its extension: .u32, .u64 (any case), else text. */
static key_format format_of(const char *path) {
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && slash > dot))
        return KEYS_TEXT;
    if (strcasecmp(dot, ".u32") == 0)
        return KEYS_U32;
    if (strcasecmp(dot, ".u64") == 0)
        return KEYS_U64;
    return KEYS_TEXT;
}

/* Keys read from one input, at the working width (v32 or v64 is set). */
typedef struct {
    const char *path;
    key_format fmt;
    unsigned char *raw; /* the file's bytes (text inputs keep them for line numbers) */
    size_t rawlen;
    uint32_t *v32;
    uint64_t *v64;
    size_t n;
    progress_line *prog; /* the command's progress line: text parsing reports to it */
    const char *stage;   /* its stage while this input is parsed: "reading A" */
} keys;

static void keys_free(keys *k) {
    free(k->raw);
    free(k->v32);
    free(k->v64);
    k->raw = NULL, k->v32 = NULL, k->v64 = NULL;
}

static uint64_t key_at(const keys *k, size_t i) {
    return k->v32 ? k->v32[i] : k->v64[i];
}

/* Appends v to the growing array (capacity doubles). -1 when out of memory. */
static int push(uint64_t **v, size_t *n, size_t *cap, uint64_t x) {
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 4096;
        uint64_t *nv = realloc(*v, ncap * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv, *cap = ncap;
    }
    (*v)[(*n)++] = x;
    return 0;
}

/* Parses text keys, one unsigned decimal per line (blanks and a CR around it allowed,
 * blank lines skipped), each at most max. Returns 0, or the exit status after printing
 * "FILE:LINE: what". O(bytes). */
static int parse_text(keys *k, uint64_t max, int width) {
    const char *p = (const char *)k->raw, *end = p + k->rawlen;
    uint64_t *v = NULL;
    size_t n = 0, cap = 0, line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end, *s = p;
        line++;
        p = nl ? nl + 1 : end;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
            e--;
        if ((line & 0xfffff) == 0) /* every 2^20 lines: bytes parsed, of all */
            progress_update(k->prog, k->stage, (uint64_t)(p - (const char *)k->raw), k->rawlen);
        if (s == e)
            continue;
        uint64_t x = 0;
        const char *q = s;
        int range = 0;
        for (; q < e && *q >= '0' && *q <= '9'; q++) {
            unsigned d = (unsigned)(*q - '0');
            if (x > (max - d) / 10)
                range = 1;
            x = x * 10 + d;
        }
        if (q != e || range) {
            int len = (int)(e - s > 40 ? 40 : e - s);
            if (q != e)
                cli_error("%s:%zu: not an unsigned integer: \"%.*s\"", k->path, line, len, s);
            else
                cli_error("%s:%zu: %.*s does not fit %d-bit keys%s", k->path, line, len, s, width,
                          width == 32 ? " (see --key-width)" : "");
            free(v);
            return EX_DATAERR;
        }
        if (push(&v, &n, &cap, x) != 0) {
            cli_error("%s: out of memory after %zu keys", k->path, n);
            free(v);
            return EX_SOFTWARE;
        }
    }
    k->n = n;
    if (width == 64) {
        k->v64 = v ? v : malloc(sizeof *v);
        if (!k->v64)
            cli_error("%s: out of memory", k->path);
        return k->v64 ? 0 : EX_SOFTWARE;
    }
    k->v32 = malloc((n ? n : 1) * sizeof *k->v32);
    if (!k->v32) {
        free(v);
        cli_error("%s: out of memory for %zu keys", k->path, n);
        return EX_SOFTWARE;
    }
    for (size_t i = 0; i < n; i++)
        k->v32[i] = (uint32_t)v[i];
    free(v);
    return 0;
}

/* Decodes a raw little-endian .u32/.u64 file into keys of the working width (widening,
 * or narrowing with a range check). Returns 0 or the exit status after printing. */
static int decode_raw(keys *k, int width) {
    size_t item = k->fmt == KEYS_U32 ? 4 : 8;
    if (k->rawlen % item != 0) {
        cli_error("%s: size %zu bytes is not a multiple of %zu (raw little-endian uint%zu)",
                  k->path, k->rawlen, item, item * 8);
        return EX_DATAERR;
    }
    size_t n = k->rawlen / item;
    const unsigned char *b = k->raw;
    k->n = n;
    if (width == 32)
        k->v32 = malloc((n ? n : 1) * 4);
    else
        k->v64 = malloc((n ? n : 1) * 8);
    if (!k->v32 && !k->v64) {
        cli_error("%s: out of memory for %zu keys", k->path, n);
        return EX_SOFTWARE;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t x = 0;
        for (size_t q = item; q-- > 0;)
            x = x << 8 | b[i * item + q];
        if (width == 32 && x > UINT32_MAX) {
            cli_error("%s: element %zu = %" PRIu64 " does not fit 32-bit keys (see --key-width)",
                      k->path, i, x);
            return EX_DATAERR;
        }
        if (width == 32)
            k->v32[i] = (uint32_t)x;
        else
            k->v64[i] = x;
    }
    return 0;
}

/* The line of text holding key number i (0-based), for messages. O(bytes). */
static size_t line_of(const keys *k, size_t i) {
    const char *p = (const char *)k->raw, *end = p + k->rawlen;
    size_t line = 0, seen = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
        line++;
        int blank = 1;
        for (const char *s = p; s < e && blank; s++)
            blank = *s == ' ' || *s == '\t' || *s == '\r';
        if (!blank && seen++ == i)
            return line;
        p = nl ? nl + 1 : end;
    }
    return line;
}

/* Reads one input at the working width (text parsing reported to the session's
 * progress line as stage) and checks that it is sorted. Returns 0 or the exit status
 * after printing why. */
static int read_keys(cli_session *ss, const char *stage, const char *path, int width, keys *k) {
    char err[512];
    tsm_ctx *ctx = ss->ctx;
    k->prog = &ss->prog, k->stage = stage;
    k->path = strcmp(path, "-") == 0 ? "<stdin>" : path;
    k->fmt = format_of(path);
    int rc = cli_input_status(series_read_bytes(path, &k->raw, &k->rawlen, err, sizeof err), err);
    if (rc != 0)
        return rc;
    rc = k->fmt == KEYS_TEXT ? parse_text(k, width == 32 ? UINT32_MAX : UINT64_MAX, width)
                             : decode_raw(k, width);
    if (rc != 0)
        return rc;
    size_t at = k->n;
    tsm_status st = k->v32 ? tsm_first_descent_u32(ctx, k->v32, k->n, &at)
                           : tsm_first_descent_u64(ctx, k->v64, k->n, &at);
    if (st != TSM_OK)
        return cli_fail_status(ctx, st);
    if (at < k->n) {
        uint64_t x = key_at(k, at), prev = key_at(k, at - 1);
        if (k->fmt == KEYS_TEXT)
            cli_error("%s:%zu: not sorted: element %zu is %" PRIu64 ", less than %" PRIu64
                      " before it (inputs must be non-decreasing)",
                      k->path, line_of(k, at), at, x, prev);
        else
            cli_error("%s: not sorted: element %zu (byte offset %zu) is %" PRIu64
                      ", less than %" PRIu64 " before it (inputs must be non-decreasing)",
                      k->path, at, at * (k->fmt == KEYS_U32 ? 4 : 8), x, prev);
        return EX_DATAERR;
    }
    if (k->fmt == KEYS_TEXT) { /* the text is no longer needed */
        free(k->raw);
        k->raw = NULL;
    }
    return 0;
}

/* Writes n keys (v32 or v64) to f in format fmt: raw little-endian, or one decimal per
 * line through a buffer. Returns 0, -1 on a write error, -2 when a key does not fit
 * the 32-bit output (*bad = its index). */
static int write_keys(FILE *f, key_format fmt, const uint32_t *v32, const uint64_t *v64, size_t n,
                      size_t *bad) {
    static char buf[1 << 16];
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = v32 ? v32[i] : v64[i];
        if (sizeof buf - used < 24) {
            if (fwrite(buf, 1, used, f) != used)
                return -1;
            used = 0;
        }
        if (fmt == KEYS_TEXT) {
            char digits[24];
            int d = 0;
            do
                digits[d++] = (char)('0' + x % 10);
            while ((x /= 10) != 0);
            while (d > 0)
                buf[used++] = digits[--d];
            buf[used++] = '\n';
        } else {
            size_t item = fmt == KEYS_U32 ? 4 : 8;
            if (item == 4 && x > UINT32_MAX) {
                *bad = i;
                return -2;
            }
            for (size_t q = 0; q < item; q++, x >>= 8)
                buf[used++] = (char)(x & 0xff);
        }
    }
    if (used && fwrite(buf, 1, used, f) != used)
        return -1;
    return fflush(f) == 0 ? 0 : -1;
}

/* The working key width: --key-width, else 64 when any file is .u64, 32 when the binary
 * files are all .u32, 64 when all is text. */
static int working_width(const cli_args *a) {
    if (a->key_width)
        return a->key_width;
    int any32 = 0, any64 = 0;
    const char *files[3] = {a->operand[1], a->operand[2], a->output};
    for (int q = 0; q < 3; q++) {
        if (!files[q])
            continue;
        key_format f = format_of(files[q]);
        any32 |= f == KEYS_U32, any64 |= f == KEYS_U64;
    }
    return any64 || !any32 ? 64 : 32;
}

/* Reads A and B, computes the operation and writes the result. */
static int run(const cli_args *a, cli_session *s) {
    tsm_set_op op;
    if (tsm_set_op_parse(a->operand[0], &op) != 0) {
        cli_error("sets: unknown operation '%s' (intersect, union, difference or symdiff)",
                  a->operand[0]);
        return EX_USAGE;
    }
    if (strcmp(a->operand[1], "-") == 0 && strcmp(a->operand[2], "-") == 0) {
        cli_error("sets: only one of A and B can be standard input");
        return EX_USAGE;
    }
    int width = working_width(a), rc;
    keys ka = {0}, kb = {0};
    uint32_t *o32 = NULL;
    uint64_t *o64 = NULL;
    FILE *f = stdout;
    key_format ofmt = a->output && strcmp(a->output, "-") != 0 ? format_of(a->output) : KEYS_TEXT;
    double t0 = cli_now();
    if ((rc = read_keys(s, "reading A", a->operand[1], width, &ka)) != 0 ||
        (rc = read_keys(s, "reading B", a->operand[2], width, &kb)) != 0)
        goto done;
    double t1 = cli_now();

    /* Room for the largest result: pages never written are never touched. */
    size_t cap = tsm_set_bound(op, ka.n, kb.n), count = 0;
    if (width == 32)
        o32 = malloc((cap ? cap : 1) * sizeof *o32);
    else
        o64 = malloc((cap ? cap : 1) * sizeof *o64);
    if (!o32 && !o64) {
        cli_error("sets: out of memory for %zu result keys", cap);
        rc = EX_SOFTWARE;
        goto done;
    }
    tsm_status st = width == 32
                        ? tsm_set_u32(s->ctx, op, ka.v32, ka.n, kb.v32, kb.n, o32, cap, &count)
                        : tsm_set_u64(s->ctx, op, ka.v64, ka.n, kb.v64, kb.n, o64, cap, &count);
    if (st != TSM_OK) {
        rc = cli_fail_status(s->ctx, st);
        goto done;
    }
    double t2 = cli_now();
    cli_progress_end(s);
    if (a->verbose)
        cli_error("sets: %s of %zu and %zu %d-bit keys: %zu keys; reading %.3f s, computing "
                  "%.3f s",
                  tsm_set_op_name(op), ka.n, kb.n, width, count, t1 - t0, t2 - t1);

    if (a->output && strcmp(a->output, "-") != 0) {
        f = fopen(a->output, "wb");
        if (!f) {
            cli_error("%s: %s", a->output, strerror(errno));
            f = stdout;
            rc = EX_CANTCREAT;
            goto done;
        }
    }
    size_t bad = 0;
    int w = write_keys(f, ofmt, o32, o64, count, &bad);
    if (f != stdout && fclose(f) != 0 && w == 0)
        w = -1;
    if (f != stdout && w != 0)
        remove(a->output); /* no partial result left behind */
    f = stdout;
    if (w == -2) {
        cli_error("%s: result element %zu = %" PRIu64 " does not fit 32-bit keys", a->output, bad,
                  o32 ? o32[bad] : o64[bad]);
        rc = EX_DATAERR;
    } else if (w != 0) {
        cli_error("writing %s: %s", a->output ? a->output : "the output", strerror(errno));
        rc = EX_IOERR;
    }
done:
    if (f != stdout)
        fclose(f);
    keys_free(&ka);
    keys_free(&kb);
    free(o32);
    free(o64);
    return rc;
}

const cli_command cmd_sets = {
    .name = "sets",
    .synopsis = "intersect|union|difference|symdiff A B [-o OUT] [OPTIONS]",
    .summary = "intersect, union, difference, symdiff of sorted integer multisets",
    .description =
        "Computes an operation on two sorted multisets of unsigned integers (a key of\n"
        "multiplicity c appears c times) and prints the sorted result. For a key with ca\n"
        "copies in A and cb in B: intersect keeps min(ca, cb), union max(ca, cb),\n"
        "difference (A minus B) max(0, ca - cb), symdiff |ca - cb| (C++ std::set_*).\n\n"
        "A and B are text, one unsigned integer per line (blank lines are skipped; - is\n"
        "standard input), or raw little-endian .u32 / .u64 files. They must be sorted\n"
        "(non-decreasing); the first descent is reported with its element index and line\n"
        "(or byte offset), exit 65. The result goes to OUT in the format of its extension\n"
        "(.u32, .u64, else text), or as text to standard output. Keys are 32 or 64 bits:\n"
        "--key-width, else 64 with a .u64 file, 32 with only .u32 files, 64 for text.",
    .options = CLI_NO_SERIES | CLI_OPT_OUTPUT | CLI_OPT_WIDTH,
    .operands = 3,
    .run = run,
};
