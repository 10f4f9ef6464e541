/* `ebb record -o FILE`: the live cluster as a snapshot, in the format
 * `ebb simulate` reads (a v1 List, as `kubectl get -o json` prints it),
 * including metrics.k8s.io NodeMetrics/PodMetrics and Koordinator
 * NodeMetric objects when the API serves them. Resources are listed page by
 * page and written item by item, so memory stays small; managedFields are
 * dropped as they are of no use to a simulation. The file is written to
 * FILE.tmp and renamed when complete: a failed recording leaves no half
 * snapshot behind. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "ebb/decode.h"
#include "ebb/flags.h"
#include "ebb/kube.h"
#include "ebb/memstore.h"
#include "ebb/prometheus.h"
#include "ebb/record.h"
#include "ebb/watch.h"
#include "ebb/lua.h"
#include "ebb/reload.h"
#include "ebb.h"

/* `ebb record --policy`: the policy's queries (ebb_engine_prom_queries of
 * an engine built from it) asked at this instant of its provider (or of
 * `url`), the token read from its Secret through `kc`, each result as a
 * snapshot item (ebb_prom_result_json) in items[0..n). A policy that does
 * not load is EBB_ESCHEMA/EBB_EIO with its file and line; a query that
 * fails is recorded as failed. */
struct ebb_prom_record {
    const char *policy;
    const char *dirs[16];
    size_t ndirs;
    const char *url;             /* NULL: the provider's */
    int64_t time;                /* the instant asked; 0: now */
    const struct ebb_kube_config *kc;
    char **items;                /* out */
    size_t n;
};
static int prom_record(struct ebb_prom_record *pr, struct ebb_error *err);
static void prom_record_free(struct ebb_prom_record *pr);

#define EXIT_INPUT 2
/* Where `ebb record` looks for the memory of evictions unless told: the
 * namespace deploy/ installs ebb in. */
#define EBB_MEMORY_NAMESPACE_DEFAULT "ebb-system"

struct resource {
    const char *path;
    const char *api_version;   /* items of a List carry no apiVersion/kind */
    const char *kind;
    bool optional;             /* 404 (not served) or 403 (not granted): left out, said */
    const char *without;       /* what a snapshot without it lacks */
};

static const struct resource resources[] = {
    { "/api/v1/nodes", "v1", "Node", false, NULL },
    { "/api/v1/namespaces", "v1", "Namespace", false, NULL },
    { "/apis/scheduling.k8s.io/v1/priorityclasses", "scheduling.k8s.io/v1", "PriorityClass", false, NULL },
    { "/api/v1/persistentvolumeclaims", "v1", "PersistentVolumeClaim", false, NULL },
    { "/apis/policy/v1/poddisruptionbudgets", "policy/v1", "PodDisruptionBudget", false, NULL },
    { "/api/v1/pods", "v1", "Pod", false, NULL },
    /* what the scheduler's default topology spreading reads (simulate --reschedule);
     * optional only so that a server without them (ebb serve) records the rest */
#define SPREAD "ebb simulate --reschedule spreads replacements without them (the " \
               "scheduler's default topology spreading)"
#define LOAD "strategies of actual usage (LowNodeLoad) have none to read"
    { "/api/v1/services", "v1", "Service", true, SPREAD },
    { "/api/v1/replicationcontrollers", "v1", "ReplicationController", true, SPREAD },
    { "/apis/apps/v1/replicasets", "apps/v1", "ReplicaSet", true, SPREAD },
    { "/apis/apps/v1/statefulsets", "apps/v1", "StatefulSet", true, SPREAD },
    { "/apis/metrics.k8s.io/v1beta1/nodes", "metrics.k8s.io/v1beta1", "NodeMetrics", true, LOAD },
    { "/apis/metrics.k8s.io/v1beta1/pods", "metrics.k8s.io/v1beta1", "PodMetrics", true, LOAD },
    { "/apis/slo.koordinator.sh/v1alpha1/nodemetrics", "slo.koordinator.sh/v1alpha1", "NodeMetric", true,
      LOAD },
#undef SPREAD
#undef LOAD
};

