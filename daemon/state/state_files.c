/* SPDX-License-Identifier: Apache-2.0 */
/* state_files.c - atomic checkpoint files: temp + fsync + rename + fsync(dir). */
#define _GNU_SOURCE /* mkostemp */
#include "daemon/state/state_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* fsync of a directory, so that a rename inside it survives a power cut. */
static int fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int tsd_ckpt_sync_dir(const char *dir, char *err, size_t errlen) {
    if (fsync_dir(dir) == 0)
        return 0;
    snprintf(err, errlen, "fsync of directory %s: %s", dir, strerror(errno));
    return -1;
}

int tsd_ckpt_write(const char *dir, const char *name, tsd_ckpt_fn fn, void *user, char *err,
                   size_t errlen) {
    return tsd_ckpt_write_file(dir, name, fn, user, 1, err, errlen);
}

int tsd_ckpt_write_file(const char *dir, const char *name, tsd_ckpt_fn fn, void *user, int sync_dir,
                        char *err, size_t errlen) {
    char path[4096], tmp[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path ||
        (size_t)snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, name) >= sizeof tmp) {
        snprintf(err, errlen, "checkpoint path too long: %s/%s", dir, name);
        return -1;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a temporary file in %s: %s", dir, strerror(errno));
        return -1;
    }
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        snprintf(err, errlen, "fdopen %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return -1;
    }
    char why[512] = "";
    const char *step = NULL;
    int errnum = 0; /* of the failed step: EFBIG, ENOSPC, EIO, ... */
    errno = 0;
    if (fn(user, f, why, sizeof why) != 0)
        step = "writing", errnum = ferror(f) ? errno : 0;
    else if (fflush(f) != 0 || ferror(f))
        step = "flushing", errnum = errno;
    else if (fsync(fd) != 0)
        step = "fsync of", errnum = errno;
    if (step && !why[0])
        snprintf(why, sizeof why, "%s", strerror(errnum ? errnum : EIO));
    else if (step && errnum) {
        size_t n = strlen(why);
        snprintf(why + n, sizeof why - n, ": %s", strerror(errnum));
    }
    if (fclose(f) != 0 && !step) {
        step = "closing";
        snprintf(why, sizeof why, "%s", strerror(errno));
    }
    if (!step && rename(tmp, path) != 0) {
        step = "renaming";
        snprintf(why, sizeof why, "%s", strerror(errno));
    }
    if (step) {
        snprintf(err, errlen, "%s %s: %s (the previous checkpoint is kept)", step, tmp, why);
        unlink(tmp);
        return -1;
    }
    /* the new file is in place; without the fsync of the directory only its durability
     * across a power cut is unsure */
    return sync_dir ? tsd_ckpt_sync_dir(dir, err, errlen) : 0;
}

void tsd_ckpt_group_name(unsigned group, char *name, size_t len) {
    snprintf(name, len, "streams-%02x.ckpt", group);
}

/* Removes the temporary files (".NAME.XXXXXX", mkostemp's six characters) that writes
 * interrupted by a crash left in dir. Cost: one pass over dir. */
static void remove_stale_temps(const char *dir, const char *name) {
    char prefix[300];
    size_t plen = (size_t)snprintf(prefix, sizeof prefix, ".%s.", name);
    DIR *d = plen < sizeof prefix ? opendir(dir) : NULL;
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, plen) != 0 || strlen(e->d_name) != plen + 6)
            continue;
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path)
            unlink(path);
    }
    closedir(d);
}

/* What a file that is not a regular one is, for messages. */
static const char *kind_of(mode_t mode) {
    return S_ISLNK(mode)    ? "a symbolic link"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISDIR(mode)  ? "a directory"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

/* Opens path for reading as the checkpoint: a regular file, never followed through a
 * symbolic link, never blocking (a FIFO opens at once, and is then refused). Returns
 * the descriptor, -1 with why when it is something else or cannot be opened, or -2 when
 * it does not exist. */
static int open_regular(const char *path, char *why, size_t whylen) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        int errnum = errno;
        if (errnum == ENOENT)
            return -2;
        if ((errnum == ELOOP || errnum == ENXIO) && lstat(path, &st) == 0)
            snprintf(why, whylen, "it is %s, not a file tsmined wrote", kind_of(st.st_mode));
        else
            snprintf(why, whylen, "cannot open it: %s", strerror(errnum));
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        snprintf(why, whylen, "cannot stat it: %s", strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "it is %s, not a file tsmined wrote", kind_of(st.st_mode));
    } else {
        int fl = fcntl(fd, F_GETFL);
        if (fl != -1)
            fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        return fd;
    }
    close(fd);
    return -1;
}

tsd_ckpt_result tsd_ckpt_read(const char *dir, const char *name, tsd_ckpt_fn fn, void *user,
                              char *err, size_t errlen) {
    char path[4096], aside[4200];
    remove_stale_temps(dir, name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(aside, sizeof aside, "%s.rejected", path);
    char why[512] = "";
    int fd = open_regular(path, why, sizeof why), rc = TSD_CKPT_EIO;
    if (fd == -2)
        return TSD_CKPT_NONE;
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (fd >= 0 && !f) {
        snprintf(why, sizeof why, "fdopen: %s", strerror(errno));
        close(fd);
    }
    if (f) {
        rc = fn(user, f, why, sizeof why);
        fclose(f);
    }
    if (rc == 0)
        return TSD_CKPT_LOADED;
    if (rc == TSD_CKPT_EIO) { /* not read: it may be good, so it stays where it is */
        snprintf(err, errlen,
                 "%s cannot be read: %s; it is left in place, and tsmined does not start "
                 "(it would overwrite it) until it can read it or it is moved away",
                 path, why);
        return TSD_CKPT_UNREADABLE;
    }
    if (rename(path, aside) == 0)
        snprintf(err, errlen, "%s rejected: %s; moved to %s", path, why, aside);
    else
        snprintf(err, errlen, "%s rejected: %s; and cannot move it aside: %s", path, why,
                 strerror(errno));
    return TSD_CKPT_REJECTED;
}

int tsd_ckpt_resolve_dir(const char *state_dir, int required, char *dir_out, size_t dirlen,
                         char *msg, size_t msglen) {
    dir_out[0] = msg[0] = '\0';
    if (!state_dir[0]) {
        snprintf(msg, msglen, "state_dir is \"\": checkpoints are off");
        return 0;
    }
    const char *dir = state_dir;
    char from_env[4096];
    const char *env = getenv("STATE_DIRECTORY");
    if (env && env[0]) {
        snprintf(from_env, sizeof from_env, "%.*s", (int)strcspn(env, ":"), env);
        dir = from_env;
    }
    struct stat st;
    const char *why = NULL;
    if (stat(dir, &st) != 0)
        why = strerror(errno);
    else if (!S_ISDIR(st.st_mode))
        why = "not a directory";
    else if (access(dir, W_OK | X_OK) != 0)
        why = strerror(errno);
    if (!why) {
        if (strlen(dir) >= dirlen) {
            snprintf(msg, msglen, "state directory path too long: %s", dir);
            return -1;
        }
        strcpy(dir_out, dir);
        return 0;
    }
    snprintf(msg, msglen, "state directory %s%s is not usable: %s%s", dir,
             dir == state_dir ? "" : " ($STATE_DIRECTORY)", why,
             required ? ""
                      : "; running without checkpoints (give a writable state_dir in a "
                        "configuration file with -c)");
    return required ? -1 : 0;
}
