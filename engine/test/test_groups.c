/* engine/strategy/groups.c: RemoveDuplicates' owner groups and decisions, the
 * anti-affinity index, the best preferred weight. Each test loads a tiny
 * cluster (kubectl List JSON) into a cache and calls the unit directly. */
#include "fixtures.h"

#include "ebb/groups.h"
#include "ebb/snapshot.h"

/* ---- a tiny cluster ------------------------------------------------------ */

static struct ebb_cache *cache;

static void begin(void)
{
    fx_begin();
}

static void end(void)
{
    cache = fx_load();
}

static void done(void)
{
    ebb_cache_destroy(cache);
    cache = NULL;
}

/* A node; labels: extra JSON members for metadata.labels (may be ""),
 * spec: JSON members for spec (may be ""). */
static void node(const char *name, const char *labels, const char *spec)
{
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"uid-%s\","
        "\"labels\":{\"kubernetes.io/hostname\":\"%s\"%s%s}},\"spec\":{%s},\"status\":{\"allocatable\":"
        "{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\","
        "\"status\":\"True\"}]}}",
        name, name, name, labels[0] ? "," : "", labels, spec);
}

/* A pod. owners: JSON array of ownerReferences or NULL; images: comma
 * separated; labels: JSON members; spec: extra JSON members for spec. */
static void pod(const char *ns, const char *name, const char *node_name, const char *owners,
                const char *images, const char *labels, const char *spec)
{
    char ctrs[1024] = "";
    size_t off = 0;
    int i = 0;
    const char *s = images;

    while (*s) {
        const char *e = strchr(s, ',');
        int n = e ? (int)(e - s) : (int)strlen(s);
        off += (size_t)snprintf(ctrs + off, sizeof(ctrs) - off,
                                "%s{\"name\":\"c%d\",\"image\":\"%.*s\",\"resources\":{\"requests\":"
                                "{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}}",
                                i ? "," : "", i, n, s);
        i++;
        s += n + (e ? 1 : 0);
    }
    fx_add("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\","
        "\"uid\":\"uid-%s-%s\",\"creationTimestamp\":\"2026-11-01T00:00:00Z\",\"labels\":{%s}%s%s},"
        "\"spec\":{\"nodeName\":\"%s\",\"containers\":[%s]%s%s},\"status\":{\"phase\":\"Running\"}}",
        name, ns, ns, name, labels, owners ? ",\"ownerReferences\":" : "", owners ? owners : "",
        node_name, ctrs, spec[0] ? "," : "", spec);
}

#define RS(n) "[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"" n "\",\"uid\":\"rs-" n "\",\"controller\":true}]"

static struct ebb_node *N(const char *name)
{
    struct ebb_node *n = ebb_cache_node(cache, ebb_str_find(name, strlen(name)));
    assert_non_null(n);
    return n;
}

static struct ebb_pod *P(const char *ns, const char *name)
{
    struct ebb_pod *p = ebb_cache_pod(cache, ebb_str_find(ns, strlen(ns)), ebb_str_find(name, strlen(name)));
    if (p == NULL)
        fail_msg("no pod %s/%s", ns, name);
    return p;
}

/* Every pod of the given nodes, node by node, namespace/name within a node,
 * as ebb.pods lists them. */
static size_t list(struct ebb_node *const *nodes, size_t n, struct ebb_pod **out, size_t cap)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        const struct ebb_podvec *pv = ebb_cache_pods_on_node(cache, nodes[i]->name);
        for (uint32_t j = 0; j < pv->n; j++) {
            assert_true(k < cap);
            out[k++] = pv->v[j];
        }
    }
    return k;
}

static void three_nodes(void)
{
    node("n1", "\"pool\":\"general\"", "");
    node("n2", "\"pool\":\"general\"", "");
    node("n3", "\"pool\":\"general\"", "");
}

/* (a, b, c) pods of ReplicaSet web-5d8f on n1, n2, n3, named web-<node>-<i>. */
static void spread(const char *ns, const char *rs, int a, int b, int c, const char *spec)
{
    const int counts[3] = { a, b, c };
    char name[64], owners[256];

    snprintf(owners, sizeof(owners),
             "[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"%s\",\"uid\":\"rs-%s\","
             "\"controller\":true}]", rs, rs);
    for (int n = 0; n < 3; n++) {
        char nd[16];
        snprintf(nd, sizeof(nd), "n%d", n + 1);
        for (int i = 0; i < counts[n]; i++) {
            snprintf(name, sizeof(name), "%s-%s-%d", rs, nd, i);
            pod(ns, name, nd, owners, "registry.example.com/web:1.0", "\"app\":\"web\"", spec);
        }
    }
}

