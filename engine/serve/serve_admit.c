/* serve_admit.c: what the API server does to an object between a write
 * request and the store, where clients notice it. The admission plugins
 * of a cluster (NamespaceLifecycle, Priority, DefaultTolerationSeconds),
 * the defaults of pods and namespaces (pkg/apis/core/v1/defaults.go), the
 * validation of names and of a pod's containers, and each kind's strategy:
 * the status a create starts from, what an update of the object or of its
 * status subresource may change, metadata.generation.
 *
 * Called on the loop thread by the write handlers (serve_write.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/quantity.h"
#include "serve/serve_int.h"

static void go_quote(struct sb *b, const char *s);

/* ---- 422 Invalid ------------------------------------------------------------------------ */

void ebb__invalid_add(struct invalid *iv, const char *reason, const char *field,
                      const char *detail)
{
    cJSON *c;

    if (iv->causes == NULL)
        iv->causes = cJSON_CreateArray();
    c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "reason", reason);
    cJSON_AddStringToObject(c, "message", detail);
    cJSON_AddStringToObject(c, "field", field);
    cJSON_AddItemToArray(iv->causes, c);
    ebb__sb_printf(&iv->text, "%s%s: %s", iv->n++ ? ", " : "", field, detail);
}

bool ebb__invalid_reply(struct ebb_http_req *r, const struct rdef *d, const char *name,
                        struct invalid *iv)
{
    struct sb msg = { 0 };
    cJSON *det;

    if (iv->n == 0) {
        free(iv->text.p);
        return false;
    }
    /* "%s %q is invalid: %v", the kind qualified by its group; an
     * events.k8s.io Event is validated as the core Event it is stored as */
    const char *group = d == &ebb__rdefs[R_EVENTS_V1] ? "" : d->group;

    ebb__sb_printf(&msg, "%s%s%s ", d->kind, group[0] ? "." : "", group);
    go_quote(&msg, name ? name : "");
    ebb__sb_printf(&msg, " is invalid: %s", iv->n > 1 ? "[" : "");
    ebb__sb_add(&msg, iv->text.p ? iv->text.p : "", iv->text.n);
    ebb__sb_puts(&msg, iv->n > 1 ? "]" : "");
    det = cJSON_CreateObject();
    if (name != NULL && name[0] != '\0')
        cJSON_AddStringToObject(det, "name", name);
    if (group[0] != '\0')
        cJSON_AddStringToObject(det, "group", group);
    cJSON_AddStringToObject(det, "kind", d->kind);
    cJSON_AddItemToObject(det, "causes", iv->causes);
    if (msg.oom) {
        cJSON_Delete(det);
        ebb__reply_internal(r, "out of memory");
    } else {
        ebb__reply_status(r, 422, "Invalid", msg.p, det);
    }
    free(msg.p);
    free(iv->text.p);
    memset(iv, 0, sizeof(*iv));
    return true;
}

/* 403: an admission plugin said no. */
static void reply_forbidden(struct ebb_http_req *r, const struct rdef *d, const char *name,
                            const char *why, cJSON *causes)
{
    char q[128], msg[1024];
    cJSON *det = ebb__reply_details(d, name);

    ebb__rdef_qualified(d, q, sizeof(q));
    snprintf(msg, sizeof(msg), "%s \"%s\" is forbidden: %s", q, name, why);
    if (causes != NULL)
        cJSON_AddItemToObject(det, "causes", causes);
    ebb__reply_status(r, 403, "Forbidden", msg, det);
}

/* ---- metadata ---------------------------------------------------------------------------
 *
 * ObjectMeta as kube-apiserver takes it, at one place for every kind and
 * every write (create, update, patch, the status subresource):
 *
 *   ebb__meta_decode   the JSON types its decoder refuses (a label that is a
 *                      number: 400, or 422 for a patch's result), nulls
 *                      read as Go reads them (a label null is "");
 *   check_meta         what ValidateObjectMeta refuses, in its order and
 *                      words: generateName, name, labels (qualified-name
 *                      keys, values of at most 63 bytes), annotations
 *                      (lowercased qualified-name keys, 256 KiB in all),
 *                      owner references, finalizers.
 *
 * Invariant: nothing reaches the store through a write handler with
 * metadata kube-apiserver would have refused. Values in messages are
 * quoted as Go's %q quotes them. */

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum_any_case(char c)
{
    return alnum(c) || (c >= 'A' && c <= 'Z');
}

