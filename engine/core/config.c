/* The descheduler/v1alpha2 DeschedulerPolicy file.
 *
 * The document is read into a value tree (val.c) and walked field by field
 * with the upstream schema (pkg/api/v1alpha2/types.go) in hand. Upstream
 * decodes the policy with a non-strict JSON decoder, so unknown fields are
 * dropped there: here they become warnings. Types, on the other hand, are
 * enforced as encoding/json enforces them (no string <-> number coercion),
 * and every error names the file, line and field. A null value counts as
 * an absent field, as it does for Go pointers, slices and zero values. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/argdec.h"
#include "ebb/config.h"
#include "ebb/quantity.h"
#include "ebb/selector.h"
#include "ebb/v1alpha1.h"

#define API_VERSION "descheduler/v1alpha2"
#define API_VERSION_V1ALPHA1 "descheduler/v1alpha1"
#define KIND "DeschedulerPolicy"
#define DEFAULT_EVICTOR "DefaultEvictor"

struct ctx {
    const char *file;
    struct ebb_policy *p;
    struct ebb_error *err;
    size_t capwarn;
};

/* A field looked up in a map: its value (never a null value), the line of
 * its key, which is where a user looks for it, and its dotted path. */
struct member {
    const struct ebb_val *v;
    int line;
    char path[256];
};

static const char *const ext_names[EBB_EXT_MAX] = {
    [EBB_EXT_DESCHEDULE] = "deschedule",
    [EBB_EXT_BALANCE] = "balance",
    [EBB_EXT_FILTER] = "filter",
    [EBB_EXT_PREEVICTIONFILTER] = "preevictionfilter",
    [EBB_EXT_EVICT] = "evict",
};

const char *ebb_ext_name(int ext)
{
    if (ext < 0 || ext >= EBB_EXT_MAX)
        return NULL;
    return ext_names[ext];
}

/* ---- errors and warnings ---------------------------------------------------- */

