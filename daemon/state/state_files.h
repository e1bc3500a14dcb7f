/* SPDX-License-Identifier: Apache-2.0 */
/* state_files.h - crash-safe checkpoint files (DESIGN 5.4; hardening issue item 2).
 *
 * Writing: the content goes to a temporary file in the same directory, which is
 * flushed and fsync'ed, renamed over the final name, and then the directory is
 * fsync'ed so the rename itself is durable. A crash at any moment leaves either the
 * old file or the new one, never a half-written one under the final name.
 * Reading: a regular file that the reader read and refused is renamed aside
 * (NAME.rejected, replacing an older one) so that the next start does not trip on it
 * again, and the daemon starts empty. A file that could not be read (permission denied,
 * an I/O error) or is no regular file (a FIFO, a device, a symbolic link, never
 * followed) may hide a good checkpoint: it is left in place and reported, and the daemon
 * refuses to start rather than overwrite it later. The content format is the engine's
 * (tss_engine_save/load). */
#ifndef TSD_STATE_FILES_H
#define TSD_STATE_FILES_H

#include <stddef.h>
#include <stdio.h>

/* The single file of format 3 and before (every stream); formats 4 and 5 keep one file
 * per group of streams (tsd_ckpt_group_name). */
#define TSD_CKPT_NAME "streams.ckpt"

/* Writes (or reads) the content; 0, or -1 with a message in err (size errlen). A
 * reader returns TSD_CKPT_EIO instead when reading failed, not the content. */
typedef int (*tsd_ckpt_fn)(void *user, FILE *f, char *err, unsigned errlen);
#define TSD_CKPT_EIO (-2)

/* Writes dir/name atomically through fn. On failure the previous file (if any) is
 * untouched, the temporary file is removed, and err says which step failed. */
int tsd_ckpt_write(const char *dir, const char *name, tsd_ckpt_fn fn, void *user, char *err,
                   size_t errlen);

/* tsd_ckpt_write, with the fsync of the directory left to the caller (sync_dir = 0:
 * one tsd_ckpt_sync_dir after many files). */
int tsd_ckpt_write_file(const char *dir, const char *name, tsd_ckpt_fn fn, void *user, int sync_dir,
                        char *err, size_t errlen);
/* fsync of the directory, so that the renames and unlinks inside it survive a power
 * cut; 0 or -1 with err. */
int tsd_ckpt_sync_dir(const char *dir, char *err, size_t errlen);
/* The file of a group of streams (tss_ckpt_group): "streams-XX.ckpt", XX its number in
 * two hex digits. */
void tsd_ckpt_group_name(unsigned group, char *name, size_t len);

/* Outcome of tsd_ckpt_read. */
typedef enum {
    TSD_CKPT_LOADED = 0, /* fn accepted the file */
    TSD_CKPT_NONE,       /* no file: a first start */
    TSD_CKPT_REJECTED,   /* fn read it and refused it: renamed aside */
    TSD_CKPT_UNREADABLE, /* not read: cannot be opened or read (fn said TSD_CKPT_EIO), or
                          * not a regular file; left in place */
} tsd_ckpt_result;

/* Reads dir/name through fn. The file is opened without following a symbolic link and
 * without blocking, and must be a regular file; fn reads it (incrementally: its size
 * does not matter to memory). err says why on TSD_CKPT_REJECTED (and where the file
 * went) and TSD_CKPT_UNREADABLE. Called once at start: it first removes the temporary
 * files of writes that a crash interrupted (never read: only a complete, renamed file
 * is). */
tsd_ckpt_result tsd_ckpt_read(const char *dir, const char *name, tsd_ckpt_fn fn, void *user,
                              char *err, size_t errlen);

/* Where checkpoints go (resolved once at start; a reload does not move them).
 * $STATE_DIRECTORY (systemd's StateDirectory=, the first of a colon-separated list)
 * wins over the configured state_dir, because under the unit's sandbox it is the one
 * writable place; state_dir = "" turns checkpoints off either way. The directory must
 * exist and be writable. When it is not:
 *   - `required` (a configuration file was given): an error, the daemon refuses to
 *     start;
 *   - otherwise (embedded defaults, someone trying tsmined by hand): *dir_out = ""
 *     and a warning in msg: the daemon runs without checkpoints.
 * Returns 0 (dir_out is "" when checkpoints are off, msg says why) or -1 with msg. */
int tsd_ckpt_resolve_dir(const char *state_dir, int required, char *dir_out, size_t dirlen,
                         char *msg, size_t msglen);

#endif
