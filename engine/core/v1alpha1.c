/* descheduler/v1alpha1 policies, converted to a v1alpha2 value tree.
 *
 * A port of upstream's V1alpha1ToInternal and StrategyParamsToPluginArgs
 * (v0.30.0, pkg/api/v1alpha1/conversion.go and strategymigration.go). The
 * result is a v1alpha2 document that config.c then reads like any other,
 * so the plugins' own args checks (thresholds, states, ...) run once, in
 * one place, for both versions. The invariant kept here: every node of the
 * result carries the line of the v1alpha1 field it was made from, so an
 * error found later in the converted policy names a line of the user's
 * file. Args fields upstream left at their zero value are left out (the
 * plugins' defaults are the same zero values), which keeps `ebb convert`'s
 * output to what the user wrote.
 *
 * Called by config.c (engine thread, at load and reload) and by
 * `ebb convert`. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "core/argdec.h"
#include "ebb/v1alpha1.h"

#define V1ALPHA2 "descheduler/v1alpha2"
#define KIND "DeschedulerPolicy"
#define DEFAULT_EVICTOR "DefaultEvictor"

struct conv {
    const char *file;
    struct ebb_error *err;
    ebb_v1alpha1_warn_fn warn;
    void *ud;
    bool evict_local_storage, evict_daemonset, evict_system_critical, ignore_pvc, evict_failed_bare;
};

/* One strategy: its arguments are built into `args` from `params` (may be
 * NULL: upstream's empty StrategyParameters). */
struct strategy {
    const char *name;
    const char *ext;   /* "deschedule" or "balance": the plugin's kind upstream */
    int (*args)(struct conv *c, const struct ebb_val *params, const char *path, int line,
                struct ebb_val *args);
};

bool ebb_v1alpha1_is(const struct ebb_val *root)
{
    const struct ebb_val *av = ebb__val_at(root, "apiVersion");

    return av != NULL && av->type == EBB_VAL_STRING &&
           strcmp(av->u.str.s, EBB_V1ALPHA1_API_VERSION) == 0;
}

/* ---- errors, warnings and building ------------------------------------------ */

static int nomem(struct conv *c)
{
    return ebb_error_set(c->err, EBB_ENOMEM, c->file, 0, NULL, "out of memory");
}

/* argdec's getters fill line and field; the file is ours. */
static int in_file(struct conv *c, int rc)
{
    return ebb__args_in_file(rc, c->file, c->err);
}

static int warn(struct conv *c, int line, const char *field, const char *msg)
{
    return c->warn != NULL ? c->warn(c->ud, line, field, msg) : 0;
}

static int warn_unknown(struct conv *c, const struct ebb_val *m, const char *path,
                        const char *const *known)
{
    char f[300];
    int rc;

    if (m == NULL || m->type != EBB_VAL_MAP)
        return 0;
    for (size_t i = 0; (i = ebb__args_unknown(m, known, i)) < m->u.map.n; i++) {
        ebb__args_join(f, sizeof(f), path, m->u.map.keys[i]);
        if ((rc = warn(c, m->u.map.key_lines[i], f, "unknown field, ignored")) < 0)
            return rc;
    }
    return 0;
}

/* Put `v` (taken, may be NULL from a failed allocation) under `key`. */
static int put(struct conv *c, struct ebb_val *map, const char *key, struct ebb_val *v)
{
    if (v == NULL)
        return nomem(c);
    if (ebb_val_map_put(map, key, v) != 0) {
        ebb_val_free(v);
        return nomem(c);
    }
    return 0;
}

static struct ebb_val *new_bool(bool b, int line)
{
    struct ebb_val *v = ebb_val_new(EBB_VAL_BOOL, line);

    if (v != NULL)
        v->u.b = b;
    return v;
}

static struct ebb_val *new_int(int64_t i, int line)
{
    struct ebb_val *v = ebb_val_new(EBB_VAL_INT, line);

    if (v != NULL)
        v->u.i = i;
    return v;
}

/* A list of the strings `names` (NULL-terminated), all at `line`. */
static struct ebb_val *new_strings(const char *const *names, int line)
{
    struct ebb_val *seq = ebb_val_new(EBB_VAL_SEQ, line), *s;

    for (size_t i = 0; seq != NULL && names[i] != NULL; i++) {
        if ((s = ebb_val_new_string(names[i], line)) == NULL || ebb_val_seq_push(seq, s) != 0) {
            ebb_val_free(s);
            ebb_val_free(seq);
            return NULL;
        }
    }
    return seq;
}

/* ---- reading v1alpha1 fields ------------------------------------------------ */

/* A bool field; true only when set to true. */
static int get_bool(struct conv *c, const struct ebb_val *m, const char *key, const char *path,
                    bool *out)
{
    *out = false;
    return in_file(c, ebb__args_bool(m, key, path, out, NULL, c->err));
}

