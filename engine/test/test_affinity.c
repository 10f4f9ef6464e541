/* engine/model/affinity.c: node selectors, node affinity, pod affinity terms. */
#include "fixtures.h"

#include "ebb/affinity.h"
#include "ebb/selector.h"

/* ---- helpers: objects built and owned as decode.c would ---------------- */

static void labels_fill(struct ebb_labels *l, const char *const *kv)
{
    size_t n = 0;

    while (kv[2 * n] != NULL)
        n++;
    l->n = 0;
    l->kv = n ? calloc(n, sizeof(*l->kv)) : NULL;
    for (size_t i = 0; i < n; i++) {
        struct ebb_kv e = { ebb_str_cstr(kv[2 * i]), ebb_str_cstr(kv[2 * i + 1]) };
        size_t j = l->n;
        assert_non_null(l->kv);
        while (j > 0 && strcmp(l->kv[j - 1].key, e.key) > 0) {
            l->kv[j] = l->kv[j - 1];
            j--;
        }
        l->kv[j] = e;
        l->n++;
    }
}

#define KV(...) ((const char *const[]){ __VA_ARGS__, NULL, NULL })

static struct ebb_node *node_new(const char *name, const char *const *labels)
{
    struct ebb_node *n = calloc(1, sizeof(*n));

    assert_non_null(n);
    n->name = ebb_str_cstr(name);
    labels_fill(&n->labels, labels);
    return n;
}

static struct ebb_pod *pod_new(const char *ns, const char *name, const char *const *labels)
{
    struct ebb_pod *p = calloc(1, sizeof(*p));

    assert_non_null(p);
    p->ns = ebb_str_cstr(ns);
    p->name = ebb_str_cstr(name);
    labels_fill(&p->labels, labels);
    return p;
}

/* A requirement; values end with NULL. */
static struct ebb_req req(const char *key, int op, const char *const *values)
{
    struct ebb_req r = { 0 };
    size_t n = 0;

    while (values != NULL && values[n] != NULL)
        n++;
    r.key = ebb_str_cstr(key);
    r.op = (uint8_t)op;
    r.nvalues = (uint16_t)n;
    r.values = n ? calloc(n, sizeof(ebb_str)) : NULL;
    for (size_t i = 0; i < n; i++)
        r.values[i] = ebb_str_cstr(values[i]);
    if ((op == EBB_OP_GT || op == EBB_OP_LT) && n == 1)
        r.num = strtoll(values[0], NULL, 10);
    return r;
}

#define V(...) ((const char *const[]){ __VA_ARGS__, NULL })

static struct ebb_req *reqs_of(size_t n, const struct ebb_req *r)
{
    struct ebb_req *v = calloc(n, sizeof(*v));

    assert_non_null(v);
    memcpy(v, r, n * sizeof(*r));
    return v;
}

/* Term with `ne` expressions and `nf` fields (copied in). */
static struct ebb_node_term term(size_t ne, const struct ebb_req *e, size_t nf,
                                 const struct ebb_req *f)
{
    struct ebb_node_term t = { 0 };

    t.nexprs = (uint16_t)ne;
    t.nfields = (uint16_t)nf;
    t.exprs = ne ? reqs_of(ne, e) : NULL;
    t.fields = nf ? reqs_of(nf, f) : NULL;
    return t;
}

static bool term_matches_once(struct ebb_node_term t, const struct ebb_node *n)
{
    bool m = ebb_node_term_matches(&t, n);

    ebb_node_term_clear(&t);
    return m;
}

/* Terms of one or two expressions, one field, or one of each. */
static struct ebb_node_term t_expr(struct ebb_req e)
{
    return term(1, &e, 0, NULL);
}

static struct ebb_node_term t_expr2(struct ebb_req e1, struct ebb_req e2)
{
    struct ebb_req e[2] = { e1, e2 };
    return term(2, e, 0, NULL);
}

static struct ebb_node_term t_field(struct ebb_req f)
{
    return term(0, NULL, 1, &f);
}

static struct ebb_node_term t_both(struct ebb_req e, struct ebb_req f)
{
    return term(1, &e, 1, &f);
}

static bool m_expr(struct ebb_req e, const struct ebb_node *n)
{
    return term_matches_once(t_expr(e), n);
}

