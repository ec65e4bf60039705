"""Which job goes next: the queue tree order (proportion queue_order.go) over KAI's JobsOrderByQueues.

At every level of the queue hierarchy the best child queue is chosen by, in turn: not over its fair
share; starved (allocated + job within deserved); higher priority; no allocation where its allocatable
share is 0; smaller dominant resource share with the job (DRF), then without it; smaller allocatable
share; older queue. Inside a leaf, jobs go by the job order (priority, elastic state, age, name).

For pending jobs the tree is a heap per queue with cached keys, re-keyed lazily when a queue's
allocation or best job changes (KAI's needsReorder + Fix(0)), so each pop costs O(depth log width).
Victim order (reclaim/preempt/consolidation) reverses both orders: placement/victims_order.py.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from placement.model import UNLIMITED
from placement.queues import QueueState, less_equal
from placement.tasks import JobState

if TYPE_CHECKING:
    from placement.session import Session

__all__ = ["JobsOrder", "job_queue_keys", "job_queue_values", "queue_values"]


ZERO = (0.0, 0.0, 0.0)


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


# How many allocation states a queue remembers keys for before it starts over (bounds memory on big runs).
_STATES_KEPT = 128


def _base_values(ssn: Session, queue: QueueState) -> tuple[Any, ...]:
    """The job-independent part of a queue's order key, cached per allocation state.

    The version check is the fast path. A queue's version moves on every change, but solver simulations
    evict and re-place the same victims thousands of times, so its allocation keeps coming back to the
    same values; the key is a function of those values alone (fair share, quotas, priority and the
    cluster total are fixed for the session's queues), so it is looked up by them before it is computed.
    """
    cached = queue._key_cache
    version = queue.version
    if cached is not None and cached[0] == version:
        return cached
    alloc = queue.alloc
    state = (alloc[0], alloc[1], alloc[2])
    states = queue._key_states
    values = states.get(state)
    if values is None:
        if len(states) >= _STATES_KEPT:
            states.clear()
        values = states[state] = _compute_base(ssn, queue)
    cached = (version, *values)
    queue._key_cache = cached
    return cached


def _compute_base(ssn: Session, queue: QueueState) -> tuple[Any, ...]:
    alloc, fair = queue.alloc, queue.fair
    over = fair[0] < alloc[0] and fair[1] < alloc[1] and fair[2] < alloc[2]
    allocatable = queue.allocatable
    static = queue._key_static
    if static is None:
        # Per resource: the divisor of the dominant share, or None for the "no share" x1000 penalty.
        divisors = []
        for r in range(3):
            a = allocatable[r]
            if a == UNLIMITED:
                a = ssn.total[r]
            divisors.append(a if a != 0 else None)
        static = queue._key_static = (-queue.priority, _ShareTie(allocatable, queue.creation), divisors)
    priority, tie, divisors = static
    drf_without = _dominant_share(alloc, allocatable, ssn.total)
    # The last entry memoises whole keys per request (job_queue_values), for this allocation state.
    return (over, priority, drf_without, tie, divisors, {})


def queue_values(ssn: Session, queue: QueueState, extra: Sequence[float], minus: Sequence[float]) -> tuple[Any, ...]:
    """GetQueueOrderResult as a sort key (smaller is better) for a queue with a job of `extra` resources.

    `minus` is the allocation of victims already taken from the queue (victim order only).
    """
    cached = queue._key_cache  # _base_values' version check, inlined as in job_queue_values
    if cached is None or cached[0] != queue.version:
        cached = _base_values(ssn, queue)
    _, over, priority, drf_without, tie, divisors, _ = cached
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
    # _base_values' version check, inlined: the solver's job orders make hundreds of thousands of these calls.
    cached = queue._key_cache
    if cached is None or cached[0] != queue.version:
        cached = _base_values(ssn, queue)
    memo = cached[6]
    key: tuple[Any, ...] | None = memo.get(extra)
    if key is None:
        key = memo[extra] = queue_values(ssn, queue, extra, ZERO)
    return key


def job_queue_keys(ssn: Session, queue: QueueState) -> dict[Any, tuple[Any, ...]]:
    """The memo job_queue_values fills for the queue's current allocation: request -> key."""
    cached = queue._key_cache
    if cached is None or cached[0] != queue.version:
        cached = _base_values(ssn, queue)
    memo: dict[Any, tuple[Any, ...]] = cached[6]
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
