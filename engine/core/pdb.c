/* The API server's PodDisruptionBudget decision for an eviction request
 * (pkg/registry/core/pod/storage/eviction.go), on cached PDBs plus a state
 * overlay that records what earlier evictions took from each budget. Used by
 * the simulating evictor and by `ebb serve`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/selector.h"
#include "core/engine.h"

/* Pending, terminal and terminating pods are deleted without a PDB check. */
static bool can_ignore_pdb(const struct ebb_pod *p)
{
    return p->phase == EBB_PHASE_SUCCEEDED || p->phase == EBB_PHASE_FAILED ||
           p->phase == EBB_PHASE_PENDING || (p->flags & EBB_POD_TERMINATING);
}

/* The PDBs p's labels can meet, in namespace order (not every PDB of the
 * namespace): into some[16] when they fit, else the namespace's list. */
static const struct ebb_pdb *const *candidates(const struct ebb_cache *c, const struct ebb_pod *p,
                                               const struct ebb_pdb *some[16], uint32_t *n)
{
    if ((*n = ebb_cache_pdbs_selecting(c, p, some, 16)) <= 16)
        return some;
    return ebb_cache_pdbs_in(c, p->ns, n);
}

static struct ebb_pdb_state current(struct ebb_map *state, const struct ebb_pdb *pdb)
{
    struct ebb_pdb_state *s = state ? ebb__map_get(state, pdb->ns, pdb->name) : NULL;
    struct ebb_pdb_state fresh = { pdb->disruptions_allowed, pdb->current_healthy };
    return s ? *s : fresh;
}

int ebb__pdb_decide(const struct ebb_cache *c, const struct ebb_pod *pod, struct ebb_map *state,
                    const struct ebb_pdb **which, char *msg, size_t msglen)
{
    const struct ebb_pdb *const *pdbs, *match = NULL, *some[16];
    uint32_t n, nmatch = 0;
    struct ebb_pdb_state st;

    *which = NULL;
    if (msglen)
        msg[0] = '\0';
    if (can_ignore_pdb(pod))
        return EBB_PDB_ALLOW;
    pdbs = candidates(c, pod, some, &n);
    for (uint32_t i = 0; i < n; i++) {
        /* a nil or empty selector matches nothing here, unlike elsewhere */
        if (pdbs[i]->selector == NULL || ebb_selector_is_empty(pdbs[i]->selector) ||
            (pdbs[i]->selector->flags & EBB_SEL_NOTHING))
            continue;
        if (!ebb_selector_matches(pdbs[i]->selector, &pod->labels))
            continue;
        if (nmatch++ == 0)
            match = pdbs[i];
    }
    if (nmatch > 1) {
        snprintf(msg, msglen, "This pod has more than one PodDisruptionBudget, which the "
                              "eviction subresource does not support.");
        return EBB_PDB_ERROR;
    }
    if (match == NULL)
        return EBB_PDB_ALLOW;
    *which = match;
    st = current(state, match);
    if (!(pod->flags & EBB_POD_READY)) {
        if (match->unhealthy_policy && strcmp(match->unhealthy_policy, "AlwaysAllow") == 0)
            return EBB_PDB_ALLOW;
        if (st.healthy >= match->desired_healthy && match->desired_healthy > 0)
            return EBB_PDB_ALLOW;
    }
    if (match->observed_generation < match->generation) {
        snprintf(msg, msglen, "Cannot evict pod as it would violate the pod's disruption budget. "
                              "The disruption budget %s is still being processed by the server.",
                 match->name);
        return EBB_PDB_REFUSE;
    }
    if (st.allowed < 0) {
        snprintf(msg, msglen, "poddisruptionbudget \"%s\" is forbidden: pdb disruptions allowed "
                              "is negative", match->name);
        return EBB_PDB_ERROR;
    }
    if (st.allowed == 0) {
        snprintf(msg, msglen, "Cannot evict pod as it would violate the pod's disruption budget. "
                              "The disruption budget %s needs %d healthy pods and has %d currently",
                 match->name, match->desired_healthy, st.healthy);
        return EBB_PDB_REFUSE;
    }
    return EBB_PDB_ALLOW_DECREMENT;
}

