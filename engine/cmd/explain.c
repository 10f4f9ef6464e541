/* `ebb explain NAMESPACE/POD --policy FILE (--snapshot FILE | --kubeconfig
 * FILE)`: why ebb does or does not evict one pod.
 *
 * One cycle runs as `ebb simulate` runs it (ebb_simulate), with the engine
 * observing the pod (ebb_engine_observe): every filter plugin's verdict at
 * the cycle's start, every check a strategy or the evictor made, every
 * eviction asked and its outcome. Observing decides nothing: the plan is
 * the one `ebb simulate` prints. Around the cycle: the limits and how full
 * they are, the PodDisruptionBudgets that select the pod (their status, and
 * what the cycle took), where the scheduler model places its replacement
 * (ebb/predict.h, on the cluster before the cycle with the pod gone) and
 * the memory of evictions' entries for its workload.
 *
 * Against a cluster (--kubeconfig) the cluster is listed as `ebb record`
 * lists it (a scratch snapshot, removed after) and explained the same way.
 *
 * Everything is gathered into one JSON document (version 1, documented in
 * docs/explain.md); the text output is a rendering of that document, so
 * both always say the same. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ebb/explain.h"
#include "ebb/flags.h"
#include "ebb/record.h"
#include "ebb/selector.h"
#include "ebb/simulate.h"
#include "ebb.h"
#include "base/vec.h"

#define EXIT_INPUT 2
#define MAX_MEMORY_ENTRIES 50

struct explain {
    const char *target;             /* NAMESPACE/POD as given */
    char ns[254], name[254];
    const char *source;             /* the snapshot file, or the kubeconfig */
    bool live;
    struct ebb_predictor *pred;
    const struct ebb_pod *pod;      /* in the engine's cache */
    cJSON *doc;                     /* the explanation being built */
    cJSON *profiles;                /* doc.profiles */
    bool oom;
};

/* ---- gathering ----------------------------------------------------------- */

static const char *ext_name(int ext)
{
    return ext == EBB_EXT_FILTER ? "filter" : "preEvictionFilter";
}

static const char *verdict_name(int v)
{
    return v > 0 ? "evictable" : v == 0 ? "protected" : "failed";
}

static cJSON *find_named(cJSON *arr, const char *key, const char *name)
{
    cJSON *it;

    cJSON_ArrayForEach(it, arr) {
        const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(it, key));
        if (n != NULL && name != NULL && strcmp(n, name) == 0)
            return it;
    }
    return NULL;
}

static cJSON *profile_of(struct explain *x, const char *name)
{
    cJSON *p = find_named(x->profiles, "name", name);

    if (p != NULL)
        return p;
    p = cJSON_CreateObject();
    if (p == NULL || !cJSON_AddStringToObject(p, "name", name ? name : "") ||
        !cJSON_AddArrayToObject(p, "filters") || !cJSON_AddArrayToObject(p, "strategies")) {
        cJSON_Delete(p);
        x->oom = true;
        return NULL;
    }
    cJSON_AddItemToArray(x->profiles, p);
    return p;
}

static cJSON *strategy_of(struct explain *x, cJSON *profile, const char *plugin)
{
    cJSON *arr = cJSON_GetObjectItem(profile, "strategies");
    cJSON *s = find_named(arr, "plugin", plugin);

    if (s != NULL)
        return s;
    s = cJSON_CreateObject();
    if (s == NULL || !cJSON_AddStringToObject(s, "plugin", plugin ? plugin : "") ||
        !cJSON_AddBoolToObject(s, "candidate", false) ||
        !cJSON_AddNumberToObject(s, "filterChecks", 0) ||
        !cJSON_AddArrayToObject(s, "evictions")) {
        cJSON_Delete(s);
        x->oom = true;
        return NULL;
    }
    cJSON_AddItemToArray(arr, s);
    return s;
}

static void set_candidate(cJSON *s)
{
    cJSON_ReplaceItemInObject(s, "candidate", cJSON_CreateTrue());
}

