"""Which job goes next: the queue tree order (proportion queue_order.go) over KAI's JobsOrderByQueues.

At every level of the queue hierarchy the best child queue is chosen by, in turn: not over its fair
share; starved (allocated + job within deserved); higher priority; no allocation where its allocatable
share is 0; smaller dominant resource share with the job (DRF), then without it; smaller allocatable
share; older queue. Inside a leaf, jobs go by the job order (priority, elastic state, age, name).

For pending jobs the tree is a heap per queue with cached keys, re-keyed lazily when a queue's
allocation or best job changes (KAI's needsReorder + Fix(0)), so each pop costs O(depth log width).
Victim order (reclaim/preempt/consolidation) reverses both orders and is evaluated by direct scan.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from placement.model import UNLIMITED
from placement.queues import QueueState, less_equal
from placement.tasks import ACTIVE_ALLOCATED, ALLOCATED_STATUS, JobState, TaskState

if TYPE_CHECKING:
    from placement.session import Session

__all__ = ["JobsOrder", "VictimJob", "VictimsOrder", "job_queue_keys", "job_queue_values", "queue_values"]


_ZERO = (0.0, 0.0, 0.0)


def _dominant_share(values: Sequence[float], allocatable: Sequence[float], total: Sequence[float]) -> float:
    share = 0.0
    for r in range(3):
        a = allocatable[r]
        if a == UNLIMITED:
            a = total[r]
        v = values[r] * 1000 if a == 0 else values[r] / a
        if v > share:
            share = v
    return share


class _ShareTie:
    """Last two criteria: smaller allocatable share (a partial order), then the older queue."""

    __slots__ = ("creation", "share")

    def __init__(self, share: Sequence[float], creation: int) -> None:
        self.share = share
        self.creation = creation

    def __lt__(self, other: _ShareTie) -> bool:
        left, right = self.share, other.share
        if not less_equal(right, left) and less_equal(left, right):
            return True
        if not less_equal(left, right) and less_equal(right, left):
            return False
        return self.creation < other.creation


def _base_values(ssn: Session, queue: QueueState) -> tuple[Any, ...]:
    """The job-independent part of a queue's order key, cached until its allocation changes."""
    cached = queue._key_cache
    if cached is not None and cached[0] == queue.version:
        return cached
    alloc, fair = queue.alloc, queue.fair
    over = fair[0] < alloc[0] and fair[1] < alloc[1] and fair[2] < alloc[2]
    allocatable = queue.allocatable
    # Per resource: the divisor of the dominant share, or None for the "no share" x1000 penalty.
    divisors = []
    for r in range(3):
        a = allocatable[r]
        if a == UNLIMITED:
            a = ssn.total[r]
        divisors.append(a if a != 0 else None)
    drf_without = _dominant_share(alloc, allocatable, ssn.total)
    tie = _ShareTie(allocatable, queue.creation)
    cached = (queue.version, over, -queue.priority, drf_without, tie, divisors, {})
    queue._key_cache = cached
    return cached


def queue_values(ssn: Session, queue: QueueState, extra: Sequence[float], minus: Sequence[float]) -> tuple[Any, ...]:
    """GetQueueOrderResult as a sort key (smaller is better) for a queue with a job of `extra` resources.

    `minus` is the allocation of victims already taken from the queue (victim order only).
    """
    _, over, priority, drf_without, tie, divisors, _ = _base_values(ssn, queue)
    alloc, deserved = queue.alloc, queue.deserved
    starved = True
    violation = False
    drf_with = 0.0
    for r in range(3):
        value = alloc[r] + extra[r]
        d = deserved[r]
        if starved and d != UNLIMITED and (value == UNLIMITED or value > d):
            starved = False
        divisor = divisors[r]
        if divisor is None:
            if value > 0:
                violation = True
            share = (value - minus[r]) * 1000
        else:
            share = (value - minus[r]) / divisor
        if share > drf_with:
            drf_with = share
    if violation:
        # penalizeZeroShare looks at allocatable shares of exactly 0, not at unlimited ones.
        violation = any(queue.allocatable[r] == 0 and alloc[r] + extra[r] > 0 for r in range(3))
    return (over, not starved, priority, violation, drf_with, drf_without, tie)


def job_queue_values(ssn: Session, queue: QueueState, extra: tuple[float, float, float]) -> tuple[Any, ...]:
    """queue_values with no victims taken out, memoised per allocation version and request.

    Job orders re-key a queue after every pop and most jobs ask for one of a few request vectors, so
    the same (allocation, request) pair comes back again and again.
    """
    memo = _base_values(ssn, queue)[6]
    key: tuple[Any, ...] | None = memo.get(extra)
    if key is None:
        key = memo[extra] = queue_values(ssn, queue, extra, _ZERO)
    return key


