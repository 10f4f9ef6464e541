/* The resource-name registry, sparse resource lists, label maps and the
 * destructors of every cached object (see ebb/model.h).
 *
 * Destructors that take a pointer to a heap object (pod, node, selector,
 * affinity...) free the object itself; the ones for embedded values
 * (ebb_res, ebb_labels, ebb_req, terms) release what the value holds and
 * leave it empty, so a second call is harmless. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "ebb/model.h"
#include "ebb/selector.h"

/* ---- resources --------------------------------------------------------- */

/* Process-wide and never shrinking: ids are baked into every ebb_res and
 * into requested_mask bits, so a name keeps its id for the process's life.
 * The copies stay reachable from this table until exit. */
static const char *fixed_names[EBB_RES_FIXED] = {
    "cpu", "memory", "pods", "ephemeral-storage", "<unregistered>",
};
static char *extra_names[EBB_RES_MAX];
static int nresources = EBB_RES_FIXED;

const char *ebb_resource_name(int id)
{
    if (id < 0 || id >= nresources)
        return NULL;
    return id < EBB_RES_FIXED ? fixed_names[id] : extra_names[id];
}

int ebb_resource_find(const char *name)
{
    if (name == NULL)
        return -1;
    for (int id = 0; id < nresources; id++)
        if (strcmp(ebb_resource_name(id), name) == 0)
            return id;
    return -1;
}

/* Names registered by objects and by everything else (the policy, the
 * scheduler configuration, scripts) count apart, each against its own
 * share, so neither can take the other's ids. */
static int nobjects, nothers, nscripts;

static int resource_add(const char *name)
{
    char *copy;

    if (nresources >= EBB_RES_MAX || (copy = strdup(name)) == NULL)
        return -1;
    extra_names[nresources] = copy;
    return nresources++;
}

int ebb_resource_id(const char *name)
{
    int id = ebb_resource_find(name);

    if (id >= 0 || name == NULL || nothers >= EBB_RES_MAX - EBB_RES_OBJECTS_MAX)
        return id;
    if ((id = resource_add(name)) >= 0)
        nothers++;
    return id;
}

int ebb_resource_script(const char *name)
{
    int id = ebb_resource_find(name);

    if (id >= 0 || name == NULL || nscripts >= EBB_RES_SCRIPTS_MAX)
        return id;
    if ((id = ebb_resource_id(name)) >= 0)
        nscripts++;
    return id;
}

/* The bounds that keep one object (anyone who may create a pod) from
 * filling the table for everyone: see ebb/model.h. */
int ebb_resource_admit(const char *name, int *budget)
{
    int id = ebb_resource_find(name);

    if (id >= 0 || name == NULL || budget == NULL || *budget <= 0 ||
        nobjects >= EBB_RES_OBJECTS_MAX - EBB_RES_FIXED)
        return id;
    if ((id = resource_add(name)) >= 0) {
        nobjects++;
        (*budget)--;
    }
    return id;
}

int ebb_resource_count(void)
{
    return nresources;
}

/* Index of `id` in r->q, or of the slot where it would be inserted. */
static uint16_t res_slot(const struct ebb_res *r, int id)
{
    uint16_t lo = 0, hi = r->n;

    while (lo < hi) {
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (r->q[mid].id < id)
            lo = (uint16_t)(mid + 1);
        else
            hi = mid;
    }
    return lo;
}

int64_t ebb_res_get(const struct ebb_res *r, int id)
{
    uint16_t i;

    if (r == NULL || r->n == 0)
        return 0;
    i = res_slot(r, id);
    return i < r->n && r->q[i].id == id ? r->q[i].v : 0;
}

bool ebb_res_has(const struct ebb_res *r, int id)
{
    uint16_t i;

    if (r == NULL || r->n == 0)
        return false;
    i = res_slot(r, id);
    return i < r->n && r->q[i].id == id;
}

int ebb_res_set(struct ebb_res *r, int id, int64_t v)
{
    struct ebb_rq *q;
    uint16_t i;

    if (r == NULL || id < 0 || id >= EBB_RES_MAX)
        return EBB_EINVAL;
    i = res_slot(r, id);
    if (i < r->n && r->q[i].id == id) {
        r->q[i].v = v;
        return 0;
    }
    /* Lists are short (a handful of resources): grow one at a time. */
    if ((q = realloc(r->q, ((size_t)r->n + 1) * sizeof(*q))) == NULL)
        return EBB_ENOMEM;
    memmove(q + i + 1, q + i, (size_t)(r->n - i) * sizeof(*q));
    q[i].id = (uint16_t)id;
    q[i].v = v;
    r->q = q;
    r->n++;
    return 0;
}