/* The engine's observer: each verdict, check and eviction of the pod. */
static void observe(void *ud, const struct ebb_observation *o)
{
    struct explain *x = ud;
    cJSON *profile = profile_of(x, o->profile), *s, *it;

    if (profile == NULL)
        return;
    switch (o->kind) {
    case EBB_OBSERVE_VERDICT:
        if ((it = cJSON_CreateObject()) == NULL) {
            x->oom = true;
            return;
        }
        cJSON_AddStringToObject(it, "plugin", o->plugin);
        cJSON_AddStringToObject(it, "extensionPoint", ext_name(o->ext));
        cJSON_AddStringToObject(it, "verdict", verdict_name(o->verdict));
        cJSON_AddStringToObject(it, "reason", o->detail ? o->detail : "");
        cJSON_AddItemToArray(cJSON_GetObjectItem(profile, "filters"), it);
        break;
    case EBB_OBSERVE_CHECK:
        /* a strategy listing candidates, or the evictor about its eviction */
        if (o->caller == NULL || (s = strategy_of(x, profile, o->caller)) == NULL)
            return;
        set_candidate(s);
        if (!o->evicting) {
            cJSON *n = cJSON_GetObjectItem(s, "filterChecks");
            cJSON_SetNumberValue(n, n->valuedouble + 1);
        }
        break;
    case EBB_OBSERVE_EVICT:
        if ((s = strategy_of(x, profile, o->plugin)) == NULL || (it = cJSON_CreateObject()) == NULL) {
            x->oom = true;
            return;
        }
        set_candidate(s);
        cJSON_AddStringToObject(it, "outcome", o->verdict == EBB_WHY_OK ? "evicted" : "refused");
        cJSON_AddStringToObject(it, "why", ebb_why_name(o->verdict));
        if (o->refuser != NULL)
            cJSON_AddStringToObject(it, "refusedBy", o->refuser);
        else
            cJSON_AddNullToObject(it, "refusedBy");
        cJSON_AddStringToObject(it, "detail", o->detail ? o->detail : "");
        cJSON_AddItemToArray(cJSON_GetObjectItem(s, "evictions"), it);
        break;
    }
}

/* "did you mean": the nearest pod key of the cache. */
struct keys {
    char **v;
    size_t n, cap;
};

static void collect_key(void *obj, void *ud)
{
    const struct ebb_pod *p = obj;
    struct keys *k = ud;
    char buf[520], *key;

    snprintf(buf, sizeof(buf), "%s/%s", p->ns, p->name);
    if ((key = strdup(buf)) != NULL && ebb__vec_push(k, key) != 0)
        free(key);
}

static int not_found(struct explain *x, struct ebb_cache *c, struct ebb_error *err)
{
    struct keys k = { 0 };
    const char *near;
    int rc;

    ebb_cache_each(c, EBB_KIND_POD, collect_key, &k);
    near = ebb_nearest_name(x->target, (const char *const *)k.v, k.n);
    rc = ebb_error_set(err, EBB_ENOENT, x->live ? NULL : x->source, 0, NULL,
                       "pod %s is not in the %s (%zu pods)%s%s%s", x->target,
                       x->live ? "cluster" : "snapshot", k.n, near ? "; did you mean " : "",
                       near ? near : "", near ? "?" : "");
    for (size_t i = 0; i < k.n; i++)
        free(k.v[i]);
    free(k.v);
    return rc;
}

/* Where the scheduler model places the replacement: before the cycle, on
 * the cluster as it is with the pod gone. */
