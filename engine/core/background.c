/* Evictions in background; see ebb/background.h.
 *
 * Upstream keys its cache by pod uid. The watch reports a deleted pod by
 * namespace and name only, so entries are found by (namespace, name) and
 * carry the uid: a pod of the same name with another uid is a new pod, and
 * the entry of the old one ends as if it had been deleted. */
#include <stdlib.h>
#include <string.h>

#include "ebb.h"
#include "ebb/background.h"
#include "base/map.h"

struct ebb_background {
    struct ebb_map items;      /* (ns, name) -> struct ebb_background_item * */
    struct ebb_map per_node;   /* (node, -) -> count */
    struct ebb_map per_ns;     /* (ns, -) -> count */
};

int ebb_background_create(struct ebb_background **out)
{
    struct ebb_background *bg;

    if (out == NULL)
        return EBB_EINVAL;
    if ((bg = calloc(1, sizeof(*bg))) == NULL)
        return EBB_ENOMEM;
    ebb__map_init(&bg->items);
    ebb__map_init(&bg->per_node);
    ebb__map_init(&bg->per_ns);
    *out = bg;
    return 0;
}

static void item_free(struct ebb_background_item *it)
{
    ebb_str_release(it->ns);
    ebb_str_release(it->name);
    ebb_str_release(it->uid);
    ebb_str_release(it->node);
    ebb_str_release(it->profile);
    ebb_str_release(it->plugin);
    free(it);
}

void ebb_background_destroy(struct ebb_background *bg)
{
    if (bg == NULL)
        return;
    for (size_t i = 0; i < bg->items.cap; i++)
        if (ebb__map_live(&bg->items, i))
            item_free(bg->items.s[i].v);
    ebb__map_free(&bg->items);
    ebb__counts_free(&bg->per_node);
    ebb__counts_free(&bg->per_ns);
    free(bg);
}

bool ebb_background_annotated(const struct ebb_pod *pod, const char *key)
{
    ebb_str k = ebb_str_find(key, strlen(key)), v;

    return pod != NULL && k != NULL && ebb_labels_lookup(&pod->annotations, k, &v);
}

static struct ebb_background_item *item_of(const struct ebb_background *bg, ebb_str ns,
                                           ebb_str name)
{
    return ns && name ? ebb__map_get(&bg->items, ns, name) : NULL;
}

static void item_delete(struct ebb_background *bg, struct ebb_background_item *it)
{
    ebb__map_del(&bg->items, it->ns, it->name);
    ebb__count_add(&bg->per_node, it->node, -1);
    ebb__count_add(&bg->per_ns, it->ns, -1);
    item_free(it);
}

/* A new entry for the pod (counted); NULL when out of memory. */
static struct ebb_background_item *item_add(struct ebb_background *bg, ebb_str ns, ebb_str name,
                                            ebb_str uid, ebb_str node)
{
    struct ebb_background_item *it = calloc(1, sizeof(*it));

    if (it == NULL)
        return NULL;
    it->ns = ebb_str_ref(ns);
    it->name = ebb_str_ref(name);
    it->uid = ebb_str_ref(uid);
    it->node = ebb_str_ref(node);
    if (ebb__count_add(&bg->per_node, node, 1) != 0)
        goto fail;
    if (ebb__count_add(&bg->per_ns, ns, 1) != 0) {
        ebb__count_add(&bg->per_node, node, -1);
        goto fail;
    }
    if (ebb__map_put(&bg->items, it->ns, it->name, it, NULL) != 0) {
        ebb__count_add(&bg->per_node, node, -1);
        ebb__count_add(&bg->per_ns, ns, -1);
        goto fail;
    }
    return it;
fail:
    item_free(it);
    return NULL;
}

static bool same_pod(const struct ebb_background_item *it, ebb_str uid)
{
    return it->uid == NULL || uid == NULL || it->uid == uid;
}

static bool finished(const struct ebb_pod *pod)
{
    return pod->phase == EBB_PHASE_SUCCEEDED || pod->phase == EBB_PHASE_FAILED;
}

