/* ebb/watch.h: the watch cache (informers).
 *
 * For nodes, pods, namespaces, PVCs, PDBs and priority classes (and
 * Koordinator NodeMetrics when asked): a streaming list where the server
 * offers one (a WATCH with sendInitialEvents=true,
 * resourceVersionMatch=NotOlderThan and bookmarks, as client-go's WatchList
 * does: ADDED events of every object, then the BOOKMARK annotated
 * k8s.io/initial-events-end, after which the same stream goes on as the
 * watch), else a paged LIST, then a WATCH from the list's resourceVersion
 * with bookmarks. A resource is synced only once its initial-events-end
 * bookmark (or its last page) is in; what the stream or the list did not
 * hold is then deleted, as after a LIST. A server that refuses the
 * streaming list (400 or 422, an ERROR event, a stream that ends, or goes
 * quiet for EBB_STREAM_IDLE_MS, before the initial-events-end bookmark;
 * three streams in a row that break before it)
 * gets paged LISTs for that resource from then on, said once in the log
 * (EBB_SYNC_AUTO); EBB_SYNC_LIST never asks for a stream, EBB_SYNC_WATCHLIST
 * never falls back (a refusal is an error, retried with backoff); after a disconnect the watch
 * resumes from the last resourceVersion seen; "410 Gone" (an expired
 * version) relists, and what the new list no longer holds is deleted. A
 * watch counts as current again as soon as the server accepts it (2xx) from
 * the resourceVersion it had, or once a relist is in: never waiting for an
 * event.
 * metrics.k8s.io NodeMetrics/PodMetrics are polled when a policy needs them
 * (node usage smoothed as upstream does: round(0.9 * previous + 0.1 * new)).
 *
 * While held (a cycle runs), answers and events are queued and applied when
 * released, so a cycle sees one consistent view. An answer that is not what
 * the API promises (bad JSON, an unknown event type, a truncated stream) is
 * reported and followed by a resume or a relist, with a backoff that grows
 * while it goes on (a watch reopened does not reset it; only an event or a
 * bookmark does), and the staleness counts from the first break; the view
 * is never changed by half an event.
 *
 * One object never fails the others: an object ebb cannot keep (see
 * ebb_decode_from_server) is skipped alone, in a LIST page or in a watch,
 * what was cached of it is dropped, and the skip function (or a warning)
 * reports it. Every byte a server sends is bounded (see the constants
 * below and ebb/snapshot.h). Loop thread only; no Lua runs here.
 */
#ifndef EBB_WATCH_H
#define EBB_WATCH_H

#include <uv.h>

#include "cache.h"
#include "kube.h"

struct ebb_informers;

/* The bounds of what the informers take in (README "Bounds"): a LIST page
 * at most EBB_LIST_PAGE_MAX bytes (a larger one is asked again with half
 * the limit) and the items asked for; of one resource, at most
 * EBB_LIST_OBJECTS_MAX objects in the cache and in a LIST round (and as
 * many pages); what waits while a cycle runs at most EBB_HOLD_QUEUE_MAX in
 * all (past it, that resource is listed again once the cycle ends). */
#define EBB_LIST_PAGE_MAX ((size_t)256 << 20)
#define EBB_LIST_OBJECTS_MAX ((size_t)500000)
#define EBB_HOLD_QUEUE_MAX ((size_t)64 << 20)

/* How the informers sync (--sync-mode): a streaming list where the server
 * offers it, else paged LIST (auto); paged LIST only; the streaming list
 * only. */
enum { EBB_SYNC_AUTO, EBB_SYNC_LIST, EBB_SYNC_WATCHLIST };

/* A streaming list that brings nothing for this long before its
 * initial-events-end bookmark is taken as refused (a server that ignores
 * sendInitialEvents sends what it has, then waits). */
#define EBB_STREAM_IDLE_MS 10000

struct ebb_informers_opts {
    int page_size;               /* LIST limit; 0: 500 */
    int sync_mode;               /* EBB_SYNC_*; 0: auto */
    int watch_timeout_s;         /* server-side timeoutSeconds; 0: 300 */
    bool metrics;                /* poll metrics.k8s.io */
    double metrics_interval_s;   /* 0: 5 */
    bool koord_metrics;          /* watch slo.koordinator.sh/v1alpha1 NodeMetric */
    bool object_text;            /* keep pods' and nodes' text from the start
                                    (ebb_informers_keep_text) */
};