static void replacement(struct explain *x, struct ebb_engine *e, struct ebb_pod *pod)
{
    struct ebb_cache *c = ebb_engine_cache(e);
    const struct ebb_owner *by = ebb_whatif_recreator(c, pod);
    struct ebb_prediction pr;
    cJSON *r = cJSON_AddObjectToObject(x->doc, "replacement"), *o;

    if (r == NULL) {
        x->oom = true;
        return;
    }
    if (by == NULL) {
        cJSON_AddNullToObject(r, "recreatedBy");
        cJSON_AddStringToObject(r, "status", "gone");
        cJSON_AddNullToObject(r, "node");
        cJSON_AddStringToObject(r, "message", "no controller recreates it (a bare pod, a finished "
                                "one, or an owner with 0 replicas)");
        return;
    }
    if ((o = cJSON_AddObjectToObject(r, "recreatedBy")) != NULL) {
        cJSON_AddStringToObject(o, "kind", by->kind);
        cJSON_AddStringToObject(o, "name", by->name);
    }
    if (pod->node == NULL) {
        cJSON_AddStringToObject(r, "status", "unscheduled");
        cJSON_AddNullToObject(r, "node");
        cJSON_AddStringToObject(r, "message", "the pod is bound to no node: no eviction replaces it");
        return;
    }
    if (ebb_predictor_predict(x->pred, e, pod, &pr) != 0) {
        cJSON_AddStringToObject(r, "status", "unknown");
        cJSON_AddNullToObject(r, "node");
        cJSON_AddStringToObject(r, "message", "the scheduler model could not be built");
        return;
    }
    cJSON_AddStringToObject(r, "status", pr.status == EBB_PREDICT_PLACED ? "placed" :
                                         pr.status == EBB_PREDICT_PENDING ? "pending" : "gone");
    if (pr.status == EBB_PREDICT_PLACED && pr.node != NULL)
        cJSON_AddStringToObject(r, "node", pr.node);
    else
        cJSON_AddNullToObject(r, "node");
    cJSON_AddStringToObject(r, "message", pr.message);
}

static int before_cycles(void *ud, struct ebb_engine *e, struct ebb_error *err)
{
    struct explain *x = ud;
    struct ebb_cache *c = ebb_engine_cache(e);
    struct ebb_pod *pod;
    ebb_str kind = NULL, wl = NULL;
    cJSON *p, *w;

    if (c == NULL)
        return ebb_error_set(err, EBB_ESTATE, NULL, 0, NULL, "no cluster to explain");
    pod = ebb_cache_pod(c, ebb_str_find(x->ns, strlen(x->ns)), ebb_str_find(x->name, strlen(x->name)));
    if (pod == NULL)
        return not_found(x, c, err);
    x->pod = pod;
    if ((p = cJSON_AddObjectToObject(x->doc, "pod")) == NULL)
        return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
    cJSON_AddStringToObject(p, "namespace", pod->ns);
    cJSON_AddStringToObject(p, "name", pod->name);
    if (pod->node != NULL)
        cJSON_AddStringToObject(p, "node", pod->node);
    else
        cJSON_AddNullToObject(p, "node");
    if (ebb_evmem_workload_of(c, pod, &kind, &wl) != 0)
        return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
    if ((w = cJSON_AddObjectToObject(p, "workload")) != NULL) {
        cJSON_AddStringToObject(w, "kind", kind);
        cJSON_AddStringToObject(w, "name", wl);
    }
    ebb_str_release(kind);
    ebb_str_release(wl);
    replacement(x, e, pod);
    /* every strategy of every profile, in the policy's order: one that never
     * meets the pod is listed as no candidate */
    {
        struct ebb_plugin_time pt[256];
        size_t n = ebb_engine_plugin_times(e, pt, EBB_ARRAY_LEN(pt));
        for (size_t i = 0; i < n && i < EBB_ARRAY_LEN(pt); i++) {
            cJSON *profile = profile_of(x, pt[i].profile);
            if (profile != NULL)
                strategy_of(x, profile, pt[i].plugin);
        }
    }
    ebb_engine_observe(e, pod, observe, x);
    return 0;
}

static cJSON *limit(int64_t max, uint64_t used)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL)
        return NULL;
    if (max == EBB_UNLIMITED)
        cJSON_AddNullToObject(o, "max");
    else
        cJSON_AddNumberToObject(o, "max", (double)max);
    cJSON_AddNumberToObject(o, "used", (double)used);
    return o;
}

/* After the cycle: limits, budgets, memory, and every strategy of every
 * profile listed (a strategy that never met the pod is "not a candidate"). */
