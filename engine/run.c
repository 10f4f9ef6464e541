/* `ebb run`: the descheduler against a live cluster.
 *
 * One libuv loop drives everything: the kube client, the watch cache, leader
 * election, the HTTP server (/metrics, /healthz, /readyz), the cycle timer
 * and signals. Lua runs only from timer callbacks (the cycle), never from an
 * I/O callback: an eviction's answer arrives in an I/O callback, records the
 * outcome and schedules the cycle's resumption on a zero timer.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "ebb.h"
#include "ebb/httpd.h"
#include "ebb/kube.h"
#include "ebb/leader.h"
#include "ebb/metrics.h"
#include "ebb/run.h"
#include "ebb/watch.h"

#define EXIT_INPUT 2

struct run_opts {
    const char *policy;
    const char *dirs[64];
    int ndirs;
    const char *kubeconfig;
    const char *context;
    double interval_s;
    bool once;
    bool dry_run;
    bool leader_elect;
    struct ebb_leader_opts lo;
    double qps;
    int burst;
    const char *bind;
    int port;
    double max_stale_s;
    int page_size;
    int64_t now;                  /* --now: a fixed clock (tests, replays) */
};

struct runner {
    struct run_opts o;
    uv_loop_t *loop;
    struct ebb_kube_config *kc;
    struct ebb_kube *kube;
    struct ebb_engine *engine;
    struct ebb_cache *cache;      /* owned by the engine */
    struct ebb_informers *inf;
    struct ebb_leader *leader;
    struct ebb_httpd *httpd;
    struct ebb_metrics *metrics;
    uv_timer_t cycle_timer;       /* next cycle */
    uv_timer_t resume_timer;      /* resume a waiting cycle outside I/O callbacks */
    uv_timer_t stats_timer;
    uv_signal_t sigterm, sigint;
    bool in_cycle;
    uint64_t cycle_t0;
    int cycles_done;
    bool stopping;
    int exit_code;
    int pending_close;
    bool announced_wait;
};

static struct runner *the_runner;