/* Go's strconv.Quote: printable runes as they are, the rest escaped. */
static void go_quote(struct sb *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;

    ebb__sb_add(b, "\"", 1);
    while (*p) {
        unsigned c = *p;
        char esc[16];
        if (c < 0x80) {
            const char *e = NULL;
            switch (c) {
            case '"': e = "\\\""; break;
            case '\\': e = "\\\\"; break;
            case '\a': e = "\\a"; break;
            case '\b': e = "\\b"; break;
            case '\f': e = "\\f"; break;
            case '\n': e = "\\n"; break;
            case '\r': e = "\\r"; break;
            case '\t': e = "\\t"; break;
            case '\v': e = "\\v"; break;
            default: break;
            }
            if (e != NULL) {
                ebb__sb_puts(b, e);
            } else if (c < 0x20 || c == 0x7f) {
                esc[0] = '\\', esc[1] = 'x', esc[2] = hex[c >> 4], esc[3] = hex[c & 15];
                ebb__sb_add(b, esc, 4);
            } else {
                ebb__sb_add(b, (const char *)p, 1);
            }
            p++;
            continue;
        }
        {
            /* a UTF-8 sequence: kept when valid and printable */
            int n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
            uint32_t r = n == 4 ? c & 7 : n == 3 ? c & 15 : c & 31;
            bool ok = n > 0 && c < 0xf5;
            for (int i = 1; ok && i < n; i++) {
                if ((p[i] & 0xc0) != 0x80)
                    ok = false;
                else
                    r = r << 6 | (p[i] & 0x3f);
            }
            ok = ok && !(n == 3 && r < 0x800) && !(n == 4 && (r < 0x10000 || r > 0x10ffff)) &&
                 !(r >= 0xd800 && r <= 0xdfff);
            if (!ok) {
                esc[0] = '\\', esc[1] = 'x', esc[2] = hex[c >> 4], esc[3] = hex[c & 15];
                ebb__sb_add(b, esc, 4);
                p++;
                continue;
            }
            /* what unicode.IsPrint leaves out, near enough: C1 controls,
             * spaces other than ' ', format characters */
            if (r <= 0xa0 || r == 0xad || (r >= 0x2000 && r <= 0x200f) ||
                (r >= 0x2028 && r <= 0x202f) || (r >= 0x205f && r <= 0x206f) || r == 0x3000 ||
                r == 0xfeff || (r >= 0xfff9 && r <= 0xfffb) || r == 0x1680 || r == 0x180e) {
                int k = r > 0xffff ? snprintf(esc, sizeof(esc), "\\U%08x", (unsigned)r)
                                   : snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)r);
                ebb__sb_add(b, esc, (size_t)k);
            } else {
                ebb__sb_add(b, (const char *)p, (size_t)n);
            }
            p += n;
        }
    }
    ebb__sb_add(b, "\"", 1);
}

