/* engine/model/snapshot.c: kubectl List JSON (streamed) and YAML into the
 * cache; list_reader.c and json_arena.c: a server's LIST answers. */
#include "fixtures.h"

#include <cjson/cJSON.h>
#include <unistd.h>

#include "ebb/cache.h"
#include "ebb/snapshot.h"

#define JSON_FIXTURE "spec/fixtures/kubectl-list.json"
#define YAML_FIXTURE "spec/fixtures/kubectl-list.yaml"
#define MI (1024LL * 1024)

extern size_t ebb__snapshot_window;

static size_t str_base;

static int setup(void **state)
{
    (void)state;
    str_base = ebb_str_count();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ebb__snapshot_window = 1u << 20;
    assert_int_equal(ebb_str_count(), str_base);
    return 0;
}

static struct ebb_cache *load_file(const char *path, struct ebb_snapshot_stats *st)
{
    struct ebb_cache *c = NULL;
    struct ebb_error err;
    char msg[1024];

    assert_int_equal(ebb_cache_create(&c), 0);
    ebb_error_clear(&err);
    if (ebb_snapshot_load(c, path, st, &err) != 0) {
        ebb_error_format(&err, msg, sizeof(msg));
        fail_msg("%s", msg);
    }
    return c;
}

static struct ebb_cache *load_text(const char *text, struct ebb_snapshot_stats *st)
{
    struct ebb_cache *c = NULL;
    struct ebb_error err;
    char msg[1024];

    assert_int_equal(ebb_cache_create(&c), 0);
    if (ebb_snapshot_load_buf(c, text, strlen(text), "t", st, &err) != 0) {
        ebb_error_format(&err, msg, sizeof(msg));
        fail_msg("%s", msg);
    }
    return c;
}

/* Load `text` that must fail; returns the formatted error. */
static struct ebb_error load_error(const char *name, const char *text, char *msg, size_t len)
{
    struct ebb_cache *c = NULL;
    struct ebb_error err;

    assert_int_equal(ebb_cache_create(&c), 0);
    ebb_error_clear(&err);
    assert_int_not_equal(ebb_snapshot_load_buf(c, text, strlen(text), name, NULL, &err), 0);
    ebb_error_format(&err, msg, len);
    ebb_cache_destroy(c);
    return err;
}

static struct ebb_pod *pod(const struct ebb_cache *c, const char *ns, const char *name)
{
    struct ebb_pod *p = ebb_cache_pod(c, ebb_str_find(ns, strlen(ns)),
                                      ebb_str_find(name, strlen(name)));
    if (p == NULL)
        fail_msg("no pod %s/%s", ns, name);
    return p;
}

static struct ebb_node *node(const struct ebb_cache *c, const char *name)
{
    struct ebb_node *n = ebb_cache_node(c, ebb_str_find(name, strlen(name)));
    if (n == NULL)
        fail_msg("no node %s", name);
    return n;
}

/* The source bytes are a JSON object whose metadata.name is `name`. */
static void check_source(const struct ebb_cache *c, const struct ebb_src *src, const char *name)
{
    char *text = NULL;
    size_t len = 0;
    cJSON *j, *m;

    assert_true(src->len > 0);
    assert_int_equal(ebb_cache_read_source(c, src, &text, &len), 0);
    assert_int_equal(len, src->len);
    assert_int_equal(text[0], '{');
    assert_int_equal(text[len - 1], '}');
    assert_non_null(j = cJSON_ParseWithLength(text, len));
    m = cJSON_GetObjectItemCaseSensitive(j, "metadata");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(m, "name")->valuestring, name);
    cJSON_Delete(j);
    free(text);
}

static void check_counts(const struct ebb_snapshot_stats *st)
{
    assert_int_equal(st->items, 25);
    assert_int_equal(st->kinds[EBB_KIND_POD], 10);
    assert_int_equal(st->kinds[EBB_KIND_NODE], 3);
    assert_int_equal(st->kinds[EBB_KIND_PDB], 2);
    assert_int_equal(st->kinds[EBB_KIND_NAMESPACE], 3);
    assert_int_equal(st->kinds[EBB_KIND_PRIORITY_CLASS], 2);
    assert_int_equal(st->kinds[EBB_KIND_PVC], 1);
    assert_int_equal(st->kinds[EBB_KIND_NODE_METRICS], 2);
    assert_int_equal(st->kinds[EBB_KIND_POD_METRICS], 1);
    assert_int_equal(st->skipped, 1);
    assert_int_equal(st->nskipped_kinds, 1);
    assert_string_equal(st->skipped_kinds[0].kind, "Deployment");
    assert_int_equal(st->skipped_kinds[0].n, 1);
}

