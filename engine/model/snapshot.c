/* Snapshot loading: kubectl List JSON (streamed item by item) or YAML.
 *
 * JSON is read through a window that holds at least one item: a small
 * scanner finds each item's byte extent (strings and escapes respected,
 * lines counted), the item alone goes to cJSON, is decoded into the cache
 * and its tree dropped. cJSON mallocs every node and string; while an item
 * is parsed its allocations come from a bump arena that is reset, not
 * freed node by node, when the item is done. The JSON file stays open in
 * the cache so a pod's or node's full object can be read back (pod.object).
 *
 * YAML needs the whole document in memory anyway (libyaml via val.c); each
 * pod and node is re-printed as JSON into an anonymous temporary file that
 * serves as its source. */
#include <errno.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ebb/cache.h"
#include "ebb/prom_result.h"
#include "ebb/snapshot.h"
#include "ebb/val.h"
#include "base/map.h"

/* The read window; it grows only when one item does not fit. Tests lower
 * it to exercise items that straddle refills. */
size_t ebb__snapshot_window = 1u << 20;

/* One item (a Kubernetes object) of a file is at most this: etcd keeps
 * 1.5 MiB (an answer of a server: EBB_OBJECT_MAX). */
#define ITEM_MAX ((size_t)64 << 20)
/* A YAML snapshot is read whole (JSON streams): at most this. */
#define YAML_MAX ((size_t)512 << 20)
/* What a reset arena keeps of its chunks for the next document: one
 * object that was huge does not hold its memory for the process's life. */
#define ARENA_KEEP ((size_t)4 << 20)

/* ---- a bump arena for cJSON ------------------------------------------------ */

struct chunk {
    struct chunk *next;
    size_t cap, used;
    max_align_t data[];
};

struct arena {
    struct chunk *head, *cur;
    size_t used;                 /* bytes handed out since the last reset */
    bool oom;                    /* malloc failed */
    bool over;                   /* the document wanted more than EBB_JSON_TREE_MAX */
};

static struct arena *the_arena;   /* the one being used by the cJSON hooks */

static void *arena_malloc(size_t n)
{
    struct arena *a = the_arena;
    struct chunk *c = a->cur;

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
    (void)p;   /* everything goes at once in arena_reset */
}

/* Everything handed out is free again; chunks past ARENA_KEEP go back to
 * malloc. */