/* Called after every change applied to the cache (for event-triggered
 * strategies and metrics): kind, "ADDED" | "MODIFIED" | "DELETED" |
 * "RELIST", and the object's key. */
typedef void (*ebb_informer_change_fn)(void *ud, int kind, const char *type, ebb_str ns,
                                       ebb_str name);

/* Called for every object skipped (ebb_decode_from_server): the resource
 * ("pods") and why; `why` is borrowed for the call. */
typedef void (*ebb_informer_skip_fn)(void *ud, const char *resource, const struct ebb_skip *why);

int ebb_informers_create(uv_loop_t *loop, struct ebb_kube *kube, struct ebb_cache *cache,
                         const struct ebb_informers_opts *opts, struct ebb_informers **out);
void ebb_informers_on_change(struct ebb_informers *inf, ebb_informer_change_fn fn, void *ud);
void ebb_informers_on_skip(struct ebb_informers *inf, ebb_informer_skip_fn fn, void *ud);
void ebb_informers_start(struct ebb_informers *inf);
/* Add the optional sources a reloaded policy needs (never removes any). */
void ebb_informers_enable(struct ebb_informers *inf, bool metrics, bool koord_metrics);

/* 401 or 403 when a resource that has never been listed had its last LIST
 * refused so (bad or expired credentials, missing rights), EBB_EIO when
 * the exec credential plugin failed (ebb_kube_cred_error), else 0; `why`
 * (may be NULL) gets the server's answer, whole ("LIST /api/v1/pods: 403
 * pods is forbidden: User ... cannot list resource ..."). A
 * front end waiting for the first sync stops there instead of waiting. */
int ebb_informers_refused(const struct ebb_informers *inf, char *why, size_t len);
/* Every resource has been listed once. */
bool ebb_informers_synced(const struct ebb_informers *inf);
/* How long (ms) the longest-broken watch has been broken; 0 if all are up.
 * `which` (may be NULL) gets the resource's name. */
uint64_t ebb_informers_broken_ms(const struct ebb_informers *inf, char *which, size_t len);

/* The resources that are not current: not synced yet, or broken for
 * longer than max_stale_ms; how many, and into buf each one's name and
 * why ("pods (broken for 40210 ms: relisting: ...)", "; " between). */
size_t ebb_informers_not_current(const struct ebb_informers *inf, uint64_t max_stale_ms, char *buf,
                                 size_t len);

/* Keep pods' and nodes' text (struct ebb_src, for pod.object and
 * node.object) from now on, or stop keeping it: every version of every
 * pod is otherwise written to a file nobody reads. Turned on, pods and
 * nodes are listed again so that each has its text. */
void ebb_informers_keep_text(struct ebb_informers *inf, bool on);

/* Queue everything while `hold` (a cycle runs); apply the queue on release. */
void ebb_informers_hold(struct ebb_informers *inf, bool hold);

struct ebb_informer_stats {
    const char *resource;        /* "pods", "nodes", ... */
    bool synced;
    bool watching;
    uint64_t events;             /* watch events applied (not a streaming list's initial ones) */
    uint64_t lists;              /* LIST rounds completed (1 + relists), streamed or paged */
    uint64_t streamed;           /* of them, by a streaming list */
    bool paged;                  /* the server refused the streaming list: paged LISTs */
    uint64_t resumes;            /* watches restarted from a resourceVersion */
    uint64_t errors;             /* bad answers and failed requests */
    uint64_t skipped;            /* objects skipped alone */
    size_t queued;               /* waiting for the cycle to end */
    const char *last_error;      /* what broke it last, NULL once healthy again;
                                  * valid until the next loop callback */
};
size_t ebb_informers_stats(const struct ebb_informers *inf, struct ebb_informer_stats *out,
                           size_t max);

/* The bytes of the files that back pod.object for watched objects, what
 * of them the cache still reads (*live) and how many files were reclaimed
 * (*moves). */
uint64_t ebb_informers_spill_bytes(const struct ebb_informers *inf, uint64_t *live,
                                   uint64_t *moves);

/* Stop every request and free everything; `cb` runs once memory is freed. */
void ebb_informers_close(struct ebb_informers *inf, void (*cb)(void *ud), void *ud);

#endif
