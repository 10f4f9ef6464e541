/* `ebb run`'s script thread and the hand-off of the engine to it.
 *
 * Two threads. The loop thread runs one libuv loop for all I/O: the kube
 * client, the watches, leader election, the HTTP server (/metrics,
 * /healthz, /readyz), Prometheus queries, timers and signals. Scripts never
 * run on it. The script thread (the worker) runs the engine's jobs one at a
 * time: a cycle's start, its resumption after an answer, and building a new
 * policy generation. Whatever a script does, the loop keeps serving.
 *
 * Hand-off, not sharing. The engine, the cache and the interned strings
 * belong to the worker while a job runs (`busy`) and to the loop otherwise:
 *   - the job is posted and its end reported under `mu` (the worker
 *     signals the end through `job_async`); nothing else is locked;
 *   - while a job runs the watches hold their events as raw bytes (a cycle
 *     holds them from its start to its end, a build for its job), so the
 *     loop decodes nothing into the cache nor interns a string;
 *   - what a job asks of the loop (an eviction to send, a Prometheus
 *     query) is queued by the worker in `out`/`prom_out` and taken by the
 *     loop when the job has ended: a strategy that waits for the answer has
 *     suspended (the job ends), a native plugin's evictions go out when its
 *     run ends;
 *   - what the loop learns for the engine while a job runs (an eviction's
 *     answer, a Prometheus answer, losing the lease, SIGTERM) waits in
 *     `deferred` and is applied when the job ends; sending is gated on the
 *     loop too, so nothing is sent once the lease is lost or SIGTERM came.
 *
 * A stuck script. The sandbox stops a script at its time budget; a native
 * call can still hang. The loop looks at the running call every
 * OVERDUE_TICK_MS (ebb_budget_overdue, kept by the budget's watchdog): past
 * its budget by more than the budget again (at least 1 s) it is stuck. The
 * process says so (log, ebb_plugin_stuck, /healthz fails naming the plugin
 * so that the kubelet restarts it), gives up its Lease at once so that a
 * standby leads, and starts no more cycles. SIGTERM while a job runs: the
 * job gets DRAIN_MS minus a second to end, then the process exits (with
 * the lease released) without waiting for the worker.
 *
 * Thread rules of this file: worker_main and the queue_* hooks run on the
 * worker during a job and touch only the job's fields (run_int.h); every
 * other function runs on the loop thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/vec.h"
#include "cmd/run_int.h"

#define OVERDUE_TICK_MS 250

/* What the loop learnt for the engine while a job ran. */
struct run_deferred {
    struct ebb_eviction *ev;      /* an eviction's outcome ... */
    int why;
    char *msg;
    struct ebb_prom_result *prom; /* ... or a Prometheus answer (ev NULL) */
};

/* A Prometheus query a job asked for. */
struct run_prom_req {
    char *query;
    int64_t time;
};

/* ---- what a job asks of the loop (on the worker) -------------------------------- */

/* The worker, during a job: the engine decided on an eviction; the loop
 * sends it when the job ends. */
int ebb__run_queue_eviction(void *ud, struct ebb_eviction *ev)
{
    struct runner *r = ud;

    if (ebb__grow((void **)&r->out, &r->capout, r->nout + 1, sizeof(*r->out)) != 0)
        return EBB_WHY_API_ERROR;
    r->out[r->nout++] = ev;
    return 0;
}

/* The worker, during a job: a plugin asked Prometheus; the loop asks when
 * the job ends and the answer resumes the cycle. */
int ebb__run_queue_query(void *ud, struct ebb_engine *e, const char *query, int64_t time,
                         struct ebb_prom_result **now)
{
    struct runner *r = ud;
    char *q;
    (void)e;

    *now = NULL;
    if (ebb__grow((void **)&r->prom_out, &r->capprom_out, r->nprom_out + 1, sizeof(*r->prom_out)) != 0)
        return EBB_ENOMEM;
    if ((q = strdup(query)) == NULL)
        return EBB_ENOMEM;
    r->prom_out[r->nprom_out++] = (struct run_prom_req){ q, time };
    return EBB_CYCLE_WAITING;
}

