/* engine/base/str.c: the string interner. */
#include "fixtures.h"

#include "ebb/str.h"

static void test_intern_same_pointer(void **state)
{
    size_t base = ebb_str_count();
    ebb_str a, b, c;

    (void)state;
    a = ebb_str_cstr("app.kubernetes.io/name");
    b = ebb_str_intern("app.kubernetes.io/name", strlen("app.kubernetes.io/name"));
    c = ebb_str_cstr("app.kubernetes.io/instance");
    assert_non_null(a);
    assert_ptr_equal(a, b);
    assert_ptr_not_equal(a, c);
    assert_string_equal(a, "app.kubernetes.io/name");
    assert_int_equal(ebb_str_len(a), 22);
    assert_int_equal(ebb_str_count(), base + 2);
    assert_int_equal(ebb_str_hash(a), ebb_str_hash(b));
    ebb_str_release(a);
    ebb_str_release(b);
    ebb_str_release(c);
    assert_int_equal(ebb_str_count(), base);
}

/* The bytes need not end in NUL; the copy does. */
static void test_intern_slice(void **state)
{
    size_t base = ebb_str_count();
    const char *json = "\"nginx-7c9f8d6b5-x2x9q\",";
    ebb_str pod, prefix, whole;

    (void)state;
    pod = ebb_str_intern(json + 1, 21);
    assert_string_equal(pod, "nginx-7c9f8d6b5-x2x9q");
    assert_int_equal(ebb_str_len(pod), 21);
    prefix = ebb_str_intern(json + 1, 5);
    assert_string_equal(prefix, "nginx");
    assert_ptr_not_equal(prefix, pod);
    whole = ebb_str_cstr("nginx");
    assert_ptr_equal(whole, prefix);
    ebb_str_release(pod);
    ebb_str_release(prefix);
    ebb_str_release(whole);
    assert_int_equal(ebb_str_count(), base);
}

static void test_empty_and_embedded_nul(void **state)
{
    size_t base = ebb_str_count();
    ebb_str e1, e2, a, anb;

    (void)state;
    e1 = ebb_str_intern("", 0);
    e2 = ebb_str_cstr("");
    assert_non_null(e1);
    assert_ptr_equal(e1, e2);
    assert_int_equal(ebb_str_len(e1), 0);
    assert_string_equal(e1, "");
    a = ebb_str_cstr("a");
    anb = ebb_str_intern("a\0b", 3);
    assert_ptr_not_equal(a, anb);
    assert_int_equal(ebb_str_len(anb), 3);
    assert_int_equal(memcmp(anb, "a\0b", 4), 0);
    assert_int_equal(ebb_str_count(), base + 3);
    ebb_str_release(e1);
    ebb_str_release(e2);
    ebb_str_release(a);
    ebb_str_release(anb);
    assert_int_equal(ebb_str_count(), base);
}

static void test_refcounts(void **state)
{
    size_t base = ebb_str_count();
    ebb_str s, r;

    (void)state;
    s = ebb_str_cstr("kube-system");
    r = ebb_str_ref(s);
    assert_ptr_equal(r, s);
    ebb_str_ref(s);
    /* three references: two releases leave it alive and findable */
    ebb_str_release(s);
    ebb_str_release(s);
    assert_ptr_equal(ebb_str_find("kube-system", 11), s);
    assert_int_equal(ebb_str_count(), base + 1);
    ebb_str_release(s);
    /* released to zero: gone */
    assert_null(ebb_str_find("kube-system", 11));
    assert_int_equal(ebb_str_count(), base);
    /* NULL is "absent" everywhere */
    assert_null(ebb_str_ref(NULL));
    ebb_str_release(NULL);
    assert_int_equal(ebb_str_len(NULL), 0);
    assert_int_equal(ebb_str_hash(NULL), 0);
    assert_null(ebb_str_cstr(NULL));
    assert_null(ebb_str_intern(NULL, 3));
    assert_null(ebb_str_find(NULL, 0));
    assert_int_equal(ebb_str_count(), base);
}

static void test_find_takes_no_reference(void **state)
{
    size_t base = ebb_str_count();
    ebb_str s;

    (void)state;
    assert_null(ebb_str_find("topology.kubernetes.io/zone", 27));
    assert_int_equal(ebb_str_count(), base);   /* find never creates */
    s = ebb_str_cstr("topology.kubernetes.io/zone");
    assert_ptr_equal(ebb_str_find("topology.kubernetes.io/zone", 27), s);
    assert_ptr_equal(ebb_str_find("topology.kubernetes.io/zone=us", 27), s);
    assert_null(ebb_str_find("topology.kubernetes.io/zon", 26));
    ebb_str_release(s);   /* the only reference: find added none */
    assert_null(ebb_str_find("topology.kubernetes.io/zone", 27));
    assert_int_equal(ebb_str_count(), base);
}

static void test_cmp(void **state)
{
    size_t base = ebb_str_count();
    ebb_str a = ebb_str_cstr("default"), b = ebb_str_cstr("kube-system");

    (void)state;
    assert_int_equal(ebb_str_cmp(a, a), 0);
    assert_int_equal(ebb_str_cmp(NULL, NULL), 0);
    assert_true(ebb_str_cmp(NULL, a) < 0);
    assert_true(ebb_str_cmp(a, NULL) > 0);
    assert_true(ebb_str_cmp(a, b) < 0);
    assert_true(ebb_str_cmp(b, a) > 0);
    ebb_str_release(a);
    ebb_str_release(b);
    assert_int_equal(ebb_str_count(), base);
}

