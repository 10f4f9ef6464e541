/* Shared by the libFuzzer targets in fuzz/: each defines
 * LLVMFuzzerTestOneInput and is built by `make fuzz` with clang,
 * -fsanitize=fuzzer,address,undefined; fuzz/run runs them. */
#ifndef EBB_FUZZ_H
#define EBB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ebb/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The input as a NUL-terminated string (malloc'd). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s == NULL)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* Quiet: errors are what most inputs produce. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    ebb_log_level = -1;
    return 0;
}

#endif
