"""The consolidation action (actions/consolidation): move running pods to make room, evicting no one.

Only for preemptible pending jobs and binpack placement. Running preemptible pods are re-placed
(pipelined) elsewhere so the pending job fits; a solution is valid only if every moved pod found a
new place - queue allocations do not change.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from placement.allocate import eviction_triggers
from placement.idle_gpus_filter import idle_gpu_capacity, releasing_gpu_capacity
from placement.queue_order import JobsOrder
from placement.signatures import Representatives
from placement.solver import JobSolver, Scenario, feasible_nodes
from placement.tasks import KIND_MIG, RELEASING, JobState, mig_gpu_portion
from placement.victims_order import VictimsOrder

if TYPE_CHECKING:
    from placement.session import Session

__all__ = ["consolidation"]


def _all_reallocated(scenario: Scenario) -> bool:
    return all(t.status != RELEASING for _, tasks in scenario.victims().values() for t in tasks)


def _cluster_capacity(ssn: Session) -> tuple[float, int]:
    """Idle + releasing GPUs and GPU memory over the cluster (GetSumOfIdleGPUs + GetSumOfReleasingGPUs)."""
    gpus = 0.0
    mem = 0
    for node in ssn.node_list:
        if not node.spec.ready:
            continue  # getSumOfAvailableGPUs skips nodes that are not ready (actions/utils/action.go:203)
        idle = idle_gpu_capacity(node)
        rel = releasing_gpu_capacity(node)
        gpus += idle[0] + rel[0]
        mem += idle[1] + rel[1]
    return gpus, mem


def _enough_gpus(job: JobState, capacity: tuple[float, int]) -> bool:
    """IsEnoughGPUsAllocatableForJob: cluster-wide idle + releasing GPUs cover the next batch."""
    gpus, mem = capacity
    need_gpus = 0.0
    need_mem = 0
    for task in job.tasks_to_allocate(real=False):
        req = task.req
        need_gpus += req.gpus
        need_mem += req.gpu_memory
        if req.kind == KIND_MIG:
            for name, n in req.mig:
                need_gpus += mig_gpu_portion(name) * n
    return gpus >= need_gpus and mem >= need_mem


def _victims(ssn: Session, preemptor: JobState) -> VictimsOrder:
    """buildPreemptibleFilterFunc: preemptible jobs with running pods, at most max + 1 of them.

    KAI takes them in Go map order (unspecified); here the snapshot's order, so results are repeatable.
    """
    limit = ssn.max_consolidation_preemptees
    jobs: list[JobState] = []
    for job in ssn.jobs.values():
        if limit != -1 and len(jobs) > limit:
            break
        if job.preemptible and job is not preemptor and job.n_active_alloc > 0:
            jobs.append(job)
    return VictimsOrder(ssn, jobs)


def consolidation(ssn: Session) -> None:
    if not ssn.consolidation_enabled:
        return
    order = JobsOrder(ssn, [j for j in eviction_triggers(ssn) if j.preemptible])
    failed = Representatives()
    # The sum over every node is the same until a statement commits: a failed solve rolls back exactly.
    capacity: tuple[float, int] | None = None
    counted_at = -1
    while True:
        job = order.pop()
        if job is None or ssn.out_of_time():
            return
        job.reached = True
        if ssn.use_signatures and not failed.worth_trying(job):
            continue
        if ssn.victim_invariant_failure(job.tasks_to_allocate(real=False)) is not None:
            continue  # no eviction can make room (KAI's victim-invariant pre-predicate)
        statement = None
        if capacity is None or counted_at != ssn.commits:
            capacity, counted_at = _cluster_capacity(ssn), ssn.commits
        if _enough_gpus(job, capacity):
            solver = JobSolver(ssn, feasible_nodes(ssn, job), _all_reallocated, partial(_victims, ssn, job))
            statement = solver.solve(job)
        if statement is not None:
            statement.commit("consolidation", job)
        else:
            failed.failed(job)
