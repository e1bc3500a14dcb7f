/* SPDX-License-Identifier: Apache-2.0 */
/* array_out.c - result arrays as .npy or raw float64 files, written in large blocks. */
#include "lib/array_out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 8192 /* values converted per write when the host is not little-endian */

/* Writes the .npy 1.0 preamble and header for a 1-D array of n items of descr, padded
 * so that the data starts at a multiple of 64 bytes. */
static int npy_header(FILE *f, const char *descr, size_t n) {
    char head[128];
    int len = snprintf(head, sizeof head,
                       "{'descr': '%s', 'fortran_order': False, 'shape': (%zu,), }", descr, n);
    size_t total = 10 + (size_t)len + 1, pad = (64 - total % 64) % 64;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    size_t hlen = (size_t)len + pad + 1;
    pre[8] = (unsigned char)(hlen & 0xff), pre[9] = (unsigned char)(hlen >> 8);
    if (fwrite(pre, 1, 10, f) != 10 || fwrite(head, 1, (size_t)len, f) != (size_t)len)
        return -1;
    for (size_t i = 0; i < pad; i++)
        if (fputc(' ', f) == EOF)
            return -1;
    return fputc('\n', f) == EOF ? -1 : 0;
}

/* Writes n 8-byte items, each stored little-endian (the bytes of v on little-endian
 * hosts, reversed per item elsewhere). */
static int write_le8(FILE *f, const void *v, size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return fwrite(v, 8, n, f) == n ? 0 : -1;
#else
    unsigned char buf[8 * BLOCK];
    const unsigned char *b = v;
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t k = n - i < BLOCK ? n - i : BLOCK;
        for (size_t j = 0; j < 8 * k; j++)
            buf[j] = b[8 * i + (j & ~(size_t)7) + 7 - (j & 7)];
        if (fwrite(buf, 8, k, f) != k)
            return -1;
    }
    return 0;
#endif
}

/* Opens path, writes the header for descr (npy only) and the n items produced by put,
 * and closes it; 0 or -1 with errno. */
static int write_file(const char *path, array_format fmt, const char *descr, const void *v,
                      size_t n, int *created) {
    FILE *f = fopen(path, "wb");
    *created = f != NULL;
    if (!f)
        return -1;
    errno = 0;
    int rc = fmt == ARRAY_NPY ? npy_header(f, descr, n) : 0;
    if (rc == 0)
        rc = write_le8(f, v, n);
    int e = errno ? errno : EIO;
    if (fclose(f) != 0 && rc == 0)
        rc = -1, e = errno;
    if (rc != 0)
        errno = e;
    return rc;
}

int array_write_f64(const char *path, array_format fmt, const double *v, size_t n, int *created) {
    return write_file(path, fmt, "<f8", v, n, created);
}

int array_write_i64(const char *path, array_format fmt, const int64_t *v, size_t n, int *created) {
    if (fmt == ARRAY_NPY)
        return write_file(path, fmt, "<i8", v, n, created);
    double *d = malloc((n ? n : 1) * sizeof *d);
    if (!d) {
        *created = 0;
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        d[i] = (double)v[i];
    int rc = write_file(path, fmt, "<f8", d, n, created);
    int e = errno;
    free(d);
    errno = e;
    return rc;
}

char *array_companion(const char *path, const char *suffix) {
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    size_t at = dot && (!slash || dot > slash + 1) ? (size_t)(dot - path) : strlen(path);
    size_t len = strlen(path) + strlen(suffix) + 1;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%.*s%s%s", (int)at, path, suffix, path + at);
    return s;
}