static void arena_reset(struct arena *a)
{
    struct chunk **pp = &a->head, *c;
    size_t kept = 0;

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

static void arena_destroy(struct arena *a)
{
    struct chunk *c, *next;

    for (c = a->head; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    a->head = a->cur = NULL;
}

/* Parse with the arena's hooks installed, then put cJSON back on malloc. */
static cJSON *arena_parse(struct arena *a, const char *text, size_t len, const char **endp)
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

/* ---- the arena for callers that parse many small documents ------------------ */

struct ebb_json_arena {
    struct arena a;
};

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
    if ((j = arena_parse(&a->a, text, len, NULL)) != NULL) {
        *out = j;
        return 0;
    }
    if (a->a.oom) {
        arena_reset(&a->a);
        return EBB_ENOMEM;
    }
    *why = a->a.over ? EBB_SKIP_TOO_LARGE : EBB_SKIP_NOT_JSON;
    arena_reset(&a->a);
    return EBB_ESCHEMA;
}

void ebb_json_arena_reset(struct ebb_json_arena *a)
{
    if (a != NULL)
        arena_reset(&a->a);
}

void ebb_json_arena_destroy(struct ebb_json_arena *a)
{
    if (a == NULL)
        return;
    arena_destroy(&a->a);
    free(a);
}

/* ---- the loader -------------------------------------------------------------- */

struct loader {
    struct ebb_cache *cache;
    struct ebb_snapshot_stats *stats;
    struct ebb_error *err;
    const char *name;
    FILE *f;
    char *buf;
    size_t cap, len, pos;       /* buf[0] is the file's byte `base` */
    uint64_t base;
    bool eof;
    int io_rc;                  /* set when next_nonws returns ERR */
    int line;                   /* line of buf[pos] */
    uint16_t src;
    bool has_src;
    struct arena arena;
    ebb_snapshot_item_fn item_fn;   /* ebb_snapshot_load_each */
    bool compact;                   /* a whole view: lay its pods out (ebb_cache_compact) */
    void *item_ud;
    bool unique;                    /* a file: a pod, node or uid twice is an error */
    struct ebb_map seen;            /* (ns, name) of pods, (name, name) of nodes, (uid,
                                       uid): -> item index + 1 */
};

enum { END = -1, ERR = -2 };   /* next_nonws: end of file, read error */

static int lfail(struct loader *l, int code, int line, const char *prefix, int idx,
                 const char *field, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

static int lfail(struct loader *l, int code, int line, const char *prefix, int idx,
                 const char *field, const char *fmt, ...)
{
    /* larger than ebb_error's: what is longer is cut there, with an ellipsis */
    char path[1024], msg[2048];
    va_list ap;

    if (l->err == NULL)
        return code;
    path[0] = '\0';
    if (prefix != NULL && idx >= 0)
        snprintf(path, sizeof(path), "%s[%d]", prefix, idx);
    if (field != NULL && field[0] != '\0') {
        size_t n = strlen(path);
        snprintf(path + n, sizeof(path) - n, "%s%s", n && field[0] != '[' ? "." : "", field);
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* through ebb_error_set: escaped and cut like every error message */
    ebb_error_set(l->err, code, l->name, line, path, "%s", msg);
    return code;
}

/* Keep buf[keep..len), read more after it. Returns the bytes read, 0 at the
 * end of the file, or a negative error. */
static long refill(struct loader *l, size_t keep)
{
    size_t k;

    if (l->eof)
        return 0;
    if (keep > 0) {
        memmove(l->buf, l->buf + keep, l->len - keep);
        l->len -= keep;
        l->pos -= keep;
        l->base += keep;
    }
    if (l->len == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : ebb__snapshot_window;
        char *b = realloc(l->buf, cap);
        if (b == NULL)
            return EBB_ENOMEM;
        l->buf = b;
        l->cap = cap;
    }
    k = fread(l->buf + l->len, 1, l->cap - l->len, l->f);
    if (k == 0) {
        if (ferror(l->f))
            return EBB_EIO;
        l->eof = true;
    }
    l->len += k;
    if (l->stats)
        l->stats->bytes += k;
    return (long)k;
}

/* The next byte that is not JSON whitespace (not consumed), END, or ERR
 * with l->io_rc set. */
static int next_nonws(struct loader *l)
{
    for (;;) {
        while (l->pos < l->len) {
            char c = l->buf[l->pos];
            if (c == '\n')
                l->line++;
            else if (c != ' ' && c != '\t' && c != '\r')
                return (unsigned char)c;
            l->pos++;
        }
        long k = refill(l, l->pos);
        if (k < 0) {
            l->io_rc = (int)k;
            return ERR;
        }
        if (k == 0)
            return END;
    }
}

/* The error for byte `c` where `what` was expected. */
static int unexpected(struct loader *l, int c, const char *prefix, int idx, const char *what)
{
    if (c == ERR)
        return lfail(l, l->io_rc, l->line, prefix, idx, NULL, "read failed: %s",
                     l->io_rc == EBB_EIO ? strerror(errno) : ebb_strerror(l->io_rc));
    if (c == END)
        return lfail(l, EBB_EPARSE, l->line, prefix, idx, NULL,
                     "unexpected end of file: expected %s", what);
    return lfail(l, EBB_EPARSE, l->line, prefix, idx, NULL, "expected %s, found '%c'", what, c);
}

/* Byte classes for the extent scanner. */
static unsigned char cls[256], cls_str[256];

static void scanner_init(void)
{
    if (cls['"'])
        return;
    cls['"'] = cls['{'] = cls['['] = cls['}'] = cls[']'] = cls['\n'] = 1;
    cls_str['"'] = cls_str['\\'] = cls_str['\n'] = 1;
}

/* The extent of the JSON object or array at p (p[0] is '{' or '['): its
 * length, or 0 when [p, end) ends inside it. *nl gets the newlines inside
 * it. Brackets are only counted; cJSON checks the rest. */
static long scan_container(const char *p, const char *end, int *nl)
{
    const char *q = p;
    int depth = 0, lines = 0;

    while (q < end) {
        while (q < end && !cls[(unsigned char)*q])
            q++;
        if (q >= end)
            break;
        switch (*q) {
        case '"':
            for (q++;;) {
                while (q < end && !cls_str[(unsigned char)*q])
                    q++;
                if (q >= end)
                    return 0;
                if (*q == '"')
                    break;
                if (*q == '\n')
                    lines++;
                q += *q == '\\' ? 2 : 1;
            }
            break;
        case '{':
        case '[':
            depth++;
            break;
        case '}':
        case ']':
            if (--depth == 0) {
                *nl = lines;
                return q + 1 - p;
            }
            break;
        case '\n':
            lines++;
            break;
        }
        q++;
    }
    return 0;
}

/* The extent of a scalar (string, number, literal) at p; 0 if more input
 * may continue it. */
static long scan_scalar(const char *p, const char *end, bool at_eof)
{
    const char *q = p;

    if (*q == '"') {
        for (q++; q < end; q++) {
            if (*q == '\\')
                q++;
            else if (*q == '"')
                return q + 1 - p;
        }
        return 0;
    }
    while (q < end && !strchr(" \t\r\n,]}", *q))
        q++;
    return q < end || at_eof ? q - p : 0;
}

/* Bring the whole value starting at buf[pos] into the window. Returns its
 * length (> 0) or a negative error; *nl gets the newlines inside it. */
static long window_value(struct loader *l, int line, const char *prefix, int idx, int *nl)
{
    long n;

    scanner_init();
    for (;;) {
        const char *p = l->buf + l->pos, *end = l->buf + l->len;
        *nl = 0;
        if (*p == '{' || *p == '[')
            n = scan_container(p, end, nl);
        else
            n = scan_scalar(p, end, l->eof);
        if (n > 0)
            return n;
        if (l->eof)
            return lfail(l, EBB_EPARSE, line, prefix, idx, NULL,
                         "unexpected end of file: the value starting here is not closed");
        if (l->len - l->pos > ITEM_MAX)
            return lfail(l, EBB_ELIMIT, line, prefix, idx, NULL,
                         "a value larger than %zu MiB: not a Kubernetes object (etcd keeps "
                         "objects of at most 1.5 MiB)", ITEM_MAX >> 20);
        long k = refill(l, l->pos);
        if (k < 0)
            return lfail(l, (int)k, line, prefix, idx, NULL, "read failed: %s", strerror(errno));
    }
}

static int count_lines(const char *p, const char *end)
{
    int n = 0;

    while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        n++;
        p++;
    }
    return n;
}

static void count_skipped(struct loader *l, const char *kind)
{
    struct ebb_snapshot_stats *s = l->stats;
    size_t i;

    if (s == NULL)
        return;
    s->skipped++;
    for (i = 0; i < s->nskipped_kinds; i++) {
        if (strncmp(s->skipped_kinds[i].kind, kind, sizeof(s->skipped_kinds[i].kind) - 1) == 0) {
            s->skipped_kinds[i].n++;
            return;
        }
    }
    if (i < EBB_ARRAY_LEN(s->skipped_kinds)) {
        snprintf(s->skipped_kinds[i].kind, sizeof(s->skipped_kinds[i].kind), "%s", kind);
        s->skipped_kinds[i].n = 1;
        s->nskipped_kinds++;
    }
}

/* Where an item came from, for errors and for pod.object. */
struct origin {
    const char *prefix;          /* "items", "" (bare array) or NULL (single object) */
    int idx;
    int line;
    const struct ebb_val *val;   /* YAML: the item's tree, for exact lines */
    struct ebb_src src;
};

/* Hand an item to the caller of ebb_snapshot_load_each. */
static int give(struct loader *l, const cJSON *j, int kind, const struct origin *o)
{
    int rc;

    if (l->item_fn == NULL || (rc = l->item_fn(j, kind, l->item_ud)) == 0)
        return 0;
    return lfail(l, rc, o->line, o->prefix, o->idx, NULL, "cannot keep the item: %s",
                 ebb_strerror(rc));
}

static int dup_key(struct loader *l, const struct origin *o, ebb_str a, ebb_str b, const char *what)
{
    void *first = ebb__map_get(&l->seen, a, b);

    if (first != NULL)
        return lfail(l, EBB_ESCHEMA, o->line, o->prefix, o->idx, NULL, "%s %s%s%s is already items[%d]",
                     what, a, b != a ? "/" : "", b != a ? b : "", (int)(uintptr_t)first - 1);
    if (ebb__map_put(&l->seen, a, b, (void *)(uintptr_t)(o->idx + 1), NULL) != 0)
        return lfail(l, EBB_ENOMEM, o->line, o->prefix, o->idx, NULL, "out of memory");
    return 0;
}

/* A snapshot is one cluster: no object twice, no uid on two pods. */
static int check_unique(struct loader *l, const struct ebb_object *obj, const struct origin *o)
{
    int rc = 0;

    if (obj->kind == EBB_KIND_POD) {
        const struct ebb_pod *p = obj->u.pod;
        if ((rc = dup_key(l, o, p->ns, p->name, "the Pod")) == 0 && p->uid != NULL)
            rc = dup_key(l, o, p->uid, p->uid, "the Pod uid");
    } else if (obj->kind == EBB_KIND_NODE) {
        rc = dup_key(l, o, obj->u.node->name, obj->u.node->name, "the Node");
    }
    return rc;
}

/* Decode one parsed item into the cache. */
static int take(struct loader *l, const cJSON *j, const struct origin *o)
{
    struct ebb_object obj;
    struct ebb_error e;
    int kind, rc, line;

    if (l->stats)
        l->stats->items++;
    if (!cJSON_IsObject(j))
        return lfail(l, EBB_ESCHEMA, o->line, o->prefix, o->idx, NULL, "expected an object");
    kind = ebb_decode_kind(j);
    if (kind == EBB_KIND_UNKNOWN) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "kind");
        if (!cJSON_IsString(k) || k->valuestring[0] == '\0')
            return lfail(l, EBB_ESCHEMA, o->line, o->prefix, o->idx, "kind",
                         "required: every item names its kind");
        /* kubectl takes a List without items as an empty one: so does ebb,
         * and says so */
        if (o->prefix == NULL && strlen(k->valuestring) >= 4 &&
            strcmp(k->valuestring + strlen(k->valuestring) - 4, "List") == 0)
            ebb_log(EBB_LOG_WARN, "%s:%d: a %s without items: no objects in it", l->name, o->line,
                    k->valuestring);
        count_skipped(l, k->valuestring);
        return give(l, j, EBB_KIND_UNKNOWN, o);
    }
    ebb_error_clear(&e);
    if ((rc = ebb_decode_object_as(j, kind, &obj, &e)) != 0) {
        line = o->line;
        if (o->val != NULL && e.field[0] != '\0') {
            int at = ebb_val_line_for(o->val, e.field);
            if (at > 0)
                line = at;
        }
        return lfail(l, rc, line, o->prefix, o->idx, e.field, "%s", e.msg);
    }
    if (l->unique && (rc = check_unique(l, &obj, o)) != 0) {
        ebb_object_free(&obj);
        return rc;
    }
    if (kind == EBB_KIND_POD)
        obj.u.pod->src = o->src;
    else if (kind == EBB_KIND_NODE)
        obj.u.node->src = o->src;
    if ((rc = ebb_cache_put(l->cache, &obj)) != 0) {
        ebb_object_free(&obj);
        return lfail(l, rc, o->line, o->prefix, o->idx, NULL, "cannot store the %s: %s",
                     ebb_kind_name(kind), ebb_strerror(rc));
    }
    if (l->stats)
        l->stats->kinds[kind]++;
    return give(l, j, kind, o);
}

