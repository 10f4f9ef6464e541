/* The plan: evictions and refusals in the order they happened, plugin
 * failures, skipped cycles, per-node utilization; printed as JSON (cJSON)
 * or as a table. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ebb/cache.h"
#include "ebb/plan.h"
#include "vec.h"

void ebb_plan_init(struct ebb_plan *p)
{
    memset(p, 0, sizeof(*p));
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

void ebb_plan_clear(struct ebb_plan *p)
{
    for (size_t i = 0; i < p->nevictions; i++) {
        struct ebb_plan_eviction *e = &p->evictions[i];
        free(e->pod);
        ebb_str_release(e->node);
        ebb_str_release(e->plugin);
        ebb_str_release(e->profile);
        ebb_str_release(e->reason);
        free(e->action);
        free(e->request);
    }
    for (size_t i = 0; i < p->nrefusals; i++) {
        struct ebb_plan_refusal *r = &p->refusals[i];
        free(r->pod);
        ebb_str_release(r->node);
        ebb_str_release(r->plugin);
        ebb_str_release(r->profile);
        free(r->detail);
    }
    for (size_t i = 0; i < p->nerrors; i++) {
        free(p->errors[i].plugin);
        free(p->errors[i].profile);
        free(p->errors[i].message);
    }
    for (size_t i = 0; i < p->nskips; i++)
        free(p->skips[i].reason);
    for (size_t i = 0; i < p->nnotes; i++) {
        ebb_str_release(p->notes[i].plugin);
        ebb_str_release(p->notes[i].profile);
        ebb_str_release(p->notes[i].node);
        free(p->notes[i].message);
    }
    free(p->notes);
    for (size_t i = 0; i < p->nnodes; i++)
        free(p->nodes[i].name);
    free(p->evictions);
    free(p->refusals);
    free(p->errors);
    free(p->skips);
    free(p->nodes);
    ebb_plan_init(p);
}

int ebb_plan_add_eviction(struct ebb_plan *p, const char *pod, const char *node,
                          const char *plugin, const char *profile, const char *reason)
{
    struct ebb_plan_eviction *e;

    if (ebb__grow((void **)&p->evictions, &p->cap_evictions, p->nevictions + 1, sizeof(*e)) != 0)
        return EBB_ENOMEM;
    e = &p->evictions[p->nevictions++];
    e->pod = dup_or_null(pod);
    e->node = ebb_str_cstr(node);
    e->plugin = ebb_str_cstr(plugin);
    e->profile = ebb_str_cstr(profile);
    e->reason = ebb_str_cstr(reason);
    e->cycle = p->cycles;
    e->action = e->request = NULL;
    return 0;
}

int ebb_plan_set_action(struct ebb_plan *p, const char *action, const char *request)
{
    struct ebb_plan_eviction *e;

    if (p->nevictions == 0)
        return EBB_EINVAL;
    e = &p->evictions[p->nevictions - 1];
    free(e->action);
    free(e->request);
    e->action = dup_or_null(action);
    e->request = dup_or_null(request);
    return (action && !e->action) || (request && !e->request) ? EBB_ENOMEM : 0;
}

int ebb_plan_add_refusal(struct ebb_plan *p, const char *pod, const char *node,
                         const char *plugin, const char *profile, const char *why,
                         const char *detail)
{
    struct ebb_plan_refusal *r;

    if (ebb__grow((void **)&p->refusals, &p->cap_refusals, p->nrefusals + 1, sizeof(*r)) != 0)
        return EBB_ENOMEM;
    r = &p->refusals[p->nrefusals++];
    r->pod = dup_or_null(pod);
    r->node = ebb_str_cstr(node);
    r->plugin = ebb_str_cstr(plugin);
    r->profile = ebb_str_cstr(profile);
    r->why = why;
    r->detail = dup_or_null(detail);
    r->cycle = p->cycles;
    return 0;
}

int ebb_plan_add_error(struct ebb_plan *p, const char *plugin, const char *profile,
                       const char *message)
{
    struct ebb_plan_error *e;

    if (ebb__grow((void **)&p->errors, &p->cap_errors, p->nerrors + 1, sizeof(*e)) != 0)
        return EBB_ENOMEM;
    e = &p->errors[p->nerrors++];
    e->plugin = dup_or_null(plugin);
    e->profile = dup_or_null(profile);
    e->message = dup_or_null(message);
    e->cycle = p->cycles;
    return 0;
}

int ebb_plan_add_skip(struct ebb_plan *p, const char *reason)
{
    if (ebb__grow((void **)&p->skips, &p->cap_skips, p->nskips + 1, sizeof(*p->skips)) != 0)
        return EBB_ENOMEM;
    p->skips[p->nskips].cycle = p->cycles;
    p->skips[p->nskips].reason = dup_or_null(reason);
    p->nskips++;
    return 0;
}

int ebb_plan_add_note(struct ebb_plan *p, const char *plugin, const char *profile,
                      const char *node, const char *message)
{
    struct ebb_plan_note *n;

    if (ebb__grow((void **)&p->notes, &p->cap_notes, p->nnotes + 1, sizeof(*n)) != 0)
        return EBB_ENOMEM;
    n = &p->notes[p->nnotes++];
    n->plugin = ebb_str_cstr(plugin);
    n->profile = ebb_str_cstr(profile);
    n->node = ebb_str_cstr(node);
    n->message = dup_or_null(message);
    n->cycle = p->cycles;
    return 0;
}

static double pct(int64_t used, int64_t cap)
{
    return cap > 0 ? (double)used * 100.0 / (double)cap : 0.0;
}

int ebb_plan_snapshot_nodes(struct ebb_plan *p, struct ebb_cache *cache, bool before)
{
    uint32_t n;
    struct ebb_node *const *nodes = ebb_cache_nodes_sorted(cache, &n);

    if (before || p->nnodes == 0) {
        for (size_t i = 0; i < p->nnodes; i++)
            free(p->nodes[i].name);
        free(p->nodes);
        p->nnodes = 0;
        if ((p->nodes = calloc(n + 1, sizeof(*p->nodes))) == NULL)
            return EBB_ENOMEM;
        for (uint32_t i = 0; i < n; i++)
            p->nodes[p->nnodes++].name = strdup(nodes[i]->name);
    }
    /* nodes are matched by name: one added or removed later is left out */
    for (size_t i = 0, j = 0; i < p->nnodes && j < n;) {
        int c = strcmp(p->nodes[i].name, nodes[j]->name);
        if (c < 0) {
            i++;
        } else if (c > 0) {
            j++;
        } else {
            const struct ebb_podvec *pv = ebb_cache_pods_on_node(cache, nodes[j]->name);
            const struct ebb_res *a = &nodes[j]->allocatable;
            double u[3] = {
                pct(pv->req[EBB_RES_CPU], ebb_res_get(a, EBB_RES_CPU)),
                pct(pv->req[EBB_RES_MEMORY], ebb_res_get(a, EBB_RES_MEMORY)),
                pct(pv->nactive, ebb_res_get(a, EBB_RES_PODS)),
            };
            memcpy(before ? p->nodes[i].before : p->nodes[i].after, u, sizeof(u));
            if (before) {
                p->nodes[i].has_before = true;
                memcpy(p->nodes[i].after, u, sizeof(u));
            }
            i++;
            j++;
        }
    }
    return 0;
}

