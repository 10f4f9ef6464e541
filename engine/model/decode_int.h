/* engine/model/decode_int.h: what the pieces of the decoder share (cJSON ->
 * the compact structs of ebb/model.h). Not public.
 *
 *   decode.c           the decode state (the path of the field being read,
 *                      errors), the typed getters, the one array reader,
 *                      and the shapes several kinds share: labels, resource
 *                      lists, metadata, conditions
 *   decode_selector.c  label selectors, node selector requirements and the
 *                      affinity terms made of them
 *   decode_pod.c       pods: requests, QoS, what the scheduler reads, statuses
 *   decode_kinds.c     nodes and every other kind ebb keeps
 *   decode_object.c    the entry points: an object by its kind, the kinds'
 *                      names, what becomes of an object a server sent
 *
 * Calls go decode_object.c -> decode_pod.c, decode_kinds.c ->
 * decode_selector.c -> decode.c. One thread at a time per struct dec; the
 * functions keep no state of their own. */
#ifndef EBB_DECODE_INT_H
#define EBB_DECODE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include <cjson/cJSON.h>

#include "ebb/decode.h"

/* ---- decode.c: the state of one object's decode ---------------------------- */

#define DEC_MAX_DEPTH 24

/* Errors carry the path of the bad field inside the object; the path is
 * kept as a stack of pointers into the cJSON tree and formatted only when
 * something fails, so the happy path pays nothing for it. */
struct dec {
    struct ebb_error *err;
    int res_budget;          /* new resource names this object may register */
    size_t kept;             /* bytes of text kept ... */
    size_t kept_max;         /* ... at most (EBB_OBJECT_KEPT_MAX from a server) */
    int depth;
    struct {
        const char *key;     /* NULL: an array index */
        int idx;
    } st[DEC_MAX_DEPTH];
};

/* A user's file is not bounded by what ebb keeps of an object (the user
 * chose it); what a server sends is (ebb_decode_from_server). */
#define DEC_INIT(e) { .err = (e), .res_budget = EBB_RES_OBJECT_NEW, .kept_max = SIZE_MAX }

static inline void ebb__push(struct dec *d, const char *key)
{
    if (d->depth < DEC_MAX_DEPTH) {
        d->st[d->depth].key = key;
        d->st[d->depth].idx = -1;
    }
    d->depth++;
}

static inline void ebb__push_i(struct dec *d, int i)
{
    if (d->depth < DEC_MAX_DEPTH) {
        d->st[d->depth].key = NULL;
        d->st[d->depth].idx = i;
    }
    d->depth++;
}

static inline void ebb__pop(struct dec *d)
{
    d->depth--;
}

/* Fill d->err with the current path (plus `last`, may be NULL) and the
 * message; returns `code`. */
__attribute__((format(printf, 4, 5)))
int ebb__fail(struct dec *d, int code, const char *last, const char *fmt, ...);
int ebb__nomem(struct dec *d);
/* "expected <what>, got a number" at the current path (plus `key`). */
int ebb__expected(struct dec *d, const char *key, const char *what, const cJSON *j);

/* Text from the input as a message quotes it, in a buffer of the calling
 * expression's life (ebb_decode_shown). */
#define SHOWN_MAX 96
#define SHOWN(s) ebb_decode_shown((s), (char[SHOWN_MAX]){ 0 }, SHOWN_MAX)

/* ---- decode.c: typed getters --------------------------------------------------
 * Absent and null are "not set" (the out-parameter is left as it is, or
 * NULL); a wrong type is an error naming the field. */

/* The first member named `key`, as cJSON_GetObjectItemCaseSensitive finds
 * it (an array's entries have no names: never found), but inline and with
 * the first byte compared before strcmp is called: a pod's decode looks up
 * hundreds of keys among members that mostly differ there. */
static inline const cJSON *ebb__child(const cJSON *o, const char *key)
{
    const cJSON *j;

    if (o == NULL)
        return NULL;
    for (j = o->child; j != NULL; j = j->next)
        if (j->string != NULL && j->string[0] == key[0] && strcmp(j->string, key) == 0)
            break;
    return j == NULL || cJSON_IsNull(j) ? NULL : j;
}

