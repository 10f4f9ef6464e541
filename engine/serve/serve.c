/* `ebb serve`: a recorded cluster served as a Kubernetes API, for kubectl,
 * client-go and ebb's own live mode (the integration tests run against it).
 *
 * The snapshot is read once, by the streaming loader: into an ebb_cache
 * (the compact structs; the PDB rules of engine/core/pdb.c read its budgets,
 * which follow every write) and, through
 * ebb_snapshot_load_each, into one store per resource, each object kept as
 * compact JSON text plus its labels and selectable fields (a 150k-pod
 * cluster fits in about 1 GB). Every stored object gets a resourceVersion from
 * one counter; every change after the load is an event in a bounded log
 * (the watch cache): watches replay it from their resourceVersion, lists
 * with a continue token or resourceVersionMatch=Exact are rebuilt from it,
 * and what fell out of it answers 410 Gone.
 *
 * Served: discovery, nodes, pods, namespaces, persistentvolumeclaims,
 * events (core v1 and events.k8s.io/v1: two stores here, one in a real
 * cluster), poddisruptionbudgets, priorityclasses, leases, NodeMetrics and
 * PodMetrics (read only), and with --koordinator Koordinator's
 * PodMigrationJobs. As the API server does where clients notice: Tables for
 * kubectl, create with admission and defaults, update, patch, the status
 * subresource, graceful deletion of pods (gone after the grace period, as a
 * kubelet finishes them), finalizers, evictions decided by
 * PodDisruptionBudgets, its status codes and messages. What the real server
 * cannot do, for tests: failing requests, latency, watches closed on a
 * timer, a short history; for benchmarks, --churn changes pods at a given
 * rate once they are watched, held back while a watcher lags.
 *
 * One loop thread: everything happens in libuv callbacks. The units are
 * listed in engine/serve/serve_int.h; this one is the command: flags, the load
 * of the snapshot, the loop and its timers. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/flags.h"
#include "ebb/serve.h"
#include "ebb/snapshot.h"
#include "serve/serve_int.h"

#define EXIT_INPUT 2
#define DEFAULT_HISTORY 10000

/* ---- loading --------------------------------------------------------------------------------- */

static int res_for_item(const cJSON *item, int kind)
{
    const char *k, *av;

    switch (kind) {
    case EBB_KIND_POD: return R_PODS;
    case EBB_KIND_NODE: return R_NODES;
    case EBB_KIND_NAMESPACE: return R_NAMESPACES;
    case EBB_KIND_PRIORITY_CLASS: return R_PRIORITY_CLASSES;
    case EBB_KIND_PVC: return R_PVCS;
    case EBB_KIND_PDB: return R_PDBS;
    case EBB_KIND_NODE_METRICS: return R_NODE_METRICS;
    case EBB_KIND_POD_METRICS: return R_POD_METRICS;
    default: break;
    }
    k = ebb__json_str(item, "kind");
    av = ebb__json_str(item, "apiVersion");
    if (k == NULL || av == NULL)
        return -1;
    if (strcmp(k, "Lease") == 0 && strcmp(av, "coordination.k8s.io/v1") == 0)
        return R_LEASES;
    if (strcmp(k, "Event") == 0 && strcmp(av, "v1") == 0)
        return R_EVENTS;
    if (strcmp(k, "Event") == 0 && strcmp(av, "events.k8s.io/v1") == 0)
        return R_EVENTS_V1;
    if (strcmp(k, "ConfigMap") == 0 && strcmp(av, "v1") == 0)
        return R_CONFIGMAPS;
    if (strcmp(k, "PodMigrationJob") == 0 && strcmp(av, "scheduling.koordinator.sh/v1alpha1") == 0)
        return R_POD_MIGRATION_JOBS;
    return -1;
}