/* A cause "Invalid value: %q: why" for `field`. */
static void add_invalid(struct invalid *iv, const char *field, const char *value, const char *why)
{
    struct sb d = { 0 };

    ebb__sb_puts(&d, "Invalid value: ");
    go_quote(&d, value);
    ebb__sb_puts(&d, ": ");
    ebb__sb_puts(&d, why);
    if (!d.oom)
        ebb__invalid_add(iv, "FieldValueInvalid", field, d.p);
    free(d.p);
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?, the length aside */
static bool dns_label_re(const char *s, size_t n)
{
    if (n == 0 || !alnum(s[0]) || !alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

/* labels joined by '.', the length aside */
static bool dns_subdomain_re(const char *s, size_t n)
{
    size_t i = 0;

    if (n == 0)
        return false;
    while (i <= n) {
        size_t k = 0;
        while (i + k < n && s[i + k] != '.')
            k++;
        if (!dns_label_re(s + i, k))
            return false;
        i += k + 1;
    }
    return true;
}

bool ebb__dns_label(const char *s)
{
    size_t n = strlen(s);
    return n <= 63 && dns_label_re(s, n);
}

static const char LABEL_MSG[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
static const char SUBDOMAIN_MSG[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
static const char QNAME_MSG[] =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
static const char LABEL_VALUE_MSG[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/* A name (prefix: a generateName, its trailing '-' masked) of kind `res`:
 * a DNS label for namespaces, a DNS subdomain for the rest. */
static void check_name_value(struct invalid *iv, int res, const char *field, const char *name,
                             bool prefix)
{
    size_t n = strlen(name), max = res == R_NAMESPACES ? 63 : 253;
    char *masked = strdup(name), msg[64];
    bool ok;

    if (masked == NULL)
        return;
    if (prefix && n > 0 && masked[n - 1] == '-')
        masked[n - 1] = 'a';
    ok = res == R_NAMESPACES ? dns_label_re(masked, n) : dns_subdomain_re(masked, n);
    if (n > max) {
        snprintf(msg, sizeof(msg), "must be no more than %zu characters", max);
        add_invalid(iv, field, name, msg);
    }
    if (!ok && res == R_NAMESPACES && dns_subdomain_re(masked, n))
        add_invalid(iv, field, name, "must not contain dots");   /* a subdomain, not a label */
    else if (!ok)
        add_invalid(iv, field, name, res == R_NAMESPACES ? LABEL_MSG : SUBDOMAIN_MSG);
    free(masked);
}

/* IsQualifiedName as labels, annotations and finalizers are checked:
 * [DNS-subdomain prefix '/'] name of 1 to 63 of [A-Za-z0-9-_.], starting
 * and ending alphanumeric. */
static void check_qualified(struct invalid *iv, const char *field, const char *shown,
                            const char *key)
{
    const char *slash = strchr(key, '/'), *name = key;
    char msg[1200];
    size_t nn;
    bool ok = true;

    if (slash != NULL && strchr(slash + 1, '/') != NULL) {
        snprintf(msg, sizeof(msg), "a valid label key %s with an optional DNS subdomain prefix "
                                   "and '/' (e.g. 'example.com/MyName')", QNAME_MSG);
        add_invalid(iv, field, shown, msg);
        return;
    }
    if (slash != NULL) {
        size_t pn = (size_t)(slash - key);
        name = slash + 1;
        if (pn == 0)
            add_invalid(iv, field, shown, "prefix part must be non-empty");
        else {
            if (pn > 253)
                add_invalid(iv, field, shown, "prefix part must be no more than 253 bytes");
            if (!dns_subdomain_re(key, pn)) {
                snprintf(msg, sizeof(msg), "prefix part %s", SUBDOMAIN_MSG);
                add_invalid(iv, field, shown, msg);
            }
        }
    }
    nn = strlen(name);
    if (nn == 0)
        add_invalid(iv, field, shown, "name part must be non-empty");
    else if (nn > 63)
        add_invalid(iv, field, shown, "name part must be no more than 63 bytes");
    ok = nn > 0 && alnum_any_case(name[0]) && alnum_any_case(name[nn - 1]);
    for (size_t i = 0; ok && i < nn; i++)
        ok = alnum_any_case(name[i]) || name[i] == '-' || name[i] == '_' || name[i] == '.';
    if (!ok) {
        snprintf(msg, sizeof(msg), "name part %s", QNAME_MSG);
        add_invalid(iv, field, shown, msg);
    }
}

static void check_label_value(struct invalid *iv, const char *v)
{
    size_t n = strlen(v);
    bool ok = n == 0 || (alnum_any_case(v[0]) && alnum_any_case(v[n - 1]));

    for (size_t i = 0; ok && i < n; i++)
        ok = alnum_any_case(v[i]) || v[i] == '-' || v[i] == '_' || v[i] == '.';
    if (n > 63)
        add_invalid(iv, "metadata.labels", v, "must be no more than 63 bytes");
    if (!ok)
        add_invalid(iv, "metadata.labels", v, LABEL_VALUE_MSG);
}

/* kubernetes.io/... or a standard one: what ValidateObjectMeta of the
 * built-in kinds asks of a finalizer without a '/'. */
static bool standard_finalizer(const char *f)
{
    return strcmp(f, "kubernetes") == 0 || strcmp(f, "orphan") == 0 ||
           strcmp(f, "foregroundDeletion") == 0;
}

#define ANNOTATIONS_MAX (256u << 10)   /* TotalAnnotationSizeLimitB */

/* ValidateObjectMeta of `meta` (decoded: ebb__meta_decode), in its order.
 * `create`: the name is checked too (an update's is the stored one). */
static void check_meta(struct invalid *iv, int res, const cJSON *meta, bool create)
{
    const char *name = ebb__json_str(meta, "name"), *gen = ebb__json_str(meta, "generateName");
    const cJSON *m, *f;
    size_t total = 0;
    int i;

    /* core/v1 Events: kube-apiserver checks no name but that there is one
     * ("Db_0.x" is taken); events.k8s.io's it does */
    bool names = res != R_EVENTS;

    if (names && gen != NULL && gen[0] != '\0')
        check_name_value(iv, res, "metadata.generateName", gen, true);
    if (create) {
        if (name == NULL || name[0] == '\0')
            ebb__invalid_add(iv, "FieldValueRequired", "metadata.name",
                             "Required value: name or generateName is required");
        else if (names)
            check_name_value(iv, res, "metadata.name", name, false);
    }
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(meta, "labels")) {
        check_qualified(iv, "metadata.labels", m->string, m->string);
        if (cJSON_IsString(m))
            check_label_value(iv, m->valuestring);
    }
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(meta, "annotations")) {
        /* keys are qualified names but for case */
        char *lower = strdup(m->string);
        if (lower == NULL)
            continue;
        for (char *p = lower; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        check_qualified(iv, "metadata.annotations", m->string, lower);
        free(lower);
        total += strlen(m->string) + (cJSON_IsString(m) ? strlen(m->valuestring) : 0);
    }
    if (total > ANNOTATIONS_MAX)
        ebb__invalid_add(iv, "FieldValueTooLong", "metadata.annotations",
                         "Too long: may not be more than 262144 bytes");
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences")) {
        const char *av = ebb__json_str(m, "apiVersion"), *kind = ebb__json_str(m, "kind");
        const char *on = ebb__json_str(m, "name"), *uid = ebb__json_str(m, "uid");
        const char *slash;
        av = av ? av : "";
        /* schema.ParseGroupVersion: "v1" or "group/v1"; more slashes: none */
        slash = strchr(av, '/');
        if (av[0] == '\0' || (slash != NULL && (slash[1] == '\0' || strchr(slash + 1, '/'))))
            add_invalid(iv, "metadata.ownerReferences.apiVersion", av, "version must not be empty");
        if (kind == NULL || kind[0] == '\0')
            add_invalid(iv, "metadata.ownerReferences.kind", kind ? kind : "", "must not be empty");
        if (on == NULL || on[0] == '\0')
            add_invalid(iv, "metadata.ownerReferences.name", on ? on : "", "must not be empty");
        if (uid == NULL || uid[0] == '\0')
            add_invalid(iv, "metadata.ownerReferences.uid", uid ? uid : "", "must not be empty");
    }
    /* every finalizer a qualified name, then each built-in kind's own rule */
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(meta, "finalizers"))
        if (cJSON_IsString(f))
            check_qualified(iv, "metadata.finalizers", f->valuestring, f->valuestring);
    i = 0;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(meta, "finalizers")) {
        char field[48];
        if (cJSON_IsString(f) && res != R_POD_MIGRATION_JOBS && strchr(f->valuestring, '/') == NULL &&
            !standard_finalizer(f->valuestring)) {
            snprintf(field, sizeof(field), "metadata.finalizers[%d]", i);
            add_invalid(iv, field, f->valuestring,
                        "name is neither a standard finalizer name nor is it fully qualified");
        }
        i++;
    }
}

/* How Go's decoder names a JSON value's type. */
static const char *json_kind(const cJSON *j)
{
    if (cJSON_IsNumber(j))
        return "number";
    if (cJSON_IsString(j))
        return "string";
    if (cJSON_IsBool(j))
        return "bool";
    if (cJSON_IsArray(j))
        return "array";
    if (cJSON_IsObject(j))
        return "object";
    return "null";
}

/* The first metadata value of `obj` the decoder refuses, in document
 * order, into `msg` ("json: cannot unmarshal ..."); nulls made what Go
 * reads them as. false: none. */
static bool meta_type_error(const struct rdef *d, cJSON *obj, char *msg, size_t len)
{
    static const char *const strings[] = { "name", "generateName", "namespace", "selfLink", "uid",
                                           "resourceVersion" };
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata"), *m, *next;

#define BAD(kind, field, type)                                                                   \
    do {                                                                                         \
        snprintf(msg, len, "json: cannot unmarshal %s into Go struct field %s of type %s", kind, \
                 field, type);                                                                   \
        return true;                                                                             \
    } while (0)

    if (meta == NULL || cJSON_IsNull(meta))
        return false;
    if (!cJSON_IsObject(meta)) {
        char field[80];
        snprintf(field, sizeof(field), "%s.metadata", d->kind);
        BAD(json_kind(meta), field, "v1.ObjectMeta");
    }
    for (m = meta->child; m != NULL; m = next) {
        char field[300];
        next = m->next;
        snprintf(field, sizeof(field), "ObjectMeta.metadata.%.200s", m->string);
        for (size_t i = 0; i < EBB_ARRAY_LEN(strings); i++)
            if (strcmp(m->string, strings[i]) == 0 && !cJSON_IsString(m) && !cJSON_IsNull(m))
                BAD(json_kind(m), field, "string");
        if (strcmp(m->string, "labels") == 0 || strcmp(m->string, "annotations") == 0) {
            cJSON *v;
            if (cJSON_IsNull(m)) {
                cJSON_DeleteItemFromObjectCaseSensitive(meta, m->string);
                continue;
            }
            if (!cJSON_IsObject(m))
                BAD(json_kind(m), field, "map[string]string");
            cJSON *vnext;
            for (v = m->child; v != NULL; v = vnext) {
                vnext = v->next;
                if (cJSON_IsNull(v)) {
                    /* a null value reads as "" (the key copied: v goes) */
                    cJSON *empty = cJSON_CreateString("");
                    if (empty != NULL && !cJSON_ReplaceItemInObjectCaseSensitive(m, v->string, empty))
                        cJSON_Delete(empty);
                } else if (!cJSON_IsString(v)) {
                    BAD(json_kind(v), field, "string");
                }
            }
        } else if (strcmp(m->string, "finalizers") == 0) {
            const cJSON *v;
            if (cJSON_IsNull(m))
                continue;
            if (!cJSON_IsArray(m))
                BAD(json_kind(m), field, "[]string");
            cJSON_ArrayForEach(v, m)
                if (!cJSON_IsString(v) && !cJSON_IsNull(v))
                    BAD(json_kind(v), field, "string");
        }
    }
    return false;
#undef BAD
}

bool ebb__meta_decode(struct ebb_http_req *r, const struct rdef *d, cJSON *obj, bool patch)
{
    char why[600];

    if (!meta_type_error(d, obj, why, sizeof(why)))
        return true;
    if (!patch) {
        char msg[900];
        snprintf(msg, sizeof(msg), "%s in version \"%s\" cannot be handled as a %s: %s", d->kind,
                 d->version, d->kind, why);
        ebb__reply_bad_request(r, msg);
    } else {
        /* the patched object is decoded after the patch: 422 on "patch",
         * the object in the words */
        struct sb val = { 0 }, msg = { 0 };
        char *text = cJSON_PrintUnformatted(obj);
        cJSON *det, *causes, *c;
        go_quote(&val, text ? text : "");
        free(text);
        ebb__sb_puts(&val, ": ");
        ebb__sb_puts(&val, why);
        ebb__sb_puts(&msg, " \"\" is invalid: patch: Invalid value: ");
        ebb__sb_add(&msg, val.p ? val.p : "", val.n);
        det = cJSON_CreateObject();
        causes = cJSON_AddArrayToObject(det, "causes");
        c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "reason", "FieldValueInvalid");
        {
            struct sb cm = { 0 };
            ebb__sb_puts(&cm, "Invalid value: ");
            ebb__sb_add(&cm, val.p ? val.p : "", val.n);
            cJSON_AddStringToObject(c, "message", cm.p ? cm.p : "");
            free(cm.p);
        }
        cJSON_AddStringToObject(c, "field", "patch");
        cJSON_AddItemToArray(causes, c);
        if (val.oom || msg.oom)
            ebb__reply_internal(r, "out of memory");
        else
            ebb__reply_status(r, 422, "Invalid", msg.p, det);
        if (val.oom || msg.oom)
            cJSON_Delete(det);
        free(val.p);
        free(msg.p);
    }
    return false;
}

/* ---- pods ---------------------------------------------------------------------------------- */

static void default_str(cJSON *obj, const char *key, const char *value)
{
    const char *v = ebb__json_str(obj, key);

    if (v == NULL || v[0] == '\0')
        ebb__json_set_str(obj, key, value);
}

/* Always for ":latest" or no tag, IfNotPresent otherwise (a digest too). */
static const char *pull_policy(const char *image)
{
    const char *slash = strrchr(image, '/'), *name = slash ? slash + 1 : image;
    const char *colon = strchr(name, ':');

    if (strchr(image, '@') != NULL)
        return "IfNotPresent";
    return colon == NULL || strcmp(colon + 1, "latest") == 0 ? "Always" : "IfNotPresent";
}

static void default_container(cJSON *c)
{
    const char *image = ebb__json_str(c, "image");
    cJSON *res = ebb__json_child(c, "resources"), *limits, *requests, *l, *p;

    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    if (image != NULL)
        default_str(c, "imagePullPolicy", pull_policy(image));
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(c, "ports"))
        default_str(p, "protocol", "TCP");
    /* a limit without a request: the request is the limit */
    limits = cJSON_GetObjectItemCaseSensitive(res, "limits");
    if (cJSON_IsObject(limits) && cJSON_GetArraySize(limits) > 0) {
        requests = ebb__json_child(res, "requests");
        cJSON_ArrayForEach(l, limits)
            if (cJSON_GetObjectItemCaseSensitive(requests, l->string) == NULL)
                cJSON_AddItemToObject(requests, l->string, cJSON_Duplicate(l, true));
    }
}