static struct ebb_dups *find(struct ebb_node *const *nodes, size_t nnodes, const char *exclude)
{
    struct ebb_pod *pods[256];
    size_t n = list(nodes, nnodes, pods, 256);
    struct ebb_dups *d = NULL;
    ebb_str ex[1] = { exclude ? ebb_str_find(exclude, strlen(exclude)) : NULL };

    assert_int_equal(ebb_dups_find(pods, n, nodes, nnodes, ex, exclude ? 1 : 0, NULL, &d), 0);
    assert_non_null(d);
    return d;
}

static const char *evicted(const struct ebb_dup_node *dn, uint32_t i)
{
    return dn->dups[dn->first_evict + i]->name;
}

/* ---- RemoveDuplicates ---------------------------------------------------- */

static void dups_uniform_spread(void **state)
{
    struct ebb_dups *d;
    const struct ebb_dup_group *g;

    begin();
    three_nodes();
    spread("shop", "web-5d8f", 5, 3, 1, "");
    end();
    {
        struct ebb_node *nodes[] = { N("n1"), N("n2"), N("n3") };
        d = find(nodes, 3, NULL);
    }
    /* (5,3,1) over 3 nodes: keep 3 per node, 2 go from n1 */
    assert_int_equal(d->ngroups, 1);
    g = &d->groups[0];
    assert_string_equal(g->ns, "shop");
    assert_string_equal(g->kind, "ReplicaSet");
    assert_string_equal(g->name, "web-5d8f");
    assert_string_equal(g->images, "registry.example.com/web:1.0");
    assert_int_equal(g->occurrences, 9);
    assert_int_equal(g->ntargets, 3);
    assert_int_equal(g->upper_avg, 3);
    assert_int_equal(g->nnodes, 2);            /* n3 has one pod: no duplicate */
    assert_string_equal(g->nodes[0].node_name, "n1");
    assert_int_equal(g->nodes[0].ndups, 4);    /* the first pod stays out */
    assert_string_equal(g->nodes[0].dups[0]->name, "web-5d8f-n1-1");
    assert_int_equal(g->nodes[0].ndups - g->nodes[0].first_evict, 2);
    assert_string_equal(evicted(&g->nodes[0], 0), "web-5d8f-n1-3");
    assert_string_equal(evicted(&g->nodes[0], 1), "web-5d8f-n1-4");
    assert_string_equal(g->nodes[1].node_name, "n2");
    assert_int_equal(g->nodes[1].first_evict, g->nodes[1].ndups);   /* 3 is not above 3 */
    ebb_dups_destroy(d);

    /* n3 left out of the cycle: its pod is not counted, (5,3) -> 4 each */
    {
        struct ebb_node *nodes[] = { N("n1"), N("n2") };
        d = find(nodes, 2, NULL);
    }
    g = &d->groups[0];
    assert_int_equal(g->occurrences, 8);
    assert_int_equal(g->upper_avg, 4);
    assert_int_equal(g->nodes[0].ndups - g->nodes[0].first_evict, 1);
    assert_string_equal(evicted(&g->nodes[0], 0), "web-5d8f-n1-4");
    ebb_dups_destroy(d);
    done();
}

