/* `ebb test`: the two invariants of the core every cycle of every case is
 * checked for, whatever the case expects: no eviction of a pod the
 * profile's filters protect (each eviction replayed in plan order through
 * the profile, on the cluster as the evictor saw it), and no limit
 * exceeded (per node, per namespace, in total). See ebb/testrun.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/testrun_int.h"
#include "core/engine.h"

struct key_count {
    const char *s;
    size_t len;
};

static int cmp_key(const void *a, const void *b)
{
    const struct key_count *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Count equal keys (sorted runs) against `max`; report every key over it. */
static int over_limit(struct key_count *k, size_t n, int64_t max, int cycle, const char *what,
                      const char *limit, struct ebb_test_report *r)
{
    int bad = 0;

    if (max == EBB_UNLIMITED)
        return 0;
    qsort(k, n, sizeof(*k), cmp_key);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && cmp_key(&k[i], &k[j]) == 0; j++)
            ;
        if ((int64_t)(j - i) > max) {
            char key[TR_TEXT_MAX];
            ebb_escape(key, sizeof(key), k[i].s, k[i].len, EBB_ESC_LINE);
            ebb__tr_printf(r, "  invariant: cycle %d: %zu evictions %s %s, over %s %lld\n", cycle, j - i,
                           what, key, limit, (long long)max);
            bad++;
        }
    }
    return bad;
}

int ebb_test_check_limits(const struct ebb_plan *p, const struct ebb_policy *pol, int cycle,
                          struct ebb_test_report *r)
{
    struct key_count *nodes, *nss;
    size_t nn = 0, nns = 0, total = 0;
    int bad = 0;

    if (p == NULL || pol == NULL || r == NULL)
        return EBB_EINVAL;
    nodes = calloc(p->nevictions + 1, sizeof(*nodes));
    nss = calloc(p->nevictions + 1, sizeof(*nss));
    if (nodes == NULL || nss == NULL) {
        free(nodes);
        free(nss);
        return EBB_ENOMEM;
    }
    for (size_t i = 0; i < p->nevictions; i++) {
        const struct ebb_plan_eviction *e = &p->evictions[i];
        const char *slash;
        if (e->cycle != cycle)
            continue;
        total++;
        /* the evictor counts a pod that is bound to a node against that node */
        if (e->node != NULL)
            nodes[nn++] = (struct key_count){ e->node, strlen(e->node) };
        if ((slash = strchr(e->pod, '/')) != NULL)
            nss[nns++] = (struct key_count){ e->pod, (size_t)(slash - e->pod) };
    }
    if (pol->max_total != EBB_UNLIMITED && (int64_t)total > pol->max_total) {
        ebb__tr_printf(r, "  invariant: cycle %d: %zu evictions in total, over "
                          "maxNoOfPodsToEvictTotal %lld\n",
                       cycle, total, (long long)pol->max_total);
        bad++;
    }
    bad += over_limit(nodes, nn, pol->max_per_node, cycle, "from node", "maxNoOfPodsToEvictPerNode", r);
    bad += over_limit(nss, nns, pol->max_per_namespace, cycle, "in namespace",
                      "maxNoOfPodsToEvictPerNamespace", r);
    free(nodes);
    free(nss);
    r->mismatches += bad;
    return r->oom ? EBB_ENOMEM : bad;
}

static struct ebb_profile_inst *profile_named(struct ebb_engine *e, const char *name)
{
    for (size_t i = 0; name && i < e->nprofiles; i++)
        if (strcmp(e->profiles[i]->name, name) == 0)
            return e->profiles[i];
    return NULL;
}

/* The first filter plugin of the profile that says no, for the message. */
static const char *refusing_plugin(struct ebb_ctx *ctx, const struct ebb_pod *pod, const char **ext)
{
    static const int exts[] = { EBB_EXT_FILTER, EBB_EXT_PREEVICTIONFILTER };

    for (size_t k = 0; k < EBB_ARRAY_LEN(exts); k++)
        for (size_t i = 0; i < ctx->profile->nset[exts[k]]; i++)
            if (!ebb__plugin_pod_check(ctx->profile->set[exts[k]][i], exts[k], ctx, pod)) {
                *ext = ebb_ext_name(exts[k]);
                return ctx->profile->set[exts[k]][i]->def->name;
            }
    /* else the profile's evict plugin, whose filter is the Evictor's */
    *ext = "filter";
    return ctx->profile->nset[EBB_EXT_EVICT] ? ctx->profile->set[EBB_EXT_EVICT][0]->def->name : "?";
}

