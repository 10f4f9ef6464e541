/* Policy generations and the reloader; see ebb/reload.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ebb/reload.h"

/* ---- the content hash ------------------------------------------------------- */

/* Invariant: the hash is a function of the content alone, never of how the
 * paths were spelled (dir, dir/, ./dir, an absolute path, a symlink): the
 * policy's bytes, then for each --policy-dir in order (the order decides
 * which script wins) every visible file's path relative to that directory
 * and its bytes. Each record is framed (a tag, the name with its NUL, the
 * byte count after the bytes), so moving bytes from one file to another or
 * a file between directories cannot give the same stream. Every input of
 * the hash goes through hash_file/hash_dir below. */

static int hash_file(uint64_t *h, const char *path, struct ebb_error *err)
{
    char buf[65536];
    uint64_t total = 0;
    size_t n;
    FILE *f;
    int rc;

    if ((rc = ebb_file_open(path, &f, err)) != 0)
        return rc;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        *h = ebb_fnv64(*h, buf, n);
        total += n;
    }
    if (ferror(f)) {
        fclose(f);
        return ebb_error_set(err, EBB_EIO, path, 0, NULL, "cannot read: %s", strerror(errno));
    }
    fclose(f);
    *h = ebb_fnv64(*h, &total, sizeof(total));
    return 0;
}

static bool visible(const char *name)
{
    return name[0] != '.';
}

/* Every file under dir, sorted by name, with its path relative to the
 * --policy-dir (rel, "" at the top) and its bytes; depth-limited (modules
 * may sit in subdirectories, ConfigMap volumes are flat). */
static int hash_dir(uint64_t *h, const char *dir, const char *rel, int depth, struct ebb_error *err)
{
    char **names, path[PATH_MAX], relpath[PATH_MAX];
    size_t n;
    int rc;

    if ((rc = ebb_dir_names(dir, visible, &names, &n, err)) != 0)
        return rc;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        snprintf(relpath, sizeof(relpath), "%s%s%s", rel, rel[0] != '\0' ? "/" : "", names[i]);
        if (stat(path, &st) != 0)
            continue;   /* a dangling link, or a file gone meanwhile */
        if (S_ISDIR(st.st_mode)) {
            if (depth < 4)
                rc = hash_dir(h, path, relpath, depth + 1, err);
        } else if (S_ISREG(st.st_mode)) {
            *h = ebb_fnv64(*h, "F", 1);
            *h = ebb_fnv64(*h, relpath, strlen(relpath) + 1);
            rc = hash_file(h, path, err);
        }
    }
    ebb_names_free(names, n);
    return rc;
}

int ebb_sources_hash(const struct ebb_sources *s, char hex[17], struct ebb_error *err)
{
    uint64_t h = EBB_FNV64_INIT;
    int rc;

    if ((rc = hash_file(&h, s->policy, err)) != 0)
        return rc;
    for (size_t i = 0; i < s->ndirs; i++) {
        uint64_t index = i;
        /* the directory's place in the list, not its spelling */
        h = ebb_fnv64(h, "D", 1);
        h = ebb_fnv64(h, &index, sizeof(index));
        if ((rc = hash_dir(&h, s->dirs[i], "", 0, err)) != 0)
            return rc;
    }
    snprintf(hex, 17, "%016llx", (unsigned long long)h);
    return 0;
}

/* ---- building a generation -------------------------------------------------- */

int ebb_generation_build(const struct ebb_engine_opts *eo, const struct ebb_sources *s,
                         struct ebb_engine **out, struct ebb_error *err)
{
    struct ebb_engine *e = NULL;
    struct ebb_policy *policy = NULL;
    int rc;

    if ((rc = ebb_engine_create(eo, &e, err)) != 0)
        return rc;
    if ((rc = ebb_engine_load_builtins(e, err)) != 0)
        goto fail;
    for (size_t i = 0; i < s->ndirs; i++)
        if ((rc = ebb_engine_register_lua_dir(e, s->dirs[i], err)) != 0)
            goto fail;
    if ((rc = ebb_policy_load(s->policy, &policy, err)) != 0)
        goto fail;
    for (size_t i = 0; i < policy->nwarnings; i++)
        ebb_log(EBB_LOG_WARN, "%s", policy->warnings[i]);
    if ((rc = ebb_engine_set_policy(e, policy, err)) != 0)
        goto fail;
    *out = e;
    return 0;
fail:
    ebb_policy_free(policy);
    ebb_engine_destroy(e);
    return rc;
}

