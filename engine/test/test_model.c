/* engine/model/model.c: resource ids, resource lists, label maps, destructors. */
#include "fixtures.h"

#include "ebb/model.h"

static void test_fixed_resources(void **state)
{
    (void)state;
    assert_int_equal(ebb_resource_find("cpu"), EBB_RES_CPU);
    assert_int_equal(ebb_resource_find("memory"), EBB_RES_MEMORY);
    assert_int_equal(ebb_resource_find("pods"), EBB_RES_PODS);
    assert_int_equal(ebb_resource_find("ephemeral-storage"), EBB_RES_EPHEMERAL);
    assert_int_equal(ebb_resource_id("memory"), EBB_RES_MEMORY);
    assert_string_equal(ebb_resource_name(EBB_RES_CPU), "cpu");
    assert_string_equal(ebb_resource_name(EBB_RES_EPHEMERAL), "ephemeral-storage");
    assert_null(ebb_resource_name(-1));
    assert_null(ebb_resource_name(EBB_RES_MAX));
    assert_int_equal(ebb_resource_find("CPU"), -1);
    assert_int_equal(ebb_resource_find(NULL), -1);
    assert_int_equal(ebb_resource_id(NULL), -1);
}

/* An object registers at most its budget of new names, objects together
 * at most up to EBB_RES_OBJECTS_MAX; known names always resolve. */
static void test_admit(void **state)
{
    int start = ebb_resource_count(), budget = 3, id;
    char name[48];
    (void)state;

    assert_int_equal(ebb_resource_admit("cpu", &budget), EBB_RES_CPU);
    assert_int_equal(budget, 3);
    assert_int_equal(ebb_resource_admit("a.example.com/x", &budget), start);
    assert_int_equal(ebb_resource_admit("a.example.com/x", &budget), start);
    assert_int_equal(budget, 2);
    assert_int_equal(ebb_resource_admit("a.example.com/y", &budget), start + 1);
    assert_int_equal(ebb_resource_admit("a.example.com/z", &budget), start + 2);
    assert_int_equal(budget, 0);
    assert_int_equal(ebb_resource_admit("a.example.com/w", &budget), -1);
    assert_int_equal(ebb_resource_find("a.example.com/w"), -1);
    assert_int_equal(ebb_resource_admit("a.example.com/y", &budget), start + 1);
    assert_int_equal(ebb_resource_admit(NULL, &budget), -1);
    assert_int_equal(ebb_resource_admit("a.example.com/y", NULL), start + 1);
    /* objects stop at EBB_RES_OBJECTS_MAX whatever their budgets */
    for (int i = 0;; i++) {
        budget = 1;
        snprintf(name, sizeof(name), "b.example.com/%d", i);
        if ((id = ebb_resource_admit(name, &budget)) < 0)
            break;
        assert_true(id < EBB_RES_OBJECTS_MAX);
    }
    assert_int_equal(ebb_resource_count(), EBB_RES_OBJECTS_MAX);   /* nothing else registered yet */
    assert_int_equal(budget, 1);
}

/* Runs once per process, after test_admit filled the objects' share: the
 * configuration and scripts have their own, and neither takes the other's
 * last ids; the registry never forgets a name. */
static void test_extended_resources(void **state)
{
    int start = ebb_resource_count(), gpu, huge, scripts = 0, config = 2, budget = 16;
    char name[48];

    (void)state;
    assert_int_equal(start, EBB_RES_OBJECTS_MAX);   /* objects took their whole share */
    assert_string_equal(ebb_resource_name(EBB_RES_UNREGISTERED), "<unregistered>");
    assert_int_equal(ebb_resource_find("nvidia.com/gpu"), -1);
    gpu = ebb_resource_id("nvidia.com/gpu");
    assert_int_equal(gpu, start);
    assert_int_equal(ebb_resource_id("nvidia.com/gpu"), gpu);
    assert_int_equal(ebb_resource_find("nvidia.com/gpu"), gpu);
    huge = ebb_resource_id("hugepages-2Mi");
    assert_int_equal(huge, start + 1);
    assert_string_equal(ebb_resource_name(huge), "hugepages-2Mi");
    /* scripts: at most EBB_RES_SCRIPTS_MAX names no object has */
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof(name), "script.example.com/r-%d", i);
        if (ebb_resource_script(name) < 0)
            break;
        scripts++;
    }
    assert_int_equal(scripts, EBB_RES_SCRIPTS_MAX);
    assert_int_equal(ebb_resource_script("nvidia.com/gpu"), gpu);   /* known names resolve */
    /* the configuration keeps the rest of its share */
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof(name), "example.com/device-%d", i);
        if (ebb_resource_id(name) < 0)
            break;
        config++;
    }
    assert_int_equal(config + scripts, EBB_RES_MAX - EBB_RES_OBJECTS_MAX);
    assert_int_equal(ebb_resource_count(), EBB_RES_MAX);
    assert_int_equal(ebb_resource_id("example.com/one-too-many"), -1);
    assert_int_equal(ebb_resource_find("example.com/one-too-many"), -1);
    assert_int_equal(ebb_resource_admit("objects.example.com/late", &budget), -1);
    assert_int_equal(ebb_resource_id("nvidia.com/gpu"), gpu);   /* known names still resolve */
}

