/* engine/model/selector.c: labels.Parse string form, matching, printing. */
#include "fixtures.h"

#include "ebb/selector.h"

/* ---- helpers ----------------------------------------------------------- */

/* Labels from "key", "value", ..., NULL; sorted by key as decode keeps them.
 * A value of NULL stands for the empty value. */
static struct ebb_labels labels_of(const char *const *kv)
{
    struct ebb_labels l = { 0, NULL };
    size_t n = 0;

    while (kv[2 * n] != NULL)
        n++;
    l.kv = calloc(n ? n : 1, sizeof(*l.kv));
    assert_non_null(l.kv);
    for (size_t i = 0; i < n; i++) {
        struct ebb_kv kvi = { ebb_str_cstr(kv[2 * i]), ebb_str_cstr(kv[2 * i + 1]) };
        size_t j = l.n;
        while (j > 0 && strcmp(l.kv[j - 1].key, kvi.key) > 0) {
            l.kv[j] = l.kv[j - 1];
            j--;
        }
        l.kv[j] = kvi;
        l.n++;
    }
    return l;
}

#define LABELS(...) labels_of((const char *const[]){ __VA_ARGS__, NULL, NULL })

static struct ebb_selector *parse_ok(const char *s)
{
    struct ebb_selector *sel = NULL;
    struct ebb_error err;

    ebb_error_clear(&err);
    if (ebb_selector_parse(s, &sel, &err) != 0)
        fail_msg("\"%s\": %s", s, err.msg);
    assert_non_null(sel);
    return sel;
}

static void expect_format(const char *in, const char *want)
{
    struct ebb_selector *sel = parse_ok(in);
    char buf[256];

    ebb_selector_format(sel, buf, sizeof(buf));
    if (strcmp(buf, want) != 0)
        fail_msg("\"%s\" printed \"%s\", want \"%s\"", in, buf, want);
    ebb_selector_free(sel);
}

static bool sel_matches(const char *s, const struct ebb_labels *l)
{
    struct ebb_selector *sel = parse_ok(s);
    bool m = ebb_selector_matches(sel, l);

    ebb_selector_free(sel);
    return m;
}

static bool req_has(const struct ebb_req *r, const char *v)
{
    for (uint16_t i = 0; i < r->nvalues; i++)
        if (strcmp(r->values[i], v) == 0)
            return true;
    return false;
}

/* ---- parsing ----------------------------------------------------------- */

static void test_parse_round_trip(void **state)
{
    size_t base = ebb_str_count();

    (void)state;
    expect_format("x=a,y=b,z=c", "x=a,y=b,z=c");
    expect_format("", "");
    expect_format("   ", "");
    expect_format("x!=a,y=b", "x!=a,y=b");
    expect_format("x=", "x=");
    expect_format("x= ", "x=");
    expect_format("x=,z= ", "x=,z=");
    expect_format("x= ,z= ", "x=,z=");
    expect_format("x==", "x=");
    expect_format("!x", "!x");
    expect_format("x>1", "x>1");
    expect_format("x>1,z<5", "x>1,z<5");
    expect_format("app.kubernetes.io/name==nginx", "app.kubernetes.io/name=nginx");
    expect_format("environment in (production, qa)", "environment in (production,qa)");
    expect_format("tier notin (frontend,backend)", "tier notin (backend,frontend)");
    expect_format("partition", "partition");
    expect_format("!partition", "!partition");
    expect_format("x in ()", "x=");
    expect_format("x in (abc,)", "x in (,abc)");
    /* requirements come out sorted by key, whatever the input order */
    expect_format("x=a,a=x", "a=x,x=a");
    expect_format("a=x,x=a", "a=x,x=a");
    expect_format("topology.kubernetes.io/zone in (us-east-1a),app.kubernetes.io/name=web",
                  "app.kubernetes.io/name=web,topology.kubernetes.io/zone=us-east-1a");
    /* same key twice: kept, in input order */
    expect_format("z!=a,z", "z!=a,z");
    assert_int_equal(ebb_str_count(), base);
}

