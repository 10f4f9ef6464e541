/* engine/model/json_arena.c: JSON read by yyjson and laid out as cJSON
 * nodes. The tree must be the one cJSON's own parser makes of the same
 * text, for every text both read (json_same.h); the few texts only one of
 * them reads are listed here, each with why. */
#include "fixtures.h"

#include <cjson/cJSON.h>

#include "model/snapshot_int.h"
#include "test/json_same.h"

enum { BOTH, NEITHER, ONLY_CJSON };

struct json_case {
    const char *name, *text;
    int expect;
};

static const struct json_case cases[] = {
    { "pod", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web-7d9c6b9f4-x2lqp\","
      "\"namespace\":\"shop\",\"uid\":\"0b4f5d0e-7a3c-4f7e-9d1a-2f1c9c7e5a10\","
      "\"creationTimestamp\":\"2026-11-20T08:14:03Z\",\"labels\":{\"app\":\"web\","
      "\"pod-template-hash\":\"7d9c6b9f4\"},\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
      "\"kind\":\"ReplicaSet\",\"name\":\"web-7d9c6b9f4\",\"uid\":\"5c1e0b1a-3d2f-4e5a-8b7c-"
      "9d0e1f2a3b4c\",\"controller\":true,\"blockOwnerDeletion\":true}],\"managedFields\":[{"
      "\"manager\":\"kube-controller-manager\",\"operation\":\"Update\",\"fieldsV1\":{\"f:metadata\":"
      "{\"f:labels\":{\".\":{},\"f:app\":{}}}}}]},\"spec\":{\"containers\":[{\"name\":\"web\","
      "\"image\":\"registry.example.com/shop/web:1.4.2\",\"resources\":{\"requests\":{\"cpu\":"
      "\"250m\",\"memory\":\"256Mi\"},\"limits\":{\"memory\":\"512Mi\"}},\"ports\":[{"
      "\"containerPort\":8080,\"protocol\":\"TCP\"}]}],\"nodeName\":\"node-a-017\","
      "\"priority\":0,\"terminationGracePeriodSeconds\":30,\"tolerations\":[{\"key\":"
      "\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
      "\"tolerationSeconds\":300}]},\"status\":{\"phase\":\"Running\",\"qosClass\":\"Burstable\","
      "\"containerStatuses\":[{\"name\":\"web\",\"ready\":true,\"restartCount\":3,\"state\":"
      "{\"running\":{\"startedAt\":\"2026-11-20T08:14:09Z\"}},\"lastState\":{}}]}}", BOTH },
    { "managedFields left out, a watch event's too",
      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"managedFields\":[{"
      "\"manager\":\"kubectl\",\"fieldsV1\":{\"f:spec\":{}}}],\"uid\":\"u\"}}}", BOTH },
    { "managedFields the only member", "{\"metadata\":{\"managedFields\":[]}}", BOTH },
    { "managedFields twice, last", "{\"metadata\":{\"a\":1,\"managedFields\":1,\"managedFields\":{}}}",
      BOTH },
    { "managedFields elsewhere kept", "{\"spec\":{\"managedFields\":[1]},\"metadata\":[{"
      "\"managedFields\":2}]}", BOTH },
    { "pretty, CRLF", "{\r\n  \"a\" : [ 1 , 2 ] ,\r\n\t\"b\" : { }\r\n}", BOTH },
    { "empty containers", "{\"a\":{},\"b\":[],\"c\":[[],[{}]]}", BOTH },
    { "duplicate keys, order kept", "{\"a\":1,\"b\":2,\"a\":3}", BOTH },
    { "literals", "[true,false,null]", BOTH },
    { "integers", "[0,-0,7,-7,2147483647,2147483648,-2147483648,-2147483649,"
      "9007199254740993,9223372036854775807,-9223372036854775808,18446744073709551615]", BOTH },
    { "past 64 bits", "[18446744073709551616,-9223372036854775809,123456789012345678901234567890]",
      BOTH },
    { "reals", "[1.5,-0.0,1e3,1E-3,2.5e+2,0.1,3.141592653589793,1e308,4.9e-324,1e-400]", BOTH },
    { "past a double", "[1e999,-1e999]", BOTH },
    { "escapes", "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\",\"\\u00e9\\u4e2d\",\"\\ud83d\\ude00\"]", BOTH },
    { "invalid UTF-8 kept for the decoder", "{\"a\":\"\xff\xfe\",\"\xc3\":1}", BOTH },
    { "NUL escape cuts the string", "{\"a\":\"x\\u0000y\"}", BOTH },
    { "BOM", "\xef\xbb\xbf{\"a\":1}", BOTH },
    { "value then more", "{\"a\":1} {\"b\":2}", BOTH },
    { "scalar root", "\"just a string\"", BOTH },
    { "raw control bytes in a string", "[\"a\tb\nc\x01\"]", BOTH },
    { "not closed", "{\"a\":1", NEITHER },
    { "no value", "{\"a\":}", NEITHER },
    { "no colon", "{\"a\" 1}", NEITHER },
    { "bad literal", "[tru]", NEITHER },
    { "string not closed", "[\"abc]", NEITHER },
    { "bad escape", "[\"\\q\"]", NEITHER },
    { "lone high surrogate", "[\"\\ud800\"]", NEITHER },
    { "NaN", "[NaN]", NEITHER },
    { "empty", "", NEITHER },
    /* cJSON's own parser is laxer than JSON here; no server writes these */
    { "leading zero", "[01]", ONLY_CJSON },
    { "bare fraction", "[-.5]", ONLY_CJSON },
    { "control byte as whitespace", "\x01{\"a\":1}", ONLY_CJSON },
    { "bad hex (cJSON: U+0000)", "[\"\\u12g4\"]", ONLY_CJSON },
};