static int parse_error(struct loader *l, const struct origin *o, const char *p, size_t n,
                       const char *endp)
{
    char near[25];
    size_t k;

    if (l->arena.oom) {
        arena_reset(&l->arena);
        return lfail(l, EBB_ENOMEM, o->line, o->prefix, o->idx, NULL, "out of memory");
    }
    if (l->arena.over) {
        arena_reset(&l->arena);
        return lfail(l, EBB_ELIMIT, o->line, o->prefix, o->idx, NULL,
                     "the item makes more than %zu MiB of JSON values: not a Kubernetes object "
                     "(etcd keeps objects of at most 1.5 MiB)", EBB_JSON_TREE_MAX >> 20);
    }
    arena_reset(&l->arena);
    if (endp == NULL || endp < p || endp > p + n)
        endp = p;
    for (k = 0; k + 1 < sizeof(near) && endp + k < p + n; k++)
        near[k] = (unsigned char)endp[k] < ' ' ? ' ' : endp[k];
    near[k] = '\0';
    return lfail(l, EBB_EPARSE, o->line + count_lines(p, endp), o->prefix, o->idx, NULL,
                 "invalid JSON near \"%s\"", near);
}

/* Decode a parsed item whose text is p[0, n), [off, off+n) of the file,
 * then drop its tree. */
static int take_parsed(struct loader *l, cJSON *j, const char *p, size_t n, uint64_t off,
                       struct origin *o)
{
    int rc;

    o->src.off = off;
    o->src.len = l->has_src ? (uint32_t)n : 0;
    o->src.file = l->src;
    rc = take(l, j, o);
    arena_reset(&l->arena);
    return rc;
}

/* A NUL in the item [p, p+n) (the window, writable): a "\u0000" escape,
 * which cJSON would cut a string at, is read as U+FFFD as the API server
 * holds it in annotations and free text (ebb_json_nul_scrub, in place);
 * a raw NUL byte is not JSON. Returns 0 when the item must be parsed
 * again (*again), or the error. */
static int item_nul(struct loader *l, struct origin *o, char *p, size_t n, bool *again)
{
    const char *z;

    *again = false;
    if ((z = memchr(p, '\0', n)) != NULL) {
        arena_reset(&l->arena);
        return lfail(l, EBB_EPARSE, o->line + count_lines(p, z), o->prefix, o->idx, NULL,
                     "a NUL byte in the JSON text (write it as \\u0000)");
    }
    if (memmem(p, n, "\\u0000", 6) == NULL)
        return 0;
    arena_reset(&l->arena);
    ebb_json_nul_scrub(p, n);
    *again = true;
    return 0;
}

