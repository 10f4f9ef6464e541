/* Errors, logging and RFC 3339 times shared by every unit. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ebb/common.h"

int ebb_log_level = EBB_LOG_INFO;
int ebb_log_format = EBB_LOG_PLAIN;

const char *ebb_strerror(int rc)
{
    switch (rc) {
    case EBB_OK: return "ok";
    case EBB_EINVAL: return "invalid argument";
    case EBB_ENOMEM: return "out of memory";
    case EBB_EIO: return "input/output error";
    case EBB_EPARSE: return "parse error";
    case EBB_ESCHEMA: return "invalid value";
    case EBB_EEXIST: return "already exists";
    case EBB_ENOENT: return "not found";
    case EBB_ESCRIPT: return "script error";
    case EBB_ELIMIT: return "script limit exceeded";
    case EBB_ESTATE: return "invalid state";
    default: return "unknown error";
    }
}

/* Messages are formatted into this much before they are escaped: more than
 * any of ebb_error's fields holds, so a longer one is always cut visibly. */
#define ERROR_RAW_MAX 4096

int ebb_error_set(struct ebb_error *err, int code, const char *file, int line,
                  const char *field, const char *fmt, ...)
{
    char raw[ERROR_RAW_MAX], where[sizeof(err->file)], name[sizeof(err->field)];
    va_list ap;
    int n;

    if (err == NULL)
        return code;
    /* through copies: `file`, `field` and the arguments may be err's own */
    ebb_escape(where, sizeof(where), file ? file : "", file ? strlen(file) : 0, EBB_ESC_LINE);
    ebb_escape(name, sizeof(name), field ? field : "", field ? strlen(field) : 0, EBB_ESC_LINE);
    va_start(ap, fmt);
    n = vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    err->code = code;
    err->line = line;
    memcpy(err->file, where, sizeof(where));
    memcpy(err->field, name, sizeof(name));
    /* a message cut here is longer than err->msg: escaping it cuts it again, with the ellipsis */
    ebb_escape(err->msg, sizeof(err->msg), raw,
               n < 0 ? 0 : (size_t)n >= sizeof(raw) ? sizeof(raw) - 1 : (size_t)n, EBB_ESC_LINE);
    return code;
}

void ebb_error_clear(struct ebb_error *err)
{
    if (err == NULL)
        return;
    err->code = 0;
    err->line = 0;
    err->file[0] = err->field[0] = err->msg[0] = '\0';
}

void ebb_error_format(const struct ebb_error *err, char *buf, size_t len)
{
    /* every part is escaped already (ebb_error_set): this only joins them */
    char whole[sizeof(err->file) + sizeof(err->field) + sizeof(err->msg) + 32];
    const char *msg = err->msg[0] ? err->msg : ebb_strerror(err->code);
    size_t where = 0;
    int n;

    if (len == 0)
        return;
    if (err->file[0] != '\0')
        where = (size_t)snprintf(whole, sizeof(whole), err->line > 0 ? "%s:%d: " : "%s: ", err->file,
                                 err->line);
    /* a Lua message carries "file:line: " itself: say it once */
    if (err->field[0] == '\0' && where > 0 && strncmp(msg, whole, where) == 0)
        msg += where;
    n = snprintf(whole + where, sizeof(whole) - where, "%s%s%s", err->field,
                 err->field[0] != '\0' ? ": " : "", msg);
    n = n < 0 ? 0 : n;
    ebb_escape(buf, len, whole, where + (size_t)n < sizeof(whole) ? where + (size_t)n : sizeof(whole) - 1,
               EBB_ESC_LINE);
}

/* The start of a record in ebb_log_format, into `buf` (at least 128 bytes):
 * returns its length. `file` is the logging C file: its base name is said,
 * as klog says the Go file's. */