/* Copy a bool `from` of `m` to `to` of `args` when it is true (false is
 * the args' zero value). */
static int copy_true(struct conv *c, const struct ebb_val *m, const char *from, const char *path,
                     struct ebb_val *args, const char *to)
{
    bool b;
    int rc;

    if ((rc = get_bool(c, m, from, path, &b)) != 0 || !b)
        return rc;
    return put(c, args, to, new_bool(true, ebb__val_at(m, from)->line));
}

/* Copy an integer in [min, max]; `zero_too`: also when it is 0 (a Go
 * pointer field, where 0 is not "unset"). */
static int copy_int(struct conv *c, const struct ebb_val *m, const char *from, const char *path,
                    int64_t min, int64_t max, bool zero_too, struct ebb_val *args, const char *to)
{
    bool present = false;
    int64_t v = 0;
    int rc;

    if ((rc = in_file(c, ebb__args_int(m, from, path, min, max, &v, &present, c->err))) != 0)
        return rc;
    if (!present || (v == 0 && !zero_too))
        return 0;
    return put(c, args, to, new_int(v, ebb__val_at(m, from)->line));
}

/* Copy a list of strings when it is not empty. */
static int copy_strings(struct conv *c, const struct ebb_val *m, const char *from,
                        const char *path, struct ebb_val *args, const char *to)
{
    const struct ebb_val *seq = NULL;
    int rc;

    if ((rc = in_file(c, ebb__args_strs(m, from, path, &seq, c->err))) != 0)
        return rc;
    if (seq == NULL || seq->u.seq.n == 0)
        return 0;
    return put(c, args, to, ebb_val_dup(seq));
}

/* Copy a map as it is (its entries are the plugin's to check). */
static int copy_map(struct conv *c, const struct ebb_val *m, const char *from, const char *path,
                    struct ebb_val *args, const char *to)
{
    const struct ebb_val *v = NULL;
    int rc;

    if ((rc = in_file(c, ebb__args_map(m, from, path, &v, c->err))) != 0)
        return rc;
    if (v == NULL)
        return 0;
    return put(c, args, to, ebb_val_dup(v));
}

/* A sub-map of params (nil when absent), its unknown fields warned. */
static int sub_map(struct conv *c, const struct ebb_val *params, const char *key,
                   const char *path, const char *const *known, const struct ebb_val **out,
                   char *sub, size_t sublen)
{
    int rc;

    *out = NULL;
    ebb__args_join(sub, sublen, path, key);
    if ((rc = in_file(c, ebb__args_map(params, key, path, out, c->err))) != 0)
        return rc;
    return warn_unknown(c, *out, sub, known);
}

/* v1alpha1NamespacesToInternal: present (even empty) stays present. */
static int copy_namespaces(struct conv *c, const struct ebb_val *params, const char *path,
                           struct ebb_val *args, const char *to)
{
    static const char *const known[] = { "include", "exclude", NULL };
    const struct ebb_val *ns;
    struct ebb_val *out;
    char sub[300];
    int rc;

    if ((rc = sub_map(c, params, "namespaces", path, known, &ns, sub, sizeof(sub))) != 0 ||
        ns == NULL)
        return rc;
    if ((out = ebb_val_new(EBB_VAL_MAP, ns->line)) == NULL)
        return nomem(c);
    if ((rc = copy_strings(c, ns, "include", sub, out, "include")) != 0 ||
        (rc = copy_strings(c, ns, "exclude", sub, out, "exclude")) != 0) {
        ebb_val_free(out);
        return rc;
    }
    return put(c, args, to, out);
}

static int copy_selector(struct conv *c, const struct ebb_val *params, const char *path,
                         struct ebb_val *args)
{
    return copy_map(c, params, "labelSelector", path, args, "labelSelector");
}

/* Upstream's conversion read some params only for some strategies; a user
 * who set one elsewhere is told it is ignored rather than left guessing. */
static int dropped(struct conv *c, const struct ebb_val *params, const char *key,
                   const char *path, const char *strategy)
{
    char f[300], msg[200];

    if (ebb__val_at(params, key) == NULL)
        return 0;
    ebb__args_join(f, sizeof(f), path, key);
    snprintf(msg, sizeof(msg), "%s does not take %s (upstream's conversion dropped it), ignored",
             strategy, key);
    return warn(c, ebb_val_key_line(params, key), f, msg);
}

/* ---- the strategies (StrategyParamsToPluginArgs) ---------------------------- */

static int args_node_taints(struct conv *c, const struct ebb_val *p, const char *path, int line,
                            struct ebb_val *a)
{
    int rc;

