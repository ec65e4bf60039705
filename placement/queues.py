"""Queue state for a session: the hierarchy, live allocation, and KAI's capacity gates.

Resources are vectors indexed CPU (millicores), MEMORY (bytes), GPU - the order of the proportion
plugin's `AllResources`, which decides which resource a message names first. All arithmetic is float64,
as in KAI: `0.1 + 0.2` GPUs against a quota of 0.3 is over quota there (#2209), and so it is here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from placement.depth import MAX_QUEUE_DEPTH, depths
from placement.model import UNLIMITED, Queue

__all__ = ["CPU", "GPU", "MEMORY", "RESOURCE_NAMES", "CapacityFailure", "QueueState", "build_queues"]

CPU, MEMORY, GPU = 0, 1, 2
RESOURCE_NAMES = ("cpu", "memory", "gpu")
_MB = 1000 * 1000  # proportion.go's misnamed `mebibytes`: queue memory is in MB


class QueueState:
    """One queue. `fair`/`alloc`/`alloc_np`/`request` are [cpu, memory, gpu] lists updated in place."""

    __slots__ = (
        "_key_cache",
        "_key_states",
        "_key_static",
        "alloc",
        "alloc_np",
        "allocatable",
        "children",
        "creation",
        "deserved",
        "fair",
        "guaranteed",
        "limit",
        "limited",
        "name",
        "order_cache",
        "parent",
        "path",
        "priority",
        "request",
        "spec",
        "version",
        "weight",
    )

    def __init__(self, spec: Queue, creation: int) -> None:
        self.spec = spec
        self.name = spec.name
        self.priority = spec.priority
        self.creation = creation
        self.parent: QueueState | None = None
        self.children: list[QueueState] = []
        mem_quota = max(UNLIMITED, spec.memory.quota * _MB)
        mem_limit = max(UNLIMITED, spec.memory.limit * _MB)
        self.deserved = [float(spec.cpu.quota), float(mem_quota), float(spec.gpu.quota)]
        self.limit = [float(spec.cpu.limit), float(mem_limit), float(spec.gpu.limit)]
        self.weight = [
            float(spec.cpu.over_quota_weight),
            float(spec.memory.over_quota_weight),
            float(spec.gpu.over_quota_weight),
        ]
        # (resource, value) pairs the capacity gates check: limits and quotas that are not -1.
        self.limited = [(r, v) for r, v in enumerate(self.limit) if v != UNLIMITED]
        self.guaranteed = [(r, v) for r, v in enumerate(self.deserved) if v != UNLIMITED]
        self.fair = [0.0, 0.0, 0.0]
        self.alloc = [0.0, 0.0, 0.0]
        self.alloc_np = [0.0, 0.0, 0.0]
        self.request = [0.0, 0.0, 0.0]
        self.allocatable = [0.0, 0.0, 0.0]
        self.path: list[QueueState] = [self]
        # Bumped whenever `alloc` changes, so queue-order keys can be cached per allocation state.
        self.version = 0
        self._key_cache: tuple[Any, ...] | None = None
        self._key_states: dict[tuple[float, float, float], tuple[Any, ...]] = {}  # queue_order._base_values
        self._key_static: tuple[Any, ...] | None = None
        # The solver's per-cycle job lists and pop streams (placement.simulation_order), version-checked.
        self.order_cache: object = None

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def requestable(self, r: int) -> float:
        """GetRequestableShare: what the queue asks for, capped by its limit."""
        if self.limit[r] == UNLIMITED:
            return self.request[r]
        return min(self.limit[r], self.request[r])

    def compute_allocatable(self) -> None:
        """GetAllocatableShare per resource, fixed once fair share is known."""
        for r in range(3):
            if self.deserved[r] == UNLIMITED:
                self.allocatable[r] = self.limit[r]
                continue
            value = max(self.deserved[r], self.fair[r])
            if self.limit[r] != UNLIMITED:
                value = min(self.limit[r], value)
            self.allocatable[r] = value

    def add(self, vector: Sequence[float], sign: float, non_preemptible: bool) -> None:
        """Add (or with sign -1 remove) a task's accepted resources here and in every ancestor."""
        cpu, mem, gpu = vector[0] * sign, vector[1] * sign, vector[2] * sign
        for q in self.path:
            q.version += 1
            a = q.alloc
            a[0] += cpu
            a[1] += mem
            a[2] += gpu
            if non_preemptible:
                n = q.alloc_np
                n[0] += cpu
                n[1] += mem
                n[2] += gpu

    def __repr__(self) -> str:
        return f"QueueState({self.name})"