static int on_item(const cJSON *item, int kind, void *ud)
{
    struct server *s = ud;
    int res = res_for_item(item, kind);
    struct store *st;
    struct ver *v;
    cJSON *copy;
    bool found;
    size_t i;

    if (res < 0)
        return 0;
    if ((copy = cJSON_Duplicate(item, true)) == NULL)
        return EBB_ENOMEM;
    if (ebb__rdefs[res].namespaced) {
        cJSON *meta = ebb__json_meta(copy);
        const char *ns = ebb__json_str(meta, "namespace");
        if (ns == NULL || ns[0] == '\0')
            ebb__json_set_str(meta, "namespace", "default");
    }
    if ((v = ebb__ver_make(&ebb__rdefs[res], copy, s->rv + 1)) == NULL)
        return EBB_ENOMEM;
    if (v->name[0] == '\0') {
        ebb__ver_release(v);
        return 0;
    }
    st = &s->stores[res];
    i = ebb__ver_find(st->v, st->n, v->key, &found);
    if (found) {
        /* the same object twice: the later one wins, as the cache does */
        ebb__ver_release(st->v[i]);
        st->v[i] = v;
    } else if (ebb__ver_insert(&st->v, &st->n, &st->cap, i, v) != 0) {
        ebb__ver_release(v);
        return EBB_ENOMEM;
    }
    s->rv++;
    if (res == R_NODE_METRICS || res == R_POD_METRICS)
        s->has_metrics = true;
    if (res == R_POD_MIGRATION_JOBS)
        s->has_koordinator = true;
    return 0;
}

