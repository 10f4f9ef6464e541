/* val.c: YAML/JSON -> value tree, typing, positions, paths, cJSON. */
#include <math.h>

#include "fixtures.h"

#include <cjson/cJSON.h>

#include "ebb/val.h"

static struct ebb_val *parse_ok(const char *text)
{
    struct ebb_val *v = NULL;
    struct ebb_error err;
    int rc = ebb_val_parse(text, strlen(text), "t.yaml", &v, &err);

    if (rc != 0)
        fail_msg("parse failed: %s (line %d): %s", ebb_strerror(rc), err.line, err.msg);
    assert_non_null(v);
    return v;
}

static int parse_err(const char *text, struct ebb_error *err)
{
    struct ebb_val *v = NULL;
    int rc = ebb_val_parse(text, strlen(text), "t.yaml", &v, err);

    assert_null(v);
    return rc;
}

/* ---- scalar typing ------------------------------------------------------------ */

struct scalar_case {
    const char *text;     /* the value after "v: " */
    int type;
    int64_t i;            /* INT; BOOL: 0/1 */
    double f;             /* FLOAT */
    const char *s;        /* STRING */
};

static const struct scalar_case scalar_cases[] = {
    /* YAML 1.1 booleans, only in the spellings go-yaml v2 knows */
    {"true", EBB_VAL_BOOL, 1, 0, NULL},
    {"True", EBB_VAL_BOOL, 1, 0, NULL},
    {"TRUE", EBB_VAL_BOOL, 1, 0, NULL},
    {"yes", EBB_VAL_BOOL, 1, 0, NULL},
    {"Yes", EBB_VAL_BOOL, 1, 0, NULL},
    {"YES", EBB_VAL_BOOL, 1, 0, NULL},
    {"on", EBB_VAL_BOOL, 1, 0, NULL},
    {"ON", EBB_VAL_BOOL, 1, 0, NULL},
    {"y", EBB_VAL_BOOL, 1, 0, NULL},
    {"Y", EBB_VAL_BOOL, 1, 0, NULL},
    {"false", EBB_VAL_BOOL, 0, 0, NULL},
    {"No", EBB_VAL_BOOL, 0, 0, NULL},
    {"off", EBB_VAL_BOOL, 0, 0, NULL},
    {"Off", EBB_VAL_BOOL, 0, 0, NULL},
    {"n", EBB_VAL_BOOL, 0, 0, NULL},
    {"tRUE", EBB_VAL_STRING, 0, 0, "tRUE"},
    {"yEs", EBB_VAL_STRING, 0, 0, "yEs"},
    {"oN", EBB_VAL_STRING, 0, 0, "oN"},
    /* null */
    {"~", EBB_VAL_NULL, 0, 0, NULL},
    {"null", EBB_VAL_NULL, 0, 0, NULL},
    {"Null", EBB_VAL_NULL, 0, 0, NULL},
    {"NULL", EBB_VAL_NULL, 0, 0, NULL},
    {"", EBB_VAL_NULL, 0, 0, NULL},
    {"nULL", EBB_VAL_STRING, 0, 0, "nULL"},
    /* integers: strconv.ParseInt(s, 0, 64) after dropping '_' */
    {"42", EBB_VAL_INT, 42, 0, NULL},
    {"-17", EBB_VAL_INT, -17, 0, NULL},
    {"+5", EBB_VAL_INT, 5, 0, NULL},
    {"0", EBB_VAL_INT, 0, 0, NULL},
    {"-0", EBB_VAL_INT, 0, 0, NULL},
    {"0x1F", EBB_VAL_INT, 31, 0, NULL},
    {"0X1f", EBB_VAL_INT, 31, 0, NULL},
    {"-0x10", EBB_VAL_INT, -16, 0, NULL},
    {"0o17", EBB_VAL_INT, 15, 0, NULL},
    {"017", EBB_VAL_INT, 15, 0, NULL},
    {"0b101", EBB_VAL_INT, 5, 0, NULL},
    {"-0b11", EBB_VAL_INT, -3, 0, NULL},
    {"1_000_000", EBB_VAL_INT, 1000000, 0, NULL},
    {"0x_ff", EBB_VAL_INT, 255, 0, NULL},
    {"9223372036854775807", EBB_VAL_INT, INT64_MAX, 0, NULL},
    {"-9223372036854775808", EBB_VAL_INT, INT64_MIN, 0, NULL},
    /* beyond int64: a uint64 for go-yaml, a float here */
    {"9223372036854775808", EBB_VAL_FLOAT, 0, 9223372036854775808.0, NULL},
    {"-9223372036854775809", EBB_VAL_FLOAT, 0, -9223372036854775809.0, NULL},
    /* floats */
    {"1.5", EBB_VAL_FLOAT, 0, 1.5, NULL},
    {"-2.25", EBB_VAL_FLOAT, 0, -2.25, NULL},
    {"1e3", EBB_VAL_FLOAT, 0, 1000.0, NULL},
    {"6.02E+23", EBB_VAL_FLOAT, 0, 6.02e23, NULL},
    {"1.", EBB_VAL_FLOAT, 0, 1.0, NULL},
    {".5", EBB_VAL_FLOAT, 0, 0.5, NULL},
    {"-.5", EBB_VAL_FLOAT, 0, -0.5, NULL},
    {"+.5e1", EBB_VAL_FLOAT, 0, 5.0, NULL},
    {"1_0.5", EBB_VAL_FLOAT, 0, 10.5, NULL},
    {"08", EBB_VAL_FLOAT, 0, 8.0, NULL},       /* not octal: falls to the float rule */
    {".inf", EBB_VAL_FLOAT, 0, INFINITY, NULL},
    {".Inf", EBB_VAL_FLOAT, 0, INFINITY, NULL},
    {"+.INF", EBB_VAL_FLOAT, 0, INFINITY, NULL},
    {"-.inf", EBB_VAL_FLOAT, 0, -INFINITY, NULL},
    /* strings */
    {".iNf", EBB_VAL_STRING, 0, 0, ".iNf"},
    {"1e400", EBB_VAL_STRING, 0, 0, "1e400"},
    {"0x", EBB_VAL_STRING, 0, 0, "0x"},
    {"12abc", EBB_VAL_STRING, 0, 0, "12abc"},
    {"1.2.3", EBB_VAL_STRING, 0, 0, "1.2.3"},
    {"1:20", EBB_VAL_STRING, 0, 0, "1:20"},
    {"2026-01-02", EBB_VAL_STRING, 0, 0, "2026-01-02"},
    {"2026-01-02T03:04:05Z", EBB_VAL_STRING, 0, 0, "2026-01-02T03:04:05Z"},
    {"_1", EBB_VAL_STRING, 0, 0, "_1"},
    {"+", EBB_VAL_STRING, 0, 0, "+"},
    {"500m", EBB_VAL_STRING, 0, 0, "500m"},
    {"nvidia.com/gpu", EBB_VAL_STRING, 0, 0, "nvidia.com/gpu"},
    {"<<", EBB_VAL_STRING, 0, 0, "<<"},
    /* quoted and block scalars are always strings */
    {"'true'", EBB_VAL_STRING, 0, 0, "true"},
    {"\"42\"", EBB_VAL_STRING, 0, 0, "42"},
    {"''", EBB_VAL_STRING, 0, 0, ""},
    {"\"null\"", EBB_VAL_STRING, 0, 0, "null"},
    {"|\n  42\n", EBB_VAL_STRING, 0, 0, "42\n"},
    {">-\n  yes\n  no\n", EBB_VAL_STRING, 0, 0, "yes no"},
    /* explicit tags */
    {"!!str 42", EBB_VAL_STRING, 0, 0, "42"},
    {"!!str true", EBB_VAL_STRING, 0, 0, "true"},
    {"!!int \"42\"", EBB_VAL_INT, 42, 0, NULL},
    {"!!float 3", EBB_VAL_FLOAT, 0, 3.0, NULL},
    {"!!float '0x10'", EBB_VAL_FLOAT, 0, 16.0, NULL},
    {"!!bool \"yes\"", EBB_VAL_BOOL, 1, 0, NULL},
    {"!!null ''", EBB_VAL_NULL, 0, 0, NULL},
    {"!!timestamp 2026-01-02", EBB_VAL_STRING, 0, 0, "2026-01-02"},
    {"!custom 42", EBB_VAL_STRING, 0, 0, "42"},
    {"! 42", EBB_VAL_STRING, 0, 0, "42"},
};