static void test_json_fixture(void **state)
{
    (void)state;
    struct ebb_snapshot_stats st;
    struct ebb_cache *c = load_file(JSON_FIXTURE, &st);
    size_t flen;
    char *file = fixture_read(JSON_FIXTURE, &flen);
    struct ebb_pod *p;
    struct ebb_node *n;

    assert_non_null(file);
    check_counts(&st);
    assert_int_equal(st.bytes, flen);
    assert_int_equal(ebb_cache_count(c, EBB_KIND_POD), 10);

    p = pod(c, "prod", "mesh-app-66b7-tt5vb");
    assert_int_equal(ebb_res_get(&p->requests, EBB_RES_CPU), 2350);
    assert_int_equal(ebb_res_get(&p->requests, EBB_RES_MEMORY), 1272 * MI);
    assert_int_equal(p->flags, EBB_POD_PREFER_NO_EVICTION | EBB_POD_TERMINATING |
                                   EBB_POD_RESOURCE_CLAIMS | EBB_POD_HAS_PRIORITY | EBB_POD_READY);
    assert_int_equal(p->init_restarts, 3);
    assert_int_equal(p->qos, EBB_QOS_BURSTABLE);

    p = pod(c, "kube-system", "kube-apiserver-node-a");
    assert_int_equal(p->flags, EBB_POD_MIRROR | EBB_POD_STATIC | EBB_POD_LOCAL_STORAGE |
                                   EBB_POD_HAS_PRIORITY | EBB_POD_READY);
    assert_int_equal(p->priority, 2000001000);
    assert_string_equal(p->owners[0].kind, "Node");

    p = pod(c, "default", "debug-shell");
    assert_int_equal(p->flags, EBB_POD_EVICT_ANNOTATION | EBB_POD_LOCAL_STORAGE |
                                   EBB_POD_HAS_PRIORITY | EBB_POD_READY);
    assert_int_equal(p->qos, EBB_QOS_BEST_EFFORT);
    assert_int_equal(p->nowners, 0);
    assert_int_equal(p->requests.n, 0);

    p = pod(c, "default", "report-28841-7kq2d");
    assert_int_equal(p->phase, EBB_PHASE_FAILED);
    assert_int_equal(p->cstatus[0].state, EBB_CSTATE_TERMINATED);
    assert_int_equal(p->cstatus[0].exit_code, 2);
    assert_false(p->flags & EBB_POD_READY);

    p = pod(c, "prod", "worker-5f6d8-hh7rt");
    assert_int_equal(p->restarts, 12);
    assert_string_equal(p->cstatus[0].reason, "CrashLoopBackOff");
    assert_string_equal(p->cstatus[0].last_reason, "OOMKilled");
    assert_int_equal(p->cstatus[0].last_exit_code, 137);

    p = pod(c, "prod", "web-7d4b9c-pend1");
    assert_null(p->node);
    assert_int_equal(p->phase, EBB_PHASE_PENDING);

    p = pod(c, "prod", "db-0");
    assert_int_equal(p->npvcs, 1);
    assert_string_equal(p->pvcs[0], "data-db-0");
    assert_int_equal(p->affinity->nrequired, 2);
    assert_int_equal(p->qos, EBB_QOS_GUARANTEED);
    assert_true(p->flags & EBB_POD_NODE_SELECTOR);
    assert_int_equal(ebb_res_get(&p->requests, EBB_RES_CPU), 1000);

    p = pod(c, "kube-system", "fluentd-7x2lq");
    assert_string_equal(p->owners[0].kind, "DaemonSet");
    assert_int_equal(p->affinity->required[0].nfields, 1);

    n = node(c, "node-c");
    assert_true(n->unschedulable);
    assert_false(n->ready);
    assert_int_equal(ebb_res_get(&n->allocatable, EBB_RES_MEMORY), 4096 * MI);
    n = node(c, "node-a");
    assert_true(n->ready);
    assert_int_equal(n->annotations.n, 3);
    assert_int_equal(ebb_res_get(&n->allocatable, EBB_RES_CPU), 3920);
    n = node(c, "node-b");
    assert_int_equal(ebb_res_get(&n->allocatable, ebb_resource_find("nvidia.com/gpu")), 2);

    assert_non_null(ebb_cache_node_metrics(c, ebb_str_find("node-b", 6)));
    assert_non_null(ebb_cache_pvc(c, ebb_str_find("prod", 4), ebb_str_find("data-db-0", 9)));
    assert_int_equal(ebb_cache_priority_class(c, ebb_str_find("high-priority", 13))->value, 1000000);

    /* Every pod and node can be read back, byte for byte. */
    for (uint32_t i = 0; i < ebb_cache_pod_slots(c); i++) {
        if ((p = ebb_cache_pod_at(c, i)) == NULL)
            continue;
        check_source(c, &p->src, p->name);
        assert_true(p->src.off + p->src.len <= flen);
        char *text = NULL;
        assert_int_equal(ebb_cache_read_source(c, &p->src, &text, NULL), 0);
        assert_memory_equal(text, file + p->src.off, p->src.len);
        free(text);
    }
    for (uint32_t i = 0; i < ebb_cache_node_slots(c); i++)
        if ((n = ebb_cache_node_at(c, i)) != NULL)
            check_source(c, &n->src, n->name);
    free(file);
    ebb_cache_destroy(c);
}

static void same_res(const struct ebb_res *a, const struct ebb_res *b)
{
    assert_int_equal(a->n, b->n);
    for (uint16_t i = 0; i < a->n; i++) {
        assert_int_equal(a->q[i].id, b->q[i].id);
        assert_int_equal(a->q[i].v, b->q[i].v);
    }
}

/* The YAML stream says what the JSON List says. */
static void test_yaml_fixture(void **state)
{
    (void)state;
    struct ebb_snapshot_stats st;
    struct ebb_cache *cj = load_file(JSON_FIXTURE, NULL);
    struct ebb_cache *cy = load_file(YAML_FIXTURE, &st);
    struct ebb_pod *a, *b;
    struct ebb_node *na, *nb;
    size_t seen = 0;

    check_counts(&st);
    for (uint32_t i = 0; i < ebb_cache_pod_slots(cj); i++) {
        if ((a = ebb_cache_pod_at(cj, i)) == NULL)
            continue;
        b = pod(cy, a->ns, a->name);
        seen++;
        assert_ptr_equal(a->node, b->node);
        assert_ptr_equal(a->uid, b->uid);
        assert_int_equal(a->phase, b->phase);
        assert_int_equal(a->qos, b->qos);
        assert_int_equal(a->flags, b->flags);
        assert_int_equal(a->priority, b->priority);
        assert_int_equal(a->created, b->created);
        assert_int_equal(a->started, b->started);
        assert_int_equal(a->restarts, b->restarts);
        assert_int_equal(a->init_restarts, b->init_restarts);
        assert_int_equal(a->requested_mask, b->requested_mask);
        same_res(&a->requests, &b->requests);
        assert_int_equal(a->labels.n, b->labels.n);
        for (uint32_t k = 0; k < a->labels.n; k++) {
            assert_ptr_equal(a->labels.kv[k].key, b->labels.kv[k].key);
            assert_ptr_equal(a->labels.kv[k].value, b->labels.kv[k].value);
        }
        assert_int_equal(a->annotations.n, b->annotations.n);
        assert_int_equal(a->nimages, b->nimages);
        for (uint16_t k = 0; k < a->nimages; k++)
            assert_ptr_equal(a->images[k], b->images[k]);
        assert_int_equal(a->nowners, b->nowners);
        assert_int_equal(a->ntolerations, b->ntolerations);
        assert_int_equal(a->ncstatus, b->ncstatus);
        assert_int_equal(a->nconditions, b->nconditions);
        assert_int_equal(a->ntsc, b->ntsc);
        assert_int_equal(a->affinity == NULL, b->affinity == NULL);
        check_source(cy, &b->src, b->name);
    }
    assert_int_equal(seen, 10);
    for (uint32_t i = 0; i < ebb_cache_node_slots(cj); i++) {
        if ((na = ebb_cache_node_at(cj, i)) == NULL)
            continue;
        nb = node(cy, na->name);
        same_res(&na->allocatable, &nb->allocatable);
        same_res(&na->capacity, &nb->capacity);
        assert_int_equal(na->ntaints, nb->ntaints);
        assert_int_equal(na->ready, nb->ready);
        assert_int_equal(na->labels.n, nb->labels.n);
        assert_int_equal(na->annotations.n, nb->annotations.n);
        check_source(cy, &nb->src, nb->name);
    }
    ebb_cache_destroy(cj);
    ebb_cache_destroy(cy);
}

