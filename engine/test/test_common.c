/* engine/base/common.c: the one escaping every writer uses (ebb_escape and what
 * is built on it: the logger, error messages, JSON texts). Table-driven,
 * then the whole class: every one- and two-byte input and every three- and
 * four-byte sequence that starts like UTF-8, in every mode, must come out
 * valid, free of what its destination takes for structure, and cut (when
 * it is) between characters with an ellipsis. */
#include "fixtures.h"

#include <unistd.h>

#include <cjson/cJSON.h>

#define ELLIPSIS "\xe2\x80\xa6"
#define FFFD "\xef\xbf\xbd"

struct esc_case {
    const char *in;
    size_t len;       /* 0: strlen(in) */
    const char *out;
};

static void check_cases(const struct esc_case *c, size_t n, enum ebb_esc how)
{
    for (size_t i = 0; i < n; i++) {
        char buf[512];
        size_t len = c[i].len ? c[i].len : strlen(c[i].in);
        size_t got = ebb_escape(buf, sizeof(buf), c[i].in, len, how);
        print_message("case %zu\n", i);
        assert_string_equal(buf, c[i].out);
        assert_int_equal(got, strlen(c[i].out));
    }
}

static void test_escape_line(void **state)
{
    static const struct esc_case cases[] = {
        { "plain text, \"quotes\" and \\ stay", 0, "plain text, \"quotes\" and \\ stay" },
        { "a\0b", 3, "a\\x00b" },
        { "\0", 1, "\\x00" },
        { "line1\nebb: error: forged", 0, "line1\\nebb: error: forged" },
        { "\r\t\x1b[31m\x07\x7f\x08\x0c\x1f", 0, "\\r\\t\\x1b[31m\\x07\\x7f\\x08\\x0c\\x1f" },
        { "csi \xc2\x9b nel \xc2\x85", 0, "csi \\u009b nel \\u0085" },
        { "ls \xe2\x80\xa8 ps \xe2\x80\xa9", 0, "ls \\u2028 ps \\u2029" },
        { "rlo \xe2\x80\xae lri \xe2\x81\xa6 pdi \xe2\x81\xa9", 0, "rlo \\u202e lri \\u2066 pdi \\u2069" },
        { "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0, "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
        { "bad \xff\xfe", 0, "bad " FFFD FFFD },
        { "cut \xc3", 0, "cut " FFFD },
        { "cut \xe2\x82 x", 0, "cut " FFFD FFFD " x" },
        { "overlong \xc0\x80 \xe0\x80\xaf", 0, "overlong " FFFD FFFD " " FFFD FFFD FFFD },
        { "surrogate \xed\xa0\x80", 0, "surrogate " FFFD FFFD FFFD },
        { "beyond \xf4\x90\x80\x80", 0, "beyond " FFFD FFFD FFFD FFFD },
        { "U+10FFFF \xf4\x8f\xbf\xbf", 0, "U+10FFFF \xf4\x8f\xbf\xbf" },
        { "", 0, "" },
    };
    (void)state;
    check_cases(cases, EBB_ARRAY_LEN(cases), EBB_ESC_LINE);
}

static void test_escape_json(void **state)
{
    static const struct esc_case cases[] = {
        { "a\0b", 3, "a\\u0000b" },
        { "q\"b\\s/", 0, "q\\\"b\\\\s/" },
        { "\n\r\t\b\f\x01\x1b\x1f", 0, "\\n\\r\\t\\b\\f\\u0001\\u001b\\u001f" },
        { "del \x7f c1 \xc2\x9b", 0, "del \x7f c1 \xc2\x9b" },
        { "ls \xe2\x80\xa8 ps \xe2\x80\xa9", 0, "ls \\u2028 ps \\u2029" },
        { "bad \xff \xed\xa0\x80", 0, "bad " FFFD " " FFFD FFFD FFFD },
        { "\xe2\x82\xac", 0, "\xe2\x82\xac" },
    };
    (void)state;
    check_cases(cases, EBB_ARRAY_LEN(cases), EBB_ESC_JSON);
}

static void test_escape_html(void **state)
{
    static const struct esc_case cases[] = {
        { "<script>alert('x')</script> & \"q\"", 0,
          "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;" },
        { "node-\x1b[2J\xff", 0, "node-\\x1b[2J" FFFD },
        { "a\0b", 3, "a\\x00b" },
    };
    (void)state;
    check_cases(cases, EBB_ARRAY_LEN(cases), EBB_ESC_HTML);
}

static void test_escape_utf8(void **state)
{
    static const struct esc_case cases[] = {
        { "{\"a\":\"\xff\"}", 0, "{\"a\":\"" FFFD "\"}" },
        { "\n\x1b\"", 0, "\n\x1b\"" },
    };
    (void)state;
    check_cases(cases, EBB_ARRAY_LEN(cases), EBB_ESC_UTF8);
}

/* What a mode may not let through, whatever the input. */
static void check_output(const char *out, size_t n, enum ebb_esc how)
{
    const unsigned char *p = (const unsigned char *)out;

    if (how == EBB_ESC_UTF8) {
        /* only the replacement: a NUL stays (ebb_utf8_valid refuses it) */
        for (size_t i = 0; i < n; i += strlen(out + i) + 1)
            assert_true(ebb_utf8_valid(out + i, strnlen(out + i, n - i)));
        return;
    }
    assert_int_equal(strlen(out), n);   /* no NUL inside */
    assert_true(ebb_utf8_valid(out, n));
    for (size_t i = 0; i < n; i++) {
        if (how == EBB_ESC_JSON) {
            assert_true(p[i] >= 0x20);
            /* a quote only escaped: preceded by an odd run of backslashes */
            if (p[i] == '"') {
                size_t k = 0;
                while (k < i && p[i - 1 - k] == '\\')
                    k++;
                assert_true(k % 2 == 1);
            }
        } else {
            assert_true(p[i] >= 0x20 && p[i] != 0x7f);
            assert_false(p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f);
            assert_false(p[i] == 0xe2 && i + 2 < n && p[i + 1] == 0x80 &&
                         (p[i + 2] == 0xa8 || p[i + 2] == 0xa9 || (p[i + 2] >= 0xaa && p[i + 2] <= 0xae)));
            if (how == EBB_ESC_HTML)
                assert_null(memchr("<>\"'", p[i], 4));
        }
    }
}

static void check_escaped(const unsigned char *in, size_t len, enum ebb_esc how)
{
    char buf[64], again[64];
    size_t n = ebb_escape(buf, sizeof(buf), (const char *)in, len, how);

    check_output(buf, n, how);
    if (how == EBB_ESC_LINE) {
        /* idempotent: what the log escaped, an error message escapes again unchanged */
        assert_int_equal(ebb_escape(again, sizeof(again), buf, n, how), n);
        assert_memory_equal(again, buf, n);
    }
    if (how == EBB_ESC_JSON) {
        char lit[80];
        cJSON *j;
        snprintf(lit, sizeof(lit), "\"%s\"", buf);
        assert_non_null(j = cJSON_Parse(lit));
        cJSON_Delete(j);
    }
}

/* Every one- and two-byte input, and every three- and four-byte one whose
 * first byte starts a multi-byte character, in every mode. */
/* ebb_utf8_valid skips plain ASCII 8 bytes at a time: a NUL, a byte of
 * 0x80 or more, a bad or a good sequence at every offset of a long ASCII
 * text is judged as the character-by-character reading judges it. */
static void test_utf8_valid_offsets(void **state)
{
    (void)state;
    static const struct { const char *s; size_t n; bool ok; } ins[] = {
        { "\0", 1, false }, { "\x80", 1, false }, { "\xff", 1, false },
        { "\xc3\xa9", 2, true }, { "\xe2\x80\xa6", 3, true }, { "\xf0\x9f\x98\x80", 4, true },
        { "\xc3", 1, false }, { "\xed\xa0\x80", 3, false }, { "\xc0\xaf", 2, false },
        { "\x7f", 1, true },
    };
    char buf[64];

    for (size_t t = 0; t < sizeof(ins) / sizeof(ins[0]); t++) {
        for (size_t at = 0; at + ins[t].n <= 40; at++) {
            memset(buf, 'a', 40);
            memcpy(buf + at, ins[t].s, ins[t].n);
            if (ebb_utf8_valid(buf, 40) != ins[t].ok)
                fail_msg("input %zu at offset %zu: expected %s", t, at, ins[t].ok ? "valid" : "invalid");
        }
    }
    memset(buf, 'a', 40);
    assert_true(ebb_utf8_valid(buf, 40));
    assert_true(ebb_utf8_valid(buf, 0));
    /* cut inside a sequence at the end of a long text */
    memcpy(buf + 38, "\xe2\x80", 2);
    assert_false(ebb_utf8_valid(buf, 40));
}

static void test_escape_every_short_input(void **state)
{
    static const enum ebb_esc modes[] = { EBB_ESC_LINE, EBB_ESC_JSON, EBB_ESC_HTML, EBB_ESC_UTF8 };
    unsigned char in[4];
    (void)state;

    for (size_t m = 0; m < EBB_ARRAY_LEN(modes); m++) {
        for (unsigned a = 0; a < 256; a++) {
            in[0] = (unsigned char)a;
            check_escaped(in, 1, modes[m]);
            for (unsigned b = 0; b < 256; b++) {
                in[1] = (unsigned char)b;
                check_escaped(in, 2, modes[m]);
            }
        }
        for (unsigned a = 0xe0; a <= 0xf4; a++)
            for (unsigned b = 0x70; b <= 0xc0; b++)
                for (unsigned c = 0x70; c <= 0xc0; c++) {
                    in[0] = (unsigned char)a, in[1] = (unsigned char)b, in[2] = (unsigned char)c;
                    check_escaped(in, 3, modes[m]);
                    in[3] = 0x80 + (unsigned char)(b & 0x3f);
                    check_escaped(in, 4, modes[m]);
                }
    }
}

/* Cut anywhere: never past cap - 1 bytes, never inside a character or an
 * escape, always said with the ellipsis; what fits is whole. */
static void test_escape_cut(void **state)
{
    static const char *const texts[] = {
        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
        "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac",
        "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80",
        "\x1b\x1b\x1b\x1b\x1b\x1b\x1b\x1b",
        "\xff\xff\xff\xff\xff\xff\xff",
        "ab\ncd\x00" "ef\xc2\x9bgh",
    };
    (void)state;

    for (size_t t = 0; t < EBB_ARRAY_LEN(texts); t++) {
        size_t len = t == 5 ? 12 : strlen(texts[t]);
        char whole[256];
        size_t full = ebb_escape(whole, sizeof(whole), texts[t], len, EBB_ESC_LINE);
        for (size_t cap = 0; cap <= full + 2; cap++) {
            char buf[256];
            size_t n;
            memset(buf, 'Z', sizeof(buf));
            n = ebb_escape(buf, cap, texts[t], len, EBB_ESC_LINE);
            if (cap == 0) {
                assert_int_equal(n, 0);
                assert_int_equal(buf[0], 'Z');
                continue;
            }
            assert_true(n <= cap - 1);
            assert_int_equal(buf[n], '\0');
            check_output(buf, n, EBB_ESC_LINE);
            if (cap - 1 >= full) {
                assert_string_equal(buf, whole);
            } else if (cap >= 4) {
                assert_true(n >= 3 && memcmp(buf + n - 3, ELLIPSIS, 3) == 0);
                /* the rest is a prefix of the whole, cut between pieces */
                assert_memory_equal(buf, whole, n - 3);
            } else {
                assert_memory_equal(buf, whole, n);
            }
            /* counting gives the same length */
            assert_int_equal(ebb_escape(NULL, cap, texts[t], len, EBB_ESC_LINE), n);
        }
    }
}

static void test_escape_dup(void **state)
{
    char big[10000];
    size_t n;
    char *s;
    (void)state;

    memset(big, '\x1b', sizeof(big));
    assert_non_null(s = ebb_escape_dup(big, sizeof(big), EBB_ESC_LINE, 0, &n));
    assert_int_equal(n, 4 * sizeof(big));
    assert_int_equal(strlen(s), n);
    free(s);
    assert_non_null(s = ebb_escape_dup(big, sizeof(big), EBB_ESC_LINE, 100, &n));
    assert_true(n <= 100);
    assert_int_equal(memcmp(s + n - 3, ELLIPSIS, 3), 0);
    free(s);
    assert_non_null(s = ebb_escape_dup(NULL, 5, EBB_ESC_JSON, 0, &n));
    assert_string_equal(s, "");
    free(s);
}

/* A message, a file and a field name: escaped for a line, and cut with an
 * ellipsis when too long, also when joined. */
static void test_error_texts(void **state)
{
    struct ebb_error err;
    char field[1000], buf[200], whole[4096];
    (void)state;

    memset(field, 'f', sizeof(field) - 1);
    field[sizeof(field) - 1] = '\0';
    field[0] = '\x1b';
    ebb_error_set(&err, EBB_ESCHEMA, "pol\nicy.yaml", 3, field, "bad \"%s\"\n%s", "v\xff", "next");
    assert_string_equal(err.file, "pol\\nicy.yaml");
    assert_int_equal(strncmp(err.field, "\\x1bfff", 7), 0);
    assert_true(strlen(err.field) < sizeof(err.field));
    assert_int_equal(memcmp(err.field + strlen(err.field) - 3, ELLIPSIS, 3), 0);
    assert_string_equal(err.msg, "bad \"v" FFFD "\"\\nnext");
    ebb_error_format(&err, whole, sizeof(whole));
    assert_null(strchr(whole, '\n'));
    ebb_error_format(&err, buf, sizeof(buf));
    assert_true(strlen(buf) < sizeof(buf));
    assert_int_equal(memcmp(buf + strlen(buf) - 3, ELLIPSIS, 3), 0);
    assert_true(ebb_utf8_valid(buf, strlen(buf)));

    /* a message longer than err.msg holds, and one longer than is formatted */
    memset(whole, 'm', sizeof(whole) - 1);
    whole[sizeof(whole) - 1] = '\0';
    ebb_error_set(&err, EBB_ESCHEMA, NULL, 0, NULL, "%s%s", whole, whole);
    assert_true(strlen(err.msg) < sizeof(err.msg));
    assert_int_equal(memcmp(err.msg + strlen(err.msg) - 3, ELLIPSIS, 3), 0);
    /* its own message as an argument */
    ebb_error_set(&err, EBB_ESCHEMA, NULL, 0, NULL, "short");
    ebb_error_set(&err, EBB_ESCHEMA, err.file, 0, err.field, "again: %s", err.msg);
    assert_string_equal(err.msg, "again: short");

    /* cleared after a long error (only first bytes are written): nothing
     * of it shows, and a shorter error set after shows alone */
    ebb_error_set(&err, EBB_ESCHEMA, "policy.yaml", 9, field, "%s", whole);
    ebb_error_clear(&err);
    assert_int_equal(err.code, 0);
    assert_int_equal(err.line, 0);
    assert_string_equal(err.file, "");
    assert_string_equal(err.field, "");
    assert_string_equal(err.msg, "");
    ebb_error_format(&err, buf, sizeof(buf));
    assert_string_equal(buf, "ok");
    ebb_error_set(&err, EBB_ESCHEMA, NULL, 0, "spec", "bad");
    ebb_error_format(&err, buf, sizeof(buf));
    assert_string_equal(buf, "spec: bad");
}

/* The logger: one record per line, escaped, NUL bytes kept, cut with an
 * ellipsis past EBB_LOG_MAX. stderr goes to a file for the test. */
static char *capture(void (*fn)(void))
{
    FILE *f = tmpfile();
    int saved = dup(2);
    long n;
    char *text;

    assert_true(f != NULL && saved >= 0);
    fflush(stderr);
    dup2(fileno(f), 2);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    assert_true((n = ftell(f)) >= 0);
    rewind(f);
    assert_non_null(text = calloc((size_t)n + 1, 1));
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return text;
}

static void log_some(void)
{
    char big[3 * EBB_LOG_MAX];
    int level = ebb_log_level;

    ebb_log_level = EBB_LOG_INFO;
    ebb_log(EBB_LOG_WARN, "pod %s: %s", "web\n1", "server said \x1b]0;owned\x07 \xff");
    ebb_log_text(EBB_LOG_INFO, "[Plugin] ", "a\0b\r\nebb: error: forged", 23);
    memset(big, 'x', sizeof(big));
    ebb_log_text(EBB_LOG_INFO, "[Plugin] ", big, sizeof(big));
    big[sizeof(big) - 1] = '\0';
    ebb_log(EBB_LOG_ERROR, "%s", big);
    ebb_log(EBB_LOG_DEBUG, "not shown");
    ebb_log_level = level;
}

static void test_log_records(void **state)
{
    char *text = capture(log_some), *line, *save = NULL;
    int n = 0;
    (void)state;

    assert_true(ebb_utf8_valid(text, strlen(text)));
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save), n++) {
        assert_int_equal(strncmp(line, "ebb: ", 5), 0);
        assert_true(strlen(line) <= EBB_LOG_MAX);
        for (const char *c = line; *c; c++)
            assert_true((unsigned char)*c >= 0x20 && *c != 0x7f);
        if (n == 0)
            assert_string_equal(line, "ebb: warning: pod web\\n1: server said \\x1b]0;owned\\x07 " FFFD);
        if (n == 1)
            assert_string_equal(line, "ebb: info: [Plugin] a\\x00b\\r\\nebb: error: forged");
        if (n >= 2)
            assert_int_equal(memcmp(line + strlen(line) - 3, ELLIPSIS, 3), 0);
    }
    assert_int_equal(n, 4);
    free(text);
}

