/* decode.c: cJSON -> model structs. Pods are written inline with single
 * quotes (turned into double quotes before parsing) so each test shows the
 * exact object it decodes. */
#include "fixtures.h"

#include <cjson/cJSON.h>

#include "ebb/decode.h"
#include "ebb/selector.h"

#define GI (1024LL * 1024 * 1024)
#define MI (1024LL * 1024)

static size_t str_base;

static int setup(void **state)
{
    (void)state;
    str_base = ebb_str_count();
    return 0;
}

/* Every interned string taken by a test has been released again. */
static int teardown(void **state)
{
    (void)state;
    assert_int_equal(ebb_str_count(), str_base);
    return 0;
}

static cJSON *J(const char *s)
{
    char *t = strdup(s);
    cJSON *j;

    assert_non_null(t);
    for (char *p = t; *p; p++)
        if (*p == '\'')
            *p = '"';
    j = cJSON_Parse(t);
    free(t);
    assert_non_null(j);
    return j;
}

static struct ebb_pod *pod_of(const char *json)
{
    struct ebb_error err;
    struct ebb_pod *p = NULL;
    cJSON *j = J(json);
    int rc = ebb_decode_pod(j, &p, &err);

    if (rc != 0)
        fail_msg("decode: %s: %s", err.field, err.msg);
    cJSON_Delete(j);
    return p;
}

/* Decode a pod that must fail; returns the error. */
static struct ebb_error pod_error(const char *json)
{
    struct ebb_error err;
    struct ebb_pod *p = NULL;
    cJSON *j = J(json);

    ebb_error_clear(&err);
    assert_int_not_equal(ebb_decode_pod(j, &p, &err), 0);
    assert_null(p);
    cJSON_Delete(j);
    return err;
}

static int64_t req(const struct ebb_pod *p, const char *res)
{
    return ebb_res_get(&p->requests, ebb_resource_find(res));
}

/* ---- requests ------------------------------------------------------------ */

/* Sidecars (restartPolicy: Always) add to the app sum and to every later
 * init container's use; the result is max(app, init maxima) + overhead. */
static void test_requests_sidecar_overhead(void **state)
{
    (void)state;
    struct ebb_pod *p = pod_of(
        "{'metadata':{'name':'mesh','namespace':'prod'},'spec':{"
        "'containers':["
        "  {'name':'app','resources':{'requests':{'cpu':'500m','memory':'256Mi'}}},"
        "  {'name':'helper','resources':{'requests':{'cpu':'100m','memory':'64Mi'}}}],"
        "'initContainers':["
        "  {'name':'setup','resources':{'requests':{'cpu':'2','memory':'1Gi'}}},"
        "  {'name':'proxy','restartPolicy':'Always','resources':{'requests':{'cpu':'200m','memory':'128Mi'}}},"
        "  {'name':'migrate','resources':{'requests':{'cpu':'1900m','memory':'1Gi'}}}],"
        "'overhead':{'cpu':'250m','memory':'120Mi'}}}");

    /* migrate runs beside proxy: 1900m + 200m = 2100m beats setup's 2000m
     * and the app sum 800m; memory 1Gi + 128Mi = 1152Mi; then overhead. */
    assert_int_equal(req(p, "cpu"), 2100 + 250);
    assert_int_equal(req(p, "memory"), GI + 128 * MI + 120 * MI);
    assert_int_equal(p->requests.n, 2);
    assert_true(p->requested_mask & (1u << EBB_RES_CPU));
    assert_true(p->requested_mask & (1u << EBB_RES_MEMORY));
    assert_false(p->requested_mask & (1u << EBB_RES_PODS));
    ebb_pod_free(p);
}

static void test_requests_sidecar_after_init(void **state)
{
    (void)state;
    /* A sidecar declared after a big init container does not inflate it:
     * init max = max(1000, 300) and the app sum is 400 + 300. */
    struct ebb_pod *p = pod_of(
        "{'metadata':{'name':'p'},'spec':{"
        "'containers':[{'name':'a','resources':{'requests':{'cpu':'400m'}}}],"
        "'initContainers':["
        "  {'name':'big','resources':{'requests':{'cpu':'1'}}},"
        "  {'name':'side','restartPolicy':'Always','resources':{'requests':{'cpu':'300m'}}}]}}");

    assert_int_equal(req(p, "cpu"), 1000);
    ebb_pod_free(p);
}

static void test_requests_init_max_and_union(void **state)
{
    (void)state;
    struct ebb_pod *p = pod_of(
        "{'metadata':{'name':'p'},'spec':{"
        "'containers':[{'name':'a','resources':{'requests':{'cpu':'100m','memory':'0'}}},"
        "              {'name':'b','resources':{'requests':{'cpu':'150m'}}}],"
        "'initContainers':[{'name':'i','resources':{'requests':{'cpu':'500m','example.com/dongle':'1'}}}]}}");

    assert_int_equal(req(p, "cpu"), 500);
    assert_int_equal(req(p, "example.com/dongle"), 1);
    /* a zero request is listed and counts as requested, as upstream's
     * OnlyThresholdingResources sees the key */
    assert_true(ebb_res_has(&p->requests, EBB_RES_MEMORY));
    assert_int_equal(req(p, "memory"), 0);
    assert_true(p->requested_mask & (1u << EBB_RES_MEMORY));
    assert_false(p->requested_mask & (1u << EBB_RES_EPHEMERAL));
    assert_true(p->requested_mask & (1ull << ebb_resource_find("example.com/dongle")));
    ebb_pod_free(p);
}

static void test_requests_pod_level(void **state)
{
    (void)state;
    /* Pod-level requests replace cpu and memory; other resources keep the
     * container sum; overhead is added after. */
    struct ebb_pod *p = pod_of(
        "{'metadata':{'name':'p'},'spec':{"
        "'containers':[{'name':'a','resources':{'requests':{'cpu':'300m','memory':'100Mi',"
        "                                                   'ephemeral-storage':'1Gi'}}}],"
        "'resources':{'requests':{'cpu':'1','memory':'2Gi','ephemeral-storage':'9Gi'}},"
        "'overhead':{'cpu':'100m'}}}");

    assert_int_equal(req(p, "cpu"), 1100);
    assert_int_equal(req(p, "memory"), 2 * GI);
    assert_int_equal(req(p, "ephemeral-storage"), GI);
    ebb_pod_free(p);

    /* Only unsupported pod-level keys: pod-level requests are not "set". */
    p = pod_of("{'metadata':{'name':'p'},'spec':{"
               "'containers':[{'name':'a','resources':{'requests':{'cpu':'300m'}}}],"
               "'resources':{'requests':{'ephemeral-storage':'5Gi'}}}}");
    assert_int_equal(req(p, "cpu"), 300);
    assert_false(ebb_res_has(&p->requests, EBB_RES_EPHEMERAL));
    ebb_pod_free(p);
}

static void test_quantities(void **state)
{
    (void)state;
    struct ebb_pod *p = pod_of(
        "{'metadata':{'name':'p'},'spec':{'containers':["
        "  {'name':'a','resources':{'requests':{'cpu':'100m','memory':'1.5Gi','ephemeral-storage':'1k',"
        "                                       'example.com/widgets':'2e3'}}},"
        "  {'name':'b','resources':{'requests':{'cpu':0.5,'memory':1024,'pods':'1'}}},"
        "  {'name':'c','resources':{'requests':{'cpu':'2e3'}}}]}}");

    assert_int_equal(req(p, "cpu"), 100 + 500 + 2000000);
    assert_int_equal(req(p, "memory"), 1610612736 + 1024);
    assert_int_equal(req(p, "ephemeral-storage"), 1000);
    assert_int_equal(req(p, "example.com/widgets"), 2000);
    assert_int_equal(req(p, "pods"), 1);
    ebb_pod_free(p);

    cJSON *j = J("['250m', 3, '1Ki', 'x1', true]");
    int64_t v;
    assert_int_equal(ebb_decode_quantity(cJSON_GetArrayItem(j, 0), "cpu", &v), 0);
    assert_int_equal(v, 250);
    assert_int_equal(ebb_decode_quantity(cJSON_GetArrayItem(j, 1), "cpu", &v), 0);
    assert_int_equal(v, 3000);
    assert_int_equal(ebb_decode_quantity(cJSON_GetArrayItem(j, 2), "memory", &v), 0);
    assert_int_equal(v, 1024);
    assert_int_not_equal(ebb_decode_quantity(cJSON_GetArrayItem(j, 3), "memory", &v), 0);
    assert_int_not_equal(ebb_decode_quantity(cJSON_GetArrayItem(j, 4), "memory", &v), 0);
    cJSON_Delete(j);
}

static void test_bad_quantity(void **state)
{
    (void)state;
    struct ebb_error e = pod_error(
        "{'metadata':{'name':'p'},'spec':{'containers':["
        "  {'name':'a','resources':{'requests':{'cpu':'1'}}},"
        "  {'name':'b','resources':{'requests':{'memory':'1Gi','cpu':'12x'}}}]}}");

    assert_int_equal(e.code, EBB_ESCHEMA);
    assert_string_equal(e.field, "spec.containers[1].resources.requests.cpu");
    assert_string_equal(e.msg, "\"12x\" is not a quantity");

    e = pod_error("{'metadata':{'name':'p'},'spec':{'overhead':{'memory':['1']}}}");
    assert_string_equal(e.field, "spec.overhead.memory");
    assert_string_equal(e.msg, "expected a quantity, got an array");
}

