"""The solver's orders as they were before issue 14's speed work: the references the fast ones must match.

`reference_orders()` switches a simulation to them: every solver simulation pops the full JobsOrder
over every pending job and offers every feasible node (simulation_order.REFERENCE), queue keys are
computed afresh instead of memoised, the victim order ranks the queue tree by plain recursion reading
each victim's key and allocation from its pods, the actions collect victims by scanning every job, and
consolidation sums the cluster's free GPUs for every job.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from placement import consolidation, preempt, queue_order, reclaim, simulation_order
from placement.queue_order import queue_values
from placement.queues import QueueState
from placement.reclaimable import filter_victim
from placement.session import Session
from placement.tasks import ACTIVE_ALLOCATED, ALLOCATED_STATUS, JobState
from placement.victims_order import VictimJob

_ZERO = (0.0, 0.0, 0.0)


def _allocated(victim: VictimJob) -> list[float]:
    total = [0.0, 0.0, 0.0]
    for t in victim.tasks:
        if t.status in ALLOCATED_STATUS:
            for r in range(3):
                total[r] += t.accepted[r]
    return total


def _order_key(victim: VictimJob) -> tuple[int, int, int, str]:
    job = victim.job
    n = sum(1 for t in victim.tasks if t.status in ACTIVE_ALLOCATED)
    rank = 0 if n < job.min_member else (1 if n == job.min_member else 2)
    return (-job.priority, rank, job.creation, job.name)


class ReferenceVictimsOrder:
    """Candidate victims, worst job of the worst queue first, every key worked out where it is needed."""

    def __init__(self, ssn: Session, jobs: Iterable[JobState]) -> None:
        self.ssn = ssn
        self.leaves: dict[str, list[VictimJob]] = {}
        self.popped: dict[str, list[VictimJob]] = {}
        for job in jobs:
            if job.queue is not None and job.queue.is_leaf:
                self.push(VictimJob(job, list(job.tasks)))

    def push(self, victim: VictimJob) -> None:
        self.leaves.setdefault(victim.job.queue.name, []).append(victim)  # type: ignore[union-attr]

    def _leaf_best(self, name: str) -> VictimJob:
        return max(self.leaves[name], key=_order_key)

    def _victims_of(self, queue: QueueState) -> list[VictimJob]:
        leaf = queue
        while not leaf.is_leaf:
            leaf = self._best_child(leaf)
        return [*self.popped.get(leaf.name, []), self._leaf_best(leaf.name)]

    def _has_jobs(self, queue: QueueState) -> bool:
        if queue.is_leaf:
            return bool(self.leaves.get(queue.name))
        return any(self._has_jobs(c) for c in queue.children)

    def _key(self, queue: QueueState) -> tuple[Any, ...]:
        minus = [0.0, 0.0, 0.0]
        for victim in self._victims_of(queue):
            a = _allocated(victim)
            for r in range(3):
                minus[r] += a[r]
        return queue_values(self.ssn, queue, _ZERO, minus)

    def _pick(self, candidates: list[QueueState]) -> QueueState:
        best = candidates[0]
        best_key = self._key(best)
        for q in candidates[1:]:
            key = self._key(q)
            if best_key < key:
                best, best_key = q, key
        return best

    def _best_child(self, queue: QueueState) -> QueueState:
        return self._pick([c for c in queue.children if self._has_jobs(c)])

    def pop(self) -> VictimJob | None:
        tops = [q for q in self.ssn.queues.values() if q.parent is None and self._has_jobs(q)]
        if not tops:
            return None
        queue = self._pick(tops)
        while not queue.is_leaf:
            queue = self._best_child(queue)
        victim = self._leaf_best(queue.name)
        self.leaves[queue.name].remove(victim)
        self.popped.setdefault(queue.name, []).append(victim)
        return victim


def _fresh_queue_values(ssn: Session, queue: QueueState, extra: tuple[float, float, float]) -> tuple[Any, ...]:
    return queue_values(ssn, queue, extra, _ZERO)


def _has_running(job: JobState) -> bool:
    return any(t.status in ACTIVE_ALLOCATED for t in job.tasks)


def _reclaim_victims(ssn: Session, reclaimer: JobState, required: tuple[float, float, float]) -> ReferenceVictimsOrder:
    queue = reclaimer.queue
    jobs = [
        job
        for job in ssn.jobs.values()
        if job.queue is not None
        and job.queue is not queue
        and job.preemptible
        and _has_running(job)
        and filter_victim(queue, required, job.queue)  # type: ignore[arg-type]
    ]
    return ReferenceVictimsOrder(ssn, jobs)


def _preempt_victims(ssn: Session, preemptor: JobState) -> ReferenceVictimsOrder:
    jobs = [
        job
        for job in ssn.jobs.values()
        if job.preemptible
        and job.priority < preemptor.priority
        and job.queue is preemptor.queue
        and job is not preemptor
        and _has_running(job)
    ]
    return ReferenceVictimsOrder(ssn, jobs)


def _consolidation_victims(ssn: Session, preemptor: JobState) -> ReferenceVictimsOrder:
    limit = ssn.max_consolidation_preemptees
    jobs: list[JobState] = []
    for job in ssn.jobs.values():
        if limit != -1 and len(jobs) > limit:
            break
        if job.preemptible and job is not preemptor and _has_running(job):
            jobs.append(job)
    return ReferenceVictimsOrder(ssn, jobs)


_cluster_capacity = consolidation._cluster_capacity
_enough_gpus = consolidation._enough_gpus


def _enough_gpus_counted_now(job: JobState, ssn: Any) -> bool:
    return _enough_gpus(job, _cluster_capacity(ssn))


@contextmanager
def reference_orders() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(simulation_order, "REFERENCE", True)
        patch.setattr(queue_order, "job_queue_values", _fresh_queue_values)
        patch.setattr(reclaim, "_victims", _reclaim_victims)
        patch.setattr(preempt, "_victims", _preempt_victims)
        patch.setattr(consolidation, "_victims", _consolidation_victims)
        # The consolidation loop's cached sum is replaced by the session, and the sum made on every call.
        patch.setattr(consolidation, "_cluster_capacity", lambda ssn: ssn)
        patch.setattr(consolidation, "_enough_gpus", _enough_gpus_counted_now)
        yield