static void *worker_main(void *arg)
{
    struct runner *r = arg;

    pthread_mutex_lock(&r->mu);
    for (;;) {
        int job, rc = 0;
        while (r->job == JOB_NONE && !r->quit)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->job == JOB_NONE)
            break;
        job = r->job;
        pthread_mutex_unlock(&r->mu);
        switch (job) {
        case JOB_BEGIN:
            rc = ebb_engine_cycle_begin(r->engine);
            break;
        case JOB_TRIGGER:
            rc = ebb_engine_trigger_begin(r->engine, r->job_mask, r->job_nodes, r->job_nnodes);
            break;
        case JOB_RESUME:
            rc = ebb_engine_cycle_resume(r->engine);
            break;
        case JOB_BUILD:
            r->job_gen = NULL;
            r->job_err = (struct ebb_error){ 0 };
            rc = ebb_generation_build(&r->eo, &r->src, &r->job_gen, &r->job_err);
            break;
        }
        pthread_mutex_lock(&r->mu);
        r->job = JOB_NONE;
        r->job_rc = rc;
        r->job_done = true;
        uv_async_send(&r->job_async);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ---- what the loop learns for the engine ------------------------------------------- */

/* Evictions are sent while this process may evict: it leads (or needs no
 * lease), no SIGTERM came and no script is stuck. */
static bool may_evict(const struct runner *r)
{
    return !r->stopping && !r->stuck &&
           (!r->o.leader_elect || (r->leader != NULL && ebb_leader_leading(r->leader)));
}

void ebb__run_apply_allowed(struct runner *r)
{
    if (!r->busy)
        ebb_engine_set_eviction_allowed(r->engine, may_evict(r));
}

/* For the engine when the job ends. */
static void defer(struct runner *r, struct ebb_eviction *ev, int why, const char *msg,
                  struct ebb_prom_result *prom)
{
    if (ebb__grow((void **)&r->deferred, &r->capdeferred, r->ndeferred + 1, sizeof(*r->deferred)) != 0) {
        /* nothing to keep it in: the answer is lost, the eviction an
         * API error (its pod is seen again in the next cycle) */
        ebb_log(EBB_LOG_ERROR, "out of memory keeping an answer for the engine");
        return;
    }
    r->deferred[r->ndeferred++] = (struct run_deferred){ ev, why, msg ? strdup(msg) : NULL, prom };
}

static void eviction_finish(struct runner *r, struct ebb_eviction *ev, int why, const char *msg)
{
    ebb_engine_eviction_done(r->engine, ev, why, msg);
    ebb__run_schedule_resume(r);
}

/* An eviction's outcome (kube_evict.c), for the engine: at once when it is
 * the loop's, else when the job ends. */
void ebb__run_on_eviction_done(void *ud, struct ebb_eviction *ev, int why, const char *msg)
{
    struct runner *r = ud;

    if (r->busy)
        defer(r, ev, why, msg, NULL);
    else
        eviction_finish(r, ev, why, msg);
}

static void prom_answered(struct runner *r, struct ebb_prom_result *res)
{
    ebb_engine_prom_answer(r->engine, res);
    ebb__run_schedule_resume(r);
}

/* A Prometheus query a plugin waits for was answered (on the loop). */
void ebb__run_on_prom_answer(void *ud, struct ebb_prom_result *res)
{
    struct runner *r = ud;

    if (r->busy)
        defer(r, NULL, 0, NULL, res);
    else
        prom_answered(r, res);
}

/* ---- posting a job, and its end ------------------------------------------------ */

static void on_overdue_tick(uv_timer_t *t);
static void on_kill(uv_timer_t *t);

void ebb__run_bound_job(struct runner *r)
{
    if (!uv_is_active((uv_handle_t *)&r->kill_timer))
        uv_timer_start(&r->kill_timer, on_kill, DRAIN_MS - 1000, 0);
}

void ebb__run_post_job(struct runner *r, int kind)
{
    /* after SIGTERM (a cycle finishing what is in flight) a job too has
     * DRAIN_MS at most */
    if (r->stopping)
        ebb__run_bound_job(r);
    r->busy = true;
    r->job_kind = kind;
    r->job_ms = uv_now(r->loop);
    if (kind == JOB_BUILD)
        ebb_informers_hold(r->inf, true);   /* a cycle holds them already */
    pthread_mutex_lock(&r->mu);
    r->job = kind;
    r->job_done = false;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    uv_timer_start(&r->overdue_timer, on_overdue_tick, OVERDUE_TICK_MS, OVERDUE_TICK_MS);
}

/* The job ended: send what it asked for, give the engine what came for it
 * meanwhile. */
static void flush_requests(struct runner *r)
{
    for (size_t i = 0; i < r->nout; i++) {
        struct ebb_eviction *ev = r->out[i];
        const char *why = !may_evict(r) ? "evictions are stopped (shutting down, not the leader, or a "
                                          "script is stuck)"
                          : ebb_kube_evict_start(r->evict, ev) != 0 ? "the request could not be sent"
                                                      : NULL;
        if (why != NULL) {
            ebb_engine_eviction_done(r->engine, ev, EBB_WHY_API_ERROR, why);
            ebb__run_schedule_resume(r);
        }
    }
    r->nout = 0;
    for (size_t i = 0; i < r->nprom_out; i++) {
        struct run_prom_req *q = &r->prom_out[i];
        struct ebb_prom_result *now = NULL;
        int rc = ebb_prom_live_query(r->prom, q->query, q->time, &now);
        if (rc != EBB_CYCLE_WAITING) {
            if (now == NULL)
                now = ebb_prom_result_failed(q->query, q->time, true, "%s", ebb_strerror(rc));
            prom_answered(r, now);
        }
        free(q->query);
    }
    r->nprom_out = 0;
    for (size_t i = 0; i < r->ndeferred; i++) {
        struct run_deferred *d = &r->deferred[i];
        if (d->ev != NULL)
            eviction_finish(r, d->ev, d->why, d->msg ? d->msg : "out of memory");
        else
            prom_answered(r, d->prom);
        free(d->msg);
    }
    r->ndeferred = 0;
}

static void on_job_done(uv_async_t *a)
{
    struct runner *r = a->data;
    int rc, kind = r->job_kind;

    pthread_mutex_lock(&r->mu);
    if (!r->job_done) {
        pthread_mutex_unlock(&r->mu);
        return;
    }
    r->job_done = false;
    rc = r->job_rc;
    pthread_mutex_unlock(&r->mu);
    r->busy = false;
    uv_timer_stop(&r->overdue_timer);
    if (kind == JOB_BUILD)
        ebb_informers_hold(r->inf, false);
    ebb__run_apply_allowed(r);
    flush_requests(r);
    if (kind == JOB_BUILD) {
        ebb__run_build_done(r, rc);
        return;
    }
    if (rc == EBB_CYCLE_WAITING) {
        ebb__run_schedule_resume(r);
        return;
    }
    if (rc != 0)
        ebb_log(EBB_LOG_ERROR, "%s: %s", kind == JOB_TRIGGER ? "triggered run" : "cycle", ebb_strerror(rc));
    ebb__run_cycle_finished(r);
}

/* ---- a stuck call, and SIGTERM while a job runs ------------------------------------- */

static void on_lease_given_up(void *ud)
{
    (void)ud;
    ebb_log(EBB_LOG_INFO, "lease released: a standby can lead");
}

/* Every OVERDUE_TICK_MS while a job runs: is a call stuck? */
static void on_overdue_tick(uv_timer_t *t)
{
    struct runner *r = t->data;
    char plugin[160] = "", profile[160] = "";
    uint64_t budget = 0, over;

    if (!r->busy || r->stuck)
        return;
    over = ebb_budget_overdue(plugin, sizeof(plugin), profile, sizeof(profile), &budget);
    if (over == 0 || over <= (budget > 1000000000u ? budget : 1000000000u))
        return;
    r->stuck = true;
    snprintf(r->stuck_msg, sizeof(r->stuck_msg),
             "plugin %s (profile %s) has run %.1f s past its time budget of %.0f ms and does not stop",
             plugin, profile, (double)over / 1e9, (double)budget / 1e6);
    ebb_log(EBB_LOG_ERROR, "%s: no more cycles, no evictions%s; /healthz fails until the process is "
            "restarted", r->stuck_msg, r->leader ? ", giving up the lease" : "");
    {
        const char *v[] = { plugin, profile };
        ebb_metric_set(ebb_metrics_find(r->metrics, "ebb_plugin_stuck"), v, 1);
    }
    ebb_kube_evict_self_event(r->evict, "Warning", "PluginStuck", r->stuck_msg);
    if (r->leader) {
        ebb_leader_close(r->leader, on_lease_given_up, r);
        r->leader = NULL;
    }
}

static void exit_now(void *ud)
{
    (void)ud;
    fflush(stdout);
    fflush(stderr);
    _exit(1);
}

static void on_kill_now(uv_timer_t *t)
{
    exit_now(t->data);
}

static void on_kill_late(uv_timer_t *t)
{
    struct runner *r = t->data;

    if (!r->busy)
        return;
    ebb_log(EBB_LOG_ERROR, "exiting after %d ms without the script thread: a job still runs", DRAIN_MS - 800);
    exit_now(r);
}

/* SIGTERM came while a job runs and it has not ended: leave without it. */
static void on_kill(uv_timer_t *t)
{
    struct runner *r = t->data;

    if (!r->busy)
        return;
    if (uv_now(r->loop) - r->job_ms < 200 && !r->stuck) {
        /* a job that has just started (a cycle going on after SIGTERM) ends
         * in a moment: a little longer, within the drain timeout */
        uv_timer_start(&r->kill_timer, on_kill_late, 200, 0);
        return;
    }
    ebb_log(EBB_LOG_ERROR, "exiting after %d ms without the script thread: %s", DRAIN_MS - 1000,
            r->stuck ? r->stuck_msg : "a job still runs");
    if (r->leader) {
        /* at most a second more for the lease */
        ebb_leader_close(r->leader, exit_now, r);
        r->leader = NULL;
        uv_timer_start(&r->kill_timer, on_kill_now, 1000, 0);
        return;
    }
    exit_now(r);
}

/* ---- the thread and its handles ---------------------------------------------------- */

int ebb__run_handoff_init(struct runner *r)
{
    uv_timer_init(r->loop, &r->overdue_timer);
    uv_timer_init(r->loop, &r->kill_timer);
    r->overdue_timer.data = r->kill_timer.data = r;
    uv_async_init(r->loop, &r->job_async, on_job_done);
    r->job_async.data = r;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->handoff_ready = true;
    if (pthread_create(&r->worker, NULL, worker_main, r) != 0)
        return EBB_ENOMEM;
    r->worker_started = true;
    return 0;
}

void ebb__run_handoff_close(struct runner *r)
{
    r->pending_close += 3;
    r->job_async.data = r->overdue_timer.data = r->kill_timer.data = r;
    uv_close((uv_handle_t *)&r->job_async, ebb__run_closed_handle);
    uv_close((uv_handle_t *)&r->overdue_timer, ebb__run_closed_handle);
    uv_close((uv_handle_t *)&r->kill_timer, ebb__run_closed_handle);
}

void ebb__run_handoff_free(struct runner *r)
{
    if (r->worker_started) {
        /* the worker is idle (shutdown waits for the job): let it go */
        pthread_mutex_lock(&r->mu);
        r->quit = true;
        pthread_cond_signal(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->worker, NULL);
        r->worker_started = false;
    }
    if (r->handoff_ready) {
        pthread_mutex_destroy(&r->mu);
        pthread_cond_destroy(&r->cv);
        r->handoff_ready = false;
    }
    free(r->out);
    free(r->prom_out);
    free(r->deferred);
    r->out = NULL;
    r->prom_out = NULL;
    r->deferred = NULL;
}
