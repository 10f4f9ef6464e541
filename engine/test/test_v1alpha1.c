/* v1alpha1.c: the YAML that `ebb convert` prints reads back as the very
 * tree it was made from, whatever the strings hold (the class: a scalar
 * that YAML would read as another type or another string), and the
 * conversion loses nothing and leaks nothing when it fails. */
#include "fixtures.h"

#include "ebb/v1alpha1.h"

static struct ebb_val *parse(const char *text)
{
    struct ebb_val *v = NULL;
    struct ebb_error err;

    if (ebb_val_parse(text, strlen(text), "t.yaml", &v, &err) != 0)
        fail_msg("%s:%d: %s", err.file, err.line, err.msg);
    return v;
}

static void assert_round_trip(const struct ebb_val *v)
{
    struct ebb_val *back;
    char *yaml = NULL;
    size_t len;

    assert_int_equal(ebb_val_to_yaml(v, &yaml, &len), 0);
    assert_int_equal(strlen(yaml), len);
    back = parse(yaml);
    if (!ebb_val_equal(v, back))
        fail_msg("does not read back the same:\n%s", yaml);
    ebb_val_free(back);
    free(yaml);
}

/* Strings YAML 1.1 would read as booleans, numbers, null, or as structure;
 * empty, blank, quoted, multi-line, non-ASCII. */
static void test_strings_read_back(void **state)
{
    static const char *const tricky[] = {
        "", " ", "true", "False", "yes", "NO", "on", "off", "y", "~", "null", "Null", "5", "-1",
        "0x1F", "0o17", "1_000", "1.5", ".inf", "-.Inf", ".nan", "1e3", "a: b", "- x", "#c",
        "a #c", "key:", "[a]", "{a: 1}", "*alias", "&anchor", "!tag", "%d", "@x", "`x`", "'q'",
        "\"q\"", "a\nb", "trailing\n", " lead", "tail ", "tab\tin", "ümlaut ☃", "<<", "=",
        "node-role.kubernetes.io/worker=", "a,b", "|", ">", "?", "? x", "2026-01-02",
        "12:30:00", "0755", "+1",
    };
    struct ebb_val *map = ebb_val_new(EBB_VAL_MAP, 1), *seq = ebb_val_new(EBB_VAL_SEQ, 1);

    (void)state;
    for (size_t i = 0; i < sizeof(tricky) / sizeof(tricky[0]); i++) {
        assert_int_equal(ebb_val_seq_push(seq, ebb_val_new_string(tricky[i], 1)), 0);
        /* as keys too */
        assert_int_equal(ebb_val_map_put(map, tricky[i], ebb_val_new_string(tricky[i], 1)), 0);
    }
    assert_int_equal(ebb_val_map_put(map, "list", seq), 0);
    assert_round_trip(map);
    ebb_val_free(map);
}

static void test_scalars_and_nesting(void **state)
{
    struct ebb_val *v = parse("a: 1\nb: -2.5\nc: true\nd: null\ne: []\nf: {}\n"
                              "g: [1, [2, {h: [x]}]]\ni: 9223372036854775807\nj: 0.1\n");

    (void)state;
    assert_round_trip(v);
    ebb_val_free(v);
}

/* Every v1alpha1 fixture converts, and its YAML reads back the same. */
static void test_converted_policy_reads_back(void **state)
{
    struct ebb_val *root = NULL, *conv = NULL;
    struct ebb_error err;

    (void)state;
    assert_int_equal(ebb_val_load("spec/fixtures/policies/v1alpha1.yaml", &root, &err), 0);
    assert_true(ebb_v1alpha1_is(root));
    assert_int_equal(ebb_v1alpha1_convert(root, "p.yaml", NULL, NULL, &conv, &err), 0);
    assert_round_trip(conv);
    /* the profile carries the line of its strategy */
    assert_int_equal(ebb_val_at(conv, "profiles[0]")->line, 4);
    ebb_val_free(conv);
    ebb_val_free(root);
}

/* A failure deep in the conversion frees what was built (LeakSanitizer). */
static void test_failure_frees(void **state)
{
    static const char *const bad[] = {
        "apiVersion: descheduler/v1alpha1\nkind: DeschedulerPolicy\nstrategies:\n"
        "  RemoveDuplicates: {enabled: true}\n  PodLifeTime:\n    enabled: true\n"
        "    params: {podLifeTime: {states: [1]}}\n",
        "apiVersion: descheduler/v1alpha1\nkind: DeschedulerPolicy\nstrategies:\n"
        "  LowNodeUtilization:\n    enabled: true\n    params: {thresholdPriority: 1, "
        "thresholdPriorityClassName: x}\n",
        "apiVersion: descheduler/v1alpha1\nkind: DeschedulerPolicy\nstrategies:\n"
        "  RemoveFailedPods:\n    enabled: true\n    params: {failedPods: {reasons: x}}\n",
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ebb_val *root = parse(bad[i]), *conv = NULL;
        struct ebb_error err;
        assert_int_equal(ebb_v1alpha1_convert(root, "p.yaml", NULL, NULL, &conv, &err),
                         EBB_ESCHEMA);
        assert_null(conv);
        assert_string_equal(err.file, "p.yaml");
        assert_true(err.line > 3);
        ebb_val_free(root);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings_read_back),
        cmocka_unit_test(test_scalars_and_nesting),
        cmocka_unit_test(test_converted_policy_reads_back),
        cmocka_unit_test(test_failure_frees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
