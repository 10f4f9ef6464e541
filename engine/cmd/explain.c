/* `ebb explain NAMESPACE/POD`: why ebb evicts a pod or not, for one cycle of
 * a policy on a snapshot (or on the live cluster, recorded first).
 *
 * It runs the cycle `ebb simulate` would run and, profile by profile:
 *   - every filter and preEvictionFilter plugin's answer about the pod,
 *     with the reason in upstream's words where the plugin gives one
 *     (asked as the cycle begins, before any strategy has run);
 *   - what each deschedule/balance plugin did with it: evicted it, asked
 *     and was refused (a filter, LoopGuard's futile/cooldown/unavailable, a
 *     limit, a PodDisruptionBudget, the evict plugin), or never asked (not
 *     a candidate);
 *   - the limits and how full the cycle left them;
 * and for the pod: the PodDisruptionBudgets that select it, where the
 * scheduler model would place its replacement (the cluster as the cycle
 * leaves it), and the memory of evictions' entries for its workload.
 * As text for people or as JSON (--output json; shape in docs/explain.md).
 * The pod itself changes nothing: the cycle decides as `ebb simulate`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ebb.h"
#include "ebb/cache.h"
#include "ebb/config.h"
#include "ebb/evmemory.h"
#include "ebb/flags.h"
#include "ebb/plan.h"
#include "ebb/record.h"
#include "ebb/selector.h"
#include "ebb/simulate.h"
#include "ebb/whatif.h"

#define EXIT_INPUT 2
#define MAX_DIRS 16
#define MEMORY_SHOWN 50

struct verdict {
    char *profile, *plugin, *reason;
    int ext;
    bool evictable;
};

struct explain {
    const char *ns, *name;          /* as asked */
    struct ebb_pod *pod;            /* found as the cycle began; NULL: not there */
    bool looked;                    /* the cycle began (two nodes or more) */
    char **near;                    /* pod names of the namespace (did you mean) */
    size_t nnear;
    struct verdict *v;
    size_t nv;
    bool oom;
    struct ebb_prediction pred;
    int pred_rc;                    /* 0: pred holds the model's answer */
    char owner[512];                /* "Kind ns/name" of what recreates it, or "" */
    uint32_t node_evictions, ns_evictions, total_evictions;
    cJSON *memory;                  /* the workload's entries as the cycle began */
};

