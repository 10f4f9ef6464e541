/* Snapshot loading: kubectl List JSON (streamed item by item) or YAML.
 *
 * JSON is read through a window that holds at least one item: a small
 * scanner finds each item's byte extent (strings and escapes respected,
 * lines counted), the item alone goes to cJSON (in a bump arena,
 * json_arena.c), is decoded into the cache and its tree dropped. Reading
 * and parsing run on a thread of their own, decoding on the caller's, the
 * parsed items handed over in file order through a ring of arenas
 * (load_piped). The JSON
 * file stays open in the cache so a pod's or node's full object can be
 * read back (pod.object).
 *
 * YAML needs the whole document in memory anyway (libyaml via val.c); each
 * pod and node is re-printed as JSON into an anonymous temporary file that
 * serves as its source.
 *
 * A server's answers are read elsewhere: list_reader.c, and
 * ebb_object_from_text in json_arena.c. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ebb/cache.h"
#include "ebb/val.h"
#include "base/map.h"
#include "base/vec.h"
#include "model/snapshot_int.h"

/* The read window; it grows only when one item does not fit. Tests lower
 * it to exercise items that straddle refills. */
size_t ebb__snapshot_window = 1u << 20;

/* One item (a Kubernetes object) of a file is at most this: etcd keeps
 * 1.5 MiB (an answer of a server: EBB_OBJECT_MAX). */
#define ITEM_MAX ((size_t)64 << 20)
/* A YAML snapshot is read whole (JSON streams): at most this. */
#define YAML_MAX ((size_t)512 << 20)

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
    struct ebb_json_arena arena;
    struct ebb_json_arena *ar;      /* what the next item is parsed into: &arena, or
                                       the pipe's next free slot's */
    struct pipe *pipe;              /* the parser of a piped load (load_piped), else NULL */
    ebb_snapshot_item_fn item_fn;   /* ebb_snapshot_load_each */
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
    /* full: the window doubles (an item larger than it) */
    if (l->len == l->cap &&
        ebb__grow((void **)&l->buf, &l->cap,
                  l->len + 1 > ebb__snapshot_window ? l->len + 1 : ebb__snapshot_window, 1) != 0)
        return EBB_ENOMEM;
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

/* ---- the extent scanner -----------------------------------------------------
 *
 * Where the item at p ends, before it is parsed: the parser is given
 * exactly the item. It reads every byte of a snapshot, so it goes 64
 * bytes at a time: one bit per byte for quotes, backslashes, brackets and
 * newlines; the bytes inside strings come from the quotes by a prefix XOR;
 * the bracket depth moves by popcounts and is followed bit by bit only in
 * the block where it may come back to 0. A block holding a backslash (or
 * following one) goes byte by byte, as escapes are rare in a Kubernetes
 * object. Brackets are only counted; the parser checks the rest. */
struct block_bits {
    uint64_t quote, bslash, open, close, nl;
};

#ifdef __SSE2__
#include <emmintrin.h>

static inline void block_bits(const char *p, struct block_bits *b)
{
    const __m128i dq = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), nl = _mm_set1_epi8('\n');
    /* with bit 0x20 dropped, '{' is '[' and '}' is ']', and nothing else is */
    const __m128i fold = _mm_set1_epi8((char)~0x20), op = _mm_set1_epi8('['),
                  cl = _mm_set1_epi8(']');

    memset(b, 0, sizeof(*b));
    for (int i = 0; i < 4; i++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        __m128i f = _mm_and_si128(x, fold);
        b->quote |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, dq)) << (16 * i);
        b->bslash |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, bs)) << (16 * i);
        b->nl |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, nl)) << (16 * i);
        b->open |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(f, op)) << (16 * i);
        b->close |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(f, cl)) << (16 * i);
    }
}
#else
static inline void block_bits(const char *p, struct block_bits *b)
{
    memset(b, 0, sizeof(*b));
    for (int i = 0; i < 64; i++) {
        uint64_t bit = (uint64_t)1 << i;
        switch (p[i]) {
        case '"': b->quote |= bit; break;
        case '\\': b->bslash |= bit; break;
        case '\n': b->nl |= bit; break;
        case '{': case '[': b->open |= bit; break;
        case '}': case ']': b->close |= bit; break;
        }
    }
}
#endif

