/* ebb/predict.h: LoopGuard's bounce prediction on the kube-scheduler model.
 *
 * A predictor answers the engine's ebb_predict_fn (ebb.h): where the
 * replacement of a pod about to be evicted lands, on the cluster as it
 * will be (the pod gone, and every pod evicted in the cycle so far). It
 * borrows a scheduler that already models the cache (the what-if's, in
 * `ebb simulate --reschedule`), or builds its own over the engine's cache
 * on first use and again whenever the cache has freed objects since
 * (ebb_cache_epoch: node and pod pointers it held may be gone), at most
 * once per cycle in a simulation and a handful of times in a live cycle.
 *
 * Who calls it: cmd/ (simulate, run, test) makes one, hands
 * ebb_predictor_predict and it to ebb_engine_opts.predict/predict_ud or
 * ebb_engine_set_predictor, and destroys it after the engine. Engine
 * thread only. */
#ifndef EBB_PREDICT_H
#define EBB_PREDICT_H

#include "../ebb.h"
#include "sched.h"

struct ebb_predictor;

/* `config` (borrowed for the predictor's life; NULL: kube-scheduler's
 * defaults) and `version` as in struct ebb_sched_opts. 0 or EBB_ENOMEM. */
int ebb_predictor_create(const struct ebb_sched_config *config, int version,
                         struct ebb_predictor **out);
void ebb_predictor_destroy(struct ebb_predictor *p);   /* NULL-safe */
/* Use scheduler `s` (borrowed; it must model the engine's cache) instead of
 * one of its own; NULL: its own again. */
void ebb_predictor_borrow(struct ebb_predictor *p, struct ebb_sched *s);
/* The ebb_predict_fn: ud is the struct ebb_predictor. */
int ebb_predictor_predict(void *ud, struct ebb_engine *e, struct ebb_pod *pod,
                          struct ebb_prediction *out);

/* What the predictions cost (benchmarks, --stats). */
struct ebb_predictor_stats {
    uint64_t predictions;            /* pods placed by it */
    uint64_t ns;                     /* wall time in them, builds included */
    uint64_t builds;                 /* schedulers built */
    uint64_t build_ns;               /* of that time, building */
};
void ebb_predictor_get_stats(const struct ebb_predictor *p, struct ebb_predictor_stats *out);

#endif