static void after_cycle(struct explain *x, struct ebb_engine *e, struct ebb_evmem *m)
{
    struct ebb_cache *c = ebb_engine_cache(e);
    const struct ebb_pod *pod = x->pod;
    struct ebb_limits lim;
    const struct ebb_pdb *const *pdbs;
    const struct ebb_evmem_entry *ents[MAX_MEMORY_ENTRIES];
    uint32_t npdbs;
    cJSON *l, *arr, *mem, *w, *it;
    bool evicted = false;
    size_t total;

    cJSON_ArrayForEach(it, x->profiles) {
        cJSON *s, *ev;
        cJSON_ArrayForEach(s, cJSON_GetObjectItem(it, "strategies"))
            cJSON_ArrayForEach(ev, cJSON_GetObjectItem(s, "evictions"))
                if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(ev, "outcome")), "evicted") == 0)
                    evicted = true;
    }
    cJSON_AddBoolToObject(x->doc, "evicted", evicted);

    ebb_engine_limits(e, pod->node, pod->ns, &lim);
    if ((l = cJSON_AddObjectToObject(x->doc, "limits")) != NULL) {
        cJSON_AddItemToObject(l, "perNode", limit(lim.max_per_node, lim.node));
        cJSON_AddItemToObject(l, "perNamespace", limit(lim.max_per_namespace, lim.ns));
        cJSON_AddItemToObject(l, "total", limit(lim.max_total, lim.total));
    }

    pdbs = ebb_cache_pdbs_in(c, pod->ns, &npdbs);
    if ((arr = cJSON_AddArrayToObject(x->doc, "podDisruptionBudgets")) != NULL) {
        for (uint32_t i = 0; i < npdbs; i++) {
            const struct ebb_pdb *b = pdbs[i];
            int32_t allowed, healthy;
            cJSON *o, *after;
            if (!ebb_selector_matches(b->selector, &pod->labels) || (o = cJSON_CreateObject()) == NULL)
                continue;
            cJSON_AddStringToObject(o, "name", b->name);
            if (b->min_available)
                cJSON_AddStringToObject(o, "minAvailable", b->min_available);
            else
                cJSON_AddNullToObject(o, "minAvailable");
            if (b->max_unavailable)
                cJSON_AddStringToObject(o, "maxUnavailable", b->max_unavailable);
            else
                cJSON_AddNullToObject(o, "maxUnavailable");
            cJSON_AddNumberToObject(o, "currentHealthy", b->current_healthy);
            cJSON_AddNumberToObject(o, "desiredHealthy", b->desired_healthy);
            cJSON_AddNumberToObject(o, "expectedPods", b->expected_pods);
            cJSON_AddNumberToObject(o, "disruptionsAllowed", b->disruptions_allowed);
            if (ebb_engine_pdb_left(e, b, &allowed, &healthy) &&
                (after = cJSON_AddObjectToObject(o, "afterCycle")) != NULL) {
                cJSON_AddNumberToObject(after, "disruptionsAllowed", allowed);
                cJSON_AddNumberToObject(after, "currentHealthy", healthy);
            } else
                cJSON_AddNullToObject(o, "afterCycle");
            cJSON_AddItemToArray(arr, o);
        }
    }

    if ((mem = cJSON_AddObjectToObject(x->doc, "memory")) == NULL ||
        (arr = cJSON_AddArrayToObject(mem, "entries")) == NULL) {
        x->oom = true;
        return;
    }
    w = cJSON_GetObjectItem(cJSON_GetObjectItem(x->doc, "pod"), "workload");
    cJSON_AddNumberToObject(mem, "windowSeconds",
                            (double)(m->window > 0 ? m->window : EBB_EVMEM_WINDOW_DEFAULT));
    {
        ebb_str kind = ebb_str_cstr(cJSON_GetStringValue(cJSON_GetObjectItem(w, "kind")));
        ebb_str name = ebb_str_cstr(cJSON_GetStringValue(cJSON_GetObjectItem(w, "name")));
        total = ebb_evmem_find(m, pod->ns, kind, name, 0, ents, EBB_ARRAY_LEN(ents));
        ebb_str_release(kind);
        ebb_str_release(name);
    }
    cJSON_AddNumberToObject(mem, "total", (double)total);
    for (size_t i = 0; i < total && i < EBB_ARRAY_LEN(ents); i++) {
        const struct ebb_evmem_entry *en = ents[i];
        char at[40];
        cJSON *o = cJSON_CreateObject();
        if (o == NULL)
            break;
        ebb_time_format(en->at, at, sizeof(at));
        cJSON_AddStringToObject(o, "at", at);
        cJSON_AddStringToObject(o, "pod", en->pod);
        cJSON_AddStringToObject(o, "node", en->node ? en->node : "");
        cJSON_AddStringToObject(o, "plugin", en->plugin ? en->plugin : "");
        cJSON_AddStringToObject(o, "profile", en->profile ? en->profile : "");
        if (en->landed)
            cJSON_AddStringToObject(o, "landed", en->landed);
        else
            cJSON_AddNullToObject(o, "landed");
        cJSON_AddBoolToObject(o, "bounced", (en->flags & EBB_EVMEM_BOUNCED) != 0);
        cJSON_AddItemToArray(arr, o);
    }
}

