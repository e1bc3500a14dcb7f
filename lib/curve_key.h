/* SPDX-License-Identifier: Apache-2.0 */
/* curve_key.h - CURVE key files, as tsmined and its companions (`tsmine keygen`,
 * `--curve-key`, `--server-key`) share them.
 *
 * The format is CZMQ's zcert certificate (ZPL text): `tsmine keygen NAME` writes it
 * through zcert, so a file from any zcert-based tool works too:
 *
 *     metadata
 *         name = "sensor-17"
 *     curve
 *         public-key = "<40 Z85 characters>"
 *         secret-key = "<40 Z85 characters>"      (only in NAME.key_secret)
 *
 * NAME.key holds the public key (shared: it goes into the daemon's allow-list
 * directory, or to the clients for the server's key), NAME.key_secret both keys
 * (mode 0600, never leaves the machine it was made for). The reader is this module's
 * own strict parser rather than zcert_load, which accepts keys that are not Z85 and
 * prints its errors on stdout without the line: here every error names the file, the
 * line where it can, and the reason. */
#ifndef TSM_CURVE_KEY_H
#define TSM_CURVE_KEY_H

#include <stddef.h>

#define TSM_CURVE_KEY_TXT 40 /* Z85 characters of a 32-byte key */

/* The stream ids a client key may write (tsmined's security.curve.stream_owners): an
 * optional `streams` entry of the file's metadata section, fnmatch(3) patterns
 * separated by commas, blanks around them ignored (a comma or an edge blank inside a
 * pattern: [,] or [ ]):
 *
 *     metadata
 *         name = "sensor-17"
 *         streams = "plant-a.s17, plant-a.s17.*"
 */
#define TSM_CURVE_STREAMS_LEN 1024 /* bytes of the value */
#define TSM_CURVE_PATTERN_MAX 128  /* bytes of one pattern */
#define TSM_CURVE_PATTERNS    32   /* patterns per key */

typedef struct {
    char public_txt[TSM_CURVE_KEY_TXT + 1];
    char secret_txt[TSM_CURVE_KEY_TXT + 1]; /* "" when the file holds no secret key */
    int has_streams;                        /* the metadata names streams (maybe none) */
    /* the patterns, each NUL-terminated, then an empty one (""), in file order */
    char streams[TSM_CURVE_STREAMS_LEN + 2];
} tsm_curve_key;

/* What tsm_curve_key_read and tsm_curve_keygen return besides 0. */
enum {
    TSM_CURVE_KEY_EOPEN = -1,   /* cannot open/read/create the file (errno's reason) */
    TSM_CURVE_KEY_EFORMAT = -2, /* not a valid key file */
    TSM_CURVE_KEY_ENOTREG = -3, /* not a regular file (a directory, FIFO, socket, device) */
};

/* Reads the key file at path into *out. With need_secret the file must hold a secret
 * key that matches its public key (NAME.key_secret); without, only the public key is
 * read (a NAME.key_secret file also works). Returns 0, or TSM_CURVE_KEY_EOPEN /
 * EFORMAT / ENOTREG with "PATH[:LINE]: reason" in err. Files over 64 KiB are refused.
 * Symlinks are followed; what they lead to must be a regular file, checked on the
 * opened descriptor, which is opened without blocking (a FIFO never hangs the
 * reader). O(size). */
int tsm_curve_key_read(const char *path, int need_secret, tsm_curve_key *out, char *err,
                       size_t errlen);

/* Makes a new key pair and writes NAME.key (mode 0644) and NAME.key_secret (0600) with
 * zcert, metadata name = the last component of NAME. Never overwrites: an existing
 * file is EOPEN (EEXIST). On failure no file is left behind. Returns 0 with the keys
 * in *out, or an error as tsm_curve_key_read. */
int tsm_curve_keygen(const char *name, tsm_curve_key *out, char *err, size_t errlen);

#endif