/* ---- the command ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs("usage: ebb serve --snapshot FILE [--listen HOST:PORT] [fault flags]\n"
          "\n"
          "Serve a recorded cluster as a Kubernetes API (kubectl --server http://HOST:PORT).\n"
          "The first line on stdout is \"serving on HOST:PORT\" (port 0 picks a free port).\n"
          "\n"
          "  --snapshot FILE              a cluster recorded as `kubectl get ... -o json` (or YAML)\n"
          "  --listen HOST:PORT           default 127.0.0.1:8001\n"
          "  --bookmark-every SECONDS     BOOKMARK events to watches that allow them (default 60)\n"
          "  --expire-after N             keep the last N changes: older resourceVersions get 410\n"
          "                               (default 10000)\n"
          "  --koordinator                serve Koordinator's PodMigrationJobs\n"
          "                               (scheduling.koordinator.sh/v1alpha1), as a cluster with\n"
          "                               Koordinator installed (also when the snapshot has one)\n"
          "  --evict-in-background        answer the eviction of a pod annotated\n"
          "                               descheduler.alpha.kubernetes.io/request-evict-only as\n"
          "                               KubeVirt's interceptor does (429 \"Eviction triggered\n"
          "                               evacuation\") and mark it eviction-in-progress; the pod\n"
          "                               stays until deleted\n"
          "  --termination-seconds S      a deleted pod on a node is gone after its grace period,\n"
          "                               as its kubelet would stop it, or after S seconds if\n"
          "                               sooner (default: the grace period)\n"
          "  --reschedule                 act as a replica controller and kube-scheduler: a pod\n"
          "                               evicted through the API whose owner recreates it is\n"
          "                               replaced, and the scheduler model places the\n"
          "                               replacement (as ebb simulate --reschedule does)\n"
          "  --scheduler-config FILE      the KubeSchedulerConfiguration of that model\n"
          "faults, for tests:\n"
          "  --close-watches-every SECONDS  end every watch stream on this period\n"
          "  --watch-list MODE            a watch with sendInitialEvents=true (a streaming list):\n"
          "                               on (served, the default), refuse (422, as v1.25), error\n"
          "                               (an ERROR event, as v1.35 on an etcd without progress\n"
          "                               requests), no-bookmark (the initial events, no\n"
          "                               initial-events-end bookmark), no-annotation (a bookmark\n"
          "                               without the k8s.io/initial-events-end annotation)\n"
          "  --fail-fraction F            answer 500 to this share of requests (0 to 1)\n"
          "  --seed N                     the random source of --fail-fraction (default 1)\n"
          "  --latency-ms N               answer every request N ms late\n"
          "  -v, --verbose                log every request; -q, --quiet: errors only\n"
          "benchmarks:\n"
          "  --churn RATE                 once pods are watched, change pods at up to RATE\n"
          "                               events/s (labels, annotations, restart counts; 1 in\n"
          "                               20 an added pod, 1 in 20 one of those deleted), as\n"
          "                               fast as the pods watchers read\n"
          "  --churn-total N              stop after N events (default: never)\n",
          f);
}

static int bad_flag(const char *flag, const char *value, const char *want)
{
    fprintf(stderr, "ebb: error: %s: \"%s\" is not %s\n", flag, value, want);
    return EXIT_INPUT;
}

static int parse_listen(const char *v, struct opts *o)
{
    const char *colon = strrchr(v, ':');
    char *end;
    long port;
    size_t hn;

    if (colon == NULL)
        return bad_flag("--listen", v, "HOST:PORT");
    port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || port < 0 || port > 65535)
        return bad_flag("--listen", v, "HOST:PORT with a port from 0 to 65535");
    hn = (size_t)(colon - v);
    if (hn >= 2 && v[0] == '[' && v[hn - 1] == ']') {
        v++;
        hn -= 2;
    }
    if (hn == 0 || hn >= sizeof(o->host))
        return bad_flag("--listen", v, "HOST:PORT");
    memcpy(o->host, v, hn);
    o->host[hn] = '\0';
    o->port = (int)port;
    return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        { "snapshot", required_argument, NULL, 's' },
        { "listen", required_argument, NULL, 'l' },
        { "close-watches-every", required_argument, NULL, 'C' },
        { "watch-list", required_argument, NULL, 'W' },
        { "fail-fraction", required_argument, NULL, 'F' },
        { "seed", required_argument, NULL, 'S' },
        { "latency-ms", required_argument, NULL, 'L' },
        { "expire-after", required_argument, NULL, 'E' },
        { "bookmark-every", required_argument, NULL, 'B' },
        { "koordinator", no_argument, NULL, 'K' },
        { "termination-seconds", required_argument, NULL, 'G' },
        { "evict-in-background", no_argument, NULL, 'I' },
        { "churn", required_argument, NULL, 'R' },
        { "churn-total", required_argument, NULL, 'T' },
        { "reschedule", no_argument, NULL, 'r' },
        { "scheduler-config", required_argument, NULL, 'c' },
        { "verbose", no_argument, NULL, 'v' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c, rc;

    memset(o, 0, sizeof(*o));
    snprintf(o->host, sizeof(o->host), "127.0.0.1");
    o->port = 8001;
    o->seed = 1;
    o->expire_after = -1;
    o->bookmark_every = 60;
    o->termination_seconds = -1;
    opterr = 0;
    optind = 2;
    while ((c = getopt_long(argc, argv, ":vqh", longopts, NULL)) != -1) {
        char *end = NULL;
        double d;
        long long ll;

        switch (c) {
        case 's': o->snapshot = optarg; break;
        case 'l':
            if ((rc = parse_listen(optarg, o)) != 0)
                return rc;
            break;
        case 'C':
        case 'B':
            d = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(d > 0) || d > 86400)
                return bad_flag(c == 'C' ? "--close-watches-every" : "--bookmark-every", optarg,
                                "a number of seconds above 0");
            if (c == 'C')
                o->close_watches_every = d;
            else
                o->bookmark_every = d;
            break;
        case 'F':
            d = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(d >= 0 && d <= 1))
                return bad_flag("--fail-fraction", optarg, "a number from 0 to 1");
            o->fail_fraction = d;
            break;
        case 'S':
            ll = strtoll(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0')
                return bad_flag("--seed", optarg, "an integer");
            o->seed = (uint64_t)ll;
            break;
        case 'L':
        case 'E':
            ll = strtoll(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || ll < 0 || ll > 100000000)
                return bad_flag(c == 'L' ? "--latency-ms" : "--expire-after", optarg,
                                "a whole number from 0");
            if (c == 'L')
                o->latency_ms = (long)ll;
            else
                o->expire_after = (long)ll;
            break;
        case 'W': {
            static const char *const modes[] = { "on", "refuse", "error", "no-bookmark", "no-annotation" };
            size_t k = 0;
            while (k < EBB_ARRAY_LEN(modes) && strcmp(optarg, modes[k]) != 0)
                k++;
            if (k == EBB_ARRAY_LEN(modes))
                return bad_flag("--watch-list", optarg, "on, refuse, error, no-bookmark or no-annotation");
            o->watch_list = (int)k;
            break;
        }
        case 'K': o->koordinator = true; break;
        case 'I': o->evict_in_background = true; break;
        case 'r': o->reschedule = true; break;
        case 'c': o->scheduler_config = optarg; break;
        case 'G':
            d = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(d >= 0) || d > 86400)
                return bad_flag("--termination-seconds", optarg, "a number of seconds from 0");
            o->termination_seconds = d;
            break;
        case 'R':
            d = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(d > 0) || d > 10000000)
                return bad_flag("--churn", optarg, "a number of events per second above 0");
            o->churn_rate = d;
            break;
        case 'T':
            ll = strtoll(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || ll < 1)
                return bad_flag("--churn-total", optarg, "a whole number above 0");
            o->churn_total = (uint64_t)ll;
            break;
        case 'v': ebb_log_level = EBB_LOG_DEBUG; break;
        case 'q': ebb_log_level = EBB_LOG_ERROR; break;
        case 'h': usage(stdout); exit(0);
        case ':':
        default:
            ebb_flag_getopt_error(c, argv, usage);
            return EXIT_INPUT;
        }
    }
    if (!ebb_flag_no_arguments(argc, argv))
        return EXIT_INPUT;
    if (o->snapshot == NULL) {
        fprintf(stderr, "ebb: error: serve needs --snapshot\n");
        return EXIT_INPUT;
    }
    if (o->scheduler_config != NULL && !o->reschedule) {
        fprintf(stderr, "ebb: error: --scheduler-config needs --reschedule\n");
        return EXIT_INPUT;
    }
    if (o->churn_total > 0 && o->churn_rate <= 0) {
        fprintf(stderr, "ebb: error: --churn-total needs --churn\n");
        return EXIT_INPUT;
    }
    return 0;
}

static void on_bookmark_timer(uv_timer_t *t)
{
    ebb__watch_bookmark_all(t->data);
}

static void on_close_timer(uv_timer_t *t)
{
    size_t n = ebb__watch_end_all(t->data);

    if (n > 0)
        ebb_log(EBB_LOG_INFO, "closed %zu watches (--close-watches-every)", n);
}

static void stop(struct server *s)
{
    if (s->stopping)
        return;
    s->stopping = true;
    uv_close((uv_handle_t *)&s->sigint, NULL);
    uv_close((uv_handle_t *)&s->sigterm, NULL);
    uv_close((uv_handle_t *)&s->bookmark_timer, NULL);
    uv_close((uv_handle_t *)&s->close_timer, NULL);
    uv_close((uv_handle_t *)&s->churn_timer, NULL);
    uv_close((uv_handle_t *)&s->stop_timer, NULL);
    /* ends every watch and delayed request through their gone callbacks */
    ebb_httpd_close(s->httpd, NULL, NULL);
    s->httpd = NULL;
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct server *s = h->data;

    ebb_log(EBB_LOG_INFO, "signal %d: stopping", signum);
    stop(s);
}