    (void)line;
    if ((rc = copy_namespaces(c, p, path, a, "namespaces")) != 0 ||
        (rc = copy_selector(c, p, path, a)) != 0 ||
        (rc = copy_true(c, p, "includePreferNoSchedule", path, a, "includePreferNoSchedule")) != 0 ||
        (rc = copy_strings(c, p, "excludedTaints", path, a, "excludedTaints")) != 0)
        return rc;
    return dropped(c, p, "includedTaints", path, "RemovePodsViolatingNodeTaints");
}

static int args_failed_pods(struct conv *c, const struct ebb_val *p, const char *path, int line,
                            struct ebb_val *a)
{
    static const char *const known[] = {
        "excludeOwnerKinds", "minPodLifetimeSeconds", "reasons", "includingInitContainers", NULL,
    };
    const struct ebb_val *fp;
    char sub[300];
    int rc;

    (void)line;
    if ((rc = copy_namespaces(c, p, path, a, "namespaces")) != 0 ||
        (rc = copy_selector(c, p, path, a)) != 0 ||
        (rc = sub_map(c, p, "failedPods", path, known, &fp, sub, sizeof(sub))) != 0 ||
        (rc = copy_true(c, fp, "includingInitContainers", sub, a, "includingInitContainers")) != 0 ||
        (rc = copy_int(c, fp, "minPodLifetimeSeconds", sub, 0, UINT32_MAX, true, a,
                       "minPodLifetimeSeconds")) != 0 ||
        (rc = copy_strings(c, fp, "excludeOwnerKinds", sub, a, "excludeOwnerKinds")) != 0)
        return rc;
    return copy_strings(c, fp, "reasons", sub, a, "reasons");
}

static int args_node_affinity(struct conv *c, const struct ebb_val *p, const char *path, int line,
                              struct ebb_val *a)
{
    int rc;

    (void)line;
    if ((rc = copy_namespaces(c, p, path, a, "namespaces")) != 0 ||
        (rc = copy_selector(c, p, path, a)) != 0)
        return rc;
    return copy_strings(c, p, "nodeAffinityType", path, a, "nodeAffinityType");
}

static int args_anti_affinity(struct conv *c, const struct ebb_val *p, const char *path, int line,
                              struct ebb_val *a)
{
    int rc;

    (void)line;
    if ((rc = copy_namespaces(c, p, path, a, "namespaces")) != 0)
        return rc;
    return copy_selector(c, p, path, a);
}

static int args_restarts(struct conv *c, const struct ebb_val *p, const char *path, int line,
                         struct ebb_val *a)
{
    static const char *const known[] = { "podRestartThreshold", "includingInitContainers", NULL };
    const struct ebb_val *r;
    char sub[300];
    int rc;

    (void)line;
    if ((rc = copy_namespaces(c, p, path, a, "namespaces")) != 0 ||
        (rc = copy_selector(c, p, path, a)) != 0 ||
        (rc = sub_map(c, p, "podsHavingTooManyRestarts", path, known, &r, sub, sizeof(sub))) != 0 ||
        (rc = copy_int(c, r, "podRestartThreshold", sub, INT32_MIN, INT32_MAX, false, a,
                       "podRestartThreshold")) != 0)
        return rc;
    return copy_true(c, r, "includingInitContainers", sub, a, "includingInitContainers");
}

/* states: the deprecated podStatusPhases first, then states, as upstream
 * appended them. */
static int args_lifetime(struct conv *c, const struct ebb_val *p, const char *path, int line,
                         struct ebb_val *a)
{
    static const char *const known[] = { "maxPodLifeTimeSeconds", "states", "podStatusPhases", NULL };
    const struct ebb_val *lt, *phases = NULL, *states = NULL;
    struct ebb_val *out;
    char sub[300];
    int rc;

    (void)line;
    if ((rc = copy_namespaces(c, p, path, a, "namespaces")) != 0 ||
        (rc = copy_selector(c, p, path, a)) != 0 ||
        (rc = sub_map(c, p, "podLifeTime", path, known, &lt, sub, sizeof(sub))) != 0 ||
        (rc = copy_int(c, lt, "maxPodLifeTimeSeconds", sub, 0, UINT32_MAX, true, a,
                       "maxPodLifeTimeSeconds")) != 0 ||
        (rc = in_file(c, ebb__args_strs(lt, "podStatusPhases", sub, &phases, c->err))) != 0 ||
        (rc = in_file(c, ebb__args_strs(lt, "states", sub, &states, c->err))) != 0)
        return rc;
    if ((phases == NULL || phases->u.seq.n == 0) && (states == NULL || states->u.seq.n == 0))
        return 0;
    if ((out = ebb_val_new(EBB_VAL_SEQ, (phases ? phases : states)->line)) == NULL)
        return nomem(c);
    for (int k = 0; k < 2; k++) {
        const struct ebb_val *from = k == 0 ? phases : states;
        for (size_t i = 0; from != NULL && i < from->u.seq.n; i++) {
            struct ebb_val *s = ebb_val_dup(from->u.seq.items[i]);
            if (s == NULL || ebb_val_seq_push(out, s) != 0) {
                ebb_val_free(s);
                ebb_val_free(out);
                return nomem(c);
            }
        }
    }
    return put(c, a, "states", out);
}

