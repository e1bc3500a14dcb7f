/* SPDX-License-Identifier: Apache-2.0 */
/* text_buf.h - text appended to a caller's bounded buffer, for the renderers that
 * build a reply in one pass (metrics_text.c, alertmanager_body.c): the length keeps
 * counting past the buffer's end, so the caller learns the size it needed. */
#ifndef TSD_TEXT_BUF_H
#define TSD_TEXT_BUF_H

#include <stddef.h>

typedef struct {
    char *buf;
    size_t len, used; /* the buffer's size; what was written, or would have been */
} tsd_text;

/* printf-style append; what does not fit is cut, and still counted in used. */
void tsd_text_put(tsd_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
