/* engine/serve/serve_int.h: what the units of `ebb serve` share. Not public.
 *
 *   serve.c        the command: flags, the snapshot load, the loop and its timers
 *   serve_store.c  the resources served, object versions, one store per
 *                  resource, the event history (the watch cache), selectors
 *   serve_api.c    answers (metav1.Status), discovery, routes, the request
 *                  entry point (faults, latency) and its dispatch
 *   serve_read.c   get, list (paging, continue tokens) and watch
 *   serve_admit.c  admission, defaults, validation, each kind's strategy
 *   serve_write.c  create, update, patch, status, delete (graceful, finalizers)
 *   serve_evict.c  eviction, decided by PodDisruptionBudgets
 *   serve_table.c  the Tables kubectl asks for (Accept: ...;as=Table)
 *   serve_churn.c  --churn: pod events at a rate, for benchmarks
 *   serve_resched.c --reschedule: evicted pods replaced and placed by the
 *                  scheduler model; the cache's pods follow the store
 *
 * One loop thread: everything runs in libuv callbacks. Calls go
 * serve.c -> serve_api.c -> serve_read.c, serve_write.c -> serve_store.c;
 * the store tells the watches of each change (ebb__watch_notify), and
 * serve_churn.c writes through the store like a client, started by the
 * first pods watch. */
#ifndef EBB_SERVE_INT_H
#define EBB_SERVE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "ebb/cache.h"
#include "ebb/httpd.h"
#include "ebb/selector.h"
#include "core/engine.h"

#define JSON "application/json"

/* ---- serve_store.c: resources -------------------------------------------- */

enum { V_GET = 1, V_LIST = 2, V_WATCH = 4, V_CREATE = 8, V_UPDATE = 16, V_PATCH = 32,
       V_DELETE = 64, V_DELETECOLLECTION = 128 };

enum { R_NODES, R_PODS, R_NAMESPACES, R_PVCS, R_EVENTS, R_PDBS, R_PRIORITY_CLASSES, R_LEASES,
       R_EVENTS_V1, R_NODE_METRICS, R_POD_METRICS, R_POD_MIGRATION_JOBS, R_CONFIGMAPS, NRES };

struct rdef {
    const char *group, *version, *plural, *singular, *kind;
    bool namespaced;
    unsigned verbs;
    const char *short_name;      /* NULL: none */
    bool all;                    /* in the "all" category */
    const char *fields[12];      /* field selector labels besides metadata.name/namespace */
};

extern const struct rdef ebb__rdefs[NRES];

/* "pods" or "leases.coordination.k8s.io": how API messages name a resource. */
void ebb__rdef_qualified(const struct rdef *d, char *buf, size_t len);
/* "v1" or "policy/v1" */
void ebb__rdef_group_version(const struct rdef *d, char *buf, size_t len);

/* ---- serve_store.c: text buffers ----------------------------------------- */

/* A growing text; on allocation failure `oom` is set and later adds do nothing. */
struct sb {
    char *p;
    size_t n, cap;
    bool oom;
};

void ebb__sb_add(struct sb *b, const char *s, size_t n);
void ebb__sb_puts(struct sb *b, const char *s);
void ebb__sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- serve_store.c: JSON helpers ------------------------------------------ */

cJSON *ebb__json_child(cJSON *obj, const char *key);   /* obj[key], made an object if not one */
cJSON *ebb__json_meta(cJSON *obj);                      /* obj.metadata, the same way */
const char *ebb__json_str(const cJSON *obj, const char *key);        /* NULL: not a string */
const char *ebb__json_meta_str(const cJSON *obj, const char *key);
void ebb__json_set_str(cJSON *obj, const char *key, const char *value);
void ebb__json_set(cJSON *obj, const char *key, cJSON *j);         /* j owned; NULL: nothing */

/* ---- serve_store.c: objects and their versions --------------------------- */

/* One version of one object: immutable once made, shared by the store and
 * the event log. Kept as compact JSON text (what lists and watches send)
 * plus what selectors read; parsed again only to change the object. */