/* ---- the reloader ------------------------------------------------------------- */

struct ebb_reloader {
    uv_loop_t *loop;
    size_t nwatch;
    uv_fs_event_t *watch;
    uv_timer_t debounce, poll;
    uint64_t debounce_ms;
    ebb_reload_fn fn;
    void *ud;
    int open_handles;
    void (*closed)(void *ud);
    void *closed_ud;
};

static void on_debounced(uv_timer_t *t)
{
    struct ebb_reloader *r = t->data;
    r->fn(r->ud);
}

static void on_poll(uv_timer_t *t)
{
    struct ebb_reloader *r = t->data;
    /* a change still settling is the debounce timer's */
    if (!uv_is_active((uv_handle_t *)&r->debounce))
        r->fn(r->ud);
}

static void on_fs(uv_fs_event_t *h, const char *filename, int events, int status)
{
    struct ebb_reloader *r = h->data;
    (void)filename;
    (void)events;
    if (status < 0)
        ebb_log(EBB_LOG_WARN, "watching %s: %s", h->path ? h->path : "?", uv_strerror(status));
    uv_timer_start(&r->debounce, on_debounced, r->debounce_ms, 0);
}

/* The directory a file lives in ("." for a bare name). */
static void dir_of(const char *path, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL)
        snprintf(out, len, ".");
    else if (slash == path)
        snprintf(out, len, "/");
    else
        snprintf(out, len, "%.*s", (int)(slash - path), path);
}

/* A directory that cannot be watched (inotify limits, a file system
 * without change events) is still polled: a warning, not a failure. */
static void watch(struct ebb_reloader *r, const char *dir, uint64_t poll_ms)
{
    uv_fs_event_t *h = &r->watch[r->nwatch];
    int rc;

    uv_fs_event_init(r->loop, h);
    h->data = r;
    r->nwatch++;
    r->open_handles++;
    if ((rc = uv_fs_event_start(h, on_fs, dir, 0)) != 0)
        ebb_log(EBB_LOG_WARN, "%s: cannot watch for changes (%s); %s", dir, uv_strerror(rc),
                poll_ms ? "polling it instead" : "reload with SIGHUP");
}

static void handle_closed(uv_handle_t *h)
{
    struct ebb_reloader *r = h->data;

    if (--r->open_handles > 0)
        return;
    if (r->closed)
        r->closed(r->closed_ud);
    free(r->watch);
    free(r);
}

void ebb_reloader_close(struct ebb_reloader *r, void (*cb)(void *ud), void *ud)
{
    if (r == NULL) {
        if (cb)
            cb(ud);
        return;
    }
    r->closed = cb;
    r->closed_ud = ud;
    for (size_t i = 0; i < r->nwatch; i++)
        uv_close((uv_handle_t *)&r->watch[i], handle_closed);
    uv_close((uv_handle_t *)&r->debounce, handle_closed);
    uv_close((uv_handle_t *)&r->poll, handle_closed);
}

int ebb_reloader_create(uv_loop_t *loop, const struct ebb_sources *s, uint64_t debounce_ms,
                        uint64_t poll_ms, ebb_reload_fn fn, void *ud, struct ebb_reloader **out)
{
    struct ebb_reloader *r = calloc(1, sizeof(*r));
    char dir[PATH_MAX];

    if (r == NULL || (r->watch = calloc(s->ndirs + 1, sizeof(*r->watch))) == NULL) {
        free(r);
        return EBB_ENOMEM;
    }
    r->loop = loop;
    r->debounce_ms = debounce_ms;
    r->fn = fn;
    r->ud = ud;
    uv_timer_init(loop, &r->debounce);
    uv_timer_init(loop, &r->poll);
    r->debounce.data = r->poll.data = r;
    r->open_handles = 2;
    dir_of(s->policy, dir, sizeof(dir));
    watch(r, dir, poll_ms);
    for (size_t i = 0; i < s->ndirs; i++)
        watch(r, s->dirs[i], poll_ms);
    if (poll_ms > 0)
        uv_timer_start(&r->poll, on_poll, poll_ms, poll_ms);
    *out = r;
    return 0;
}
