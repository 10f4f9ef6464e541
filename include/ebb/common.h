/* ebb/common.h: error codes, the error record, small shared helpers.
 *
 * Every unit includes this. Functions return 0 on success or a negative
 * EBB_E* code; when the caller passes a struct ebb_error, the failing
 * function fills it with the file, line and field the user has to fix.
 */
#ifndef EBB_COMMON_H
#define EBB_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>

#define EBB_VERSION "0.1.0"

/* A command whose engine and cache are the last things the process holds
 * leaves them to the operating system, which takes the memory back at
 * once, where freeing a large cluster object by object costs a tenth of a
 * second or more (150,000 pods). Under AddressSanitizer everything is
 * freed, so its leak check still sees what they own. */
#if defined(__SANITIZE_ADDRESS__)
#define EBB_FREE_AT_EXIT 1
#else
#define EBB_FREE_AT_EXIT 0
#endif

enum {
    EBB_OK = 0,
    EBB_EINVAL = -1,   /* bad argument from the caller (a bug) */
    EBB_ENOMEM = -2,
    EBB_EIO = -3,      /* a file could not be read or written */
    EBB_EPARSE = -4,   /* input is not well-formed JSON/YAML */
    EBB_ESCHEMA = -5,  /* input is well-formed but says something wrong */
    EBB_EEXIST = -6,   /* a name registered twice */
    EBB_ENOENT = -7,   /* a name that is not registered / not found */
    EBB_ESCRIPT = -8,  /* a Lua script failed to load or run */
    EBB_ELIMIT = -9,   /* a script ran past its memory or time budget */
    EBB_ESTATE = -10,  /* call not valid in the current state */
};

const char *ebb_strerror(int rc);

/* Where a user's input went wrong. `file` is the path the user gave, `line`
 * is 1-based (0 when unknown), `field` is a dotted path such as
 * "profiles[0].pluginConfig[1].args.thresholds.cpu" (may be empty). */
struct ebb_error {
    int code;
    int line;
    char file[256];
    char field[256];
    char msg[768];
};

/* Fill `err` (may be NULL) and return `code`. `file`/`field` may be NULL.
 * The three texts are escaped for a line (EBB_ESC_LINE: they name what a
 * user wrote, whatever bytes it holds) and cut with an ellipsis when they do
 * not fit. */