/* Parse and take the JSON text [p, p+n) that starts at file offset `off`. */
static int take_text(struct loader *l, char *p, size_t n, uint64_t off, struct origin *o)
{
    const char *endp = NULL;
    cJSON *j = arena_parse(&l->arena, p, n, &endp);
    bool again;
    int rc;

    if (j == NULL)
        return parse_error(l, o, p, n, endp);
    if ((rc = item_nul(l, o, p, n, &again)) != 0)
        return rc;
    if (again && (j = arena_parse(&l->arena, p, n, &endp)) == NULL)
        return parse_error(l, o, p, n, endp);
    return take_parsed(l, j, p, n, off, o);
}

/* The item at buf[pos] ('{'). Most items lie inside the window: cJSON
 * parses straight from it and says where the item ends. When the window
 * ends inside the item (or the item is bad), the scanner finds its extent,
 * refilling as needed, and exactly that is parsed. *n gets the length. */
static int take_item(struct loader *l, struct origin *o, long *n)
{
    char *p = l->buf + l->pos;
    const char *endp = NULL;
    cJSON *j = arena_parse(&l->arena, p, l->len - l->pos, &endp);
    bool again;
    int nl, rc;

    if (j != NULL) {
        *n = endp - p;
        if ((rc = item_nul(l, o, p, (size_t)*n, &again)) != 0)
            return rc;
        if (!again)
            return take_parsed(l, j, p, (size_t)*n, l->base + l->pos, o);
        return take_text(l, p, (size_t)*n, l->base + l->pos, o);
    }
    if (l->arena.oom || l->arena.over)
        return parse_error(l, o, p, l->len - l->pos, endp);
    arena_reset(&l->arena);
    if ((*n = window_value(l, o->line, o->prefix, o->idx, &nl)) < 0)
        return (int)*n;
    return take_text(l, l->buf + l->pos, (size_t)*n, l->base + l->pos, o);
}

static const char *scalar_type(int c)
{
    switch (c) {
    case '"': return "a string";
    case '[': return "an array";
    case 't':
    case 'f': return "a boolean";
    case 'n': return "null";
    default: return "a number";
    }
}

/* The elements of an array, buf[pos] == '['. */
static int stream_array(struct loader *l, const char *prefix)
{
    struct origin o = { .prefix = prefix };
    int c, rc;
    long n = 0;

    l->pos++;
    if ((c = next_nonws(l)) == ']') {
        l->pos++;
        return 0;
    }
    for (o.idx = 0;; o.idx++) {
        c = next_nonws(l);
        o.line = l->line;
        if (c != '{') {
            if (c < 0 || c == ']' || c == ',')
                return unexpected(l, c, prefix, o.idx, "an object");
            return lfail(l, EBB_ESCHEMA, o.line, prefix, o.idx, NULL,
                         "expected an object, got %s", scalar_type(c));
        }
        if ((rc = take_item(l, &o, &n)) != 0)
            return rc;
        l->line += count_lines(l->buf + l->pos, l->buf + l->pos + n);
        l->pos += (size_t)n;
        if ((c = next_nonws(l)) == ',') {
            l->pos++;
            continue;
        }
        if (c == ']') {
            l->pos++;
            return 0;
        }
        return unexpected(l, c, prefix, o.idx, "',' or ']' after this item");
    }
}

/* Read [off, off+n) of the file again (a top-level object that turned out
 * not to be a List). */
static int take_object_at(struct loader *l, uint64_t off, size_t n, int line)
{
    struct origin o = { .prefix = NULL, .idx = -1, .line = line };
    char *p;
    size_t got = 0;
    int rc;

    if ((p = malloc(n)) == NULL)
        return lfail(l, EBB_ENOMEM, line, NULL, -1, NULL, "out of memory");
    while (got < n) {
        ssize_t k = pread(fileno(l->f), p + got, n - got, (off_t)(off + got));
        if (k <= 0) {
            free(p);
            return lfail(l, EBB_EIO, line, NULL, -1, NULL, "read failed: %s",
                         k < 0 ? strerror(errno) : "the file shrank");
        }
        got += (size_t)k;
    }
    rc = take_text(l, p, n, off, &o);
    free(p);
    return rc;
}

/* A top-level object: a List streams its "items"; any other object is one
 * item. */
static int top_object(struct loader *l)
{
    uint64_t start = l->base + l->pos;
    int line = l->line, c, nl, rc;
    bool items = false, is_items;
    long n;

    l->pos++;
    for (int nkeys = 0;; nkeys++) {
        if ((c = next_nonws(l)) == '}' && nkeys == 0)
            break;
        if (c != '"')
            return unexpected(l, c, NULL, -1, "a key in the top-level object");
        if ((n = window_value(l, l->line, NULL, -1, &nl)) < 0)
            return (int)n;
        is_items = n == 7 && memcmp(l->buf + l->pos, "\"items\"", 7) == 0;
        l->pos += (size_t)n;
        if ((c = next_nonws(l)) != ':')
            return unexpected(l, c, NULL, -1, "':' after a key");
        l->pos++;
        if ((c = next_nonws(l)) < 0)
            return unexpected(l, c, NULL, -1, "a value");
        if (is_items && c == '[') {
            if ((rc = stream_array(l, "items")) != 0)
                return rc;
            items = true;
        } else {
            int vline = l->line;
            if ((n = window_value(l, vline, NULL, -1, &nl)) < 0)
                return (int)n;
            if (is_items) {
                if (n != 4 || memcmp(l->buf + l->pos, "null", 4) != 0)
                    return lfail(l, EBB_ESCHEMA, vline, NULL, -1, "items",
                                 "expected an array");
                items = true;
            }
            l->pos += (size_t)n;
            l->line += nl;
        }
        if ((c = next_nonws(l)) == ',') {
            l->pos++;
            continue;
        }
        if (c == '}')
            break;
        return unexpected(l, c, NULL, -1, "',' or '}' in the top-level object");
    }
    l->pos++;
    if (items)
        return 0;
    return take_object_at(l, start, (size_t)(l->base + l->pos - start), line);
}