/* The same 64 bytes in two 32-byte steps, where the processor has AVX2
 * (chosen once, at run time: the build targets every x86-64). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_SCAN 1

__attribute__((target("avx2"))) static inline void block_bits_avx2(const char *p,
                                                                      struct block_bits *b)
{
    const __m256i dq = _mm256_set1_epi8('"'), bs = _mm256_set1_epi8('\\'),
                  nl = _mm256_set1_epi8('\n'), fold = _mm256_set1_epi8((char)~0x20),
                  op = _mm256_set1_epi8('['), cl = _mm256_set1_epi8(']');

    memset(b, 0, sizeof(*b));
    for (int i = 0; i < 2; i++) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * i));
        __m256i f = _mm256_and_si256(x, fold);
        b->quote |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, dq)) << (32 * i);
        b->bslash |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, bs)) << (32 * i);
        b->nl |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, nl)) << (32 * i);
        b->open |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(f, op)) << (32 * i);
        b->close |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(f, cl)) << (32 * i);
    }
}
#endif

/* __builtin_popcountll is a call into libgcc where the target has no
 * popcount instruction (x86-64's baseline): the same, inline. */
static inline int popcount64(uint64_t x)
{
#ifdef __POPCNT__
    return __builtin_popcountll(x);
#else
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (int)((x * 0x0101010101010101ull) >> 56);
#endif
}