static size_t log_header(char *buf, size_t cap, const char *file, int line, int level)
{
    static const char *names[] = { "error", "warning", "info", "debug" };
    const char *base = strrchr(file ? file : "", '/');
    struct timespec ts;
    struct tm tm;
    int n;

    base = base ? base + 1 : file ? file : "";
    level = level < 0 ? 0 : level > 3 ? 3 : level;
    if (ebb_log_format == EBB_LOG_PLAIN)
        n = snprintf(buf, cap, "ebb: %s: ", names[level]);
    else if (ebb_log_format == EBB_LOG_KLOG) {
        clock_gettime(CLOCK_REALTIME, &ts);
        localtime_r(&ts.tv_sec, &tm);
        n = snprintf(buf, cap, "%c%02d%02d %02d:%02d:%02d.%06ld %7d %.64s:%d] ", "EWII"[level],
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000, (int)getpid(), base, line);
    } else {
        /* the file name is a C identifier's spelling: nothing in it to escape */
        clock_gettime(CLOCK_REALTIME, &ts);
        n = snprintf(buf, cap, "{\"ts\":%lld.%06ld,\"caller\":\"%.64s:%d\",\"level\":\"%s\",",
                     (long long)ts.tv_sec, ts.tv_nsec / 1000, base, line, names[level]);
        if (n > 0 && level >= EBB_LOG_INFO)
            n += snprintf(buf + n, cap - (size_t)n, "\"v\":%d,",
                          level == EBB_LOG_DEBUG ? EBB_LOG_DEBUG_V : 0);
        if (n > 0)
            n += snprintf(buf + n, cap - (size_t)n, "\"msg\":\"");
    }
    return n < 0 ? 0 : (size_t)n;
}

/* Quote `len` bytes of `s`, already escaped for a line, as the inside of a
 * JSON string: only '"' and '\\' are left to quote (EBB_ESC_LINE leaves no
 * control byte and only UTF-8). Returns the bytes written, at most `cap`;
 * a byte that does not fit ends the copy, never half of a pair. */
static size_t json_quote(char *out, size_t cap, const char *s, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        bool q = s[i] == '"' || s[i] == '\\';
        if (n + 1 + q > cap)
            break;
        if (q)
            out[n++] = '\\';
        out[n++] = s[i];
    }
    return n;
}

/* One record: the header in ebb_log_format and `len` bytes of `text`
 * escaped for a line, at most EBB_LOG_MAX bytes of it and its newline,
 * written whole.
 *
 * Invariant: this is the one place a record is written, and every byte of
 * `text` (a script's print, a pod's name, a server's answer) goes through
 * ebb_escape(EBB_ESC_LINE) here, in every format: a record is one line and,
 * in JSON, one object whose "msg" decodes to that escaped text. */
static void log_record(const char *file, int line_no, int level, const char *text, size_t len)
{
    char stack[1024], *line = NULL, *esc = NULL;
    size_t cap = 2 * EBB_LOG_MAX + 256, n, e, room;

    /* the counting pass stops at EBB_LOG_MAX: a huge text costs no more */
    e = ebb_escape(NULL, EBB_LOG_MAX + 1, text, len, EBB_ESC_LINE);
    if (2 * e + 256 > sizeof(stack))
        line = malloc(cap);
    if (line == NULL) {
        /* short, or out of memory: then the record is cut, still with its ellipsis */
        line = stack;
        cap = sizeof(stack);
    }
    n = log_header(line, cap - 8, file, line_no, level);
    /* the escaped text ends where a record of EBB_LOG_MAX bytes would */
    room = EBB_LOG_MAX + 1 > n + 64 ? EBB_LOG_MAX + 1 - n : 64;
    if (ebb_log_format != EBB_LOG_JSON) {
        n += ebb_escape(line + n, room < cap - 1 - n ? room : cap - 1 - n, text, len, EBB_ESC_LINE);
    } else {
        /* escaped first, then quoted: the JSON holds exactly the text records have */
        if (room > (cap - n - 8) / 2)
            room = (cap - n - 8) / 2;
        if ((esc = malloc(room + 1)) != NULL) {
            e = ebb_escape(esc, room + 1, text, len, EBB_ESC_LINE);
            n += json_quote(line + n, cap - 8 - n, esc, e);
            free(esc);
        }
        memcpy(line + n, "\"}", 2);
        n += 2;
    }
    line[n++] = '\n';
    flockfile(stderr);   /* one record at a time from any thread (ebb run has two) */
    fwrite(line, 1, n, stderr);
    funlockfile(stderr);
    if (line != stack)
        free(line);
}

