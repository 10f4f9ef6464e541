/* engine/model/snapshot_int.h: what the units behind include/ebb/snapshot.h
 * share. Not public.
 *
 *   snapshot.c     a snapshot file (JSON streamed item by item, or YAML)
 *                  into the cache, errors naming the item, field and line
 *   json_arena.c   JSON parsed by yyjson (vendor/yyjson) into cJSON trees in
 *                  a bump arena; the gate a server's document goes through
 *                  on its way to cJSON (ebb_json_arena_parse,
 *                  ebb_object_from_text)
 *   list_reader.c  a server's LIST answer read as it arrives
 *
 * An arena is used by one thread at a time: every node, string and
 * yyjson's own memory of a document come from it (json_arena.c). A JSON
 * snapshot is parsed on a thread of its own while the caller's thread
 * decodes (snapshot.c). */
#ifndef EBB_SNAPSHOT_INT_H
#define EBB_SNAPSHOT_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "ebb/snapshot.h"

struct arena_chunk;

/* A zeroed one is empty and ready; ebb_json_arena_reset frees every tree
 * parsed in it at once. */
struct ebb_json_arena {
    struct arena_chunk *head, *cur;
    size_t used;                 /* bytes handed out since the last reset */
    bool oom;                    /* malloc failed */
    bool over;                   /* the document wanted more than EBB_JSON_TREE_MAX */
};

/* Parse [text, text+len) as it is (the caller bounds the text and scrubs
 * its NULs) into the tree cJSON's own parser makes of it, less every
 * metadata.managedFields; *endp (may be NULL) just past the value, or
 * where the text stopped being JSON. NULL: not JSON, a->oom or a->over;
 * the caller resets the arena. */
cJSON *ebb__json_arena_parse_raw(struct ebb_json_arena *a, const char *text, size_t len,
                                 const char **endp);
/* Where a JSON object or array ends, read in pieces: zeroed before its
 * first byte ('{' or '['), then given its text piece by piece in order.
 * Brackets are only counted (inside strings, escapes followed, they are
 * not); the parser checks the rest. */
struct ebb_json_scan {
    int depth, lines;            /* open brackets; newlines seen (in strings too) */
    bool in_string, escaped;
};
/* The offset in p[0, n) just past the bracket that closes the value, or
 * -1 when it goes on past n (st keeps where it is). */
long ebb__json_scan(struct ebb_json_scan *st, const char *p, size_t n);
/* Whether ebb__json_scan reads 32 bytes a step (AVX2): set before main by
 * what the processor has; a test sets 0 to try the 16-byte path. */
extern int ebb__json_scan_avx2;
/* The extent of the JSON object or array at p (p[0] is '{' or '['): its
 * length, or 0 when [p, end) ends inside it; *nl gets the newlines inside
 * it (in strings too). Brackets are only counted: the parser checks the
 * rest (snapshot.c). */
long ebb__json_extent(const char *p, const char *end, int *nl);
/* The arena's memory (not `a` itself, which the caller embeds). */
void ebb__json_arena_release(struct ebb_json_arena *a);

#endif
