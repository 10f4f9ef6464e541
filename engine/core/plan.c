/* The plan: evictions and refusals in the order they happened, plugin
 * failures, skipped cycles, per-node utilization; printed as JSON (cJSON)
 * or as a table. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ebb/cache.h"
#include "ebb/plan.h"
#include "ebb/quantity.h"
#include "base/vec.h"

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

int ebb_plan_add_eviction_str(struct ebb_plan *p, const char *pod, const char *node,
                              const char *plugin, const char *profile, ebb_str reason)
{
    struct ebb_plan_eviction *e;

    if (ebb__grow((void **)&p->evictions, &p->cap_evictions, p->nevictions + 1, sizeof(*e)) != 0)
        return EBB_ENOMEM;
    e = &p->evictions[p->nevictions++];
    e->pod = dup_or_null(pod);
    e->node = ebb_str_cstr(node);
    e->plugin = ebb_str_cstr(plugin);
    e->profile = ebb_str_cstr(profile);
    e->reason = ebb_str_ref(reason);   /* whole: a script's reason may hold a NUL */
    e->cycle = p->cycles;
    e->action = e->request = NULL;
    return 0;
}

int ebb_plan_add_eviction(struct ebb_plan *p, const char *pod, const char *node,
                          const char *plugin, const char *profile, const char *reason)
{
    ebb_str r = ebb_str_cstr(reason);
    int rc = reason != NULL && r == NULL ? EBB_ENOMEM
                                         : ebb_plan_add_eviction_str(p, pod, node, plugin, profile, r);

    ebb_str_release(r);
    return rc;
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
    return ebb_plan_add_note_text(p, plugin, profile, node, node ? strlen(node) : 0, message,
                                  message ? strlen(message) : 0);
}

int ebb_plan_add_note_text(struct ebb_plan *p, const char *plugin, const char *profile,
                           const char *node, size_t node_len, const char *message, size_t len)
{
    struct ebb_plan_note *n;

    if (ebb__grow((void **)&p->notes, &p->cap_notes, p->nnotes + 1, sizeof(*n)) != 0)
        return EBB_ENOMEM;
    n = &p->notes[p->nnotes++];
    n->plugin = ebb_str_cstr(plugin);
    n->profile = ebb_str_cstr(profile);
    n->node = node ? ebb_str_intern(node, node_len) : NULL;
    n->message = NULL;
    n->message_len = 0;
    if (message != NULL && (n->message = malloc(len + 1)) != NULL) {
        memcpy(n->message, message, len);
        n->message[len] = '\0';
        n->message_len = len;
    }
    n->cycle = p->cycles;
    return 0;
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
                ebb_q_percent(pv->req[EBB_RES_CPU], ebb_res_get(a, EBB_RES_CPU)),
                ebb_q_percent(pv->req[EBB_RES_MEMORY], ebb_res_get(a, EBB_RES_MEMORY)),
                ebb_q_percent(pv->nactive, ebb_res_get(a, EBB_RES_PODS)),
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
    /* two decimals are what a person reads; the value stays a number, and
     * one from saturated quantities stays as large as it is */
    cJSON_AddNumberToObject(o, "cpu", ebb_q_round2(u[0]));
    cJSON_AddNumberToObject(o, "memory", ebb_q_round2(u[1]));
    cJSON_AddNumberToObject(o, "pods", ebb_q_round2(u[2]));
    return o;
}

/* Every text of the plan goes out through here: escaped whole (a NUL is
 * \u0000, bytes that are not UTF-8 are U+FFFD), null when absent. */
static void add_text(cJSON *o, const char *k, const char *v, size_t len)
{
    cJSON *item = ebb_json_text(v, len);

    if (item != NULL)
        cJSON_AddItemToObject(o, k, item);
}

static void add_str(cJSON *o, const char *k, const char *v)
{
    add_text(o, k, v, v ? strlen(v) : 0);
}