/* The document's keys in the documented order (they were added as the
 * cycle went). */
static void reorder(cJSON *doc)
{
    static const char *const order[] = {
        "apiVersion", "kind", "source", "input", "policy", "pod", "evicted", "profiles",
        "limits", "podDisruptionBudgets", "replacement", "memory",
    };

    for (size_t i = 0; i < EBB_ARRAY_LEN(order); i++) {
        cJSON *it = cJSON_DetachItemFromObjectCaseSensitive(doc, order[i]);
        if (it != NULL)
            cJSON_AddItemToObject(doc, order[i], it);
    }
}

/* ---- text ---------------------------------------------------------------- */

static const char *str(const cJSON *o, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));
    return s ? s : "";
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *n = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(n) ? n->valuedouble : 0;
}

static void print_limit(FILE *f, const char *what, const cJSON *l, const char *of)
{
    const cJSON *max = cJSON_GetObjectItem(l, "max");

    if (cJSON_IsNull(max))
        fprintf(f, "  %-13s unlimited (%.0f evicted%s%s)\n", what, num(l, "used"), of[0] ? " from " : "", of);
    else
        fprintf(f, "  %-13s %.0f of %.0f%s%s%s\n", what, num(l, "used"), max->valuedouble,
                of[0] ? " (" : "", of, of[0] ? ")" : "");
}

