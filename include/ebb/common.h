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

/* Fill `err` (may be NULL) and return `code`. `file`/`field` may be NULL. */
int ebb_error_set(struct ebb_error *err, int code, const char *file, int line,
                  const char *field, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* "file:line: field: msg" (parts that are empty are left out). */
void ebb_error_format(const struct ebb_error *err, char *buf, size_t len);

void ebb_error_clear(struct ebb_error *err);

/* Logging: one line to stderr, prefixed with the level. */
enum { EBB_LOG_OFF = -1, EBB_LOG_ERROR, EBB_LOG_WARN, EBB_LOG_INFO, EBB_LOG_DEBUG };
extern int ebb_log_level;
void ebb_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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

/* FNV-1a, 64 bits: content fingerprints (policy generations, modules);
 * chain calls by passing the previous result as `h` (start: EBB_FNV64_INIT). */
#define EBB_FNV64_INIT 0xcbf29ce484222325ull
uint64_t ebb_fnv64(uint64_t h, const void *data, size_t len);

#endif
