/* The memory of evictions (ebb/evmemory.h): a vector of entries ordered by
 * time, oldest first, each holding one reference to every string it names.
 * The evictor (evict.c) adds to it, the what-if (engine/sched/whatif.c)
 * marks where replacements landed, LoopGuard (loopguard.c) reads it. Its
 * encoding is evmemory_json.c's. Engine thread only.
 *
 * Invariants: v[0..n) is sorted by `at` (equal times keep the order they
 * were added in); every non-NULL ebb_str of an entry is a reference the
 * memory owns; `dirty` is set by every change and cleared only by
 * ebb_evmem_saved. */
#include <stdlib.h>
#include <string.h>

#include "ebb/cache.h"
#include "ebb/decode.h"
#include "ebb/evmemory.h"
#include "ebb/model.h"
#include "base/vec.h"

static void entry_release(struct ebb_evmem_entry *e)
{
    ebb_str_release(e->ns);
    ebb_str_release(e->pod);
    ebb_str_release(e->uid);
    ebb_str_release(e->kind);
    ebb_str_release(e->workload);
    ebb_str_release(e->node);
    ebb_str_release(e->plugin);
    ebb_str_release(e->profile);
    ebb_str_release(e->landed);
    ebb_str_release(e->replacement);
    for (uint8_t i = 0; i < e->npeers; i++)
        ebb_str_release(e->peers[i]);
}

static void entry_ref(struct ebb_evmem_entry *e)
{
    ebb_str_ref(e->ns);
    ebb_str_ref(e->pod);
    ebb_str_ref(e->uid);
    ebb_str_ref(e->kind);
    ebb_str_ref(e->workload);
    ebb_str_ref(e->node);
    ebb_str_ref(e->plugin);
    ebb_str_ref(e->profile);
    ebb_str_ref(e->landed);
    ebb_str_ref(e->replacement);
    for (uint8_t i = 0; i < e->npeers; i++)
        ebb_str_ref(e->peers[i]);
}

static void changed(struct ebb_evmem *m)
{
    m->dirty = true;
    m->generation++;
}

void ebb_evmem_init(struct ebb_evmem *m, int64_t window)
{
    memset(m, 0, sizeof(*m));
    m->window = window;
}

void ebb_evmem_free(struct ebb_evmem *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n; i++)
        entry_release(&m->v[i]);
    free(m->v);
    m->v = NULL;
    m->n = m->cap = 0;
    free(m->second.v);
    memset(&m->second, 0, sizeof(m->second));
    free(m->by_name.order);
    memset(&m->by_name, 0, sizeof(m->by_name));
}

/* Entries moved, came or went: the name index is stale. */
static void reshaped(struct ebb_evmem *m)
{
    m->by_name.n = 0;
    m->by_name.lookups = 0;
}

int ebb_evmem_add(struct ebb_evmem *m, const struct ebb_evmem_entry *e)
{
    size_t at;

    if (ebb__reserve(m->v, m->cap, m->n + 1) != 0)
        return EBB_ENOMEM;
    /* Evictions come in time order: the place is nearly always the end. */
    at = m->n;
    while (at > 0 && m->v[at - 1].at > e->at)
        at--;
    memmove(&m->v[at + 1], &m->v[at], (m->n - at) * sizeof(*m->v));
    m->v[at] = *e;
    entry_ref(&m->v[at]);
    m->n++;
    reshaped(m);
    changed(m);
    return 0;
}

size_t ebb_evmem_prune(struct ebb_evmem *m, int64_t now)
{
    int64_t window = m->window > 0 ? m->window : EBB_EVMEM_WINDOW_DEFAULT;
    size_t k = 0;

    while (k < m->n && m->v[k].at < now - window)
        entry_release(&m->v[k++]);
    if (k == 0)
        return 0;
    memmove(m->v, &m->v[k], (m->n - k) * sizeof(*m->v));
    m->n -= k;
    reshaped(m);
    changed(m);
    return k;
}

