/* engine/base/vec.c: the one growable array. Table-driven over the sizes a
 * request can have (element sizes, counts near what the count type and
 * size_t hold, both count widths): a growth either gives room for what was
 * asked or fails with the array as it was, never a short or wrapped
 * allocation; the byte count a script is charged equals what is held. */
#include "fixtures.h"

#include "base/map.h"
#include "base/vec.h"

/* A refused allocation answers NULL here rather than stopping the test:
 * the requests below are meant to be refused. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

/* ---- the class: every request near the limits ---------------------------- */

struct grow_case {
    size_t size;       /* element size */
    size_t need;
    int rc;            /* from an array of 3 */
};

static const struct grow_case grow_cases[] = {
    { 1, 17, 0 },
    { 8, 1000, 0 },
    { 1, SIZE_MAX, EBB_ENOMEM },
    { 8, SIZE_MAX / 8 + 1, EBB_ENOMEM },        /* need * size wraps */
    { 8, SIZE_MAX / 4 + 1, EBB_ENOMEM },        /* doubling to it wraps */
    { 8, SIZE_MAX / 16 + 1, EBB_ENOMEM },       /* fits size_t, not memory */
    { 24, SIZE_MAX / 24 + 1, EBB_ENOMEM },
    { 24, (SIZE_MAX / 24) / 2 + 1, EBB_ENOMEM },
    { 4096, SIZE_MAX / 4096, EBB_ENOMEM },
    { 3, (size_t)1 << 62, EBB_ENOMEM },
    { 4096, (size_t)UINT32_MAX, EBB_ENOMEM },   /* fits a uint32_t count, not memory */
};

/* One case through ebb__vec_grow with a count of `capsize` bytes. */
static void grow_case(const struct grow_case *c, size_t capsize)
{
    uint32_t cap32 = 0;
    size_t capz = 0, bytes = 0;
    void *cap = capsize == sizeof(uint32_t) ? (void *)&cap32 : (void *)&capz;
    char *p = NULL, *p0;
    size_t cap0, bytes0;
    int rc = c->rc;

#define CAP() (capsize == sizeof(uint32_t) ? (size_t)cap32 : capz)
    if (capsize == sizeof(uint32_t) && c->need > UINT32_MAX)
        rc = EBB_ENOMEM;   /* past what the count holds, whatever memory there is */
    assert_int_equal(ebb__vec_grow(&p, cap, capsize, 3, c->size, EBB_VEC_FIRST, &bytes), 0);
    assert_non_null(p);
    assert_true(CAP() >= 3);
    assert_int_equal(bytes, CAP() * c->size);
    memset(p, 'x', 3 * c->size);
    cap0 = CAP();
    p0 = p;
    bytes0 = bytes;
    assert_int_equal(ebb__vec_grow(&p, cap, capsize, c->need, c->size, EBB_VEC_FIRST, &bytes), rc);
    if (rc == 0) {
        assert_true(CAP() >= c->need);
        assert_true(CAP() >= 2 * cap0);
        assert_int_equal(bytes, CAP() * c->size);
        memset(p, 'y', CAP() * c->size);   /* ASan: all of it is there */
    } else {
        assert_ptr_equal(p, p0);            /* unchanged, still ours */
        assert_int_equal(CAP(), cap0);
        assert_int_equal(bytes, bytes0);
        assert_int_equal(p[3 * c->size - 1], 'x');
    }
#undef CAP
    free(p);
}

static void grow_refuses_what_does_not_fit(void **state)
{
    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(grow_cases); i++) {
        const struct grow_case *c = &grow_cases[i];
        print_message("case %zu: size %zu need %zu\n", i, c->size, c->need);
        grow_case(c, sizeof(uint32_t));
        grow_case(c, sizeof(size_t));
    }
}

