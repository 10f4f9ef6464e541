/* descheduler/v1alpha1 conversion and the YAML `ebb convert` prints: any
 * document converts or fails cleanly (ASan, LeakSanitizer), and any tree,
 * converted or not, printed as YAML reads back as the same tree (abort
 * otherwise): the emitter's quoting holds for every scalar and key. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "ebb/v1alpha1.h"

static bool has_nan(const struct ebb_val *v)
{
    if (v->type == EBB_VAL_FLOAT)
        return v->u.f != v->u.f;
    for (size_t i = 0; v->type == EBB_VAL_SEQ && i < v->u.seq.n; i++)
        if (has_nan(v->u.seq.items[i]))
            return true;
    for (size_t i = 0; v->type == EBB_VAL_MAP && i < v->u.map.n; i++)
        if (has_nan(v->u.map.vals[i]))
            return true;
    return false;
}

static void round_trip(const struct ebb_val *v)
{
    struct ebb_val *back = NULL;
    struct ebb_error err;
    char *yaml = NULL;
    size_t len;

    if (ebb_val_to_yaml(v, &yaml, &len) != 0)
        return;   /* deeper than the emitter goes, or out of memory */
    if (ebb_val_parse(yaml, len, "out.yaml", &back, &err) != 0 ||
        (!has_nan(v) && !ebb_val_equal(v, back))) {
        fprintf(stderr, "does not read back (%s):\n%s\n", err.msg, yaml);
        abort();
    }
    ebb_val_free(back);
    free(yaml);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ebb_val *root = NULL, *conv = NULL;
    struct ebb_error err;

    if (ebb_val_parse((const char *)data, size, "fuzz.yaml", &root, NULL) != 0)
        return 0;
    round_trip(root);
    if (ebb_v1alpha1_is(root) &&
        ebb_v1alpha1_convert(root, "fuzz.yaml", NULL, NULL, &conv, &err) == 0) {
        round_trip(conv);
        ebb_val_free(conv);
    }
    ebb_val_free(root);
    return 0;
}
