/* SPDX-License-Identifier: Apache-2.0 */
/* emit.c - JSON-lines and CSV output of result rows. */
#include "lib/emit.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int emit_format_parse(const char *s, emit_format *out) {
    if (strcmp(s, "json") == 0)
        *out = EMIT_JSON;
    else if (strcmp(s, "csv") == 0)
        *out = EMIT_CSV;
    else
        return -1;
    return 0;
}

size_t emit_double(char *buf, size_t len, double x) {
    int k = 0;
    /* %.15g already gives the shortest form of every value that has one of at most
     * 15 digits (%g drops trailing zeros); 17 digits always round-trip. */
    for (int prec = 15; prec <= 17; prec++) {
        k = snprintf(buf, len, "%.*g", prec, x);
        if (prec == 17 || strtod(buf, NULL) == x)
            break;
    }
    return k < 0 ? 0 : (size_t)k;
}

void emit_json_char(char out[8], unsigned char c) {
    if (c == '"' || c == '\\')
        snprintf(out, 8, "\\%c", c);
    else if (c < 0x20)
        snprintf(out, 8, "\\u%04x", c);
    else
        out[0] = (char)c, out[1] = '\0';
}

void emit_json_string(FILE *out, const char *s) {
    char e[8];
    fputc('"', out);
    for (; *s; s++) {
        emit_json_char(e, (unsigned char)*s);
        fputs(e, out);
    }
    fputc('"', out);
}

void emit_begin(emitter *e, FILE *out, emit_format fmt, const emit_field *fields, size_t n) {
    e->out = out;
    e->fmt = fmt;
    e->fields = fields;
    e->nfields = n;
    if (fmt == EMIT_CSV) {
        for (size_t i = 0; i < n; i++)
            fprintf(out, "%s%s", i ? "," : "", fields[i].name);
        fputc('\n', out);
    }
}

/* Prints s as a CSV field: as it is, or double-quoted (quotes doubled) when it holds a
 * comma, a quote or a line end. */
static void emit_csv_string(FILE *out, const char *s) {
    if (!s[strcspn(s, ",\"\r\n")]) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* Prints one value in the emitter's format. */
static void emit_value_out(const emitter *e, const emit_field *f, emit_value v) {
    char buf[40];
    if (f->type == EMIT_TEXT) {
        if (v.s && e->fmt == EMIT_JSON)
            emit_json_string(e->out, v.s);
        else if (v.s)
            emit_csv_string(e->out, v.s);
        else if (e->fmt == EMIT_JSON)
            fputs("null", e->out);
    } else if (f->type == EMIT_INT) {
        fprintf(e->out, "%" PRId64, v.i);
    } else if (isfinite(v.d)) {
        emit_double(buf, sizeof buf, v.d);
        fputs(buf, e->out);
    } else if (e->fmt == EMIT_JSON) {
        fputs("null", e->out);
    }
}

void emit_row(const emitter *e, const emit_value *v) {
    int json = e->fmt == EMIT_JSON;
    if (json)
        fputc('{', e->out);
    for (size_t i = 0; i < e->nfields; i++) {
        if (i)
            fputc(',', e->out);
        if (json)
            fprintf(e->out, "\"%s\":", e->fields[i].name);
        emit_value_out(e, &e->fields[i], v[i]);
    }
    fputs(json ? "}\n" : "\n", e->out);
}

int emit_end(emitter *e) {
    errno = 0;
    if (fflush(e->out) != 0 || ferror(e->out)) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}
