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

/* ---- API LIST pages (the watch cache) ------------------------------------ */

/* What a List says about itself. */
struct ebb_list_meta {
    char resource_version[128];
    char cont[4096];                 /* metadata.continue, "" on the last page */
};

/* Called for every object stored from a page (relists find what is gone). */
typedef void (*ebb_item_cb)(void *ud, int kind, ebb_str ns, ebb_str name);

/* Decode a List answered by the API (one LIST page) into `cache`. Its
 * items name no kind (the API server leaves kind and apiVersion to the
 * List): they are taken as `kind`, the kind of the resource listed. The page
 * is appended to `spill`, a file the cache owns as source `spill_src`, so
 * pod.object can read objects back. `meta` and `cb` may be NULL. Unlike a
 * snapshot, a page error leaves what was stored before it in the cache.
 * The cache's indexes are left to sort on demand (ebb_cache_build_indexes
 * once every page is in). */
int ebb_snapshot_load_page(struct ebb_cache *cache, FILE *spill, uint16_t spill_src,
                           const char *buf, size_t len, const char *name, int kind,
                           struct ebb_list_meta *meta, ebb_item_cb cb, void *ud,
                           struct ebb_error *err);

/* cJSON trees whose nodes come from one growing block, all freed at once by
 * a reset: what the loader does per item, for callers that parse many
 * small documents (watch events). A tree parsed here is read, never freed
 * with cJSON_Delete nor changed. Engine thread only (cJSON's allocation
 * hooks are swapped during the parse). */
struct ebb_json_arena;
int ebb_json_arena_create(struct ebb_json_arena **out);
struct cJSON *ebb_json_arena_parse(struct ebb_json_arena *a, const char *text, size_t len);
void ebb_json_arena_reset(struct ebb_json_arena *a);       /* frees every tree parsed */
void ebb_json_arena_destroy(struct ebb_json_arena *a);     /* NULL-safe */

/* The metadata (continue token, resourceVersion) of a List page without
 * decoding its items, so the next page can be asked for while this one is
 * decoded: 0, or EBB_ENOENT when the metadata does not come before the
 * items (or the text is not a List object). */
int ebb_snapshot_list_peek(const char *buf, size_t len, struct ebb_list_meta *meta);

#endif