static void test_res_list(void **state)
{
    struct ebb_res r = { 0, NULL };

    (void)state;
    assert_true(ebb_res_get(&r, EBB_RES_CPU) == 0);
    assert_false(ebb_res_has(&r, EBB_RES_CPU));
    assert_int_equal(ebb_res_set(&r, EBB_RES_PODS, 110), 0);
    assert_int_equal(ebb_res_set(&r, EBB_RES_CPU, 3920), 0);
    assert_int_equal(ebb_res_set(&r, 17, 8), 0);
    assert_int_equal(ebb_res_set(&r, EBB_RES_MEMORY, 16656781312), 0);
    assert_int_equal(r.n, 4);
    /* sorted by id whatever the insertion order */
    assert_int_equal(r.q[0].id, EBB_RES_CPU);
    assert_int_equal(r.q[1].id, EBB_RES_MEMORY);
    assert_int_equal(r.q[2].id, EBB_RES_PODS);
    assert_int_equal(r.q[3].id, 17);
    assert_true(ebb_res_get(&r, EBB_RES_MEMORY) == 16656781312);
    assert_true(ebb_res_get(&r, 17) == 8);
    assert_true(ebb_res_get(&r, EBB_RES_EPHEMERAL) == 0);
    assert_false(ebb_res_has(&r, EBB_RES_EPHEMERAL));
    /* replace keeps one entry; a stored zero is present */
    assert_int_equal(ebb_res_set(&r, EBB_RES_CPU, 0), 0);
    assert_int_equal(r.n, 4);
    assert_true(ebb_res_has(&r, EBB_RES_CPU));
    assert_true(ebb_res_get(&r, EBB_RES_CPU) == 0);
    assert_int_equal(ebb_res_set(&r, -1, 1), EBB_EINVAL);
    assert_int_equal(ebb_res_set(&r, EBB_RES_MAX, 1), EBB_EINVAL);
    assert_int_equal(ebb_res_set(NULL, 0, 1), EBB_EINVAL);
    assert_true(ebb_res_get(NULL, EBB_RES_CPU) == 0);
    ebb_res_free(&r);
    assert_int_equal(r.n, 0);
    assert_null(r.q);
    ebb_res_free(&r);
}

static void test_labels(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_labels l = { 2, calloc(2, sizeof(struct ebb_kv)) };

    (void)state;
    assert_non_null(l.kv);
    l.kv[0].key = ebb_str_cstr("app.kubernetes.io/name");
    l.kv[0].value = ebb_str_cstr("coredns");
    l.kv[1].key = ebb_str_cstr("k8s-app");
    l.kv[1].value = ebb_str_cstr("kube-dns");
    assert_string_equal(ebb_labels_getc(&l, "k8s-app"), "kube-dns");
    assert_ptr_equal(ebb_labels_get(&l, l.kv[0].key), l.kv[0].value);
    assert_null(ebb_labels_getc(&l, "tier"));
    assert_null(ebb_labels_getc(&l, "k8s"));
    assert_null(ebb_labels_getc(&l, NULL));
    assert_null(ebb_labels_get(&l, NULL));
    assert_null(ebb_labels_getc(NULL, "k8s-app"));
    ebb_labels_free(&l);
    assert_int_equal(l.n, 0);
    ebb_labels_free(&l);
    ebb_labels_free(NULL);
    assert_int_equal(ebb_str_count(), base);
}

