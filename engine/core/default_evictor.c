/* DefaultEvictor: the filter and preEvictionFilter every profile gets, with
 * the v0.36 semantics of kubernetes-sigs/descheduler
 * (pkg/framework/plugins/defaultevictor): podProtections or the legacy
 * booleans, priority threshold by value or PriorityClass name, nodeFit,
 * minReplicas, minPodAge, labelSelector, namespaceLabelSelector,
 * noEvictionPolicy and the descheduler.alpha.kubernetes.io/evict escape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/argdec.h"
#include "ebb/fit.h"
#include "ebb/selector.h"
#include "core/engine.h"

#define SYSTEM_CRITICAL 2000000000

enum {
    P_LOCAL_STORAGE = 1 << 0,
    P_SYSTEM_CRITICAL = 1 << 1,
    P_FAILED_BARE = 1 << 2,
    P_DAEMONSET = 1 << 3,
    P_PVC = 1 << 4,
    P_WITHOUT_PDB = 1 << 5,
    P_RESOURCE_CLAIMS = 1 << 6,
};

static const struct {
    const char *name;
    unsigned bit;
    bool default_on;
} protections[] = {
    { "PodsWithLocalStorage", P_LOCAL_STORAGE, true },
    { "SystemCriticalPods", P_SYSTEM_CRITICAL, true },
    { "FailedBarePods", P_FAILED_BARE, true },
    { "DaemonSetPods", P_DAEMONSET, true },
    { "PodsWithPVC", P_PVC, false },
    { "PodsWithoutPDB", P_WITHOUT_PDB, false },
    { "PodsWithResourceClaims", P_RESOURCE_CLAIMS, false },
};

struct default_evictor {
    unsigned protect;                    /* effective protections */
    struct ebb_selector *node_selector;  /* for nodeFit; NULL: all nodes */
    struct ebb_selector *label_selector;
    struct ebb_selector *ns_selector;
    bool has_threshold_value;
    int64_t threshold_value;
    char *threshold_name;
    int64_t threshold;                   /* resolved each cycle */
    bool threshold_unresolved;           /* a named class is missing: evict nothing */
    bool node_fit;
    int64_t min_replicas;
    bool has_min_age;
    int64_t min_age_s;
    bool mandatory;                      /* noEvictionPolicy: Mandatory */
    size_t nprotected_sc;
    ebb_str *protected_sc;               /* PodsWithPVC protectedStorageClasses */
    ebb_str daemonset;                   /* "DaemonSet", interned once */
    struct ebb_node **fit_nodes;         /* ready nodes matching node_selector, per cycle */
    size_t nfit_nodes;
    uint64_t fit_nodes_version;
    bool fit_nodes_valid;
    /* Every strategy of a profile asks Filter about the same pods: the
     * answer of the checks that read only the pod and other objects is
     * kept per pod slot while the cache's content (not what a cycle hid)
     * and the resolved threshold stay the same. minReplicas (the owner's
     * pods left) and minPodAge (the clock) are asked every time. */
    uint8_t *verdict;                    /* per slot: VERDICT_* */
    uint32_t nverdict;
    const struct ebb_cache *verdict_cache;
    uint64_t verdict_content;
};

enum {
    VERDICT_UNKNOWN = 0,
    VERDICT_NO,
    VERDICT_YES,                         /* then minReplicas and minPodAge */
    VERDICT_YES_FINAL,                   /* the evict annotation: nothing else */
};

static void de_destroy(void *state)
{
    struct default_evictor *d = state;

    if (d == NULL)
        return;
    ebb_selector_free(d->node_selector);
    ebb_selector_free(d->label_selector);
    ebb_selector_free(d->ns_selector);
    free(d->threshold_name);
    for (size_t i = 0; i < d->nprotected_sc; i++)
        ebb_str_release(d->protected_sc[i]);
    free(d->protected_sc);
    free(d->fit_nodes);
    free(d->verdict);
    ebb_str_release(d->daemonset);
    free(d);
}

static int protection_bit(const char *name)
{
    for (size_t i = 0; i < EBB_ARRAY_LEN(protections); i++)
        if (strcmp(protections[i].name, name) == 0)
            return (int)protections[i].bit;
    return 0;
}

