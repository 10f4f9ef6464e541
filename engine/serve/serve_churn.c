/* serve_churn.c: `ebb serve --churn RATE`, pod events for benchmarks of a
 * watcher's ingest.
 *
 * Called on the loop thread: started by the first pods watch
 * (serve_read.c), ticking on its own timer, freed by the command. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_int.h"

/* Pod events for benchmarks of a watcher's ingest: of every 20, one pod is
 * added (a copy of an existing one under a new name and uid), one that was
 * added is deleted (oldest first; the pods as loaded stay), and the others
 * change one of CHURN_POOL pods picked at random when the churn starts: a
 * label, an annotation or a container's restart count in turn. Each is a
 * new version with the next resourceVersion, sent to the watchers like
 * any change; a tick's events go out in one write per watcher. The pool
 * keeps its pods parsed (a pod changed meanwhile by a client is parsed
 * again), so making an event costs printing it. Generation waits while a
 * pods watcher has more than CHURN_LAG bytes it has not read: the rate is a
 * ceiling, the watchers' reading the pace. */
struct churn_pod {
    char *key;
    uint64_t rv;                     /* the version `json` is */
    cJSON *json;
};

#define CHURN_TICK_MS 10
#define CHURN_LAG (8u << 20)   /* more than a tick's worth read at 20,000+ events/s: the watcher never waits for a tick */
#define CHURN_MAX_PER_TICK 4000
#define CHURN_POOL 4096

/* Pool entry `cp` as the store has it now: parsed again when a client
 * changed or deleted it (then another pod takes the place). NULL: none. */
static cJSON *churn_pod(struct server *s, struct churn_pod *cp)
{
    struct ver *cur = ebb__store_get(s, R_PODS, cp->key);

    if (cur != NULL && cur->rv == cp->rv && cp->json != NULL)
        return cp->json;
    if (cur == NULL) {
        struct store *st = &s->stores[R_PODS];
        char *key;
        if (st->n == 0 || (key = strdup((cur = st->v[ebb__serve_random(s) % st->n])->key)) == NULL)
            return NULL;
        free(cp->key);
        cp->key = key;
    }
    cJSON_Delete(cp->json);
    cp->json = ebb__ver_json(cur);
    cp->rv = cur->rv;
    return cp->json;
}

void ebb__churn_free(struct server *s)
{
    for (size_t i = 0; i < s->npool; i++) {
        free(s->pool[i].key);
        cJSON_Delete(s->pool[i].json);
    }
    free(s->pool);
    s->pool = NULL;
    s->npool = 0;
    for (size_t i = 0; i < s->nadded; i++)
        free(s->added[(s->added_head + i) % s->added_cap]);
    free(s->added);
    s->added = NULL;
    s->nadded = 0;
}

static void churn_add(struct server *s, const struct ver *from, uint64_t n)
{
    cJSON *obj = ebb__ver_json(from), *meta;
    char name[320], uid[40], ts[40];
    struct ver *v;

    if (obj == NULL)
        return;
    if (s->nadded == s->added_cap) {
        size_t cap = s->added_cap ? s->added_cap * 2 : 64;
        char **a = malloc(cap * sizeof(*a));
        if (a == NULL) {
            cJSON_Delete(obj);
            return;
        }
        for (size_t i = 0; i < s->nadded; i++)
            a[i] = s->added[(s->added_head + i) % s->added_cap];
        free(s->added);
        s->added = a;
        s->added_head = 0;
        s->added_cap = cap;
    }
    meta = ebb__json_meta(obj);
    snprintf(name, sizeof(name), "%.200s-churn-%" PRIu64, from->name, n);
    ebb__serve_uid(s, uid, sizeof(uid));
    ebb__serve_now(ts, sizeof(ts));
    ebb__json_set_str(meta, "name", name);
    ebb__json_set_str(meta, "uid", uid);
    ebb__json_set_str(meta, "creationTimestamp", ts);
    if (ebb__store_put(s, R_PODS, obj, &v) == 0 &&
        (s->added[(s->added_head + s->nadded) % s->added_cap] = strdup(v->key)) != NULL)
        s->nadded++;
}

static void churn_delete(struct server *s)
{
    char *key;

    if (s->nadded == 0)
        return;
    key = s->added[s->added_head];
    s->added_head = (s->added_head + 1) % s->added_cap;
    s->nadded--;
    ebb__store_delete(s, R_PODS, key, NULL);   /* gone already (deleted by a client): nothing */
    free(key);
}