/* v1qos.GetPodQOS over cpu and memory. */
static const char *qos_class(const cJSON *spec)
{
    static const char *const lists[] = { "containers", "initContainers" };
    int64_t req[2] = { 0, 0 }, lim[2] = { 0, 0 };
    bool any_req = false, any_lim = false, guaranteed = true;

    for (size_t k = 0; k < EBB_ARRAY_LEN(lists); k++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, lists[k])) {
            const cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
            int found = 0;
            for (int r = 0; r < 2; r++) {
                const char *name = r == 0 ? "cpu" : "memory";
                const char *rq = ebb__json_str(cJSON_GetObjectItemCaseSensitive(res, "requests"),
                                               name);
                const char *lm = ebb__json_str(cJSON_GetObjectItemCaseSensitive(res, "limits"),
                                               name);
                int64_t v;
                if (rq != NULL && ebb_quantity_parse_resource(name, rq, &v) == 0 && v > 0) {
                    req[r] = ebb_q_add(req[r], v);   /* sums of quantities saturate */
                    any_req = true;
                }
                if (lm != NULL && ebb_quantity_parse_resource(name, lm, &v) == 0 && v > 0) {
                    lim[r] = ebb_q_add(lim[r], v);
                    any_lim = true;
                    found++;
                }
            }
            if (found < 2)
                guaranteed = false;
        }
    }
    if (!any_req && !any_lim)
        return "BestEffort";
    if (guaranteed && req[0] == lim[0] && req[1] == lim[1])
        return "Guaranteed";
    return "Burstable";
}