/* ---- QoS ---------------------------------------------------------------- */

static uint8_t qos_of(const char *containers)
{
    char buf[1024];
    struct ebb_pod *p;
    uint8_t q;

    snprintf(buf, sizeof(buf), "{'metadata':{'name':'p'},'spec':{%s}}", containers);
    p = pod_of(buf);
    q = p->qos;
    ebb_pod_free(p);
    return q;
}

static void test_qos(void **state)
{
    (void)state;
    assert_int_equal(qos_of("'containers':[{'name':'a'}]"), EBB_QOS_BEST_EFFORT);
    assert_int_equal(qos_of("'containers':[{'name':'a','resources':{'requests':{'cpu':'0',"
                            "'memory':'0','nvidia.com/gpu':'1'}}}]"),
                     EBB_QOS_BEST_EFFORT);
    assert_int_equal(qos_of("'containers':[{'name':'a','resources':{'requests':{'cpu':'1'}}}]"),
                     EBB_QOS_BURSTABLE);
    assert_int_equal(qos_of("'containers':[{'name':'a','resources':{"
                            "'requests':{'cpu':'1','memory':'1Gi'},"
                            "'limits':{'cpu':'1000m','memory':'1Gi'}}}]"),
                     EBB_QOS_GUARANTEED);
    /* every container (init too) needs cpu and memory limits */
    assert_int_equal(qos_of("'containers':[{'name':'a','resources':{"
                            "'requests':{'cpu':'1','memory':'1Gi'},"
                            "'limits':{'cpu':'1','memory':'1Gi'}}}],"
                            "'initContainers':[{'name':'i','resources':{'requests':{'cpu':'1'}}}]"),
                     EBB_QOS_BURSTABLE);
    /* a cpu limit alone is not enough, even when it equals the request */
    assert_int_equal(qos_of("'containers':[{'name':'a','resources':{"
                            "'requests':{'cpu':'1'},'limits':{'cpu':'1'}}}]"),
                     EBB_QOS_BURSTABLE);
    /* sums are compared, not containers one by one */
    assert_int_equal(qos_of("'containers':["
                            "{'name':'a','resources':{'requests':{'cpu':'2','memory':'1Gi'},"
                            "                         'limits':{'cpu':'1','memory':'1Gi'}}},"
                            "{'name':'b','resources':{'requests':{'cpu':'1','memory':'1Gi'},"
                            "                         'limits':{'cpu':'2','memory':'1Gi'}}}]"),
                     EBB_QOS_GUARANTEED);
    /* limits alone, as a raw object (the API server would default the
     * requests): the descheduler's formula says Burstable */
    assert_int_equal(qos_of("'containers':[{'name':'a','resources':{"
                            "'limits':{'cpu':'1','memory':'1Gi'}}}]"),
                     EBB_QOS_BURSTABLE);
    /* status.qosClass wins over the computation */
    struct ebb_pod *p = pod_of("{'metadata':{'name':'p'},'spec':{'containers':[{'name':'a'}]},"
                               "'status':{'qosClass':'Guaranteed'}}");
    assert_int_equal(p->qos, EBB_QOS_GUARANTEED);
    ebb_pod_free(p);
}

/* ---- flags and metadata -------------------------------------------------- */

static void test_flags(void **state)
{
    (void)state;
    struct ebb_pod *p = pod_of("{'metadata':{'name':'p'},'spec':{'containers':[]}}");
    assert_int_equal(p->flags, 0);
    assert_string_equal(p->ns, "default");
    ebb_pod_free(p);

    p = pod_of("{'metadata':{'name':'p','namespace':'kube-system','annotations':{"
               "  'kubernetes.io/config.mirror':'abc','kubernetes.io/config.source':'file'}},"
               "'spec':{'volumes':[{'name':'v','hostPath':{'path':'/etc'}}]}}");
    assert_int_equal(p->flags, EBB_POD_MIRROR | EBB_POD_STATIC | EBB_POD_LOCAL_STORAGE);
    ebb_pod_free(p);

    p = pod_of("{'metadata':{'name':'p','annotations':{'kubernetes.io/config.source':'api'}},"
               "'spec':{'volumes':[{'name':'v','emptyDir':{}},"
               "                   {'name':'d','persistentVolumeClaim':{'claimName':'data'}},"
               "                   {'name':'c','configMap':{'name':'x'}},"
               "                   {'name':'e','persistentVolumeClaim':{'claimName':'logs'}}]}}");
    assert_int_equal(p->flags, EBB_POD_LOCAL_STORAGE);
    assert_int_equal(p->npvcs, 2);
    assert_string_equal(p->pvcs[0], "data");
    assert_string_equal(p->pvcs[1], "logs");
    ebb_pod_free(p);

    p = pod_of("{'metadata':{'name':'p','deletionTimestamp':'2026-11-21T10:05:00Z','annotations':{"
               "  'descheduler.alpha.kubernetes.io/evict':'',"
               "  'descheduler.alpha.kubernetes.io/prefer-no-eviction':'true'}},"
               "'spec':{'priority':0,'nodeSelector':{'disk':'ssd'},"
               "        'resourceClaims':[{'name':'gpu','resourceClaimName':'g'}]},"
               "'status':{'conditions':[{'type':'Ready','status':'True'}]}}");
    assert_int_equal(p->flags, EBB_POD_EVICT_ANNOTATION | EBB_POD_PREFER_NO_EVICTION |
                                   EBB_POD_HAS_PRIORITY | EBB_POD_TERMINATING |
                                   EBB_POD_NODE_SELECTOR | EBB_POD_RESOURCE_CLAIMS |
                                   EBB_POD_READY);
    assert_int_equal(p->priority, 0);
    assert_int_equal(p->deleted, 1795255500);
    assert_string_equal(ebb_labels_getc(&p->node_selector, "disk"), "ssd");
    ebb_pod_free(p);

    p = pod_of("{'metadata':{'name':'p'},'spec':{'resourceClaims':[]},"
               "'status':{'conditions':[{'type':'Ready','status':'False'}]}}");
    assert_int_equal(p->flags, 0);
    ebb_pod_free(p);
}

