/* SPDX-License-Identifier: Apache-2.0 */
/* textbuf.h - a growing text in a fixed buffer, as snprintf writes one: what does not
 * fit is counted, not written, so a caller learns the length the whole text needs
 * (alert_json.c, alert_text.c). Header-only: two small functions. */
#ifndef TSM_TEXTBUF_H
#define TSM_TEXTBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

typedef struct {
    char *buf;
    size_t len, n; /* n: the text's length so far, written or not */
} tsm_text;

/* An empty text over buf[0 .. len). */
static inline tsm_text tsm_text_of(char *buf, size_t len) {
    if (len)
        buf[0] = '\0';
    return (tsm_text){buf, len, 0};
}

/* Appends printf(fmt, ...), as much of it as fits. */
static inline void tsm_text_put(tsm_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void tsm_text_put(tsm_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k =
        vsnprintf(t->n < t->len ? t->buf + t->n : NULL, t->n < t->len ? t->len - t->n : 0, fmt, ap);
    va_end(ap);
    t->n += k > 0 ? (size_t)k : 0;
}

#endif
