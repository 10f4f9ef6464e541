/* The spill of the watch cache: the text of every cached pod and node (a
 * LIST item or a watch event line), for pod.object. See kube/spill.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/cache.h"
#include "ebb/common.h"
#include "kube/spill.h"

#define SPILL_SEGMENT ((uint64_t)32 << 20)   /* see ebb__spill_tend */
#define SPILL_SLACK (2 * SPILL_SEGMENT)

/* Every new version of a pod or node is appended to the spill, so under
 * churn it would grow without end. It is a chain of files (segments) of
 * about SPILL_SEGMENT bytes: when the one written to is full, a new one
 * starts, and while the older ones hold more than twice their live bytes
 * plus SPILL_SLACK, the one with the fewest live bytes has them copied to
 * the new one and is closed (its disk space goes with it). The spill so
 * stays under about twice the live bytes plus SPILL_SLACK and a segment,
 * and no copy moves more than half a segment (the segment chosen is no
 * more live than the average, under half): the loop is never held long. */
static FILE *spill_file(void)
{
    FILE *f = tmpfile();

    if (f != NULL)
        setvbuf(f, NULL, _IOFBF, 1u << 20);   /* events append a few KB each: one write per MB */
    return f;
}

void ebb__spill_tend(struct ebb__spill *s)
{
    uint64_t size = s->off;
    uint64_t *live;
    uint16_t next, top = s->src;
    size_t k;
    FILE *f;
    int rc;

    if (size < s->check)
        return;
    if (s->nsegs == s->capsegs) {
        size_t cap = s->capsegs ? s->capsegs * 2 : 16;
        struct ebb__spill_segment *v = realloc(s->segs, cap * sizeof(*v));
        if (v == NULL)
            return;
        s->segs = v;
        s->capsegs = cap;
    }
    if ((f = spill_file()) == NULL || ebb_cache_add_source(s->cache, f, &next) != 0) {
        if (f)
            fclose(f);
        ebb_log(EBB_LOG_WARN, "watch: cannot start a new spill file: %s; the current one grows",
                strerror(errno));
        s->check = size + SPILL_SEGMENT;
        return;
    }
    s->segs[s->nsegs++] = (struct ebb__spill_segment){ s->src, size };
    ebb_cache_seal_source(s->cache, s->src);   /* on failure it keeps its buffer */
    s->f = f;
    s->src = next;
    s->off = 0;
    s->check = SPILL_SEGMENT;
    for (k = 0; k < s->nsegs; k++)
        if (s->segs[k].src > top)
            top = s->segs[k].src;
    if (next > top)
        top = next;
    if ((live = malloc(((size_t)top + 1) * sizeof(*live))) == NULL)
        return;
    ebb_cache_sources_live(s->cache, live, (size_t)top + 1);
    /* Over the bound, the segment with the fewest live bytes goes first:
     * most churn rewrites the same pods, so older segments empty on their
     * own and reclaiming them copies little or nothing. */
    for (;;) {
        uint64_t total = 0, total_live = 0, moved = 0;
        size_t best = SIZE_MAX;
        for (k = 0; k < s->nsegs; k++) {
            total += s->segs[k].size;
            total_live += live[s->segs[k].src];
            if (best == SIZE_MAX || live[s->segs[k].src] < live[s->segs[best].src])
                best = k;
        }
        if (best == SIZE_MAX || total <= 2 * total_live + SPILL_SLACK)
            break;
        if ((rc = ebb_cache_move_source(s->cache, s->segs[best].src, s->src, &moved)) != 0) {
            ebb_log(EBB_LOG_WARN, "watch: reclaiming a spill file: %s; it stays", ebb_strerror(rc));
            break;
        }
        live[s->src] += moved;
        live[s->segs[best].src] = 0;
        s->off += moved;
        s->moves++;
        s->moved += moved;
        s->segs[best] = s->segs[--s->nsegs];
    }
    free(live);
}

bool ebb__spill_write(struct ebb__spill *s, const char *line, size_t len, uint64_t *off)
{
    if (fwrite(line, 1, len, s->f) != len) {
        long at = ftell(s->f);   /* where a partial write left it */
        if (at >= 0)
            s->off = (uint64_t)at;
        return false;
    }
    *off = s->off;
    s->off += len;
    return true;
}

uint64_t ebb__spill_bytes(const struct ebb__spill *s, uint64_t *live, uint64_t *moves)
{
    uint64_t size = s ? s->off : 0, *v;
    uint16_t top;

    if (live)
        *live = 0;
    if (moves)
        *moves = s ? s->moves : 0;
    if (s == NULL)
        return 0;
    top = s->src;
    for (size_t k = 0; k < s->nsegs; k++) {
        size += s->segs[k].size;
        if (s->segs[k].src > top)
            top = s->segs[k].src;
    }
    if (live && (v = malloc(((size_t)top + 1) * sizeof(*v))) != NULL) {
        ebb_cache_sources_live(s->cache, v, (size_t)top + 1);
        *live += v[s->src];
        for (size_t k = 0; k < s->nsegs; k++)
            *live += v[s->segs[k].src];
        free(v);
    }
    return size;
}

int ebb__spill_open(struct ebb__spill *s, struct ebb_cache *cache)
{
    memset(s, 0, sizeof(*s));
    s->cache = cache;
    s->check = SPILL_SEGMENT;
    if ((s->f = spill_file()) == NULL || ebb_cache_add_source(cache, s->f, &s->src) != 0) {
        if (s->f == NULL)   /* a read-only root filesystem without a volume at /tmp */
            ebb_log(EBB_LOG_ERROR, "watch: cannot create a file in /tmp for the objects' text (%s): "
                                   "ebb needs a writable /tmp (an emptyDir, as deploy/ mounts)",
                    strerror(errno));
        if (s->f)
            fclose(s->f);
        s->f = NULL;
        return EBB_EIO;
    }
    return 0;
}

void ebb__spill_free(struct ebb__spill *s)
{
    free(s->segs);   /* the files belong to the cache */
    s->segs = NULL;
    s->nsegs = s->capsegs = 0;
}