static void server_free(struct server *s)
{
    for (int i = 0; i < NRES; i++) {
        for (size_t k = 0; k < s->stores[i].n; k++)
            ebb__ver_release(s->stores[i].v[k]);
        free(s->stores[i].v);
    }
    while (s->log_n > 0)
        ebb__events_drop_oldest(s);
    free(s->log);
    ebb__churn_free(s);
    ebb__stops_free(s);
    ebb__resched_free(s);
    ebb_cache_destroy(s->cache);
}

static int load(struct server *s, struct ebb_error *err)
{
    struct ebb_snapshot_stats st;
    int rc;

    if ((rc = ebb_cache_create(&s->cache)) != 0)
        return ebb_error_set(err, rc, NULL, 0, NULL, "cannot make the cache: %s",
                             ebb_strerror(rc));
    if ((rc = ebb_snapshot_load_each(s->cache, s->o.snapshot, on_item, s, &st, err)) != 0)
        return rc;
    s->compacted = s->rv;
    if (s->o.reschedule && (rc = ebb__resched_start(s, err)) != 0)
        return rc;
    ebb_log(EBB_LOG_INFO,
            "%s: %zu nodes, %zu pods, %zu PDBs, %zu namespaces, %zu leases, resourceVersion %" PRIu64,
            s->o.snapshot, s->stores[R_NODES].n, s->stores[R_PODS].n, s->stores[R_PDBS].n,
            s->stores[R_NAMESPACES].n, s->stores[R_LEASES].n, s->rv);
    return 0;
}

