/* What ebb writes, whatever text it is given: the input is one text (any
 * bytes, NUL included) put through ebb_escape in every mode and at every
 * size, and into every writer that carries a script's or an object's text:
 * a plan (a note, an eviction's reason, a refusal's detail, a plugin error)
 * printed as JSON and as a table, an Event, an error message.
 *
 * - escaped text is valid UTF-8, holds no byte its destination takes for
 *   structure (a line: no control byte, DEL, C1 control or line separator;
 *   JSON: no raw control; HTML: no markup character), never more than the
 *   room given, cut between characters and with an ellipsis when it is cut;
 *   a line is escaped once for good (escaping again changes nothing);
 * - a JSON text ebb prints parses, and a note's text comes back whole (NUL
 *   bytes too) where it is valid UTF-8;
 * - the plan's table is lines without a control byte;
 * - an Event's body is valid UTF-8 with its note under 1 KiB. */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "fuzz.h"
#include "ebb/kube_evict.h"
#include "ebb/plan.h"

#define ELLIPSIS "\xe2\x80\xa6"

static void check_line(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;

    if (strlen(s) != n || !ebb_utf8_valid(s, n))
        abort();
    for (size_t i = 0; i < n; i++) {
        if (p[i] < 0x20 || p[i] == 0x7f)
            abort();
        if (p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
            abort();
        if (p[i] == 0xe2 && i + 2 < n && p[i + 1] == 0x80 && p[i + 2] >= 0xa8 && p[i + 2] <= 0xae)
            abort();
    }
}

static void check_mode(const char *in, size_t len, enum ebb_esc how)
{
    static const size_t caps[] = { 1, 2, 3, 4, 5, 7, 16, 64, 1024 };
    size_t full = ebb_escape(NULL, SIZE_MAX, in, len, how);
    char *whole = ebb_escape_dup(in, len, how, 0, NULL);

    if (whole == NULL)
        abort();
    for (size_t c = 0; c < EBB_ARRAY_LEN(caps); c++) {
        char buf[1024];
        size_t n = ebb_escape(buf, caps[c], in, len, how);
        if (n > caps[c] - 1 || buf[n] != '\0')
            abort();
        if (full <= caps[c] - 1) {
            if (n != full || memcmp(buf, whole, n) != 0)
                abort();
        } else if (caps[c] >= 4) {
            /* cut: a prefix of the whole, at a piece's end, then the ellipsis */
            if (n < 3 || memcmp(buf + n - 3, ELLIPSIS, 3) != 0 || memcmp(buf, whole, n - 3) != 0)
                abort();
        }
        if (how == EBB_ESC_LINE || how == EBB_ESC_HTML)
            check_line(buf, n);
        if (how == EBB_ESC_HTML && strpbrk(buf, "<>\"'") != NULL)
            abort();
    }
    if (how == EBB_ESC_JSON) {
        /* the inside of a JSON string: quoted, it parses */
        char *lit = malloc(full + 3);
        cJSON *j;
        if (lit == NULL)
            abort();
        lit[0] = '"';
        memcpy(lit + 1, whole, full);
        lit[full + 1] = '"';
        lit[full + 2] = '\0';
        if ((j = cJSON_Parse(lit)) == NULL || !cJSON_IsString(j))
            abort();
        cJSON_Delete(j);
        free(lit);
    }
    if (how == EBB_ESC_LINE) {
        char *again = ebb_escape_dup(whole, full, how, 0, NULL);
        if (again == NULL || strcmp(again, whole) != 0)
            abort();
        free(again);
    }
    if (how == EBB_ESC_UTF8) {
        for (size_t i = 0; i < full; i += strlen(whole + i) + 1)
            if (!ebb_utf8_valid(whole + i, strnlen(whole + i, full - i)))
                abort();
    }
    free(whole);
}

static void check_plan(const char *in, size_t len)
{
    struct ebb_plan p;
    char *json, *table = NULL;
    size_t tlen = 0;
    FILE *f;
    cJSON *j;

    ebb_plan_init(&p);
    /* C strings stop at a NUL where the plan takes one; a note takes all */
    ebb_plan_add_eviction(&p, in, in, "Fuzz", in, in);
    ebb_plan_add_refusal(&p, in, "node-1", "Fuzz", "p", "evictor", in);
    ebb_plan_add_error(&p, "Fuzz", "p", in);
    ebb_plan_add_note_text(&p, "Fuzz", "p", in, len, in, len);
    ebb_plan_add_skip(&p, in);
    if ((json = ebb_plan_to_json(&p, true)) == NULL || !ebb_utf8_valid(json, strlen(json)) ||
        (j = cJSON_Parse(json)) == NULL)
        abort();
    {
        /* the note's message whole, NUL bytes and all, as ebb_escape writes it */
        char *lit = ebb_escape_dup(in, len, EBB_ESC_JSON, 0, NULL);
        if (lit == NULL || strstr(json, lit) == NULL)
            abort();
        free(lit);
    }
    cJSON_Delete(j);
    free(json);
    if ((f = open_memstream(&table, &tlen)) == NULL)
        abort();
    ebb_plan_print_table(&p, f);
    fclose(f);
    for (char *line = table, *nl; line < table + tlen; line = nl + 1) {
        nl = memchr(line, '\n', (size_t)(table + tlen - line));
        if (nl == NULL)
            abort();   /* every line ends */
        *nl = '\0';
        check_line(line, (size_t)(nl - line));
    }
    free(table);
    ebb_plan_clear(&p);
}

static void check_event(const char *cstr)
{
    struct ebb_kube_event e = { .ns = "ns", .name = "pod", .type = "Warning", .reason = cstr,
                                .action = cstr, .note = cstr, .instance = cstr };
    char *body = ebb_kube_event_body(&e);
    cJSON *j;
    const cJSON *note;

    if (body == NULL || !ebb_utf8_valid(body, strlen(body)) || (j = cJSON_Parse(body)) == NULL)
        abort();
    note = cJSON_GetObjectItemCaseSensitive(j, "note");
    if (!cJSON_IsString(note) || strlen(note->valuestring) >= 1024)
        abort();
    check_line(note->valuestring, strlen(note->valuestring));
    cJSON_Delete(j);
    free(body);
}

static void check_error(const char *cstr)
{
    struct ebb_error err;
    char buf[300];

    ebb_error_set(&err, EBB_ESCHEMA, cstr, 1, cstr, "bad value \"%s\"", cstr);
    check_line(err.file, strlen(err.file));
    check_line(err.field, strlen(err.field));
    check_line(err.msg, strlen(err.msg));
    ebb_error_format(&err, buf, sizeof(buf));
    check_line(buf, strlen(buf));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *cstr = fuzz_cstr(data, size);

    check_mode((const char *)data, size, EBB_ESC_LINE);
    check_mode((const char *)data, size, EBB_ESC_JSON);
    check_mode((const char *)data, size, EBB_ESC_HTML);
    check_mode((const char *)data, size, EBB_ESC_UTF8);
    check_plan(cstr, size);
    check_event(cstr);
    check_error(cstr);
    free(cstr);
    return 0;
}