static void test_scalar_typing(void **state)
{
    for (size_t k = 0; k < sizeof(scalar_cases) / sizeof(scalar_cases[0]); k++) {
        const struct scalar_case *c = &scalar_cases[k];
        char text[128];
        struct ebb_val *root, *v;

        snprintf(text, sizeof(text), "v: %s\n", c->text);
        root = parse_ok(text);
        v = ebb_val_get(root, "v");
        assert_non_null(v);
        if (v->type != c->type)
            fail_msg("%s: got %s, want %s", c->text, ebb_val_type_name(v->type),
                     ebb_val_type_name(c->type));
        switch (c->type) {
        case EBB_VAL_BOOL:
            assert_int_equal(v->u.b, c->i);
            break;
        case EBB_VAL_INT:
            if (v->u.i != c->i)
                fail_msg("%s: got %lld", c->text, (long long)v->u.i);
            break;
        case EBB_VAL_FLOAT:
            if (!(v->u.f == c->f))
                fail_msg("%s: got %.17g want %.17g", c->text, v->u.f, c->f);
            break;
        case EBB_VAL_STRING:
            assert_string_equal(v->u.str.s, c->s);
            assert_int_equal(v->u.str.len, strlen(c->s));
            break;
        }
        ebb_val_free(root);
    }
}

