/* engine/core/argdec.h: the one reader of value trees (ebb_val, from YAML or
 * JSON) for everything a user writes: the policy (config.c), plugin args
 * of native plugins (default_evictor.c), `ebb test` files (testrun_file.c) and
 * kubeconfigs (kube_config.c). Field paths are joined one way ("a.b",
 * "a[0]"), absent and null are the same, integers are read one way, and a
 * wrong type reads "expected a string, got a list".
 *
 * The ebb__args_* getters are strict: every failure fills err->field with
 * the path ("podProtections.defaultDisabled[1]"), err->line with the
 * value's line, leaves err->file empty (ebb__args_in_file stamps it) and
 * returns EBB_ESCHEMA. Absent keys and nulls leave the output untouched and
 * *present false. Engine thread; nothing here allocates except
 * ebb__args_label_selector's selector. */
#ifndef EBB_ARGDEC_H
#define EBB_ARGDEC_H

#include "ebb/val.h"
#include "ebb/model.h"

/* The value of `key` in map `m`, or NULL when absent, null, or `m` is no
 * map. Borrowed from the tree. */
const struct ebb_val *ebb__val_at(const struct ebb_val *m, const char *key);
/* "a string", "an integer", "a list", ... for messages. */
const char *ebb__val_a(const struct ebb_val *v);
/* An integer value. A float with an integral value is one: upstream turns
 * YAML into JSON first, and 5.0 reaches the Go decoder as 5; beyond int64
 * is clamped, 1e21 and up (Go's exponent form) is not an integer.
 * 0 or EBB_ESCHEMA (no error is filled). */
int ebb__val_int(const struct ebb_val *v, int64_t *out);
/* The index of the first key of map `m` from `from` on that is not in the
 * NULL-terminated `known`, or m->u.map.n when there is none: for callers
 * that warn (the policy, as upstream's lenient decoder ignores them) or
 * refuse (strict args, ebb test files). */
size_t ebb__args_unknown(const struct ebb_val *m, const char *const *known, size_t from);
/* "expected <want>, got <a type>" at v's line and `field`. */
int ebb__args_type_error(const struct ebb_val *v, const char *field, const char *want,
                         struct ebb_error *err);
/* Stamp `file` on an error a getter filled (rc < 0, err->file empty);
 * returns rc. */
int ebb__args_in_file(int rc, const char *file, struct ebb_error *err);

/* Unknown keys of map `m` (not in the NULL-terminated `known`) are errors,
 * as upstream's strict decoder reports them. A non-map is an error too. */
int ebb__args_keys(const struct ebb_val *m, const char *path, const char *const *known,
                   struct ebb_error *err);
int ebb__args_bool(const struct ebb_val *m, const char *key, const char *path, bool *out,
                   bool *present, struct ebb_error *err);
int ebb__args_int(const struct ebb_val *m, const char *key, const char *path, int64_t min,
                  int64_t max, int64_t *out, bool *present, struct ebb_error *err);
int ebb__args_str(const struct ebb_val *m, const char *key, const char *path, const char **out,
                  bool *present, struct ebb_error *err);
/* A sequence of strings: *out points into the tree (valid while it lives). */
int ebb__args_strs(const struct ebb_val *m, const char *key, const char *path,
                   const struct ebb_val **out, struct ebb_error *err);
/* A map value (or NULL when absent). */
int ebb__args_map(const struct ebb_val *m, const char *key, const char *path,
                  const struct ebb_val **out, struct ebb_error *err);
/* A metav1.LabelSelector; *out NULL when absent. */
int ebb__args_label_selector(const struct ebb_val *m, const char *key, const char *path,
                             struct ebb_selector **out, struct ebb_error *err);

/* "path.key" / "key" and "path[i]" into buf (cut to fit: paths only label
 * messages). */
const char *ebb__args_join(char *buf, size_t len, const char *path, const char *key);
const char *ebb__args_index(char *buf, size_t len, const char *path, size_t i);

#endif
