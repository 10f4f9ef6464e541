/* serve_table.c: the meta.k8s.io Table a read answers with when the client
 * asks for one (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, what
 * `kubectl get` sends). The columns and cells are the API server's own for
 * each kind (pkg/printers/internalversion of Kubernetes 1.25, generated
 * wide: the priority-1 columns are in every row): pods, nodes, namespaces,
 * PVCs, events (either API), PodDisruptionBudgets, PriorityClasses,
 * Leases; a custom resource without printer columns gets Name and Age, and
 * metrics the generic Name and Created At. The column descriptions are
 * ebb's own words.
 *
 * Called on the loop thread by the read handlers (serve_read.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ebb/quantity.h"
#include "serve/serve_int.h"

struct col {
    const char *name, *type, *format;
    int priority;
    const char *desc;
};

#define NAME_COL { "Name", "string", "name", 0, "The object's name, unique within its namespace." }
#define AGE_COL { "Age", "string", "", 0, "How long ago the object was created." }

static const struct col pod_cols[] = {
    NAME_COL,
    { "Ready", "string", "", 0, "Ready containers out of all of them." },
    { "Status", "string", "", 0, "The pod's phase, or what keeps its containers from running." },
    { "Restarts", "string", "", 0, "Container restarts, and how long ago the last one was." },
    AGE_COL,
    { "IP", "string", "", 1, "The pod's IP address." },
    { "Node", "string", "", 1, "The node the pod is bound to." },
    { "Nominated Node", "string", "", 1, "The node the scheduler nominated while preempting." },
    { "Readiness Gates", "string", "", 1, "Readiness gates that are true, out of all of them." },
};

static const struct col node_cols[] = {
    NAME_COL,
    { "Status", "string", "", 0, "The node's readiness, and SchedulingDisabled when cordoned." },
    { "Roles", "string", "", 0, "The roles its node-role.kubernetes.io labels give it." },
    AGE_COL,
    { "Version", "string", "", 0, "The kubelet's version." },
    { "Internal-IP", "string", "", 1, "The node's first internal address." },
    { "External-IP", "string", "", 1, "The node's first external address." },
    { "OS-Image", "string", "", 1, "The operating system image the node reports." },
    { "Kernel-Version", "string", "", 1, "The kernel version the node reports." },
    { "Container-Runtime", "string", "", 1, "The container runtime and its version." },
};

static const struct col namespace_cols[] = {
    NAME_COL,
    { "Status", "string", "", 0, "The namespace's phase." },
    AGE_COL,
};

static const struct col pvc_cols[] = {
    NAME_COL,
    { "Status", "string", "", 0, "The claim's phase." },
    { "Volume", "string", "", 0, "The volume bound to the claim." },
    { "Capacity", "string", "", 0, "The storage the bound volume has." },
    { "Access Modes", "string", "", 0, "The access modes of the bound volume." },
    { "StorageClass", "string", "", 0, "The claim's storage class." },
    AGE_COL,
    { "VolumeMode", "string", "", 1, "Filesystem or Block." },
};

static const struct col event_cols[] = {
    { "Last Seen", "string", "", 0, "How long ago the event last happened." },
    { "Type", "string", "", 0, "Normal or Warning." },
    { "Reason", "string", "", 0, "Why the event happened, in one word." },
    { "Object", "string", "", 0, "The object the event is about." },
    { "Subobject", "string", "", 1, "The part of the object the event is about." },
    { "Source", "string", "", 1, "The component that reported the event." },
    { "Message", "string", "", 0, "What happened." },
    { "First Seen", "string", "", 1, "How long ago the event first happened." },
    { "Count", "string", "", 1, "How many times it happened." },
    { "Name", "string", "name", 1, "The event's name." },
};

static const struct col pdb_cols[] = {
    NAME_COL,
    { "Min Available", "string", "", 0, "The pods that must stay available." },
    { "Max Unavailable", "string", "", 0, "The pods that may be unavailable." },
    { "Allowed Disruptions", "integer", "", 0, "The pods that may be disrupted now." },
    AGE_COL,
};

static const struct col pc_cols[] = {
    NAME_COL,
    { "Value", "integer", "", 0, "The priority pods of this class get." },
    { "Global-Default", "boolean", "", 0, "Whether pods without a class get this one." },
    AGE_COL,
    { "PreemptionPolicy", "string", "", 0, "Whether pods of this class preempt lower ones." },
};

static const struct col lease_cols[] = {
    NAME_COL,
    { "Holder", "string", "", 0, "Who holds the lease." },
    AGE_COL,
};

/* a custom resource without printer columns (apiextensions' default) */
static const struct col crd_cols[] = {
    NAME_COL,
    { "Age", "date", "", 0, "How long ago the object was created." },
};