static cJSON *util_json(const double *u)
{
    cJSON *o = cJSON_CreateObject();
    /* two decimals are what a person reads; the value stays a number */
    cJSON_AddNumberToObject(o, "cpu", (double)(int64_t)(u[0] * 100 + 0.5) / 100);
    cJSON_AddNumberToObject(o, "memory", (double)(int64_t)(u[1] * 100 + 0.5) / 100);
    cJSON_AddNumberToObject(o, "pods", (double)(int64_t)(u[2] * 100 + 0.5) / 100);
    return o;
}

static void add_str(cJSON *o, const char *k, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

cJSON *ebb_plan_json(const struct ebb_plan *p)
{
    cJSON *root = cJSON_CreateObject(), *a;

    if (root == NULL)
        return NULL;
    cJSON_AddNumberToObject(root, "cycles", p->cycles);
    a = cJSON_AddArrayToObject(root, "evictions");
    for (size_t i = 0; i < p->nevictions; i++) {
        const struct ebb_plan_eviction *e = &p->evictions[i];
        cJSON *o = cJSON_CreateObject();
        add_str(o, "pod", e->pod);
        add_str(o, "node", e->node);
        add_str(o, "plugin", e->plugin);
        add_str(o, "profile", e->profile);
        add_str(o, "reason", e->reason ? e->reason : "");
        cJSON_AddNumberToObject(o, "cycle", e->cycle);
        if (e->action)
            add_str(o, "action", e->action);
        if (e->request) {
            cJSON *req = cJSON_Parse(e->request);
            if (req != NULL)
                cJSON_AddItemToObject(o, "request", req);
        }
        cJSON_AddItemToArray(a, o);
    }
    a = cJSON_AddArrayToObject(root, "refusals");
    for (size_t i = 0; i < p->nrefusals; i++) {
        const struct ebb_plan_refusal *r = &p->refusals[i];
        cJSON *o = cJSON_CreateObject();
        add_str(o, "pod", r->pod);
        add_str(o, "node", r->node);
        add_str(o, "plugin", r->plugin);
        add_str(o, "profile", r->profile);
        add_str(o, "why", r->why);
        if (r->detail)
            add_str(o, "detail", r->detail);
        cJSON_AddNumberToObject(o, "cycle", r->cycle);
        cJSON_AddItemToArray(a, o);
    }
    a = cJSON_AddArrayToObject(root, "errors");
    for (size_t i = 0; i < p->nerrors; i++) {
        cJSON *o = cJSON_CreateObject();
        add_str(o, "plugin", p->errors[i].plugin);
        add_str(o, "profile", p->errors[i].profile);
        add_str(o, "message", p->errors[i].message);
        cJSON_AddNumberToObject(o, "cycle", p->errors[i].cycle);
        cJSON_AddItemToArray(a, o);
    }
    a = cJSON_AddArrayToObject(root, "skipped");
    for (size_t i = 0; i < p->nskips; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "cycle", p->skips[i].cycle);
        add_str(o, "reason", p->skips[i].reason);
        cJSON_AddItemToArray(a, o);
    }
    a = cJSON_AddArrayToObject(root, "notes");
    for (size_t i = 0; i < p->nnotes; i++) {
        cJSON *o = cJSON_CreateObject();
        add_str(o, "plugin", p->notes[i].plugin);
        add_str(o, "profile", p->notes[i].profile);
        add_str(o, "node", p->notes[i].node);
        add_str(o, "message", p->notes[i].message);
        cJSON_AddNumberToObject(o, "cycle", p->notes[i].cycle);
        cJSON_AddItemToArray(a, o);
    }
    a = cJSON_AddArrayToObject(root, "nodes");
    for (size_t i = 0; i < p->nnodes; i++) {
        cJSON *o = cJSON_CreateObject();
        add_str(o, "name", p->nodes[i].name);
        cJSON_AddItemToObject(o, "before", util_json(p->nodes[i].before));
        cJSON_AddItemToObject(o, "after", util_json(p->nodes[i].after));
        cJSON_AddItemToArray(a, o);
    }
    return root;
}

