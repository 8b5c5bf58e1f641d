"""Leader election on a coordination.k8s.io/v1 Lease, and the fence that keeps two leaders from acting.

The guarantee: a replica's controllers write only while its lease is certainly still its own by the
replica's own clock. Every mutating request of the leader-only controllers (and of the event sender) goes
through a write gate (manager/client/writegate.py) checked synchronously right before the request is
written; the gate refuses (`NotLeader`) once `lease_duration - margin` has passed since the latest
successful renewal was *sent*. A leader paused longer than that (SIGSTOP, a stalled VM, a stop-the-world
pause) therefore never writes after it resumes: its first check finds the fence closed, and the manager
exits non-zero as on any lost lease.

The assumption, the one upstream's leaderelection.go states: the clocks of the replicas run at nearly the
same *rate* (no synchronised wall clocks are needed). The margin (10 % of the lease duration by default)
absorbs a rate difference plus the transit time of a write that passed the gate just before it closed; a
request already written before a pause, or a server that holds a write longer than the margin, is
outside what a client can fence (the API server has no fencing token for leases).
"""

from manager.leaderelection.elector import (
    HEALTH_TOLERANCE,
    JITTER_FACTOR,
    LeaderElector,
    default_identity,
    micro_time,
)
from manager.leaderelection.fence import LeaseFence, NotLeader, lease_clock
from manager.leaderelection.runnable import LeaderElectionRunnable

__all__ = [
    "HEALTH_TOLERANCE",
    "JITTER_FACTOR",
    "LeaderElectionRunnable",
    "LeaderElector",
    "LeaseFence",
    "NotLeader",
    "default_identity",
    "lease_clock",
    "micro_time",
]
