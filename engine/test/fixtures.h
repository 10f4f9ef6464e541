/* Shared by the C unit tests: cmocka and small helpers. */
#ifndef EBB_TEST_FIXTURES_H
#define EBB_TEST_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Read a file from the repository (tests run from the top directory). */
static inline char *fixture_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    fclose(f);
    return buf;
}

#endif