#define NS_ITEM(name) "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"" name "\"}}"
#define POD_ITEM(name) "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\",\"namespace\":\"x\"}}"

static void test_shapes(void **state)
{
    (void)state;
    struct ebb_snapshot_stats st;
    struct ebb_cache *c;

    /* one object, not a List (keys before and after anything list-like) */
    c = load_text("\xef\xbb\xbf \n" POD_ITEM("solo") "\n", &st);
    assert_int_equal(st.items, 1);
    assert_int_equal(st.kinds[EBB_KIND_POD], 1);
    assert_int_equal(pod(c, "x", "solo")->src.off, 5);
    check_source(c, &pod(c, "x", "solo")->src, "solo");
    ebb_cache_destroy(c);

    /* a bare array */
    c = load_text("[" POD_ITEM("a") ",\n " NS_ITEM("b") "]", &st);
    assert_int_equal(st.items, 2);
    assert_int_equal(st.kinds[EBB_KIND_NAMESPACE], 1);
    check_source(c, &pod(c, "x", "a")->src, "a");
    ebb_cache_destroy(c);

    /* empty and null item lists; the List's own fields are skipped */
    c = load_text("{\"kind\":\"List\",\"metadata\":{\"resourceVersion\":\"\"},\"items\":[]}", &st);
    assert_int_equal(st.items, 0);
    ebb_cache_destroy(c);
    c = load_text("{\"items\":null,\"apiVersion\":\"v1\",\"kind\":\"List\"}", &st);
    assert_int_equal(st.items, 0);
    ebb_cache_destroy(c);
    c = load_text("[]", &st);
    assert_int_equal(st.items, 0);
    ebb_cache_destroy(c);

    /* strings with brackets, quotes and escapes do not confuse the scanner */
    c = load_text("{\"items\":[{\"kind\":\"Pod\",\"metadata\":{\"name\":\"q\",\"namespace\":\"x\","
                  "\"annotations\":{\"a\":\"}]\\\"{[\\\\\",\"b\":\"\\\\\"}}}]}",
                  &st);
    assert_string_equal(ebb_labels_getc(&pod(c, "x", "q")->annotations, "a"), "}]\"{[\\");
    ebb_cache_destroy(c);

    /* YAML: a List document, a bare sequence and plain objects */
    c = load_text("apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: y1, namespace: x}\n"
                  "---\n- kind: Namespace\n  metadata: {name: y2}\n"
                  "---\n# a comment\nkind: Pod\napiVersion: v1\nmetadata:\n  name: y3\n  namespace: x\n"
                  "---\n",
                  &st);
    assert_int_equal(st.items, 3);
    assert_int_equal(st.kinds[EBB_KIND_POD], 2);
    check_source(c, &pod(c, "x", "y1")->src, "y1");
    check_source(c, &pod(c, "x", "y3")->src, "y3");
    ebb_cache_destroy(c);

    /* unknown kinds are counted by name */
    c = load_text("[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"}},"
                  "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"s\"}},"
                  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"e\"}},"
                  "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"f\"}}]",
                  &st);
    assert_int_equal(st.items, 4);
    assert_int_equal(st.skipped, 4);
    assert_int_equal(st.nskipped_kinds, 3);
    assert_string_equal(st.skipped_kinds[0].kind, "Deployment");
    assert_int_equal(st.skipped_kinds[0].n, 2);
    assert_string_equal(st.skipped_kinds[2].kind, "Pod");
    assert_int_equal(ebb_cache_count(c, EBB_KIND_POD), 0);
    ebb_cache_destroy(c);
}