void ebb__pdb_commit(struct ebb_map *state, const struct ebb_pdb *pdb, const struct ebb_pod *pod)
{
    struct ebb_pdb_state *s = ebb__map_get(state, pdb->ns, pdb->name);
    void *old;

    if (s == NULL) {
        if ((s = malloc(sizeof(*s))) == NULL)
            return;
        *s = (struct ebb_pdb_state){ pdb->disruptions_allowed, pdb->current_healthy };
        if (ebb__map_put(state, ebb_str_ref(pdb->ns), ebb_str_ref(pdb->name), s, &old) != 0) {
            ebb_str_release(pdb->ns);
            ebb_str_release(pdb->name);
            free(s);
            return;
        }
    }
    s->allowed--;
    if (pod->flags & EBB_POD_READY)
        s->healthy--;
}

void ebb__pdb_state_free(struct ebb_map *state)
{
    for (size_t i = 0; i < state->cap; i++) {
        if (ebb__map_live(state, i)) {
            ebb_str_release(state->s[i].a);
            ebb_str_release(state->s[i].b);
            free(state->s[i].v);
        }
    }
    ebb__map_free(state);
}

/* ---- the disruption controller, between simulated cycles ------------------ */

struct settle {
    struct ebb_map fresh;
    int rc;
};

static void settle_pdb(void *obj, void *ud)
{
    const struct ebb_pdb *pdb = obj;
    struct settle *s = ud;
    struct ebb_pdb_state *st;
    void *old;

    /* a budget the controller has not processed keeps what its status says
     * (an eviction is refused "still being processed" anyway) */
    if (s->rc != 0 || pdb->observed_generation < pdb->generation)
        return;
    if ((st = calloc(1, sizeof(*st))) == NULL) {
        s->rc = EBB_ENOMEM;
        return;
    }
    if (ebb__map_put(&s->fresh, ebb_str_ref(pdb->ns), ebb_str_ref(pdb->name), st, &old) != 0) {
        ebb_str_release(pdb->ns);
        ebb_str_release(pdb->name);
        free(st);
        s->rc = EBB_ENOMEM;
    }
}

static void count_healthy(struct settle *s, const struct ebb_cache *c, const struct ebb_pod *p)
{
    const struct ebb_pdb *const *pdbs, *some[16];
    uint32_t n;

    pdbs = candidates(c, p, some, &n);
    for (uint32_t i = 0; i < n; i++) {
        struct ebb_pdb_state *st = ebb__map_get(&s->fresh, pdbs[i]->ns, pdbs[i]->name);
        if (st != NULL && ebb_selector_matches(pdbs[i]->selector, &p->labels))
            st->healthy++;
    }
}

/* What the disruption controller writes into each budget's status once the
 * pods have moved (pkg/controller/disruption: countHealthyPods, then
 * disruptionsAllowed = currentHealthy - desiredHealthy, never below 0): a
 * pod counts when it matches, is Ready and is not being deleted. The
 * budget's desiredHealthy (from its expected pods) stays as recorded: a
 * what-if changes no workload's scale. Replaces the overlay `state` whole,
 * so what earlier cycles took from a budget comes back as its pods do.
 * 0, or EBB_ENOMEM with `state` as it was. */
int ebb__pdb_settle(const struct ebb_cache *c, struct ebb_map *state)
{
    struct settle s = { .rc = 0 };

    ebb__map_init(&s.fresh);
    ebb_cache_each(c, EBB_KIND_PDB, settle_pdb, &s);
    for (uint32_t i = 0; s.rc == 0 && s.fresh.live > 0 && i < ebb_cache_pod_slots(c); i++) {
        const struct ebb_pod *p = ebb_cache_pod_at(c, i);
        if (p != NULL && (p->flags & EBB_POD_READY) &&
            !(p->flags & (EBB_POD_TERMINATING | EBB_POD_GONE)))
            count_healthy(&s, c, p);
    }
    if (s.rc != 0) {
        ebb__pdb_state_free(&s.fresh);
        return s.rc;
    }
    for (size_t i = 0; i < s.fresh.cap; i++) {
        if (ebb__map_live(&s.fresh, i)) {
            struct ebb_pdb_state *st = s.fresh.s[i].v;
            const struct ebb_pdb *const *pdbs;
            uint32_t n;
            /* the budget's own desiredHealthy */
            pdbs = ebb_cache_pdbs_in(c, s.fresh.s[i].a, &n);
            for (uint32_t k = 0; k < n; k++)
                if (pdbs[k]->name == s.fresh.s[i].b)
                    st->allowed = st->healthy > pdbs[k]->desired_healthy
                                      ? st->healthy - pdbs[k]->desired_healthy : 0;
        }
    }
    ebb__pdb_state_free(state);
    *state = s.fresh;
    return 0;
}