static cJSON *text(const char *s)
{
    return ebb_json_text(s, s ? strlen(s) : 0);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void on_verdict(void *ud, const struct ebb_filter_verdict *fv)
{
    struct explain *x = ud;
    struct verdict *nv = realloc(x->v, (x->nv + 1) * sizeof(*nv));

    if (nv == NULL) {
        x->oom = true;
        return;
    }
    x->v = nv;
    nv[x->nv] = (struct verdict){ dup_or_null(fv->profile), dup_or_null(fv->plugin),
                                  dup_or_null(fv->reason), fv->ext, fv->evictable };
    x->nv++;
}

struct near_ctx {
    struct explain *x;
    ebb_str ns;
};

static void collect_near(void *obj, void *ud)
{
    struct near_ctx *nc = ud;
    struct ebb_pod *p = obj;
    char **n;

    if (p->ns != nc->ns || nc->x->nnear >= 100000)
        return;
    if ((n = realloc(nc->x->near, (nc->x->nnear + 1) * sizeof(*n))) == NULL)
        return;
    nc->x->near = n;
    if ((n[nc->x->nnear] = strdup(p->name)) != NULL)
        nc->x->nnear++;
}

/* The memory's entries for the pod's workload, newest first, before the
 * cycle adds its own. */
static cJSON *memory_json(struct ebb_engine *e, const struct ebb_pod *p)
{
    const struct ebb_evmem_entry *ent[MEMORY_SHOWN];
    ebb_str kind = NULL, wl = NULL;
    cJSON *arr = cJSON_CreateArray();
    size_t n = 0;

    if (arr == NULL || ebb_engine_memory(e) == NULL ||
        ebb_evmem_workload_of(ebb_engine_cache(e), p, &kind, &wl) != 0 || kind == NULL)
        goto out;
    n = ebb_evmem_find(ebb_engine_memory(e), p->ns, kind, wl, 0, ent, MEMORY_SHOWN);
    for (size_t i = 0; i < n && i < MEMORY_SHOWN; i++) {
        cJSON *o = cJSON_CreateObject();
        char t[64];
        ebb_time_format(ent[i]->at, t, sizeof(t));
        cJSON_AddStringToObject(o, "time", t);
        cJSON_AddItemToObject(o, "pod", text(ent[i]->pod));
        cJSON_AddItemToObject(o, "node", text(ent[i]->node));
        cJSON_AddItemToObject(o, "plugin", text(ent[i]->plugin));
        cJSON_AddItemToObject(o, "profile", text(ent[i]->profile));
        cJSON_AddItemToObject(o, "landed", text(ent[i]->landed));
        cJSON_AddBoolToObject(o, "bounced", (ent[i]->flags & EBB_EVMEM_BOUNCED) != 0);
        cJSON_AddItemToArray(arr, o);
    }
out:
    ebb_str_release(kind);
    ebb_str_release(wl);
    return arr;
}

/* As the (first) cycle begins: the pod, every filter's answer, and what
 * the memory holds of its workload. */
static void on_cycle(void *ud, struct ebb_engine *e)
{
    struct explain *x = ud;
    struct ebb_cache *c = ebb_engine_cache(e);
    ebb_str ns = ebb_str_find(x->ns, strlen(x->ns)), name = ebb_str_find(x->name, strlen(x->name));

    if (x->looked)
        return;
    x->looked = true;
    x->pod = ns && name ? ebb_cache_pod(c, ns, name) : NULL;
    if (x->pod == NULL) {
        struct near_ctx nc = { x, ns };
        if (ns != NULL)
            ebb_cache_each(c, EBB_KIND_POD, collect_near, &nc);
        return;
    }
    ebb_engine_filter_verdicts(e, x->pod, on_verdict, x);
    if ((x->memory = memory_json(e, x->pod)) == NULL)
        x->oom = true;
}

/* After the cycle: where the replacement lands, the limits' counts. */
static void on_done(void *ud, struct ebb_engine *e)
{
    struct explain *x = ud;
    const struct ebb_plan *plan = ebb_engine_plan(e);
    const struct ebb_owner *o;
    char key[512];

    x->pred_rc = EBB_ESTATE;
    if (x->pod == NULL)
        return;
    if ((o = ebb_whatif_recreator(ebb_engine_cache(e), x->pod)) != NULL)
        snprintf(x->owner, sizeof(x->owner), "%s %s/%s", o->kind, x->pod->ns, o->name);
    x->pred_rc = x->pod->node != NULL ? ebb_engine_predict(e, x->pod, &x->pred) : EBB_ESTATE;
    snprintf(key, sizeof(key), "%s/", x->pod->ns);
    for (size_t i = 0; i < plan->nevictions; i++) {
        const struct ebb_plan_eviction *ev = &plan->evictions[i];
        x->total_evictions++;
        if (ev->node != NULL && x->pod->node != NULL && strcmp(ev->node, x->pod->node) == 0)
            x->node_evictions++;
        if (strncmp(ev->pod, key, strlen(key)) == 0)
            x->ns_evictions++;
    }
}

static void explain_free(struct explain *x)
{
    for (size_t i = 0; i < x->nv; i++) {
        free(x->v[i].profile);
        free(x->v[i].plugin);
        free(x->v[i].reason);
    }
    free(x->v);
    for (size_t i = 0; i < x->nnear; i++)
        free(x->near[i]);
    free(x->near);
    cJSON_Delete(x->memory);
}

/* ---- output --------------------------------------------------------------------- */

static const char *ext_word(int ext)
{
    return ext == EBB_EXT_FILTER ? "filter" : ext == EBB_EXT_PREEVICTIONFILTER ? "preEvictionFilter"
         : ext == EBB_EXT_DESCHEDULE ? "deschedule" : "balance";
}

static cJSON *limit_json(int64_t max, uint32_t used)
{
    cJSON *o = cJSON_CreateObject();

    if (max == EBB_UNLIMITED)
        cJSON_AddNullToObject(o, "max");
    else
        cJSON_AddNumberToObject(o, "max", (double)max);
    cJSON_AddNumberToObject(o, "evicted", used);
    return o;
}

static bool same_pod(const char *key, const struct explain *x)
{
    size_t n = strlen(x->ns);
    return strncmp(key, x->ns, n) == 0 && key[n] == '/' && strcmp(key + n + 1, x->name) == 0;
}

/* The whole answer as JSON: the text output prints the same tree. */
static cJSON *build(struct ebb_engine *e, struct explain *x)
{
    const struct ebb_policy *pol = ebb_engine_policy(e);
    const struct ebb_plan *plan = ebb_engine_plan(e);
    struct ebb_cache *c = ebb_engine_cache(e);
    struct ebb_pod *p = x->pod;
    cJSON *root = cJSON_CreateObject(), *profiles, *arr;
    ebb_str kind = NULL, wl = NULL;

    cJSON_AddItemToObject(root, "pod", text(p->name));
    cJSON_AddItemToObject(root, "namespace", text(p->ns));
    cJSON_AddItemToObject(root, "node", text(p->node));
    if (ebb_evmem_workload_of(c, p, &kind, &wl) == 0 && kind != NULL) {
        cJSON *w = cJSON_AddObjectToObject(root, "workload");
        cJSON_AddItemToObject(w, "kind", text(kind));
        cJSON_AddItemToObject(w, "name", text(wl));
    }
    profiles = cJSON_AddArrayToObject(root, "profiles");
    for (size_t i = 0; pol != NULL && i < pol->nprofiles; i++) {
        const struct ebb_profile *pr = &pol->profiles[i];
        cJSON *po = cJSON_CreateObject(), *st, *fl;
        cJSON_AddItemToArray(profiles, po);
        cJSON_AddItemToObject(po, "name", text(pr->name));
        fl = cJSON_AddArrayToObject(po, "filters");
        for (size_t k = 0; k < x->nv; k++) {
            cJSON *f;
            if (strcmp(x->v[k].profile, pr->name) != 0)
                continue;
            f = cJSON_CreateObject();
            cJSON_AddItemToObject(f, "plugin", text(x->v[k].plugin));
            cJSON_AddStringToObject(f, "extension", ext_word(x->v[k].ext));
            cJSON_AddBoolToObject(f, "evictable", x->v[k].evictable);
            cJSON_AddItemToObject(f, "reason", text(x->v[k].reason));
            cJSON_AddItemToArray(fl, f);
        }
        st = cJSON_AddArrayToObject(po, "strategies");
        for (int ext = EBB_EXT_DESCHEDULE; ext <= EBB_EXT_BALANCE; ext++) {
            const struct ebb_plugin_set *set = &pr->sets[ext];
            for (size_t j = 0; j < set->n; j++) {
                const char *plugin = set->v[j].name;
                cJSON *so = cJSON_CreateObject(), *out = cJSON_CreateArray();
                cJSON_AddItemToArray(st, so);
                cJSON_AddItemToObject(so, "plugin", text(plugin));
                cJSON_AddStringToObject(so, "extension", ext_word(ext));
                for (size_t k = 0; k < plan->nevictions; k++) {
                    const struct ebb_plan_eviction *ev = &plan->evictions[k];
                    cJSON *o;
                    if (!same_pod(ev->pod, x) || ev->plugin == NULL || ev->profile == NULL ||
                        strcmp(ev->plugin, plugin) != 0 || strcmp(ev->profile, pr->name) != 0)
                        continue;
                    o = cJSON_CreateObject();
                    cJSON_AddStringToObject(o, "outcome", "evicted");
                    cJSON_AddItemToObject(o, "reason", ev->reason ? ebb_json_text(ev->reason, ebb_str_len(ev->reason)) : cJSON_CreateNull());
                    cJSON_AddItemToArray(out, o);
                }
                for (size_t k = 0; k < plan->nrefusals; k++) {
                    const struct ebb_plan_refusal *rf = &plan->refusals[k];
                    cJSON *o;
                    if (!same_pod(rf->pod, x) || rf->plugin == NULL || rf->profile == NULL ||
                        strcmp(rf->plugin, plugin) != 0 || strcmp(rf->profile, pr->name) != 0)
                        continue;
                    o = cJSON_CreateObject();
                    cJSON_AddStringToObject(o, "outcome", "refused");
                    cJSON_AddStringToObject(o, "why", rf->why);
                    cJSON_AddItemToObject(o, "detail", text(rf->detail));
                    cJSON_AddItemToArray(out, o);
                }
                cJSON_AddBoolToObject(so, "candidate", cJSON_GetArraySize(out) > 0);
                cJSON_AddItemToObject(so, "outcomes", out);
            }
        }
    }
    arr = cJSON_AddObjectToObject(root, "limits");
    cJSON_AddItemToObject(arr, "perNode", limit_json(pol ? pol->max_per_node : EBB_UNLIMITED, x->node_evictions));
    cJSON_AddItemToObject(arr, "perNamespace", limit_json(pol ? pol->max_per_namespace : EBB_UNLIMITED, x->ns_evictions));
    cJSON_AddItemToObject(arr, "total", limit_json(pol ? pol->max_total : EBB_UNLIMITED, x->total_evictions));
    arr = cJSON_AddArrayToObject(root, "podDisruptionBudgets");
    {
        uint32_t n;
        const struct ebb_pdb *const *pdbs = ebb_cache_pdbs_in(c, p->ns, &n);
        for (uint32_t i = 0; i < n; i++) {
            const struct ebb_pdb *b = pdbs[i];
            cJSON *o;
            if (!ebb_selector_matches(b->selector, &p->labels))
                continue;
            o = cJSON_CreateObject();
            cJSON_AddItemToObject(o, "name", text(b->name));
            cJSON_AddItemToObject(o, "minAvailable", text(b->min_available));
            cJSON_AddItemToObject(o, "maxUnavailable", text(b->max_unavailable));
            cJSON_AddNumberToObject(o, "disruptionsAllowed", b->disruptions_allowed);
            cJSON_AddNumberToObject(o, "currentHealthy", b->current_healthy);
            cJSON_AddNumberToObject(o, "desiredHealthy", b->desired_healthy);
            cJSON_AddNumberToObject(o, "expectedPods", b->expected_pods);
            cJSON_AddItemToArray(arr, o);
        }
    }
    arr = cJSON_AddObjectToObject(root, "replacement");
    cJSON_AddItemToObject(arr, "recreatedBy", x->owner[0] ? text(x->owner) : cJSON_CreateNull());
    if (x->pred_rc != 0) {
        cJSON_AddStringToObject(arr, "prediction", p->node == NULL ? "unscheduled" : "unknown");
    } else if (x->pred.status == EBB_PREDICT_PLACED) {
        cJSON_AddStringToObject(arr, "prediction", "placed");
        cJSON_AddItemToObject(arr, "node", text(x->pred.node));
    } else if (x->pred.status == EBB_PREDICT_PENDING) {
        cJSON_AddStringToObject(arr, "prediction", "pending");
        cJSON_AddItemToObject(arr, "message", text(x->pred.message));
    } else {
        cJSON_AddStringToObject(arr, "prediction", "gone");
    }
    cJSON_AddItemToObject(root, "memory", x->memory ? x->memory : cJSON_CreateArray());
    x->memory = NULL;
    ebb_str_release(kind);
    ebb_str_release(wl);
    return root;
}

/* A string of the tree, escaped for a line ("-" for null). */
static const char *s_of(const cJSON *o, const char *key, char *buf, size_t len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    char *raw;

    if (v == NULL || cJSON_IsNull(v))
        return "-";
    if (cJSON_IsString(v))
        return ebb_escape(buf, len, v->valuestring, strlen(v->valuestring), EBB_ESC_LINE), buf;
    /* a raw JSON string (ebb_json_text): decode it first */
    if (cJSON_IsRaw(v) && (raw = v->valuestring) != NULL) {
        cJSON *d = cJSON_Parse(raw);
        if (cJSON_IsString(d))
            ebb_escape(buf, len, d->valuestring, strlen(d->valuestring), EBB_ESC_LINE);
        else
            snprintf(buf, len, "%s", raw);
        cJSON_Delete(d);
        return buf;
    }
    return "-";
}

static double n_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void print_limit(FILE *f, const char *what, const cJSON *l)
{
    const cJSON *max = cJSON_GetObjectItemCaseSensitive(l, "max");

    if (cJSON_IsNumber(max))
        fprintf(f, "  %s: %.0f, %.0f evicted this cycle\n", what, max->valuedouble, n_of(l, "evicted"));
    else
        fprintf(f, "  %s: none (%.0f evicted this cycle)\n", what, n_of(l, "evicted"));
}

static void print_text(FILE *f, const cJSON *root)
{
    char a[1024], b[1024], d[2048];
    const cJSON *it, *w = cJSON_GetObjectItemCaseSensitive(root, "workload");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(root, "limits");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "replacement");

    fprintf(f, "pod %s/", s_of(root, "namespace", a, sizeof(a)));
    fprintf(f, "%s on node ", s_of(root, "pod", a, sizeof(a)));
    fprintf(f, "%s", s_of(root, "node", a, sizeof(a)));
    if (w != NULL)
        fprintf(f, " (workload %s %s)", s_of(w, "kind", a, sizeof(a)), s_of(w, "name", b, sizeof(b)));
    fputc('\n', f);
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, "profiles")) {
        const cJSON *x;
        fprintf(f, "profile %s\n  filters:\n", s_of(it, "name", a, sizeof(a)));
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(it, "filters")) {
            bool yes = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "evictable"));
            fprintf(f, "    %-30s %-18s %s", s_of(x, "plugin", a, sizeof(a)),
                    s_of(x, "extension", b, sizeof(b)), yes ? "evictable" : "protects it");
            if (!yes)
                fprintf(f, ": %s", s_of(x, "reason", d, sizeof(d)));
            fputc('\n', f);
        }
        fprintf(f, "  strategies:\n");
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(it, "strategies")) {
            const cJSON *o, *outs = cJSON_GetObjectItemCaseSensitive(x, "outcomes");
            fprintf(f, "    %-30s %-18s ", s_of(x, "plugin", a, sizeof(a)), s_of(x, "extension", b, sizeof(b)));
            if (cJSON_GetArraySize(outs) == 0)
                fprintf(f, "not a candidate: it did not ask to evict the pod\n");
            else {
                bool first = true;
                cJSON_ArrayForEach(o, outs) {
                    const char *oc = s_of(o, "outcome", a, sizeof(a));
                    fprintf(f, "%s", first ? "" : "; ");
                    first = false;
                    if (strcmp(oc, "evicted") == 0)
                        fprintf(f, "evicted it (%s)", s_of(o, "reason", d, sizeof(d)));
                    else
                        fprintf(f, "asked, refused: %s (%s)", s_of(o, "why", b, sizeof(b)),
                                s_of(o, "detail", d, sizeof(d)));
                }
                fputc('\n', f);
            }
        }
    }
    fprintf(f, "limits:\n");
    print_limit(f, "maxNoOfPodsToEvictPerNode", cJSON_GetObjectItemCaseSensitive(l, "perNode"));
    print_limit(f, "maxNoOfPodsToEvictPerNamespace", cJSON_GetObjectItemCaseSensitive(l, "perNamespace"));
    print_limit(f, "maxNoOfPodsToEvictTotal", cJSON_GetObjectItemCaseSensitive(l, "total"));
    it = cJSON_GetObjectItemCaseSensitive(root, "podDisruptionBudgets");
    if (cJSON_GetArraySize(it) == 0)
        fprintf(f, "podDisruptionBudgets: none selects the pod\n");
    else {
        const cJSON *x;
        fprintf(f, "podDisruptionBudgets:\n");
        cJSON_ArrayForEach(x, it) {
            fprintf(f, "  %s: minAvailable %s", s_of(x, "name", a, sizeof(a)), s_of(x, "minAvailable", b, sizeof(b)));
            fprintf(f, ", maxUnavailable %s: %.0f disruptions allowed (%.0f healthy, %.0f desired, "
                    "%.0f expected)\n", s_of(x, "maxUnavailable", b, sizeof(b)),
                    n_of(x, "disruptionsAllowed"), n_of(x, "currentHealthy"),
                    n_of(x, "desiredHealthy"), n_of(x, "expectedPods"));
        }
    }
    {
        const char *pred = s_of(r, "prediction", b, sizeof(b));
        fprintf(f, "replacement: ");
        if (strcmp(s_of(r, "recreatedBy", a, sizeof(a)), "-") == 0)
            fprintf(f, "nothing recreates it (a bare pod, a finished one, or an owner scaled to 0)\n");
        else if (strcmp(pred, "placed") == 0)
            fprintf(f, "%s recreates it; the scheduler model places it on %s\n", a,
                    s_of(r, "node", d, sizeof(d)));
        else if (strcmp(pred, "pending") == 0)
            fprintf(f, "%s recreates it; it would stay Pending: %s\n", a, s_of(r, "message", d, sizeof(d)));
        else
            fprintf(f, "%s recreates it; where it lands is %s\n", a, pred);
    }
    it = cJSON_GetObjectItemCaseSensitive(root, "memory");
    if (cJSON_GetArraySize(it) == 0)
        fprintf(f, "memory: no eviction of its workload remembered\n");
    else {
        const cJSON *x;
        fprintf(f, "memory: evictions of its workload, newest first:\n");
        cJSON_ArrayForEach(x, it) {
            fprintf(f, "  %s %s", s_of(x, "time", a, sizeof(a)), s_of(x, "pod", b, sizeof(b)));
            fprintf(f, " from %s", s_of(x, "node", a, sizeof(a)));
            fprintf(f, " by %s", s_of(x, "plugin", a, sizeof(a)));
            fprintf(f, " (profile %s)", s_of(x, "profile", a, sizeof(a)));
            fprintf(f, ", replacement landed on %s%s\n", s_of(x, "landed", a, sizeof(a)),
                    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "bounced")) ? " (bounced)" : "");
        }
    }
}