static void test_pod_fields(void **state)
{
    (void)state;
    struct ebb_pod *p = pod_of(
        "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'web-1','namespace':'prod','uid':'u-1',"
        "  'creationTimestamp':'2026-11-20T08:00:00Z',"
        "  'labels':{'tier':'frontend','app':'web'},"
        "  'annotations':{'kubectl.kubernetes.io/last-applied-configuration':'{}','a':'b'},"
        "  'managedFields':[{'manager':'kubectl','fieldsV1':{'f:spec':{}}}],"
        "  'ownerReferences':[{'apiVersion':'apps/v1','kind':'ReplicaSet','name':'web-7d','uid':'rs-1',"
        "                      'controller':true,'blockOwnerDeletion':true}]},"
        "'spec':{'nodeName':'node-a','schedulerName':'default-scheduler','priorityClassName':'hi',"
        "  'priority':1000,"
        "  'containers':[{'name':'web','image':'nginx:1.27','env':[{'name':'A','value':'1'}]},"
        "                {'name':'side','image':'envoy:1.30'}],"
        "  'tolerations':[{'key':'node.kubernetes.io/not-ready','operator':'Exists',"
        "                  'effect':'NoExecute','tolerationSeconds':300},"
        "                 {'key':'dedicated','value':'gpu','effect':'NoSchedule'},{'operator':'Exists'}]},"
        "'status':{'phase':'Running','reason':'','startTime':'2026-11-20T08:00:05Z',"
        "  'conditions':[{'type':'Ready','status':'True','lastTransitionTime':'2026-11-20T08:00:12Z'},"
        "                {'type':'PodScheduled','status':'True','reason':'r'}],"
        "  'containerStatuses':["
        "    {'name':'web','ready':true,'restartCount':3,'state':{'running':{'startedAt':'x'}},"
        "     'lastState':{'terminated':{'exitCode':137,'reason':'OOMKilled'}}},"
        "    {'name':'side','ready':false,'restartCount':4,"
        "     'state':{'waiting':{'reason':'CrashLoopBackOff'}}}],"
        "  'initContainerStatuses':["
        "    {'name':'init','ready':false,'restartCount':2,"
        "     'state':{'terminated':{'exitCode':1,'reason':'Error'}}}],"
        "  'ephemeralContainerStatuses':[{'name':'debug','restartCount':5,'state':{}}]}}");

    assert_string_equal(p->name, "web-1");
    assert_string_equal(p->ns, "prod");
    assert_string_equal(p->uid, "u-1");
    assert_string_equal(p->node, "node-a");
    assert_string_equal(p->scheduler, "default-scheduler");
    assert_string_equal(p->priority_class, "hi");
    assert_int_equal(p->priority, 1000);
    assert_int_equal(p->phase, EBB_PHASE_RUNNING);
    assert_int_equal(p->created, 1795161600);
    assert_int_equal(p->started, 1795161605);
    assert_int_equal(p->deleted, EBB_TIME_NONE);
    /* labels sorted by key; last-applied dropped */
    assert_int_equal(p->labels.n, 2);
    assert_string_equal(p->labels.kv[0].key, "app");
    assert_string_equal(p->labels.kv[1].key, "tier");
    assert_int_equal(p->annotations.n, 1);
    assert_string_equal(p->annotations.kv[0].key, "a");
    assert_int_equal(p->nowners, 1);
    assert_string_equal(p->owners[0].kind, "ReplicaSet");
    assert_string_equal(p->owners[0].name, "web-7d");
    assert_string_equal(p->owners[0].uid, "rs-1");
    assert_true(p->owners[0].controller);
    assert_int_equal(p->nimages, 2);
    assert_string_equal(p->images[0], "nginx:1.27");
    assert_string_equal(p->images[1], "envoy:1.30");
    assert_int_equal(p->ntolerations, 3);
    assert_int_equal(p->tolerations[0].op, EBB_TOL_EXISTS);
    assert_int_equal(p->tolerations[0].effect, EBB_EFFECT_NO_EXECUTE);
    assert_true(p->tolerations[0].has_seconds);
    assert_int_equal(p->tolerations[0].seconds, 300);
    assert_int_equal(p->tolerations[1].op, EBB_TOL_EQUAL);
    assert_string_equal(p->tolerations[1].value, "gpu");
    assert_false(p->tolerations[1].has_seconds);
    assert_null(p->tolerations[2].key);
    assert_int_equal(p->tolerations[2].effect, EBB_EFFECT_ALL);
    assert_int_equal(p->nconditions, 2);
    assert_string_equal(p->conditions[0].type, "Ready");
    assert_int_equal(p->conditions[0].last_transition, 1795161612);
    assert_int_equal(p->conditions[1].last_transition, EBB_TIME_NONE);
    assert_string_equal(p->conditions[1].reason, "r");
    assert_true(p->flags & EBB_POD_READY);
    assert_int_equal(p->ncstatus, 4);
    assert_int_equal(p->cstatus[0].kind, EBB_CONT_APP);
    assert_int_equal(p->cstatus[0].state, EBB_CSTATE_RUNNING);
    assert_int_equal(p->cstatus[0].last_state, EBB_CSTATE_TERMINATED);
    assert_int_equal(p->cstatus[0].last_exit_code, 137);
    assert_string_equal(p->cstatus[0].last_reason, "OOMKilled");
    assert_true(p->cstatus[0].ready);
    assert_int_equal(p->cstatus[1].state, EBB_CSTATE_WAITING);
    assert_string_equal(p->cstatus[1].reason, "CrashLoopBackOff");
    assert_int_equal(p->cstatus[2].kind, EBB_CONT_INIT);
    assert_int_equal(p->cstatus[2].state, EBB_CSTATE_TERMINATED);
    assert_int_equal(p->cstatus[2].exit_code, 1);
    assert_string_equal(p->cstatus[2].reason, "Error");
    assert_int_equal(p->cstatus[3].kind, EBB_CONT_EPHEMERAL);
    assert_int_equal(p->cstatus[3].state, EBB_CSTATE_NONE);
    assert_int_equal(p->restarts, 7);
    assert_int_equal(p->init_restarts, 2);
    assert_null(p->affinity);
    assert_int_equal(p->ntsc, 0);
    ebb_pod_free(p);
}

/* ---- affinity and topology spread ----------------------------------------- */

static void test_affinity(void **state)
{
    (void)state;
    struct ebb_pod *p = pod_of(
        "{'metadata':{'name':'p'},'spec':{'affinity':{"
        "'nodeAffinity':{"
        "  'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':["
        "    {'matchExpressions':[{'key':'zone','operator':'In','values':['b','a','b']},"
        "                         {'key':'gen','operator':'Gt','values':['3']}]},"
        "    {'matchFields':[{'key':'metadata.name','operator':'NotIn','values':['node-c']}]}]},"
        "  'preferredDuringSchedulingIgnoredDuringExecution':["
        "    {'weight':20,'preference':{'matchExpressions':[{'key':'ssd','operator':'Exists'}]}}]},"
        "'podAffinity':{"
        "  'requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'zone',"
        "     'labelSelector':{'matchLabels':{'app':'cache'}},'namespaceSelector':{},"
        "     'matchLabelKeys':['pod-template-hash'],'mismatchLabelKeys':['tenant']}]},"
        "'podAntiAffinity':{"
        "  'requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'kubernetes.io/hostname',"
        "     'namespaces':['prod','staging']}],"
        "  'preferredDuringSchedulingIgnoredDuringExecution':[{'weight':100,'podAffinityTerm':{"
        "     'topologyKey':'zone','labelSelector':{'matchExpressions':"
        "        [{'key':'app','operator':'NotIn','values':['x']}]},"
        "     'namespaceSelector':{'matchLabels':{'env':'prod'}}}}]}}}}");
    const struct ebb_affinity *a = p->affinity;

    assert_non_null(a);
    assert_true(a->has_required);
    assert_int_equal(a->nrequired, 2);
    assert_int_equal(a->required[0].nexprs, 2);
    assert_int_equal(a->required[0].nfields, 0);
    assert_string_equal(a->required[0].exprs[0].key, "zone");
    assert_int_equal(a->required[0].exprs[0].op, EBB_OP_IN);
    assert_int_equal(a->required[0].exprs[0].nvalues, 2);   /* a set: "b" once */
    assert_true((uintptr_t)a->required[0].exprs[0].values[0] <
                (uintptr_t)a->required[0].exprs[0].values[1]);
    assert_int_equal(a->required[0].exprs[1].op, EBB_OP_GT);
    assert_int_equal(a->required[0].exprs[1].num, 3);
    assert_int_equal(a->required[1].nfields, 1);
    assert_string_equal(a->required[1].fields[0].key, "metadata.name");
    assert_int_equal(a->required[1].fields[0].op, EBB_OP_NOT_IN);
    assert_int_equal(a->npreferred, 1);
    assert_int_equal(a->preferred[0].weight, 20);
    assert_int_equal(a->preferred[0].term.exprs[0].op, EBB_OP_EXISTS);

    assert_int_equal(a->naff_required, 1);
    const struct ebb_pod_term *t = &a->aff_required[0];
    assert_string_equal(t->topology_key, "zone");
    assert_int_equal(t->selector->nreqs, 1);
    assert_string_equal(t->selector->reqs[0].key, "app");
    assert_string_equal(t->selector->reqs[0].values[0], "cache");
    assert_non_null(t->ns_selector);
    assert_true(ebb_selector_is_empty(t->ns_selector));
    assert_int_equal(t->nmatch_keys, 1);
    assert_string_equal(t->match_keys[0], "pod-template-hash");
    assert_int_equal(t->nmismatch_keys, 1);
    assert_string_equal(t->mismatch_keys[0], "tenant");

    assert_int_equal(a->nanti_required, 1);
    t = &a->anti_required[0];
    /* no labelSelector: matches nothing */
    assert_true(t->selector->flags & EBB_SEL_NOTHING);
    assert_null(t->ns_selector);
    assert_int_equal(t->nnamespaces, 2);
    assert_string_equal(t->namespaces[1], "staging");
    assert_int_equal(a->nanti_preferred, 1);
    assert_int_equal(a->anti_preferred[0].weight, 100);
    assert_int_equal(a->anti_preferred[0].term.selector->reqs[0].op, EBB_OP_NOT_IN);
    assert_int_equal(a->anti_preferred[0].term.ns_selector->nreqs, 1);
    assert_int_equal(a->naff_preferred, 0);
    ebb_pod_free(p);

    /* An empty affinity object keeps no struct. */
    p = pod_of("{'metadata':{'name':'p'},'spec':{'affinity':{'nodeAffinity':{}}}}");
    assert_null(p->affinity);
    ebb_pod_free(p);
}

static void test_topology_spread(void **state)
{
    (void)state;
    struct ebb_pod *p = pod_of(
        "{'metadata':{'name':'p'},'spec':{'topologySpreadConstraints':["
        "  {'maxSkew':1,'topologyKey':'topology.kubernetes.io/zone','whenUnsatisfiable':'DoNotSchedule',"
        "   'labelSelector':{'matchLabels':{'app':'web'}},'matchLabelKeys':['pod-template-hash'],"
        "   'minDomains':3,'nodeAffinityPolicy':'Ignore','nodeTaintsPolicy':'Honor'},"
        "  {'maxSkew':2,'topologyKey':'kubernetes.io/hostname','whenUnsatisfiable':'ScheduleAnyway'}]}}");

    assert_int_equal(p->ntsc, 2);
    assert_int_equal(p->tsc[0].max_skew, 1);
    assert_int_equal(p->tsc[0].min_domains, 3);
    assert_string_equal(p->tsc[0].topology_key, "topology.kubernetes.io/zone");
    assert_int_equal(p->tsc[0].when_unsatisfiable, EBB_TSC_DO_NOT_SCHEDULE);
    assert_int_equal(p->tsc[0].node_affinity_policy, EBB_POLICY_IGNORE);
    assert_int_equal(p->tsc[0].node_taints_policy, EBB_POLICY_HONOR);
    assert_int_equal(p->tsc[0].selector->nreqs, 1);
    assert_int_equal(p->tsc[0].nmatch_keys, 1);
    assert_int_equal(p->tsc[1].max_skew, 2);
    assert_int_equal(p->tsc[1].min_domains, 0);
    assert_int_equal(p->tsc[1].when_unsatisfiable, EBB_TSC_SCHEDULE_ANYWAY);
    assert_int_equal(p->tsc[1].node_affinity_policy, EBB_POLICY_UNSET);
    assert_true(p->tsc[1].selector->flags & EBB_SEL_NOTHING);
    ebb_pod_free(p);
}