static void test_errors(void **state)
{
    (void)state;
    char msg[1024];
    struct ebb_error e;

    e = load_error("trunc.json",
                   "{\n"
                   "    \"apiVersion\": \"v1\",\n"
                   "    \"items\": [\n"
                   "        {\n"
                   "            \"apiVersion\": \"v1\",\n"
                   "            \"kind\": \"Namespace\",\n"
                   "            \"metadata\": {\"name\": \"a\"}\n"
                   "        },\n"
                   "        {\n"                              /* line 9 */
                   "            \"apiVersion\": \"v1\",\n"
                   "            \"kind\": \"Namespace\",\n"
                   "            \"metadata\": {\n",
                   msg, sizeof(msg));
    assert_int_equal(e.code, EBB_EPARSE);
    assert_string_equal(msg, "trunc.json:9: items[1]: unexpected end of file: "
                             "the value starting here is not closed");

    e = load_error("obj.json",
                   "{\"kind\": \"List\", \"items\": [\n"
                   "  " NS_ITEM("a") ",\n"
                   "  " NS_ITEM("b") ",\n"
                   "  \"oops\"\n"                             /* line 4 */
                   "]}\n",
                   msg, sizeof(msg));
    assert_int_equal(e.code, EBB_ESCHEMA);
    assert_string_equal(msg, "obj.json:4: items[2]: expected an object, got a string");

    e = load_error("qty.json",
                   "{\n"
                   "  \"kind\": \"List\",\n"
                   "  \"items\": [\n"
                   "    " NS_ITEM("a") ",\n"
                   "    " POD_ITEM("ok") ",\n"
                   "    {\n"                                    /* line 6 */
                   "      \"kind\": \"Pod\",\n"
                   "      \"metadata\": {\"name\": \"p\"},\n"
                   "      \"spec\": {\"containers\": [{\"name\": \"c\", \"resources\": {\n"
                   "        \"requests\": {\"cpu\": \"12x\"}}}]}\n"
                   "    }\n"
                   "  ]\n"
                   "}\n",
                   msg, sizeof(msg));
    assert_int_equal(e.code, EBB_ESCHEMA);
    assert_int_equal(e.line, 6);
    assert_string_equal(e.file, "qty.json");
    assert_string_equal(e.field, "items[2].spec.containers[0].resources.requests.cpu");
    assert_string_equal(msg, "qty.json:6: items[2].spec.containers[0].resources.requests.cpu: "
                             "\"12x\" is not a quantity");

    e = load_error("pdb.json",
                   "{\"items\": [\n"
                   "{\"apiVersion\": \"policy/v1\", \"kind\": \"PodDisruptionBudget\",\n"
                   " \"metadata\": {\"name\": \"p\", \"namespace\": \"x\"},\n"
                   " \"spec\": {\"selector\": {\"matchExpressions\": [\n"
                   "   {\"key\": \"app\", \"operator\": \"Equals\", \"values\": [\"web\"]}]}}}]}\n",
                   msg, sizeof(msg));
    assert_string_equal(msg, "pdb.json:2: items[0].spec.selector.matchExpressions[0].operator: "
                             "\"Equals\" is not a valid operator (In, NotIn, Exists, DoesNotExist)");

    e = load_error("nokind.json", "[" NS_ITEM("a") ",\n{\"metadata\": {\"name\": \"b\"}}]",
                   msg, sizeof(msg));
    assert_string_equal(msg, "nokind.json:2: [1].kind: required: every item names its kind");

    /* a syntax error inside an item names its own line */
    e = load_error("syntax.json",
                   "{\"items\": [\n"
                   "  {\"kind\": \"Namespace\",\n"
                   "   \"metadata\": {\"name\": \"a\"}\n"
                   "   \"spec\": {}}\n"                           /* line 4: missing comma */
                   "]}",
                   msg, sizeof(msg));
    assert_int_equal(e.code, EBB_EPARSE);
    assert_int_equal(e.line, 4);
    assert_string_equal(e.field, "items[0]");

    e = load_error("trail.json", "[" NS_ITEM("a") "]\n\n{}", msg, sizeof(msg));
    assert_string_equal(msg, "trail.json:3: unexpected data after the top-level JSON value");

    e = load_error("comma.json", "[" NS_ITEM("a") "\n" NS_ITEM("b") "]", msg, sizeof(msg));
    assert_string_equal(msg, "comma.json:2: [0]: expected ',' or ']' after this item, found '{'");

    e = load_error("empty.json", " \n\t\n", msg, sizeof(msg));
    assert_string_equal(msg, "empty.json: the snapshot is empty");

    /* YAML errors name the line of the field itself */
    e = load_error("bad.yaml",
                   "apiVersion: v1\n"
                   "kind: List\n"
                   "items:\n"
                   "- kind: Pod\n"
                   "  metadata:\n"
                   "    name: p\n"
                   "  spec:\n"
                   "    containers:\n"
                   "    - name: c\n"
                   "      resources:\n"
                   "        requests:\n"
                   "          memory: 1Gi\n"
                   "          cpu: 1.5x\n"                            /* line 13 */
                   "---\n",
                   msg, sizeof(msg));
    assert_string_equal(msg, "bad.yaml:13: items[0].spec.containers[0].resources.requests.cpu: "
                             "\"1.5x\" is not a quantity");

    struct ebb_cache *c = NULL;
    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_snapshot_load(c, "spec/fixtures/does-not-exist.json", NULL, &e), EBB_EIO);
    assert_string_equal(e.file, "spec/fixtures/does-not-exist.json");
    ebb_cache_destroy(c);
}

/* ---- streaming ---------------------------------------------------------------- */

struct gen {
    FILE *f;
    uint64_t off;
    int line;
};

static void put(struct gen *g, const char *s)
{
    size_t n = strlen(s);

    assert_int_equal(fwrite(s, 1, n, g->f), n);
    g->off += n;
    for (const char *p = s; (p = strchr(p, '\n')) != NULL; p++)
        g->line++;
}

/* A kubectl-like pod object, with managedFields; `cpu` may be bad. */
static void pod_text(char *buf, size_t len, int i, const char *cpu, size_t pad)
{
    char *fill = malloc(pad + 1);

    assert_non_null(fill);
    memset(fill, 'x', pad);
    fill[pad] = '\0';
    snprintf(buf, len,
             "{\n"
             "            \"apiVersion\": \"v1\",\n"
             "            \"kind\": \"Pod\",\n"
             "            \"metadata\": {\n"
             "                \"annotations\": {\"note\": \"%s\", \"q\": \"a \\\"}{\\\" b\"},\n"
             "                \"labels\": {\"app\": \"gen\", \"i\": \"%d\"},\n"
             "                \"managedFields\": [{\"apiVersion\": \"v1\", \"fieldsType\": \"FieldsV1\",\n"
             "                    \"fieldsV1\": {\"f:metadata\": {\"f:labels\": {\".\": {}, \"f:app\": {}}},\n"
             "                    \"f:spec\": {\"f:containers\": {\"k:{\\\"name\\\":\\\"c\\\"}\": {\".\": {}}}}},\n"
             "                    \"manager\": \"kube-controller-manager\", \"operation\": \"Update\"}],\n"
             "                \"name\": \"p-%05d\",\n"
             "                \"namespace\": \"gen\",\n"
             "                \"uid\": \"uid-%05d\"\n"
             "            },\n"
             "            \"spec\": {\"nodeName\": \"n-%d\", \"containers\": [{\"name\": \"c\", \"image\": \"img:%d\",\n"
             "                \"resources\": {\"requests\": {\"cpu\": \"%s\", \"memory\": \"%dMi\"}}}]},\n"
             "            \"status\": {\"phase\": \"Running\"}\n"
             "        }",
             fill, i, i, i, i % 7, i % 3, cpu, 64 + i % 5);
    free(fill);
}