/* The same records in each format: every line is one record with its
 * header (klog's, or one JSON object), and the message is the plain
 * format's escaped text whatever the format. */
static void test_log_formats(void **state)
{
    static const char *const msgs[] = {
        "pod web\\n1: server said \\x1b]0;owned\\x07 " FFFD,
        "[Plugin] a\\x00b\\r\\nebb: error: forged",
    };
    static const char *const levels[] = { "warning", "info", "info", "error" };
    static const char klog_levels[] = "WIIE";
    (void)state;

    for (int format = EBB_LOG_KLOG; format <= EBB_LOG_JSON; format++) {
        char *text, *line, *save = NULL;
        int n = 0;

        ebb_log_format = format;
        text = capture(log_some);
        ebb_log_format = EBB_LOG_PLAIN;
        assert_true(ebb_utf8_valid(text, strlen(text)));
        for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save), n++) {
            const char *msg;
            for (const char *c = line; *c; c++)
                assert_true((unsigned char)*c >= 0x20 && *c != 0x7f);
            assert_true(n < 4);
            if (format == EBB_LOG_KLOG) {
                int mo, d, h, mi, sec, us, pid, at = 0;
                char file[64];
                assert_int_equal(line[0], klog_levels[n]);
                assert_int_equal(sscanf(line + 1, "%2d%2d %2d:%2d:%2d.%6d %d %63[^:]:%*d] %n", &mo, &d, &h,
                                        &mi, &sec, &us, &pid, file, &at), 8);
                assert_true(at > 0);
                assert_int_equal(pid, (int)getpid());
                assert_string_equal(file, "test_common.c");
                msg = line + 1 + at;
                if (n < 2)
                    assert_string_equal(msg, msgs[n]);
            } else {
                cJSON *o = cJSON_Parse(line), *ts, *lv, *v, *m, *caller;
                assert_non_null(o);
                assert_true(cJSON_IsNumber(ts = cJSON_GetObjectItemCaseSensitive(o, "ts")));
                assert_true(ts->valuedouble > 1.7e9);
                assert_true(cJSON_IsString(lv = cJSON_GetObjectItemCaseSensitive(o, "level")));
                assert_string_equal(lv->valuestring, levels[n]);
                v = cJSON_GetObjectItemCaseSensitive(o, "v");
                assert_true(n == 1 || n == 2 ? cJSON_IsNumber(v) && v->valueint == 0 : v == NULL);
                assert_true(cJSON_IsString(caller = cJSON_GetObjectItemCaseSensitive(o, "caller")));
                assert_int_equal(strncmp(caller->valuestring, "test_common.c:", 14), 0);
                assert_true(cJSON_IsString(m = cJSON_GetObjectItemCaseSensitive(o, "msg")));
                if (n < 2)
                    assert_string_equal(m->valuestring, msgs[n]);
                else
                    assert_int_equal(memcmp(m->valuestring + strlen(m->valuestring) - 3, ELLIPSIS, 3), 0);
                cJSON_Delete(o);
            }
        }
        assert_int_equal(n, 4);
        free(text);
    }
}