static int load_json(struct loader *l)
{
    int c, rc;

    if ((c = next_nonws(l)) == '{')
        rc = top_object(l);
    else
        rc = stream_array(l, "");
    if (rc != 0)
        return rc;
    if ((c = next_nonws(l)) != END)
        return c == ERR ? unexpected(l, c, NULL, -1, "")
                        : lfail(l, EBB_EPARSE, l->line, NULL, -1, NULL,
                                "unexpected data after the top-level JSON value");
    return 0;
}

/* ---- YAML ---------------------------------------------------------------------- */

/* YAML's "\0" in a string: read as U+FFFD, as a JSON snapshot's "\u0000"
 * is (ebb_json_nul_scrub). EBB_ENOMEM, else 0. */
static int nul_strings(struct ebb_val *v)
{
    int rc = 0;

    switch (v->type) {
    case EBB_VAL_STRING: {
        size_t n = v->u.str.len, k = 0, i;
        char *s;
        for (i = 0; i < n; i++)
            k += v->u.str.s[i] == '\0';
        if (k == 0)
            return 0;
        if ((s = malloc(n + 2 * k + 1)) == NULL)
            return EBB_ENOMEM;
        for (i = 0, k = 0; i < n; i++) {
            if (v->u.str.s[i] == '\0') {
                memcpy(s + k, "\xef\xbf\xbd", 3);
                k += 3;
            } else {
                s[k++] = v->u.str.s[i];
            }
        }
        s[k] = '\0';
        free(v->u.str.s);
        v->u.str.s = s;
        v->u.str.len = k;
        return 0;
    }
    case EBB_VAL_SEQ:
        for (size_t i = 0; rc == 0 && i < v->u.seq.n; i++)
            if (v->u.seq.items[i] != NULL)
                rc = nul_strings(v->u.seq.items[i]);
        return rc;
    case EBB_VAL_MAP:
        for (size_t i = 0; rc == 0 && i < v->u.map.n; i++)
            if (v->u.map.vals[i] != NULL)
                rc = nul_strings(v->u.map.vals[i]);
        return rc;
    default:
        return 0;
    }
}

static int take_val(struct loader *l, FILE *tmp, struct ebb_val *v, const char *prefix, int idx)
{
    struct origin o = { .prefix = prefix, .idx = idx, .line = v->line, .val = v };
    cJSON *j;
    int rc, kind;

    if (v->type != EBB_VAL_MAP) {
        if (l->stats)
            l->stats->items++;
        return lfail(l, EBB_ESCHEMA, v->line, prefix, idx, NULL, "expected an object, got %s",
                     ebb_val_type_name(v->type));
    }
    if (nul_strings(v) != 0 || (j = ebb_val_to_cjson(v)) == NULL)
        return lfail(l, EBB_ENOMEM, v->line, prefix, idx, NULL, "out of memory");
    kind = ebb_decode_kind(j);
    if (tmp != NULL && (kind == EBB_KIND_POD || kind == EBB_KIND_NODE)) {
        char *text = cJSON_PrintUnformatted(j);
        long off = ftell(tmp);
        size_t n = text ? strlen(text) : 0;

        if (text == NULL || off < 0 || fwrite(text, 1, n, tmp) != n) {
            free(text);
            cJSON_Delete(j);
            return lfail(l, text ? EBB_EIO : EBB_ENOMEM, v->line, prefix, idx, NULL,
                         "cannot keep the object for pod.object");
        }
        free(text);
        o.src.off = (uint64_t)off;
        o.src.len = (uint32_t)n;
        o.src.file = l->src;
    }
    rc = take(l, j, &o);
    cJSON_Delete(j);
    return rc;
}

static int load_yaml(struct loader *l, const char *buf, size_t len)
{
    struct ebb_val **docs = NULL;
    FILE *tmp = NULL;
    size_t ndocs = 0, i, k;
    int rc;

    if ((rc = ebb_val_parse_all(buf, len, l->name, &docs, &ndocs, l->err)) != 0)
        return rc;
    if ((tmp = tmpfile()) != NULL) {
        if (ebb_cache_add_source(l->cache, tmp, &l->src) == 0) {
            l->has_src = true;
        } else {
            fclose(tmp);
            tmp = NULL;
        }
    }
    if (tmp == NULL)
        ebb_log(EBB_LOG_WARN, "%s: no temporary file: pod.object will be empty", l->name);
    for (i = 0; i < ndocs && (docs[i] == NULL || docs[i]->type == EBB_VAL_NULL); i++)
        ;
    if (i == ndocs && ndocs > 0)
        rc = lfail(l, EBB_ESCHEMA, docs[0] ? docs[0]->line : 0, NULL, -1, NULL,
                   "the snapshot is null: expected a List of objects (kubectl get ... -o json)");
    for (i = 0; rc == 0 && i < ndocs; i++) {
        struct ebb_val *d = docs[i], *items;

        if (d == NULL || d->type == EBB_VAL_NULL)
            continue;
        if (d->type == EBB_VAL_SEQ) {
            for (k = 0; rc == 0 && k < d->u.seq.n; k++)
                rc = take_val(l, tmp, d->u.seq.items[k], "", (int)k);
        } else if ((items = ebb_val_get(d, "items")) != NULL &&
                   (items->type == EBB_VAL_SEQ || items->type == EBB_VAL_NULL)) {
            for (k = 0; rc == 0 && items->type == EBB_VAL_SEQ && k < items->u.seq.n; k++)
                rc = take_val(l, tmp, items->u.seq.items[k], "items", (int)k);
        } else {
            rc = take_val(l, tmp, d, NULL, -1);
        }
    }
    for (i = 0; i < ndocs; i++)
        ebb_val_free(docs[i]);
    free(docs);
    if (rc == 0 && tmp != NULL && fflush(tmp) != 0)
        rc = lfail(l, EBB_EIO, 0, NULL, -1, NULL, "cannot write the temporary file");
    return rc;
}

/* ---- entry points ---------------------------------------------------------------- */