static void test_streaming(void **state)
{
    (void)state;
    enum { N = 2500, BIG = 1234 };
    char path[] = "/tmp/ebb-test-snapshot-XXXXXX";
    static uint64_t offs[N];
    static uint32_t lens[N];
    struct ebb_snapshot_stats st;
    struct ebb_cache *c;
    struct ebb_error err;
    struct gen g = { .line = 1 };
    char *item = malloc(64 * 1024);
    int fd = mkstemp(path), bad_line = 0;

    assert_true(fd >= 0);
    assert_non_null(item);
    assert_non_null(g.f = fdopen(fd, "w"));
    ebb__snapshot_window = 4096;   /* far smaller than the file and than item BIG */

    put(&g, "{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n        ");
    for (int i = 0; i < N; i++) {
        pod_text(item, 64 * 1024, i, "250m", i == BIG ? 20000 : (size_t)(i % 50));
        offs[i] = g.off;
        lens[i] = (uint32_t)strlen(item);
        put(&g, item);
        put(&g, i + 1 < N ? ",\n        " : "\n");
    }
    put(&g, "    ],\n    \"kind\": \"List\",\n    \"metadata\": {\"resourceVersion\": \"\"}\n}\n");
    assert_int_equal(fclose(g.f), 0);

    c = load_file(path, &st);
    assert_int_equal(st.items, N);
    assert_int_equal(st.bytes, g.off);
    assert_int_equal(ebb_cache_count(c, EBB_KIND_POD), N);
    for (int i = 0; i < N; i += (i < BIG - 3 || i > BIG + 3) ? 97 : 1) {
        char name[16];
        snprintf(name, sizeof(name), "p-%05d", i);
        struct ebb_pod *p = pod(c, "gen", name);
        assert_int_equal(p->src.off, offs[i]);
        assert_int_equal(p->src.len, lens[i]);
        assert_int_equal(ebb_res_get(&p->requests, EBB_RES_CPU), 250);
        assert_int_equal(ebb_res_get(&p->requests, EBB_RES_MEMORY), (64 + i % 5) * MI);
        check_source(c, &p->src, name);
    }
    assert_int_equal(strlen(ebb_labels_getc(&pod(c, "gen", "p-01234")->annotations, "note")), 20000);
    ebb_cache_destroy(c);

    /* The same file with a bad quantity near the end: the error names the
     * line where that item starts, counted across every refill. */
    assert_non_null(g.f = fopen(path, "w"));
    g.off = 0;
    g.line = 1;
    put(&g, "{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n        ");
    for (int i = 0; i < N; i++) {
        pod_text(item, 64 * 1024, i, i == N - 2 ? "fast" : "1", i == BIG ? 20000 : 0);
        if (i == N - 2)
            bad_line = g.line;
        put(&g, item);
        put(&g, i + 1 < N ? ",\n        " : "\n");
    }
    put(&g, "    ],\n    \"kind\": \"List\"\n}\n");
    assert_int_equal(fclose(g.f), 0);

    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_snapshot_load(c, path, NULL, &err), EBB_ESCHEMA);
    assert_int_equal(err.line, bad_line);
    assert_true(bad_line > 40000);
    assert_string_equal(err.field, "items[2498].spec.containers[0].resources.requests.cpu");
    ebb_cache_destroy(c);

    /* A single object (not a List) bigger than the window. */
    assert_non_null(g.f = fopen(path, "w"));
    pod_text(item, 64 * 1024, 7, "2", 30000);
    put(&g, "\n\n  ");
    put(&g, item);
    put(&g, "\n");
    assert_int_equal(fclose(g.f), 0);
    c = load_file(path, &st);
    assert_int_equal(st.items, 1);
    struct ebb_pod *p = pod(c, "gen", "p-00007");
    assert_int_equal(p->src.off, 4);
    assert_int_equal(p->src.len, strlen(item));
    assert_int_equal(ebb_res_get(&p->requests, EBB_RES_CPU), 2000);
    check_source(c, &p->src, "p-00007");
    ebb_cache_destroy(c);

    free(item);
    unlink(path);
}

/* A JSON file is parsed on one thread and decoded on another, many items
 * apart: the error reported is still the first in file order, whichever
 * thread finds it, and the parser stops once the decoder has failed. */
static void write_items(const char *path, int n, int bad_qty, int bad_json, int dup)
{
    struct gen g = { .line = 1 };
    char *item = malloc(8 * 1024);

    assert_non_null(item);
    assert_non_null(g.f = fopen(path, "w"));
    put(&g, "{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n        ");
    for (int i = 0; i < n; i++) {
        if (i == bad_json) {
            put(&g, "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": }}");
        } else {
            pod_text(item, 8 * 1024, i == dup ? 1 : i, i == bad_qty ? "fast" : "1", 0);
            put(&g, item);
        }
        put(&g, i + 1 < n ? ",\n        " : "\n");
    }
    put(&g, "    ],\n    \"kind\": \"List\"\n}\n");
    assert_int_equal(fclose(g.f), 0);
    free(item);
}