/* podProtections: {defaultDisabled, extraEnabled, config} */
static int decode_protections(struct default_evictor *d, const struct ebb_val *pp,
                              bool *lists_used, struct ebb_error *err)
{
    static const char *const known[] = { "defaultDisabled", "extraEnabled", "config", NULL };
    static const char *const known_cfg[] = { "PodsWithPVC", NULL };
    static const char *const known_pvc[] = { "protectedStorageClasses", NULL };
    const struct ebb_val *dis, *extra, *cfg, *pvc, *scs;
    unsigned seen = 0;
    char f[256];
    int rc;

    if ((rc = ebb__args_keys(pp, "podProtections", known, err)) != 0 ||
        (rc = ebb__args_strs(pp, "defaultDisabled", "podProtections", &dis, err)) != 0 ||
        (rc = ebb__args_strs(pp, "extraEnabled", "podProtections", &extra, err)) != 0 ||
        (rc = ebb__args_map(pp, "config", "podProtections", &cfg, err)) != 0)
        return rc;
    *lists_used = (dis && dis->u.seq.n) || (extra && extra->u.seq.n);
    d->protect = P_LOCAL_STORAGE | P_SYSTEM_CRITICAL | P_FAILED_BARE | P_DAEMONSET;
    for (int pass = 0; pass < 2; pass++) {
        const struct ebb_val *list = pass == 0 ? dis : extra;
        for (size_t i = 0; list && i < list->u.seq.n; i++) {
            const char *name = list->u.seq.items[i]->u.str.s;
            int bit = protection_bit(name);
            bool ok = bit != 0;
            for (size_t k = 0; ok && k < EBB_ARRAY_LEN(protections); k++)
                if (protections[k].bit == (unsigned)bit)
                    ok = protections[k].default_on == (pass == 0);
            snprintf(f, sizeof(f), "podProtections.%s[%zu]", pass == 0 ? "defaultDisabled" : "extraEnabled", i);
            if (!ok)
                return ebb_error_set(err, EBB_ESCHEMA, NULL, list->u.seq.items[i]->line, f,
                                     pass == 0 ? "invalid pod protection policy in DefaultDisabled: "
                                                 "\"%s\". Valid options are: [PodsWithLocalStorage "
                                                 "SystemCriticalPods FailedBarePods DaemonSetPods]"
                                               : "invalid pod protection policy in ExtraEnabled: "
                                                 "\"%s\". Valid options are: [PodsWithPVC "
                                                 "PodsWithoutPDB PodsWithResourceClaims]",
                                     name);
            if (seen & (unsigned)bit)
                return ebb_error_set(err, EBB_ESCHEMA, NULL, list->u.seq.items[i]->line, f,
                                     "PodProtections.%s contains duplicate entries",
                                     pass == 0 ? "DefaultDisabled" : "ExtraEnabled");
            seen |= (unsigned)bit;
            if (pass == 0)
                d->protect &= ~(unsigned)bit;
            else
                d->protect |= (unsigned)bit;
        }
    }
    if (cfg == NULL)
        return 0;
    if ((rc = ebb__args_keys(cfg, "podProtections.config", known_cfg, err)) != 0 ||
        (rc = ebb__args_map(cfg, "PodsWithPVC", "podProtections.config", &pvc, err)) != 0)
        return rc;
    if (pvc == NULL)
        return 0;
    if ((rc = ebb__args_keys(pvc, "podProtections.config.PodsWithPVC", known_pvc, err)) != 0)
        return rc;
    scs = ebb_val_get(pvc, "protectedStorageClasses");
    if (scs == NULL || scs->type == EBB_VAL_NULL)
        return 0;
    if (scs->type != EBB_VAL_SEQ)
        return ebb_error_set(err, EBB_ESCHEMA, NULL, scs->line,
                             "podProtections.config.PodsWithPVC.protectedStorageClasses",
                             "expected a list of {name: ...}");
    if ((d->protected_sc = calloc(scs->u.seq.n + 1, sizeof(ebb_str))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < scs->u.seq.n; i++) {
        static const char *const known_sc[] = { "name", NULL };
        const struct ebb_val *it = scs->u.seq.items[i];
        const char *name = NULL;
        snprintf(f, sizeof(f), "podProtections.config.PodsWithPVC.protectedStorageClasses[%zu]", i);
        if ((rc = ebb__args_keys(it, f, known_sc, err)) != 0 ||
            (rc = ebb__args_str(it, "name", f, &name, NULL, err)) != 0)
            return rc;
        /* upstream refuses an empty name only when the lists enable
         * PodsWithPVC; otherwise it is kept, matches no class (a claim
         * without one is protected anyway) and still makes the list
         * non-empty, so that only the listed classes are protected */
        if ((name == NULL || name[0] == '\0') && *lists_used && (d->protect & P_PVC))
            return ebb_error_set(err, EBB_ESCHEMA, NULL, it->line, f,
                                 "PodProtections.Config.PodsWithPVC.ProtectedStorageClasses[%zu] "
                                 "name cannot be empty", i);
        if ((d->protected_sc[d->nprotected_sc] = ebb_str_cstr(name ? name : "")) == NULL)
            return EBB_ENOMEM;
        d->nprotected_sc++;
    }
    return 0;
}

static bool legacy_flag(const struct ebb_val *args, const char *key)
{
    bool v = false;
    ebb__args_bool(args, key, "", &v, NULL, NULL);   /* types were checked already */
    return v;
}

static int de_create(const struct ebb_val *args, void **state, struct ebb_error *err)
{
    static const char *const known[] = {
        "nodeSelector", "labelSelector", "namespaceLabelSelector", "priorityThreshold", "nodeFit",
        "minReplicas", "minPodAge", "noEvictionPolicy", "podProtections", "evictLocalStoragePods",
        "evictDaemonSetPods", "evictSystemCriticalPods", "ignorePvcPods", "ignorePodsWithoutPDB",
        "evictFailedBarePods", NULL,
    };
    static const char *const legacy[] = {
        "evictLocalStoragePods", "evictDaemonSetPods", "evictSystemCriticalPods", "ignorePvcPods",
        "ignorePodsWithoutPDB", "evictFailedBarePods",
    };
    struct default_evictor *d = calloc(1, sizeof(*d));
    const struct ebb_val *pt, *pp;
    const char *s = NULL;
    bool has, lists_used = false, legacy_set = false, b;
    int rc;

    if (d == NULL)
        return EBB_ENOMEM;
    if ((d->daemonset = ebb_str_cstr("DaemonSet")) == NULL) {
        free(d);
        return EBB_ENOMEM;
    }
    d->threshold = SYSTEM_CRITICAL;
    d->protect = P_LOCAL_STORAGE | P_SYSTEM_CRITICAL | P_FAILED_BARE | P_DAEMONSET;
    if ((rc = ebb__args_keys(args, "", known, err)) != 0)
        goto fail;
    if ((rc = ebb__args_str(args, "nodeSelector", "", &s, &has, err)) != 0)
        goto fail;
    if (has && s[0] != '\0' && (rc = ebb_selector_parse(s, &d->node_selector, err)) != 0) {
        err->line = ebb_val_get(args, "nodeSelector")->line;
        snprintf(err->field, sizeof(err->field), "nodeSelector");
        rc = err->code = EBB_ESCHEMA;
        goto fail;
    }
    if ((rc = ebb__args_label_selector(args, "labelSelector", "", &d->label_selector, err)) != 0 ||
        (rc = ebb__args_label_selector(args, "namespaceLabelSelector", "", &d->ns_selector, err)) != 0 ||
        (rc = ebb__args_bool(args, "nodeFit", "", &d->node_fit, NULL, err)) != 0 ||
        (rc = ebb__args_int(args, "minReplicas", "", 0, UINT32_MAX, &d->min_replicas, NULL, err)) != 0)
        goto fail;
    if (d->min_replicas == 1)
        ebb_log(EBB_LOG_INFO, "DefaultEvictor: minReplicas is 1, which checks nothing");

    if ((rc = ebb__args_map(args, "priorityThreshold", "", &pt, err)) != 0)
        goto fail;
    if (pt != NULL) {
        static const char *const known_pt[] = { "value", "name", NULL };
        bool has_name = false;
        if ((rc = ebb__args_keys(pt, "priorityThreshold", known_pt, err)) != 0 ||
            (rc = ebb__args_int(pt, "value", "priorityThreshold", INT32_MIN, INT32_MAX,
                                &d->threshold_value, &d->has_threshold_value, err)) != 0 ||
            (rc = ebb__args_str(pt, "name", "priorityThreshold", &s, &has_name, err)) != 0)
            goto fail;
        has_name = has_name && s[0] != '\0';
        if (d->has_threshold_value && has_name) {
            rc = ebb_error_set(err, EBB_ESCHEMA, NULL, pt->line, "priorityThreshold",
                               "priority threshold misconfigured, only one of priorityThreshold "
                               "fields can be set");
            goto fail;
        }
        /* upstream's setDefaultEvictor resolves priorityThreshold when the
         * policy is loaded, whatever the protections: above system
         * critical (or a class that is missing, see de_cycle_begin) stops
         * the descheduler even when SystemCriticalPods is off */
        if (d->has_threshold_value && d->threshold_value > SYSTEM_CRITICAL) {
            rc = ebb_error_set(err, EBB_ESCHEMA, NULL, ebb_val_get(pt, "value")->line,
                               "priorityThreshold.value",
                               "priority threshold can't be greater than %d", SYSTEM_CRITICAL);
            goto fail;
        }
        if (has_name && (d->threshold_name = strdup(s)) == NULL) {
            rc = EBB_ENOMEM;
            goto fail;
        }
        if (d->has_threshold_value)
            d->threshold = d->threshold_value;
    }

    if ((rc = ebb__args_str(args, "minPodAge", "", &s, &d->has_min_age, err)) != 0)
        goto fail;
    if (d->has_min_age) {
        int64_t ns;
        if (ebb_duration_parse(s, &ns) != 0) {
            rc = ebb_error_set(err, EBB_ESCHEMA, NULL, ebb_val_get(args, "minPodAge")->line,
                               "minPodAge", "\"%s\" is not a duration (e.g. \"5m\", \"1h30m\")", s);
            goto fail;
        }
        /* an age in whole seconds is below ns exactly when it is below
         * ns rounded up to a second (time.Since(start) < minPodAge) */
        d->min_age_s = ns / 1000000000 + (ns % 1000000000 > 0);
    }
    if ((rc = ebb__args_str(args, "noEvictionPolicy", "", &s, &has, err)) != 0)
        goto fail;
    if (has && s[0] != '\0') {
        if (strcmp(s, "Mandatory") == 0) {
            d->mandatory = true;
        } else if (strcmp(s, "Preferred") != 0) {
            rc = ebb_error_set(err, EBB_ESCHEMA, NULL, ebb_val_get(args, "noEvictionPolicy")->line,
                               "noEvictionPolicy",
                               "noEvictionPolicy accepts only [\"Preferred\" \"Mandatory\"] values");
            goto fail;
        }
    }

    for (size_t i = 0; i < EBB_ARRAY_LEN(legacy); i++) {
        if ((rc = ebb__args_bool(args, legacy[i], "", &b, &has, err)) != 0)
            goto fail;
        legacy_set = legacy_set || (has && b);
    }
    if ((rc = ebb__args_map(args, "podProtections", "", &pp, err)) != 0)
        goto fail;
    if (pp != NULL && (rc = decode_protections(d, pp, &lists_used, err)) != 0)
        goto fail;
    if (lists_used && legacy_set) {
        rc = ebb_error_set(err, EBB_ESCHEMA, NULL, pp->line, "podProtections",
                           "cannot use Deprecated fields alongside PodProtections.ExtraEnabled or "
                           "PodProtections.DefaultDisabled (evictLocalStoragePods, "
                           "evictDaemonSetPods, evictSystemCriticalPods, ignorePvcPods, "
                           "ignorePodsWithoutPDB, evictFailedBarePods)");
        goto fail;
    }
    if (!lists_used) {
        /* the legacy booleans map one to one (protectedStorageClasses, a
         * config entry, survives) */
        d->protect = 0;
        if (!legacy_flag(args, "evictLocalStoragePods"))
            d->protect |= P_LOCAL_STORAGE;
        if (!legacy_flag(args, "evictDaemonSetPods"))
            d->protect |= P_DAEMONSET;
        if (!legacy_flag(args, "evictSystemCriticalPods"))
            d->protect |= P_SYSTEM_CRITICAL;
        if (!legacy_flag(args, "evictFailedBarePods"))
            d->protect |= P_FAILED_BARE;
        if (legacy_flag(args, "ignorePvcPods"))
            d->protect |= P_PVC;
        if (legacy_flag(args, "ignorePodsWithoutPDB"))
            d->protect |= P_WITHOUT_PDB;
    }
    *state = d;
    return 0;
fail:
    de_destroy(d);
    return rc;
}

static int de_cycle_begin(void *state, struct ebb_ctx *ctx, struct ebb_error *err)
{
    struct default_evictor *d = state;
    struct ebb_priority_class *pc;

    d->fit_nodes_valid = false;
    d->threshold_unresolved = false;
    d->verdict_cache = NULL;             /* the threshold is resolved again */
    if (d->threshold_name == NULL)
        return 0;
    pc = ebb_cache_priority_class(ebb_ctx_cache(ctx), ebb_str_find(d->threshold_name,
                                                                    strlen(d->threshold_name)));
    if (pc == NULL) {
        d->threshold_unresolved = true;
        return ebb_error_set(err, EBB_ENOENT, NULL, 0, "priorityThreshold.name",
                             "priority class \"%s\" not found; no pod is evictable in this profile",
                             d->threshold_name);
    }
    if (pc->value > SYSTEM_CRITICAL) {
        d->threshold_unresolved = true;
        return ebb_error_set(err, EBB_ESCHEMA, NULL, 0, "priorityThreshold.name",
                             "priority threshold can't be greater than %d", SYSTEM_CRITICAL);
    }
    d->threshold = pc->value;
    return 0;
}

static bool has_owner_kind(const struct ebb_pod *p, ebb_str kind)
{
    for (uint16_t i = 0; i < p->nowners; i++)
        if (p->owners[i].kind == kind)
            return true;
    return false;
}

static bool protected_by_pvc(const struct default_evictor *d, struct ebb_cache *c,
                             const struct ebb_pod *p)
{
    if (p->npvcs == 0)
        return false;
    if (d->nprotected_sc == 0)
        return true;
    for (uint16_t i = 0; i < p->npvcs; i++) {
        struct ebb_pvc *pvc = ebb_cache_pvc(c, p->ns, p->pvcs[i]);
        /* an unknown claim or class cannot be shown unprotected */
        if (pvc == NULL || pvc->storage_class == NULL || pvc->storage_class[0] == '\0')
            return true;
        for (size_t k = 0; k < d->nprotected_sc; k++)
            if (d->protected_sc[k] == pvc->storage_class)
                return true;
    }
    return false;
}

static bool covered_by_pdb(struct ebb_cache *c, const struct ebb_pod *p)
{
    uint32_t n;
    const struct ebb_pdb *const *pdbs = ebb_cache_pdbs_in(c, p->ns, &n);

    for (uint32_t i = 0; i < n; i++)
        if (ebb_selector_matches(pdbs[i]->selector, &p->labels))
            return true;
    return false;
}

/* Filter less minReplicas and minPodAge. */
static int static_verdict(const struct default_evictor *d, struct ebb_cache *c,
                          const struct ebb_pod *p)
{
    if (p->flags & EBB_POD_EVICT_ANNOTATION)
        return VERDICT_YES_FINAL;
    if (d->mandatory && (p->flags & EBB_POD_PREFER_NO_EVICTION))
        return VERDICT_NO;
    if (p->flags & (EBB_POD_MIRROR | EBB_POD_STATIC | EBB_POD_TERMINATING))
        return VERDICT_NO;
    if (d->protect & P_SYSTEM_CRITICAL) {
        if ((p->flags & EBB_POD_HAS_PRIORITY) &&
            (p->priority >= SYSTEM_CRITICAL || p->priority >= d->threshold))
            return VERDICT_NO;
    }
    if (p->nowners == 0 && ((d->protect & P_FAILED_BARE) || p->phase != EBB_PHASE_FAILED))
        return VERDICT_NO;
    if ((d->protect & P_LOCAL_STORAGE) && (p->flags & EBB_POD_LOCAL_STORAGE))
        return VERDICT_NO;
    if ((d->protect & P_DAEMONSET) && has_owner_kind(p, d->daemonset))
        return VERDICT_NO;
    if ((d->protect & P_PVC) && protected_by_pvc(d, c, p))
        return VERDICT_NO;
    if ((d->protect & P_WITHOUT_PDB) && !covered_by_pdb(c, p))
        return VERDICT_NO;
    if ((d->protect & P_RESOURCE_CLAIMS) && (p->flags & EBB_POD_RESOURCE_CLAIMS))
        return VERDICT_NO;
    if (d->label_selector && !ebb_selector_matches(d->label_selector, &p->labels))
        return VERDICT_NO;
    return VERDICT_YES;
}

/* Why Filter says no, in upstream's words (defaultevictor.go and
 * constraints.go: every failing check, as its "Pod fails the following
 * checks" log lists them). Only while the pod is observed (ebb explain):
 * it decides nothing. */
static void say_why(const struct default_evictor *d, struct ebb_ctx *ctx, const struct ebb_pod *p)
{
    struct ebb_cache *c = ebb_ctx_cache(ctx);

    if (p->flags & EBB_POD_EVICT_ANNOTATION)
        return;
    if (d->threshold_unresolved)
        ebb_ctx_say_why(ctx, "priorityThreshold: PriorityClass %s not found",
                        d->threshold_name ? d->threshold_name : "");
    if (d->mandatory && (p->flags & EBB_POD_PREFER_NO_EVICTION)) {
        ebb_ctx_say_why(ctx, "pod has the descheduler.alpha.kubernetes.io/prefer-no-eviction "
                        "annotation and noEvictionPolicy is Mandatory");
        return;
    }
    if (p->flags & EBB_POD_MIRROR)
        ebb_ctx_say_why(ctx, "pod is a mirror pod");
    if (p->flags & EBB_POD_STATIC)
        ebb_ctx_say_why(ctx, "pod is a static pod");
    if (p->flags & EBB_POD_TERMINATING)
        ebb_ctx_say_why(ctx, "pod is terminating");
    if ((d->protect & P_FAILED_BARE) && p->nowners == 0)
        ebb_ctx_say_why(ctx, "pod does not have any ownerRefs");
    else if (p->nowners == 0 && p->phase != EBB_PHASE_FAILED)
        ebb_ctx_say_why(ctx, "pod does not have any ownerRefs and is not in failed phase");
    if ((d->protect & P_SYSTEM_CRITICAL) && (p->flags & EBB_POD_HAS_PRIORITY)) {
        if (p->priority >= SYSTEM_CRITICAL)
            ebb_ctx_say_why(ctx, "pod has system critical priority");
        if ((d->has_threshold_value || d->threshold_name != NULL) && p->priority >= d->threshold)
            ebb_ctx_say_why(ctx, "pod has higher priority than specified priority class threshold");
    }
    if ((d->protect & P_LOCAL_STORAGE) && (p->flags & EBB_POD_LOCAL_STORAGE))
        ebb_ctx_say_why(ctx, "pod has local storage and descheduler is not configured with "
                        "evictLocalStoragePods");
    if ((d->protect & P_DAEMONSET) && has_owner_kind(p, d->daemonset))
        ebb_ctx_say_why(ctx, "pod is related to daemonset and descheduler is not configured "
                        "with evictDaemonSetPods");
    if ((d->protect & P_PVC) && protected_by_pvc(d, c, p))
        ebb_ctx_say_why(ctx, "pod has a PVC and descheduler is configured to ignore PVC pods");
    if ((d->protect & P_WITHOUT_PDB) && !covered_by_pdb(c, p))
        ebb_ctx_say_why(ctx, "no PodDisruptionBudget found for pod");
    if ((d->protect & P_RESOURCE_CLAIMS) && (p->flags & EBB_POD_RESOURCE_CLAIMS))
        ebb_ctx_say_why(ctx, "pod has ResourceClaims and descheduler is configured to protect "
                        "ResourceClaims pods");
    if (d->label_selector && !ebb_selector_matches(d->label_selector, &p->labels))
        ebb_ctx_say_why(ctx, "pod labels do not match the labelSelector filter in the policy "
                        "parameter");
    if (d->min_replicas > 1 && p->nowners == 1) {
        uint64_t n = ebb_cache_count_owned(c, p->owners[0].uid);
        if (n < (uint64_t)d->min_replicas)
            ebb_ctx_say_why(ctx, "owner has %llu replicas which is less than minReplicas of %lld",
                            (unsigned long long)n, (long long)d->min_replicas);
    }
    if (d->has_min_age &&
        (p->started == EBB_TIME_NONE || ebb_ctx_now(ctx) - p->started < d->min_age_s))
        ebb_ctx_say_why(ctx, "pod age is not older than MinPodAge: %llds seconds",
                        (long long)d->min_age_s);
}

/* static_verdict, kept per slot for the pods the cache holds. */
static int verdict_of(struct default_evictor *d, struct ebb_cache *c, const struct ebb_pod *p)
{
    uint32_t slots;
    int v;

    if (ebb_cache_pod_at(c, p->slot) != p)
        return static_verdict(d, c, p);   /* not a cached pod: nothing to key on */
    if (d->verdict_cache != c || d->verdict_content != ebb_cache_content_version(c)) {
        if (d->nverdict > 0)
            memset(d->verdict, VERDICT_UNKNOWN, d->nverdict);
        d->verdict_cache = c;
        d->verdict_content = ebb_cache_content_version(c);
    }
    if (p->slot >= d->nverdict) {
        uint8_t *v8;
        slots = ebb_cache_pod_slots(c);
        if ((v8 = realloc(d->verdict, slots)) == NULL)
            return static_verdict(d, c, p);
        memset(v8 + d->nverdict, VERDICT_UNKNOWN, slots - d->nverdict);
        d->verdict = v8;
        d->nverdict = slots;
    }
    if ((v = d->verdict[p->slot]) == VERDICT_UNKNOWN)
        d->verdict[p->slot] = (uint8_t)(v = static_verdict(d, c, p));
    return v;
}

static bool de_filter(void *state, struct ebb_ctx *ctx, const struct ebb_pod *p)
{
    struct default_evictor *d = state;
    struct ebb_cache *c = ebb_ctx_cache(ctx);
    int v;

    if (ebb_ctx_explaining(ctx))
        say_why(d, ctx, p);

    /* a PriorityClass named by priorityThreshold is missing: upstream would
     * not have started at all, so nothing is evictable, whatever it carries */
    if (d->threshold_unresolved)
        return false;
    if ((v = verdict_of(d, c, p)) != VERDICT_YES)
        return v == VERDICT_YES_FINAL;
    if (d->min_replicas > 1 && p->nowners == 1 &&
        ebb_cache_count_owned(c, p->owners[0].uid) < (uint64_t)d->min_replicas)
        return false;
    if (d->has_min_age &&
        (p->started == EBB_TIME_NONE || ebb_ctx_now(ctx) - p->started < d->min_age_s))
        return false;
    return true;
}

/* Ready nodes matching nodeSelector, recomputed when the cache changes. */
static void fit_nodes(struct default_evictor *d, struct ebb_cache *c)
{
    uint32_t n;
    struct ebb_node *const *all;

    if (d->fit_nodes_valid && d->fit_nodes_version == ebb_cache_version(c))
        return;
    all = ebb_cache_nodes_sorted(c, &n);
    free(d->fit_nodes);
    d->nfit_nodes = 0;
    if ((d->fit_nodes = malloc((n + 1) * sizeof(*d->fit_nodes))) == NULL)
        return;
    for (uint32_t i = 0; i < n; i++)
        if (all[i]->ready && ebb_selector_matches(d->node_selector, &all[i]->labels))
            d->fit_nodes[d->nfit_nodes++] = all[i];
    d->fit_nodes_version = ebb_cache_version(c);
    d->fit_nodes_valid = true;
}

static bool de_pre_eviction_filter(void *state, struct ebb_ctx *ctx, const struct ebb_pod *p)
{
    struct default_evictor *d = state;
    struct ebb_cache *c = ebb_ctx_cache(ctx);

    if (d->node_fit) {
        fit_nodes(d, c);
        if (!ebb_pod_fits_any_other_node(c, p, d->fit_nodes, d->nfit_nodes)) {
            ebb_ctx_say_why(ctx, "pod does not fit on any other node because of nodeSelector(s), "
                            "Taint(s), or nodes marked as unschedulable");
            return false;
        }
    }
    if (d->ns_selector && !ebb_selector_is_empty(d->ns_selector)) {
        struct ebb_namespace *ns = ebb_cache_namespace(c, p->ns);
        if (ns == NULL || !ebb_selector_matches(d->ns_selector, &ns->labels)) {
            ebb_ctx_say_why(ctx, "pod's namespace does not match the namespaceLabelSelector "
                            "filter in the policy parameter");
            return false;
        }
    }
    return true;
}

const struct ebb_native_plugin ebb__default_evictor = {
    .name = "DefaultEvictor",
    .create = de_create,
    .destroy = de_destroy,
    .cycle_begin = de_cycle_begin,
    .filter = de_filter,
    .pre_eviction_filter = de_pre_eviction_filter,
};
