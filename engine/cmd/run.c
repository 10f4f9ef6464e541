/* `ebb run`: the descheduler against a live cluster.
 *
 * This file is the command and its wiring, on the loop thread: the flags,
 * the clients (kube, informers, evictions and Events, the Lease,
 * Prometheus, the HTTP server), the periodic cycle and the event-triggered
 * runs (when they may start: synced caches, a fresh view, the lease), what
 * a cycle did to the metrics and the log, objects skipped, signals and the
 * shutdown. The engine's jobs run on a script thread handed the engine in
 * turn (run_handoff.c, where the thread rules are); policy generations and
 * hot reload are run_reload.c's. See run_int.h for who calls whom.
 */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/run_int.h"
#include "ebb/flags.h"
#include "ebb/run.h"
#include "ebb/lua.h"

#define EXIT_INPUT 2
/* --once: the cycle ran, but some eviction failed for a reason that is not
 * the policy's (the API server refused it, 403, answered 5xx, timed out, or
 * the request could not be sent). A CronJob's Job shows it as failed. */
#define EXIT_EVICTIONS_FAILED 3

#define SKIP_BURST 10             /* skipped objects reported (log line, Event) at once */
#define SKIP_EVERY_MS 6000        /* then one every this long; all are in the metric */

/* ---- flags ------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fputs("usage: ebb run --policy FILE [--policy-dir DIR]... [--kubeconfig FILE] [--context NAME]\n"
          "               [--interval 5m | --once] [--dry-run] [--leader-elect ...]\n"
          "               [--qps 50] [--burst 100] [--bind-address 0.0.0.0] [--port 10258]\n"
          "               [--tls-cert-file F --tls-private-key-file F | --cert-dir DIR] [--plain-http]\n"
          "               [--max-stale 30s]\n"
          "\n"
          "  --interval D          time between cycles (Go duration); 0 runs one cycle (default 5m)\n"
          "  --once                one cycle, then exit (a Job or CronJob): 0 done, refusals\n"
          "                        of the policy (PDB, limits, filters) included; 3 some\n"
          "                        eviction failed otherwise (403, 5xx, timeout); 2 bad\n"
          "                        input; 1 anything else (e.g. --sync-timeout)\n"
          "  --dry-run             decide and report, never evict\n"
          "  --leader-elect        only the holder of a coordination.k8s.io Lease evicts;\n"
          "    --leader-elect-lease-duration D (137s) --leader-elect-renew-deadline D (107s)\n"
          "    --leader-elect-retry-period D (26s) --leader-elect-resource-name N (descheduler)\n"
          "    --leader-elect-resource-namespace NS (in a pod its own, else kube-system);\n"
          "                        also where the ConfigMap ebb-eviction-memory is kept\n"
          "  --port N              /metrics, /healthz, /readyz over HTTPS (0 disables);\n"
          "                        --secure-port is the same flag\n"
          "  --tls-cert-file F     the serving certificate (PEM, its chain after it), with\n"
          "  --tls-private-key-file F  its key (PEM); without them a self-signed one\n"
          "                        (ECDSA P-256, localhost, 127.0.0.1, the hostname, 1 year)\n"
          "  --cert-dir DIR        keep the self-signed pair in DIR (apiserver.crt/.key,\n"
          "                        reused when there); without it, in memory only\n"
          "  --plain-http          serve the port over plain HTTP instead of HTTPS\n"
          "  --max-stale D         skip cycles while a watch has been broken longer (30s)\n"
          "  --sync-timeout D      exit 1, naming what is missing, when the caches have not\n"
          "                        synced this long after start (or, with --once, the cycle\n"
          "                        could not start on a fresh view) (2m)\n"
          "  --reload-debounce D   reload the policy and scripts this long after they last\n"
          "                        changed (1s); SIGHUP reloads at once\n"
          "  --no-reload           never reload on changes (SIGHUP still does)\n"
          "  --trigger-delay D     run the plugins that react to a change (their `triggers`)\n"
          "                        this long after the first change (1s)\n"
          "  --script-timeout D    time budget per call into a Lua plugin (10s)\n"
          "  --script-memory Q     memory cap of each Lua plugin instance (64Mi)\n"
          "                        (per plugin: pluginConfig[].limits in the policy)\n"
          "  --now TIME            a fixed clock for pod ages (tests, replays)\n"
          "  --feature-gates K=V   EvictionsInBackground=true: a 429 \"Eviction triggered\n"
          "                        evacuation\" to a pod annotated request-evict-only is an\n"
          "                        eviction going on (see docs/evictions-in-background.md)\n"
          "  --logging-format F    text (klog's lines, the default) or json (one object a line)\n"
          "  --v N                 log verbosity: 3 and up adds debug records (-v: the same)\n"
          "  --disable-metrics     serve /healthz and /readyz only\n"
          "  --metrics-workload-labels  label descheduler_pods_evicted_total with the\n"
          "                        evicted pod's workload (workload_kind, workload): a series\n"
          "                        per workload, so off by default\n"
          "Upstream names are accepted too: --policy-config-file, --descheduling-interval,\n"
          "--client-connection-kubeconfig, --client-connection-qps, --client-connection-burst,\n"
          "--secure-port; booleans as --flag or --flag=true|false. Flags ebb cannot\n"
          "honour (TLS tuning, tracing, ...) are refused by name: see\n"
          "docs/upstream-flags-and-logs.md.\n",
          f);
}

static int parse(int argc, char **argv, struct run_opts *o)
{
    enum {
        F_POLICY = 1000, F_DIR, F_KUBECONFIG, F_CONTEXT, F_INTERVAL, F_ONCE, F_DRY, F_LE, F_LE_DUR,
        F_LE_RENEW, F_LE_RETRY, F_LE_NAME, F_LE_NS, F_LE_LOCK, F_QPS, F_BURST, F_BIND, F_PORT,
        F_STALE, F_PAGE, F_SYNC_MODE, F_NOW, F_RELOAD_DEBOUNCE, F_NO_RELOAD, F_RELOAD_POLL,
        F_SCRIPT_TIMEOUT, F_SCRIPT_MEMORY, F_TRIGGER_DELAY, F_FEATURES, F_SYNC_TIMEOUT,
        F_V, F_LOG_FORMAT, F_NO_METRICS, F_WORKLOAD_LABELS, F_CONTENT_TYPE, F_SECURE_PORT, F_IGNORED, F_HTTP2,
        F_TLS_CERT, F_TLS_KEY, F_CERT_DIR, F_PLAIN_HTTP,
        F_REFUSED = 2000,
    };
    /* Upstream's flags ebb cannot honour: each refused by name, with why, so
     * that a manifest written for upstream fails at once and says what to
     * drop rather than running with a setting silently lost. */
    static const char *const no_tls = "ebb serves TLS 1.2 and up with OpenSSL's defaults and one "
                                      "certificate (--tls-cert-file): leave the flag out";
    static const char *const no_otel = "ebb has no OpenTelemetry tracing";
    static const struct {
        const char *name;
        const char *why;
    } refused[] = {
        { "tls-cipher-suites", NULL }, { "tls-min-version", NULL }, { "tls-sni-cert-key", NULL },
        { "tls-curve-preferences", NULL }, { "http2-max-streams-per-connection", NULL },
        { "permit-address-sharing", "ebb binds its port alone (no SO_REUSEADDR sharing)" },
        { "permit-port-sharing", "ebb binds its port alone (no SO_REUSEPORT sharing)" },
        { "otel-collector-endpoint", no_otel }, { "otel-transport-ca-cert", no_otel },
        { "otel-service-name", no_otel }, { "otel-trace-namespace", no_otel },
        { "otel-sample-rate", no_otel }, { "otel-fallback-no-op-on-error", no_otel },
        { "vmodule", "ebb's log has one verbosity (--v), not one per file" },
        { "log-json-info-buffer-size", "ebb writes each record to stderr whole, unbuffered" },
        { "log-json-split-stream", "ebb writes every record to stderr" },
        { "log-text-info-buffer-size", "ebb writes each record to stderr whole, unbuffered" },
        { "log-text-split-stream", "ebb writes every record to stderr" },
    };
    static const struct option ebb_longopts[] = {
        { "policy", required_argument, NULL, F_POLICY },
        { "policy-config-file", required_argument, NULL, F_POLICY },
        { "policy-dir", required_argument, NULL, F_DIR },
        { "kubeconfig", required_argument, NULL, F_KUBECONFIG },
        { "client-connection-kubeconfig", required_argument, NULL, F_KUBECONFIG },
        { "context", required_argument, NULL, F_CONTEXT },
        { "interval", required_argument, NULL, F_INTERVAL },
        { "descheduling-interval", required_argument, NULL, F_INTERVAL },
        { "once", no_argument, NULL, F_ONCE },
        { "dry-run", optional_argument, NULL, F_DRY },
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
        { "secure-port", required_argument, NULL, F_SECURE_PORT },
        { "max-stale", required_argument, NULL, F_STALE },
        { "sync-timeout", required_argument, NULL, F_SYNC_TIMEOUT },
        { "page-size", required_argument, NULL, F_PAGE },
        { "sync-mode", required_argument, NULL, F_SYNC_MODE },
        { "now", required_argument, NULL, F_NOW },
        { "reload-debounce", required_argument, NULL, F_RELOAD_DEBOUNCE },
        { "reload-poll", required_argument, NULL, F_RELOAD_POLL },
        { "no-reload", no_argument, NULL, F_NO_RELOAD },
        { "script-timeout", required_argument, NULL, F_SCRIPT_TIMEOUT },
        { "trigger-delay", required_argument, NULL, F_TRIGGER_DELAY },
        { "script-memory", required_argument, NULL, F_SCRIPT_MEMORY },
        { "feature-gates", required_argument, NULL, F_FEATURES },
        { "verbose", no_argument, NULL, 'v' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { "v", required_argument, NULL, F_V },
        { "logging-format", required_argument, NULL, F_LOG_FORMAT },
        { "disable-metrics", optional_argument, NULL, F_NO_METRICS },
        { "metrics-workload-labels", optional_argument, NULL, F_WORKLOAD_LABELS },
        { "tls-cert-file", required_argument, NULL, F_TLS_CERT },
        { "tls-private-key-file", required_argument, NULL, F_TLS_KEY },
        { "cert-dir", required_argument, NULL, F_CERT_DIR },
        { "plain-http", optional_argument, NULL, F_PLAIN_HTTP },
        { "client-connection-content-type", required_argument, NULL, F_CONTENT_TYPE },
        { "log-flush-frequency", required_argument, NULL, F_IGNORED },
        { "enable-http2", optional_argument, NULL, F_HTTP2 },
        { "disable-http2-serving", optional_argument, NULL, F_HTTP2 },
    };
    struct option longopts[EBB_ARRAY_LEN(ebb_longopts) + EBB_ARRAY_LEN(refused) + 1];
    int c, li;
    char *end;
    long n;
    bool b;
    double ignored;

    memcpy(longopts, ebb_longopts, sizeof(ebb_longopts));
    for (size_t i = 0; i < EBB_ARRAY_LEN(refused); i++)
        longopts[EBB_ARRAY_LEN(ebb_longopts) + i] =
            (struct option){ refused[i].name, optional_argument, NULL, F_REFUSED + (int)i };
    longopts[EBB_ARRAY_LEN(longopts) - 1] = (struct option){ NULL, 0, NULL, 0 };

    memset(o, 0, sizeof(*o));
    o->now = EBB_TIME_NONE;
    o->interval_s = 300;
    o->qps = 50;
    o->burst = 100;
    o->bind = "0.0.0.0";
    o->port = 10258;
    o->max_stale_s = 30;
    o->sync_timeout_s = 120;
    o->reload = true;
    o->reload_debounce_s = 1;
    o->reload_poll_s = 60;
    o->trigger_delay_s = 1;
    /* a server's log, for operators and their collectors: klog's lines
     * unless --logging-format says json */
    ebb_log_format = EBB_LOG_KLOG;
    opterr = 0;
    optind = 2;
    while ((c = getopt_long(argc, argv, ":vqh", longopts, &li)) != -1) {
        const char *dur = NULL;   /* a flag that takes a Go duration, read into *d */
        double *d = NULL;

        if (c >= F_REFUSED && c < F_REFUSED + (int)EBB_ARRAY_LEN(refused)) {
            const char *why = refused[c - F_REFUSED].why;
            fprintf(stderr, "ebb: error: --%s: not supported: %s\n", refused[c - F_REFUSED].name,
                    why ? why : no_tls);
            return EXIT_INPUT;
        }
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
        case F_INTERVAL: dur = "--interval"; d = &o->interval_s; break;
        case F_ONCE: o->once = true; break;
        case F_DRY:
            if (!ebb_flag_bool("--dry-run", optarg, &o->dry_run))
                return EXIT_INPUT;
            break;
        case F_LE:
            if (!ebb_flag_bool("--leader-elect", optarg, &o->leader_elect))
                return EXIT_INPUT;
            break;
        case F_TLS_CERT: o->tls_cert_file = optarg; break;
        case F_TLS_KEY: o->tls_key_file = optarg; break;
        case F_CERT_DIR: o->cert_dir = optarg; break;
        case F_PLAIN_HTTP:
            if (!ebb_flag_bool("--plain-http", optarg, &o->plain_http))
                return EXIT_INPUT;
            break;
        case F_NO_METRICS:
            if (!ebb_flag_bool("--disable-metrics", optarg, &o->disable_metrics))
                return EXIT_INPUT;
            break;
        case F_WORKLOAD_LABELS:
            if (!ebb_flag_bool("--metrics-workload-labels", optarg, &o->metrics_workload_labels))
                return EXIT_INPUT;
            break;
        case F_HTTP2: {
            /* honoured as it stands when it asks for no HTTP/2 */
            bool disable = strcmp(longopts[li].name, "disable-http2-serving") == 0;
            char flag[64];
            snprintf(flag, sizeof(flag), "--%s", longopts[li].name);
            if (!ebb_flag_bool(flag, optarg, &b))
                return EXIT_INPUT;
            if (b != disable) {
                fprintf(stderr, "ebb: error: %s=%s: not supported: ebb serves HTTP/1.1 only\n", flag,
                        b ? "true" : "false");
                return EXIT_INPUT;
            }
            break;
        }
        case F_IGNORED:
            /* honoured as it stands: each record is written whole at once */
            dur = "--log-flush-frequency";
            d = &ignored;
            break;
        case F_V: {
            long v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || v < 0 || v > 10) {
                fprintf(stderr, "ebb: error: --v: \"%s\" is not a log verbosity from 0 to 10\n", optarg);
                return EXIT_INPUT;
            }
            ebb_log_level = v >= EBB_LOG_DEBUG_V ? EBB_LOG_DEBUG : EBB_LOG_INFO;
            break;
        }
        case F_LOG_FORMAT:
            if (strcmp(optarg, "text") == 0) {
                ebb_log_format = EBB_LOG_KLOG;
            } else if (strcmp(optarg, "json") == 0) {
                ebb_log_format = EBB_LOG_JSON;
            } else {
                fprintf(stderr, "ebb: error: --logging-format: \"%s\" is not text or json\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case F_CONTENT_TYPE:
            if (strcmp(optarg, "application/json") != 0) {
                fprintf(stderr, "ebb: error: --client-connection-content-type: \"%s\" is not supported: "
                                "ebb speaks application/json to the API server\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case F_LE_DUR: dur = "--leader-elect-lease-duration"; d = &o->lo.lease_s; break;
        case F_LE_RENEW: dur = "--leader-elect-renew-deadline"; d = &o->lo.renew_deadline_s; break;
        case F_LE_RETRY: dur = "--leader-elect-retry-period"; d = &o->lo.retry_s; break;
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
            if (*optarg == '\0' || *end != '\0' || !(o->qps > 0) || !isfinite(o->qps)) {
                fprintf(stderr, "ebb: error: --qps: \"%s\" is not a positive number\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case F_BURST:
            if (!ebb_flag_int("--burst", optarg, 1, 100000, &n))
                return EXIT_INPUT;
            o->burst = (int)n;
            break;
        case F_BIND: o->bind = optarg; break;
        case F_PORT:
        case F_SECURE_PORT:
        {
            char flag[64];
            snprintf(flag, sizeof(flag), "--%s", longopts[li].name);
            if (!ebb_flag_int(flag, optarg, 0, 65535, &n))
                return EXIT_INPUT;
            o->port = (int)n;
            break;
        }
        case F_STALE: dur = "--max-stale"; d = &o->max_stale_s; break;
        case F_SYNC_TIMEOUT: dur = "--sync-timeout"; d = &o->sync_timeout_s; break;
        case F_PAGE:
            if (!ebb_flag_int("--page-size", optarg, 1, 100000, &n))
                return EXIT_INPUT;
            o->page_size = (int)n;
            break;
        case F_SYNC_MODE:
            if (strcmp(optarg, "auto") == 0) {
                o->sync_mode = EBB_SYNC_AUTO;
            } else if (strcmp(optarg, "list") == 0) {
                o->sync_mode = EBB_SYNC_LIST;
            } else if (strcmp(optarg, "watchlist") == 0) {
                o->sync_mode = EBB_SYNC_WATCHLIST;
            } else {
                fprintf(stderr, "ebb: error: --sync-mode: \"%s\" is not auto, list or watchlist\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case F_RELOAD_DEBOUNCE: dur = "--reload-debounce"; d = &o->reload_debounce_s; break;
        case F_RELOAD_POLL: dur = "--reload-poll"; d = &o->reload_poll_s; break;
        case F_NO_RELOAD: o->reload = false; break;
        case F_TRIGGER_DELAY: dur = "--trigger-delay"; d = &o->trigger_delay_s; break;
        case F_SCRIPT_TIMEOUT:
            if (!ebb_flag_script_timeout("--script-timeout", optarg, false, &o->script_timeout_ms))
                return EXIT_INPUT;
            break;
        case F_SCRIPT_MEMORY:
            if (!ebb_flag_script_memory("--script-memory", optarg, &o->script_memory))
                return EXIT_INPUT;
            break;
        case F_FEATURES:
            if (!ebb_flag_feature_gates("--feature-gates", optarg, &o->features))
                return EXIT_INPUT;
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
        default:
            ebb_flag_getopt_error(c, argv, usage);
            return EXIT_INPUT;
        }
        if (dur != NULL && !ebb_flag_duration(dur, optarg, d))
            return EXIT_INPUT;
        if (c == F_SYNC_TIMEOUT && o->sync_timeout_s <= 0) {
            fprintf(stderr, "ebb: error: --sync-timeout: \"%s\" must be longer than 0\n", optarg);
            return EXIT_INPUT;
        }
    }
    if (!ebb_flag_no_arguments(argc, argv))
        return EXIT_INPUT;
    if (o->policy == NULL) {
        fprintf(stderr, "ebb: error: run needs --policy (or upstream's --policy-config-file)\n");
        return EXIT_INPUT;
    }
    if ((o->tls_cert_file == NULL) != (o->tls_key_file == NULL)) {
        fprintf(stderr, "ebb: error: --%s needs --%s: a certificate is served with its key\n",
                o->tls_cert_file ? "tls-cert-file" : "tls-private-key-file",
                o->tls_cert_file ? "tls-private-key-file" : "tls-cert-file");
        return EXIT_INPUT;
    }
    if (o->plain_http && (o->tls_cert_file || o->cert_dir)) {
        fprintf(stderr, "ebb: error: --plain-http serves no TLS: drop --%s, or --plain-http\n",
                o->tls_cert_file ? "tls-cert-file" : "cert-dir");
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

/* ---- metrics -------------------------------------------------------------------- */

static const char *result_of(const char *why)
{
    if (strcmp(why, "node-limit") == 0)
        return "maximum number of evicted pods per node reached";
    if (strcmp(why, "namespace-limit") == 0)
        return "maximum number of evicted pods per namespace reached";
    if (strcmp(why, "total-limit") == 0)
        return "maximum number of evicted pods per a descheduling cycle reached";
    if (strcmp(why, "evictor") == 0)
        return "refused by the evict plugin";
    if (strcmp(why, "background") == 0)
        return "background";
    return "error";
}

/* An eviction in background ended with its pod gone: upstream counts it a
 * success then. */
static void on_background_done(void *ud, const struct ebb_background_item *it)
{
    struct runner *r = ud;
    const char *v[] = { "success", it->plugin, it->profile, it->ns, it->node };

    ebb_log(EBB_LOG_INFO, "eviction in background of pod %s/%s done: the pod is gone", it->ns, it->name);
    ebb_metric_add(ebb_metrics_find(r->metrics, "descheduler_pods_evicted_total"), v, 1);
    ebb_metric_add(ebb_metrics_find(r->metrics, "descheduler_pods_evicted"), v, 1);
}

/* The workloads warned about in one cycle's accounting (at most one
 * EvictionLoopStopped Event each). */
struct warned {
    size_t n, cap;
    ebb_str *v;                   /* kind, name pairs: references */
};

static void warned_free(struct warned *w)
{
    for (size_t i = 0; i < w->n; i++)
        ebb_str_release(w->v[i]);
    free(w->v);
}

/* Keep (take) the pair; on failure both are released. */
static int hold_pair(struct warned *w, ebb_str kind, ebb_str name)
{
    if (w->n + 2 > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        ebb_str *v = realloc(w->v, cap * sizeof(*v));
        if (v == NULL) {
            ebb_str_release(kind);
            ebb_str_release(name);
            return EBB_ENOMEM;
        }
        w->v = v;
        w->cap = cap;
    }
    w->v[w->n++] = kind;
    w->v[w->n++] = name;
    return 0;
}

/* The workload labels of "ns/name" (--metrics-workload-labels): the
 * memory's newest entry for the pod (an evicted pod), else the pod in the
 * cache; "" when neither knows it. Left NULL without the flag (the family
 * has five labels then). Strings worked out here are held in `hold` until
 * the cycle's accounting is over (the series copy their labels). */
static void workload_labels(struct runner *r, const char *key, const char **kind, const char **name,
                            struct warned *hold)
{
    const char *slash = strchr(key, '/');
    ebb_str ns, pod;
    struct ebb_pod *p;

    if (!r->o.metrics_workload_labels)
        return;
    *kind = *name = "";
    if (slash == NULL)
        return;
    ns = ebb_str_find(key, (size_t)(slash - key));
    pod = ebb_str_find(slash + 1, strlen(slash + 1));
    for (size_t i = r->memory.n; ns != NULL && pod != NULL && i-- > 0;)
        if (r->memory.v[i].ns == ns && r->memory.v[i].pod == pod) {
            *kind = r->memory.v[i].kind;
            *name = r->memory.v[i].workload;
            return;
        }
    p = ns && pod ? ebb_cache_pod(ebb_engine_cache(r->engine), ns, pod) : NULL;
    if (p != NULL) {
        ebb_str k, w;
        if (ebb_evmem_workload_of(ebb_engine_cache(r->engine), p, &k, &w) == 0) {
            if (hold_pair(hold, k, w) != 0)
                return;
            *kind = k;
            *name = w;
        }
    }
}

static const char *api_version_of(const char *kind)
{
    if (strcmp(kind, "Deployment") == 0 || strcmp(kind, "ReplicaSet") == 0 ||
        strcmp(kind, "StatefulSet") == 0 || strcmp(kind, "DaemonSet") == 0)
        return "apps/v1";
    if (strcmp(kind, "Job") == 0 || strcmp(kind, "CronJob") == 0)
        return "batch/v1";
    return "v1";
}

/* LoopGuard refused an eviction as futile: a Warning Event on the
 * workload, once per workload per cycle, that says where the replacement
 * would have landed. */
static void loop_stopped_event(struct runner *r, const struct ebb_plan_refusal *f, struct warned *w)
{
    const char *slash = strchr(f->pod, '/');
    struct ebb_cache *c = ebb_engine_cache(r->engine);
    struct ebb_pod *p;
    ebb_str kind, name;
    char ns[256], note[1024];

    if (slash == NULL || c == NULL)
        return;
    p = ebb_cache_pod(c, ebb_str_find(f->pod, (size_t)(slash - f->pod)),
                      ebb_str_find(slash + 1, strlen(slash + 1)));
    if (p == NULL || ebb_evmem_workload_of(c, p, &kind, &name) != 0)
        return;
    for (size_t i = 0; i + 1 < w->n; i += 2)
        if (w->v[i] == kind && w->v[i + 1] == name) {
            ebb_str_release(kind);
            ebb_str_release(name);
            return;
        }
    if (hold_pair(w, kind, name) != 0)
        return;
    snprintf(ns, sizeof(ns), "%.*s", (int)(slash - f->pod), f->pod);
    snprintf(note, sizeof(note), "%s did not evict pod %s: %s", f->plugin ? f->plugin : "a plugin",
             f->pod, f->detail ? f->detail : "futile");
    {
        struct ebb_kube_event e = {
            .ns = ns, .name = name, .kind = kind, .api_version = api_version_of(kind),
            .type = "Warning", .reason = "EvictionLoopStopped", .action = "Descheduling",
            .note = note, .instance = r->leader ? ebb_leader_identity(r->leader) : NULL,
        };
        if (!r->o.dry_run)
            ebb_kube_evict_event(r->evict, &e);
    }
}

/* What the cycle did goes to the metrics and the log; the plan is then
 * cleared (a long-running process keeps no history). */
static void account_cycle(struct runner *r, double seconds, bool triggered)
{
    struct ebb_plan *p = ebb_engine_plan(r->engine);
    struct ebb_metric *ev_total = ebb_metrics_find(r->metrics, "descheduler_pods_evicted_total");
    struct ebb_metric *ev_old = ebb_metrics_find(r->metrics, "descheduler_pods_evicted");
    struct ebb_metric *errs = ebb_metrics_find(r->metrics, "ebb_script_errors_total");
    struct ebb_plugin_time t[64];
    size_t n = ebb_engine_plugin_times(r->engine, t, 64);
    struct warned warned = { 0 }, held = { 0 };

    for (size_t i = 0; i < p->nevictions; i++) {
        const struct ebb_plan_eviction *e = &p->evictions[i];
        char ns[256];
        const char *slash = strchr(e->pod, '/');
        snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - e->pod) : 0, e->pod);
        const char *v[] = { "success", e->plugin, e->profile, ns, e->node, NULL, NULL };
        workload_labels(r, e->pod, &v[5], &v[6], &held);
        ebb_metric_add(ev_total, v, 1);
        ebb_metric_add(ev_old, v, 1);
        if (r->o.dry_run)
            ebb_log(EBB_LOG_INFO, "evicted pod %s from %s (%s, dry run)", e->pod, e->node ? e->node : "-", e->plugin);
    }
    for (size_t i = 0; i < p->nrefusals; i++) {
        const struct ebb_plan_refusal *f = &p->refusals[i];
        char ns[256];
        const char *slash = strchr(f->pod, '/');
        /* each refusal and its reason at the default level: why a pod a
         * strategy picked stayed is the first thing an operator asks */
        ebb_log(EBB_LOG_INFO, "eviction refused: pod %s on %s (%s): %s%s%s", f->pod, f->node ? f->node : "-",
                f->plugin ? f->plugin : "-", f->why, f->detail ? ": " : "", f->detail ? f->detail : "");
        {
            const char *rv[] = { f->why, f->plugin ? f->plugin : "", f->profile ? f->profile : "" };
            ebb_metric_add(ebb_metrics_find(r->metrics, "ebb_evictions_refused_total"), rv, 1);
        }
        if (strcmp(f->why, ebb_why_name(EBB_WHY_FUTILE)) == 0)
            loop_stopped_event(r, f, &warned);
        if (strcmp(f->why, "filtered") == 0 || strcmp(f->why, "not-found") == 0 ||
            strcmp(f->why, ebb_why_name(EBB_WHY_FUTILE)) == 0 ||
            strcmp(f->why, ebb_why_name(EBB_WHY_COOLDOWN)) == 0 ||
            strcmp(f->why, ebb_why_name(EBB_WHY_UNAVAILABLE)) == 0)
            continue;   /* filters' refusals, as upstream counts them: not evictions tried */
        snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - f->pod) : 0, f->pod);
        const char *v[] = { result_of(f->why), f->plugin, f->profile, ns, f->node, NULL, NULL };
        workload_labels(r, f->pod, &v[5], &v[6], &held);
        ebb_metric_add(ev_total, v, 1);
        ebb_metric_add(ev_old, v, 1);
        /* Every outcome of an eviction ends in this plan, whichever way it
         * failed (an answer, a request never sent, a PDB the evictor cannot
         * decide): "api-error" is the one cause that is not the policy's
         * decision, and what --once's exit status reports. */
        if (strcmp(f->why, ebb_why_name(EBB_WHY_API_ERROR)) == 0)
            r->evictions_failed++;
    }
    warned_free(&warned);
    warned_free(&held);
    for (size_t i = 0; i < p->nerrors; i++) {
        const char *v[] = { p->errors[i].plugin, p->errors[i].profile };
        ebb_metric_add(errs, v, 1);
    }
    for (size_t i = 0; i < p->nnotes; i++) {
        char note[600];
        if (strncmp(p->notes[i].message, "quarantined:", 12) != 0)
            continue;
        snprintf(note, sizeof(note), "plugin %s of profile %s %s", p->notes[i].plugin,
                 p->notes[i].profile, p->notes[i].message);
        ebb_kube_evict_self_event(r->evict, "Warning", "PluginQuarantined", note);
    }
    ebb_metric_reset(ebb_metrics_find(r->metrics, "ebb_plugin_quarantined"));
    ebb_metric_reset(ebb_metrics_find(r->metrics, "ebb_plugin_memory_bytes"));
    for (size_t i = 0; i < n && i < 64; i++) {
        const char *v[] = { t[i].plugin, t[i].profile };
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_plugin_quarantined"), v, t[i].quarantined);
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_plugin_memory_bytes"), v, (double)t[i].memory);
        if (triggered)
            continue;   /* durations are those of the periodic cycle */
        ebb_metric_observe(ebb_metrics_find(r->metrics, "descheduler_strategy_duration_seconds"), v,
                           (double)t[i].last_ns / 1e9);
        ebb_metric_observe(ebb_metrics_find(r->metrics, "descheduler_descheduler_strategy_duration_seconds"),
                           v, (double)t[i].last_ns / 1e9);
    }
    if (!triggered) {
        ebb_metric_observe(ebb_metrics_find(r->metrics, "descheduler_loop_duration_seconds"), NULL, seconds);
        ebb_metric_observe(ebb_metrics_find(r->metrics, "descheduler_descheduler_loop_duration_seconds"), NULL,
                           seconds);
    }
    {
        const char *v[] = { triggered ? "triggered" : "done" };
        ebb_metric_add(ebb_metrics_find(r->metrics, "ebb_cycles_total"), v, 1);
    }
    ebb_log(EBB_LOG_INFO, "%s %d: %zu evicted, %zu refused, %zu plugin errors in %.3f s%s",
            triggered ? "triggered run, cycle" : "cycle", p->cycles, p->nevictions, p->nrefusals, p->nerrors,
            seconds, r->o.dry_run ? " (dry run)" : "");
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
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_watch_streamed_lists_total"), v,
                       (double)st[i].streamed);
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_watch_resumes_total"), v, (double)st[i].resumes);
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_watch_errors_total"), v, (double)st[i].errors);
    }
    ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_leader"), NULL,
                   r->stuck ? 0 : r->leader ? ebb_leader_leading(r->leader) : 1);
    if (r->busy)
        return;   /* the cache and the engine are the worker's: their gauges keep their values */
    for (size_t i = 0; r->cache && i < EBB_ARRAY_LEN(kinds); i++) {
        const char *v[] = { ebb_kind_name(kinds[i]) };
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_cache_objects"), v,
                       (double)ebb_cache_count(r->cache, kinds[i]));
    }
    if (r->inf) {
        uint64_t live, moves, size = ebb_informers_spill_bytes(r->inf, &live, &moves);
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_cache_spill_bytes"), NULL, (double)size);
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_cache_spill_live_bytes"), NULL, (double)live);
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_cache_spill_reclaims_total"), NULL,
                       (double)moves);
    }
    ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_evictions_inflight"), NULL,
                   r->engine ? (double)ebb_engine_evictions_inflight(r->engine) : 0);
}

