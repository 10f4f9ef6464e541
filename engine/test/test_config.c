/* config.c: the DeschedulerPolicy file, checked against the fixtures in
 * spec/fixtures/policies (compatibility examples, then one bad file per
 * error class, each with the exact line and field it must report). */
#include "fixtures.h"

#include "ebb/config.h"

#define DIR "spec/fixtures/policies/"

static struct ebb_policy *load_ok(const char *path)
{
    struct ebb_policy *p = NULL;
    struct ebb_error err;
    int rc = ebb_policy_load(path, &p, &err);

    if (rc != 0) {
        char buf[1200];
        ebb_error_format(&err, buf, sizeof(buf));
        fail_msg("%s: %s", ebb_strerror(rc), buf);
    }
    assert_non_null(p);
    return p;
}

static const struct ebb_plugin_set *set_of(const struct ebb_policy *p, size_t prof, int ext)
{
    assert_true(prof < p->nprofiles);
    return &p->profiles[prof].sets[ext];
}

static void assert_set(const struct ebb_plugin_set *s, const char *const *names, size_t n)
{
    assert_int_equal(s->n, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(s->v[i].name, names[i]);
}

/* ---- the compatibility examples ------------------------------------------------- */

static void test_configmap_example(void **state)
{
    struct ebb_policy *p = load_ok(DIR "configmap-example.yaml");
    const struct ebb_profile *prof;
    const struct ebb_plugin_config *pc;
    static const char *const balance[] = {"LowNodeUtilization", "RemoveDuplicates"};
    static const char *const deschedule[] = {"RemovePodsViolatingInterPodAntiAffinity"};
    static const char *const evictor[] = {"DefaultEvictor"};

    assert_string_equal(p->file, DIR "configmap-example.yaml");
    assert_null(p->node_selector);
    assert_int_equal(p->max_per_node, EBB_UNLIMITED);
    assert_int_equal(p->max_per_namespace, EBB_UNLIMITED);
    assert_int_equal(p->max_total, EBB_UNLIMITED);
    assert_false(p->has_grace_period);
    assert_false(p->eviction_failure_events);
    assert_false(p->metrics_collector_enabled);
    assert_int_equal(p->nproviders, 0);
    assert_int_equal(p->nwarnings, 0);
    assert_int_equal(p->nprofiles, 1);

    prof = &p->profiles[0];
    assert_string_equal(prof->name, "ProfileName");
    assert_int_equal(prof->line, 4);
    assert_string_equal(prof->path, "profiles[0]");
    assert_set(&prof->sets[EBB_EXT_BALANCE], balance, 2);
    assert_int_equal(prof->sets[EBB_EXT_BALANCE].v[0].line, 22);
    assert_int_equal(prof->sets[EBB_EXT_BALANCE].v[1].line, 23);
    assert_set(&prof->sets[EBB_EXT_DESCHEDULE], deschedule, 1);
    /* DefaultEvictor added to both filter sets, at the profile's line */
    assert_set(&prof->sets[EBB_EXT_FILTER], evictor, 1);
    assert_set(&prof->sets[EBB_EXT_PREEVICTIONFILTER], evictor, 1);
    assert_int_equal(prof->sets[EBB_EXT_FILTER].v[0].line, 4);

    /* its entry was given: nothing prepended, order kept */
    assert_int_equal(prof->nconfigs, 4);
    assert_string_equal(prof->configs[0].name, "DefaultEvictor");
    assert_int_equal(prof->configs[0].line, 6);
    assert_null(prof->configs[0].args);
    pc = ebb_profile_config(prof, "LowNodeUtilization");
    assert_ptr_equal(pc, &prof->configs[3]);
    assert_string_equal(pc->path, "profiles[0].pluginConfig[3]");
    assert_int_equal(pc->line, 9);
    assert_non_null(pc->args);
    assert_int_equal(ebb_val_get(ebb_val_get(pc->args, "thresholds"), "cpu")->u.i, 20);
    assert_int_equal(ebb_val_get(ebb_val_get(pc->args, "targetThresholds"), "pods")->u.i, 50);
    /* an owned copy, not a pointer into the document */
    assert_ptr_not_equal(pc->args, ebb_val_at(p->root, "profiles[0].pluginConfig[3].args"));
    /* the document stays for line lookups by later checks */
    assert_int_equal(ebb_val_line_for(p->root, "profiles[0].pluginConfig[3].args.targetThresholds"
                                               ".memory"), 17);
    assert_int_equal(ebb_val_line_for(p->root, "profiles[0].pluginConfig[3].args.thresholds"
                                               ".nvidia.com/gpu"), 12);
    assert_null(ebb_profile_config(prof, "PodLifeTime"));
    ebb_policy_free(p);
}

static void test_readme_example(void **state)
{
    struct ebb_policy *p = load_ok(DIR "readme-example.yaml");
    const struct ebb_profile *prof;
    const struct ebb_plugin_config *de;
    const struct ebb_val *pp;
    static const char *const evictor[] = {"DefaultEvictor"};

    assert_string_equal(p->node_selector, "node=node1");
    assert_int_equal(p->max_per_node, 5000);
    assert_int_equal(p->max_per_namespace, 5000);
    assert_int_equal(p->max_total, 5000);
    assert_true(p->has_grace_period);
    assert_int_equal(p->grace_period_seconds, 60);
    assert_int_equal(p->nproviders, 1);
    assert_int_equal(p->providers[0].source, EBB_METRICS_PROMETHEUS);
    assert_string_equal(p->providers[0].prometheus_url,
                        "http://prometheus-kube-prometheus-prometheus.prom.svc.cluster.local");
    assert_string_equal(p->providers[0].secret_namespace, "kube-system");
    assert_string_equal(p->providers[0].secret_name, "authtoken");
    assert_int_equal(p->nwarnings, 0);

    prof = &p->profiles[0];
    assert_string_equal(prof->name, "ProfileName");
    assert_int_equal(prof->nconfigs, 3);
    de = ebb_profile_config(prof, "DefaultEvictor");
    assert_ptr_equal(de, &prof->configs[0]);
    assert_int_equal(de->line, 24);
    assert_true(ebb_val_get(de->args, "nodeFit")->u.b);
    assert_int_equal(ebb_val_get(de->args, "minReplicas")->u.i, 2);
    pp = ebb_val_get(de->args, "podProtections");
    /* every list item commented out: the field is null, on its own line */
    assert_int_equal(ebb_val_get(pp, "defaultDisabled")->type, EBB_VAL_NULL);
    assert_int_equal(ebb_val_get(pp, "defaultDisabled")->line, 27);
    assert_int_equal(ebb_val_get(pp, "extraEnabled")->type, EBB_VAL_NULL);
    assert_int_equal(ebb_val_get(pp, "config")->type, EBB_VAL_MAP);
    assert_int_equal(ebb_val_get(pp, "config")->u.map.n, 0);
    assert_int_equal(set_of(p, 0, EBB_EXT_DESCHEDULE)->n, 1);
    assert_string_equal(set_of(p, 0, EBB_EXT_DESCHEDULE)->v[0].name,
                        "RemovePodsViolatingNodeTaints");
    assert_int_equal(set_of(p, 0, EBB_EXT_DESCHEDULE)->v[0].line, 51);
    assert_string_equal(set_of(p, 0, EBB_EXT_BALANCE)->v[0].name, "RemoveDuplicates");
    assert_set(set_of(p, 0, EBB_EXT_FILTER), evictor, 1);
    assert_set(set_of(p, 0, EBB_EXT_PREEVICTIONFILTER), evictor, 1);
    ebb_policy_free(p);
}

static void test_helm_default(void **state)
{
    struct ebb_policy *p = load_ok(DIR "helm-default.yaml");
    const struct ebb_profile *prof;
    const struct ebb_plugin_config *pc;
    const struct ebb_val *pp;
    static const char *const balance[] = {
        "RemoveDuplicates", "RemovePodsViolatingTopologySpreadConstraint", "LowNodeUtilization",
    };
    static const char *const deschedule[] = {
        "RemovePodsHavingTooManyRestarts", "RemovePodsViolatingNodeTaints",
        "RemovePodsViolatingNodeAffinity", "RemovePodsViolatingInterPodAntiAffinity",
    };
    static const char *const evictor[] = {"DefaultEvictor"};

    assert_int_equal(p->nprofiles, 1);
    assert_int_equal(p->nwarnings, 0);
    prof = &p->profiles[0];
    assert_string_equal(prof->name, "default");
    assert_int_equal(prof->nconfigs, 8);
    assert_set(&prof->sets[EBB_EXT_BALANCE], balance, 3);
    assert_set(&prof->sets[EBB_EXT_DESCHEDULE], deschedule, 4);
    assert_set(&prof->sets[EBB_EXT_FILTER], evictor, 1);
    assert_set(&prof->sets[EBB_EXT_PREEVICTIONFILTER], evictor, 1);
    /* "args" written before "name" */
    pc = ebb_profile_config(prof, "DefaultEvictor");
    assert_ptr_equal(pc, &prof->configs[0]);
    assert_int_equal(pc->line, 8);
    pp = ebb_val_get(pc->args, "podProtections");
    assert_string_equal(ebb_val_get(pp, "defaultDisabled")->u.seq.items[0]->u.str.s,
                        "PodsWithLocalStorage");
    assert_string_equal(ebb_val_get(pp, "extraEnabled")->u.seq.items[0]->u.str.s,
                        "PodsWithPVC");
    pc = ebb_profile_config(prof, "RemovePodsHavingTooManyRestarts");
    assert_int_equal(ebb_val_get(pc->args, "podRestartThreshold")->u.i, 100);
    assert_true(ebb_val_get(pc->args, "includingInitContainers")->u.b);
    pc = ebb_profile_config(prof, "RemovePodsViolatingTopologySpreadConstraint");
    assert_non_null(pc);
    assert_null(pc->args);
    pc = ebb_profile_config(prof, "LowNodeUtilization");
    assert_string_equal(pc->path, "profiles[0].pluginConfig[7]");
    assert_int_equal(ebb_val_get(ebb_val_get(pc->args, "thresholds"), "memory")->u.i, 20);
    ebb_policy_free(p);
}

static void test_json_policy(void **state)
{
    struct ebb_policy *p = load_ok(DIR "policy.json");
    const struct ebb_plugin_config *pc;

    assert_int_equal(p->max_total, 12);
    assert_int_equal(p->nproviders, 1);
    assert_int_equal(p->providers[0].source, EBB_METRICS_KUBERNETES);
    assert_null(p->providers[0].prometheus_url);
    assert_string_equal(p->profiles[0].name, "json");
    /* no DefaultEvictor entry in the file: one without args is put first */
    assert_int_equal(p->profiles[0].nconfigs, 2);
    assert_string_equal(p->profiles[0].configs[0].name, "DefaultEvictor");
    assert_null(p->profiles[0].configs[0].args);
    assert_string_equal(p->profiles[0].configs[0].path, "profiles[0]");
    assert_int_equal(p->profiles[0].line, 7);
    assert_int_equal(p->profiles[0].configs[0].line, 7);
    pc = &p->profiles[0].configs[1];
    assert_string_equal(pc->name, "RemoveFailedPods");
    assert_string_equal(pc->path, "profiles[0].pluginConfig[0]");
    assert_int_equal(pc->line, 10);
    assert_int_equal(ebb_val_get(pc->args, "minPodLifetimeSeconds")->u.i, 3600);
    ebb_policy_free(p);
}

/* Unknown fields are dropped upstream: here they are kept as warnings. */
static void test_warnings(void **state)
{
    struct ebb_policy *p = load_ok(DIR "warnings.yaml");
    static const char *const want[] = {
        DIR "warnings.yaml:3: unknown field \"tracing\", ignored",
        DIR "warnings.yaml:5: unknown field \"NodeSelector\" (field names are case-sensitive: "
            "\"nodeSelector\"?), ignored",
        DIR "warnings.yaml:11: metricsCollector: unknown field \"interval\", ignored",
        DIR "warnings.yaml:14: profiles[0]: unknown field \"nodeSelector\", ignored",
        DIR "warnings.yaml:17: profiles[0].pluginConfig[0]: unknown field \"argz\", ignored",
        DIR "warnings.yaml:23: profiles[0].plugins.presort.enabled: no plugin implements the "
            "presort extension point, ignored",
        DIR "warnings.yaml:29: profiles[0].plugins.deschedule: unknown field \"weight\", ignored",
        DIR "warnings.yaml:27: profiles[0].plugins.deschedule.enabled[1]: plugin \"PodLifeTime\" "
            "is already enabled at line 26, the repeat is ignored",
    };
    static const char *const deschedule[] = {"PodLifeTime"};
    static const char *const pef[] = {"MyFilter", "DefaultEvictor"};
    static const char *const filter[] = {"DefaultEvictor"};

    assert_int_equal(p->nwarnings, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < p->nwarnings; i++)
        assert_string_equal(p->warnings[i], want[i]);
    assert_null(p->node_selector);   /* "NodeSelector" is not "nodeSelector" */
    assert_int_equal(p->max_per_node, 5);                /* 5.0 */
    assert_true(p->has_grace_period);
    assert_int_equal(p->grace_period_seconds, 0);
    assert_true(p->eviction_failure_events);             /* yes */
    assert_false(p->metrics_collector_enabled);
    assert_set(set_of(p, 0, EBB_EXT_DESCHEDULE), deschedule, 1);
    assert_int_equal(set_of(p, 0, EBB_EXT_DESCHEDULE)->ndisabled, 1);
    /* evict: [DefaultEvictor] is Koordinator's way of saying the Eviction API */
    assert_int_equal(set_of(p, 0, EBB_EXT_EVICT)->n, 0);
    /* the alias spelling fills preevictionfilter; DefaultEvictor was listed, so
     * it keeps its place */
    assert_set(set_of(p, 0, EBB_EXT_PREEVICTIONFILTER), pef, 2);
    assert_int_equal(set_of(p, 0, EBB_EXT_PREEVICTIONFILTER)->v[1].line, 35);
    assert_set(set_of(p, 0, EBB_EXT_FILTER), filter, 1);
    assert_int_equal(p->profiles[0].nconfigs, 3);
    assert_string_equal(p->profiles[0].configs[0].name, "DefaultEvictor");
    assert_string_equal(p->profiles[0].configs[1].name, "PodLifeTime");
    assert_string_equal(p->profiles[0].configs[2].name, "MyFilter");
    ebb_policy_free(p);
}

static void test_parse_from_memory(void **state)
{
    const char *text =
        "apiVersion: descheduler/v1alpha2\n"
        "kind: DeschedulerPolicy\n"
        "nodeSelector:\n"
        "profiles:\n"
        "metricsProviders: []\n"
        "maxNoOfPodsToEvictTotal: 0\n"
        "evictionFailureEventNotification: ~\n";
    struct ebb_policy *p = NULL;
    struct ebb_error err;

    assert_int_equal(ebb_policy_parse(text, strlen(text), "mem.yaml", &p, &err), 0);
    /* null fields are absent fields */
    assert_null(p->node_selector);
    assert_int_equal(p->nprofiles, 0);
    assert_int_equal(p->nproviders, 0);
    assert_int_equal(p->max_total, 0);
    assert_false(p->eviction_failure_events);
    assert_string_equal(p->file, "mem.yaml");
    ebb_policy_free(p);
    ebb_policy_free(NULL);

    text = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"
           "metricsCollector:\n  enabled: true\n";
    assert_int_equal(ebb_policy_parse(text, strlen(text), "mc.yaml", &p, &err), 0);
    assert_true(p->metrics_collector_enabled);
    assert_int_equal(p->nwarnings, 1);
    assert_string_equal(p->warnings[0], "mc.yaml:4: metricsCollector.enabled: deprecated: use "
                                        "metricsProviders with source \"KubernetesMetrics\"");
    ebb_policy_free(p);

    assert_int_equal(ebb_policy_parse(NULL, 0, "x", &p, &err), EBB_EINVAL);
    assert_int_equal(ebb_policy_parse(text, strlen(text), "x", NULL, &err), EBB_EINVAL);
    assert_int_equal(ebb_policy_load(NULL, &p, &err), EBB_EINVAL);
}

static void test_missing_file(void **state)
{
    struct ebb_policy *p = NULL;
    struct ebb_error err;
    char buf[1200];

    assert_int_equal(ebb_policy_load(DIR "nope.yaml", &p, &err), EBB_EIO);
    assert_null(p);
    assert_int_equal(err.code, EBB_EIO);
    ebb_error_format(&err, buf, sizeof(buf));
    assert_string_equal(buf, DIR "nope.yaml: cannot open: No such file or directory");
}

static void test_ext_names(void **state)
{
    assert_string_equal(ebb_ext_name(EBB_EXT_DESCHEDULE), "deschedule");
    assert_string_equal(ebb_ext_name(EBB_EXT_BALANCE), "balance");
    assert_string_equal(ebb_ext_name(EBB_EXT_FILTER), "filter");
    assert_string_equal(ebb_ext_name(EBB_EXT_PREEVICTIONFILTER), "preevictionfilter");
    assert_string_equal(ebb_ext_name(EBB_EXT_EVICT), "evict");
    assert_null(ebb_ext_name(EBB_EXT_MAX));
    assert_null(ebb_ext_name(-1));
    assert_null(ebb_profile_config(NULL, "x"));
}

/* ---- one bad file per error class ---------------------------------------------- */

struct bad {
    const char *file;     /* under bad/ */
    int rc;
    int line;
    const char *field;
    const char *msg;      /* the whole message, or its start when `prefix` */
    bool prefix;
};

static const struct bad bad_cases[] = {
    {"v1alpha1-both-thresholds.yaml", EBB_ESCHEMA, 8,
     "strategies.RemovePodsViolatingNodeTaints.params.thresholdPriorityClassName",
     "priority threshold misconfigured for plugin RemovePodsViolatingNodeTaints", true},
    {"v1alpha1-relabelled.yaml", EBB_ESCHEMA, 4, "strategies",
     "\"strategies\" belongs to apiVersion \"descheduler/v1alpha1\"", true},
    {"bad-apiversion.yaml", EBB_ESCHEMA, 2, "apiVersion",
     "unsupported apiVersion \"descheduler/v1beta1\": expected \"descheduler/v1alpha2\"", false},
    {"missing-apiversion.yaml", EBB_ESCHEMA, 2, "apiVersion",
     "required: expected \"descheduler/v1alpha2\"", false},
    {"bad-kind.yaml", EBB_ESCHEMA, 2, "kind",
     "unsupported kind \"KubeSchedulerConfiguration\": expected \"DeschedulerPolicy\"", false},
    {"empty.yaml", EBB_ESCHEMA, 0, "",
     "the policy is empty: expected a DeschedulerPolicy with apiVersion "
     "\"descheduler/v1alpha2\"", false},
    {"top-list.yaml", EBB_ESCHEMA, 1, "",
     "expected a DeschedulerPolicy map at the top of the file, got a list", false},
    {"negative-limit.yaml", EBB_ESCHEMA, 4, "maxNoOfPodsToEvictPerNamespace",
     "must not be negative, got -1", false},
    {"fractional-limit.yaml", EBB_ESCHEMA, 3, "maxNoOfPodsToEvictTotal",
     "expected a non-negative integer, got 2.5", false},
    {"string-limit.yaml", EBB_ESCHEMA, 4, "maxNoOfPodsToEvictPerNode",
     "expected a non-negative integer, got a string", false},
    {"negative-grace-period.yaml", EBB_ESCHEMA, 3, "gracePeriodSeconds",
     "must not be negative, got -30", false},
    {"string-bool.yaml", EBB_ESCHEMA, 3, "evictionFailureEventNotification",
     "expected a boolean, got a string", false},
    {"bad-node-selector.yaml", EBB_ESCHEMA, 3, "nodeSelector",
     "invalid label selector \"zone in (a,b\": ", true},
    {"node-selector-map.yaml", EBB_ESCHEMA, 3, "nodeSelector",
     "expected a string, got a map", false},
    {"profiles-map.yaml", EBB_ESCHEMA, 3, "profiles", "expected a list, got a map", false},
    {"profile-no-name.yaml", EBB_ESCHEMA, 5, "profiles[1].name",
     "required: every profile needs a name", false},
    {"profile-dup-name.yaml", EBB_ESCHEMA, 6, "profiles[2].name",
     "duplicate profile name \"default\" (also the name of profiles[0] at line 4)", false},
    {"enabled-string.yaml", EBB_ESCHEMA, 9, "profiles[0].plugins.balance.enabled",
     "expected a list, got a string", false},
    {"enabled-item-map.yaml", EBB_ESCHEMA, 11, "profiles[1].plugins.balance.enabled[0]",
     "expected a string, got a map", false},
    {"plugin-set-list.yaml", EBB_ESCHEMA, 6, "profiles[0].plugins.deschedule",
     "expected a map, got a list", false},
    {"missing-plugin-config.yaml", EBB_ESCHEMA, 11, "profiles[0].plugins.balance.enabled[1]",
     "unable to find \"LowNodeUtilization\" plugin config: profile \"ProfileName\" enables it, "
     "so its pluginConfig needs an entry with name: LowNodeUtilization (args may be left out "
     "for the defaults)", false},
    {"missing-filter-config.yaml", EBB_ESCHEMA, 8,
     "profiles[0].plugins.preEvictionFilter.enabled[0]",
     "unable to find \"MyFilter\" plugin config", true},
    {"dup-plugin-config.yaml", EBB_ESCHEMA, 10, "profiles[0].pluginConfig[2].name",
     "a second pluginConfig entry for \"PodLifeTime\" (the first is "
     "profiles[0].pluginConfig[0] at line 6): each plugin takes one entry", false},
    {"plugin-config-no-name.yaml", EBB_ESCHEMA, 7, "profiles[0].pluginConfig[1].name",
     "required: the name of the plugin these args are for", false},
    {"args-list.yaml", EBB_ESCHEMA, 7, "profiles[0].pluginConfig[0].args",
     "expected a map, got a list", false},
    {"both-preevictionfilter.yaml", EBB_ESCHEMA, 8, "profiles[0].plugins.preEvictionFilter",
     "both \"preevictionfilter\" and its alias \"preEvictionFilter\" are set (lines 6 and 8): "
     "keep one", false},
    {"metrics-dup-source.yaml", EBB_ESCHEMA, 8, "metricsProviders[2].source",
     "metrics provider \"KubernetesMetrics\" is already configured at line 4: each source can "
     "be configured only once", false},
    {"metrics-unknown-source.yaml", EBB_ESCHEMA, 4, "metricsProviders[0].source",
     "unsupported metrics source \"MetricsServer\": expected \"KubernetesMetrics\" or "
     "\"Prometheus\"", false},
    {"metrics-prometheus-missing.yaml", EBB_ESCHEMA, 4, "metricsProviders[0].prometheus",
     "required when the source is Prometheus", false},
    {"metrics-no-url.yaml", EBB_ESCHEMA, 5, "metricsProviders[0].prometheus.url",
     "required: the Prometheus URL must be set when the source is Prometheus", false},
    {"metrics-bad-port.yaml", EBB_ESCHEMA, 6, "metricsProviders[0].prometheus.url",
     "invalid Prometheus URL \"http://example.com:-80\": invalid port \":-80\" after host",
     false},
    {"metrics-relative-url.yaml", EBB_ESCHEMA, 6, "metricsProviders[0].prometheus.url",
     "invalid Prometheus URL \"prometheus.monitoring.svc:9090\": not an absolute URL: expected "
     "http://host or https://host", false},
    {"metrics-auth-no-reference.yaml", EBB_ESCHEMA, 7,
     "metricsProviders[0].prometheus.authToken.secretReference",
     "required when authToken is set", false},
    {"metrics-auth-no-namespace.yaml", EBB_ESCHEMA, 8,
     "metricsProviders[0].prometheus.authToken.secretReference.namespace",
     "required: the secret reference needs both namespace and name", false},
    {"metrics-collector-conflict.yaml", EBB_ESCHEMA, 4, "metricsCollector.enabled",
     "the deprecated metricsCollector cannot be combined with the KubernetesMetrics provider "
     "of metricsProviders[0]: keep only the provider", false},
    {"not-yaml.yaml", EBB_EPARSE, 8, "",
     "did not find expected ',' or ']' at column 7 (while parsing a flow sequence at line 7)",
     false},
    {"duplicate-key.yaml", EBB_EPARSE, 10, "profiles[0].plugins",
     "key \"plugins\" is defined twice (lines 7 and 10)", false},
    {"readme-verbatim.yaml", EBB_EPARSE, 29, "",
     "could not find expected ':' at the end of the input (while scanning a simple key at "
     "line 29, column 7)", false},
};

static void test_bad_policy(void **state)
{
    const struct bad *b = *state;
    struct ebb_policy *p = NULL;
    struct ebb_error err;
    char path[256], want[1200], got[1200];
    int rc;

    snprintf(path, sizeof(path), DIR "bad/%s", b->file);
    rc = ebb_policy_load(path, &p, &err);
    ebb_error_format(&err, got, sizeof(got));
    if (rc != b->rc)
        fail_msg("%s: rc %d, want %d: %s", b->file, rc, b->rc, got);
    assert_null(p);
    assert_int_equal(err.code, b->rc);
    assert_string_equal(err.file, path);
    if (err.line != b->line)
        fail_msg("%s: line %d, want %d: %s", b->file, err.line, b->line, got);
    assert_string_equal(err.field, b->field);
    if (b->prefix) {
        if (strncmp(err.msg, b->msg, strlen(b->msg)) != 0)
            fail_msg("%s: \"%s\" does not start with \"%s\"", b->file, err.msg, b->msg);
    } else {
        assert_string_equal(err.msg, b->msg);
        /* and the one-line form the user sees */
        if (b->line > 0 && b->field[0] != '\0')
            snprintf(want, sizeof(want), "%s:%d: %s: %s", path, b->line, b->field, b->msg);
        else if (b->line > 0)
            snprintf(want, sizeof(want), "%s:%d: %s", path, b->line, b->msg);
        else
            snprintf(want, sizeof(want), "%s: %s", path, b->msg);
        assert_string_equal(got, want);
    }
}

/* The URL rule on its own: what passes and what does not. */
static void test_prometheus_urls(void **state)
{
    static const struct {
        const char *url;
        bool ok;
    } cases[] = {
        {"http://prometheus.monitoring.svc", true},
        {"https://prometheus.monitoring.svc:9090/prefix?x=1", true},
        {"HTTPS://user:pw@prom:443", true},
        {"http://[::1]:9090", true},
        {"http://10.0.0.1:", true},
        {"ftp://prom", false},
        {"http://", false},
        {"http://:9090", false},
        {"http://prom:99999", false},
        {"http://prom:90a", false},
        {"http://[::1", false},
        {"http://prom ql", false},
        {"prom:9090", false},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512];
        struct ebb_policy *p = NULL;
        struct ebb_error err;
        int rc;

        snprintf(text, sizeof(text),
                 "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"
                 "metricsProviders:\n- source: Prometheus\n  prometheus:\n    url: \"%s\"\n",
                 cases[i].url);
        rc = ebb_policy_parse(text, strlen(text), "u.yaml", &p, &err);
        if ((rc == 0) != cases[i].ok)
            fail_msg("%s: rc %d (%s)", cases[i].url, rc, err.msg);
        if (rc == 0) {
            assert_string_equal(p->providers[0].prometheus_url, cases[i].url);
            assert_null(p->providers[0].secret_name);
            ebb_policy_free(p);
        } else {
            assert_int_equal(err.line, 6);
            assert_string_equal(err.field, "metricsProviders[0].prometheus.url");
        }
    }
}

