/* cJSON trees in a bump arena (snapshot_int.h), and the gate a server's
 * document goes through on its way to cJSON.
 *
 * cJSON mallocs every node and string; while a document is parsed its
 * allocations come from a bump arena that is reset, not freed node by
 * node, when the document is done: the snapshot loader parses each item
 * so, the watch cache each LIST item and watch event. The tree is bounded
 * as well as the text (EBB_JSON_TREE_MAX): a few bytes of JSON make a
 * node of 64. */
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/snapshot_int.h"

/* What a reset arena keeps of its chunks for the next document: one
 * object that was huge does not hold its memory for the process's life. */
#define ARENA_KEEP ((size_t)4 << 20)

struct arena_chunk {
    struct arena_chunk *next;
    size_t cap, used;
    max_align_t data[];
};

static struct ebb_json_arena *the_arena;   /* the one being used by the cJSON hooks */

static void *arena_malloc(size_t n)
{
    struct ebb_json_arena *a = the_arena;
    struct arena_chunk *c = a->cur;

    n = (n + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
    /* A few bytes of JSON make a node of 64: the tree is bounded, not only
     * the text (EBB_JSON_TREE_MAX, well above what 1.5 MiB can make). */
    if (a->used + n > EBB_JSON_TREE_MAX) {
        a->over = true;
        return NULL;
    }
    while (c != NULL && c->cap - c->used < n)
        c = a->cur = c->next;
    if (c == NULL) {
        size_t cap = 256u << 10;
        if (cap < n)
            cap = n;
        if ((c = malloc(sizeof(*c) + cap)) == NULL) {
            a->oom = true;
            return NULL;
        }
        c->cap = cap;
        c->used = 0;
        /* new chunks go to the front so the next reset starts with them */
        c->next = a->head;
        a->head = a->cur = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    a->used += n;
    return p;
}

static void arena_free(void *p)
{
    (void)p;   /* everything goes at once in ebb_json_arena_reset */
}

/* Everything handed out is free again; chunks past ARENA_KEEP go back to
 * malloc. */
void ebb_json_arena_reset(struct ebb_json_arena *a)
{
    struct arena_chunk **pp, *c;
    size_t kept = 0;

    if (a == NULL)
        return;
    pp = &a->head;
    while ((c = *pp) != NULL) {
        if (kept + c->cap > ARENA_KEEP) {
            *pp = c->next;
            free(c);
            continue;
        }
        kept += c->cap;
        c->used = 0;
        pp = &c->next;
    }
    a->cur = a->head;
    a->used = 0;
    a->oom = false;
    a->over = false;
}

void ebb__json_arena_release(struct ebb_json_arena *a)
{
    struct arena_chunk *c, *next;

    for (c = a->head; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    a->head = a->cur = NULL;
}

/* With the arena's hooks installed, then cJSON is put back on malloc. */
cJSON *ebb__json_arena_parse_raw(struct ebb_json_arena *a, const char *text, size_t len,
                                 const char **endp)
{
    cJSON_Hooks h = { arena_malloc, arena_free };
    cJSON *j;

    the_arena = a;
    cJSON_InitHooks(&h);
    j = cJSON_ParseWithLengthOpts(text, len, endp, false);
    cJSON_InitHooks(NULL);
    the_arena = NULL;
    return j;
}

/* ---- the gate for a server's documents ----------------------------------------- */

int ebb_json_arena_create(struct ebb_json_arena **out)
{
    if (out == NULL)
        return EBB_EINVAL;
    return (*out = calloc(1, sizeof(**out))) != NULL ? 0 : EBB_ENOMEM;
}

/* The gate every document of a server goes through on its way to cJSON
 * (watch events, LIST items): bounded in text and in tree, NUL scrubbed. */
int ebb_json_arena_parse(struct ebb_json_arena *a, char *text, size_t len, struct cJSON **out,
                         int *why)
{
    int dummy;
    cJSON *j;

    if (why == NULL)
        why = &dummy;
    *why = 0;
    if (a == NULL || text == NULL || out == NULL)
        return EBB_EINVAL;
    *out = NULL;
    if (len > EBB_OBJECT_MAX) {
        *why = EBB_SKIP_TOO_LARGE;
        return EBB_ESCHEMA;
    }
    if (!ebb_json_nul_scrub(text, len)) {
        *why = EBB_SKIP_NOT_JSON;
        return EBB_ESCHEMA;
    }
    if ((j = ebb__json_arena_parse_raw(a, text, len, NULL)) != NULL) {
        *out = j;
        return 0;
    }
    if (a->oom) {
        ebb_json_arena_reset(a);
        return EBB_ENOMEM;
    }
    *why = a->over ? EBB_SKIP_TOO_LARGE : EBB_SKIP_NOT_JSON;
    ebb_json_arena_reset(a);
    return EBB_ESCHEMA;
}

void ebb_json_arena_destroy(struct ebb_json_arena *a)
{
    if (a == NULL)
        return;
    ebb__json_arena_release(a);
    free(a);
}

/* ---- one object of a server's answer ----------------------------------------------- */

int ebb_object_from_text(struct ebb_json_arena *a, char *text, size_t len, int kind,
                         struct ebb_object *out, struct ebb_skip *why)
{
    int rc, reason = 0;
    cJSON *j;

    if (a == NULL || out == NULL || why == NULL)
        return EBB_EINVAL;
    memset(why, 0, sizeof(*why));
    out->kind = EBB_KIND_UNKNOWN;
    out->u.any = NULL;
    if (text == NULL)
        len = EBB_OBJECT_MAX + 1;   /* the reader kept none of it */
    if (text == NULL || (rc = ebb_json_arena_parse(a, text, len, &j, &reason)) == EBB_ESCHEMA) {
        why->kind = kind;
        why->reason = text == NULL ? EBB_SKIP_TOO_LARGE : reason;
        why->err.code = EBB_ESCHEMA;
        if (why->reason == EBB_SKIP_TOO_LARGE)
            snprintf(why->err.msg, sizeof(why->err.msg),
                     "an object of more than %zu MiB of JSON (or of JSON values): not one a "
                     "Kubernetes API server keeps (etcd: 1.5 MiB)", EBB_OBJECT_MAX >> 20);
        else
            snprintf(why->err.msg, sizeof(why->err.msg), "not a JSON object");
        return EBB_ESCHEMA;
    }
    if (rc != 0)
        return rc;
    rc = ebb_decode_from_server(j, kind, out, why);
    ebb_json_arena_reset(a);
    return rc;
}