static int args_duplicates(struct conv *c, const struct ebb_val *p, const char *path, int line,
                           struct ebb_val *a)
{
    static const char *const known[] = { "excludeOwnerKinds", NULL };
    const struct ebb_val *d;
    char sub[300];
    int rc;

    (void)line;
    if ((rc = copy_namespaces(c, p, path, a, "namespaces")) != 0 ||
        (rc = sub_map(c, p, "removeDuplicates", path, known, &d, sub, sizeof(sub))) != 0 ||
        (rc = copy_strings(c, d, "excludeOwnerKinds", sub, a, "excludeOwnerKinds")) != 0)
        return rc;
    return dropped(c, p, "labelSelector", path, "RemoveDuplicates");
}

/* Hard constraints always; soft ones with includeSoftConstraints; and
 * topologyBalanceNodeFit set to true, as upstream's conversion did. */
static int args_topology(struct conv *c, const struct ebb_val *p, const char *path, int line,
                         struct ebb_val *a)
{
    static const char *const hard[] = { "DoNotSchedule", NULL };
    static const char *const both[] = { "DoNotSchedule", "ScheduleAnyway", NULL };
    bool soft;
    int rc;

    if ((rc = copy_namespaces(c, p, path, a, "namespaces")) != 0 ||
        (rc = copy_selector(c, p, path, a)) != 0 ||
        (rc = get_bool(c, p, "includeSoftConstraints", path, &soft)) != 0 ||
        (rc = put(c, a, "constraints", new_strings(soft ? both : hard, line))) != 0)
        return rc;
    return put(c, a, "topologyBalanceNodeFit", new_bool(true, line));
}

static int args_utilization(struct conv *c, const struct ebb_val *p, const char *path,
                            struct ebb_val *a, bool low)
{
    static const char *const known[] = {
        "useDeviationThresholds", "thresholds", "targetThresholds", "numberOfNodes", NULL,
    };
    const char *name = low ? "LowNodeUtilization" : "HighNodeUtilization";
    const struct ebb_val *t;
    char sub[300];
    int rc;

    if ((rc = copy_namespaces(c, p, path, a, "evictableNamespaces")) != 0 ||
        (rc = sub_map(c, p, "nodeResourceUtilizationThresholds", path, known, &t, sub,
                      sizeof(sub))) != 0 ||
        (rc = copy_map(c, t, "thresholds", sub, a, "thresholds")) != 0)
        return rc;
    if (low && ((rc = copy_map(c, t, "targetThresholds", sub, a, "targetThresholds")) != 0 ||
                (rc = copy_true(c, t, "useDeviationThresholds", sub, a,
                                "useDeviationThresholds")) != 0))
        return rc;
    if (!low && ((rc = dropped(c, t, "targetThresholds", sub, name)) != 0 ||
                 (rc = dropped(c, t, "useDeviationThresholds", sub, name)) != 0))
        return rc;
    if ((rc = copy_int(c, t, "numberOfNodes", sub, INT32_MIN, INT32_MAX, false, a,
                       "numberOfNodes")) != 0)
        return rc;
    return dropped(c, p, "labelSelector", path, name);
}

static int args_low(struct conv *c, const struct ebb_val *p, const char *path, int line,
                    struct ebb_val *a)
{
    (void)line;
    return args_utilization(c, p, path, a, true);
}

static int args_high(struct conv *c, const struct ebb_val *p, const char *path, int line,
                     struct ebb_val *a)
{
    (void)line;
    return args_utilization(c, p, path, a, false);
}

static const struct strategy strategies[] = {
    { "RemovePodsViolatingNodeTaints", "deschedule", args_node_taints },
    { "RemoveFailedPods", "deschedule", args_failed_pods },
    { "RemovePodsViolatingNodeAffinity", "deschedule", args_node_affinity },
    { "RemovePodsViolatingInterPodAntiAffinity", "deschedule", args_anti_affinity },
    { "RemovePodsHavingTooManyRestarts", "deschedule", args_restarts },
    { "PodLifeTime", "deschedule", args_lifetime },
    { "RemoveDuplicates", "balance", args_duplicates },
    { "RemovePodsViolatingTopologySpreadConstraint", "balance", args_topology },
    { "HighNodeUtilization", "balance", args_high },
    { "LowNodeUtilization", "balance", args_low },
};