/* the generic table of an API without printers of its own */
static const struct col default_cols[] = {
    NAME_COL,
    { "Created At", "date", "", 0, "When the object was created." },
};

/* ---- reading the object -------------------------------------------------------- */

static const cJSON *at(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static const char *str_or(const cJSON *obj, const char *key, const char *dflt)
{
    const char *s = ebb__json_str(obj, key);
    return s != NULL ? s : dflt;
}

static double num_or(const cJSON *obj, const char *key, double dflt)
{
    const cJSON *j = at(obj, key);
    return cJSON_IsNumber(j) ? j->valuedouble : dflt;
}

/* duration.HumanDuration: "45s", "3m20s", "5h", "12d", "2y30d" */
static void human_duration(int64_t secs, char *buf, size_t len)
{
    int64_t minutes, hours;

    if (secs < -1) {
        snprintf(buf, len, "<invalid>");
        return;
    }
    if (secs < 0)
        secs = 0;
    if (secs < 120) {
        snprintf(buf, len, "%" PRId64 "s", secs);
        return;
    }
    minutes = secs / 60;
    if (minutes < 10) {
        if (secs % 60 == 0)
            snprintf(buf, len, "%" PRId64 "m", minutes);
        else
            snprintf(buf, len, "%" PRId64 "m%" PRId64 "s", minutes, secs % 60);
        return;
    }
    if (minutes < 180) {
        snprintf(buf, len, "%" PRId64 "m", minutes);
        return;
    }
    hours = secs / 3600;
    if (hours < 8) {
        if (minutes % 60 == 0)
            snprintf(buf, len, "%" PRId64 "h", hours);
        else
            snprintf(buf, len, "%" PRId64 "h%" PRId64 "m", hours, minutes % 60);
    } else if (hours < 48) {
        snprintf(buf, len, "%" PRId64 "h", hours);
    } else if (hours < 24 * 8) {
        if (hours % 24 == 0)
            snprintf(buf, len, "%" PRId64 "d", hours / 24);
        else
            snprintf(buf, len, "%" PRId64 "d%" PRId64 "h", hours / 24, hours % 24);
    } else if (hours < 24 * 365 * 2) {
        snprintf(buf, len, "%" PRId64 "d", hours / 24);
    } else if (hours < 24 * 365 * 8) {
        int64_t dy = (hours / 24) % 365;
        if (dy == 0)
            snprintf(buf, len, "%" PRId64 "y", hours / 24 / 365);
        else
            snprintf(buf, len, "%" PRId64 "y%" PRId64 "d", hours / 24 / 365, dy);
    } else {
        snprintf(buf, len, "%" PRId64 "y", hours / 24 / 365);
    }
}

/* translateTimestampSince: "<unknown>" for an absent or zero time. */
static void since(const char *ts, int64_t now, char *buf, size_t len)
{
    int64_t t;

    if (ts == NULL || ebb_time_parse(ts, &t) != 0 || t <= -62135596800LL) {
        snprintf(buf, len, "<unknown>");
        return;
    }
    human_duration(now - t, buf, len);
}

static void add_str(cJSON *cells, const char *s)
{
    cJSON_AddItemToArray(cells, cJSON_CreateString(s));
}

static void add_since(cJSON *cells, const cJSON *obj, const char *key, int64_t now)
{
    char buf[32];

    since(ebb__json_str(obj, key), now, buf, sizeof(buf));
    add_str(cells, buf);
}

static void add_age(cJSON *cells, const cJSON *meta, int64_t now)
{
    add_since(cells, meta, "creationTimestamp", now);
}

/* ---- the rows ---------------------------------------------------------------------- */

static bool has_condition(const cJSON *status, const char *type, const char *value)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, at(status, "conditions")) {
        const char *t = ebb__json_str(c, "type"), *v = ebb__json_str(c, "status");
        if (t != NULL && strcmp(t, type) == 0)
            return v != NULL && strcmp(v, value) == 0;
    }
    return false;
}

