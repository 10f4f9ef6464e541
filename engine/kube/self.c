/* Where ebb runs, as its pod sees it: see include/ebb/self.h. Called from
 * the loop thread at start (the Lease's namespace) and when an Event about
 * ebb itself is posted. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ebb/common.h"
#include "ebb/self.h"

/* A DNS-1123 label (a namespace's name) or subdomain (a pod's): what the
 * API server takes in a path, so a stray byte from a file or a variable
 * never reaches a URL. */
static bool dns_name(const char *s, size_t max, bool dots)
{
    size_t n = strlen(s);

    if (n == 0 || n > max || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
              (dots && s[i] == '.')))
            return false;
    return true;
}

int ebb_self_namespace(char *out, size_t outlen, char *why, size_t whylen)
{
    const char *path = getenv("EBB_SERVICEACCOUNT_NAMESPACE_FILE");
    char buf[256];
    size_t n;
    FILE *f;

    if (path == NULL || path[0] == '\0')
        path = EBB_SA_NAMESPACE_FILE;
    if ((f = fopen(path, "r")) == NULL) {
        snprintf(why, whylen, "%s: %s (not in a pod)", path, strerror(errno));
        return EBB_ENOENT;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    if (!dns_name(buf, 63, false) || n >= outlen) {
        snprintf(why, whylen, "%s: does not hold a namespace name", path);
        return EBB_EINVAL;
    }
    memcpy(out, buf, n + 1);
    return 0;
}

int ebb_self_pod(char *ns, size_t nslen, char *name, size_t namelen, char *why, size_t whylen)
{
    const char *pod = getenv("POD_NAME"), *pns = getenv("POD_NAMESPACE"), *host = getenv("HOSTNAME");
    char hbuf[256] = "";
    int rc;

    if (pod && pod[0] && pns && pns[0]) {
        if (!dns_name(pod, 253, true) || !dns_name(pns, 63, false) || strlen(pod) >= namelen ||
            strlen(pns) >= nslen) {
            snprintf(why, whylen, "POD_NAME=%.64s POD_NAMESPACE=%.64s do not name a pod", pod, pns);
            return EBB_EINVAL;
        }
        snprintf(ns, nslen, "%s", pns);
        snprintf(name, namelen, "%s", pod);
        return 0;
    }
    if ((rc = ebb_self_namespace(ns, nslen, why, whylen)) != 0)
        return rc;
    if (host == NULL || host[0] == '\0') {
        gethostname(hbuf, sizeof(hbuf) - 1);
        host = hbuf;
    }
    if (!dns_name(host, 253, true) || strlen(host) >= namelen) {
        snprintf(why, whylen, "the hostname \"%.64s\" is not a pod name (set POD_NAME)", host);
        return EBB_EINVAL;
    }
    snprintf(name, namelen, "%s", host);
    return 0;
}