static void test_nan(void **state)
{
    struct ebb_val *root = parse_ok("a: .nan\nb: .NaN\nc: .NAN\nd: .Nan\n");

    assert_int_equal(ebb_val_get(root, "a")->type, EBB_VAL_FLOAT);
    assert_true(isnan(ebb_val_get(root, "a")->u.f));
    assert_true(isnan(ebb_val_get(root, "b")->u.f));
    assert_true(isnan(ebb_val_get(root, "c")->u.f));
    assert_int_equal(ebb_val_get(root, "d")->type, EBB_VAL_STRING);
    ebb_val_free(root);
}

static void test_tag_mismatch(void **state)
{
    struct ebb_error err;

    assert_int_equal(parse_err("a: 1\nlimits:\n  count: !!int abc\n", &err), EBB_EPARSE);
    assert_int_equal(err.line, 3);
    assert_string_equal(err.file, "t.yaml");
    assert_string_equal(err.field, "limits.count");
    assert_string_equal(err.msg, "cannot decode !!str \"abc\" as !!int");

    assert_int_equal(parse_err("x: !!int 1.5\n", &err), EBB_EPARSE);
    assert_string_equal(err.msg, "cannot decode !!float \"1.5\" as !!int");
    assert_int_equal(parse_err("x: !!bool 1\n", &err), EBB_EPARSE);
    assert_string_equal(err.msg, "cannot decode !!int \"1\" as !!bool");
    assert_int_equal(parse_err("x: !!binary aGk=\n", &err), EBB_EPARSE);
    assert_string_equal(err.msg, "the !!binary tag is not supported");
}

/* Keys become JSON keys as sigs.k8s.io/yaml converts them. */
static void test_key_conversion(void **state)
{
    struct ebb_val *root = parse_ok("yes: a\n1: b\n0x10: c\n1.5: d\n1e6: e\n100.0: f\n"
                                    "'on': g\n\"2\": h\nn: i\n");
    struct ebb_error err;

    assert_int_equal(root->u.map.n, 9);
    assert_string_equal(root->u.map.keys[0], "true");
    assert_string_equal(root->u.map.keys[1], "1");
    assert_string_equal(root->u.map.keys[2], "16");
    assert_string_equal(root->u.map.keys[3], "1.5");
    assert_string_equal(root->u.map.keys[4], "1e+06");
    assert_string_equal(root->u.map.keys[5], "100");
    assert_string_equal(root->u.map.keys[6], "on");
    assert_string_equal(root->u.map.keys[7], "2");
    assert_string_equal(root->u.map.keys[8], "false");   /* "n" is a YAML 1.1 boolean */
    ebb_val_free(root);

    assert_int_equal(parse_err("a: 1\n~: x\n", &err), EBB_EPARSE);
    assert_int_equal(err.line, 2);
    assert_string_equal(err.msg, "unsupported map key of type null");
    assert_int_equal(parse_err("a: 1\n? [x, y]\n: z\n", &err), EBB_EPARSE);
    assert_int_equal(err.line, 2);
    assert_string_equal(err.msg, "unsupported map key of type list");
}

/* ---- positions ------------------------------------------------------------------- */

static void test_positions(void **state)
{
    const char *text =
        "a: 1\n"                 /* 1 */
        "b:\n"                   /* 2 */
        "  c: [x, \"y\"]\n"      /* 3 */
        "  d: 'q'\n"             /* 4 */
        "list:\n"                /* 5 */
        "  - one\n"              /* 6 */
        "  - k: v\n"             /* 7 */
        "    k2: v2\n"           /* 8 */
        "empty:\n"               /* 9 */
        "last: z\n";             /* 10 */
    struct ebb_val *root = parse_ok(text), *b, *c, *list, *item;

    assert_int_equal(root->type, EBB_VAL_MAP);
    assert_int_equal(root->line, 1);
    assert_int_equal(root->col, 1);
    assert_int_equal(ebb_val_key_line(root, "a"), 1);
    assert_int_equal(ebb_val_get(root, "a")->col, 4);
    b = ebb_val_get(root, "b");
    assert_int_equal(ebb_val_key_line(root, "b"), 2);
    assert_int_equal(b->line, 3);
    assert_int_equal(b->col, 3);
    c = ebb_val_get(b, "c");
    assert_int_equal(c->type, EBB_VAL_SEQ);
    assert_int_equal(c->line, 3);
    assert_int_equal(c->col, 6);
    assert_int_equal(c->u.seq.items[0]->col, 7);
    assert_int_equal(c->u.seq.items[1]->col, 10);
    assert_int_equal(ebb_val_get(b, "d")->line, 4);
    assert_int_equal(ebb_val_get(b, "d")->col, 6);
    list = ebb_val_get(root, "list");
    assert_int_equal(list->line, 6);
    assert_int_equal(list->col, 3);
    assert_int_equal(list->u.seq.items[0]->line, 6);
    assert_int_equal(list->u.seq.items[0]->col, 5);
    item = list->u.seq.items[1];
    assert_int_equal(item->type, EBB_VAL_MAP);
    assert_int_equal(item->line, 7);
    assert_int_equal(item->col, 5);
    assert_int_equal(ebb_val_key_line(item, "k2"), 8);
    /* an empty value is null, placed on its key's line */
    assert_int_equal(ebb_val_get(root, "empty")->type, EBB_VAL_NULL);
    assert_int_equal(ebb_val_get(root, "empty")->line, 9);
    assert_int_equal(ebb_val_key_line(root, "last"), 10);
    assert_int_equal(ebb_val_key_line(root, "nope"), 0);
    assert_null(ebb_val_get(root, "nope"));
    assert_null(ebb_val_get(list, "a"));
    ebb_val_free(root);
}