struct ver {
    unsigned refs;
    uint64_t rv;
    char *text;                  /* metadata.resourceVersion == rv */
    size_t len;
    char *key;                   /* "ns/name" or "name": the etcd order */
    char *ns, *name, *uid;       /* ns "" for cluster-scoped; uid "" when none */
    struct ebb_labels labels;    /* interned, for label selectors */
    char *fields[12];            /* the values of rdef.fields, for field selectors */
};

void ebb__ver_release(struct ver *v);
struct ver *ebb__ver_ref(struct ver *v);
const char *ebb__ver_text(const struct ver *v);
/* The object as a tree again (owned by the caller), or NULL. */
cJSON *ebb__ver_json(const struct ver *v);
/* A new version of `json` (borrowed: its resourceVersion set, printed,
 * indexed) at rv. NULL when out of memory. */
struct ver *ebb__ver_make_kept(const struct rdef *d, cJSON *json, uint64_t rv);
/* The same, `json` owned (freed). */
struct ver *ebb__ver_make(const struct rdef *d, cJSON *json, uint64_t rv);
/* Index of `key` in the sorted array, or where it would go (*found false). */
size_t ebb__ver_find(struct ver *const *v, size_t n, const char *key, bool *found);
/* Insert `x` at `at`, growing the array. */
int ebb__ver_insert(struct ver ***v, size_t *n, size_t *cap, size_t at, struct ver *x);

/* ---- the server ------------------------------------------------------------ */

enum { EV_ADDED, EV_MODIFIED, EV_DELETED };

struct ev {
    uint64_t rv;
    int type;
    int res;
    struct ver *obj;             /* the new state; DELETED: the last one, at the delete's rv */
    struct ver *prev;            /* the state before; NULL for ADDED */
};

struct store {
    struct ver **v;              /* sorted by key */
    size_t n, cap;
};

struct opts {
    const char *snapshot;
    char host[64];
    int port;
    double close_watches_every;  /* seconds; 0: never */
    double fail_fraction;
    uint64_t seed;
    long latency_ms;
    long expire_after;           /* events kept; -1: DEFAULT_HISTORY */
    double bookmark_every;       /* seconds */
    bool koordinator;            /* serve Koordinator's PodMigrationJobs */
    double termination_seconds;  /* a deleted pod stops within this; -1: its grace period */
    double churn_rate;           /* pod events per second; 0: none */
    bool reschedule;             /* --reschedule */
    const char *scheduler_config;    /* --scheduler-config FILE; NULL: the defaults */
    uint64_t churn_total;        /* stop after this many; 0: never */
    bool evict_in_background;    /* evictions of request-evict-only pods: KubeVirt's 429 */
    int watch_list;              /* --watch-list: WL_* */
};

/* How a watch with sendInitialEvents=true (a streaming list) is answered:
 * served (its initial events, then the initial-events-end bookmark), or
 * as a server that does not offer it: 422 (v1.25), an ERROR event (v1.35
 * on an etcd without progress requests), the initial events without the
 * bookmark, or with a bookmark that lacks the annotation. */
enum { WL_ON, WL_REFUSE, WL_ERROR, WL_NO_BOOKMARK, WL_NO_ANNOTATION };

struct watch;                    /* serve_read.c */
struct delay;                    /* serve_api.c */
struct churn_pod;                /* serve_churn.c */
struct stopping;                 /* serve_write.c */
struct resched;                  /* serve_resched.c */