static void test_selector_errors(void **state)
{
    (void)state;
    struct ebb_error e = pod_error(
        "{'metadata':{'name':'p'},'spec':{'affinity':{'podAntiAffinity':{"
        "'requiredDuringSchedulingIgnoredDuringExecution':[{'topologyKey':'z','labelSelector':"
        "{'matchExpressions':[{'key':'a','operator':'In','values':['x']},"
        "                     {'key':'b','operator':'Equals','values':['y']}]}}]}}}}");
    assert_int_equal(e.code, EBB_ESCHEMA);
    assert_string_equal(e.field, "spec.affinity.podAntiAffinity."
                                 "requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector."
                                 "matchExpressions[1].operator");
    assert_string_equal(e.msg, "\"Equals\" is not a valid operator (In, NotIn, Exists, DoesNotExist)");

    /* Gt is for node selector requirements only */
    e = pod_error("{'metadata':{'name':'p'},'spec':{'topologySpreadConstraints':[{'maxSkew':1,"
                  "'labelSelector':{'matchExpressions':[{'key':'a','operator':'Gt','values':['1']}]}}]}}");
    assert_string_equal(e.field, "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator");

    e = pod_error("{'metadata':{'name':'p'},'spec':{'affinity':{'nodeAffinity':{"
                  "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':["
                  "{'matchExpressions':[{'key':'gen','operator':'Lt','values':['2x']}]}]}}}}}");
    assert_string_equal(e.field, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                                 "nodeSelectorTerms[0].matchExpressions[0].values[0]");
    assert_string_equal(e.msg, "\"2x\" is not an integer (Lt)");

    e = pod_error("{'metadata':{'name':'p'},'spec':{'affinity':{'nodeAffinity':{"
                  "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':["
                  "{'matchExpressions':[{'key':'gen','operator':'Gt','values':['1','2']}]}]}}}}}");
    assert_string_equal(e.msg, "must have exactly one value for Gt");

    e = pod_error("{'metadata':{'name':'p'},'spec':{'affinity':{'nodeAffinity':{"
                  "'requiredDuringSchedulingIgnoredDuringExecution':{'nodeSelectorTerms':["
                  "{'matchFields':[{'key':'metadata.labels','operator':'In','values':['a']}]}]}}}}}");
    assert_string_equal(e.field, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                                 "nodeSelectorTerms[0].matchFields[0].key");

    e = pod_error("{'metadata':{'name':'p'},'spec':{'topologySpreadConstraints':[{'maxSkew':1,"
                  "'labelSelector':{'matchExpressions':[{'key':'a','operator':'In'}]}}]}}");
    assert_string_equal(e.msg, "must be non-empty for In");
    e = pod_error("{'metadata':{'name':'p'},'spec':{'topologySpreadConstraints':[{'maxSkew':1,"
                  "'labelSelector':{'matchExpressions':[{'key':'a','operator':'Exists','values':['v']}]}}]}}");
    assert_string_equal(e.msg, "must be empty for Exists");
    e = pod_error("{'metadata':{'name':'p'},'spec':{'topologySpreadConstraints':[{'maxSkew':1,"
                  "'whenUnsatisfiable':'Maybe'}]}}");
    assert_string_equal(e.field, "spec.topologySpreadConstraints[0].whenUnsatisfiable");
}