/* ---- anchors, aliases, merges -------------------------------------------------------- */

static void test_aliases(void **state)
{
    const char *text =
        "base: &b {x: 1, z: [1, 2]}\n"   /* 1 */
        "copy: *b\n"                     /* 2 */
        "s: &s hello\n"                  /* 3 */
        "t: *s\n"                        /* 4 */
        "list:\n"                        /* 5 */
        "  - &item {num: 1}\n"           /* 6 */
        "  - *item\n"                    /* 7 */
        "re: &b 7\n"                     /* 8 */
        "again: *b\n";                   /* 9 */
    struct ebb_val *root = parse_ok(text), *copy, *t, *list;

    copy = ebb_val_get(root, "copy");
    assert_int_equal(copy->type, EBB_VAL_MAP);
    assert_int_equal(copy->line, 2);          /* where the alias is */
    assert_int_equal(ebb_val_get(copy, "x")->u.i, 1);
    assert_int_equal(ebb_val_get(copy, "z")->u.seq.n, 2);
    assert_ptr_not_equal(copy, ebb_val_get(root, "base"));   /* a copy, not shared */
    t = ebb_val_get(root, "t");
    assert_string_equal(t->u.str.s, "hello");
    assert_int_equal(t->line, 4);
    list = ebb_val_get(root, "list");
    assert_int_equal(list->u.seq.n, 2);
    assert_int_equal(ebb_val_get(list->u.seq.items[1], "num")->u.i, 1);
    /* a redefined anchor: the latest definition wins */
    assert_int_equal(ebb_val_get(root, "again")->type, EBB_VAL_INT);
    assert_int_equal(ebb_val_get(root, "again")->u.i, 7);
    ebb_val_free(root);
}

static void test_alias_errors(void **state)
{
    struct ebb_error err;
    char *bomb;
    size_t off = 0;

    assert_int_equal(parse_err("a: 1\nb: *nope\n", &err), EBB_EPARSE);
    assert_int_equal(err.line, 2);
    assert_string_equal(err.field, "b");
    assert_string_equal(err.msg, "unknown anchor 'nope' referenced");
    /* an anchor cannot be used inside its own value */
    assert_int_equal(parse_err("a: &x [1, *x]\n", &err), EBB_EPARSE);
    assert_string_equal(err.msg, "unknown anchor 'x' referenced");

    /* billion laughs: 10 levels of 10 aliases */
    bomb = malloc(4096);
    assert_non_null(bomb);
    off += (size_t)sprintf(bomb + off, "l0: &l0 [lol]\n");
    for (int i = 1; i < 10; i++) {
        off += (size_t)sprintf(bomb + off, "l%d: &l%d [", i, i);
        for (int j = 0; j < 10; j++)
            off += (size_t)sprintf(bomb + off, "%s*l%d", j ? ", " : "", i - 1);
        off += (size_t)sprintf(bomb + off, "]\n");
    }
    assert_int_equal(parse_err(bomb, &err), EBB_EPARSE);
    assert_non_null(strstr(err.msg, "excessive aliasing"));
    free(bomb);
}