/* a container's state.terminated, exit code 0 or not */
static void terminated_reason(const cJSON *term, const char *prefix, char *reason, size_t len)
{
    const char *r = ebb__json_str(term, "reason");
    double sig = num_or(term, "signal", 0), code = num_or(term, "exitCode", 0);

    if (r != NULL && r[0] != '\0')
        snprintf(reason, len, "%s%s", prefix, r);
    else if (sig != 0)
        snprintf(reason, len, "%sSignal:%.0f", prefix, sig);
    else
        snprintf(reason, len, "%sExitCode:%.0f", prefix, code);
}

/* the latest lastState.terminated.finishedAt seen so far */
static void last_restart(const cJSON *cs, int64_t *latest)
{
    const cJSON *term = at(at(cs, "lastState"), "terminated");
    const char *fin = ebb__json_str(term, "finishedAt");
    int64_t t;

    if (fin != NULL && ebb_time_parse(fin, &t) == 0 && t > *latest)
        *latest = t;
}

/* printPod */
static void pod_row(const cJSON *obj, cJSON *cells, cJSON *row, int64_t now)
{
    const cJSON *meta = at(obj, "metadata"), *spec = at(obj, "spec"), *status = at(obj, "status");
    const cJSON *ics = at(status, "initContainerStatuses"), *css = at(status, "containerStatuses");
    const char *phase = str_or(status, "phase", ""), *sreason = ebb__json_str(status, "reason");
    char reason[256], buf[64];
    int restarts = 0, ready = 0, total = cJSON_GetArraySize(at(spec, "containers")), i = 0;
    int64_t latest = INT64_MIN;
    bool initializing = false;
    const cJSON *c;

    snprintf(reason, sizeof(reason), "%s", sreason != NULL && sreason[0] ? sreason : phase);
    if (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0) {
        cJSON *conds = cJSON_AddArrayToObject(row, "conditions"), *rc = cJSON_CreateObject();
        bool ok = phase[0] == 'S';
        cJSON_AddStringToObject(rc, "type", "Completed");
        cJSON_AddStringToObject(rc, "status", "True");
        cJSON_AddStringToObject(rc, "reason", phase);
        cJSON_AddStringToObject(rc, "message",
                                ok ? "The pod has completed successfully." : "The pod failed.");
        cJSON_AddItemToArray(conds, rc);
    }
    cJSON_ArrayForEach(c, ics) {
        const cJSON *state = at(c, "state"), *term = at(state, "terminated");
        const char *wr = ebb__json_str(at(state, "waiting"), "reason");

        restarts += (int)num_or(c, "restartCount", 0);
        last_restart(c, &latest);
        if (term != NULL && num_or(term, "exitCode", 0) == 0) {
            i++;
            continue;
        }
        if (term != NULL)
            terminated_reason(term, "Init:", reason, sizeof(reason));
        else if (wr != NULL && wr[0] != '\0' && strcmp(wr, "PodInitializing") != 0)
            snprintf(reason, sizeof(reason), "Init:%s", wr);
        else
            snprintf(reason, sizeof(reason), "Init:%d/%d", i,
                     cJSON_GetArraySize(at(spec, "initContainers")));
        initializing = true;
        break;
    }
    if (!initializing) {
        bool running = false;
        restarts = 0;
        for (int k = cJSON_GetArraySize(css) - 1; k >= 0; k--) {
            const cJSON *cs = cJSON_GetArrayItem(css, k), *state = at(cs, "state");
            const cJSON *term = at(state, "terminated");
            const char *wr = ebb__json_str(at(state, "waiting"), "reason");

            restarts += (int)num_or(cs, "restartCount", 0);
            last_restart(cs, &latest);
            if (wr != NULL && wr[0] != '\0')
                snprintf(reason, sizeof(reason), "%s", wr);
            else if (term != NULL)
                terminated_reason(term, "", reason, sizeof(reason));
            else if (cJSON_IsTrue(at(cs, "ready")) && at(state, "running") != NULL) {
                running = true;
                ready++;
            }
        }
        if (strcmp(reason, "Completed") == 0 && running)
            snprintf(reason, sizeof(reason), "%s",
                     has_condition(status, "Ready", "True") ? "Running" : "NotReady");
    }
    if (ebb__json_str(meta, "deletionTimestamp") != NULL)
        snprintf(reason, sizeof(reason), "%s",
                 sreason != NULL && strcmp(sreason, "NodeLost") == 0 ? "Unknown" : "Terminating");
    add_str(cells, str_or(meta, "name", ""));
    snprintf(buf, sizeof(buf), "%d/%d", ready, total);
    add_str(cells, buf);
    add_str(cells, reason);
    if (latest != INT64_MIN) {
        char ago[32];
        human_duration(now - latest, ago, sizeof(ago));
        snprintf(buf, sizeof(buf), "%d (%s ago)", restarts, ago);
    } else {
        snprintf(buf, sizeof(buf), "%d", restarts);
    }
    add_str(cells, buf);
    add_age(cells, meta, now);
    {
        const cJSON *ips = at(status, "podIPs"), *gates = at(spec, "readinessGates");
        const char *ip = ebb__json_str(cJSON_GetArrayItem(ips, 0), "ip");
        const char *node = ebb__json_str(spec, "nodeName");
        const char *nominated = ebb__json_str(status, "nominatedNodeName");
        int ngates = cJSON_GetArraySize(gates), ntrue = 0;

        add_str(cells, ip != NULL && ip[0] ? ip : "<none>");
        add_str(cells, node != NULL && node[0] ? node : "<none>");
        add_str(cells, nominated != NULL && nominated[0] ? nominated : "<none>");
        if (ngates == 0) {
            add_str(cells, "<none>");
        } else {
            cJSON_ArrayForEach(c, gates) {
                const char *type = ebb__json_str(c, "conditionType");
                if (type != NULL && has_condition(status, type, "True"))
                    ntrue++;
            }
            snprintf(buf, sizeof(buf), "%d/%d", ntrue, ngates);
            add_str(cells, buf);
        }
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *node_address(const cJSON *status, const char *type)
{
    const cJSON *a;

    cJSON_ArrayForEach(a, at(status, "addresses")) {
        const char *t = ebb__json_str(a, "type");
        if (t != NULL && strcmp(t, type) == 0)
            return str_or(a, "address", "");
    }
    return "<none>";
}

/* printNode */
static void node_row(const cJSON *obj, cJSON *cells, cJSON *row, int64_t now)
{
    const cJSON *meta = at(obj, "metadata"), *status = at(obj, "status"), *c;
    const cJSON *info = at(status, "nodeInfo"), *labels = at(meta, "labels"), *l;
    const char *roles[64];
    struct sb b = { 0 };
    size_t nroles = 0;

    (void)row;
    add_str(cells, str_or(meta, "name", ""));
    cJSON_ArrayForEach(c, at(status, "conditions")) {
        const char *t = ebb__json_str(c, "type"), *v = ebb__json_str(c, "status");
        if (t != NULL && strcmp(t, "Ready") == 0) {
            ebb__sb_puts(&b, v != NULL && strcmp(v, "True") == 0 ? "Ready" : "NotReady");
            break;
        }
    }
    if (b.n == 0)
        ebb__sb_puts(&b, "Unknown");
    if (cJSON_IsTrue(at(at(obj, "spec"), "unschedulable")))
        ebb__sb_puts(&b, ",SchedulingDisabled");
    add_str(cells, b.oom ? "" : b.p);
    b.n = 0;
    cJSON_ArrayForEach(l, labels) {
        static const char prefix[] = "node-role.kubernetes.io/";
        const char *role = NULL;
        if (strncmp(l->string, prefix, sizeof(prefix) - 1) == 0 && l->string[sizeof(prefix) - 1])
            role = l->string + sizeof(prefix) - 1;
        else if (strcmp(l->string, "kubernetes.io/role") == 0 && cJSON_IsString(l) &&
                 l->valuestring[0] != '\0')
            role = l->valuestring;
        if (role != NULL && nroles < EBB_ARRAY_LEN(roles))
            roles[nroles++] = role;
    }
    qsort(roles, nroles, sizeof(*roles), cmp_str);
    for (size_t i = 0; i < nroles; i++) {
        if (i > 0 && strcmp(roles[i], roles[i - 1]) == 0)
            continue;   /* a set */
        if (b.n > 0)
            ebb__sb_puts(&b, ",");
        ebb__sb_puts(&b, roles[i]);
    }
    add_str(cells, b.n == 0 ? "<none>" : b.oom ? "" : b.p);
    free(b.p);
    add_age(cells, meta, now);
    add_str(cells, str_or(info, "kubeletVersion", ""));
    add_str(cells, node_address(status, "InternalIP"));
    add_str(cells, node_address(status, "ExternalIP"));
    {
        static const char *const keys[] = { "osImage", "kernelVersion", "containerRuntimeVersion" };
        for (size_t i = 0; i < EBB_ARRAY_LEN(keys); i++) {
            const char *v = ebb__json_str(info, keys[i]);
            add_str(cells, v != NULL && v[0] ? v : "<unknown>");
        }
    }
}

static void namespace_row(const cJSON *obj, cJSON *cells, cJSON *row, int64_t now)
{
    const cJSON *meta = at(obj, "metadata");

    (void)row;
    add_str(cells, str_or(meta, "name", ""));
    add_str(cells, str_or(at(obj, "status"), "phase", ""));
    add_age(cells, meta, now);
}

/* helper.GetAccessModesAsString */
static void access_modes(const cJSON *modes, char *buf, size_t len)
{
    static const char *const names[][2] = { { "ReadWriteOnce", "RWO" }, { "ReadOnlyMany", "ROX" },
                                            { "ReadWriteMany", "RWX" },
                                            { "ReadWriteOncePod", "RWOP" } };
    size_t n = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < EBB_ARRAY_LEN(names); i++) {
        const cJSON *m;
        cJSON_ArrayForEach(m, modes) {
            if (cJSON_IsString(m) && strcmp(m->valuestring, names[i][0]) == 0) {
                n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? "," : "",
                                      names[i][1]);
                break;
            }
        }
    }
}

