/* The streaming list of the watch cache: a WATCH with
 * sendInitialEvents=true, resourceVersionMatch=NotOlderThan and bookmarks,
 * as client-go's WatchList asks, whose initial events are a LIST round;
 * and the fallback to paged LIST where the server refuses it. Its events
 * go through kube_watch.c's watch path (one line held at a time, the hold
 * queue, apply_event), which ends the round at the initial-events-end
 * bookmark (ebb__watch_stream_end). See include/ebb/watch.h. */
#include <stdio.h>
#include <string.h>

#include "kube/watch_int.h"

/* ---- streaming list -------------------------------------------------------- */

/* How long a streaming list may bring no object before its
 * initial-events-end bookmark (tests lower it). */
uint64_t ebb__informers_stream_idle_ms = EBB_STREAM_IDLE_MS;

bool ebb__watch_use_stream(const struct informer *i)
{
    return !i->poll && !i->paged && i->set->o.sync_mode != EBB_SYNC_LIST;
}

/* A new round: a streaming list where the server may offer it, else the
 * first page of a LIST. */
void ebb__watch_start_sync(struct informer *i)
{
    if (ebb__watch_use_stream(i))
        ebb__watch_start_stream(i);
    else
        ebb__watch_start_list(i, NULL);
}

/* What the queue holds belongs to a request that was replaced. */
static void drop_queue(struct informer *i)
{
    struct queued *q;

    while ((q = i->qhead) != NULL) {
        i->qhead = q->next;
        ebb__watch_free_queued(i, q);
    }
    i->qtail = NULL;
    i->queued = i->st.queued = 0;
}

/* metadata.annotations["k8s.io/initial-events-end"] == "true" */
bool ebb__watch_initial_events_end(const cJSON *obj)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(md, "annotations");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "k8s.io/initial-events-end");

    return cJSON_IsString(v) && strcmp(v->valuestring, "true") == 0;
}

/* The initial-events-end bookmark: the round is complete, as after a
 * LIST's last page (its resourceVersion is in i->rv already); the stream
 * goes on as the watch. */
void ebb__watch_stream_end(struct informer *i)
{
    uv_timer_stop(&i->timer);
    i->streaming = false;
    ebb__watch_drop_unseen(i);
    ebb__watch_free_seen(i);
    i->cont[0] = '\0';
    i->synced = true;
    i->refused = 0;
    i->by_stream = true;
    i->st.lists++;
    i->st.streamed++;
    i->stream_fails = 0;
    i->relisting = false;
    i->broken_since = i->reopened_from = 0;   /* the view is the server's as of now */
    i->last_error[0] = '\0';
    i->attempt = 0;
    ebb_log(EBB_LOG_DEBUG, "watch %s: listed by a streaming list as of resourceVersion %s", i->name, i->rv);
    ebb__watch_changed(i->set, i->kind, "RELIST", NULL, NULL);
    ebb__watch_first_sync(i->set);
}

/* The server does not serve the streaming list: this resource is listed
 * in pages from now on, said once (--sync-mode=watchlist: an error, the
 * stream asked again after a backoff). What the refused stream brought
 * stays until the LIST round ends and replaces it. Returns 1 (the stream
 * was replaced). */
int ebb__watch_stream_refused(struct informer *i, const char *why)
{
    char shown[600];

    ebb__watch_cancel_req(i);
    uv_timer_stop(&i->timer);
    i->streaming = false;
    ebb__watch_free_seen(i);
    ebb_decode_shown(why, shown, sizeof(shown));
    if (i->set->o.sync_mode == EBB_SYNC_WATCHLIST) {
        char msg[700];
        snprintf(msg, sizeof(msg), "streaming list refused (--sync-mode=watchlist): %s", shown);
        ebb__watch_broke(i, msg);
        i->st.resumes++;
        ebb__watch_retry_later(i);
        return 1;
    }
    i->paged = true;
    ebb_log(EBB_LOG_INFO, "watch %s: the server does not offer a streaming list (%s); paged LIST from now on",
            i->name, shown);
    ebb__watch_start_list(i, NULL);
    return 1;
}

/* No initial-events-end bookmark while nothing came for
 * ebb__informers_stream_idle_ms: a server that ignored sendInitialEvents
 * (or forgot the annotation). While a cycle holds the events, the time
 * waits. */
static void on_stream_timer(uv_timer_t *t)
{
    struct informer *i = t->data;
    uint64_t idle, limit = ebb__informers_stream_idle_ms;
    char msg[160];

    if (i->state != ST_WATCHING || !i->streaming || i->req == NULL)
        return;
    idle = ebb__watch_now_ms(i->set) - i->stream_last;
    if (i->set->hold || idle < limit) {
        uv_timer_start(&i->timer, on_stream_timer, idle < limit ? limit - idle : limit, 0);
        return;
    }
    snprintf(msg, sizeof(msg), "no initial-events-end bookmark after %.1f s without an object",
             (double)limit / 1000.0);
    ebb__watch_stream_refused(i, msg);
}

/* A WATCH with sendInitialEvents=true from resourceVersion "" (the most
 * recent, a consistent read), as client-go's WatchList asks. */
void ebb__watch_start_stream(struct informer *i)
{
    char path[768];
    struct ebb_kube_req_opts o = {
        .method = "GET", .stream = true, .on_data = ebb__watch_on_watch_data, .on_done = ebb__watch_on_watch_done,
        .on_open = ebb__watch_on_watch_open, .ud = i,
    };

    ebb__watch_cancel_req(i);
    ebb_list_reader_destroy(i->reader);
    i->reader = NULL;
    drop_queue(i);
    ebb__watch_free_seen(i);
    i->cont[0] = '\0';
    snprintf(path, sizeof(path),
             "%s?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
             "&timeoutSeconds=%d", i->path, i->set->o.watch_timeout_s);
    o.path = path;
    i->state = ST_WATCHING;
    i->streaming = true;
    i->line_len = 0;
    i->progress = false;
    i->opened = false;
    i->opened_at = i->stream_last = ebb__watch_now_ms(i->set);
    o.timeout_ms = ((long)i->set->o.watch_timeout_s + WATCH_IDLE_MARGIN_S) * 1000;
    if (ebb_kube_request(i->set->kube, &o, &i->req) != 0) {
        i->streaming = false;
        ebb__watch_broke(i, "cannot start a streaming list");
        ebb__watch_retry_later(i);
        return;
    }
    uv_timer_start(&i->timer, on_stream_timer, ebb__informers_stream_idle_ms, 0);
}