/* ---- profiles ---------------------------------------------------------------- */

/* DefaultEvictor's args: the policy-wide switches, nodeFit (never for
 * PodLifeTime, as upstream) and the priority threshold. */
static int evictor_args(struct conv *c, const struct strategy *s, const struct ebb_val *p,
                        const char *path, int line, struct ebb_val **out)
{
    struct ebb_val *a, *pt = NULL;
    const struct ebb_val *tv = ebb__val_at(p, "thresholdPriority");
    const char *cls = NULL;
    bool has_cls = false;
    int64_t prio;
    int rc;

    if ((rc = in_file(c, ebb__args_str(p, "thresholdPriorityClassName", path, &cls, &has_cls,
                                       c->err))) != 0 ||
        (rc = in_file(c, ebb__args_int(p, "thresholdPriority", path, INT32_MIN, INT32_MAX, &prio,
                                       NULL, c->err))) != 0)
        return rc;
    has_cls = has_cls && cls[0] != '\0';
    if (tv != NULL && has_cls) {
        char f[300];
        return ebb_error_set(c->err, EBB_ESCHEMA, c->file,
                             ebb_val_key_line(p, "thresholdPriorityClassName"),
                             ebb__args_join(f, sizeof(f), path, "thresholdPriorityClassName"),
                             "priority threshold misconfigured for plugin %s: only one of "
                             "thresholdPriority and thresholdPriorityClassName can be set "
                             "(thresholdPriority is at line %d)", s->name,
                             ebb_val_key_line(p, "thresholdPriority"));
    }
    if ((a = ebb_val_new(EBB_VAL_MAP, line)) == NULL)
        return nomem(c);
    {
        static const struct { const char *key; size_t off; } sw[] = {
            { "evictLocalStoragePods", offsetof(struct conv, evict_local_storage) },
            { "evictDaemonSetPods", offsetof(struct conv, evict_daemonset) },
            { "evictSystemCriticalPods", offsetof(struct conv, evict_system_critical) },
            { "ignorePvcPods", offsetof(struct conv, ignore_pvc) },
            { "evictFailedBarePods", offsetof(struct conv, evict_failed_bare) },
        };
        for (size_t i = 0; i < EBB_ARRAY_LEN(sw); i++)
            if (*(const bool *)((const char *)c + sw[i].off) &&
                (rc = put(c, a, sw[i].key, new_bool(true, line))) != 0)
                goto fail;
    }
    if (strcmp(s->name, "PodLifeTime") != 0 &&
        (rc = copy_true(c, p, "nodeFit", path, a, "nodeFit")) != 0)
        goto fail;
    if (tv != NULL || has_cls) {
        if ((pt = ebb_val_new(EBB_VAL_MAP, tv ? tv->line : ebb__val_at(p, "thresholdPriorityClassName")->line)) == NULL)
            goto nomem;
        rc = tv ? put(c, pt, "value", new_int(prio, tv->line))
                : put(c, pt, "name", ebb_val_dup(ebb__val_at(p, "thresholdPriorityClassName")));
        if (rc != 0 || (rc = put(c, a, "priorityThreshold", pt)) != 0) {
            pt = NULL;   /* put took it */
            goto fail;
        }
    }
    *out = a;
    return 0;
nomem:
    rc = nomem(c);
fail:
    ebb_val_free(a);
    return rc;
}

static struct ebb_val *plugin_set(const char *name, int line)
{
    const char *names[] = { name, NULL };
    struct ebb_val *set = ebb_val_new(EBB_VAL_MAP, line), *en = new_strings(names, line);

    if (set == NULL || en == NULL || ebb_val_map_put(set, "enabled", en) != 0) {
        ebb_val_free(en);
        ebb_val_free(set);
        return NULL;
    }
    return set;
}

static struct ebb_val *config_entry(const char *name, struct ebb_val *args, int line)
{
    struct ebb_val *e = ebb_val_new(EBB_VAL_MAP, line), *n = ebb_val_new_string(name, line);

    if (e == NULL || n == NULL || ebb_val_map_put(e, "name", n) != 0) {
        ebb_val_free(n);
        goto fail;
    }
    if (ebb_val_map_put(e, "args", args) != 0)
        goto fail;
    return e;
fail:
    ebb_val_free(args);
    ebb_val_free(e);
    return NULL;
}

