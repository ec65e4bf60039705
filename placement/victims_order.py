"""Which job is evicted first: KAI's victim order, the queue tree order and the job order reversed.

Reclaim, preempt and consolidation offer victims one at a time; each pop takes the queue KAI would
serve last (its key counting the victims already taken from it) and, inside it, the job it would
run last (lowest priority, most elastic surplus, youngest).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from placement.queue_order import ZERO, queue_values
from placement.queues import QueueState
from placement.tasks import ACTIVE_ALLOCATED, ALLOCATED_STATUS, JobState, TaskState

if TYPE_CHECKING:
    from placement.session import Session

__all__ = ["VictimJob", "VictimsOrder"]


class VictimJob:
    """A job (or the part of it not yet offered) as a candidate victim (KAI's CloneWithTasks)."""

    __slots__ = ("_alloc", "_key", "job", "tasks")

    def __init__(self, job: JobState, tasks: list[TaskState]) -> None:
        self.job = job
        self.tasks = tasks
        # (job version, value): the victim order reads these for every candidate at every pop, and they
        # change only with the job's pods' statuses, which bump its version.
        self._key: tuple[int, tuple[int, int, int, str]] | None = None
        self._alloc: tuple[int, list[float]] | None = None

    def active_allocated(self) -> list[TaskState]:
        return [t for t in self.tasks if t.status in ACTIVE_ALLOCATED]

    def allocated(self) -> list[float]:
        cached = self._alloc
        if cached is not None and cached[0] == self.job.version:
            return cached[1]
        total = [0.0, 0.0, 0.0]
        for t in self.tasks:
            if t.status in ALLOCATED_STATUS:
                a = t.accepted
                total[0] += a[0]
                total[1] += a[1]
                total[2] += a[2]
        self._alloc = (self.job.version, total)
        return total

    def order_key(self) -> tuple[int, int, int, str]:
        job = self.job
        cached = self._key
        if cached is not None and cached[0] == job.version:
            return cached[1]
        if job.tree is not None:
            key = (
                -job.priority,
                job.tree.clone(self.tasks, representative=False).elastic_rank(),
                job.creation,
                job.name,
            )
            self._key = (job.version, key)
            return key
        n = len(self.active_allocated())
        rank = 0 if n < job.min_member else (1 if n == job.min_member else 2)
        key = (-job.priority, rank, job.creation, job.name)
        self._key = (job.version, key)
        return key

    def tasks_to_evict(self) -> tuple[list[TaskState], bool]:
        """GetTasksToEvict: above minMember one pod at a time (lowest task order first), else all."""
        if self.job.tree is not None:
            active = self.active_allocated()
            chunk = self.job.tree.clone(self.tasks, representative=False).tasks_to_evict()
            # Pods in no subgroup of the tree (a subgroup-name that names none) are never offered: with
            # nothing offered now, offering the rest again would loop forever.
            return chunk, bool(chunk) and len(chunk) < len(active)
        active = sorted(self.active_allocated(), key=lambda t: t.order, reverse=True)
        take = active[:1] if len(active) > self.job.min_member else active
        return take, len(take) < len(active)


class VictimsOrder:
    """Candidate victims, worst job of the worst queue first (JobsOrderByQueues with VictimQueue).

    Each pop ranks every queue with victims below it, and a queue's rank depends on the best victims
    of its best children, so the best child and the key of each queue are worked out once per pop.
    Between pops the solver rolls back every simulation it tried, so the victims' pods are as they were
    at the first pop: a leaf's best victim (until its list changes) and the summed allocation of the
    victims already taken from it carry over from pop to pop. Queue allocations are read afresh (a
    rollback restores them only up to float rounding, and the order sees what KAI would see).
    """

    def __init__(self, ssn: Session, jobs: Iterable[JobState]) -> None:
        self.ssn = ssn
        self.leaves: dict[str, list[VictimJob]] = {}
        # Victims waiting in each queue's subtree.
        self.counts: dict[str, int] = {}
        self.tops = [q for q in ssn.queues.values() if q.parent is None]
        self._best: dict[str, QueueState] = {}
        self._keys: dict[str, tuple[Any, ...]] = {}
        self._leaf: dict[str, VictimJob] = {}
        self._taken: dict[str, list[float]] = {}
        # push() for each job, with each queue's count raised once per leaf rather than once per job.
        leaves = self.leaves
        for job in jobs:
            queue = job.queue
            if queue is not None and queue.is_leaf:
                victims = leaves.get(queue.name)
                if victims is None:
                    victims = leaves[queue.name] = []
                victims.append(VictimJob(job, list(job.tasks)))
        counts = self.counts
        for victims in leaves.values():
            for q in victims[0].job.queue.path:  # type: ignore[union-attr]
                counts[q.name] = counts.get(q.name, 0) + len(victims)

    def __bool__(self) -> bool:
        return any(self.leaves.values())

    def push(self, victim: VictimJob) -> None:
        queue = victim.job.queue
        self.leaves.setdefault(queue.name, []).append(victim)  # type: ignore[union-attr]
        self._leaf.pop(queue.name, None)  # type: ignore[union-attr]
        counts = self.counts
        for q in queue.path:  # type: ignore[union-attr]
            counts[q.name] = counts.get(q.name, 0) + 1

    def _leaf_best(self, name: str) -> VictimJob:
        best = self._leaf.get(name)
        if best is None:
            # VictimOrderFn reverses JobOrderFn: lowest priority, most elastic surplus, youngest first.
            best = self._leaf[name] = max(self.leaves[name], key=lambda v: v.order_key())
        return best

    def _leaf_of(self, queue: QueueState) -> QueueState:
        leaf = queue
        while not leaf.is_leaf:
            leaf = self._best_child(leaf)
        return leaf

    def _has_jobs(self, queue: QueueState) -> bool:
        return self.counts.get(queue.name, 0) > 0

    def _key(self, queue: QueueState) -> tuple[Any, ...]:
        key = self._keys.get(queue.name)
        if key is not None:
            return key
        # The victims taken from the queue's best leaf so far and its best one, summed in that order.
        leaf = self._leaf_of(queue)
        minus = list(self._taken.get(leaf.name, ZERO))
        a = self._leaf_best(leaf.name).allocated()
        minus[0] += a[0]
        minus[1] += a[1]
        minus[2] += a[2]
        key = self._keys[queue.name] = queue_values(self.ssn, queue, ZERO, minus)
        return key

    def _pick(self, candidates: list[QueueState]) -> QueueState:
        best = candidates[0]
        best_key = self._key(best)
        for q in candidates[1:]:
            key = self._key(q)
            if best_key < key:  # reversed queue order: the queue KAI would serve last goes first
                best, best_key = q, key
        return best

    def _best_child(self, queue: QueueState) -> QueueState:
        best = self._best.get(queue.name)
        if best is None:
            best = self._best[queue.name] = self._pick([c for c in queue.children if self._has_jobs(c)])
        return best

    def pop(self) -> VictimJob | None:
        # Nothing changes while one pop ranks the queues; the next pop starts afresh.
        self._best.clear()
        self._keys.clear()
        tops = [q for q in self.tops if self._has_jobs(q)]
        if not tops:
            return None
        queue = self._pick(tops)
        while not queue.is_leaf:
            queue = self._best_child(queue)
        victim = self._leaf_best(queue.name)
        self.leaves[queue.name].remove(victim)
        del self._leaf[queue.name]
        for q in queue.path:
            self.counts[q.name] -= 1
        taken = self._taken.setdefault(queue.name, [0.0, 0.0, 0.0])
        a = victim.allocated()
        taken[0] += a[0]
        taken[1] += a[1]
        taken[2] += a[2]
        return victim
