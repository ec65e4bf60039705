"""Node order for a task: KAI's summed NodeOrderFn scores, highest first, ties by node name.

Scores (plugins/scores): gpusharingorder +10000 (a shared GPU the pod fits on; binpack only),
nodeavailability +1000 (fits on idle resources), resourcetype +10 (CPU-only pod on a CPU-only node),
nodeplacement 0-9 (binpack: fewest non-allocated GPUs - or millicores for CPU-only pods - scores
highest; spread: largest free fraction). Because the placement term is below 10 and monotone in the
node's free resource, ordering by (tier, free resource, name) is the same as ordering by KAI's float sum.

Walking all nodes for every pod would make a 1,000-node cluster quadratic, so nodes without any
releasing or pipelined work ("clean" nodes) are kept in an index: by idle whole GPUs, and - for nodes
with room on a shared GPU - by that room in 1/100 GPU levels. Clean nodes come out of the index already
in KAI's order; the few nodes with releasing work are scored exhaustively and merged in.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections.abc import Container, Iterable, Iterator
from typing import TYPE_CHECKING

from placement.nodes import NodeState
from placement.tasks import KIND_MEMORY, KIND_MIG, KIND_WHOLE, TaskRequest, TaskState

if TYPE_CHECKING:
    from placement.session import Session

__all__ = ["NodeIndex", "exhaustive_order", "ordered_nodes", "share_level"]

SHARING, AVAILABILITY, RESOURCE_TYPE, MAX_DENSITY = 10000, 1000, 10, 9


def share_level(node: NodeState, free: int) -> int:
    """Largest shared-GPU room (`free` MiB) in 1/100 GPU steps, -1 when no shared GPU has room."""
    if free <= 0:
        return -1
    if node.gpu_mem <= 0:
        return 100
    return min(100, free * 100 // node.gpu_mem)


class _Sorted:
    """A list of node names kept sorted (insort/bisect), small enough that O(n) inserts are cheap."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, name: str) -> None:
        insort(self.items, name)

    def discard(self, name: str) -> None:
        i = bisect_left(self.items, name)
        if i < len(self.items) and self.items[i] == name:
            del self.items[i]