char *ebb_plan_to_json(const struct ebb_plan *p, bool pretty)
{
    cJSON *root = ebb_plan_json(p);
    char *s;

    if (root == NULL)
        return NULL;
    s = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

static int width(const char *s, int w)
{
    int n = s ? (int)strlen(s) : 1;
    return n > w ? n : w;
}

void ebb_plan_print_table(const struct ebb_plan *p, FILE *out)
{
    int wp = 3, wn = 4, wg = 6, wf = 7, wa = 0;

    for (size_t i = 0; i < p->nevictions; i++) {
        wp = width(p->evictions[i].pod, wp);
        wn = width(p->evictions[i].node, wn);
        wg = width(p->evictions[i].plugin, wg);
        wf = width(p->evictions[i].profile, wf);
        if (p->evictions[i].action)
            wa = width(p->evictions[i].action, wa ? wa : 6);
    }
    fprintf(out, "%d cycle%s, %zu eviction%s, %zu refusal%s, %zu plugin error%s\n", p->cycles,
            p->cycles == 1 ? "" : "s", p->nevictions, p->nevictions == 1 ? "" : "s", p->nrefusals,
            p->nrefusals == 1 ? "" : "s", p->nerrors, p->nerrors == 1 ? "" : "s");
    if (p->nevictions) {
        /* ACTION only when an evict plugin chose what to do */
        fprintf(out, "\nEVICTIONS\n%-5s  %-*s  %-*s  %-*s  %-*s  %-*s%s\n", "CYCLE", wf, "PROFILE",
                wg, "PLUGIN", wp, "POD", wn, "NODE", wa, wa ? "ACTION" : "",
                wa ? "  REASON" : "REASON");
        for (size_t i = 0; i < p->nevictions; i++) {
            const struct ebb_plan_eviction *e = &p->evictions[i];
            fprintf(out, "%-5d  %-*s  %-*s  %-*s  %-*s  %-*s%s%s\n", e->cycle, wf, e->profile, wg,
                    e->plugin ? e->plugin : "-", wp, e->pod, wn, e->node ? e->node : "-", wa,
                    wa ? (e->action ? e->action : "evict") : "", wa ? "  " : "",
                    e->reason && e->reason[0] ? e->reason : "-");
        }
    }
    if (p->nrefusals) {
        fprintf(out, "\nREFUSED\n%-5s  %-16s  %-40s  %-24s  %s\n", "CYCLE", "WHY", "POD", "PLUGIN", "DETAIL");
        for (size_t i = 0; i < p->nrefusals; i++) {
            const struct ebb_plan_refusal *r = &p->refusals[i];
            fprintf(out, "%-5d  %-16s  %-40s  %-24s  %s\n", r->cycle, r->why, r->pod,
                    r->plugin ? r->plugin : "-", r->detail ? r->detail : "");
        }
    }
    if (p->nerrors) {
        fprintf(out, "\nPLUGIN ERRORS\n");
        for (size_t i = 0; i < p->nerrors; i++)
            fprintf(out, "cycle %d  %s/%s: %s\n", p->errors[i].cycle, p->errors[i].profile,
                    p->errors[i].plugin, p->errors[i].message);
    }
    if (p->nnotes) {
        fprintf(out, "\nNOTES\n");
        for (size_t i = 0; i < p->nnotes; i++)
            fprintf(out, "cycle %d  %s/%s%s%s: %s\n", p->notes[i].cycle, p->notes[i].profile,
                    p->notes[i].plugin, p->notes[i].node ? " " : "",
                    p->notes[i].node ? p->notes[i].node : "", p->notes[i].message);
    }
    if (p->nskips) {
        fprintf(out, "\nSKIPPED\n");
        for (size_t i = 0; i < p->nskips; i++)
            fprintf(out, "cycle %d: %s\n", p->skips[i].cycle, p->skips[i].reason);
    }
    if (p->nnodes) {
        int w = 4;
        for (size_t i = 0; i < p->nnodes; i++)
            w = width(p->nodes[i].name, w);
        fprintf(out, "\nNODES (requests, %% of allocatable: before -> after)\n%-*s  %-17s  %-17s  %s\n",
                w, "NODE", "CPU", "MEMORY", "PODS");
        for (size_t i = 0; i < p->nnodes; i++) {
            const struct ebb_plan_node *n = &p->nodes[i];
            char c[3][32];
            for (int k = 0; k < 3; k++)
                snprintf(c[k], sizeof(c[k]), "%5.1f -> %5.1f", n->before[k], n->after[k]);
            fprintf(out, "%-*s  %-17s  %-17s  %s\n", w, n->name, c[0], c[1], c[2]);
        }
    }
}