int ebb_test_check_filters(struct ebb_engine *e, int cycle, struct ebb_test_report *r)
{
    struct ebb_cache *c;
    struct ebb_pod **hidden = NULL;
    size_t nhidden = 0;
    uint32_t slots;
    int bad = 0;

    if (e == NULL || r == NULL)
        return EBB_EINVAL;
    if ((c = e->cache) == NULL)
        return 0;
    slots = ebb_cache_pod_slots(c);
    if ((hidden = calloc((size_t)slots + 1, sizeof(*hidden))) == NULL)
        return EBB_ENOMEM;
    for (uint32_t i = 0; i < slots; i++) {
        struct ebb_pod *p = ebb_cache_pod_at(c, i);
        if (p != NULL && (p->flags & EBB_POD_GONE))
            hidden[nhidden++] = p;
    }
    /* back to the cluster the cycle started from, then forward eviction by
     * eviction: each check sees what the evictor saw (owners' replica
     * counts, room on other nodes) */
    ebb_cache_unhide_all(c);
    for (size_t i = 0; i < e->plan.nevictions; i++) {
        const struct ebb_plan_eviction *ev = &e->plan.evictions[i];
        const char *slash = strchr(ev->pod, '/');
        struct ebb_profile_inst *pr = profile_named(e, ev->profile);
        struct ebb_pod *p = NULL;

        if (ev->cycle != cycle)
            continue;
        if (slash != NULL) {
            ebb_str ns = ebb_str_find(ev->pod, (size_t)(slash - ev->pod));
            ebb_str name = ebb_str_find(slash + 1, strlen(slash + 1));
            p = ns && name ? ebb_cache_pod(c, ns, name) : NULL;
        }
        if (p == NULL) {
            ebb__tr_printf(r, "  invariant: cycle %d: %s was evicted by %s but is not in the cluster\n",
                           cycle, ebb__tr_text(ev->pod), ebb__tr_text(ebb__tr_dash(ev->plugin)));
            bad++;
        } else if (p->flags & EBB_POD_GONE) {
            ebb__tr_printf(r, "  invariant: cycle %d: %s was evicted twice\n", cycle, ebb__tr_text(ev->pod));
            bad++;
        } else if (pr == NULL) {
            ebb__tr_printf(r, "  invariant: cycle %d: %s was evicted by profile %s, which does not exist\n",
                           cycle, ebb__tr_text(ev->pod), ebb__tr_text(ebb__tr_dash(ev->profile)));
            bad++;
        } else {
            struct ebb_ctx ctx = { e, pr, NULL, EBB_EXT_FILTER, NULL };
            if (!ebb_ctx_filter(&ctx, p) || !ebb_ctx_pre_eviction_filter(&ctx, p)) {
                const char *ext, *who = refusing_plugin(&ctx, p, &ext);
                ebb__tr_printf(r, "  invariant: cycle %d: %s was evicted by %s, but the %s %s of profile "
                                  "%s protects it\n",
                               cycle, ebb__tr_text(ev->pod), ebb__tr_text(ebb__tr_dash(ev->plugin)),
                               ebb__tr_text(who), ext, ebb__tr_text(pr->name));
                bad++;
            }
        }
        if (p != NULL)
            ebb_cache_hide_pod(c, p);
    }
    /* as it was: the next cycle purges exactly what this one evicted */
    ebb_cache_unhide_all(c);
    for (size_t i = 0; i < nhidden; i++)
        ebb_cache_hide_pod(c, hidden[i]);
    free(hidden);
    r->mismatches += bad;
    return r->oom ? EBB_ENOMEM : bad;
}