/* A quantity as the API prints it: binary ones in the largest exact unit. */
static void quantity_text(const char *q, char *buf, size_t len)
{
    size_t n = q ? strlen(q) : 0;
    int64_t v;

    if (n > 0 && q[n - 1] == 'i' && ebb_quantity_parse(q, n, false, &v) == 0)
        ebb_quantity_format(v, false, buf, len);
    else
        snprintf(buf, len, "%s", q ? q : "");
}

/* printPersistentVolumeClaim */
static void pvc_row(const cJSON *obj, cJSON *cells, cJSON *row, int64_t now)
{
    const cJSON *meta = at(obj, "metadata"), *spec = at(obj, "spec"), *status = at(obj, "status");
    const char *volume = str_or(spec, "volumeName", "");
    const char *cls = ebb__json_str(at(meta, "annotations"),
                                    "volume.beta.kubernetes.io/storage-class");
    char capacity[64] = "", modes[64] = "";

    (void)row;
    add_str(cells, str_or(meta, "name", ""));
    add_str(cells, ebb__json_str(meta, "deletionTimestamp") != NULL
                       ? "Terminating" : str_or(status, "phase", ""));
    add_str(cells, volume);
    if (volume[0] != '\0') {
        access_modes(at(status, "accessModes"), modes, sizeof(modes));
        quantity_text(ebb__json_str(at(status, "capacity"), "storage"), capacity,
                      sizeof(capacity));
    }
    add_str(cells, capacity);
    add_str(cells, modes);
    add_str(cells, cls != NULL ? cls : str_or(spec, "storageClassName", ""));
    add_age(cells, meta, now);
    add_str(cells, str_or(spec, "volumeMode", "<unset>"));
}