static void print_text(FILE *f, const cJSON *d)
{
    const cJSON *pod = cJSON_GetObjectItem(d, "pod"), *w = cJSON_GetObjectItem(pod, "workload");
    const cJSON *r = cJSON_GetObjectItem(d, "replacement"), *l = cJSON_GetObjectItem(d, "limits");
    const cJSON *mem = cJSON_GetObjectItem(d, "memory"), *p, *it, *ev;
    char buf[600];

    fprintf(f, "pod %s/%s on %s (%s %s)\n", str(pod, "namespace"), str(pod, "name"),
            cJSON_IsNull(cJSON_GetObjectItem(pod, "node")) ? "no node" : str(pod, "node"),
            str(w, "kind"), str(w, "name"));
    fprintf(f, "%s in this cycle (%s %s, policy %s)\n",
            cJSON_IsTrue(cJSON_GetObjectItem(d, "evicted")) ? "EVICTED" : "not evicted",
            str(d, "source"), str(d, "input"), str(d, "policy"));
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(d, "profiles")) {
        fprintf(f, "\nprofile %s\n  filters (each asked alone at the cycle's start):\n", str(p, "name"));
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(p, "filters")) {
            const char *reason = str(it, "reason");
            fprintf(f, "    %-18s %-22s %s%s%s\n", str(it, "extensionPoint"), str(it, "plugin"),
                    str(it, "verdict"), reason[0] ? ": " : "", reason);
        }
        fprintf(f, "  strategies:\n");
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(p, "strategies")) {
            const cJSON *evs = cJSON_GetObjectItem(it, "evictions");
            if (!cJSON_IsTrue(cJSON_GetObjectItem(it, "candidate"))) {
                fprintf(f, "    %-30s not a candidate (never asked about the pod)\n", str(it, "plugin"));
                continue;
            }
            snprintf(buf, sizeof(buf), "candidate (%.0f filter check%s while listing)",
                     num(it, "filterChecks"), num(it, "filterChecks") == 1 ? "" : "s");
            if (cJSON_GetArraySize(evs) == 0)
                fprintf(f, "    %-30s %s, no eviction asked\n", str(it, "plugin"), buf);
            else
                fprintf(f, "    %-30s %s, %d eviction%s asked:\n", str(it, "plugin"), buf,
                        cJSON_GetArraySize(evs), cJSON_GetArraySize(evs) == 1 ? "" : "s");
            cJSON_ArrayForEach(ev, evs) {
                const char *by = str(ev, "refusedBy"), *detail = str(ev, "detail");
                if (strcmp(str(ev, "outcome"), "evicted") == 0)
                    fprintf(f, "      evicted\n");
                else
                    fprintf(f, "      refused: %s%s%s%s%s\n", str(ev, "why"), by[0] ? " by " : "",
                            by, detail[0] ? ": " : "", detail);
            }
        }
    }
    fprintf(f, "\nlimits after the cycle:\n");
    if (cJSON_IsNull(cJSON_GetObjectItem(pod, "node")))
        fprintf(f, "  %-13s none applies: the pod is on no node\n", "per node");
    else {
        snprintf(buf, sizeof(buf), "node %s", str(pod, "node"));
        print_limit(f, "per node", cJSON_GetObjectItem(l, "perNode"), buf);
    }
    snprintf(buf, sizeof(buf), "namespace %s", str(pod, "namespace"));
    print_limit(f, "per namespace", cJSON_GetObjectItem(l, "perNamespace"), buf);
    print_limit(f, "total", cJSON_GetObjectItem(l, "total"), "");
    it = cJSON_GetObjectItem(d, "podDisruptionBudgets");
    if (cJSON_GetArraySize(it) == 0)
        fprintf(f, "\nno PodDisruptionBudget selects the pod\n");
    else
        fprintf(f, "\nPodDisruptionBudgets that select the pod:\n");
    cJSON_ArrayForEach(p, it) {
        const cJSON *after = cJSON_GetObjectItem(p, "afterCycle");
        const char *minav = str(p, "minAvailable"), *maxun = str(p, "maxUnavailable");
        fprintf(f, "  %s: %s%s%s%s, %.0f healthy of %.0f desired, %.0f disruption%s allowed",
                str(p, "name"), minav[0] ? "minAvailable " : "", minav,
                maxun[0] ? "maxUnavailable " : "", maxun, num(p, "currentHealthy"),
                num(p, "desiredHealthy"), num(p, "disruptionsAllowed"),
                num(p, "disruptionsAllowed") == 1 ? "" : "s");
        if (cJSON_IsObject(after))
            fprintf(f, "; after this cycle: %.0f allowed, %.0f healthy", num(after, "disruptionsAllowed"),
                    num(after, "currentHealthy"));
        fputc('\n', f);
    }
    fprintf(f, "\nreplacement: ");
    if (cJSON_IsNull(cJSON_GetObjectItem(r, "recreatedBy")))
        fprintf(f, "none: %s\n", str(r, "message"));
    else {
        const cJSON *by = cJSON_GetObjectItem(r, "recreatedBy");
        fprintf(f, "%s %s recreates it; ", str(by, "kind"), str(by, "name"));
        if (strcmp(str(r, "status"), "placed") == 0)
            fprintf(f, "the scheduler model places it on %s%s\n", str(r, "node"),
                    strcmp(str(r, "node"), str(pod, "node")) == 0 ? " (the node it is on: a bounce)" : "");
        else if (strcmp(str(r, "status"), "unscheduled") == 0)
            fprintf(f, "but %s\n", str(r, "message"));
        else if (strcmp(str(r, "status"), "pending") == 0)
            fprintf(f, "it would stay Pending: %s\n", str(r, "message"));
        else
            fprintf(f, "%s\n", str(r, "message"));
    }
    fprintf(f, "\nmemory of evictions, %s %s (window %.0fs): %.0f entr%s\n", str(w, "kind"),
            str(w, "name"), num(mem, "windowSeconds"), num(mem, "total"),
            num(mem, "total") == 1 ? "y" : "ies");
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(mem, "entries")) {
        const cJSON *landed = cJSON_GetObjectItem(it, "landed");
        fprintf(f, "  %s %s from %s by %s/%s", str(it, "at"), str(it, "pod"), str(it, "node"),
                str(it, "profile"), str(it, "plugin"));
        if (cJSON_IsString(landed))
            fprintf(f, ", replacement on %s%s", landed->valuestring,
                    cJSON_IsTrue(cJSON_GetObjectItem(it, "bounced")) ? " (bounced)" : "");
        fputc('\n', f);
    }
}

