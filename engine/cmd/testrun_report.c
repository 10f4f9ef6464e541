/* `ebb test`'s report: what a case found wrong, as indented lines for
 * people, and the texts in it escaped for a line. Every other unit of
 * `ebb test` writes through here; see testrun_int.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "cmd/testrun_int.h"

void ebb__tr_printf(struct ebb_test_report *r, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (ebb__grow((void **)&r->text, &r->cap, r->len + (size_t)n + 1, 1) != 0) {
        r->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(r->text + r->len, r->cap - r->len, fmt, ap);
    va_end(ap);
    r->len += (size_t)n;
}

void ebb_test_report_free(struct ebb_test_report *r)
{
    if (r == NULL)
        return;
    free(r->text);
    memset(r, 0, sizeof(*r));
}

#define TR_TEXT_SLOTS 8

const char *ebb__tr_text(const char *s)
{
    static _Thread_local char ring[TR_TEXT_SLOTS][TR_TEXT_MAX];
    static _Thread_local unsigned next;
    char *b;

    if (s == NULL)
        return NULL;
    b = ring[next++ % TR_TEXT_SLOTS];
    ebb_escape(b, TR_TEXT_MAX, s, strlen(s), EBB_ESC_LINE);
    return b;
}

const char *ebb__tr_dash(const char *s)
{
    return s && s[0] ? s : "-";
}
