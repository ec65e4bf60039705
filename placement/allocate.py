"""The allocate action (actions/allocate/allocate.go).

Jobs with pending pods are taken in queue-tree order; each attempt places the job's next batch (the
rest of its gang, or one more pod of an elastic job) on a fresh statement, committed on success and
rolled back otherwise. A job with pods still pending goes back into the order, so elastic jobs grow a
pod at a time, interleaved with other queues by fairness.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from placement.placing import allocate_job, should_pipeline
from placement.queue_order import JobsOrder
from placement.statement import Statement
from placement.tasks import ALLOCATED_STATUS

if TYPE_CHECKING:
    from placement.session import Session
    from placement.tasks import JobState

__all__ = ["allocate"]


def pending_jobs(ssn: Session) -> list[JobState]:
    """Jobs allocate-like actions consider: pending pods, ready (pods >= minMember), in a leaf queue."""
    return [job for job in ssn.jobs.values() if job.has_pending() and ssn.schedulable_job(job)]


def eviction_triggers(ssn: Session) -> list[JobState]:
    """Pending jobs the evicting actions order: not within their preemption delay, which KAI drops before the
    order is built (FilterWithinPreemptionDelay, actions/utils/input_jobs.go:75), so such a job never sets its
    queue's place in the order."""
    return [job for job in pending_jobs(ssn) if not job.within_preemption_delay]


def allocate(ssn: Session) -> None:
    order = JobsOrder(ssn, pending_jobs(ssn))
    while True:
        job = order.pop()
        if job is None or ssn.out_of_time():
            return
        job.reached = True  # for its pending reason only (placement.reasons: not reached)
        stmt = Statement(ssn)
        already_allocated = any(t.status in ALLOCATED_STATUS for t in job.tasks)
        if allocate_job(ssn, stmt, job, pipeline_only=False):
            pipelined = should_pipeline(job)
            if pipelined:
                stmt.convert_allocated_to_pipelined(job.tasks)
            stmt.commit("allocate", job)
            if not pipelined and not already_allocated:
                job.started_ago = 0.0  # setLastStartTimestamp (allocate.go:62-67): minruntime counts from now
            job.reason = None
            if job.has_pending():
                order.push(job)
        else:
            stmt.discard()
