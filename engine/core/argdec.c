/* The value-tree reader and strict args decoding; see argdec.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/argdec.h"
#include "ebb/decode.h"
#include "ebb/selector.h"

/* ---- the reader ----------------------------------------------------------- */

const char *ebb__args_join(char *buf, size_t len, const char *path, const char *key)
{
    if (snprintf(buf, len, "%s%s%s", path ? path : "", path && path[0] ? "." : "", key) >= (int)len)
        buf[len - 1] = '\0';
    return buf;
}

const char *ebb__args_index(char *buf, size_t len, const char *path, size_t i)
{
    if (snprintf(buf, len, "%s[%zu]", path ? path : "", i) >= (int)len)
        buf[len - 1] = '\0';
    return buf;
}

const struct ebb_val *ebb__val_at(const struct ebb_val *m, const char *key)
{
    const struct ebb_val *v = m && m->type == EBB_VAL_MAP ? ebb_val_get(m, key) : NULL;
    return v && v->type != EBB_VAL_NULL ? v : NULL;
}

const char *ebb__val_a(const struct ebb_val *v)
{
    switch (v ? v->type : EBB_VAL_NULL) {
    case EBB_VAL_NULL: return "null";
    case EBB_VAL_BOOL: return "a boolean";
    case EBB_VAL_INT: return "an integer";
    case EBB_VAL_FLOAT: return "a float";
    case EBB_VAL_STRING: return "a string";
    case EBB_VAL_SEQ: return "a list";
    case EBB_VAL_MAP: return "a map";
    default: return "an unknown value";
    }
}

int ebb__val_int(const struct ebb_val *v, int64_t *out)
{
    double f;

    if (v != NULL && v->type == EBB_VAL_INT) {
        *out = v->u.i;
        return 0;
    }
    if (v == NULL || v->type != EBB_VAL_FLOAT)
        return EBB_ESCHEMA;
    f = v->u.f;
    if (!(f == floor(f) && f > -1e21 && f < 1e21))
        return EBB_ESCHEMA;
    if (f >= 9223372036854775807.0)
        *out = INT64_MAX;
    else if (f <= -9223372036854775808.0)
        *out = INT64_MIN;
    else
        *out = (int64_t)f;
    return 0;
}

size_t ebb__args_unknown(const struct ebb_val *m, const char *const *known, size_t from)
{
    for (size_t i = from; m != NULL && m->type == EBB_VAL_MAP && i < m->u.map.n; i++) {
        bool ok = false;
        for (size_t k = 0; known[k] && !ok; k++)
            ok = strcmp(known[k], m->u.map.keys[i]) == 0;
        if (!ok)
            return i;
    }
    return m != NULL && m->type == EBB_VAL_MAP ? m->u.map.n : 0;
}

int ebb__args_type_error(const struct ebb_val *v, const char *field, const char *want,
                         struct ebb_error *err)
{
    return ebb_error_set(err, EBB_ESCHEMA, NULL, v->line, field, "expected %s, got %s", want,
                         ebb__val_a(v));
}

int ebb__args_in_file(int rc, const char *file, struct ebb_error *err)
{
    if (rc < 0 && err != NULL && err->file[0] == '\0' && file != NULL)
        snprintf(err->file, sizeof(err->file), "%s", file);
    return rc;
}

/* ---- strict getters ---------------------------------------------------------- */

static int type_error(const struct ebb_val *v, const char *path, const char *key,
                      const char *want, struct ebb_error *err)
{
    char f[256];
    return ebb__args_type_error(v, ebb__args_join(f, sizeof(f), path, key), want, err);
}

int ebb__args_keys(const struct ebb_val *m, const char *path, const char *const *known,
                   struct ebb_error *err)
{
    size_t i;

    if (m == NULL || m->type == EBB_VAL_NULL)
        return 0;
    if (m->type != EBB_VAL_MAP)
        return ebb__args_type_error(m, path, "a map", err);
    if ((i = ebb__args_unknown(m, known, 0)) < m->u.map.n) {
        char f[256];
        return ebb_error_set(err, EBB_ESCHEMA, NULL, m->u.map.key_lines[i],
                             ebb__args_join(f, sizeof(f), path, m->u.map.keys[i]),
                             "unknown field \"%s\"", m->u.map.keys[i]);
    }
    return 0;
}