static void dups_keys_images_and_owners(void **state)
{
    struct ebb_dups *d;

    begin();
    three_nodes();
    /* same owner, other images: no duplicates */
    pod("media", "t-1", "n1", RS("transcoder-58f9"), "transcoder:3.2", "", "");
    pod("media", "t-2", "n1", RS("transcoder-58f9"), "transcoder:3.2,istio/proxyv2:1.22", "", "");
    /* a pod with two containers of one image does not match itself */
    pod("media", "thumb-1", "n1", RS("thumb-7d6c"), "thumb:1.0,thumb:1.0", "", "");
    /* images in another order are the same images */
    pod("media", "w-1", "n2", RS("web-1a2b"), "nginx:1.27,envoy:1.31", "", "");
    pod("media", "w-2", "n2", RS("web-1a2b"), "envoy:1.31,nginx:1.27", "", "");
    /* no owner, an excluded kind */
    pod("media", "bare-1", "n3", NULL, "busybox:1.36", "", "");
    pod("media", "bare-2", "n3", NULL, "busybox:1.36", "", "");
    pod("media", "job-1", "n3",
        "[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"import-1\",\"uid\":\"j1\",\"controller\":true}]",
        "import:1", "", "");
    pod("media", "job-2", "n3",
        "[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"import-1\",\"uid\":\"j1\",\"controller\":true}]",
        "import:1", "", "");
    /* two owners: a duplicate under both owner keys */
    pod("batch", "i-1", "n1",
        "[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"ingest-a\",\"uid\":\"a\",\"controller\":true},"
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"ingest-b\",\"uid\":\"b\"}]",
        "ingest:1", "", "");
    pod("batch", "i-2", "n1",
        "[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"ingest-a\",\"uid\":\"a\",\"controller\":true},"
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"ingest-b\",\"uid\":\"b\"}]",
        "ingest:1", "", "");
    /* one of ingest-a's owners only: counted for ingest-a, no duplicate */
    pod("batch", "i-3", "n1", RS("ingest-a"), "ingest:1", "", "");
    end();
    {
        struct ebb_node *nodes[] = { N("n1"), N("n2"), N("n3") };
        d = find(nodes, 3, "Job");
    }
    /* sorted by namespace, kind, name */
    assert_int_equal(d->ngroups, 3);
    assert_string_equal(d->groups[0].ns, "batch");
    assert_string_equal(d->groups[0].name, "ingest-a");
    assert_int_equal(d->groups[0].occurrences, 3);
    assert_int_equal(d->groups[0].nodes[0].ndups, 1);
    assert_string_equal(d->groups[0].nodes[0].dups[0]->name, "i-2");
    assert_string_equal(d->groups[1].name, "ingest-b");
    assert_int_equal(d->groups[1].occurrences, 2);
    assert_string_equal(d->groups[1].nodes[0].dups[0]->name, "i-2");
    assert_string_equal(d->groups[2].name, "web-1a2b");
    assert_string_equal(d->groups[2].images, "envoy:1.31#nginx:1.27");
    assert_string_equal(d->groups[2].nodes[0].dups[0]->name, "w-2");
    /* ingest-a: 3 / 3 nodes -> 1 each: i-2 goes */
    assert_int_equal(d->groups[0].upper_avg, 1);
    assert_int_equal(d->groups[0].nodes[0].first_evict, 0);
    ebb_dups_destroy(d);

    /* without the exclusion the Job's pods are duplicates too */
    {
        struct ebb_node *nodes[] = { N("n1"), N("n2"), N("n3") };
        d = find(nodes, 3, NULL);
    }
    assert_int_equal(d->ngroups, 4);
    assert_string_equal(d->groups[2].kind, "Job");
    assert_string_equal(d->groups[2].nodes[0].dups[0]->name, "job-2");
    ebb_dups_destroy(d);
    done();
}