/* ---- the command ---------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs("usage: ebb explain NAMESPACE/POD --policy FILE (--snapshot FILE | --kubeconfig FILE)\n"
          "                   [--context NAME] [--policy-dir DIR]... [--now TIME] [--output text|json]\n"
          "  why ebb does or does not evict the pod: one cycle as `ebb simulate` runs it,\n"
          "  with each profile's filters, each strategy's evictions of the pod and their\n"
          "  outcome, the limits, the PodDisruptionBudgets, where its replacement lands\n"
          "  and the memory of evictions for its workload\n",
          f);
}

/* --kubeconfig: the cluster listed as `ebb record` lists it, into dir/. */
static int list_cluster(const char *kubeconfig, const char *context, char *dir, char *file,
                        size_t len)
{
    char *args[10];
    int n = 0, rc;

    const char *tmp = getenv("TMPDIR");

    snprintf(dir, 512, "%s/ebb-explain-XXXXXX", tmp && tmp[0] ? tmp : P_tmpdir);
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "ebb: error: explain: cannot make a scratch directory\n");
        return 1;
    }
    snprintf(file, len, "%s/cluster.json", dir);
    args[n++] = "ebb";
    args[n++] = "record";
    args[n++] = "-o";
    args[n++] = file;
    args[n++] = "--kubeconfig";
    args[n++] = (char *)kubeconfig;
    if (context != NULL) {
        args[n++] = "--context";
        args[n++] = (char *)context;
    }
    args[n++] = "-q";
    args[n] = NULL;
    rc = ebb_record_main(n, args);
    optind = 1;
    return rc;
}