/* printEvent, on a core/v1 Event or an events.k8s.io/v1 one (`v1`): the
 * API server converts the latter to the former before printing. */
static void event_row_of(const cJSON *obj, cJSON *cells, int64_t now, bool v1)
{
    const cJSON *meta = at(obj, "metadata"), *series = at(obj, "series");
    const cJSON *inv = at(obj, v1 ? "regarding" : "involvedObject");
    const cJSON *src = at(obj, v1 ? "deprecatedSource" : "source");
    const char *first_ts = ebb__json_str(obj, v1 ? "deprecatedFirstTimestamp" : "firstTimestamp");
    const char *last_ts = ebb__json_str(obj, v1 ? "deprecatedLastTimestamp" : "lastTimestamp");
    const char *kind = str_or(inv, "kind", ""), *name = str_or(inv, "name", "");
    const char *component = str_or(src, "component", ""), *host = str_or(src, "host", "");
    const char *msg = str_or(obj, v1 ? "note" : "message", "");
    char first[32], last[32], target[600], source[300], lower[128];
    double count = num_or(obj, v1 ? "deprecatedCount" : "count", 0);
    size_t i, mlen;

    since(first_ts, now, first, sizeof(first));
    if (first_ts == NULL || strcmp(first, "<unknown>") == 0)
        since(ebb__json_str(obj, "eventTime"), now, first, sizeof(first));
    if (last_ts != NULL)
        since(last_ts, now, last, sizeof(last));
    if (last_ts == NULL || strcmp(last, "<unknown>") == 0)
        snprintf(last, sizeof(last), "%s", first);
    if (series != NULL) {
        since(ebb__json_str(series, "lastObservedTime"), now, last, sizeof(last));
        count = num_or(series, "count", 0);
    } else if (count == 0) {
        count = 1;   /* a singleton of the new API has no count */
    }
    for (i = 0; kind[i] && i + 1 < sizeof(lower); i++)
        lower[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] + 32 : kind[i]);
    lower[i] = '\0';
    if (name[0] != '\0')
        snprintf(target, sizeof(target), "%s/%s", lower, name);
    else
        snprintf(target, sizeof(target), "%s", lower);
    if (component[0] == '\0')
        component = str_or(obj, v1 ? "reportingController" : "reportingComponent", "");
    if (host[0] == '\0')
        host = str_or(obj, "reportingInstance", "");
    if (host[0] == '\0')
        snprintf(source, sizeof(source), "%s", component);
    else
        snprintf(source, sizeof(source), "%s, %s", component, host);
    add_str(cells, last);
    add_str(cells, str_or(obj, "type", ""));
    add_str(cells, str_or(obj, "reason", ""));
    add_str(cells, target);
    add_str(cells, str_or(inv, "fieldPath", ""));
    add_str(cells, source);
    /* strings.TrimSpace */
    while (*msg == ' ' || *msg == '\t' || *msg == '\n' || *msg == '\r' || *msg == '\v' ||
           *msg == '\f')
        msg++;
    mlen = strlen(msg);
    while (mlen > 0 && strchr(" \t\n\r\v\f", msg[mlen - 1]) != NULL)
        mlen--;
    {
        char *m = strndup(msg, mlen);
        add_str(cells, m != NULL ? m : "");
        free(m);
    }
    add_str(cells, first);
    cJSON_AddItemToArray(cells, cJSON_CreateNumber(count));
    add_str(cells, str_or(meta, "name", ""));
}