/* Type errors are reported where the value is; integral floats are integers. */
static void test_limits(void **state)
{
    static const struct {
        const char *value;
        int rc;
        int64_t want;
    } cases[] = {
        {"0", 0, 0},
        {"7", 0, 7},
        {"7.0", 0, 7},
        {"1e3", 0, 1000},
        {"0x10", 0, 16},
        {"18446744073709551615", 0, INT64_MAX},
        {"-1", EBB_ESCHEMA, 0},
        {"-0.5", EBB_ESCHEMA, 0},
        {"1e21", EBB_ESCHEMA, 0},
        {"true", EBB_ESCHEMA, 0},
        {"'3'", EBB_ESCHEMA, 0},
        {"[3]", EBB_ESCHEMA, 0},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[256];
        struct ebb_policy *p = NULL;
        struct ebb_error err;
        int rc;

        snprintf(text, sizeof(text), "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"
                 "maxNoOfPodsToEvictTotal: %s\n", cases[i].value);
        rc = ebb_policy_parse(text, strlen(text), "l.yaml", &p, &err);
        if (rc != cases[i].rc)
            fail_msg("%s: rc %d (%s)", cases[i].value, rc, err.msg);
        if (rc == 0) {
            assert_int_equal(p->max_total, cases[i].want);
            ebb_policy_free(p);
        } else {
            assert_int_equal(err.line, 3);
            assert_string_equal(err.field, "maxNoOfPodsToEvictTotal");
        }
    }
}

