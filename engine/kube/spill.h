/* kube/spill.h: the files that back pod.object for watched pods and nodes
 * (engine/kube/kube_spill.c), for kube_watch.c alone.
 *
 * Every LIST item and watch event line of a pod or node is appended to the
 * file written to (a source of the cache: ebb_cache_add_source), and the
 * object points at its bytes (struct ebb_src). The spill stays under about
 * twice the live bytes plus 64 MiB and a 32 MiB segment (ebb__spill_tend).
 * Loop thread only. */
#ifndef EBB_KUBE_SPILL_H
#define EBB_KUBE_SPILL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ebb_cache;

struct ebb__spill_segment {
    uint16_t src;                 /* the cache's source index */
    uint64_t size;
};

struct ebb__spill {
    struct ebb_cache *cache;
    FILE *f;                      /* the file written to */
    uint16_t src;                 /* its source index in the cache */
    uint64_t off;                 /* bytes in it: ftell would flush its buffer (and
                                   * lseek) every event */
    uint64_t check;               /* its size at which to start another */
    struct ebb__spill_segment *segs;   /* the files before it */
    size_t nsegs, capsegs;
    uint64_t moves, moved;        /* files reclaimed, bytes copied doing it */
};

/* 0, or EBB_EIO (logged: /tmp is not writable). */
int ebb__spill_open(struct ebb__spill *sp, struct ebb_cache *cache);
/* Append `len` bytes; *off gets where they start in sp->src. false: not
 * written (the object then has no text). */
bool ebb__spill_write(struct ebb__spill *sp, const char *text, size_t len, uint64_t *off);
/* After appending (once a page, once an event): start a new file past a
 * segment, reclaim the emptiest older ones past the bound. */
void ebb__spill_tend(struct ebb__spill *sp);
/* Bytes of every file, what of them the cache still reads, files reclaimed. */
uint64_t ebb__spill_bytes(const struct ebb__spill *sp, uint64_t *live, uint64_t *moves);
/* Forget the segments (the files are the cache's). */
void ebb__spill_free(struct ebb__spill *sp);

#endif