static void check(struct ebb_json_arena *a, const char *name, const char *text, size_t len,
                  int expect)
{
    const char *end_c = NULL, *end_y = NULL;
    cJSON *c = cJSON_ParseWithLengthOpts(text, len, &end_c, false);
    cJSON *y = ebb__json_arena_parse_raw(a, text, len, &end_y);

    print_message("# %s\n", name);
    if (c != NULL)
        json_strip_managed(c);
    switch (expect) {
    case BOTH:
        assert_non_null(c);
        assert_non_null(y);
        assert_true(json_well_formed(y, 0));
        assert_true(json_same(y, c));
        assert_ptr_equal(end_y, end_c);
        break;
    case NEITHER:
        assert_null(c);
        assert_null(y);
        assert_false(a->oom);
        assert_false(a->over);
        break;
    case ONLY_CJSON:
        assert_non_null(c);
        assert_null(y);
        break;
    }
    cJSON_Delete(c);
    ebb_json_arena_reset(a);
}

static void test_same_tree_as_cjson(void **state)
{
    struct ebb_json_arena a = { 0 };
    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check(&a, cases[i].name, cases[i].text, strlen(cases[i].text), cases[i].expect);
    ebb__json_arena_release(&a);
}

/* Values inside the tree: what the decoders read off it. */
static void test_values(void **state)
{
    struct ebb_json_arena a = { 0 };
    const char *t = "{\"n\":2147483648,\"m\":-3,\"s\":\"x\\u0000y\",\"d\":1,\"d\":2,\"inf\":1e999}";
    cJSON *j;
    (void)state;

    assert_non_null(j = ebb__json_arena_parse_raw(&a, t, strlen(t), NULL));
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "n")->valueint, 2147483647);
    assert_true(cJSON_GetObjectItemCaseSensitive(j, "n")->valuedouble == 2147483648.0);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "m")->valueint, -3);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "s")->valuestring, "x");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "d")->valueint, 1);
    assert_true(isinf(cJSON_GetObjectItemCaseSensitive(j, "inf")->valuedouble));
    {
        const char *ev = "{\"object\":{\"metadata\":{\"managedFields\":[{\"manager\":\"m\"}],"
                         "\"name\":\"web-1\"},\"spec\":{\"managedFields\":true}}}";
        cJSON *o, *meta;
        assert_non_null(o = ebb__json_arena_parse_raw(&a, ev, strlen(ev), NULL));
        meta = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "object"), "metadata");
        assert_null(cJSON_GetObjectItemCaseSensitive(meta, "managedFields"));
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(meta, "name")->valuestring, "web-1");
        assert_true(meta->child->prev == meta->child);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "object"), "spec"),
            "managedFields")));
    }
    /* cJSON appends through the first member's prev */
    assert_true(cJSON_AddNumberToObject(j, "added", 5) != NULL);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "added")->valueint, 5);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "added");   /* malloc'd, not the arena's */
    ebb__json_arena_release(&a);
}

/* As deep as cJSON reads and no deeper: a tree that is walked recursively
 * (cJSON_Duplicate, cJSON_Print) stays within CJSON_NESTING_LIMIT. */
