/* The "did you mean" of every name a user writes and ebb looks up: the
 * nearest of the names that exist, when it is near enough to be a typo.
 * Callers: core/framework.c (plugin names against the registry, built-in and
 * script), core/config.c (an enabled name against the profile's
 * pluginConfig entries). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/common.h"

/* Names longer than this are not compared (no plugin name is; the cost is
 * two rows of this many counters). */
#define NEAREST_MAX_LEN 128

/* Optimal string alignment distance, letters compared without case: one
 * insertion, deletion, substitution or swap of neighbours is 1, and a
 * difference of case alone is 0 (kube names are case-sensitive, so a case
 * slip is the likeliest typo of all). */
static size_t distance(const char *a, size_t la, const char *b, size_t lb)
{
    size_t rows[3][NEAREST_MAX_LEN + 1];
    size_t *pp = rows[0], *p = rows[1], *c = rows[2];

    for (size_t j = 0; j <= lb; j++)
        p[j] = j;
    for (size_t i = 1; i <= la; i++) {
        c[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            int ai = tolower((unsigned char)a[i - 1]), bj = tolower((unsigned char)b[j - 1]);
            size_t best = p[j - 1] + (ai != bj);
            if (p[j] + 1 < best)
                best = p[j] + 1;
            if (c[j - 1] + 1 < best)
                best = c[j - 1] + 1;
            if (i > 1 && j > 1 && ai == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == bj && pp[j - 2] + 1 < best)
                best = pp[j - 2] + 1;
            c[j] = best;
        }
        size_t *t = pp;
        pp = p;
        p = c;
        c = t;
    }
    return p[lb];
}

const char *ebb_nearest_name(const char *name, const char *const *names, size_t n)
{
    size_t len, best = SIZE_MAX, limit;
    const char *found = NULL;
    bool tie = false;

    if (name == NULL || (len = strlen(name)) == 0 || len > NEAREST_MAX_LEN)
        return NULL;
    /* near enough to be a slip of the fingers, not another word: one edit
     * in a short name, two from 6 characters, three from 12 */
    limit = len < 6 ? 1 : len < 12 ? 2 : 3;
    for (size_t i = 0; i < n; i++) {
        size_t l = names[i] != NULL ? strlen(names[i]) : 0, d;
        if (l == 0 || l > NEAREST_MAX_LEN || strcmp(names[i], name) == 0)
            continue;
        if ((l > len ? l - len : len - l) > limit)
            continue;
        d = distance(name, len, names[i], l);
        if (d > limit || d > best)
            continue;
        if (d == best) {
            tie = tie || strcmp(found, names[i]) != 0;
            continue;
        }
        best = d;
        found = names[i];
        tie = false;
    }
    /* two names equally near: naming one would be a guess */
    return tie ? NULL : found;
}
