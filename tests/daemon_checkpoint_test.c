/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_checkpoint_test.c - the crash-safe checkpoint file (daemon/state/state_files.h):
 * a failure at any step (a write past a file-size limit too) leaves the old file (or
 * none) and no temporary file; a refused file is moved aside, while one that could not
 * be read or is no regular file (FIFO, link, directory) stays in place, unread;
 * temporary files of interrupted writes are removed at
 * start; the state directory is resolved as documented. Then the restore path as the
 * daemon runs it (tsd_ckpt_read over tss_engine_load): a table of corrupt files, each
 * refused with its own reason, and random corruption for TSM_CKPT_FUZZ_S seconds
 * (default 10): every restore either loads a state the engine runs on, or refuses the
 * file, leaves the engine empty, says why and moves the file aside; nothing crashes
 * (the suite also runs under ASan and UBSan). */
#include "stream_testutil.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/state/state_files.h"
#include "engine_checkpoint.h"

static char dir[256];

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tsmine-ckpt-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes the string in user; fails after writing half of it when it starts with '!'. */
static int write_text(void *user, FILE *f, char *err, unsigned errlen) {
    const char *s = user;
    size_t n = strlen(s);
    if (s[0] == '!') {
        fwrite(s, 1, n / 2, f);
        snprintf(err, errlen, "simulated failure");
        return -1;
    }
    return fwrite(s, 1, n, f) == n ? 0 : -1;
}

/* Accepts a file that starts with "OK". */
static int read_ok(void *user, FILE *f, char *err, unsigned errlen) {
    char buf[3] = "";
    size_t n = fread(buf, 1, 2, f);
    if (user)
        *(int *)user = 1;
    if (n == 2 && buf[0] == 'O' && buf[1] == 'K')
        return 0;
    snprintf(err, errlen, "bad magic");
    return -1;
}

static void assert_content(const char *name, const char *want) {
    char path[512], buf[256] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_string_equal(buf, want);
}

/* Files in dir, not counting . and .. */
static int entries(void) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void test_write_replace_and_fail(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(tsd_ckpt_write(dir, "c", write_text, "OK first", err, sizeof err), 0);
    assert_content("c", "OK first");
    assert_int_equal(tsd_ckpt_write(dir, "c", write_text, "OK second", err, sizeof err), 0);
    assert_content("c", "OK second");
    assert_int_equal(entries(), 1);
    /* A failing writer: the old file stays, the temporary one is gone. */
    assert_int_equal(tsd_ckpt_write(dir, "c", write_text, "!broken content", err, sizeof err), -1);
    assert_non_null(strstr(err, "simulated failure"));
    assert_content("c", "OK second");
    assert_int_equal(entries(), 1);
    /* A first checkpoint that fails leaves nothing at all. */
    assert_int_equal(tsd_ckpt_write(dir, "d", write_text, "!x", err, sizeof err), -1);
    assert_int_equal(entries(), 1);
}

/* The rename step fails (the final name is a non-empty directory): the directory is
 * untouched and no temporary file is left. */
