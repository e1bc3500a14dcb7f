/* checkpoint.c - atomic checkpoint files: temp + fsync + rename + fsync(dir). */
#define _GNU_SOURCE /* mkostemp */
#include "checkpoint.h"

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

int tsd_ckpt_write(const char *dir, const char *name, tsd_ckpt_fn fn, void *user, char *err,
                   size_t errlen) {
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
    if (fn(user, f, why, sizeof why) != 0)
        step = "writing";
    else if (fflush(f) != 0 || ferror(f))
        step = "flushing";
    else if (fsync(fd) != 0)
        step = "fsync of";
    if (step && !why[0])
        snprintf(why, sizeof why, "%s", strerror(errno));
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
    if (fsync_dir(dir) != 0) {
        /* The new file is in place; only its durability across a power cut is unsure. */
        snprintf(err, errlen, "fsync of directory %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
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

tsd_ckpt_result tsd_ckpt_read(const char *dir, const char *name, tsd_ckpt_fn fn, void *user,
                              char *err, size_t errlen) {
    char path[4096], aside[4200];
    remove_stale_temps(dir, name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(aside, sizeof aside, "%s.rejected", path);
    FILE *f = fopen(path, "rbe");
    if (!f && errno == ENOENT)
        return TSD_CKPT_NONE;
    char why[512] = "";
    if (!f)
        snprintf(why, sizeof why, "cannot open: %s", strerror(errno));
    else if (fn(user, f, why, sizeof why) == 0) {
        fclose(f);
        return TSD_CKPT_LOADED;
    }
    if (f)
        fclose(f);
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
