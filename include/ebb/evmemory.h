/* ebb/evmemory.h: the memory of evictions. Every eviction ebb makes is
 * remembered for a window (the pod, its top-level workload, the node it
 * left, the plugin and profile that evicted it, when, and where its
 * replacement landed once it has), so that LoopGuard can hold a workload
 * back and a Lua strategy can ask what was evicted (`ebb.evictions{}`).
 *
 * Who owns it: the caller of ebb_engine_create (cmd/: run, simulate, test)
 * makes one struct ebb_evmem, hands it in ebb_engine_opts.memory and keeps
 * it across reloads, cycles and generations; the engine adds to it as it
 * evicts and never frees it.
 *
 * Where it lasts (engine/kube/, engine/cmd/): in `ebb run` one object in
 * ebb's namespace, written at most once per cycle when `dirty`, read back at
 * start and by a new leader; in a snapshot (`ebb record`) under the key
 * "evictionMemory"; in `ebb simulate` across cycles. Its encoding is bounded
 * (EBB_EVMEM_MAX_BYTES): the oldest entries go first.
 *
 * A workload key is the top-level controller (ebb_evmem_workload_of): a
 * ReplicaSet resolved to its Deployment (so a rollout keeps the key), a
 * StatefulSet, a Job (a CronJob's Job: the CronJob), a DaemonSet, a
 * ReplicationController; a pod without a controller is its own workload
 * (kind "Pod", its name). Engine thread only. */
#ifndef EBB_EVMEMORY_H
#define EBB_EVMEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "str.h"

struct ebb_cache;
struct ebb_pod;

/* What one entry's encoding may cost at most, and the whole encoding. */
#define EBB_EVMEM_MAX_BYTES (900u * 1024u)
/* Pods of the workload created in an eviction's second kept by name of
 * uid: a scale-up or a rollout's surge in that second beyond it counts as
 * after the eviction (held a cooldown: the safe side). */
#define EBB_EVMEM_PEERS_MAX 8
/* The window entries are kept for by default: 24 hours. */
#define EBB_EVMEM_WINDOW_DEFAULT (24 * 3600)

enum {
    EBB_EVMEM_LANDED = 1 << 0,      /* `landed` is known */
    EBB_EVMEM_BOUNCED = 1 << 1,     /* the replacement landed on `node` again */
    EBB_EVMEM_PEERS_CUT = 1 << 2,   /* `peers` holds the first EBB_EVMEM_PEERS_MAX only */
};

struct ebb_evmem_entry {
    int64_t at;                     /* unix seconds of the eviction */
    ebb_str ns;                     /* every ebb_str interned, owned by the memory */
    ebb_str pod;                    /* the evicted pod's name */
    ebb_str uid;                    /* its uid (NULL when unknown) */
    ebb_str kind, workload;         /* the top-level workload: "Deployment", "web" */
    ebb_str node;                   /* the node it left */
    ebb_str plugin, profile;        /* who evicted it */
    ebb_str landed;                 /* where its replacement was placed; NULL: not yet */
    ebb_str replacement;            /* the replacement's name; NULL: not yet */
    uint32_t flags;                 /* EBB_EVMEM_* */
    /* the uids of the workload's other pods created in the eviction's
     * second and there when it was made: creationTimestamp has seconds, so
     * these alone order such a pod before the eviction (ebb_evmem_pod_after);
     * more than EBB_EVMEM_PEERS_MAX sets EBB_EVMEM_PEERS_CUT */
    ebb_str peers[EBB_EVMEM_PEERS_MAX];
    uint8_t npeers;
};