static void test_parse_structure(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_selector *s;

    (void)state;
    s = parse_ok("x notin (abc,def),bar,z in (),w");
    assert_int_equal(s->nreqs, 4);
    assert_int_equal(s->flags, 0);
    assert_string_equal(s->reqs[0].key, "bar");
    assert_int_equal(s->reqs[0].op, EBB_OP_EXISTS);
    assert_int_equal(s->reqs[0].nvalues, 0);
    assert_string_equal(s->reqs[1].key, "w");
    assert_int_equal(s->reqs[1].op, EBB_OP_EXISTS);
    assert_string_equal(s->reqs[2].key, "x");
    assert_int_equal(s->reqs[2].op, EBB_OP_NOT_IN);
    assert_int_equal(s->reqs[2].nvalues, 2);
    assert_true(req_has(&s->reqs[2], "abc") && req_has(&s->reqs[2], "def"));
    assert_string_equal(s->reqs[3].key, "z");
    assert_int_equal(s->reqs[3].op, EBB_OP_IN);
    assert_int_equal(s->reqs[3].nvalues, 1);
    assert_string_equal(s->reqs[3].values[0], "");
    /* keys and values are the interned strings: lookups are pointer compares */
    assert_ptr_equal(s->reqs[2].key, ebb_str_find("x", 1));
    assert_true((uintptr_t)s->reqs[2].values[0] < (uintptr_t)s->reqs[2].values[1]);
    ebb_selector_free(s);

    /* "in"/"notin" are plain words inside a value list and as keys */
    s = parse_ok("a in (x,y,notin, z,in)");
    assert_int_equal(s->nreqs, 1);
    assert_int_equal(s->reqs[0].nvalues, 5);
    assert_true(req_has(&s->reqs[0], "in") && req_has(&s->reqs[0], "notin") &&
                req_has(&s->reqs[0], "x") && req_has(&s->reqs[0], "y") &&
                req_has(&s->reqs[0], "z"));
    ebb_selector_free(s);
    s = parse_ok("in in (in)");
    assert_string_equal(s->reqs[0].key, "in");
    assert_int_equal(s->reqs[0].op, EBB_OP_IN);
    assert_string_equal(s->reqs[0].values[0], "in");
    ebb_selector_free(s);

    /* empty elements in lists; repeats collapse */
    s = parse_ok("x notin (, a)");
    assert_int_equal(s->reqs[0].nvalues, 2);
    assert_true(req_has(&s->reqs[0], "") && req_has(&s->reqs[0], "a"));
    ebb_selector_free(s);
    s = parse_ok("x in (a,,b)");
    assert_int_equal(s->reqs[0].nvalues, 3);
    assert_true(req_has(&s->reqs[0], "") && req_has(&s->reqs[0], "a") &&
                req_has(&s->reqs[0], "b"));
    ebb_selector_free(s);
    s = parse_ok("x in (a,b,a,b,a)");
    assert_int_equal(s->reqs[0].nvalues, 2);
    ebb_selector_free(s);

    /* whitespace: space, tab, CR, LF */
    s = parse_ok("\rx");
    assert_int_equal(s->reqs[0].op, EBB_OP_EXISTS);
    ebb_selector_free(s);
    s = parse_ok("foo  in\t (abc)");
    assert_int_equal(s->reqs[0].op, EBB_OP_IN);
    ebb_selector_free(s);
    s = parse_ok("x notin\n (abc)");
    assert_int_equal(s->reqs[0].op, EBB_OP_NOT_IN);
    ebb_selector_free(s);

    /* prefixed keys and dotted values */
    s = parse_ok("0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)");
    assert_string_equal(s->reqs[0].key, "0.1.2.domain/99");
    assert_true(req_has(&s->reqs[0], "10.10.100.1") && req_has(&s->reqs[0], "tick.tack.clock"));
    ebb_selector_free(s);

    /* Gt/Lt keep the parsed number */
    s = parse_ok("example.com/gpu-count>1,example.com/priority<0012");
    assert_int_equal(s->nreqs, 2);
    assert_int_equal(s->reqs[0].op, EBB_OP_GT);
    assert_true(s->reqs[0].num == 1);
    assert_int_equal(s->reqs[1].op, EBB_OP_LT);
    assert_true(s->reqs[1].num == 12);
    assert_string_equal(s->reqs[1].values[0], "0012");
    ebb_selector_free(s);
    s = parse_ok("k>9223372036854775807");
    assert_true(s->reqs[0].num == INT64_MAX);
    ebb_selector_free(s);

    assert_int_equal(ebb_str_count(), base);
}