/* Every one- and two-byte text, in every format: one record a line, and
 * the message (klog's after its header, JSON's "msg" once decoded) is
 * exactly ebb_escape(EBB_ESC_LINE) of the text. */
static int every_format;

static void log_every_pair(void)
{
    int level = ebb_log_level, format = ebb_log_format;

    ebb_log_level = EBB_LOG_INFO;
    ebb_log_format = every_format;
    for (int a = 0; a < 256; a++)
        for (int b = -1; b < 256; b++) {
            char t[2] = { (char)a, (char)b };
            ebb_log_text(EBB_LOG_INFO, NULL, t, b < 0 ? 1 : 2);
        }
    ebb_log_level = level;
    ebb_log_format = format;
}

static void test_log_every_pair(void **state)
{
    (void)state;
    for (every_format = EBB_LOG_PLAIN; every_format <= EBB_LOG_JSON; every_format++) {
        char *text = capture(log_every_pair), *line, *save = NULL;
        int a = 0, b = -1, n = 0;

        /* strtok_r would merge empty lines: there are none to merge, each
         * record has a header */
        for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save), n++) {
            char t[2] = { (char)a, (char)b }, want[64];
            const char *msg;
            cJSON *o = NULL;

            ebb_escape(want, sizeof(want), t, b < 0 ? 1 : 2, EBB_ESC_LINE);
            if (every_format == EBB_LOG_PLAIN) {
                assert_int_equal(strncmp(line, "ebb: info: ", 11), 0);
                msg = line + 11;
            } else if (every_format == EBB_LOG_KLOG) {
                assert_non_null(msg = strstr(line, "] "));
                msg += 2;
            } else {
                assert_non_null(o = cJSON_Parse(line));
                assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "msg")));
                msg = cJSON_GetObjectItemCaseSensitive(o, "msg")->valuestring;
            }
            if (strcmp(msg, want) != 0)
                fail_msg("format %d, bytes %02x %02x: \"%s\", want \"%s\"", every_format, a, b & 0xff, msg, want);
            cJSON_Delete(o);
            if (++b == 256) {
                a++;
                b = -1;
            }
        }
        assert_int_equal(n, 256 * 257);
        free(text);
    }
}

