/* The API server's request paths of objects (include/ebb/api_path.h):
 * plain text, for every layer that names an object to the server (the live
 * evictor, a custom evictor's request, ebb serve's tests). */
#include <stdio.h>
#include <string.h>

#include "ebb/api_path.h"

int ebb_api_pod_path(char *buf, size_t len, const char *ns, const char *name)
{
    int n = snprintf(buf, len, "/api/v1/namespaces/%s/pods/%s", ns, name);
    return n < 0 || (size_t)n >= len ? EBB_EINVAL : 0;
}

int ebb_api_collection_path(char *buf, size_t len, const char *api_version, const char *ns,
                             const char *resource)
{
    int n = snprintf(buf, len, "%s%s%s%s/%s", strcmp(api_version, "v1") == 0 ? "/api/" : "/apis/",
                     api_version, ns ? "/namespaces/" : "", ns ? ns : "", resource);
    return n < 0 || (size_t)n >= len ? EBB_EINVAL : 0;
}
