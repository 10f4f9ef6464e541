/* ebb/convert.h: `ebb convert FILE`, a descheduler/v1alpha1 policy printed
 * as the descheduler/v1alpha2 policy ebb runs. */
#ifndef EBB_CONVERT_H
#define EBB_CONVERT_H

/* argv[1] is "convert". Returns the exit status: 0 printed, 2 bad input
 * (flags, a file that is not a valid v1alpha1 policy), 1 anything else. */
int ebb_convert_main(int argc, char **argv);

#endif
