/* ebb/simulate.h: the whole `ebb simulate` / `ebb check` flow as one call,
 * shared by the command line and the Lua module the specs use. */
#ifndef EBB_SIMULATE_H
#define EBB_SIMULATE_H

#include "../ebb.h"
#include "evmemory.h"
#include "predict.h"
#include "sched.h"
#include "snapshot.h"
#include "whatif.h"

/* The time between cycles of a rescheduled run unless told: deploy/ runs
 * ebb every 5 minutes. */
#define EBB_SIM_INTERVAL 300

struct ebb_sim_opts {
    const char *snapshot;          /* a file, or */
    const char *snapshot_buf;      /* its text (snapshot_len bytes), named `snapshot` in errors */
    size_t snapshot_len;
    const char *policy;            /* a file, or */
    const char *policy_buf;        /* its text, named `policy` in errors */
    size_t policy_len;
    const char *const *dirs;       /* --policy-dir, ndirs of them */
    int ndirs;
    int64_t now;                   /* EBB_TIME_NONE: wall clock */
    int cycles;                    /* 0: one; with no snapshot, none (check only) */
    const char *home;              /* NULL: found as ebb_engine_create does */
    size_t mem_limit;              /* per Lua plugin; 0: the default */
    uint64_t time_budget_ms;       /* per call; 0: the default */
    /* --prometheus-url: Prometheus queries go to this server (at `now`)
     * instead of the results the snapshot recorded; the bearer token, if
     * any, from prometheus_token_file */
    const char *prometheus_url;
    const char *prometheus_token_file;
    unsigned features;             /* --feature-gates: EBB_FEATURE_* */
    struct ebb_snapshot_stats *stats;   /* may be NULL */
    /* --reschedule: before cycle 1 the snapshot's pending pods are placed by
     * the scheduler model, after every cycle the evicted pods' owners
     * recreate them and the model places the replacements (ebb/whatif.h) */
    bool reschedule;
    int max_cycles;                /* with reschedule: cycles to run; -1: until a cycle
                                      evicts nothing, at most 10 */
    int64_t interval;              /* with reschedule: seconds between cycles (the clock
                                      moves on by it); 0 is EBB_SIM_INTERVAL */
    const char *sched_config;      /* a KubeSchedulerConfiguration file, or */
    const char *sched_config_buf;  /* its text, named sched_config in errors */
    size_t sched_config_len;
    int sched_version;             /* EBB_SCHED_LATEST or EBB_SCHED_V1_25 */
    bool seeded;                   /* ties at random, and replacement names, from seed */
    uint64_t seed;
    bool progress;                 /* a progress line on stderr */
    struct ebb_whatif *whatif;     /* out: the record (caller destroys) */
    /* The memory of evictions the cycles share (ebb/evmemory.h): zeroed is
     * empty with the default window; what it holds when ebb_simulate is
     * called (a snapshot's) is kept. The caller frees it (ebb_evmem_free)
     * after destroying the engine; on failure ebb_simulate has freed it. */
    struct ebb_evmem memory;
    uint64_t sched_build_ns;       /* out: the scheduler's indexes built */
    uint64_t place_ns;             /* out: time spent scheduling and binding */
    uint64_t place_cpu_ns;         /* out: the same in CPU time of this thread */
    uint64_t replace_cpu_ns;       /* out: CPU time making replacements (and the sync) */
    uint64_t cycles_cpu_ns;        /* out: CPU time in descheduling cycles */
    uint64_t placements;           /* out: pods scheduled (placed or not) */
    uint64_t nodes_filtered;       /* out: nodes the model's filters ran on, in all */
    uint64_t nodes_scored;         /* out: nodes it scored, in all */
    uint64_t cycles_ns;            /* out: time in descheduling cycles */
    /* out: measurements for --stats and the benchmarks */
    uint64_t rss_after_load;       /* bytes resident once the snapshot is cached */
    uint64_t cycle_ns[8];          /* duration of the first cycles */
    uint64_t cycle_arms[8];        /* calls into Lua in them (each arms a budget) */
    uint64_t build_ns;             /* plugins registered and the policy bound
                                      (what a reload costs), the snapshot aside */
    uint64_t predictions;          /* LoopGuard's bounce predictions made */
    uint64_t predict_ns;           /* time in them, the scheduler model's builds included */
    uint64_t predict_builds;       /* scheduler models the predictor built for itself */
    uint64_t predict_build_ns;     /* time building them */
};

/* Resident set size of this process in bytes (0 if unknown). */
uint64_t ebb_rss_bytes(void);

/* Build an engine (built-ins, the directories), load the snapshot if any,
 * bind the policy and run the cycles. On success *out holds the engine with
 * its plan; on a bad input the error names file, line and field. */
int ebb_simulate(struct ebb_sim_opts *o, struct ebb_engine **out, struct ebb_error *err);

#endif