int ebb_error_set(struct ebb_error *err, int code, const char *file, int line,
                  const char *field, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* "file:line: field: msg" (parts that are empty are left out), cut with an
 * ellipsis when it does not fit in `len`. */
void ebb_error_format(const struct ebb_error *err, char *buf, size_t len);

/* No error: code and line 0, the three texts empty. Only their first bytes
 * are written (every writer ends what it writes): an error is cleared for
 * each object a load or a sync reads, and zeroing 1.3 KB each time was
 * about 1% of a 150k-pod load. */
void ebb_error_clear(struct ebb_error *err);

/* Logging: one record per line to stderr, the message escaped for a line
 * (EBB_ESC_LINE below): whatever a script printed, a pod was named or a
 * server answered, a record is one line, holds no control byte and is
 * UTF-8, so no text can forge another record or drive the terminal. A
 * record longer than EBB_LOG_MAX bytes is cut, ending in "...".
 * ebb_log_text logs `prefix` (may be NULL) and `len` bytes of `text`, which
 * may hold NUL bytes (printed as \x00), the way scripts' text is logged.
 *
 * ebb_log_format picks how a record starts:
 *   EBB_LOG_PLAIN  "ebb: warning: msg" (the short commands: simulate, check)
 *   EBB_LOG_KLOG   klog's header: "W1128 05:56:24.123456   12345 run.c:812] msg"
 *                  (local time, as klog; pid; the C file and line that logged)
 *   EBB_LOG_JSON   component-base's JSON logger: one object a line,
 *                  {"ts":1764309384.123456,"caller":"run.c:812","level":"warning","v":0,"msg":"..."}
 *                  ("v" on info and debug records only, as component-base
 *                  writes it; ebb's records are messages, so there are no
 *                  other keys)
 * Debug records are klog's V(3): `--v=3` and up shows them. */
enum { EBB_LOG_OFF = -1, EBB_LOG_ERROR, EBB_LOG_WARN, EBB_LOG_INFO, EBB_LOG_DEBUG };
enum { EBB_LOG_PLAIN, EBB_LOG_KLOG, EBB_LOG_JSON };
#define EBB_LOG_DEBUG_V 3
#define EBB_LOG_MAX 16384
extern int ebb_log_level;
extern int ebb_log_format;
void ebb_log_at(const char *file, int line, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void ebb_log_text_at(const char *file, int line, int level, const char *prefix, const char *text,
                     size_t len);
/* macros so that a record can name the file and line that logged it */
#define ebb_log(...) ebb_log_at(__FILE__, __LINE__, __VA_ARGS__)
#define ebb_log_text(...) ebb_log_text_at(__FILE__, __LINE__, __VA_ARGS__)

#define EBB_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Time as seconds since the epoch. EBB_TIME_NONE: the field was absent. */
#define EBB_TIME_NONE INT64_MIN
/* RFC 3339 as Go's time.RFC3339 parses it (metav1.Time): "2026-01-02T03:04:05Z",
 * fractional seconds and +hh:mm offsets accepted; upper-case T and Z only,
 * seconds 0-59 -> seconds since the epoch. Returns 0 or EBB_EPARSE. */
int ebb_time_parse(const char *s, int64_t *out);
/* seconds -> "2026-01-02T03:04:05Z" into buf (at least 21 bytes). */
void ebb_time_format(int64_t t, char *buf, size_t len);
/* Go's zero time.Time (0001-01-01T00:00:00Z) in seconds since the epoch: what
 * an absent metav1.Time is to upstream's arithmetic. */
#define EBB_TIME_GO_ZERO (-62135596800LL)
/* now - t in whole seconds as upstream computes it
 * (uint(metav1.Now().Sub(t).Seconds())): EBB_TIME_NONE counts as Go's zero
 * time, and the difference saturates as a time.Duration does (about
 * +-292 years), so it never overflows. */
int64_t ebb_time_since(int64_t now, int64_t t);

/* Standard base64 (RFC 4648), whitespace ignored, padding optional (a
 * kubeconfig's -data fields, a Secret's data). The result is NUL-terminated;
 * *out is the caller's. Returns 0, EBB_ENOMEM, or EBB_EPARSE on a character
 * or length that is not base64. */
int ebb_base64_decode(const char *in, size_t len, char **out);

/* A Go time.ParseDuration string ("90s", "1h30m", "1.5h", "300ms", "-2m")
 * -> nanoseconds. Returns 0 or EBB_EPARSE (empty, no unit except "0",
 * unknown unit, overflow). */
int ebb_duration_parse(const char *s, int64_t *ns);

/* The entries of `dir` that `keep` accepts (NULL: all but "." and ".."),
 * sorted by name; free them with ebb_names_free. EBB_EIO names the dir. */
int ebb_dir_names(const char *dir, bool (*keep)(const char *name), char ***names, size_t *n,
                  struct ebb_error *err);
void ebb_names_free(char **names, size_t n);

/* Files a user names. ebb_file_open opens `path` for reading if it is a
 * regular file: a character device (/dev/zero), a FIFO, a socket or a
 * directory is refused with an error naming it (opening a FIFO does not
 * wait for a writer). ebb_file_read reads all of one, at most `max` bytes
 * (EBB_ELIMIT beyond), NUL-terminated; *out is the caller's to free. */
int ebb_file_open(const char *path, FILE **out, struct ebb_error *err);
int ebb_file_read(const char *path, size_t max, char **out, size_t *len, struct ebb_error *err);
/* The bounds of what ebb reads whole. */
#define EBB_MAX_YAML ((size_t)64 << 20)         /* a policy, a kubeconfig, a test file */
#define EBB_MAX_SCRIPT ((size_t)16 << 20)       /* a Lua file */

/* Valid UTF-8 (RFC 3629: no overlong forms, no surrogates, at most
 * U+10FFFF) and no NUL byte. */
bool ebb_utf8_valid(const char *s, size_t n);
/* [*s, *s + *n) without the white space (isspace) at either end. */
void ebb_trim(const char **s, size_t *n);

/* ---- writing text that came from outside --------------------------------------
 *
 * Text a script, an object, a server or a file gave ebb reaches people and
 * programs through a few writers: the log, the plan's table and JSON, the
 * Events ebb posts, error messages, `ebb test`'s report and the HTML report.
 * Each writer puts every such text through ebb_escape, which is where the
 * invariant holds: what comes out is valid UTF-8 (every byte that does not
 * start a well-formed character, RFC 3629, becomes U+FFFD), holds nothing
 * the destination would take for structure, and is never cut in the middle
 * of a character; what does not fit ends in an ellipsis (U+2026), never
 * silently. NUL bytes are text like any other: they are escaped, not an end.
 *
 *   EBB_ESC_LINE  one line for a person (log, table, terminal, Event note):
 *                 \n \r \t, other C0 controls and DEL as \xHH, C1 controls,
 *                 U+2028/U+2029 and bidirectional overrides as \uHHHH.
 *                 Idempotent: escaping its output again changes nothing.
 *   EBB_ESC_JSON  the inside of a JSON string (RFC 8259): " and \ escaped,
 *                 controls as \n \r \t \b \f or \u00HH (NUL: \u0000),
 *                 U+2028/U+2029 as \u2028/\u2029.
 *   EBB_ESC_HTML  EBB_ESC_LINE, then & < > " ' as character references.
 *   EBB_ESC_UTF8  only the U+FFFD replacement (a whole JSON text ebb printed).
 */
enum ebb_esc { EBB_ESC_LINE, EBB_ESC_JSON, EBB_ESC_HTML, EBB_ESC_UTF8 };

/* Escape `len` bytes of `s` into `buf` (`cap` bytes, always NUL-terminated
 * when cap > 0). What does not fit in cap - 1 bytes is cut at a character
 * boundary and ends in "\u2026" (when cap >= 4). Returns the bytes written. */
size_t ebb_escape(char *buf, size_t cap, const char *s, size_t len, enum ebb_esc how);
/* The same, malloc'd: the whole text when `max` is 0, else at most `max`
 * bytes as above. *outlen (may be NULL) gets the length. NULL: out of memory. */
char *ebb_escape_dup(const char *s, size_t len, enum ebb_esc how, size_t max, size_t *outlen);

/* JSON output. ebb_json_text: a cJSON item that prints as the JSON string
 * of `len` bytes of `s` escaped with EBB_ESC_JSON (NUL kept as \u0000, which
 * a cJSON string cannot hold), or null when `s` is NULL. ebb_json_print:
 * cJSON_Print(Unformatted) with every byte that is not UTF-8 replaced, for
 * strings that reached the tree any other way (a request body a script
 * built). Both NULL when out of memory. Every JSON document ebb writes for
 * people or programs goes through ebb_json_print. */
struct cJSON;
struct cJSON *ebb_json_text(const char *s, size_t len);
char *ebb_json_print(const struct cJSON *item, bool pretty);

/* FNV-1a, 64 bits: content fingerprints (policy generations, modules);
 * chain calls by passing the previous result as `h` (start: EBB_FNV64_INIT). */
#define EBB_FNV64_INIT 0xcbf29ce484222325ull
uint64_t ebb_fnv64(uint64_t h, const void *data, size_t len);

/* "did you mean": the one name of names[0..n) nearest to `name` (letters
 * compared without case; an insertion, deletion, substitution or swap of
 * neighbours counts one) when it is near enough to be a typo (1 edit under
 * 6 characters, 2 under 12, else 3), else NULL (also when two are equally
 * near). Returns a pointer into names (borrowed). */
const char *ebb_nearest_name(const char *name, const char *const *names, size_t n);

#endif