static double now_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Skip a UTF-8 byte order mark and whitespace: the first byte that says
 * what the file is, END or ERR. */
static int sniff(struct loader *l)
{
    long k;

    while (l->len < 3 && (k = refill(l, 0)) != 0) {
        if (k < 0) {
            l->io_rc = (int)k;
            return ERR;
        }
    }
    if (l->len >= 3 && memcmp(l->buf, "\xef\xbb\xbf", 3) == 0)
        l->pos = 3;
    return next_nonws(l);
}

/* JSON from l->f (owned: it goes to the cache or is closed). */
static int load_stream(struct loader *l)
{
    int c, rc;

    if ((c = sniff(l)) == ERR || c == END) {
        fclose(l->f);
        l->f = NULL;
        if (c == END)
            return lfail(l, EBB_EPARSE, 0, NULL, -1, NULL, "the snapshot is empty");
        return unexpected(l, c, NULL, -1, "");
    }
    if (c != '{' && c != '[') {
        /* YAML: read the rest, then parse it whole */
        long k;
        while ((k = refill(l, 0)) > 0)
            if (l->len > YAML_MAX) {
                fclose(l->f);
                l->f = NULL;
                return lfail(l, EBB_ELIMIT, 0, NULL, -1, NULL,
                             "a YAML snapshot larger than %zu MiB: YAML is read whole; record "
                             "it as JSON (kubectl get ... -o json), which is read as it streams",
                             YAML_MAX >> 20);
            }
        fclose(l->f);
        l->f = NULL;
        if (k < 0) {
            l->io_rc = (int)k;
            return unexpected(l, ERR, NULL, -1, "");
        }
        return load_yaml(l, l->buf, l->len);
    }
    if ((rc = ebb_cache_add_source(l->cache, l->f, &l->src)) != 0) {
        fclose(l->f);
        l->f = NULL;
        return lfail(l, rc, 0, NULL, -1, NULL, "cannot keep the file open: %s",
                     ebb_strerror(rc));
    }
    l->has_src = true;
    return load_json(l);
}

static void loader_init(struct loader *l, struct ebb_cache *cache, const char *name,
                        struct ebb_snapshot_stats *stats, struct ebb_error *err)
{
    memset(l, 0, sizeof(*l));
    l->cache = cache;
    l->name = name;
    l->stats = stats;
    l->err = err;
    l->line = 1;
    ebb__map_init(&l->seen);
    if (stats != NULL)
        memset(stats, 0, sizeof(*stats));
}

static void loader_done(struct loader *l, double t0)
{
    free(l->buf);
    arena_destroy(&l->arena);
    ebb__map_free(&l->seen);
    ebb_cache_build_indexes(l->cache);
    if (l->compact)
        ebb_cache_compact(l->cache);   /* out of memory: the pods stay where they are */
    if (l->stats != NULL)
        l->stats->seconds = now_seconds() - t0;
}

int ebb_snapshot_load(struct ebb_cache *cache, const char *path, struct ebb_snapshot_stats *stats,
                      struct ebb_error *err)
{
    return ebb_snapshot_load_each(cache, path, NULL, NULL, stats, err);
}

int ebb_snapshot_load_each(struct ebb_cache *cache, const char *path, ebb_snapshot_item_fn fn,
                           void *ud, struct ebb_snapshot_stats *stats, struct ebb_error *err)
{
    struct loader l;
    double t0 = now_seconds();
    FILE *f;
    int rc;

    if (cache == NULL || path == NULL)
        return EBB_EINVAL;
    if ((rc = ebb_file_open(path, &f, err)) != 0)
        return rc;
    loader_init(&l, cache, path, stats, err);
    l.compact = true;
    l.unique = true;
    l.item_fn = fn;
    l.item_ud = ud;
    l.f = f;
    rc = load_stream(&l);
    loader_done(&l, t0);
    return rc;
}

int ebb_snapshot_load_buf(struct ebb_cache *cache, const char *buf, size_t len, const char *name,
                          struct ebb_snapshot_stats *stats, struct ebb_error *err)
{
    struct loader l;
    double t0 = now_seconds();
    size_t i = 0;
    int rc;

    if (cache == NULL || (buf == NULL && len > 0))
        return EBB_EINVAL;
    if (name == NULL)
        name = "<buffer>";
    loader_init(&l, cache, name, stats, err);
    l.compact = true;
    l.unique = true;
    if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
        i = 3;
    while (i < len && strchr(" \t\r\n", buf[i]) != NULL && buf[i] != '\0')
        i++;
    if (i < len && buf[i] != '{' && buf[i] != '[') {
        if (stats != NULL)
            stats->bytes = len;
        rc = load_yaml(&l, buf, len);
    } else {
        /* JSON goes through a temporary file: the same streaming path as a
         * real file, and it backs pod.object */
        if ((l.f = tmpfile()) == NULL || fwrite(buf, 1, len, l.f) != len || fflush(l.f) != 0 ||
            fseek(l.f, 0, SEEK_SET) != 0) {
            if (l.f != NULL)
                fclose(l.f);
            loader_done(&l, t0);
            return ebb_error_set(err, EBB_EIO, name, 0, NULL, "cannot use a temporary file: %s",
                                 strerror(errno));
        }
        rc = load_stream(&l);
    }
    loader_done(&l, t0);
    return rc;
}

/* ---- a server's LIST answer, read as it arrives ------------------------------------ */

/* The top level of a List: { "key": value, ..., "items": [ item, ... ] }.
 * Only brackets, strings and escapes are followed (cJSON checks each item
 * and the metadata); items are handed on one by one, the metadata is
 * kept, every other value is stepped over. Nothing else is held. */
enum {
    T_BEGIN,        /* before '{' */
    T_FIRST_KEY,    /* after '{': a key or '}' */
    T_KEY_START,    /* after ',': a key */
    T_KEY,          /* inside a key */
    T_COLON,
    T_VALUE,        /* before a value */
    T_SCAN,         /* inside a value (vs) */
    T_NEXT,         /* after a value: ',' or '}' */
    T_ITEMS_FIRST,  /* after '[' of items: an item or ']' */
    T_ITEM_START,   /* after ',' in items */
    T_ITEM,         /* inside an item (vs) */
    T_ITEMS_NEXT,   /* after an item: ',' or ']' */
    T_DONE,         /* after the closing '}' */
    T_FAILED,
};

