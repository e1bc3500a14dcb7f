/* SPDX-License-Identifier: Apache-2.0 */
/* daemon_security_test.c - CURVE key files (lib/curve_key.h) and the daemon's CURVE
 * authentication (daemon/guard/security.h): the reader's verdict on good and malformed
 * files, the allow-list's start errors, and real libzmq sockets on loopback: an
 * allowed client gets through, an unknown key and a plain client do not and are
 * counted, a socket without a ZAP handler in its context refuses, and a reload keeps
 * the allow-list in force unless the new one is valid. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "daemon/guard/security.h"
#include "lib/curve_key.h"

static char tmp[256];

/* tmp/name, in a static buffer (one at a time). */
static const char *at(const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    return path;
}

static void write_file(const char *name, const char *text) {
    FILE *f = fopen(at(name), "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state) {
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/tsmine-security-test.XXXXXX");
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- key files ---- */

typedef struct {
    const char *text; /* NULL: the file does not exist */
    int need_secret;
    int rc;
    const char *want; /* in the message */
} key_case;

static void test_key_files(void **state) {
    (void)state;
    tsm_curve_key made, got;
    char err[1024];
    assert_int_equal(tsm_curve_keygen(at("k"), &made, err, sizeof err), 0);
    /* keygen's files: mode 0600 for the secret, read back as written */
    struct stat st;
    assert_int_equal(stat(at("k.key_secret"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(tsm_curve_key_read(at("k.key"), 0, &got, err, sizeof err), 0);
    assert_string_equal(got.public_txt, made.public_txt);
    assert_string_equal(got.secret_txt, "");
    assert_int_equal(tsm_curve_key_read(at("k.key_secret"), 1, &got, err, sizeof err), 0);
    assert_string_equal(got.secret_txt, made.secret_txt);
    /* never overwrites, and leaves the existing pair alone */
    assert_int_equal(tsm_curve_keygen(at("k"), &got, err, sizeof err), TSM_CURVE_KEY_EOPEN);
    assert_non_null(strstr(err, "k.key: cannot create: File exists"));
    assert_int_equal(tsm_curve_key_read(at("k.key_secret"), 1, &got, err, sizeof err), 0);
    assert_string_equal(got.public_txt, made.public_txt);

    char good_pub[200], good_both[300], wrong_secret[300];
    snprintf(good_pub, sizeof good_pub,
             "# comment\nmetadata\n    name = \"x\"\ncurve\n"
             "    public-key = \"%s\"\n",
             made.public_txt);
    snprintf(good_both, sizeof good_both,
             "curve\r\n\tpublic-key = \"%s\"\r\n\tsecret-key = \"%s\"\r\n", made.public_txt,
             made.secret_txt);
    tsm_curve_key other;
    assert_int_equal(tsm_curve_keygen(at("o"), &other, err, sizeof err), 0);
    snprintf(wrong_secret, sizeof wrong_secret,
             "curve\n    public-key = \"%s\"\n"
             "    secret-key = \"%s\"\n",
             made.public_txt, other.secret_txt);
    const key_case cases[] = {
        {good_pub, 0, 0, ""},
        {good_both, 1, 0, ""}, /* CRLF and tabs */
        {good_pub, 1, TSM_CURVE_KEY_EFORMAT, "no curve secret-key: a public key file"},
        {NULL, 0, TSM_CURVE_KEY_EOPEN, "cannot open: No such file"},
        {"", 0, TSM_CURVE_KEY_EFORMAT, "no curve public-key: not a key file"},
        {"hello world\n", 0, TSM_CURVE_KEY_EFORMAT, "no curve public-key"},
        {"curve\n    public-key = \"abc\"\n", 0, TSM_CURVE_KEY_EFORMAT,
         ":2: public-key: expected 40 Z85 characters"},
        {"curve\n    public-key = \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\"\n", 0,
         TSM_CURVE_KEY_EFORMAT, ":2: public-key: expected 40"}, /* '"' is not Z85 */
        {"curve\n    public-key = \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa~\"\n", 0,
         TSM_CURVE_KEY_EFORMAT, ":2: public-key: expected 40"}, /* '~' is not Z85 */
        {"curve\n    public-key = \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", 0,
         TSM_CURVE_KEY_EFORMAT, ":2: public-key: expected 40"}, /* quote not closed */
        {"metadata\n    public-key = \"abc\"\n", 0, TSM_CURVE_KEY_EFORMAT,
         "no curve public-key"}, /* only keys under `curve` count */
        {wrong_secret, 1, TSM_CURVE_KEY_EFORMAT, "secret-key does not belong to the public-key"},
        /* metadata streams (security.curve.stream_owners) */
        {"metadata\n    streams = \"a, , b\"\n", 0, TSM_CURVE_KEY_EFORMAT,
         ":2: streams: an empty pattern"},
        {"metadata\n    streams = \"a\"\n    streams = \"b\"\n", 0, TSM_CURVE_KEY_EFORMAT,
         ":3: streams given twice"},
        {"metadata\n    streams = \"a\tb\"\n", 0, TSM_CURVE_KEY_EFORMAT,
         ":2: streams: a pattern with a byte that no stream id holds"},
        {"metadata\n    streams = \"a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y,z,0,1,2,3,4,"
         "5,6\"\n",
         0, TSM_CURVE_KEY_EFORMAT, ":2: streams: more than 32 patterns"},
        {"metadata\n    streams = \"a\n", 0, TSM_CURVE_KEY_EFORMAT,
         ":2: streams: expected stream id patterns in double quotes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unlink(at("case"));
        if (cases[i].text)
            write_file("case", cases[i].text);
        memset(err, 0, sizeof err);
        int rc = tsm_curve_key_read(at("case"), cases[i].need_secret, &got, err, sizeof err);
        if (rc != cases[i].rc || !strstr(err, cases[i].want) || (rc && !strstr(err, at("case"))))
            fail_msg("case %zu: rc %d (want %d), message \"%s\" (want \"%s\" and the path)", i, rc,
                     cases[i].rc, err, cases[i].want);
    }
    /* streams: the patterns, trimmed, in order; "" names none; a bare word works too */
    char with_streams[400];
    snprintf(with_streams, sizeof with_streams,
             "metadata\n    name = \"k\"\n    streams = \" a/* ,b?[,] , c \"\ncurve\n"
             "    public-key = \"%s\"\n",
             made.public_txt);
    write_file("case", with_streams);
    assert_int_equal(tsm_curve_key_read(at("case"), 0, &got, err, sizeof err), 0);
    assert_int_equal(got.has_streams, 1);
    assert_memory_equal(got.streams, "a/*\0b?[,]\0c\0", 13); /* and the final "" */
    snprintf(with_streams, sizeof with_streams,
             "metadata\n    streams = \"\"\ncurve\n    public-key = \"%s\"\n", made.public_txt);
    write_file("case", with_streams);
    assert_int_equal(tsm_curve_key_read(at("case"), 0, &got, err, sizeof err), 0);
    assert_int_equal(got.has_streams, 1);
    assert_int_equal(got.streams[0], '\0');
    assert_int_equal(tsm_curve_key_read(at("k.key"), 0, &got, err, sizeof err), 0);
    assert_int_equal(got.has_streams, 0);
    /* not a regular file: refused without blocking (a FIFO would block an open) */
    unlink(at("case"));
    assert_int_equal(mkfifo(at("case"), 0600), 0);
    assert_int_equal(tsm_curve_key_read(at("case"), 0, &got, err, sizeof err),
                     TSM_CURVE_KEY_ENOTREG);
    assert_non_null(strstr(err, "not a regular file (a FIFO)"));
    unlink(at("case"));
    assert_int_equal(tsm_curve_key_read(tmp, 0, &got, err, sizeof err), TSM_CURVE_KEY_ENOTREG);
    assert_non_null(strstr(err, "not a regular file (a directory)"));
    /* binary data and a huge file */
    FILE *f = fopen(at("case"), "wb");
    fwrite("curve\n\0\1\2", 1, 9, f);
    fclose(f);
    assert_int_equal(tsm_curve_key_read(at("case"), 0, &got, err, sizeof err),
                     TSM_CURVE_KEY_EFORMAT);
    assert_non_null(strstr(err, "binary data"));
    f = fopen(at("case"), "w");
    for (int i = 0; i < 70000; i++)
        fputc('#', f);
    fclose(f);
    assert_int_equal(tsm_curve_key_read(at("case"), 0, &got, err, sizeof err),
                     TSM_CURVE_KEY_EFORMAT);
    assert_non_null(strstr(err, "larger than"));
}

/* ---- the allow-list at start ---- */

static void test_allowlist_errors(void **state) {
    (void)state;
    tsm_curve_key server, client;
    char err[2048];
    assert_int_equal(tsm_curve_keygen(at("srv"), &server, err, sizeof err), 0);
    assert_int_equal(tsm_curve_keygen(at("cli"), &client, err, sizeof err), 0);
    mkdir(at("empty"), 0755);
    mkdir(at("bad"), 0755);
    mkdir(at("bad/sub"), 0755); /* subdirectories are ignored */
    write_file("bad/a.key", "curve\n    public-key = \"short\"\n");
    mkdir(at("secret"), 0755);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s/cli.key_secret' '%s/secret/'", tmp, tmp);
    assert_int_equal(system(cmd), 0);
    char srv_secret[512], srv_public[512];
    snprintf(srv_secret, sizeof srv_secret, "%s", at("srv.key_secret"));
    snprintf(srv_public, sizeof srv_public, "%s", at("srv.key"));
    const struct {
        const char *secret, *dir, *want;
    } cases[] = {
        {srv_secret, "empty", "security.curve.authorized_keys: "},
        {srv_secret, "empty", "empty: no key files"},
        {srv_secret, "missing", "missing: cannot read the directory: No such file"},
        {srv_secret, "cli.key", "cli.key: cannot read the directory: Not a directory"},
        {srv_secret, "bad", "bad/a.key:2: public-key: expected 40 Z85"},
        {srv_secret, "secret", "secret/cli.key_secret: a secret key file in the allow-list"},
        {srv_public, "empty", "security.curve.secret_key_file: "},
        {srv_public, "empty", "srv.key: no curve secret-key"},
    };
    void *zctx = zmq_ctx_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tsd_security *s = (tsd_security *)&s; /* must come back NULL */
        char dir[512];
        snprintf(dir, sizeof dir, "%s", at(cases[i].dir));
        err[0] = '\0';
        int rc = tsd_security_open(&s, zctx, cases[i].secret, dir, 5, err, sizeof err);
        if (rc != -1 || s != NULL || !strstr(err, cases[i].want))
            fail_msg("case %zu: rc %d, message \"%s\" lacks \"%s\"", i, rc, err, cases[i].want);
    }
    zmq_ctx_term(zctx);
}

/* ---- sockets ---- */

/* A PUSH client (CURVE with the key pair of `name` unless NULL: plain) to endpoint. */
static void *pusher(void *zctx, const char *endpoint, const char *name, const char *server_pub) {
    void *p = zmq_socket(zctx, ZMQ_PUSH);
    int zero = 0;
    zmq_setsockopt(p, ZMQ_LINGER, &zero, sizeof zero);
    if (name) {
        char path[512];
        snprintf(path, sizeof path, "%s.key_secret", name);
        tsm_curve_key k;
        char err[1024];
        assert_int_equal(tsm_curve_key_read(path, 1, &k, err, sizeof err), 0);
        assert_int_equal(zmq_setsockopt(p, ZMQ_CURVE_SERVERKEY, server_pub, 41), 0);
        assert_int_equal(zmq_setsockopt(p, ZMQ_CURVE_PUBLICKEY, k.public_txt, 41), 0);
        assert_int_equal(zmq_setsockopt(p, ZMQ_CURVE_SECRETKEY, k.secret_txt, 41), 0);
    }
    assert_int_equal(zmq_connect(p, endpoint), 0);
    return p;
}

/* Whether a message sent by a new client `name` reaches pull within ms. */
static int gets_through(void *zctx, void *pull, const char *endpoint, const char *name,
                        const char *server_pub, int ms) {
    void *p = pusher(zctx, endpoint, name, server_pub);
    zmq_send(p, "hello", 5, ZMQ_DONTWAIT); /* queued until a connection is up */
    zmq_pollitem_t item = {.socket = pull, .events = ZMQ_POLLIN};
    int got = zmq_poll(&item, 1, ms) == 1;
    char buf[16];
    if (got)
        assert_int_equal(zmq_recv(pull, buf, sizeof buf, 0), 5);
    zmq_close(p);
    return got;
}

/* Waits up to 5 s for counter() >= want. */
static uint64_t wait_counter(tsd_security *s, int which, uint64_t want) {
    tsd_security_counters c;
    for (int i = 0; i < 500; i++) {
        tsd_security_counters_get(s, &c);
        uint64_t v = which < 0 ? c.handshakes
                     : which == TSD_AUTH_REASONS
                         ? c.rejected[TSD_AUTH_PROTOCOL] + c.rejected[TSD_AUTH_OTHER]
                         : c.rejected[which];
        if (v >= want)
            return v;
        usleep(10000);
    }
    return 0;
}

static void test_sockets_and_reload(void **state) {
    (void)state;
    tsm_curve_key server, alice, mallory, bob;
    char err[2048], name[512], endpoint[256];
    assert_int_equal(tsm_curve_keygen(at("s2"), &server, err, sizeof err), 0);
    assert_int_equal(tsm_curve_keygen(at("alice"), &alice, err, sizeof err), 0);
    assert_int_equal(tsm_curve_keygen(at("mallory"), &mallory, err, sizeof err), 0);
    assert_int_equal(tsm_curve_keygen(at("bob"), &bob, err, sizeof err), 0);
    mkdir(at("allow"), 0755);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s/alice.key' '%s/allow/'", tmp, tmp);
    assert_int_equal(system(cmd), 0);

    void *zctx = zmq_ctx_new();
    tsd_security *s = NULL;
    char secret[512], dir[512];
    snprintf(secret, sizeof secret, "%s", at("s2.key_secret"));
    snprintf(dir, sizeof dir, "%s", at("allow"));
    assert_int_equal(tsd_security_open(&s, zctx, secret, dir, 5, err, sizeof err), 0);
    void *pull = zmq_socket(zctx, ZMQ_PULL);
    int zero = 0;
    zmq_setsockopt(pull, ZMQ_LINGER, &zero, sizeof zero);
    assert_int_equal(tsd_security_apply(s, pull, "ingest", err, sizeof err), 0);
    assert_int_equal(zmq_bind(pull, "tcp://127.0.0.1:*"), 0);
    size_t len = sizeof endpoint;
    zmq_getsockopt(pull, ZMQ_LAST_ENDPOINT, endpoint, &len);
    /* A CURVE socket of a context with no ZAP handler (the fail-closed check below):
     * secured before the handler starts, like every socket (security.h). */
    void *other = zmq_ctx_new();
    void *lone = zmq_socket(other, ZMQ_PULL);
    zmq_setsockopt(lone, ZMQ_LINGER, &zero, sizeof zero);
    assert_int_equal(tsd_security_apply(s, lone, "lone", err, sizeof err), 0);
    /* its monitor's reader before the bind, whose event (LISTENING) blocks without one */
    void *monitor = zmq_socket(other, ZMQ_PAIR);
    zmq_setsockopt(monitor, ZMQ_LINGER, &zero, sizeof zero);
    assert_int_equal(zmq_connect(monitor, TSD_SECURITY_MONITOR "1"), 0);
    char lone_endpoint[128];
    assert_int_equal(zmq_bind(lone, "tcp://127.0.0.1:*"), 0);
    len = sizeof lone_endpoint;
    zmq_getsockopt(lone, ZMQ_LAST_ENDPOINT, lone_endpoint, &len);
    assert_int_equal(tsd_security_start(s, err, sizeof err), 0);
    assert_int_equal(tsd_security_apply(s, lone, "late", err, sizeof err), -1);
    assert_non_null(strstr(err, "before the ZAP handler starts"));

    snprintf(name, sizeof name, "%s", at("alice"));
    assert_true(gets_through(zctx, pull, endpoint, name, server.public_txt, 5000));
    assert_true(wait_counter(s, -1, 1) >= 1);
    snprintf(name, sizeof name, "%s", at("mallory"));
    assert_false(gets_through(zctx, pull, endpoint, name, server.public_txt, 500));
    assert_true(wait_counter(s, TSD_AUTH_KEY, 1) >= 1);
    assert_false(gets_through(zctx, pull, endpoint, NULL, NULL, 500)); /* plain */
    assert_true(wait_counter(s, TSD_AUTH_REASONS, 1) >= 1);
    tsd_security_counters c;
    tsd_security_counters_get(s, &c);
    assert_int_equal(c.enabled, 1);
    assert_int_equal(c.keys, 1);

    /* A reload that meets a malformed file keeps the allow-list in force. */
    write_file("allow/zz.key", "curve\n    public-key = \"nope\"\n");
    snprintf(cmd, sizeof cmd, "cp '%s/bob.key' '%s/allow/'", tmp, tmp);
    assert_int_equal(system(cmd), 0);
    char msg[2048];
    assert_int_equal(tsd_security_reload(s, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "zz.key:2: public-key"));
    snprintf(name, sizeof name, "%s", at("bob"));
    assert_false(gets_through(zctx, pull, endpoint, name, server.public_txt, 500));
    snprintf(name, sizeof name, "%s", at("alice"));
    assert_true(gets_through(zctx, pull, endpoint, name, server.public_txt, 5000));
    /* ... an emptied directory too; a valid one is swapped in. */
    unlink(at("allow/zz.key"));
    unlink(at("allow/bob.key"));
    unlink(at("allow/alice.key"));
    assert_int_equal(tsd_security_reload(s, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "no key files"));
    assert_true(gets_through(zctx, pull, endpoint, name, server.public_txt, 5000));
    assert_int_equal(system(cmd), 0); /* bob only */
    assert_int_equal(tsd_security_reload(s, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "1 client keys (was 1)"));
    assert_false(gets_through(zctx, pull, endpoint, name, server.public_txt, 500)); /* alice */
    snprintf(name, sizeof name, "%s", at("bob"));
    assert_true(gets_through(zctx, pull, endpoint, name, server.public_txt, 5000));

    /* Fail closed: a CURVE socket whose context has no ZAP handler admits nobody
     * (ZMQ_ZAP_ENFORCE_DOMAIN), not even an allowed key. */
    assert_true(gets_through(zctx, pull, endpoint, name, server.public_txt, 5000)); /* bob */
    assert_false(gets_through(other, lone, lone_endpoint, name, server.public_txt, 1000));
    zmq_close(monitor);

    zmq_close(lone);
    zmq_close(pull);
    tsd_security_close(&s);
    assert_null(s);
    zmq_ctx_term(other);
    zmq_ctx_term(zctx);
}

/* ---- admission of each message (revocation, stream owners) ---- */

/* Copies NAME.key into dir with a metadata streams entry (NULL: none). */
static void allow_key(const char *name, const char *dir, const char *streams) {
    char src[512], dst[512], text[4096];
    snprintf(src, sizeof src, "%s/%s.key", tmp, name);
    snprintf(dst, sizeof dst, "%s/%s/%s.key", tmp, dir, name);
    FILE *f = fopen(src, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    f = fopen(dst, "w");
    assert_non_null(f);
    char *meta = strstr(text, "metadata\n");
    assert_non_null(meta);
    fwrite(text, 1, (size_t)(meta - text) + 9, f);
    if (streams)
        fprintf(f, "    streams = \"%s\"\n", streams);
    fputs(meta + 9, f);
    fclose(f);
}

static void test_admit(void **state) {
    (void)state;
    tsm_curve_key server, alice, bob;
    char err[2048], msg[2048];
    assert_int_equal(tsm_curve_keygen(at("s3"), &server, err, sizeof err), 0);
    assert_int_equal(tsm_curve_keygen(at("alice3"), &alice, err, sizeof err), 0);
    assert_int_equal(tsm_curve_keygen(at("bob3"), &bob, err, sizeof err), 0);
    mkdir(at("allow3"), 0755);
    allow_key("alice3", "allow3", "a/*, shared");
    allow_key("bob3", "allow3", NULL);
    /* non-regular entries are skipped, not read */
    assert_int_equal(mkfifo(at("allow3/fifo.key"), 0600), 0);
    void *zctx = zmq_ctx_new();
    tsd_security *s = NULL;
    char secret[512], dir[512];
    snprintf(secret, sizeof secret, "%s", at("s3.key_secret"));
    snprintf(dir, sizeof dir, "%s", at("allow3"));
    assert_int_equal(tsd_security_open(&s, zctx, secret, dir, 5, err, sizeof err), 0);
    tsd_security_counters c;
    tsd_security_counters_get(s, &c);
    assert_int_equal(c.keys, 2);

    const tsd_sender a = {alice.public_txt, -1, NULL}, b = {bob.public_txt, -1, NULL},
                     nobody = {NULL, -1, NULL}, other = {server.public_txt, -1, "1.2.3.4"};
    /* owners off: any allowed key, any stream */
    assert_int_equal(tsd_security_admit(s, &a, NULL), TSS_OK);
    assert_int_equal(tsd_security_admit(s, &b, "a/1"), TSS_OK);
    /* owners on: a key writes the streams its file names, a key without none */
    tsd_security_set_stream_owners(s, 1);
    assert_int_equal(tsd_security_admit(s, &a, "a/1"), TSS_OK);
    assert_int_equal(tsd_security_admit(s, &a, "a/x/y"), TSS_OK); /* no FNM_PATHNAME */
    assert_int_equal(tsd_security_admit(s, &a, "shared"), TSS_OK);
    assert_int_equal(tsd_security_admit(s, &a, "b/1"), TSD_REASON_NOT_OWNER);
    assert_int_equal(tsd_security_admit(s, &b, NULL), TSS_OK);
    assert_int_equal(tsd_security_admit(s, &b, "a/1"), TSD_REASON_NOT_OWNER);
    /* a key not in the list (no User-Id, or another one): revoked, counted */
    assert_int_equal(tsd_security_admit(s, &nobody, NULL), TSD_REASON_REVOKED);
    assert_int_equal(tsd_security_admit(s, &other, "a/1"), TSD_REASON_REVOKED);
    tsd_security_counters_get(s, &c);
    assert_int_equal(c.revoked, 2);
    assert_int_equal(c.cut, 0); /* no descriptor: nothing to cut */
    /* a reload that removes alice: her messages are refused from then on */
    unlink(at("allow3/alice3.key"));
    assert_int_equal(tsd_security_reload(s, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "1 client keys (was 2); 1 removed"));
    assert_int_equal(tsd_security_admit(s, &a, NULL), TSD_REASON_REVOKED);
    assert_int_equal(tsd_security_admit(s, &b, NULL), TSS_OK);
    /* one key under two names with different streams: the reload is refused */
    allow_key("bob3", "allow3", NULL);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s/allow3/bob3.key' '%s/allow3/bob3-copy.key'", tmp, tmp);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(tsd_security_reload(s, msg, sizeof msg), 0); /* same streams: fine */
    allow_key("bob3", "allow3", "x");
    assert_int_equal(tsd_security_reload(s, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "the same public key as another file"));
    tsd_security_close(&s);
    zmq_ctx_term(zctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_files),
        cmocka_unit_test(test_allowlist_errors),
        cmocka_unit_test(test_sockets_and_reload),
        cmocka_unit_test(test_admit),
    };
    return cmocka_run_group_tests_name("daemon_security", tests, setup, teardown);
}
