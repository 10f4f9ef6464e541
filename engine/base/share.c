/* Shared immutable arrays: one open-addressing table, keyed by the hash of
 * an array's kind and bytes. A lookup by content compares bytes; a lookup
 * by address compares addresses along the same probe (an array is never
 * written while the table holds it, so its hash stays what it was). At
 * most half full, tombstones counted, as ebb/str.h's table. */
#include <stdlib.h>
#include <string.h>

#include "ebb/share.h"

#define TOMB ((const void *)1)

struct slot {
    const void *p;               /* NULL: empty; TOMB: deleted */
    uint32_t hash;
    uint32_t refs;
    uint32_t bytes;
    uint8_t kind;
};

static struct slot *slots;
static size_t nslots, nused, nlive;   /* nused counts tombstones */
static uint32_t hash_mask = UINT32_MAX;   /* 0 under ebb__share_collide */

void ebb__share_collide(bool on)
{
    hash_mask = on ? 0 : UINT32_MAX;
}

/* Arrays of pointers and small integers, a multiple of 8 bytes in practice:
 * a word at a time, then the tail. */
static uint32_t hash_of(int kind, const void *a, size_t bytes)
{
    const unsigned char *s = a;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)kind << 56) ^ bytes;
    size_t i = 0;

    for (; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    if (i < bytes) {
        uint64_t w = 0;
        memcpy(&w, s + i, bytes - i);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    }
    h ^= h >> 29;
    return (uint32_t)h;
}

static int grow(void)
{
    size_t n = nslots ? nslots * 2 : 1024;
    struct slot *ns;

    if (nslots && nlive * 4 < nslots)
        n = nslots;   /* mostly tombstones: rehash at the same size */
    if ((ns = calloc(n, sizeof(*ns))) == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < nslots; i++) {
        if (slots[i].p == NULL || slots[i].p == TOMB)
            continue;
        size_t j = slots[i].hash & (n - 1);
        while (ns[j].p != NULL)
            j = (j + 1) & (n - 1);
        ns[j] = slots[i];
    }
    free(slots);
    slots = ns;
    nslots = n;
    nused = nlive;
    return 0;
}

/* The slot holding address `a`, or NULL. */
static struct slot *by_address(const void *a, uint32_t hash)
{
    if (a == NULL || nlive == 0)
        return NULL;
    hash &= hash_mask;
    size_t mask = nslots - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        if (slots[i].p == NULL)
            return NULL;
        if (slots[i].p == a)
            return &slots[i];
    }
}

static void put(size_t at, int kind, const void *a, size_t bytes, uint32_t hash, uint32_t refs)
{
    if (slots[at].p == NULL)
        nused++;
    slots[at] = (struct slot){ a, hash, refs, (uint32_t)bytes, (uint8_t)kind };
    nlive++;
}

/* same != NULL: compared by it, `bytes` is the count of elements */
static void *intern(int kind, void *a, size_t bytes, uint32_t hash, ebb_share_same_fn *same)
{
    size_t mask, i, tomb = (size_t)-1;

    if ((nused + 1) * 2 > nslots && grow() != 0)
        return a;
    hash &= hash_mask;
    mask = nslots - 1;
    for (i = hash & mask; slots[i].p != NULL; i = (i + 1) & mask) {
        struct slot *s = &slots[i];
        if (s->p == TOMB) {
            if (tomb == (size_t)-1)
                tomb = i;
        } else if (s->hash == hash && s->kind == kind && s->bytes == bytes &&
                   (s->p == a || (same ? same(s->p, a, bytes) : memcmp(s->p, a, bytes) == 0))) {
            s->refs++;
            return (void *)s->p;
        }
    }
    put(tomb != (size_t)-1 ? tomb : i, kind, a, bytes, hash, 1);
    return a;
}

static bool ref(int kind, const void *a, size_t bytes, uint32_t hash)
{
    struct slot *s;
    size_t mask, i;

    if ((s = by_address(a, hash)) != NULL) {
        s->refs++;
        return true;
    }
    if ((nused + 1) * 2 > nslots && grow() != 0)
        return false;
    /* private until now: its holder and the new one */
    hash &= hash_mask;
    mask = nslots - 1;
    for (i = hash & mask; slots[i].p != NULL && slots[i].p != TOMB; i = (i + 1) & mask)
        ;
    put(i, kind, a, bytes, hash, 2);
    return true;
}

static bool release(const void *a, uint32_t hash)
{
    struct slot *s;
    size_t i;

    if ((s = by_address(a, hash)) == NULL)
        return true;
    if (--s->refs > 0)
        return false;
    i = (size_t)(s - slots);
    /* A slot followed by an empty one can be emptied outright. */
    s->p = slots[(i + 1) & (nslots - 1)].p == NULL ? NULL : TOMB;
    if (s->p == NULL)
        nused--;
    nlive--;
    return true;
}

void *ebb_share_intern(int kind, void *a, size_t bytes)
{
    if (a == NULL || bytes == 0 || bytes > UINT32_MAX)
        return a;
    return intern(kind, a, bytes, hash_of(kind, a, bytes), NULL);
}

bool ebb_share_ref(int kind, const void *a, size_t bytes)
{
    if (a == NULL)
        return true;
    if (bytes == 0 || bytes > UINT32_MAX)
        return false;   /* an empty array is not shared: the caller copies nothing */
    return ref(kind, a, bytes, hash_of(kind, a, bytes));
}

bool ebb_share_release(int kind, const void *a, size_t bytes)
{
    if (a == NULL)
        return false;
    return bytes == 0 || release(a, hash_of(kind, a, bytes));
}

bool ebb_share_is(int kind, const void *a, size_t bytes)
{
    return a != NULL && bytes > 0 && by_address(a, hash_of(kind, a, bytes)) != NULL;
}

void *ebb_share_intern_deep(int kind, void *a, size_t n, uint32_t hash, ebb_share_same_fn *same)
{
    return a == NULL || n == 0 || n > UINT32_MAX ? a : intern(kind, a, n, hash, same);
}

bool ebb_share_ref_deep(int kind, const void *a, size_t n, uint32_t hash)
{
    if (a == NULL)
        return true;
    return n > 0 && n <= UINT32_MAX && ref(kind, a, n, hash);
}

bool ebb_share_release_deep(const void *a, uint32_t hash)
{
    return a != NULL && release(a, hash);
}

size_t ebb_share_count(void)
{
    return nlive;
}
