/* cJSON trees in a bump arena (snapshot_int.h), and the gate a server's
 * document goes through on its way to cJSON.
 *
 * The text is parsed by yyjson (vendor/yyjson), several times faster than
 * cJSON's own parser, and its values are laid out as cJSON nodes, all in a
 * bump arena that is reset, not freed node by node, when the document is
 * done: the snapshot loader parses each item so, the watch cache each LIST
 * item and watch event. Every decoder reads the tree cJSON's own parser
 * would make (ebb/decode.h), less managedFields. The tree is bounded as well as the text
 * (EBB_JSON_TREE_MAX): a few bytes of JSON make a node of 64. */
#include <limits.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yyjson.h>

#include "model/snapshot_int.h"

/* What a reset arena keeps of its chunks for the next document: one
 * object that was huge does not hold its memory for the process's life. */
#define ARENA_KEEP ((size_t)4 << 20)
#define CHUNK ((size_t)256 << 10)

struct arena_chunk {
    struct arena_chunk *next;
    size_t cap, used;
    max_align_t data[];
};

/* n rounded up to malloc's alignment: what a block of n takes. */
static size_t aligned(size_t n)
{
    return (n + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
}

/* n bytes of a (aligned as malloc's), counted against EBB_JSON_TREE_MAX:
 * NULL with a->over or a->oom set. */
static void *arena_alloc(struct ebb_json_arena *a, size_t n)
{
    struct arena_chunk *c = a->cur;

    n = aligned(n);
    /* A few bytes of JSON make a node of 64: the tree is bounded, not only
     * the text (EBB_JSON_TREE_MAX, well above what 1.5 MiB can make). */
    if (n > EBB_JSON_TREE_MAX || a->used + n > EBB_JSON_TREE_MAX) {
        a->over = true;
        return NULL;
    }
    while (c != NULL && c->cap - c->used < n)
        c = a->cur = c->next;
    if (c == NULL) {
        size_t cap = n > CHUNK ? n : CHUNK;
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

/* yyjson's allocator: the arena. It grows its value array with realloc:
 * the last block of the chunk grows in place, any other is copied. */
static void *yy_malloc(void *ctx, size_t n)
{
    return arena_alloc(ctx, n);
}

static void *yy_realloc(void *ctx, void *p, size_t old, size_t n)
{
    struct ebb_json_arena *a = ctx;
    struct arena_chunk *c = a->cur;
    size_t o = aligned(old);
    void *q;

    if (p == NULL)
        return arena_alloc(a, n);
    if (c != NULL && (char *)p + o == (char *)c->data + c->used && n >= old) {
        size_t more = aligned(n) - o;
        if (c->cap - c->used >= more && a->used + more <= EBB_JSON_TREE_MAX) {
            c->used += more;
            a->used += more;
            return p;
        }
    }
    if ((q = arena_alloc(a, n)) != NULL)
        memcpy(q, p, old < n ? old : n);
    return q;
}

static void yy_free(void *ctx, void *p)
{
    /* everything goes at once, in ebb_json_arena_reset */
    (void)ctx;
    (void)p;
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

/* ---- yyjson's values as cJSON nodes --------------------------------------------- */

/* The tree cJSON's parser would have made of the same text: the same node
 * types and fields (valueint saturated as cJSON does, true's valueint 1),
 * members in order (a duplicate key kept, the first found by lookups),
 * each list's first node's prev pointing at its last (cJSON appends
 * through it), strings and keys pointing into yyjson's copy of the text
 * (in the same arena). Nesting deeper than cJSON's CJSON_NESTING_LIMIT is
 * refused as cJSON refuses it: what walks a tree recursively
 * (cJSON_Duplicate, cJSON_Print) stays within it.
 *
 * One exception: an object's metadata.managedFields (the field managers'
 * bookkeeping the API server adds to every object, often half its text) is
 * left out, at any depth (a watch event's object too): no decoder reads it,
 * and an object ebb shows whole is read again from its source.
 *
 * One pass, no recursion: yyjson keeps a document's values side by side
 * in document order (a container, then everything inside it), the order
 * cJSON's nodes are made in, so each value is the next node and the open
 * containers are a stack; a value left out is stepped over whole. */
struct open_list {
    cJSON *node, *last;
    size_t left;                 /* members still to come */
    bool obj;
    bool metadata;               /* the object under a "metadata" key */
};

static bool left_out(const struct open_list *o, const char *key)
{
    return o->metadata && key[0] == 'm' && strcmp(key, "managedFields") == 0;
}

static void number(cJSON *n, double d)
{
    n->type = cJSON_Number;
    n->valuedouble = d;
    if (d >= INT_MAX)
        n->valueint = INT_MAX;
    else if (d <= (double)INT_MIN)
        n->valueint = INT_MIN;
    else
        n->valueint = (int)d;
}

static bool lay_out(yyjson_val *v, cJSON *out)
{
    struct open_list open[CJSON_NESTING_LIMIT];
    const char *key = NULL;
    int top = -1;

    for (;;) {
        cJSON *n;
        size_t len = 0;

        if (key != NULL && left_out(&open[top], key)) {
            v = unsafe_yyjson_get_next(v);
            open[top].left--;
            goto next;
        }
        n = out++;
        n->next = n->prev = n->child = NULL;
        n->valuestring = NULL;
        n->valueint = 0;
        n->valuedouble = 0;
        n->string = (char *)key;
        switch (unsafe_yyjson_get_type(v)) {
        case YYJSON_TYPE_NULL:
            n->type = cJSON_NULL;
            break;
        case YYJSON_TYPE_BOOL:
            n->valueint = unsafe_yyjson_get_bool(v);
            n->type = n->valueint ? cJSON_True : cJSON_False;
            break;
        case YYJSON_TYPE_NUM:
            switch (unsafe_yyjson_get_subtype(v)) {
            case YYJSON_SUBTYPE_UINT: number(n, (double)unsafe_yyjson_get_uint(v)); break;
            case YYJSON_SUBTYPE_SINT: number(n, (double)unsafe_yyjson_get_sint(v)); break;
            default: number(n, unsafe_yyjson_get_real(v)); break;
            }
            break;
        case YYJSON_TYPE_RAW:
            /* a number past int64/uint64 or past a finite double (read
             * raw): what cJSON's strtod made of it, infinity included */
            number(n, strtod(unsafe_yyjson_get_raw(v), NULL));
            break;
        case YYJSON_TYPE_STR:
            n->type = cJSON_String;
            n->valuestring = (char *)unsafe_yyjson_get_str(v);
            break;
        case YYJSON_TYPE_ARR:
        case YYJSON_TYPE_OBJ:
            if (top + 1 >= CJSON_NESTING_LIMIT)
                return false;
            n->type = unsafe_yyjson_is_obj(v) ? cJSON_Object : cJSON_Array;
            len = unsafe_yyjson_get_len(v);
            break;
        default:
            return false;
        }
        if (top >= 0) {
            struct open_list *o = &open[top];
            if (o->last == NULL)
                o->node->child = n;
            else
                o->last->next = n, n->prev = o->last;
            o->last = n;
            o->left--;
        }
        if (len > 0)
            open[++top] = (struct open_list){ n, NULL, len, n->type == cJSON_Object,
                                              n->type == cJSON_Object && key != NULL &&
                                                  strcmp(key, "metadata") == 0 };
        v++;
    next:
        while (top >= 0 && open[top].left == 0) {
            if (open[top].node->child != NULL)
                open[top].node->child->prev = open[top].last;
            top--;
        }
        if (top < 0)
            return true;
        key = NULL;
        if (open[top].obj)
            key = unsafe_yyjson_get_str(v++);
    }
}

/* In `a` (the caller resets it). yyjson reads what cJSON read: the first
 * value, whatever follows it left alone (*endp just past it); a UTF-8 BOM
 * in front; invalid UTF-8 inside strings (the decoders refuse it naming
 * the field, ebb__intern); numbers past int64 or a finite double, as
 * cJSON's strtod read them. */
cJSON *ebb__json_arena_parse_raw(struct ebb_json_arena *a, const char *text, size_t len,
                                 const char **endp)
{
    const yyjson_read_flag flg = YYJSON_READ_STOP_WHEN_DONE | YYJSON_READ_ALLOW_INVALID_UNICODE |
                                 YYJSON_READ_BIGNUM_AS_RAW | YYJSON_READ_ALLOW_BOM;
    yyjson_alc alc = { yy_malloc, yy_realloc, yy_free, a };
    yyjson_read_err err;
    yyjson_doc *doc;
    cJSON *root;
    size_t count;

    if (endp != NULL)
        *endp = text;
    if (text == NULL)
        return NULL;
    if ((doc = yyjson_read_opts((char *)text, len, flg, &alc, &err)) == NULL) {
        if (endp != NULL)
            *endp = text + (err.pos <= len ? err.pos : len);
        if (err.code == YYJSON_READ_ERROR_MEMORY_ALLOCATION && !a->over)
            a->oom = true;
        return NULL;
    }
    if (endp != NULL)
        *endp = text + yyjson_doc_get_read_size(doc);
    count = yyjson_doc_get_val_count(doc);
    if (count > EBB_JSON_TREE_MAX / sizeof(cJSON)) {
        a->over = true;
        return NULL;
    }
    /* keys take a slot each too: a bound, not the count used */
    if ((root = arena_alloc(a, count * sizeof(cJSON))) == NULL)
        return NULL;
    if (!lay_out(yyjson_doc_get_root(doc), root)) {
        if (endp != NULL)
            *endp = text;
        return NULL;
    }
    return root;
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
    ebb_skip_clear(why);
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