static bool m_expr2(struct ebb_req e1, struct ebb_req e2, const struct ebb_node *n)
{
    return term_matches_once(t_expr2(e1, e2), n);
}

static bool m_field(struct ebb_req f, const struct ebb_node *n)
{
    return term_matches_once(t_field(f), n);
}

static bool m_both(struct ebb_req e, struct ebb_req f, const struct ebb_node *n)
{
    return term_matches_once(t_both(e, f), n);
}

/* A selector parsed from the string form (owned). */
static struct ebb_selector *sel(const char *s)
{
    struct ebb_selector *out = NULL;

    assert_int_equal(ebb_selector_parse(s, &out, NULL), 0);
    return out;
}

static ebb_str *strs(const char *const *v, uint16_t *n)
{
    ebb_str *out;
    uint16_t k = 0;

    while (v[k] != NULL)
        k++;
    out = calloc(k ? k : 1, sizeof(*out));
    assert_non_null(out);
    for (uint16_t i = 0; i < k; i++)
        out[i] = ebb_str_cstr(v[i]);
    *n = k;
    return out;
}

/* ---- node selector terms ----------------------------------------------- */

static void test_node_term_expressions(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_node *n = node_new("ip-10-0-1-17.eu-west-1.compute.internal",
                                  KV("topology.kubernetes.io/zone", "eu-west-1a",
                                     "kubernetes.io/os", "linux",
                                     "node.kubernetes.io/instance-type", "m5.2xlarge",
                                     "example.com/gpu-count", "4",
                                     "node-role.kubernetes.io/worker", ""));
    const char *zone = "topology.kubernetes.io/zone";

    (void)state;
    /* an empty term matches nothing */
    assert_false(term_matches_once(term(0, NULL, 0, NULL), n));
    assert_true(m_expr(req(zone, EBB_OP_IN, V("eu-west-1a", "eu-west-1b")), n));
    assert_false(m_expr(req(zone, EBB_OP_IN, V("eu-west-1c")), n));
    assert_true(m_expr(req("node.kubernetes.io/instance-type", EBB_OP_NOT_IN, V("t3.micro")), n));
    assert_false(m_expr(req("node.kubernetes.io/instance-type", EBB_OP_NOT_IN,
                            V("t3.micro", "m5.2xlarge")), n));
    assert_true(m_expr(req("example.com/absent", EBB_OP_NOT_IN, V("x")), n));
    assert_true(m_expr(req("node-role.kubernetes.io/worker", EBB_OP_EXISTS, NULL), n));
    assert_false(m_expr(req("node-role.kubernetes.io/control-plane", EBB_OP_EXISTS, NULL), n));
    assert_true(m_expr(req("node-role.kubernetes.io/control-plane", EBB_OP_DOES_NOT_EXIST, NULL),
                       n));
    assert_false(m_expr(req("node-role.kubernetes.io/worker", EBB_OP_DOES_NOT_EXIST, NULL), n));
    assert_true(m_expr(req("example.com/gpu-count", EBB_OP_GT, V("3")), n));
    assert_false(m_expr(req("example.com/gpu-count", EBB_OP_GT, V("4")), n));
    assert_true(m_expr(req("example.com/gpu-count", EBB_OP_LT, V("05")), n));
    assert_false(m_expr(req("kubernetes.io/os", EBB_OP_GT, V("1")), n));   /* "linux" */
    assert_false(m_expr(req("example.com/absent", EBB_OP_LT, V("1")), n));
    /* expressions are ANDed */
    assert_false(m_expr2(req("kubernetes.io/os", EBB_OP_IN, V("linux")),
                         req(zone, EBB_OP_IN, V("eu-west-1b")), n));
    assert_true(m_expr2(req("kubernetes.io/os", EBB_OP_IN, V("linux")),
                        req(zone, EBB_OP_IN, V("eu-west-1a")), n));
    ebb_node_free(n);
    assert_int_equal(ebb_str_count(), base);
}