/* ---- objects skipped ------------------------------------------------------------- */

/* A name fit for an Event's path and body: what the API server's names
 * are made of (a hostile server's are not sent on). */
static bool plain_name(const char *s)
{
    if (s == NULL || s[0] == '\0')
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '.' || *s == '_'))
            return false;
    return true;
}

static const char *kind_api_version(int kind)
{
    switch (kind) {
    case EBB_KIND_PDB: return "policy/v1";
    case EBB_KIND_PRIORITY_CLASS: return "scheduling.k8s.io/v1";
    case EBB_KIND_KOORD_NODE_METRIC: return "slo.koordinator.sh/v1alpha1";
    case EBB_KIND_NODE_METRICS:
    case EBB_KIND_POD_METRICS: return NULL;   /* not stored objects: no Event */
    default: return "v1";
    }
}

/* An object the informers skipped: always counted
 * (ebb_objects_skipped_total{resource,reason}); a warning naming it and a
 * Warning Event on it (not in a dry run, and by the leader only), at most
 * SKIP_BURST at once and then one every SKIP_EVERY_MS, so a flood of bad
 * objects floods neither the log nor the API server. */
static void on_skip(void *ud, const char *resource, const struct ebb_skip *why)
{
    struct runner *r = ud;
    const char *v[] = { resource, ebb_skip_reason(why->reason) };
    char kind[64], note[1200];
    uint64_t now = uv_now(r->loop);
    const char *av = kind_api_version(why->kind);
    size_t k;

    ebb_metric_add(ebb_metrics_find(r->metrics, "ebb_objects_skipped_total"), v, 1);
    r->skip_tokens += (double)(now - r->skip_refilled) / SKIP_EVERY_MS;
    if (r->skip_tokens > SKIP_BURST)
        r->skip_tokens = SKIP_BURST;
    r->skip_refilled = now;
    if (r->skip_tokens < 1) {
        r->skip_unreported++;
        return;
    }
    r->skip_tokens -= 1;
    snprintf(kind, sizeof(kind), "%s", ebb_kind_name(why->kind));
    for (k = 0; kind[k]; k++)
        kind[k] = (char)(kind[k] >= 'A' && kind[k] <= 'Z' ? kind[k] - 'A' + 'a' : kind[k]);
    ebb_log(EBB_LOG_WARN, "skipped %s %s%s%s: %s%s%s (%s; it is left out of every decision)%s", kind,
            why->ns, why->ns[0] ? "/" : "", why->name[0] ? why->name : "(no name)", why->err.field,
            why->err.field[0] ? ": " : "", why->err.msg, ebb_skip_reason(why->reason),
            r->skip_unreported ? "; more were skipped and not logged (ebb_objects_skipped_total)" : "");
    r->skip_unreported = 0;
    if (r->o.dry_run || av == NULL || why->reason == EBB_SKIP_TOO_MANY ||
        (r->leader && !ebb_leader_leading(r->leader)) ||
        !plain_name(why->name) || (why->ns[0] && !plain_name(why->ns)))
        return;
    snprintf(note, sizeof(note), "ebb cannot keep this %s and leaves it out of every decision: %s%s%s",
             ebb_kind_name(why->kind), why->err.field, why->err.field[0] ? ": " : "", why->err.msg);
    {
        struct ebb_kube_event e = {
            .ns = why->ns[0] ? why->ns : NULL, .name = why->name,
            .uid = plain_name(why->uid) ? why->uid : NULL, .kind = ebb_kind_name(why->kind),
            .api_version = av, .type = "Warning", .reason = "ObjectSkipped", .action = "Skipped",
            .note = note, .instance = r->leader ? ebb_leader_identity(r->leader) : NULL,
        };
        ebb_kube_evict_event(r->evict, &e);
    }
}