static void test_rename_failure(void **state) {
    (void)state;
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/blocked", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/blocked/inside", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(tsd_ckpt_write(dir, "blocked", write_text, "OK", err, sizeof err), -1);
    assert_non_null(strstr(err, "renaming"));
    struct stat st;
    snprintf(path, sizeof path, "%s/blocked", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(entries(), 1);
}

static void test_write_into_missing_dir(void **state) {
    (void)state;
    char missing[300], err[512];
    snprintf(missing, sizeof missing, "%s/nope", dir);
    assert_int_equal(tsd_ckpt_write(missing, "c", write_text, "OK", err, sizeof err), -1);
    assert_non_null(strstr(err, "temporary"));
}

static void test_read(void **state) {
    (void)state;
    char err[1024];
    int called = 0;
    assert_int_equal(tsd_ckpt_read(dir, "c", read_ok, &called, err, sizeof err), TSD_CKPT_NONE);
    assert_int_equal(called, 0);
    assert_int_equal(tsd_ckpt_write(dir, "c", write_text, "OK", err, sizeof err), 0);
    assert_int_equal(tsd_ckpt_read(dir, "c", read_ok, &called, err, sizeof err), TSD_CKPT_LOADED);
    assert_int_equal(called, 1);
    /* A refused file goes aside (replacing an older one) and the next start is clean. */
    for (int round = 0; round < 2; round++) {
        assert_int_equal(tsd_ckpt_write(dir, "c", write_text, "XX garbage", err, sizeof err), 0);
        assert_int_equal(tsd_ckpt_read(dir, "c", read_ok, NULL, err, sizeof err),
                         TSD_CKPT_REJECTED);
        assert_non_null(strstr(err, "bad magic"));
        assert_non_null(strstr(err, "c.rejected"));
        assert_content("c.rejected", "XX garbage");
        assert_int_equal(tsd_ckpt_read(dir, "c", read_ok, NULL, err, sizeof err), TSD_CKPT_NONE);
    }
}

/* A reader that fails as an I/O error would (not the content). */
static int read_eio(void *user, FILE *f, char *err, unsigned errlen) {
    (void)user, (void)f;
    snprintf(err, errlen, "reading: Input/output error");
    return TSD_CKPT_EIO;
}

/* What may hide a good checkpoint is never moved aside nor read past its type: a file
 * the reader could not read, a FIFO (opened without blocking), a symbolic link (not
 * followed, even to a good file), a directory. Each is UNREADABLE and left in place. */
static void test_read_unreadable(void **state) {
    (void)state;
    char err[2048], path[512], target[512];
    int called = 0;
    assert_int_equal(tsd_ckpt_write(dir, "c", write_text, "OK", err, sizeof err), 0);
    assert_int_equal(tsd_ckpt_read(dir, "c", read_eio, NULL, err, sizeof err), TSD_CKPT_UNREADABLE);
    assert_non_null(strstr(err, "Input/output error"));
    assert_non_null(strstr(err, "left in place"));
    assert_content("c", "OK");
    assert_int_equal(entries(), 1);

    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(tsd_ckpt_read(dir, "fifo", read_ok, &called, err, sizeof err),
                     TSD_CKPT_UNREADABLE);
    assert_non_null(strstr(err, "a FIFO"));
    assert_int_equal(called, 0);

    snprintf(target, sizeof target, "%s/c", dir);
    snprintf(path, sizeof path, "%s/link", dir);
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(tsd_ckpt_read(dir, "link", read_ok, &called, err, sizeof err),
                     TSD_CKPT_UNREADABLE);
    assert_non_null(strstr(err, "a symbolic link"));
    assert_int_equal(called, 0);
    assert_int_equal(symlink("/dev/zero", (snprintf(path, sizeof path, "%s/zero", dir), path)), 0);
    assert_int_equal(tsd_ckpt_read(dir, "zero", read_ok, &called, err, sizeof err),
                     TSD_CKPT_UNREADABLE);
    assert_int_equal(called, 0);

    snprintf(path, sizeof path, "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(tsd_ckpt_read(dir, "sub", read_ok, &called, err, sizeof err),
                     TSD_CKPT_UNREADABLE);
    assert_non_null(strstr(err, "a directory"));
    assert_int_equal(called, 0);
    assert_int_equal(entries(), 5); /* c, fifo, link, zero, sub: none moved */
}

/* A write past a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored as tsmined does) fails
 * with EFBIG, as a full disk fails with ENOSPC: the message names it, the old file
 * stays, no temporary file is left. */
static void test_write_errno(void **state) {
    (void)state;
    char err[1024];
    assert_int_equal(tsd_ckpt_write(dir, "c", write_text, "OK", err, sizeof err), 0);
    size_t n = 1 << 16;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, 'O', n);
    big[n] = '\0';
    struct rlimit old, small;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    small = old;
    small.rlim_cur = 4096;
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    int rc = tsd_ckpt_write(dir, "c", write_text, big, err, sizeof err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);
    free(big);
    assert_int_equal(rc, -1);
    if (!strstr(err, "File too large"))
        fail_msg("expected EFBIG named in \"%s\"", err);
    assert_non_null(strstr(err, "previous checkpoint is kept"));
    assert_content("c", "OK");
    assert_int_equal(entries(), 1);
}

