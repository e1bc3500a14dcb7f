/* SPDX-License-Identifier: Apache-2.0 */
/* registry.h - the streams of an engine: a hash map from id to stream and the list in
 * creation order (which fixes the order of alerts and of status reports).
 *
 * Open addressing with linear probing over a power-of-two table kept at most half
 * full; FNV-1a hashes the id; a removal shifts the entries after it back (no
 * tombstones). The registry owns the streams. */
#ifndef TSS_REGISTRY_H
#define TSS_REGISTRY_H

#include <stddef.h>

typedef struct tss_stream tss_stream;

typedef struct {
    tss_stream **list; /* creation order */
    size_t n, cap;
    tss_stream **slot; /* hash table of nslot (power of two) entries, NULL = empty */
    size_t nslot;
    size_t created; /* streams ever added: the next one's index */
} tss_registry;

/* The stream with this id, or NULL. O(1) expected. */
tss_stream *tss_registry_find(const tss_registry *r, const char *id);
/* Adds s (its id must be new) and sets s->index (creation order: never reused); 0 or -1
 * when out of memory (then the caller still owns s). */
int tss_registry_add(tss_registry *r, tss_stream *s);
/* Takes s out (the caller owns it again). O(n) for the list, O(1) expected for the
 * table. */
void tss_registry_remove(tss_registry *r, tss_stream *s);
/* Destroys every stream and the tables. */
void tss_registry_free(tss_registry *r);

#endif