static void test_first_error_in_order(void **state)
{
    (void)state;
    char path[] = "/tmp/ebb-test-snapshot-XXXXXX";
    struct ebb_cache *c;
    struct ebb_error err;
    int fd = mkstemp(path);

    assert_true(fd >= 0);
    close(fd);

    /* a decode error, then (well within what the parser reads ahead) bad JSON */
    write_items(path, 400, 100, 110, -1);
    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_snapshot_load(c, path, NULL, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "items[100].spec.containers[0].resources.requests.cpu");
    ebb_cache_destroy(c);

    /* bad JSON alone: the parser's error, after every item before it */
    write_items(path, 400, -1, 310, -1);
    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_snapshot_load(c, path, NULL, &err), EBB_EPARSE);
    assert_string_equal(err.field, "items[310]");
    assert_int_equal(ebb_cache_count(c, EBB_KIND_POD), 310);
    ebb_cache_destroy(c);

    /* a pod twice (the decoder's check), then bad JSON */
    write_items(path, 400, -1, 390, 5);
    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_snapshot_load(c, path, NULL, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "items[5]");
    assert_non_null(strstr(err.msg, "is already items[1]"));
    ebb_cache_destroy(c);

    /* the first item bad, the parser far ahead: it stops and is joined */
    write_items(path, 3000, 0, -1, -1);
    assert_int_equal(ebb_cache_create(&c), 0);
    assert_int_equal(ebb_snapshot_load(c, path, NULL, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "items[0].spec.containers[0].resources.requests.cpu");
    ebb_cache_destroy(c);
    unlink(path);
}

/* ---- LIST pages -------------------------------------------------------------- */

/* As kube-apiserver answers: the items leave kind and apiVersion to the List. */
static const char page1[] =
    "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"41\","
    "\"continue\":\"tok-1\"},\"items\":["
    "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"a\","
    "\"uid\":\"u1\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}},"
    "{\"metadata\":{\"name\":\"p2\",\"namespace\":\"a\","
    "\"uid\":\"u2\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}]}";
