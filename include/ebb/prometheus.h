/* ebb/prometheus.h: the Prometheus metrics provider (upstream v0.33+,
 * `metricsProviders: [{source: Prometheus, prometheus: {url, authToken}}]`).
 *
 * A result is one instant query, `POST {url}/api/v1/query` with
 * `query=...&time=...`, judged as upstream's NodeUsageFromPrometheusMetrics
 * does: the answer must be a vector whose samples each carry an `instance`
 * label (the node's name) and a value in [0, 1]; otherwise the result holds
 * upstream's error text and no samples.
 *
 * The client runs queries on a libuv loop through the same libcurl multi
 * machinery as the Kubernetes client (engine/kube/kube_http.c), with the bearer
 * token of the policy: the `prometheusAuthToken` key of the Secret named by
 * authToken.secretReference, read (GET) and watched (WATCH on that one
 * name) through the Kubernetes client and re-read whenever it changes; a
 * missing Secret or key leaves no client ("prometheus client not
 * initialized", as upstream). Without authToken, in a cluster, the service
 * account token. Every callback runs on the loop thread, in an I/O
 * callback: never call into Lua from one.
 *
 * `ebb record --policy` stores results in the snapshot as items of kind
 * PrometheusQueryResult (apiVersion ebb/v1alpha1) so that `ebb simulate`
 * answers the same queries without a server (see ebb_prom_result_json).
 */
#ifndef EBB_PROMETHEUS_H
#define EBB_PROMETHEUS_H

#include <uv.h>

#include "common.h"
#include "prom_result.h"
#include "str.h"

struct cJSON;
struct ebb_kube;
struct ebb_engine;
struct ebb_policy;
struct ebb_metrics_provider;
struct ebb_kube_config;

/* upstream's prometheusAuthTokenSecretKey */
#define EBB_PROM_TOKEN_KEY "prometheusAuthToken"

/* ---- the client --------------------------------------------------------- */

struct ebb_prom;

struct ebb_prom_opts {
    const char *url;             /* the provider's url (a path prefix is kept) */
    const char *token;           /* a fixed bearer token (may be NULL) */
    const char *token_file;      /* or a file to read it from, re-read as it rotates */
    /* authToken.secretReference: the token comes from this Secret, read
     * and watched through `kube` (required then) */
    const char *secret_namespace, *secret_name;
    struct ebb_kube *kube;
    const char *ca_file;         /* NULL: the system's CA certificates */
    long timeout_ms;             /* per query; 0: 30000 */
    /* called on the loop whenever the Secret's token came, changed or went
     * (may be NULL) */
    void (*on_token)(void *ud, bool have, const char *why);
    void *ud;
};

/* The client answers a query with a result it hands to `cb` (which owns
 * it); cb never runs inside ebb_prom_query. */
typedef void (*ebb_prom_done_fn)(struct ebb_prom_result *r, void *ud);

int ebb_prom_create(uv_loop_t *loop, const struct ebb_prom_opts *o, struct ebb_prom **out,
                    struct ebb_error *err);
/* EBB_ENOMEM or 0; without a token from the Secret (yet, or any more) the
 * result is "prometheus client not initialized". */
int ebb_prom_query(struct ebb_prom *p, const char *query, int64_t time, ebb_prom_done_fn cb,
                   void *ud);
/* The Secret's token is there (always true without a Secret). */
bool ebb_prom_ready(const struct ebb_prom *p);
/* Cancel what is in flight (each cb runs with a failed result) and free
 * everything; `cb` runs once memory is freed. */
void ebb_prom_close(struct ebb_prom *p, void (*cb)(void *ud), void *ud);

/* Every query once, on a private loop, answered before this returns:
 * out[i] (owned by the caller) for queries[i]. For `ebb simulate
 * --prometheus-url` and `ebb record` (o->kube, if set, must be on `loop`;
 * NULL loop: a private one). */
int ebb_prom_query_all(uv_loop_t *loop, const struct ebb_prom_opts *o, const char *const *queries,
                       size_t n, int64_t time, struct ebb_prom_result **out);

/* ebb run's glue: a client for the running policy's provider (none when
 * it has none). ebb_prom_live_query asks it (on the loop): 0 with *now
 * set when it answers at once (no client), or EBB_CYCLE_WAITING and
 * `answer` gets the result (owned by the callee) on the loop once it is
 * in. ebb_prom_live_policy after a reload: a changed URL or Secret makes a
 * new client. `kube` is the runner's client (for the Secret), `kc` its
 * configuration (in-cluster: the service account token and CA, as
 * upstream). */
struct ebb_prom_live;
int ebb_prom_live_create(uv_loop_t *loop, struct ebb_kube *kube, const struct ebb_kube_config *kc,
                         const struct ebb_policy *pol,
                         void (*answer)(void *ud, struct ebb_prom_result *r), void *ud,
                         struct ebb_prom_live **out);
int ebb_prom_live_query(struct ebb_prom_live *l, const char *query, int64_t time,
                        struct ebb_prom_result **now);
int ebb_prom_live_policy(struct ebb_prom_live *l, const struct ebb_policy *pol);
/* The token Secret has been read once (its informer synced, upstream
 * waits for that before the first cycle); true without a Secret. */
bool ebb_prom_live_synced(const struct ebb_prom_live *l);
/* `cb` (may be NULL) runs once memory is freed. */
void ebb_prom_live_close(struct ebb_prom_live *l, void (*cb)(void *ud), void *ud);


#endif