static void test_label_selector_api(void **state)
{
    (void)state;
    struct ebb_selector *s = NULL;
    struct ebb_error err;
    cJSON *j = J("{'matchLabels':{'b':'2','a':'1'},"
                 "'matchExpressions':[{'key':'c','operator':'DoesNotExist'}]}");

    assert_int_equal(ebb_decode_label_selector(j, &s, &err), 0);
    assert_int_equal(s->nreqs, 3);
    assert_string_equal(s->reqs[0].key, "a");   /* sorted by key */
    assert_int_equal(s->reqs[2].op, EBB_OP_DOES_NOT_EXIST);
    ebb_selector_free(s);
    cJSON_Delete(j);

    assert_int_equal(ebb_decode_label_selector(NULL, &s, &err), 0);
    assert_null(s);
    j = J("{'matchLabels':{'a':1}}");
    assert_int_equal(ebb_decode_label_selector(j, &s, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "matchLabels.a");
    assert_null(s);
    cJSON_Delete(j);
}

/* ---- other errors --------------------------------------------------------- */

static void test_errors(void **state)
{
    (void)state;
    struct ebb_error e = pod_error("{'metadata':{'namespace':'x'},'spec':{}}");
    assert_string_equal(e.field, "metadata.name");
    assert_string_equal(e.msg, "required");

    e = pod_error("{'metadata':{'name':'p','labels':{'app':'web','v':1.5}}}");
    assert_string_equal(e.field, "metadata.labels.v");
    assert_string_equal(e.msg, "expected a string, got a number");

    e = pod_error("{'metadata':{'name':'p'},'spec':{'priority':1.5}}");
    assert_string_equal(e.field, "spec.priority");

    e = pod_error("{'metadata':{'name':'p'},'spec':{'containers':{'name':'a'}}}");
    assert_string_equal(e.field, "spec.containers");
    assert_string_equal(e.msg, "expected an array, got an object");

    e = pod_error("{'metadata':{'name':'p','creationTimestamp':'yesterday'}}");
    assert_string_equal(e.field, "metadata.creationTimestamp");

    e = pod_error("{'metadata':{'name':'p'},'status':{'containerStatuses':[{'name':'a'},"
                  "{'name':'b','restartCount':'3'}]}}");
    assert_string_equal(e.field, "status.containerStatuses[1].restartCount");

    e = pod_error("{'metadata':{'name':'p'},'spec':{'tolerations':[{'operator':'Maybe'}]}}");
    assert_string_equal(e.field, "spec.tolerations[0].operator");

    e = pod_error("['not','an','object']");
    assert_string_equal(e.msg, "expected an object, got an array");

    /* what an error echoes of the input cannot break a log line, an Event
     * or a terminal: control characters and what is not UTF-8 as '?', cut
     * after a whole character */
    e = pod_error("{'metadata':{'name':'p'},'spec':{'containers':[{'resources':{'requests':"
                  "{'cpu\\u001b[2J':'1\\u001b[31m\\nx'}}}]}}");
    assert_string_equal(e.field, "spec.containers[0].resources.requests.cpu?[2J");
    assert_string_equal(e.msg, "\"1?[31m?x\" is not a quantity");
    e = pod_error("{'metadata':{'name':'p','creationTimestamp':'\xc3\xa9\xff"
                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'}}");
    assert_true(strncmp(e.msg, "\"\xc3\xa9?aaa", 7) == 0);
    assert_non_null(strstr(e.msg, "...\" is not an RFC 3339 time"));
    assert_true(ebb_utf8_valid(e.msg, strlen(e.msg)));
}

/* ---- nodes and the other kinds ---------------------------------------------- */

static void test_node(void **state)
{
    (void)state;
    struct ebb_error err;
    struct ebb_node *n = NULL;
    cJSON *j = J("{'apiVersion':'v1','kind':'Node','metadata':{'name':'node-c','uid':'n-c',"
                 "  'creationTimestamp':'2026-11-01T00:00:00Z','labels':{'zone':'a'},"
                 "  'annotations':{'kubectl.kubernetes.io/last-applied-configuration':'{}'}},"
                 "'spec':{'unschedulable':true,'taints':["
                 "  {'key':'node.kubernetes.io/unschedulable','effect':'NoSchedule'},"
                 "  {'key':'dedicated','value':'gpu','effect':'NoExecute'},"
                 "  {'key':'odd','effect':'Sometimes'}]},"
                 "'status':{'capacity':{'cpu':'2','memory':'4Gi','pods':'110'},'allocatable':{},"
                 "  'conditions':[{'type':'MemoryPressure','status':'False'},"
                 "                {'type':'Ready','status':'True'}]}}");

    assert_int_equal(ebb_decode_kind(j), EBB_KIND_NODE);
    assert_int_equal(ebb_decode_node(j, &n, &err), 0);
    assert_string_equal(n->name, "node-c");
    assert_string_equal(n->uid, "n-c");
    assert_true(n->unschedulable);
    assert_true(n->ready);
    assert_int_equal(n->created, 1793491200);
    assert_int_equal(n->annotations.n, 0);
    assert_int_equal(n->ntaints, 3);
    assert_int_equal(n->taints[0].effect, EBB_EFFECT_NO_SCHEDULE);
    assert_null(n->taints[0].value);
    assert_int_equal(n->taints[1].effect, EBB_EFFECT_NO_EXECUTE);
    assert_string_equal(n->taints[1].value, "gpu");
    assert_int_equal(n->taints[2].effect, EBB_EFFECT_OTHER);
    /* allocatable empty: the capacity */
    assert_int_equal(ebb_res_get(&n->allocatable, EBB_RES_CPU), 2000);
    assert_int_equal(ebb_res_get(&n->allocatable, EBB_RES_MEMORY), 4 * GI);
    assert_int_equal(ebb_res_get(&n->allocatable, EBB_RES_PODS), 110);
    assert_int_equal(n->capacity.n, 3);
    ebb_node_free(n);
    cJSON_Delete(j);

    j = J("{'metadata':{'name':'n'},'status':{'allocatable':{'cpu':'3920m'},'capacity':{'cpu':'4'},"
          "'conditions':[{'type':'Ready','status':'Unknown'}]}}");
    assert_int_equal(ebb_decode_node(j, &n, &err), 0);
    assert_int_equal(ebb_res_get(&n->allocatable, EBB_RES_CPU), 3920);
    assert_false(n->ready);
    ebb_node_free(n);
    cJSON_Delete(j);

    /* no Ready condition at all: ready, as upstream's IsReady reads it */
    j = J("{'metadata':{'name':'n'},'status':{'allocatable':{'cpu':'4'},"
          "'conditions':[{'type':'MemoryPressure','status':'False'}]}}");
    assert_int_equal(ebb_decode_node(j, &n, &err), 0);
    assert_true(n->ready);
    ebb_node_free(n);
    cJSON_Delete(j);

    j = J("{'metadata':{'name':'n'},'status':{'capacity':{'memory':'lots'}}}");
    assert_int_equal(ebb_decode_node(j, &n, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "status.capacity.memory");
    cJSON_Delete(j);
}

static struct ebb_object obj_of(const char *json)
{
    struct ebb_object o;
    struct ebb_error err;
    cJSON *j = J(json);
    int rc = ebb_decode_object(j, &o, &err);

    if (rc != 0)
        fail_msg("decode: %s: %s", err.field, err.msg);
    cJSON_Delete(j);
    return o;
}

static void test_pdb(void **state)
{
    (void)state;
    struct ebb_object o = obj_of(
        "{'apiVersion':'policy/v1','kind':'PodDisruptionBudget','metadata':{'name':'web-pdb',"
        "'namespace':'prod','generation':2},'spec':{'minAvailable':1,'selector':{'matchLabels':"
        "{'app':'web'}},'unhealthyPodEvictionPolicy':'AlwaysAllow'},'status':{'observedGeneration':2,"
        "'disruptionsAllowed':1,'currentHealthy':2,'desiredHealthy':1,'expectedPods':3}}");

    assert_int_equal(o.kind, EBB_KIND_PDB);
    assert_string_equal(o.u.pdb->ns, "prod");
    assert_string_equal(o.u.pdb->min_available, "1");
    assert_null(o.u.pdb->max_unavailable);
    assert_int_equal(o.u.pdb->generation, 2);
    assert_int_equal(o.u.pdb->observed_generation, 2);
    assert_int_equal(o.u.pdb->disruptions_allowed, 1);
    assert_int_equal(o.u.pdb->current_healthy, 2);
    assert_int_equal(o.u.pdb->desired_healthy, 1);
    assert_int_equal(o.u.pdb->expected_pods, 3);
    assert_string_equal(o.u.pdb->unhealthy_policy, "AlwaysAllow");
    assert_int_equal(o.u.pdb->selector->nreqs, 1);
    ebb_object_free(&o);
    assert_null(o.u.any);

    o = obj_of("{'apiVersion':'policy/v1','kind':'PodDisruptionBudget','metadata':{'name':'a'},"
               "'spec':{'maxUnavailable':'50%'}}");
    assert_string_equal(o.u.pdb->max_unavailable, "50%");
    assert_true(o.u.pdb->selector->flags & EBB_SEL_NOTHING);   /* nil */
    ebb_object_free(&o);

    o = obj_of("{'apiVersion':'policy/v1','kind':'PodDisruptionBudget','metadata':{'name':'a'},"
               "'spec':{'selector':{}}}");
    assert_true(ebb_selector_is_empty(o.u.pdb->selector));   /* v1: every pod */
    ebb_object_free(&o);

    o = obj_of("{'apiVersion':'policy/v1beta1','kind':'PodDisruptionBudget','metadata':{'name':'a'},"
               "'spec':{'selector':{}}}");
    assert_true(o.u.pdb->selector->flags & EBB_SEL_NOTHING);   /* v1beta1: no pod */
    ebb_object_free(&o);

    struct ebb_error err;
    cJSON *j = J("{'apiVersion':'policy/v1','kind':'PodDisruptionBudget','metadata':{'name':'a'},"
                 "'spec':{'selector':{'matchExpressions':[{'key':'a','operator':'in','values':['x']}]}}}");
    assert_int_equal(ebb_decode_object(j, &o, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "spec.selector.matchExpressions[0].operator");
    assert_null(o.u.any);
    cJSON_Delete(j);
}

static void test_other_kinds(void **state)
{
    (void)state;
    struct ebb_object o = obj_of("{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'prod',"
                                 "'labels':{'env':'production'}},'status':{'phase':'Terminating'}}");
    assert_int_equal(o.kind, EBB_KIND_NAMESPACE);
    assert_string_equal(o.u.ns->name, "prod");
    assert_string_equal(ebb_labels_getc(&o.u.ns->labels, "env"), "production");
    assert_true(o.u.ns->terminating);
    ebb_object_free(&o);

    o = obj_of("{'apiVersion':'scheduling.k8s.io/v1','kind':'PriorityClass','metadata':{'name':'hi'},"
               "'value':1000000,'globalDefault':true}");
    assert_int_equal(o.u.pc->value, 1000000);
    assert_true(o.u.pc->global_default);
    ebb_object_free(&o);

    o = obj_of("{'apiVersion':'v1','kind':'PersistentVolumeClaim','metadata':{'name':'data',"
               "'namespace':'prod'},'spec':{'storageClassName':'standard'}}");
    assert_string_equal(o.u.pvc->storage_class, "standard");
    assert_string_equal(o.u.pvc->ns, "prod");
    ebb_object_free(&o);

    o = obj_of("{'apiVersion':'metrics.k8s.io/v1beta1','kind':'NodeMetrics','metadata':{'name':'node-a'},"
               "'timestamp':'2026-11-21T10:00:00Z','window':'1m20.5s','usage':{'cpu':'2871042983n',"
               "'memory':'6028124Ki'}}");
    assert_string_equal(o.u.node_metrics->node, "node-a");
    assert_int_equal(o.u.node_metrics->window_ms, 80500);
    assert_int_equal(o.u.node_metrics->timestamp, 1795255200);
    assert_int_equal(ebb_res_get(&o.u.node_metrics->usage, EBB_RES_CPU), 2872);
    assert_int_equal(ebb_res_get(&o.u.node_metrics->usage, EBB_RES_MEMORY), 6028124LL * 1024);
    ebb_object_free(&o);

    o = obj_of("{'apiVersion':'metrics.k8s.io/v1beta1','kind':'PodMetrics','metadata':{'name':'web',"
               "'namespace':'prod'},'timestamp':'2026-11-21T10:00:00Z','window':'18s','containers':["
               "{'name':'a','usage':{'cpu':'120m','memory':'180Mi'}},"
               "{'name':'b','usage':{'cpu':'1823411n','memory':'14120Ki'}}]}");
    assert_int_equal(ebb_res_get(&o.u.pod_metrics->usage, EBB_RES_CPU), 122);
    assert_int_equal(ebb_res_get(&o.u.pod_metrics->usage, EBB_RES_MEMORY), 180 * MI + 14120 * 1024);
    ebb_object_free(&o);

    o = obj_of("{'apiVersion':'slo.koordinator.sh/v1alpha1','kind':'NodeMetric','metadata':{'name':'node-a'},"
               "'status':{'updateTime':'2026-11-21T10:00:00Z','nodeMetric':{"
               "  'nodeUsage':{'resources':{'cpu':'1500m','memory':'6Gi'}},"
               "  'systemUsage':{'resources':{'cpu':'200m','memory':'1Gi'}}},"
               "'podsMetric':[{'namespace':'prod','name':'web-1','priority':'koord-prod',"
               "  'podUsage':{'resources':{'cpu':'300m','memory':'256Mi'}}},"
               "  {'namespace':'prod','name':'web-2','podUsage':{'cpu':'100m'}}]}}");
    assert_int_equal(o.kind, EBB_KIND_KOORD_NODE_METRIC);
    assert_string_equal(o.u.koord->node, "node-a");
    assert_int_equal(o.u.koord->update_time, 1795255200);
    assert_int_equal(ebb_res_get(&o.u.koord->node_usage, EBB_RES_CPU), 1500);
    assert_int_equal(ebb_res_get(&o.u.koord->system_usage, EBB_RES_MEMORY), GI);
    assert_int_equal(o.u.koord->npods, 2);
    assert_string_equal(o.u.koord->pods[0].priority, "koord-prod");
    assert_int_equal(ebb_res_get(&o.u.koord->pods[0].usage, EBB_RES_MEMORY), 256 * MI);
    assert_null(o.u.koord->pods[1].priority);
    assert_int_equal(ebb_res_get(&o.u.koord->pods[1].usage, EBB_RES_CPU), 100);
    ebb_object_free(&o);
}

/* A NodeMetrics window is a Go duration (time.ParseDuration), read in
 * milliseconds rounded to the nearest: what Go takes is taken, what it
 * refuses (an exponent, hex, no unit, past 2562047h) is an error naming
 * the field. */
static void test_metrics_window(void **state)
{
    static const struct {
        const char *window;
        bool ok;
        int64_t ms;
    } cases[] = {
        { "1m20.5s", true, 80500 }, { "15.03s", true, 15030 }, { "18s", true, 18000 },
        { "0", true, 0 },           { "1.5ms", true, 2 },     { "1500\xc2\xb5s", true, 2 },
        { "1500\xce\xbcs", true, 2 }, { "-2s", true, -2000 }, { ".5s", true, 500 },
        { "1h0m0.001s", true, 3600001 },
        { "1e3s", false, 0 },       { "0x10s", false, 0 },    { "10", false, 0 },
        { "", false, 0 },           { "s", false, 0 },        { "3000000h", false, 0 },
    };
    char json[256];
    (void)state;

    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        struct ebb_object o;
        struct ebb_error err;
        cJSON *j;
        int rc;

        snprintf(json, sizeof(json), "{'apiVersion':'metrics.k8s.io/v1beta1','kind':'NodeMetrics',"
                 "'metadata':{'name':'node-a'},'window':'%s','usage':{'cpu':'1'}}", cases[i].window);
        j = J(json);
        ebb_error_clear(&err);
        rc = ebb_decode_object(j, &o, &err);
        if (!cases[i].ok) {
            if (rc == 0)
                fail_msg("window \"%s\": taken as %lld ms", cases[i].window,
                         (long long)o.u.node_metrics->window_ms);
            assert_string_equal(err.field, "window");
            assert_non_null(strstr(err.msg, "is not a duration"));
        } else {
            if (rc != 0)
                fail_msg("window \"%s\": %s", cases[i].window, err.msg);
            if (o.u.node_metrics->window_ms != cases[i].ms)
                fail_msg("window \"%s\": %lld ms, expected %lld", cases[i].window,
                         (long long)o.u.node_metrics->window_ms, (long long)cases[i].ms);
            ebb_object_free(&o);
        }
        cJSON_Delete(j);
    }
}

/* What kube-scheduler reads: non-zero requests, host ports, init
 * container images, scheduling gates; node images; Services and
 * controllers with their selectors. */
static void test_scheduler_inputs(void **state)
{
    (void)state;
    struct ebb_pod *p = pod_of(
        "{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'spec':{"
        "'schedulingGates':[{'name':'quota'}],"
        "'containers':[{'name':'a','image':'web:1','resources':{'requests':{'cpu':'250m'}},"
        "'ports':[{'containerPort':80},{'containerPort':443,'hostPort':8443,'hostIP':'10.0.0.1',"
        "'protocol':'UDP'}]},{'name':'b','image':'side:2','resources':{'requests':{'memory':'0'}}}],"
        "'initContainers':[{'name':'i','image':'init:3'}],'overhead':{'cpu':'10m'}}}");
    assert_int_equal(p->nz_cpu, 250 + 100 + 10);           /* b names no cpu: 100m */
    assert_int_equal(p->nz_mem, 200ll * 1024 * 1024);      /* a none: 200Mi; b an explicit 0 */
    assert_int_equal(p->nhost_ports, 1);
    assert_int_equal(p->host_ports[0].port, 8443);
    assert_string_equal(p->host_ports[0].ip, "10.0.0.1");
    assert_string_equal(p->host_ports[0].protocol, "UDP");
    assert_int_equal(p->ninit_images, 1);
    assert_string_equal(p->init_images[0], "init:3");
    assert_true(p->flags & EBB_POD_SCHEDULING_GATED);
    struct ebb_pod *c = ebb_pod_clone(p);
    assert_non_null(c);
    assert_string_equal(c->host_ports[0].ip, "10.0.0.1");
    assert_string_equal(c->labels.n ? c->labels.kv[0].key : "none", "none");
    ebb_pod_free(p);
    ebb_pod_free(c);

    struct ebb_error err = pod_error("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'p'},'spec':{"
                                     "'containers':[{'name':'a','ports':[{'hostPort':'80'}]}]}}");
    assert_string_equal(err.field, "spec.containers[0].ports[0].hostPort");

    struct ebb_object o = obj_of(
        "{'apiVersion':'v1','kind':'Node','metadata':{'name':'n'},'status':{'images':["
        "{'names':['repo/a@sha256:1','repo/a:1'],'sizeBytes':1000},{'names':['b:2'],'sizeBytes':5}]}}");
    assert_int_equal(o.u.node->nimages, 2);
    assert_int_equal(o.u.node->images[0].nnames, 2);
    assert_string_equal(o.u.node->images[0].names[1], "repo/a:1");
    assert_int_equal(o.u.node->images[1].size, 5);
    ebb_object_free(&o);

    o = obj_of("{'apiVersion':'v1','kind':'Service','metadata':{'name':'web','namespace':'shop'},"
               "'spec':{'selector':{'app':'web','tier':'front'}}}");
    assert_int_equal(o.kind, EBB_KIND_SERVICE);
    assert_string_equal(o.u.workload->ns, "shop");
    assert_int_equal(o.u.workload->selector->nreqs, 2);
    assert_int_equal(o.u.workload->replicas, -1);
    ebb_object_free(&o);
    o = obj_of("{'apiVersion':'v1','kind':'Service','metadata':{'name':'ext'},'spec':{'type':'ExternalName'}}");
    assert_null(o.u.workload->selector);   /* selects no pod */
    ebb_object_free(&o);
    o = obj_of("{'apiVersion':'apps/v1','kind':'ReplicaSet','metadata':{'name':'web-5d','uid':'u1'},"
               "'spec':{'replicas':3,'selector':{'matchExpressions':[{'key':'app','operator':'Exists'}]}}}");
    assert_int_equal(o.kind, EBB_KIND_REPLICA_SET);
    assert_int_equal(o.u.workload->replicas, 3);
    assert_int_equal(o.u.workload->selector->reqs[0].op, EBB_OP_EXISTS);
    ebb_object_free(&o);
    o = obj_of("{'apiVersion':'apps/v1','kind':'StatefulSet','metadata':{'name':'db'},'spec':{'selector':{}}}");
    assert_int_equal(o.kind, EBB_KIND_STATEFUL_SET);
    ebb_object_free(&o);
    o = obj_of("{'apiVersion':'v1','kind':'ReplicationController','metadata':{'name':'rc'},'spec':{'selector':{'a':'b'}}}");
    assert_int_equal(o.kind, EBB_KIND_REPLICATION_CONTROLLER);
    ebb_object_free(&o);
    cJSON *j = J("{'apiVersion':'v1','kind':'Service','metadata':{'name':'s'},'spec':{'selector':{'app':3}}}");
    assert_int_equal(ebb_decode_object(j, &o, &err), EBB_ESCHEMA);
    assert_string_equal(err.field, "spec.selector.app");
    cJSON_Delete(j);
}

static void test_kinds(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        int kind;
    } cases[] = {
        { "{'apiVersion':'v1','kind':'Pod'}", EBB_KIND_POD },
        { "{'kind':'Pod'}", EBB_KIND_POD },
        { "{'apiVersion':'example.com/v1','kind':'Pod'}", EBB_KIND_UNKNOWN },
        { "{'apiVersion':'policy/v1beta1','kind':'PodDisruptionBudget'}", EBB_KIND_PDB },
        { "{'apiVersion':'v1','kind':'PodDisruptionBudget'}", EBB_KIND_UNKNOWN },
        { "{'apiVersion':'scheduling.k8s.io/v1','kind':'PriorityClass'}", EBB_KIND_PRIORITY_CLASS },
        { "{'apiVersion':'metrics.k8s.io/v1beta1','kind':'NodeMetrics'}", EBB_KIND_NODE_METRICS },
        { "{'apiVersion':'metrics.k8s.io/v1beta1','kind':'PodMetrics'}", EBB_KIND_POD_METRICS },
        { "{'apiVersion':'slo.koordinator.sh/v1alpha1','kind':'NodeMetric'}", EBB_KIND_KOORD_NODE_METRIC },
        { "{'apiVersion':'apps/v1','kind':'Deployment'}", EBB_KIND_UNKNOWN },
        { "{'apiVersion':'v1'}", EBB_KIND_UNKNOWN },
    };

    for (size_t i = 0; i < EBB_ARRAY_LEN(cases); i++) {
        cJSON *j = J(cases[i].json);
        assert_int_equal(ebb_decode_kind(j), cases[i].kind);
        cJSON_Delete(j);
    }
    assert_string_equal(ebb_kind_name(EBB_KIND_PVC), "PersistentVolumeClaim");
    assert_string_equal(ebb_kind_name(EBB_KIND_KOORD_NODE_METRIC), "NodeMetric");
}

/* ---- objects from a server ---------------------------------------------------- */

struct slot {
    cJSON *parent;
    int index;
};

static void slots_of(cJSON *j, struct slot **v, size_t *n, size_t *cap)
{
    int i = 0;

    for (cJSON *c = j->child; c != NULL; c = c->next, i++) {
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 256;
            assert_non_null(*v = realloc(*v, *cap * sizeof(**v)));
        }
        (*v)[(*n)++] = (struct slot){ j, i };
        slots_of(c, v, n, cap);
    }
}

/* Every field of every kind of object a server sends (the first of each
 * kind in kubectl-list.json, and in every-array.json, where each array
 * field holds two entries), in turn given every hostile value (a wrong
 * type, a huge or fractional number, a NUL, more entries than ebb keeps,
 * text past what ebb keeps of an object): each object is kept or skipped
 * alone with a reason, the field named, its key read as far as it can be,
 * and nothing leaks or crashes, also where an array's entry fails half
 * built. */
static void test_from_server_every_field(void **state)
{
    static const char *const files[] = { "spec/fixtures/kubectl-list.json",
                                         "spec/fixtures/every-array.json" };
    cJSON *list, *item, *hostile[12];
    size_t nh = 0, decoded = 0, skipped = 0;
    (void)state;

    hostile[nh++] = cJSON_CreateNumber(1.5);
    hostile[nh++] = cJSON_CreateNumber(-1e300);
    hostile[nh++] = cJSON_CreateString("x");
    hostile[nh++] = cJSON_CreateString("\xff\xfe");
    hostile[nh++] = cJSON_CreateString("12x");
    hostile[nh++] = cJSON_CreateTrue();
    hostile[nh++] = cJSON_CreateNull();
    hostile[nh++] = cJSON_CreateObject();
    hostile[nh++] = cJSON_CreateArray();
    {
        cJSON *a = cJSON_CreateArray();
        for (int i = 0; i < 70000; i++)
            cJSON_AddItemToArray(a, cJSON_CreateObject());
        hostile[nh++] = a;
    }
    {
        size_t n = EBB_OBJECT_KEPT_MAX + 1;
        char *big = malloc(n + 1);
        memset(big, 'a', n);
        big[n] = '\0';
        hostile[nh++] = cJSON_CreateString(big);
        free(big);
    }
    for (size_t f = 0; f < EBB_ARRAY_LEN(files); f++) {
        char *text = fixture_read(files[f], NULL);
        bool done[EBB_KIND_MAX] = { false };

        assert_non_null(text);
        assert_non_null(list = cJSON_Parse(text));
        free(text);
        cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(list, "items")) {
            int kind = ebb_decode_kind(item);
            struct slot *v = NULL;
            size_t n = 0, cap = 0;
            const char *name = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(item, "metadata"), "name")->valuestring;

            if (kind == EBB_KIND_UNKNOWN || done[kind])
                continue;   /* one object of each kind */
            done[kind] = true;
            slots_of(item, &v, &n, &cap);
            for (size_t k = 0; k < n; k++) {
                for (size_t h = 0; h < nh; h++) {
                    cJSON *orig = cJSON_GetArrayItem(v[k].parent, v[k].index);
                    /* the two big values only where they could fit */
                    if ((h == nh - 2 && !cJSON_IsArray(orig)) || (h == nh - 1 && !cJSON_IsString(orig)))
                        continue;
                    cJSON *copy = cJSON_Duplicate(item, true), *parent = copy;
                    struct ebb_object o;
                    struct ebb_skip why;
                    int rc;
                    /* the same slot in the copy: the path of parents down to it */
                    struct slot path[64];
                    int depth = 0;
                    for (cJSON *p = v[k].parent; p != item; ) {
                        size_t up;
                        for (up = 0; up < k && !(v[up].parent != NULL && cJSON_GetArrayItem(v[up].parent, v[up].index) == p); up++)
                            ;
                        assert_true(up < k);
                        path[depth++] = v[up];
                        p = v[up].parent;
                    }
                    while (depth > 0) {
                        depth--;
                        parent = cJSON_GetArrayItem(parent, path[depth].index);
                    }
                    {
                        cJSON *old = cJSON_GetArrayItem(parent, v[k].index), *dup = cJSON_Duplicate(hostile[h], true);
                        if (old->string != NULL)
                            assert_non_null(dup->string = strdup(old->string));   /* the same key */
                        assert_true(cJSON_ReplaceItemViaPointer(parent, old, dup));
                    }
                    rc = ebb_decode_from_server(copy, kind, &o, &why);
                    if (rc == 0) {
                        decoded++;
                        ebb_object_free(&o);
                    } else {
                        skipped++;
                        assert_int_equal(rc, EBB_ESCHEMA);
                        assert_true(why.reason == EBB_SKIP_INVALID || why.reason == EBB_SKIP_TOO_LARGE ||
                                    why.reason == EBB_SKIP_WRONG_KIND);
                        assert_true(why.err.msg[0] != '\0');
                        assert_true(why.err.field[0] != '\0');
                        /* the key is there unless the field was the key */
                        if (strcmp(why.name, name) != 0 && why.name[0] != '\0')
                            fail_msg("%s: a key %s", name, why.name);
                    }
                    cJSON_Delete(copy);
                }
            }
            free(v);
        }
        cJSON_Delete(list);
    }
    for (size_t h = 0; h < nh; h++)
        cJSON_Delete(hostile[h]);
    assert_true(decoded > 0 && skipped > 0);
}

