/* One call for `ebb simulate` and `ebb check`; see ebb/simulate.h. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ebb/prometheus.h"
#include "ebb/simulate.h"

uint64_t ebb_rss_bytes(void)
{
    unsigned long size, resident;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* --prometheus-url: each query asked at once, on a loop of its own. */
static int ask_now(void *ud, struct ebb_engine *e, const char *query, int64_t time,
                   struct ebb_prom_result **now)
{
    const struct ebb_sim_opts *o = ud;
    struct ebb_prom_opts po = { .url = o->prometheus_url, .token_file = o->prometheus_token_file };
    (void)e;
    return ebb_prom_query_all(NULL, &po, &query, 1, time, now);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ebb_simulate(struct ebb_sim_opts *o, struct ebb_engine **out, struct ebb_error *err)
{
    struct ebb_engine_opts eo = {
        .now = o->now,
        .mode = EBB_MODE_SIMULATE,
        .home = o->home,
        .mem_limit = o->mem_limit,
        .time_budget_ms = o->time_budget_ms,
        .features = o->features,
    };
    struct ebb_engine *e = NULL;
    struct ebb_policy *policy = NULL;
    struct ebb_cache *cache = NULL;
    uint64_t t0 = mono_ns();
    int rc;

    if ((rc = ebb_engine_create(&eo, &e, err)) != 0)
        return rc;
    if ((rc = ebb_engine_load_builtins(e, err)) != 0)
        goto fail;
    if (o->prometheus_url != NULL)
        ebb_engine_set_prom(e, ask_now, o);
    for (int i = 0; i < o->ndirs; i++)
        if ((rc = ebb_engine_register_lua_dir(e, o->dirs[i], err)) != 0)
            goto fail;
    if (o->policy_buf != NULL)
        rc = ebb_policy_parse(o->policy_buf, o->policy_len, o->policy ? o->policy : "policy",
                              &policy, err);
    else
        rc = ebb_policy_load(o->policy, &policy, err);
    if (rc != 0)
        goto fail;
    for (size_t i = 0; i < policy->nwarnings; i++)
        ebb_log(EBB_LOG_WARN, "%s", policy->warnings[i]);
    o->build_ns = mono_ns() - t0;
    if (o->snapshot != NULL || o->snapshot_buf != NULL) {
        if ((rc = ebb_cache_create(&cache)) != 0)
            goto fail;
        if (o->snapshot_buf != NULL)
            rc = ebb_snapshot_load_buf(cache, o->snapshot_buf, o->snapshot_len,
                                       o->snapshot ? o->snapshot : "snapshot", o->stats, err);
        else
            rc = ebb_snapshot_load(cache, o->snapshot, o->stats, err);
        if (rc != 0)
            goto fail;
        o->rss_after_load = ebb_rss_bytes();
        ebb_engine_set_cache(e, cache);
        cache = NULL;
    }
    t0 = mono_ns();
    if ((rc = ebb_engine_set_policy(e, policy, err)) != 0)
        goto fail;
    policy = NULL;
    o->build_ns += mono_ns() - t0;
    if (ebb_engine_cache(e) != NULL) {
        for (int i = 0; i < (o->cycles > 0 ? o->cycles : 1); i++) {
            uint64_t c0 = mono_ns(), a0 = ebb_budget_arms();
            if ((rc = ebb_engine_run_cycle(e)) != 0) {
                ebb_error_set(err, rc, NULL, 0, NULL, "cycle %d: %s", i + 1, ebb_strerror(rc));
                goto fail;
            }
            if (i < 8) {
                o->cycle_ns[i] = mono_ns() - c0;
                o->cycle_arms[i] = ebb_budget_arms() - a0;
            }
        }
    }
    *out = e;
    return 0;
fail:
    ebb_cache_destroy(cache);
    ebb_policy_free(policy);
    ebb_engine_destroy(e);
    return rc;
}