/* ---- HTTP ------------------------------------------------------------------------- */

static void on_http(struct ebb_http_req *req, void *ud)
{
    struct runner *r = ud;
    const char *path = ebb_http_req_path(req);

    if (strcmp(path, "/metrics") == 0 && !r->o.disable_metrics) {
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
        if (r->stuck) {
            char body[512];
            int n = snprintf(body, sizeof(body), "%s\n", r->stuck_msg);
            ebb_http_respond(req, 500, "text/plain", body, (size_t)n < sizeof(body) ? (size_t)n : sizeof(body) - 1);
            return;
        }
        ebb_http_respond(req, 200, "text/plain", "ok", 2);
    } else if (strcmp(path, "/readyz") == 0) {
        /* not ready while any resource is not current (not synced, or
         * broken past --max-stale), each named with why */
        char body[2048];
        size_t n = r->inf ? ebb_informers_not_current(r->inf, (uint64_t)(r->o.max_stale_s * 1000),
                                                      body + 13, sizeof(body) - 14)
                          : 1;
        if (r->inf == NULL) {
            ebb_http_respond(req, 503, "text/plain", "caches not synced\n", 18);
        } else if (n > 0) {
            size_t len;
            memcpy(body, "not current: ", 13);
            len = strlen(body);
            body[len++] = '\n';
            ebb_http_respond(req, 503, "text/plain", body, len);
        } else if (r->leader && ebb_leader_error(r->leader)) {
            /* a Lease ebb cannot read or write: it never leads, say so */
            int k = snprintf(body, sizeof(body), "leader election: %s\n", ebb_leader_error(r->leader));
            ebb_http_respond(req, 503, "text/plain", body, k > 0 && (size_t)k < sizeof(body) ? (size_t)k : sizeof(body) - 1);
        } else if (ebb__run_memory_error(r)) {
            int k = snprintf(body, sizeof(body), "memory of evictions: %s\n", ebb__run_memory_error(r));
            ebb_http_respond(req, 503, "text/plain", body, k > 0 && (size_t)k < sizeof(body) ? (size_t)k : sizeof(body) - 1);
        } else {
            ebb_http_respond(req, 200, "text/plain", "ok", 2);
        }
    } else {
        ebb_http_respond(req, 404, "text/plain", "not found\n", 10);
    }
}