struct server {
    uv_loop_t *loop;
    struct opts o;
    struct ebb_httpd *httpd;
    char addr[96];
    struct ebb_cache *cache;     /* the budgets of eviction decisions follow the store (and
                                  * with --reschedule the pods) */
    struct resched *resched;     /* --reschedule; NULL: off */
    struct store stores[NRES];
    uint64_t rv;                 /* the last one given */
    uint64_t compacted;          /* events up to this rv are gone */
    struct ev *log;
    size_t log_cap, log_head, log_n, log_keep;
    struct watch *watches;
    struct delay *delays;
    uv_timer_t bookmark_timer, close_timer;
    uv_timer_t stop_timer;       /* the next terminating pod a kubelet would finish */
    struct stopping *stops;      /* soonest first */
    size_t nstops, stops_cap;
    uv_signal_t sigint, sigterm;
    uint64_t rng;
    bool has_metrics, stopping;
    bool has_koordinator;        /* --koordinator, or the snapshot has its objects */
    size_t nrequests;
    bool holding;                /* watch events wait in each watch's buffer */
    /* --churn */
    uv_timer_t churn_timer;
    bool churning;
    uint64_t churned, churn_last;    /* events made; uv_now of the last tick */
    double churn_credit;             /* events owed, by the rate */
    char **added;                    /* keys of the pods churn added, oldest first */
    size_t added_head, nadded, added_cap;
    struct churn_pod *pool;          /* the pods churn changes, parsed once */
    size_t npool;
};

/* splitmix64 from --seed: reproducible across runs */
uint64_t ebb__serve_random(struct server *s);
double ebb__serve_random_unit(struct server *s);      /* [0, 1) */
void ebb__serve_uid(struct server *s, char *buf, size_t len);   /* a v4 UUID */
void ebb__serve_now(char *buf, size_t len);          /* RFC 3339, seconds */

/* ---- serve_store.c: the store and the event history ------------------------ */

struct ver *ebb__store_get(struct server *s, int res, const char *key);   /* borrowed */
struct ver *ebb__store_lookup(struct server *s, int res, const char *ns, const char *name);
/* Store `json` (owned) as the new state of its object: ADDED or MODIFIED.
 * *out (may be NULL) gets the version, borrowed. */
int ebb__store_put(struct server *s, int res, cJSON *json, struct ver **out);
/* ebb__store_put of a version made at s->rv + 1 (owned; NULL: out of memory).
 * EBB_ELIMIT (nothing stored): the object is over EBB__OBJECT_MAX, what etcd
 * takes in one request by default (--max-request-bytes). */
#define EBB__OBJECT_MAX ((size_t)3 << 19)   /* 1.5 MiB */
int ebb__store_put_ver(struct server *s, int res, struct ver *v, struct ver **out);
/* Remove an object: DELETED, with its last state at a new rv. *out (may be
 * NULL) gets that last version: a reference the caller releases. */
int ebb__store_delete(struct server *s, int res, const char *key, struct ver **out);
/* The objects of `res` as they were at `rv` (>= s->compacted): the current
 * ones with the logged changes after rv undone. A malloc'd array of
 * borrowed versions, sorted by key. */
struct ver **ebb__store_view_at(struct server *s, int res, uint64_t rv, size_t *n);

struct ev *ebb__events_at(struct server *s, size_t i);   /* 0: the oldest */
void ebb__events_drop_oldest(struct server *s);

/* ---- serve_store.c: selectors ---------------------------------------------- */

struct fsel {
    int idx;                     /* FIELD_NAME, FIELD_NS or an index in rdef.fields */
    char *value;
    bool neq;
};

enum { FIELD_NAME = -1, FIELD_NS = -2, FIELD_NONE = -3 };

struct filter {
    char *ns;                    /* NULL: every namespace */
    struct ebb_selector *labels; /* NULL: everything */
    struct fsel *fields;
    size_t nfields;
};

void ebb__filter_free(struct filter *f);
/* fields.ParseSelector into f: EBB_EPARSE or EBB_ESCHEMA with `msg` the
 * API server's words, EBB_ENOMEM. */
int ebb__filter_parse_fields(const struct rdef *d, const char *s, struct filter *f, char *msg,
                             size_t msglen);
bool ebb__filter_match(const struct filter *f, const struct ver *v);

/* ---- serve_api.c: answers, routes, dispatch ------------------------------------ */

struct route {
    int res;
    const char *ns, *name, *sub;   /* NULL when absent */
    bool watch_path;               /* /watch/... */
};

void ebb__reply_text(struct ebb_http_req *r, int code, const char *text);
/* A metav1.Status. `details` (owned, may be NULL). */
void ebb__reply_status(struct ebb_http_req *r, int code, const char *reason, const char *msg,
                       cJSON *details);