static void test_merge_keys(void **state)
{
    const char *text =
        "base: &base\n"          /* 1 */
        "  a: 1\n"               /* 2 */
        "  b: 2\n"               /* 3 */
        "other: &other\n"        /* 4 */
        "  b: 20\n"              /* 5 */
        "  c: 30\n"              /* 6 */
        "m1:\n"                  /* 7 */
        "  <<: *base\n"          /* 8 */
        "  b: 3\n"               /* 9 */
        "m2:\n"                  /* 10 */
        "  b: 4\n"               /* 11 */
        "  <<: *base\n"          /* 12 */
        "m3:\n"                  /* 13 */
        "  <<: [*other, *base]\n"/* 14 */
        "m4:\n"                  /* 15 */
        "  \"<<\": literal\n"    /* 16 */
        "m5:\n"                  /* 17 */
        "  <<: {z: 9}\n"         /* 18 */
        "  w: 8\n";              /* 19 */
    struct ebb_val *root = parse_ok(text), *m;

    m = ebb_val_get(root, "m1");
    assert_int_equal(m->u.map.n, 2);
    assert_string_equal(m->u.map.keys[0], "a");
    assert_int_equal(ebb_val_get(m, "a")->u.i, 1);
    assert_int_equal(ebb_val_key_line(m, "a"), 2);   /* merged keys keep their line */
    assert_int_equal(ebb_val_get(m, "b")->u.i, 3);   /* an explicit key wins */
    assert_int_equal(ebb_val_key_line(m, "b"), 9);

    m = ebb_val_get(root, "m2");
    assert_int_equal(m->u.map.n, 2);
    assert_int_equal(ebb_val_get(m, "b")->u.i, 4);   /* ...even written before "<<" */
    assert_int_equal(ebb_val_get(m, "a")->u.i, 1);

    m = ebb_val_get(root, "m3");
    assert_int_equal(m->u.map.n, 3);
    assert_int_equal(ebb_val_get(m, "b")->u.i, 20);  /* earlier maps in the list win */
    assert_int_equal(ebb_val_get(m, "c")->u.i, 30);
    assert_int_equal(ebb_val_get(m, "a")->u.i, 1);

    m = ebb_val_get(root, "m4");
    assert_string_equal(ebb_val_get(m, "<<")->u.str.s, "literal");   /* quoted: a plain key */

    m = ebb_val_get(root, "m5");
    assert_int_equal(m->u.map.n, 2);
    assert_int_equal(ebb_val_get(m, "z")->u.i, 9);
    assert_int_equal(ebb_val_get(m, "w")->u.i, 8);
    /* the anchored maps are unchanged */
    assert_int_equal(ebb_val_get(root, "base")->u.map.n, 2);
    ebb_val_free(root);
}

static void test_merge_errors(void **state)
{
    struct ebb_error err;

    assert_int_equal(parse_err("a:\n  <<: 5\n", &err), EBB_EPARSE);
    assert_int_equal(err.line, 2);
    assert_string_equal(err.msg, "map merge requires a map or a list of maps, got an integer");
    assert_int_equal(parse_err("a:\n  <<: [{x: 1}, 2]\n", &err), EBB_EPARSE);
    assert_string_equal(err.msg,
                        "map merge requires a map or a list of maps, got a list holding an integer");
}

static void test_duplicate_keys(void **state)
{
    struct ebb_error err;
    char buf[1024];

    assert_int_equal(parse_err("top:\n  list:\n    - a: 1\n      b: 2\n      a: 3\n", &err),
                     EBB_EPARSE);
    assert_int_equal(err.code, EBB_EPARSE);
    assert_int_equal(err.line, 5);
    assert_string_equal(err.field, "top.list[0].a");
    assert_string_equal(err.msg, "key \"a\" is defined twice (lines 3 and 5)");
    ebb_error_format(&err, buf, sizeof(buf));
    assert_string_equal(buf, "t.yaml:5: top.list[0].a: key \"a\" is defined twice (lines 3 and 5)");
    /* keys that only look alike after conversion are duplicates too */
    assert_int_equal(parse_err("1: a\n0x1: b\n", &err), EBB_EPARSE);
    assert_string_equal(err.msg, "key \"1\" is defined twice (lines 1 and 2)");
    /* a dotted key is quoted in the path */
    assert_int_equal(parse_err("r:\n  nvidia.com/gpu: 1\n  nvidia.com/gpu: 2\n", &err),
                     EBB_EPARSE);
    assert_string_equal(err.field, "r[\"nvidia.com/gpu\"]");
}

/* ---- errors from libyaml ---------------------------------------------------------- */

static void test_syntax_errors(void **state)
{
    struct ebb_error err;
    char buf[1024];

    assert_int_equal(parse_err("a: 1\nb: c: d\n", &err), EBB_EPARSE);
    assert_int_equal(err.line, 2);
    assert_string_equal(err.file, "t.yaml");
    assert_string_equal(err.msg, "mapping values are not allowed in this context at column 5");
    ebb_error_format(&err, buf, sizeof(buf));
    assert_string_equal(buf, "t.yaml:2: mapping values are not allowed in this context at column 5");

    assert_int_equal(parse_err("a:\n  b: [1, 2\n  c: 3\n", &err), EBB_EPARSE);
    assert_int_equal(err.line, 3);
    assert_string_equal(err.msg, "did not find expected ',' or ']' at column 4 "
                                 "(while parsing a flow sequence at line 2)");

    /* an unterminated construct: the line where it opened */
    assert_int_equal(parse_err("a: 1\nb: \"open\n\n", &err), EBB_EPARSE);
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.msg, "while scanning a quoted scalar at line 2"));

    assert_int_equal(parse_err("a:\n\tb: 1\n", &err), EBB_EPARSE);
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.msg, "found character that cannot start any token"));

    /* invalid UTF-8 (a reader error, located by byte offset) */
    assert_int_equal(parse_err("a: 1\nb: \xff\xfe\n", &err), EBB_EPARSE);
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.msg, "invalid leading UTF-8 octet"));
}

