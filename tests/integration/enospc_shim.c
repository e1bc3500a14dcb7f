/* SPDX-License-Identifier: Apache-2.0 */
/* enospc_shim.c - a test-only LD_PRELOAD library (restore_test.py): fsync(2) of a file
 * whose path contains $TSM_TEST_ENOSPC fails with ENOSPC, as a full disk makes a
 * delayed write fail, so that a test can fail the checkpoint of one chosen group file
 * (".streams-XX.ckpt.XXXXXX", then renamed) while every other file is written. The
 * daemon calls fsync through its PLT, so the library's definition takes its place;
 * every other fsync goes to the C library's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int fsync(int fd) {
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    const char *match = getenv("TSM_TEST_ENOSPC");
    if (match && match[0]) {
        char link[64], path[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, path, sizeof path - 1);
        if (n > 0) {
            path[n] = '\0';
            if (strstr(path, match)) {
                errno = ENOSPC;
                return -1;
            }
        }
    }
    return real ? real(fd) : -1;
}