/* ---- array fields ------------------------------------------------------------ */

/* Every array field decode reads, in a fixture where each holds two
 * entries (matchFields values: the one the API allows): the field by its
 * path in item `item` of spec/fixtures/every-array.json, what its entries
 * are, and the entry the element rows spoil. */
enum { ELEM_OBJECT, ELEM_STRING, ELEM_UNREAD };

#define NA "spec.affinity.nodeAffinity."
#define PA "spec.affinity.podAffinity."
#define AA "spec.affinity.podAntiAffinity."
#define REQ "requiredDuringSchedulingIgnoredDuringExecution"
#define PREF "preferredDuringSchedulingIgnoredDuringExecution"

static const struct {
    int item;
    const char *path;
    int elem;
    int idx;
} array_fields[] = {
    { 0, "metadata.ownerReferences", ELEM_OBJECT, 1 },
    { 0, "spec.tolerations", ELEM_OBJECT, 1 },
    { 0, NA REQ ".nodeSelectorTerms", ELEM_OBJECT, 1 },
    { 0, NA REQ ".nodeSelectorTerms[0].matchExpressions", ELEM_OBJECT, 1 },
    { 0, NA REQ ".nodeSelectorTerms[0].matchExpressions[0].values", ELEM_STRING, 1 },
    { 0, NA REQ ".nodeSelectorTerms[0].matchFields", ELEM_OBJECT, 1 },
    { 0, NA REQ ".nodeSelectorTerms[0].matchFields[1].values", ELEM_STRING, 0 },
    { 0, NA PREF, ELEM_OBJECT, 1 },
    { 0, NA PREF "[1].preference.matchExpressions", ELEM_OBJECT, 1 },
    { 0, NA PREF "[1].preference.matchExpressions[0].values", ELEM_STRING, 1 },
    { 0, PA REQ, ELEM_OBJECT, 1 },
    { 0, PA REQ "[0].labelSelector.matchExpressions", ELEM_OBJECT, 1 },
    { 0, PA REQ "[0].labelSelector.matchExpressions[1].values", ELEM_STRING, 1 },
    { 0, PA REQ "[0].namespaces", ELEM_STRING, 1 },
    { 0, PA REQ "[0].namespaceSelector.matchExpressions", ELEM_OBJECT, 1 },
    { 0, PA REQ "[0].matchLabelKeys", ELEM_STRING, 1 },
    { 0, PA REQ "[1].mismatchLabelKeys", ELEM_STRING, 1 },
    { 0, PA PREF, ELEM_OBJECT, 1 },
    { 0, PA PREF "[1].podAffinityTerm.namespaces", ELEM_STRING, 1 },
    { 0, PA PREF "[1].podAffinityTerm.labelSelector.matchExpressions", ELEM_OBJECT, 1 },
    { 0, AA REQ, ELEM_OBJECT, 1 },
    { 0, AA REQ "[1].matchLabelKeys", ELEM_STRING, 1 },
    { 0, AA PREF, ELEM_OBJECT, 1 },
    { 0, AA PREF "[0].podAffinityTerm.mismatchLabelKeys", ELEM_STRING, 1 },
    { 0, "spec.topologySpreadConstraints", ELEM_OBJECT, 1 },
    { 0, "spec.topologySpreadConstraints[0].labelSelector.matchExpressions", ELEM_OBJECT, 1 },
    { 0, "spec.topologySpreadConstraints[1].matchLabelKeys", ELEM_STRING, 1 },
    { 0, "spec.initContainers", ELEM_OBJECT, 1 },
    { 0, "spec.containers", ELEM_OBJECT, 1 },
    { 0, "spec.containers[0].ports", ELEM_OBJECT, 1 },
    { 0, "spec.containers[1].ports", ELEM_OBJECT, 1 },
    { 0, "spec.volumes", ELEM_OBJECT, 1 },
    { 0, "spec.resourceClaims", ELEM_UNREAD, 0 },
    { 0, "status.conditions", ELEM_OBJECT, 1 },
    { 0, "status.initContainerStatuses", ELEM_OBJECT, 1 },
    { 0, "status.containerStatuses", ELEM_OBJECT, 1 },
    { 0, "status.ephemeralContainerStatuses", ELEM_OBJECT, 1 },
    { 1, "spec.schedulingGates", ELEM_UNREAD, 0 },
    { 1, "status.conditions", ELEM_OBJECT, 0 },
    { 2, "spec.taints", ELEM_OBJECT, 1 },
    { 2, "status.conditions", ELEM_OBJECT, 1 },
    { 2, "status.images", ELEM_OBJECT, 1 },
    { 2, "status.images[1].names", ELEM_STRING, 1 },
    { 3, "spec.selector.matchExpressions", ELEM_OBJECT, 1 },
    { 3, "spec.selector.matchExpressions[0].values", ELEM_STRING, 1 },
    { 4, "containers", ELEM_OBJECT, 1 },
    { 5, "status.podsMetric", ELEM_OBJECT, 1 },
    { 6, "spec.selector.matchExpressions", ELEM_OBJECT, 1 },
    { 6, "spec.selector.matchExpressions[0].values", ELEM_STRING, 1 },
};