/* ---- the command ----------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs("usage: ebb explain NAMESPACE/POD --policy FILE (--snapshot FILE | --kubeconfig FILE)\n"
          "                   [--context NAME] [--policy-dir DIR]... [--now TIME] [--output text|json]\n"
          "                   [--scheduler-config FILE]\n"
          "Why the policy evicts the pod or not, in one cycle on the snapshot (or on the\n"
          "cluster of --kubeconfig, recorded first as `ebb record` does): each profile's\n"
          "filters and their reasons, what each strategy did with the pod, the limits,\n"
          "its PodDisruptionBudgets, where its replacement would land and the memory of\n"
          "its workload's evictions.\n",
          f);
}

static int record_live(const char *kubeconfig, const char *context, char *path, size_t len)
{
    const char *dir = getenv("TMPDIR");
    char *argv[10];
    int argc = 0, fd, rc;

    snprintf(path, len, "%s/ebb-explain-XXXXXX", dir && *dir ? dir : "/tmp");
    if ((fd = mkstemp(path)) < 0) {
        fprintf(stderr, "ebb: error: explain: cannot create a scratch file in %s\n",
                dir && *dir ? dir : "/tmp");
        return 1;
    }
    close(fd);
    argv[argc++] = "ebb";
    argv[argc++] = "record";
    argv[argc++] = "-q";
    argv[argc++] = "-o";
    argv[argc++] = path;
    argv[argc++] = "--kubeconfig";
    argv[argc++] = (char *)kubeconfig;
    if (context != NULL) {
        argv[argc++] = "--context";
        argv[argc++] = (char *)context;
    }
    argv[argc] = NULL;
    if ((rc = ebb_record_main(argc, argv)) != 0)
        unlink(path);
    return rc;
}

int ebb_explain_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "snapshot", required_argument, NULL, 's' },
        { "kubeconfig", required_argument, NULL, 'k' },
        { "context", required_argument, NULL, 'c' },
        { "policy", required_argument, NULL, 'p' },
        { "policy-dir", required_argument, NULL, 'd' },
        { "now", required_argument, NULL, 'n' },
        { "output", required_argument, NULL, 'o' },
        { "scheduler-config", required_argument, NULL, 'C' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *snapshot = NULL, *kubeconfig = NULL, *context = NULL, *policy = NULL;
    const char *sched_config = NULL, *dirs[MAX_DIRS], *arg, *slash;
    char ns[256], scratch[4096] = "", buf[2048];
    int ndirs = 0, c, rc = 0;
    int64_t now = EBB_TIME_NONE;
    bool json = false;
    struct explain x = { 0 };
    struct ebb_engine *e = NULL;
    struct ebb_error err = { 0 };
    struct ebb_sim_opts so = { 0 };
    cJSON *root;

    opterr = 0;
    optind = 2;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 's': snapshot = optarg; break;
        case 'k': kubeconfig = optarg; break;
        case 'c': context = optarg; break;
        case 'p': policy = optarg; break;
        case 'C': sched_config = optarg; break;
        case 'd':
            if (ndirs == MAX_DIRS) {
                fprintf(stderr, "ebb: error: --policy-dir: at most %d directories\n", MAX_DIRS);
                return EXIT_INPUT;
            }
            dirs[ndirs++] = optarg;
            break;
        case 'n':
            if (ebb_time_parse(optarg, &now) != 0) {
                fprintf(stderr, "ebb: error: --now: \"%s\" is not an RFC 3339 time "
                                "(e.g. 2026-01-02T03:04:05Z)\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case 'o':
            if (strcmp(optarg, "json") == 0)
                json = true;
            else if (strcmp(optarg, "text") != 0) {
                fprintf(stderr, "ebb: error: --output: \"%s\" is not text or json\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case 'q': ebb_log_level = EBB_LOG_ERROR; break;
        case 'h': usage(stdout); return 0;
        case ':':
        default:
            ebb_flag_getopt_error(c, argv, usage);
            return EXIT_INPUT;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "ebb: error: explain needs one pod, NAMESPACE/POD%s\n",
                optind < argc - 1 ? " (more than one given)" : "");
        return EXIT_INPUT;
    }
    arg = argv[optind];
    if ((slash = strchr(arg, '/')) == NULL || slash == arg || slash[1] == '\0' ||
        strchr(slash + 1, '/') != NULL || (size_t)(slash - arg) >= sizeof(ns)) {
        fprintf(stderr, "ebb: error: explain: \"%s\" is not NAMESPACE/POD\n", arg);
        return EXIT_INPUT;
    }
    memcpy(ns, arg, (size_t)(slash - arg));
    ns[slash - arg] = '\0';
    if (policy == NULL || (snapshot == NULL) == (kubeconfig == NULL)) {
        fprintf(stderr, "ebb: error: explain needs --policy and one of --snapshot or --kubeconfig\n");
        return EXIT_INPUT;
    }
    if (context != NULL && kubeconfig == NULL) {
        fprintf(stderr, "ebb: error: --context needs --kubeconfig\n");
        return EXIT_INPUT;
    }
    if (kubeconfig != NULL) {
        if ((rc = record_live(kubeconfig, context, scratch, sizeof(scratch))) != 0)
            return rc;
        snapshot = scratch;
    }
    x.ns = ns;
    x.name = slash + 1;
    so.snapshot = snapshot;
    so.policy = policy;
    so.dirs = dirs;
    so.ndirs = ndirs;
    so.now = now;
    so.cycles = 1;
    so.sched_config = sched_config;
    so.cycle_hook = on_cycle;
    so.done_hook = on_done;
    so.hook_ud = &x;
    rc = ebb_simulate(&so, &e, &err);
    if (scratch[0] != '\0')
        unlink(scratch);
    if (rc != 0) {
        ebb_error_format(&err, buf, sizeof(buf));
        fprintf(stderr, "ebb: error: %s\n", buf);
        explain_free(&x);
        return EXIT_INPUT;
    }
    rc = 0;
    if (!x.looked) {
        fprintf(stderr, "ebb: error: explain: the policy runs no cycle on this cluster (it needs "
                        "two or more ready nodes that match it): nothing to explain\n");
        rc = EXIT_INPUT;
    } else if (x.pod == NULL) {
        const char *near = ebb_nearest_name(x.name, (const char *const *)x.near, x.nnear);
        ebb_escape(buf, sizeof(buf), arg, strlen(arg), EBB_ESC_LINE);
        fprintf(stderr, "ebb: error: explain: pod %s is not in the %s", buf,
                kubeconfig ? "cluster" : "snapshot");
        if (near != NULL) {
            ebb_escape(buf, sizeof(buf), near, strlen(near), EBB_ESC_LINE);
            fprintf(stderr, "; did you mean %s/%s?", ns, buf);
        } else if (x.nnear == 0)
            fprintf(stderr, " (no pod in namespace %s)", ns);
        fputc('\n', stderr);
        rc = EXIT_INPUT;
    } else if (x.oom || (root = build(e, &x)) == NULL) {
        fprintf(stderr, "ebb: error: out of memory\n");
        rc = 1;
    } else {
        if (json) {
            char *s = ebb_json_print(root, true);
            if (s != NULL)
                printf("%s\n", s);
            free(s);
        } else
            print_text(stdout, root);
        cJSON_Delete(root);
    }
    ebb_engine_destroy(e);
    ebb_evmem_free(&so.memory);
    explain_free(&x);
    return rc;
}