/* ---- the cycle ------------------------------------------------------------------ */

static void schedule_next(struct runner *r, uint64_t ms);

static void on_trigger(uv_timer_t *t);

void ebb__run_trigger_soon(struct runner *r)
{
    uv_timer_start(&r->trigger_timer, on_trigger, 0, 0);
}

void ebb__run_cycle_finished(struct runner *r)
{
    double seconds = (double)(uv_hrtime() - r->cycle_t0) / 1e9;
    bool triggered = r->run_triggered;

    r->in_cycle = false;
    r->run_triggered = false;
    ebb_informers_hold(r->inf, false);   /* may report changes: trigger_due */
    if (ebb_cache_text_wanted(r->cache) || ebb_engine_reads_object(r->engine)) {
        if (!ebb_cache_keeps_text(r->cache))
            ebb_log(EBB_LOG_WARN, "a script read pod.object or node.object, which ebb keeps only "
                    "for scripts that name it (a computed key it cannot see, or a chunk loaded "
                    "during the cycle): kept from now on; pods and nodes are listed again, and "
                    "read nil until then");
        ebb_informers_keep_text(r->inf, true);
    }
    account_cycle(r, seconds, triggered);
    ebb__run_memory_save(r);   /* before a --once run ends, too */
    if (!triggered)
        r->cycles_done++;
    ebb__run_try_swap(r);   /* a generation that waited for this cycle to end */
    if (r->reload_due && !r->o.once && !r->stopping) {
        r->reload_due = false;
        ebb__run_reload(r, r->reload_forced);   /* changes seen during the cycle */
    }
    if (r->o.once && r->evictions_failed > 0 && r->exit_code == 0) {
        ebb_log(EBB_LOG_ERROR, "%zu evictions failed (api-error): exit %d", r->evictions_failed,
                EXIT_EVICTIONS_FAILED);
        r->exit_code = EXIT_EVICTIONS_FAILED;
    }
    if (r->o.once || r->stopping) {
        ebb__run_shutdown(r);
        return;
    }
    if (!triggered) {
        schedule_next(r, (uint64_t)(r->o.interval_s * 1000));
    } else if (r->cycle_due) {
        r->cycle_due = false;
        schedule_next(r, 0);
    }
    if (r->trigger_due) {
        r->trigger_due = false;
        ebb__run_trigger_soon(r);
    }
}