/* Requirements the scheduler cannot build make the term match nothing. */
static void test_node_term_invalid(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_node *n = node_new("worker-1", KV("example.com/rack", "r1/a",
                                                  "example.com/gpu-count", "4",
                                                  "kubernetes.io/os", "linux"));

    (void)state;
    /* "r1/a" is not a label value: refused even though equal */
    assert_false(m_expr(req("example.com/rack", EBB_OP_IN, V("r1/a")), n));
    /* ... and it spoils the whole term, even as a NotIn */
    assert_false(m_expr2(req("kubernetes.io/os", EBB_OP_IN, V("linux")),
                         req("example.com/rack", EBB_OP_NOT_IN, V("r2/b")), n));
    /* In/NotIn without values, Exists with values */
    assert_false(m_expr(req("kubernetes.io/os", EBB_OP_NOT_IN, NULL), n));
    assert_false(m_expr(req("kubernetes.io/os", EBB_OP_EXISTS, V("linux")), n));
    /* Gt needs one value that is an integer and a label value ("-1" is not) */
    assert_false(m_expr(req("example.com/gpu-count", EBB_OP_GT, V("-1")), n));
    assert_false(m_expr(req("example.com/gpu-count", EBB_OP_GT, V("1", "2")), n));
    assert_false(m_expr(req("example.com/gpu-count", EBB_OP_GT, V("1.5")), n));
    assert_false(m_expr(req("example.com/gpu-count", EBB_OP_LT, V("99999999999999999999")), n));
    /* a key that is not a qualified name */
    assert_false(m_expr(req("Kubernetes.IO/os", EBB_OP_EXISTS, NULL), n));
    /* an operator that does not exist */
    assert_false(m_expr(req("kubernetes.io/os", 42, V("linux")), n));
    ebb_node_free(n);
    assert_int_equal(ebb_str_count(), base);
}

static void test_node_term_fields(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_node *n1 = node_new("node-1", KV("kubernetes.io/os", "linux"));
    struct ebb_node *n2 = node_new("node-2", KV("kubernetes.io/os", "linux"));
    struct ebb_node *anon = node_new("", KV("kubernetes.io/os", "linux"));

    (void)state;
    assert_true(m_field(req("metadata.name", EBB_OP_IN, V("node-1")), n1));
    assert_false(m_field(req("metadata.name", EBB_OP_IN, V("node-1")), n2));
    assert_false(m_field(req("metadata.name", EBB_OP_NOT_IN, V("node-1")), n1));
    assert_true(m_field(req("metadata.name", EBB_OP_NOT_IN, V("node-1")), n2));
    /* In/NotIn need exactly one value; other operators are refused */
    assert_false(m_field(req("metadata.name", EBB_OP_IN, V("node-1", "node-2")), n1));
    assert_false(m_field(req("metadata.name", EBB_OP_EXISTS, NULL), n1));
    /* a node has no other field: an unknown key reads as "" */
    assert_false(m_field(req("metadata.uid", EBB_OP_IN, V("abc")), n1));
    assert_true(m_field(req("metadata.uid", EBB_OP_IN, V("")), n1));
    assert_true(m_field(req("spec.unschedulable", EBB_OP_NOT_IN, V("true")), n1));
    /* fields are not checked against a node without a name; parse errors are */
    assert_true(m_field(req("metadata.name", EBB_OP_IN, V("node-1")), anon));
    assert_false(m_field(req("metadata.name", EBB_OP_EXISTS, NULL), anon));
    /* labels and fields together: both must hold */
    assert_true(m_both(req("kubernetes.io/os", EBB_OP_IN, V("linux")),
                       req("metadata.name", EBB_OP_IN, V("node-2")), n2));
    assert_false(m_both(req("kubernetes.io/os", EBB_OP_IN, V("windows")),
                        req("metadata.name", EBB_OP_IN, V("node-2")), n2));
    assert_false(m_both(req("kubernetes.io/os", EBB_OP_IN, V("linux")),
                        req("metadata.name", EBB_OP_IN, V("node-2")), n1));
    ebb_node_free(n1);
    ebb_node_free(n2);
    ebb_node_free(anon);
    assert_int_equal(ebb_str_count(), base);
}

/* ---- pods: nodeSelector and node affinity ------------------------------ */

static struct ebb_affinity *affinity_new(void)
{
    struct ebb_affinity *a = calloc(1, sizeof(*a));
    assert_non_null(a);
    return a;
}

