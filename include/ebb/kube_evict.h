/* ebb/kube_evict.h: live evictions against the API server.
 *
 * Where a live eviction is built, sent and answered: the policy/v1
 * Eviction's body and its POST to pods/NAME/eviction; the request an evict
 * plugin chose instead (DELETE, PATCH, a created object: lua_evictor.c
 * makes their paths with the helpers below); what an answer means (a 2xx
 * Status of "Failure" is a refusal, 429 is a budget's refusal for the
 * Eviction API only, unless the engine takes it for an eviction going on
 * in the background, 404 is a pod gone unless something was being
 * created); and the events.k8s.io Events: one on each pod evicted (or a
 * Warning when it failed and the policy asks for it), and those about ebb
 * itself (a policy that did not load, a plugin set aside).
 *
 * `ebb run` creates one, hands ebb_kube_evict_start to the engine
 * (ebb_engine_set_evictor) and learns each outcome through its done
 * callback. Loop thread only; the callbacks run in I/O callbacks (no Lua).
 */
#ifndef EBB_KUBE_EVICT_H
#define EBB_KUBE_EVICT_H

#include <stdbool.h>
#include <stddef.h>

#include "ebb.h"
#include "api_path.h"
#include "kube.h"

/* ---- what an answer means ------------------------------------------------------ */

/* The outcome of `ev`'s request answered `status` with `body`: EBB_WHY_OK,
 * EBB_WHY_PDB (429 to the Eviction API), EBB_WHY_NOT_FOUND (404, unless the
 * request created something) or EBB_WHY_API_ERROR; `msg` gets what the API
 * said ("" on success). */
int ebb_kube_evict_outcome(const struct ebb_eviction *ev, int status, const char *body, size_t len,
                           char *msg, size_t msglen);

/* The policy/v1 Eviction for `ev` (annotated with who asked and why),
 * malloc'd JSON; NULL when out of memory. */
char *ebb_kube_eviction_body(const struct ebb_eviction *ev);

/* An events.k8s.io/v1 Event, malloc'd JSON (NULL: out of memory). `name`
 * is the object's (the Event is named after it as client-go names them);
 * `uid` may be NULL. Every text (note, reason, action, instance) is escaped
 * for a line (EBB_ESC_LINE: valid UTF-8, no control byte) and cut, with an
 * ellipsis, to what the API server accepts (note: 1 KiB; reason, action,
 * reportingInstance: 128 bytes), whatever it holds. */
struct ebb_kube_event {
    const char *ns, *name, *uid;      /* the object it is about (a Pod unless kind says) */
    const char *kind, *api_version;   /* NULL: "Pod", "v1"; a cluster-scoped object has
                                       * ns NULL (the Event goes to "default") */
    const char *type;                 /* "Normal" | "Warning" */
    const char *reason, *action, *note;
    const char *instance;             /* reportingInstance */
};
char *ebb_kube_event_body(const struct ebb_kube_event *e);

/* ---- the live evictor ------------------------------------------------------------- */

struct ebb_kube_evict;

/* Each eviction's outcome, once its answer is in (then `ev` is the
 * caller's to finish: ebb_engine_eviction_done). */
typedef void (*ebb_kube_evict_done_fn)(void *ud, struct ebb_eviction *ev, int why, const char *msg);

/* `kube` and `engine` are borrowed for the evictor's life. The engine
 * (NULL: none) says whether a refusal is an eviction going on in the
 * background (EvictionsInBackground: EBB_WHY_BACKGROUND, no failure) and
 * whether its policy wants a Warning Event on a failed eviction
 * (evictionFailureEventNotification), as each answer comes in. */
int ebb_kube_evict_create(struct ebb_kube *kube, const struct ebb_engine *engine,
                          ebb_kube_evict_done_fn done, void *ud, struct ebb_kube_evict **out);
void ebb_kube_evict_destroy(struct ebb_kube_evict *ke);   /* NULL-safe */

/* Who ebb is in its Events (reportingInstance): the Lease identity when
 * leader election runs (copied), else NULL. */
int ebb_kube_evict_set_identity(struct ebb_kube_evict *ke, const char *identity);

/* The engine's evictor (ebb_engine_set_evictor with `ke` as ud): send `ev`;
 * 0, or EBB_WHY_API_ERROR when it could not be sent. */
int ebb_kube_evict_start(void *ke, struct ebb_eviction *ev);

/* Post `e` (an Event about any object: ebb_kube_event_body). */
void ebb_kube_evict_event(struct ebb_kube_evict *ke, const struct ebb_kube_event *e);

/* An Event about ebb itself, on its own Pod (ebb_self_pod: the downward
 * API's POD_NAME and POD_NAMESPACE, else the service account's namespace
 * and the hostname). When there is no pod, or the server refuses the
 * Event, the log says why (a warning). */
void ebb_kube_evict_self_event(struct ebb_kube_evict *ke, const char *type, const char *reason,
                               const char *note);

#endif