struct recorder {
    uv_loop_t *loop;
    struct ebb_kube *kube;
    FILE *out;
    size_t res;                /* resources[res] being listed */
    size_t items, counts[EBB_ARRAY_LEN(resources)];
    int page_size;
    const char *memory_ns;     /* --eviction-memory-namespace; "" or NULL: not asked */
    bool memory_asked;
    bool memory_recorded;
    int rc;
    char error[1024];
};

static void next_page(struct recorder *r, const char *cont);

static void closed(void *ud)
{
    (void)ud;
}

static void finish(struct recorder *r, int rc)
{
    r->rc = rc;
    ebb_kube_close(r->kube, closed, r);
}

static bool write_item(struct recorder *r, cJSON *item, const struct resource *res)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(item, "metadata");
    char *text;

    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    if (!cJSON_HasObjectItem(item, "apiVersion"))
        cJSON_AddStringToObject(item, "apiVersion", res->api_version);
    if (!cJSON_HasObjectItem(item, "kind"))
        cJSON_AddStringToObject(item, "kind", res->kind);
    if ((text = cJSON_PrintUnformatted(item)) == NULL)
        return false;
    fprintf(r->out, "%s\n        %s", r->items ? "," : "", text);
    free(text);
    r->items++;
    return !ferror(r->out);
}

static void on_page(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    struct recorder *r = ud;
    const struct resource *res = &resources[r->res];
    cJSON *list, *items, *it;
    const cJSON *cont;
    char next[4096] = "";
    (void)req;

    if (status == 404 && res->optional) {
        ebb_log(EBB_LOG_INFO, "record: %s is not served; skipped", res->path);
        r->res++;
        next_page(r, NULL);
        return;
    }
    if (status == 403 && res->optional && r->counts[r->res] == 0) {
        /* not granted (a ServiceAccount without deploy/'s record component):
         * the rest of the cluster is still worth a snapshot; said, with
         * what the snapshot then lacks */
        char what[600], msg[1024];
        snprintf(what, sizeof(what), "LIST %s", res->path);
        ebb_kube_answer_text(what, status, body, len, msg, sizeof(msg));
        ebb_log(EBB_LOG_WARN, "record: %s objects left out of the snapshot: %s; %s", res->kind, msg,
                res->without);
        r->res++;
        next_page(r, NULL);
        return;
    }
    if (status != 200) {
        char what[600];
        snprintf(what, sizeof(what), "LIST %s", res->path);
        ebb_kube_answer_text(what, status, body, len, r->error, sizeof(r->error));
        finish(r, 1);
        return;
    }
    {
        /* a NUL the server keeps is written as U+FFFD, as ebb reads it:
         * cJSON would cut the string there */
        char *text = malloc(len + 1);
        list = NULL;
        if (text != NULL) {
            memcpy(text, body, len);
            if (ebb_json_nul_scrub(text, len))
                list = cJSON_ParseWithLength(text, len);
            free(text);
        }
    }
    if (list == NULL || !cJSON_IsArray(items = cJSON_GetObjectItemCaseSensitive(list, "items"))) {
        snprintf(r->error, sizeof(r->error), "LIST %s: the answer is not a List", res->path);
        cJSON_Delete(list);
        finish(r, 1);
        return;
    }
    cJSON_ArrayForEach(it, items) {
        if (!write_item(r, it, res)) {
            snprintf(r->error, sizeof(r->error), "cannot write the snapshot");
            cJSON_Delete(list);
            finish(r, 1);
            return;
        }
        r->counts[r->res]++;
    }
    cont = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(list, "metadata"), "continue");
    if (cJSON_IsString(cont) && cont->valuestring[0]) {
        if (strlen(cont->valuestring) >= sizeof(next)) {   /* cut, it would name another page */
            snprintf(r->error, sizeof(r->error), "LIST %s: a continue token longer than %zu bytes",
                     res->path, sizeof(next) - 1);
            cJSON_Delete(list);
            finish(r, 1);
            return;
        }
        snprintf(next, sizeof(next), "%s", cont->valuestring);
    }
    cJSON_Delete(list);
    if (next[0] == '\0')
        r->res++;
    next_page(r, next[0] ? next : NULL);
}

/* The memory of evictions (ebb/evmemory.h, kept by `ebb run` in the
 * ConfigMap EBB_MEMSTORE_NAME of ebb's namespace) recorded as the item
 * it is in the cluster, so that `ebb simulate` and `ebb test` start from
 * it and `ebb serve` serves it. Optional: a memory ebb cannot read (not
 * there, not granted) is left out with a message, the record goes on. */