static void test_parse_refused(void **state)
{
    static const char *const bad[] = {
        "x=a||y=b", "x==a==b", "!x=a", "x<a", "x,,y", ",x,y", "x nott in (y)",
        "a in (xyz),", "a in (xyz)b notin ()", "a in (xyz abc)", "a notin(", "a (", "(",
        "x in (a,,)", "x in (,,)", "a,", "!", "!!x", "x in (", "x=(a)", "x=a b", "k>", "k>-1",
        "k>1.5", "k<99999999999999999999", "-k", "example.com/", "/name", "a/b/c",
        "Example.com/name", "exa_mple.com/name", "example..com/name", "x=a/b", "x=-a",
        "x in (a,b-)", "x=a=b", ")", "=", "x!", "x in a", "x notin", "x in (a)(b)",
        "app.kubernetes.io/name=web,,tier=fe",
    };
    size_t base = ebb_str_count();

    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(bad); i++) {
        struct ebb_selector *s = (struct ebb_selector *)0x1;
        struct ebb_error err;
        int rc;

        ebb_error_clear(&err);
        rc = ebb_selector_parse(bad[i], &s, &err);
        if (rc != EBB_EPARSE)
            fail_msg("\"%s\": rc %d, want EBB_EPARSE", bad[i], rc);
        if (s != (struct ebb_selector *)0x1)
            fail_msg("\"%s\": output written on failure", bad[i]);
        if (err.code != EBB_EPARSE || err.msg[0] == '\0')
            fail_msg("\"%s\": no message", bad[i]);
    }
    /* long keys and values */
    {
        char key[80], sel[160];
        struct ebb_selector *s = NULL;

        memset(key, 'a', 64);
        key[64] = '\0';
        assert_int_equal(ebb_selector_parse(key, &s, NULL), EBB_EPARSE);
        key[63] = '\0';
        assert_int_equal(ebb_selector_parse(key, &s, NULL), 0);
        ebb_selector_free(s);
        snprintf(sel, sizeof(sel), "app=%s", key);   /* 63-char value */
        assert_int_equal(ebb_selector_parse(sel, &s, NULL), 0);
        ebb_selector_free(s);
        snprintf(sel, sizeof(sel), "app=%sa", key);  /* 64 */
        s = NULL;
        assert_int_equal(ebb_selector_parse(sel, &s, NULL), EBB_EPARSE);
        assert_null(s);
    }
    {
        struct ebb_selector *s = NULL;
        assert_int_equal(ebb_selector_parse(NULL, &s, NULL), EBB_EINVAL);
        assert_int_equal(ebb_selector_parse("app=web", NULL, NULL), EBB_EINVAL);
        assert_null(s);
    }
    assert_int_equal(ebb_str_count(), base);
}

static void expect_error(const char *in, const char *part1, const char *part2)
{
    struct ebb_selector *s = NULL;
    struct ebb_error err;

    ebb_error_clear(&err);
    snprintf(err.file, sizeof(err.file), "policy.yaml");
    err.line = 12;
    assert_int_equal(ebb_selector_parse(in, &s, &err), EBB_EPARSE);
    if (strstr(err.msg, part1) == NULL || (part2 && strstr(err.msg, part2) == NULL))
        fail_msg("\"%s\": message \"%s\" lacks \"%s\" / \"%s\"", in, err.msg, part1,
                 part2 ? part2 : "");
    /* where the text came from is the caller's to say */
    assert_string_equal(err.file, "policy.yaml");
    assert_int_equal(err.line, 12);
}