static void test_depth_limit(void **state)
{
    struct ebb_error err;
    char *deep = malloc(2000);

    assert_non_null(deep);
    memset(deep, '[', 600);
    memset(deep + 600, ']', 600);
    deep[1200] = '\0';
    assert_int_equal(parse_err(deep, &err), EBB_EPARSE);
    assert_non_null(strstr(err.msg, "nested too deeply"));
    deep[0] = '\0';
    free(deep);

    /* 100 levels are fine */
    {
        char ok[256];
        struct ebb_val *v;
        memset(ok, '[', 100);
        memset(ok + 100, ']', 100);
        ok[200] = '\0';
        v = parse_ok(ok);
        assert_int_equal(v->type, EBB_VAL_SEQ);
        ebb_val_free(v);
    }
}

/* ---- documents, JSON, files ------------------------------------------------------------- */

static void test_empty_documents(void **state)
{
    struct ebb_val *v = parse_ok("");

    assert_int_equal(v->type, EBB_VAL_NULL);
    ebb_val_free(v);
    v = parse_ok("# only a comment\n");
    assert_int_equal(v->type, EBB_VAL_NULL);
    ebb_val_free(v);
    v = parse_ok("---\n...\n");
    assert_int_equal(v->type, EBB_VAL_NULL);
    ebb_val_free(v);
}

static void test_parse_all(void **state)
{
    const char *text = "a: 1\n---\n- x\n- y\n---\n---\nb: &k 2\n";
    struct ebb_val **docs = NULL, *first;
    struct ebb_error err;
    size_t n = 0;

    assert_int_equal(ebb_val_parse_all(text, strlen(text), "m.yaml", &docs, &n, &err), 0);
    assert_int_equal(n, 4);
    assert_int_equal(docs[0]->type, EBB_VAL_MAP);
    assert_int_equal(docs[1]->type, EBB_VAL_SEQ);
    assert_int_equal(docs[1]->line, 3);
    assert_int_equal(docs[2]->type, EBB_VAL_NULL);
    assert_int_equal(ebb_val_get(docs[3], "b")->u.i, 2);
    assert_int_equal(ebb_val_key_line(docs[3], "b"), 7);
    for (size_t i = 0; i < n; i++)
        ebb_val_free(docs[i]);
    free(docs);

    /* ebb_val_parse takes the first document */
    first = parse_ok(text);
    assert_int_equal(ebb_val_get(first, "a")->u.i, 1);
    ebb_val_free(first);

    /* anchors do not cross documents; an error frees what was built */
    text = "a: &x 1\n---\nb: *x\n";
    assert_int_equal(ebb_val_parse_all(text, strlen(text), "m.yaml", &docs, &n, &err),
                     EBB_EPARSE);
    assert_null(docs);
    assert_int_equal(n, 0);
    assert_int_equal(err.line, 3);
    assert_string_equal(err.file, "m.yaml");

    assert_int_equal(ebb_val_parse_all("", 0, "e.yaml", &docs, &n, &err), 0);
    assert_int_equal(n, 0);
    free(docs);
    assert_int_equal(ebb_val_parse_all(NULL, 0, "e.yaml", &docs, &n, &err), EBB_EINVAL);
}

static void test_json(void **state)
{
    const char *text = "{\n\t\"a\": [1, 2.5, \"x\", true, null, -3e2],\n\t\"b\": {\"c\": \"yes\"}\n}\n";
    struct ebb_val *root = parse_ok(text), *a;

    a = ebb_val_get(root, "a");
    assert_int_equal(a->u.seq.n, 6);
    assert_int_equal(a->u.seq.items[0]->type, EBB_VAL_INT);
    assert_int_equal(a->u.seq.items[1]->type, EBB_VAL_FLOAT);
    assert_int_equal(a->u.seq.items[2]->type, EBB_VAL_STRING);
    assert_int_equal(a->u.seq.items[3]->type, EBB_VAL_BOOL);
    assert_int_equal(a->u.seq.items[4]->type, EBB_VAL_NULL);
    assert_true(a->u.seq.items[5]->u.f == -300.0);
    assert_int_equal(a->line, 2);
    /* a JSON string stays a string, whatever it spells */
    assert_string_equal(ebb_val_get(ebb_val_get(root, "b"), "c")->u.str.s, "yes");
    assert_int_equal(ebb_val_key_line(root, "b"), 3);
    ebb_val_free(root);
}