enum { V_CONTAINER, V_BARE };

struct ebb_list_reader {
    ebb_list_item_fn fn;
    void *ud;
    int st;
    char key[16];               /* the key being read (longer keys are none of ours) */
    size_t keylen;
    bool key_esc, key_long;
    int which;                  /* the value being read: 0 other, 1 metadata, 2 an item */
    /* the value scanner */
    int vkind, depth;
    bool in_str, esc;
    /* what is kept of the value */
    char *buf;
    size_t len, cap, max, total;
    char *meta;                 /* the List's metadata, once read */
    size_t meta_len;
    bool items_seen;
    size_t nitems;
    uint64_t offset;            /* bytes fed so far */
};

int ebb_list_reader_create(ebb_list_item_fn fn, void *ud, struct ebb_list_reader **out)
{
    struct ebb_list_reader *r;

    if (fn == NULL || out == NULL)
        return EBB_EINVAL;
    if ((r = calloc(1, sizeof(*r))) == NULL)
        return EBB_ENOMEM;
    r->fn = fn;
    r->ud = ud;
    *out = r;
    return 0;
}

void ebb_list_reader_destroy(struct ebb_list_reader *r)
{
    if (r == NULL)
        return;
    free(r->buf);
    free(r->meta);
    free(r);
}

size_t ebb_list_reader_items(const struct ebb_list_reader *r)
{
    return r ? r->nitems : 0;
}

static bool json_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int rfail(struct ebb_list_reader *r, struct ebb_error *err, const char *fmt, const char *what)
{
    r->st = T_FAILED;
    return ebb_error_set(err, EBB_EPARSE, NULL, 0, NULL, fmt, what, (unsigned long long)r->offset);
}

/* Keep [p, p+n) of the value, up to r->max bytes: past it only r->total
 * grows (once past, nothing more is kept). */
static int keep(struct ebb_list_reader *r, const char *p, size_t n)
{
    r->total += n;
    if (r->total > r->max)
        return 0;
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        char *b;
        while (cap < r->len + n + 1)
            cap *= 2;
        if ((b = realloc(r->buf, cap)) == NULL)
            return EBB_ENOMEM;
        r->buf = b;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, p, n);
    r->len += n;
    return 0;
}

static void value_begin(struct ebb_list_reader *r, char c, size_t max)
{
    r->vkind = c == '{' || c == '[' || c == '"' ? V_CONTAINER : V_BARE;
    r->depth = 0;
    r->in_str = false;
    r->esc = false;
    r->len = r->total = 0;
    r->max = max;
}

/* Scan the value from data[0]: how many bytes belong to it, *done when it
 * ended there. A string ends at its closing quote, an object or array at
 * its closing bracket; a bare scalar (number, literal) before the byte
 * that ends it. */
static size_t value_scan(struct ebb_list_reader *r, const char *data, size_t len, bool *done)
{
    size_t i = 0;

    *done = false;
    if (r->vkind == V_BARE) {
        while (i < len && !json_ws(data[i]) && data[i] != ',' && data[i] != ']' && data[i] != '}')
            i++;
        *done = i < len;
        return i;
    }
    while (i < len) {
        char c = data[i++];
        if (r->in_str) {
            if (r->esc) {
                r->esc = false;
            } else if (c == '\\') {
                r->esc = true;
            } else if (c == '"') {
                r->in_str = false;
                if (r->depth == 0) {
                    *done = true;
                    return i;
                }
            } else {
                /* the rest of the string up to a quote or a backslash */
                while (i < len && data[i] != '"' && data[i] != '\\')
                    i++;
            }
            continue;
        }
        switch (c) {
        case '"': r->in_str = true; break;
        case '{':
        case '[': r->depth++; break;
        case '}':
        case ']':
            if (--r->depth <= 0) {
                *done = true;
                return i;
            }
            break;
        default: break;
        }
    }
    return i;
}

/* An item is complete: hand it on. */
static int item_done(struct ebb_list_reader *r)
{
    int rc;

    r->nitems++;
    if (r->total > r->max) {
        rc = r->fn(r->ud, NULL, r->total, r->nitems - 1);
    } else {
        r->buf[r->len] = '\0';
        rc = r->fn(r->ud, r->buf, r->len, r->nitems - 1);
    }
    /* one huge item does not hold its buffer for the next ones */
    if (r->cap > ((size_t)1 << 20)) {
        free(r->buf);
        r->buf = NULL;
        r->cap = 0;
    }
    r->len = r->total = 0;
    return rc;
}

int ebb_list_reader_feed(struct ebb_list_reader *r, const char *data, size_t len,
                         struct ebb_error *err)
{
    size_t i = 0, n;
    bool done;
    int rc;

