/* A hostile API server to `ebb run`'s client: each input is what the
 * server answers, byte for byte (status line, headers, body: anything),
 * to the requests of the watch cache of `ebb run` running in this process
 * on its own loop: engine/kube/kube_http.c (libcurl on libuv: HTTP parsing,
 * chunked bodies, Content-Length, the bounds of an answer, retries),
 * engine/kube/kube_watch.c (paged LISTs read as they arrive, watch streams,
 * bookmarks, ERROR events, relists, the queue held while a cycle runs),
 * engine/model/list_reader.c and json_arena.c (the LIST reader, the gate
 * to cJSON) and engine/model/decode_object.c (each object kept or skipped
 * alone) into the cache.
 *
 * Input: one byte of flags, then answers, each
 *   1 byte   which resource's requests it answers ((b & 0x3f) % NRES);
 *            0x80: the connection stays open after it (a stream that goes
 *            on); 0x40: it is more of the resource's last answer that
 *            stayed open, written on its connection at once (a body that
 *            goes on and on)
 *   2 bytes  its length L, big-endian
 *   1 byte   R: its bytes are written R + 1 times (an answer up to
 *            REPEAT_MAX, so an input of a few KiB can be a huge body)
 *   L bytes  what is written
 * Flags: 0x01 the informers are held (a cycle runs) until nothing more
 * comes, then released; 0x02 the metrics.k8s.io pollers run too; 0x04
 * the first sync of each resource asks for a streaming list (WATCH with
 * sendInitialEvents: its answers are its initial events, refusals, or
 * silence), else paged LISTs.
 * A resource's requests take its answers in order; one that finds none is
 * answered with an empty List (a LIST) or left open (a WATCH). The run
 * ends once every answer is out and the client has had time to read it
 * (or after RUN_MS), and everything is closed: ASan sees every byte the
 * client kept and every one it did not free. */
#include <stdio.h>

#include "fuzz.h"
#include "ebb/cache.h"
#include "ebb/kube.h"
#include "ebb/watch.h"
#include "test/kube_server.h"

/* Backoffs are scaled to nothing: a retry runs at the next turn. */
extern double ebb__informers_backoff;
extern double ebb__kube_backoff;
extern size_t ebb__informers_queue_max;
extern uint64_t ebb__informers_stream_idle_ms;
size_t ebb__informers_queued(const struct ebb_informers *s);

#define REPEAT_MAX ((size_t)4 << 20)
#define RUN_MS 500
/* It ends once nothing was written for QUIET_MS and QUIET_TURNS turns of
 * the loop (the client has read and handled what came). */
#define QUIET_MS 3
#define QUIET_TURNS 200

/* The answers of the input to the server; false when it has none. */
static bool parse(struct ks *w, const uint8_t *data, size_t size)
{
    size_t off = 1;

    while (off + 4 <= size) {
        int r = (data[off] & 0x3f) % NRES;
        size_t len = ((size_t)data[off + 1] << 8) | data[off + 2], times = (size_t)data[off + 3] + 1;

        if (len > size - off - 4)
            len = size - off - 4;
        if (len == 0)
            times = 1;
        while (times > 1 && len * times > REPEAT_MAX)
            times /= 2;
        if (!ks_add(w, r, data + off + 4, len, times, (data[off] & 0x80) != 0, (data[off] & 0x40) != 0))
            break;
        off += 4 + len;
    }
    return w->left > 0;
}

static int closed_handles;

static void closed_cb(void *ud)
{
    (void)ud;
    closed_handles++;
}

static void skipped(void *ud, const char *resource, const struct ebb_skip *why)
{
    (void)ud;
    (void)resource;
    /* what ebb run reports of it: a name, a field, a message it can print */
    if (why->reason <= 0 || why->reason >= EBB_SKIP_MAX || strlen(why->err.msg) >= sizeof(why->err.msg))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ks w;
    uv_loop_t loop;
    char server[64], buf[2048];
    struct ebb_kube_config cfg = { .server = server };
    struct ebb_kube_opts ko = { .max_retries = 2 };
    struct ebb_informers_opts io = { .page_size = 16 };
    struct ebb_kube *kube = NULL;
    struct ebb_cache *cache = NULL;
    struct ebb_informers *inf = NULL;
    struct ebb_error err;
    uint64_t t0;
    bool held;

    if (size < 1)
        return 0;
    if (uv_loop_init(&loop) != 0)
        abort();
    ks_start(&w, &loop);
    if (!parse(&w, data, size)) {
        ks_close(&w);
        uv_run(&loop, UV_RUN_DEFAULT);
        if (uv_loop_close(&loop) != 0)
            abort();
        return 0;
    }
    ebb__informers_backoff = 0;
    ebb__kube_backoff = 0;
    /* small enough that what a cycle holds goes past it */
    ebb__informers_queue_max = 16u << 10;
    io.metrics = (data[0] & 0x02) != 0;
    io.sync_mode = (data[0] & 0x04) != 0 ? EBB_SYNC_AUTO : EBB_SYNC_LIST;
    io.object_text = (data[0] & 0x08) == 0;
    ebb__informers_stream_idle_ms = 20;   /* a silent stream falls back within a run */
    held = (data[0] & 0x01) != 0;
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", w.port);
    if (ebb_kube_create(&loop, &cfg, &ko, &kube, &err) != 0 || ebb_cache_create(&cache) != 0 ||
        ebb_informers_create(&loop, kube, cache, &io, &inf) != 0)
        abort();
    ebb_informers_on_skip(inf, skipped, NULL);
    if (held)
        ebb_informers_hold(inf, true);
    ebb_informers_start(inf);
    t0 = w.wrote_ms = uv_now(&loop);
    for (;;) {
        uint64_t now;
        uv_run(&loop, UV_RUN_NOWAIT);
        now = uv_now(&loop);
        w.quiet++;
        if (now - t0 >= RUN_MS ||
            (w.left == 0 && w.quiet >= QUIET_TURNS && now - w.wrote_ms >= QUIET_MS && !held))
            break;
        if (held && w.quiet >= QUIET_TURNS && now - w.wrote_ms >= QUIET_MS) {
            /* nothing more comes while held */
            held = false;
            ebb_informers_hold(inf, false);
        }
    }
    if (held)
        ebb_informers_hold(inf, false);
    /* what /readyz and a sync timeout print of it */
    ebb_informers_not_current(inf, 0, buf, sizeof(buf));
    ebb_informers_synced(inf);
    /* nothing waits: what the queues hold is counted as it is */
    if (ebb__informers_queued(inf) != 0)
        abort();
    closed_handles = 0;
    ebb_informers_close(inf, closed_cb, NULL);
    ebb_kube_close(kube, closed_cb, NULL);
    ks_close(&w);
    while (closed_handles < 2 || w.nconns > 0)
        uv_run(&loop, UV_RUN_ONCE);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0)
        abort();
    ebb_cache_destroy(cache);
    return 0;
}