static void on_resume(uv_timer_t *t)
{
    struct runner *r = t->data;

    if (!r->in_cycle || r->busy || !ebb_engine_cycle_ready(r->engine))
        return;
    ebb__run_post_job(r, JOB_RESUME);
}

void ebb__run_schedule_resume(struct runner *r)
{
    if (r->busy)
        return;   /* the job's end looks again */
    if (r->in_cycle && ebb_engine_cycle_ready(r->engine))
        uv_timer_start(&r->resume_timer, on_resume, 0, 0);
    if (r->stopping && !r->in_cycle && ebb_engine_evictions_inflight(r->engine) == 0)
        ebb__run_shutdown(r);
}

static void skip(struct runner *r, const char *reason, const char *detail)
{
    const char *v[] = { reason };
    ebb_metric_add(ebb_metrics_find(r->metrics, "ebb_cycles_skipped_total"), v, 1);
    ebb_log(EBB_LOG_WARN, "cycle skipped: %s%s%s", reason, detail ? ": " : "", detail ? detail : "");
}

/* The first sync, and the cycle of a --once run, have --sync-timeout
 * from the start: past it, the run ends with status 1 and says what is
 * missing (a CronJob's run must not hang until it is killed). */
static bool past_sync_timeout(struct runner *r, const char *what)
{
    struct ebb_informer_stats st[16];
    char detail[2048];
    size_t n, len = 0;

    if (r->synced_once && !r->o.once)
        return false;
    if (uv_now(r->loop) - r->started_ms < (uint64_t)(r->o.sync_timeout_s * 1000))
        return false;
    n = ebb_informers_stats(r->inf, st, 16);
    detail[0] = '\0';
    for (size_t i = 0; i < n && i < 16 && len < sizeof(detail); i++) {
        if (st[i].synced && (st[i].watching || st[i].last_error == NULL))
            continue;
        len += (size_t)snprintf(detail + len, sizeof(detail) - len, "%s%s (%s)", len ? ", " : "",
                                st[i].resource,
                                st[i].last_error ? st[i].last_error
                                : st[i].synced   ? "watch not up"
                                                 : "no answer yet");
    }
    ebb_log(EBB_LOG_ERROR, "%s within %.0f s (--sync-timeout): %s", what, r->o.sync_timeout_s,
            detail[0] ? detail : "every watch is up now");
    r->exit_code = 1;
    ebb__run_shutdown(r);
    return true;
}