def less_equal(left: Sequence[float], right: Sequence[float]) -> bool:
    """ResourceQuantities.LessEqual with -1 meaning unlimited on either side (plain float compare)."""
    for a, b in zip(left, right, strict=True):
        if a == UNLIMITED:
            if b != UNLIMITED:
                return False
            continue
        if b == UNLIMITED:
            continue
        if a > b:
            return False
    return True


def build_queues(specs: Iterable[Queue]) -> tuple[dict[str, QueueState], list[str]]:
    """Link parents and drop orphans (a queue whose parent is missing goes, with its children).

    Returns the surviving queues by name (creation order) and the names that were dropped.
    """
    ordered = list(specs)
    by_name = {spec.name: QueueState(spec, i) for i, spec in enumerate(ordered)}
    alive: dict[str, bool] = {}

    def resolve(name: str) -> bool:
        # A loop up the parents, not recursion: a chain of a thousand queues (KAI sets no depth limit) is valid.
        chain: list[str] = []
        seen: set[str] = set()
        current = name
        while current not in alive:
            chain.append(current)
            seen.add(current)
            parent = by_name[current].spec.parent
            if not parent:
                ok = True
                break
            if parent not in by_name or parent in seen:
                ok = False
                break
            current = parent
        else:
            ok = alive[current]
        for link in chain:
            alive[link] = ok
        return alive[name]

    # Deeper than the simulator walks (placement.depth): dropped like an orphan, and the readers say why.
    level = depths({spec.name: spec.parent or None for spec in ordered})
    queues: dict[str, QueueState] = {}
    dropped: list[str] = []
    for spec in ordered:
        if resolve(spec.name) and level[spec.name] <= MAX_QUEUE_DEPTH:
            queues[spec.name] = by_name[spec.name]
        else:
            dropped.append(spec.name)
    for q in queues.values():
        parent = q.spec.parent
        if parent:
            q.parent = queues[parent]
            q.parent.children.append(q)
    for q in queues.values():
        node: QueueState | None = q
        path: list[QueueState] = []
        while node is not None:
            path.append(node)
            node = node.parent
        q.path = path
    return queues, dropped


class CapacityFailure:
    """Why a queue gate refused a request: which queue, which resource, and the numbers."""

    __slots__ = ("allocated", "kind", "queue", "requested", "resource", "threshold")

    def __init__(
        self, kind: str, queue: str, resource: int, threshold: float, allocated: float, requested: float
    ) -> None:
        self.kind = kind  # "over-limit" or "over-quota"
        self.queue = queue
        self.resource = resource
        self.threshold = threshold
        self.allocated = allocated
        self.requested = requested


def over_limit(queue: QueueState, requested: Sequence[float]) -> CapacityFailure | None:
    """resultsOverLimit: any resource with a limit whose allocated + requested exceeds it, leaf to root."""
    for q in queue.path:
        for r, limit in q.limited:
            req = requested[r]
            if req != 0 and limit < q.alloc[r] + req:
                return CapacityFailure("over-limit", q.name, r, limit, q.alloc[r], req)
    return None


def over_quota(queue: QueueState, requested: Sequence[float]) -> CapacityFailure | None:
    """resultsWithNonPreemptibleOverQuota: non-preemptible work never exceeds deserved, at any level."""
    for q in queue.path:
        for r, deserved in q.guaranteed:
            req = requested[r]
            if req != 0 and deserved < q.alloc_np[r] + req:
                return CapacityFailure("over-quota", q.name, r, deserved, q.alloc_np[r], req)
    return None


def check_capacity(queue: QueueState, requested: Sequence[float], preemptible: bool) -> CapacityFailure | None:
    """IsJobOverQueueCapacity: the limit gate on every ancestor, then (non-preemptible) the quota gate."""
    failure = over_limit(queue, requested)
    if failure is None and not preemptible:
        failure = over_quota(queue, requested)
    return failure
