/* SPDX-License-Identifier: Apache-2.0 */
/* curve_key.c - reading and writing CURVE key files (zcert format, curve_key.h). */
#include "lib/curve_key.h"

#include <czmq.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#define MAX_FILE (64 * 1024)

/* What a file that is not regular is, for messages. */
static const char *file_kind(mode_t m) {
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
                         : "not a regular file";
}

/* Reads the whole file (at most MAX_FILE bytes) into buf (MAX_FILE + 1 bytes,
 * NUL-terminated); its length in *len. The file is opened without blocking and must be
 * a regular file (fstat on that descriptor): a FIFO would block fread forever. */
static int slurp(const char *path, char *buf, size_t *len, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 && errno == ENXIO && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (%s)", path, file_kind(st.st_mode));
        return TSM_CURVE_KEY_ENOTREG; /* a socket, or a device without a driver */
    }
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return TSM_CURVE_KEY_EOPEN;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (%s)", path, file_kind(st.st_mode));
        close(fd);
        return TSM_CURVE_KEY_ENOTREG;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return TSM_CURVE_KEY_EOPEN;
    }
    *len = fread(buf, 1, MAX_FILE + 1, f);
    int bad = ferror(f);
    int saved = errno;
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(saved));
        return TSM_CURVE_KEY_EOPEN;
    }
    if (*len > MAX_FILE) {
        snprintf(err, errlen, "%s: larger than %d bytes: not a key file", path, MAX_FILE);
        return TSM_CURVE_KEY_EFORMAT;
    }
    if (memchr(buf, '\0', *len)) {
        snprintf(err, errlen, "%s: binary data: not a key file", path);
        return TSM_CURVE_KEY_EFORMAT;
    }
    buf[*len] = '\0';
    return 0;
}

/* The value after "=" on a ZPL line: "quoted" or a bare word, into out (size outlen).
 * Returns 0, or -1 when the quote is not closed or the value does not fit. */
static int zpl_value(const char *p, char *out, size_t outlen) {
    p += strspn(p, " \t");
    size_t n;
    if (*p == '"') {
        const char *end = strchr(++p, '"');
        if (!end)
            return -1;
        n = (size_t)(end - p);
    } else {
        n = strcspn(p, " \t#");
    }
    if (n >= outlen)
        return -1;
    memcpy(out, p, n);
    out[n] = '\0';
    return 0;
}

/* Checks that txt is a Z85 key: 40 characters that decode. */
static int valid_z85_key(const char *txt) {
    uint8_t bin[32];
    return strlen(txt) == TSM_CURVE_KEY_TXT && zmq_z85_decode(bin, txt) != NULL;
}

/* The length of the pattern at p: up to the next comma that is not inside a bracket
 * expression ([,] matches a comma, as fnmatch reads it: a ']' right after '[' or '[!'
 * is a member, not the end). */
static size_t pattern_len(const char *p) {
    size_t i = 0;
    while (p[i] && p[i] != ',') {
        if (p[i] == '[') {
            size_t j = i + 1;
            j += p[j] == '!' || p[j] == '^';
            j += p[j] == ']';
            while (p[j] && p[j] != ']')
                j++;
            if (p[j] == ']') {
                i = j + 1;
                continue;
            }
        }
        i++;
    }
    return i;
}

/* metadata `streams = "P1, P2"`: splits the value into out->streams (each pattern
 * NUL-terminated, then ""). Patterns: 1..TSM_CURVE_PATTERN_MAX printable ASCII bytes,
 * at most TSM_CURVE_PATTERNS; "" names no stream. Returns 0 or EFORMAT (err set). */
static int parse_streams(const char *path, unsigned lineno, const char *eq, tsm_curve_key *out,
                         char *err, size_t errlen) {
    char value[TSM_CURVE_STREAMS_LEN + 1];
    if (out->has_streams) {
        snprintf(err, errlen, "%s:%u: streams given twice", path, lineno);
        return TSM_CURVE_KEY_EFORMAT;
    }
    if (!eq || zpl_value(eq + 1, value, sizeof value) != 0) {
        snprintf(err, errlen,
                 "%s:%u: streams: expected stream id patterns in double quotes, separated by "
                 "commas (at most %d bytes)",
                 path, lineno, TSM_CURVE_STREAMS_LEN);
        return TSM_CURVE_KEY_EFORMAT;
    }
    size_t used = 0, n = 0;
    for (char *p = value; *p;) {
        size_t len = pattern_len(p);
        char *next = p[len] ? p + len + 1 : p + len;
        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        const char *why = len == 0                      ? "an empty pattern"
                          : len > TSM_CURVE_PATTERN_MAX ? "a pattern longer than 128 bytes"
                          : n == TSM_CURVE_PATTERNS     ? "more than 32 patterns"
                                                        : NULL;
        for (size_t k = 0; !why && k < len; k++)
            if ((unsigned char)p[k] < 0x20 || (unsigned char)p[k] > 0x7e)
                why = "a pattern with a byte that no stream id holds (printable ASCII only)";
        if (why) {
            snprintf(err, errlen, "%s:%u: streams: %s (patterns are separated by commas)", path,
                     lineno, why);
            return TSM_CURVE_KEY_EFORMAT;
        }
        memcpy(out->streams + used, p, len);
        out->streams[used + len] = '\0';
        used += len + 1, n++;
        p = next;
    }
    out->streams[used] = '\0';
    out->has_streams = 1;
    return 0;
}

/* One line of the file: a section header ("curve") sets *section; "public-key" and
 * "secret-key" under curve go to out, and so does "streams" under metadata. Returns 0
 * or EFORMAT (err set). */