/* ---- flags ------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fputs("usage: ebb run --policy FILE [--policy-dir DIR]... [--kubeconfig FILE] [--context NAME]\n"
          "               [--interval 5m | --once] [--dry-run] [--leader-elect ...]\n"
          "               [--qps 50] [--burst 100] [--bind-address 0.0.0.0] [--port 10258]\n"
          "               [--max-stale 30s]\n"
          "\n"
          "  --interval D          time between cycles (Go duration); 0 runs one cycle (default 5m)\n"
          "  --once                one cycle, then exit 0 (a Job or CronJob)\n"
          "  --dry-run             decide and report, never evict\n"
          "  --leader-elect        only the holder of a coordination.k8s.io Lease evicts;\n"
          "    --leader-elect-lease-duration D (137s) --leader-elect-renew-deadline D (107s)\n"
          "    --leader-elect-retry-period D (26s) --leader-elect-resource-name N (descheduler)\n"
          "    --leader-elect-resource-namespace NS (kube-system)\n"
          "  --port N              /metrics, /healthz, /readyz (0 disables)\n"
          "  --max-stale D         skip cycles while a watch has been broken longer (30s)\n"
          "  --now TIME            a fixed clock for pod ages (tests, replays)\n"
          "Upstream names are accepted too: --policy-config-file, --descheduling-interval,\n"
          "--client-connection-kubeconfig, --client-connection-qps, --client-connection-burst.\n",
          f);
}

static int duration_s(const char *flag, const char *v, double *out)
{
    int64_t ns;
    if (ebb_duration_parse(v, &ns) != 0 || ns < 0) {
        fprintf(stderr, "ebb: error: %s: \"%s\" is not a duration (e.g. 5m, 90s, 1h30m)\n", flag, v);
        return EXIT_INPUT;
    }
    *out = (double)ns / 1e9;
    return 0;
}

static int parse(int argc, char **argv, struct run_opts *o)
{
    enum {
        F_POLICY = 1000, F_DIR, F_KUBECONFIG, F_CONTEXT, F_INTERVAL, F_ONCE, F_DRY, F_LE, F_LE_DUR,
        F_LE_RENEW, F_LE_RETRY, F_LE_NAME, F_LE_NS, F_LE_LOCK, F_QPS, F_BURST, F_BIND, F_PORT,
        F_STALE, F_PAGE, F_NOW,
    };
    static const struct option longopts[] = {
        { "policy", required_argument, NULL, F_POLICY },
        { "policy-config-file", required_argument, NULL, F_POLICY },
        { "policy-dir", required_argument, NULL, F_DIR },
        { "kubeconfig", required_argument, NULL, F_KUBECONFIG },
        { "client-connection-kubeconfig", required_argument, NULL, F_KUBECONFIG },
        { "context", required_argument, NULL, F_CONTEXT },
        { "interval", required_argument, NULL, F_INTERVAL },
        { "descheduling-interval", required_argument, NULL, F_INTERVAL },
        { "once", no_argument, NULL, F_ONCE },
        { "dry-run", no_argument, NULL, F_DRY },
        { "leader-elect", optional_argument, NULL, F_LE },
        { "leader-elect-lease-duration", required_argument, NULL, F_LE_DUR },
        { "leader-elect-renew-deadline", required_argument, NULL, F_LE_RENEW },
        { "leader-elect-retry-period", required_argument, NULL, F_LE_RETRY },
        { "leader-elect-resource-name", required_argument, NULL, F_LE_NAME },
        { "leader-elect-resource-namespace", required_argument, NULL, F_LE_NS },
        { "leader-elect-resource-lock", required_argument, NULL, F_LE_LOCK },
        { "qps", required_argument, NULL, F_QPS },
        { "client-connection-qps", required_argument, NULL, F_QPS },
        { "burst", required_argument, NULL, F_BURST },
        { "client-connection-burst", required_argument, NULL, F_BURST },
        { "bind-address", required_argument, NULL, F_BIND },
        { "port", required_argument, NULL, F_PORT },
        { "secure-port", required_argument, NULL, F_PORT },
        { "max-stale", required_argument, NULL, F_STALE },
        { "page-size", required_argument, NULL, F_PAGE },
        { "now", required_argument, NULL, F_NOW },
        { "verbose", no_argument, NULL, 'v' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c, rc;
    char *end;

    memset(o, 0, sizeof(*o));
    o->now = EBB_TIME_NONE;
    o->interval_s = 300;
    o->qps = 50;
    o->burst = 100;
    o->bind = "0.0.0.0";
    o->port = 10258;
    o->max_stale_s = 30;
    opterr = 0;
    optind = 2;
    while ((c = getopt_long(argc, argv, ":vqh", longopts, NULL)) != -1) {
        switch (c) {
        case F_POLICY: o->policy = optarg; break;
        case F_DIR:
            if (o->ndirs == (int)EBB_ARRAY_LEN(o->dirs)) {
                fprintf(stderr, "ebb: error: --policy-dir: too many directories\n");
                return EXIT_INPUT;
            }
            o->dirs[o->ndirs++] = optarg;
            break;
        case F_KUBECONFIG: o->kubeconfig = optarg; break;
        case F_CONTEXT: o->context = optarg; break;
        case F_INTERVAL:
            if ((rc = duration_s("--interval", optarg, &o->interval_s)) != 0)
                return rc;
            break;
        case F_ONCE: o->once = true; break;
        case F_DRY: o->dry_run = true; break;
        case F_LE: o->leader_elect = optarg == NULL || strcmp(optarg, "true") == 0; break;
        case F_LE_DUR:
            if ((rc = duration_s("--leader-elect-lease-duration", optarg, &o->lo.lease_s)) != 0)
                return rc;
            break;
        case F_LE_RENEW:
            if ((rc = duration_s("--leader-elect-renew-deadline", optarg, &o->lo.renew_deadline_s)) != 0)
                return rc;
            break;
        case F_LE_RETRY:
            if ((rc = duration_s("--leader-elect-retry-period", optarg, &o->lo.retry_s)) != 0)
                return rc;
            break;
        case F_LE_NAME: o->lo.name = optarg; break;
        case F_LE_NS: o->lo.ns = optarg; break;
        case F_LE_LOCK:
            if (strcmp(optarg, "leases") != 0) {
                fprintf(stderr, "ebb: error: --leader-elect-resource-lock: only \"leases\" is supported\n");
                return EXIT_INPUT;
            }
            break;
        case F_QPS:
            o->qps = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || o->qps <= 0) {
                fprintf(stderr, "ebb: error: --qps: \"%s\" is not a positive number\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case F_BURST:
            o->burst = (int)strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || o->burst < 1) {
                fprintf(stderr, "ebb: error: --burst: \"%s\" is not a positive integer\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case F_BIND: o->bind = optarg; break;
        case F_PORT:
            o->port = (int)strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || o->port < 0 || o->port > 65535) {
                fprintf(stderr, "ebb: error: --port: \"%s\" is not a port (0-65535)\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case F_STALE:
            if ((rc = duration_s("--max-stale", optarg, &o->max_stale_s)) != 0)
                return rc;
            break;
        case F_PAGE:
            o->page_size = (int)strtol(optarg, &end, 10);
            break;
        case F_NOW:
            if (ebb_time_parse(optarg, &o->now) != 0) {
                fprintf(stderr, "ebb: error: --now: \"%s\" is not an RFC 3339 time\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case 'v': ebb_log_level = EBB_LOG_DEBUG; break;
        case 'q': ebb_log_level = EBB_LOG_ERROR; break;
        case 'h': usage(stdout); exit(0);
        case ':':
            fprintf(stderr, "ebb: error: %s needs a value\n", argv[optind - 1]);
            return EXIT_INPUT;
        default:
            fprintf(stderr, "ebb: error: unknown flag %s\n", argv[optind - 1]);
            usage(stderr);
            return EXIT_INPUT;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ebb: error: unexpected argument \"%s\"\n", argv[optind]);
        return EXIT_INPUT;
    }
    if (o->policy == NULL) {
        fprintf(stderr, "ebb: error: run needs --policy\n");
        return EXIT_INPUT;
    }
    if (o->interval_s == 0)
        o->once = true;
    if (o->leader_elect && o->once && !o->dry_run) {
        fprintf(stderr, "ebb: error: --leader-elect needs an interval: a one-shot run "
                        "(--once or --interval 0) has nothing to hand over\n");
        return EXIT_INPUT;
    }
    if (o->leader_elect && o->dry_run) {
        ebb_log(EBB_LOG_WARN, "--dry-run never evicts: leader election is skipped");
        o->leader_elect = false;
    }
    return 0;
}

/* ---- evictions through the API ------------------------------------------------ */