static void add_required(struct ebb_affinity *a, struct ebb_node_term t)
{
    a->has_required = true;
    a->required = realloc(a->required, (a->nrequired + 1u) * sizeof(*a->required));
    assert_non_null(a->required);
    a->required[a->nrequired++] = t;
}

static void add_preferred(struct ebb_affinity *a, int32_t w, struct ebb_node_term t)
{
    a->preferred = realloc(a->preferred, (a->npreferred + 1u) * sizeof(*a->preferred));
    assert_non_null(a->preferred);
    a->preferred[a->npreferred].weight = w;
    a->preferred[a->npreferred++].term = t;
}

static void test_required_affinity(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_node *a = node_new("worker-a", KV("topology.kubernetes.io/zone", "us-east-1a"));
    struct ebb_node *b = node_new("worker-b", KV("topology.kubernetes.io/zone", "us-east-1b"));
    struct ebb_pod *p = pod_new("shop", "cart-5f7d8b9c6-q2w3e", KV("app", "cart"));

    (void)state;
    /* no affinity, or affinity without the required part: every node */
    assert_true(ebb_pod_required_affinity_matches(p, a));
    assert_false(ebb_pod_has_required_node_affinity(p));
    p->affinity = affinity_new();
    assert_true(ebb_pod_required_affinity_matches(p, a));
    assert_false(ebb_pod_has_required_node_affinity(p));
    /* required with zero terms: no node */
    p->affinity->has_required = true;
    assert_true(ebb_pod_has_required_node_affinity(p));
    assert_false(ebb_pod_required_affinity_matches(p, a));
    /* an empty term matches nothing, but terms are ORed */
    add_required(p->affinity, term(0, NULL, 0, NULL));
    assert_false(ebb_pod_required_affinity_matches(p, a));
    add_required(p->affinity, t_expr(req("topology.kubernetes.io/zone", EBB_OP_IN,
                                         V("us-east-1b"))));
    assert_false(ebb_pod_required_affinity_matches(p, a));
    assert_true(ebb_pod_required_affinity_matches(p, b));
    add_required(p->affinity, t_field(req("metadata.name", EBB_OP_IN, V("worker-a"))));
    assert_true(ebb_pod_required_affinity_matches(p, a));
    assert_false(ebb_pod_required_affinity_matches(p, NULL));
    ebb_pod_free(p);
    ebb_node_free(a);
    ebb_node_free(b);
    assert_int_equal(ebb_str_count(), base);
}

static void test_node_selector(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_node *linux_ssd = node_new("worker-1", KV("kubernetes.io/os", "linux",
                                                         "disktype", "ssd",
                                                         "example.com/empty", ""));
    struct ebb_node *linux_hdd = node_new("worker-2", KV("kubernetes.io/os", "linux",
                                                         "disktype", "hdd"));
    struct ebb_node *bare = node_new("worker-3", KV("kubernetes.io/os", "linux"));
    struct ebb_pod *p = pod_new("db", "postgres-0", KV("app", "postgres"));

    (void)state;
    assert_true(ebb_pod_matches_node_selector(p, bare));
    labels_fill(&p->node_selector, KV("kubernetes.io/os", "linux", "disktype", "ssd"));
    assert_true(ebb_pod_matches_node_selector(p, linux_ssd));
    assert_false(ebb_pod_matches_node_selector(p, linux_hdd));
    assert_false(ebb_pod_matches_node_selector(p, bare));
    /* an empty value still needs the label, with the empty value */
    ebb_labels_free(&p->node_selector);
    labels_fill(&p->node_selector, KV("example.com/empty", ""));
    assert_true(ebb_pod_matches_node_selector(p, linux_ssd));
    assert_false(ebb_pod_matches_node_selector(p, linux_hdd));
    /* nodeSelector AND required affinity */
    ebb_labels_free(&p->node_selector);
    labels_fill(&p->node_selector, KV("kubernetes.io/os", "linux"));
    p->affinity = affinity_new();
    add_required(p->affinity, t_expr(req("disktype", EBB_OP_NOT_IN, V("hdd"))));
    assert_true(ebb_pod_matches_node_selector(p, linux_ssd));
    assert_false(ebb_pod_matches_node_selector(p, linux_hdd));
    assert_true(ebb_pod_matches_node_selector(p, bare));
    assert_false(ebb_pod_matches_node_selector(p, NULL));
    ebb_pod_free(p);
    ebb_node_free(linux_ssd);
    ebb_node_free(linux_hdd);
    ebb_node_free(bare);
    assert_int_equal(ebb_str_count(), base);
}

