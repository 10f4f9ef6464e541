/* argdec.c: the one reader of value trees (policy, plugin args, ebb test
 * files, kubeconfigs): paths, lookups, integers, unknown keys, typed
 * getters and where their errors point. */
#include "fixtures.h"

#include "core/argdec.h"
#include "ebb/val.h"

static struct ebb_val *parse(const char *text)
{
    struct ebb_val *v = NULL;
    struct ebb_error err;

    if (ebb_val_parse(text, strlen(text), "t.yaml", &v, &err) != 0)
        fail_msg("parse failed: %s", err.msg);
    return v;
}

static void paths(void **state)
{
    char buf[16];
    (void)state;
    assert_string_equal(ebb__args_join(buf, sizeof(buf), "", "a"), "a");
    assert_string_equal(ebb__args_join(buf, sizeof(buf), NULL, "a"), "a");
    assert_string_equal(ebb__args_join(buf, sizeof(buf), "a", "b"), "a.b");
    assert_string_equal(ebb__args_index(buf, sizeof(buf), "list", 3), "list[3]");
    /* cut to fit, never overflowing */
    assert_string_equal(ebb__args_join(buf, sizeof(buf), "profiles[0]", "pluginConfig"),
                        "profiles[0].plu");
    assert_string_equal(ebb__args_index(buf, 6, "items", 12), "items");
}

static void lookups_and_types(void **state)
{
    struct ebb_val *m = parse("a: 1\nb: null\nc: [x]\nd: {e: f}\n");
    (void)state;
    assert_non_null(ebb__val_at(m, "a"));
    assert_null(ebb__val_at(m, "b"));          /* null is absent */
    assert_null(ebb__val_at(m, "zz"));
    assert_null(ebb__val_at(ebb__val_at(m, "c"), "x"));   /* not a map */
    assert_string_equal(ebb__val_a(ebb__val_at(m, "a")), "an integer");
    assert_string_equal(ebb__val_a(ebb__val_at(m, "c")), "a list");
    assert_string_equal(ebb__val_a(ebb__val_at(m, "d")), "a map");
    assert_string_equal(ebb__val_a(NULL), "null");
    ebb_val_free(m);
}

static void integers(void **state)
{
    struct ebb_val *m = parse("i: -7\nf: 5.0\nh: 2.5\nbig: 1e20\nexp: 1e21\nhuge: 9.3e18\n"
                              "low: -9.3e18\ns: '5'\n");
    int64_t v = 0;
    (void)state;
    assert_int_equal(ebb__val_int(ebb__val_at(m, "i"), &v), 0);
    assert_int_equal(v, -7);
    assert_int_equal(ebb__val_int(ebb__val_at(m, "f"), &v), 0);
    assert_int_equal(v, 5);
    assert_int_equal(ebb__val_int(ebb__val_at(m, "big"), &v), 0);
    assert_int_equal(v, INT64_MAX);             /* beyond int64: clamped */
    assert_int_equal(ebb__val_int(ebb__val_at(m, "huge"), &v), 0);
    assert_int_equal(v, INT64_MAX);            /* clamped, no overflow */
    assert_int_equal(ebb__val_int(ebb__val_at(m, "low"), &v), 0);
    assert_int_equal(v, INT64_MIN);
    assert_int_equal(ebb__val_int(ebb__val_at(m, "h"), &v), EBB_ESCHEMA);
    assert_int_equal(ebb__val_int(ebb__val_at(m, "exp"), &v), EBB_ESCHEMA);   /* Go's 1e+21 */
    assert_int_equal(ebb__val_int(ebb__val_at(m, "s"), &v), EBB_ESCHEMA);
    assert_int_equal(ebb__val_int(NULL, &v), EBB_ESCHEMA);
    ebb_val_free(m);
}

static void unknown_keys(void **state)
{
    static const char *const known[] = { "name", "args", NULL };
    struct ebb_val *m = parse("name: x\nagrs: {}\nargs: {}\nlimts: 1\n");
    struct ebb_error err;
    size_t i;
    (void)state;
    i = ebb__args_unknown(m, known, 0);
    assert_int_equal(i, 1);
    assert_string_equal(m->u.map.keys[i], "agrs");
    i = ebb__args_unknown(m, known, i + 1);
    assert_string_equal(m->u.map.keys[i], "limts");
    assert_int_equal(ebb__args_unknown(m, known, i + 1), m->u.map.n);
    /* the strict form refuses the first, at its line */
    assert_int_equal(ebb__args_keys(m, "profiles[0]", known, &err), EBB_ESCHEMA);
    assert_int_equal(err.line, 2);
    assert_string_equal(err.field, "profiles[0].agrs");
    ebb_val_free(m);
}

static void getters(void **state)
{
    struct ebb_val *m = parse("s: 1\nb: yes please\nl: [a, 2]\ncount: 3\n");
    struct ebb_error err;
    const char *s;
    const struct ebb_val *l;
    bool b, present;
    int64_t n;
    (void)state;
    assert_int_equal(ebb__args_str(m, "s", "args", &s, &present, &err), EBB_ESCHEMA);
    assert_string_equal(err.msg, "expected a string, got an integer");
    assert_string_equal(err.field, "args.s");
    assert_int_equal(err.line, 1);
    assert_string_equal(err.file, "");
    /* the caller's file goes in, once */
    assert_int_equal(ebb__args_in_file(EBB_ESCHEMA, "kubeconfig", &err), EBB_ESCHEMA);
    assert_string_equal(err.file, "kubeconfig");
    assert_int_equal(ebb__args_in_file(EBB_ESCHEMA, "other", &err), EBB_ESCHEMA);
    assert_string_equal(err.file, "kubeconfig");
    assert_int_equal(ebb__args_bool(m, "b", "", &b, NULL, &err), EBB_ESCHEMA);
    assert_string_equal(err.msg, "expected a boolean, got a string");
    assert_int_equal(ebb__args_strs(m, "l", "", &l, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "l[1]");
    assert_int_equal(err.line, 3);
    assert_int_equal(ebb__args_int(m, "count", "", 0, 2, &n, NULL, &err), EBB_ESCHEMA);
    assert_string_equal(err.msg, "3 is out of range [0, 2]");
    assert_int_equal(ebb__args_int(m, "count", "", 0, 5, &n, &present, &err), 0);
    assert_true(present);
    assert_int_equal(n, 3);
    assert_int_equal(ebb__args_int(m, "absent", "", 0, 5, &n, &present, &err), 0);
    assert_false(present);
    assert_int_equal(n, 3);   /* untouched */
    ebb_val_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(paths),
        cmocka_unit_test(lookups_and_types),
        cmocka_unit_test(integers),
        cmocka_unit_test(unknown_keys),
        cmocka_unit_test(getters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
