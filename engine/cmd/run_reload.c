/* `ebb run`'s policy generations: the reload state machine.
 *
 * The policy file and every --policy-dir are watched (engine/core/reload.c:
 * the directories, a ConfigMap's `..data` swap, the debounce, a slow poll);
 * SIGHUP reloads at once. A reload hashes the sources and, when they differ
 * from what runs (or SIGHUP forces it), posts a JOB_BUILD: the script
 * thread builds the new generation off to the side (plugin files and their
 * validate() are scripts). The states:
 *
 *   idle --change/SIGHUP--> building --valid--> pending --no cycle--> active
 *                              |                   (a newer build replaces it;
 *                              |                    the sources changed back
 *                              |                    to what runs: dropped)
 *                              +--invalid--> failed: the last good generation
 *                                  keeps running; logged with file and line,
 *                                  ebb_policy_reloads_total{result="failure"},
 *                                  a Warning Event PolicyReloadFailed; the
 *                                  same content is not tried again (but for
 *                                  a file caught mid-update, EBB_EIO)
 *
 * A change while a cycle or a job runs is noted (reload_due, reload_forced)
 * and taken when it ends: a cycle always sees one generation from its start
 * to its end. Nothing reloads once the run is stopping or a call is stuck.
 *
 * Thread rules: every function here runs on the loop thread, and never
 * while a job runs (busy) but for ebb__run_reload, which then only notes
 * the change. The build itself is run_handoff.c's JOB_BUILD.
 */
#include <signal.h>
#include <string.h>

#include "cmd/run_int.h"

static double ms_since(uint64_t t0)
{
    return (double)(uv_hrtime() - t0) / 1e6;
}

void ebb__run_needs(const struct ebb_policy *p, bool *metrics, bool *koord)
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

void ebb__run_generation_metrics(struct runner *r)
{
    struct ebb_metric *info = ebb_metrics_find(r->metrics, "ebb_policy_generation_info");
    const char *v[] = { r->hash };

    ebb_metric_reset(info);
    ebb_metric_set(info, v, 1);
    ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_policy_generation"), NULL, r->generation);
}

int ebb__run_first_generation(struct runner *r, struct ebb_error *err)
{
    uint64_t t0 = uv_hrtime();
    int rc;

    r->eo.mode = r->o.dry_run ? EBB_MODE_DRY_RUN : EBB_MODE_LIVE;
    r->eo.now = r->o.now;
    r->eo.time_budget_ms = r->o.script_timeout_ms;
    r->eo.mem_limit = r->o.script_memory;
    r->eo.features = r->o.features;
    r->eo.scripts = ebb_lua_plugins();
    r->eo.memory = &r->memory;
    if (r->predictor == NULL &&
        (rc = ebb_predictor_create(NULL, EBB_SCHED_LATEST, &r->predictor)) != 0)
        return ebb_error_set(err, rc, NULL, 0, NULL, "out of memory");
    r->eo.predict = ebb_predictor_predict;
    r->eo.predict_ud = r->predictor;
    r->src.policy = r->o.policy;
    r->src.dirs = r->o.dirs;
    r->src.ndirs = (size_t)r->o.ndirs;
    if ((rc = ebb_sources_hash(&r->src, r->hash, err)) != 0 ||
        (rc = ebb_generation_build(&r->eo, &r->src, &r->engine, err)) != 0)
        return rc;
    r->generation = 1;
    ebb_log(EBB_LOG_INFO, "policy generation 1: hash %s, %zu plugin instances, built in %.1f ms", r->hash,
            ebb_engine_plugin_count(r->engine), ms_since(t0));
    return 0;
}

void ebb__run_try_swap(struct runner *r)
{
    struct ebb_engine *old;
    size_t kept = 0;
    bool metrics, koord;

    if (r->pending == NULL || r->in_cycle || r->busy || ebb_engine_cycle_active(r->engine))
        return;
    old = r->pending;
    r->pending = NULL;
    if (ebb_engine_adopt(r->engine, old, &kept) != 0) {
        ebb_log(EBB_LOG_ERROR, "policy reload: the new generation could not be swapped in");
        ebb_engine_destroy(old);
        return;
    }
    ebb_engine_destroy(old);   /* now the previous generation */
    r->generation++;
    memcpy(r->hash, r->pending_hash, sizeof(r->hash));
    ebb__run_needs(ebb_engine_policy(r->engine), &metrics, &koord);
    ebb_informers_enable(r->inf, metrics, koord);
    ebb_informers_keep_text(r->inf, ebb_engine_reads_object(r->engine));
    ebb_prom_live_policy(r->prom, ebb_engine_policy(r->engine));
    r->triggers = ebb_engine_triggers(r->engine);
    ebb__run_generation_metrics(r);
    {
        const char *v[] = { "success" };
        ebb_metric_add(ebb_metrics_find(r->metrics, "ebb_policy_reloads_total"), v, 1);
    }
    ebb_log(EBB_LOG_INFO, "policy generation %d active: hash %s, %zu plugin instances (%zu unchanged "
            "kept with their state), built in %.1f ms", r->generation, r->hash,
            ebb_engine_plugin_count(r->engine), kept, r->pending_ms);
}