void ebb_res_free(struct ebb_res *r)
{
    if (r == NULL)
        return;
    free(r->q);
    r->q = NULL;
    r->n = 0;
}

/* ---- labels ------------------------------------------------------------ */

bool ebb_labels_lookup(const struct ebb_labels *l, ebb_str key, ebb_str *val)
{
    if (l == NULL || key == NULL)
        return false;
    /* Interned: the same text is the same pointer, so no strcmp. Label
     * maps are small enough that a scan beats a binary search by text. */
    for (uint32_t i = 0; i < l->n; i++) {
        if (l->kv[i].key == key) {
            *val = l->kv[i].value;
            return true;
        }
    }
    return false;
}

ebb_str ebb_labels_get(const struct ebb_labels *l, ebb_str key)
{
    ebb_str v = NULL;

    return ebb_labels_lookup(l, key, &v) ? v : NULL;
}

ebb_str ebb_labels_getc(const struct ebb_labels *l, const char *key)
{
    if (key == NULL)
        return NULL;
    return ebb_labels_get(l, ebb_str_find(key, strlen(key)));
}

void ebb_labels_free(struct ebb_labels *l)
{
    if (l == NULL)
        return;
    for (uint32_t i = 0; i < l->n; i++) {
        ebb_str_release(l->kv[i].key);
        ebb_str_release(l->kv[i].value);
    }
    free(l->kv);
    l->kv = NULL;
    l->n = 0;
}

/* ---- selectors and requirements ---------------------------------------- */

static void release_strs(ebb_str *v, size_t n)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        ebb_str_release(v[i]);
    free(v);
}

void ebb_req_free(struct ebb_req *r)
{
    if (r == NULL)
        return;
    ebb_str_release(r->key);
    release_strs(r->values, r->nvalues);
    memset(r, 0, sizeof(*r));
}

static void free_reqs(struct ebb_req *reqs, size_t n)
{
    if (reqs == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        ebb_req_free(&reqs[i]);
    free(reqs);
}

void ebb_selector_free(struct ebb_selector *s)
{
    if (s == NULL)
        return;
    free_reqs(s->reqs, s->nreqs);
    free(s);
}

/* ---- affinity ---------------------------------------------------------- */

void ebb_node_term_clear(struct ebb_node_term *t)
{
    if (t == NULL)
        return;
    free_reqs(t->exprs, t->nexprs);
    free_reqs(t->fields, t->nfields);
    memset(t, 0, sizeof(*t));
}

void ebb_pod_term_clear(struct ebb_pod_term *t)
{
    if (t == NULL)
        return;
    ebb_selector_free(t->selector);
    release_strs(t->namespaces, t->nnamespaces);
    ebb_selector_free(t->ns_selector);
    ebb_str_release(t->topology_key);
    release_strs(t->match_keys, t->nmatch_keys);
    release_strs(t->mismatch_keys, t->nmismatch_keys);
    memset(t, 0, sizeof(*t));
}

static void free_pod_terms(struct ebb_pod_term *t, size_t n)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        ebb_pod_term_clear(&t[i]);
    free(t);
}

static void free_weighted_terms(struct ebb_weighted_pod_term *t, size_t n)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        ebb_pod_term_clear(&t[i].term);
    free(t);
}

void ebb_affinity_free(struct ebb_affinity *a)
{
    if (a == NULL)
        return;
    if (a->required != NULL) {
        for (uint16_t i = 0; i < a->nrequired; i++)
            ebb_node_term_clear(&a->required[i]);
        free(a->required);
    }
    if (a->preferred != NULL) {
        for (uint16_t i = 0; i < a->npreferred; i++)
            ebb_node_term_clear(&a->preferred[i].term);
        free(a->preferred);
    }
    free_pod_terms(a->aff_required, a->naff_required);
    free_weighted_terms(a->aff_preferred, a->naff_preferred);
    free_pod_terms(a->anti_required, a->nanti_required);
    free_weighted_terms(a->anti_preferred, a->nanti_preferred);
    free(a);
}

/* ---- pods and nodes ---------------------------------------------------- */

static void tsc_clear(struct ebb_tsc *t)
{
    ebb_str_release(t->topology_key);
    ebb_selector_free(t->selector);
    release_strs(t->match_keys, t->nmatch_keys);
}

