/* The Prometheus result model: one instant query's answer as upstream's
 * NodeUsageFromPrometheusMetrics judges it, and its snapshot item (kind
 * PrometheusQueryResult); see include/ebb/prom_result.h. Pure data: the
 * client that asks a server is engine/kube/prometheus.c, the cache keeps
 * decoded results for `ebb simulate`.
 *
 * Sources: kubernetes-sigs/descheduler v0.36.0
 * pkg/framework/plugins/nodeutilization/usageclients.go and the error
 * texts of prometheus/client_golang's api/prometheus/v1.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ebb/prom_result.h"

/* ---- results ------------------------------------------------------------ */

void ebb_prom_result_free(struct ebb_prom_result *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->samples[i].instance);
    free(r->samples);
    free(r->query);
    ebb_str_release(r->key);
    free(r->error);
    free(r->result_type);
    free(r->data);
    free(r);
}

static struct ebb_prom_result *result_new(const char *query, int64_t time)
{
    struct ebb_prom_result *r = calloc(1, sizeof(*r));

    if (r == NULL)
        return NULL;
    r->time = time;
    if ((r->query = strdup(query ? query : "")) == NULL) {
        free(r);
        return NULL;
    }
    return r;
}

static struct ebb_prom_result *vfailed(struct ebb_prom_result *r, bool no_client, const char *fmt,
                                       va_list ap)
{
    char msg[1024];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    for (size_t i = 0; i < r->n; i++)
        free(r->samples[i].instance);
    free(r->samples);
    r->samples = NULL;
    r->n = 0;
    free(r->error);
    r->no_client = no_client;
    if ((r->error = strdup(msg)) == NULL) {
        ebb_prom_result_free(r);
        return NULL;
    }
    return r;
}