void ebb_log_at(const char *file, int line, int level, const char *fmt, ...)
{
    char stack[1024], *msg = stack;
    va_list ap;
    int n;

    if (level > ebb_log_level)
        return;
    va_start(ap, fmt);
    n = vsnprintf(stack, sizeof(stack), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(stack)) {
        /* past EBB_LOG_MAX the record is cut anyway: format no more than that */
        size_t want = (size_t)n < EBB_LOG_MAX + 1 ? (size_t)n + 1 : EBB_LOG_MAX + 2;
        if ((msg = malloc(want)) == NULL) {
            msg = stack;
            n = sizeof(stack) - 1;
        } else {
            va_start(ap, fmt);
            vsnprintf(msg, want, fmt, ap);
            va_end(ap);
            n = (int)(want - 1);
        }
    }
    log_record(file, line, level, msg, (size_t)n);
    if (msg != stack)
        free(msg);
}

void ebb_log_text_at(const char *file, int line, int level, const char *prefix, const char *text,
                     size_t len)
{
    char stack[1024], *joined = stack;
    size_t plen = prefix ? strlen(prefix) : 0, n;

    if (level > ebb_log_level)
        return;
    if (text == NULL)
        len = 0;
    /* past EBB_LOG_MAX bytes the record is cut anyway: join no more than that */
    if (plen > EBB_LOG_MAX + 1)
        plen = EBB_LOG_MAX + 1;
    if (len > EBB_LOG_MAX + 1 - plen)
        len = EBB_LOG_MAX + 1 - plen;
    n = plen + len;
    if (n > sizeof(stack) && (joined = malloc(n)) == NULL) {
        joined = stack;
        n = sizeof(stack);
        if (plen > n)
            plen = n;
        len = n - plen;
    }
    memcpy(joined, prefix ? prefix : "", plen);
    memcpy(joined + plen, text ? text : "", len);
    log_record(file, line, level, joined, n);
    if (joined != stack)
        free(joined);
}

static int digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int ebb_time_parse(const char *s, int64_t *out)
{
    const char *p = s;
    int Y, M, D, h, m, sec, oh = 0, om = 0, sign = 0;
    static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

    if (s == NULL)
        return EBB_EPARSE;
    if (digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' ||
        digits(&p, 2, &D) || *p != 'T')
        return EBB_EPARSE;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' ||
        digits(&p, 2, &sec))
        return EBB_EPARSE;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9')
            return EBB_EPARSE;
        while (*p >= '0' && *p <= '9')
            p++;   /* sub-second precision is dropped, as metav1.Time does */
    }
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p++ == '-' ? -1 : 1;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om))
            return EBB_EPARSE;
    } else {
        return EBB_EPARSE;
    }
    if (*p != '\0')
        return EBB_EPARSE;
    if (M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || h > 23 || m > 59 || sec > 59 ||
        oh > 23 || om > 59)
        return EBB_EPARSE;
    if (M == 2 && D == 29 && !((Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0))
        return EBB_EPARSE;
    *out = days_from_civil(Y, M, D) * 86400 + h * 3600 + m * 60 + sec -
           sign * (oh * 3600 + om * 60);
    return 0;
}

void ebb_time_format(int64_t t, char *buf, size_t len)
{
    struct tm tm;
    time_t tt = (time_t)t;

    if (t == EBB_TIME_NONE || gmtime_r(&tt, &tm) == NULL) {
        snprintf(buf, len, "-");
        return;
    }
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int ebb_base64_decode(const char *in, size_t len, char **out)
{
    char *buf = malloc(len / 4 * 3 + 4);
    uint32_t acc = 0;
    size_t n = 0;
    int bits = 0, pad = 0;

    if (buf == NULL)
        return EBB_ENOMEM;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)in[i];
        int v;

        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
            continue;
        if (ch == '=') {
            pad++;
            continue;
        }
        if (pad > 0)
            goto bad;   /* data after padding */
        if (ch >= 'A' && ch <= 'Z')
            v = ch - 'A';
        else if (ch >= 'a' && ch <= 'z')
            v = ch - 'a' + 26;
        else if (ch >= '0' && ch <= '9')
            v = ch - '0' + 52;
        else if (ch == '+')
            v = 62;
        else if (ch == '/')
            v = 63;
        else
            goto bad;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[n++] = (char)(acc >> bits & 0xff);
        }
    }
    if (bits >= 6 || pad > 2)
        goto bad;   /* a lone sextet cannot encode a byte */
    buf[n] = '\0';
    *out = buf;
    return 0;
bad:
    free(buf);
    return EBB_EPARSE;
}

