/* kube/watch_int.h: the informers' state, shared by kube_watch.c (LIST
 * pages, the watch, the hold queue) and kube_watchlist.c (the streaming
 * list), for them alone. See include/ebb/watch.h. Loop thread only. */
#ifndef EBB_KUBE_WATCH_INT_H
#define EBB_KUBE_WATCH_INT_H

#include <cjson/cJSON.h>

#include "ebb/snapshot.h"
#include "ebb/watch.h"
#include "base/map.h"
#include "kube/spill.h"

enum { ST_IDLE, ST_LISTING, ST_WATCHING, ST_RETRY, ST_CLOSED };

/* A LIST page is answered within the API server's own request timeout
 * (--request-timeout, 60 s). */
#define LIST_TIMEOUT_MS 60000
/* A watch event is one object plus {"type":...,"object":...}. */
#define EVENT_MAX (EBB_OBJECT_MAX + ((size_t)64 << 10))
/* A watch that ends (200) sooner than this without having brought
 * anything is reopened with backoff, not at once. */
#define WATCH_QUICK_MS 10000
#define WATCH_IDLE_MARGIN_S 30        /* past the server's timeoutSeconds */
/* Streaming lists in a row that may break (a 5xx, a cut) before the
 * resource is listed in pages instead (--sync-mode=auto). */
#define STREAM_FAILS_MAX 3

struct informers_s;

enum { Q_ITEM, Q_PAGE_END, Q_EVENT };

struct queued {
    struct queued *next;
    int type;                     /* Q_* */
    bool big;                     /* Q_ITEM: larger than EBB_OBJECT_MAX, not kept */
    size_t len;
    char data[];                  /* Q_PAGE_END: resourceVersion, NUL, continue, NUL */
};

struct informer {
    struct ebb_informers *set;
    const char *name;             /* "pods" */
    const char *path;             /* "/api/v1/pods" */
    int kind;
    bool poll;                    /* metrics: LIST every interval, no watch */
    int state;
    char rv[128];
    bool synced;                  /* listed at least once */
    bool relisting;               /* a LIST to replace what is cached */
    struct ebb_map seen;          /* (ns, name) seen by the LIST in progress */
    uint64_t broken_since;        /* ms; 0: healthy */
    uint64_t reopened_from;       /* broken_since before the watch reopened, until it
                                   * proves itself (an event, a bookmark): a failure
                                   * right after the reopening counts from then */
    char last_error[1024];        /* what broke it last (sync timeouts name it): a
                                   * 403's message whole, with verb and resource */
    int refused;                  /* 401/403 to its last LIST while never synced, else 0 */
    bool streaming;               /* the watch in progress is a streaming list whose
                                   * initial-events-end bookmark is not in yet: a round */
    bool paged;                   /* the server refused the streaming list: paged LIST
                                   * from now on (said once) */
    bool by_stream;               /* the last round completed was a streaming list */
    uint64_t stream_last;         /* ms, the last object event of that stream */
    int stream_fails;             /* streaming lists in a row that broke before their end */
    struct ebb_kube_req *req;
    /* the LIST in progress */
    struct ebb_list_reader *reader;
    char cont[4096];              /* the continue token of the page asked for */
    int limit;                    /* items asked for per page (halved when a page is too large) */
    size_t round_pages;           /* pages in this LIST round (EBB_LIST_OBJECTS_MAX) */
    /* the watch in progress */
    char *line;                   /* an event line split across chunks */
    size_t line_len, line_cap;
    bool line_over;               /* the event went past EVENT_MAX */
    uint64_t opened_at;           /* ms, when the watch was asked for */
    bool progress;                /* the watch brought an event or a bookmark */
    bool opened;                  /* the server accepted the watch (2xx, headers in) */
    int bad;                      /* answers in a row that were not what the API promises */
    uv_timer_t timer;             /* retries and polls */
    int attempt;
    struct queued *qhead, *qtail;
    size_t queued, queued_bytes;
    bool overflow;                /* the queue went past its bound: relist once released */
    struct ebb_informer_stats st;
};


struct ebb_informers {
    uv_loop_t *loop;
    struct ebb_kube *kube;
    struct ebb_cache *cache;
    struct ebb_informers_opts o;
    struct ebb__spill spill;      /* bytes of cached pods and nodes, for pod.object */
    struct ebb_json_arena *arena; /* watch events and LIST items are parsed here */
    bool hold;
    bool started;
    uint64_t started_at;          /* uv_hrtime() of ebb_informers_start */
    bool first_synced;            /* every resource listed once: indexes sorted */
    size_t queued_bytes;          /* of every informer's queue (EBB_HOLD_QUEUE_MAX) */
    size_t n;
    struct informer inf[10];
    ebb_informer_change_fn change;
    void *change_ud;
    ebb_informer_skip_fn skip;
    void *skip_ud;
    int closing;                  /* timers still to close */
    void (*closed_cb)(void *);
    void *closed_ud;
};

static inline uint64_t ebb__watch_now_ms(struct ebb_informers *s)
{
    return uv_now(s->loop);
}

/* kube_watch.c */
void ebb__watch_changed(struct ebb_informers *s, int kind, const char *type, ebb_str ns, ebb_str name);
void ebb__watch_cancel_req(struct informer *i);
void ebb__watch_retry_later(struct informer *i);
void ebb__watch_broke(struct informer *i, const char *why);
void ebb__watch_free_seen(struct informer *i);
void ebb__watch_drop_unseen(struct informer *i);
void ebb__watch_first_sync(struct ebb_informers *s);
void ebb__watch_start_list(struct informer *i, const char *cont);
void ebb__watch_free_queued(struct informer *i, struct queued *q);
void ebb__watch_on_watch_data(struct ebb_kube_req *req, const char *data, size_t len, void *ud);
void ebb__watch_on_watch_done(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud);
void ebb__watch_on_watch_open(struct ebb_kube_req *req, void *ud);

/* kube_watchlist.c: the streaming list */
bool ebb__watch_use_stream(const struct informer *i);
void ebb__watch_start_sync(struct informer *i);
void ebb__watch_start_stream(struct informer *i);
bool ebb__watch_initial_events_end(const cJSON *obj);
void ebb__watch_stream_end(struct informer *i);
int ebb__watch_stream_refused(struct informer *i, const char *why);

#endif
