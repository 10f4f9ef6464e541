/* cJSON trees in a bump arena (snapshot_int.h), and the gate a server's
 * document goes through on its way to cJSON.
 *
 * cJSON mallocs every node and string; while a document is parsed its
 * allocations come from a bump arena that is reset, not freed node by
 * node, when the document is done: the snapshot loader parses each item
 * so, the watch cache each LIST item and watch event. The tree is bounded
 * as well as the text (EBB_JSON_TREE_MAX): a few bytes of JSON make a
 * node of 64. */
#include <pthread.h>
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

/* The arena this thread parses into, NULL when it parses none: cJSON's
 * hooks are installed once for the process (hooks_install) and never
 * swapped, so a thread that parses into an arena (the snapshot loader's
 * parser thread) and one that builds or copies trees with malloc (the
 * loader's caller, ebb serve's copies) do not race on them. */
static _Thread_local struct ebb_json_arena *the_arena;

static void *arena_malloc(size_t n)
{
    struct ebb_json_arena *a = the_arena;
    struct arena_chunk *c;

    if (a == NULL)
        return malloc(n);
    c = a->cur;

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
    /* in an arena everything goes at once, in ebb_json_arena_reset; a tree
     * parsed in an arena is never given to cJSON_Delete */
    if (the_arena == NULL)
        free(p);
}

static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void hooks_set(void)
{
    cJSON_Hooks h = { arena_malloc, arena_free };

    cJSON_InitHooks(&h);
}

/* cJSON's hooks for the process: the first parse installs them (or
 * ebb_json_arena_create, which runs before a watcher's threads parse). */
static void hooks_install(void)
{
    pthread_once(&hooks_once, hooks_set);
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

/* In this thread's arena `a`, then this thread is back on malloc. */
cJSON *ebb__json_arena_parse_raw(struct ebb_json_arena *a, const char *text, size_t len,
                                 const char **endp)
{
    cJSON *j;

    hooks_install();
    the_arena = a;
    j = cJSON_ParseWithLengthOpts(text, len, endp, false);
    the_arena = NULL;
    return j;
}

/* ---- the gate for a server's documents ----------------------------------------- */

int ebb_json_arena_create(struct ebb_json_arena **out)
{
    if (out == NULL)
        return EBB_EINVAL;
    hooks_install();
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