static void test_load(void **state)
{
    struct ebb_val *v = NULL;
    struct ebb_error err;

    assert_int_equal(ebb_val_load("spec/fixtures/policies/configmap-example.yaml", &v, &err), 0);
    assert_string_equal(ebb_val_get(v, "kind")->u.str.s, "DeschedulerPolicy");
    ebb_val_free(v);
    v = NULL;
    assert_int_equal(ebb_val_load("spec/fixtures/policies/no-such-file.yaml", &v, &err), EBB_EIO);
    assert_null(v);
    assert_string_equal(err.file, "spec/fixtures/policies/no-such-file.yaml");
    assert_non_null(strstr(err.msg, "No such file"));
    assert_int_equal(ebb_val_load("spec/fixtures/policies/bad/not-yaml.yaml", &v, &err),
                     EBB_EPARSE);
    assert_string_equal(err.file, "spec/fixtures/policies/bad/not-yaml.yaml");
    assert_int_equal(err.line, 8);
    assert_int_equal(ebb_val_parse(NULL, 0, "x", &v, &err), EBB_EINVAL);
}

/* ---- paths -------------------------------------------------------------------------- */

static const char *path_doc =
    "profiles:\n"                        /* 1 */
    "- name: p\n"                        /* 2 */
    "  pluginConfig:\n"                  /* 3 */
    "  - name: A\n"                      /* 4 */
    "  - name: B\n"                      /* 5 */
    "  - name: LowNodeUtilization\n"     /* 6 */
    "    args:\n"                        /* 7 */
    "      thresholds:\n"                /* 8 */
    "        cpu: 20\n"                  /* 9 */
    "        nvidia.com/gpu: 5\n"        /* 10 */
    "        \"a\\\"b\": 6\n"            /* 11 */
    "      targetThresholds:\n"          /* 12 */
    "        cpu: 50\n";                 /* 13 */

static void test_paths(void **state)
{
    struct ebb_val *root = parse_ok(path_doc);
    const struct ebb_val *v;

    v = ebb_val_at(root, "profiles[0].pluginConfig[2].args.thresholds.cpu");
    assert_non_null(v);
    assert_int_equal(v->u.i, 20);
    assert_int_equal(v->line, 9);
    v = ebb_val_at(root, "profiles[0].pluginConfig[2].args.thresholds[\"nvidia.com/gpu\"]");
    assert_non_null(v);
    assert_int_equal(v->u.i, 5);
    v = ebb_val_at(root, "profiles[0].pluginConfig[2].args.thresholds['nvidia.com/gpu']");
    assert_non_null(v);
    assert_int_equal(v->line, 10);
    /* unquoted, a dotted key is still found */
    v = ebb_val_at(root, "profiles[0].pluginConfig[2].args.thresholds.nvidia.com/gpu");
    assert_non_null(v);
    assert_int_equal(v->u.i, 5);
    v = ebb_val_at(root, "profiles[0].pluginConfig[2].args.thresholds[\"a\\\"b\"]");
    assert_non_null(v);
    assert_int_equal(v->u.i, 6);
    assert_ptr_equal(ebb_val_at(root, ""), root);
    assert_ptr_equal(ebb_val_at(root, "profiles"), ebb_val_get(root, "profiles"));

    assert_null(ebb_val_at(root, "profiles[1]"));
    assert_null(ebb_val_at(root, "profiles[0].pluginConfig[2].args.thresholds.memory"));
    assert_null(ebb_val_at(root, "profiles.name"));
    assert_null(ebb_val_at(root, "profiles[0].name[0]"));
    assert_null(ebb_val_at(root, "profiles[x]"));
    assert_null(ebb_val_at(root, "profiles[0].pluginConfig[2].args.thresholds[\"cpu"));
    assert_null(ebb_val_at(NULL, "a"));

    assert_int_equal(ebb_val_line_for(root, "profiles[0].pluginConfig[2].args.targetThresholds.cpu"),
                     13);
    /* a missing field: the line of the deepest ancestor that exists */
    assert_int_equal(ebb_val_line_for(root, "profiles[0].pluginConfig[2].args.thresholds.memory"),
                     9);
    assert_int_equal(ebb_val_line_for(root, "profiles[0].pluginConfig[1].args.x"), 5);
    assert_int_equal(ebb_val_line_for(root, "profiles[3].name"), 2);
    assert_int_equal(ebb_val_line_for(root, "nope"), 1);
    assert_int_equal(ebb_val_line_for(NULL, "nope"), 0);
    ebb_val_free(root);
}

/* ---- cJSON -------------------------------------------------------------------------- */