cJSON *ebb__reply_details(const struct rdef *d, const char *name);   /* Status.details */
void ebb__reply_not_found(struct ebb_http_req *r, const struct rdef *d, const char *name);
void ebb__reply_bad_request(struct ebb_http_req *r, const char *msg);
void ebb__reply_conflict(struct ebb_http_req *r, const struct rdef *d, const char *name,
                         const char *why);
void ebb__reply_internal(struct ebb_http_req *r, const char *why);
/* A failed ebb__store_put as the API server answers it: an object too large
 * for etcd (EBB_ELIMIT) gets etcd's words in a 500, anything else "out of
 * memory". */
void ebb__reply_store_failed(struct ebb_http_req *r, int rc);
void ebb__reply_json(struct ebb_http_req *r, int code, cJSON *j);   /* j owned */
bool ebb__truthy(const char *v);             /* a boolean query parameter: not "0", "false" */

/* The httpd handler: `ud` is the server. */
void ebb__serve_request(struct ebb_http_req *r, void *ud);

/* ---- serve_read.c: get, list, watch ---------------------------------------------- */

void ebb__serve_get(struct server *s, struct ebb_http_req *r, const struct route *rt);
void ebb__serve_list(struct server *s, struct ebb_http_req *r, const struct route *rt);
/* The label and field selectors of a request, its namespace and name. false: answered (400). */
bool ebb__request_filter(struct ebb_http_req *r, const struct route *rt, struct filter *f);
void ebb__serve_watch(struct server *s, struct ebb_http_req *r, const struct route *rt);
/* A change reaches every watch of its resource. */
void ebb__watch_notify(struct server *s, const struct ev *e);
/* A BOOKMARK to every watch that allows them. */
void ebb__watch_bookmark_all(struct server *s);
/* End every watch stream; how many there were. */
size_t ebb__watch_end_all(struct server *s);
/* Send what every watch held while s->holding. */
void ebb__watch_flush_all(struct server *s);
/* Whether a watch of `res` has more than `bytes` its client has not read. */
bool ebb__watch_lagging(struct server *s, int res, size_t bytes);

/* ---- serve_table.c: Tables for kubectl ------------------------------------------------ */

enum { INCLUDE_METADATA, INCLUDE_OBJECT, INCLUDE_NONE };

/* How a read answers. */
struct table_view {
    int table;                   /* 0: the objects; 1: a meta.k8s.io/v1 Table; 2: v1beta1 */
    int include;                 /* a row's object (?includeObject=) */
};

/* The Accept header and includeObject of a read. -1: answered (406). */
int ebb__table_negotiate(struct ebb_http_req *r, struct table_view *view);
/* An empty Table of `res` (owned by the caller); `headers` false leaves the
 * column definitions out (null), as a watch's later events do. */
cJSON *ebb__table_new(int res, const struct table_view *view, bool headers);
/* The row of the object whose JSON text is `text`, appended to `table`. */
int ebb__table_add_row(cJSON *table, int res, const struct table_view *view, const char *text,
                       size_t len);

/* ---- serve_admit.c: admission, defaults, validation, strategies ------------------------ */

/* The causes of a 422 Invalid, gathered. */
struct invalid {
    cJSON *causes;
    struct sb text;
    int n;
};

/* A cause: reason "FieldValueRequired"..., the field, the detail ("Required value"). */
void ebb__invalid_add(struct invalid *iv, const char *reason, const char *field,
                      const char *detail);
/* Answer 422 with the causes gathered (and free them); false when there are none. */
bool ebb__invalid_reply(struct ebb_http_req *r, const struct rdef *d, const char *name,
                        struct invalid *iv);
/* The JSON types of `obj`'s metadata as the API server's decoder takes
 * them: a label, annotation or name of the wrong type is refused with its
 * words (400 "... cannot be handled as a Pod: json: cannot unmarshal ...";
 * for the result of a patch, `patch`, 422 on "patch"); a null label or
 * annotation becomes "", as Go reads it. false: answered. */