static void test_error_messages(void **state)
{
    size_t base = ebb_str_count();

    (void)state;
    /* "a||y" is one identifier, refused as a value before the parser goes on */
    expect_error("x=a||y=b", "invalid label value \"a||y\"", "key \"x\"");
    expect_error("app=web tier=fe", "found 'tier', expected: ',' or 'end of string'",
                 "character 9");
    expect_error("x,,y", "found ',', expected: identifier after ','", "character 3");
    expect_error("x nott in (y)", "found 'nott', expected: in, notin, =, ==, !=, gt, lt",
                 "character 3");
    expect_error("app.kubernetes.io/name in (web", "found '', expected: ',' or ')'", NULL);
    expect_error("tier in web", "found 'web' expected: '('", NULL);
    expect_error(")", "found ')', expected: !, identifier, or 'end of string'", "character 1");
    expect_error("Example.com/name", "invalid label key \"Example.com/name\"", "prefix part");
    expect_error("toolongtoolongtoolongtoolongtoolongtoolongtoolongtoolongtoolong1",
                 "invalid label key", "no more than 63 characters");
    expect_error("app=nginx/1.25", "invalid label value \"nginx/1.25\"", "key \"app\"");
    expect_error("gpu>two", "for 'Gt', 'Lt' operators", "must be an integer");
    assert_int_equal(ebb_str_count(), base);
}

/* ---- matching ---------------------------------------------------------- */

static void test_matches(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_labels xy = LABELS("x", "y");
    struct ebb_labels xyzw = LABELS("x", "y", "z", "w");
    struct ebb_labels xzza = LABELS("x", "z", "z", "a");
    struct ebb_labels notin = LABELS("notin", "in");
    struct ebb_labels xz = LABELS("x", "z");
    struct ebb_labels yz = LABELS("y", "z");
    struct ebb_labels x2 = LABELS("x", "2");
    struct ebb_labels x0 = LABELS("x", "0");
    struct ebb_labels none = LABELS(NULL);
    struct ebb_labels xwzw = LABELS("x", "w", "z", "w");
    struct ebb_labels xzzw = LABELS("x", "z", "z", "w");
    struct ebb_labels web = LABELS("app.kubernetes.io/name", "web", "app.kubernetes.io/component",
                                   "frontend", "pod-template-hash", "7d4b9c8f5",
                                   "topology.kubernetes.io/zone", "eu-west-1b");

    (void)state;
    assert_true(sel_matches("", &xy));
    assert_true(sel_matches("x=y", &xy));
    assert_true(sel_matches("x=y,z=w", &xyzw));
    assert_true(sel_matches("x!=y,z!=w", &xzza));
    assert_true(sel_matches("notin=in", &notin));
    assert_true(sel_matches("x", &xz));
    assert_true(sel_matches("!x", &yz));
    assert_true(sel_matches("x>1", &x2));
    assert_true(sel_matches("x<1", &x0));
    assert_false(sel_matches("x=z", &none));
    assert_false(sel_matches("x=y", &xz));
    assert_false(sel_matches("x=y,z=w", &xwzw));
    assert_false(sel_matches("x!=y,z!=w", &xzzw));
    assert_false(sel_matches("x", &yz));
    assert_false(sel_matches("!x", &xz));
    assert_false(sel_matches("x>1", &x0));
    assert_false(sel_matches("x<1", &x2));

    assert_true(sel_matches("app.kubernetes.io/name=web", &web));
    assert_true(sel_matches("app.kubernetes.io/name in (web,api),app.kubernetes.io/component", &web));
    assert_true(sel_matches("topology.kubernetes.io/zone notin (eu-west-1a)", &web));
    assert_false(sel_matches("topology.kubernetes.io/zone notin (eu-west-1a,eu-west-1b)", &web));
    assert_false(sel_matches("app.kubernetes.io/name=web,app.kubernetes.io/version", &web));
    assert_true(sel_matches("app.kubernetes.io/name=web,!app.kubernetes.io/version", &web));
    /* NotIn and != match an absent key */
    assert_true(sel_matches("tier notin (backend)", &web));
    assert_true(sel_matches("tier!=backend", &web));
    /* a value no label carries */
    assert_false(sel_matches("app.kubernetes.io/name=never-seen-before", &web));

    ebb_labels_free(&xy);
    ebb_labels_free(&xyzw);
    ebb_labels_free(&xzza);
    ebb_labels_free(&notin);
    ebb_labels_free(&xz);
    ebb_labels_free(&yz);
    ebb_labels_free(&x2);
    ebb_labels_free(&x0);
    ebb_labels_free(&none);
    ebb_labels_free(&xwzw);
    ebb_labels_free(&xzzw);
    ebb_labels_free(&web);
    assert_int_equal(ebb_str_count(), base);
}