void ebb_background_observe(struct ebb_background *bg, ebb_str ns, ebb_str name,
                            const struct ebb_pod *pod, ebb_background_done_fn done, void *ud)
{
    struct ebb_background_item *it;
    bool had;

    if (bg == NULL || (it = item_of(bg, ns, name)) == NULL) {
        /* not tracked: only a pod with both annotations, still running, is */
        if (bg == NULL || pod == NULL || finished(pod) ||
            !ebb_background_annotated(pod, EBB_ANNOTATION_REQUEST_EVICT_ONLY) ||
            !ebb_background_annotated(pod, EBB_ANNOTATION_EVICTION_IN_PROGRESS))
            return;
        if ((it = item_add(bg, ns, name, pod->uid, pod->node)) != NULL)
            it->in_progress = true;
        return;
    }
    if (pod == NULL || !same_pod(it, pod->uid)) {
        /* deleted (evicted, or migrated away): an assumed eviction is done */
        if (it->assumed && done != NULL)
            done(ud, it);
        item_delete(bg, it);
        if (pod != NULL)
            ebb_background_observe(bg, ns, name, pod, done, ud);
        return;
    }
    if (!ebb_background_annotated(pod, EBB_ANNOTATION_REQUEST_EVICT_ONLY) || finished(pod)) {
        item_delete(bg, it);
        return;
    }
    had = it->in_progress;
    it->in_progress = ebb_background_annotated(pod, EBB_ANNOTATION_EVICTION_IN_PROGRESS);
    /* the annotation removed: the eviction was restarted or given up, and
     * may be asked again; never there yet: an assumed eviction waits */
    if (!it->in_progress && had)
        item_delete(bg, it);
}

int ebb_background_assume(struct ebb_background *bg, ebb_str ns, ebb_str name, ebb_str uid,
                          ebb_str node, const struct ebb_pod *pod, const char *profile,
                          const char *plugin, int64_t now)
{
    struct ebb_background_item *it;

    if (bg == NULL || ns == NULL || name == NULL)
        return EBB_EINVAL;
    if ((it = item_of(bg, ns, name)) != NULL && !same_pod(it, uid)) {
        item_delete(bg, it);
        it = NULL;
    }
    if (it != NULL && it->assumed)
        return 0;   /* the first to ask keeps it */
    if (it == NULL && (it = item_add(bg, ns, name, uid, node)) == NULL)
        return EBB_ENOMEM;
    it->assumed = true;
    it->assumed_at = now;
    it->profile = ebb_str_cstr(profile);
    it->plugin = ebb_str_cstr(plugin);
    if (pod != NULL && pod->uid == it->uid)
        it->in_progress = ebb_background_annotated(pod, EBB_ANNOTATION_EVICTION_IN_PROGRESS);
    return 0;
}

void ebb_background_expire(struct ebb_background *bg, int64_t now)
{
    if (bg == NULL)
        return;
    for (size_t i = 0; i < bg->items.cap; i++) {
        struct ebb_background_item *it;
        if (!ebb__map_live(&bg->items, i))
            continue;
        it = bg->items.s[i].v;
        if (it->assumed && now - it->assumed_at > EBB_BACKGROUND_ASSUMED_TIMEOUT) {
            ebb_log(EBB_LOG_INFO, "eviction in background of pod %s/%s not seen for %d s: "
                                  "forgotten", it->ns, it->name, EBB_BACKGROUND_ASSUMED_TIMEOUT);
            item_delete(bg, it);
        }
    }
}

bool ebb_background_has(const struct ebb_background *bg, const struct ebb_pod *pod)
{
    const struct ebb_background_item *it = bg && pod ? item_of(bg, pod->ns, pod->name) : NULL;

    return it != NULL && same_pod(it, pod->uid);
}

uint32_t ebb_background_on_node(const struct ebb_background *bg, ebb_str node)
{
    return bg ? ebb__count_get(&bg->per_node, node) : 0;
}

uint32_t ebb_background_in_namespace(const struct ebb_background *bg, ebb_str ns)
{
    return bg ? ebb__count_get(&bg->per_ns, ns) : 0;
}

size_t ebb_background_count(const struct ebb_background *bg)
{
    return bg ? bg->items.live : 0;
}
