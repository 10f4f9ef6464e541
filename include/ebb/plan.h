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

/* Every text of the plan may come from a script or an object, whatever bytes
 * it holds: the writers below (JSON, table) escape each one as it goes out
 * (ebb_escape, ebb_json_text), so the plan keeps them as they were given.
 * node, plugin and profile repeat across entries: they are interned. An
 * interned text is written with its interned length (ebb_str_len), so a
 * reason interned whole keeps a NUL. */
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
 * nor a failure: a node skipped for lack of metrics, a stop condition. A
 * script's text is kept whole: `message` and `node` may hold NUL bytes
 * (their lengths: message_len, ebb_str_len(node)). */
struct ebb_plan_note {
    ebb_str plugin;
    ebb_str profile;
    ebb_str node;       /* may be NULL */
    char *message;      /* NUL-terminated after message_len bytes */
    size_t message_len;
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

/* The same with an interned reason (a reference is taken: kept whole, a
 * NUL included), or NULL. */
int ebb_plan_add_eviction_str(struct ebb_plan *p, const char *pod, const char *node,
                              const char *plugin, const char *profile, ebb_str reason);
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
/* The same with the node's and the message's lengths: a script's text,
 * which may hold NUL bytes, kept whole. `node` may be NULL. */
int ebb_plan_add_note_text(struct ebb_plan *p, const char *plugin, const char *profile,
                           const char *node, size_t node_len, const char *message, size_t len);

/* Record utilization for every node of `cache` (sorted by name), as
 * `before` (first call) or `after` (every later call). */
struct ebb_cache;
int ebb_plan_snapshot_nodes(struct ebb_plan *p, struct ebb_cache *cache, bool before);

/* JSON text (malloc'd, caller frees): valid UTF-8 whatever the plan holds
 * (ebb_json_print), utilization rounded to two decimals, never wrapped. */
char *ebb_plan_to_json(const struct ebb_plan *p, bool pretty);
/* The same as a cJSON object (caller deletes, prints with ebb_json_print),
 * for callers that add keys. Texts are raw items (ebb_json_text). */
struct cJSON;
struct cJSON *ebb_plan_json(const struct ebb_plan *p);
/* For people: one line per entry, every text escaped for a line
 * (EBB_ESC_LINE: no control byte, valid UTF-8). */
void ebb_plan_print_table(const struct ebb_plan *p, FILE *out);

#endif
