/* ebb/snapshot.h: recorded clusters.
 *
 * A snapshot is what `kubectl get ... -o json` prints (a v1 List), or YAML
 * (one List, or a multi-document stream of objects). JSON is read item by
 * item from a fixed window: the whole file is never one cJSON tree, so
 * memory follows the compact cache, not the file. Items of other kinds are
 * counted and skipped.
 */
#ifndef EBB_SNAPSHOT_H
#define EBB_SNAPSHOT_H

#include <stdio.h>

#include "decode.h"

struct ebb_cache;

struct ebb_snapshot_stats {
    uint64_t bytes;
    size_t items;
    size_t kinds[EBB_KIND_MAX];      /* items loaded per kind */
    size_t skipped;                  /* items of kinds ebb does not keep */
    size_t nskipped_kinds;
    struct { char kind[64]; size_t n; } skipped_kinds[16];
    double seconds;
};

/* Load `path` into `cache` (which should be empty). On error the cache may
 * hold part of the file: the caller destroys it (nothing is ever run on a
 * half-loaded snapshot). Errors name the file, the line where the bad item
 * starts, and the field ("items[12].spec.containers[0]...").
 * `stats` may be NULL. */
int ebb_snapshot_load(struct ebb_cache *cache, const char *path,
                      struct ebb_snapshot_stats *stats, struct ebb_error *err);

/* Called for every item as it is read: after an item of a kind ebb keeps
 * went into the cache, and for items of other kinds with EBB_KIND_UNKNOWN.
 * `item` is borrowed for the call (copy what you keep). A non-zero return
 * stops the load with that code. `ebb serve` keeps the full objects so. */
struct cJSON;
typedef int (*ebb_snapshot_item_fn)(const struct cJSON *item, int kind, void *ud);

/* ebb_snapshot_load, calling `fn` (may be NULL) for every item. */
int ebb_snapshot_load_each(struct ebb_cache *cache, const char *path, ebb_snapshot_item_fn fn,
                           void *ud, struct ebb_snapshot_stats *stats, struct ebb_error *err);

/* Same, from memory (tests). `name` is used in errors. */
int ebb_snapshot_load_buf(struct ebb_cache *cache, const char *buf, size_t len,
                          const char *name, struct ebb_snapshot_stats *stats,
                          struct ebb_error *err);

/* ---- answers of an API server (the watch cache) ------------------------- */

/* The bounds of what a server's answer may make ebb hold (README "Bounds"):
 * one object (a LIST item, a watch event) of at most EBB_OBJECT_MAX bytes
 * of JSON, whose tree takes at most EBB_JSON_TREE_MAX (etcd keeps objects
 * of at most 1.5 MiB; their JSON, escapes and all, stays far below both).
 * Larger objects are skipped alone. */
#define EBB_OBJECT_MAX ((size_t)16 << 20)
#define EBB_JSON_TREE_MAX ((size_t)96 << 20)
#define EBB_LIST_META_MAX ((size_t)64 << 10)   /* a List's metadata */

/* What a List says about itself. */
struct ebb_list_meta {
    char resource_version[128];
    char cont[4096];                 /* metadata.continue, "" on the last page */
};

/* A LIST answer read as it arrives: each item's text is handed on as soon
 * as its last byte is in, the List's metadata is kept, and nothing else
 * is held: memory is one item (EBB_OBJECT_MAX), whatever the answer's
 * size. Items are not checked here (each is the decoder's), the List's
 * own structure is.
 *
 * `text` (NUL-terminated, writable: the NUL scrub works in place; valid
 * during the call) holds `len` bytes of item number `index`, or is NULL
 * when the item was larger than EBB_OBJECT_MAX (`len` is its size; its
 * bytes were not kept). A non-zero return stops the reader with it. */
typedef int (*ebb_list_item_fn)(void *ud, char *text, size_t len, size_t index);

struct ebb_list_reader;
int ebb_list_reader_create(ebb_list_item_fn fn, void *ud, struct ebb_list_reader **out);
/* The next bytes of the answer: 0; EBB_EPARSE with `err` (may be NULL)
 * when the answer is not a List (after which the reader takes no more);
 * EBB_ENOMEM; or what the item function returned. */
int ebb_list_reader_feed(struct ebb_list_reader *r, const char *data, size_t len,
                         struct ebb_error *err);
/* The answer is over: 0 and *meta when it was one whole List; EBB_EPARSE
 * when it ended inside it, or its resourceVersion or continue is not a
 * string that fits *meta (cut, it would name another version or page). */
int ebb_list_reader_end(struct ebb_list_reader *r, struct ebb_list_meta *meta,
                        struct ebb_error *err);
/* Items handed on so far. */
size_t ebb_list_reader_items(const struct ebb_list_reader *r);
void ebb_list_reader_destroy(struct ebb_list_reader *r);   /* NULL-safe */

/* cJSON trees whose nodes come from one growing block, all freed at once by
 * a reset (which gives back what is past a few MiB): what the loader does
 * per item, for callers that parse many small documents (watch events,
 * LIST items). A tree parsed here is read, never freed with cJSON_Delete
 * nor changed. Engine thread only (cJSON's allocation hooks are swapped
 * during the parse). */
struct ebb_json_arena;
int ebb_json_arena_create(struct ebb_json_arena **out);
/* The gate a server's document goes through on its way to cJSON: `text`
 * has its NUL escapes scrubbed in place (ebb_json_nul_scrub), then is
 * parsed under the bounds above. 0 and *out; EBB_ESCHEMA with *why (may be
 * NULL) EBB_SKIP_TOO_LARGE (over EBB_OBJECT_MAX or EBB_JSON_TREE_MAX) or
 * EBB_SKIP_NOT_JSON (not JSON, a raw NUL byte); EBB_ENOMEM. */
int ebb_json_arena_parse(struct ebb_json_arena *a, char *text, size_t len, struct cJSON **out,
                         int *why);
void ebb_json_arena_reset(struct ebb_json_arena *a);       /* frees every tree parsed */
void ebb_json_arena_destroy(struct ebb_json_arena *a);     /* NULL-safe */

/* One object of a server's answer from its text (NULL: larger than
 * EBB_OBJECT_MAX, not kept): through ebb_json_arena_parse, then
 * ebb_decode_from_server as `kind`. 0 and *out (the caller's); EBB_ESCHEMA
 * and *why: skip it alone; EBB_ENOMEM. The arena is reset after. */
int ebb_object_from_text(struct ebb_json_arena *a, char *text, size_t len, int kind,
                         struct ebb_object *out, struct ebb_skip *why);

#endif
