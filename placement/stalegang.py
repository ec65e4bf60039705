"""The stalegangeviction action (KAI@v0.17.0 pkg/scheduler/actions/stalegangeviction): runs last in a cycle.

A job is stale when it has a running pod and some leaf subgroup (the whole job, without subgroups) has
fewer active pods than its minimum, and it has no Succeeded pod (`api/podgroup_info/job_info.go`
IsStale). Once it has been stale for its grace period (the job's
`stalenessGracePeriod`, else the scheduler's default; negative: never), every pod of it that holds
resources (Allocated, Pipelined, Binding, Running) is evicted, so a half-started gang stops holding GPUs
that a whole one could use. How long a job has been stale comes from the scenario (`staleSeconds`,
KAI's `kai.scheduler/stale-podgroup-timestamp`); a job that just became stale has 0 s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from placement.statement import Statement
from placement.tasks import ACTIVE_ALLOCATED, SUCCEEDED, JobState

if TYPE_CHECKING:
    from placement.session import Session

__all__ = ["stale_gang_eviction"]


def is_stale(job: JobState) -> bool:
    if any(t.status == SUCCEEDED for t in job.tasks):
        return False
    if job.tree is not None:
        return job.n_active_used > 0 and job.tree.stale()
    return 0 < job.n_active_used < job.min_member


def stale_gang_eviction(ssn: Session) -> None:
    for job in ssn.jobs.values():
        if ssn.out_of_time():
            return
        if not is_stale(job):
            continue
        grace = job.spec.staleness_grace_seconds
        if grace is None:
            grace = ssn.placement.staleness_grace_seconds
        elapsed = job.spec.stale_seconds or 0.0
        if grace < 0 or elapsed < grace:
            continue
        victims = [t for t in job.tasks if t.status in ACTIVE_ALLOCATED]
        if not victims:
            continue
        stmt = Statement(ssn)
        for task in victims:
            stmt.evict(task)
        stmt.commit("stalegangeviction")