static int parse_line(const char *path, unsigned lineno, char *line, char *section,
                      size_t section_len, tsm_curve_key *out, char *err, size_t errlen) {
    char *text = line + strspn(line, " \t");
    if (*text == '\0' || *text == '#')
        return 0;
    if (line[0] != ' ' && line[0] != '\t') { /* a section at the top level */
        snprintf(section, section_len, "%.*s", (int)strcspn(line, " \t="), line);
        return 0;
    }
    if (strcmp(section, "metadata") == 0 && strcspn(text, " \t=") == 7 &&
        strncmp(text, "streams", 7) == 0)
        return parse_streams(path, lineno, strchr(text, '='), out, err, errlen);
    if (strcmp(section, "curve") != 0)
        return 0;
    char *name = text, *eq = strchr(name, '=');
    size_t nlen = strcspn(name, " \t=");
    int is_pub = nlen == 10 && strncmp(name, "public-key", 10) == 0;
    int is_sec = nlen == 10 && strncmp(name, "secret-key", 10) == 0;
    if (!is_pub && !is_sec)
        return 0;
    char *dst = is_pub ? out->public_txt : out->secret_txt;
    const char *what = is_pub ? "public-key" : "secret-key";
    char value[128];
    if (dst[0]) {
        snprintf(err, errlen, "%s:%u: %s given twice", path, lineno, what);
        return TSM_CURVE_KEY_EFORMAT;
    }
    if (!eq || zpl_value(eq + 1, value, sizeof value) != 0 || !valid_z85_key(value)) {
        snprintf(err, errlen, "%s:%u: %s: expected %d Z85 characters in double quotes", path,
                 lineno, what, TSM_CURVE_KEY_TXT);
        return TSM_CURVE_KEY_EFORMAT;
    }
    memcpy(dst, value, TSM_CURVE_KEY_TXT + 1);
    return 0;
}

int tsm_curve_key_read(const char *path, int need_secret, tsm_curve_key *out, char *err,
                       size_t errlen) {
    char *buf = malloc(MAX_FILE + 1);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        return TSM_CURVE_KEY_EOPEN;
    }
    size_t len;
    tsm_curve_key k;
    memset(&k, 0, sizeof k);
    int rc = slurp(path, buf, &len, err, errlen);
    char section[64] = "";
    unsigned lineno = 0;
    for (char *line = buf; rc == 0 && line < buf + len;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        size_t l = strlen(line);
        if (l && line[l - 1] == '\r')
            line[l - 1] = '\0';
        rc = parse_line(path, ++lineno, line, section, sizeof section, &k, err, errlen);
        line = nl ? nl + 1 : buf + len;
    }
    free(buf);
    if (rc != 0)
        return rc;
    if (!k.public_txt[0]) {
        snprintf(err, errlen,
                 "%s: no curve public-key: not a key file (tsmine keygen NAME writes NAME.key "
                 "and NAME.key_secret)",
                 path);
        return TSM_CURVE_KEY_EFORMAT;
    }
    if (need_secret && !k.secret_txt[0]) {
        snprintf(err, errlen, "%s: no curve secret-key: a public key file; give NAME.key_secret",
                 path);
        return TSM_CURVE_KEY_EFORMAT;
    }
    if (k.secret_txt[0]) {
        char derived[TSM_CURVE_KEY_TXT + 1];
        if (zmq_curve_public(derived, k.secret_txt) != 0 || strcmp(derived, k.public_txt) != 0) {
            snprintf(err, errlen, "%s: the secret-key does not belong to the public-key", path);
            return TSM_CURVE_KEY_EFORMAT;
        }
    }
    *out = k;
    return 0;
}

/* Creates path empty with the given mode, failing when it exists. */
static int create_new(const char *path, mode_t mode, char *err, size_t errlen) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0 || fchmod(fd, mode) != 0) {
        snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        return TSM_CURVE_KEY_EOPEN;
    }
    close(fd);
    return 0;
}

int tsm_curve_keygen(const char *name, tsm_curve_key *out, char *err, size_t errlen) {
    char pub[4096], sec[4096];
    if (!*name || snprintf(pub, sizeof pub, "%s.key", name) >= (int)sizeof pub ||
        snprintf(sec, sizeof sec, "%s.key_secret", name) >= (int)sizeof sec) {
        snprintf(err, errlen, "%.64s: not a usable file name", name);
        return TSM_CURVE_KEY_EOPEN;
    }
    if (!zmq_has("curve")) {
        snprintf(err, errlen, "this libzmq was built without CURVE support");
        return TSM_CURVE_KEY_EOPEN;
    }
    /* Both files exist (empty, with their final modes) before zcert writes them, so
     * the secret is never readable by others, not even for a moment, and nothing is
     * overwritten. zcert_save_* rewrite the files in place. */
    int rc = create_new(pub, 0644, err, errlen);
    if (rc != 0)
        return rc;
    if ((rc = create_new(sec, 0600, err, errlen)) != 0) {
        unlink(pub);
        return rc;
    }
    zcert_t *cert = zcert_new();
    const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    if (cert) {
        zcert_set_meta(cert, "name", "%s", base);
        zcert_set_meta(cert, "created-by", "tsmine keygen");
    }
    if (!cert || zcert_save_public(cert, pub) != 0 || zcert_save_secret(cert, sec) != 0) {
        snprintf(err, errlen, "%s: cannot write the key pair: %s", name, strerror(errno));
        rc = TSM_CURVE_KEY_EOPEN;
    }
    zcert_destroy(&cert);
    /* Read back what was written: the daemon reads exactly this. */
    if (rc == 0)
        rc = tsm_curve_key_read(sec, 1, out, err, errlen);
    if (rc != 0) {
        unlink(pub);
        unlink(sec);
    }
    return rc;
}