def job_queue_keys(ssn: Session, queue: QueueState) -> dict[Any, tuple[Any, ...]]:
    """The memo job_queue_values fills for the queue's current allocation: request -> key."""
    memo: dict[Any, tuple[Any, ...]] = _base_values(ssn, queue)[6]
    return memo


class _QNode:
    __slots__ = ("dirty", "heap", "is_leaf", "parent", "queue")

    def __init__(self, queue: QueueState, parent: _QNode | None, is_leaf: bool) -> None:
        self.queue = queue
        self.parent = parent
        self.is_leaf = is_leaf
        self.heap: list[Any] = []
        self.dirty = False


class JobsOrder:
    """Pending jobs in KAI's allocation order (JobsOrderByQueues without VictimQueue)."""

    def __init__(self, ssn: Session, jobs: Iterable[JobState] = ()) -> None:
        self.ssn = ssn
        self.root: list[Any] = []
        self.qnodes: dict[str, _QNode] = {}
        self._seq = itertools.count()
        # Build each leaf's heap in one go, then link leaves with keys computed from their best job.
        by_leaf: dict[str, list[Any]] = {}
        for job in jobs:
            queue = job.queue
            if queue is not None and queue.is_leaf:
                by_leaf.setdefault(queue.name, []).append((job.order_key(), job))
        for name, entries in by_leaf.items():
            heapq.heapify(entries)
            leaf = _QNode(entries[0][1].queue, None, True)
            leaf.heap = entries
            self.qnodes[name] = leaf
            self._link(leaf)

    def __bool__(self) -> bool:
        return bool(self.root)

    def _best_job(self, node: _QNode) -> JobState:
        while not node.is_leaf:
            node = node.heap[0][2]
        best: JobState = node.heap[0][1]
        return best

    def _entry(self, node: _QNode) -> tuple[Any, ...]:
        best = node
        while not best.is_leaf:
            best = best.heap[0][2]
        job = best.heap[0][1]
        cached = job._init_cache
        fresh = cached is not None and cached[0] == job.version
        extra = cached[1] if fresh and cached is not None else self.ssn.job_init_resources(job)
        return (job_queue_values(self.ssn, node.queue, extra), next(self._seq), node)

    def push(self, job: JobState) -> None:
        queue = job.queue
        if queue is None or not queue.is_leaf:
            return
        leaf = self.qnodes.get(queue.name)
        if leaf is None:
            leaf = _QNode(queue, None, True)
            self.qnodes[queue.name] = leaf
            heapq.heappush(leaf.heap, (job.order_key(), job))
            self._link(leaf)
        else:
            heapq.heappush(leaf.heap, (job.order_key(), job))
        node: _QNode | None = leaf
        while node is not None:
            node.dirty = True
            node = node.parent

    def _link(self, child: _QNode) -> None:
        while True:
            parent_queue = child.queue.parent
            if parent_queue is None:
                heapq.heappush(self.root, self._entry(child))
                return
            parent = self.qnodes.get(parent_queue.name)
            is_new = parent is None
            if parent is None:
                parent = _QNode(parent_queue, None, False)
                self.qnodes[parent_queue.name] = parent
            child.parent = parent
            heapq.heappush(parent.heap, self._entry(child))
            if not is_new:
                return
            child = parent

    def pop(self) -> JobState | None:
        heap = self.root
        leaf = None
        entry = self._entry
        heapreplace = heapq.heapreplace
        while leaf is None:
            if not heap:
                return None
            node = heap[0][2]
            if node.dirty:
                node.dirty = False
                heapreplace(heap, entry(node))
                continue
            if node.is_leaf:
                leaf = node
            else:
                heap = node.heap
        popped: JobState
        _, popped = heapq.heappop(leaf.heap)
        up: _QNode | None = leaf
        while up is not None and not up.heap:
            heapq.heappop(up.parent.heap if up.parent else self.root)
            del self.qnodes[up.queue.name]
            up = up.parent
        while up is not None:
            up.dirty = True
            up = up.parent
        return popped


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
            return chunk, len(chunk) < len(active)
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
        for job in jobs:
            if job.queue is not None and job.queue.is_leaf:
                self.push(VictimJob(job, list(job.tasks)))

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
        minus = list(self._taken.get(leaf.name, _ZERO))
        a = self._leaf_best(leaf.name).allocated()
        minus[0] += a[0]
        minus[1] += a[1]
        minus[2] += a[2]
        key = self._keys[queue.name] = queue_values(self.ssn, queue, _ZERO, minus)
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
