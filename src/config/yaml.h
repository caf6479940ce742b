/* SPDX-License-Identifier: Apache-2.0 */
/*
 * YAML (or JSON) text to jansson values, typed the way Kubernetes reads manifests
 * (sigs.k8s.io/yaml: YAML 1.1 resolution of go-yaml v2, then JSON):
 *   - plain scalars: null (~ null Null NULL, empty), booleans (true/false, yes/no, on/off, y/n in
 *     their three spellings), integers (decimal, 0x.., 0o.., 0b.., 0777 octal, '_' separators),
 *     floats ([-+]?(.d+|d+(.d*)?)([eE][-+]?d+)?, .inf/.nan refused: JSON cannot hold them);
 *     everything else a string. A float with an integral value becomes a JSON integer, as the
 *     YAML -> JSON -> decode path of Kubernetes produces (`30.0` -> 30).
 *   - quoted and block scalars, and `!!str` tagged ones, stay strings: "30" is a string, 30 an
 *     integer. Timestamps stay strings (go-yaml v2 does the same for untyped decoding).
 *   - anchors/aliases and `<<` merge keys are expanded; duplicate keys are refused; mapping keys
 *     must be scalars (numbers and booleans become their text).
 * Text starting with '{' or '[' is read as a stream of JSON values first (as kubectl does), and as
 * YAML if that fails. Empty documents (`---` with nothing, comments only) are skipped.
 * Errors say "line L, column C: <problem>". Limits: nesting depth GS_YAML_MAX_DEPTH, total nodes
 * (after alias expansion) GS_YAML_MAX_NODES -> -E2BIG.
 */
#ifndef GS_COMMON_YAML_H
#define GS_COMMON_YAML_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "base/error.h"

#define GS_YAML_MAX_DEPTH 256
#define GS_YAML_MAX_NODES 1000000

/* All documents of `text` as a new JSON array (one element per non-empty document). */
int gs_yaml_load_documents(const char *text, size_t len, json_t **out_docs, struct gs_error *err);

/* Exactly one document (-EINVAL if there are none or several). */
int gs_yaml_load_one(const char *text, size_t len, json_t **out_doc, struct gs_error *err);

/*
 * Emit one value as a YAML block document (no "---"; the caller separates documents). Mappings in
 * block style, two spaces per level, sequence items "- " at the mapping's indent (kubectl's
 * style); scalars as JSON text, which YAML reads back unchanged (strings double-quoted, numbers,
 * true/false/null); keys plain when they cannot be read as anything but that string, else
 * double-quoted. gs_yaml_load_one(gs_yaml_dumps(v)) equals v. Empty mappings/sequences are {}/[].
 */
void gs_yaml_dumpf(FILE *out, const json_t *v);
/* The same into a new NUL-terminated string (free()); NULL when out of memory. */
char *gs_yaml_dumps(const json_t *v);

#endif /* GS_COMMON_YAML_H */