static struct ebb_prom_result *fail_with(struct ebb_prom_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static struct ebb_prom_result *fail_with(struct ebb_prom_result *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    r = vfailed(r, false, fmt, ap);
    va_end(ap);
    return r;
}

struct ebb_prom_result *ebb_prom_result_failed(const char *query, int64_t time, bool no_client,
                                               const char *fmt, ...)
{
    struct ebb_prom_result *r = result_new(query, time);
    va_list ap;

    if (r == NULL)
        return NULL;
    va_start(ap, fmt);
    r = vfailed(r, no_client, fmt, ap);
    va_end(ap);
    return r;
}

struct ebb_prom_result *ebb_prom_result_copy(const struct ebb_prom_result *r)
{
    struct ebb_prom_result *c;

    if (r == NULL || (c = result_new(r->query, r->time)) == NULL)
        return NULL;
    c->no_client = r->no_client;
    if ((r->error && (c->error = strdup(r->error)) == NULL) ||
        (r->result_type && (c->result_type = strdup(r->result_type)) == NULL) ||
        (r->data && (c->data = strdup(r->data)) == NULL) ||
        (r->n > 0 && (c->samples = calloc(r->n, sizeof(*c->samples))) == NULL))
        goto fail;
    for (; c->n < r->n; c->n++) {
        c->samples[c->n].value = r->samples[c->n].value;
        if ((c->samples[c->n].instance = strdup(r->samples[c->n].instance)) == NULL)
            goto fail;
    }
    return c;
fail:
    ebb_prom_result_free(c);
    return NULL;
}

/* A float as Go's strconv.FormatFloat(v, 'f', -1, 64) writes it (how %v
 * prints a model.SampleValue): the fewest digits that read back the same. */
static void format_value(double v, char *buf, size_t len)
{
    if (isnan(v)) {
        snprintf(buf, len, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, len, "%sInf", v < 0 ? "-" : "+");
        return;
    }
    for (int p = 0; p <= 17; p++) {
        snprintf(buf, len, "%.*f", p, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* NodeUsageFromPrometheusMetrics over the answer's "data". */
static struct ebb_prom_result *judge(struct ebb_prom_result *r, const cJSON *data)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(data, "resultType");
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(data, "result"), *s;
    size_t n = 0;

    if (!cJSON_IsString(type))
        return fail_with(r, "unable to capture prometheus metrics: bad_response: no resultType in "
                            "the answer");
    if ((r->result_type = strdup(type->valuestring)) == NULL)
        goto nomem;
    if (strcmp(type->valuestring, "vector") != 0)
        return fail_with(r, "expected query results to be of type \"vector\", got \"%s\" instead",
                         type->valuestring);
    if (!cJSON_IsArray(result))
        return fail_with(r, "unable to capture prometheus metrics: bad_response: the vector has no "
                            "result list");
    if ((r->samples = calloc((size_t)cJSON_GetArraySize(result) + 1, sizeof(*r->samples))) == NULL)
        goto nomem;
    cJSON_ArrayForEach(s, result) {
        const cJSON *metric = cJSON_GetObjectItemCaseSensitive(s, "metric");
        const cJSON *inst = cJSON_GetObjectItemCaseSensitive(metric, "instance");
        const cJSON *value = cJSON_GetObjectItemCaseSensitive(s, "value");
        const cJSON *text = cJSON_IsArray(value) ? cJSON_GetArrayItem(value, 1) : NULL;
        char *end;
        double v;

        if (!cJSON_IsString(inst))
            return fail_with(r, "the collected metrics sample is missing 'instance' key");
        if (!cJSON_IsString(text))
            return fail_with(r, "unable to capture prometheus metrics: bad_response: the sample "
                                "of %s has no value", inst->valuestring);
        v = strtod(text->valuestring, &end);
        if (end == text->valuestring || *end != '\0')
            return fail_with(r, "unable to capture prometheus metrics: bad_response: the sample "
                                "of %s has the value \"%s\"", inst->valuestring, text->valuestring);
        /* NaN fails upstream's comparisons and would turn into a huge
         * MetricResource: out of the interval here */
        if (!(v >= 0 && v <= 1)) {
            char f[64];
            format_value(v, f, sizeof(f));
            return fail_with(r, "the collected metrics sample for \"%s\" has value %s outside of "
                                "<0; 1> interval", inst->valuestring, f);
        }
        if ((r->samples[n].instance = strdup(inst->valuestring)) == NULL)
            goto nomem;
        r->samples[n++].value = v;
        r->n = n;
    }
    return r;
nomem:
    ebb_prom_result_free(r);
    return NULL;
}

/* client_golang's API client: 2xx, or 400/422/503 with an error body, are
 * read; any other status is "server returned HTTP status". */
struct ebb_prom_result *ebb_prom_result_parse(const char *query, int64_t time, int status,
                                              const char *body, size_t len)
{
    struct ebb_prom_result *r = result_new(query, time);
    const cJSON *st, *data;
    cJSON *j;

    if (r == NULL)
        return NULL;
    if (status < 0)
        return fail_with(r, "unable to capture prometheus metrics: %.*s", (int)(len > 600 ? 600 : len),
                         body ? body : "");
    if (status / 100 != 2 && status != 400 && status != 422 && status != 503)
        return fail_with(r, "unable to capture prometheus metrics: server returned HTTP status %d",
                         status);
    if ((j = cJSON_ParseWithLength(body, len)) == NULL)
        return fail_with(r, "unable to capture prometheus metrics: bad_response: the answer "
                            "(HTTP %d) is not JSON", status);
    st = cJSON_GetObjectItemCaseSensitive(j, "status");
    if (cJSON_IsString(st) && strcmp(st->valuestring, "error") == 0) {
        const cJSON *et = cJSON_GetObjectItemCaseSensitive(j, "errorType");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(j, "error");
        r = fail_with(r, "unable to capture prometheus metrics: %s: %s",
                      cJSON_IsString(et) ? et->valuestring : "error",
                      cJSON_IsString(msg) ? msg->valuestring : "");
    } else if (!cJSON_IsObject(data = cJSON_GetObjectItemCaseSensitive(j, "data"))) {
        r = fail_with(r, "unable to capture prometheus metrics: bad_response: no data in the "
                         "answer (HTTP %d)", status);
    } else {
        const cJSON *warnings = cJSON_GetObjectItemCaseSensitive(j, "warnings"), *w;
        cJSON_ArrayForEach(w, warnings)
            if (cJSON_IsString(w))
                ebb_log(EBB_LOG_INFO, "prometheus metrics warnings: %s", w->valuestring);
        if ((r->data = cJSON_PrintUnformatted(data)) == NULL) {
            ebb_prom_result_free(r);
            r = NULL;
        } else {
            r = judge(r, data);
        }
    }
    cJSON_Delete(j);
    return r;
}

int ebb_prom_result_decode(const cJSON *item, struct ebb_prom_result **out, struct ebb_error *err)
{
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(item, "query");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(item, "time");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(item, "data");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(item, "error");
    struct ebb_prom_result *r;
    int64_t time = 0;

    *out = NULL;
    if (!cJSON_IsString(q) || q->valuestring[0] == '\0')
        return ebb_error_set(err, EBB_ESCHEMA, NULL, 0, "query", "required: the PromQL text");
    if (t != NULL && (!cJSON_IsString(t) || ebb_time_parse(t->valuestring, &time) != 0))
        return ebb_error_set(err, EBB_ESCHEMA, NULL, 0, "time", "expected an RFC 3339 time");
    if (e != NULL && !cJSON_IsString(e))
        return ebb_error_set(err, EBB_ESCHEMA, NULL, 0, "error", "expected a string");
    if (e == NULL && !cJSON_IsObject(data))
        return ebb_error_set(err, EBB_ESCHEMA, NULL, 0, "data",
                             "required unless `error` is: the answer's data object");
    if (e != NULL) {
        r = ebb_prom_result_failed(q->valuestring, time, false, "%s", e->valuestring);
    } else {
        char *text = cJSON_PrintUnformatted(data);
        if (text == NULL)
            return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
        r = result_new(q->valuestring, time);
        if (r != NULL) {
            r->data = text;
            r = judge(r, data);
        } else {
            free(text);
        }
    }
    if (r != NULL && (r->key = ebb_str_cstr(r->query)) == NULL) {
        ebb_prom_result_free(r);
        r = NULL;
    }
    if (r == NULL)
        return ebb_error_set(err, EBB_ENOMEM, NULL, 0, NULL, "out of memory");
    *out = r;
    return 0;
}

char *ebb_prom_result_json(const struct ebb_prom_result *r)
{
    cJSON *o = cJSON_CreateObject(), *meta, *data;
    char name[32], when[32];
    char *text = NULL;

    if (o == NULL)
        return NULL;
    snprintf(name, sizeof(name), "q-%016llx",
             (unsigned long long)ebb_fnv64(EBB_FNV64_INIT, r->query, strlen(r->query)));
    ebb_time_format(r->time, when, sizeof(when));
    if (cJSON_AddStringToObject(o, "apiVersion", EBB_PROM_API_VERSION) == NULL ||
        cJSON_AddStringToObject(o, "kind", EBB_PROM_KIND) == NULL ||
        (meta = cJSON_AddObjectToObject(o, "metadata")) == NULL ||
        cJSON_AddStringToObject(meta, "name", name) == NULL ||
        cJSON_AddStringToObject(o, "query", r->query) == NULL ||
        cJSON_AddStringToObject(o, "time", when) == NULL)
        goto done;
    if (r->data != NULL) {
        if ((data = cJSON_Parse(r->data)) == NULL)
            goto done;
        cJSON_AddItemToObject(o, "data", data);
    } else if (cJSON_AddStringToObject(o, "error", r->error ? r->error : "no answer") == NULL) {
        goto done;
    }
    text = cJSON_PrintUnformatted(o);
done:
    cJSON_Delete(o);
    return text;
}