void ebb_pod_free(struct ebb_pod *p)
{
    if (p == NULL)
        return;
    ebb_str_release(p->ns);
    ebb_str_release(p->name);
    ebb_str_release(p->uid);
    ebb_str_release(p->node);
    ebb_str_release(p->priority_class);
    ebb_str_release(p->reason);
    ebb_str_release(p->scheduler);
    ebb_labels_free(&p->labels);
    ebb_labels_free(&p->annotations);
    ebb_labels_free(&p->node_selector);
    if (p->owners != NULL) {
        for (uint16_t i = 0; i < p->nowners; i++) {
            ebb_str_release(p->owners[i].kind);
            ebb_str_release(p->owners[i].name);
            ebb_str_release(p->owners[i].uid);
        }
        free(p->owners);
    }
    if (p->tolerations != NULL) {
        for (uint16_t i = 0; i < p->ntolerations; i++) {
            ebb_str_release(p->tolerations[i].key);
            ebb_str_release(p->tolerations[i].value);
        }
        free(p->tolerations);
    }
    if (p->cstatus != NULL) {
        for (uint16_t i = 0; i < p->ncstatus; i++) {
            ebb_str_release(p->cstatus[i].name);
            ebb_str_release(p->cstatus[i].reason);
            ebb_str_release(p->cstatus[i].last_reason);
        }
        free(p->cstatus);
    }
    if (p->conditions != NULL) {
        for (uint16_t i = 0; i < p->nconditions; i++) {
            ebb_str_release(p->conditions[i].type);
            ebb_str_release(p->conditions[i].status);
            ebb_str_release(p->conditions[i].reason);
        }
        free(p->conditions);
    }
    release_strs(p->images, p->nimages);
    release_strs(p->pvcs, p->npvcs);
    release_strs(p->init_images, p->ninit_images);
    if (p->host_ports != NULL) {
        for (uint16_t i = 0; i < p->nhost_ports; i++) {
            ebb_str_release(p->host_ports[i].ip);
            ebb_str_release(p->host_ports[i].protocol);
        }
        free(p->host_ports);
    }
    if (p->tsc != NULL) {
        for (uint16_t i = 0; i < p->ntsc; i++)
            tsc_clear(&p->tsc[i]);
        free(p->tsc);
    }
    ebb_affinity_free(p->affinity);
    ebb_res_free(&p->requests);
    free(p);
}

void ebb_node_free(struct ebb_node *n)
{
    if (n == NULL)
        return;
    ebb_str_release(n->name);
    ebb_str_release(n->uid);
    if (n->taints != NULL) {
        for (uint16_t i = 0; i < n->ntaints; i++) {
            ebb_str_release(n->taints[i].key);
            ebb_str_release(n->taints[i].value);
        }
        free(n->taints);
    }
    ebb_labels_free(&n->labels);
    ebb_labels_free(&n->annotations);
    ebb_res_free(&n->allocatable);
    ebb_res_free(&n->capacity);
    if (n->images != NULL) {
        for (uint16_t i = 0; i < n->nimages; i++)
            release_strs(n->images[i].names, n->images[i].nnames);
        free(n->images);
    }
    free(n);
}

/* ---- other kinds ------------------------------------------------------- */

void ebb_namespace_free(struct ebb_namespace *ns)
{
    if (ns == NULL)
        return;
    ebb_str_release(ns->name);
    ebb_labels_free(&ns->labels);
    free(ns);
}

void ebb_priority_class_free(struct ebb_priority_class *pc)
{
    if (pc == NULL)
        return;
    ebb_str_release(pc->name);
    free(pc);
}

void ebb_pvc_free(struct ebb_pvc *pvc)
{
    if (pvc == NULL)
        return;
    ebb_str_release(pvc->ns);
    ebb_str_release(pvc->name);
    ebb_str_release(pvc->storage_class);
    free(pvc);
}

void ebb_pdb_free(struct ebb_pdb *pdb)
{
    if (pdb == NULL)
        return;
    ebb_str_release(pdb->ns);
    ebb_str_release(pdb->name);
    ebb_selector_free(pdb->selector);
    ebb_str_release(pdb->unhealthy_policy);
    ebb_str_release(pdb->min_available);
    ebb_str_release(pdb->max_unavailable);
    free(pdb);
}

void ebb_node_metrics_free(struct ebb_node_metrics *m)
{
    if (m == NULL)
        return;
    ebb_str_release(m->node);
    ebb_res_free(&m->usage);
    free(m);
}