class NodeIndex:
    """Clean GPU nodes by idle whole GPUs, and by shared-GPU room; every other node is 'dirty'.

    Shared-GPU room is indexed per GPU memory size in 1/100 GPU levels, so a request's threshold is
    exact within each size and only nodes at the boundary level need checking.
    """

    def __init__(self, nodes: dict[str, NodeState]) -> None:
        self.nodes = nodes
        self.whole: dict[int, _Sorted] = {}
        self.share: dict[int, dict[tuple[int, int], _Sorted]] = {}
        self.level_count: dict[int, list[int]] = {}
        self.dirty: set[str] = set()
        # Dirty nodes that changed, in order (`log_base` is the position of log[0]); per request shape, the
        # dirty nodes it fits ranked, and how far into the log that ranking is up to date.
        self.log: list[str] = []
        self.log_base = 0
        self.ranked: dict[int, _Ranked] = {}
        self.where: dict[str, tuple[bool, int, int, int]] = {}
        # Non-allocated (idle + releasing) whole GPUs per node and in total, for fail-fast checks.
        self.free: dict[str, int] = {}
        self.free_total = 0
        # Largest shared-GPU room per clean node (MiB).
        self.room: dict[str, int] = {}
        for node in nodes.values():
            self.update(node)
            node.on_change = self.update

    def _locate(self, node: NodeState) -> tuple[bool, int, int, int]:
        if node.has_releasing():
            return (True, 0, 0, -1)
        room = node.max_group_free() if node.sh_used else 0
        self.room[node.name] = room
        return (False, int(node.idle_gpus), node.gpu_mem, share_level(node, room))

    def update(self, node: NodeState) -> None:
        if node.alloc_gpus <= 0 and not node.mig_enabled:
            return  # CPU-only nodes are always ordered exhaustively
        free = node.idle_gpus + node.rel_gpus  # nonallocated_gpus, inlined: every node change comes here
        self.free_total += free - self.free.get(node.name, 0)
        self.free[node.name] = free
        new = self._locate(node)
        old = self.where.get(node.name)
        if new[0] or (old is not None and old[0]):
            self._log(node.name)
        if old == new:
            return
        if old is not None:
            self._remove(node.name, old)
        self._insert(node.name, new)
        self.where[node.name] = new

    def _insert(self, name: str, place: tuple[bool, int, int, int]) -> None:
        dirty, idle, memory, level = place
        if dirty:
            self.dirty.add(name)
            return
        if idle > 0:
            self.whole.setdefault(idle, _Sorted()).add(name)
        if level >= 0:
            self.share.setdefault(idle, {}).setdefault((memory, level), _Sorted()).add(name)
            self.level_count.setdefault(memory, [0] * 101)[level] += 1

    def _remove(self, name: str, place: tuple[bool, int, int, int]) -> None:
        dirty, idle, memory, level = place
        if dirty:
            self.dirty.discard(name)
            return
        if idle > 0:
            self.whole[idle].discard(name)
        if level >= 0:
            self.share[idle][(memory, level)].discard(name)
            self.level_count[memory][level] -= 1

    def _log(self, name: str) -> None:
        if len(self.log) >= _LOG_LIMIT:
            # Rankings older than the log are rebuilt from scratch when next asked for.
            self.log_base += len(self.log)
            self.log = []
        self.log.append(name)

    def dirty_ranked(self, ssn: Session, task: TaskState) -> list[tuple[int, float, str]]:
        """The dirty nodes the task fits on idle + releasing resources, as (-tier, free GPUs, name), sorted.

        Kept per request shape and brought up to date from the nodes changed since it was last asked for,
        so a simulation that touches a few nodes costs those few, not every node with releasing resources.
        """
        ranked = self.ranked.get(task.req.shape)
        end = self.log_base + len(self.log)
        if ranked is None or ranked.seen < self.log_base:
            ranked = self.ranked[task.req.shape] = _Ranked()
            for name in self.dirty:
                ranked.put(_rank(ssn, task, self.nodes[name]))
        elif ranked.seen < end:
            for name in set(self.log[ranked.seen - self.log_base :]):
                ranked.drop(name)
                if name in self.dirty:
                    ranked.put(_rank(ssn, task, self.nodes[name]))
        ranked.seen = end
        return ranked.keys

    def free_whole_gpus(self) -> int:
        return self.free_total

    def share_thresholds(self, req: TaskRequest) -> dict[int, int]:
        """Per GPU memory size, the lowest room level a node needs; sizes where no node has it are left out."""
        out: dict[int, int] = {}
        for memory, counts in self.level_count.items():
            if memory <= 0:
                lowest = 0
            elif req.kind == KIND_MEMORY:
                lowest = req.gpu_memory * 100 // memory
            else:
                lowest = int(req.portion * memory) * 100 // memory
            if lowest <= 100 and any(counts[lowest:]):
                out[memory] = lowest
        return out

    def clean_whole(self, minimum: int) -> Iterator[NodeState]:
        """Clean nodes with at least `minimum` idle GPUs, fewest idle first, then by name."""
        for idle in sorted(k for k in self.whole if k >= minimum):
            for name in self.whole[idle].items:
                yield self.nodes[name]

    def clean_shared(self, thresholds: dict[int, int]) -> Iterator[NodeState]:
        """Clean nodes whose shared-GPU room reaches the threshold of their GPU size, by idle GPUs then name."""
        for idle in sorted(self.share):
            lists = [
                bucket.items
                for (memory, level), bucket in self.share[idle].items()
                if bucket.items and memory in thresholds and level >= thresholds[memory]
            ]
            if not lists:
                continue
            names = lists[0] if len(lists) == 1 else heapq.merge(*lists)
            for name in names:
                yield self.nodes[name]


def _placement_value(ssn: Session, task: TaskState, node: NodeState) -> float:
    """The nodeplacement order term: non-allocated resource (binpack, ascending) or -free ratio (spread)."""
    if task.req.cpu_only:
        free = node.idle_cpu + node.rel_cpu
        total = node.alloc_cpu
    else:
        free = float(node.nonallocated_gpus())
        total = float(node.gpu_count)
    if ssn.placement.node == "spread":
        return -(free / total) if total else 0.0
    return free


def _tier(ssn: Session, task: TaskState, node: NodeState) -> int:
    tier = 0
    req = task.req
    if ssn.gpu_sharing_order and node.sh_used:
        gmem = node.request_memory(req)
        if any(node.fits_group(gmem, g) for g in node.sh_used):
            tier += SHARING
    if node.fits(task, releasing=False):
        tier += AVAILABILITY
    if req.cpu_only and node.is_cpu_only():
        tier += RESOURCE_TYPE
    return tier


def exhaustive_order(
    ssn: Session, task: TaskState, nodes: Iterable[NodeState], scores: dict[str, float] | None = None
) -> list[NodeState]:
    """KAI's exact float scores over `nodes`, sorted by score (descending) then name.

    `scores` are the topology plugin's: added to each node's score; a node without one is left out, as
    KAI's scoreNodes skips a node whose score function errs.
    """
    nodes = list(nodes) if scores is None else [n for n in nodes if n.name in scores]
    req = task.req
    cpu_task = req.cpu_only
    spread = ssn.placement.node == "spread"
    lo, hi = math.inf, 0.0
    if not spread:
        for node in nodes:
            total = node.alloc_cpu if cpu_task else node.alloc_gpus
            if total == 0:
                continue
            cur = node.idle_cpu + node.rel_cpu if cpu_task else float(node.nonallocated_gpus())
            lo, hi = min(lo, cur), max(hi, cur)
    keyed = []
    for node in nodes:
        score = float(_tier(ssn, task, node))
        if cpu_task:
            cur, total = node.idle_cpu + node.rel_cpu, node.alloc_cpu
            count = total
        else:
            cur, total = float(node.nonallocated_gpus()), float(node.alloc_gpus)
            count = float(node.gpu_count)
        if spread:
            if count:
                score += cur / count
        elif total and hi:
            score += MAX_DENSITY if lo == hi else MAX_DENSITY * (1 - (cur - lo) / (hi - lo))
        if scores is not None:
            score += scores[node.name]
        keyed.append((-score, node.name, node))
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [node for _, _, node in keyed]