/* DefaultTolerationSeconds: tolerate not-ready and unreachable nodes 300 s. */
static void default_tolerations(cJSON *spec)
{
    static const char *const keys[] = { "node.kubernetes.io/not-ready",
                                        "node.kubernetes.io/unreachable" };
    cJSON *tols = cJSON_GetObjectItemCaseSensitive(spec, "tolerations"), *t;

    for (size_t k = 0; k < EBB_ARRAY_LEN(keys); k++) {
        bool tolerated = false;
        cJSON_ArrayForEach(t, tols) {
            const char *key = ebb__json_str(t, "key"), *effect = ebb__json_str(t, "effect");
            if ((key == NULL || key[0] == '\0' || strcmp(key, keys[k]) == 0) &&
                (effect == NULL || effect[0] == '\0' || strcmp(effect, "NoExecute") == 0))
                tolerated = true;
        }
        if (tolerated)
            continue;
        if (!cJSON_IsArray(tols)) {
            cJSON_DeleteItemFromObjectCaseSensitive(spec, "tolerations");
            tols = cJSON_AddArrayToObject(spec, "tolerations");
        }
        t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "key", keys[k]);
        cJSON_AddStringToObject(t, "operator", "Exists");
        cJSON_AddStringToObject(t, "effect", "NoExecute");
        cJSON_AddNumberToObject(t, "tolerationSeconds", 300);
        cJSON_AddItemToArray(tols, t);
    }
}

