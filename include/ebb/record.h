/* ebb/record.h: `ebb record -o FILE`, a snapshot of the live cluster. */
#ifndef EBB_RECORD_H
#define EBB_RECORD_H

/* argv[1] is "record". Returns the exit status (0, 1, 2 for bad input). */
int ebb_record_main(int argc, char **argv);

#endif
