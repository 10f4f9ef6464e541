/* ebb/prom_result.h: a Prometheus instant query's answer, as the metrics
 * provider (upstream v0.33+, `metricsProviders: [{source: Prometheus}]`)
 * judges it: the answer must be a vector whose samples each carry an
 * `instance` label (the node's name) and a value in [0, 1]; otherwise the
 * result holds upstream's error text and no samples.
 *
 * Pure data (engine/model/prom_result.c): the client that asks a server is
 * ebb/prometheus.h; `ebb record --policy` stores results in the snapshot as
 * items of kind PrometheusQueryResult (apiVersion ebb/v1alpha1) and the
 * cache keeps decoded ones, so `ebb simulate` answers the same queries
 * without a server.
 */
#ifndef EBB_PROM_RESULT_H
#define EBB_PROM_RESULT_H

#include "common.h"
#include "str.h"

struct cJSON;

#define EBB_PROM_API_VERSION "ebb/v1alpha1"
#define EBB_PROM_KIND "PrometheusQueryResult"

struct ebb_prom_sample {
    char *instance;
    double value;
};

struct ebb_prom_result {
    char *query;
    ebb_str key;                 /* the query, interned: the cache's key (decoded results) */
    int64_t time;                /* evaluation time, seconds since the epoch */
    char *error;                 /* NULL when the result is usable */
    bool no_client;              /* error: there is no client to ask ("client not initialized") */
    char *result_type;           /* "vector", "matrix", ...; NULL when none came back */
    size_t n;
    struct ebb_prom_sample *samples;   /* instance -> value, in the answer's order */
    char *data;                  /* the answer's "data" object as JSON (for ebb record) */
};

void ebb_prom_result_free(struct ebb_prom_result *r);   /* NULL-safe */
/* A deep copy (NULL on ENOMEM). */
struct ebb_prom_result *ebb_prom_result_copy(const struct ebb_prom_result *r);
/* A result that failed for `why` (printf-style); NULL on ENOMEM. */
struct ebb_prom_result *ebb_prom_result_failed(const char *query, int64_t time, bool no_client,
                                               const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The answer of /api/v1/query: HTTP `status` and body (status < 0: a
 * transport failure, body its message). Never fails but on ENOMEM (NULL):
 * what is wrong goes into result->error, in upstream's words. */
struct ebb_prom_result *ebb_prom_result_parse(const char *query, int64_t time, int status,
                                              const char *body, size_t len);
/* A snapshot item of kind PrometheusQueryResult:
 *   {"apiVersion": "ebb/v1alpha1", "kind": "PrometheusQueryResult",
 *    "metadata": {"name": "q-<hash>"}, "query": "...", "time": "RFC 3339",
 *    "data": {...the answer's data...}} or, instead of data, "error": "..."
 * EBB_ESCHEMA with err->field on a bad item. */
int ebb_prom_result_decode(const struct cJSON *item, struct ebb_prom_result **out,
                           struct ebb_error *err);
/* The item for `r` (malloc'd JSON text), or NULL on ENOMEM. */
char *ebb_prom_result_json(const struct ebb_prom_result *r);

#endif