int ebb_explain_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "snapshot", required_argument, NULL, 's' },
        { "policy", required_argument, NULL, 'p' },
        { "policy-dir", required_argument, NULL, 'd' },
        { "now", required_argument, NULL, 'n' },
        { "kubeconfig", required_argument, NULL, 'k' },
        { "context", required_argument, NULL, 'x' },
        { "output", required_argument, NULL, 'o' },
        { "verbose", no_argument, NULL, 'v' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct ebb_sim_opts so = { .now = EBB_TIME_NONE, .cycles = 1 };
    struct explain x = { 0 };
    struct ebb_error err = { 0 };
    struct ebb_engine *e = NULL;
    const char *dirs[16], *kubeconfig = NULL, *context = NULL, *slash;
    char scratch[512], listed[600], buf[2048];
    bool json = false;
    int ndirs = 0, c, rc = 0;
    char *text;

    opterr = 0;
    optind = 2;
    while ((c = getopt_long(argc, argv, ":vqho:", longopts, NULL)) != -1) {
        switch (c) {
        case 's': so.snapshot = optarg; break;
        case 'p': so.policy = optarg; break;
        case 'd':
            if (ndirs == (int)EBB_ARRAY_LEN(dirs)) {
                fprintf(stderr, "ebb: error: --policy-dir: at most %d directories\n", ndirs);
                return EXIT_INPUT;
            }
            dirs[ndirs++] = optarg;
            break;
        case 'n':
            if (ebb_time_parse(optarg, &so.now) != 0) {
                fprintf(stderr, "ebb: error: --now: \"%s\" is not an RFC 3339 time "
                                "(e.g. 2026-01-02T03:04:05Z)\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case 'k': kubeconfig = optarg; break;
        case 'x': context = optarg; break;
        case 'o':
            if (strcmp(optarg, "json") == 0)
                json = true;
            else if (strcmp(optarg, "text") != 0) {
                fprintf(stderr, "ebb: error: --output: \"%s\" is not text or json\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case 'v': ebb_log_level = EBB_LOG_DEBUG; break;
        case 'q': ebb_log_level = EBB_LOG_ERROR; break;
        case 'h': usage(stdout); return 0;
        default:
            ebb_flag_getopt_error(c, argv, usage);
            return EXIT_INPUT;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "ebb: error: explain needs the pod: ebb explain NAMESPACE/POD ...\n");
        return EXIT_INPUT;
    }
    x.target = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "ebb: error: explain: unexpected argument \"%s\" (one pod at a time)\n",
                argv[optind]);
        return EXIT_INPUT;
    }
    slash = strchr(x.target, '/');
    if (slash == NULL || slash == x.target || slash[1] == '\0' || strchr(slash + 1, '/') ||
        (size_t)(slash - x.target) >= sizeof(x.ns) || strlen(slash + 1) >= sizeof(x.name)) {
        fprintf(stderr, "ebb: error: explain: \"%s\" is not NAMESPACE/POD (e.g. default/web-7d4b9-x2x4z)\n",
                x.target);
        return EXIT_INPUT;
    }
    memcpy(x.ns, x.target, (size_t)(slash - x.target));
    snprintf(x.name, sizeof(x.name), "%s", slash + 1);
    if (so.policy == NULL) {
        fprintf(stderr, "ebb: error: explain needs --policy FILE\n");
        return EXIT_INPUT;
    }
    if ((so.snapshot == NULL) == (kubeconfig == NULL)) {
        fprintf(stderr, "ebb: error: explain needs one of --snapshot FILE or --kubeconfig FILE%s\n",
                so.snapshot ? ", not both" : "");
        return EXIT_INPUT;
    }
    if (context != NULL && kubeconfig == NULL) {
        fprintf(stderr, "ebb: error: --context needs --kubeconfig\n");
        return EXIT_INPUT;
    }
    if (kubeconfig != NULL) {
        if (list_cluster(kubeconfig, context, scratch, listed, sizeof(listed)) != 0)
            return 1;
        so.snapshot = listed;
        x.live = true;
    }
    x.source = kubeconfig ? kubeconfig : so.snapshot;
    so.dirs = dirs;
    so.ndirs = ndirs;
    so.before_cycles = before_cycles;
    so.before_ud = &x;
    if ((x.doc = cJSON_CreateObject()) == NULL || ebb_predictor_create(NULL, EBB_SCHED_LATEST, &x.pred) != 0) {
        fprintf(stderr, "ebb: error: out of memory\n");
        rc = 1;
        goto out;
    }
    cJSON_AddStringToObject(x.doc, "apiVersion", "ebb.dev/v1");
    cJSON_AddStringToObject(x.doc, "kind", "Explanation");
    cJSON_AddStringToObject(x.doc, "source", x.live ? "cluster" : "snapshot");
    cJSON_AddStringToObject(x.doc, "input", x.source);
    cJSON_AddStringToObject(x.doc, "policy", so.policy);
    x.profiles = cJSON_AddArrayToObject(x.doc, "profiles");
    if (ebb_simulate(&so, &e, &err) != 0) {
        ebb_error_format(&err, buf, sizeof(buf));
        fprintf(stderr, "ebb: error: %s\n", buf);
        rc = err.code == EBB_ENOMEM ? 1 : EXIT_INPUT;
        goto out;
    }
    after_cycle(&x, e, &so.memory);
    if (x.oom) {
        fprintf(stderr, "ebb: error: out of memory\n");
        rc = 1;
        goto out;
    }
    if (json) {
        reorder(x.doc);
        if ((text = cJSON_Print(x.doc)) == NULL) {
            fprintf(stderr, "ebb: error: out of memory\n");
            rc = 1;
            goto out;
        }
        printf("%s\n", text);
        free(text);
    } else
        print_text(stdout, x.doc);
out:
    ebb_predictor_destroy(x.pred);   /* its scheduler models the engine's cache */
    ebb_engine_destroy(e);
    ebb_evmem_free(&so.memory);
    cJSON_Delete(x.doc);
    if (x.live) {
        remove(listed);
        rmdir(scratch);
    }
    return rc;
}