/* Every string ebb keeps goes through here: valid UTF-8 (or the plan could
 * not print it), within what ebb keeps of one object; `key` names it in an
 * error (NULL: the current path). */
int ebb__intern(struct dec *d, const char *key, const char *s, ebb_str *out);
int ebb__text_at(struct dec *d, const cJSON *o, const char *key, const char **out);   /* borrowed */

/* The string field most fields are: inline, as the decode of a pod reads
 * dozens of them. */
static inline int ebb__str_at(struct dec *d, const cJSON *o, const char *key, ebb_str *out)
{
    const char *s;
    int rc;

    if ((rc = ebb__text_at(d, o, key, &s)) != 0 || s == NULL)
        return rc;
    return ebb__intern(d, key, s, out);
}

int ebb__obj_at(struct dec *d, const cJSON *o, const char *key, const cJSON **out);
/* An array field: *first its first entry (NULL when empty or absent), *n
 * its length, at most UINT16_MAX. */
int ebb__arr_at(struct dec *d, const cJSON *o, const char *key, const cJSON **first, size_t *n);
int ebb__int_at(struct dec *d, const cJSON *o, const char *key, int64_t lo, int64_t hi,
                int64_t *out, bool *present);
int ebb__i32_at(struct dec *d, const cJSON *o, const char *key, int32_t *out, bool *present);
int ebb__bool_at(struct dec *d, const cJSON *o, const char *key, bool *out);
int ebb__time_at(struct dec *d, const cJSON *o, const char *key, int64_t *out);

/* ---- decode.c: the one array reader --------------------------------------------- */

/* Reads the entry `e` of an array field into `slot`, its place in the
 * array made for the entries (NULL when none is made); `ctx` is the
 * caller's. Errors name the entry (the path ends in "[i]"). */
typedef int ebb__entry_fn(struct dec *d, const cJSON *e, void *slot, void *ctx);

/* The one loop over an array field o[key] (decode.c says what it
 * guarantees): absent or null is empty; anything but an array, more than
 * UINT16_MAX entries, or an entry not of `type` (cJSON_Object or
 * cJSON_String) is an error naming the field or the entry.
 *
 * With size > 0: *arrp (the address of the caller's element pointer, NULL
 * until here) receives a zeroed array of as many elements as o[key] has
 * entries (none made when empty), and *n (0 until here) counts each entry
 * before `fn` fills its slot. With size 0 nothing is made: `fn` keeps what
 * it reads itself. Stops at the first error. */
int ebb__array_at(struct dec *d, const cJSON *o, const char *key, int type, ebb__entry_fn *fn,
                  void *ctx, size_t size, void *arrp, uint16_t *n);

/* An array of objects into `arr` (a T *, NULL) counted by `n` (a uint16_t, 0). */
#define ARRAY_AT(d, o, key, fn, ctx, arr, n) \
    ebb__array_at((d), (o), (key), cJSON_Object, (fn), (ctx), sizeof(*(arr)), &(arr), &(n))
/* An array of objects, each read by `fn` into what `ctx` says. */
#define EACH_AT(d, o, key, fn, ctx) \
    ebb__array_at((d), (o), (key), cJSON_Object, (fn), (ctx), 0, NULL, NULL)

/* A string array into interned strings (*out NULL, *n 0 until here). */
int ebb__strs_at(struct dec *d, const cJSON *o, const char *key, ebb_str **out, uint16_t *n);

/* ---- decode.c: shapes several kinds share ----------------------------------------- */

/* An object field read as a map: *m the object (NULL when absent or
 * null), *n how many members it has. */
int ebb__map_at(struct dec *d, const cJSON *o, const char *key, const cJSON **m, size_t *n);

/* A map of strings (labels, annotations, a nodeSelector), sorted by key;
 * drop_applied leaves kubectl's last-applied annotation out. */