/* The Priority admission plugin. false: answered (403). */
static bool admit_priority(struct server *s, struct ebb_http_req *r, const char *name,
                           cJSON *spec)
{
    /* the classes every cluster has */
    static const struct { const char *name; double value; } builtin[] = {
        { "system-cluster-critical", 2000000000 }, { "system-node-critical", 2000001000 },
    };
    const char *pcname = ebb__json_str(spec, "priorityClassName"), *policy = NULL;
    const cJSON *given = cJSON_GetObjectItemCaseSensitive(spec, "priority");
    struct store *st = &s->stores[R_PRIORITY_CLASSES];
    cJSON *pc = NULL;
    double value = 0;
    char why[300];

    if (pcname != NULL && pcname[0] != '\0') {
        struct ver *v = ebb__store_get(s, R_PRIORITY_CLASSES, pcname);
        bool found = v != NULL && (pc = ebb__ver_json(v)) != NULL;
        for (size_t i = 0; !found && i < EBB_ARRAY_LEN(builtin); i++)
            if (strcmp(builtin[i].name, pcname) == 0) {
                value = builtin[i].value;
                found = true;
            }
        if (!found) {
            snprintf(why, sizeof(why), "no PriorityClass with name %.200s was found", pcname);
            reply_forbidden(r, &ebb__rdefs[R_PODS], name, why, NULL);
            return false;
        }
    } else {
        for (size_t i = 0; i < st->n && pc == NULL; i++) {
            cJSON *j = ebb__ver_json(st->v[i]);
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "globalDefault")))
                pc = j;
            else
                cJSON_Delete(j);
        }
        if (pc != NULL)
            ebb__json_set_str(spec, "priorityClassName", ebb__json_meta_str(pc, "name"));
    }
    if (pc != NULL) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(pc, "value");
        value = cJSON_IsNumber(v) ? v->valuedouble : 0;
        policy = ebb__json_str(pc, "preemptionPolicy");
    }
    if (cJSON_IsNumber(given) && given->valuedouble != value) {
        snprintf(why, sizeof(why),
                 "the integer value of priority (%.0f) must not be provided in pod spec; priority "
                 "admission controller computed %.0f from the given PriorityClass name",
                 given->valuedouble, value);
        cJSON_Delete(pc);
        reply_forbidden(r, &ebb__rdefs[R_PODS], name, why, NULL);
        return false;
    }
    ebb__json_set(spec, "priority", cJSON_CreateNumber(value));
    ebb__json_set_str(spec, "preemptionPolicy", policy ? policy : "PreemptLowerPriority");
    cJSON_Delete(pc);
    return true;
}

static void check_pod(struct invalid *iv, const cJSON *spec)
{
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(spec, "containers"), *c;
    char field[64];
    int i = 0;

    if (cJSON_GetArraySize(cs) == 0) {
        ebb__invalid_add(iv, "FieldValueRequired", "spec.containers", "Required value");
        return;
    }
    cJSON_ArrayForEach(c, cs) {
        const char *n = ebb__json_str(c, "name"), *img = ebb__json_str(c, "image");
        if (n == NULL || n[0] == '\0') {
            snprintf(field, sizeof(field), "spec.containers[%d].name", i);
            ebb__invalid_add(iv, "FieldValueRequired", field, "Required value");
        }
        if (img == NULL || img[0] == '\0') {
            snprintf(field, sizeof(field), "spec.containers[%d].image", i);
            ebb__invalid_add(iv, "FieldValueRequired", field, "Required value");
        }
        i++;
    }
}

static bool create_pod(struct server *s, struct ebb_http_req *r, const char *name, cJSON *pod)
{
    cJSON *spec = ebb__json_child(pod, "spec"), *c, *status;
    static const char *const lists[] = { "containers", "initContainers" };

    if (!admit_priority(s, r, name, spec))
        return false;
    default_tolerations(spec);
    default_str(spec, "restartPolicy", "Always");
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "schedulerName", "default-scheduler");
    ebb__json_child(spec, "securityContext");
    if (cJSON_GetObjectItemCaseSensitive(spec, "terminationGracePeriodSeconds") == NULL)
        cJSON_AddNumberToObject(spec, "terminationGracePeriodSeconds", 30);
    if (cJSON_GetObjectItemCaseSensitive(spec, "enableServiceLinks") == NULL)
        cJSON_AddBoolToObject(spec, "enableServiceLinks", true);
    for (size_t k = 0; k < EBB_ARRAY_LEN(lists); k++)
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, lists[k]))
            if (cJSON_IsObject(c))
                default_container(c);
    /* a pod starts Pending: its status is the kubelet's to write */
    status = cJSON_CreateObject();
    cJSON_AddStringToObject(status, "phase", "Pending");
    cJSON_AddStringToObject(status, "qosClass", qos_class(spec));
    ebb__json_set(pod, "status", status);
    return true;
}