static void on_cycle_timer(uv_timer_t *t)
{
    struct runner *r = t->data;
    char which[64] = "", detail[1024];
    uint64_t broken;

    if (r->stopping || r->stuck)
        return;
    if (r->in_cycle) {
        r->cycle_due = true;   /* a triggered run is on: right after it */
        return;
    }
    if (r->busy) {
        schedule_next(r, 100);   /* a new generation is being built */
        return;
    }
    if (!ebb_informers_synced(r->inf) || !ebb_prom_live_synced(r->prom)) {
        if (!r->announced_wait) {
            ebb_log(EBB_LOG_INFO, "waiting for the caches to sync");
            r->announced_wait = true;
        }
        if (!r->synced_once && ebb_informers_refused(r->inf, detail, sizeof(detail))) {
            /* credentials or rights the server refuses: waiting for
             * --sync-timeout would only hide the server's answer */
            ebb_log(EBB_LOG_ERROR, "the caches cannot sync: %s", detail);
            r->exit_code = 1;
            ebb__run_shutdown(r);
            return;
        }
        if (past_sync_timeout(r, "the caches did not sync"))
            return;
        schedule_next(r, 200);
        return;
    }
    r->synced_once = true;
    if (!ebb__run_memory_ready(r)) {
        /* the memory of evictions is read before the first cycle */
        if (!past_sync_timeout(r, "the memory of evictions was not read"))
            schedule_next(r, 100);
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
            if (!past_sync_timeout(r, "the one cycle could not start on a fresh view"))
                schedule_next(r, 1000);
            return;
        }
        schedule_next(r, (uint64_t)(r->o.interval_s * 1000));
        return;
    }
    r->in_cycle = true;
    r->cycle_t0 = uv_hrtime();
    ebb_informers_hold(r->inf, true);
    ebb__run_post_job(r, JOB_BEGIN);
}

static void schedule_next(struct runner *r, uint64_t ms)
{
    if (!r->stopping)
        uv_timer_start(&r->cycle_timer, on_cycle_timer, ms, 0);
}

/* ---- event-triggered runs --------------------------------------------------------- */

/* Changes have settled: run the plugins that react to them, on the nodes
 * concerned, under the same rules as a cycle (synced caches, a fresh view,
 * the lease). A run in progress goes first; changes seen before the caches
 * synced, on a standby or on a stale view are dropped (the periodic cycle
 * covers them). */
static void on_trigger(uv_timer_t *t)
{
    struct runner *r = t->data;
    const char *const *nodes;
    char which[64] = "", names[256] = "", kinds[160] = "";
    size_t n, k = 0, kk = 0;
    unsigned mask;

    if (r->stopping || r->stuck)
        return;
    if (r->in_cycle || r->busy) {
        r->trigger_due = true;
        return;
    }
    mask = ebb_changes_take(r->changes, &nodes, &n) & r->triggers;
    if (mask == 0 || n == 0)
        return;
    if (!ebb_informers_synced(r->inf) || (r->leader && !ebb_leader_leading(r->leader)) ||
        ebb_informers_broken_ms(r->inf, which, sizeof(which)) > (uint64_t)(r->o.max_stale_s * 1000))
        return;
    for (unsigned b = 0; b < EBB_TRIGGER_MAX_BIT; b++)
        if (mask & (1u << b))
            kk += (size_t)snprintf(kinds + kk, kk < sizeof(kinds) ? sizeof(kinds) - kk : 0, "%s%s",
                                   kk ? ", " : "", ebb_trigger_name(1u << b));
    for (size_t i = 0; i < n && k < sizeof(names); i++)
        k += (size_t)snprintf(names + k, sizeof(names) - k, "%s%s", i ? ", " : "", nodes[i]);
    ebb_log(EBB_LOG_INFO, "changes (%s) on %zu node%s (%s): running the plugins that react to them", kinds,
            n, n == 1 ? "" : "s", names);
    r->in_cycle = true;
    r->run_triggered = true;
    r->cycle_t0 = uv_hrtime();
    ebb_informers_hold(r->inf, true);
    /* the names stay the changes' until the next take: no take while held */
    r->job_mask = mask;
    r->job_nodes = nodes;
    r->job_nnodes = n;
    ebb__run_post_job(r, JOB_TRIGGER);
}

