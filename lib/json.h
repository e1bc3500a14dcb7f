/* SPDX-License-Identifier: Apache-2.0 */
/* json.h - a small JSON reader for the tool's own inputs (shapelet model files, the
 * windows of `tsmine score`, alert streams as JSON lines): the whole text is parsed
 * into a tree of values, each remembering the line it starts on so that callers can
 * say where a well-formed but wrong value is. No JSON library is among the build's
 * dependencies; this one covers RFC 8259 except \u escapes beyond ASCII.
 *
 * Messages have the shape the tool prints after "tsmine: ": "PATH:LINE: what". */
#ifndef TSMINE_JSON_H
#define TSMINE_JSON_H

#include <stddef.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value {
    json_type type;
    size_t line;              /* the line where the value starts (1-based) */
    double number;            /* JSON_NUMBER; JSON_BOOL: 0 or 1 */
    char *string;             /* JSON_STRING */
    struct json_value *items; /* JSON_ARRAY, JSON_OBJECT: n values */
    char **keys;              /* JSON_OBJECT: the n member names */
    size_t n;
} json_value;

/* What json_parse returns. */
enum { JSON_OK = 0, JSON_EDATA = -1, JSON_ENOMEM = -2 };

/* Parses text[0..len) as one JSON value (surrounded by nothing but white space) into
 * *out, which the caller frees with json_free. path and first_line only name the
 * place in messages (first_line: the line text starts on). Returns JSON_OK, or
 * JSON_EDATA / JSON_ENOMEM with *out empty and err holding "PATH:LINE: what" (a NUL
 * byte inside len is malformed). O(len) time; nesting is limited to 64 levels. */
int json_parse(const char *text, size_t len, const char *path, size_t first_line, json_value *out,
               char *err, size_t errlen);

/* Frees what v holds and empties it (v itself belongs to the caller). */
void json_free(json_value *v);

/* The value of member key of object o, or NULL (also when o is not an object). The
 * first one wins when a name repeats. O(members). */
const json_value *json_member(const json_value *o, const char *key);

/* The name of a type for messages: "null", "a boolean", "a number", ... */
const char *json_type_name(json_type t);

#endif
