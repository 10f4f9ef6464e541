/* A server's LIST answer, read as it arrives (include/ebb/snapshot.h):
 * each item's text is handed on as soon as its last byte is in, the
 * List's metadata is kept, every other value is stepped over. What is
 * held is one item (EBB_OBJECT_MAX) whatever the answer's size; the items
 * themselves are the decoder's to check (ebb_object_from_text). */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ebb/snapshot.h"
#include "base/vec.h"
#include "model/snapshot_int.h"

/* The top level of a List: { "key": value, ..., "items": [ item, ... ] }.
 * Only brackets, strings and escapes are followed (the parsers check each item
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

enum { V_BRACKETS, V_STRING, V_BARE };

struct ebb_list_reader {
    ebb_list_item_fn fn;
    void *ud;
    int st;
    char key[16];               /* the key being read (longer keys are none of ours) */
    size_t keylen;
    bool key_esc, key_long;
    int which;                  /* the value being read: 0 other, 1 metadata, 2 an item */
    /* the value scanner: an object or array by the snapshot's block
     * scanner (most of what a LIST answer holds is its items), a string
     * byte by byte */
    int vkind;
    bool in_str, esc;
    struct ebb_json_scan scan;
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
    size_t need = r->len + n + 1;

    r->total += n;
    if (r->total > r->max)
        return 0;
    /* 4 KiB at first, then doubling */
    if (ebb__grow((void **)&r->buf, &r->cap, need < 4096 ? 4096 : need, 1) != 0)
        return EBB_ENOMEM;
    memcpy(r->buf + r->len, p, n);
    r->len += n;
    return 0;
}

static void value_begin(struct ebb_list_reader *r, char c, size_t max)
{
    r->vkind = c == '{' || c == '[' ? V_BRACKETS : c == '"' ? V_STRING : V_BARE;
    r->in_str = false;
    r->esc = false;
    memset(&r->scan, 0, sizeof(r->scan));
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
    if (r->vkind == V_BRACKETS) {
        long k = ebb__json_scan(&r->scan, data, len);
        *done = k >= 0;
        return k >= 0 ? (size_t)k : len;
    }
    while (i < len) {
        char c = data[i++];
        if (!r->in_str) {
            r->in_str = true;   /* the opening quote */
        } else if (r->esc) {
            r->esc = false;
        } else if (c == '\\') {
            r->esc = true;
        } else if (c == '"') {
            *done = true;
            return i;
        } else {
            /* the rest of the string up to a quote or a backslash */
            while (i < len && data[i] != '"' && data[i] != '\\')
                i++;
        }
    }
    return i;
}

/* After a value inside the List (close '}') or its items (close ']'): ','
 * goes on to `next`, `close` ends it (`closed`). */
static int separator(struct ebb_list_reader *r, struct ebb_error *err, char c, char close,
                     int next, int closed)
{
    if (c == ',')
        r->st = next;
    else if (c == close)
        r->st = closed;
    else if (close == '}')
        return rfail(r, err, "the answer is not a %s (',' or '}' expected at byte %llu)", "List object");
    else
        return rfail(r, err, "the answer is not a %s (',' or ']' expected at byte %llu)", "List");
    return 0;
}

/* A value of the List is complete: the metadata is kept, "items": null
 * taken as no items. */
static int value_done(struct ebb_list_reader *r, struct ebb_error *err)
{
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
        if (r->len != 4 || memcmp(r->buf, "null", 4) != 0)
            return rfail(r, err, "the answer is not a %s (items is no array, byte %llu)", "List");
        r->items_seen = true;
    }
    r->st = T_NEXT;
    return 0;
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
            } else if ((rc = value_done(r, err)) != 0) {
                return rc;
            }
            continue;
        case T_NEXT:
            if ((rc = separator(r, err, c, '}', T_KEY_START, T_DONE)) != 0)
                return rc;
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
            if ((rc = separator(r, err, c, ']', T_ITEM_START, T_NEXT)) != 0)
                return rc;
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
