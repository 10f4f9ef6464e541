/* engine/cmd/run_int.h: what the units of `ebb run` share. Not public.
 *
 *   run.c          the command: flags, the wiring, the cycle and the
 *                  triggered runs, metrics, /metrics /healthz /readyz,
 *                  objects skipped, leadership, signals, shutdown
 *   run_handoff.c  the script thread and the hand-off of the engine, the
 *                  cache and the interned strings between it and the loop:
 *                  jobs, what a job asks of the loop, what the loop learns
 *                  meanwhile, a stuck call, SIGTERM while a job runs
 *   run_reload.c   policy generations: the reload state machine (sources
 *                  changed, SIGHUP, a build on the script thread, the swap
 *                  between cycles, PolicyReloadFailed)
 *
 * Threads: everything here runs on the loop thread, but for the script
 * thread's own function (run_handoff.c: worker_main) and what a job calls
 * (the engine, the evictor and Prometheus hooks queue_eviction and
 * queue_query). The fields of `struct runner` say which side may touch
 * them and when. run.c posts a cycle's jobs and run_reload.c a build's to
 * run_handoff.c; the end of a job comes back to run.c
 * (ebb__run_cycle_finished) or run_reload.c (ebb__run_build_done), which
 * go on through run.c (the next cycle, a triggered run, the shutdown). */
#ifndef EBB_RUN_INT_H
#define EBB_RUN_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "ebb.h"
#include "ebb/changes.h"
#include "ebb/evmemory.h"
#include "ebb/predict.h"
#include "ebb/httpd.h"
#include "ebb/kube.h"
#include "ebb/kube_evict.h"
#include "ebb/leader.h"
#include "ebb/lua.h"
#include "ebb/memstore.h"
#include "ebb/metrics.h"
#include "ebb/prometheus.h"
#include "ebb/reload.h"
#include "ebb/watch.h"

#define DRAIN_MS 5000             /* SIGTERM to exit at most, and the last writes */

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
    int port;                     /* --port/--secure-port; 0: nothing served */
    bool plain_http;              /* --plain-http: HTTP on the port, not HTTPS */
    const char *tls_cert_file;    /* --tls-cert-file, with --tls-private-key-file */
    const char *tls_key_file;
    const char *cert_dir;         /* --cert-dir: where the self-signed pair goes */
    bool metrics_workload_labels; /* --metrics-workload-labels: workload_kind, workload on
                                     the eviction counters */
    bool disable_metrics;         /* --disable-metrics: no /metrics, health still served */
    double max_stale_s;
    double sync_timeout_s;        /* the first sync (and a --once cycle) must start by then */
    int page_size;
    int sync_mode;                /* --sync-mode: EBB_SYNC_* */
    int64_t now;                  /* --now: a fixed clock (tests, replays) */
    bool reload;                  /* watch --policy and --policy-dir for changes */
    uint64_t script_timeout_ms;   /* engine defaults for every Lua sandbox */
    size_t script_memory;
    double reload_debounce_s;
    double reload_poll_s;
    double trigger_delay_s;       /* from the first change to the triggered run */
    unsigned features;            /* --feature-gates: EBB_FEATURE_* */
};

/* The jobs the script thread runs. */
enum { JOB_NONE, JOB_BEGIN, JOB_TRIGGER, JOB_RESUME, JOB_BUILD };

struct run_deferred;              /* run_handoff.c */
struct run_prom_req;              /* run_handoff.c */

