/* engine/core/evmemory_json.c: the memory of evictions as JSON (what
 * `ebb run` keeps in its ConfigMap and a snapshot under "evictionMemory"). */
#include "fixtures.h"

#include "ebb/evmemory.h"

static void add(struct ebb_evmem *m, int64_t at, const char *pod, const char *node,
                const char *landed)
{
    struct ebb_evmem_entry e = { 0 };

    e.at = at;
    e.ns = ebb_str_cstr("shop");
    e.pod = ebb_str_cstr(pod);
    e.uid = ebb_str_cstr("6f1c1d7e-3b8a-4c55-9a0e-2f7d1c9b8a11");
    e.kind = ebb_str_cstr("Deployment");
    e.workload = ebb_str_cstr("web");
    e.node = ebb_str_cstr(node);
    e.plugin = ebb_str_cstr("LowNodeUtilization");
    e.profile = ebb_str_cstr("default");
    if (landed != NULL) {
        e.landed = ebb_str_cstr(landed);
        e.replacement = ebb_str_cstr("web-7c9f8d6b5-zzzzz");
        e.flags = EBB_EVMEM_LANDED | (strcmp(landed, node) == 0 ? EBB_EVMEM_BOUNCED : 0);
    }
    if (strcmp(node, "node-b") == 0) {   /* two pods created in its second */
        e.peers[0] = ebb_str_cstr("0b6c1a52-7d3e-4f8a-b1c2-9e8d7f6a5b41");
        e.peers[1] = ebb_str_cstr("0b6c1a52-7d3e-4f8a-b1c2-9e8d7f6a5b42");
        e.npeers = 2;
    }
    assert_int_equal(ebb_evmem_add(m, &e), 0);
    for (uint8_t i = 0; i < e.npeers; i++)
        ebb_str_release(e.peers[i]);
    ebb_str_release(e.ns), ebb_str_release(e.pod), ebb_str_release(e.uid);
    ebb_str_release(e.kind), ebb_str_release(e.workload), ebb_str_release(e.node);
    ebb_str_release(e.plugin), ebb_str_release(e.profile);
    ebb_str_release(e.landed), ebb_str_release(e.replacement);
}

/* Every field comes back as it went, the window too, and the memory read
 * is not dirty (it is what is stored). */
