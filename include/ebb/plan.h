/* ebb/plan.h: what a run did (or, in simulation and dry run, would do).
 *
 * The evictor appends evictions and refusals in the order they happen; the
 * framework appends plugin failures, skipped cycles and per-node utilization
 * before the first and after the last cycle. Printed as a table for people
 * or as JSON:
 *   {"evictions":[{"pod","node","plugin","profile","reason","cycle"
 *                  [, "action", "request"]}],
 *    "refusals":[{"pod","node","plugin","profile","why","cycle"}],
 *    "errors":[{"plugin","profile","message","cycle"}],
 *    "skipped":[{"cycle","reason"}],
 *    "notes":[{"plugin","profile","node","message","cycle"}],
 *    "nodes":[{"name","before":{"cpu","memory","pods"},"after":{...}}]}
 */
#ifndef EBB_PLAN_H
#define EBB_PLAN_H

#include <stdio.h>

#include "common.h"
#include "str.h"

/* node, plugin and profile repeat across entries: they are interned. */
struct ebb_plan_eviction {
    char *pod;          /* "namespace/name" */
    ebb_str node;
    ebb_str plugin;
    ebb_str profile;
    ebb_str reason;     /* strategies reuse one reason for many pods */
    int cycle;
    char *action;       /* an evict plugin's: "delete", "patch ...", ...; NULL: the Eviction API */
    char *request;      /* the body of that request (JSON); may be NULL */
};

struct ebb_plan_refusal {
    char *pod;
    ebb_str node;
    ebb_str plugin;
    ebb_str profile;
    const char *why;    /* static: ebb_why_name() */
    char *detail;       /* e.g. the PDB's name; may be NULL */
    int cycle;
};

struct ebb_plan_error {
    char *plugin;
    char *profile;
    char *message;
    int cycle;
};

/* Something a plugin wants the reader to know that is neither an eviction
 * nor a failure: a node skipped for lack of metrics, a stop condition. */
struct ebb_plan_note {
    ebb_str plugin;
    ebb_str profile;
    ebb_str node;       /* may be NULL */
    char *message;
    int cycle;
};

struct ebb_plan_skip {
    int cycle;
    char *reason;
};

/* Utilization in percent of allocatable: requests of the node's pods that
 * are not Succeeded/Failed. */
struct ebb_plan_node {
    char *name;
    double before[3];   /* cpu, memory, pods */
    double after[3];
    bool has_before;
};

struct ebb_plan {
    int cycles;
    size_t nevictions, nrefusals, nerrors, nskips, nnodes, nnotes;
    size_t cap_evictions, cap_refusals, cap_errors, cap_skips, cap_notes;
    struct ebb_plan_note *notes;
    struct ebb_plan_eviction *evictions;
    struct ebb_plan_refusal *refusals;
    struct ebb_plan_error *errors;
    struct ebb_plan_skip *skips;
    struct ebb_plan_node *nodes;
};

void ebb_plan_init(struct ebb_plan *p);
void ebb_plan_clear(struct ebb_plan *p);   /* frees everything, back to init state */

int ebb_plan_add_eviction(struct ebb_plan *p, const char *pod, const char *node,
                          const char *plugin, const char *profile, const char *reason);
/* What the profile's evict plugin did for the last eviction added. */
int ebb_plan_set_action(struct ebb_plan *p, const char *action, const char *request);
int ebb_plan_add_refusal(struct ebb_plan *p, const char *pod, const char *node,
                         const char *plugin, const char *profile, const char *why,
                         const char *detail);
int ebb_plan_add_error(struct ebb_plan *p, const char *plugin, const char *profile,
                       const char *message);
int ebb_plan_add_skip(struct ebb_plan *p, const char *reason);
int ebb_plan_add_note(struct ebb_plan *p, const char *plugin, const char *profile,
                      const char *node, const char *message);

/* Record utilization for every node of `cache` (sorted by name), as
 * `before` (first call) or `after` (every later call). */
struct ebb_cache;
int ebb_plan_snapshot_nodes(struct ebb_plan *p, struct ebb_cache *cache, bool before);

/* JSON text (malloc'd, caller frees). */
char *ebb_plan_to_json(const struct ebb_plan *p, bool pretty);
/* The same as a cJSON object (caller deletes), for callers that add keys. */
struct cJSON;
struct cJSON *ebb_plan_json(const struct ebb_plan *p);
void ebb_plan_print_table(const struct ebb_plan *p, FILE *out);

#endif