bool ebb__meta_decode(struct ebb_http_req *r, const struct rdef *d, cJSON *obj, bool patch);
/* IsDNS1123Label: what a namespace's name must be. */
bool ebb__dns_label(const char *s);
/* Whether the kind has a status subresource (its updates keep the status). */
bool ebb__has_status(int res);
/* What the API server does to `obj` (a create into namespace `ns`) before
 * storing it: admission, defaults, validation (the metadata of every kind
 * as ValidateObjectMeta checks it), the status it starts with. false:
 * answered (403, 422). */
bool ebb__admit_create(struct server *s, struct ebb_http_req *r, int res, const char *ns,
                       cJSON *obj);
/* The same for an update of `old` to *obj (owned; may be replaced): its
 * metadata validated, the status kept, or with `status` (the subresource)
 * only the status taken. */
bool ebb__admit_update(struct ebb_http_req *r, int res, cJSON **obj, const cJSON *old,
                       bool status);

/* ---- serve_write.c: create, update, patch, delete ----------------------------------------- */

void ebb__serve_create(struct server *s, struct ebb_http_req *r, const struct route *rt);
/* PUT and PATCH of an object, or of its status when rt->sub is "status" */
void ebb__serve_update(struct server *s, struct ebb_http_req *r, const struct route *rt);
void ebb__serve_patch(struct server *s, struct ebb_http_req *r, const struct route *rt);
void ebb__serve_delete(struct server *s, struct ebb_http_req *r, const struct route *rt);
/* DELETE of a collection: each object its selectors match, as one DELETE would. */
void ebb__serve_delete_collection(struct server *s, struct ebb_http_req *r,
                                  const struct route *rt);
/* The request body as a JSON object of kind `d` (NULL: any); NULL when answered (400). */
cJSON *ebb__body_object(struct ebb_http_req *r, const struct rdef *d);
bool ebb__dry_run(struct ebb_http_req *r);   /* ?dryRun=All */
/* DeleteOptions.preconditions against `cur`. false: answered (409). */
bool ebb__check_preconditions(struct ebb_http_req *r, const struct rdef *d, const char *name,
                              const cJSON *opts, const struct ver *cur);
/* DeleteOptions.gracePeriodSeconds (body or query); -1: not given. */
long long ebb__grace_of(struct ebb_http_req *r, const cJSON *opts);
/* Delete `cur` as the registry does: a pod gracefully (`grace` -1: its
 * own), an object with finalizers marked only, anything else at once.
 * *out: the version to answer with (a reference the caller releases). */
int ebb__delete_object(struct server *s, int res, struct ver *cur, long long grace, bool dry,
                       struct ver **out);
/* The stop timer's callback: terminating pods whose time is up are gone. */
void ebb__on_stop_timer(uv_timer_t *t);
void ebb__stops_free(struct server *s);

/* ---- serve_evict.c: eviction ------------------------------------------------------------ */

/* POST pods/NAME/eviction */
void ebb__serve_evict(struct server *s, struct ebb_http_req *r, const struct route *rt);
/* PATCH pods/NAME: a metadata.uid in the patch is a precondition. */
void ebb__serve_patch_pod(struct server *s, struct ebb_http_req *r, const struct route *rt);

/* ---- serve_churn.c ------------------------------------------------------------------ */

/* The first pods watch starts the churn (with --churn; otherwise nothing). */
void ebb__churn_start(struct server *s);
void ebb__churn_free(struct server *s);

/* ---- serve_resched.c ------------------------------------------------------------------ */

/* --reschedule: the scheduler model over the loaded cache (and
 * --scheduler-config read); an error names the file, line and field. */
int ebb__resched_start(struct server *s, struct ebb_error *err);
void ebb__resched_free(struct server *s);   /* NULL-safe (off) */
/* The cache's pods follow a write to the pods store (nothing when off). */
void ebb__resched_follow(struct server *s, const struct ver *v, bool deleted);
/* `old_json` (borrowed), a pod just evicted: its owner recreates it and
 * the model places the replacement (a StatefulSet pod once it is gone). */
void ebb__resched_evicted(struct server *s, const cJSON *old_json);

#endif
