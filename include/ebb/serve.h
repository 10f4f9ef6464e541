/* ebb/serve.h: `ebb serve`, a recorded cluster served as a Kubernetes API
 * (for trying ebb run, kubectl and the integration tests without a cluster). */
#ifndef EBB_SERVE_H
#define EBB_SERVE_H

/* The `ebb serve ...` command: argv[1] is "serve". Returns the exit status. */
int ebb_serve_main(int argc, char **argv);

#endif