/* The untyped form keeps its contract: size_t counts, first growth 16. */
static void grow_untyped(void **state)
{
    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(grow_cases); i++) {
        const struct grow_case *c = &grow_cases[i];
        size_t cap = 0, cap0;
        char *p = NULL, *p0;
        print_message("case %zu: size %zu need %zu\n", i, c->size, c->need);
        assert_int_equal(ebb__grow((void **)&p, &cap, 3, c->size), 0);
        assert_int_equal(cap, 16);
        cap0 = cap;
        p0 = p;
        assert_int_equal(ebb__grow((void **)&p, &cap, c->need, c->size), c->rc);
        if (c->rc == 0) {
            assert_true(cap >= c->need);
        } else {
            assert_ptr_equal(p, p0);
            assert_int_equal(cap, cap0);
        }
        free(p);
    }
}

/* Every small request: what grows is at least asked for and at least
 * doubled, a request already met changes nothing, and the counted bytes
 * are exactly capacity * size all along. */
static void grow_every_small_request(void **state)
{
    (void)state;
    for (size_t size = 1; size <= 24; size += 7) {
        for (size_t start = 0; start <= 40; start++) {
            for (size_t need = 0; need <= 100; need++) {
                uint32_t cap = 0;
                size_t bytes = 0, before;
                char *p = NULL;
                assert_int_equal(ebb__vec_grow(&p, &cap, sizeof(cap), start, size, 4, &bytes), 0);
                assert_true(cap >= start);
                assert_true(start == 0 || cap >= 4);
                assert_int_equal(bytes, (size_t)cap * size);
                before = cap;
                assert_int_equal(ebb__vec_grow(&p, &cap, sizeof(cap), need, size, 4, &bytes), 0);
                if (need <= before) {
                    assert_int_equal(cap, before);
                } else {
                    assert_true(cap >= need);
                    assert_true(cap >= 2 * before);
                    memset(p, 0, (size_t)cap * size);
                }
                assert_int_equal(bytes, (size_t)cap * size);
                free(p);
            }
        }
    }
}

/* ---- the typed macros ---------------------------------------------------- */

struct narrow {               /* a vector counted in 32 bits */
    uint32_t n, cap;
    const char **v;
};

static void vec_push_reserve_free(void **state)
{
    EBB_VEC(int64_t) wide = { 0 };
    struct narrow nv = { 0 };
    size_t bytes = 0;
    int64_t *fields = NULL;
    uint32_t fcap = 0;

    (void)state;
    for (int64_t i = 0; i < 1000; i++)
        assert_int_equal(ebb__vec_push(&wide, i * 3), 0);
    assert_int_equal(wide.n, 1000);
    assert_true(wide.cap >= 1000);
    for (size_t i = 0; i < wide.n; i++)
        assert_int_equal(wide.v[i], (int64_t)i * 3);
    assert_int_equal(ebb__vec_reserve(&wide, 5000), 0);
    assert_true(wide.cap >= 5000);
    assert_int_equal(wide.n, 1000);
    assert_int_equal(ebb__vec_reserve(&wide, SIZE_MAX / 4), EBB_ENOMEM);
    assert_true(wide.cap >= 5000 && wide.v[999] == 999 * 3);
    ebb__vec_free(&wide);
    assert_null(wide.v);
    assert_int_equal(wide.n + wide.cap, 0);

    for (uint32_t i = 0; i < 777; i++) {
        assert_int_equal(ebb__vec_push_counted(&nv, "pod", &bytes), 0);
        assert_int_equal(bytes, nv.cap * sizeof(*nv.v));
    }
    assert_int_equal(nv.n, 777);
    assert_int_equal(nv.cap, 1024);   /* 4, doubling */
    assert_int_equal(ebb__vec_reserve(&nv, (size_t)UINT32_MAX + 1), EBB_ENOMEM);
    assert_int_equal(nv.cap, 1024);
    ebb__vec_free(&nv);

    /* an array kept as separate fields */
    assert_int_equal(ebb__reserve(fields, fcap, 10), 0);
    assert_true(fcap >= 10);
    fields[9] = 1;
    free(fields);
}

/* ---- lists of ids in a map ------------------------------------------------- */