/* The empty value: present-but-empty is not absent. */
static void test_empty_values(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_labels yempty = LABELS("y", "");
    struct ebb_labels ynull = LABELS("y", NULL);
    struct ebb_labels ybaz = LABELS("y", "baz");

    (void)state;
    assert_true(sel_matches("x notin (),y", &yempty));
    assert_true(sel_matches("!x,y", &yempty));
    assert_false(sel_matches("x notin (),!y", &yempty));
    assert_false(sel_matches("x in ()", &ybaz));
    assert_true(sel_matches("y in ()", &yempty));
    assert_true(sel_matches("y=", &yempty));
    assert_false(sel_matches("y=", &ybaz));
    assert_true(sel_matches("y in (,baz)", &ybaz));
    assert_true(sel_matches("y in (,baz)", &yempty));
    /* decode may keep an empty value as NULL: same meaning */
    assert_true(sel_matches("y=", &ynull));
    assert_true(sel_matches("y", &ynull));
    assert_false(sel_matches("y!=", &ynull));
    assert_false(sel_matches("y>0", &ynull));
    ebb_labels_free(&yempty);
    ebb_labels_free(&ynull);
    ebb_labels_free(&ybaz);
    assert_int_equal(ebb_str_count(), base);
}

static void test_gt_lt(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_labels ten = LABELS("example.com/gpu-count", "10");
    struct ebb_labels neg = LABELS("example.com/gpu-count", "-3");
    struct ebb_labels word = LABELS("example.com/gpu-count", "v2");
    struct ebb_labels huge = LABELS("example.com/gpu-count", "99999999999999999999");
    struct ebb_labels lead = LABELS("example.com/gpu-count", "+7");
    struct ebb_labels none = LABELS("kubernetes.io/os", "linux");

    (void)state;
    assert_true(sel_matches("example.com/gpu-count>9", &ten));
    assert_false(sel_matches("example.com/gpu-count>10", &ten));
    assert_true(sel_matches("example.com/gpu-count<11", &ten));
    assert_false(sel_matches("example.com/gpu-count<10", &ten));
    assert_true(sel_matches("example.com/gpu-count<0", &neg));
    assert_false(sel_matches("example.com/gpu-count>0", &word));
    assert_false(sel_matches("example.com/gpu-count<0", &word));
    assert_false(sel_matches("example.com/gpu-count>0", &huge));
    assert_true(sel_matches("example.com/gpu-count>6", &lead));
    /* an absent key fails both */
    assert_false(sel_matches("example.com/gpu-count>0", &none));
    assert_false(sel_matches("example.com/gpu-count<100", &none));
    ebb_labels_free(&ten);
    ebb_labels_free(&neg);
    ebb_labels_free(&word);
    ebb_labels_free(&huge);
    ebb_labels_free(&lead);
    ebb_labels_free(&none);
    assert_int_equal(ebb_str_count(), base);
}

static void test_nothing_everything(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_labels any = LABELS("app", "web");
    struct ebb_labels none = LABELS(NULL);
    struct ebb_selector *nothing = ebb_selector_nothing();
    struct ebb_selector *every = ebb_selector_everything();
    struct ebb_selector *empty = parse_ok("");
    char buf[16] = "junk";

    (void)state;
    assert_non_null(nothing);
    assert_non_null(every);
    assert_false(ebb_selector_matches(nothing, &any));
    assert_false(ebb_selector_matches(nothing, &none));
    assert_false(ebb_selector_is_empty(nothing));
    assert_true(ebb_selector_matches(every, &any));
    assert_true(ebb_selector_matches(every, &none));
    assert_true(ebb_selector_is_empty(every));
    assert_true(ebb_selector_is_empty(empty));
    assert_true(ebb_selector_matches(empty, &any));
    /* NULL: no constraint */
    assert_true(ebb_selector_matches(NULL, &any));
    assert_true(ebb_selector_is_empty(NULL));
    ebb_selector_format(nothing, buf, sizeof(buf));
    assert_string_equal(buf, "");
    ebb_selector_free(nothing);
    ebb_selector_free(every);
    ebb_selector_free(empty);
    ebb_selector_free(NULL);
    ebb_labels_free(&any);
    ebb_labels_free(&none);
    assert_int_equal(ebb_str_count(), base);
}