static void test_resolve_dir(void **state) {
    (void)state;
    char out[512], msg[1024], missing[300];
    unsetenv("STATE_DIRECTORY");
    assert_int_equal(tsd_ckpt_resolve_dir("", 1, out, sizeof out, msg, sizeof msg), 0);
    assert_string_equal(out, "");
    assert_non_null(strstr(msg, "off"));
    assert_int_equal(tsd_ckpt_resolve_dir(dir, 1, out, sizeof out, msg, sizeof msg), 0);
    assert_string_equal(out, dir);
    assert_string_equal(msg, "");
    /* Missing: an error with a configuration file, a warning without one. */
    snprintf(missing, sizeof missing, "%s/missing", dir);
    assert_int_equal(tsd_ckpt_resolve_dir(missing, 1, out, sizeof out, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, missing));
    assert_int_equal(tsd_ckpt_resolve_dir(missing, 0, out, sizeof out, msg, sizeof msg), 0);
    assert_string_equal(out, "");
    assert_non_null(strstr(msg, "without checkpoints"));
    /* $STATE_DIRECTORY (first entry of a list) wins over the configured directory. */
    char env[700];
    snprintf(env, sizeof env, "%s:/somewhere/else", dir);
    setenv("STATE_DIRECTORY", env, 1);
    assert_int_equal(tsd_ckpt_resolve_dir(missing, 1, out, sizeof out, msg, sizeof msg), 0);
    assert_string_equal(out, dir);
    /* ... but state_dir = "" still means off. */
    assert_int_equal(tsd_ckpt_resolve_dir("", 1, out, sizeof out, msg, sizeof msg), 0);
    assert_string_equal(out, "");
    unsetenv("STATE_DIRECTORY");
}

/* Interrupted writes leave ".NAME.XXXXXX" files; the next read (a start) removes them
 * and nothing else. */
static void test_read_removes_stale_temps(void **state) {
    (void)state;
    char err[512], path[512];
    const char *names[] = {".c.a1b2c3", ".c.zzzzzz", ".c.short", ".d.a1b2c3", "c.a1b2c3"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
    }
    assert_int_equal(tsd_ckpt_write(dir, "c", write_text, "OK", err, sizeof err), 0);
    assert_int_equal(entries(), 6);
    assert_int_equal(tsd_ckpt_read(dir, "c", read_ok, NULL, err, sizeof err), TSD_CKPT_LOADED);
    assert_int_equal(entries(), 4); /* c, .c.short, .d.a1b2c3, c.a1b2c3 */
    snprintf(path, sizeof path, "%s/.c.short", dir);
    assert_int_equal(access(path, F_OK), 0);
    assert_content("c", "OK");
}

/* ---- the restore path over the real engine ---------------------------------------- */

static int save_engine(void *user, FILE *f, char *err, unsigned errlen) {
    return tss_engine_save(user, f, err, errlen);
}

static int load_engine(void *user, FILE *f, char *err, unsigned errlen) {
    return tss_engine_load(user, f, err, errlen);
}

/* Parameters of the three streams (small windows: many fields per byte to corrupt):
 * a scores (calibrated), b by a fixed range, c chooses its m automatically. */
static void ckpt_env(st_env *env) {
    tss_params p = tss_params_default();
    p.window = 48, p.subsequence = 6, p.hop = 12, p.warmup = 24;
    st_env_add(env, "a", p);
    p.range = 2.5;
    st_env_add(env, "b", p);
    p.window = 32, p.hop = 32, p.range = NAN, p.subsequence = 0;
    st_env_add(env, "c", p);
}

/* Sets up env (ckpt_env) and returns the checkpoint file of an engine in the middle
 * of its streams (full windows, a score history, events and published spans, an
 * automatic m, staged samples and a pending gap), written by tsd_ckpt_write: its *len
 * bytes, malloc'ed, and in *scratch a buffer of *len + 64 bytes for corrupt copies. */