struct runner {
    struct run_opts o;
    uv_loop_t *loop;
    struct ebb_kube_config *kc;
    struct ebb_kube *kube;
    struct ebb_kube_evict *evict; /* live evictions and Events */
    struct ebb_engine *engine;
    struct ebb_cache *cache;      /* owned by the engine */
    struct ebb_informers *inf;
    struct ebb_leader *leader;
    struct ebb_httpd *httpd;
    struct ebb_metrics *metrics;
    struct ebb_prom_live *prom;   /* the Prometheus provider's client */
    /* policy generations (run_reload.c); eo and src are read by a build job */
    struct ebb_engine_opts eo;
    struct ebb_sources src;
    /* the memory of evictions every generation's engine shares (eo.memory);
     * freed after the last engine */
    struct ebb_evmem memory;
    /* LoopGuard's bounce prediction (eo.predict), on kube-scheduler's
     * default profile; destroyed after the last engine */
    struct ebb_predictor *predictor;
    int generation;
    char hash[17];                /* the active generation's content */
    char failed_hash[17];         /* the last content that did not load */
    struct ebb_engine *pending;   /* built and valid, waiting for the cycle to end */
    char pending_hash[17];
    double pending_ms;
    struct ebb_reloader *reloader;
    uv_signal_t sighup;
    bool reload_due, reload_forced;   /* a reload waits for the cycle or job to end */
    /* event-triggered runs */
    struct ebb_changes *changes;
    unsigned triggers;            /* what the plugins of the generation react to */
    uv_timer_t trigger_timer;
    bool run_triggered;           /* the run in progress is a triggered one */
    bool trigger_due;             /* changes came in during a run: go after it */
    bool cycle_due;               /* the periodic cycle came due during a triggered run */
    uv_timer_t cycle_timer;       /* next cycle */
    uv_timer_t resume_timer;      /* resume a waiting cycle outside I/O callbacks */
    uv_timer_t stats_timer;
    uv_signal_t sigterm, sigint;
    bool in_cycle;
    uint64_t cycle_t0;
    int cycles_done;
    bool stopping;
    int exit_code;
    size_t evictions_failed;      /* api-error outcomes of every cycle (--once: EXIT_EVICTIONS_FAILED) */
    int pending_close;
    bool announced_wait;
    uint64_t drain_until;         /* uv_now() by which the last writes must be done */
    uint64_t started_ms;          /* uv_now() when the informers started */
    bool synced_once;             /* the caches have synced (--sync-timeout is over) */
    /* the script thread (run_handoff.c) */
    pthread_t worker;
    bool worker_started;
    bool handoff_ready;           /* mu and cv are initialized */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int job;                      /* under mu: the job posted, JOB_NONE once taken */
    bool job_done, quit;          /* under mu */
    int job_rc;                   /* under mu: the ended job's result */
    uv_async_t job_async;         /* the worker: a job ended */
    /* the job's inputs and outputs: written by one side before the hand-off
     * under mu, read by the other after it */
    int job_kind;
    uint64_t job_ms;              /* uv_now() when it was posted */
    unsigned job_mask;
    const char *const *job_nodes;
    size_t job_nnodes;
    struct ebb_engine *job_gen;   /* JOB_BUILD: the new generation */
    struct ebb_error job_err;
    char job_hash[17];
    uint64_t build_t0;
    struct ebb_eviction **out;    /* evictions the job asked for */
    size_t nout, capout;
    struct run_prom_req *prom_out;    /* its queries */
    size_t nprom_out, capprom_out;
    /* the loop thread only */
    bool busy;                    /* a job is posted or runs: the engine is the worker's */
    struct run_deferred *deferred;    /* for the engine, once the job ends */
    size_t ndeferred, capdeferred;
    uv_timer_t overdue_timer;     /* looks at the running call while busy */
    uv_timer_t kill_timer;        /* SIGTERM while busy: the exit */
    bool stuck;                   /* a call ran long past its budget: no more cycles */
    char stuck_msg[400];
    /* objects skipped: what is reported of them (SKIP_BURST, then one a
     * SKIP_EVERY_MS), the rest counted */
    double skip_tokens;
    uint64_t skip_refilled;
    uint64_t skip_unreported;
    /* the memory of evictions in the cluster (run_memory.c) */
    struct ebb_memstore *memstore;
    bool memory_answered;       /* the first load has an answer (ok or not) */
    bool memory_merge_due;      /* a load's memory waits for no job to run */
};

/* ---- run.c ----------------------------------------------------------------- */