static void test_to_cjson(void **state)
{
    const char *text =
        "s: hi\n"
        "i: -42\n"
        "big: 9007199254740993\n"
        "f: 2.5\n"
        "b: yes\n"
        "nul: ~\n"
        "l: [1, \"2\", [], {}]\n"
        "m: {k: v}\n"
        "exact: 9007199254740992\n";
    struct ebb_val *root = parse_ok(text);
    cJSON *j = ebb_val_to_cjson(root), *exact;
    char *out;

    assert_non_null(j);
    /* up to 2^53 an integer is a number; beyond, raw text keeps every digit */
    exact = cJSON_DetachItemFromObject(j, "exact");
    assert_true(cJSON_IsNumber(exact));
    assert_true(exact->valuedouble == 9007199254740992.0);
    cJSON_Delete(exact);
    assert_true(cJSON_IsRaw(cJSON_GetObjectItem(j, "big")));
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(j, "i")));
    out = cJSON_PrintUnformatted(j);
    assert_string_equal(out, "{\"s\":\"hi\",\"i\":-42,\"big\":9007199254740993,\"f\":2.5,"
                             "\"b\":true,\"nul\":null,\"l\":[1,\"2\",[],{}],\"m\":{\"k\":\"v\"}}");
    free(out);
    cJSON_Delete(j);
    ebb_val_free(root);
    assert_null(ebb_val_to_cjson(NULL));
}

/* ---- constructors, copies ------------------------------------------------------------ */

static void test_constructors(void **state)
{
    struct ebb_val *m = ebb_val_new(EBB_VAL_MAP, 3), *seq, *d, *s;

    assert_non_null(m);
    assert_int_equal(m->line, 3);
    assert_int_equal(ebb_val_map_put(m, "name", ebb_val_new_string("x", 4)), 0);
    seq = ebb_val_new(EBB_VAL_SEQ, 5);
    assert_int_equal(ebb_val_seq_push(seq, ebb_val_new_string("a", 5)), 0);
    assert_int_equal(ebb_val_seq_push(seq, ebb_val_new(EBB_VAL_NULL, 6)), 0);
    assert_int_equal(ebb_val_map_put(m, "list", seq), 0);
    assert_int_equal(m->u.map.n, 2);
    assert_int_equal(ebb_val_key_line(m, "name"), 4);
    /* putting a key again replaces its value */
    assert_int_equal(ebb_val_map_put(m, "name", ebb_val_new_string("y", 7)), 0);
    assert_int_equal(m->u.map.n, 2);
    assert_string_equal(ebb_val_get(m, "name")->u.str.s, "y");
    /* misuse: the value is taken (freed) all the same */
    assert_int_equal(ebb_val_map_put(seq, "k", ebb_val_new_string("z", 1)), EBB_EINVAL);
    assert_int_equal(ebb_val_seq_push(m, ebb_val_new_string("z", 1)), EBB_EINVAL);
    assert_int_equal(ebb_val_map_put(m, NULL, ebb_val_new_string("z", 1)), EBB_EINVAL);
    assert_int_equal(ebb_val_map_put(m, "k", NULL), EBB_EINVAL);

    s = ebb_val_new(EBB_VAL_STRING, 1);
    assert_non_null(s);
    assert_string_equal(s->u.str.s, "");
    ebb_val_free(s);
    assert_null(ebb_val_new(42, 1));
    assert_null(ebb_val_new_string(NULL, 1));

    d = ebb_val_dup(m);
    assert_non_null(d);
    assert_ptr_not_equal(d, m);
    assert_int_equal(d->u.map.n, 2);
    assert_int_equal(d->line, 3);
    assert_string_equal(ebb_val_get(d, "name")->u.str.s, "y");
    assert_int_equal(ebb_val_get(d, "list")->u.seq.n, 2);
    assert_ptr_not_equal(ebb_val_get(d, "list"), seq);
    assert_null(ebb_val_dup(NULL));
    ebb_val_free(d);
    ebb_val_free(m);
    ebb_val_free(NULL);
}

static void test_type_names(void **state)
{
    assert_string_equal(ebb_val_type_name(EBB_VAL_NULL), "null");
    assert_string_equal(ebb_val_type_name(EBB_VAL_BOOL), "boolean");
    assert_string_equal(ebb_val_type_name(EBB_VAL_INT), "integer");
    assert_string_equal(ebb_val_type_name(EBB_VAL_FLOAT), "float");
    assert_string_equal(ebb_val_type_name(EBB_VAL_STRING), "string");
    assert_string_equal(ebb_val_type_name(EBB_VAL_SEQ), "list");
    assert_string_equal(ebb_val_type_name(EBB_VAL_MAP), "map");
    assert_string_equal(ebb_val_type_name(99), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalar_typing),
        cmocka_unit_test(test_nan),
        cmocka_unit_test(test_tag_mismatch),
        cmocka_unit_test(test_key_conversion),
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_alias_errors),
        cmocka_unit_test(test_merge_keys),
        cmocka_unit_test(test_merge_errors),
        cmocka_unit_test(test_duplicate_keys),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_empty_documents),
        cmocka_unit_test(test_parse_all),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_to_cjson),
        cmocka_unit_test(test_constructors),
        cmocka_unit_test(test_type_names),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