void ebb_pod_metrics_free(struct ebb_pod_metrics *m)
{
    if (m == NULL)
        return;
    ebb_str_release(m->ns);
    ebb_str_release(m->name);
    ebb_res_free(&m->usage);
    free(m);
}

void ebb_koord_node_metric_free(struct ebb_koord_node_metric *m)
{
    if (m == NULL)
        return;
    ebb_str_release(m->node);
    ebb_res_free(&m->node_usage);
    ebb_res_free(&m->system_usage);
    if (m->pods != NULL) {
        for (uint32_t i = 0; i < m->npods; i++) {
            ebb_str_release(m->pods[i].ns);
            ebb_str_release(m->pods[i].name);
            ebb_str_release(m->pods[i].priority);
            ebb_res_free(&m->pods[i].usage);
        }
        free(m->pods);
    }
    free(m);
}

const char *ebb_pod_key(const struct ebb_pod *p, char *buf, size_t len)
{
    if (buf == NULL || len == 0)
        return buf;
    if (p == NULL) {
        buf[0] = '\0';
        return buf;
    }
    /* hot in the evictor: no printf */
    size_t a = ebb_str_len(p->ns), b = ebb_str_len(p->name);
    if (a + b + 2 > len) {
        snprintf(buf, len, "%s/%s", p->ns ? p->ns : "", p->name ? p->name : "");
        return buf;
    }
    if (a)
        memcpy(buf, p->ns, a);
    buf[a] = '/';
    if (b)
        memcpy(buf + a + 1, p->name, b);
    buf[a + b + 1] = '\0';
    return buf;
}

/* ---- deep copies --------------------------------------------------------- */

/* Copy n elements of `from` into a new array at *to (NULL when n is 0). */
static bool dup_array(void **to, const void *from, size_t n, size_t size)
{
    *to = NULL;
    if (n == 0 || from == NULL)
        return true;
    if ((*to = malloc(n * size)) == NULL)
        return false;
    memcpy(*to, from, n * size);
    return true;
}

static bool ref_strs(ebb_str **to, ebb_str const *from, size_t n)
{
    if (!dup_array((void **)to, from, n, sizeof(*from)))
        return false;
    for (size_t i = 0; i < n && *to != NULL; i++)
        ebb_str_ref((*to)[i]);
    return true;
}

static bool labels_dup(struct ebb_labels *to, const struct ebb_labels *from)
{
    to->n = 0;
    if (!dup_array((void **)&to->kv, from->kv, from->n, sizeof(*from->kv)))
        return false;
    to->n = to->kv != NULL ? from->n : 0;
    for (uint32_t i = 0; i < to->n; i++) {
        ebb_str_ref(to->kv[i].key);
        ebb_str_ref(to->kv[i].value);
    }
    return true;
}

/* On failure *to and *nto still describe an array ebb_req_free can clear. */
static bool reqs_dup(struct ebb_req **to, uint16_t *nto, const struct ebb_req *from, uint16_t n)
{
    *nto = 0;
    if (!dup_array((void **)to, from, n, sizeof(*from)))
        return false;
    if (*to == NULL)
        return true;
    for (uint16_t i = 0; i < n; i++) {
        (*to)[i].key = NULL;
        (*to)[i].values = NULL;
        (*to)[i].nvalues = 0;
    }
    *nto = n;
    for (uint16_t i = 0; i < n; i++) {
        struct ebb_req *r = &(*to)[i];
        r->key = ebb_str_ref(from[i].key);
        if (!ref_strs(&r->values, from[i].values, from[i].nvalues))
            return false;
        r->nvalues = r->values != NULL ? from[i].nvalues : 0;
    }
    return true;
}

static bool node_term_dup(struct ebb_node_term *to, const struct ebb_node_term *from)
{
    *to = *from;
    to->exprs = to->fields = NULL;
    to->nexprs = to->nfields = 0;
    return reqs_dup(&to->exprs, &to->nexprs, from->exprs, from->nexprs) &&
           reqs_dup(&to->fields, &to->nfields, from->fields, from->nfields);
}

static bool pod_term_dup(struct ebb_pod_term *to, const struct ebb_pod_term *from)
{
    memset(to, 0, sizeof(*to));
    to->topology_key = ebb_str_ref(from->topology_key);
    if ((from->selector && (to->selector = ebb_selector_dup(from->selector)) == NULL) ||
        (from->ns_selector && (to->ns_selector = ebb_selector_dup(from->ns_selector)) == NULL))
        return false;
    if (!ref_strs(&to->namespaces, from->namespaces, from->nnamespaces))
        return false;
    to->nnamespaces = from->nnamespaces;
    if (!ref_strs(&to->match_keys, from->match_keys, from->nmatch_keys))
        return false;
    to->nmatch_keys = from->nmatch_keys;
    if (!ref_strs(&to->mismatch_keys, from->mismatch_keys, from->nmismatch_keys))
        return false;
    to->nmismatch_keys = from->nmismatch_keys;
    return true;
}

