/* ebb/leader.h: leader election with a coordination.k8s.io/v1 Lease, as
 * client-go's leaderelection does it: acquire when the lease is free or has
 * not changed for its duration (judged by when this instance last saw it
 * change, not by the holder's clock), renew every retry period, give up
 * leadership the moment renewal has failed for the renew deadline, and
 * release the lease (empty holder) on shutdown. Loop thread only. */
#ifndef EBB_LEADER_H
#define EBB_LEADER_H

#include <uv.h>

#include "kube.h"

struct ebb_leader;

struct ebb_leader_opts {
    const char *ns;              /* default: the pod's own (ebb_self_namespace), else "kube-system" */
    const char *name;            /* default "descheduler" */
    const char *identity;        /* default "<hostname>_<random>" */
    double lease_s;              /* default 137 */
    double renew_deadline_s;     /* default 107 */
    double retry_s;              /* default 26 */
};

/* Called on every change of leadership (from a timer or I/O callback: do
 * not run Lua in it). */
typedef void (*ebb_leader_fn)(void *ud, bool leading);

int ebb_leader_create(uv_loop_t *loop, struct ebb_kube *kube, const struct ebb_leader_opts *o,
                      ebb_leader_fn fn, void *ud, struct ebb_leader **out);
void ebb_leader_start(struct ebb_leader *l);
bool ebb_leader_leading(const struct ebb_leader *l);
const char *ebb_leader_identity(const struct ebb_leader *l);
/* Why the lease cannot be read or written ("update lease NS/NAME: 403
 * ..."), NULL while every answer is one the protocol expects. */
const char *ebb_leader_error(const struct ebb_leader *l);
/* Stop; if leading, release the lease first. `cb` runs when freed. */
void ebb_leader_close(struct ebb_leader *l, void (*cb)(void *ud), void *ud);

#endif