/* The value at "a.b[1].c" below j (NULL when there is none). */
static cJSON *at_path(cJSON *j, const char *path)
{
    char key[256];

    while (j != NULL && *path != '\0') {
        if (*path == '.') {
            path++;
        } else if (*path == '[') {
            char *end;
            j = cJSON_GetArrayItem(j, (int)strtol(path + 1, &end, 10));
            path = end + 1;
        } else {
            size_t n = strcspn(path, ".[");
            assert_true(n < sizeof(key));
            memcpy(key, path, n);
            key[n] = '\0';
            j = cJSON_GetObjectItemCaseSensitive(j, key);
            path += n;
        }
    }
    return j;
}

/* A copy of `item` with `value` (owned) in place of what `path` holds. */
static cJSON *spoiled(const cJSON *item, const char *path, cJSON *value)
{
    cJSON *copy = cJSON_Duplicate(item, true), *old = at_path(copy, path), *parent;
    char up[512];
    size_t n = strlen(path);

    assert_non_null(old);
    assert_true(n < sizeof(up));
    while (n > 0 && path[n] != '.' && path[n] != '[')
        n--;
    memcpy(up, path, n);
    up[n] = '\0';
    assert_non_null(parent = at_path(copy, up));
    if (old->string != NULL)
        assert_non_null(value->string = strdup(old->string));
    assert_true(cJSON_ReplaceItemViaPointer(parent, old, value));
    return copy;
}