static const char page2[] =
    "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":["
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p3\",\"namespace\":\"b\","
    "\"uid\":\"u3\"},\"spec\":{\"nodeName\":\"n2\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}],"
    "\"metadata\":{\"resourceVersion\":\"42\"}}";

/* What the reader handed on. */
struct got {
    int n, big;
    char items[8][512];
    size_t big_len;
    int stop_at;               /* return EBB_ELIMIT at this item (-1: never) */
};

static int got_item(void *ud, char *text, size_t len, size_t index)
{
    struct got *g = ud;

    assert_int_equal((int)index, g->n + g->big);
    if (g->stop_at >= 0 && (int)index == g->stop_at)
        return EBB_ELIMIT;
    if (text == NULL) {
        g->big++;
        g->big_len = len;
        return 0;
    }
    assert_int_equal(strlen(text), len);
    if (g->n < 8)
        snprintf(g->items[g->n], sizeof(g->items[0]), "%s", text);
    g->n++;
    return 0;
}

/* Feed `text` in pieces of `step` bytes (0: whole); the end's result. */
static int read_list(const char *text, size_t len, size_t step, struct got *g,
                     struct ebb_list_meta *meta)
{
    struct ebb_list_reader *r = NULL;
    struct ebb_error err;
    int rc = 0;

    memset(g, 0, sizeof(*g));
    g->stop_at = -1;
    assert_int_equal(ebb_list_reader_create(got_item, g, &r), 0);
    for (size_t off = 0; rc == 0 && off < len;) {
        size_t n = step == 0 || step > len - off ? len - off : step;
        rc = ebb_list_reader_feed(r, text + off, n, &err);
        off += n;
    }
    if (rc == 0)
        rc = ebb_list_reader_end(r, meta, &err);
    ebb_list_reader_destroy(r);
    return rc;
}

/* A LIST answer is read as it arrives, in pieces of any size: each item
 * whole, the metadata before or after the items. */
static void test_list_reader(void **state)
{
    struct ebb_list_meta meta;
    struct got g;
    (void)state;

    for (size_t step = 0; step <= strlen(page1); step++) {
        assert_int_equal(read_list(page1, strlen(page1), step, &g, &meta), 0);
        assert_int_equal(g.n, 2);
        assert_non_null(strstr(g.items[0], "\"name\":\"p1\""));
        assert_int_equal(g.items[0][0], '{');
        assert_int_equal(g.items[1][strlen(g.items[1]) - 1], '}');
        assert_string_equal(meta.resource_version, "41");
        assert_string_equal(meta.cont, "tok-1");
    }
    for (size_t step = 0; step <= 40; step++) {
        assert_int_equal(read_list(page2, strlen(page2), step, &g, &meta), 0);
        assert_int_equal(g.n, 1);
        assert_string_equal(meta.resource_version, "42");
        assert_string_equal(meta.cont, "");
    }
    /* brackets, quotes and escapes inside strings are text */
    static const char tricky[] =
        " {\"items\" : [ {\"a\":\"]}\\\"[{\"} , {\"b\":[1,{\"c\":\"\\\\\"}]} ,\"s]\", 12 ,null],"
        "\"kind\":\"x\\\"y\",\"other\":{\"items\":[1,2]},\"metadata\":{\"resourceVersion\":\"7\"}} \n";
    for (size_t step = 0; step <= 20; step++) {
        assert_int_equal(read_list(tricky, strlen(tricky), step, &g, &meta), 0);
        assert_int_equal(g.n, 5);
        assert_string_equal(g.items[0], "{\"a\":\"]}\\\"[{\"}");
        assert_string_equal(g.items[1], "{\"b\":[1,{\"c\":\"\\\\\"}]}");
        assert_string_equal(g.items[2], "\"s]\"");   /* not an object: the decoder says so */
        assert_string_equal(g.items[3], "12");
        assert_string_equal(g.items[4], "null");
        assert_string_equal(meta.resource_version, "7");
    }
    assert_int_equal(read_list("{\"items\":null}", 14, 0, &g, &meta), 0);
    assert_int_equal(g.n, 0);
    assert_int_equal(read_list("{\"items\":[]}", 12, 1, &g, &meta), 0);
    /* real objects, kilobytes each (the block scanner's 64-byte steps, a
     * piece ending anywhere in a block): the same items in every cut */
    {
        size_t len = 0;
        char *list = fixture_read(JSON_FIXTURE, &len), first[sizeof(g.items[0])];
        static const size_t steps[] = { 1, 7, 63, 64, 65, 100, 1000, 4096 };
        size_t n;
        assert_non_null(list);
        assert_int_equal(read_list(list, len, 0, &g, &meta), 0);
        n = g.n;
        assert_true(n >= 3);
        memcpy(first, g.items[1], sizeof(first));
        for (size_t i = 0; i < EBB_ARRAY_LEN(steps); i++) {
            assert_int_equal(read_list(list, len, steps[i], &g, &meta), 0);
            assert_int_equal(g.n, n);
            assert_string_equal(g.items[1], first);
        }
        free(list);
    }
}

/* What is not a List fails the answer (never the process, never more
 * than one item of memory): every prefix of a good answer ends inside it,
 * and each of these is refused. */
static void test_list_reader_refuses(void **state)
{
    static const char *const bad[] = {
        "", "[]", "null", "\"x\"", "{", "{}", "{\"items\":{}}", "{\"items\":3}",
        "{\"items\":[]}x", "{\"items\":[],}", "{\"items\":[],\"items\":[]}", "{\"items\":[1,]}",
        "{\"items\":[,1]}", "{\"items\" [1]}", "{items:[]}", "{\"items\":[1] \"a\":1}",
        "{\"metadata\":[],\"items\":[]}", "{\"metadata\":{\"continue\":3},\"items\":[]}",
        "{\"metadata\":{\"resourceVersion\":{}},\"items\":[]}",
        "{\"metadata\":{},\"metadata\":{},\"items\":[]}", "{\"items\":[{\"a\":1}",
    };
    struct ebb_list_meta meta;
    struct got g;
    (void)state;

    for (size_t i = 0; i < EBB_ARRAY_LEN(bad); i++)
        if (read_list(bad[i], strlen(bad[i]), 0, &g, &meta) == 0)
            fail_msg("taken as a List: %s", bad[i]);
    for (size_t n = 0; n < strlen(page1); n++)
        assert_int_not_equal(read_list(page1, n, 3, &g, &meta), 0);
    /* a continue token too long for ebb to send back whole: an error, never cut */
    {
        size_t n = 5000;
        char *t = malloc(n + 64);
        int k = snprintf(t, n + 64, "{\"metadata\":{\"continue\":\"");
        memset(t + k, 'c', n);
        strcpy(t + k + n, "\"},\"items\":[]}");
        assert_int_equal(read_list(t, strlen(t), 1000, &g, &meta), EBB_EPARSE);
        free(t);
    }
    /* the item function stops the reader with its code */
    {
        struct ebb_list_reader *r = NULL;
        struct ebb_error err;
        memset(&g, 0, sizeof(g));
        g.stop_at = 1;
        assert_int_equal(ebb_list_reader_create(got_item, &g, &r), 0);
        assert_int_equal(ebb_list_reader_feed(r, page1, strlen(page1), &err), EBB_ELIMIT);
        assert_int_equal(ebb_list_reader_feed(r, "", 0, &err), EBB_EPARSE);
        assert_int_equal(ebb_list_reader_end(r, &meta, &err), EBB_EPARSE);
        ebb_list_reader_destroy(r);
        ebb_list_reader_destroy(NULL);
    }
}

/* An item past EBB_OBJECT_MAX is not kept: it is handed on as NULL with
 * its size, and the items after it come whole. */
static void test_list_reader_big_item(void **state)
{
    size_t n = EBB_OBJECT_MAX + 10, k;
    char *t = malloc(n + 256);
    struct ebb_list_meta meta;
    struct got g;
    (void)state;

    assert_non_null(t);
    k = (size_t)sprintf(t, "{\"items\":[{\"a\":\"");
    memset(t + k, 'x', n);
    k += n;
    k += (size_t)sprintf(t + k, "\"},{\"b\":1}],\"metadata\":{\"resourceVersion\":\"9\"}}");
    assert_int_equal(read_list(t, k, 65536, &g, &meta), 0);
    assert_int_equal(g.big, 1);
    assert_int_equal(g.big_len, n + 8);
    assert_int_equal(g.n, 1);
    assert_string_equal(g.items[0], "{\"b\":1}");
    assert_string_equal(meta.resource_version, "9");
    free(t);
}

/* The gate to cJSON: NUL escapes scrubbed, raw NUL bytes and trees past
 * EBB_JSON_TREE_MAX refused with their reason. */
static void test_json_arena(void **state)
{
    struct ebb_json_arena *a = NULL;
    cJSON *j;
    int why;
    (void)state;

    assert_int_equal(ebb_json_arena_create(&a), 0);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 100; i++) {
            char text[64];
            int n = snprintf(text, sizeof(text), "{\"type\":\"ADDED\",\"n\":%d}", i);
            assert_int_equal(ebb_json_arena_parse(a, text, (size_t)n, &j, &why), 0);
            assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "n")->valueint, i);
        }
        ebb_json_arena_reset(a);
    }
    {
        char bad[] = "{\"bad\"";
        assert_int_equal(ebb_json_arena_parse(a, bad, 6, &j, &why), EBB_ESCHEMA);
        assert_int_equal(why, EBB_SKIP_NOT_JSON);
        assert_null(j);
    }
    {
        char text[] = "{\"a\":\"x\\u0000y\",\"b\\u0000\":1}";
        assert_int_equal(ebb_json_arena_parse(a, text, strlen(text), &j, &why), 0);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "a")->valuestring, "x\xef\xbf\xbdy");
        assert_non_null(cJSON_GetObjectItemCaseSensitive(j, "b\xef\xbf\xbd"));
        ebb_json_arena_reset(a);
    }
    {
        char text[] = "{\"a\":\"x\0y\"}";
        assert_int_equal(ebb_json_arena_parse(a, text, sizeof(text) - 1, &j, &why), EBB_ESCHEMA);
        assert_int_equal(why, EBB_SKIP_NOT_JSON);
    }
    {
        /* 2 bytes of text, a node of 64: past the tree bound long before the text's */
        size_t n = EBB_JSON_TREE_MAX / 64 + 16, k = 0;
        char *t = malloc(2 * n + 2);
        assert_non_null(t);
        t[k++] = '[';
        for (size_t i = 0; i < n; i++) {
            t[k++] = '0';
            t[k++] = i + 1 < n ? ',' : ']';
        }
        assert_int_equal(ebb_json_arena_parse(a, t, k, &j, &why), EBB_ESCHEMA);
        assert_int_equal(why, EBB_SKIP_TOO_LARGE);
        free(t);
    }
    ebb_json_arena_destroy(a);
    ebb_json_arena_destroy(NULL);
}

