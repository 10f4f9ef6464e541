/* ebb/explain.h: `ebb explain NAMESPACE/POD`, why ebb does (or does not)
 * evict one pod: the cycle run as `ebb simulate` runs it, with the engine
 * observing that pod (ebb_engine_observe), and what the filters, the
 * limits, the PodDisruptionBudgets, the scheduler model and the memory of
 * evictions say about it. docs/explain.md describes the output. */
#ifndef EBB_EXPLAIN_H
#define EBB_EXPLAIN_H

/* argv[1] is "explain". Returns the exit status (0, 1, 2 for bad input). */
int ebb_explain_main(int argc, char **argv);

#endif
