/* ebb/reload.h: policy generations and hot reload.
 *
 * A generation is everything a policy run is made of: the policy file and
 * the plugins of the policy directories, on top of the built-in ones. It is
 * built complete and validated off to the side (ebb_generation_build) and
 * swapped in between cycles (ebb_engine_adopt) only if all of it is valid.
 *
 * Its content hash identifies it in logs and metrics: FNV-1a 64 over the
 * policy file and every file of every policy directory (names and bytes,
 * sorted; names starting with '.' are skipped, so a ConfigMap volume's
 * ..data and timestamped directories count once, through the links).
 *
 * The reloader watches the directory of the policy file and every policy
 * directory (a ConfigMap volume updates by swapping its `..data` link, which
 * shows in the directory, never in the linked file; a `subPath` mount never
 * updates at all), and calls back once changes have settled for the
 * debounce time. A slow poll catches what a file system does not report.
 */
#ifndef EBB_RELOAD_H
#define EBB_RELOAD_H

#include <uv.h>

#include "../ebb.h"

struct ebb_sources {
    const char *policy;
    const char *const *dirs;
    size_t ndirs;
};

/* 16 lowercase hex digits into hex[17]. EBB_EIO names what cannot be read. */
int ebb_sources_hash(const struct ebb_sources *s, char hex[17], struct ebb_error *err);

/* A complete engine for the sources: the built-in plugins, every plugin of
 * the directories, the policy loaded and bound. Policy warnings are logged.
 * On error nothing is left behind and `err` names file, line and field. */
int ebb_generation_build(const struct ebb_engine_opts *eo, const struct ebb_sources *s,
                         struct ebb_engine **out, struct ebb_error *err);

struct ebb_reloader;
typedef void (*ebb_reload_fn)(void *ud);

/* debounce_ms: quiet time after the last change; poll_ms: also call back
 * this often (0: never) so a change the file system did not report is
 * found; the callback compares hashes. */
int ebb_reloader_create(uv_loop_t *loop, const struct ebb_sources *s, uint64_t debounce_ms,
                        uint64_t poll_ms, ebb_reload_fn fn, void *ud, struct ebb_reloader **out);
/* Stop watching; `cb` (may be NULL) runs once every handle is closed. */
void ebb_reloader_close(struct ebb_reloader *r, void (*cb)(void *ud), void *ud);

#endif