/* What decode.c does for matchLabels / matchExpressions. */
static void test_from_reqs(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_req *reqs = calloc(3, sizeof(*reqs));
    struct ebb_selector *s = NULL;
    struct ebb_labels api = LABELS("app.kubernetes.io/name", "api", "tier", "backend");
    struct ebb_labels web = LABELS("app.kubernetes.io/name", "web", "tier", "backend");
    ebb_str api_s;
    char buf[128];

    (void)state;
    assert_non_null(reqs);
    reqs[0].key = ebb_str_cstr("tier");
    reqs[0].op = EBB_OP_EXISTS;
    reqs[1].key = ebb_str_cstr("app.kubernetes.io/name");
    reqs[1].op = EBB_OP_IN;
    reqs[1].nvalues = 4;
    reqs[1].values = calloc(4, sizeof(ebb_str));
    reqs[1].values[0] = ebb_str_cstr("worker");
    reqs[1].values[1] = ebb_str_cstr("api");
    reqs[1].values[2] = ebb_str_cstr("worker");
    reqs[1].values[3] = ebb_str_cstr("api");
    reqs[2].key = ebb_str_cstr("environment");
    reqs[2].op = EBB_OP_NOT_IN;
    reqs[2].nvalues = 1;
    reqs[2].values = calloc(1, sizeof(ebb_str));
    reqs[2].values[0] = ebb_str_cstr("dev");
    api_s = ebb_str_find("api", 3);

    assert_int_equal(ebb_selector_from_reqs(reqs, 3, &s), 0);
    assert_int_equal(s->nreqs, 3);
    /* sorted by key, duplicate values dropped (and their references) */
    assert_string_equal(s->reqs[0].key, "app.kubernetes.io/name");
    assert_string_equal(s->reqs[1].key, "environment");
    assert_string_equal(s->reqs[2].key, "tier");
    assert_int_equal(s->reqs[0].nvalues, 2);
    assert_true(req_has(&s->reqs[0], "api") && req_has(&s->reqs[0], "worker"));
    assert_true(ebb_selector_matches(s, &api));
    assert_false(ebb_selector_matches(s, &web));
    ebb_selector_format(s, buf, sizeof(buf));
    assert_string_equal(buf, "app.kubernetes.io/name in (api,worker),environment!=dev,tier");
    ebb_selector_free(s);
    assert_null(ebb_str_find("worker", 6));
    assert_ptr_equal(ebb_str_find("api", 3), api_s);   /* the labels still hold it */

    assert_int_equal(ebb_selector_from_reqs(NULL, 0, &s), 0);
    assert_true(ebb_selector_is_empty(s));
    ebb_selector_free(s);
    assert_int_equal(ebb_selector_from_reqs(NULL, 2, &s), EBB_EINVAL);
    assert_int_equal(ebb_selector_from_reqs(NULL, 0, NULL), EBB_EINVAL);

    ebb_labels_free(&api);
    ebb_labels_free(&web);
    assert_int_equal(ebb_str_count(), base);
}

static void test_dup(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_selector *s = parse_ok("app.kubernetes.io/name in (web,api),!canary,gen>3");
    struct ebb_selector *d = ebb_selector_dup(s), *n, *dn;
    struct ebb_labels l = LABELS("app.kubernetes.io/name", "api", "gen", "4");
    char b1[128], b2[128];

    (void)state;
    assert_non_null(d);
    assert_ptr_not_equal(d, s);
    assert_ptr_not_equal(d->reqs, s->reqs);
    ebb_selector_format(s, b1, sizeof(b1));
    ebb_selector_free(s);
    ebb_selector_format(d, b2, sizeof(b2));
    assert_string_equal(b1, b2);
    assert_true(ebb_selector_matches(d, &l));
    ebb_selector_free(d);

    n = ebb_selector_nothing();
    dn = ebb_selector_dup(n);
    assert_false(ebb_selector_matches(dn, &l));
    ebb_selector_free(n);
    ebb_selector_free(dn);
    assert_null(ebb_selector_dup(NULL));
    ebb_labels_free(&l);
    assert_int_equal(ebb_str_count(), base);
}