/* The profile of one enabled strategy, appended to `profiles`. */
static int add_profile(struct conv *c, const struct strategy *s, const struct ebb_val *params,
                       const char *path, int line, struct ebb_val *profiles)
{
    struct ebb_val *prof, *configs = NULL, *plugins = NULL, *args = NULL, *ev = NULL, *e;
    char name[128];
    int rc;

    if ((prof = ebb_val_new(EBB_VAL_MAP, line)) == NULL)
        return nomem(c);
    snprintf(name, sizeof(name), "strategy-%s-profile", s->name);
    if ((rc = put(c, prof, "name", ebb_val_new_string(name, line))) != 0 ||
        (rc = evictor_args(c, s, params, path, line, &ev)) != 0)
        goto fail;
    if ((args = ebb_val_new(EBB_VAL_MAP, line)) == NULL)
        goto nomem;
    if ((rc = s->args(c, params, path, line, args)) != 0)
        goto fail;
    if ((configs = ebb_val_new(EBB_VAL_SEQ, line)) == NULL)
        goto nomem;
    e = config_entry(DEFAULT_EVICTOR, ev, line);
    ev = NULL;
    if (e == NULL || ebb_val_seq_push(configs, e) != 0) {
        ebb_val_free(e);
        goto nomem;
    }
    e = config_entry(s->name, args, line);
    args = NULL;
    if (e == NULL || ebb_val_seq_push(configs, e) != 0) {
        ebb_val_free(e);
        goto nomem;
    }
    rc = put(c, prof, "pluginConfig", configs);
    configs = NULL;
    if (rc != 0)
        goto fail;
    if ((plugins = ebb_val_new(EBB_VAL_MAP, line)) == NULL)
        goto nomem;
    if ((rc = put(c, plugins, s->ext, plugin_set(s->name, line))) != 0 ||
        (rc = put(c, plugins, "filter", plugin_set(DEFAULT_EVICTOR, line))) != 0 ||
        (rc = put(c, plugins, "preEvictionFilter", plugin_set(DEFAULT_EVICTOR, line))) != 0)
        goto fail;
    rc = put(c, prof, "plugins", plugins);
    plugins = NULL;
    if (rc != 0)
        goto fail;
    if (ebb_val_seq_push(profiles, prof) != 0)
        goto nomem;
    return 0;
nomem:
    rc = nomem(c);
fail:
    ebb_val_free(args);
    ebb_val_free(ev);
    ebb_val_free(configs);
    ebb_val_free(plugins);
    ebb_val_free(prof);
    return rc;
}

static const char *const params_keys[] = {
    "nodeResourceUtilizationThresholds", "nodeAffinityType", "podsHavingTooManyRestarts",
    "podLifeTime", "removeDuplicates", "failedPods", "includeSoftConstraints", "namespaces",
    "thresholdPriority", "thresholdPriorityClassName", "labelSelector", "nodeFit",
    "includePreferNoSchedule", "excludedTaints", "includedTaints", NULL,
};

static int convert_strategy(struct conv *c, const char *name, const struct ebb_val *sv,
                            int line, struct ebb_val *profiles)
{
    static const char *const keys[] = { "enabled", "weight", "params", NULL };
    const struct strategy *s = NULL;
    const struct ebb_val *params = NULL;
    char path[300], ppath[300];
    bool enabled = false;
    int64_t weight;
    int rc;

    ebb__args_join(path, sizeof(path), "strategies", name);
    for (size_t i = 0; i < EBB_ARRAY_LEN(strategies) && s == NULL; i++)
        if (strcmp(strategies[i].name, name) == 0)
            s = &strategies[i];
    if (s == NULL)
        return ebb_error_set(c->err, EBB_ESCHEMA, c->file, line, path,
                             "unknown strategy name \"%s\": v1alpha1 strategies are "
                             "RemoveDuplicates, LowNodeUtilization, HighNodeUtilization, "
                             "RemovePodsViolatingInterPodAntiAffinity, "
                             "RemovePodsViolatingNodeAffinity, RemovePodsViolatingNodeTaints, "
                             "RemovePodsViolatingTopologySpreadConstraint, "
                             "RemovePodsHavingTooManyRestarts, PodLifeTime, RemoveFailedPods",
                             name);
    if (sv != NULL && sv->type != EBB_VAL_NULL && sv->type != EBB_VAL_MAP)
        return in_file(c, ebb__args_type_error(sv, path, "a map", c->err));
    if ((rc = warn_unknown(c, sv, path, keys)) != 0 ||
        (rc = get_bool(c, sv, "enabled", path, &enabled)) != 0 ||
        (rc = in_file(c, ebb__args_int(sv, "weight", path, INT64_MIN, INT64_MAX, &weight, NULL,
                                       c->err))) != 0 ||
        (rc = in_file(c, ebb__args_map(sv, "params", path, &params, c->err))) != 0)
        return rc;
    ebb__args_join(ppath, sizeof(ppath), path, "params");
    if ((rc = warn_unknown(c, params, ppath, params_keys)) != 0)
        return rc;
    /* A disabled strategy makes no profile, and upstream checked nothing
     * more of it. */
    if (!enabled)
        return 0;
    return add_profile(c, s, params, ppath, line, profiles);
}