/* One object of a server's answer: kept, or skipped with its reason and key. */
static void test_object_from_text(void **state)
{
    static const struct {
        const char *text;
        int rc, reason;
        const char *name, *field;
    } cases[] = {
        { "{\"metadata\":{\"name\":\"p\",\"namespace\":\"a\",\"annotations\":{\"n\":\"x\\u0000\"}}}",
          0, 0, NULL, NULL },
        { "{\"metadata\":{\"name\":\"p\",\"namespace\":\"a\"},\"spec\":{\"nodeName\":7}}",
          EBB_ESCHEMA, EBB_SKIP_INVALID, "p", "spec.nodeName" },
        { "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\"}}", EBB_ESCHEMA, EBB_SKIP_WRONG_KIND, "n", "kind" },
        { "{\"metadata\":{}}", EBB_ESCHEMA, EBB_SKIP_INVALID, "", "metadata.name" },
        { "[1]", EBB_ESCHEMA, EBB_SKIP_INVALID, "", "" },
        { "{\"metadata\":{\"name\":\"p\"", EBB_ESCHEMA, EBB_SKIP_NOT_JSON, "", "" },
        { NULL, EBB_ESCHEMA, EBB_SKIP_TOO_LARGE, "", "" },
    };
    struct ebb_json_arena *a = NULL;
    (void)state;

    assert_int_equal(ebb_json_arena_create(&a), 0);
    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        char *t = cases[i].text ? strdup(cases[i].text) : NULL;
        struct ebb_object o;
        struct ebb_skip why;
        int rc = ebb_object_from_text(a, t, t ? strlen(t) : 0, EBB_KIND_POD, &o, &why);
        assert_int_equal(rc, cases[i].rc);
        if (rc == 0) {
            assert_int_equal(o.kind, EBB_KIND_POD);
            assert_string_equal(ebb_labels_getc(&o.u.pod->annotations, "n"), "x\xef\xbf\xbd");
            ebb_object_free(&o);
        } else {
            assert_int_equal(why.reason, cases[i].reason);
            assert_string_equal(why.name, cases[i].name);
            assert_string_equal(why.err.field, cases[i].field);
            assert_int_equal(why.kind, EBB_KIND_POD);
            if (why.name[0])
                assert_string_equal(why.ns, cases[i].reason == EBB_SKIP_WRONG_KIND ? "default" : "a");
        }
        free(t);
    }
    ebb_json_arena_destroy(a);
}

/* A NUL a real server holds (annotation values, free text) loads from a
 * snapshot as U+FFFD, in JSON and in YAML; a raw NUL byte is no JSON. */
static void test_nul(void **state)
{
    static const char json[] =
        "{\"kind\":\"List\",\"items\":[{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
        "\"p\",\"namespace\":\"a\",\"annotations\":{\"note\":\"be\\u0000fore\",\"k\":\"\\\\u0000\"}}}]}";
    static const char yaml[] =
        "kind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p\n"
        "    namespace: a\n    annotations:\n      note: \"be\\0fore\"\n";
    struct ebb_cache *c = NULL;
    struct ebb_error err;
    struct ebb_pod *p;
    (void)state;

    for (int k = 0; k < 2; k++) {
        const char *text = k ? yaml : json;
        assert_int_equal(ebb_cache_create(&c), 0);
        if (ebb_snapshot_load_buf(c, text, strlen(text), "nul", NULL, &err) != 0)
            fail_msg("%s: %s", err.field, err.msg);
        assert_non_null(p = pod(c, "a", "p"));
        assert_string_equal(ebb_labels_getc(&p->annotations, "note"), "be\xef\xbf\xbd" "fore");
        if (k == 0) {
            /* an escaped backslash, then text: no NUL */
            assert_string_equal(ebb_labels_getc(&p->annotations, "k"), "\\u0000");
        }
        {
            /* pod.object reads what was decoded */
            cJSON *o = ebb_cache_read_object(c, &p->src), *note;
            assert_non_null(o);
            note = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
                                                 "annotations"), "note");
            assert_string_equal(note->valuestring, "be\xef\xbf\xbd" "fore");
            cJSON_Delete(o);
        }
        ebb_cache_destroy(c);
    }
    {
        char raw[] = "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\0\"}}";
        assert_int_equal(ebb_cache_create(&c), 0);
        assert_int_equal(ebb_snapshot_load_buf(c, raw, sizeof(raw) - 1, "raw", NULL, &err), EBB_EPARSE);
        assert_non_null(strstr(err.msg, "NUL byte"));
        ebb_cache_destroy(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_json_fixture, setup, teardown),
        cmocka_unit_test_setup_teardown(test_yaml_fixture, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streaming, setup, teardown),
        cmocka_unit_test_setup_teardown(test_first_error_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_reader, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_reader_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_reader_big_item, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_arena, setup, teardown),
        cmocka_unit_test_setup_teardown(test_object_from_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nul, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