static void on_change(void *ud, int kind, const char *type, ebb_str ns, ebb_str name)
{
    struct runner *r = ud;
    unsigned wanted;

    if (kind == EBB_KIND_POD && name != NULL)
        ebb_engine_pod_changed(r->engine, ns, name);
    if (r->changes == NULL)
        return;
    /* until every cache has synced, only the fingerprints are kept: the
     * listing itself is not a change */
    wanted = r->triggers && ebb_informers_synced(r->inf) ? r->triggers : 0;
    if (ebb_changes_observe(r->changes, r->cache, kind, type, ns, name, wanted) == 0)
        return;
    if (r->in_cycle)
        r->trigger_due = true;
    else if (!uv_is_active((uv_handle_t *)&r->trigger_timer))
        uv_timer_start(&r->trigger_timer, on_trigger, (uint64_t)(r->o.trigger_delay_s * 1000), 0);
}

/* ---- leadership, signals, shutdown ------------------------------------------------ */

static void on_leading(void *ud, bool leading)
{
    struct runner *r = ud;
    /* the moment the lease is lost, nothing more is evicted (the loop sends
     * nothing more; the engine learns it when no job runs) */
    ebb__run_apply_allowed(r);
    if (leading)
        ebb__run_memory_reload(r);   /* what the last leader remembered */
    /* a new leader runs a cycle at once, not after a standby's wait or a
     * whole interval: the one before it may have left work undone */
    if (leading && !r->stopping && !r->in_cycle && !r->o.once)
        schedule_next(r, 0);
}

void ebb__run_closed_one(void *ud)
{
    struct runner *r = ud;
    if (--r->pending_close == 0)
        uv_stop(r->loop);
}

void ebb__run_closed_handle(uv_handle_t *h)
{
    ebb__run_closed_one(h->data);
}

void ebb__run_shutdown(struct runner *r)
{
    static bool done;

    if (done)
        return;
    if (r->in_cycle || r->busy || ebb_engine_evictions_inflight(r->engine) > 0) {
        r->stopping = true;   /* finish what is in flight first */
        return;
    }
    done = true;
    r->stopping = true;
    /* each close is counted before it starts, the informers' (the last)
     * from the start: the loop stops when the last of them is done */
    r->pending_close = 1 + 6;
    uv_timer_stop(&r->cycle_timer);
    uv_timer_stop(&r->resume_timer);
    uv_timer_stop(&r->stats_timer);
    uv_timer_stop(&r->trigger_timer);
    r->cycle_timer.data = r->resume_timer.data = r->stats_timer.data = r->trigger_timer.data = r;
    uv_close((uv_handle_t *)&r->cycle_timer, ebb__run_closed_handle);
    uv_close((uv_handle_t *)&r->resume_timer, ebb__run_closed_handle);
    uv_close((uv_handle_t *)&r->stats_timer, ebb__run_closed_handle);
    uv_close((uv_handle_t *)&r->trigger_timer, ebb__run_closed_handle);
    r->sigterm.data = r->sigint.data = r;
    uv_close((uv_handle_t *)&r->sigterm, ebb__run_closed_handle);
    uv_close((uv_handle_t *)&r->sigint, ebb__run_closed_handle);
    ebb__run_reload_close(r);
    ebb__run_handoff_close(r);
    if (r->leader) {
        r->pending_close++;
        ebb_leader_close(r->leader, ebb__run_closed_one, r);
        r->leader = NULL;
    }
    if (r->prom) {
        r->pending_close++;
        ebb_prom_live_close(r->prom, ebb__run_closed_one, r);
        r->prom = NULL;
    }
    if (r->httpd) {
        r->pending_close++;
        ebb_httpd_close(r->httpd, ebb__run_closed_one, r);
        r->httpd = NULL;
    }
    /* the informers go last but one: the kube client goes last */
    ebb_informers_close(r->inf, ebb__run_closed_one, r);
    r->inf = NULL;
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct runner *r = s->data;
    ebb_log(EBB_LOG_INFO, "%s: no new evictions; finishing what is in flight",
            signum == SIGTERM ? "SIGTERM" : "SIGINT");
    r->stopping = true;
    ebb__run_apply_allowed(r);
    if (r->busy)
        ebb__run_bound_job(r);
    ebb__run_shutdown(r);
}

static void on_stats(uv_timer_t *t)
{
    refresh_gauges(t->data);
}

static void report(const struct ebb_error *err)
{
    char buf[2048];
    ebb_error_format(err, buf, sizeof(buf));
    fprintf(stderr, "ebb: error: %s\n", buf);
}

static void on_drain_tick(uv_timer_t *t)
{
    struct runner *r = t->data;

    if (ebb_kube_inflight(r->kube) == 0 || uv_now(r->loop) >= r->drain_until)
        uv_timer_stop(t);
}

/* Everything but the client is closed: the writes still in flight (the
 * Events of the last evictions) get up to DRAIN_MS to finish, so a --once
 * run does not drop them on its way out. */
static void drain_writes(struct runner *r)
{
    uv_timer_t t;

    if (ebb_kube_inflight(r->kube) == 0)
        return;
    uv_update_time(r->loop);
    r->drain_until = uv_now(r->loop) + DRAIN_MS;
    uv_timer_init(r->loop, &t);
    t.data = r;
    uv_timer_start(&t, on_drain_tick, 10, 10);
    uv_run(r->loop, UV_RUN_DEFAULT);   /* returns once the timer stops */
    uv_close((uv_handle_t *)&t, NULL);
    /* the timer's close, not the requests still out: the client's close
     * cancels those (a request retrying against a server that does not
     * answer would otherwise keep the loop, and the process, alive) */
    uv_run(r->loop, UV_RUN_NOWAIT);
    if (ebb_kube_inflight(r->kube) > 0)
        ebb_log(EBB_LOG_WARN, "exiting with %zu requests unanswered after %d ms",
                ebb_kube_inflight(r->kube), DRAIN_MS);
}

static int register_run_metrics(struct ebb_metrics *m)
{
    static const char *const result[] = { "result", NULL };
    static const char *const hash[] = { "hash", NULL };
    static const char *const plugin[] = { "plugin", "profile", NULL };
    static const char *const skipped[] = { "resource", "reason", NULL };

    if (!ebb_metrics_family(m, EBB_METRIC_COUNTER, "ebb_policy_reloads_total",
                            "Policy reloads, by result (success: the new generation runs; failure: "
                            "the last good one keeps running)", result, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_GAUGE, "ebb_policy_generation_info",
                            "The content hash of the policy generation that runs (value 1)", hash, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_GAUGE, "ebb_policy_generation",
                            "Number of the policy generation that runs (1 at start)", NULL, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_GAUGE, "ebb_plugin_quarantined",
                            "1 while the plugin is set aside after failing runs in a row", plugin, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_GAUGE, "ebb_plugin_stuck",
                            "1 once a call of the plugin has run past its time budget by more than "
                            "the budget again (at least 1 s) and does not stop: the process no longer "
                            "runs cycles and /healthz fails", plugin, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_GAUGE, "ebb_plugin_memory_bytes",
                            "Bytes the plugin's state holds after the last cycle (a Lua plugin: its "
                            "lua_State, under its memory cap)", plugin, NULL, 0) ||
        !ebb_metrics_family(m, EBB_METRIC_COUNTER, "ebb_objects_skipped_total",
                            "Objects of a server's answer ebb cannot keep, skipped alone (left out "
                            "of every decision), by resource and reason (invalid, wrong-kind, "
                            "too-large, not-json, too-many)", skipped, NULL, 0))
        return EBB_ENOMEM;
    return 0;
}