/* (ns, pod) then index: the order of the name index (v is the entries). */
static int cmp_name(const void *a, const void *b, void *v)
{
    const struct ebb_evmem_entry *x = (const struct ebb_evmem_entry *)v + *(const uint32_t *)a;
    const struct ebb_evmem_entry *y = (const struct ebb_evmem_entry *)v + *(const uint32_t *)b;
    uintptr_t xn = (uintptr_t)x->ns, yn = (uintptr_t)y->ns, xp = (uintptr_t)x->pod,
              yp = (uintptr_t)y->pod;

    if (xn != yn)
        return xn < yn ? -1 : 1;
    if (xp != yp)
        return xp < yp ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Build the name index when the linear lookups since the last change have
 * cost about what sorting costs (a lookup scans every entry): a what-if
 * placing thousands of replacements sorts once; a live run that evicts
 * and sees a replacement land in turn keeps scanning. false: not built. */
static bool by_name_ready(struct ebb_evmem *m)
{
    size_t log2n = 1;
    uint32_t *o;

    if (m->by_name.n == m->n && m->n > 0)
        return true;
    for (size_t k = m->n; k > 1; k >>= 1)
        log2n++;
    if (m->n < 64 || m->n > UINT32_MAX || ++m->by_name.lookups < log2n)
        return false;
    /* an index dropped keeps its array: realloc to the size now */
    if ((o = realloc(m->by_name.order, m->n * sizeof(*o))) == NULL)
        return false;   /* out of memory: the scan still answers */
    m->by_name.order = o;
    for (size_t i = 0; i < m->n; i++)
        m->by_name.order[i] = (uint32_t)i;
    qsort_r(m->by_name.order, m->n, sizeof(*m->by_name.order), cmp_name, m->v);
    m->by_name.n = m->n;
    return true;
}

/* The entries named (ns, pod), oldest first: [*lo, *hi) of the index. */
static void by_name_range(const struct ebb_evmem *m, ebb_str ns, ebb_str pod, size_t *lo,
                          size_t *hi)
{
    size_t a = 0, b = m->by_name.n;

    while (a < b) {
        size_t mid = a + (b - a) / 2;
        const struct ebb_evmem_entry *e = &m->v[m->by_name.order[mid]];
        if ((uintptr_t)e->ns < (uintptr_t)ns ||
            (e->ns == ns && (uintptr_t)e->pod < (uintptr_t)pod))
            a = mid + 1;
        else
            b = mid;
    }
    *lo = b = a;
    while (b < m->by_name.n && m->v[m->by_name.order[b]].ns == ns &&
           m->v[m->by_name.order[b]].pod == pod)
        b++;
    *hi = b;
}

/* The rule, given the entries of a name newest first: the first whose
 * replacement is not placed yet ends the search (true); else the newest
 * stays the hit. */
static bool landed_pick(struct ebb_evmem_entry *e, struct ebb_evmem_entry **hit)
{
    if (!(e->flags & EBB_EVMEM_LANDED)) {
        *hit = e;
        return true;
    }
    if (*hit == NULL)
        *hit = e;
    return false;
}

struct ebb_evmem_entry *ebb_evmem_landed(struct ebb_evmem *m, ebb_str ns, ebb_str pod,
                                         ebb_str replacement, ebb_str node)
{
    struct ebb_evmem_entry *hit = NULL;

    /* The newest eviction of that name whose replacement is not placed yet;
     * else the newest of that name (a StatefulSet's pod keeps its name, so
     * an older entry of it may already be landed). The index gives the
     * entries of the name in the order of v, as the scan meets them. */
    if (by_name_ready(m)) {
        size_t lo, hi;
        by_name_range(m, ns, pod, &lo, &hi);
        for (size_t k = hi; k-- > lo;)
            if (landed_pick(&m->v[m->by_name.order[k]], &hit))
                break;
    } else {
        for (size_t i = m->n; i-- > 0;)
            if (m->v[i].ns == ns && m->v[i].pod == pod && landed_pick(&m->v[i], &hit))
                break;
    }
    if (hit == NULL)
        return NULL;
    ebb_str_release(hit->landed);
    ebb_str_release(hit->replacement);
    hit->landed = ebb_str_ref(node);
    hit->replacement = ebb_str_ref(replacement);
    hit->flags |= EBB_EVMEM_LANDED;
    if (node != NULL && node == hit->node)
        hit->flags |= EBB_EVMEM_BOUNCED;
    else
        hit->flags &= ~(uint32_t)EBB_EVMEM_BOUNCED;
    changed(m);
    return hit;
}

size_t ebb_evmem_find(const struct ebb_evmem *m, ebb_str ns, ebb_str kind, ebb_str workload,
                      int64_t since, const struct ebb_evmem_entry **out, size_t max)
{
    size_t found = 0;

    for (size_t i = m->n; i-- > 0;) {
        const struct ebb_evmem_entry *e = &m->v[i];
        if (e->at < since)
            break;
        if (e->ns != ns || e->kind != kind || e->workload != workload)
            continue;
        if (found < max)
            out[found] = e;
        found++;
    }
    return found;
}

void ebb_evmem_saved(struct ebb_evmem *m)
{
    m->dirty = false;
}

/* ---- the top-level workload ---------------------------------------------------- */

static const struct ebb_owner *controller_of(const struct ebb_pod *p)
{
    for (uint16_t i = 0; i < p->nowners; i++)
        if (p->owners[i].controller && p->owners[i].kind != NULL && p->owners[i].name != NULL)
            return &p->owners[i];
    return NULL;
}

/* A Deployment names its ReplicaSets <deployment>-<pod-template-hash> and
 * labels their pods with the hash: the Deployment's name when `rs` has that
 * shape, else 0. */
static size_t deployment_by_hash(const struct ebb_pod *p, ebb_str rs)
{
    ebb_str hash = ebb_labels_getc(&p->labels, "pod-template-hash");
    size_t nl, hl;

    if (hash == NULL || (hl = ebb_str_len(hash)) == 0)
        return 0;
    nl = ebb_str_len(rs);
    if (nl < hl + 2 || rs[nl - hl - 1] != '-' || memcmp(rs + nl - hl, hash, hl) != 0)
        return 0;
    return nl - hl - 1;
}

/* The CronJob controller names its Jobs <cronjob>-<scheduled time in
 * minutes since the epoch> (8 digits since 1989, at most 10): the CronJob's
 * name length when `job` has that shape, else 0. Jobs are not in the cache
 * (no strategy needs them), so the name is all there is to go on; a Job
 * someone named "backup-20260101" is taken for a CronJob "backup"'s, which
 * keys its reruns together as a CronJob's would be. */
static size_t cronjob_by_name(ebb_str job)
{
    size_t n = ebb_str_len(job), d = 0;

    while (d < n && job[n - 1 - d] >= '0' && job[n - 1 - d] <= '9')
        d++;
    if (d < 8 || d > 10 || d + 2 > n || job[n - 1 - d] != '-')
        return 0;
    return n - d - 1;
}

bool ebb_evmem_pod_after(const struct ebb_evmem_entry *e, const struct ebb_pod *p)
{
    if (p->created == EBB_TIME_NONE || p->created > e->at)
        return true;
    if (p->created < e->at)
        return false;
    for (uint8_t i = 0; i < e->npeers; i++)
        if (e->peers[i] == p->uid)
            return false;
    return true;
}

/* The pods of c created in second `at` into m->second, unless there. */
static int index_second(struct ebb_evmem *m, const struct ebb_cache *c, int64_t at)
{
    uint32_t slots = ebb_cache_pod_slots(c);

    if (m->second.cache == c && m->second.at == at && m->second.v != NULL &&
        m->second.version == ebb_cache_content_version(c) && m->second.epoch == ebb_cache_epoch(c))
        return 0;
    m->second.n = 0;
    m->second.cache = NULL;
    if (ebb__reserve(m->second.v, m->second.cap, 1) != 0)
        return EBB_ENOMEM;
    for (uint32_t i = 0; i < slots; i++) {
        const struct ebb_pod *p = ebb_cache_pod_at(c, i);
        if (p == NULL || p->created != at)
            continue;
        if (ebb__reserve(m->second.v, m->second.cap, m->second.n + 1) != 0)
            return EBB_ENOMEM;
        m->second.v[m->second.n++] = p;
    }
    m->second.cache = c;
    m->second.at = at;
    m->second.version = ebb_cache_content_version(c);
    m->second.epoch = ebb_cache_epoch(c);
    return 0;
}

void ebb_evmem_find_peers(struct ebb_evmem *m, struct ebb_evmem_entry *e, const struct ebb_cache *c,
                          const struct ebb_pod *evicted)
{
    /* out of memory: no peers, so such a pod counts as after (the safe side) */
    if (c == NULL || index_second(m, c, e->at) != 0)
        return;
    for (size_t i = 0; i < m->second.n; i++) {
        const struct ebb_pod *p = m->second.v[i];
        ebb_str kind = NULL, name = NULL;
        bool same;

        if (p == evicted || p->uid == NULL || p->ns != e->ns || (p->flags & EBB_POD_GONE))
            continue;
        if (ebb_evmem_workload_of(c, p, &kind, &name) != 0)
            continue;
        same = kind == e->kind && name == e->workload;
        ebb_str_release(kind);
        ebb_str_release(name);
        if (!same)
            continue;
        if (e->npeers == EBB_EVMEM_PEERS_MAX) {
            e->flags |= EBB_EVMEM_PEERS_CUT;
            break;
        }
        e->peers[e->npeers++] = ebb_str_ref(p->uid);
    }
}

int ebb_evmem_workload_of(const struct ebb_cache *c, const struct ebb_pod *p, ebb_str *kind,
                          ebb_str *name)
{
    const struct ebb_owner *o = controller_of(p);
    const char *k;
    const char *nm;
    size_t len;

    *kind = *name = NULL;
    if (o == NULL) {
        k = "Pod", nm = p->name, len = ebb_str_len(p->name);
    } else if (strcmp(o->kind, "ReplicaSet") == 0) {
        const struct ebb_workload *rs =
            c ? ebb_cache_workload(c, EBB_KIND_REPLICA_SET, p->ns, o->name) : NULL;
        if (rs != NULL && rs->owner.kind != NULL) {
            k = rs->owner.kind, nm = rs->owner.name, len = ebb_str_len(rs->owner.name);
        } else if (rs == NULL && (len = deployment_by_hash(p, o->name)) > 0) {
            k = "Deployment", nm = o->name;
        } else {
            k = o->kind, nm = o->name, len = ebb_str_len(o->name);
        }
    } else if (strcmp(o->kind, "Job") == 0 && (len = cronjob_by_name(o->name)) > 0) {
        k = "CronJob", nm = o->name;
    } else {
        k = o->kind, nm = o->name, len = ebb_str_len(o->name);
    }
    if ((*kind = ebb_str_cstr(k)) == NULL || (*name = ebb_str_intern(nm, len)) == NULL) {
        ebb_str_release(*kind);
        *kind = NULL;
        return EBB_ENOMEM;
    }
    return 0;
}
