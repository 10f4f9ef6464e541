/* ebb/v1alpha1.h: descheduler/v1alpha1 policies, converted to v1alpha2.
 *
 * Upstream read v1alpha1 policies (a `strategies` map) until v0.30 by
 * converting them into profiles (pkg/api/v1alpha1/conversion.go and
 * strategymigration.go at v0.30.0). ebb does the same conversion on the
 * value tree: the policy loader (config.c) converts a v1alpha1 document
 * before it reads it as v1alpha2, and `ebb convert` prints the result.
 * Engine thread or a front end; no state.
 */
#ifndef EBB_V1ALPHA1_H
#define EBB_V1ALPHA1_H

#include "common.h"
#include "val.h"

#define EBB_V1ALPHA1_API_VERSION "descheduler/v1alpha1"

/* Called for each field the conversion ignores (unknown fields, as
 * upstream's lenient decoder drops them, and fields upstream's conversion
 * dropped). `field` is the v1alpha1 path. A negative return stops the
 * conversion with that code. */
typedef int (*ebb_v1alpha1_warn_fn)(void *ud, int line, const char *field, const char *msg);

/* True when `root` is a map whose apiVersion is "descheduler/v1alpha1". */
bool ebb_v1alpha1_is(const struct ebb_val *root);

/* Convert the v1alpha1 document `root` (borrowed) into a v1alpha2
 * DeschedulerPolicy value tree (*out, owned by the caller, freed with
 * ebb_val_free). Every value of the result carries the line of the
 * v1alpha1 field it came from, so later errors name the user's line.
 * Profiles are in the order of the strategies in the file (upstream's Go
 * map had none); one profile "strategy-<Name>-profile" per enabled
 * strategy with DefaultEvictor and the strategy's plugin, as upstream.
 * Errors (EBB_ESCHEMA, EBB_ENOMEM) fill `err` with `file`, the line and the
 * v1alpha1 field: a wrong type, an unknown strategy name, both
 * thresholdPriority and thresholdPriorityClassName. `warn` may be NULL. */
int ebb_v1alpha1_convert(const struct ebb_val *root, const char *file, ebb_v1alpha1_warn_fn warn,
                         void *ud, struct ebb_val **out, struct ebb_error *err);

/* The tree as a YAML document (libyaml's emitter), block style, keys in
 * the tree's order. *out is malloc'd and NUL-terminated. */
int ebb_val_to_yaml(const struct ebb_val *v, char **out, size_t *len);

#endif