static const struct resource memory_res = { "", "v1", "ConfigMap", true, NULL };

static void on_memory(struct ebb_kube_req *req, int status, const char *body, size_t len, void *ud)
{
    struct recorder *r = ud;
    cJSON *cm;
    (void)req;

    if (status == 200 && (cm = cJSON_ParseWithLength(body, len)) != NULL) {
        bool ok = write_item(r, cm, &memory_res);
        cJSON_Delete(cm);
        if (!ok) {
            snprintf(r->error, sizeof(r->error), "cannot write the snapshot");
            finish(r, 1);
            return;
        }
        r->memory_recorded = true;
    } else if (status == 404) {
        ebb_log(EBB_LOG_INFO, "record: no memory of evictions in namespace %s (ConfigMap %s): "
                "none recorded", r->memory_ns, EBB_MEMSTORE_NAME);
    } else {
        char what[600], msg[1024];
        snprintf(what, sizeof(what), "GET configmaps/%s in namespace %s", EBB_MEMSTORE_NAME,
                 r->memory_ns);
        ebb_kube_answer_text(what, status, body, len, msg, sizeof(msg));
        ebb_log(EBB_LOG_WARN, "record: the memory of evictions is left out: %s", msg);
    }
    finish(r, 0);
}

static void ask_memory(struct recorder *r)
{
    char path[600];
    struct ebb_kube_req_opts o = { .method = "GET", .on_done = on_memory, .ud = r,
                                   .max_bytes = 4u << 20 };
    char *esc = curl_easy_escape(NULL, r->memory_ns, 0);

    r->memory_asked = true;
    if (esc == NULL) {
        snprintf(r->error, sizeof(r->error), "out of memory");
        finish(r, 1);
        return;
    }
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", esc, EBB_MEMSTORE_NAME);
    curl_free(esc);
    o.path = path;
    if (ebb_kube_request(r->kube, &o, NULL) != 0) {
        snprintf(r->error, sizeof(r->error), "cannot start a request");
        finish(r, 1);
    }
}

static void next_page(struct recorder *r, const char *cont)
{
    char path[4096 * 3 + 400];
    struct ebb_kube_req_opts o = { .method = "GET", .on_done = on_page, .ud = r,
                                   .max_bytes = EBB_LIST_PAGE_MAX };
    char *esc = NULL;

    if (r->res == EBB_ARRAY_LEN(resources)) {
        if (r->memory_ns != NULL && r->memory_ns[0] != '\0' && !r->memory_asked)
            ask_memory(r);
        else
            finish(r, 0);
        return;
    }
    if (cont && (esc = curl_easy_escape(NULL, cont, 0)) == NULL) {
        snprintf(r->error, sizeof(r->error), "out of memory");
        finish(r, 1);
        return;
    }
    if (cont)
        snprintf(path, sizeof(path), "%s?limit=%d&continue=%s", resources[r->res].path, r->page_size, esc);
    else
        snprintf(path, sizeof(path), "%s?limit=%d", resources[r->res].path, r->page_size);
    curl_free(esc);
    o.path = path;
    if (ebb_kube_request(r->kube, &o, NULL) != 0) {
        snprintf(r->error, sizeof(r->error), "cannot start a request");
        finish(r, 1);
    }
}

