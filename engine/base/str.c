/* Interned strings: an open-addressing table of pointers to blocks that
 * carry a header (count, hash, length) in front of the characters. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/str.h"

struct strhdr {
    uint32_t refs;
    uint32_t hash;
    uint32_t len;
    char s[];
};

#define HDR(p) ((struct strhdr *)((char *)(p) - offsetof(struct strhdr, s)))
#define TOMB ((struct strhdr *)1)

/* Each slot keeps the string's hash beside its pointer, so that a probe
 * reads one cache line and not a string header per slot; the table is at
 * most half full (tombstones counted). */
struct slot {
    struct strhdr *h;               /* NULL: empty; TOMB: deleted */
    uint32_t hash;
};

static struct slot *slots;
static size_t nslots, nused, nlive, nbytes;   /* nused counts tombstones */

/* The last 1 to 7 bytes of a string as one word, in at most two loads
 * (they may overlap: every byte is in the word, and the length is hashed
 * too); 0 for none. */
static inline uint64_t tail_word(const char *s, size_t len)
{
    uint32_t a, b;
    uint16_t c;

    if (len >= 4) {
        memcpy(&a, s, 4);
        memcpy(&b, s + len - 4, 4);
        return a | (uint64_t)b << 32;
    }
    if (len >= 2) {
        memcpy(&c, s, 2);
        return c | (uint64_t)(unsigned char)s[len - 1] << 16;
    }
    return len == 1 ? (unsigned char)s[0] : 0;
}

/* Eight bytes a step, each step a multiply and a shift, the last bytes
 * loaded as one word and the whole mixed down to 32 bits (the table's mask
 * reads the low ones). Byte at a time (FNV-1a, a multiply a byte), hashing
 * was most of interning's own time in a 150k-pod load. In-process only:
 * nothing stores a hash. */
static inline uint32_t str_hash(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ ((uint64_t)len * 0xff51afd7ed558ccdu), w;
    size_t n = len;

    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9u;
        h ^= h >> 31;
    }
    /* what is left: the string's last 8 bytes when it had 8 or more (some
     * hashed already), else a word of what there is */
    if (n == 0)
        w = 0;
    else if (len >= 8)
        memcpy(&w, s + n - 8, 8);
    else
        w = tail_word(s, n);
    h = (h ^ w) * 0x94d049bb133111ebu;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9u;
    h ^= h >> 32;
    return (uint32_t)h;
}

static int grow(void)
{
    size_t n = nslots ? nslots * 2 : 4096;
    struct slot *ns;

    /* Rehash at the same size when most used slots are tombstones. */
    if (nslots && nlive * 4 < nslots)
        n = nslots;
    if ((ns = calloc(n, sizeof(*ns))) == NULL)
        return EBB_ENOMEM;
    /* the hash from the slot, not the string's header: a rehash of a
     * million strings reads no string */
    for (size_t i = 0; i < nslots; i++) {
        struct strhdr *h = slots[i].h;
        if (h == NULL || h == TOMB)
            continue;
        size_t j = slots[i].hash & (n - 1);
        while (ns[j].h != NULL)
            j = (j + 1) & (n - 1);
        ns[j] = slots[i];
    }
    free(slots);
    nbytes -= nslots * sizeof(*slots);
    slots = ns;
    nslots = n;
    nused = nlive;
    nbytes += n * sizeof(*slots);
    return 0;
}

static struct strhdr *lookup(const char *s, size_t len, uint32_t hash, size_t *free_slot)
{
    size_t mask = nslots - 1, i = hash & mask, tomb = (size_t)-1;

    if (nslots == 0) {
        *free_slot = (size_t)-1;
        return NULL;
    }
    for (;;) {
        struct strhdr *h = slots[i].h;
        if (h == NULL) {
            *free_slot = tomb != (size_t)-1 ? tomb : i;
            return NULL;
        }
        if (h == TOMB) {
            if (tomb == (size_t)-1)
                tomb = i;
        } else if (slots[i].hash == hash && h->len == len && memcmp(h->s, s, len) == 0) {
            return h;
        }
        i = (i + 1) & mask;
    }
}

ebb_str ebb_str_intern(const char *s, size_t len)
{
    uint32_t hash;
    size_t at;
    struct strhdr *h;

    if (s == NULL || len > UINT32_MAX - 1)
        return NULL;
    if ((nused + 1) * 2 > nslots && grow() != 0)
        return NULL;
    hash = str_hash(s, len);
    if ((h = lookup(s, len, hash, &at)) != NULL) {
        h->refs++;
        return h->s;
    }
    if ((h = malloc(sizeof(*h) + len + 1)) == NULL)
        return NULL;
    h->refs = 1;
    h->hash = hash;
    h->len = (uint32_t)len;
    memcpy(h->s, s, len);
    h->s[len] = '\0';
    if (slots[at].h == NULL)
        nused++;
    slots[at] = (struct slot){ h, hash };
    nlive++;
    nbytes += sizeof(*h) + len + 1;
    return h->s;
}

ebb_str ebb_str_cstr(const char *s)
{
    return s ? ebb_str_intern(s, strlen(s)) : NULL;
}

ebb_str ebb_str_find(const char *s, size_t len)
{
    size_t at;
    struct strhdr *h;

    if (s == NULL || nslots == 0)
        return NULL;
    h = lookup(s, len, str_hash(s, len), &at);
    return h ? h->s : NULL;
}

ebb_str ebb_str_ref(ebb_str s)
{
    if (s != NULL)
        HDR(s)->refs++;
    return s;
}

void ebb_str_release(ebb_str s)
{
    struct strhdr *h;
    size_t i;

    if (s == NULL)
        return;
    h = HDR(s);
    if (--h->refs > 0)
        return;
    for (i = h->hash & (nslots - 1); slots[i].h != h; i = (i + 1) & (nslots - 1))
        ;
    /* A slot followed by an empty one can be emptied outright. */
    slots[i].h = slots[(i + 1) & (nslots - 1)].h == NULL ? NULL : TOMB;
    if (slots[i].h == NULL)
        nused--;
    nlive--;
    nbytes -= sizeof(*h) + h->len + 1;
    free(h);
}

size_t ebb_str_len(ebb_str s)
{
    return s ? HDR(s)->len : 0;
}

uint32_t ebb_str_hash(ebb_str s)
{
    return s ? HDR(s)->hash : 0;
}

size_t ebb_str_count(void)
{
    return nlive;
}

size_t ebb_str_bytes(void)
{
    return nbytes;
}

int ebb_str_cmp(ebb_str a, ebb_str b)
{
    if (a == b)
        return 0;
    if (a == NULL)
        return -1;
    if (b == NULL)
        return 1;
    return strcmp(a, b);
}
