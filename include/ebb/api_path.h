/* ebb/api_path.h: where an object lives on the API server. */
#ifndef EBB_API_PATH_H
#define EBB_API_PATH_H

#include <stddef.h>

#include "common.h"

/* "/api/v1/namespaces/NS/pods/NAME" into buf. EBB_EINVAL when it does not fit. */
int ebb_api_pod_path(char *buf, size_t len, const char *ns, const char *name);
/* The collection of `resource` (a plural) in `api_version` ("v1" is the
 * core group under /api, anything else under /apis), in namespace `ns`, or
 * cluster-scoped when ns is NULL. EBB_EINVAL when it does not fit. */
int ebb_api_collection_path(char *buf, size_t len, const char *api_version, const char *ns,
                            const char *resource);

#endif