int ebb_run_main(int argc, char **argv)
{
    struct runner *r = calloc(1, sizeof(*r));
    struct ebb_error err = { 0 };
    struct ebb_kube_opts ko = { 0 };
    struct ebb_informers_opts io = { 0 };
    bool metrics = false, koord = false;
    int rc;

    if (r == NULL)
        return 1;
    ebb_evmem_init(&r->memory, 0);
    if ((rc = parse(argc, argv, &r->o)) != 0) {
        free(r);
        return rc;
    }
    /* what the user wrote is checked before anything talks to the cluster */
    if ((rc = ebb__run_first_generation(r, &err)) != 0)
        goto input;
    ebb__run_needs(ebb_engine_policy(r->engine), &metrics, &koord);
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
    if ((rc = ebb_kube_evict_create(r->kube, r->engine, ebb__run_on_eviction_done, r, &r->evict)) != 0)
        goto fail;
    ebb_engine_set_evictor(r->engine, ebb__run_queue_eviction, r);
    if ((rc = ebb_prom_live_create(r->loop, r->kube, r->kc, ebb_engine_policy(r->engine),
                                   ebb__run_on_prom_answer, r, &r->prom)) != 0)
        goto fail;
    ebb_engine_set_prom(r->engine, ebb__run_queue_query, r);
    io.page_size = r->o.page_size;
    io.sync_mode = r->o.sync_mode;
    io.metrics = metrics;
    io.koord_metrics = koord;
    io.object_text = ebb_engine_reads_object(r->engine);
    if ((rc = ebb_informers_create(r->loop, r->kube, r->cache, &io, &r->inf)) != 0)
        goto fail;
    if (!r->o.once) {
        /* node fingerprints cost little; they are kept even when no plugin
         * reacts to changes yet, as a reload may bring one */
        if ((rc = ebb_changes_create(&r->changes)) != 0)
            goto fail;
        r->triggers = ebb_engine_triggers(r->engine);
        ebb_informers_on_change(r->inf, on_change, r);
    }
    ebb_informers_on_skip(r->inf, on_skip, r);
    if ((rc = ebb_metrics_create(&r->metrics)) != 0 || (rc = ebb_metrics_register_standard_with(r->metrics, r->o.metrics_workload_labels)) != 0 ||
        (rc = register_run_metrics(r->metrics)) != 0)
        goto fail;
    ebb__run_generation_metrics(r);
    ebb_engine_on_background_done(r->engine, on_background_done, r);
    if (r->o.port > 0) {
        /* /metrics, /healthz, /readyz: GETs, a few clients (scrapers, probes) */
        struct ebb_httpd_tls tls = { .cert_file = r->o.tls_cert_file, .key_file = r->o.tls_key_file,
                                     .cert_dir = r->o.cert_dir };
        struct ebb_httpd_opts ho = { .host = r->o.bind, .port = r->o.port, .handler = on_http, .ud = r,
                                     .max_body = 64u << 10, .max_connections = 64,
                                     .max_total_queued = 32u << 20,
                                     .tls = r->o.plain_http ? NULL : &tls };
        if ((rc = ebb_httpd_create(r->loop, &ho, &r->httpd, &err)) != 0) {
            /* the flag that names the file (httpd.h: err.field) */
            const char *flag = strcmp(err.field, "cert_file") == 0  ? "--tls-cert-file"
                               : strcmp(err.field, "key_file") == 0 ? "--tls-private-key-file"
                               : strcmp(err.field, "cert_dir") == 0 ? "--cert-dir"
                                                                    : NULL;
            if (flag != NULL) {
                char msg[sizeof(err.msg)], file[sizeof(err.file)];
                snprintf(msg, sizeof(msg), "%s", err.msg);
                snprintf(file, sizeof(file), "%s", err.file);
                ebb_error_set(&err, rc, file, 0, flag, "%s", msg);
            }
            goto input;
        }
        ebb_log(EBB_LOG_INFO, "serving %s/healthz, /readyz over %s on %s:%d%s",
                r->o.disable_metrics ? "" : "/metrics, ", r->o.plain_http ? "HTTP" : "HTTPS", r->o.bind,
                ebb_httpd_port(r->httpd),
                r->o.plain_http || r->o.tls_cert_file ? ""
                : r->o.cert_dir                       ? " (self-signed certificate in --cert-dir)"
                                                      : " (self-signed certificate, in memory)");
    }
    uv_timer_init(r->loop, &r->cycle_timer);
    uv_timer_init(r->loop, &r->resume_timer);
    uv_timer_init(r->loop, &r->stats_timer);
    uv_timer_init(r->loop, &r->trigger_timer);
    r->cycle_timer.data = r->resume_timer.data = r->stats_timer.data = r->trigger_timer.data = r;
    if ((rc = ebb__run_handoff_init(r)) != 0)
        goto fail;
    uv_signal_init(r->loop, &r->sigterm);
    uv_signal_init(r->loop, &r->sigint);
    r->sigterm.data = r->sigint.data = r;
    uv_signal_start(&r->sigterm, on_signal, SIGTERM);
    uv_signal_start(&r->sigint, on_signal, SIGINT);
    signal(SIGPIPE, SIG_IGN);
    ebb__run_reload_init(r);

    if (r->o.leader_elect) {
        ebb_engine_set_eviction_allowed(r->engine, false);
        if ((rc = ebb_leader_create(r->loop, r->kube, &r->o.lo, on_leading, r, &r->leader)) != 0 ||
            (rc = ebb_kube_evict_set_identity(r->evict, ebb_leader_identity(r->leader))) != 0)
            goto fail;
        ebb_leader_start(r->leader);
    }
    if ((rc = ebb__run_memory_init(r)) != 0)
        goto fail;
    ebb_log(EBB_LOG_INFO, "ebb %s: %s, policy %s, %s%s", EBB_VERSION, r->kc->source, r->o.policy,
            r->o.once ? "one cycle" : "every interval", r->o.dry_run ? ", dry run" : "");
    ebb_informers_start(r->inf);
    uv_update_time(r->loop);
    r->started_ms = uv_now(r->loop);
    uv_timer_start(&r->stats_timer, on_stats, 5000, 5000);
    schedule_next(r, 0);

    uv_run(r->loop, UV_RUN_DEFAULT);
    /* a read of the memory is not a write to drain: against a server that
     * never answers it would retry for ever */
    ebb_memstore_stop_reading(r->memstore);
    drain_writes(r);

    /* the kube client goes last: everything else is closed now */
    r->pending_close = 1;
    ebb_kube_close(r->kube, ebb__run_closed_one, r);
    uv_run(r->loop, UV_RUN_DEFAULT);
    uv_loop_close(r->loop);
    ebb__run_handoff_free(r);
    rc = r->exit_code;
    ebb_kube_evict_destroy(r->evict);   /* every answer is in: the client is closed */
    ebb_memstore_destroy(r->memstore);
    ebb_metrics_destroy(r->metrics);
    if (EBB_FREE_AT_EXIT) {   /* the engines and their cache are the last things held */
        ebb_engine_destroy(r->pending);
        ebb_engine_destroy(r->engine);
        ebb_predictor_destroy(r->predictor);
        ebb_evmem_free(&r->memory);
        ebb_changes_destroy(r->changes);
        ebb_kube_config_free(r->kc);
        free(r);
    }
    return rc;
input:
    /* said whole by report(): no "cannot start" line after it */
    report(&err);
    rc = EXIT_INPUT;
    goto release;
fail:
    ebb_log(EBB_LOG_ERROR, "cannot start: %s", ebb_strerror(rc));
release:
    ebb__run_handoff_free(r);
    ebb_changes_destroy(r->changes);
    ebb_prom_live_close(r->prom, NULL, NULL);
    if (r->kube) {
        /* nothing started yet: the client has no request in flight */
        ebb_kube_close(r->kube, NULL, NULL);
        uv_run(r->loop, UV_RUN_DEFAULT);
    }
    ebb_kube_evict_destroy(r->evict);
    ebb_memstore_destroy(r->memstore);
    ebb_engine_destroy(r->engine);
    ebb_predictor_destroy(r->predictor);
    ebb_evmem_free(&r->memory);
    ebb_kube_config_free(r->kc);
    free(r);
    return rc < 0 ? 1 : rc;
}
