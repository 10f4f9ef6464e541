/* ebb/explain.h: `ebb explain NAMESPACE/POD`, why a policy evicts a pod or
 * not (engine/cmd/explain.c). */
#ifndef EBB_EXPLAIN_H
#define EBB_EXPLAIN_H

/* argv[1] is "explain". Returns the exit status: 0 explained, 2 bad input
 * (flags, policy, snapshot, a pod that is not there), 1 anything else. */
int ebb_explain_main(int argc, char **argv);

#endif
