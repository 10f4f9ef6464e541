/* `ebb serve`: not written yet. */
#include <stdio.h>

#include "ebb/serve.h"

int ebb_serve_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "ebb: error: serve is not available yet\n");
    return 1;
}
