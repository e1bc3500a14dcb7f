/* SPDX-License-Identifier: Apache-2.0 */
/* registry.c - see registry.h. */
#include "registry.h"

#include "stream.h"

#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

tss_stream *tss_registry_find(const tss_registry *r, const char *id) {
    if (r->nslot == 0)
        return NULL;
    for (size_t k = fnv1a(id) & (r->nslot - 1);; k = (k + 1) & (r->nslot - 1)) {
        tss_stream *s = r->slot[k];
        if (!s || strcmp(s->id, id) == 0)
            return s;
    }
}

/* Puts s into the first free slot of its probe sequence. */
static void place(tss_stream **slot, size_t nslot, tss_stream *s) {
    size_t k = fnv1a(s->id) & (nslot - 1);
    while (slot[k])
        k = (k + 1) & (nslot - 1);
    slot[k] = s;
}

int tss_registry_add(tss_registry *r, tss_stream *s) {
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        tss_stream **list = realloc(r->list, cap * sizeof *list);
        if (!list)
            return -1;
        r->list = list;
        r->cap = cap;
    }
    if (2 * (r->n + 1) > r->nslot) {
        size_t nslot = r->nslot ? 2 * r->nslot : 32;
        tss_stream **slot = calloc(nslot, sizeof *slot);
        if (!slot)
            return -1;
        for (size_t k = 0; k < r->n; k++)
            place(slot, nslot, r->list[k]);
        free(r->slot);
        r->slot = slot;
        r->nslot = nslot;
    }
    place(r->slot, r->nslot, s);
    s->index = r->created++;
    r->list[r->n++] = s;
    return 0;
}

void tss_registry_remove(tss_registry *r, tss_stream *s) {
    const size_t mask = r->nslot - 1;
    size_t hole = fnv1a(s->id) & mask;
    while (r->slot[hole] != s)
        hole = (hole + 1) & mask;
    /* backward shift: an entry after the hole moves into it unless its home slot lies
     * cyclically in (hole, j], where it is still found */
    for (size_t j = (hole + 1) & mask; r->slot[j]; j = (j + 1) & mask) {
        const size_t home = fnv1a(r->slot[j]->id) & mask;
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            r->slot[hole] = r->slot[j];
            hole = j;
        }
    }
    r->slot[hole] = NULL;
    /* the list is in creation order, so by index */
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->list[mid]->index < s->index)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(r->list + lo, r->list + lo + 1, (r->n - lo - 1) * sizeof *r->list);
    r->n--;
}

void tss_registry_free(tss_registry *r) {
    for (size_t k = 0; k < r->n; k++)
        tss_stream_destroy(&r->list[k]);
    free(r->list);
    free(r->slot);
    *r = (tss_registry){0};
}