static void test_preferred_weight(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_node *a = node_new("worker-a", KV("topology.kubernetes.io/zone", "us-east-1a",
                                                 "disktype", "ssd"));
    struct ebb_node *b = node_new("worker-b", KV("topology.kubernetes.io/zone", "us-east-1b",
                                                 "disktype", "ssd"));
    struct ebb_node *c = node_new("worker-c", KV("topology.kubernetes.io/zone", "us-east-1c"));
    struct ebb_pod *p = pod_new("shop", "checkout-0", KV("app", "checkout"));

    (void)state;
    assert_true(ebb_pod_preferred_weight(p, a) == 0);
    assert_false(ebb_pod_has_preferred_node_affinity(p));
    p->affinity = affinity_new();
    add_preferred(p->affinity, 80, t_expr(req("topology.kubernetes.io/zone", EBB_OP_IN,
                                              V("us-east-1a"))));
    add_preferred(p->affinity, 20, t_expr(req("disktype", EBB_OP_IN, V("ssd"))));
    add_preferred(p->affinity, 0, t_expr(req("disktype", EBB_OP_EXISTS, NULL)));
    add_preferred(p->affinity, 50, term(0, NULL, 0, NULL));   /* empty: never */
    add_preferred(p->affinity, 7, t_field(req("metadata.name", EBB_OP_IN, V("worker-c"))));
    assert_true(ebb_pod_has_preferred_node_affinity(p));
    assert_false(ebb_pod_has_required_node_affinity(p));
    assert_true(ebb_pod_preferred_weight(p, a) == 100);
    assert_true(ebb_pod_preferred_weight(p, b) == 20);
    assert_true(ebb_pod_preferred_weight(p, c) == 7);
    assert_true(ebb_pod_preferred_weight(p, NULL) == 0);
    ebb_pod_free(p);
    ebb_node_free(a);
    ebb_node_free(b);
    ebb_node_free(c);
    assert_int_equal(ebb_str_count(), base);
}

/* ---- pod affinity terms ------------------------------------------------ */

static void test_pod_term_namespaces(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_pod *owner = pod_new("shop", "cart-0", KV("app", "cart"));
    struct ebb_pod *same_ns = pod_new("shop", "redis-0", KV("app", "redis"));
    struct ebb_pod *other_ns = pod_new("cache", "redis-0", KV("app", "redis"));
    struct ebb_labels cache_ns = { 0, NULL }, shop_ns = { 0, NULL };
    struct ebb_pod_term t = { 0 };

    (void)state;
    labels_fill(&cache_ns, KV("kubernetes.io/metadata.name", "cache", "team", "platform"));
    labels_fill(&shop_ns, KV("kubernetes.io/metadata.name", "shop", "team", "payments"));
    t.selector = sel("app=redis");
    t.topology_key = ebb_str_cstr("kubernetes.io/hostname");

    /* no list, no namespaceSelector: the owner's namespace */
    assert_true(ebb_pod_term_selects(&t, owner, same_ns, &shop_ns));
    assert_false(ebb_pod_term_selects(&t, owner, other_ns, &cache_ns));
    /* a list replaces it */
    t.namespaces = strs(V("cache", "monitoring"), &t.nnamespaces);
    assert_false(ebb_pod_term_selects(&t, owner, same_ns, &shop_ns));
    assert_true(ebb_pod_term_selects(&t, owner, other_ns, NULL));
    /* a namespaceSelector {} is every namespace; ORed with the list */
    t.ns_selector = ebb_selector_everything();
    assert_true(ebb_pod_term_selects(&t, owner, same_ns, &shop_ns));
    assert_true(ebb_pod_term_selects(&t, owner, other_ns, &cache_ns));
    /* without the namespace's labels the selector counts for nothing */
    assert_false(ebb_pod_term_selects(&t, owner, same_ns, NULL));
    assert_true(ebb_pod_term_selects(&t, owner, other_ns, NULL));
    /* selector only (empty list): never the owner's namespace by default */
    ebb_str_release(t.namespaces[0]);
    ebb_str_release(t.namespaces[1]);
    free(t.namespaces);
    t.namespaces = NULL;
    t.nnamespaces = 0;
    ebb_selector_free(t.ns_selector);
    t.ns_selector = sel("team=platform");
    assert_true(ebb_pod_term_selects(&t, owner, other_ns, &cache_ns));
    assert_false(ebb_pod_term_selects(&t, owner, same_ns, &shop_ns));
    assert_false(ebb_pod_term_selects(&t, owner, other_ns, NULL));
    ebb_selector_free(t.ns_selector);
    t.ns_selector = ebb_selector_nothing();
    assert_false(ebb_pod_term_selects(&t, owner, same_ns, &shop_ns));

    ebb_pod_term_clear(&t);
    assert_null(t.selector);
    ebb_pod_term_clear(&t);   /* a cleared term clears again */
    ebb_labels_free(&cache_ns);
    ebb_labels_free(&shop_ns);
    ebb_pod_free(owner);
    ebb_pod_free(same_ns);
    ebb_pod_free(other_ns);
    assert_int_equal(ebb_str_count(), base);
}

