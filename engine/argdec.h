/* engine/argdec.h: strict decoding of plugin args from a value tree, for
 * native plugins. Every failure fills err->field with the path relative to
 * the args ("podProtections.defaultDisabled[1]"), err->line with the
 * value's line, and returns EBB_ESCHEMA. Absent keys and nulls leave the
 * output untouched and *present false. */
#ifndef EBB_ARGDEC_H
#define EBB_ARGDEC_H

#include "ebb/val.h"
#include "ebb/model.h"

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

/* "path.key" / "key" into buf. */
const char *ebb__args_join(char *buf, size_t len, const char *path, const char *key);

#endif