static const char *const top_keys[] = {
    "apiVersion", "kind", "strategies", "nodeSelector", "evictFailedBarePods",
    "evictLocalStoragePods", "evictSystemCriticalPods", "evictDaemonSetPods", "ignorePvcPods",
    "maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace", NULL,
};

static int convert_root(struct conv *c, const struct ebb_val *root, struct ebb_val *out)
{
    static const char *const copied[] = {
        "nodeSelector", "maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace",
    };
    const struct ebb_val *kind = ebb__val_at(root, "kind"), *st = NULL;
    struct ebb_val *profiles;
    int rc;

    if (kind == NULL || kind->type != EBB_VAL_STRING || strcmp(kind->u.str.s, KIND) != 0)
        return ebb_error_set(c->err, EBB_ESCHEMA, c->file,
                             kind ? kind->line : root->line, "kind",
                             kind ? "unsupported kind: expected \"" KIND "\""
                                  : "required: expected \"" KIND "\"");
    if ((rc = warn_unknown(c, root, "", top_keys)) != 0 ||
        (rc = get_bool(c, root, "evictFailedBarePods", "", &c->evict_failed_bare)) != 0 ||
        (rc = get_bool(c, root, "evictLocalStoragePods", "", &c->evict_local_storage)) != 0 ||
        (rc = get_bool(c, root, "evictSystemCriticalPods", "", &c->evict_system_critical)) != 0 ||
        (rc = get_bool(c, root, "evictDaemonSetPods", "", &c->evict_daemonset)) != 0 ||
        (rc = get_bool(c, root, "ignorePvcPods", "", &c->ignore_pvc)) != 0 ||
        (rc = in_file(c, ebb__args_map(root, "strategies", "", &st, c->err))) != 0)
        return rc;
    if ((rc = put(c, out, "apiVersion", ebb_val_new_string(V1ALPHA2, root->line))) != 0 ||
        (rc = put(c, out, "kind", ebb_val_new_string(KIND, kind->line))) != 0)
        return rc;
    /* Same names and types in both versions: config.c checks them. */
    for (size_t i = 0; i < EBB_ARRAY_LEN(copied); i++) {
        const struct ebb_val *v = ebb__val_at(root, copied[i]);
        if (v != NULL && (rc = put(c, out, copied[i], ebb_val_dup(v))) != 0)
            return rc;
    }
    if ((profiles = ebb_val_new(EBB_VAL_SEQ, st ? st->line : root->line)) == NULL)
        return nomem(c);
    for (size_t i = 0; st != NULL && i < st->u.map.n; i++) {
        if ((rc = convert_strategy(c, st->u.map.keys[i], st->u.map.vals[i],
                                   st->u.map.key_lines[i], profiles)) != 0) {
            ebb_val_free(profiles);
            return rc;
        }
    }
    return put(c, out, "profiles", profiles);
}

int ebb_v1alpha1_convert(const struct ebb_val *root, const char *file, ebb_v1alpha1_warn_fn warn_fn,
                         void *ud, struct ebb_val **out, struct ebb_error *err)
{
    struct conv c = { .file = file, .err = err, .warn = warn_fn, .ud = ud };
    struct ebb_val *res;
    int rc;

    if (root == NULL || out == NULL)
        return EBB_EINVAL;
    if (!ebb_v1alpha1_is(root))
        return ebb_error_set(err, EBB_ESCHEMA, file, root->line, "apiVersion",
                             "expected \"" EBB_V1ALPHA1_API_VERSION "\"");
    if ((res = ebb_val_new(EBB_VAL_MAP, root->line)) == NULL)
        return nomem(&c);
    if ((rc = convert_root(&c, root, res)) != 0) {
        ebb_val_free(res);
        return rc;
    }
    *out = res;
    return 0;
}

/* ---- YAML ------------------------------------------------------------------- */

struct buf {
    char *s;
    size_t len, cap;
};

static int buf_write(void *data, unsigned char *bytes, size_t size)
{
    struct buf *b = data;

    if (b->len + size + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        char *ns;
        while (cap < b->len + size + 1)
            cap *= 2;
        if ((ns = realloc(b->s, cap)) == NULL)
            return 0;
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->len, bytes, size);
    b->len += size;
    b->s[b->len] = '\0';
    return 1;
}

/* A scalar: strings that would read back as another type (true, 5, null,
 * "") are quoted, so that the YAML means what the tree holds. */