/* `text` with the value after its first `needle` replaced by `value`: a
 * string (quoted; the values churn replaces hold no escapes) or a number.
 * NULL when the needle is not there. */
static char *text_with(const char *text, size_t len, const char *needle, bool quoted,
                       const char *value, size_t *outlen)
{
    const char *at = strstr(text, needle), *end;
    size_t vl = strlen(value);
    char *t;

    if (at == NULL)
        return NULL;
    at += strlen(needle);
    if (quoted) {
        if ((end = strchr(at, '"')) == NULL)
            return NULL;
    } else {
        for (end = at; *end >= '0' && *end <= '9'; end++)
            ;
        if (end == at)
            return NULL;
    }
    *outlen = (size_t)(at - text) + vl + (len - (size_t)(end - text));
    if ((t = malloc(*outlen + 1)) == NULL)
        return NULL;
    memcpy(t, text, (size_t)(at - text));
    memcpy(t + (at - text), value, vl);
    memcpy(t + (at - text) + vl, end, len - (size_t)(end - text));
    t[*outlen] = '\0';
    return t;
}

/* The next version of `prev` whose text is `text` (owned): what selectors
 * read is prev's, but for the label `lkey` set to `lval` (NULL: none). */
static struct ver *ver_derive(const struct ver *prev, char *text, size_t len, uint64_t rv,
                              const char *lkey, const char *lval)
{
    struct ver *v = calloc(1, sizeof(*v));
    bool ok;

    if (v == NULL) {
        free(text);
        return NULL;
    }
    v->refs = 1;
    v->rv = rv;
    v->text = text;
    v->len = len;
    ok = (v->key = strdup(prev->key)) && (v->ns = strdup(prev->ns)) &&
         (v->name = strdup(prev->name)) && (v->uid = strdup(prev->uid));
    for (size_t i = 0; ok && i < EBB_ARRAY_LEN(prev->fields); i++)
        ok = prev->fields[i] == NULL || (v->fields[i] = strdup(prev->fields[i])) != NULL;
    if (ok && (v->labels.kv = calloc(prev->labels.n + 1, sizeof(*v->labels.kv))) == NULL)
        ok = false;
    for (uint32_t i = 0; ok && i < prev->labels.n; i++) {
        v->labels.kv[i].key = ebb_str_ref(prev->labels.kv[i].key);
        v->labels.kv[i].value = ebb_str_ref(prev->labels.kv[i].value);
        v->labels.n++;
    }
    if (ok && lkey != NULL) {
        ebb_str k = ebb_str_cstr(lkey), val = ebb_str_cstr(lval);
        uint32_t i = 0;
        while (i < v->labels.n && v->labels.kv[i].key != k)
            i++;
        if (k == NULL || val == NULL) {
            ebb_str_release(k);
            ebb_str_release(val);
            ok = false;
        } else if (i < v->labels.n) {
            ebb_str_release(k);
            ebb_str_release(v->labels.kv[i].value);
            v->labels.kv[i].value = val;
        } else {
            v->labels.kv[v->labels.n++] = (struct ebb_kv){ k, val };
        }
    }
    if (!ok) {
        ebb__ver_release(v);
        return NULL;
    }
    return v;
}

/* A change to pod `cur` made on its text: the resourceVersion and one
 * value replaced. 1 when the text lacks what to replace (the label or
 * annotation is not there yet): then the caller changes the parsed pod. */
static int churn_edit(struct server *s, const struct ver *cur, uint64_t n, struct ver **out)
{
    static const char *const needles[] = { "\"ebb.dev/churn\":\"", "\"ebb.dev/churn-note\":\"",
                                           "\"restartCount\":" };
    char rvs[24], val[32], *t1, *t2;
    size_t l1, l2;
    int k = (int)(n % 3);

    snprintf(rvs, sizeof(rvs), "%" PRIu64, s->rv + 1);
    if (k == 2) {
        const char *at = strstr(cur->text, needles[2]);
        snprintf(val, sizeof(val), "%ld", at ? strtol(at + strlen(needles[2]), NULL, 10) + 1 : 0L);
    } else {
        snprintf(val, sizeof(val), "%" PRIu64, n);
    }
    if ((t1 = text_with(cur->text, cur->len, needles[k], k != 2, val, &l1)) == NULL)
        return 1;
    t2 = text_with(t1, l1, "\"resourceVersion\":\"", true, rvs, &l2);
    free(t1);
    if (t2 == NULL)
        return 1;
    *out = ver_derive(cur, t2, l2, s->rv + 1, k == 0 ? "ebb.dev/churn" : NULL, val);
    return 0;
}