static void micro_time(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    size_t n;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%06dZ", (int)(ts.tv_nsec / 1000) % 1000000);
}

static void on_event_done(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    (void)req;
    (void)body;
    (void)len;
    (void)ud;
    if (status != 201 && status != 200)
        ebb_log(EBB_LOG_DEBUG, "event not recorded: %d", status);
}

/* An events.k8s.io/v1 Event on the pod: Normal "Descheduled" by the plugin,
 * or a Warning when the eviction failed (evictionFailureEventNotification). */
static void emit_event(struct runner *r, const struct ebb_eviction *ev, bool ok, const char *error)
{
    char now[64], path[512], note[1024];
    cJSON *o, *meta, *reg;
    char *body;
    struct ebb_kube_req_opts ro = { .method = "POST", .write = true, .on_done = on_event_done };

    micro_time(now, sizeof(now));
    if (ok)
        snprintf(note, sizeof(note), "pod eviction from %s node by ebb", ev->node ? ev->node : "");
    else
        snprintf(note, sizeof(note), "pod eviction from %s node by ebb failed: %s", ev->node ? ev->node : "",
                 error ? error : "");
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "events.k8s.io/v1");
    cJSON_AddStringToObject(o, "kind", "Event");
    meta = cJSON_AddObjectToObject(o, "metadata");
    snprintf(path, sizeof(path), "%s.", ev->name);
    cJSON_AddStringToObject(meta, "generateName", path);
    cJSON_AddStringToObject(meta, "namespace", ev->ns);
    cJSON_AddStringToObject(o, "eventTime", now);
    cJSON_AddStringToObject(o, "reportingController", "ebb");
    cJSON_AddStringToObject(o, "reportingInstance", r->leader ? ebb_leader_identity(r->leader) : "ebb");
    cJSON_AddStringToObject(o, "action", "Descheduled");
    cJSON_AddStringToObject(o, "reason", ok ? (ev->plugin ? ev->plugin : "NotSet") : "EvictionFailed");
    cJSON_AddStringToObject(o, "type", ok ? "Normal" : "Warning");
    cJSON_AddStringToObject(o, "note", note);
    reg = cJSON_AddObjectToObject(o, "regarding");
    cJSON_AddStringToObject(reg, "apiVersion", "v1");
    cJSON_AddStringToObject(reg, "kind", "Pod");
    cJSON_AddStringToObject(reg, "namespace", ev->ns);
    cJSON_AddStringToObject(reg, "name", ev->name);
    if (ev->uid)
        cJSON_AddStringToObject(reg, "uid", ev->uid);
    body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (body == NULL)
        return;
    snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events", ev->ns);
    ro.path = path;
    ro.body = body;
    ro.body_len = strlen(body);
    ebb_kube_request(r->kube, &ro, NULL);
    free(body);
}

/* "message" of a Status answer, else the body itself (shortened). */
static void status_message(const char *body, size_t len, char *out, size_t outlen)
{
    cJSON *j = cJSON_ParseWithLength(body, len);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "details");
    const cJSON *causes = cJSON_GetObjectItemCaseSensitive(d, "causes"), *c;

    if (cJSON_IsString(m)) {
        size_t n = (size_t)snprintf(out, outlen, "%s", m->valuestring);
        cJSON_ArrayForEach(c, causes) {
            const cJSON *cm = cJSON_GetObjectItemCaseSensitive(c, "message");
            if (cJSON_IsString(cm) && n < outlen)
                n += (size_t)snprintf(out + n, outlen - n, " %s", cm->valuestring);
        }
    } else {
        snprintf(out, outlen, "%.*s", (int)(len < 200 ? len : 200), body ? body : "");
    }
    cJSON_Delete(j);
}