static void dups_feasible_targets(void **state)
{
    struct ebb_dups *d;

    begin();
    three_nodes();
    node("cp1", "\"node-role.kubernetes.io/control-plane\":\"\"",
         "\"taints\":[{\"key\":\"node-role.kubernetes.io/control-plane\",\"effect\":\"NoSchedule\"}]");
    node("cp2", "\"node-role.kubernetes.io/control-plane\":\"\"",
         "\"taints\":[{\"key\":\"node-role.kubernetes.io/control-plane\",\"effect\":\"NoSchedule\"}]");
    node("gpu", "\"pool\":\"gpu\"",
         "\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":\"NoExecute\"}]");
    node("soft", "\"pool\":\"general\"",
         "\"taints\":[{\"key\":\"spot\",\"effect\":\"PreferNoSchedule\"}]");
    /* a: no tolerations: n1-n3 and soft (PreferNoSchedule does not count) */
    spread("a", "plain", 5, 3, 1, "");
    /* b: tolerates the control plane: 6 nodes */
    spread("b", "tolerant", 5, 3, 1,
           "\"tolerations\":[{\"key\":\"node-role.kubernetes.io/control-plane\",\"operator\":\"Exists\"}]");
    /* c: tolerates it but its nodeSelector keeps it on pool=general */
    spread("c", "selected", 5, 3, 1,
           "\"nodeSelector\":{\"pool\":\"general\"},"
           "\"tolerations\":[{\"key\":\"node-role.kubernetes.io/control-plane\",\"operator\":\"Exists\"}]");
    /* d: required affinity to a pool nobody has: no targets */
    spread("d", "nowhere", 3, 0, 0,
           "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
           "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"In\","
           "\"values\":[\"nvme\"]}]}]}}}");
    /* e: a required term the scheduler cannot parse (a value that is not a
     * label value): upstream ignores the error and counts every node */
    spread("e", "broken", 3, 0, 0,
           "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
           "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"In\","
           "\"values\":[\"not a value\"]}]}]}}}");
    end();
    {
        struct ebb_node *nodes[] = { N("n1"), N("n2"), N("n3"), N("cp1"), N("cp2"), N("gpu"), N("soft") };
        d = find(nodes, 7, NULL);
    }
    assert_int_equal(d->ngroups, 5);
    /* a: n1 n2 n3 soft */
    assert_int_equal(d->groups[0].ntargets, 4);
    assert_null(d->groups[0].targets);          /* listed on demand */
    assert_int_equal(ebb_dups_targets(d, 0), 0);
    assert_string_equal(d->groups[0].targets[0]->name, "n1");
    assert_string_equal(d->groups[0].targets[3]->name, "soft");
    assert_int_equal(ebb_dups_targets(d, 3), 0);   /* no targets: none listed */
    assert_null(d->groups[3].targets);
    assert_int_equal(ebb_dups_targets(d, 5), EBB_EINVAL);
    assert_int_equal(d->groups[0].upper_avg, 3);
    /* b: the two control-plane nodes too */
    assert_int_equal(d->groups[1].ntargets, 6);
    assert_int_equal(d->groups[1].upper_avg, 2);
    assert_int_equal(d->groups[1].nodes[0].ndups - d->groups[1].nodes[0].first_evict, 3);
    assert_int_equal(d->groups[1].nodes[1].ndups - d->groups[1].nodes[1].first_evict, 1);
    /* c: pool=general, tolerated: n1 n2 n3 soft */
    assert_int_equal(d->groups[2].ntargets, 4);
    /* d: nowhere: nothing to evict */
    assert_int_equal(d->groups[3].ntargets, 0);
    assert_int_equal(d->groups[3].upper_avg, 0);
    assert_int_equal(d->groups[3].nodes[0].first_evict, d->groups[3].nodes[0].ndups);
    /* e: the unparsable term counts as a match: every node without a
     * NoSchedule/NoExecute taint */
    assert_int_equal(d->groups[4].ntargets, 4);
    assert_int_equal(d->groups[4].upper_avg, 1);
    ebb_dups_destroy(d);
    done();
}

static void dups_one_feasible_node_is_none(void **state)
{
    struct ebb_dups *d;

    begin();
    node("n1", "", "");
    node("gpu", "", "\"taints\":[{\"key\":\"nvidia.com/gpu\",\"effect\":\"NoSchedule\"}]");
    pod("shop", "cart-1", "n1", RS("cart-7c9d"), "cart:1", "", "");
    pod("shop", "cart-2", "n1", RS("cart-7c9d"), "cart:1", "", "");
    end();
    {
        struct ebb_node *nodes[] = { N("n1"), N("gpu") };
        d = find(nodes, 2, NULL);
    }
    /* a pod's nodes count only when it fits more than one */
    assert_int_equal(d->ngroups, 1);
    assert_int_equal(d->groups[0].ntargets, 0);
    assert_int_equal(d->groups[0].upper_avg, 0);
    ebb_dups_destroy(d);
    done();
}

/* Upstream compares keys as text, "namespace/kind/name/image": with a '/'
 * in an owner name, two different owners can make the same text. */
static void dups_keys_are_text(void **state)
{
    struct ebb_dups *d;
    (void)state;

    begin();
    three_nodes();
    pod("shop", "first", "n1", RS("a/b"), "c", "", "");
    pod("shop", "second", "n1", RS("a"), "b/c", "", "");
    pod("shop", "third", "n2", RS("a"), "b/c", "", "");
    end();
    {
        struct ebb_node *nodes[] = { N("n1"), N("n2"), N("n3") };
        d = find(nodes, 3, NULL);
    }
    /* "shop/ReplicaSet/a/b/c" both: the second pod is a duplicate of the
     * first, under its own owner key (a, images "b/c") */
    assert_int_equal(d->ngroups, 1);
    assert_string_equal(d->groups[0].name, "a");
    assert_string_equal(d->groups[0].images, "b/c");
    assert_int_equal(d->groups[0].occurrences, 2);
    assert_int_equal(d->groups[0].nnodes, 1);
    assert_string_equal(d->groups[0].nodes[0].dups[0]->name, "second");
    ebb_dups_destroy(d);
    done();
}

/* Owners and images by address give what their text gives: the same pods
 * grouped the same way whatever the order they come in. */
