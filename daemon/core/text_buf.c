/* SPDX-License-Identifier: Apache-2.0 */
/* text_buf.c - bounded text appends (text_buf.h). */
#include "daemon/core/text_buf.h"

#include <stdarg.h>
#include <stdio.h>

void tsd_text_put(tsd_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = t->used < t->len ? t->len - t->used : 0;
    int n = vsnprintf(room ? t->buf + t->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->used += (size_t)n;
}
