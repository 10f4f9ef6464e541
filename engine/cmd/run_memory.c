/* `ebb run`'s memory of evictions in the cluster: the ConfigMap
 * ebb-eviction-memory in ebb's namespace (the Lease's: --leader-elect-
 * resource-namespace, else the pod's own: POD_NAMESPACE or the service
 * account's namespace file, else kube-system), through
 * kube/memory_store.c. Loop thread only; r->memory is touched only while no
 * job runs (a job uses it on the engine thread).
 *
 * - At start the object is read before the first cycle: a cycle waits for
 *   the answer (up to --sync-timeout, as the caches do). An absent object
 *   is an empty memory. An object that cannot be read (403, 5xx) is an
 *   error in the log and on /readyz; cycles then run on what this process
 *   remembers, the read is tried again before each cycle, and nothing is
 *   written until it succeeds (an object ebb could not read is never
 *   overwritten). Unreadable content is logged and replaced.
 * - A new leader reads it again and merges it in.
 * - After a cycle, when the memory changed or the last save failed, it is
 *   pruned to its window and written once (bounded: ebb_evmem_encode).
 *   --dry-run writes nothing (its evictions did not happen).
 * Where a replacement landed is learnt by the engine from the watch
 * (ebb_engine_pod_changed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ebb/self.h"
#include "run_int.h"

static void on_load(void *ud, bool ok, struct ebb_evmem *read)
{
    struct runner *r = ud;

    (void)read;
    r->memory_answered = true;
    if (!ok)
        return;
    r->memory_merge_due = true;
    if (!r->busy && !r->in_cycle)
        (void)ebb__run_memory_ready(r);
}

int ebb__run_memory_init(struct runner *r)
{
    char ns[254], pod[254], why[256];

    /* the flag, else the pod's own (POD_NAMESPACE, the service account's
     * namespace file), else kube-system: where the Lease would be */
    if (r->o.lo.ns != NULL)
        snprintf(ns, sizeof(ns), "%s", r->o.lo.ns);
    else if (ebb_self_pod(ns, sizeof(ns), pod, sizeof(pod), why, sizeof(why)) != 0 &&
             ebb_self_namespace(ns, sizeof(ns), why, sizeof(why)) != 0)
        snprintf(ns, sizeof(ns), "kube-system");
    if (ebb_memstore_create(r->kube, ns, on_load, r, &r->memstore) != 0)
        return EBB_ENOMEM;
    ebb_log(EBB_LOG_INFO, "memory of evictions: ConfigMap %s/" EBB_MEMSTORE_NAME "%s", ns,
            r->o.dry_run ? " (read only: dry run)" : "");
    ebb_memstore_load(r->memstore);
    return 0;
}

bool ebb__run_memory_ready(struct runner *r)
{
    if (r->memstore == NULL)
        return true;
    if (!r->memory_answered)
        return false;
    if (r->memory_merge_due && !r->busy && !r->in_cycle) {
        struct ebb_evmem *read = NULL;
        size_t before = r->memory.n;
        bool dirty = r->memory.dirty;

        r->memory_merge_due = false;
        /* the store's copy: valid until its next load */
        read = ebb_memstore_read(r->memstore);
        if (r->memory.window <= 0 && read->window > 0)
            r->memory.window = read->window;
        if (ebb_memstore_merge(&r->memory, read) != 0)
            ebb_log(EBB_LOG_ERROR, "memory of evictions: out of memory merging what the cluster holds");
        else if (r->memory.n != before)
            ebb_log(EBB_LOG_INFO, "memory of evictions: %zu evictions read from the cluster",
                    r->memory.n - before);
        /* what came from the object is stored already */
        r->memory.dirty = dirty;
    }
    if (!ebb_memstore_loaded(r->memstore) && !ebb_memstore_busy(r->memstore))
        ebb_memstore_load(r->memstore);   /* unreadable last time: try again */
    return true;
}

void ebb__run_memory_save(struct runner *r)
{
    char *text;
    size_t len;

    if (r->memstore == NULL || r->o.dry_run || r->busy || r->in_cycle)
        return;
    (void)ebb__run_memory_ready(r);   /* a load that came during the cycle */
    /* the clock evictions are stamped with: --now when given */
    ebb_evmem_prune(&r->memory, r->o.now > 0 ? r->o.now : (int64_t)time(NULL));
    if (!ebb_memstore_loaded(r->memstore) ||
        (!r->memory.dirty && !ebb_memstore_save_failed(r->memstore)))
        return;
    text = ebb_evmem_encode(&r->memory, 0, &len);
    if (text == NULL) {
        ebb_log(EBB_LOG_ERROR, "memory of evictions: out of memory encoding it");
        return;
    }
    ebb_memstore_save(r->memstore, text, len);
    ebb_evmem_saved(&r->memory);
    free(text);
}

void ebb__run_memory_reload(struct runner *r)
{
    if (r->memstore != NULL)
        ebb_memstore_load(r->memstore);
}

const char *ebb__run_memory_error(const struct runner *r)
{
    return r->memstore ? ebb_memstore_error(r->memstore) : NULL;
}