int64_t ebb_time_since(int64_t now, int64_t t)
{
    /* time.Duration is int64 nanoseconds: +-9223372036.854775807 s */
    const int64_t max = INT64_MAX / 1000000000;
    int64_t d;

    if (t == EBB_TIME_NONE)
        t = EBB_TIME_GO_ZERO;
    if (__builtin_sub_overflow(now, t, &d))
        return now > t ? max : -max;
    return d > max ? max : d < -max ? -max : d;
}

int ebb_duration_parse(const char *s, int64_t *ns)
{
    static const struct { const char *unit; int64_t ns; } units[] = {
        { "ns", 1 }, { "us", 1000 }, { "\xc2\xb5s", 1000 }, { "\xce\xbcs", 1000 },
        { "ms", 1000000 }, { "s", 1000000000 }, { "m", 60000000000 }, { "h", 3600000000000 },
    };
    double total = 0;
    int neg = 0;

    if (s == NULL || *s == '\0')
        return EBB_EPARSE;
    if (*s == '+' || *s == '-')
        neg = *s++ == '-';
    if (strcmp(s, "0") == 0) {
        *ns = 0;
        return 0;
    }
    if (*s == '\0')
        return EBB_EPARSE;
    while (*s) {
        double v = 0, scale = 1;
        int digits_seen = 0;
        size_t k, best = 0;
        int found = -1;

        while (*s >= '0' && *s <= '9') {
            v = v * 10 + (*s++ - '0');
            digits_seen = 1;
        }
        if (*s == '.') {
            s++;
            while (*s >= '0' && *s <= '9') {
                scale /= 10;
                v += (*s++ - '0') * scale;
                digits_seen = 1;
            }
        }
        if (!digits_seen)
            return EBB_EPARSE;
        for (k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
            size_t ul = strlen(units[k].unit);
            if (strncmp(s, units[k].unit, ul) == 0 && ul > best) {
                /* "m" must not swallow the "m" of "ms" */
                best = ul;
                found = (int)k;
            }
        }
        if (found < 0)
            return EBB_EPARSE;
        s += best;
        total += v * (double)units[found].ns;
        if (total > 9.2e18)
            return EBB_EPARSE;
    }
    *ns = (int64_t)(neg ? -total : total);
    return 0;
}

uint64_t ebb_fnv64(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ebb_dir_names(const char *dir, bool (*keep)(const char *name), char ***names, size_t *n,
                  struct ebb_error *err)
{
    DIR *dp = opendir(dir);
    struct dirent *de;
    char **v = NULL;
    size_t cnt = 0, cap = 0;

    *names = NULL;
    *n = 0;
    if (dp == NULL)
        return ebb_error_set(err, EBB_EIO, dir, 0, NULL, "cannot open directory: %s", strerror(errno));
    while ((de = readdir(dp)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            (keep != NULL && !keep(de->d_name)))
            continue;
        if (cnt == cap) {
            char **nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*nv));
            if (nv == NULL)
                goto nomem;
            v = nv;
        }
        if ((v[cnt] = strdup(de->d_name)) == NULL)
            goto nomem;
        cnt++;
    }
    closedir(dp);
    if (cnt > 1)
        qsort(v, cnt, sizeof(*v), cmp_names);
    *names = v;
    *n = cnt;
    return 0;
nomem:
    closedir(dp);
    ebb_names_free(v, cnt);
    return EBB_ENOMEM;
}

void ebb_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* ---- reading the files a user names ---------------------------------------- */

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

int ebb_file_open(const char *path, FILE **out, struct ebb_error *err)
{
    struct stat st;
    int fd, flags;
    FILE *f;

    if (path == NULL || out == NULL)
        return EBB_EINVAL;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
        return ebb_error_set(err, EBB_EIO, path, 0, NULL, "cannot open: %s", strerror(errno));
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ebb_error_set(err, EBB_EIO, path, 0, NULL, "cannot open: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ebb_error_set(err, EBB_EIO, path, 0, NULL, "%s, not a file: ebb reads files only",
                             file_kind(st.st_mode));
    }
    if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ||
        (f = fdopen(fd, "rb")) == NULL) {
        int e = errno;
        close(fd);
        return ebb_error_set(err, EBB_EIO, path, 0, NULL, "cannot open: %s", strerror(e));
    }
    *out = f;
    return 0;
}

