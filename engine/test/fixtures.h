/* Shared by the C unit tests: cmocka and small helpers. */
#ifndef EBB_TEST_FIXTURES_H
#define EBB_TEST_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ebb/cache.h"
#include "ebb/snapshot.h"

/* Read a file from the repository (tests run from the top directory). */
static inline char *fixture_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    fclose(f);
    return buf;
}

/* ---- a cluster written item by item, as a kubectl List ------------------ */

static struct {
    char buf[131072];
    size_t len;
} fx_list __attribute__((unused));

static inline void fx_begin(void)
{
    fx_list.len = (size_t)snprintf(fx_list.buf, sizeof(fx_list.buf),
                                   "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
}

/* One item (printf-style), after a comma when it is not the first. */
static inline void fx_add(const char *fmt, ...)
{
    va_list ap;

    if (fx_list.len > 0 && fx_list.buf[fx_list.len - 1] != '[')
        fx_list.buf[fx_list.len++] = ',';
    va_start(ap, fmt);
    fx_list.len += (size_t)vsnprintf(fx_list.buf + fx_list.len, sizeof(fx_list.buf) - fx_list.len, fmt, ap);
    va_end(ap);
    assert_true(fx_list.len < sizeof(fx_list.buf));
}

static inline void fx_end(void)
{
    fx_list.len += (size_t)snprintf(fx_list.buf + fx_list.len, sizeof(fx_list.buf) - fx_list.len, "]}");
    assert_true(fx_list.len < sizeof(fx_list.buf));
}

/* Close the list and load it into a new cache (the caller destroys it); a
 * list that does not load fails the test with the field. */
static inline struct ebb_cache *fx_load(void)
{
    struct ebb_cache *c = NULL;
    struct ebb_error err = { 0 };

    fx_end();
    assert_int_equal(ebb_cache_create(&c), 0);
    if (ebb_snapshot_load_buf(c, fx_list.buf, fx_list.len, "test.json", NULL, &err) != 0)
        fail_msg("snapshot: %s: %s", err.field, err.msg);
    return c;
}

#endif