static void schedule_resume(struct runner *r);

static void on_evicted(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    struct ebb_eviction *ev = ud;
    struct runner *r = the_runner;
    char msg[768];
    int why;
    bool notify = r->engine && ebb_engine_policy(r->engine) &&
                  ebb_engine_policy(r->engine)->eviction_failure_events;
    (void)req;

    /* the API server answers some refusals with 201 and a Status body of
     * "Failure" (a pod with more than one PodDisruptionBudget: code 500) */
    if ((status == 200 || status == 201) && body != NULL) {
        cJSON *j = cJSON_ParseWithLength(body, len);
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "code");
        if (cJSON_IsString(st) && strcmp(st->valuestring, "Failure") == 0)
            status = cJSON_IsNumber(code) && code->valueint >= 400 ? code->valueint : 500;
        cJSON_Delete(j);
    }
    if (status == 200 || status == 201) {
        why = EBB_WHY_OK;
        msg[0] = '\0';
        ebb_log(EBB_LOG_INFO, "evicted pod %s/%s from %s (%s)", ev->ns, ev->name, ev->node ? ev->node : "-",
                ev->plugin);
        emit_event(r, ev, true, NULL);
    } else {
        why = status == 429 ? EBB_WHY_PDB : status == 404 ? EBB_WHY_NOT_FOUND : EBB_WHY_API_ERROR;
        if (status < 0)
            snprintf(msg, sizeof(msg), "%s", body ? body : ebb_strerror(status));
        else
            status_message(body, len, msg, sizeof(msg));
        ebb_log(EBB_LOG_WARN, "error evicting pod %s/%s (%s): %d %s", ev->ns, ev->name, ev->plugin, status, msg);
        if (notify && why != EBB_WHY_NOT_FOUND)
            emit_event(r, ev, false, msg);
    }
    ebb_engine_eviction_done(r->engine, ev, why, msg);
    schedule_resume(r);
}

static int start_eviction(void *ud, struct ebb_eviction *ev)
{
    struct runner *r = ud;
    char path[600], reason[512];
    cJSON *o, *meta, *ann, *del;
    char *body;
    struct ebb_kube_req_opts ro = { .method = "POST", .write = true, .on_done = on_evicted, .ud = ev };
    int rc;

    snprintf(reason, sizeof(reason), "triggered by %s/%s%s%s", ev->profile, ev->plugin,
             ev->reason ? ": " : "", ev->reason ? ev->reason : "");
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "policy/v1");
    cJSON_AddStringToObject(o, "kind", "Eviction");
    meta = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(meta, "name", ev->name);
    cJSON_AddStringToObject(meta, "namespace", ev->ns);
    ann = cJSON_AddObjectToObject(meta, "annotations");
    cJSON_AddStringToObject(ann, "reason", reason);
    cJSON_AddStringToObject(ann, "requested-by", "ebb");
    if (ev->grace_period >= 0) {
        del = cJSON_AddObjectToObject(o, "deleteOptions");
        cJSON_AddNumberToObject(del, "gracePeriodSeconds", (double)ev->grace_period);
    }
    body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (body == NULL)
        return EBB_WHY_API_ERROR;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/eviction", ev->ns, ev->name);
    ro.path = path;
    ro.body = body;
    ro.body_len = strlen(body);
    rc = ebb_kube_request(r->kube, &ro, NULL);
    free(body);
    return rc == 0 ? 0 : EBB_WHY_API_ERROR;
}

/* ---- metrics -------------------------------------------------------------------- */

static const char *result_of(const char *why)
{
    if (strcmp(why, "node-limit") == 0)
        return "maximum number of evicted pods per node reached";
    if (strcmp(why, "namespace-limit") == 0)
        return "maximum number of evicted pods per namespace reached";
    if (strcmp(why, "total-limit") == 0)
        return "maximum number of evicted pods per a descheduling cycle reached";
    return "error";
}

/* What the cycle did goes to the metrics and the log; the plan is then
 * cleared (a long-running process keeps no history). */
