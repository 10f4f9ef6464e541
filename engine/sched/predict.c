/* LoopGuard's bounce prediction on the scheduler model (ebb/predict.h):
 * the replacement ebb_whatif_replacement would make, placed by
 * ebb_sched_predict with the evicted pod gone. Engine thread only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ebb/predict.h"
#include "ebb/whatif.h"

struct ebb_predictor {
    const struct ebb_sched_config *config;
    int version;
    struct ebb_sched *own;           /* built over `cache` at `epoch` */
    const struct ebb_cache *cache;
    uint64_t epoch;
    struct ebb_sched *borrowed;      /* used instead when set */
    uint64_t rng;                    /* the replacements' names */
    struct ebb_predictor_stats stats;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ebb_predictor_create(const struct ebb_sched_config *config, int version,
                         struct ebb_predictor **out)
{
    struct ebb_predictor *p = calloc(1, sizeof(*p));

    if (p == NULL)
        return EBB_ENOMEM;
    p->config = config;
    p->version = version;
    p->rng = 0x10095a4dULL;
    *out = p;
    return 0;
}

void ebb_predictor_destroy(struct ebb_predictor *p)
{
    if (p == NULL)
        return;
    ebb_sched_destroy(p->own);
    free(p);
}

void ebb_predictor_borrow(struct ebb_predictor *p, struct ebb_sched *s)
{
    p->borrowed = s;
}

void ebb_predictor_get_stats(const struct ebb_predictor *p, struct ebb_predictor_stats *out)
{
    *out = p->stats;
}

/* Its own scheduler, for the cache as it is now. */
static struct ebb_sched *scheduler(struct ebb_predictor *p, struct ebb_cache *c)
{
    struct ebb_sched_opts so = { .config = p->config, .version = p->version };
    uint64_t t0;

    if (p->borrowed != NULL)
        return p->borrowed;
    if (p->own != NULL && p->cache == c && p->epoch == ebb_cache_epoch(c))
        return p->own;
    ebb_sched_destroy(p->own);
    p->own = NULL;
    t0 = mono_ns();
    if (ebb_sched_create(c, &so, &p->own) != 0)
        return NULL;
    p->cache = c;
    p->epoch = ebb_cache_epoch(c);
    p->stats.builds++;
    p->stats.build_ns += mono_ns() - t0;
    return p->own;
}

int ebb_predictor_predict(void *ud, struct ebb_engine *e, struct ebb_pod *pod,
                          struct ebb_prediction *out)
{
    struct ebb_predictor *p = ud;
    struct ebb_cache *c = ebb_engine_cache(e);
    struct ebb_sched_result r;
    struct ebb_sched *s;
    struct ebb_pod *repl;
    uint64_t t0 = mono_ns();
    int rc;

    memset(out, 0, sizeof(*out));
    out->status = EBB_PREDICT_GONE;
    if (c == NULL || pod == NULL)
        return EBB_EINVAL;
    if (ebb_whatif_recreator(c, pod) == NULL)
        return 0;   /* nothing brings it back */
    if ((s = scheduler(p, c)) == NULL ||
        (repl = ebb_whatif_replacement(c, pod, pod->created, &p->rng)) == NULL) {
        p->stats.ns += mono_ns() - t0;
        return EBB_ENOMEM;
    }
    rc = ebb_sched_predict(s, pod, repl, &r);
    ebb_pod_free(repl);
    p->stats.predictions++;
    p->stats.ns += mono_ns() - t0;
    if (rc != 0)
        return rc;
    if (r.status == EBB_SCHED_PLACED && r.node != NULL) {
        out->status = EBB_PREDICT_PLACED;
        out->node = r.node->name;
    } else {
        out->status = EBB_PREDICT_PENDING;
        snprintf(out->message, sizeof(out->message), "%.*s", (int)sizeof(out->message) - 1,
                 r.message);
    }
    return 0;
}
