/* SPDX-License-Identifier: Apache-2.0 */
/* ckpt_wire.c - the bytes of a checkpoint: a growing buffer to write into, a
 * bounds-checked cursor to read from (over memory, or over a file read a window at a
 * time), and the format's CRC-32. */
#include "ckpt_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* zlib's crc32_z is the CRC-32 the format has always had (reflected 0xEDB88320,
 * initial value and final xor 0xFFFFFFFF, continued from the previous value), so every
 * file written before reads as before. It is thread-safe (its tables are built into
 * the library) and takes any size_t. zlib returns its initial value for a NULL buffer:
 * nothing is added for an empty one. */
uint32_t tssi_ck_crc(uint32_t crc, const void *p, size_t n) {
    return n ? (uint32_t)crc32_z(crc, p, n) : crc;
}

/* ---- writing ------------------------------------------------------------------ */

void tssi_ck_reserve(tssi_ckbuf *w, size_t n) {
    if (w->failed || n <= w->cap - w->n)
        return;
    unsigned char *p = realloc(w->p, w->n + n);
    if (p)
        w->p = p, w->cap = w->n + n;
}

void tssi_ck_put_bytes(tssi_ckbuf *w, const void *src, size_t n) {
    if (w->failed || n == 0) /* (src may be NULL then) */
        return;
    if (n > w->cap - w->n) {
        size_t cap = w->cap ? 2 * w->cap : 4096;
        while (cap - w->n < n)
            cap *= 2;
        unsigned char *p = realloc(w->p, cap);
        if (!p) {
            w->failed = 1;
            return;
        }
        w->p = p, w->cap = cap;
    }
    memcpy(w->p + w->n, src, n);
    w->n += n;
}

void tssi_ck_put(tssi_ckbuf *w, uint64_t v, int nbytes) {
    unsigned char b[8];
    for (int k = 0; k < nbytes; k++)
        b[k] = (unsigned char)(v >> (8 * k));
    tssi_ck_put_bytes(w, b, (size_t)nbytes);
}

/* One copy on a little-endian host (the window is most of a record: 4096 values one at
 * a time took 4x as long). */
void tssi_ck_put_array64(tssi_ckbuf *w, const void *src, size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    tssi_ck_put_bytes(w, src, 8 * n);
#else
    const unsigned char *b = src;
    for (size_t k = 0; k < n; k++) {
        uint64_t u;
        memcpy(&u, b + 8 * k, 8);
        tssi_ck_put(w, u, 8);
    }
#endif
}

/* ---- reading ------------------------------------------------------------------ */

/* Reading window of the file (what one read takes at least). */
#define READ_CHUNK (1u << 16)

/* Reads up to want bytes into r->buf after its n; returns the bytes read (short only
 * at a read error or an early end of file, which set bad and read_errno). */
static size_t read_more(tssi_ckread *r, size_t want) {
    size_t got = fread(r->buf + r->n, 1, want, r->f);
    if (got < want) {
        r->bad = 1;
        if (ferror(r->f))
            r->read_errno = errno ? errno : EIO;
    }
    r->crc = tssi_ck_crc(r->crc, r->buf + r->n, got);
    r->left -= got;
    r->n += got;
    return got;
}

/* Makes n bytes from the cursor contiguous in a file cursor's buffer (moving what is
 * unread to its start and growing it when n is larger); 0, or -1 (bad set) when the
 * input ends first or memory runs out. */
static int fill(tssi_ckread *r, size_t n) {
    const size_t unread = r->n - r->at;
    if (!r->f || n - unread > r->left) {
        r->bad = 1;
        return -1;
    }
    size_t need = n > READ_CHUNK ? n : READ_CHUNK;
    if (need > r->cap) {
        unsigned char *nb = malloc(need);
        if (!nb) {
            r->bad = 1;
            return -1;
        }
        if (unread)
            memcpy(nb, r->buf + r->at, unread);
        free(r->buf);
        r->buf = nb, r->cap = need;
    } else {
        memmove(r->buf, r->buf + r->at, unread);
    }
    r->p = r->buf, r->n = unread, r->at = 0;
    uint64_t want = r->cap - unread < r->left ? r->cap - unread : r->left;
    read_more(r, (size_t)want);
    if (r->n < n)
        r->bad = 1;
    return r->bad ? -1 : 0;
}

const unsigned char *tssi_ck_take(tssi_ckread *r, size_t n) {
    if (r->bad || (n > r->n - r->at && fill(r, n) != 0)) {
        r->bad = 1;
        return NULL;
    }
    const unsigned char *b = r->p + r->at;
    r->at += n;
    return b;
}

uint64_t tssi_ck_get(tssi_ckread *r, int nbytes) {
    const unsigned char *b = tssi_ck_take(r, (size_t)nbytes);
    uint64_t v = 0;
    for (int k = 0; b && k < nbytes; k++)
        v |= (uint64_t)b[k] << (8 * k);
    return v;
}

uint64_t tssi_ck_left(const tssi_ckread *r) {
    return (r->n - r->at) + (r->f ? r->left : 0);
}

int tssi_ck_fits(const tssi_ckread *r, uint64_t count, size_t size) {
    return !r->bad && count <= tssi_ck_left(r) / size;
}

void tssi_ck_drain(tssi_ckread *r) {
    if (!r->f)
        return;
    r->bad = 1;
    if (!r->buf && !(r->buf = malloc(r->cap = READ_CHUNK)))
        return; /* the CRC then fails: refused as corrupt, which it may not be */
    while (r->left > 0 && !r->read_errno) {
        r->n = 0;
        if (read_more(r, (size_t)(r->cap < r->left ? r->cap : r->left)) == 0)
            break;
    }
    r->n = r->at = 0;
}