    if (r == NULL || (data == NULL && len > 0))
        return EBB_EINVAL;
    if (r->st == T_FAILED)
        return EBB_EPARSE;
    while (i < len) {
        char c = data[i];
        switch (r->st) {
        case T_BEGIN:
        case T_FIRST_KEY:
        case T_KEY_START:
        case T_COLON:
        case T_VALUE:
        case T_NEXT:
        case T_ITEMS_FIRST:
        case T_ITEM_START:
        case T_ITEMS_NEXT:
        case T_DONE:
            if (json_ws(c)) {
                i++;
                r->offset++;
                continue;
            }
            break;
        default:
            break;
        }
        switch (r->st) {
        case T_BEGIN:
            if (c != '{')
                return rfail(r, err, "the answer is not a %s (byte %llu)", "List object");
            r->st = T_FIRST_KEY;
            break;
        case T_FIRST_KEY:
        case T_KEY_START:
            if (c == '}' && r->st == T_FIRST_KEY) {
                r->st = T_DONE;
                break;
            }
            if (c != '"')
                return rfail(r, err, "the answer is not a %s (a key expected at byte %llu)", "List object");
            r->keylen = 0;
            r->key_esc = r->key_long = false;
            r->st = T_KEY;
            break;
        case T_KEY:
            if (r->key_esc) {
                r->key_esc = false;
                r->key_long = true;   /* an escaped key is none of ours */
            } else if (c == '\\') {
                r->key_esc = true;
            } else if (c == '"') {
                r->st = T_COLON;
            } else if (r->keylen + 1 < sizeof(r->key)) {
                r->key[r->keylen++] = c;
            } else {
                r->key_long = true;
            }
            break;
        case T_COLON:
            if (c != ':')
                return rfail(r, err, "the answer is not a %s (':' expected at byte %llu)", "List object");
            r->key[r->keylen] = '\0';
            r->which = r->key_long ? 0
                       : strcmp(r->key, "metadata") == 0 ? 1
                       : strcmp(r->key, "items") == 0 ? 2 : 0;
            r->st = T_VALUE;
            break;
        case T_VALUE:
            if (r->which == 2 && c == '[') {
                if (r->items_seen)
                    return rfail(r, err, "the answer is not a %s (items twice, at byte %llu)", "List");
                r->items_seen = true;
                r->st = T_ITEMS_FIRST;
                break;
            }
            if (c == ',' || c == ':' || c == ']' || c == '}')
                return rfail(r, err, "the answer is not a %s (a value expected at byte %llu)", "List object");
            if (r->which == 1 && r->meta != NULL)
                return rfail(r, err, "the answer is not a %s (metadata twice, at byte %llu)", "List");
            value_begin(r, c, r->which == 1 ? EBB_LIST_META_MAX : r->which == 2 ? 16 : 0);
            r->st = T_SCAN;
            continue;   /* the scanner reads c */
        case T_SCAN:
        case T_ITEM:
            n = value_scan(r, data + i, len - i, &done);
            if ((rc = keep(r, data + i, n)) != 0) {
                r->st = T_FAILED;
                return rc;
            }
            i += n;
            r->offset += n;
            if (!done)
                continue;
            if (r->st == T_ITEM) {
                r->st = T_ITEMS_NEXT;
                if ((rc = item_done(r)) != 0) {
                    r->st = T_FAILED;
                    return rc;
                }
            } else {
                if (r->which == 1) {
                    if (r->total > r->max)
                        return rfail(r, err, "the %s is larger than 64 KiB (byte %llu)", "List's metadata");
                    if ((r->meta = malloc(r->len + 1)) == NULL) {
                        r->st = T_FAILED;
                        return EBB_ENOMEM;
                    }
                    memcpy(r->meta, r->buf, r->len);
                    r->meta[r->len] = '\0';
                    r->meta_len = r->len;
                } else if (r->which == 2) {
                    /* "items": null */
                    if (r->len != 4 || memcmp(r->buf, "null", 4) != 0)
                        return rfail(r, err, "the answer is not a %s (items is no array, byte %llu)", "List");
                    r->items_seen = true;
                }
                r->st = T_NEXT;
            }
            continue;
        case T_NEXT:
            if (c == ',')
                r->st = T_KEY_START;
            else if (c == '}')
                r->st = T_DONE;
            else
                return rfail(r, err, "the answer is not a %s (',' or '}' expected at byte %llu)", "List object");
            break;
        case T_ITEMS_FIRST:
        case T_ITEM_START:
            if (c == ']' && r->st == T_ITEMS_FIRST) {
                r->st = T_NEXT;
                break;
            }
            if (c == ',' || c == ':' || c == ']' || c == '}')
                return rfail(r, err, "the answer is not a %s (an item expected at byte %llu)", "List");
            value_begin(r, c, EBB_OBJECT_MAX);
            r->st = T_ITEM;
            continue;
        case T_ITEMS_NEXT:
            if (c == ',')
                r->st = T_ITEM_START;
            else if (c == ']')
                r->st = T_NEXT;
            else
                return rfail(r, err, "the answer is not a %s (',' or ']' expected at byte %llu)", "List");
            break;
        case T_DONE:
            return rfail(r, err, "the answer is not a %s (data after it at byte %llu)", "List object");
        default:
            return EBB_EPARSE;
        }
        i++;
        r->offset++;
    }
    return 0;
}

int ebb_list_reader_end(struct ebb_list_reader *r, struct ebb_list_meta *meta, struct ebb_error *err)
{
    cJSON *m;
    const cJSON *rv, *co;

    if (r == NULL || meta == NULL)
        return EBB_EINVAL;
    memset(meta, 0, sizeof(*meta));
    if (r->st == T_FAILED)
        return EBB_EPARSE;
    if (r->st != T_DONE)
        return rfail(r, err, "the %s ended inside it (byte %llu)", "List");
    if (!r->items_seen)
        return rfail(r, err, "the answer is not a %s (no items; byte %llu)", "List");
    if (r->meta == NULL)
        return 0;
    if ((m = cJSON_ParseWithLength(r->meta, r->meta_len)) == NULL || !cJSON_IsObject(m)) {
        cJSON_Delete(m);
        return rfail(r, err, "the %s is not a JSON object (byte %llu)", "List's metadata");
    }
    rv = cJSON_GetObjectItemCaseSensitive(m, "resourceVersion");
    co = cJSON_GetObjectItemCaseSensitive(m, "continue");
    /* cut, either would name another version or page: an error, never a guess */
    if ((rv != NULL && !cJSON_IsNull(rv) &&
         (!cJSON_IsString(rv) || strlen(rv->valuestring) >= sizeof(meta->resource_version))) ||
        (co != NULL && !cJSON_IsNull(co) &&
         (!cJSON_IsString(co) || strlen(co->valuestring) >= sizeof(meta->cont)))) {
        cJSON_Delete(m);
        r->st = T_FAILED;
        return ebb_error_set(err, EBB_EPARSE, NULL, 0, "metadata",
                             "resourceVersion or continue is not a string of at most %zu bytes",
                             sizeof(meta->cont) - 1);
    }
    if (cJSON_IsString(rv))
        memcpy(meta->resource_version, rv->valuestring, strlen(rv->valuestring) + 1);
    if (cJSON_IsString(co))
        memcpy(meta->cont, co->valuestring, strlen(co->valuestring) + 1);
    cJSON_Delete(m);
    return 0;
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
