"""The reclaim action (actions/reclaim/reclaim.go): take resources back from queues over their share.

A pending job may reclaim only while its queue stays within fair share (non-preemptible: within
deserved quota). Victims are preemptible, running jobs of other queues that some strategy allows;
the evicted pods are Releasing and the reclaimer is Pipelined onto their resources.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from placement.allocate import eviction_triggers
from placement.queue_order import JobsOrder
from placement.reclaimable import ReclaimCheck, can_reclaim, filter_victim
from placement.signatures import Representatives
from placement.simulation_order import running_preemptible
from placement.solver import JobSolver, Scenario, feasible_nodes
from placement.tasks import ACTIVE_ALLOCATED, KIND_MEMORY, KIND_MIG, JobState, TaskState
from placement.victims_order import VictimsOrder

if TYPE_CHECKING:
    from placement.session import Session
    from placement.subgroups import PodSet

__all__ = ["reclaim"]


def _taken_by_queue(scenario: Scenario) -> dict[str, list[list[float]]]:
    """Resources of evicted victim pods per queue: elastic pods one by one, a gang's core as one. Each vector is
    [cpu, memory, GPUs with MIG, plain GPUs]: KAI's vector keeps MIG devices apart from the GPU entry, and only
    that entry makes GPU a resource the saturation check compares (getInvolvedResourcesNames)."""
    taken: dict[str, list[list[float]]] = {}
    for job, tasks in scenario.victims().values():
        elastic, core = _split_victim_tasks(job, tasks)
        vectors = [_accepted(task) for task in elastic if task.status not in ACTIVE_ALLOCATED]
        core_sum = [0.0, 0.0, 0.0, 0.0]
        counted = False
        for task in core:
            if task.status not in ACTIVE_ALLOCATED:
                counted = True
                for r, amount in enumerate(_accepted(task)):
                    core_sum[r] += amount
        if counted:
            vectors.append(core_sum)
        if vectors:
            taken.setdefault(job.queue_name, []).extend(vectors)
    return taken


def _accepted(task: TaskState) -> list[float]:
    cpu, mem, gpus = task.accepted
    return [cpu, mem, gpus, 0.0 if task.req.kind == KIND_MIG else gpus]


def _asks_plain_gpus(ssn: Session, tasks: list[TaskState]) -> bool:
    """Whether the reclaimer's init vector has a GPU entry (MIG devices are not in it; a gpu-memory request is,
    converted at the smallest GPU)."""
    return any(t.req.gpus > 0 or (t.req.kind == KIND_MEMORY and ssn.min_gpu_mem and t.req.gpu_memory) for t in tasks)


def _split_victim_tasks(job: JobState, tasks: list[TaskState]) -> tuple[list[TaskState], list[TaskState]]:
    """splitVictimTasks: (elastic, core), each subgroup's first minMember pods core (a job without subgroups is
    one subgroup whose minimum is the job's)."""
    if job.tree is None:
        return tasks[job.min_member :], tasks[: job.min_member]
    owner = {id(t): ps for ps in job.tree.pod_sets() for t in ps.tasks}
    by_pod_set: dict[int, tuple[PodSet, list[TaskState]]] = {}
    for task in tasks:
        pod_set = owner[id(task)]
        by_pod_set.setdefault(id(pod_set), (pod_set, []))[1].append(task)
    elastic: list[TaskState] = []
    core: list[TaskState] = []
    for pod_set, members in by_pod_set.values():
        core += members[: pod_set.min_available]
        elastic += members[pod_set.min_available :]
    return elastic, core


def _victims(ssn: Session, reclaimer: JobState, required: tuple[float, float, float]) -> VictimsOrder:
    queue = reclaimer.queue
    jobs = []
    # FilterVictim depends on the victim's queue only, so it is asked once per leaf queue.
    for leaf in ssn.queues.values():
        if leaf is queue or not leaf.is_leaf or not filter_victim(queue, required, leaf):  # type: ignore[arg-type]
            continue
        jobs += running_preemptible(ssn, leaf)
    if ssn.minruntime is not None:
        jobs = [job for job in jobs if ssn.minruntime.reclaim_victim(reclaimer, job)]
    return VictimsOrder(ssn, jobs)


def reclaim(ssn: Session) -> None:
    order = JobsOrder(ssn, eviction_triggers(ssn))
    failed: dict[str, Representatives] = {}  # per queue, as KAI keeps them
    while True:
        job = order.pop()
        if job is None or ssn.out_of_time():
            return
        job.reached = True
        queue = job.queue
        required = ssn.job_init_resources(job)
        if not can_reclaim(queue, required, job.preemptible):  # type: ignore[arg-type]
            continue
        representatives = failed.setdefault(job.queue_name, Representatives())
        if ssn.use_signatures and not representatives.worth_trying(job):
            continue
        if ssn.victim_invariant_failure(job.tasks_to_allocate(real=False)) is not None:
            continue  # no eviction can make room (KAI's victim-invariant pre-predicate)
        check = ReclaimCheck(ssn.queues)

        def validator(scenario: Scenario, job: JobState = job, check: ReclaimCheck = check) -> bool:
            pending = scenario.preemptor.tasks
            needed = ssn.init_resources(job, pending)
            gpu_entry = _asks_plain_gpus(ssn, pending)
            if not check.reclaimable(job.queue, needed, gpu_entry, job.preemptible, _taken_by_queue(scenario)):  # type: ignore[arg-type]
                return False
            return ssn.minruntime is None or ssn.minruntime.reclaim_scenario(scenario)

        solver = JobSolver(ssn, feasible_nodes(ssn, job), validator, partial(_victims, ssn, job, required))
        statement = solver.solve(job)
        if statement is not None:
            statement.commit("reclaim", job)
        else:
            representatives.failed(job)