static void test_pod_term_selector_and_keys(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_pod *owner = pod_new("shop", "web-7d4b9c8f5-abcde",
                                    KV("app.kubernetes.io/name", "web",
                                       "pod-template-hash", "7d4b9c8f5", "tenant", "acme"));
    struct ebb_pod *sibling = pod_new("shop", "web-7d4b9c8f5-fghij",
                                      KV("app.kubernetes.io/name", "web",
                                         "pod-template-hash", "7d4b9c8f5", "tenant", "acme"));
    struct ebb_pod *old_rs = pod_new("shop", "web-5c6b7a8d9-klmno",
                                     KV("app.kubernetes.io/name", "web",
                                        "pod-template-hash", "5c6b7a8d9", "tenant", "globex"));
    struct ebb_pod *no_hash = pod_new("shop", "web-manual",
                                      KV("app.kubernetes.io/name", "web"));
    struct ebb_pod *api = pod_new("shop", "api-0", KV("app.kubernetes.io/name", "api"));
    struct ebb_pod_term t = { 0 };

    (void)state;
    /* a nil labelSelector selects nobody */
    t.selector = ebb_selector_nothing();
    assert_false(ebb_pod_term_selects(&t, owner, sibling, NULL));
    ebb_selector_free(t.selector);
    t.selector = NULL;
    assert_false(ebb_pod_term_selects(&t, owner, sibling, NULL));
    t.selector = sel("app.kubernetes.io/name=web");
    assert_true(ebb_pod_term_selects(&t, owner, sibling, NULL));
    assert_true(ebb_pod_term_selects(&t, owner, old_rs, NULL));
    assert_false(ebb_pod_term_selects(&t, owner, api, NULL));

    /* matchLabelKeys: same pod-template-hash as the owner */
    t.match_keys = strs(V("pod-template-hash"), &t.nmatch_keys);
    assert_true(ebb_pod_term_selects(&t, owner, sibling, NULL));
    assert_false(ebb_pod_term_selects(&t, owner, old_rs, NULL));
    assert_false(ebb_pod_term_selects(&t, owner, no_hash, NULL));
    /* the owner lacks the key: the key adds nothing */
    assert_true(ebb_pod_term_selects(&t, no_hash, old_rs, NULL));

    /* mismatchLabelKeys: another tenant (or none) */
    t.mismatch_keys = strs(V("tenant"), &t.nmismatch_keys);
    assert_false(ebb_pod_term_selects(&t, owner, sibling, NULL));
    ebb_str_release(t.match_keys[0]);
    free(t.match_keys);
    t.match_keys = NULL;
    t.nmatch_keys = 0;
    assert_true(ebb_pod_term_selects(&t, owner, old_rs, NULL));
    assert_true(ebb_pod_term_selects(&t, owner, no_hash, NULL));
    assert_false(ebb_pod_term_selects(&t, owner, sibling, NULL));
    assert_true(ebb_pod_term_selects(&t, no_hash, sibling, NULL));
    assert_false(ebb_pod_term_selects(NULL, owner, sibling, NULL));

    ebb_pod_term_clear(&t);
    ebb_pod_free(owner);
    ebb_pod_free(sibling);
    ebb_pod_free(old_rs);
    ebb_pod_free(no_hash);
    ebb_pod_free(api);
    assert_int_equal(ebb_str_count(), base);
}

