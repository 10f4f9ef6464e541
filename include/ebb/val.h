/* ebb/val.h: a YAML/JSON value tree that remembers where each value was.
 *
 * The policy file and plugin args are read into this tree (libyaml), so
 * every later error can name the file, line and field. It is also the
 * bridge for YAML snapshots (val -> cJSON) and for plugin args handed to
 * Lua (lua_args.c: val -> table). Scalars are typed as sigs.k8s.io/yaml
 * types them (YAML 1.1 rules of go-yaml v2): plain true/false/yes/no/on/off
 * (any case form the spec allows) are booleans, ~/null/empty are null,
 * decimal/0x/0o/0b integers (with '_'), floats (incl .inf/.nan), anything
 * else, and every quoted or block scalar, is a string.
 */
#ifndef EBB_VAL_H
#define EBB_VAL_H

#include "common.h"

enum ebb_val_type {
    EBB_VAL_NULL,
    EBB_VAL_BOOL,
    EBB_VAL_INT,
    EBB_VAL_FLOAT,
    EBB_VAL_STRING,
    EBB_VAL_SEQ,
    EBB_VAL_MAP,
};

struct ebb_val {
    uint8_t type;
    int line;                   /* 1-based line of the value's first char */
    int col;                    /* 1-based */
    union {
        bool b;
        int64_t i;
        double f;
        struct { char *s; size_t len; } str;
        struct { size_t n; struct ebb_val **items; } seq;
        struct { size_t n; char **keys; int *key_lines; struct ebb_val **vals; } map;
    } u;
};

/* Parse the first YAML (or JSON) document of `buf`. `file` is used only in
 * error messages. An empty document gives a NULL-typed value. Anchors and
 * aliases are resolved; merge keys ("<<") are expanded. Duplicate keys in a
 * mapping are an error (as the strict Kubernetes decoders report them).
 * Errors: EBB_EPARSE with err->file/line/msg set. */
int ebb_val_parse(const char *buf, size_t len, const char *file, struct ebb_val **out,
                  struct ebb_error *err);

/* Read and parse a whole file. EBB_EIO if it cannot be read. */
int ebb_val_load(const char *path, struct ebb_val **out, struct ebb_error *err);

/* Every YAML document of `buf`, in order (multi-document snapshots).
 * *out is a malloc'd array of n trees. */
int ebb_val_parse_all(const char *buf, size_t len, const char *file,
                      struct ebb_val ***out, size_t *n, struct ebb_error *err);

void ebb_val_free(struct ebb_val *v);
struct ebb_val *ebb_val_dup(const struct ebb_val *v);
/* Same values (lines aside; map keys in any order). NULL equals NULL only. */
bool ebb_val_equal(const struct ebb_val *a, const struct ebb_val *b);

/* Map lookup (NULL if `v` is not a map or has no such key). */
struct ebb_val *ebb_val_get(const struct ebb_val *v, const char *key);
int ebb_val_key_line(const struct ebb_val *v, const char *key);   /* 0 if absent */

/* Follow a dotted path with [i] indexes ("profiles[0].pluginConfig[2].args
 * .thresholds.cpu") from `root`; NULL if any step is missing. Used to turn a
 * field path reported by a validator into a line number. */
const struct ebb_val *ebb_val_at(const struct ebb_val *root, const char *path);
/* The best line for `path`: the value's line, or the line of the deepest
 * existing ancestor (for a missing field, where it would go). */
int ebb_val_line_for(const struct ebb_val *root, const char *path);

const char *ebb_val_type_name(int type);   /* "string", "integer", ... */

/* Constructors (for tests and for building args in C). */
struct ebb_val *ebb_val_new(int type, int line);
int ebb_val_map_put(struct ebb_val *map, const char *key, struct ebb_val *v);   /* takes v */
int ebb_val_seq_push(struct ebb_val *seq, struct ebb_val *v);                   /* takes v */
struct ebb_val *ebb_val_new_string(const char *s, int line);

/* cJSON conversion (snapshot YAML -> decode.c). The result is a cJSON tree
 * the caller frees with cJSON_Delete. */
struct cJSON;
struct cJSON *ebb_val_to_cjson(const struct ebb_val *v);

#endif