static int fail(struct ctx *c, int line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct ctx *c, int line, const char *field, const char *fmt, ...)
{
    char msg[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ebb_error_set(c->err, EBB_ESCHEMA, c->file, line, field, "%s", msg);
}

static int nomem(struct ctx *c)
{
    return ebb_error_set(c->err, EBB_ENOMEM, c->file, 0, NULL, "out of memory");
}

static int warn(struct ctx *c, int line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int warn(struct ctx *c, int line, const char *field, const char *fmt, ...)
{
    struct ebb_error w;
    char msg[768], buf[1400], *s;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ebb_error_set(&w, 0, c->file, line, field, "%s", msg);
    ebb_error_format(&w, buf, sizeof(buf));
    if (c->p->nwarnings == c->capwarn) {
        size_t cap = c->capwarn ? c->capwarn * 2 : 4;
        char **nw = realloc(c->p->warnings, cap * sizeof(*nw));
        if (nw == NULL)
            return nomem(c);
        c->p->warnings = nw;
        c->capwarn = cap;
    }
    if ((s = strdup(buf)) == NULL)
        return nomem(c);
    c->p->warnings[c->p->nwarnings++] = s;
    return 0;
}

/* The value tree is read through engine/core/argdec.c (paths, lookups, types,
 * integers); what is here is the policy's own wording and its lenient
 * handling of unknown fields. */
static int type_error(struct ctx *c, int line, const char *field, const char *want,
                      const struct ebb_val *got)
{
    return fail(c, line, field, "expected %s, got %s", want, ebb__val_a(got));
}

/* ---- paths and lookups ------------------------------------------------------ */

static bool member(const struct ebb_val *map, const char *key, const char *base,
                   struct member *m)
{
    ebb__args_join(m->path, sizeof(m->path), base, key);
    m->line = ebb_val_key_line(map, key);
    m->v = ebb__val_at(map, key);
    return m->v != NULL;
}

/* Warn about every key of `map` not in `known`: upstream's policy decoder
 * ignores them. It is case-sensitive, so a near miss is pointed out. */
static int check_keys(struct ctx *c, const struct ebb_val *map, const char *base,
                      const char *const *known)
{
    for (size_t i = 0; (i = ebb__args_unknown(map, known, i)) < map->u.map.n; i++) {
        const char *k = map->u.map.keys[i];
        const char *const *kn;
        int rc;

        for (kn = known; *kn != NULL && strcasecmp(*kn, k) != 0; kn++)
            ;
        if (*kn != NULL)
            rc = warn(c, map->u.map.key_lines[i], base,
                      "unknown field \"%s\" (field names are case-sensitive: \"%s\"?), ignored",
                      k, *kn);
        else
            rc = warn(c, map->u.map.key_lines[i], base, "unknown field \"%s\", ignored", k);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- typed fields ----------------------------------------------------------- */

static int get_string(struct ctx *c, const struct ebb_val *map, const char *key,
                      const char *base, struct member *m, const char **out)
{
    *out = NULL;
    if (!member(map, key, base, m))
        return 0;
    if (m->v->type != EBB_VAL_STRING)
        return type_error(c, m->line, m->path, "a string", m->v);
    *out = m->v->u.str.s;
    return 0;
}

static int get_bool(struct ctx *c, const struct ebb_val *map, const char *key,
                    const char *base, bool *out)
{
    struct member m;

    if (!member(map, key, base, &m))
        return 0;
    if (m.v->type != EBB_VAL_BOOL)
        return type_error(c, m.line, m.path, "a boolean", m.v);
    *out = m.v->u.b;
    return 0;
}

/* An integer field (ebb__val_int: 5.0 is 5, beyond int64 clamped). */
static int get_integer(struct ctx *c, const struct member *m, const char *want, int64_t *out)
{
    if (ebb__val_int(m->v, out) == 0)
        return 0;
    if (m->v->type == EBB_VAL_FLOAT)
        return fail(c, m->line, m->path, "expected %s, got %g", want, m->v->u.f);
    return type_error(c, m->line, m->path, want, m->v);
}

/* A Go *uint: absent leaves *out alone; negative is refused. */
static int get_count(struct ctx *c, const struct ebb_val *map, const char *key, int64_t *out)
{
    struct member m;
    int64_t n = 0;
    int rc;

    if (!member(map, key, "", &m))
        return 0;
    if ((rc = get_integer(c, &m, "a non-negative integer", &n)) < 0)
        return rc;
    if (n < 0)
        return fail(c, m.line, m.path, "must not be negative, got %lld", (long long)n);
    *out = n;
    return 0;
}

/* ---- top level -------------------------------------------------------------- */

static const char *const top_keys[] = {
    "apiVersion", "kind", "profiles", "nodeSelector", "maxNoOfPodsToEvictPerNode",
    "maxNoOfPodsToEvictPerNamespace", "maxNoOfPodsToEvictTotal",
    "evictionFailureEventNotification", "metricsCollector", "metricsProviders",
    "gracePeriodSeconds", NULL,
};

static int check_type_meta(struct ctx *c, const struct ebb_val *root)
{
    const struct ebb_val *av = ebb_val_get(root, "apiVersion");
    bool v1alpha1 = av != NULL && av->type == EBB_VAL_STRING &&
                    strcmp(av->u.str.s, API_VERSION_V1ALPHA1) == 0;
    struct member m;
    const char *s;
    int rc;

    /* A v1alpha1 document was converted before this (policy_from_root). */
    if (v1alpha1 || ebb_val_get(root, "strategies") != NULL) {
        const char *key = v1alpha1 ? "apiVersion" : "strategies";
        return fail(c, ebb_val_key_line(root, key), key,
                    "\"strategies\" belongs to apiVersion \"" API_VERSION_V1ALPHA1 "\": set that "
                    "apiVersion to have the policy converted as upstream v0.30 did, or write "
                    "profiles (`ebb convert` prints them for a v1alpha1 file)");
    }
    if ((rc = get_string(c, root, "apiVersion", "", &m, &s)) < 0)
        return rc;
    if (s == NULL)
        return fail(c, root->line, "apiVersion", "required: expected \"" API_VERSION "\"");
    if (strcmp(s, API_VERSION) != 0)
        return fail(c, m.line, m.path, "unsupported apiVersion \"%s\": expected \"" API_VERSION
                    "\"", s);
    if ((rc = get_string(c, root, "kind", "", &m, &s)) < 0)
        return rc;
    if (s == NULL)
        return fail(c, root->line, "kind", "required: expected \"" KIND "\"");
    if (strcmp(s, KIND) != 0)
        return fail(c, m.line, m.path, "unsupported kind \"%s\": expected \"" KIND "\"", s);
    return 0;
}

static int parse_node_selector(struct ctx *c, const struct ebb_val *root)
{
    struct ebb_selector *sel = NULL;
    struct ebb_error serr;
    struct member m;
    const char *s;
    int rc;

    if ((rc = get_string(c, root, "nodeSelector", "", &m, &s)) < 0 || s == NULL)
        return rc;
    ebb_error_clear(&serr);
    if ((rc = ebb_selector_parse(s, &sel, &serr)) < 0) {
        if (rc == EBB_ENOMEM)
            return nomem(c);
        return fail(c, m.line, m.path, "invalid label selector \"%s\": %s", s,
                    serr.msg[0] ? serr.msg : ebb_strerror(rc));
    }
    ebb_selector_free(sel);
    if ((c->p->node_selector = strdup(s)) == NULL)
        return nomem(c);
    return 0;
}

static int parse_grace_period(struct ctx *c, const struct ebb_val *root)
{
    struct member m;
    int64_t n = 0;
    int rc;

    if (!member(root, "gracePeriodSeconds", "", &m))
        return 0;
    if ((rc = get_integer(c, &m, "an integer number of seconds", &n)) < 0)
        return rc;
    if (n < 0)
        return fail(c, m.line, m.path, "must not be negative, got %lld", (long long)n);
    c->p->has_grace_period = true;
    c->p->grace_period_seconds = n;
    return 0;
}

static int parse_metrics_collector(struct ctx *c, const struct ebb_val *root)
{
    static const char *const keys[] = {"enabled", NULL};
    struct member m;
    int rc;

    if (!member(root, "metricsCollector", "", &m))
        return 0;
    if (m.v->type != EBB_VAL_MAP)
        return type_error(c, m.line, m.path, "a map", m.v);
    if ((rc = check_keys(c, m.v, m.path, keys)) < 0 ||
        (rc = get_bool(c, m.v, "enabled", m.path, &c->p->metrics_collector_enabled)) < 0)
        return rc;
    if (c->p->metrics_collector_enabled)
        return warn(c, ebb_val_key_line(m.v, "enabled"), "metricsCollector.enabled",
                    "deprecated: use metricsProviders with source \"KubernetesMetrics\"");
    return 0;
}

/* What url.Parse and the Prometheus client need: an absolute http(s) URL
 * with a host and, if given, a numeric port. NULL when fine. */
static const char *url_problem(const char *u, char *why, size_t len)
{
    const char *p, *host, *end, *at;

    for (p = u; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return "contains whitespace or control characters";
    if ((p = strstr(u, "://")) == NULL)
        return "not an absolute URL: expected http://host or https://host";
    if (!((p - u == 4 && strncasecmp(u, "http", 4) == 0) ||
          (p - u == 5 && strncasecmp(u, "https", 5) == 0))) {
        snprintf(why, len, "unsupported scheme \"%.*s\": expected http or https", (int)(p - u), u);
        return why;
    }
    host = p + 3;
    end = host + strcspn(host, "/?#");
    for (at = host; at < end; at++)
        if (*at == '@')
            host = at + 1;
    if (host == end)
        return "missing host";
    if (*host == '[') {
        const char *rb = memchr(host, ']', (size_t)(end - host));
        if (rb == NULL)
            return "missing ']' in an IPv6 host";
        p = rb + 1;
        if (p < end && *p != ':')
            return "unexpected characters after the IPv6 host";
    } else {
        p = memchr(host, ':', (size_t)(end - host));
        if (p == NULL)
            p = end;
        if (p == host)
            return "missing host";
    }
    if (p < end) {   /* ":port" */
        long port = 0;
        const char *d = p + 1;
        for (; d < end; d++) {
            if (*d < '0' || *d > '9' || port > 65535)
                break;
            port = port * 10 + (*d - '0');
        }
        if (d != end || port > 65535) {
            snprintf(why, len, "invalid port \"%.*s\" after host", (int)(end - p), p);
            return why;
        }
    }
    return NULL;
}

static int parse_prometheus(struct ctx *c, const struct member *pm,
                            struct ebb_metrics_provider *mp)
{
    static const char *const keys[] = {"url", "authToken", NULL};
    static const char *const auth_keys[] = {"secretReference", NULL};
    static const char *const ref_keys[] = {"namespace", "name", NULL};
    struct member m, am, rm;
    const char *url, *ns, *name, *problem;
    char why[160];
    int rc;

    if (pm->v->type != EBB_VAL_MAP)
        return type_error(c, pm->line, pm->path, "a map", pm->v);
    if ((rc = check_keys(c, pm->v, pm->path, keys)) < 0)
        return rc;
    if ((rc = get_string(c, pm->v, "url", pm->path, &m, &url)) < 0)
        return rc;
    if (url == NULL || *url == '\0')
        return fail(c, url ? m.line : pm->line, m.path,
                    "required: the Prometheus URL must be set when the source is Prometheus");
    if ((problem = url_problem(url, why, sizeof(why))) != NULL)
        return fail(c, m.line, m.path, "invalid Prometheus URL \"%s\": %s", url, problem);
    if ((mp->prometheus_url = strdup(url)) == NULL)
        return nomem(c);
    if (!member(pm->v, "authToken", pm->path, &am))
        return 0;
    if (am.v->type != EBB_VAL_MAP)
        return type_error(c, am.line, am.path, "a map", am.v);
    if ((rc = check_keys(c, am.v, am.path, auth_keys)) < 0)
        return rc;
    if (!member(am.v, "secretReference", am.path, &rm))
        return fail(c, am.line, rm.path, "required when authToken is set");
    if (rm.v->type != EBB_VAL_MAP)
        return type_error(c, rm.line, rm.path, "a map", rm.v);
    if ((rc = check_keys(c, rm.v, rm.path, ref_keys)) < 0)
        return rc;
    if ((rc = get_string(c, rm.v, "namespace", rm.path, &m, &ns)) < 0)
        return rc;
    if (ns == NULL || *ns == '\0')
        return fail(c, ns ? m.line : rm.line, m.path,
                    "required: the secret reference needs both namespace and name");
    if ((rc = get_string(c, rm.v, "name", rm.path, &m, &name)) < 0)
        return rc;
    if (name == NULL || *name == '\0')
        return fail(c, name ? m.line : rm.line, m.path,
                    "required: the secret reference needs both namespace and name");
    if ((mp->secret_namespace = strdup(ns)) == NULL || (mp->secret_name = strdup(name)) == NULL)
        return nomem(c);
    return 0;
}

static int parse_metrics_providers(struct ctx *c, const struct ebb_val *root)
{
    static const char *const keys[] = {"source", "prometheus", NULL};
    struct ebb_policy *p = c->p;
    int src_line[3] = {0};
    struct member m;
    int rc;

    if (!member(root, "metricsProviders", "", &m))
        return 0;
    if (m.v->type != EBB_VAL_SEQ)
        return type_error(c, m.line, m.path, "a list", m.v);
    if (m.v->u.seq.n == 0)
        return 0;
    if ((p->providers = calloc(m.v->u.seq.n, sizeof(*p->providers))) == NULL)
        return nomem(c);
    for (size_t i = 0; i < m.v->u.seq.n; i++) {
        const struct ebb_val *item = m.v->u.seq.items[i];
        struct ebb_metrics_provider *mp = &p->providers[i];
        struct member sm, pm;
        char path[64];
        const char *src;

        p->nproviders = i + 1;
        ebb__args_index(path, sizeof(path), "metricsProviders", i);
        if (item->type != EBB_VAL_MAP)
            return type_error(c, item->line, path, "a map", item);
        if ((rc = check_keys(c, item, path, keys)) < 0)
            return rc;
        if ((rc = get_string(c, item, "source", path, &sm, &src)) < 0)
            return rc;
        if (src == NULL)
            return fail(c, item->line, sm.path,
                        "required: one of \"KubernetesMetrics\", \"Prometheus\"");
        if (strcmp(src, "KubernetesMetrics") == 0)
            mp->source = EBB_METRICS_KUBERNETES;
        else if (strcmp(src, "Prometheus") == 0)
            mp->source = EBB_METRICS_PROMETHEUS;
        else
            return fail(c, sm.line, sm.path, "unsupported metrics source \"%s\": expected "
                        "\"KubernetesMetrics\" or \"Prometheus\"", src);
        if (src_line[mp->source])
            return fail(c, sm.line, sm.path, "metrics provider \"%s\" is already configured at "
                        "line %d: each source can be configured only once", src,
                        src_line[mp->source]);
        src_line[mp->source] = sm.line;
        if (!member(item, "prometheus", path, &pm)) {
            if (mp->source == EBB_METRICS_PROMETHEUS)
                return fail(c, item->line, pm.path, "required when the source is Prometheus");
            continue;
        }
        if (mp->source != EBB_METRICS_PROMETHEUS) {
            if ((rc = warn(c, pm.line, pm.path, "only used with source \"Prometheus\", "
                           "ignored")) < 0)
                return rc;
            continue;
        }
        if ((rc = parse_prometheus(c, &pm, mp)) < 0)
            return rc;
    }
    return 0;
}

static int check_metrics(struct ctx *c, const struct ebb_val *root)
{
    const struct ebb_val *mc = ebb_val_get(root, "metricsCollector");

    if (!c->p->metrics_collector_enabled)
        return 0;
    for (size_t i = 0; i < c->p->nproviders; i++) {
        if (c->p->providers[i].source != EBB_METRICS_KUBERNETES)
            continue;
        return fail(c, ebb_val_key_line(mc, "enabled"), "metricsCollector.enabled",
                    "the deprecated metricsCollector cannot be combined with the "
                    "KubernetesMetrics provider of metricsProviders[%zu]: keep only the "
                    "provider", i);
    }
    return 0;
}

/* ---- profiles --------------------------------------------------------------- */

static const char *const profile_keys[] = {"name", "pluginConfig", "plugins", NULL};
static const char *const config_keys[] = {"name", "args", "limits", NULL};
static const char *const limits_keys[] = {"memory", "timeout", "quarantineAfter", NULL};

/* An ebb extension: limits for the plugin's sandboxes and its quarantine. */
static int parse_limits(struct ctx *c, const struct ebb_val *item, struct ebb_plugin_config *pc)
{
    struct member m, f;
    int64_t v;
    int rc;

    pc->limits = (struct ebb_plugin_limits){ 0, 0, -1 };
    if (!member(item, "limits", pc->path, &m))
        return 0;
    if (m.v->type != EBB_VAL_MAP)
        return type_error(c, m.line, m.path, "a map", m.v);
    if ((rc = check_keys(c, m.v, m.path, limits_keys)) < 0)
        return rc;
    if (member(m.v, "memory", m.path, &f)) {
        const char *s = f.v->type == EBB_VAL_STRING ? f.v->u.str.s : NULL;
        char num[32];
        if (f.v->type == EBB_VAL_INT) {
            snprintf(num, sizeof(num), "%lld", (long long)f.v->u.i);
            s = num;
        }
        if (s == NULL)
            return type_error(c, f.line, f.path, "a quantity such as 128Mi", f.v);
        if (ebb_quantity_parse(s, strlen(s), false, &v) != 0)
            return fail(c, f.line, f.path, "\"%s\" is not a quantity (e.g. 64Mi, 1Gi)", s);
        if (v < ((int64_t)1 << 20) || v > ((int64_t)16 << 30))
            return fail(c, f.line, f.path, "must be between 1Mi and 16Gi, got %s", s);
        pc->limits.memory = v;
    }
    if (member(m.v, "timeout", m.path, &f)) {
        if (f.v->type != EBB_VAL_STRING)
            return type_error(c, f.line, f.path, "a duration such as 10s", f.v);
        if (ebb_duration_parse(f.v->u.str.s, &v) != 0 || v <= 0)
            return fail(c, f.line, f.path, "\"%s\" is not a positive duration (e.g. 500ms, 10s, 2m)",
                        f.v->u.str.s);
        if (v < 1000000)
            return fail(c, f.line, f.path, "must be at least 1ms, got %s", f.v->u.str.s);
        pc->limits.timeout_ns = v;
    }
    if (member(m.v, "quarantineAfter", m.path, &f)) {
        if ((rc = get_integer(c, &f, "a non-negative integer", &v)) < 0)
            return rc;
        if (v < 0)
            return fail(c, f.line, f.path, "must not be negative, got %lld", (long long)v);
        pc->limits.quarantine_after = v;
    }
    return 0;
}
static const char *const set_keys[] = {"enabled", "disabled", NULL};
static const char *const plugins_keys[] = {
    "presort", "sort", "deschedule", "balance", "filter", "preevictionfilter",
    "preEvictionFilter", "evict", NULL,
};

static int parse_configs(struct ctx *c, const struct ebb_val *pv, struct ebb_profile *prof)
{
    struct member m;
    int rc;

    if (!member(pv, "pluginConfig", prof->path, &m))
        return 0;
    if (m.v->type != EBB_VAL_SEQ)
        return type_error(c, m.line, m.path, "a list", m.v);
    /* One spare slot: DefaultEvictor's entry may be prepended. */
    if ((prof->configs = calloc(m.v->u.seq.n + 1, sizeof(*prof->configs))) == NULL)
        return nomem(c);
    for (size_t i = 0; i < m.v->u.seq.n; i++) {
        const struct ebb_val *item = m.v->u.seq.items[i];
        struct ebb_plugin_config *pc = &prof->configs[i];
        struct member nm, am;
        const char *name;

        ebb__args_index(pc->path, sizeof(pc->path), m.path, i);
        pc->line = item->line;
        if (item->type != EBB_VAL_MAP)
            return type_error(c, item->line, pc->path, "a map", item);
        if ((rc = check_keys(c, item, pc->path, config_keys)) < 0)
            return rc;
        if ((rc = get_string(c, item, "name", pc->path, &nm, &name)) < 0)
            return rc;
        if (name == NULL || *name == '\0')
            return fail(c, name ? nm.line : item->line, nm.path,
                        "required: the name of the plugin these args are for");
        for (size_t j = 0; j < i; j++)
            if (strcmp(prof->configs[j].name, name) == 0)
                return fail(c, nm.line, nm.path, "a second pluginConfig entry for \"%s\" "
                            "(the first is %s at line %d): each plugin takes one entry",
                            name, prof->configs[j].path, prof->configs[j].line);
        if ((pc->name = strdup(name)) == NULL)
            return nomem(c);
        prof->nconfigs = i + 1;
        if ((rc = parse_limits(c, item, pc)) < 0)
            return rc;
        if (!member(item, "args", pc->path, &am))
            continue;
        if (am.v->type != EBB_VAL_MAP)
            return type_error(c, am.line, am.path, "a map", am.v);
        if ((pc->args = ebb_val_dup(am.v)) == NULL)
            return nomem(c);
    }
    return 0;
}

/* One plugin set. `ext` < 0: a set the schema has but nothing uses
 * (presort, sort): checked, then dropped. */
static int parse_set(struct ctx *c, const struct ebb_val *plugins, const char *key,
                     const char *base, int ext, struct ebb_profile *prof)
{
    struct ebb_plugin_set *set = ext >= 0 ? &prof->sets[ext] : NULL;
    struct member m, em, dm;
    int rc;

    if (!member(plugins, key, base, &m))
        return 0;
    if (m.v->type != EBB_VAL_MAP)
        return type_error(c, m.line, m.path, "a map", m.v);
    if ((rc = check_keys(c, m.v, m.path, set_keys)) < 0)
        return rc;
    if (member(m.v, "enabled", m.path, &em)) {
        if (em.v->type != EBB_VAL_SEQ)
            return type_error(c, em.line, em.path, "a list", em.v);
        if (set != NULL && em.v->u.seq.n > 0 &&
            (set->v = calloc(em.v->u.seq.n + 1, sizeof(*set->v))) == NULL)
            return nomem(c);
        for (size_t i = 0; i < em.v->u.seq.n; i++) {
            const struct ebb_val *item = em.v->u.seq.items[i];
            const char *name;
            char path[300];
            bool dup = false;

            ebb__args_index(path, sizeof(path), em.path, i);
            if (item->type != EBB_VAL_STRING)
                return type_error(c, item->line, path, "a string", item);
            name = item->u.str.s;
            if (set == NULL)
                continue;
            for (size_t j = 0; j < set->n && !dup; j++) {
                if (strcmp(set->v[j].name, name) != 0)
                    continue;
                dup = true;
                if ((rc = warn(c, item->line, path, "plugin \"%s\" is already enabled at line "
                               "%d, the repeat is ignored", name, set->v[j].line)) < 0)
                    return rc;
            }
            if (dup)
                continue;
            /* DefaultEvictor always gets an entry (see add_default_evictor). */
            if (strcmp(name, DEFAULT_EVICTOR) != 0 && ebb_profile_config(prof, name) == NULL) {
                /* a typo on either side: point at the entry it nearly matches */
                const char **cand = calloc(prof->nconfigs + 1, sizeof(*cand)), *near;
                size_t nc = 0;
                char hint[256] = "";
                if (cand == NULL)
                    return nomem(c);
                for (size_t k = 0; k < prof->nconfigs; k++)
                    cand[nc++] = prof->configs[k].name;
                near = ebb_nearest_name(name, cand, nc);
                free(cand);
                if (near != NULL)
                    snprintf(hint, sizeof(hint), "; did you mean \"%s\" (the pluginConfig entry at line "
                             "%d), or is that entry's name misspelled?", near,
                             ebb_profile_config(prof, near)->line);
                return fail(c, item->line, path, "unable to find \"%s\" plugin config: profile "
                            "\"%s\" enables it, so its pluginConfig needs an entry with name: "
                            "%s (args may be left out for the defaults)%s", name, prof->name,
                            name, hint);
            }
            if ((set->v[set->n].name = strdup(name)) == NULL)
                return nomem(c);
            set->v[set->n++].line = item->line;
        }
        if (set == NULL && em.v->u.seq.n > 0 &&
            (rc = warn(c, em.line, em.path, "no plugin implements the %s extension point, "
                       "ignored", key)) < 0)
            return rc;
    }
    if (member(m.v, "disabled", m.path, &dm)) {
        if (dm.v->type != EBB_VAL_SEQ)
            return type_error(c, dm.line, dm.path, "a list", dm.v);
        for (size_t i = 0; i < dm.v->u.seq.n; i++) {
            const struct ebb_val *item = dm.v->u.seq.items[i];
            char path[300];

            ebb__args_index(path, sizeof(path), dm.path, i);
            if (item->type != EBB_VAL_STRING)
                return type_error(c, item->line, path, "a string", item);
        }
        if (set != NULL)
            set->ndisabled = dm.v->u.seq.n;
    }
    return 0;
}

/* Koordinator's framework: "only one evict plugin can be enabled". Its
 * DefaultEvictor is an evict plugin that uses the Eviction API, which is
 * what a profile without one does here: listed alone, it is dropped. */
static int check_evict_set(struct ctx *c, const char *base, struct ebb_profile *prof)
{
    struct ebb_plugin_set *set = &prof->sets[EBB_EXT_EVICT];
    char path[300];

    if (set->n == 1 && strcmp(set->v[0].name, DEFAULT_EVICTOR) == 0) {
        free(set->v[0].name);
        set->n = 0;
    }
    if (set->n < 2)
        return 0;
    ebb__args_join(path, sizeof(path), base, "evict.enabled");
    return fail(c, set->v[1].line, path, "only one evict plugin can be enabled per profile: "
                "profile \"%s\" enables \"%s\" (line %d) and \"%s\" (line %d)", prof->name,
                set->v[0].name, set->v[0].line, set->v[1].name, set->v[1].line);
}

static int parse_plugins(struct ctx *c, const struct ebb_val *pv, struct ebb_profile *prof)
{
    struct member m;
    const char *pef;
    int rc;

    if (!member(pv, "plugins", prof->path, &m))
        return 0;
    if (m.v->type != EBB_VAL_MAP)
        return type_error(c, m.line, m.path, "a map", m.v);
    if ((rc = check_keys(c, m.v, m.path, plugins_keys)) < 0)
        return rc;
    pef = "preevictionfilter";
    if (ebb_val_get(m.v, "preEvictionFilter") != NULL) {
        int l1 = ebb_val_key_line(m.v, "preevictionfilter");
        int l2 = ebb_val_key_line(m.v, "preEvictionFilter");
        char path[300];

        if (l1 > 0) {
            ebb__args_join(path, sizeof(path), m.path, l1 > l2 ? "preevictionfilter" : "preEvictionFilter");
            return fail(c, l1 > l2 ? l1 : l2, path, "both \"preevictionfilter\" and its alias "
                        "\"preEvictionFilter\" are set (lines %d and %d): keep one",
                        l1 < l2 ? l1 : l2, l1 > l2 ? l1 : l2);
        }
        pef = "preEvictionFilter";
    }
    if ((rc = parse_set(c, m.v, "presort", m.path, -1, prof)) < 0 ||
        (rc = parse_set(c, m.v, "sort", m.path, -1, prof)) < 0 ||
        (rc = parse_set(c, m.v, "deschedule", m.path, EBB_EXT_DESCHEDULE, prof)) < 0 ||
        (rc = parse_set(c, m.v, "balance", m.path, EBB_EXT_BALANCE, prof)) < 0 ||
        (rc = parse_set(c, m.v, "filter", m.path, EBB_EXT_FILTER, prof)) < 0 ||
        (rc = parse_set(c, m.v, pef, m.path, EBB_EXT_PREEVICTIONFILTER, prof)) < 0 ||
        (rc = parse_set(c, m.v, "evict", m.path, EBB_EXT_EVICT, prof)) < 0)
        return rc;
    return check_evict_set(c, m.path, prof);
}

static bool set_has(const struct ebb_plugin_set *set, const char *name)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->v[i].name, name) == 0)
            return true;
    return false;
}

/* As upstream's setDefaultEvictor: DefaultEvictor first in filter and
 * preevictionfilter unless listed, and an entry without args unless given. */
static int add_default_evictor(struct ctx *c, struct ebb_profile *prof)
{
    static const int exts[] = {EBB_EXT_FILTER, EBB_EXT_PREEVICTIONFILTER};

    for (size_t k = 0; k < EBB_ARRAY_LEN(exts); k++) {
        struct ebb_plugin_set *set = &prof->sets[exts[k]];
        struct ebb_plugin_ref *nv;
        char *name;

        if (set_has(set, DEFAULT_EVICTOR))
            continue;
        if ((name = strdup(DEFAULT_EVICTOR)) == NULL)
            return nomem(c);
        if ((nv = realloc(set->v, (set->n + 1) * sizeof(*nv))) == NULL) {
            free(name);
            return nomem(c);
        }
        memmove(nv + 1, nv, set->n * sizeof(*nv));
        nv[0].name = name;
        nv[0].line = prof->line;
        set->v = nv;
        set->n++;
    }
    if (ebb_profile_config(prof, DEFAULT_EVICTOR) != NULL)
        return 0;
    if (prof->configs == NULL && (prof->configs = calloc(1, sizeof(*prof->configs))) == NULL)
        return nomem(c);
    /* parse_configs left a spare slot at the end. */
    memmove(prof->configs + 1, prof->configs, prof->nconfigs * sizeof(*prof->configs));
    memset(&prof->configs[0], 0, sizeof(prof->configs[0]));
    prof->nconfigs++;
    prof->configs[0].line = prof->line;
    prof->configs[0].limits = (struct ebb_plugin_limits){ 0, 0, -1 };
    memcpy(prof->configs[0].path, prof->path, sizeof(prof->path));
    if ((prof->configs[0].name = strdup(DEFAULT_EVICTOR)) == NULL)
        return nomem(c);
    return 0;
}

static int parse_profile(struct ctx *c, const struct ebb_val *pv, size_t i)
{
    struct ebb_profile *prof = &c->p->profiles[i];
    struct member m;
    const char *name;
    int rc;

    ebb__args_index(prof->path, sizeof(prof->path), "profiles", i);
    prof->line = pv->line;
    if (pv->type != EBB_VAL_MAP)
        return type_error(c, pv->line, prof->path, "a map", pv);
    if ((rc = check_keys(c, pv, prof->path, profile_keys)) < 0)
        return rc;
    if ((rc = get_string(c, pv, "name", prof->path, &m, &name)) < 0)
        return rc;
    if (name == NULL || *name == '\0')
        return fail(c, name ? m.line : pv->line, m.path, "required: every profile needs a name");
    for (size_t j = 0; j < i; j++)
        if (strcmp(c->p->profiles[j].name, name) == 0)
            return fail(c, m.line, m.path, "duplicate profile name \"%s\" (also the name of "
                        "profiles[%zu] at line %d)", name, j, c->p->profiles[j].line);
    if ((prof->name = strdup(name)) == NULL)
        return nomem(c);
    if ((rc = parse_configs(c, pv, prof)) < 0 || (rc = parse_plugins(c, pv, prof)) < 0)
        return rc;
    return add_default_evictor(c, prof);
}

static int parse_profiles(struct ctx *c, const struct ebb_val *root)
{
    struct member m;
    int rc;

    if (!member(root, "profiles", "", &m))
        return 0;
    if (m.v->type != EBB_VAL_SEQ)
        return type_error(c, m.line, m.path, "a list", m.v);
    if (m.v->u.seq.n == 0)
        return 0;
    if ((c->p->profiles = calloc(m.v->u.seq.n, sizeof(*c->p->profiles))) == NULL)
        return nomem(c);
    for (size_t i = 0; i < m.v->u.seq.n; i++) {
        c->p->nprofiles = i + 1;
        if ((rc = parse_profile(c, m.v->u.seq.items[i], i)) < 0)
            return rc;
    }
    return 0;
}

/* ---- entry points ----------------------------------------------------------- */

static int parse_root(struct ctx *c, const struct ebb_val *root)
{
    struct ebb_policy *p = c->p;
    int rc;

    if (root->type == EBB_VAL_NULL)
        return fail(c, 0, NULL, "the policy is empty: expected a " KIND " with apiVersion \""
                    API_VERSION "\"");
    if (root->type != EBB_VAL_MAP)
        return fail(c, root->line, NULL, "expected a " KIND " map at the top of the file, got %s",
                    ebb__val_a(root));
    if ((rc = check_type_meta(c, root)) < 0 || (rc = check_keys(c, root, "", top_keys)) < 0 ||
        (rc = parse_node_selector(c, root)) < 0 ||
        (rc = get_count(c, root, "maxNoOfPodsToEvictPerNode", &p->max_per_node)) < 0 ||
        (rc = get_count(c, root, "maxNoOfPodsToEvictPerNamespace", &p->max_per_namespace)) < 0 ||
        (rc = get_count(c, root, "maxNoOfPodsToEvictTotal", &p->max_total)) < 0 ||
        (rc = get_bool(c, root, "evictionFailureEventNotification", "",
                       &p->eviction_failure_events)) < 0 ||
        (rc = parse_grace_period(c, root)) < 0 || (rc = parse_metrics_collector(c, root)) < 0 ||
        (rc = parse_metrics_providers(c, root)) < 0 || (rc = check_metrics(c, root)) < 0 ||
        (rc = parse_profiles(c, root)) < 0)
        return rc;
    return 0;
}

static int v1alpha1_warn(void *ud, int line, const char *field, const char *msg)
{
    return warn(ud, line, field, "%s", msg);
}

/* Takes `root` in every case. */
static int policy_from_root(struct ebb_val *root, const char *file, struct ebb_policy **out,
                            struct ebb_error *err)
{
    struct ctx c = {0};
    struct ebb_policy *p;
    int rc;

    if ((p = calloc(1, sizeof(*p))) == NULL) {
        ebb_val_free(root);
        return ebb_error_set(err, EBB_ENOMEM, file, 0, NULL, "out of memory");
    }
    p->root = root;
    p->max_per_node = p->max_per_namespace = p->max_total = EBB_UNLIMITED;
    c.file = file;
    c.p = p;
    c.err = err;
    if ((p->file = strdup(file ? file : "")) == NULL) {
        rc = nomem(&c);
        goto fail;
    }
    /* Every policy text reaches this point (ebb run's load and reloads,
     * simulate, check, the Lua module, ebb convert's check): a v1alpha1
     * document is converted here and nowhere else, so it means the same
     * everywhere, and what is read below is always v1alpha2. */
    if (ebb_v1alpha1_is(root)) {
        struct ebb_val *conv;
        if ((rc = ebb_v1alpha1_convert(root, file, v1alpha1_warn, &c, &conv, err)) < 0)
            goto fail;
        if ((rc = warn(&c, ebb_val_key_line(root, "apiVersion"), "apiVersion",
                       "descheduler/v1alpha1 is deprecated (removed upstream in v0.31.0): "
                       "converted to " API_VERSION " as upstream v0.30 did; `ebb convert %s` "
                       "prints the converted policy", file ? file : "FILE")) < 0) {
            ebb_val_free(conv);
            goto fail;
        }
        /* The converted tree keeps the v1alpha1 lines: errors below still
         * name the user's lines. */
        ebb_val_free(p->root);
        p->root = root = conv;
    }
    if ((rc = parse_root(&c, root)) < 0)
        goto fail;
    *out = p;
    return 0;
fail:
    ebb_policy_free(p);
    return rc;
}

int ebb_policy_parse(const char *buf, size_t len, const char *file, struct ebb_policy **out,
                     struct ebb_error *err)
{
    struct ebb_val **docs, *root;
    size_t n;
    int rc;

    if (buf == NULL || out == NULL)
        return EBB_EINVAL;
    ebb_error_clear(err);
    if ((rc = ebb_val_parse_all(buf, len, file, &docs, &n, err)) < 0)
        return rc;
    /* One DeschedulerPolicy a file: a second document would be dropped
     * unseen (the descheduler reads only the first). Empty documents (a
     * trailing "---") do not count. */
    root = NULL;
    for (size_t i = 0; i < n; i++) {
        if (docs[i] == NULL || docs[i]->type == EBB_VAL_NULL) {
            ebb_val_free(docs[i]);
        } else if (root == NULL) {
            root = docs[i];
        } else if (rc == 0) {
            rc = ebb_error_set(err, EBB_ESCHEMA, file, docs[i]->line, NULL,
                               "a second YAML document: a policy file holds one DeschedulerPolicy");
            ebb_val_free(docs[i]);
        } else {
            ebb_val_free(docs[i]);
        }
    }
    free(docs);
    if (rc != 0) {
        ebb_val_free(root);
        return rc;
    }
    if (root == NULL && (rc = ebb_val_parse(buf, len, file, &root, err)) < 0)
        return rc;   /* no document: what ebb_val_parse makes of that */
    return policy_from_root(root, file, out, err);
}

int ebb_policy_load(const char *path, struct ebb_policy **out, struct ebb_error *err)
{
    char *buf;
    size_t len;
    int rc;

    if (path == NULL || out == NULL)
        return EBB_EINVAL;
    ebb_error_clear(err);
    if ((rc = ebb_file_read(path, EBB_MAX_YAML, &buf, &len, err)) != 0)
        return rc;
    rc = ebb_policy_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

static void set_clear(struct ebb_plugin_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        free(set->v[i].name);
    free(set->v);
}

void ebb_policy_free(struct ebb_policy *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->nprofiles; i++) {
        struct ebb_profile *prof = &p->profiles[i];
        for (size_t j = 0; j < prof->nconfigs; j++) {
            free(prof->configs[j].name);
            ebb_val_free(prof->configs[j].args);
        }
        free(prof->configs);
        for (int k = 0; k < EBB_EXT_MAX; k++)
            set_clear(&prof->sets[k]);
        free(prof->name);
    }
    free(p->profiles);
    for (size_t i = 0; i < p->nproviders; i++) {
        free(p->providers[i].prometheus_url);
        free(p->providers[i].secret_namespace);
        free(p->providers[i].secret_name);
    }
    free(p->providers);
    for (size_t i = 0; i < p->nwarnings; i++)
        free(p->warnings[i]);
    free(p->warnings);
    free(p->node_selector);
    ebb_val_free(p->root);
    free(p->file);
    free(p);
}

const struct ebb_plugin_config *ebb_profile_config(const struct ebb_profile *profile,
                                                   const char *name)
{
    if (profile == NULL || name == NULL)
        return NULL;
    for (size_t i = 0; i < profile->nconfigs; i++)
        if (profile->configs[i].name != NULL && strcmp(profile->configs[i].name, name) == 0)
            return &profile->configs[i];
    return NULL;
}

const struct ebb_metrics_provider *ebb_prom_provider(const struct ebb_policy *p)
{
    for (size_t i = 0; p != NULL && i < p->nproviders; i++)
        if (p->providers[i].source == EBB_METRICS_PROMETHEUS)
            return &p->providers[i];
    return NULL;
}