static void churn_one(struct server *s)
{
    struct store *st = &s->stores[R_PODS];
    uint64_t n = s->churned++;
    struct churn_pod *cp;
    struct ver *v;
    cJSON *obj, *cs, *c0, *rc;
    char val[32];

    if (st->n == 0 || s->npool == 0)
        return;
    if (n % 20 == 0) {
        churn_add(s, st->v[ebb__serve_random(s) % st->n], n);
        return;
    }
    if (n % 20 == 10) {
        churn_delete(s);
        return;
    }
    cp = &s->pool[ebb__serve_random(s) % s->npool];
    /* most changes: on the text, without parsing or printing the pod */
    if ((v = ebb__store_get(s, R_PODS, cp->key)) != NULL && v->rv == cp->rv) {
        struct ver *next = NULL;
        if (churn_edit(s, v, n, &next) == 0) {
            if (ebb__store_put_ver(s, R_PODS, next, &v) == 0)
                cp->rv = v->rv;
            return;
        }
    }
    if ((obj = churn_pod(s, cp)) == NULL)
        return;
    snprintf(val, sizeof(val), "%" PRIu64, n);
    cs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "status"),
                                          "containerStatuses");
    c0 = cJSON_GetArrayItem(cs, 0);
    rc = cJSON_GetObjectItemCaseSensitive(c0, "restartCount");
    if (n % 3 == 2 && cJSON_IsNumber(rc))
        cJSON_SetNumberValue(rc, rc->valuedouble + 1);
    else
        ebb__json_set_str(ebb__json_child(ebb__json_meta(obj),
                                          n % 3 == 0 ? "labels" : "annotations"),
                          n % 3 == 0 ? "ebb.dev/churn" : "ebb.dev/churn-note", val);
    v = ebb__ver_make_kept(&ebb__rdefs[R_PODS], obj, s->rv + 1);
    if (ebb__store_put_ver(s, R_PODS, v, &v) == 0)
        cp->rv = v->rv;
}

static void on_churn(uv_timer_t *t)
{
    struct server *s = t->data;
    uint64_t now = uv_now(s->loop), n;

    if (ebb__watch_lagging(s, R_PODS, CHURN_LAG)) {
        s->churn_last = now;   /* what a lagging watcher could not take is not owed */
        return;
    }
    s->churn_credit += s->o.churn_rate * (double)(now - s->churn_last) / 1000.0;
    s->churn_last = now;
    n = (uint64_t)s->churn_credit;
    if (n > CHURN_MAX_PER_TICK) {
        n = CHURN_MAX_PER_TICK;
        s->churn_credit = CHURN_MAX_PER_TICK;
    }
    s->churn_credit -= (double)n;
    s->holding = true;
    for (uint64_t i = 0; i < n && (s->o.churn_total == 0 || s->churned < s->o.churn_total); i++)
        churn_one(s);
    s->holding = false;
    ebb__watch_flush_all(s);
    if (s->o.churn_total > 0 && s->churned >= s->o.churn_total) {
        uv_timer_stop(&s->churn_timer);
        ebb_log(EBB_LOG_INFO, "churn: %" PRIu64 " pod events made, resourceVersion %" PRIu64,
                s->churned, s->rv);
    }
}

/* The first pods watch starts the churn. */
void ebb__churn_start(struct server *s)
{
    struct store *st = &s->stores[R_PODS];

    if (s->o.churn_rate <= 0 || s->churning || s->stopping)
        return;
    s->churning = true;
    if ((s->pool = calloc(CHURN_POOL, sizeof(*s->pool))) != NULL) {
        for (size_t i = 0; i < CHURN_POOL && st->n > 0; i++) {
            const struct ver *v = st->v[ebb__serve_random(s) % st->n];
            if ((s->pool[s->npool].key = strdup(v->key)) == NULL)
                break;
            s->pool[s->npool].rv = v->rv;
            s->pool[s->npool++].json = ebb__ver_json(v);   /* NULL: parsed when first used */
        }
    }
    s->churn_last = uv_now(s->loop);
    uv_timer_start(&s->churn_timer, on_churn, CHURN_TICK_MS, CHURN_TICK_MS);
    ebb_log(EBB_LOG_INFO, "churn: up to %.0f pod events/s from now", s->o.churn_rate);
}