/* The new content is not valid: the running generation stays. */
static void reload_failed(struct runner *r, const struct ebb_error *err, const char *hash)
{
    const char *v[] = { "failure" };
    char buf[2048];

    ebb_error_format(err, buf, sizeof(buf));
    ebb_log(EBB_LOG_ERROR, "policy reload failed, generation %d (hash %s) keeps running: %s",
            r->generation, r->hash, buf);
    ebb_metric_add(ebb_metrics_find(r->metrics, "ebb_policy_reloads_total"), v, 1);
    ebb_kube_evict_self_event(r->evict, "Warning", "PolicyReloadFailed", buf);
    if (err->code != EBB_EIO)   /* a file caught mid-update is tried again */
        memcpy(r->failed_hash, hash, sizeof(r->failed_hash));
}

void ebb__run_reload(struct runner *r, bool forced)
{
    struct ebb_error err = { 0 };
    char hash[17] = "";

    if (r->stopping || r->stuck)
        return;
    if (r->in_cycle || r->busy) {
        r->reload_due = true;   /* when the cycle or the job ends */
        r->reload_forced = r->reload_forced || forced;
        return;
    }
    r->reload_forced = false;
    if (ebb_sources_hash(&r->src, hash, &err) != 0) {
        reload_failed(r, &err, hash);
        return;
    }
    if (!forced) {
        if (strcmp(hash, r->pending ? r->pending_hash : r->hash) == 0 || strcmp(hash, r->failed_hash) == 0)
            return;   /* nothing new, or what already failed */
        if (strcmp(hash, r->hash) == 0) {
            /* changed back to what runs before the swap */
            ebb_engine_destroy(r->pending);
            r->pending = NULL;
            return;
        }
    }
    ebb_log(EBB_LOG_INFO, "policy sources changed (hash %s): loading a new generation", hash);
    memcpy(r->job_hash, hash, sizeof(r->job_hash));
    r->build_t0 = uv_hrtime();
    ebb__run_post_job(r, JOB_BUILD);
}

void ebb__run_build_done(struct runner *r, int rc)
{
    if (rc != 0) {
        reload_failed(r, &r->job_err, r->job_hash);
    } else {
        ebb_engine_destroy(r->pending);   /* a newer one replaces it */
        r->pending = r->job_gen;
        r->job_gen = NULL;
        r->pending_ms = ms_since(r->build_t0);
        memcpy(r->pending_hash, r->job_hash, sizeof(r->pending_hash));
        r->failed_hash[0] = '\0';
        ebb__run_try_swap(r);
    }
    if (r->stopping) {
        ebb__run_shutdown(r);
        return;
    }
    if (r->reload_due) {
        r->reload_due = false;
        ebb__run_reload(r, r->reload_forced);
    }
    if (r->trigger_due && !r->busy) {
        r->trigger_due = false;
        ebb__run_trigger_soon(r);
    }
}

static void on_sources_changed(void *ud)
{
    ebb__run_reload(ud, false);
}

static void on_sighup(uv_signal_t *s, int signum)
{
    (void)signum;
    ebb_log(EBB_LOG_INFO, "SIGHUP: reloading the policy and scripts");
    ebb__run_reload(s->data, true);
}

void ebb__run_reload_init(struct runner *r)
{
    uv_signal_init(r->loop, &r->sighup);
    r->sighup.data = r;
    uv_signal_start(&r->sighup, on_sighup, SIGHUP);
    if (r->o.reload && !r->o.once)
        ebb_reloader_create(r->loop, &r->src, (uint64_t)(r->o.reload_debounce_s * 1000),
                            (uint64_t)(r->o.reload_poll_s * 1000), on_sources_changed, r, &r->reloader);
}

void ebb__run_reload_close(struct runner *r)
{
    r->pending_close++;
    r->sighup.data = r;
    uv_close((uv_handle_t *)&r->sighup, ebb__run_closed_handle);
    if (r->reloader) {
        r->pending_close++;
        ebb_reloader_close(r->reloader, ebb__run_closed_one, r);
        r->reloader = NULL;
    }
}
