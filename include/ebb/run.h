/* ebb/run.h: `ebb run`, the descheduler against a live cluster. */
#ifndef EBB_RUN_H
#define EBB_RUN_H

/* argv[1] is "run". Returns the exit status: 0 done (one-shot run, or
 * stopped by SIGTERM/SIGINT), 2 bad input (flags, policy, scripts,
 * kubeconfig), 1 anything else. */
int ebb_run_main(int argc, char **argv);

#endif