static int emit_scalar(yaml_emitter_t *em, const char *s, size_t len, bool plain_ok)
{
    yaml_event_t ev;

    if (len > INT_MAX)
        return -1;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)len, plain_ok,
                                      !plain_ok, plain_ok ? YAML_ANY_SCALAR_STYLE
                                                          : YAML_DOUBLE_QUOTED_SCALAR_STYLE))
        return -1;
    return yaml_emitter_emit(em, &ev) ? 0 : -1;
}

/* Plain only when the scalar reads back as this very string where it
 * stands: alone for a value, before ": " for a key (where "<<" is a merge). */
static int emit_string(yaml_emitter_t *em, const char *s, size_t len, bool key)
{
    struct ebb_val *back = NULL;
    const struct ebb_val *got;
    char *doc = NULL;
    bool plain = false;

    if (len > 0 && len < 4096 && strlen(s) == len && (doc = malloc(len + 4)) != NULL) {
        memcpy(doc, s, len);
        memcpy(doc + len, key ? ": 0" : "", key ? 4 : 1);
        if (ebb_val_parse(doc, strlen(doc), "", &back, NULL) == 0) {
            got = back;
            if (key)
                got = back->type == EBB_VAL_MAP && back->u.map.n == 1 &&
                      strcmp(back->u.map.keys[0], s) == 0 ? back : NULL;
            plain = got != NULL && (key || (got->type == EBB_VAL_STRING &&
                                            strcmp(got->u.str.s, s) == 0));
        }
        ebb_val_free(back);
        free(doc);
    }
    return emit_scalar(em, s, len, plain);
}

static int emit(yaml_emitter_t *em, const struct ebb_val *v, int depth)
{
    yaml_event_t ev;
    char num[64];

    if (depth > 64)
        return -1;
    switch (v->type) {
    case EBB_VAL_NULL:
        return emit_scalar(em, "null", strlen("null"), true);
    case EBB_VAL_BOOL:
        return emit_scalar(em, v->u.b ? "true" : "false", strlen(v->u.b ? "true" : "false"), true);
    case EBB_VAL_INT:
        snprintf(num, sizeof(num), "%lld", (long long)v->u.i);
        return emit_scalar(em, num, strlen(num), true);
    case EBB_VAL_FLOAT:
        /* YAML 1.1's spellings, and a float stays a float (1.0, not 1). */
        if (isnan(v->u.f))
            snprintf(num, sizeof(num), ".nan");
        else if (isinf(v->u.f))
            snprintf(num, sizeof(num), "%s", v->u.f < 0 ? "-.inf" : ".inf");
        else if (snprintf(num, sizeof(num), "%.17g", v->u.f) > 0 && !strpbrk(num, ".e"))
            strcat(num, ".0");
        return emit_scalar(em, num, strlen(num), true);
    case EBB_VAL_STRING:
        return emit_string(em, v->u.str.s, v->u.str.len, false);
    case EBB_VAL_SEQ:
        if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE) ||
            !yaml_emitter_emit(em, &ev))
            return -1;
        for (size_t i = 0; i < v->u.seq.n; i++)
            if (emit(em, v->u.seq.items[i], depth + 1) != 0)
                return -1;
        return yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(em, &ev) ? 0 : -1;
    case EBB_VAL_MAP:
        if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                                 v->u.map.n ? YAML_BLOCK_MAPPING_STYLE
                                                            : YAML_FLOW_MAPPING_STYLE) ||
            !yaml_emitter_emit(em, &ev))
            return -1;
        for (size_t i = 0; i < v->u.map.n; i++) {
            const char *k = v->u.map.keys[i];
            if (emit_string(em, k, strlen(k), true) != 0 ||
                emit(em, v->u.map.vals[i], depth + 1) != 0)
                return -1;
        }
        return yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(em, &ev) ? 0 : -1;
    }
    return -1;
}

int ebb_val_to_yaml(const struct ebb_val *v, char **out, size_t *len)
{
    yaml_emitter_t em;
    yaml_event_t ev;
    struct buf b = {0};
    int ok;

    if (v == NULL || out == NULL)
        return EBB_EINVAL;
    if (!yaml_emitter_initialize(&em))
        return EBB_ENOMEM;
    yaml_emitter_set_output(&em, buf_write, &b);
    yaml_emitter_set_unicode(&em, 1);
    yaml_emitter_set_width(&em, -1);
    ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
         yaml_emitter_emit(&em, &ev) &&
         yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
         yaml_emitter_emit(&em, &ev) && emit(&em, v, 0) == 0 &&
         yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&em, &ev) &&
         yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&em, &ev) &&
         yaml_emitter_flush(&em);
    yaml_emitter_delete(&em);
    if (!ok || b.s == NULL) {
        free(b.s);
        return EBB_ENOMEM;
    }
    *out = b.s;
    if (len != NULL)
        *len = b.len;
    return 0;
}