static unsigned char *engine_checkpoint(st_env *env, size_t *len, unsigned char **scratch) {
    ckpt_env(env);
    tss_engine *e = st_engine(env, 1, 8);
    st_input in[3] = {st_make_input("a", 300, 0, 200, 7), st_make_input("b", 200, 0, 0, 0),
                      st_make_input("c", 90, 5, 0, 0)};
    st_feed(e, in, 3, 9, 0.5);
    tss_stream_info a, b, c;
    assert_int_equal(tss_engine_stream_find(e, "a", &a), 0);
    assert_int_equal(tss_engine_stream_find(e, "b", &b), 0);
    assert_int_equal(tss_engine_stream_find(e, "c", &c), 0);
    assert_true(a.calibrated);                     /* a score history to save */
    assert_true(b.events > 0);                     /* events by range, their spans published */
    assert_int_not_equal(c.params.subsequence, 0); /* an automatic m chosen */
    uint64_t seq = in[0].seq[299] + 4;             /* staged, after a gap */
    assert_int_equal(
        tss_engine_ingest(e, "a", seq, NULL, (int64_t)seq * ST_PERIOD, ST_PERIOD, in[0].v, 5),
        TSS_OK);
    char err[512], path[512];
    if (tsd_ckpt_write(dir, "s", save_engine, e, err, sizeof err) != 0)
        fail_msg("%s", err);
    tss_engine_destroy(&e);
    for (int k = 0; k < 3; k++)
        st_input_free(&in[k]);
    snprintf(path, sizeof path, "%s/s", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *buf = malloc(1 << 20);
    assert_non_null(buf);
    *len = fread(buf, 1, (1 << 20) - 64, f);
    assert_true(feof(f) && *len > 100);
    fclose(f);
    *scratch = malloc(*len + 64);
    assert_non_null(*scratch);
    return buf;
}

/* Writes n bytes as dir/s and restores them as tsmined does, into a fresh engine.
 * LOADED: the engine takes samples and ticks. REJECTED: the engine is empty, err says
 * why, the file went aside byte for byte and a second start finds none. */
static tsd_ckpt_result restore_bytes(st_env *env, const unsigned char *b, size_t n, char *err,
                                     size_t errlen) {
    char path[512], aside[600];
    snprintf(path, sizeof path, "%s/s", dir);
    snprintf(aside, sizeof aside, "%s.rejected", path);
    /* new files each time: ext4 flushes a file truncated or renamed over an old one */
    unlink(path);
    unlink(aside);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    tss_engine *e = st_engine(env, 1, 8);
    err[0] = '\0';
    tsd_ckpt_result rc = tsd_ckpt_read(dir, "s", load_engine, e, err, errlen);
    if (rc == TSD_CKPT_LOADED) {
        double v[8] = {1, 3, 2, 5, 4, 4, 7, 1};
        for (size_t k = 0; k < tss_engine_stream_count(e); k++) {
            tss_stream_info info;
            assert_int_equal(tss_engine_stream_at(e, k, &info), 0);
            tss_engine_ingest(e, info.id, info.next_seq, NULL, INT64_MAX / 2, 1, v, 8);
        }
        char why[512];
        tss_engine_tick(e, why, sizeof why);
    } else {
        assert_int_equal(rc, TSD_CKPT_REJECTED);
        assert_int_equal(tss_engine_stream_count(e), 0);
        assert_int_equal(tss_engine_pending(e), 0);
        assert_non_null(strstr(err, "s.rejected"));
        assert_int_equal(access(path, F_OK), -1);
        f = fopen(aside, "rb");
        assert_non_null(f);
        unsigned char *got = malloc(n + 1);
        assert_non_null(got);
        assert_int_equal(fread(got, 1, n + 1, f), n);
        fclose(f);
        assert_memory_equal(got, b, n);
        free(got);
        char again[512];
        assert_int_equal(tsd_ckpt_read(dir, "s", load_engine, e, again, sizeof again),
                         TSD_CKPT_NONE);
    }
    tss_engine_destroy(&e);
    return rc;
}

static void put_le(unsigned char *b, uint64_t v, int nbytes) {
    for (int k = 0; k < nbytes; k++)
        b[k] = (unsigned char)(v >> (8 * k));
}

/* Each corrupt case edits a copy of the intact file (b, *n) in place. Offsets: magic
 * 0..7, version 8..11, group 12..15, first record: creation index 16..23, id length
 * 24..27, its id at 28; the record count is the payload's last 4 bytes (n - 16). */
static void edit_empty(unsigned char *b, size_t *n) {
    (void)b, *n = 0;
}
static void edit_short_header(unsigned char *b, size_t *n) {
    (void)b, *n = 10;
}
static void edit_magic(unsigned char *b, size_t *n) {
    (void)n, b[0] = 'X';
}
static void edit_version(unsigned char *b, size_t *n) {
    put_le(b + 8, 7, 4), st_ckpt_fix_crc(b, *n);
}
static void edit_old_version(unsigned char *b, size_t *n) {
    put_le(b + 8, 1, 4), st_ckpt_fix_crc(b, *n);
}
static void edit_truncate_half(unsigned char *b, size_t *n) {
    (void)b, *n /= 2;
}
static void edit_truncate_tail(unsigned char *b, size_t *n) {
    (void)b, *n -= 1;
}
static void edit_checksum(unsigned char *b, size_t *n) {
    b[*n - 1] ^= 0x5a;
}
static void edit_length_field(unsigned char *b, size_t *n) {
    put_le(b + *n - 12, *n, 8);
}
static void edit_count_over_limit(unsigned char *b, size_t *n) {
    put_le(b + *n - 16, 1000, 4), st_ckpt_fix_crc(b, *n);
}
static void edit_count_short(unsigned char *b, size_t *n) {
    put_le(b + *n - 16, 2, 4), st_ckpt_fix_crc(b, *n);
}
static void edit_group(unsigned char *b, size_t *n) {
    put_le(b + 12, 7, 4), st_ckpt_fix_crc(b, *n); /* no stream "a", "b", "c" is in group 7 */
}
static void edit_id_length(unsigned char *b, size_t *n) {
    put_le(b + 24, 0, 4), st_ckpt_fix_crc(b, *n);
}
static void edit_id_char(unsigned char *b, size_t *n) {
    b[28] = 0x07, st_ckpt_fix_crc(b, *n);
}
static void edit_stray_bytes(unsigned char *b, size_t *n) {
    memmove(b + *n - 4, b + *n - 12, 12); /* 8 zero bytes before the length field */
    memset(b + *n - 12, 0, 8);
    *n += 8;
    put_le(b + *n - 12, *n - 28, 8);
    st_ckpt_fix_crc(b, *n);
}

static void test_restore_corrupt_table(void **state) {
    (void)state;
    tu_case_seed(5);
    static const struct {
        const char *name;
        void (*edit)(unsigned char *b, size_t *n);
        const char *reason;
    } cases[] = {
        {"empty file", edit_empty, "not a tsmine stream checkpoint (0 bytes)"},
        {"short header", edit_short_header, "not a tsmine stream checkpoint (10 bytes)"},
        {"wrong magic", edit_magic, "not a tsmine stream checkpoint"},
        {"newer version", edit_version, "version 7, this build reads versions 4 to 6"},
        {"older version (before events)", edit_old_version,
         "version 1, this build reads versions 4 to 6"},
        {"truncated to half", edit_truncate_half, "length or checksum mismatch"},
        {"truncated by one byte", edit_truncate_tail, "length or checksum mismatch"},
        {"bad checksum", edit_checksum, "length or checksum mismatch"},
        {"wrong length field", edit_length_field, "length or checksum mismatch"},
        {"record count over the records", edit_count_over_limit,
         "3 stream records, the file says 1000"},
        {"record count under the records", edit_count_short, "3 stream records, the file says 2"},
        {"another group's file", edit_group, "belongs to group"},
        {"zero id length", edit_id_length, "stream 0: bad id length 0"},
        {"unprintable id", edit_id_char, "stream 0: id is not printable"},
        {"stray bytes", edit_stray_bytes, "stream 3: bad id length 0"},
    };
    st_env env = {0};
    size_t len;
    unsigned char *bad, *good = engine_checkpoint(&env, &len, &bad);
    char err[1024];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        size_t n = len;
        memcpy(bad, good, len);
        cases[k].edit(bad, &n);
        if (restore_bytes(&env, bad, n, err, sizeof err) != TSD_CKPT_REJECTED)
            fail_msg("%s: loaded", cases[k].name);
        if (!strstr(err, cases[k].reason))
            fail_msg("%s: expected \"%s\" in \"%s\"", cases[k].name, cases[k].reason, err);
    }
    assert_int_equal(restore_bytes(&env, good, len, err, sizeof err), TSD_CKPT_LOADED);
    free(bad);
    free(good);
    st_env_free(&env);
}