int ebb_serve_main(int argc, char **argv)
{
    struct server s;
    struct ebb_error err = { 0 };
    struct ebb_httpd_opts ho = { 0 };
    uv_loop_t loop;
    char buf[1200];
    int rc, status = 0;

    memset(&s, 0, sizeof(s));
    if ((rc = parse_opts(argc, argv, &s.o)) != 0)
        return rc;
    signal(SIGPIPE, SIG_IGN);
    s.rng = s.o.seed;
    s.has_koordinator = s.o.koordinator;
    s.log_keep = s.o.expire_after >= 0 ? (size_t)s.o.expire_after : DEFAULT_HISTORY;
    s.log_cap = s.log_keep + 1;
    if ((s.log = calloc(s.log_cap, sizeof(*s.log))) == NULL) {
        fprintf(stderr, "ebb: error: out of memory\n");
        return 1;
    }
    if (load(&s, &err) != 0) {
        ebb_error_format(&err, buf, sizeof(buf));
        fprintf(stderr, "ebb: error: %s\n", buf);
        server_free(&s);
        return EXIT_INPUT;
    }
    if (uv_loop_init(&loop) != 0) {
        server_free(&s);
        return 1;
    }
    s.loop = &loop;
    ho.host = s.o.host;
    ho.port = s.o.port;
    ho.handler = ebb__serve_request;
    ho.ud = &s;
    ho.idle_timeout_ms = 600000;
    ho.max_body = (size_t)3 << 20;     /* the API server's limit on a request body */
    ho.max_total_queued = (size_t)128 << 20;
    if (ebb_httpd_create(&loop, &ho, &s.httpd, &err) != 0) {
        fprintf(stderr, "ebb: error: %s\n", err.msg);
        uv_run(&loop, UV_RUN_DEFAULT);   /* let the half-made server close */
        uv_loop_close(&loop);
        server_free(&s);
        return 1;
    }
    if (strchr(s.o.host, ':') != NULL)
        snprintf(s.addr, sizeof(s.addr), "[%s]:%d", s.o.host, ebb_httpd_port(s.httpd));
    else
        snprintf(s.addr, sizeof(s.addr), "%s:%d", s.o.host, ebb_httpd_port(s.httpd));
    uv_signal_init(&loop, &s.sigint);
    uv_signal_init(&loop, &s.sigterm);
    s.sigint.data = s.sigterm.data = &s;
    uv_signal_start(&s.sigint, on_signal, SIGINT);
    uv_signal_start(&s.sigterm, on_signal, SIGTERM);
    uv_timer_init(&loop, &s.bookmark_timer);
    uv_timer_init(&loop, &s.close_timer);
    uv_timer_init(&loop, &s.churn_timer);
    uv_timer_init(&loop, &s.stop_timer);
    s.bookmark_timer.data = s.close_timer.data = s.churn_timer.data = s.stop_timer.data = &s;
    {
        uint64_t every = (uint64_t)(s.o.bookmark_every * 1000.0);
        uv_timer_start(&s.bookmark_timer, on_bookmark_timer, every ? every : 1, every ? every : 1);
    }
    if (s.o.close_watches_every > 0) {
        uint64_t every = (uint64_t)(s.o.close_watches_every * 1000.0);
        uv_timer_start(&s.close_timer, on_close_timer, every ? every : 1, every ? every : 1);
    }
    printf("serving on %s\n", s.addr);
    fflush(stdout);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop) != 0) {
        ebb_log(EBB_LOG_ERROR, "serve: handles left open at exit");
        status = 1;
    }
    ebb_log(EBB_LOG_INFO, "served %zu requests", s.nrequests);
    server_free(&s);
    return status;
}