static struct ebb_affinity *affinity_dup(const struct ebb_affinity *a)
{
    struct ebb_affinity *d = calloc(1, sizeof(*d));

    if (d == NULL)
        return NULL;
    d->has_required = a->has_required;
    if ((a->nrequired && (d->required = calloc(a->nrequired, sizeof(*d->required))) == NULL) ||
        (a->npreferred && (d->preferred = calloc(a->npreferred, sizeof(*d->preferred))) == NULL) ||
        (a->naff_required &&
         (d->aff_required = calloc(a->naff_required, sizeof(*d->aff_required))) == NULL) ||
        (a->naff_preferred &&
         (d->aff_preferred = calloc(a->naff_preferred, sizeof(*d->aff_preferred))) == NULL) ||
        (a->nanti_required &&
         (d->anti_required = calloc(a->nanti_required, sizeof(*d->anti_required))) == NULL) ||
        (a->nanti_preferred &&
         (d->anti_preferred = calloc(a->nanti_preferred, sizeof(*d->anti_preferred))) == NULL))
        goto fail;
    for (; d->nrequired < a->nrequired; d->nrequired++)
        if (!node_term_dup(&d->required[d->nrequired], &a->required[d->nrequired])) {
            d->nrequired++;
            goto fail;
        }
    for (; d->npreferred < a->npreferred; d->npreferred++) {
        d->preferred[d->npreferred].weight = a->preferred[d->npreferred].weight;
        if (!node_term_dup(&d->preferred[d->npreferred].term, &a->preferred[d->npreferred].term)) {
            d->npreferred++;
            goto fail;
        }
    }
    for (; d->naff_required < a->naff_required; d->naff_required++)
        if (!pod_term_dup(&d->aff_required[d->naff_required], &a->aff_required[d->naff_required])) {
            d->naff_required++;
            goto fail;
        }
    for (; d->nanti_required < a->nanti_required; d->nanti_required++)
        if (!pod_term_dup(&d->anti_required[d->nanti_required],
                          &a->anti_required[d->nanti_required])) {
            d->nanti_required++;
            goto fail;
        }
    for (; d->naff_preferred < a->naff_preferred; d->naff_preferred++) {
        d->aff_preferred[d->naff_preferred].weight = a->aff_preferred[d->naff_preferred].weight;
        if (!pod_term_dup(&d->aff_preferred[d->naff_preferred].term,
                          &a->aff_preferred[d->naff_preferred].term)) {
            d->naff_preferred++;
            goto fail;
        }
    }
    for (; d->nanti_preferred < a->nanti_preferred; d->nanti_preferred++) {
        d->anti_preferred[d->nanti_preferred].weight = a->anti_preferred[d->nanti_preferred].weight;
        if (!pod_term_dup(&d->anti_preferred[d->nanti_preferred].term,
                          &a->anti_preferred[d->nanti_preferred].term)) {
            d->nanti_preferred++;
            goto fail;
        }
    }
    return d;
fail:
    ebb_affinity_free(d);
    return NULL;
}

struct ebb_pod *ebb_pod_clone(const struct ebb_pod *p)
{
    struct ebb_pod *c;
    bool ok = true;

    if (p == NULL || (c = malloc(sizeof(*c))) == NULL)
        return NULL;
    *c = *p;
    /* nothing below is owned yet: a failure frees what has been copied */
    c->labels.kv = c->annotations.kv = c->node_selector.kv = NULL;
    c->labels.n = c->annotations.n = c->node_selector.n = 0;
    c->owners = NULL, c->tolerations = NULL, c->cstatus = NULL, c->conditions = NULL;
    c->images = c->pvcs = c->init_images = NULL;
    c->tsc = NULL, c->affinity = NULL, c->requests.q = NULL, c->host_ports = NULL;
    c->nowners = c->ntolerations = c->ncstatus = c->nconditions = c->nimages = c->npvcs = 0;
    c->ntsc = c->ninit_images = c->nhost_ports = c->requests.n = 0;
    ebb_str_ref(c->ns), ebb_str_ref(c->name), ebb_str_ref(c->uid), ebb_str_ref(c->node);
    ebb_str_ref(c->priority_class), ebb_str_ref(c->reason), ebb_str_ref(c->scheduler);

