/* SPDX-License-Identifier: Apache-2.0 */
/* conf_keys.c - build-time generator of tsmined.conf(5): fills in each key's default and
 * whether a reload applies it, from the settings table itself (config/settings.c), so that
 * the manual page cannot drift from the daemon.
 *
 *   conf_keys IN.scd OUT.scd [NAME]
 *
 * (NAME: the source file to name in warnings, by default IN.)
 * IN is the page's scdoc source. A line "@key PATH" becomes the entry's term line
 * "*PATH* = DEFAULT [reload]" (or "[restart]"); the tab-indented description under it is
 * copied as it is. A line "@undescribed" marks where keys of the table that have no
 * "@key" line get an entry of their own (under a heading that tests/man_test.sh fails
 * on: the build goes on, the test names the key). An "@key" of a path the table does
 * not have is left out of the page with its description (up to the next blank line),
 * with a warning: the page never shows a key the daemon would refuse, and a source
 * may describe keys of another branch before they are merged. Defaults are the text `tsmined
 * --check-config` prints for them (tsc_print of tsc_defaults). Exit status: 0, also
 * with such warnings (printed on stderr); 1 when a file cannot be read or written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "settings.h"

#define MAX_KEYS 256

/* One documented key: its path as --check-config prints it, its default as text,
 * whether a change needs a restart, and how many "@key" lines describe it. */
typedef struct {
    char path[96];
    char def[320];
    int restart;
    int described;
} key_doc;

static key_doc keys[MAX_KEYS];
static size_t n_keys;

static key_doc *find_key(const char *path) {
    for (size_t i = 0; i < n_keys; i++)
        if (strcmp(keys[i].path, path) == 0)
            return &keys[i];
    return NULL;
}

static void add_key(const char *path, int restart) {
    if (n_keys == MAX_KEYS || find_key(path))
        return;
    key_doc *k = &keys[n_keys++];
    snprintf(k->path, sizeof k->path, "%s", path);
    snprintf(k->def, sizeof k->def, "(none)");
    k->restart = restart;
}

/* The table's keys in table order: the top-level rows, streams.default.KEY for each
 * row of the stream table, then streams.overrides (reloadable, like every stream key). */
static void collect_keys(void) {
    for (const tsci_setting *s = tsci_settings; s->path; s++) {
        if (s->type != TSCI_STREAMS) {
            add_key(s->path, s->restart);
            continue;
        }
        for (const tsci_setting *p = tsci_stream_settings; p->path; p++) {
            char path[96];
            snprintf(path, sizeof path, "streams.default.%s", p->path);
            add_key(path, s->restart || p->restart);
        }
        add_key("streams.overrides", s->restart);
    }
    key_doc *o = find_key("streams.overrides");
    if (o)
        snprintf(o->def, sizeof o->def, "( )");
}

/* Fills each key's default from tsc_print's "PATH = VALUE;" lines of the embedded
 * defaults: the exact text `tsmined --check-config` shows. Returns 0 or -1. */
static int collect_defaults(void) {
    static tsc_config cfg; /* large */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return -1;
    tsc_defaults(&cfg);
    tsc_print(f, &cfg);
    if (fclose(f) != 0) {
        free(text);
        return -1;
    }
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strstr(line, " = ");
        size_t n = strlen(line);
        if (line[0] == '#' || !eq || n < 2 || line[n - 1] != ';')
            continue;
        *eq = '\0';
        line[n - 1] = '\0';
        key_doc *k = find_key(line);
        if (k)
            snprintf(k->def, sizeof k->def, "%s", eq + 3);
    }
    free(text);
    return 0;
}

/* Writes s with scdoc's inline markup characters escaped. */
static void put_escaped(FILE *out, const char *s) {
    for (; *s; s++) {
        if (*s == '*' || *s == '_' || *s == '\\')
            fputc('\\', out);
        fputc(*s, out);
    }
}

/* The term line of one entry. */
static void put_term(FILE *out, const key_doc *k) {
    fputc('*', out);
    put_escaped(out, k->path);
    fputs("* = ", out);
    put_escaped(out, k->def);
    fputs(k->restart ? " [restart]\n" : " [reload]\n", out);
}

/* The entries of the keys no "@key" line describes, under a heading of their own. */
static void put_undescribed(FILE *out, const char *in_path) {
    int any = 0;
    for (size_t i = 0; i < n_keys; i++) {
        if (keys[i].described)
            continue;
        if (!any)
            fputs("# KEYS NOT DESCRIBED YET\n\n", out);
        any = 1;
        fprintf(stderr,
                "conf_keys: warning: %s has no \"@key %s\" (config/settings.c has the key): "
                "describe it there\n",
                in_path, keys[i].path);
        put_term(out, &keys[i]);
        fputs("\tNot described yet.\n\n", out);
    }
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: conf_keys IN.scd OUT.scd [NAME]\n");
        return 1;
    }
    const char *name = argc == 4 ? argv[3] : argv[1];
    collect_keys();
    if (collect_defaults() != 0) {
        fprintf(stderr, "conf_keys: cannot print the defaults\n");
        return 1;
    }
    FILE *in = fopen(argv[1], "r");
    if (!in) {
        perror(argv[1]);
        return 1;
    }
    /* First pass: which keys are described (the undescribed ones may be placed above). */
    char line[4096];
    int placed = 0;
    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = '\0';
        key_doc *k = strncmp(line, "@key ", 5) == 0 ? find_key(line + 5) : NULL;
        if (k && k->described++)
            fprintf(stderr, "conf_keys: warning: %s describes %s twice\n", name, k->path);
    }
    rewind(in);
    FILE *out = fopen(argv[2], "w");
    if (!out) {
        perror(argv[2]);
        fclose(in);
        return 1;
    }
    int skipping = 0; /* inside the description of a key the table does not have */
    while (fgets(line, sizeof line, in)) {
        size_t n = strcspn(line, "\n");
        if (skipping) {
            skipping = n != 0;
            continue;
        }
        if (strncmp(line, "@key ", 5) == 0) {
            line[n] = '\0';
            key_doc *k = find_key(line + 5);
            if (k) {
                put_term(out, k);
            } else {
                fprintf(stderr,
                        "conf_keys: warning: %s describes \"%s\", which config/settings.c "
                        "does not have: left out of the page\n",
                        name, line + 5);
                skipping = 1;
            }
        } else if (strncmp(line, "@undescribed", 12) == 0) {
            put_undescribed(out, name);
            placed = 1;
        } else {
            fputs(line, out);
        }
    }
    if (!placed)
        put_undescribed(out, name);
    int rc = ferror(in) || ferror(out);
    fclose(in);
    if (fclose(out) != 0 || rc) {
        fprintf(stderr, "conf_keys: cannot write %s\n", argv[2]);
        return 1;
    }
    return 0;
}