/* A cycle or triggered run ended (its last job returned neither waiting nor
 * an error it could go on from): account for it, swap in a generation that
 * waited, schedule what comes next. */
void ebb__run_cycle_finished(struct runner *r);
/* A waiting cycle is resumed soon when the engine can go on; a stopping run
 * with nothing in flight shuts down. Nothing while a job runs: its end
 * looks again. */
void ebb__run_schedule_resume(struct runner *r);
/* Close every handle and client but the kube client, once nothing is in
 * flight; until then only note that the run is stopping. */
void ebb__run_shutdown(struct runner *r);
/* The triggered run that waited for a job goes now (through its timer). */
void ebb__run_trigger_soon(struct runner *r);
/* One of the closes ebb__run_shutdown counted in pending_close is done. */
void ebb__run_closed_one(void *ud);
void ebb__run_closed_handle(uv_handle_t *h);   /* h->data is the runner */

/* ---- run_handoff.c: the script thread -------------------------------------- */

/* The timers, the async handle, the lock and the thread. 0 or EBB_ENOMEM. */
int ebb__run_handoff_init(struct runner *r);
/* Close the handles (counted in pending_close; from ebb__run_shutdown). */
void ebb__run_handoff_close(struct runner *r);
/* Let the idle worker go, join it and free what the hand-off holds. Safe on
 * a half-built runner. */
void ebb__run_handoff_free(struct runner *r);

/* The engine goes to the worker until the job ends (JOB_BEGIN, JOB_TRIGGER
 * with job_mask/job_nodes set, JOB_RESUME, JOB_BUILD with eo/src/job_hash).
 * Only when not busy. */
void ebb__run_post_job(struct runner *r, int kind);
/* SIGTERM: the job that runs has DRAIN_MS minus a second to end, then the
 * process exits without it. */
void ebb__run_bound_job(struct runner *r);
/* The engine learns whether it may evict, when it is the loop's. */
void ebb__run_apply_allowed(struct runner *r);

/* The hooks the engine, the evictor and the Prometheus client get. The
 * queue_* run on the worker during a job; the on_* on the loop. */
int ebb__run_queue_eviction(void *ud, struct ebb_eviction *ev);
int ebb__run_queue_query(void *ud, struct ebb_engine *e, const char *query, int64_t time,
                         struct ebb_prom_result **now);
void ebb__run_on_eviction_done(void *ud, struct ebb_eviction *ev, int why, const char *msg);
void ebb__run_on_prom_answer(void *ud, struct ebb_prom_result *res);

/* ---- run_reload.c: policy generations --------------------------------------- */

/* Generation 1 from r->o, before anything talks to the cluster. */
int ebb__run_first_generation(struct runner *r, struct ebb_error *err);
/* Which optional sources the policy needs. */
/* run_memory.c: the memory of evictions kept in a ConfigMap */
int ebb__run_memory_init(struct runner *r);
bool ebb__run_memory_ready(struct runner *r);      /* before a cycle: false to wait */
void ebb__run_memory_save(struct runner *r);       /* after a cycle */
void ebb__run_memory_reload(struct runner *r);     /* a new leader */
const char *ebb__run_memory_error(const struct runner *r);
void ebb__run_needs(const struct ebb_policy *p, bool *metrics, bool *koord);
void ebb__run_generation_metrics(struct runner *r);
/* SIGHUP and, unless --no-reload or --once, the reloader. */
void ebb__run_reload_init(struct runner *r);
/* Close them (counted in pending_close; from ebb__run_shutdown). */
void ebb__run_reload_close(struct runner *r);
/* Build a new generation if the sources changed (or forced); when a cycle
 * or job runs, once it ends. */
void ebb__run_reload(struct runner *r, bool forced);
/* Swap the built generation in, unless a cycle runs. */
void ebb__run_try_swap(struct runner *r);
/* A JOB_BUILD ended with rc. */
void ebb__run_build_done(struct runner *r, int rc);

#endif