static void account_cycle(struct runner *r, double seconds)
{
    struct ebb_plan *p = ebb_engine_plan(r->engine);
    struct ebb_metric *ev_total = ebb_metrics_find(r->metrics, "descheduler_pods_evicted_total");
    struct ebb_metric *ev_old = ebb_metrics_find(r->metrics, "descheduler_pods_evicted");
    struct ebb_metric *errs = ebb_metrics_find(r->metrics, "ebb_script_errors_total");
    struct ebb_plugin_time t[64];
    size_t n = ebb_engine_plugin_times(r->engine, t, 64);

    for (size_t i = 0; i < p->nevictions; i++) {
        const struct ebb_plan_eviction *e = &p->evictions[i];
        char ns[256];
        const char *slash = strchr(e->pod, '/');
        snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - e->pod) : 0, e->pod);
        const char *v[] = { "success", e->plugin, e->profile, ns, e->node };
        ebb_metric_add(ev_total, v, 1);
        ebb_metric_add(ev_old, v, 1);
        if (r->o.dry_run)
            ebb_log(EBB_LOG_INFO, "evicted pod %s from %s (%s, dry run)", e->pod, e->node ? e->node : "-", e->plugin);
    }
    for (size_t i = 0; i < p->nrefusals; i++) {
        const struct ebb_plan_refusal *f = &p->refusals[i];
        char ns[256];
        const char *slash = strchr(f->pod, '/');
        if (strcmp(f->why, "filtered") == 0 || strcmp(f->why, "not-found") == 0)
            continue;
        snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - f->pod) : 0, f->pod);
        const char *v[] = { result_of(f->why), f->plugin, f->profile, ns, f->node };
        ebb_metric_add(ev_total, v, 1);
        ebb_metric_add(ev_old, v, 1);
    }
    for (size_t i = 0; i < p->nerrors; i++) {
        const char *v[] = { p->errors[i].plugin, p->errors[i].profile };
        ebb_metric_add(errs, v, 1);
    }
    for (size_t i = 0; i < n && i < 64; i++) {
        const char *v[] = { t[i].plugin, t[i].profile };
        ebb_metric_observe(ebb_metrics_find(r->metrics, "descheduler_strategy_duration_seconds"), v,
                           (double)t[i].last_ns / 1e9);
        ebb_metric_observe(ebb_metrics_find(r->metrics, "descheduler_descheduler_strategy_duration_seconds"),
                           v, (double)t[i].last_ns / 1e9);
    }
    ebb_metric_observe(ebb_metrics_find(r->metrics, "descheduler_loop_duration_seconds"), NULL, seconds);
    ebb_metric_observe(ebb_metrics_find(r->metrics, "descheduler_descheduler_loop_duration_seconds"), NULL, seconds);
    {
        const char *v[] = { "done" };
        ebb_metric_add(ebb_metrics_find(r->metrics, "ebb_cycles_total"), v, 1);
    }
    ebb_log(EBB_LOG_INFO, "cycle %d: %zu evicted, %zu refused, %zu plugin errors in %.3f s%s",
            p->cycles, p->nevictions, p->nrefusals, p->nerrors, seconds, r->o.dry_run ? " (dry run)" : "");
    for (size_t i = 0; i < p->nerrors; i++)
        ebb_log(EBB_LOG_ERROR, "plugin %s/%s: %s", p->errors[i].profile, p->errors[i].plugin, p->errors[i].message);
    for (size_t i = 0; i < p->nnotes; i++)
        ebb_log(EBB_LOG_INFO, "%s/%s%s%s: %s", p->notes[i].profile, p->notes[i].plugin,
                p->notes[i].node ? " " : "", p->notes[i].node ? p->notes[i].node : "", p->notes[i].message);
    {
        int cycles = p->cycles;
        ebb_plan_clear(p);
        p->cycles = cycles;
    }
}

static void refresh_gauges(struct runner *r)
{
    struct ebb_informer_stats st[16];
    size_t n = r->inf ? ebb_informers_stats(r->inf, st, 16) : 0;
    static const int kinds[] = { EBB_KIND_POD, EBB_KIND_NODE, EBB_KIND_NAMESPACE, EBB_KIND_PDB,
                                 EBB_KIND_PVC, EBB_KIND_PRIORITY_CLASS, EBB_KIND_NODE_METRICS,
                                 EBB_KIND_POD_METRICS, EBB_KIND_KOORD_NODE_METRIC };

    for (size_t i = 0; i < n && i < 16; i++) {
        const char *v[] = { st[i].resource };
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_watch_synced"), v, st[i].synced);
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_watch_up"), v, st[i].watching);
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_watch_events_total"), v, (double)st[i].events);
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_watch_lists_total"), v, (double)st[i].lists);
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_watch_resumes_total"), v, (double)st[i].resumes);
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_watch_errors_total"), v, (double)st[i].errors);
    }
    for (size_t i = 0; r->cache && i < EBB_ARRAY_LEN(kinds); i++) {
        const char *v[] = { ebb_kind_name(kinds[i]) };
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_cache_objects"), v,
                       (double)ebb_cache_count(r->cache, kinds[i]));
    }
    ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_evictions_inflight"), NULL,
                   r->engine ? (double)ebb_engine_evictions_inflight(r->engine) : 0);
    ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_leader"), NULL,
                   r->leader ? ebb_leader_leading(r->leader) : 1);
}