static void dups_multi_owner_and_images(void **state)
{
    struct ebb_dups *d;
    (void)state;

    begin();
    three_nodes();
#define TWO "[{\"apiVersion\":\"v1\",\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"j1\"}," \
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"r\",\"uid\":\"r1\"}]"
#define TWO_SWAPPED "[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"r\",\"uid\":\"r1\"}," \
            "{\"apiVersion\":\"v1\",\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"j1\"}]"
    pod("shop", "p1", "n1", TWO, "x:1,y:1", "", "");
    pod("shop", "p2", "n1", TWO_SWAPPED, "y:1,x:1", "", "");   /* the same keys, reordered */
    pod("shop", "p3", "n1", TWO, "x:1,y:2", "", "");           /* not the same */
    pod("shop", "p4", "n2", TWO, "x:1,y:1", "", "");
#undef TWO
#undef TWO_SWAPPED
    end();
    {
        struct ebb_node *nodes[] = { N("n1"), N("n2"), N("n3") };
        d = find(nodes, 3, NULL);
    }
    /* p2 duplicates p1 under both owner keys (Job j and ReplicaSet r, images
     * "x:1#y:1"), each counting p1, p2 and p4 */
    assert_int_equal(d->ngroups, 2);
    assert_string_equal(d->groups[0].kind, "Job");
    assert_string_equal(d->groups[1].kind, "ReplicaSet");
    for (int i = 0; i < 2; i++) {
        assert_string_equal(d->groups[i].images, "x:1#y:1");
        assert_int_equal(d->groups[i].occurrences, 3);
        assert_int_equal(d->groups[i].nnodes, 1);
        assert_int_equal(d->groups[i].nodes[0].ndups, 1);
        assert_string_equal(d->groups[i].nodes[0].dups[0]->name, "p2");
    }
    ebb_dups_destroy(d);
    done();
}

static void dups_bad_arguments(void **state)
{
    struct ebb_dups *d = NULL;

    assert_int_equal(ebb_dups_find(NULL, 1, NULL, 0, NULL, 0, NULL, &d), EBB_EINVAL);
    assert_int_equal(ebb_dups_find(NULL, 0, NULL, 0, NULL, 0, NULL, NULL), EBB_EINVAL);
    assert_int_equal(ebb_dups_find(NULL, 0, NULL, 0, NULL, 0, NULL, &d), 0);
    assert_int_equal(d->ngroups, 0);
    ebb_dups_destroy(d);
    ebb_dups_destroy(NULL);
}

/* ---- the anti-affinity index -------------------------------------------- */

#define ANTI(sel, key, extra)                                                                  \
    "\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"  \
    "\"labelSelector\":{\"matchLabels\":" sel "},\"topologyKey\":\"" key "\"" extra "}]}}"

static struct ebb_anti_index *index_all(void)
{
    struct ebb_node *const *nodes;
    uint32_t nn;
    struct ebb_pod *pods[128];
    size_t n;
    struct ebb_anti_index *ix = NULL;

    nodes = ebb_cache_nodes_sorted(cache, &nn);
    n = list(nodes, nn, pods, 128);
    assert_int_equal(ebb_anti_index_create(cache, pods, n, nodes, nn, NULL, &ix), 0);
    return ix;
}