/* ---- the strategies ------------------------------------------------------------------------ */

bool ebb__has_status(int res)
{
    return res == R_PODS || res == R_NODES || res == R_NAMESPACES || res == R_PVCS ||
           res == R_PDBS;
}

static void namespace_defaults(cJSON *ns, const char *name)
{
    cJSON *spec = ebb__json_child(ns, "spec");
    cJSON *fins = cJSON_GetObjectItemCaseSensitive(spec, "finalizers");
    const cJSON *f;
    bool has = false;

    ebb__json_set_str(ebb__json_child(ebb__json_meta(ns), "labels"), "kubernetes.io/metadata.name",
                      name);
    cJSON_ArrayForEach(f, fins)
        has |= cJSON_IsString(f) && strcmp(f->valuestring, "kubernetes") == 0;
    if (!has) {
        if (!cJSON_IsArray(fins)) {
            cJSON_DeleteItemFromObjectCaseSensitive(spec, "finalizers");
            fins = cJSON_AddArrayToObject(spec, "finalizers");
        }
        cJSON_AddItemToArray(fins, cJSON_CreateString("kubernetes"));
    }
}

static void check_namespace_state(struct server *s, struct ebb_http_req *r, int res,
                                   const char *ns, const char *name, bool *ok)
{
    struct ver *v;
    cJSON *obj;
    const char *phase;

    *ok = true;
    if (!ebb__rdefs[res].namespaced || (v = ebb__store_get(s, R_NAMESPACES, ns)) == NULL ||
        (obj = ebb__ver_json(v)) == NULL)
        return;
    phase = ebb__json_str(cJSON_GetObjectItemCaseSensitive(obj, "status"), "phase");
    if (ebb__json_meta_str(obj, "deletionTimestamp") != NULL ||
        (phase != NULL && strcmp(phase, "Terminating") == 0)) {
        char why[400], cmsg[300];
        cJSON *causes = cJSON_CreateArray(), *c = cJSON_CreateObject();
        snprintf(why, sizeof(why), "unable to create new content in namespace %s because it is "
                                   "being terminated", ns);
        snprintf(cmsg, sizeof(cmsg), "namespace %s is being terminated", ns);
        cJSON_AddStringToObject(c, "reason", "NamespaceTerminating");
        cJSON_AddStringToObject(c, "message", cmsg);
        cJSON_AddStringToObject(c, "field", "metadata.namespace");
        cJSON_AddItemToArray(causes, c);
        reply_forbidden(r, &ebb__rdefs[res], name, why, causes);
        *ok = false;
    }
    cJSON_Delete(obj);
}

bool ebb__admit_create(struct server *s, struct ebb_http_req *r, int res, const char *ns,
                       cJSON *obj)
{
    const struct rdef *d = &ebb__rdefs[res];
    cJSON *meta = ebb__json_meta(obj);
    const char *name = ebb__json_str(meta, "name");
    struct invalid iv = { 0 };
    bool ok;

    if (name == NULL)
        name = "";
    check_namespace_state(s, r, res, ns, name, &ok);
    if (!ok)
        return false;
    if (res == R_PODS && !create_pod(s, r, name, obj))
        return false;
    if (res == R_NAMESPACES)
        namespace_defaults(obj, name);   /* its name as a label: validated as one too */
    if (res == R_PRIORITY_CLASSES)   /* as kube-apiserver's SetDefaults_PriorityClass */
        default_str(obj, "preemptionPolicy", "PreemptLowerPriority");
    check_meta(&iv, res, ebb__json_meta(obj), true);
    if (res == R_PODS)
        check_pod(&iv, cJSON_GetObjectItemCaseSensitive(obj, "spec"));
    if (ebb__invalid_reply(r, d, name, &iv))
        return false;
    switch (res) {
    case R_NAMESPACES: {
        cJSON *st = cJSON_CreateObject();
        namespace_defaults(obj, name);
        cJSON_AddStringToObject(st, "phase", "Active");
        ebb__json_set(obj, "status", st);
        break;
    }
    case R_PVCS: {
        cJSON *st = cJSON_CreateObject();
        cJSON_AddStringToObject(st, "phase", "Pending");
        ebb__json_set(obj, "status", st);
        break;
    }
    case R_PDBS: {
        /* the disruption controller's to fill */
        cJSON *st = cJSON_CreateObject();
        cJSON_AddNumberToObject(st, "disruptionsAllowed", 0);
        cJSON_AddNumberToObject(st, "currentHealthy", 0);
        cJSON_AddNumberToObject(st, "desiredHealthy", 0);
        cJSON_AddNumberToObject(st, "expectedPods", 0);
        ebb__json_set(obj, "status", st);
        break;
    }
    default:
        break;
    }
    if (res == R_PDBS || res == R_POD_MIGRATION_JOBS)
        ebb__json_set(meta, "generation", cJSON_CreateNumber(1));
    else
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "generation");
    return true;
}