/* An interned text, with its interned length. */
static void add_istr(cJSON *o, const char *k, ebb_str v)
{
    add_text(o, k, v, v ? ebb_str_len(v) : 0);
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
        add_istr(o, "node", e->node);
        add_istr(o, "plugin", e->plugin);
        add_istr(o, "profile", e->profile);
        if (e->reason != NULL)
            add_istr(o, "reason", e->reason);
        else
            add_str(o, "reason", "");
        cJSON_AddNumberToObject(o, "cycle", e->cycle);
        if (e->action)
            add_str(o, "action", e->action);
        if (e->request) {
            /* a body a script built: its strings are made valid when printed */
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
        add_istr(o, "node", r->node);
        add_istr(o, "plugin", r->plugin);
        add_istr(o, "profile", r->profile);
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
        const struct ebb_plan_note *n = &p->notes[i];
        cJSON *o = cJSON_CreateObject();
        add_istr(o, "plugin", n->plugin);
        add_istr(o, "profile", n->profile);
        add_istr(o, "node", n->node);
        add_text(o, "message", n->message, n->message_len);
        cJSON_AddNumberToObject(o, "cycle", n->cycle);
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
    s = ebb_json_print(root, pretty);
    cJSON_Delete(root);
    return s;
}

/* ---- the table ------------------------------------------------------------------- */

/* A text of the table: escaped for a line into `buf`, cut with an ellipsis
 * past it (a name in a column; the last column gets whole texts: put_text). */
#define CELL_MAX 1024

static const char *cell(char (*buf)[CELL_MAX], const char *s, size_t len)
{
    if (s == NULL)
        return NULL;
    ebb_escape(*buf, sizeof(*buf), s, len, EBB_ESC_LINE);
    return *buf;
}

static const char *cstr_cell(char (*buf)[CELL_MAX], const char *s)
{
    return cell(buf, s, s ? strlen(s) : 0);
}

static const char *istr_cell(char (*buf)[CELL_MAX], ebb_str s)
{
    return cell(buf, s, s ? ebb_str_len(s) : 0);
}

/* The last text of a line, whole, escaped for a line. */
static void put_text(FILE *out, const char *s, size_t len)
{
    char *t = ebb_escape_dup(s, len, EBB_ESC_LINE, 0, NULL);

    fputs(t ? t : "(out of memory)", out);
    free(t);
}

static int width(const char *s, int w)
{
    int n = s ? (int)strlen(s) : 1;
    return n > w ? n : w;
}

void ebb_plan_print_table(const struct ebb_plan *p, FILE *out)
{
    char c1[CELL_MAX], c2[CELL_MAX], c3[CELL_MAX], c4[CELL_MAX], c5[CELL_MAX];
    int wp = 3, wn = 4, wg = 6, wf = 7, wa = 0;

    for (size_t i = 0; i < p->nevictions; i++) {
        wp = width(cstr_cell(&c1, p->evictions[i].pod), wp);
        wn = width(istr_cell(&c1, p->evictions[i].node), wn);
        wg = width(istr_cell(&c1, p->evictions[i].plugin), wg);
        wf = width(istr_cell(&c1, p->evictions[i].profile), wf);
        if (p->evictions[i].action)
            wa = width(cstr_cell(&c1, p->evictions[i].action), wa ? wa : 6);
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
            const char *plugin = istr_cell(&c2, e->plugin), *node = istr_cell(&c4, e->node);
            const char *action = cstr_cell(&c5, e->action);
            fprintf(out, "%-5d  %-*s  %-*s  %-*s  %-*s  %-*s%s", e->cycle, wf,
                    istr_cell(&c1, e->profile), wg, plugin ? plugin : "-", wp, cstr_cell(&c3, e->pod),
                    wn, node ? node : "-", wa, wa ? (action ? action : "evict") : "", wa ? "  " : "");
            if (e->reason && e->reason[0])
                put_text(out, e->reason, ebb_str_len(e->reason));
            else
                fputc('-', out);
            fputc('\n', out);
        }
    }
    if (p->nrefusals) {
        fprintf(out, "\nREFUSED\n%-5s  %-16s  %-40s  %-24s  %s\n", "CYCLE", "WHY", "POD", "PLUGIN", "DETAIL");
        for (size_t i = 0; i < p->nrefusals; i++) {
            const struct ebb_plan_refusal *r = &p->refusals[i];
            const char *plugin = istr_cell(&c3, r->plugin);
            fprintf(out, "%-5d  %-16s  %-40s  %-24s  ", r->cycle, cstr_cell(&c1, r->why),
                    cstr_cell(&c2, r->pod), plugin ? plugin : "-");
            if (r->detail)
                put_text(out, r->detail, strlen(r->detail));
            fputc('\n', out);
        }
    }
    if (p->nerrors) {
        fprintf(out, "\nPLUGIN ERRORS\n");
        for (size_t i = 0; i < p->nerrors; i++) {
            const struct ebb_plan_error *e = &p->errors[i];
            fprintf(out, "cycle %d  %s/%s: ", e->cycle, cstr_cell(&c1, e->profile),
                    cstr_cell(&c2, e->plugin));
            put_text(out, e->message, e->message ? strlen(e->message) : 0);
            fputc('\n', out);
        }
    }
    if (p->nnotes) {
        fprintf(out, "\nNOTES\n");
        for (size_t i = 0; i < p->nnotes; i++) {
            const struct ebb_plan_note *n = &p->notes[i];
            fprintf(out, "cycle %d  %s/%s%s", n->cycle, istr_cell(&c1, n->profile),
                    istr_cell(&c2, n->plugin), n->node ? " " : "");
            if (n->node)
                put_text(out, n->node, ebb_str_len(n->node));
            fputs(": ", out);
            put_text(out, n->message, n->message_len);
            fputc('\n', out);
        }
    }
    if (p->nskips) {
        fprintf(out, "\nSKIPPED\n");
        for (size_t i = 0; i < p->nskips; i++) {
            fprintf(out, "cycle %d: ", p->skips[i].cycle);
            put_text(out, p->skips[i].reason, p->skips[i].reason ? strlen(p->skips[i].reason) : 0);
            fputc('\n', out);
        }
    }
    if (p->nnodes) {
        int w = 4;
        for (size_t i = 0; i < p->nnodes; i++)
            w = width(cstr_cell(&c1, p->nodes[i].name), w);
        fprintf(out, "\nNODES (requests, %% of allocatable: before -> after)\n%-*s  %-17s  %-17s  %s\n",
                w, "NODE", "CPU", "MEMORY", "PODS");
        for (size_t i = 0; i < p->nnodes; i++) {
            const struct ebb_plan_node *n = &p->nodes[i];
            char c[3][128];   /* up to 9.2e20 % from saturated quantities */
            for (int k = 0; k < 3; k++)
                snprintf(c[k], sizeof(c[k]), "%5.1f -> %5.1f", n->before[k], n->after[k]);
            fprintf(out, "%-*s  %-17s  %-17s  %s\n", w, cstr_cell(&c1, n->name), c[0], c[1], c[2]);
        }
    }
}