/* A v1alpha1 policy is converted (core/v1alpha1.c) with a warning that
 * names the file; the profile keeps the v1alpha1 lines. */
static void test_v1alpha1(void **state)
{
    static const char *const balance[] = {"RemoveDuplicates"};
    static const char *const evictor[] = {"DefaultEvictor"};
    struct ebb_policy *p = load_ok(DIR "v1alpha1.yaml");

    (void)state;
    assert_int_equal(p->nprofiles, 1);
    assert_string_equal(p->profiles[0].name, "strategy-RemoveDuplicates-profile");
    assert_set(set_of(p, 0, EBB_EXT_BALANCE), balance, 1);
    assert_set(set_of(p, 0, EBB_EXT_FILTER), evictor, 1);
    assert_set(set_of(p, 0, EBB_EXT_PREEVICTIONFILTER), evictor, 1);
    assert_int_equal(p->profiles[0].line, 4);
    assert_int_equal(p->nwarnings, 1);
    assert_non_null(strstr(p->warnings[0], DIR "v1alpha1.yaml:1: apiVersion: descheduler/v1alpha1 "
                                           "is deprecated"));
    ebb_policy_free(p);
}

int main(void)
{
    struct CMUnitTest tests[64] = {
        cmocka_unit_test(test_configmap_example),
        cmocka_unit_test(test_readme_example),
        cmocka_unit_test(test_helm_default),
        cmocka_unit_test(test_json_policy),
        cmocka_unit_test(test_warnings),
        cmocka_unit_test(test_parse_from_memory),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_ext_names),
        cmocka_unit_test(test_prometheus_urls),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_v1alpha1),
    };
    size_t n = 11;

    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        struct CMUnitTest t = cmocka_unit_test_prestate(test_bad_policy, (void *)&bad_cases[i]);
        t.name = bad_cases[i].file;
        tests[n++] = t;
    }
    return _cmocka_run_group_tests("tests", tests, n, NULL, NULL);
}