static void test_bytes_follow_strings(void **state)
{
    size_t base = ebb_str_count();
    ebb_str warm = ebb_str_cstr("warm-up");   /* make sure the table exists */
    size_t before = ebb_str_bytes();
    ebb_str s = ebb_str_cstr("registry.k8s.io/kube-proxy:v1.31.2");

    (void)state;
    assert_true(ebb_str_bytes() >= before + strlen(s) + 1);
    ebb_str_release(s);
    assert_int_equal(ebb_str_bytes(), before);
    ebb_str_release(warm);
    assert_int_equal(ebb_str_count(), base);
}

#define MANY 20000

/* Enough strings to grow the table several times; then release half, which
 * leaves tombstones in probe chains the other half must still cross. */
static void test_many_strings(void **state)
{
    size_t base = ebb_str_count();
    ebb_str *v = calloc(MANY, sizeof(*v));
    char name[64];

    (void)state;
    assert_non_null(v);
    for (int i = 0; i < MANY; i++) {
        snprintf(name, sizeof(name), "shop/cart-5f7d8b9c6-%05d", i);
        v[i] = ebb_str_cstr(name);
        assert_non_null(v[i]);
    }
    assert_int_equal(ebb_str_count(), base + MANY);
    for (int i = 0; i < MANY; i++) {
        snprintf(name, sizeof(name), "shop/cart-5f7d8b9c6-%05d", i);
        assert_ptr_equal(ebb_str_find(name, strlen(name)), v[i]);
        assert_string_equal(v[i], name);
    }
    for (int i = 0; i < MANY; i += 2)
        ebb_str_release(v[i]);
    assert_int_equal(ebb_str_count(), base + MANY / 2);
    for (int i = 0; i < MANY; i++) {
        snprintf(name, sizeof(name), "shop/cart-5f7d8b9c6-%05d", i);
        if (i % 2 == 0)
            assert_null(ebb_str_find(name, strlen(name)));
        else
            assert_ptr_equal(ebb_str_find(name, strlen(name)), v[i]);
    }
    /* interning again reuses slots and finds the survivors */
    for (int i = 0; i < MANY; i += 2) {
        snprintf(name, sizeof(name), "shop/cart-5f7d8b9c6-%05d", i);
        v[i] = ebb_str_cstr(name);
        assert_string_equal(v[i], name);
    }
    for (int i = 1; i < MANY; i += 2) {
        snprintf(name, sizeof(name), "shop/cart-5f7d8b9c6-%05d", i);
        ebb_str again = ebb_str_cstr(name);
        assert_ptr_equal(again, v[i]);
        ebb_str_release(again);
    }
    assert_int_equal(ebb_str_count(), base + MANY);
    for (int i = 0; i < MANY; i++)
        ebb_str_release(v[i]);
    assert_int_equal(ebb_str_count(), base);
    free(v);
}

/* Pod names churn in a live cache: each one interned and released. The
 * tombstones they leave must be recycled, not grow the table forever. */
/* The hash spreads the strings a cluster is made of: names that differ in
 * one character or only at their end, uids, lengths 7 to 41 across
 * the 8-byte steps. Over 2^17 buckets (the table's mask reads the low
 * bits), 100,000 such strings fill about as many as random values do
 * (70%); a hash that clusters them (a sum of bytes, the last word alone)
 * fills a small part. Each family is counted alone. */
static void test_hash_spreads(void **state)
{
    enum { N = 100000, BUCKETS = 1 << 17 };
    static const char *families[] = { "web-7d9c6b9f4-%05d", "%d", "node-a-%d.example.internal",
                                      "0b4f5d0e-7a3c-4f7e-9d1a-%012d", "x%0*d" };
    uint8_t *seen = calloc(BUCKETS, 1);
    (void)state;

    assert_non_null(seen);
    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
        size_t filled = 0;
        memset(seen, 0, BUCKETS);
        for (int i = 0; i < N; i++) {
            char buf[64];
            ebb_str s;
            if (f == 4)
                snprintf(buf, sizeof(buf), families[f], 6 + i % 35, i / 35);
            else
                snprintf(buf, sizeof(buf), families[f], i);
            assert_non_null(s = ebb_str_intern(buf, strlen(buf)));
            uint32_t b = ebb_str_hash(s) & (BUCKETS - 1);
            filled += !seen[b];
            seen[b] = 1;
            ebb_str_release(s);
        }
        print_message("# %s: %zu of %d buckets\n", families[f], filled, BUCKETS);
        assert_true(filled * 100 >= (size_t)N * 65);
    }
    free(seen);
}

static void test_churn_does_not_grow(void **state)
{
    size_t base = ebb_str_count();
    ebb_str keep = ebb_str_cstr("kube-system/coredns-7db6d8ff4d-abcde");
    size_t before = ebb_str_bytes();
    char name[64];

    (void)state;
    for (int i = 0; i < 200000; i++) {
        snprintf(name, sizeof(name), "batch/job-%d-%08x", i, (unsigned)i * 2654435761u);
        ebb_str s = ebb_str_cstr(name);
        assert_non_null(s);
        ebb_str_release(s);
    }
    assert_int_equal(ebb_str_bytes(), before);
    assert_ptr_equal(ebb_str_find("kube-system/coredns-7db6d8ff4d-abcde", 36), keep);
    ebb_str_release(keep);
    assert_int_equal(ebb_str_count(), base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intern_same_pointer),
        cmocka_unit_test(test_intern_slice),
        cmocka_unit_test(test_empty_and_embedded_nul),
        cmocka_unit_test(test_refcounts),
        cmocka_unit_test(test_find_takes_no_reference),
        cmocka_unit_test(test_cmp),
        cmocka_unit_test(test_bytes_follow_strings),
        cmocka_unit_test(test_many_strings),
        cmocka_unit_test(test_churn_does_not_grow),
        cmocka_unit_test(test_hash_spreads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