static void test_nesting(void **state)
{
    struct ebb_json_arena a = { 0 };
    (void)state;

    for (int depth = CJSON_NESTING_LIMIT; depth <= CJSON_NESTING_LIMIT + 1; depth++) {
        char *t = malloc(2 * (size_t)depth + 1);
        assert_non_null(t);
        memset(t, '[', (size_t)depth);
        memset(t + depth, ']', (size_t)depth);
        t[2 * depth] = '\0';
        check(&a, depth > CJSON_NESTING_LIMIT ? "too deep" : "deepest", t, 2 * (size_t)depth,
              depth > CJSON_NESTING_LIMIT ? NEITHER : BOTH);
        free(t);
    }
    ebb__json_arena_release(&a);
}

/* Every fixture of the repository read both ways: real objects of every
 * kind ebb reads. */
static void test_fixtures(void **state)
{
    const char *files[] = { "spec/fixtures/kubectl-list.json", "spec/fixtures/demo-cluster.json" };
    struct ebb_json_arena a = { 0 };
    (void)state;

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        size_t n = 0;
        char *t = fixture_read(files[i], &n);
        check(&a, files[i], t, n, BOTH);
        free(t);
    }
    ebb__json_arena_release(&a);
}

/* The snapshot's extent scanner (64 bytes a step) against the same rules
 * byte by byte: brackets and quotes in strings, escapes, newlines, every
 * alignment to a 64-byte block, texts that end inside the value. */
static void extent_cases(void)
{
    static const char *texts[] = {
        "{}",
        "[[],{}]",
        "{\"a\":\"}\",\"b\":\"]]]\",\"c\":[1,2,{\"d\":\"{\"}]}",
        "{\"esc\":\"a\\\"}\\\\\",\"x\":[\"\\\\\"]}",
        "{\"multi\nline\":\"a\nb\",\n\"k\": [\n1\n]\n}",
        "{\"open\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
        "{\"not closed\":[1,2",
        "{\"string not closed\":\"abc}",
        "{\"escape at the end\":\"abc\\",
        /* managedFields' keys: escaped quotes and brackets; runs of backslashes */
        "{\"f:status\":{\"k:{\\\"type\\\":\\\"Ready\\\"}\":{\".\":{}},\"f:x\":{}},\"r\":\"\\\\\\\\\\\\\\\"}\\\\\\\\\"}",
        "{\"a\":\"\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\"}\"}",
        "{\"odd\":\"\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\"}]\"}",
    };
    char buf[512];

    for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
        for (size_t pad = 0; pad < 80; pad++) {
            size_t n;
            int nl_a = -1, nl_b = -1;
            long ea, eb;
            /* the same value with `pad` spaces after its first bracket
             * and a following one: every byte meets every block offset */
            n = (size_t)snprintf(buf, sizeof(buf), "%c%*s%s {\"next\":1}", texts[t][0], (int)pad,
                                 "", texts[t] + 1);
            assert_true(n < sizeof(buf));
            for (size_t cut = 1; cut <= n; cut += cut < 8 ? 1 : 7) {
                ea = ebb__json_extent(buf, buf + cut, &nl_a);
                eb = json_extent_bytes(buf, buf + cut, &nl_b);
                assert_int_equal(ea, eb);
                if (ea > 0)
                    assert_int_equal(nl_a, nl_b);
            }
            ea = ebb__json_extent(buf, buf + n, &nl_a);
            assert_int_equal(ea, json_extent_bytes(buf, buf + n, &nl_b));
            assert_true((t >= 6 && t <= 8) || (ea > 0 && memcmp(buf + ea, " {\"next\":1}", 11) == 0));
            /* in pieces, the state carried from one to the next (a LIST read
             * as it arrives) */
            for (size_t piece = 1; piece <= 130; piece += piece < 4 ? 1 : 21) {
                struct ebb_json_scan st = { 0, 0, false, false };
                long at = -1;
                for (size_t off = 0; off < n && at < 0; off += piece) {
                    size_t k = n - off < piece ? n - off : piece;
                    long r = ebb__json_scan(&st, buf + off, k);
                    if (r >= 0)
                        at = (long)off + r;
                }
                assert_int_equal(at < 0 ? 0 : at, eb = json_extent_bytes(buf, buf + n, &nl_b));
            }
        }
    }
}

/* Both ways of reading a block: 32 bytes a step where the processor has
 * AVX2, 16 bytes a step (forced here) everywhere. */
static void test_extent(void **state)
{
    int avx2 = ebb__json_scan_avx2;
    (void)state;

    print_message("# 32 bytes a step: %s\n", avx2 ? "yes" : "not on this processor");
    ebb__json_scan_avx2 = 0;
    extent_cases();
    ebb__json_scan_avx2 = avx2;
    extent_cases();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_tree_as_cjson),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_nesting),
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_extent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
