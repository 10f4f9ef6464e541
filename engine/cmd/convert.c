/* `ebb convert FILE [--output yaml|json]`: the v1alpha2 policy that a
 * descheduler/v1alpha1 policy is converted to, on stdout, for a user who
 * moves off v1alpha1 (upstream removed it in v0.31.0). The conversion is the
 * one the loader does (core/v1alpha1.c), and the file is first checked as
 * `ebb check` checks it (the policy and every plugin's args), so that what is printed is what would run and a
 * bad file gets the loader's error (file, line, field). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ebb.h"
#include "ebb/simulate.h"
#include "ebb/convert.h"
#include "ebb/v1alpha1.h"

#define EXIT_INPUT 2

static void usage(FILE *f)
{
    fputs("usage: ebb convert FILE [--output yaml|json]\n"
          "  prints the descheduler/v1alpha2 policy that the descheduler/v1alpha1 policy FILE\n"
          "  is converted to (as upstream v0.30 converted it); ebb loads FILE the same way\n", f);
}

/* The loader's warnings say it all already; the conversion's own are
 * printed once by the load. */
static int quiet(void *ud, int line, const char *field, const char *msg)
{
    (void)ud, (void)line, (void)field, (void)msg;
    return 0;
}

static int print_error(const struct ebb_error *err)
{
    char buf[1400];

    ebb_error_format(err, buf, sizeof(buf));
    fprintf(stderr, "ebb: error: %s\n", buf);
    return err->code == EBB_ENOMEM ? 1 : EXIT_INPUT;
}

int ebb_convert_main(int argc, char **argv)
{
    const char *file = NULL, *format = "yaml";
    struct ebb_sim_opts so = { 0 };
    struct ebb_engine *e = NULL;
    struct ebb_val *root = NULL, *conv = NULL;
    struct ebb_error err;
    char *text = NULL;
    int rc;

    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--output") == 0 || strcmp(argv[i], "-o") == 0) {
            if (++i == argc) {
                fprintf(stderr, "ebb: error: %s needs a value: yaml or json\n", argv[i - 1]);
                return EXIT_INPUT;
            }
            format = argv[i];
        } else if (strncmp(argv[i], "--output=", 9) == 0) {
            format = argv[i] + 9;
        } else if (argv[i][0] == '-' || file != NULL) {
            fprintf(stderr, "ebb: error: convert: unexpected argument \"%s\"\n", argv[i]);
            usage(stderr);
            return EXIT_INPUT;
        } else {
            file = argv[i];
        }
    }
    if (strcmp(format, "yaml") != 0 && strcmp(format, "json") != 0) {
        fprintf(stderr, "ebb: error: --output: \"%s\" is not yaml or json\n", format);
        return EXIT_INPUT;
    }
    if (file == NULL) {
        fprintf(stderr, "ebb: error: convert needs a policy FILE\n");
        usage(stderr);
        return EXIT_INPUT;
    }
    /* As `ebb check` does: the policy and every plugin's args. */
    so.policy = file;
    if ((rc = ebb_simulate(&so, &e, &err)) != 0)
        return print_error(&err);
    ebb_engine_destroy(e);
    ebb_evmem_free(&so.memory);
    if ((rc = ebb_val_load(file, &root, &err)) != 0)
        return print_error(&err);
    if (!ebb_v1alpha1_is(root)) {
        ebb_val_free(root);
        fprintf(stderr, "ebb: error: %s: apiVersion: not \"" EBB_V1ALPHA1_API_VERSION "\": only "
                "v1alpha1 policies are converted (this one loads as it is)\n", file);
        return EXIT_INPUT;
    }
    rc = ebb_v1alpha1_convert(root, file, quiet, NULL, &conv, &err);
    ebb_val_free(root);
    if (rc != 0)
        return print_error(&err);
    if (strcmp(format, "json") == 0) {
        cJSON *j = ebb_val_to_cjson(conv);
        text = j ? cJSON_Print(j) : NULL;
        cJSON_Delete(j);
    } else if (ebb_val_to_yaml(conv, &text, NULL) != 0) {
        text = NULL;
    }
    ebb_val_free(conv);
    if (text == NULL) {
        fprintf(stderr, "ebb: error: out of memory\n");
        return 1;
    }
    fputs(text, stdout);
    if (strcmp(format, "json") == 0)
        fputc('\n', stdout);
    free(text);
    return fflush(stdout) == 0 ? 0 : 1;
}
