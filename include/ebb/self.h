/* ebb/self.h: where ebb runs, as a pod sees it without extra environment.
 * The one place that reads the service account's namespace file and the
 * downward API's POD_NAME/POD_NAMESPACE: the Lease's default namespace and
 * the pod that Events about ebb itself are posted on both come from here. */
#ifndef EBB_SELF_H
#define EBB_SELF_H

#include <stddef.h>

/* The file a pod's service account namespace is read from; the
 * environment variable EBB_SERVICEACCOUNT_NAMESPACE_FILE names another
 * (tests, or a layout that mounts the token elsewhere). */
#define EBB_SA_NAMESPACE_FILE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

/* The namespace of the pod ebb runs in, from the service account's
 * namespace file: 0 and the name in `out`; EBB_ENOENT outside a pod (no
 * file), EBB_EINVAL when the file does not hold a namespace name (a DNS-1123
 * label), with why in `why`. */
int ebb_self_namespace(char *out, size_t outlen, char *why, size_t whylen);

/* ebb's own pod: POD_NAME and POD_NAMESPACE (the downward API, as deploy/
 * sets them), else the service account's namespace and the hostname (a
 * pod's hostname is its name unless spec.hostname says otherwise: the
 * HOSTNAME variable, else gethostname()). 0, or an EBB_E* code with why in
 * `why` (no pod to post on). */
int ebb_self_pod(char *ns, size_t nslen, char *name, size_t namelen, char *why, size_t whylen);

#endif