int ebb_file_read(const char *path, size_t max, char **out, size_t *len, struct ebb_error *err)
{
    FILE *f = NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int rc;

    if (out == NULL || len == NULL)
        return EBB_EINVAL;
    if ((rc = ebb_file_open(path, &f, err)) != 0)
        return rc;
    for (;;) {
        size_t k;
        if (cap - n < 4096) {
            size_t ncap = cap ? cap * 2 : 16384;
            char *nb;
            if ((nb = realloc(buf, ncap)) == NULL) {
                rc = ebb_error_set(err, EBB_ENOMEM, path, 0, NULL, "out of memory");
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (n > max) {
            rc = ebb_error_set(err, EBB_ELIMIT, path, 0, NULL,
                               "larger than %zu MiB, more than ebb reads of such a file", max >> 20);
            goto fail;
        }
        if (k == 0)
            break;
    }
    if (ferror(f)) {
        rc = ebb_error_set(err, EBB_EIO, path, 0, NULL, "cannot read: %s", strerror(errno));
        goto fail;
    }
    fclose(f);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
fail:
    fclose(f);
    free(buf);
    return rc;
}

/* The character at p (n > 0 bytes left): its length, and its code point in
 * *cp; 0 when the byte at p starts no well-formed character (RFC 3629: no
 * overlong form, no surrogate, at most U+10FFFF, no sequence cut short). */
static size_t utf8_char(const unsigned char *p, size_t n, uint32_t *cp)
{
    uint32_t c = p[0], v, min;
    size_t k;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF)
        k = 1, v = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        k = 2, v = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        k = 3, v = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n <= k)
        return 0;
    for (size_t i = 1; i <= k; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (p[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return k + 1;
}

void ebb_trim(const char **s, size_t *n)
{
    while (*n > 0 && isspace((unsigned char)**s))
        (*s)++, (*n)--;
    while (*n > 0 && isspace((unsigned char)(*s)[*n - 1]))
        (*n)--;
}

bool ebb_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    uint32_t cp;

    while (p < end) {
        /* ASCII other than NUL, most of what a cluster holds, 8 bytes at
         * a time: no byte with its high bit set, none zero */
        if (end - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            if (((w | ((w & 0x7f7f7f7f7f7f7f7fULL) + 0x7f7f7f7f7f7f7f7fULL)) &
                 0x8080808080808080ULL) == 0x8080808080808080ULL &&
                (w & 0x8080808080808080ULL) == 0) {
                p += 8;
                continue;
            }
        }
        if (*p != 0 && *p < 0x80) {
            p++;
            continue;
        }
        size_t k = utf8_char(p, (size_t)(end - p), &cp);
        if (k == 0 || cp == 0)
            return false;
        p += k;
    }
    return true;
}

/* ---- escaping (see ebb/common.h) ------------------------------------------------ */

/* Where escaped text goes: buf NULL only counts (up to `limit`). `mark` is
 * the length after the last piece that still leaves room for the ellipsis. */
struct esc_out {
    char *buf;
    size_t n, limit, mark;
    bool full;
};

#define ELLIPSIS "\xe2\x80\xa6"   /* U+2026 */
#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

static void put(struct esc_out *o, const char *piece, size_t k)
{
    if (o->full)
        return;
    if (k > o->limit - o->n) {
        o->full = true;
        return;
    }
    if (o->buf != NULL)
        memcpy(o->buf + o->n, piece, k);
    o->n += k;
    if (o->limit - o->n >= sizeof(ELLIPSIS) - 1)
        o->mark = o->n;
}

/* The code points EBB_ESC_LINE writes as \uHHHH although they are valid:
 * C1 controls (U+009B is CSI to a terminal), line and paragraph separators,
 * and the bidirectional embeddings, overrides and isolates that make a
 * terminal show text in another order than it is. */
static bool line_unsafe(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

static void esc_char(struct esc_out *o, const char *p, size_t k, uint32_t cp, enum ebb_esc how)
{
    char tmp[16];
    int m;

    if (k == 0) {
        put(o, REPLACEMENT, sizeof(REPLACEMENT) - 1);
        return;
    }
    switch (how) {
    case EBB_ESC_UTF8:
        break;
    case EBB_ESC_JSON:
        if (cp == '"' || cp == '\\') {
            tmp[0] = '\\', tmp[1] = (char)cp;
            put(o, tmp, 2);
            return;
        }
        if (cp < 0x20 || cp == 0x2028 || cp == 0x2029) {
            const char *named = cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : cp == '\t' ? "\\t"
                              : cp == '\b' ? "\\b" : cp == '\f' ? "\\f" : NULL;
            if (named != NULL) {
                put(o, named, 2);
            } else {
                m = snprintf(tmp, sizeof(tmp), "\\u%04x", (unsigned)cp);
                put(o, tmp, (size_t)m);
            }
            return;
        }
        break;
    case EBB_ESC_LINE:
    case EBB_ESC_HTML:
        if (cp < 0x20 || cp == 0x7F) {
            const char *named = cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : cp == '\t' ? "\\t" : NULL;
            if (named != NULL) {
                put(o, named, 2);
            } else {
                m = snprintf(tmp, sizeof(tmp), "\\x%02x", (unsigned)cp);
                put(o, tmp, (size_t)m);
            }
            return;
        }
        if (line_unsafe(cp)) {
            m = snprintf(tmp, sizeof(tmp), "\\u%04x", (unsigned)cp);
            put(o, tmp, (size_t)m);
            return;
        }
        if (how == EBB_ESC_HTML) {
            const char *ref = cp == '&' ? "&amp;" : cp == '<' ? "&lt;" : cp == '>' ? "&gt;"
                            : cp == '"' ? "&quot;" : cp == '\'' ? "&#39;" : NULL;
            if (ref != NULL) {
                put(o, ref, strlen(ref));
                return;
            }
        }
        break;
    }
    put(o, p, k);
}

size_t ebb_escape(char *buf, size_t cap, const char *s, size_t len, enum ebb_esc how)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    struct esc_out o = { .buf = buf, .limit = cap > 0 ? cap - 1 : 0 };

    if (s == NULL)
        len = 0, p = end = NULL;
    while (p < end && !o.full) {
        uint32_t cp = 0xFFFD;
        size_t k = utf8_char(p, (size_t)(end - p), &cp);
        esc_char(&o, (const char *)p, k, cp, how);
        p += k ? k : 1;
    }
    if (o.full && o.limit >= sizeof(ELLIPSIS) - 1) {
        /* back to the last piece that leaves room, then say it was cut */
        o.n = o.mark;
        o.full = false;
        put(&o, ELLIPSIS, sizeof(ELLIPSIS) - 1);
    }
    if (buf != NULL && cap > 0)
        buf[o.n] = '\0';
    return o.n;
}

char *ebb_escape_dup(const char *s, size_t len, enum ebb_esc how, size_t max, size_t *outlen)
{
    size_t limit = max ? max : SIZE_MAX - 1, n;
    char *out;

    /* the counting pass stops at the limit, so a cut text costs O(max) */
    n = ebb_escape(NULL, limit + 1, s, len, how);
    if ((out = malloc(n + 1)) == NULL)
        return NULL;
    /* n + 1: the same cut as the count made (the text fits exactly, or ends in the ellipsis) */
    ebb_escape(out, n + 1, s, len, how);
    if (outlen != NULL)
        *outlen = n;
    return out;
}

struct cJSON *ebb_json_text(const char *s, size_t len)
{
    char *lit, *body;
    size_t n;
    cJSON *item;

    if (s == NULL)
        return cJSON_CreateNull();
    if ((body = ebb_escape_dup(s, len, EBB_ESC_JSON, 0, &n)) == NULL)
        return NULL;
    if ((lit = malloc(n + 3)) == NULL) {
        free(body);
        return NULL;
    }
    lit[0] = '"';
    memcpy(lit + 1, body, n);
    lit[n + 1] = '"';
    lit[n + 2] = '\0';
    free(body);
    /* a raw item: cJSON prints it as it is, and its own strings stop at a NUL */
    item = cJSON_CreateRaw(lit);
    free(lit);
    return item;
}

char *ebb_json_print(const struct cJSON *item, bool pretty)
{
    char *text, *out;

    if (item == NULL)
        return NULL;
    if ((text = pretty ? cJSON_Print(item) : cJSON_PrintUnformatted(item)) == NULL)
        return NULL;
    /* cJSON escapes quotes and controls and copies every other byte: the
     * only thing left to make valid is a string's bytes that are not UTF-8 */
    if (ebb_utf8_valid(text, strlen(text)))
        return text;
    out = ebb_escape_dup(text, strlen(text), EBB_ESC_UTF8, 0, NULL);
    free(text);
    return out;
}
