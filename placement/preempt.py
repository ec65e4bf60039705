"""The preempt action (actions/preempt/preempt.go): higher-priority jobs evict lower ones in their queue.

Victims are preemptible jobs of the same queue with strictly lower priority and running pods; the
preemptor must stay within non-preemptible quota. No fairness validator applies.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from placement.allocate import eviction_triggers
from placement.queue_order import JobsOrder
from placement.queues import over_quota
from placement.signatures import Representatives
from placement.simulation_order import running_preemptible
from placement.solver import JobSolver, feasible_nodes
from placement.tasks import JobState
from placement.victims_order import VictimsOrder

if TYPE_CHECKING:
    from placement.session import Session

__all__ = ["preempt"]


def _victims(ssn: Session, preemptor: JobState) -> VictimsOrder:
    jobs = [
        job
        for job in running_preemptible(ssn, preemptor.queue)  # type: ignore[arg-type]  # a pending job's queue is a leaf
        if job.priority < preemptor.priority and job is not preemptor
    ]
    if ssn.minruntime is not None:
        jobs = [job for job in jobs if ssn.minruntime.preempt_victim(job)]
    return VictimsOrder(ssn, jobs)


def preempt(ssn: Session) -> None:
    order = JobsOrder(ssn, eviction_triggers(ssn))
    failed: dict[str, Representatives] = {}  # per queue, as KAI keeps them
    while True:
        job = order.pop()
        if job is None or ssn.out_of_time():
            return
        job.reached = True
        representatives = failed.setdefault(job.queue_name, Representatives())
        if ssn.use_signatures and not representatives.worth_trying(job):
            continue
        if ssn.victim_invariant_failure(job.tasks_to_allocate(real=False)) is not None:
            continue  # no eviction can make room (KAI's victim-invariant pre-predicate)
        if not job.preemptible:
            requested = ssn.required_quota(job.tasks_to_allocate(real=False))
            if over_quota(job.queue, requested) is not None:  # type: ignore[arg-type]
                # KAI returns no search result here, which its loop reads as a failed search (preempt.go:106-108).
                representatives.failed(job)
                continue
        validator = ssn.minruntime.preempt_scenario if ssn.minruntime is not None else None
        solver = JobSolver(ssn, feasible_nodes(ssn, job), validator, partial(_victims, ssn, job))
        statement = solver.solve(job)
        if statement is not None:
            statement.commit("preempt", job)
        else:
            representatives.failed(job)