int ebb__labels_at(struct dec *d, const cJSON *o, const char *key, struct ebb_labels *out,
                   bool drop_applied);

/* A dense resource list while a pod's requests are summed. */
struct racc {
    uint64_t has;
    int64_t v[EBB_RES_MAX];
};

void ebb__racc_add(struct racc *a, const struct racc *b);
void ebb__racc_max(struct racc *a, const struct racc *b);   /* maxResourceList */
void ebb__racc_clear(struct racc *a);
int ebb__racc_emit(struct dec *d, const struct racc *a, struct ebb_res *out);

/* What a ResourceList does with a name the registry has no slot for
 * (ebb/model.h): a pod's requests count it as EBB_RES_UNREGISTERED, which
 * no node offers (the pod fits nowhere, as a resource no node lists); a
 * node's capacity, a limit or a usage leaves it out. */
enum { RES_DROP, RES_MARK };

/* A ResourceList object into `a` (values replace); the member named
 * `skip` (may be NULL) is not a resource. */
int ebb__reslist(struct dec *d, const cJSON *m, const char *skip, int unknown, struct racc *a);
int ebb__reslist_at(struct dec *d, const cJSON *o, const char *key, int unknown, struct racc *a);
/* A ResourceList field into a compact list (names ebb has no slot for left out). */
int ebb__res_at(struct dec *d, const cJSON *o, const char *key, struct ebb_res *out);

/* metadata.name (required) and, when ns is not NULL, metadata.namespace
 * ("default" when left out, as kubectl applies it); *meta the metadata. */
int ebb__meta_at(struct dec *d, const cJSON *obj, const cJSON **meta, ebb_str *ns, ebb_str *name);

/* status.conditions: kept into *out and *nout when out is not NULL; *ready
 * set from a Ready condition either way. */
int ebb__conditions_at(struct dec *d, const cJSON *status, struct ebb_condition **out,
                       uint16_t *nout, bool *ready);

/* ---- decode_selector.c ------------------------------------------------------------ */

/* A metav1.LabelSelector field; nil gives a selector matching nothing when
 * nil_nothing (as every user of one in the pod and PDB APIs reads it),
 * NULL otherwise. */
int ebb__selector_at(struct dec *d, const cJSON *o, const char *key, bool nil_nothing,
                     struct ebb_selector **out);
/* A selector written as a plain map (Service, ReplicationController):
 * every pair a "key In (value)"; {} selects everything. */
int ebb__map_selector_at(struct dec *d, const cJSON *o, const char *key,
                         struct ebb_selector **out);
/* v1.NodeAffinity (na an object) into a. */
int ebb__node_affinity(struct dec *d, const cJSON *na, struct ebb_affinity *a);
/* spec.affinity: *out NULL when it says nothing. */
int ebb__affinity_at(struct dec *d, const cJSON *spec, struct ebb_affinity **out);

/* ---- decode_pod.c, decode_kinds.c: one kind each ----------------------------------- */

int ebb__decode_pod(struct dec *d, const cJSON *obj, struct ebb_pod **out);
int ebb__decode_node(struct dec *d, const cJSON *obj, struct ebb_node **out);
int ebb__decode_namespace(struct dec *d, const cJSON *obj, struct ebb_namespace **out);
int ebb__decode_priority_class(struct dec *d, const cJSON *obj, struct ebb_priority_class **out);
int ebb__decode_pvc(struct dec *d, const cJSON *obj, struct ebb_pvc **out);
int ebb__decode_pdb(struct dec *d, const cJSON *obj, struct ebb_pdb **out);
int ebb__decode_node_metrics(struct dec *d, const cJSON *obj, struct ebb_node_metrics **out);
int ebb__decode_pod_metrics(struct dec *d, const cJSON *obj, struct ebb_pod_metrics **out);
int ebb__decode_koord(struct dec *d, const cJSON *obj, struct ebb_koord_node_metric **out);
int ebb__decode_workload(struct dec *d, const cJSON *obj, int kind, struct ebb_workload **out);

#endif