static void event_row(const cJSON *obj, cJSON *cells, cJSON *row, int64_t now)
{
    (void)row;
    event_row_of(obj, cells, now, false);
}

static void event_v1_row(const cJSON *obj, cJSON *cells, cJSON *row, int64_t now)
{
    (void)row;
    event_row_of(obj, cells, now, true);
}

/* intstr.String: a number or a string as written */
static void add_intstr(cJSON *cells, const cJSON *v)
{
    char buf[32];

    if (cJSON_IsNumber(v)) {
        snprintf(buf, sizeof(buf), "%.0f", v->valuedouble);
        add_str(cells, buf);
    } else if (cJSON_IsString(v)) {
        add_str(cells, v->valuestring);
    } else {
        add_str(cells, "N/A");
    }
}

static void pdb_row(const cJSON *obj, cJSON *cells, cJSON *row, int64_t now)
{
    const cJSON *meta = at(obj, "metadata"), *spec = at(obj, "spec");

    (void)row;
    add_str(cells, str_or(meta, "name", ""));
    add_intstr(cells, at(spec, "minAvailable"));
    add_intstr(cells, at(spec, "maxUnavailable"));
    cJSON_AddItemToArray(cells,
                         cJSON_CreateNumber(num_or(at(obj, "status"), "disruptionsAllowed", 0)));
    add_age(cells, meta, now);
}

static void pc_row(const cJSON *obj, cJSON *cells, cJSON *row, int64_t now)
{
    const cJSON *meta = at(obj, "metadata");

    (void)row;
    add_str(cells, str_or(meta, "name", ""));
    cJSON_AddItemToArray(cells, cJSON_CreateNumber(num_or(obj, "value", 0)));
    cJSON_AddItemToArray(cells, cJSON_CreateBool(cJSON_IsTrue(at(obj, "globalDefault"))));
    add_age(cells, meta, now);
    add_str(cells, str_or(obj, "preemptionPolicy", ""));
}

