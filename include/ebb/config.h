/* ebb/config.h: the descheduler/v1alpha2 DeschedulerPolicy file.
 *
 * ebb_policy_load reads a policy (YAML or JSON), checks its structure and
 * every top-level field against the upstream schema, and returns profiles
 * whose plugin args are still value trees: the framework decodes them with
 * each plugin's own schema when it builds the profile (framework.c), and
 * maps any field error back to a line with ebb_val_line_for(policy->root).
 *
 * Applied here, as upstream policyconfig.go does: DefaultEvictor is
 * prepended to `filter` and `preevictionfilter` of every profile when
 * absent, with a pluginConfig entry of empty args when none is given.
 * `preEvictionFilter` is accepted as an alias of `preevictionfilter`.
 * Unknown top-level/profile/plugins keys are warnings (upstream ignores
 * them), not errors; pluginConfig args are strict (checked later).
 */
#ifndef EBB_CONFIG_H
#define EBB_CONFIG_H

#include "common.h"
#include "val.h"

enum ebb_ext {
    EBB_EXT_DESCHEDULE = 0,
    EBB_EXT_BALANCE,
    EBB_EXT_FILTER,
    EBB_EXT_PREEVICTIONFILTER,
    EBB_EXT_EVICT,               /* the profile's evictor (Koordinator's plugins.evict): at
                                    most one; none: the Eviction API */
    EBB_EXT_MAX,
};

/* "deschedule", "balance", "filter", "preevictionfilter", "evict" */
const char *ebb_ext_name(int ext);

struct ebb_plugin_ref {
    char *name;
    int line;
};

struct ebb_plugin_set {
    size_t n;
    struct ebb_plugin_ref *v;    /* `enabled`, in order; duplicates removed with a warning */
    size_t ndisabled;            /* `disabled` is parsed and, as upstream, unused */
};

/* `limits` of a pluginConfig entry (an ebb extension next to `args`):
 *   limits: {memory: 128Mi, timeout: 30s, quarantineAfter: 3}
 * memory and timeout bound each Lua instance of the plugin (per call for
 * the timeout); quarantineAfter is the number of failed runs in a row
 * after which the plugin is set aside with backoff (0: never). Zero /
 * negative values mean "not set": the engine's defaults apply. */
struct ebb_plugin_limits {
    int64_t memory;              /* bytes; 0: not set */
    int64_t timeout_ns;          /* 0: not set */
    int64_t quarantine_after;    /* -1: not set; 0: never */
};

struct ebb_plugin_config {
    char *name;
    int line;
    char path[96];               /* "profiles[0].pluginConfig[2]" */
    struct ebb_val *args;        /* owned copy of `args`; NULL if absent */
    struct ebb_plugin_limits limits;
};

struct ebb_profile {
    char *name;
    int line;
    char path[32];               /* "profiles[0]" */
    size_t nconfigs;
    struct ebb_plugin_config *configs;
    struct ebb_plugin_set sets[EBB_EXT_MAX];
};

enum { EBB_METRICS_KUBERNETES = 1, EBB_METRICS_PROMETHEUS = 2 };

struct ebb_metrics_provider {
    int source;                  /* EBB_METRICS_* */
    char *prometheus_url;
    char *secret_namespace;      /* authToken.secretReference */
    char *secret_name;
};

#define EBB_UNLIMITED (-1)

struct ebb_policy {
    char *file;                  /* as given */
    struct ebb_val *root;        /* the whole document, for line lookups */
    char *node_selector;         /* NULL when unset */
    int64_t max_per_node;        /* EBB_UNLIMITED when unset */
    int64_t max_per_namespace;
    int64_t max_total;
    bool eviction_failure_events;
    bool metrics_collector_enabled;
    size_t nproviders;
    struct ebb_metrics_provider *providers;
    bool has_grace_period;
    int64_t grace_period_seconds;
    size_t nprofiles;
    struct ebb_profile *profiles;
    size_t nwarnings;
    char **warnings;             /* "file:line: field: unknown field, ignored" */
};

/* Load and check `path`. Errors (EBB_EIO, EBB_EPARSE, EBB_ESCHEMA) fill
 * `err` with file, line and field: wrong apiVersion/kind, a field of the
 * wrong type, a negative limit, a profile without a name or with a duplicate
 * name, an enabled plugin without a pluginConfig entry, two pluginConfig
 * entries for one plugin (a plugin enabled twice in one set is a warning,
 * see ebb_plugin_set), metrics provider rules (each source once; Prometheus
 * needs a parsable url; authToken needs namespace and name;
 * metricsCollector.enabled conflicts with a KubernetesMetrics provider), a
 * bad nodeSelector string. */
int ebb_policy_load(const char *path, struct ebb_policy **out, struct ebb_error *err);
int ebb_policy_parse(const char *buf, size_t len, const char *file, struct ebb_policy **out,
                     struct ebb_error *err);
void ebb_policy_free(struct ebb_policy *p);

/* The Prometheus metrics provider of a policy, or NULL. */
const struct ebb_metrics_provider *ebb_prom_provider(const struct ebb_policy *p);

/* The pluginConfig entry for `name` in `profile`, or NULL. */
const struct ebb_plugin_config *ebb_profile_config(const struct ebb_profile *profile,
                                                   const char *name);

#endif
