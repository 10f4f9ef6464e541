/* `ebb test`: the plan a case's run made against what the case expects,
 * as a readable diff (missing, unexpected, order, attributes). The
 * evictions are compared in order (a line diff) or as a set; refusals, plugin
 * errors and notes as sets, each expected text taking the first message not
 * taken yet that contains it. See ebb/testrun.h (ebb_test_compare). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/testrun_int.h"

static bool opt_eq(const char *want, const char *got)
{
    return want == NULL || (got != NULL && strcmp(want, got) == 0);
}

static bool opt_in(const char *want, const char *got)
{
    return want == NULL || (got != NULL && strstr(got, want) != NULL);
}

static void actual_eviction(struct ebb_test_report *r, const char *mark,
                            const struct ebb_plan_eviction *a)
{
    ebb__tr_printf(r, "%s%s   [%s, %s, cycle %d: %s]\n", mark, ebb__tr_text(a->pod),
                   ebb__tr_text(ebb__tr_dash(a->node)), ebb__tr_text(ebb__tr_dash(a->plugin)), a->cycle,
                   ebb__tr_text(ebb__tr_dash(a->reason)));
}

/* The attributes an expected eviction names, against the actual one. */
static int eviction_attrs(struct ebb_test_report *r, const struct ebb_test_eviction *x,
                          const struct ebb_plan_eviction *a)
{
    int n = 0;

    if (!opt_eq(x->node, a->node)) {
        ebb__tr_printf(r, "          node: expected %s, got %s\n", ebb__tr_text(x->node),
                       ebb__tr_text(ebb__tr_dash(a->node)));
        n++;
    }
    if (!opt_in(x->reason, a->reason)) {
        ebb__tr_printf(r, "          reason: expected to contain \"%s\", got \"%s\"\n",
                       ebb__tr_text(x->reason), ebb__tr_text(a->reason ? a->reason : ""));
        n++;
    }
    if (!opt_eq(x->plugin, a->plugin)) {
        ebb__tr_printf(r, "          plugin: expected %s, got %s\n", ebb__tr_text(x->plugin),
                       ebb__tr_text(ebb__tr_dash(a->plugin)));
        n++;
    }
    if (x->cycle && x->cycle != a->cycle) {
        ebb__tr_printf(r, "          cycle: expected %d, got %d\n", x->cycle, a->cycle);
        n++;
    }
    return n;
}

/* An expected eviction found in the plan: when the attributes it names
 * differ, the actual eviction after `mark` and what differs. Returns the
 * number of differences. */
static int found_eviction(struct ebb_test_report *body, const char *mark, const struct ebb_test_eviction *x,
                          const struct ebb_plan_eviction *a)
{
    struct ebb_test_report attrs = { 0 };
    int k = eviction_attrs(&attrs, x, a);

    if (k) {
        actual_eviction(body, mark, a);
        ebb__tr_printf(body, "%s", attrs.text ? attrs.text : "");
    }
    body->oom = body->oom || attrs.oom;
    ebb_test_report_free(&attrs);
    return k;
}

/* A section of the report ends: its lines under `heading` when anything
 * differed; the body is freed. Returns `mismatches`. */
static int end_section(struct ebb_test_report *r, const char *heading, struct ebb_test_report *body,
                       int mismatches)
{
    if (mismatches)
        ebb__tr_printf(r, "%s%s", heading, body->text ? body->text : "");
    r->oom = r->oom || body->oom;
    ebb_test_report_free(body);
    return mismatches;
}

static int diff_unordered(const struct ebb_test_expect *x, const struct ebb_plan *p,
                          struct ebb_test_report *r);

/* A line diff needs (expected + 1) x (actual + 1) cells. */
#define LCS_MAX_CELLS (4u << 20)

/* Too long for a line diff: the sets, then the first place the order differs. */
static int diff_long(const struct ebb_test_expect *x, const struct ebb_plan *p,
                     struct ebb_test_report *r)
{
    int n = diff_unordered(x, p, r);

    for (size_t i = 0; n == 0 && i < x->nevictions; i++)
        if (strcmp(x->evictions[i].pod, p->evictions[i].pod) != 0) {
            ebb__tr_printf(r, "  evictions: the same pods in a different order; the first difference is "
                              "#%zu: expected %s, got %s\n",
                           i + 1, ebb__tr_text(x->evictions[i].pod), ebb__tr_text(p->evictions[i].pod));
            n = 1;
        }
    return n;
}

/* Ordered: a line diff on the pod names (longest common subsequence), then
 * the attributes of the pods on both sides. */
static int diff_ordered(const struct ebb_test_expect *x, const struct ebb_plan *p,
                        struct ebb_test_report *r)
{
    size_t n = x->nevictions, m = p->nevictions, i, j;
    uint32_t *L;
    struct ebb_test_report body = { 0 };
    int mismatches = 0;
    bool moved = false;