static void anti_topology_domains(void **state)
{
    struct ebb_anti_index *ix;
    int term;

    begin();
    node("a1", "\"topology.kubernetes.io/zone\":\"a\"", "");
    node("a2", "\"topology.kubernetes.io/zone\":\"a\"", "");
    node("b1", "\"topology.kubernetes.io/zone\":\"b\"", "");
    node("edge", "", "");
    pod("db", "etcd-0", "a1", NULL, "etcd:3.5", "\"app\":\"etcd\"", ANTI("{\"app\":\"etcd\"}", "topology.kubernetes.io/zone", ""));
    pod("db", "etcd-1", "a2", NULL, "etcd:3.5", "\"app\":\"etcd\"", ANTI("{\"app\":\"etcd\"}", "topology.kubernetes.io/zone", ""));
    pod("db", "etcd-2", "b1", NULL, "etcd:3.5", "\"app\":\"etcd\"", ANTI("{\"app\":\"etcd\"}", "topology.kubernetes.io/zone", ""));
    /* no zone label on edge: only its own node is its domain */
    pod("db", "etcd-3", "edge", NULL, "etcd:3.5", "\"app\":\"etcd\"", ANTI("{\"app\":\"etcd\"}", "topology.kubernetes.io/zone", ""));
    pod("web", "w-1", "b1", NULL, "web:1", "\"app\":\"web\"", ANTI("{\"app\":\"web\"}", "kubernetes.io/hostname", ""));
    pod("web", "w-2", "b1", NULL, "web:1", "\"app\":\"web\"", "");
    pod("web", "w-3", "a1", NULL, "web:1", "\"app\":\"web\"", ANTI("{\"app\":\"web\"}", "kubernetes.io/hostname", ""));
    end();
    ix = index_all();
    assert_ptr_equal(ebb_anti_index_violation(ix, P("db", "etcd-0"), &term), P("db", "etcd-1"));
    assert_int_equal(term, 0);
    assert_ptr_equal(ebb_anti_index_violation(ix, P("db", "etcd-1"), NULL), P("db", "etcd-0"));
    assert_null(ebb_anti_index_violation(ix, P("db", "etcd-2"), &term));
    assert_int_equal(term, -1);
    assert_null(ebb_anti_index_violation(ix, P("db", "etcd-3"), NULL));
    assert_ptr_equal(ebb_anti_index_violation(ix, P("web", "w-1"), NULL), P("web", "w-2"));
    assert_null(ebb_anti_index_violation(ix, P("web", "w-3"), NULL));
    /* pods without terms never violate anything */
    assert_null(ebb_anti_index_violation(ix, P("web", "w-2"), NULL));

    /* once etcd-0 is gone, etcd-1 is alone in zone a */
    assert_int_equal(ebb_anti_index_remove(ix, P("db", "etcd-0")), 0);
    assert_int_equal(ebb_anti_index_remove(ix, P("db", "etcd-0")), EBB_ENOENT);
    assert_null(ebb_anti_index_violation(ix, P("db", "etcd-1"), NULL));
    ebb_anti_index_destroy(ix);
    done();
}

static void anti_namespaces_and_names(void **state)
{
    struct ebb_anti_index *ix;

    begin();
    node("n1", "", "");
    node("n2", "", "");
    pod("tenant-b", "noisy", "n1", NULL, "noisy:1", "\"app\":\"noisy\"", "");
    /* term namespaces: tenant-b */
    pod("tenant-a", "analytics", "n1", NULL, "a:1", "\"app\":\"analytics\"",
        ANTI("{\"app\":\"noisy\"}", "kubernetes.io/hostname", ",\"namespaces\":[\"tenant-b\"]"));
    /* no namespaces: its own */
    pod("tenant-a", "reports", "n1", NULL, "r:1", "\"app\":\"reports\"",
        ANTI("{\"app\":\"noisy\"}", "kubernetes.io/hostname", ""));
    /* a namespaceSelector is ignored: still its own namespace */
    pod("tenant-a", "exporter", "n1", NULL, "e:1", "\"app\":\"exporter\"",
        ANTI("{\"app\":\"noisy\"}", "kubernetes.io/hostname", ",\"namespaceSelector\":{}"));
    /* a pod of the same name never counts, even in another namespace */
    pod("blue", "queue-0", "n2", NULL, "q:1", "\"app\":\"queue\"",
        ANTI("{\"app\":\"queue\"}", "kubernetes.io/hostname", ",\"namespaces\":[\"blue\",\"green\"]"));
    pod("green", "queue-0", "n2", NULL, "q:1", "\"app\":\"queue\"", "");
    /* a nil labelSelector selects nothing */
    pod("green", "odd", "n2", NULL, "o:1", "\"app\":\"odd\"",
        "\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
        "[{\"topologyKey\":\"kubernetes.io/hostname\"}]}}");
    /* In with several values */
    pod("green", "picky", "n2", NULL, "p:1", "\"app\":\"picky\"",
        "\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
        "[{\"labelSelector\":{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\","
        "\"values\":[\"cache\",\"queue\"]}]},\"topologyKey\":\"kubernetes.io/hostname\"}]}}");
    end();
    ix = index_all();
    assert_ptr_equal(ebb_anti_index_violation(ix, P("tenant-a", "analytics"), NULL), P("tenant-b", "noisy"));
    assert_null(ebb_anti_index_violation(ix, P("tenant-a", "reports"), NULL));
    assert_null(ebb_anti_index_violation(ix, P("tenant-a", "exporter"), NULL));
    assert_null(ebb_anti_index_violation(ix, P("blue", "queue-0"), NULL));
    assert_null(ebb_anti_index_violation(ix, P("green", "odd"), NULL));
    assert_ptr_equal(ebb_anti_index_violation(ix, P("green", "picky"), NULL), P("green", "queue-0"));
    ebb_anti_index_destroy(ix);
    done();
}

