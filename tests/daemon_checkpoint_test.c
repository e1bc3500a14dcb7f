/* daemon_checkpoint_test.c - the crash-safe checkpoint file (daemon/checkpoint.h):
 * a failure at any step leaves the old file (or none) and no temporary file; a
 * refused file is moved aside; the state directory is resolved as documented. */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_replace_and_fail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_into_missing_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_dir, setup, teardown),
    };
    return cmocka_run_group_tests_name("daemon_checkpoint", tests, NULL, NULL);
}
