/* SPDX-License-Identifier: Apache-2.0 */
/* ckpt_wire.h - the bytes of a checkpoint (internal): little-endian integers into a
 * growing buffer, and out of a bounds-checked cursor over memory or over a file read
 * incrementally; the CRC-32 of the format (zlib's). checkpoint.c frames the files,
 * ckpt_record.c lays out a stream's record with these. */
#ifndef TSS_CKPT_WIRE_H
#define TSS_CKPT_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The CRC-32 of the format (IEEE 802.3: zlib's crc32(), Python's zlib.crc32) of n
 * bytes at p, continued from crc (0 to start). */
uint32_t tssi_ck_crc(uint32_t crc, const void *p, size_t n);

/* A growing memory buffer that a record (or a file's header) is serialised into. */
typedef struct {
    unsigned char *p;
    size_t n, cap;
    int failed; /* out of memory: what is put after is dropped */
} tssi_ckbuf;

/* Room for n more bytes in one allocation (a hint: failing leaves it to the puts). */
void tssi_ck_reserve(tssi_ckbuf *w, size_t n);
void tssi_ck_put_bytes(tssi_ckbuf *w, const void *src, size_t n);
/* An unsigned integer of nbytes (1, 2, 4 or 8), little-endian. */
void tssi_ck_put(tssi_ckbuf *w, uint64_t v, int nbytes);
/* n 8-byte values (doubles or int64) from src, little-endian. */
void tssi_ck_put_array64(tssi_ckbuf *w, const void *src, size_t n);

/* A cursor over n bytes at p. A file cursor (f set) holds only a window of the file in
 * buf: it reads on as the cursor needs more, so that the memory a load takes is what
 * it builds, not the size of the file, and every byte read goes into crc. */
typedef struct {
    const unsigned char *p;
    size_t n, at;
    int bad; /* a read went past the end (or the file could not be read) */
    /* file cursors only */
    FILE *f;
    unsigned char *buf;
    size_t cap;
    uint64_t left;  /* bytes of the input not read yet */
    uint32_t crc;   /* of every byte read so far */
    int read_errno; /* the read failed (not the content): its errno */
} tssi_ckread;

/* The next n bytes, contiguous; NULL (bad set) when the input ends first. Pointers from
 * earlier calls die. */
const unsigned char *tssi_ck_take(tssi_ckread *r, size_t n);
/* An unsigned integer of nbytes, little-endian; 0 past the end (bad set). */
uint64_t tssi_ck_get(tssi_ckread *r, int nbytes);
/* Whether count items of size bytes can still be in the input (guards allocations:
 * nothing is allocated for more than the file holds). */
int tssi_ck_fits(const tssi_ckread *r, uint64_t count, size_t size);
/* Bytes left in the input (the window and, for a file cursor, the rest of the file). */
uint64_t tssi_ck_left(const tssi_ckread *r);
/* Reads the rest of a file cursor's input into its CRC (after a refused field: the
 * checksum decides whether the file is corrupt or only its content is wrong). */
void tssi_ck_drain(tssi_ckread *r);

static inline double tssi_ck_get_f64(tssi_ckread *r) {
    const uint64_t u = tssi_ck_get(r, 8);
    double v;
    __builtin_memcpy(&v, &u, sizeof v);
    return v;
}

#endif