static void test_format_truncates(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_selector *s = parse_ok("app.kubernetes.io/name in (web,api)");
    char buf[12];

    (void)state;
    memset(buf, 'Z', sizeof(buf));
    ebb_selector_format(s, buf, sizeof(buf));
    assert_string_equal(buf, "app.kuberne");
    ebb_selector_format(s, buf, 1);
    assert_string_equal(buf, "");
    ebb_selector_free(s);
    assert_int_equal(ebb_str_count(), base);
}

static void test_label_validation(void **state)
{
    static const char *const good_keys[] = {
        "app.kubernetes.io/name", "node-role.kubernetes.io/control-plane",
        "topology.kubernetes.io/zone", "kubernetes.io/hostname", "1234", "a_b.c-d",
        "MyName", "x", "0.1.2.domain/99", "a-b.c/Z",
    };
    static const char *const bad_keys[] = {
        "", "-abc", "abc-", "_abc", "Example.com/x", "example.com/", "/x", "a/b/c",
        "exa_mple.com/x", "example..com/x", ".example.com/x", "example.com./x", "-a.com/x",
        "a b", "app=web", "kubernetes.io/host name",
    };
    static const char *const good_values[] = { "", "v1.2.3", "web", "A", "us-east-1a", "1" };
    static const char *const bad_values[] = { "-a", "a-", "a b", "a/b", "nginx:1.25", ".a" };
    char buf[300];

    (void)state;
    for (size_t i = 0; i < EBB_ARRAY_LEN(good_keys); i++)
        if (ebb_label_key_problem(good_keys[i], strlen(good_keys[i])) != NULL)
            fail_msg("key \"%s\" refused", good_keys[i]);
    for (size_t i = 0; i < EBB_ARRAY_LEN(bad_keys); i++)
        if (ebb_label_key_problem(bad_keys[i], strlen(bad_keys[i])) == NULL)
            fail_msg("key \"%s\" accepted", bad_keys[i]);
    for (size_t i = 0; i < EBB_ARRAY_LEN(good_values); i++)
        if (ebb_label_value_problem(good_values[i], strlen(good_values[i])) != NULL)
            fail_msg("value \"%s\" refused", good_values[i]);
    for (size_t i = 0; i < EBB_ARRAY_LEN(bad_values); i++)
        if (ebb_label_value_problem(bad_values[i], strlen(bad_values[i])) == NULL)
            fail_msg("value \"%s\" accepted", bad_values[i]);

    /* lengths: name 63, prefix 253, value 63 */
    memset(buf, 'a', 64);
    assert_null(ebb_label_key_problem(buf, 63));
    assert_non_null(ebb_label_key_problem(buf, 64));
    assert_null(ebb_label_value_problem(buf, 63));
    assert_non_null(ebb_label_value_problem(buf, 64));
    memset(buf, 'b', 253);
    buf[253] = '/';
    buf[254] = 'k';
    assert_null(ebb_label_key_problem(buf, 255));
    memset(buf, 'b', 254);
    buf[254] = '/';
    buf[255] = 'k';
    assert_non_null(ebb_label_key_problem(buf, 256));
    /* only `n` bytes count */
    assert_null(ebb_label_key_problem("app/", 3));
    assert_null(ebb_label_value_problem(NULL, 0));
    assert_non_null(ebb_label_key_problem(NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_round_trip),
        cmocka_unit_test(test_parse_structure),
        cmocka_unit_test(test_parse_refused),
        cmocka_unit_test(test_error_messages),
        cmocka_unit_test(test_matches),
        cmocka_unit_test(test_empty_values),
        cmocka_unit_test(test_gt_lt),
        cmocka_unit_test(test_nothing_everything),
        cmocka_unit_test(test_from_reqs),
        cmocka_unit_test(test_dup),
        cmocka_unit_test(test_format_truncates),
        cmocka_unit_test(test_label_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