static void lease_row(const cJSON *obj, cJSON *cells, cJSON *row, int64_t now)
{
    const cJSON *meta = at(obj, "metadata");

    (void)row;
    add_str(cells, str_or(meta, "name", ""));
    add_str(cells, str_or(at(obj, "spec"), "holderIdentity", ""));
    add_age(cells, meta, now);
}

static void crd_row(const cJSON *obj, cJSON *cells, cJSON *row, int64_t now)
{
    const cJSON *meta = at(obj, "metadata");

    (void)row;
    add_str(cells, str_or(meta, "name", ""));
    add_age(cells, meta, now);
}

static void default_row(const cJSON *obj, cJSON *cells, cJSON *row, int64_t now)
{
    const cJSON *meta = at(obj, "metadata");
    const char *ts = ebb__json_str(meta, "creationTimestamp");
    int64_t t;
    char buf[32] = "";

    (void)row;
    (void)now;
    add_str(cells, str_or(meta, "name", ""));
    if (ts != NULL && ebb_time_parse(ts, &t) == 0)
        ebb_time_format(t, buf, sizeof(buf));
    add_str(cells, buf);
}

typedef void row_fn(const cJSON *obj, cJSON *cells, cJSON *row, int64_t now);

static const struct printer {
    const struct col *cols;
    size_t ncols;
    row_fn *row;
} printers[NRES] = {
    [R_NODES] = { node_cols, EBB_ARRAY_LEN(node_cols), node_row },
    [R_PODS] = { pod_cols, EBB_ARRAY_LEN(pod_cols), pod_row },
    [R_NAMESPACES] = { namespace_cols, EBB_ARRAY_LEN(namespace_cols), namespace_row },
    [R_PVCS] = { pvc_cols, EBB_ARRAY_LEN(pvc_cols), pvc_row },
    [R_EVENTS] = { event_cols, EBB_ARRAY_LEN(event_cols), event_row },
    [R_PDBS] = { pdb_cols, EBB_ARRAY_LEN(pdb_cols), pdb_row },
    [R_PRIORITY_CLASSES] = { pc_cols, EBB_ARRAY_LEN(pc_cols), pc_row },
    [R_LEASES] = { lease_cols, EBB_ARRAY_LEN(lease_cols), lease_row },
    [R_EVENTS_V1] = { event_cols, EBB_ARRAY_LEN(event_cols), event_v1_row },
    [R_NODE_METRICS] = { default_cols, EBB_ARRAY_LEN(default_cols), default_row },
    [R_POD_METRICS] = { default_cols, EBB_ARRAY_LEN(default_cols), default_row },
    [R_POD_MIGRATION_JOBS] = { crd_cols, EBB_ARRAY_LEN(crd_cols), crd_row },
    [R_CONFIGMAPS] = { default_cols, EBB_ARRAY_LEN(default_cols), default_row },
};

/* ---- the answer --------------------------------------------------------------------- */

/* One media range of an Accept header: "application/json;as=Table;v=v1;g=meta.k8s.io".
 * Sets *table (0: plain JSON, 1: Table v1, 2: Table v1beta1); false: not one ebb
 * can answer with. */
static bool media_range(const char *s, size_t n, int *table)
{
    char buf[256], *p, *save = NULL, *type;
    const char *as = NULL, *g = NULL, *v = NULL;

    if (n >= sizeof(buf))
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    type = strtok_r(buf, ";", &save);
    if (type == NULL)
        return false;
    while (*type == ' ')
        type++;
    for (p = type + strlen(type); p > type && p[-1] == ' '; p--)
        p[-1] = '\0';
    while ((p = strtok_r(NULL, ";", &save)) != NULL) {
        char *eq = strchr(p, '=');
        while (*p == ' ')
            p++;
        if (eq == NULL)
            continue;
        *eq++ = '\0';
        if (strcmp(p, "as") == 0)
            as = eq;
        else if (strcmp(p, "g") == 0)
            g = eq;
        else if (strcmp(p, "v") == 0)
            v = eq;
    }
    if (strcasecmp(type, "application/json") != 0 && strcmp(type, "*/*") != 0 &&
        strcasecmp(type, "application/*") != 0)
        return false;
    if (as == NULL) {
        *table = 0;
        return true;
    }
    if (strcmp(as, "Table") != 0 || g == NULL || strcmp(g, "meta.k8s.io") != 0 || v == NULL)
        return false;
    if (strcmp(v, "v1") == 0)
        *table = 1;
    else if (strcmp(v, "v1beta1") == 0)
        *table = 2;
    else
        return false;
    return true;
}