int ebb__args_bool(const struct ebb_val *m, const char *key, const char *path, bool *out,
                   bool *present, struct ebb_error *err)
{
    const struct ebb_val *v = ebb__val_at(m, key);
    if (present)
        *present = v != NULL;
    if (v == NULL)
        return 0;
    if (v->type != EBB_VAL_BOOL)
        return type_error(v, path, key, "a boolean", err);
    *out = v->u.b;
    return 0;
}

int ebb__args_int(const struct ebb_val *m, const char *key, const char *path, int64_t min,
                  int64_t max, int64_t *out, bool *present, struct ebb_error *err)
{
    const struct ebb_val *v = ebb__val_at(m, key);
    int64_t i;
    char f[256];

    if (present)
        *present = v != NULL;
    if (v == NULL)
        return 0;
    if (ebb__val_int(v, &i) != 0)
        return type_error(v, path, key, "an integer", err);
    if (i < min || i > max)
        return ebb_error_set(err, EBB_ESCHEMA, NULL, v->line, ebb__args_join(f, sizeof(f), path, key),
                             "%lld is out of range [%lld, %lld]", (long long)i, (long long)min,
                             (long long)max);
    *out = i;
    return 0;
}

int ebb__args_str(const struct ebb_val *m, const char *key, const char *path, const char **out,
                  bool *present, struct ebb_error *err)
{
    const struct ebb_val *v = ebb__val_at(m, key);
    if (present)
        *present = v != NULL;
    if (v == NULL)
        return 0;
    if (v->type != EBB_VAL_STRING)
        return type_error(v, path, key, "a string", err);
    *out = v->u.str.s;
    return 0;
}

int ebb__args_strs(const struct ebb_val *m, const char *key, const char *path,
                   const struct ebb_val **out, struct ebb_error *err)
{
    const struct ebb_val *v = ebb__val_at(m, key);
    char f[256], g[300];

    *out = NULL;
    if (v == NULL)
        return 0;
    if (v->type != EBB_VAL_SEQ)
        return type_error(v, path, key, "a list of strings", err);
    for (size_t i = 0; i < v->u.seq.n; i++) {
        const struct ebb_val *it = v->u.seq.items[i];
        if (it->type != EBB_VAL_STRING)
            return ebb__args_type_error(
                it, ebb__args_index(g, sizeof(g), ebb__args_join(f, sizeof(f), path, key), i),
                "a string", err);
    }
    *out = v;
    return 0;
}

int ebb__args_map(const struct ebb_val *m, const char *key, const char *path,
                  const struct ebb_val **out, struct ebb_error *err)
{
    const struct ebb_val *v = ebb__val_at(m, key);
    *out = NULL;
    if (v == NULL)
        return 0;
    if (v->type != EBB_VAL_MAP)
        return type_error(v, path, key, "a map", err);
    *out = v;
    return 0;
}

int ebb__args_label_selector(const struct ebb_val *m, const char *key, const char *path,
                             struct ebb_selector **out, struct ebb_error *err)
{
    static const char *const known[] = { "matchLabels", "matchExpressions", NULL };
    const struct ebb_val *v = ebb__val_at(m, key);
    char f[256];
    cJSON *j;
    int rc;

    *out = NULL;
    if (v == NULL)
        return 0;
    ebb__args_join(f, sizeof(f), path, key);
    if (v->type != EBB_VAL_MAP)
        return type_error(v, path, key, "a label selector", err);
    if ((rc = ebb__args_keys(v, f, known, err)) != 0)
        return rc;
    if ((j = ebb_val_to_cjson(v)) == NULL)
        return ebb_error_set(err, EBB_ENOMEM, NULL, v->line, f, "out of memory");
    rc = ebb_decode_label_selector(j, out, err);
    cJSON_Delete(j);
    if (rc != 0) {
        char inner[256], full[600];
        snprintf(inner, sizeof(inner), "%s", err->field);
        snprintf(full, sizeof(full), "%s%s%s", f, inner[0] ? "." : "", inner);
        memcpy(err->field, full, sizeof(err->field) - 1);
        err->field[sizeof(err->field) - 1] = '\0';
        /* the line of the bad part of the selector, not of its first key */
        err->line = inner[0] && ebb_val_line_for(v, inner) > 0 ? ebb_val_line_for(v, inner) : v->line;
        err->code = EBB_ESCHEMA;
        return EBB_ESCHEMA;
    }
    if (*out == NULL)
        *out = ebb_selector_everything();
    return 0;
}
