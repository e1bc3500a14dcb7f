/* SPDX-License-Identifier: Apache-2.0 */
/* reload_status.c - see reload_status.h. */
#include "daemon/core/reload_status.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

int tsd_reload_status_write(const char *dir, uint64_t generation, int ok, const char *msg) {
    char path[1024], tmp[1100];
    snprintf(path, sizeof path, "%s/%s", dir, TSD_RELOAD_STATUS_FILE);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "%" PRIu64 " %s\n%.*s\n", generation, ok ? "ok" : "failed", (int)strcspn(msg, "\n"),
            msg);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

int tsd_reload_status_read(const char *dir, uint64_t *generation, int *ok, char *msg,
                           size_t msglen) {
    char path[1024], word[16];
    snprintf(path, sizeof path, "%s/%s", dir, TSD_RELOAD_STATUS_FILE);
    *generation = 0, *ok = 1;
    msg[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return errno == ENOENT ? 0 : -1;
    int rc = fscanf(f, "%" SCNu64 " %15s", generation, word) == 2 ? 0 : -1;
    *ok = rc == 0 && strcmp(word, "ok") == 0;
    if (rc == 0 && fgetc(f) == '\n' && fgets(msg, (int)msglen, f))
        msg[strcspn(msg, "\n")] = '\0';
    fclose(f);
    return rc;
}

int tsd_reload_request(pid_t pid, const char *dir, long timeout_ms) {
    if (!dir || !*dir) {
        fprintf(stderr, "tsmined --reload: no RUNTIME_DIRECTORY (set by systemd's "
                        "RuntimeDirectory=); outside the unit use `tsmine reload`\n");
        return EX_USAGE;
    }
    uint64_t before, now;
    int ok;
    char msg[2048];
    if (tsd_reload_status_read(dir, &before, &ok, msg, sizeof msg) != 0)
        before = 0; /* unreadable: any outcome written from now on is newer */
    if (kill(pid, SIGHUP) != 0) {
        fprintf(stderr, "tsmined --reload: cannot signal process %ld: %s\n", (long)pid,
                strerror(errno));
        return EX_UNAVAILABLE;
    }
    for (long waited = 0; waited <= timeout_ms; waited += 20) {
        if (tsd_reload_status_read(dir, &now, &ok, msg, sizeof msg) == 0 && now > before) {
            fprintf(ok ? stdout : stderr, "tsmined: reload %s: %s\n", ok ? "done" : "refused", msg);
            return ok ? 0 : EX_CONFIG;
        }
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "tsmined --reload: process %ld said nothing in %s within %ld ms\n", (long)pid,
            dir, timeout_ms);
    return EX_UNAVAILABLE;
}