    if ((n + 1) * (m + 1) > LCS_MAX_CELLS)
        return diff_long(x, p, r);
    if ((L = calloc((n + 1) * (m + 1), sizeof(*L))) == NULL) {
        r->oom = true;
        return 0;
    }
#define LCS(a, b) L[(a) * (m + 1) + (b)]
    for (i = n; i-- > 0;)
        for (j = m; j-- > 0;)
            LCS(i, j) = strcmp(x->evictions[i].pod, p->evictions[j].pod) == 0
                            ? LCS(i + 1, j + 1) + 1
                            : (LCS(i + 1, j) > LCS(i, j + 1) ? LCS(i + 1, j) : LCS(i, j + 1));
    for (i = 0, j = 0; i < n || j < m;) {
        if (i < n && j < m && strcmp(x->evictions[i].pod, p->evictions[j].pod) == 0) {
            int k = found_eviction(&body, "      ", &x->evictions[i], &p->evictions[j]);
            if (k == 0)
                ebb__tr_printf(&body, "      %s\n", ebb__tr_text(x->evictions[i].pod));
            mismatches += k;
            i++, j++;
        } else if (j == m || (i < n && LCS(i + 1, j) >= LCS(i, j + 1))) {
            ebb__tr_printf(&body, "    - %s\n", ebb__tr_text(x->evictions[i].pod));
            mismatches++;
            i++;
        } else {
            actual_eviction(&body, "    + ", &p->evictions[j]);
            mismatches++;
            j++;
        }
    }
#undef LCS
    free(L);
    if (mismatches && n == m) {
        /* the same pods, only in another order: say so, it is easy to miss */
        moved = true;
        for (i = 0; i < n && moved; i++) {
            bool found = false;
            for (j = 0; j < m && !found; j++)
                found = strcmp(x->evictions[i].pod, p->evictions[j].pod) == 0;
            moved = found;
        }
        if (moved)
            ebb__tr_printf(&body, "    (the same pods in a different order)\n");
    }
    return end_section(r, "  evictions (in order; - expected, + actual):\n", &body, mismatches);
}

static int diff_unordered(const struct ebb_test_expect *x, const struct ebb_plan *p,
                          struct ebb_test_report *r)
{
    struct ebb_test_report body = { 0 };
    bool *used = calloc(p->nevictions + 1, sizeof(*used));
    int mismatches = 0;

    if (used == NULL) {
        r->oom = true;
        return 0;
    }
    for (size_t i = 0; i < x->nevictions; i++) {
        size_t j;
        for (j = 0; j < p->nevictions; j++)
            if (!used[j] && strcmp(x->evictions[i].pod, p->evictions[j].pod) == 0)
                break;
        if (j == p->nevictions) {
            ebb__tr_printf(&body, "    missing:    %s\n", ebb__tr_text(x->evictions[i].pod));
            mismatches++;
            continue;
        }
        used[j] = true;
        mismatches += found_eviction(&body, "    evicted:    ", &x->evictions[i], &p->evictions[j]);
    }
    for (size_t j = 0; j < p->nevictions; j++)
        if (!used[j]) {
            actual_eviction(&body, "    unexpected: ", &p->evictions[j]);
            mismatches++;
        }
    free(used);
    return end_section(r, "  evictions (in any order):\n", &body, mismatches);
}

static bool refusal_matches(const struct ebb_test_refusal *x, const struct ebb_plan_refusal *a)
{
    return strcmp(x->pod, a->pod) == 0 && opt_eq(x->why, a->why) && opt_eq(x->plugin, a->plugin) &&
           (x->cycle == 0 || x->cycle == a->cycle);
}

static int diff_refusals(const struct ebb_test_expect *x, const struct ebb_plan *p,
                         struct ebb_test_report *r)
{
    struct ebb_test_report body = { 0 };
    bool *used = calloc(p->nrefusals + 1, sizeof(*used));
    int mismatches = 0;

    if (used == NULL) {
        r->oom = true;
        return 0;
    }
    for (size_t i = 0; i < x->nrefusals; i++) {
        const struct ebb_test_refusal *e = &x->refusals[i];
        size_t j;
        for (j = 0; j < p->nrefusals; j++)
            if (!used[j] && refusal_matches(e, &p->refusals[j]))
                break;
        if (j < p->nrefusals) {
            used[j] = true;
            continue;
        }
        ebb__tr_printf(&body, "    missing:    %s (%s", ebb__tr_text(e->pod),
                       ebb__tr_text(e->why ? e->why : "any reason"));
        if (e->plugin)
            ebb__tr_printf(&body, ", by %s", ebb__tr_text(e->plugin));
        if (e->cycle)
            ebb__tr_printf(&body, ", cycle %d", e->cycle);
        ebb__tr_printf(&body, ")\n");
        mismatches++;
    }
    for (size_t j = 0; j < p->nrefusals; j++) {
        const struct ebb_plan_refusal *a = &p->refusals[j];
        if (used[j])
            continue;
        ebb__tr_printf(&body, "    unexpected: %s (%s, by %s, cycle %d%s%s)\n", ebb__tr_text(a->pod),
                       ebb__tr_text(a->why), ebb__tr_text(ebb__tr_dash(a->plugin)), a->cycle,
                       a->detail ? ": " : "", a->detail ? ebb__tr_text(a->detail) : "");
        mismatches++;
    }
    free(used);
    return end_section(r, "  refusals:\n", &body, mismatches);
}