static void anti_candidates_and_node_set(void **state)
{
    struct ebb_anti_index *ix = NULL;
    struct ebb_pod **v = NULL;
    struct ebb_pod *pods[16];
    long n;

    begin();
    node("n1", "", "");
    node("n2", "", "");
    pod("shop", "web-a", "n1", NULL, "web:1", "\"app\":\"web\"", ANTI("{\"app\":\"web\"}", "kubernetes.io/hostname", ""));
    pod("shop", "web-b", "n1", NULL, "web:1", "\"app\":\"web\"", "");
    pod("shop", "web-c", "n1", NULL, "web:1", "\"app\":\"web\"", ANTI("{\"app\":\"web\"}", "kubernetes.io/hostname", ""));
    pod("shop", "web-d", "n2", NULL, "web:1", "\"app\":\"web\"", "");
    end();
    {
        struct ebb_node *nodes[] = { N("n1"), N("n2") };
        size_t np = list(nodes, 2, pods, 16);
        assert_int_equal(ebb_anti_index_create(cache, pods, np, nodes, 2, NULL, &ix), 0);
    }
    n = ebb_anti_index_candidates(ix, N("n1")->name, &v);
    assert_int_equal(n, 2);
    assert_string_equal(v[0]->name, "web-a");
    assert_string_equal(v[1]->name, "web-c");
    free(v);
    assert_int_equal(ebb_anti_index_remove(ix, P("shop", "web-a")), 0);
    n = ebb_anti_index_candidates(ix, N("n1")->name, &v);
    assert_int_equal(n, 1);
    free(v);
    assert_int_equal(ebb_anti_index_candidates(ix, N("n2")->name, &v), 0);
    assert_null(v);
    ebb_anti_index_destroy(ix);

    /* only n2 in the node set: n1's pods are not indexed, checks say no */
    {
        struct ebb_node *nodes[] = { N("n2") };
        size_t np = list((struct ebb_node *[]){ N("n1"), N("n2") }, 2, pods, 16);
        assert_int_equal(ebb_anti_index_create(cache, pods, np, nodes, 1, NULL, &ix), 0);
    }
    assert_null(ebb_anti_index_violation(ix, P("shop", "web-a"), NULL));
    assert_int_equal(ebb_anti_index_remove(ix, P("shop", "web-a")), EBB_ENOENT);
    ebb_anti_index_destroy(ix);
    ebb_anti_index_destroy(NULL);
    assert_int_equal(ebb_anti_index_create(NULL, NULL, 0, NULL, 0, NULL, &ix), EBB_EINVAL);
    done();
}

static void anti_replicas_spread_by_hostname(void **state)
{
    struct ebb_anti_index *ix;
    char name[32];

    begin();
    for (int i = 0; i < 6; i++)
        node((const char *[]){ "n0", "n1", "n2", "n3", "n4", "n5" }[i], "", "");
    /* one replica per node but n3, which has two */
    for (int i = 0; i < 7; i++) {
        char nd[16];
        snprintf(name, sizeof(name), "web-%d", i);
        snprintf(nd, sizeof(nd), "n%d", i < 6 ? i : 3);
        pod("shop", name, nd, NULL, "web:1", "\"app\":\"web\"",
            ANTI("{\"app\":\"web\"}", "kubernetes.io/hostname", ""));
    }
    end();
    ix = index_all();
    for (int i = 0; i < 7; i++) {
        const struct ebb_pod *peer;
        snprintf(name, sizeof(name), "web-%d", i);
        peer = ebb_anti_index_violation(ix, P("shop", name), NULL);
        if (i == 3)
            assert_ptr_equal(peer, P("shop", "web-6"));
        else if (i == 6)
            assert_ptr_equal(peer, P("shop", "web-3"));
        else
            assert_null(peer);
    }
    ebb_anti_index_destroy(ix);
    done();
}

/* ---- node affinity ------------------------------------------------------- */

