/* KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1 and v1beta3)
 * for the scheduler model: kube-scheduler's defaults, the plugin set merge
 * (mergePluginSet, then the MultiPoint expansion of the framework), score
 * weights, and the args of the plugins the model runs, checked as
 * upstream's validation does. Every error names the file, line and field;
 * nothing of a bad file is kept. See ebb/sched.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/argdec.h"
#include "ebb/decode.h"
#include "ebb/sched.h"
#include "ebb/selector.h"
#include "ebb/val.h"

/* Extension points a plugin implements (the ones the model reads). */
enum { X_PREENQUEUE = 1, X_FILTER = 2, X_SCORE = 4, X_OTHER = 8 };

static const struct known {
    const char *name;
    unsigned points;
    int32_t weight;                  /* default score weight (MultiPoint) */
    bool dflt;                       /* in the default MultiPoint list */
} known[] = {
    /* the default MultiPoint list, in order */
    { "SchedulingGates", X_PREENQUEUE, 0, true },
    { "PrioritySort", X_OTHER, 0, true },
    { "NodeUnschedulable", X_FILTER, 0, true },
    { "NodeName", X_FILTER, 0, true },
    { "TaintToleration", X_FILTER | X_SCORE, 3, true },
    { "NodeAffinity", X_FILTER | X_SCORE, 2, true },
    { "NodePorts", X_FILTER, 0, true },
    { "NodeResourcesFit", X_FILTER | X_SCORE, 1, true },
    { "VolumeRestrictions", X_FILTER, 0, true },
    { "NodeVolumeLimits", X_FILTER, 0, true },
    { "VolumeBinding", X_FILTER | X_SCORE, 0, true },
    { "VolumeZone", X_FILTER, 0, true },
    { "PodTopologySpread", X_FILTER | X_SCORE, 2, true },
    { "InterPodAffinity", X_FILTER | X_SCORE, 2, true },
    { "DynamicResources", X_PREENQUEUE | X_FILTER, 0, true },
    { "DefaultPreemption", X_OTHER, 0, true },
    { "NodeResourcesBalancedAllocation", X_SCORE, 1, true },
    { "ImageLocality", X_SCORE, 1, true },
    { "DefaultBinder", X_OTHER, 0, true },
    /* in-tree, not in the default list */
    { "EBSLimits", X_FILTER, 0, false },
    { "GCEPDLimits", X_FILTER, 0, false },
    { "AzureDiskLimits", X_FILTER, 0, false },
    { "CinderLimits", X_FILTER, 0, false },
};

#define NKNOWN (sizeof(known) / sizeof(known[0]))