static void expect_array_error(const cJSON *obj, const char *field, const char *msg)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const char *name = cJSON_GetObjectItemCaseSensitive(meta, "name")->valuestring;
    struct ebb_object o = { 0 };
    struct ebb_error err;
    struct ebb_skip why;

    ebb_error_clear(&err);
    if (ebb_decode_object(obj, &o, &err) == 0)
        fail_msg("%s: decoded, expected %s: %s", name, field, msg);
    assert_string_equal(err.field, field);
    assert_string_equal(err.msg, msg);
    /* from a server: skipped alone, with the same words and its key */
    assert_int_equal(ebb_decode_from_server(obj, ebb_decode_kind(obj), &o, &why), EBB_ESCHEMA);
    assert_int_equal(why.reason, EBB_SKIP_INVALID);
    assert_string_equal(why.err.field, field);
    assert_string_equal(why.err.msg, msg);
    assert_string_equal(why.name, name);
}

/* The class of array fields: for every one, a value that is not an array,
 * more entries than ebb keeps, and an entry of the wrong type (for a
 * string array also a string that is not UTF-8) are refused naming the
 * field, and the entry by its index; from a server the object is skipped
 * alone with the same words. What was built before is freed (ASan; the
 * teardown counts the interned strings). */
static void test_array_fields(void **state)
{
    char *text = fixture_read("spec/fixtures/every-array.json", NULL);
    cJSON *list, *items, *item, *big = cJSON_CreateArray(), *bad;
    char field[512];
    (void)state;

    assert_non_null(text);
    assert_non_null(list = cJSON_Parse(text));
    free(text);
    items = cJSON_GetObjectItemCaseSensitive(list, "items");
    for (int i = 0; i < 70000; i++)
        cJSON_AddItemToArray(big, cJSON_CreateObject());
    cJSON_ArrayForEach(item, items) {
        struct ebb_object o;
        struct ebb_error err;
        if (ebb_decode_object(item, &o, &err) != 0)
            fail_msg("%s: %s", err.field, err.msg);
        ebb_object_free(&o);
    }
    for (size_t r = 0; r < EBB_ARRAY_LEN(array_fields); r++) {
        const char *path = array_fields[r].path;
        int elem = array_fields[r].elem;

        item = cJSON_GetArrayItem(items, array_fields[r].item);
        if (cJSON_GetArraySize(at_path(item, path)) <= array_fields[r].idx)
            fail_msg("%s: no entry %d in the fixture", path, array_fields[r].idx);
        bad = spoiled(item, path, cJSON_CreateString("x"));
        expect_array_error(bad, path, "expected an array, got a string");
        cJSON_Delete(bad);
        bad = spoiled(item, path, cJSON_Duplicate(big, true));
        expect_array_error(bad, path, "too many entries (70000, at most 65535)");
        cJSON_Delete(bad);
        if (elem == ELEM_UNREAD)
            continue;
        snprintf(field, sizeof(field), "%s[%d]", path, array_fields[r].idx);
        bad = spoiled(item, field, cJSON_CreateNumber(7));
        expect_array_error(bad, field, elem == ELEM_OBJECT ? "expected an object, got a number"
                                                           : "expected a string, got a number");
        cJSON_Delete(bad);
        if (elem == ELEM_STRING) {
            bad = spoiled(item, field, cJSON_CreateString("\xff\xfe"));
            expect_array_error(bad, field, "not valid UTF-8");
            cJSON_Delete(bad);
        }
    }
    cJSON_Delete(big);
    cJSON_Delete(list);
}

/* The resource registry is filled by no object alone: a pod asking for 70
 * names registers EBB_RES_OBJECT_NEW of them and counts the rest as
 * EBB_RES_UNREGISTERED (which no node offers: it fits no node); a node
 * drops the names it cannot register; objects together stop at
 * EBB_RES_OBJECTS_MAX; the configuration keeps the ids above. Runs last:
 * the registry never forgets. */
static void test_resource_bounds(void **state)
{
    char buf[8192];
    int start = ebb_resource_count();
    (void)state;

    assert_true(start + EBB_RES_OBJECT_NEW <= EBB_RES_OBJECTS_MAX);
    for (int round = 0; round < 6; round++) {
        struct ebb_pod *p;
        struct ebb_node *nd = NULL;
        struct ebb_error err;
        cJSON *j;
        size_t off = (size_t)snprintf(buf, sizeof(buf),
                                      "{'metadata':{'name':'p'},'spec':{'containers':[{'resources':"
                                      "{'requests':{'cpu':'1'");
        for (int i = 0; i < 70; i++)
            off += (size_t)snprintf(buf + off, sizeof(buf) - off, ",'r%d.example.com/dev-%d':'%d'", round,
                                    i, i == 3 ? 0 : 2);
        snprintf(buf + off, sizeof(buf) - off, "}}}]}}");
        p = pod_of(buf);
        assert_true(ebb_resource_count() <= EBB_RES_OBJECTS_MAX);
        assert_true(ebb_res_get(&p->requests, EBB_RES_UNREGISTERED) > 0);
        assert_int_equal(ebb_res_get(&p->requests, EBB_RES_CPU), 1000);
        assert_true(p->requests.n <= EBB_RES_OBJECT_NEW + 2);
        ebb_pod_free(p);
        /* a node with the same names: what is registered, no <unregistered> */
        off = (size_t)snprintf(buf, sizeof(buf), "{'metadata':{'name':'n'},'status':{'allocatable':{'cpu':'4'");
        for (int i = 0; i < 70; i++)
            off += (size_t)snprintf(buf + off, sizeof(buf) - off, ",'r%d.example.com/dev-%d':'8'", round, i);
        snprintf(buf + off, sizeof(buf) - off, "}}}");
        j = J(buf);
        assert_int_equal(ebb_decode_node(j, &nd, &err), 0);
        assert_false(ebb_res_has(&nd->allocatable, EBB_RES_UNREGISTERED));
        assert_int_equal(ebb_res_get(&nd->allocatable, EBB_RES_CPU), 4000);
        ebb_node_free(nd);
        cJSON_Delete(j);
    }
    assert_int_equal(ebb_resource_count(), EBB_RES_OBJECTS_MAX);
    /* known names still resolve; a pod of them is whole */
    {
        struct ebb_pod *p = pod_of("{'metadata':{'name':'p'},'spec':{'containers':[{'resources':"
                                   "{'requests':{'r0.example.com/dev-0':'1'}}}]}}");
        assert_false(ebb_res_has(&p->requests, EBB_RES_UNREGISTERED));
        assert_true(ebb_res_get(&p->requests, ebb_resource_find("r0.example.com/dev-0")) == 1);
        ebb_pod_free(p);
    }
    /* the configuration still has its ids */
    assert_true(ebb_resource_id("config.example.com/weight") >= EBB_RES_OBJECTS_MAX);
    assert_string_equal(ebb_resource_name(EBB_RES_UNREGISTERED), "<unregistered>");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_requests_sidecar_overhead, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requests_sidecar_after_init, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requests_init_max_and_union, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requests_pod_level, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quantities, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_quantity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qos, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flags, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_affinity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topology_spread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selector_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_label_selector_api, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pdb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_kinds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kinds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scheduler_inputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_from_server_every_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_array_fields, setup, teardown),
        /* last: fills the registry */
        cmocka_unit_test_setup_teardown(test_resource_bounds, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
