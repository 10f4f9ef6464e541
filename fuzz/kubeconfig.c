/* The kubeconfig loader: contexts, clusters, users, the current context.
 * It reads a file by name: the input goes into a memfd, named through
 * /proc/self/fd (a regular file, as the loader requires). */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "ebb/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    struct ebb_kube_config *c = NULL;
    struct ebb_error err = { 0 };

    if (fd < 0) {
        if ((fd = memfd_create("kubeconfig", 0)) < 0)
            abort();
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    if (ebb_kube_config_load(path, NULL, &c, &err) == 0)
        ebb_kube_config_free(c);
    return 0;
}