struct ebb_evmem {
    struct ebb_evmem_entry *v;      /* oldest first */
    size_t n, cap;
    int64_t window;                 /* seconds an entry is kept; <= 0: the default */
    bool dirty;                     /* changed since ebb_evmem_saved */
    uint64_t generation;            /* bumps on every change */
    /* ebb_evmem_find_peers' index: the pods of `cache` created in second
     * `at`, valid while the cache's content version and epoch are these */
    struct {
        const struct ebb_cache *cache;
        uint64_t version, epoch;
        int64_t at;
        const struct ebb_pod **v;
        size_t n, cap;
    } second;
    /* ebb_evmem_landed's index: v's indices sorted by (ns, pod, index),
     * built once lookups outnumber what building costs, dropped by every
     * add, prune and free */
    struct {
        uint32_t *order;
        size_t n;                   /* entries indexed; 0: not built */
        size_t lookups;             /* linear lookups since the last change */
    } by_name;
};

void ebb_evmem_init(struct ebb_evmem *m, int64_t window);
void ebb_evmem_free(struct ebb_evmem *m);            /* NULL-safe; m can be re-inited */

/* Remember an eviction: the strings of `e` are referenced (not copied),
 * entries stay ordered by `at`. 0 or EBB_ENOMEM. */
int ebb_evmem_add(struct ebb_evmem *m, const struct ebb_evmem_entry *e);
/* Forget entries older than now - window; returns how many went. */
size_t ebb_evmem_prune(struct ebb_evmem *m, int64_t now);
/* The replacement of the eviction of (ns, pod) was placed on `node` under
 * the name `replacement`: set landed (and BOUNCED when it is the node it
 * left). Returns the entry changed, or NULL when none matches. */
struct ebb_evmem_entry *ebb_evmem_landed(struct ebb_evmem *m, ebb_str ns, ebb_str pod,
                                         ebb_str replacement, ebb_str node);
/* The entries of one workload since `since` (0: all), newest first: fills
 * out[] up to max and returns how many there are in all. */
size_t ebb_evmem_find(const struct ebb_evmem *m, ebb_str ns, ebb_str kind, ebb_str workload,
                      int64_t since, const struct ebb_evmem_entry **out, size_t max);
void ebb_evmem_saved(struct ebb_evmem *m);           /* clears dirty */

/* The top-level workload of `p` as the memory keys it (see above): *kind
 * and *name interned (new references the caller releases). EBB_ENOMEM or 0. */
int ebb_evmem_workload_of(const struct ebb_cache *c, const struct ebb_pod *p, ebb_str *kind,
                          ebb_str *name);

/* Whether `p` came after the eviction `e` (a replacement, a rollout's pod)
 * rather than before it (a sibling, staged work): by creationTimestamp, and
 * in the eviction's own second (timestamps have seconds) by `peers`, the
 * pods that were there when it was made. A pod without a creation time, or
 * of the eviction's second but not among its peers, is after: a
 * replacement is never taken for an old pod, so a loop is not missed. The
 * one place every reader of the memory orders pods against evictions. */
bool ebb_evmem_pod_after(const struct ebb_evmem_entry *e, const struct ebb_pod *p);

/* Fill e->peers (references the entry then owns) from the pods of `c` of
 * e's workload, created in e->at's second, other than `evicted`. The pods
 * of that second are found once per second and cache content (m->second),
 * not once per eviction. */
void ebb_evmem_find_peers(struct ebb_evmem *m, struct ebb_evmem_entry *e, const struct ebb_cache *c,
                          const struct ebb_pod *evicted);

/* ---- encoding (evmemory_json.c) ----------------------------------------- */

/* The memory as JSON, newest entries kept and the oldest dropped until it
 * fits in max_bytes (0: EBB_EVMEM_MAX_BYTES): malloc'd text, *len its
 * length; NULL when out of memory. The format is versioned:
 * {"version":1,"window":S,"entries":[{...}, ...]}. */
char *ebb_evmem_encode(const struct ebb_evmem *m, size_t max_bytes, size_t *len);
/* Read an encoding into m (which is emptied first; its window kept unless
 * the text names one): every entry checked (types, sizes, names), a bad one
 * is an error that names `source` and the entry's index and field, and m
 * is left empty. 0 or an EBB_E* code with err filled. */
int ebb_evmem_decode(struct ebb_evmem *m, const char *text, size_t len, const char *source,
                     struct ebb_error *err);

#endif