    ok = labels_dup(&c->labels, &p->labels) && labels_dup(&c->annotations, &p->annotations) &&
         labels_dup(&c->node_selector, &p->node_selector);
    if (ok && (ok = dup_array((void **)&c->owners, p->owners, p->nowners, sizeof(*p->owners)))) {
        c->nowners = p->nowners;
        for (uint16_t i = 0; i < c->nowners; i++) {
            ebb_str_ref(c->owners[i].kind);
            ebb_str_ref(c->owners[i].name);
            ebb_str_ref(c->owners[i].uid);
        }
    }
    if (ok && (ok = dup_array((void **)&c->tolerations, p->tolerations, p->ntolerations,
                              sizeof(*p->tolerations)))) {
        c->ntolerations = p->ntolerations;
        for (uint16_t i = 0; i < c->ntolerations; i++) {
            ebb_str_ref(c->tolerations[i].key);
            ebb_str_ref(c->tolerations[i].value);
        }
    }
    if (ok && (ok = dup_array((void **)&c->cstatus, p->cstatus, p->ncstatus, sizeof(*p->cstatus)))) {
        c->ncstatus = p->ncstatus;
        for (uint16_t i = 0; i < c->ncstatus; i++) {
            ebb_str_ref(c->cstatus[i].name);
            ebb_str_ref(c->cstatus[i].reason);
            ebb_str_ref(c->cstatus[i].last_reason);
        }
    }
    if (ok && (ok = dup_array((void **)&c->conditions, p->conditions, p->nconditions,
                              sizeof(*p->conditions)))) {
        c->nconditions = p->nconditions;
        for (uint16_t i = 0; i < c->nconditions; i++) {
            ebb_str_ref(c->conditions[i].type);
            ebb_str_ref(c->conditions[i].status);
            ebb_str_ref(c->conditions[i].reason);
        }
    }
    if (ok && (ok = ref_strs(&c->images, p->images, p->nimages)))
        c->nimages = p->nimages;
    if (ok && (ok = ref_strs(&c->pvcs, p->pvcs, p->npvcs)))
        c->npvcs = p->npvcs;
    if (ok && (ok = ref_strs(&c->init_images, p->init_images, p->ninit_images)))
        c->ninit_images = p->ninit_images;
    if (ok && p->ntsc > 0 && (ok = (c->tsc = calloc(p->ntsc, sizeof(*c->tsc))) != NULL)) {
        for (uint16_t i = 0; ok && i < p->ntsc; i++) {
            struct ebb_tsc *t = &c->tsc[i];
            *t = p->tsc[i];
            t->selector = NULL;
            t->match_keys = NULL;
            t->nmatch_keys = 0;
            ebb_str_ref(t->topology_key);
            c->ntsc = (uint16_t)(i + 1);
            if (p->tsc[i].selector && (t->selector = ebb_selector_dup(p->tsc[i].selector)) == NULL)
                ok = false;
            else if ((ok = ref_strs(&t->match_keys, p->tsc[i].match_keys, p->tsc[i].nmatch_keys)))
                t->nmatch_keys = p->tsc[i].nmatch_keys;
        }
    }
    if (ok && p->affinity != NULL)
        ok = (c->affinity = affinity_dup(p->affinity)) != NULL;
    if (ok && (ok = dup_array((void **)&c->requests.q, p->requests.q, p->requests.n,
                              sizeof(*p->requests.q))))
        c->requests.n = p->requests.n;
    if (ok && (ok = dup_array((void **)&c->host_ports, p->host_ports, p->nhost_ports,
                              sizeof(*p->host_ports)))) {
        c->nhost_ports = p->nhost_ports;
        for (uint16_t i = 0; i < c->nhost_ports; i++) {
            ebb_str_ref(c->host_ports[i].ip);
            ebb_str_ref(c->host_ports[i].protocol);
        }
    }
    if (!ok) {
        ebb_pod_free(c);
        return NULL;
    }
    return c;
}

void ebb_workload_free(struct ebb_workload *w)
{
    if (w == NULL)
        return;
    ebb_str_release(w->ns);
    ebb_str_release(w->name);
    ebb_str_release(w->uid);
    ebb_str_release(w->owner.kind);
    ebb_str_release(w->owner.name);
    ebb_str_release(w->owner.uid);
    ebb_selector_free(w->selector);
    free(w);
}