static void idlists_count_what_they_hold(void **state)
{
    struct ebb_map m;
    size_t bytes = 0, held;
    ebb_str a = ebb_str_cstr("zone"), b = ebb_str_cstr("eu-west-1a"), c = ebb_str_cstr("eu-west-1b");
    struct ebb_idlist *l1, *l2;

    (void)state;
    assert_non_null(a);
    ebb__map_init(&m);
    l1 = ebb__idlist_at(&m, a, b, &bytes);
    assert_non_null(l1);
    assert_ptr_equal(ebb__idlist_at(&m, a, b, &bytes), l1);
    l2 = ebb__idlist_at(&m, a, c, &bytes);
    assert_non_null(l2);
    assert_ptr_not_equal(l1, l2);
    for (uint32_t i = 0; i < 100; i++)
        assert_int_equal(ebb__vec_push_counted(l1, i, &bytes), 0);
    assert_int_equal(ebb__vec_push_counted(l2, 7u, &bytes), 0);
    held = m.cap * sizeof(*m.s) + 2 * sizeof(*l1) + (l1->cap + l2->cap) * sizeof(*l1->v);
    assert_int_equal(bytes, held);
    assert_int_equal(l1->v[99], 99);
    ebb__idlists_free(&m);
    ebb_str_release(a);
    ebb_str_release(b);
    ebb_str_release(c);
}

/* ---- the map against a model ------------------------------------------------- */

/* Random puts, replaces and deletes over 600 keys (pairs of interned
 * strings, b NULL or a second string), through growth and tombstones,
 * checked at each step against an array: get, put's *old, del's value,
 * live count; at the end, iteration sees each live key once. */
static void map_follows_a_model(void **state)
{
    enum { K = 600, OPS = 60000 };
    ebb_str ka[K], kb[K];
    void *model[K] = { 0 };
    struct ebb_map m;
    uint32_t seed = 12345;
    size_t live = 0;
    (void)state;

    for (int i = 0; i < K; i++) {
        char buf[32];
        snprintf(buf, sizeof(buf), "pod-%d", i / 2);
        assert_non_null(ka[i] = ebb_str_cstr(buf));
        snprintf(buf, sizeof(buf), "ns-%d", i % 7);
        kb[i] = i % 3 == 0 ? NULL : ebb_str_cstr(buf);
    }
    ebb__map_init(&m);
    for (int op = 0; op < OPS; op++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)((seed >> 8) % K), what = (int)((seed >> 20) % 10);
        void *v = (void *)(uintptr_t)(op + 1), *old = (void *)1;
        if (what < 6) {
            assert_int_equal(ebb__map_put(&m, ka[k], kb[k], v, &old), 0);
            assert_ptr_equal(old, model[k]);
            live += model[k] == NULL;
            model[k] = v;
        } else if (what < 9) {
            assert_ptr_equal(ebb__map_del(&m, ka[k], kb[k]), model[k]);
            live -= model[k] != NULL;
            model[k] = NULL;
        }
        assert_ptr_equal(ebb__map_get(&m, ka[k], kb[k]), model[k]);
        assert_int_equal(m.live, live);
        assert_true(m.cap == 0 || m.used * 4 < m.cap * 3);
    }
    for (int k = 0; k < K; k++)
        assert_ptr_equal(ebb__map_get(&m, ka[k], kb[k]), model[k]);
    size_t seen = 0;
    for (size_t i = 0; i < m.cap; i++) {
        if (!ebb__map_live(&m, i))
            continue;
        int k;
        for (k = 0; k < K && !(ka[k] == m.s[i].a && kb[k] == m.s[i].b); k++)
            ;
        assert_true(k < K);
        assert_ptr_equal(m.s[i].v, model[k]);
        seen++;
    }
    assert_int_equal(seen, live);
    ebb__map_free(&m);
    for (int i = 0; i < K; i++) {
        ebb_str_release(ka[i]);
        ebb_str_release(kb[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grow_refuses_what_does_not_fit),
        cmocka_unit_test(grow_untyped),
        cmocka_unit_test(grow_every_small_request),
        cmocka_unit_test(vec_push_reserve_free),
        cmocka_unit_test(idlists_count_what_they_hold),
        cmocka_unit_test(map_follows_a_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
