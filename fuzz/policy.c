/* The policy loader: a descheduler/v1alpha2 DeschedulerPolicy in YAML or
 * JSON, every profile, plugin set, pluginConfig and limit checked. */
#include "fuzz.h"
#include "ebb/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ebb_policy *p = NULL;
    struct ebb_error err = { 0 };

    if (ebb_policy_parse((const char *)data, size, "fuzz.yaml", &p, &err) == 0)
        ebb_policy_free(p);
    return 0;
}