/* Errors and notes: each expected text takes the first actual message,
 * not taken yet, that contains it. */
static int diff_texts(const char *heading, const struct ebb_test_text *x, size_t nx, char **actual,
                      const size_t *alen, size_t na, struct ebb_test_report *r)
{
    struct ebb_test_report body = { 0 };
    bool *used = calloc(na + 1, sizeof(*used));
    int mismatches = 0;

    if (used == NULL) {
        r->oom = true;
        return 0;
    }
    for (size_t i = 0; i < nx; i++) {
        size_t j;
        for (j = 0; j < na; j++)
            if (!used[j] && actual[j] && memmem(actual[j], alen[j], x[i].text, strlen(x[i].text)) != NULL)
                break;
        if (j < na) {
            used[j] = true;
        } else {
            ebb__tr_printf(&body, "    missing:    \"%s\"\n", ebb__tr_text(x[i].text));
            mismatches++;
        }
    }
    for (size_t j = 0; j < na; j++)
        if (!used[j]) {
            char text[TR_TEXT_MAX];
            ebb_escape(text, sizeof(text), actual[j], actual[j] ? alen[j] : 0, EBB_ESC_LINE);
            ebb__tr_printf(&body, "    unexpected: %s\n", actual[j] ? text : "(out of memory)");
            mismatches++;
        }
    free(used);
    return end_section(r, heading, &body, mismatches);
}

static char *fmt_alloc(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *fmt_alloc(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

/* "<plugin>: [<node>: ]<message>" of a note, whole (a script's note and
 * node name may hold NUL bytes); *len gets its length. NULL: out of memory. */
static char *note_text(const struct ebb_plan_note *o, size_t *len)
{
    const char *plugin = ebb__tr_dash(o->plugin);
    size_t pl = strlen(plugin), nl = o->node ? ebb_str_len(o->node) : 0, k = 0;
    char *t = malloc(pl + 2 + nl + 2 + o->message_len + 1);

    if (t == NULL)
        return NULL;
    memcpy(t + k, plugin, pl), k += pl;
    memcpy(t + k, ": ", 2), k += 2;
    if (o->node != NULL) {
        memcpy(t + k, o->node, nl), k += nl;
        memcpy(t + k, ": ", 2), k += 2;
    }
    if (o->message != NULL)
        memcpy(t + k, o->message, o->message_len), k += o->message_len;
    t[k] = '\0';
    *len = k;
    return t;
}

int ebb_test_compare(const struct ebb_test_expect *x, const struct ebb_plan *p,
                     struct ebb_test_report *r)
{
    size_t na, *lens;
    char **texts;
    int n = 0;

    if (x == NULL || p == NULL || r == NULL)
        return EBB_EINVAL;
    n += x->unordered ? diff_unordered(x, p, r) : diff_ordered(x, p, r);
    if (x->has_refusals)
        n += diff_refusals(x, p, r);

    na = p->nerrors > p->nnotes ? p->nerrors : p->nnotes;
    texts = calloc(na + 1, sizeof(*texts));
    lens = calloc(na + 1, sizeof(*lens));
    if (texts == NULL || lens == NULL) {
        free(texts);
        free(lens);
        return EBB_ENOMEM;
    }
    for (size_t i = 0; i < p->nerrors; i++) {
        texts[i] = fmt_alloc("%s: %s", ebb__tr_dash(p->errors[i].plugin), p->errors[i].message);
        lens[i] = texts[i] ? strlen(texts[i]) : 0;
    }
    n += diff_texts("  plugin errors:\n", x->errors, x->nerrors, texts, lens, p->nerrors, r);
    for (size_t i = 0; i < p->nerrors; i++)
        free(texts[i]);
    if (x->has_notes) {
        for (size_t i = 0; i < p->nnotes; i++)
            texts[i] = note_text(&p->notes[i], &lens[i]);
        n += diff_texts("  notes:\n", x->notes, x->nnotes, texts, lens, p->nnotes, r);
        for (size_t i = 0; i < p->nnotes; i++)
            free(texts[i]);
    }
    free(texts);
    free(lens);
    r->mismatches += n;
    return r->oom ? EBB_ENOMEM : n;
}