int ebb_record_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "output", required_argument, NULL, 'o' },
        { "kubeconfig", required_argument, NULL, 'k' },
        { "context", required_argument, NULL, 'c' },
        { "page-size", required_argument, NULL, 'p' },
        { "policy", required_argument, NULL, 'P' },
        { "policy-dir", required_argument, NULL, 'd' },
        { "prometheus-url", required_argument, NULL, 'U' },
        { "now", required_argument, NULL, 'n' },
        { "quiet", no_argument, NULL, 'q' },
        { "eviction-memory-namespace", required_argument, NULL, 'm' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct recorder r = { .page_size = 500, .memory_ns = EBB_MEMORY_NAMESPACE_DEFAULT };
    struct ebb_kube_config *kc = NULL;
    struct ebb_error err = { 0 };
    const char *output = NULL, *kubeconfig = NULL, *context = NULL;
    struct ebb_prom_record pr = { 0 };
    char tmp[4200], buf[2048];
    int c;

    opterr = 0;
    optind = 2;
    while ((c = getopt_long(argc, argv, ":o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'k': kubeconfig = optarg; break;
        case 'c': context = optarg; break;
        case 'p': {
            long v;
            if (!ebb_flag_int("--page-size", optarg, 1, 100000, &v))
                return EXIT_INPUT;
            r.page_size = (int)v;
            break;
        }
        case 'P': pr.policy = optarg; break;
        case 'd':
            if (pr.ndirs == EBB_ARRAY_LEN(pr.dirs)) {
                fprintf(stderr, "ebb: error: --policy-dir: at most %zu directories\n", pr.ndirs);
                return EXIT_INPUT;
            }
            pr.dirs[pr.ndirs++] = optarg;
            break;
        case 'U': pr.url = optarg; break;
        case 'n':
            if (ebb_time_parse(optarg, &pr.time) != 0) {
                fprintf(stderr, "ebb: error: --now: \"%s\" is not an RFC 3339 time\n", optarg);
                return EXIT_INPUT;
            }
            break;
        case 'q': ebb_log_level = EBB_LOG_ERROR; break;
        case 'm':
            if (strlen(optarg) > 63) {
                fprintf(stderr, "ebb: error: --eviction-memory-namespace: \"%.80s\" is longer than a "
                                "namespace name (63)\n", optarg);
                return EXIT_INPUT;
            }
            r.memory_ns = optarg;
            break;
        case 'h':
            puts("usage: ebb record -o FILE [--kubeconfig FILE] [--context NAME] [--page-size 500]\n"
                 "                  [--eviction-memory-namespace ebb-system]\n"
                 "                  [--policy FILE [--policy-dir DIR]... [--prometheus-url URL] [--now TIME]]\n"
                 "  --policy: also store the results of the policy's Prometheus queries\n"
                 "            (asked at --now, default now; of --prometheus-url, default the policy's)\n"
                 "  --eviction-memory-namespace: where `ebb run` keeps its memory of evictions\n"
                 "            (the ConfigMap " EBB_MEMSTORE_NAME ", recorded when readable; \"\": not asked)");
            return 0;
        case ':':
        default:
            ebb_flag_getopt_error(c, argv, NULL);
            return EXIT_INPUT;
        }
    }
    if (output == NULL) {
        fprintf(stderr, "ebb: error: record needs -o FILE\n");
        return EXIT_INPUT;
    }
    if (ebb_kube_config_load(kubeconfig, context, &kc, &err) != 0) {
        ebb_error_format(&err, buf, sizeof(buf));
        fprintf(stderr, "ebb: error: %s\n", buf);
        return EXIT_INPUT;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp", output);
    if ((r.out = fopen(tmp, "w")) == NULL) {
        fprintf(stderr, "ebb: error: %s: cannot write\n", tmp);
        ebb_kube_config_free(kc);
        return EXIT_INPUT;
    }
    r.loop = uv_default_loop();
    if (ebb_kube_create(r.loop, kc, NULL, &r.kube, &err) != 0) {
        ebb_error_format(&err, buf, sizeof(buf));
        fprintf(stderr, "ebb: error: %s\n", buf);
        fclose(r.out);
        remove(tmp);
        ebb_kube_config_free(kc);
        return EXIT_INPUT;
    }
    fputs("{\n    \"apiVersion\": \"v1\",\n    \"kind\": \"List\",\n    \"items\": [", r.out);
    next_page(&r, NULL);
    uv_run(r.loop, UV_RUN_DEFAULT);
    uv_loop_close(r.loop);
    if (r.rc == 0 && pr.policy != NULL) {
        /* the policy's Prometheus queries, answered now, as items */
        pr.kc = kc;
        if (prom_record(&pr, &err) != 0) {
            ebb_error_format(&err, r.error, sizeof(r.error));
            r.rc = 1;
        }
        for (size_t i = 0; i < pr.n; i++) {
            fprintf(r.out, "%s\n        %s", r.items ? "," : "", pr.items[i]);
            r.items++;
        }
        prom_record_free(&pr);
    }
    ebb_kube_config_free(kc);
    fputs("\n    ],\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n", r.out);
    if (fclose(r.out) != 0 && r.rc == 0) {
        snprintf(r.error, sizeof(r.error), "%.900s: cannot write", tmp);
        r.rc = 1;
    }
    if (r.rc != 0) {
        fprintf(stderr, "ebb: error: record: %s\n", r.error);
        remove(tmp);
        return 1;
    }
    if (rename(tmp, output) != 0) {
        fprintf(stderr, "ebb: error: cannot rename %s to %s\n", tmp, output);
        remove(tmp);
        return 1;
    }
    if (ebb_log_level < EBB_LOG_INFO)
        return 0;   /* -q: errors only */
    fprintf(stderr, "ebb: recorded %zu objects to %s (", r.items, output);
    for (size_t i = 0; i < EBB_ARRAY_LEN(resources); i++)
        if (r.counts[i])
            fprintf(stderr, "%s%zu %s", i ? ", " : "", r.counts[i], resources[i].kind);
    fprintf(stderr, ")\n");
    return 0;
}

/* ---- ebb record --policy: the policy's Prometheus queries ----------------------- */

/* The policy's queries (ebb_engine_prom_queries of an engine built from
 * it) asked of its provider at one instant, each result an item of the
 * snapshot (ebb/prom_result.h). */

static void prom_record_free(struct ebb_prom_record *pr)
{
    for (size_t i = 0; i < pr->n; i++)
        free(pr->items[i]);
    free(pr->items);
    pr->items = NULL;
    pr->n = 0;
}

static void prom_kube_closed(void *ud)
{
    *(bool *)ud = true;
}

static int prom_record(struct ebb_prom_record *pr, struct ebb_error *err)
{
    struct ebb_engine_opts eo = { .now = EBB_TIME_NONE, .mode = EBB_MODE_SIMULATE,
                                  .scripts = ebb_lua_plugins() };
    struct ebb_sources src = { pr->policy, pr->dirs, pr->ndirs };
    const struct ebb_metrics_provider *mp;
    struct ebb_prom_opts o = { 0 };
    struct ebb_prom_result **res = NULL;
    struct ebb_engine *e = NULL;
    struct ebb_kube *kube = NULL;
    const char *const *queries;
    uv_loop_t loop;
    bool closed = false;
    int64_t now = pr->time != 0 ? pr->time : (int64_t)time(NULL);
    size_t n;
    int rc;

    if ((rc = ebb_generation_build(&eo, &src, &e, err)) != 0)
        return rc;
    n = ebb_engine_prom_queries(e, &queries);
    if (n == 0) {
        ebb_log(EBB_LOG_INFO, "record: the policy asks Prometheus nothing");
        ebb_engine_destroy(e);
        return 0;
    }
    if ((mp = ebb_prom_provider(ebb_engine_policy(e))) == NULL) {
        ebb_engine_destroy(e);
        return ebb_error_set(err, EBB_ESCHEMA, pr->policy, 0, "metricsProviders",
                             "the policy asks Prometheus queries but names no Prometheus provider");
    }
    if ((res = calloc(n, sizeof(*res))) == NULL || (pr->items = calloc(n, sizeof(*pr->items))) == NULL ||
        uv_loop_init(&loop) != 0) {
        free(res);
        ebb_engine_destroy(e);
        return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
    }
    o.url = pr->url ? pr->url : mp->prometheus_url;
    if (mp->secret_name != NULL) {
        o.secret_namespace = mp->secret_namespace;
        o.secret_name = mp->secret_name;
        if ((rc = ebb_kube_create(&loop, pr->kc, NULL, &kube, err)) != 0)
            goto done;
        o.kube = kube;
    }
    rc = ebb_prom_query_all(&loop, &o, queries, n, now, res);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (res[i]->error != NULL)
            ebb_log(EBB_LOG_WARN, "record: query \"%s\": %s", queries[i], res[i]->error);
        if ((pr->items[pr->n] = ebb_prom_result_json(res[i])) == NULL)
            rc = ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
        else
            pr->n++;
    }
done:
    if (kube != NULL) {
        ebb_kube_close(kube, prom_kube_closed, &closed);
        while (!closed && uv_run(&loop, UV_RUN_ONCE) != 0)
            ;
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    for (size_t i = 0; i < n; i++)
        ebb_prom_result_free(res[i]);
    free(res);
    ebb_engine_destroy(e);
    return rc;
}