static void best_preferred_weight_over_nodes(void **state)
{
    begin();
    node("a", "\"zone\":\"a\",\"disk\":\"ssd\"", "");
    node("b", "\"zone\":\"b\"", "");
    node("gpu", "\"zone\":\"b\",\"accelerator\":\"a10g\"", "\"taints\":[{\"key\":\"gpu\",\"effect\":\"NoSchedule\"}]");
    pod("s", "ranker", "b", NULL, "r:1", "",
        "\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":["
        "{\"weight\":30,\"preference\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}]}},"
        "{\"weight\":10,\"preference\":{\"matchExpressions\":[{\"key\":\"disk\",\"operator\":\"Exists\"}]}},"
        "{\"weight\":80,\"preference\":{\"matchExpressions\":[{\"key\":\"accelerator\",\"operator\":\"Exists\"}]}}]}}");
    pod("s", "plain", "b", NULL, "p:1", "", "");
    end();
    {
        struct ebb_node *nodes[] = { N("a"), N("b") };
        struct ebb_node *all[] = { N("a"), N("b"), N("gpu") };
        assert_int_equal(ebb_pod_best_preferred_weight(P("s", "ranker"), nodes, 2), 40);
        /* the tainted node counts: fitting is not asked */
        assert_int_equal(ebb_pod_best_preferred_weight(P("s", "ranker"), all, 3), 80);
        assert_int_equal(ebb_pod_best_preferred_weight(P("s", "plain"), all, 3), 0);
        assert_int_equal(ebb_pod_best_preferred_weight(P("s", "ranker"), NULL, 0), 0);
    }
    {
        struct ebb_node *all[] = { N("a"), N("b"), N("gpu") };
        int64_t w = -1;
        /* the first node above the given weight, in the order given */
        assert_ptr_equal(ebb_pod_better_preferred_node(P("s", "ranker"), 0, all, 3, &w), N("a"));
        assert_int_equal(w, 40);
        assert_ptr_equal(ebb_pod_better_preferred_node(P("s", "ranker"), 40, all, 3, &w), N("gpu"));
        assert_int_equal(w, 80);
        assert_null(ebb_pod_better_preferred_node(P("s", "ranker"), 80, all, 3, &w));
        assert_int_equal(w, 0);
        assert_null(ebb_pod_better_preferred_node(P("s", "plain"), -1, all, 3, NULL));
    }
    done();
}

/* An expired budget (the stop flag a plugin's vm raises) ends the work
 * with EBB_ELIMIT and nothing to free; cleared, the same call answers. */
static void dups_and_anti_stop_when_told(void **state)
{
    static atomic_int stop = 1;
    struct ebb_pod *pods[256];
    struct ebb_dups *d = NULL;
    struct ebb_anti_index *ix = NULL;
    size_t n;
    (void)state;

    begin();
    three_nodes();
    spread("shop", "web-5d8f", 5, 3, 1, "");
    end();
    {
        struct ebb_node *nodes[] = { N("n1"), N("n2"), N("n3") };
        n = list(nodes, 3, pods, 256);
        stop = 1;
        assert_int_equal(ebb_dups_find(pods, n, nodes, 3, NULL, 0, &stop, &d), EBB_ELIMIT);
        assert_null(d);
        stop = 0;
        assert_int_equal(ebb_dups_find(pods, n, nodes, 3, NULL, 0, &stop, &d), 0);
        assert_int_equal(d->ngroups, 1);
        ebb_dups_destroy(d);
    }
    /* the index polls every 1024 pods: list them more than once (a pod
     * listed twice is indexed once) */
    {
        struct ebb_node *nodes[] = { N("n1"), N("n2"), N("n3") };
        struct ebb_pod *many[2048];
        for (size_t i = 0; i < 2048; i++)
            many[i] = pods[i % n];
        stop = 1;
        assert_int_equal(ebb_anti_index_create(cache, many, 2048, nodes, 3, &stop, &ix), EBB_ELIMIT);
        assert_null(ix);
        stop = 0;
        assert_int_equal(ebb_anti_index_create(cache, many, 2048, nodes, 3, &stop, &ix), 0);
        ebb_anti_index_destroy(ix);
    }
    done();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dups_uniform_spread),
        cmocka_unit_test(dups_and_anti_stop_when_told),
        cmocka_unit_test(dups_keys_images_and_owners),
        cmocka_unit_test(dups_feasible_targets),
        cmocka_unit_test(dups_keys_are_text),
        cmocka_unit_test(dups_multi_owner_and_images),
        cmocka_unit_test(dups_one_feasible_node_is_none),
        cmocka_unit_test(dups_bad_arguments),
        cmocka_unit_test(anti_topology_domains),
        cmocka_unit_test(anti_namespaces_and_names),
        cmocka_unit_test(anti_candidates_and_node_set),
        cmocka_unit_test(anti_replicas_spread_by_hostname),
        cmocka_unit_test(best_preferred_weight_over_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