/* A pod update may change images, activeDeadlineSeconds, tolerations
 * (adding to them) and terminationGracePeriodSeconds, nothing else of
 * the spec (ValidatePodUpdate). */
static bool pod_spec_update_ok(const cJSON *spec, const cJSON *old)
{
    static const char *const free_keys[] = { "activeDeadlineSeconds",
                                             "terminationGracePeriodSeconds", "tolerations" };
    static const char *const lists[] = { "containers", "initContainers" };
    cJSON *a = cJSON_Duplicate(spec, true), *b = cJSON_Duplicate(old, true);
    const cJSON *t, *u;
    bool ok;

    /* every old toleration is still there */
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(old, "tolerations")) {
        bool kept = false;
        cJSON_ArrayForEach(u, cJSON_GetObjectItemCaseSensitive(spec, "tolerations"))
            kept |= cJSON_Compare(t, u, true);
        if (!kept) {
            cJSON_Delete(a);
            cJSON_Delete(b);
            return false;
        }
    }
    for (size_t i = 0; i < EBB_ARRAY_LEN(free_keys); i++) {
        cJSON_DeleteItemFromObjectCaseSensitive(a, free_keys[i]);
        cJSON_DeleteItemFromObjectCaseSensitive(b, free_keys[i]);
    }
    for (size_t k = 0; k < EBB_ARRAY_LEN(lists); k++) {
        cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(a, lists[k]))
            cJSON_DeleteItemFromObjectCaseSensitive(c, "image");
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(b, lists[k]))
            cJSON_DeleteItemFromObjectCaseSensitive(c, "image");
    }
    ok = cJSON_Compare(a, b, true);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return ok;
}

bool ebb__admit_update(struct ebb_http_req *r, int res, cJSON **objp, const cJSON *old,
                       bool status)
{
    const struct rdef *d = &ebb__rdefs[res];
    const char *name = ebb__json_meta_str(old, "name");
    struct invalid iv = { 0 };
    cJSON *obj = *objp;

    check_meta(&iv, res, ebb__json_meta(obj), false);
    if (status) {
        if (ebb__invalid_reply(r, d, name, &iv))
            return false;
        /* the status subresource: the stored object with the new status */
        cJSON *copy = cJSON_Duplicate(old, true);
        cJSON *st = cJSON_DetachItemFromObjectCaseSensitive(obj, "status");
        cJSON *rv = cJSON_DetachItemFromObjectCaseSensitive(ebb__json_meta(obj),
                                                            "resourceVersion");
        ebb__json_set(copy, "status", st != NULL ? st : cJSON_CreateObject());
        if (rv != NULL)
            ebb__json_set(ebb__json_meta(copy), "resourceVersion", rv);
        else
            cJSON_DeleteItemFromObjectCaseSensitive(ebb__json_meta(copy), "resourceVersion");
        cJSON_Delete(obj);
        *objp = copy;
        return true;
    }
    if (ebb__has_status(res)) {
        const cJSON *ost = cJSON_GetObjectItemCaseSensitive(old, "status");
        if (ost != NULL)
            ebb__json_set(obj, "status", cJSON_Duplicate(ost, true));
        else
            cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    }
    if (res == R_PODS &&
        !pod_spec_update_ok(cJSON_GetObjectItemCaseSensitive(obj, "spec"),
                            cJSON_GetObjectItemCaseSensitive(old, "spec")))
        ebb__invalid_add(&iv, "FieldValueForbidden", "spec",
                         "Forbidden: pod updates may not change fields other than "
                         "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                         "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
                         "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it "
                         "to be set to 1 if it was previously negative)");
    if (ebb__invalid_reply(r, d, name, &iv))
        return false;
    if (res == R_PRIORITY_CLASSES)
        default_str(obj, "preemptionPolicy", "PreemptLowerPriority");
    if (res == R_NAMESPACES) {
        const cJSON *ofins = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(old, "spec"), "finalizers");
        namespace_defaults(obj, name ? name : "");
        if (ofins != NULL)   /* spec.finalizers change through namespaces/NAME/finalize only */
            ebb__json_set(ebb__json_child(obj, "spec"), "finalizers", cJSON_Duplicate(ofins, true));
    }
    {
        const cJSON *og = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(old,
                                                                                 "metadata"),
                                                           "generation");
        cJSON *meta = ebb__json_meta(obj);
        if (og == NULL) {
            cJSON_DeleteItemFromObjectCaseSensitive(meta, "generation");
        } else {
            /* a change of the spec is a new generation */
            bool changed = !cJSON_Compare(cJSON_GetObjectItemCaseSensitive(obj, "spec"),
                                          cJSON_GetObjectItemCaseSensitive(old, "spec"), true);
            ebb__json_set(meta, "generation", cJSON_CreateNumber(og->valuedouble + changed));
        }
    }
    return true;
}