static void test_same_topology(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_node *a1 = node_new("a1", KV("topology.kubernetes.io/zone", "eu-west-1a",
                                            "kubernetes.io/hostname", "a1"));
    struct ebb_node *a2 = node_new("a2", KV("topology.kubernetes.io/zone", "eu-west-1a",
                                            "kubernetes.io/hostname", "a2"));
    struct ebb_node *b1 = node_new("b1", KV("topology.kubernetes.io/zone", "eu-west-1b"));
    struct ebb_node *bare = node_new("bare", KV("kubernetes.io/os", "linux"));
    ebb_str zone = ebb_str_cstr("topology.kubernetes.io/zone");
    ebb_str host = ebb_str_cstr("kubernetes.io/hostname");
    ebb_str empty = ebb_str_cstr("");

    (void)state;
    assert_true(ebb_same_topology(zone, a1, a2));
    assert_false(ebb_same_topology(zone, a1, b1));
    assert_false(ebb_same_topology(host, a1, a2));
    assert_true(ebb_same_topology(host, a1, a1));
    assert_false(ebb_same_topology(zone, a1, bare));
    assert_false(ebb_same_topology(zone, bare, bare));   /* both lack it */
    assert_false(ebb_same_topology(empty, a1, a2));
    assert_false(ebb_same_topology(NULL, a1, a2));
    ebb_str_release(zone);
    ebb_str_release(host);
    ebb_str_release(empty);
    ebb_node_free(a1);
    ebb_node_free(a2);
    ebb_node_free(b1);
    ebb_node_free(bare);
    assert_int_equal(ebb_str_count(), base);
}

/* The destructors release nested terms, selectors and namespace lists. */
static void test_affinity_free_all(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_pod *p = pod_new("shop", "cart-0", KV("app", "cart"));
    struct ebb_affinity *a = affinity_new();

    (void)state;
    add_required(a, t_both(req("kubernetes.io/os", EBB_OP_IN, V("linux")),
                           req("metadata.name", EBB_OP_NOT_IN, V("cp-1"))));
    add_preferred(a, 10, t_expr(req("disktype", EBB_OP_IN, V("ssd", "nvme"))));
    a->naff_required = 1;
    a->aff_required = calloc(1, sizeof(*a->aff_required));
    a->aff_required[0].selector = sel("app=redis");
    a->aff_required[0].topology_key = ebb_str_cstr("kubernetes.io/hostname");
    a->aff_required[0].namespaces = strs(V("cache"), &a->aff_required[0].nnamespaces);
    a->nanti_preferred = 2;
    a->anti_preferred = calloc(2, sizeof(*a->anti_preferred));
    for (int i = 0; i < 2; i++) {
        struct ebb_pod_term *t = &a->anti_preferred[i].term;
        a->anti_preferred[i].weight = 100;
        t->selector = sel("app=cart");
        t->ns_selector = sel("team in (payments,checkout)");
        t->topology_key = ebb_str_cstr("topology.kubernetes.io/zone");
        t->match_keys = strs(V("pod-template-hash"), &t->nmatch_keys);
        t->mismatch_keys = strs(V("tenant", "env"), &t->nmismatch_keys);
    }
    p->affinity = a;
    ebb_pod_free(p);
    ebb_affinity_free(NULL);
    ebb_pod_free(NULL);
    assert_int_equal(ebb_str_count(), base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_term_expressions),
        cmocka_unit_test(test_node_term_invalid),
        cmocka_unit_test(test_node_term_fields),
        cmocka_unit_test(test_required_affinity),
        cmocka_unit_test(test_node_selector),
        cmocka_unit_test(test_preferred_weight),
        cmocka_unit_test(test_pod_term_namespaces),
        cmocka_unit_test(test_pod_term_selector_and_keys),
        cmocka_unit_test(test_same_topology),
        cmocka_unit_test(test_affinity_free_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