static void test_json_text(void **state)
{
    cJSON *o = cJSON_CreateObject(), *j;
    char *s;
    (void)state;

    cJSON_AddItemToObject(o, "nul", ebb_json_text("a\0b", 3));
    cJSON_AddItemToObject(o, "none", ebb_json_text(NULL, 0));
    cJSON_AddItemToObject(o, "bad", ebb_json_text("\xff\n\"", 3));
    /* a string that reached the tree some other way */
    cJSON_AddStringToObject(o, "raw", "x\xc3");
    assert_non_null(s = ebb_json_print(o, false));
    assert_string_equal(s, "{\"nul\":\"a\\u0000b\",\"none\":null,\"bad\":\"" FFFD "\\n\\\"\",\"raw\":\"x" FFFD "\"}");
    assert_non_null(j = cJSON_Parse(s));
    cJSON_Delete(j);
    free(s);
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape_line),
        cmocka_unit_test(test_escape_json),
        cmocka_unit_test(test_escape_html),
        cmocka_unit_test(test_escape_utf8),
        cmocka_unit_test(test_utf8_valid_offsets),
        cmocka_unit_test(test_escape_every_short_input),
        cmocka_unit_test(test_escape_cut),
        cmocka_unit_test(test_escape_dup),
        cmocka_unit_test(test_error_texts),
        cmocka_unit_test(test_log_records),
        cmocka_unit_test(test_log_formats),
        cmocka_unit_test(test_log_every_pair),
        cmocka_unit_test(test_json_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