/* One random corruption of the intact file (good, len) into b; returns the new size
 * and sets *must_fail when the framing has to refuse it (the CRC was not redone). */
static size_t corrupt(const unsigned char *good, size_t len, unsigned char *b, int *must_fail) {
    memcpy(b, good, len);
    size_t n = len;
    int kind = (int)(tu_uniform() * 4);
    *must_fail = kind < 2;
    if (kind == 1) /* a cut anywhere */
        n = (size_t)(tu_uniform() * (double)len);
    int flips = 1 + (int)(tu_uniform() * 6);
    for (int f = 0; f < flips && n > 0; f++)
        b[(size_t)(tu_uniform() * (double)n)] ^= (unsigned char)(1 + tu_uniform() * 255);
    if (kind == 3) { /* an extreme value in an aligned word of the payload */
        static const uint64_t extreme[] = {
            0, 1, 0xff, 0x7fffffff, 0xffffffff, UINT64_MAX, 0x7ff8000000000000ull /* NaN */};
        size_t at = 12 + 4 * (size_t)(tu_uniform() * (double)((len - 32) / 4));
        put_le(b + at, extreme[(int)(tu_uniform() * 7)], tu_uniform() < 0.5 ? 4 : 8);
    }
    if (kind >= 2 && n >= 24)
        st_ckpt_fix_crc(b, n);
    return n;
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Random corruption for TSM_CKPT_FUZZ_S seconds (default 10): the time bounds the run,
 * the assertions hold for every restore. */
static void test_restore_random_corruption(void **state) {
    (void)state;
    tu_case_seed(0xc0ffee);
    const char *env_s = getenv("TSM_CKPT_FUZZ_S");
    double budget = env_s && *env_s ? atof(env_s) : 10.0;
    st_env env = {0};
    size_t len;
    unsigned char *bad, *good = engine_checkpoint(&env, &len, &bad);
    char err[1024];
    unsigned long tries = 0, loaded = 0, framing = 0, fields = 0;
    double end = seconds_now() + budget;
    do {
        int must_fail;
        size_t n = corrupt(good, len, bad, &must_fail);
        tsd_ckpt_result rc = restore_bytes(&env, bad, n, err, sizeof err);
        if (rc == TSD_CKPT_LOADED && must_fail)
            fail_msg("seed %llu, try %lu: a file with a bad checksum loaded",
                     (unsigned long long)tu_seed, tries);
        loaded += rc == TSD_CKPT_LOADED;
        framing += rc != TSD_CKPT_LOADED && !strstr(err, "checkpoint: stream ");
        fields += rc != TSD_CKPT_LOADED && strstr(err, "checkpoint: stream ") != NULL;
        tries++;
    } while (seconds_now() < end);
    printf("# %lu corrupt restores in %.0f s: %lu loaded (a valid state), %lu refused by the "
           "framing, %lu by the field checks\n",
           tries, budget, loaded, framing, fields);
    assert_true(framing > 0 && fields > 0);
    free(bad);
    free(good);
    st_env_free(&env);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_replace_and_fail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_into_missing_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_unreadable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_errno, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_removes_stale_temps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_corrupt_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_random_corruption, setup, teardown),
    };
    return cmocka_run_group_tests_name("daemon_checkpoint", tests, NULL, NULL);
}