static int known_index(const char *name)
{
    for (size_t i = 0; i < NKNOWN; i++)
        if (strcmp(known[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* The model does not score VolumeBinding (no storage capacity gate). */
static bool scores(int k)
{
    return (known[k].points & X_SCORE) && strcmp(known[k].name, "VolumeBinding") != 0;
}

/* ---- free and defaults ------------------------------------------------------ */

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; v != NULL && i < n; i++)
        free(v[i]);
    free(v);
}

static void profile_clear(struct ebb_sched_profile *p)
{
    free(p->name);
    free(p->fit_resources);
    free(p->shape);
    strv_free(p->ignored, p->nignored);
    strv_free(p->ignored_groups, p->nignored_groups);
    free(p->ba_resources);
    for (uint16_t i = 0; p->spread_defaults != NULL && i < p->nspread_defaults; i++) {
        ebb_str_release(p->spread_defaults[i].topology_key);
        for (uint16_t k = 0; k < p->spread_defaults[i].nmatch_keys; k++)
            ebb_str_release(p->spread_defaults[i].match_keys[k]);
        free(p->spread_defaults[i].match_keys);
    }
    free(p->spread_defaults);
    ebb_affinity_free(p->added_affinity);
    memset(p, 0, sizeof(*p));
}

void ebb_sched_config_free(struct ebb_sched_config *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->nprofiles; i++)
        profile_clear(&c->profiles[i]);
    free(c->profiles);
    free(c);
}

static int default_resources(struct ebb_sched_resource **out, size_t *n)
{
    if ((*out = calloc(2, sizeof(**out))) == NULL)
        return EBB_ENOMEM;
    (*out)[0] = (struct ebb_sched_resource){ EBB_RES_CPU, 1 };
    (*out)[1] = (struct ebb_sched_resource){ EBB_RES_MEMORY, 1 };
    *n = 2;
    return 0;
}

/* A profile with kube-scheduler's default plugins and args. */
static int profile_default(struct ebb_sched_profile *p, const char *name)
{
    static const int filters[] = { EBB_SP_NODE_UNSCHEDULABLE, EBB_SP_NODE_NAME,
                                   EBB_SP_TAINT_TOLERATION, EBB_SP_NODE_AFFINITY,
                                   EBB_SP_NODE_PORTS, EBB_SP_NODE_RESOURCES_FIT,
                                   EBB_SP_POD_TOPOLOGY_SPREAD, EBB_SP_INTER_POD_AFFINITY };

    memset(p, 0, sizeof(*p));
    if ((p->name = strdup(name)) == NULL)
        return EBB_ENOMEM;
    p->percentage = -1;
    p->scheduling_gates = true;
    for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
        p->filters[p->nfilters++] = (uint8_t)filters[i];
    p->weight[EBB_SP_TAINT_TOLERATION] = 3;
    p->weight[EBB_SP_NODE_AFFINITY] = 2;
    p->weight[EBB_SP_NODE_RESOURCES_FIT] = 1;
    p->weight[EBB_SP_POD_TOPOLOGY_SPREAD] = 2;
    p->weight[EBB_SP_INTER_POD_AFFINITY] = 2;
    p->weight[EBB_SP_BALANCED_ALLOCATION] = 1;
    p->weight[EBB_SP_IMAGE_LOCALITY] = 1;
    p->fit_strategy = EBB_SCHED_LEAST_ALLOCATED;
    p->spread_system = true;
    p->hard_pod_affinity_weight = 1;
    if (default_resources(&p->fit_resources, &p->nfit_resources) != 0 ||
        default_resources(&p->ba_resources, &p->nba_resources) != 0)
        return EBB_ENOMEM;
    return 0;
}

int ebb_sched_config_default(struct ebb_sched_config **out)
{
    struct ebb_sched_config *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return EBB_ENOMEM;
    if ((c->profiles = calloc(1, sizeof(*c->profiles))) == NULL ||
        (c->nprofiles = 1, profile_default(&c->profiles[0], "default-scheduler")) != 0) {
        ebb_sched_config_free(c);
        return EBB_ENOMEM;
    }
    *out = c;
    return 0;
}

const struct ebb_sched_profile *ebb_sched_config_profile(const struct ebb_sched_config *c,
                                                         const char *scheduler)
{
    if (c == NULL)
        return NULL;
    if (scheduler == NULL || scheduler[0] == '\0')
        scheduler = "default-scheduler";
    for (size_t i = 0; i < c->nprofiles; i++)
        if (strcmp(c->profiles[i].name, scheduler) == 0)
            return &c->profiles[i];
    return NULL;
}

/* ---- loading ---------------------------------------------------------------- */

static int bad(struct ebb_error *err, int line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad(struct ebb_error *err, int line, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ebb_error_set(err, EBB_ESCHEMA, NULL, line, field, "%s", msg);
}

static const char *const points[] = { "multiPoint", "preEnqueue", "queueSort", "preFilter",
                                      "filter", "postFilter", "preScore", "score", "reserve",
                                      "permit", "preBind", "bind", "postBind", NULL };
enum { P_MULTI = 0, P_PREENQUEUE = 1, P_FILTER = 4, P_SCORE = 7, NPOINTS = 13 };

/* One plugin set after mergePluginSet. */
struct pset {
    int nenabled, ndisabled;
    int enabled[NKNOWN * 2];         /* known[] indexes, in order */
    int32_t weight[NKNOWN * 2];
    bool disabled[NKNOWN];
    bool all_disabled;               /* "*" */
};

/* A {enabled: [{name, weight}], disabled: [{name}]} set, merged with the
 * default (MultiPoint only) as mergePluginSet does. */
static int plugin_set(const struct ebb_val *v, const char *path, bool multi, struct pset *out,
                      struct ebb_error *err)
{
    static const char *const set_keys[] = { "enabled", "disabled", NULL };
    static const char *const plugin_keys[] = { "name", "weight", NULL };
    int custom[NKNOWN * 2], ncustom = 0;
    int32_t cweight[NKNOWN * 2];
    bool replaced[NKNOWN * 2] = { false };
    char f[300], g[340];
    int rc;

    memset(out, 0, sizeof(*out));
    if (v != NULL && (rc = ebb__args_keys(v, path, set_keys, err)) != 0)
        return rc;
    for (int l = 0; l < 2 && v != NULL; l++) {
        const struct ebb_val *s = ebb_val_get(v, l == 0 ? "enabled" : "disabled");
        if (s == NULL || s->type == EBB_VAL_NULL)
            continue;
        ebb__args_join(f, sizeof(f), path, l == 0 ? "enabled" : "disabled");
        if (s->type != EBB_VAL_SEQ)
            return ebb__args_type_error(s, f, "a list of plugins", err);
        for (size_t i = 0; i < s->u.seq.n; i++) {
            const struct ebb_val *e = s->u.seq.items[i];
            const char *name = NULL;
            int64_t w = 0;
            bool has_w = false;
            int k;
            ebb__args_index(g, sizeof(g), f, i);
            if (e->type != EBB_VAL_MAP)
                return ebb__args_type_error(e, g, "a plugin {name, weight}", err);
            if ((rc = ebb__args_keys(e, g, plugin_keys, err)) != 0 ||
                (rc = ebb__args_str(e, "name", g, &name, NULL, err)) != 0 ||
                (rc = ebb__args_int(e, "weight", g, INT32_MIN, INT32_MAX, &w, &has_w, err)) != 0)
                return rc;
            if (name == NULL)
                return bad(err, e->line, g, "a plugin needs a name");
            if (has_w && w < 0)
                return bad(err, ebb_val_get(e, "weight")->line, ebb__args_join(f, sizeof(f), g, "weight"),
                           "bad weight %lld for %s: a score weight is 0 (meaning 1) or more",
                           (long long)w, name);
            if (l == 1 && strcmp(name, "*") == 0) {
                out->all_disabled = true;
                continue;
            }
            if ((k = known_index(name)) < 0)
                return bad(err, ebb_val_get(e, "name")->line, ebb__args_join(f, sizeof(f), g, "name"),
                           "unknown plugin \"%s\" (not a kube-scheduler in-tree plugin)", name);
            if (l == 1) {
                out->disabled[k] = true;
                continue;
            }
            if (ncustom >= (int)(NKNOWN * 2))
                return bad(err, e->line, g, "too many plugins");
            custom[ncustom] = k;
            cweight[ncustom++] = (int32_t)w;
        }
    }
    /* the defaults that are kept, re-configured ones in place */
    if (multi && !out->all_disabled) {
        for (size_t k = 0; k < NKNOWN; k++) {
            int32_t w = known[k].weight;
            if (!known[k].dflt || out->disabled[k])
                continue;
            for (int c = 0; c < ncustom; c++) {
                if (custom[c] == (int)k) {
                    w = cweight[c];
                    replaced[c] = true;
                    break;
                }
            }
            out->enabled[out->nenabled] = (int)k;
            out->weight[out->nenabled++] = w;
        }
    }
    for (int c = 0; c < ncustom; c++) {
        if (replaced[c])
            continue;
        out->enabled[out->nenabled] = custom[c];
        out->weight[out->nenabled++] = cweight[c];
    }
    return 0;
}

static bool in_set(const struct pset *s, int k)
{
    for (int i = 0; i < s->nenabled; i++)
        if (s->enabled[i] == k)
            return true;
    return false;
}

/* expandMultiPointPlugins for one extension point: the plugins of the
 * point in the framework's order (re-configured ones, MultiPoint ones,
 * then the point's own). `x` is the X_* the point asks for. */
static int expand(const struct pset *multi, const struct pset *point, unsigned x, int *out,
                  int *n, const char *path, int line, struct ebb_error *err)
{
    int over[NKNOWN * 2], nover = 0, mp[NKNOWN * 2], nmp = 0;

    *n = 0;
    for (int i = 0; i < point->nenabled; i++) {
        if (!(known[point->enabled[i]].points & x))
            return bad(err, line, path, "%s does not implement this extension point",
                       known[point->enabled[i]].name);
        for (int j = 0; j < i; j++)
            if (point->enabled[j] == point->enabled[i])
                return bad(err, line, path, "plugin %s is enabled twice",
                           known[point->enabled[i]].name);
    }
    if (!point->all_disabled) {
        for (int i = 0; i < multi->nenabled; i++) {
            int k = multi->enabled[i];
            if (!(known[k].points & x) || point->disabled[k])
                continue;
            if (in_set(point, k)) {
                over[nover++] = k;
                continue;
            }
            for (int j = 0; j < nmp; j++)
                if (mp[j] == k)
                    return bad(err, line, path, "plugin %s is enabled twice in multiPoint",
                               known[k].name);
            mp[nmp++] = k;
        }
    }
    for (int i = 0; i < nover; i++)
        out[(*n)++] = over[i];
    for (int i = 0; i < nmp; i++)
        out[(*n)++] = mp[i];
    for (int i = 0; i < point->nenabled; i++) {
        bool have = false;
        for (int j = 0; j < *n && !have; j++)
            have = out[j] == point->enabled[i];
        if (!have)
            out[(*n)++] = point->enabled[i];
    }
    return 0;
}

static int plugins_at(const struct ebb_val *plugins, const char *path, struct ebb_sched_profile *p,
                      struct ebb_error *err)
{
    struct pset sets[NPOINTS];
    int list[NKNOWN * 2], n, rc, lines[NPOINTS];
    char f[300];

    if (plugins != NULL && (rc = ebb__args_keys(plugins, path, points, err)) != 0)
        return rc;
    for (int i = 0; i < NPOINTS; i++) {
        const struct ebb_val *v = plugins ? ebb_val_get(plugins, points[i]) : NULL;
        lines[i] = v ? v->line : plugins ? plugins->line : 0;
        if ((rc = plugin_set(v && v->type != EBB_VAL_NULL ? v : NULL,
                             ebb__args_join(f, sizeof(f), path, points[i]), i == P_MULTI, &sets[i],
                             err)) != 0)
            return rc;
    }
    /* filters the model runs, in order */
    ebb__args_join(f, sizeof(f), path, "filter");
    if ((rc = expand(&sets[P_MULTI], &sets[P_FILTER], X_FILTER, list, &n, f, lines[P_FILTER], err)) != 0)
        return rc;
    p->nfilters = 0;
    for (int i = 0; i < n; i++) {
        int id = ebb_sched_plugin_id(known[list[i]].name);
        if (id >= 0)
            p->filters[p->nfilters++] = (uint8_t)id;
    }
    /* scores: the score point's weight wins over MultiPoint's; 0 is 1 */
    ebb__args_join(f, sizeof(f), path, "score");
    if ((rc = expand(&sets[P_MULTI], &sets[P_SCORE], X_SCORE, list, &n, f, lines[P_SCORE], err)) != 0)
        return rc;
    memset(p->weight, 0, sizeof(p->weight));
    for (int i = 0; i < n; i++) {
        int id = ebb_sched_plugin_id(known[list[i]].name);
        int32_t w = -1;
        if (id < 0 || !scores(list[i]))
            continue;
        for (int j = 0; j < sets[P_SCORE].nenabled && w < 0; j++)
            if (sets[P_SCORE].enabled[j] == list[i])
                w = sets[P_SCORE].weight[j];
        for (int j = 0; j < sets[P_MULTI].nenabled && w < 0; j++)
            if (sets[P_MULTI].enabled[j] == list[i])
                w = sets[P_MULTI].weight[j];
        p->weight[id] = w <= 0 ? 1 : w;
    }
    ebb__args_join(f, sizeof(f), path, "preEnqueue");
    if ((rc = expand(&sets[P_MULTI], &sets[P_PREENQUEUE], X_PREENQUEUE, list, &n, f, lines[P_PREENQUEUE], err)) != 0)
        return rc;
    p->scheduling_gates = false;
    for (int i = 0; i < n; i++)
        p->scheduling_gates |= strcmp(known[list[i]].name, "SchedulingGates") == 0;
    return 0;
}

/* ---- plugin args ---------------------------------------------------------------- */

static const char *const meta_keys_extra[] = { "apiVersion", "kind" };

/* ebb__args_keys with apiVersion and kind allowed besides `keys`. */
static int args_keys(const struct ebb_val *m, const char *path, const char *const *keys,
                     struct ebb_error *err)
{
    const char *all[24];
    size_t n = 0;

    for (; keys[n] != NULL && n < 20; n++)
        all[n] = keys[n];
    all[n++] = meta_keys_extra[0];
    all[n++] = meta_keys_extra[1];
    all[n] = NULL;
    return ebb__args_keys(m, path, all, err);
}

static int resources_at(const struct ebb_val *m, const char *key, const char *path, bool ba,
                        struct ebb_sched_resource **out, size_t *nout, struct ebb_error *err)
{
    static const char *const rkeys[] = { "name", "weight", NULL };
    const struct ebb_val *v = ebb_val_get(m, key);
    char f[300], g[340];
    int rc;

    if (v == NULL || v->type == EBB_VAL_NULL)
        return 0;
    ebb__args_join(f, sizeof(f), path, key);
    if (v->type != EBB_VAL_SEQ)
        return ebb__args_type_error(v, f, "a list of {name, weight}", err);
    if (v->u.seq.n == 0)
        return 0;   /* empty: the defaults */
    free(*out);
    *nout = 0;
    if ((*out = calloc(v->u.seq.n, sizeof(**out))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < v->u.seq.n; i++) {
        const struct ebb_val *e = v->u.seq.items[i];
        const char *name = NULL;
        int64_t w = 1;
        bool has_w;
        int id;
        ebb__args_index(g, sizeof(g), f, i);
        if ((rc = ebb__args_keys(e, g, rkeys, err)) != 0 ||
            (rc = ebb__args_str(e, "name", g, &name, NULL, err)) != 0 ||
            (rc = ebb__args_int(e, "weight", g, INT64_MIN, INT64_MAX, &w, &has_w, err)) != 0)
            return rc;
        if (e->type != EBB_VAL_MAP)
            return ebb__args_type_error(e, g, "{name, weight}", err);
        if (name == NULL || name[0] == '\0')
            return bad(err, e->line, g, "a resource needs a name");
        if (!has_w)
            w = 1;   /* defaulted */
        if (ba && w != 1)
            return bad(err, ebb_val_get(e, "weight")->line, ebb__args_join(f, sizeof(f), g, "weight"),
                       "resource weight of %s should be 1", name);
        if (!ba && (w < 1 || w > 100))
            return bad(err, has_w ? ebb_val_get(e, "weight")->line : e->line,
                       ebb__args_join(f, sizeof(f), g, "weight"),
                       "resource weight of %s not in valid range [1, 100]", name);
        for (size_t k = 0; k < *nout; k++)
            if (strcmp(ebb_resource_name((*out)[k].id), name) == 0)
                return bad(err, e->line, g, "resource %s is listed twice", name);
        if ((id = ebb_resource_id(name)) < 0)
            return bad(err, e->line, g, "too many distinct resource names");
        (*out)[(*nout)++] = (struct ebb_sched_resource){ id, w };
    }
    return 0;
}

static int fit_args(const struct ebb_val *a, const char *path, struct ebb_sched_profile *p,
                    struct ebb_error *err)
{
    static const char *const keys[] = { "ignoredResources", "ignoredResourceGroups", "scoringStrategy", NULL };
    static const char *const skeys[] = { "type", "resources", "requestedToCapacityRatio", NULL };
    static const char *const rkeys[] = { "shape", NULL };
    static const char *const pkeys[] = { "utilization", "score", NULL };
    const struct ebb_val *strs, *ss, *rtcr;
    char f[300], g[340], h[380];
    const char *type = NULL;
    int rc;

    if ((rc = args_keys(a, path, keys, err)) != 0)
        return rc;
    for (int which = 0; which < 2; which++) {
        const char *key = which == 0 ? "ignoredResources" : "ignoredResourceGroups";
        char ***v = which == 0 ? &p->ignored : &p->ignored_groups;
        size_t *n = which == 0 ? &p->nignored : &p->nignored_groups;
        if ((rc = ebb__args_strs(a, key, path, &strs, err)) != 0)
            return rc;
        if (strs == NULL || strs->u.seq.n == 0)
            continue;
        if ((*v = calloc(strs->u.seq.n, sizeof(**v))) == NULL)
            return EBB_ENOMEM;
        for (size_t i = 0; i < strs->u.seq.n; i++) {
            const char *s = strs->u.seq.items[i]->u.str.s;
            ebb__args_index(g, sizeof(g), ebb__args_join(f, sizeof(f), path, key), i);
            if (which == 1 && strchr(s, '/') != NULL)
                return bad(err, strs->u.seq.items[i]->line, g,
                           "\"%s\": a resource group name cannot contain '/'", s);
            if (s[0] == '\0')
                return bad(err, strs->u.seq.items[i]->line, g, "must not be empty");
            if (((*v)[(*n)++] = strdup(s)) == NULL)
                return EBB_ENOMEM;
        }
    }
    if ((rc = ebb__args_map(a, "scoringStrategy", path, &ss, err)) != 0 || ss == NULL)
        return rc;
    ebb__args_join(f, sizeof(f), path, "scoringStrategy");
    if ((rc = ebb__args_keys(ss, f, skeys, err)) != 0 || (rc = ebb__args_str(ss, "type", f, &type, NULL, err)) != 0)
        return rc;
    if (type == NULL || strcmp(type, "LeastAllocated") == 0)
        p->fit_strategy = EBB_SCHED_LEAST_ALLOCATED;
    else if (strcmp(type, "MostAllocated") == 0)
        p->fit_strategy = EBB_SCHED_MOST_ALLOCATED;
    else if (strcmp(type, "RequestedToCapacityRatio") == 0)
        p->fit_strategy = EBB_SCHED_RTCR;
    else
        return bad(err, ebb_val_get(ss, "type")->line, ebb__args_join(g, sizeof(g), f, "type"),
                   "\"%s\" is not LeastAllocated, MostAllocated or RequestedToCapacityRatio", type);
    if ((rc = resources_at(ss, "resources", f, false, &p->fit_resources, &p->nfit_resources, err)) != 0)
        return rc;
    if ((rc = ebb__args_map(ss, "requestedToCapacityRatio", f, &rtcr, err)) != 0)
        return rc;
    if (rtcr != NULL && p->fit_strategy != EBB_SCHED_RTCR)
        return bad(err, rtcr->line, ebb__args_join(g, sizeof(g), f, "requestedToCapacityRatio"),
                   "only for the RequestedToCapacityRatio type");
    if (p->fit_strategy != EBB_SCHED_RTCR)
        return 0;
    const struct ebb_val *shape = rtcr ? ebb_val_get(rtcr, "shape") : NULL;
    ebb__args_join(g, sizeof(g), f, "requestedToCapacityRatio");
    if (rtcr != NULL && (rc = ebb__args_keys(rtcr, g, rkeys, err)) != 0)
        return rc;
    if (shape == NULL || shape->type == EBB_VAL_NULL) {
        /* defaulted: {0: 10, 100: 0} */
        if ((p->shape = calloc(2, sizeof(*p->shape))) == NULL)
            return EBB_ENOMEM;
        p->shape[0] = (struct ebb_sched_shape_point){ 0, 10 };
        p->shape[1] = (struct ebb_sched_shape_point){ 100, 0 };
        p->nshape = 2;
        return 0;
    }
    ebb__args_join(h, sizeof(h), g, "shape");
    if (shape->type != EBB_VAL_SEQ || shape->u.seq.n == 0)
        return bad(err, shape->line, h, "expected a non-empty list of {utilization, score}");
    if ((p->shape = calloc(shape->u.seq.n, sizeof(*p->shape))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < shape->u.seq.n; i++) {
        const struct ebb_val *e = shape->u.seq.items[i];
        char q[420];
        int64_t u = 0, s = 0;
        ebb__args_index(q, sizeof(q), h, i);
        if (e->type != EBB_VAL_MAP)
            return ebb__args_type_error(e, q, "{utilization, score}", err);
        if ((rc = ebb__args_keys(e, q, pkeys, err)) != 0 ||
            (rc = ebb__args_int(e, "utilization", q, 0, 100, &u, NULL, err)) != 0 ||
            (rc = ebb__args_int(e, "score", q, 0, 10, &s, NULL, err)) != 0)
            return rc;
        if (i > 0 && u <= p->shape[i - 1].utilization)
            return bad(err, e->line, q, "utilization values must be sorted in increasing order");
        p->shape[p->nshape++] = (struct ebb_sched_shape_point){ u, s };
    }
    return 0;
}

static int spread_args(const struct ebb_val *a, const char *path, struct ebb_sched_profile *p,
                       struct ebb_error *err)
{
    static const char *const keys[] = { "defaultConstraints", "defaultingType", NULL };
    static const char *const ckeys[] = { "maxSkew", "topologyKey", "whenUnsatisfiable", "minDomains",
                                         "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys",
                                         "labelSelector", NULL };
    const struct ebb_val *dc;
    const char *type = NULL;
    char f[300], g[340], h[380];
    int rc;

    if ((rc = args_keys(a, path, keys, err)) != 0 ||
        (rc = ebb__args_str(a, "defaultingType", path, &type, NULL, err)) != 0)
        return rc;
    if (type != NULL && strcmp(type, "System") != 0 && strcmp(type, "List") != 0)
        return bad(err, ebb_val_get(a, "defaultingType")->line,
                   ebb__args_join(f, sizeof(f), path, "defaultingType"), "\"%s\" is not System or List", type);
    dc = ebb_val_get(a, "defaultConstraints");
    if (dc != NULL && dc->type == EBB_VAL_NULL)
        dc = NULL;
    ebb__args_join(f, sizeof(f), path, "defaultConstraints");
    if (dc != NULL && dc->type != EBB_VAL_SEQ)
        return ebb__args_type_error(dc, f, "a list of constraints", err);
    p->spread_system = type == NULL || strcmp(type, "System") == 0;
    if (p->spread_system) {
        if (dc != NULL && dc->u.seq.n > 0)
            return bad(err, ebb_val_key_line(a, "defaultConstraints"), f,
                       "when .defaultingType is \"System\", the constraints must be empty");
        return 0;
    }
    if (dc == NULL || dc->u.seq.n == 0)
        return 0;   /* List with none: no default spreading */
    if ((p->spread_defaults = calloc(dc->u.seq.n, sizeof(*p->spread_defaults))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < dc->u.seq.n; i++) {
        const struct ebb_val *e = dc->u.seq.items[i];
        struct ebb_tsc *t = &p->spread_defaults[p->nspread_defaults];
        const char *key = NULL, *when = NULL, *ap = NULL, *tp = NULL;
        const struct ebb_val *mlk;
        int64_t skew = 0, md = 0;
        bool has_md;
        ebb__args_index(g, sizeof(g), f, i);
        if (e->type != EBB_VAL_MAP)
            return ebb__args_type_error(e, g, "a constraint", err);
        if ((rc = ebb__args_keys(e, g, ckeys, err)) != 0 ||
            (rc = ebb__args_int(e, "maxSkew", g, INT32_MIN, INT32_MAX, &skew, NULL, err)) != 0 ||
            (rc = ebb__args_str(e, "topologyKey", g, &key, NULL, err)) != 0 ||
            (rc = ebb__args_str(e, "whenUnsatisfiable", g, &when, NULL, err)) != 0 ||
            (rc = ebb__args_int(e, "minDomains", g, INT32_MIN, INT32_MAX, &md, &has_md, err)) != 0 ||
            (rc = ebb__args_str(e, "nodeAffinityPolicy", g, &ap, NULL, err)) != 0 ||
            (rc = ebb__args_str(e, "nodeTaintsPolicy", g, &tp, NULL, err)) != 0 ||
            (rc = ebb__args_strs(e, "matchLabelKeys", g, &mlk, err)) != 0)
            return rc;
        if (ebb_val_get(e, "labelSelector") != NULL)
            return bad(err, ebb_val_get(e, "labelSelector")->line, ebb__args_join(h, sizeof(h), g, "labelSelector"),
                       "constraint must not define a selector, as they deduce it");
        if (skew <= 0)
            return bad(err, e->line, ebb__args_join(h, sizeof(h), g, "maxSkew"), "must be greater than zero");
        if (key == NULL || key[0] == '\0' || ebb_label_key_problem(key, strlen(key)) != NULL)
            return bad(err, e->line, ebb__args_join(h, sizeof(h), g, "topologyKey"),
                       "\"%s\" is not a valid label key", key ? key : "");
        if (when == NULL || (strcmp(when, "DoNotSchedule") != 0 && strcmp(when, "ScheduleAnyway") != 0))
            return bad(err, e->line, ebb__args_join(h, sizeof(h), g, "whenUnsatisfiable"),
                       "\"%s\" is not DoNotSchedule or ScheduleAnyway", when ? when : "");
        if (has_md && md <= 0)
            return bad(err, e->line, ebb__args_join(h, sizeof(h), g, "minDomains"), "must be greater than zero");
        for (int pol = 0; pol < 2; pol++) {
            const char *v = pol == 0 ? ap : tp;
            if (v != NULL && strcmp(v, "Honor") != 0 && strcmp(v, "Ignore") != 0)
                return bad(err, e->line, ebb__args_join(h, sizeof(h), g, pol == 0 ? "nodeAffinityPolicy" : "nodeTaintsPolicy"),
                           "\"%s\" is not Honor or Ignore", v);
        }
        t->max_skew = (int32_t)skew;
        t->min_domains = has_md ? (int32_t)md : 0;
        t->when_unsatisfiable = strcmp(when, "DoNotSchedule") == 0 ? EBB_TSC_DO_NOT_SCHEDULE : EBB_TSC_SCHEDULE_ANYWAY;
        t->node_affinity_policy = ap == NULL ? EBB_POLICY_UNSET : strcmp(ap, "Honor") == 0 ? EBB_POLICY_HONOR : EBB_POLICY_IGNORE;
        t->node_taints_policy = tp == NULL ? EBB_POLICY_UNSET : strcmp(tp, "Honor") == 0 ? EBB_POLICY_HONOR : EBB_POLICY_IGNORE;
        if ((t->topology_key = ebb_str_cstr(key)) == NULL)
            return EBB_ENOMEM;
        p->nspread_defaults++;
        for (uint16_t k = 0; k + 1u < p->nspread_defaults; k++)
            if (p->spread_defaults[k].topology_key == t->topology_key &&
                p->spread_defaults[k].when_unsatisfiable == t->when_unsatisfiable)
                return bad(err, e->line, g, "a constraint for {%s, %s} is listed twice", key, when);
        if (mlk != NULL && mlk->u.seq.n > 0) {
            if ((t->match_keys = calloc(mlk->u.seq.n, sizeof(*t->match_keys))) == NULL)
                return EBB_ENOMEM;
            for (size_t k = 0; k < mlk->u.seq.n; k++)
                if ((t->match_keys[t->nmatch_keys++] = ebb_str_cstr(mlk->u.seq.items[k]->u.str.s)) == NULL)
                    return EBB_ENOMEM;
        }
    }
    return 0;
}

static int affinity_args(const struct ebb_val *a, const char *path, struct ebb_sched_profile *p,
                         struct ebb_error *err)
{
    static const char *const keys[] = { "addedAffinity", NULL };
    const struct ebb_val *aa;
    cJSON *j;
    char f[300];
    int rc;

    if ((rc = args_keys(a, path, keys, err)) != 0 || (rc = ebb__args_map(a, "addedAffinity", path, &aa, err)) != 0 ||
        aa == NULL)
        return rc;
    ebb__args_join(f, sizeof(f), path, "addedAffinity");
    static const char *const akeys[] = { "requiredDuringSchedulingIgnoredDuringExecution",
                                         "preferredDuringSchedulingIgnoredDuringExecution", NULL };
    if ((rc = ebb__args_keys(aa, f, akeys, err)) != 0)
        return rc;
    if ((j = ebb_val_to_cjson(aa)) == NULL)
        return EBB_ENOMEM;
    rc = ebb_decode_node_affinity(j, &p->added_affinity, err);
    cJSON_Delete(j);
    if (rc != 0) {
        char inner[256], full[600];
        snprintf(inner, sizeof(inner), "%s", err->field);
        snprintf(full, sizeof(full), "%s%s%s", f, inner[0] ? "." : "", inner);
        full[sizeof(err->field) - 1] = '\0';
        memcpy(err->field, full, sizeof(err->field));
        err->line = inner[0] && ebb_val_line_for(aa, inner) > 0 ? ebb_val_line_for(aa, inner) : aa->line;
        err->code = EBB_ESCHEMA;
        return EBB_ESCHEMA;
    }
    return 0;
}

static int plugin_args(const char *name, const struct ebb_val *a, const char *path,
                       struct ebb_sched_profile *p, struct ebb_error *err)
{
    int64_t v = 0;
    bool has, b = false;
    int rc;

    if (a != NULL && a->type != EBB_VAL_MAP)
        return ebb__args_type_error(a, path, "the plugin's args (a map)", err);
    if (strcmp(name, "NodeResourcesFit") == 0)
        return a ? fit_args(a, path, p, err) : 0;
    if (strcmp(name, "NodeResourcesBalancedAllocation") == 0) {
        static const char *const keys[] = { "resources", NULL };
        if (a == NULL)
            return 0;
        if ((rc = args_keys(a, path, keys, err)) != 0)
            return rc;
        return resources_at(a, "resources", path, true, &p->ba_resources, &p->nba_resources, err);
    }
    if (strcmp(name, "PodTopologySpread") == 0)
        return a ? spread_args(a, path, p, err) : 0;
    if (strcmp(name, "NodeAffinity") == 0)
        return a ? affinity_args(a, path, p, err) : 0;
    if (strcmp(name, "InterPodAffinity") == 0) {
        static const char *const keys[] = { "hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods", NULL };
        if (a == NULL)
            return 0;
        if ((rc = args_keys(a, path, keys, err)) != 0 ||
            (rc = ebb__args_int(a, "hardPodAffinityWeight", path, 0, 100, &v, &has, err)) != 0 ||
            (rc = ebb__args_bool(a, "ignorePreferredTermsOfExistingPods", path, &b, NULL, err)) != 0)
            return rc;
        if (has)
            p->hard_pod_affinity_weight = (int32_t)v;
        p->ignore_preferred_terms_of_existing_pods = b;
        return 0;
    }
    if (strcmp(name, "DefaultPreemption") == 0) {
        static const char *const keys[] = { "minCandidateNodesPercentage", "minCandidateNodesAbsolute", NULL };
        if (a == NULL)
            return 0;
        if ((rc = args_keys(a, path, keys, err)) != 0 ||
            (rc = ebb__args_int(a, "minCandidateNodesPercentage", path, 0, 100, &v, NULL, err)) != 0 ||
            (rc = ebb__args_int(a, "minCandidateNodesAbsolute", path, 0, INT32_MAX, &v, NULL, err)) != 0)
            return rc;
        return 0;   /* preemption is not modelled */
    }
    if (strcmp(name, "VolumeBinding") == 0)
        return 0;   /* not modelled; its args are the volume plugins' business */
    if (known_index(name) >= 0)
        return bad(err, a ? a->line : 0, path, "plugin %s takes no args", name);
    return bad(err, a ? a->line : 0, path, "unknown plugin \"%s\" (not a kube-scheduler in-tree plugin)", name);
}

static int profile_at(const struct ebb_val *v, const char *path, bool single,
                      struct ebb_sched_profile *p, struct ebb_error *err)
{
    static const char *const keys[] = { "schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig", NULL };
    static const char *const ckeys[] = { "name", "args", NULL };
    const struct ebb_val *plugins = NULL, *pc;
    const char *name = NULL;
    int64_t pct = -1;
    char f[300], g[340];
    int rc;

    if (v->type != EBB_VAL_MAP)
        return ebb__args_type_error(v, path, "a profile", err);
    if ((rc = ebb__args_keys(v, path, keys, err)) != 0 ||
        (rc = ebb__args_str(v, "schedulerName", path, &name, NULL, err)) != 0)
        return rc;
    if (name == NULL || name[0] == '\0') {
        if (!single)
            return bad(err, v->line, ebb__args_join(f, sizeof(f), path, "schedulerName"),
                       "required with more than one profile");
        name = "default-scheduler";
    }
    if ((rc = profile_default(p, name)) != 0)
        return rc;
    if ((rc = ebb__args_int(v, "percentageOfNodesToScore", path, INT64_MIN, INT64_MAX, &pct, NULL, err)) != 0)
        return rc;
    if (pct != -1 && (pct < 0 || pct > 100))
        return bad(err, ebb_val_get(v, "percentageOfNodesToScore")->line,
                   ebb__args_join(f, sizeof(f), path, "percentageOfNodesToScore"),
                   "%lld not in valid range [0-100]", (long long)pct);
    p->percentage = (int32_t)pct;
    if ((rc = ebb__args_map(v, "plugins", path, &plugins, err)) != 0 ||
        (rc = plugins_at(plugins, ebb__args_join(f, sizeof(f), path, "plugins"), p, err)) != 0)
        return rc;
    pc = ebb_val_get(v, "pluginConfig");
    if (pc == NULL || pc->type == EBB_VAL_NULL)
        return 0;
    ebb__args_join(f, sizeof(f), path, "pluginConfig");
    if (pc->type != EBB_VAL_SEQ)
        return ebb__args_type_error(pc, f, "a list of {name, args}", err);
    for (size_t i = 0; i < pc->u.seq.n; i++) {
        const struct ebb_val *e = pc->u.seq.items[i];
        const char *pname = NULL;
        ebb__args_index(g, sizeof(g), f, i);
        if (e->type != EBB_VAL_MAP)
            return ebb__args_type_error(e, g, "{name, args}", err);
        if ((rc = ebb__args_keys(e, g, ckeys, err)) != 0 ||
            (rc = ebb__args_str(e, "name", g, &pname, NULL, err)) != 0)
            return rc;
        if (pname == NULL)
            return bad(err, e->line, g, "a plugin config needs a name");
        for (size_t k = 0; k < i; k++) {
            const struct ebb_val *o = ebb_val_get(pc->u.seq.items[k], "name");
            if (o != NULL && o->type == EBB_VAL_STRING && strcmp(o->u.str.s, pname) == 0)
                return bad(err, e->line, g, "duplicate config for plugin %s", pname);
        }
        const struct ebb_val *args = ebb_val_get(e, "args");
        char ap[380];
        if ((rc = plugin_args(pname, args && args->type != EBB_VAL_NULL ? args : NULL,
                              ebb__args_join(ap, sizeof(ap), g, "args"), p, err)) != 0) {
            if (err && err->line == 0)
                err->line = e->line;
            return rc;
        }
    }
    return 0;
}

static int config_from(const struct ebb_val *root, struct ebb_sched_config **out, struct ebb_error *err)
{
    static const char *const keys[] = { "apiVersion", "kind", "parallelism", "leaderElection",
                                        "clientConnection", "healthzBindAddress", "metricsBindAddress",
                                        "enableProfiling", "enableContentionProfiling",
                                        "percentageOfNodesToScore", "podInitialBackoffSeconds",
                                        "podMaxBackoffSeconds", "profiles", "extenders",
                                        "delayCacheUntilActive", NULL };
    struct ebb_sched_config *c = NULL;
    const char *av = NULL, *kind = NULL;
    const struct ebb_val *profiles, *ext;
    int64_t pct = 0;
    int rc;

    if (root == NULL || root->type != EBB_VAL_MAP)
        return bad(err, root ? root->line : 1, NULL, "expected a KubeSchedulerConfiguration object");
    if ((rc = ebb__args_keys(root, "", keys, err)) != 0 ||
        (rc = ebb__args_str(root, "apiVersion", "", &av, NULL, err)) != 0 ||
        (rc = ebb__args_str(root, "kind", "", &kind, NULL, err)) != 0)
        return rc;
    if (av == NULL || (strcmp(av, "kubescheduler.config.k8s.io/v1") != 0 &&
                       strcmp(av, "kubescheduler.config.k8s.io/v1beta3") != 0))
        return bad(err, av ? ebb_val_get(root, "apiVersion")->line : root->line, "apiVersion",
                   "\"%s\": expected kubescheduler.config.k8s.io/v1 (or v1beta3)", av ? av : "");
    if (kind == NULL || strcmp(kind, "KubeSchedulerConfiguration") != 0)
        return bad(err, kind ? ebb_val_get(root, "kind")->line : root->line, "kind",
                   "\"%s\": expected KubeSchedulerConfiguration", kind ? kind : "");
    if ((rc = ebb__args_int(root, "percentageOfNodesToScore", "", INT64_MIN, INT64_MAX, &pct, NULL, err)) != 0)
        return rc;
    if (pct < 0 || pct > 100)
        return bad(err, ebb_val_get(root, "percentageOfNodesToScore")->line, "percentageOfNodesToScore",
                   "%lld not in valid range [0-100]", (long long)pct);
    ext = ebb_val_get(root, "extenders");
    if (ext != NULL && ext->type == EBB_VAL_SEQ && ext->u.seq.n > 0)
        ebb_log(EBB_LOG_WARN, "extenders are not modelled: the simulated scheduler ignores them");
    if ((c = calloc(1, sizeof(*c))) == NULL)
        return EBB_ENOMEM;
    c->percentage = (int32_t)pct;
    profiles = ebb_val_get(root, "profiles");
    if (profiles != NULL && profiles->type != EBB_VAL_NULL && profiles->type != EBB_VAL_SEQ) {
        rc = ebb__args_type_error(profiles, "profiles", "a list of profiles", err);
        goto fail;
    }
    size_t n = profiles && profiles->type == EBB_VAL_SEQ ? profiles->u.seq.n : 0;
    if ((c->profiles = calloc(n ? n : 1, sizeof(*c->profiles))) == NULL) {
        rc = EBB_ENOMEM;
        goto fail;
    }
    if (n == 0) {
        c->nprofiles = 1;
        if ((rc = profile_default(&c->profiles[0], "default-scheduler")) != 0)
            goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        char f[64];
        ebb__args_index(f, sizeof(f), "profiles", i);
        c->nprofiles++;
        if ((rc = profile_at(profiles->u.seq.items[i], f, n == 1, &c->profiles[i], err)) != 0)
            goto fail;
        for (size_t k = 0; k < i; k++)
            if (strcmp(c->profiles[k].name, c->profiles[i].name) == 0) {
                rc = bad(err, profiles->u.seq.items[i]->line, f, "duplicate schedulerName \"%s\"",
                         c->profiles[i].name);
                goto fail;
            }
    }
    *out = c;
    return 0;
fail:
    ebb_sched_config_free(c);
    return rc == EBB_ENOMEM ? ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory") : rc;
}

int ebb_sched_config_parse(const char *buf, size_t len, const char *name,
                           struct ebb_sched_config **out, struct ebb_error *err)
{
    struct ebb_val *root = NULL;
    int rc;

    if (buf == NULL || out == NULL)
        return EBB_EINVAL;
    if ((rc = ebb_val_parse(buf, len, name, &root, err)) != 0)
        return ebb__args_in_file(rc, name, err);
    rc = config_from(root, out, err);
    ebb_val_free(root);
    return ebb__args_in_file(rc, name, err);
}

int ebb_sched_config_load(const char *path, struct ebb_sched_config **out, struct ebb_error *err)
{
    struct ebb_val *root = NULL;
    int rc;

    if (path == NULL || out == NULL)
        return EBB_EINVAL;
    if ((rc = ebb_val_load(path, &root, err)) != 0)
        return ebb__args_in_file(rc, path, err);
    rc = config_from(root, out, err);
    ebb_val_free(root);
    return ebb__args_in_file(rc, path, err);
}
