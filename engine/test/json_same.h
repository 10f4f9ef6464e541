/* Shared by engine/test/test_json_arena.c and fuzz/json_arena.c: the tree
 * ebb__json_arena_parse_raw lays out of yyjson's values against the one
 * cJSON's own parser makes of the same text. */
#ifndef EBB_TEST_JSON_SAME_H
#define EBB_TEST_JSON_SAME_H

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Well formed as cJSON builds a tree: members linked both ways, the first
 * one's prev at the last, keys on members of objects only, strings on
 * strings, no deeper than CJSON_NESTING_LIMIT. */
static inline bool json_well_formed(const cJSON *j, int depth)
{
    const cJSON *c, *last = NULL;

    if (depth > CJSON_NESTING_LIMIT)
        return false;
    if (cJSON_IsString(j) && j->valuestring == NULL)
        return false;
    if (!cJSON_IsArray(j) && !cJSON_IsObject(j))
        return j->child == NULL;
    for (c = j->child; c != NULL; c = c->next) {
        if (c != j->child && c->prev != last)
            return false;
        if (cJSON_IsObject(j) != (c->string != NULL))
            return false;
        if (!json_well_formed(c, depth + 1))
            return false;
        last = c;
    }
    return j->child == NULL || j->child->prev == last;
}

static inline bool json_same_double(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

/* What ebb__json_arena_parse_raw leaves out of a tree cJSON's parser made:
 * every managedFields member of an object under a "metadata" key. */
static inline void json_strip_managed(cJSON *j)
{
    for (cJSON *c = j->child; c != NULL; c = c->next) {
        if (cJSON_IsObject(j) && cJSON_IsObject(c) && strcmp(c->string, "metadata") == 0)
            while (cJSON_GetObjectItemCaseSensitive(c, "managedFields") != NULL)
                cJSON_DeleteItemFromObjectCaseSensitive(c, "managedFields");
        json_strip_managed(c);
    }
}

/* The same tree: types, values (numbers exactly, valueint too), keys and
 * order. */
static inline bool json_same(const cJSON *a, const cJSON *b)
{
    const cJSON *x, *y;

    if ((a->type & 0xff) != (b->type & 0xff))
        return false;
    if ((a->string == NULL) != (b->string == NULL) ||
        (a->string != NULL && strcmp(a->string, b->string) != 0))
        return false;
    if (cJSON_IsNumber(a))
        return json_same_double(a->valuedouble, b->valuedouble) && a->valueint == b->valueint;
    if (cJSON_IsBool(a))
        return a->valueint == b->valueint;
    if (cJSON_IsString(a))
        return strcmp(a->valuestring, b->valuestring) == 0;
    for (x = a->child, y = b->child; x != NULL && y != NULL; x = x->next, y = y->next)
        if (!json_same(x, y))
            return false;
    return x == NULL && y == NULL;
}

/* ebb__json_extent's contract, one byte at a time */
static inline long json_extent_bytes(const char *p, const char *end, int *nl)
{
    int depth = 0, lines = 0;
    bool in_string = false, escaped = false;

    for (const char *q = p; q < end; q++) {
        if (*q == '\n')
            lines++;
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (*q == '\\')
                escaped = true;
            else if (*q == '"')
                in_string = false;
        } else if (*q == '"') {
            in_string = true;
        } else if (*q == '{' || *q == '[') {
            depth++;
        } else if ((*q == '}' || *q == ']') && --depth == 0) {
            *nl = lines;
            return q + 1 - p;
        }
    }
    return 0;
}

#endif
