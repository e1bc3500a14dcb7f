/* SPDX-License-Identifier: Apache-2.0 */
/* print.c - the effective settings as text (tsc_print), from the settings table. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "settings.h"

/* The shortest of %.15g and %.17g that reads back as v. */
static void number(FILE *f, double v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, f);
}

/* One value of row s found at base (a tsc_config or a tss_params). */
static void value(FILE *f, const tsci_setting *s, const char *base) {
    const void *p = base + s->offset;
    switch (s->type) {
    case TSCI_STRING: fprintf(f, "\"%s\"", (const char *)p); break;
    case TSCI_STRINGS: {
        size_t n = *(const size_t *)(base + s->count_offset);
        fputs("[", f);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s\"%s\"", i ? ", " : " ", (const char *)p + i * s->size);
        fputs(n ? " ]" : "]", f);
        break;
    }
    case TSCI_INT: fprintf(f, "%d", *(const int *)p); break;
    case TSCI_U32: fprintf(f, "%u", *(const uint32_t *)p); break;
    case TSCI_U32_AUTO:
        if (*(const uint32_t *)p == 0)
            fputs("\"auto\"", f);
        else
            fprintf(f, "%u", *(const uint32_t *)p);
        break;
    case TSCI_U64: fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case TSCI_DOUBLE: number(f, *(const double *)p); break;
    case TSCI_RANGE:
        if (isnan(*(const double *)p))
            fputs("\"auto\"", f);
        else
            number(f, *(const double *)p);
        break;
    case TSCI_BOOL: fputs(*(const int *)p ? "true" : "false", f); break;
    case TSCI_STREAMS: break;
    }
}

static void params(FILE *f, const char *prefix, const tss_params *p) {
    for (const tsci_setting *s = tsci_stream_settings; s->path; s++) {
        fprintf(f, "%s.%s = ", prefix, s->path);
        value(f, s, (const char *)p);
        fputs(";\n", f);
    }
}

void tsc_print(FILE *f, const tsc_config *cfg) {
    fprintf(f, "# effective settings (%s)\n", cfg->source[0] ? cfg->source : "embedded defaults");
    for (const tsci_setting *s = tsci_settings; s->path; s++) {
        if (s->type != TSCI_STREAMS) {
            fprintf(f, "%s = ", s->path);
            value(f, s, (const char *)cfg);
            fputs(";\n", f);
            continue;
        }
        params(f, "streams.default", &cfg->stream_default);
        for (size_t i = 0; i < cfg->n_rules; i++) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "streams.overrides[%zu]", i);
            fprintf(f, "%s.match = \"%s\";\n", prefix, cfg->rules[i].pattern);
            params(f, prefix, &cfg->rules[i].params);
        }
    }
}