int ebb__table_negotiate(struct ebb_http_req *r, struct table_view *view)
{
    const char *accept = ebb_http_req_header(r, "Accept");
    const char *inc = ebb_http_req_query(r, "includeObject");
    const char *p;
    bool any = false;

    memset(view, 0, sizeof(*view));
    view->include = INCLUDE_METADATA;
    if (inc != NULL && strcmp(inc, "Object") == 0)
        view->include = INCLUDE_OBJECT;
    else if (inc != NULL && strcmp(inc, "None") == 0)
        view->include = INCLUDE_NONE;
    if (accept == NULL || accept[0] == '\0')
        return 0;
    for (p = accept; *p;) {
        size_t n = strcspn(p, ",");
        int table;
        if (n > 0)
            any = true;
        if (n > 0 && media_range(p, n, &table)) {
            view->table = table;
            return 0;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    if (!any)
        return 0;
    ebb__reply_status(r, 406, "NotAcceptable",
                      "only the following media types are accepted: application/json, "
                      "application/yaml, application/vnd.kubernetes.protobuf",
                      NULL);
    return -1;
}

cJSON *ebb__table_new(int res, const struct table_view *view, bool headers)
{
    const struct printer *pr = &printers[res];
    cJSON *t = cJSON_CreateObject();

    cJSON_AddStringToObject(t, "kind", "Table");
    cJSON_AddStringToObject(t, "apiVersion",
                            view->table == 2 ? "meta.k8s.io/v1beta1" : "meta.k8s.io/v1");
    cJSON_AddObjectToObject(t, "metadata");
    if (headers) {
        cJSON *cols = cJSON_AddArrayToObject(t, "columnDefinitions");
        for (size_t i = 0; i < pr->ncols; i++) {
            cJSON *c = cJSON_CreateObject();
            cJSON_AddStringToObject(c, "name", pr->cols[i].name);
            cJSON_AddStringToObject(c, "type", pr->cols[i].type);
            cJSON_AddStringToObject(c, "format", pr->cols[i].format);
            cJSON_AddStringToObject(c, "description", pr->cols[i].desc);
            cJSON_AddNumberToObject(c, "priority", pr->cols[i].priority);
            cJSON_AddItemToArray(cols, c);
        }
    } else {
        /* a watch's later events: the headers came with the first */
        cJSON_AddNullToObject(t, "columnDefinitions");
    }
    cJSON_AddArrayToObject(t, "rows");
    return t;
}

int ebb__table_add_row(cJSON *table, int res, const struct table_view *view, const char *text,
                       size_t len)
{
    cJSON *obj = cJSON_ParseWithLength(text, len), *row, *cells;

    if (obj == NULL)
        return EBB_ENOMEM;
    row = cJSON_CreateObject();
    cells = cJSON_AddArrayToObject(row, "cells");
    printers[res].row(obj, cells, row, (int64_t)time(NULL));
    if (view->include == INCLUDE_OBJECT) {
        cJSON_AddItemToObject(row, "object", obj);
        obj = NULL;
    } else if (view->include == INCLUDE_NONE) {
        cJSON_AddNullToObject(row, "object");
    } else {
        cJSON *partial = cJSON_AddObjectToObject(row, "object");
        cJSON *meta = cJSON_DetachItemFromObjectCaseSensitive(obj, "metadata");
        cJSON_AddStringToObject(partial, "kind", "PartialObjectMetadata");
        cJSON_AddStringToObject(partial, "apiVersion",
                                view->table == 2 ? "meta.k8s.io/v1beta1" : "meta.k8s.io/v1");
        cJSON_AddItemToObject(partial, "metadata", meta != NULL ? meta : cJSON_CreateObject());
    }
    cJSON_Delete(obj);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(table, "rows"), row);
    return 0;
}