def ordered_nodes(
    ssn: Session,
    task: TaskState,
    subset: list[NodeState] | None = None,
    scores: dict[str, float] | None = None,
    within: Container[str] | None = None,
) -> Iterator[NodeState]:
    """Nodes in KAI's order for this task, lazily. `subset` (a topology domain) disables the index; `scores`
    are topology scores (see exhaustive_order).

    `within` (the solver's feasible nodes) keeps the index and yields only the nodes it names. That is the
    order KAI gives over those nodes: binpack ranks a node by its tier, then by fewer free GPUs, then by name,
    and where the pool's free-GPU bounds sit changes no rank (tiers are 1,000 apart, densities at most 9,
    free counts whole numbers). The caller passes it only for binpack and GPU requests (as the index does).
    """
    req = task.req
    if subset is not None or ssn.placement.node == "spread" or req.cpu_only or req.kind == KIND_MIG:
        pool: Iterable[NodeState] = ssn.node_list if subset is None else subset
        if within is not None:
            pool = [n for n in pool if n.name in within]
        if req.kind == KIND_MIG:
            pool = [n for n in pool if n.mig_enabled]
        yield from exhaustive_order(ssn, task, pool, scores)
        return
    if within is None:
        yield from _indexed_order(ssn, task)
        return
    for node in _indexed_order(ssn, task):
        if node.name in within:
            yield node


def _indexed_order(ssn: Session, task: TaskState) -> Iterator[NodeState]:
    index = ssn.index
    assert index is not None, "the session is open"
    # A copy: placing the task changes a node, which updates the ranking while this is being read.
    dirty = list(index.dirty_ranked(ssn, task))
    clean = _clean_order(ssn, task)
    if not dirty:
        for _, _, _, node in clean:
            yield node
        return
    nodes = ssn.nodes
    dirty_items = ((tier, value, name, nodes[name]) for tier, value, name in dirty)
    for item in heapq.merge(clean, dirty_items, key=lambda item: item[:3]):
        yield item[3]


def _rank(ssn: Session, task: TaskState, node: NodeState) -> tuple[int, float, str] | None:
    if not node.fits(task, releasing=True):
        return None
    return (-_tier(ssn, task, node), _placement_value(ssn, task, node), node.name)


_LOG_LIMIT = 100_000


class _Ranked:
    """One request shape's ranking of the dirty nodes it fits (NodeIndex.dirty_ranked)."""

    __slots__ = ("by_name", "keys", "seen")

    def __init__(self) -> None:
        self.keys: list[tuple[int, float, str]] = []
        self.by_name: dict[str, tuple[int, float, str]] = {}
        self.seen = 0

    def put(self, key: tuple[int, float, str] | None) -> None:
        if key is not None:
            insort(self.keys, key)
            self.by_name[key[2]] = key

    def drop(self, name: str) -> None:
        key = self.by_name.pop(name, None)
        if key is not None:
            del self.keys[bisect_left(self.keys, key)]


def _clean_order(ssn: Session, task: TaskState) -> Iterator[tuple[int, float, str, NodeState]]:
    """Clean nodes that fit the task, in KAI order, as (-tier, free GPUs, name, node)."""
    req = task.req
    index = ssn.index
    assert index is not None, "the session is open"
    if req.kind == KIND_WHOLE:
        for node in index.clean_whole(req.count):
            if node.fits(task, releasing=False):
                yield (-AVAILABILITY, float(node.idle_gpus), node.name, node)
        return
    # Shared GPU request: first nodes with a shared GPU it fits on, then nodes with a free whole GPU.
    sharing = SHARING if ssn.gpu_sharing_order else 0
    seen: set[str] = set()
    shared_first: list[tuple[int, float, str, NodeState]] = []
    thresholds = index.share_thresholds(req)
    if thresholds:
        room = index.room
        for node in index.clean_shared(thresholds):
            gmem = node.request_memory(req)
            if room[node.name] >= gmem and node.fits(task, releasing=False):
                seen.add(node.name)
                item = (-(sharing + AVAILABILITY), float(node.idle_gpus), node.name, node)
                if sharing:
                    yield item
                else:
                    shared_first.append(item)
    whole_nodes = (
        (-AVAILABILITY, float(node.idle_gpus), node.name, node)
        for node in index.clean_whole(1)
        if node.name not in seen and node.fits(task, releasing=False)
    )
    if sharing:
        yield from whole_nodes
        return
    # Without gpusharingorder, nodes with room on a shared GPU compete on free whole GPUs alone.
    yield from heapq.merge(shared_first, whole_nodes, key=lambda item: item[:3])