static void test_pod_key_and_free(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_pod *p = calloc(1, sizeof(*p));
    char buf[64], small[8];

    (void)state;
    assert_non_null(p);
    p->ns = ebb_str_cstr("kube-system");
    p->name = ebb_str_cstr("coredns-7db6d8ff4d-abcde");
    assert_string_equal(ebb_pod_key(p, buf, sizeof(buf)), "kube-system/coredns-7db6d8ff4d-abcde");
    assert_string_equal(ebb_pod_key(p, small, sizeof(small)), "kube-sy");
    /* every owned array and string goes with the pod */
    p->nowners = 1;
    p->owners = calloc(1, sizeof(*p->owners));
    p->owners[0].kind = ebb_str_cstr("ReplicaSet");
    p->owners[0].name = ebb_str_cstr("coredns-7db6d8ff4d");
    p->owners[0].uid = ebb_str_cstr("5c1e2f7a-9d8b-4c3e-a1f2-0b9e8d7c6a5f");
    p->ncstatus = 1;
    p->cstatus = calloc(1, sizeof(*p->cstatus));
    p->cstatus[0].name = ebb_str_cstr("coredns");
    p->cstatus[0].last_reason = ebb_str_cstr("OOMKilled");
    p->nconditions = 1;
    p->conditions = calloc(1, sizeof(*p->conditions));
    p->conditions[0].type = ebb_str_cstr("Ready");
    p->conditions[0].status = ebb_str_cstr("True");
    p->nimages = 1;
    p->images = calloc(1, sizeof(ebb_str));
    p->images[0] = ebb_str_cstr("registry.k8s.io/coredns/coredns:v1.11.3");
    p->ntsc = 1;
    p->tsc = calloc(1, sizeof(*p->tsc));
    p->tsc[0].topology_key = ebb_str_cstr("topology.kubernetes.io/zone");
    p->tsc[0].selector = calloc(1, sizeof(struct ebb_selector));
    assert_int_equal(ebb_res_set(&p->requests, EBB_RES_CPU, 100), 0);
    ebb_pod_free(p);
    ebb_pod_free(NULL);
    assert_int_equal(ebb_str_count(), base);
}

static void test_other_kinds_free(void **state)
{
    size_t base = ebb_str_count();
    struct ebb_pdb *pdb = calloc(1, sizeof(*pdb));
    struct ebb_koord_node_metric *km = calloc(1, sizeof(*km));
    struct ebb_namespace *ns = calloc(1, sizeof(*ns));
    struct ebb_pvc *pvc = calloc(1, sizeof(*pvc));

    (void)state;
    pdb->ns = ebb_str_cstr("shop");
    pdb->name = ebb_str_cstr("cart-pdb");
    pdb->selector = calloc(1, sizeof(struct ebb_selector));
    pdb->min_available = ebb_str_cstr("50%");
    km->node = ebb_str_cstr("worker-1");
    km->npods = 2;
    km->pods = calloc(2, sizeof(*km->pods));
    km->pods[0].ns = ebb_str_cstr("shop");
    km->pods[0].name = ebb_str_cstr("cart-0");
    km->pods[1].priority = ebb_str_cstr("koord-prod");
    assert_int_equal(ebb_res_set(&km->pods[1].usage, EBB_RES_MEMORY, 1 << 20), 0);
    assert_int_equal(ebb_res_set(&km->node_usage, EBB_RES_CPU, 1500), 0);
    ns->name = ebb_str_cstr("shop");
    pvc->ns = ebb_str_cstr("shop");
    pvc->name = ebb_str_cstr("data-postgres-0");
    pvc->storage_class = ebb_str_cstr("gp3");
    ebb_pdb_free(pdb);
    ebb_koord_node_metric_free(km);
    ebb_namespace_free(ns);
    ebb_pvc_free(pvc);
    ebb_pdb_free(NULL);
    ebb_koord_node_metric_free(NULL);
    ebb_node_metrics_free(NULL);
    ebb_pod_metrics_free(NULL);
    ebb_priority_class_free(NULL);
    ebb_node_free(NULL);
    assert_int_equal(ebb_str_count(), base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_resources),
        cmocka_unit_test(test_admit),
        cmocka_unit_test(test_extended_resources),
        cmocka_unit_test(test_res_list),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_pod_key_and_free),
        cmocka_unit_test(test_other_kinds_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