static inline uint64_t prefix_xor(uint64_t x)
{
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

/* Byte by byte over p[0, n): the offset past the closing bracket, or -1. */
static int scan_bytes(struct ebb_json_scan *st, const char *p, int n)
{
    for (int i = 0; i < n; i++) {
        char c = p[i];
        if (c == '\n')
            st->lines++;
        if (st->in_string) {
            if (st->escaped)
                st->escaped = false;
            else if (c == '\\')
                st->escaped = true;
            else if (c == '"')
                st->in_string = false;
        } else if (c == '"') {
            st->in_string = true;
        } else if (c == '{' || c == '[') {
            st->depth++;
        } else if ((c == '}' || c == ']') && --st->depth == 0) {
            return i + 1;
        }
    }
    return -1;
}

/* The bytes a backslash escapes (simdjson's rule): in a run of
 * backslashes every other one escapes the byte after it. `prev`: the
 * block's first byte is escaped (the last one before it was an escaping
 * backslash); *carry: the first byte after the block is. */
static inline uint64_t escaped_bits(uint64_t bs, bool prev, bool *carry)
{
    const uint64_t even = 0x5555555555555555ull;
    uint64_t follows, odd_starts, seq_even;

    bs &= ~(uint64_t)prev;           /* escaped itself: it escapes nothing */
    follows = bs << 1 | (uint64_t)prev;
    odd_starts = bs & ~even & ~follows;
    *carry = __builtin_add_overflow(odd_starts, bs, &seq_even);
    return (even ^ (seq_even << 1)) & follows;
}

typedef void block_bits_fn(const char *p, struct block_bits *b);

/* The 64 bytes at p, of which the first n count: as scan_bytes. `bits` is
 * block_bits or block_bits_avx2, a constant where this is inlined. */
static inline __attribute__((always_inline)) int scan_block_with(block_bits_fn *bits,
                                                                 struct ebb_json_scan *st,
                                                                 const char *p, int n)
{
    struct block_bits b;
    uint64_t ins, open, close, esc, valid = n == 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1;
    bool carry = false;

    bits(p, &b);
    /* bits of the bytes inside strings, opening quotes included; escaped
     * quotes (a Kubernetes object's managedFields are full of them) do
     * not count */
    esc = st->escaped || (b.bslash & valid) != 0 ? escaped_bits(b.bslash & valid, st->escaped, &carry) : 0;
    ins = prefix_xor(b.quote & ~esc) ^ (st->in_string ? ~(uint64_t)0 : 0);
    /* a backslash outside a string is not JSON, and the rules followed
     * byte by byte leave it alone: they decide that block */
    if ((b.bslash & valid & ~ins) != 0)
        return scan_bytes(st, p, n);
    open = b.open & ~ins & valid;
    close = b.close & ~ins & valid;
    /* the depth may come back to 0 only if there are as many closing
     * brackets as it is deep: then bracket by bracket */
    if (st->depth - popcount64(close) <= 0) {
        for (uint64_t m = open | close; m != 0; m &= m - 1) {
            int i = __builtin_ctzll(m);
            if (open >> i & 1) {
                st->depth++;
            } else if (--st->depth == 0) {
                st->lines += popcount64(b.nl & (((uint64_t)2 << i) - 1));
                return i + 1;
            }
        }
    } else {
        st->depth += popcount64(open) - popcount64(close);
    }
    st->lines += popcount64(b.nl & valid);
    st->in_string = ins >> 63;
    st->escaped = n == 64 ? carry : (esc >> n & 1) != 0;
    return -1;
}

/* ebb__json_scan's body, with the bits of a block from `bits`. */
static inline __attribute__((always_inline)) long json_scan_with(block_bits_fn *bits,
                                                                 struct ebb_json_scan *st,
                                                                 const char *p, size_t n)
{
    size_t off = 0;
    int k;

    for (; n - off >= 64; off += 64)
        if ((k = scan_block_with(bits, st, p + off, 64)) >= 0)
            return (long)(off + (size_t)k);
    if (n > off) {
        /* the last bytes, padded with spaces: they change no state */
        char tail[64];
        memset(tail, ' ', sizeof(tail));
        memcpy(tail, p + off, n - off);
        if ((k = scan_block_with(bits, st, tail, (int)(n - off))) >= 0)
            return (long)(off + (size_t)k);
    }
    return -1;
}

static long json_scan_sse2(struct ebb_json_scan *st, const char *p, size_t n)
{
    return json_scan_with(block_bits, st, p, n);
}

#ifdef HAVE_AVX2_SCAN
__attribute__((target("avx2"))) static long json_scan_avx2(struct ebb_json_scan *st, const char *p,
                                                           size_t n)
{
    return json_scan_with(block_bits_avx2, st, p, n);
}
#endif

int ebb__json_scan_avx2;

#ifdef HAVE_AVX2_SCAN
/* decided once, before main: no thread reads it while it is written */
__attribute__((constructor)) static void pick_scan(void)
{
    __builtin_cpu_init();
    ebb__json_scan_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
}
#endif

/* See snapshot_int.h. */
long ebb__json_scan(struct ebb_json_scan *st, const char *p, size_t n)
{
#ifdef HAVE_AVX2_SCAN
    if (ebb__json_scan_avx2 > 0)
        return json_scan_avx2(st, p, n);
#endif
    return json_scan_sse2(st, p, n);
}

/* See snapshot_int.h. */
long ebb__json_extent(const char *p, const char *end, int *nl)
{
    struct ebb_json_scan st = { 0, 0, false, false };
    long k = ebb__json_scan(&st, p, (size_t)(end - p));

    if (k < 0)
        return 0;
    *nl = st.lines;
    return k;
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

    for (;;) {
        const char *p = l->buf + l->pos, *end = l->buf + l->len;
        *nl = 0;
        if (*p == '{' || *p == '[')
            n = ebb__json_extent(p, end, nl);
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

/* One probe: the put says what was there (the load fails on a duplicate,
 * so the item index it replaces is not needed after). */
static int dup_key(struct loader *l, const struct origin *o, ebb_str a, ebb_str b, const char *what)
{
    void *first = NULL;

    if (ebb__map_put(&l->seen, a, b, (void *)(uintptr_t)(o->idx + 1), &first) != 0)
        return lfail(l, EBB_ENOMEM, o->line, o->prefix, o->idx, NULL, "out of memory");
    if (first != NULL)
        return lfail(l, EBB_ESCHEMA, o->line, o->prefix, o->idx, NULL, "%s %s%s%s is already items[%d]",
                     what, a, b != a ? "/" : "", b != a ? b : "", (int)(uintptr_t)first - 1);
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

    if (l->ar->oom) {
        ebb_json_arena_reset(l->ar);
        return lfail(l, EBB_ENOMEM, o->line, o->prefix, o->idx, NULL, "out of memory");
    }
    if (l->ar->over) {
        ebb_json_arena_reset(l->ar);
        return lfail(l, EBB_ELIMIT, o->line, o->prefix, o->idx, NULL,
                     "the item makes more than %zu MiB of JSON values: not a Kubernetes object "
                     "(etcd keeps objects of at most 1.5 MiB)", EBB_JSON_TREE_MAX >> 20);
    }
    ebb_json_arena_reset(l->ar);
    if (endp == NULL || endp < p || endp > p + n)
        endp = p;
    for (k = 0; k + 1 < sizeof(near) && endp + k < p + n; k++)
        near[k] = (unsigned char)endp[k] < ' ' ? ' ' : endp[k];
    near[k] = '\0';
    return lfail(l, EBB_EPARSE, o->line + count_lines(p, endp), o->prefix, o->idx, NULL,
                 "invalid JSON near \"%s\"", near);
}

/* ---- a JSON file on two threads ----------------------------------------------

 * The parser thread reads the file, finds each item and parses it into the
 * arena of a free slot of a ring; the caller's thread takes the slots in
 * file order, decodes each item into the cache and frees its slot. Both
 * cores work: parsing and decoding each cost about half of a load.
 *
 * Invariants: slot i holds item `taken + k` for k < parsed - taken, and
 * only the parser writes slots in [parsed, taken + PIPE_SLOTS), only the
 * decoder reads slots in [taken, parsed), each under `mu`'s hand-over. The
 * first error in file order is the one reported: the decoder stops at its
 * own (and tells the parser, which stops at its next slot); the parser's
 * own, kept in `perr`, is reported only once every item before it has been
 * taken without one. The decoder's thread makes the cache, the seen map
 * and the item callbacks' calls exactly as a serial load does. */
#define PIPE_SLOTS 64
/* Each side wakes the other after this many slots, not after each one: at
 * 150k pods, a wake-up every 8 of 32 slots made 7,300 context switches and
 * a load 4% slower than one every 32 of 64 (2,000); every 64 of 128 gained
 * nothing more, and slots given back in batches left the parser idle. */
#define PIPE_BATCH 32

struct pipe_slot {
    cJSON *j;
    struct origin o;
    struct ebb_json_arena arena;
};

struct pipe {
    pthread_mutex_t mu;
    pthread_cond_t have_items, have_room;
    size_t parsed, taken;          /* items handed over, items decoded */
    bool parser_waits, decoder_waits;
    bool done;                     /* the parser returned: parser_rc */
    bool stop;                     /* the decoder failed: the parser stops */
    int parser_rc;
    struct ebb_error perr;         /* the parser's error */
    struct loader parser;          /* the parser's loader (its own window) */
    struct pipe_slot slots[PIPE_SLOTS];
};

/* The parser: the next free slot's arena becomes l->ar. EBB_ESTATE when
 * the decoder has stopped (its error is the one reported). */
static int pipe_room(struct loader *l)
{
    struct pipe *pp = l->pipe;
    int rc = 0;

    pthread_mutex_lock(&pp->mu);
    while (pp->parsed - pp->taken == PIPE_SLOTS && !pp->stop) {
        pp->parser_waits = true;
        pthread_cond_wait(&pp->have_room, &pp->mu);
    }
    pp->parser_waits = false;
    if (pp->stop)
        rc = EBB_ESTATE;
    else
        l->ar = &pp->slots[pp->parsed % PIPE_SLOTS].arena;
    pthread_mutex_unlock(&pp->mu);
    return rc;
}

/* The parser: the item parsed into the slot pipe_room gave is handed over. */
static void pipe_put(struct loader *l, cJSON *j, const struct origin *o)
{
    struct pipe *pp = l->pipe;
    struct pipe_slot *sl;

    pthread_mutex_lock(&pp->mu);
    sl = &pp->slots[pp->parsed % PIPE_SLOTS];
    sl->j = j;
    sl->o = *o;
    pp->parsed++;
    if (pp->decoder_waits && pp->parsed - pp->taken >= PIPE_BATCH)
        pthread_cond_signal(&pp->have_items);
    pthread_mutex_unlock(&pp->mu);
}

static int load_json(struct loader *l);

static void *pipe_parser(void *arg)
{
    struct pipe *pp = arg;
    int rc = load_json(&pp->parser);

    pthread_mutex_lock(&pp->mu);
    pp->parser_rc = rc;
    pp->done = true;
    pthread_cond_signal(&pp->have_items);
    pthread_mutex_unlock(&pp->mu);
    return NULL;
}

/* Decode a parsed item whose text is p[0, n), [off, off+n) of the file,
 * then drop its tree; when piped, hand it to the decoder instead. */
static int take_parsed(struct loader *l, cJSON *j, const char *p, size_t n, uint64_t off,
                       struct origin *o)
{
    int rc;

    (void)p;
    o->src.off = off;
    o->src.len = l->has_src ? (uint32_t)n : 0;
    o->src.file = l->src;
    if (l->pipe != NULL) {
        pipe_put(l, j, o);
        return 0;
    }
    rc = take(l, j, o);
    ebb_json_arena_reset(l->ar);
    return rc;
}

/* One pass over an item's text [p, p+n) for what cJSON does not say: its
 * newlines (*lines, for the next item's line), whether it holds a raw NUL
 * byte (*nul) and whether it holds a "\u0000" escape (the return). The
 * bytes go 64 at a time through a loop of fixed length the compiler
 * vectorizes; backslashes are rare, and only they are looked at one by
 * one, each escape stepped over whole as ebb_json_nul_scrub does. */
static bool item_scan(const char *p, size_t n, int *lines, bool *nul)
{
    const unsigned char *u = (const unsigned char *)p;
    unsigned nl = 0, z = 0, bs = 0;
    size_t i = 0;

    for (; i + 64 <= n; i += 64) {
        unsigned char cnl = 0, cz = 0, cbs = 0;
        for (size_t k = 0; k < 64; k++) {
            cnl += u[i + k] == '\n';
            cz |= u[i + k] == '\0';
            cbs |= u[i + k] == '\\';
        }
        nl += cnl;
        z |= cz;
        bs |= cbs;
    }
    for (; i < n; i++) {
        nl += u[i] == '\n';
        z |= u[i] == '\0';
        bs |= u[i] == '\\';
    }
    *lines = (int)nl;
    *nul = z != 0;
    if (bs == 0 || z != 0)
        return false;
    for (const char *q = p, *end = p + n; (q = memchr(q, '\\', (size_t)(end - q))) != NULL; q += 2)
        if (end - q >= 6 && q[1] == 'u' && memcmp(q + 2, "0000", 4) == 0)
            return true;
    return false;
}

/* A NUL in the item [p, p+n) (the window, writable): a "\u0000" escape,
 * which cJSON would cut a string at, is read as U+FFFD as the API server
 * holds it in annotations and free text (ebb_json_nul_scrub, in place);
 * a raw NUL byte is not JSON. Returns 0 when the item must be parsed
 * again (*again), or the error; *lines gets the newlines in the item. */
static int item_nul(struct loader *l, struct origin *o, char *p, size_t n, bool *again, int *lines)
{
    const char *z;
    bool nul;

    *again = item_scan(p, n, lines, &nul);
    if (nul) {
        z = memchr(p, '\0', n);
        ebb_json_arena_reset(l->ar);
        return lfail(l, EBB_EPARSE, o->line + count_lines(p, z), o->prefix, o->idx, NULL,
                     "a NUL byte in the JSON text (write it as \\u0000)");
    }
    if (!*again)
        return 0;
    ebb_json_arena_reset(l->ar);
    ebb_json_nul_scrub(p, n);
    return 0;
}

/* Parse and take the JSON text [p, p+n) that starts at file offset `off`. */
static int take_text(struct loader *l, char *p, size_t n, uint64_t off, struct origin *o)
{
    const char *endp = NULL;
    cJSON *j = ebb__json_arena_parse_raw(l->ar, p, n, &endp);
    bool again;
    int rc, lines;

    if (j == NULL)
        return parse_error(l, o, p, n, endp);
    if ((rc = item_nul(l, o, p, n, &again, &lines)) != 0)
        return rc;
    if (again && (j = ebb__json_arena_parse_raw(l->ar, p, n, &endp)) == NULL)
        return parse_error(l, o, p, n, endp);
    return take_parsed(l, j, p, n, off, o);
}

/* The item at buf[pos] ('{'). Most items lie inside the window: the
 * scanner finds where the item ends and exactly that is parsed. When the
 * window ends inside the item (or the item is bad), the scanner refills
 * as needed (window_value) and take_text parses it or says what is wrong.
 * *n gets the length, *lines the newlines inside it. */
static int take_item(struct loader *l, struct origin *o, long *n, int *lines)
{
    char *p = l->buf + l->pos;
    const char *endp = NULL;
    cJSON *j;
    bool again;
    int nl, rc;
    long k;

    if (l->pipe != NULL && (rc = pipe_room(l)) != 0)
        return rc;
    if ((k = ebb__json_extent(p, l->buf + l->len, &nl)) > 0 &&
        (j = ebb__json_arena_parse_raw(l->ar, p, (size_t)k, &endp)) != NULL && endp == p + k) {
        *n = k;
        if ((rc = item_nul(l, o, p, (size_t)*n, &again, lines)) != 0)
            return rc;
        if (!again)
            return take_parsed(l, j, p, (size_t)*n, l->base + l->pos, o);
        return take_text(l, p, (size_t)*n, l->base + l->pos, o);
    }
    if (k > 0 && (l->ar->oom || l->ar->over))
        return parse_error(l, o, p, (size_t)k, endp);
    ebb_json_arena_reset(l->ar);
    if ((*n = window_value(l, o->line, o->prefix, o->idx, &nl)) < 0)
        return (int)*n;
    *lines = nl;
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
    int c, rc, lines = 0;
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
        if ((rc = take_item(l, &o, &n, &lines)) != 0)
            return rc;
        l->line += lines;
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

    if (l->pipe != NULL && (rc = pipe_room(l)) != 0)
        return rc;
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

/* JSON from l->f on two threads (see "a JSON file on two threads"): this
 * thread decodes what the parser thread hands over. Without a thread (or
 * the memory for the ring) the load is serial. */
static int load_piped(struct loader *l)
{
    struct pipe *pp;
    pthread_t th;
    bool threaded;
    int rc = 0;

    if ((pp = calloc(1, sizeof(*pp))) == NULL)
        return load_json(l);
    pthread_mutex_init(&pp->mu, NULL);
    pthread_cond_init(&pp->have_items, NULL);
    pthread_cond_init(&pp->have_room, NULL);
    ebb_error_clear(&pp->perr);
    /* the window, the file and the line count are the parser's until it
     * is joined */
    pp->parser = *l;
    pp->parser.err = &pp->perr;
    pp->parser.pipe = pp;
    if ((threaded = pthread_create(&th, NULL, pipe_parser, pp) == 0)) {
        for (;;) {
            struct pipe_slot *sl;

            pthread_mutex_lock(&pp->mu);
            while (pp->parsed == pp->taken && !pp->done) {
                pp->decoder_waits = true;
                pthread_cond_wait(&pp->have_items, &pp->mu);
            }
            pp->decoder_waits = false;
            if (pp->parsed == pp->taken) {
                pthread_mutex_unlock(&pp->mu);
                break;
            }
            sl = &pp->slots[pp->taken % PIPE_SLOTS];
            pthread_mutex_unlock(&pp->mu);

            rc = take(l, sl->j, &sl->o);
            ebb_json_arena_reset(&sl->arena);

            pthread_mutex_lock(&pp->mu);
            pp->taken++;
            if (rc != 0)
                pp->stop = true;
            if (pp->parser_waits && (rc != 0 || pp->parsed - pp->taken <= PIPE_SLOTS - PIPE_BATCH))
                pthread_cond_signal(&pp->have_room);
            pthread_mutex_unlock(&pp->mu);
            if (rc != 0)
                break;
        }
        pthread_join(th, NULL);
        if (rc == 0 && (rc = pp->parser_rc) != 0 && l->err != NULL)
            *l->err = pp->perr;
        l->buf = pp->parser.buf;   /* loader_done frees it */
    }
    for (size_t i = 0; i < PIPE_SLOTS; i++)
        ebb__json_arena_release(&pp->slots[i].arena);
    ebb__json_arena_release(&pp->parser.arena);
    pthread_cond_destroy(&pp->have_room);
    pthread_cond_destroy(&pp->have_items);
    pthread_mutex_destroy(&pp->mu);
    free(pp);
    return threaded ? rc : load_json(l);
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
    return load_piped(l);
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
    l->ar = &l->arena;
    ebb__map_init(&l->seen);
    if (stats != NULL)
        memset(stats, 0, sizeof(*stats));
}

static void loader_done(struct loader *l, double t0)
{
    free(l->buf);
    ebb__json_arena_release(&l->arena);
    ebb__map_free(&l->seen);
    ebb_cache_build_indexes(l->cache);
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