static void test_round_trip(void **state)
{
    size_t base = ebb_str_count(), len;
    struct ebb_evmem m, r;
    struct ebb_error err = { 0 };
    char *text;

    (void)state;
    ebb_evmem_init(&m, 7200);
    add(&m, 1764320000, "web-7c9f8d6b5-aaaaa", "node-a", NULL);
    add(&m, 1764320060, "web-7c9f8d6b5-bbbbb", "node-b", "node-c");
    add(&m, 1764320120, "web-7c9f8d6b5-ccccc", "node-c", "node-c");
    text = ebb_evmem_encode(&m, 0, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    ebb_evmem_init(&r, 0);
    assert_int_equal(ebb_evmem_decode(&r, text, len, "test", &err), 0);
    assert_int_equal(r.window, 7200);
    assert_false(r.dirty);
    assert_int_equal(r.n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(r.v[i].at, m.v[i].at);
        assert_ptr_equal(r.v[i].pod, m.v[i].pod);   /* interned: same string */
        assert_ptr_equal(r.v[i].uid, m.v[i].uid);
        assert_ptr_equal(r.v[i].kind, m.v[i].kind);
        assert_ptr_equal(r.v[i].workload, m.v[i].workload);
        assert_ptr_equal(r.v[i].node, m.v[i].node);
        assert_ptr_equal(r.v[i].plugin, m.v[i].plugin);
        assert_ptr_equal(r.v[i].profile, m.v[i].profile);
        assert_ptr_equal(r.v[i].landed, m.v[i].landed);
        assert_ptr_equal(r.v[i].replacement, m.v[i].replacement);
        assert_int_equal(r.v[i].flags, m.v[i].flags);
        assert_int_equal(r.v[i].npeers, m.v[i].npeers);
        for (uint8_t k = 0; k < r.v[i].npeers; k++)
            assert_ptr_equal(r.v[i].peers[k], m.v[i].peers[k]);
    }
    assert_int_equal(r.v[1].npeers, 2);
    assert_null(r.v[0].landed);
    assert_int_equal(r.v[2].flags, EBB_EVMEM_LANDED | EBB_EVMEM_BOUNCED);
    free(text);
    ebb_evmem_free(&r);
    ebb_evmem_free(&m);
    assert_int_equal(ebb_str_count(), base);
}

/* Thousands of evictions: the encoding stays under its bound, the newest
 * entries are the ones kept, in order, and it reads back. */
static void test_bounded_newest_kept(void **state)
{
    size_t base = ebb_str_count(), len;
    struct ebb_evmem m, r;
    struct ebb_error err = { 0 };
    char pod[64], *text;

    (void)state;
    ebb_evmem_init(&m, 0);
    for (int i = 0; i < 20000; i++) {
        snprintf(pod, sizeof(pod), "web-7c9f8d6b5-%05d", i);
        add(&m, 1764320000 + i, pod, "node-a", i % 2 ? "node-b" : NULL);
    }
    text = ebb_evmem_encode(&m, 0, &len);
    assert_non_null(text);
    assert_true(len <= EBB_EVMEM_MAX_BYTES);
    assert_true(len > EBB_EVMEM_MAX_BYTES - 400);   /* filled, not cut short */
    ebb_evmem_init(&r, 0);
    assert_int_equal(ebb_evmem_decode(&r, text, len, "test", &err), 0);
    assert_true(r.n > 1000 && r.n < 20000);
    assert_int_equal(r.v[r.n - 1].at, 1764320000 + 19999);
    assert_int_equal(r.v[0].at, 1764320000 + 20000 - (int64_t)r.n);
    free(text);
    ebb_evmem_free(&r);

    /* a small bound: only the newest, and never more than asked */
    text = ebb_evmem_encode(&m, 1000, &len);
    assert_non_null(text);
    assert_true(len <= 1000);
    ebb_evmem_init(&r, 0);
    assert_int_equal(ebb_evmem_decode(&r, text, len, "test", &err), 0);
    assert_true(r.n >= 1);
    assert_int_equal(r.v[r.n - 1].at, 1764320000 + 19999);
    free(text);
    ebb_evmem_free(&r);
    /* an empty memory */
    ebb_evmem_free(&m);
    ebb_evmem_init(&m, 0);
    text = ebb_evmem_encode(&m, 0, &len);
    assert_string_equal(text, "{\"version\":1,\"window\":86400,\"entries\":[]}");
    free(text);
    assert_int_equal(ebb_str_count(), base);
}

#define E(extra) "{\"t\":1764320000,\"ns\":\"shop\",\"pod\":\"web-1\",\"k\":\"Deployment\"," \
                 "\"w\":\"web\",\"n\":\"node-a\",\"pl\":\"LowNodeUtilization\",\"pr\":\"default\"" extra "}"

/* Out of order entries are put in order; a repeated entry is read once and
 * keeps the landing whichever copy knows it. */
static void test_order_and_duplicates(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_evmem m;
    struct ebb_error err = { 0 };
    const char *text = "{\"version\":1,\"entries\":["
        "{\"t\":300,\"ns\":\"shop\",\"pod\":\"web-3\",\"k\":\"Deployment\",\"w\":\"web\",\"n\":\"node-a\",\"pl\":\"P\",\"pr\":\"d\"},"
        "{\"t\":100,\"ns\":\"shop\",\"pod\":\"web-1\",\"k\":\"Deployment\",\"w\":\"web\",\"n\":\"node-a\",\"pl\":\"P\",\"pr\":\"d\"},"
        "{\"t\":100,\"ns\":\"shop\",\"pod\":\"web-1\",\"k\":\"Deployment\",\"w\":\"web\",\"n\":\"node-a\",\"pl\":\"P\",\"pr\":\"d\","
        "\"l\":\"node-a\",\"r\":\"web-9\",\"f\":3},"
        "{\"t\":200,\"ns\":\"shop\",\"pod\":\"web-2\",\"k\":\"Deployment\",\"w\":\"web\",\"n\":\"node-b\",\"pl\":\"P\",\"pr\":\"d\"}]}";

    (void)state;
    ebb_evmem_init(&m, 600);
    assert_int_equal(ebb_evmem_decode(&m, text, strlen(text), "test", &err), 0);
    assert_int_equal(m.window, 600);                /* the text names none: kept */
    assert_int_equal(m.n, 3);
    assert_int_equal(m.v[0].at, 100);
    assert_int_equal(m.v[1].at, 200);
    assert_int_equal(m.v[2].at, 300);
    assert_string_equal(m.v[0].landed, "node-a");
    assert_string_equal(m.v[0].replacement, "web-9");
    assert_int_equal(m.v[0].flags, EBB_EVMEM_LANDED | EBB_EVMEM_BOUNCED);
    ebb_evmem_free(&m);
    assert_int_equal(ebb_str_count(), base);
}

/* Every bad field is an error naming the source, the entry and the field,
 * and leaves the memory empty, whatever was read before it. */
static void test_strict(void **state)
{
    static const struct { const char *text, *field; int code; } cases[] = {
        { "[]", "", EBB_ESCHEMA },
        { "{\"version\":1,", "", EBB_EPARSE },
        { "{\"entries\":[]}", "version", EBB_ESCHEMA },
        { "{\"version\":2,\"entries\":[]}", "version", EBB_ESCHEMA },
        { "{\"version\":1}", "entries", EBB_ESCHEMA },
        { "{\"version\":1,\"window\":0,\"entries\":[]}", "window", EBB_ESCHEMA },
        { "{\"version\":1,\"window\":1.5,\"entries\":[]}", "window", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":{}}", "entries", EBB_ESCHEMA },
        { "{\"version\":1,\"extra\":1,\"entries\":[]}", "extra", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E("") ",7]}", "entries[1].", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E("") "," "{\"t\":-1,\"ns\":\"shop\"}" "]}", "entries[1].t", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[{\"ns\":\"shop\"}]}", "entries[0].t", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"x\":1") "]}", "entries[0].x", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"t\":5") "]}", "entries[0].t", EBB_ESCHEMA },
        { "{\"version\":1,\"version\":1,\"entries\":[]}", "version", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"f\":8") "]}", "entries[0].f", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"f\":4") "]}", "entries[0].f", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"b\":\"0a1b\"") "]}", "entries[0].b", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"b\":[\"0a1b\",7]") "]}", "entries[0].b", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"b\":[\"x-y\"]") "]}", "entries[0].b", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"b\":[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\"]") "]}",
          "entries[0].b", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"b\":[],\"b\":[]") "]}", "entries[0].b", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"f\":1") "]}", "entries[0].f", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"f\":2,\"l\":\"node-a\"") "]}", "entries[0].f", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"l\":\"Node_A\"") "]}", "entries[0].l", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"uid\":\"not a uid\"") "]}", "entries[0].uid", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[" E(",\"r\":5") "]}", "entries[0].r", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[{\"t\":1,\"ns\":\"-shop\",\"pod\":\"p\",\"k\":\"Pod\",\"w\":\"p\",\"n\":\"n\",\"pl\":\"P\",\"pr\":\"d\"}]}",
          "entries[0].ns", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[{\"t\":1,\"ns\":\"shop\",\"pod\":\"p\",\"k\":\"deployment\",\"w\":\"p\",\"n\":\"n\",\"pl\":\"P\",\"pr\":\"d\"}]}",
          "entries[0].k", EBB_ESCHEMA },
        { "{\"version\":1,\"entries\":[{\"t\":1,\"ns\":\"shop\",\"pod\":\"p\",\"k\":\"Pod\",\"w\":\"p\",\"n\":\"n\",\"pl\":\"P\"}]}",
          "entries[0].pr", EBB_ESCHEMA },
    };
    size_t base = ebb_str_count();

    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        struct ebb_evmem m;
        struct ebb_error err = { 0 };
        char msg[1024];

        ebb_evmem_init(&m, 900);
        add(&m, 5, "web-7c9f8d6b5-aaaaa", "node-a", NULL);
        assert_int_equal(ebb_evmem_decode(&m, cases[i].text, strlen(cases[i].text),
                                          "ConfigMap kube-system/ebb-eviction-memory", &err),
                         cases[i].code);
        ebb_error_format(&err, msg, sizeof(msg));
        if (strstr(msg, "ConfigMap kube-system/ebb-eviction-memory") == NULL ||
            strncmp(err.field, cases[i].field, strlen(cases[i].field)) != 0)
            fail_msg("case %zu: %s (field %s)", i, msg, err.field);
        assert_int_equal(m.n, 0);
        assert_int_equal(m.window, 900);
        ebb_evmem_free(&m);
    }
    assert_int_equal(ebb_str_count(), base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bounded_newest_kept),
        cmocka_unit_test(test_order_and_duplicates),
        cmocka_unit_test(test_strict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