/* ---- HTTP ------------------------------------------------------------------------- */

static void on_http(struct ebb_http_req *req, void *ud)
{
    struct runner *r = ud;
    const char *path = ebb_http_req_path(req);

    if (strcmp(path, "/metrics") == 0) {
        size_t len;
        char *text;
        refresh_gauges(r);
        text = ebb_metrics_render(r->metrics, &len);
        if (text == NULL) {
            ebb_http_respond(req, 500, "text/plain", "out of memory\n", 14);
            return;
        }
        ebb_http_respond(req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
        free(text);
    } else if (strcmp(path, "/healthz") == 0 || strcmp(path, "/healthz/Descheduler") == 0) {
        ebb_http_respond(req, 200, "text/plain", "ok", 2);
    } else if (strcmp(path, "/readyz") == 0) {
        char which[64] = "", body[256];
        uint64_t broken = r->inf ? ebb_informers_broken_ms(r->inf, which, sizeof(which)) : 0;
        if (r->inf == NULL || !ebb_informers_synced(r->inf)) {
            ebb_http_respond(req, 503, "text/plain", "caches not synced\n", 18);
        } else if (broken > (uint64_t)(r->o.max_stale_s * 1000)) {
            int n = snprintf(body, sizeof(body), "watch %s broken for %llu ms\n", which,
                             (unsigned long long)broken);
            ebb_http_respond(req, 503, "text/plain", body, (size_t)n);
        } else {
            ebb_http_respond(req, 200, "text/plain", "ok", 2);
        }
    } else {
        ebb_http_respond(req, 404, "text/plain", "not found\n", 10);
    }
}

/* ---- the cycle ------------------------------------------------------------------ */

static void shutdown_all(struct runner *r);

static void schedule_next(struct runner *r, uint64_t ms);

static void cycle_finished(struct runner *r)
{
    double seconds = (double)(uv_hrtime() - r->cycle_t0) / 1e9;

    r->in_cycle = false;
    ebb_informers_hold(r->inf, false);
    account_cycle(r, seconds);
    r->cycles_done++;
    if (r->o.once || r->stopping) {
        shutdown_all(r);
        return;
    }
    schedule_next(r, (uint64_t)(r->o.interval_s * 1000));
}

static void on_resume(uv_timer_t *t)
{
    struct runner *r = t->data;
    int rc;

    if (!r->in_cycle || !ebb_engine_cycle_ready(r->engine))
        return;
    rc = ebb_engine_cycle_resume(r->engine);
    if (rc == EBB_CYCLE_WAITING)
        return;
    if (rc != 0)
        ebb_log(EBB_LOG_ERROR, "cycle: %s", ebb_strerror(rc));
    cycle_finished(r);
}

static void schedule_resume(struct runner *r)
{
    if (r->in_cycle && ebb_engine_cycle_ready(r->engine))
        uv_timer_start(&r->resume_timer, on_resume, 0, 0);
    if (r->stopping && !r->in_cycle && ebb_engine_evictions_inflight(r->engine) == 0)
        shutdown_all(r);
}

static void skip(struct runner *r, const char *reason, const char *detail)
{
    const char *v[] = { reason };
    ebb_metric_add(ebb_metrics_find(r->metrics, "ebb_cycles_skipped_total"), v, 1);
    ebb_log(EBB_LOG_WARN, "cycle skipped: %s%s%s", reason, detail ? ": " : "", detail ? detail : "");
}

static void on_cycle_timer(uv_timer_t *t)
{
    struct runner *r = t->data;
    char which[64] = "", detail[160];
    uint64_t broken;
    int rc;

    if (r->stopping || r->in_cycle)
        return;
    if (!ebb_informers_synced(r->inf)) {
        if (!r->announced_wait) {
            ebb_log(EBB_LOG_INFO, "waiting for the caches to sync");
            r->announced_wait = true;
        }
        schedule_next(r, 200);
        return;
    }
    if (r->leader && !ebb_leader_leading(r->leader)) {
        /* standby: look again soon, the lease may come our way */
        schedule_next(r, 1000);
        return;
    }
    broken = ebb_informers_broken_ms(r->inf, which, sizeof(which));
    if (broken > (uint64_t)(r->o.max_stale_s * 1000)) {
        snprintf(detail, sizeof(detail), "the %s watch has been broken for %.1f s (--max-stale %.0f s)",
                 which, (double)broken / 1000.0, r->o.max_stale_s);
        skip(r, "stale", detail);
        if (r->o.once) {
            schedule_next(r, 1000);
            return;
        }
        schedule_next(r, (uint64_t)(r->o.interval_s * 1000));
        return;
    }
    r->in_cycle = true;
    r->cycle_t0 = uv_hrtime();
    ebb_informers_hold(r->inf, true);
    rc = ebb_engine_cycle_begin(r->engine);
    if (rc == EBB_CYCLE_WAITING)
        return;
    if (rc != 0)
        ebb_log(EBB_LOG_ERROR, "cycle: %s", ebb_strerror(rc));
    cycle_finished(r);
}

static void schedule_next(struct runner *r, uint64_t ms)
{
    if (!r->stopping)
        uv_timer_start(&r->cycle_timer, on_cycle_timer, ms, 0);
}

/* ---- leadership, signals, shutdown ------------------------------------------------ */

static void on_leading(void *ud, bool leading)
{
    struct runner *r = ud;
    /* the moment the lease is lost, nothing more is evicted */
    ebb_engine_set_eviction_allowed(r->engine, leading && !r->stopping);
}

static void closed_one(void *ud)
{
    struct runner *r = ud;
    if (--r->pending_close == 0)
        uv_stop(r->loop);
}

static void closed_handle(uv_handle_t *h)
{
    closed_one(h->data);
}

static void shutdown_all(struct runner *r)
{
    static bool done;

    if (done)
        return;
    if (r->in_cycle || ebb_engine_evictions_inflight(r->engine) > 0) {
        r->stopping = true;   /* finish what is in flight first */
        return;
    }
    done = true;
    r->stopping = true;
    r->pending_close = 6;
    uv_timer_stop(&r->cycle_timer);
    uv_timer_stop(&r->resume_timer);
    uv_timer_stop(&r->stats_timer);
    r->cycle_timer.data = r->resume_timer.data = r->stats_timer.data = r;
    uv_close((uv_handle_t *)&r->cycle_timer, closed_handle);
    uv_close((uv_handle_t *)&r->resume_timer, closed_handle);
    uv_close((uv_handle_t *)&r->stats_timer, closed_handle);
    r->sigterm.data = r->sigint.data = r;
    uv_close((uv_handle_t *)&r->sigterm, closed_handle);
    uv_close((uv_handle_t *)&r->sigint, closed_handle);
    if (r->leader) {
        r->pending_close++;
        ebb_leader_close(r->leader, closed_one, r);
        r->leader = NULL;
    }
    if (r->httpd) {
        r->pending_close++;
        ebb_httpd_close(r->httpd, closed_one, r);
        r->httpd = NULL;
    }
    /* the informers go last but one: the kube client goes last */
    ebb_informers_close(r->inf, closed_one, r);
    r->inf = NULL;
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct runner *r = s->data;
    ebb_log(EBB_LOG_INFO, "%s: no new evictions; finishing what is in flight",
            signum == SIGTERM ? "SIGTERM" : "SIGINT");
    r->stopping = true;
    ebb_engine_set_eviction_allowed(r->engine, false);
    shutdown_all(r);
}

static void on_stats(uv_timer_t *t)
{
    refresh_gauges(t->data);
}

/* Which optional sources the policy needs. */
static void needs(const struct ebb_policy *p, bool *metrics, bool *koord)
{
    *metrics = p->metrics_collector_enabled;
    *koord = false;
    for (size_t i = 0; i < p->nproviders; i++)
        if (p->providers[i].source == EBB_METRICS_KUBERNETES)
            *metrics = true;
    for (size_t i = 0; i < p->nprofiles; i++) {
        for (size_t c = 0; c < p->profiles[i].nconfigs; c++) {
            const struct ebb_plugin_config *pc = &p->profiles[i].configs[c];
            const struct ebb_val *mu = ebb_val_get(pc->args, "metricsUtilization");
            const struct ebb_val *src = ebb_val_get(mu, "source"), *ms = ebb_val_get(mu, "metricsServer");
            if (strcmp(pc->name, "LowNodeLoad") == 0) {
                *koord = true;
                *metrics = true;
            }
            if ((src && src->type == EBB_VAL_STRING && strcmp(src->u.str.s, "KubernetesMetrics") == 0) ||
                (ms && ms->type == EBB_VAL_BOOL && ms->u.b))
                *metrics = true;
        }
    }
}

static void report(const struct ebb_error *err)
{
    char buf[2048];
    ebb_error_format(err, buf, sizeof(buf));
    fprintf(stderr, "ebb: error: %s\n", buf);
}

int ebb_run_main(int argc, char **argv)
{
    struct runner *r = calloc(1, sizeof(*r));
    struct ebb_engine_opts eo = { .now = EBB_TIME_NONE };
    struct ebb_policy *policy = NULL;
    struct ebb_error err = { 0 };
    struct ebb_kube_opts ko = { 0 };
    struct ebb_informers_opts io = { 0 };
    bool metrics = false, koord = false;
    int rc;

    if (r == NULL)
        return 1;
    the_runner = r;
    if ((rc = parse(argc, argv, &r->o)) != 0) {
        free(r);
        return rc;
    }
    /* what the user wrote is checked before anything talks to the cluster */
    eo.mode = r->o.dry_run ? EBB_MODE_DRY_RUN : EBB_MODE_LIVE;
    eo.now = r->o.now;
    if ((rc = ebb_engine_create(&eo, &r->engine, &err)) != 0 ||
        (rc = ebb_engine_load_builtins(r->engine, &err)) != 0)
        goto input;
    for (int i = 0; i < r->o.ndirs; i++)
        if ((rc = ebb_engine_register_lua_dir(r->engine, r->o.dirs[i], &err)) != 0)
            goto input;
    if ((rc = ebb_policy_load(r->o.policy, &policy, &err)) != 0)
        goto input;
    for (size_t i = 0; i < policy->nwarnings; i++)
        ebb_log(EBB_LOG_WARN, "%s", policy->warnings[i]);
    needs(policy, &metrics, &koord);
    if ((rc = ebb_engine_set_policy(r->engine, policy, &err)) != 0)
        goto input;
    policy = NULL;
    if ((rc = ebb_kube_config_load(r->o.kubeconfig, r->o.context, &r->kc, &err)) != 0)
        goto input;

    r->loop = uv_default_loop();
    ko.qps = r->o.qps;
    ko.burst = r->o.burst;
    if ((rc = ebb_kube_create(r->loop, r->kc, &ko, &r->kube, &err)) != 0)
        goto input;
    if ((rc = ebb_cache_create(&r->cache)) != 0)
        goto fail;
    ebb_engine_set_cache(r->engine, r->cache);
    ebb_engine_set_evictor(r->engine, start_eviction, r);
    io.page_size = r->o.page_size;
    io.metrics = metrics;
    io.koord_metrics = koord;
    if ((rc = ebb_informers_create(r->loop, r->kube, r->cache, &io, &r->inf)) != 0)
        goto fail;
    if ((rc = ebb_metrics_create(&r->metrics)) != 0 || (rc = ebb_metrics_register_standard(r->metrics)) != 0)
        goto fail;
    if (r->o.port > 0) {
        struct ebb_httpd_opts ho = { .host = r->o.bind, .port = r->o.port, .handler = on_http, .ud = r };
        if ((rc = ebb_httpd_create(r->loop, &ho, &r->httpd, &err)) != 0)
            goto input;
        ebb_log(EBB_LOG_INFO, "serving /metrics, /healthz, /readyz on %s:%d", r->o.bind, ebb_httpd_port(r->httpd));
    }
    uv_timer_init(r->loop, &r->cycle_timer);
    uv_timer_init(r->loop, &r->resume_timer);
    uv_timer_init(r->loop, &r->stats_timer);
    r->cycle_timer.data = r->resume_timer.data = r->stats_timer.data = r;
    uv_signal_init(r->loop, &r->sigterm);
    uv_signal_init(r->loop, &r->sigint);
    r->sigterm.data = r->sigint.data = r;
    uv_signal_start(&r->sigterm, on_signal, SIGTERM);
    uv_signal_start(&r->sigint, on_signal, SIGINT);
    signal(SIGPIPE, SIG_IGN);

    if (r->o.leader_elect) {
        ebb_engine_set_eviction_allowed(r->engine, false);
        if ((rc = ebb_leader_create(r->loop, r->kube, &r->o.lo, on_leading, r, &r->leader)) != 0)
            goto fail;
        ebb_leader_start(r->leader);
    }
    ebb_log(EBB_LOG_INFO, "ebb %s: %s, policy %s, %s%s", EBB_VERSION, r->kc->source, r->o.policy,
            r->o.once ? "one cycle" : "every interval", r->o.dry_run ? ", dry run" : "");
    ebb_informers_start(r->inf);
    uv_timer_start(&r->stats_timer, on_stats, 5000, 5000);
    schedule_next(r, 0);

    uv_run(r->loop, UV_RUN_DEFAULT);

    /* the kube client goes last: everything else is closed now */
    r->pending_close = 1;
    ebb_kube_close(r->kube, closed_one, r);
    uv_run(r->loop, UV_RUN_DEFAULT);
    uv_loop_close(r->loop);
    rc = r->exit_code;
    ebb_metrics_destroy(r->metrics);
    ebb_engine_destroy(r->engine);
    ebb_kube_config_free(r->kc);
    free(r);
    return rc;
input:
    report(&err);
    rc = EXIT_INPUT;
fail:
    ebb_policy_free(policy);
    if (r->kube) {
        /* nothing started yet: the client has no request in flight */
        ebb_kube_close(r->kube, NULL, NULL);
        uv_run(r->loop, UV_RUN_DEFAULT);
    }
    ebb_engine_destroy(r->engine);
    ebb_kube_config_free(r->kc);
    free(r);
    return rc < 0 ? 1 : rc;
}
