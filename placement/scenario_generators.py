"""The scenario generators KAI's default configuration registers: sg-nodelocalgreedy, then sg-multinodegang.

Both read the accumulated victim sets of a ScenarioBuilder, each its own, and emit the scenarios the
solver simulates:

- NodeLocalGreedy: for each set that passes the filters, one scenario per node of the newest victim job,
  evicting the recorded victims plus every accumulated victim job with a pod on that node (whole jobs,
  across all their nodes). Sets of victims already emitted for the same accumulated set are skipped.
- MultiNodeGang: the recorded victims alone first; then for each set that passes, scenarios that evict the
  victims on the K nodes with the least room that still fits the smallest pending pod, K starting where
  the room (added to what the feasible nodes without victims already have) covers the pending quota and
  growing by 1, 2, 4, ... up to every such node. Picking a node takes each victim chunk with a pod there
  whole, so gangs stay whole.

Upstream (kai-scheduler/KAI-Scheduler@v0.17.0): pkg/scheduler/plugins/nodelocalgreedy/generator.go,
pkg/scheduler/plugins/multinodegang/generator.go, pkg/scheduler/actions/common/solvers/
sub_scenario_emitter.go and pod_scenario_builder.go (iterate). Where Go iterates a map (the chunks a
sub-scenario picks), the order here is the chunks' own; no result depends on it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from placement.nodes import NodeState
    from placement.scenario_builder import ScenarioBuilder
    from placement.session import Session
    from placement.tasks import TaskState
    from placement.victim_scenario import Scenario

__all__ = ["GENERATORS", "MultiNodeGang", "NodeLocalGreedy", "sub_scenarios"]


class NodeLocalGreedy:
    name = "NodeLocalGreedy"

    def __init__(self, builder: ScenarioBuilder) -> None:
        self.builder = builder
        self.queue: deque[Scenario] = deque()
        self.advance = False

    def next(self) -> Scenario | None:
        while not self.queue:
            accumulated = self.builder.next_accumulated(self.advance)
            self.advance = True
            if accumulated is None:
                return None
            self.queue.extend(node_local_scenarios(accumulated))
        return self.queue.popleft()


def node_local_scenarios(base: Scenario) -> list[Scenario]:
    if not base.potential_tasks:
        return [base] if base.recorded_tasks else []
    latest = base.latest_job()
    assert latest is not None
    out: list[Scenario] = []
    seen: set[frozenset[str]] = set()
    for node in sorted({t.node for t in latest.tasks if t.node}):
        tasks = base.tasks_on_node(node)
        if not tasks:
            continue
        key = frozenset(t.name for t in tasks)
        if key in seen:
            continue
        seen.add(key)
        by_job: dict[str, list[TaskState]] = {}
        for task in tasks:
            by_job.setdefault(task.job.name, []).append(task)
        out.append(base.emit(by_job.values()))
    return out


class MultiNodeGang:
    name = "MultiNodeGang"

    def __init__(self, builder: ScenarioBuilder) -> None:
        self.builder = builder
        self.first = True
        self.emitter: Iterator[Scenario] | None = None

    def next(self) -> Scenario | None:
        """GetValidScenario first, then GetNextScenario (the builder's iterate)."""
        builder = self.builder
        need = not self.first
        self.first = False
        while True:
            if self.emitter is not None:
                sub = next(self.emitter, None)
                if sub is not None:
                    return sub
                self.emitter = None
            if need:
                added = builder.advance()
                if added is None:
                    return None
                if not added:
                    continue
            need = True
            if not builder.valid():
                continue
            if not builder.scenario.potential_tasks:
                return builder.scenario
            self.emitter = sub_scenarios(builder.ssn, builder.scenario, builder.feasible)


GENERATORS = (NodeLocalGreedy, MultiNodeGang)


def sub_scenarios(ssn: Session, base: Scenario, feasible: dict[str, NodeState]) -> Iterator[Scenario]:
    """subScenarioEmitter over one accumulated set (its state is read once, when the set is reached)."""
    demand = 0.0
    smallest = -1.0
    for task in base.pending:
        need = task.req.quota_gpus
        demand += need
        if smallest < 0 or need < smallest:
            smallest = need
    recorded_freed: dict[str, float] = {}
    for task in base.recorded_tasks:
        if task.node:
            recorded_freed[task.node] = recorded_freed.get(task.node, 0.0) + task.accepted[2]
    chunks = [chunk.tasks for chunk in base.chunks]
    # Per node, the chunks with a pod there (first-seen order) and the GPUs each frees there, summed in
    # the chunk's task order so the floats come out as a per-chunk sum would give them.
    node_chunks: dict[str, dict[int, float]] = {}
    first_seen: dict[str, int] = {}
    index = 0
    for i, tasks in enumerate(chunks):
        for task in tasks:
            node = task.node
            if node:
                first_seen.setdefault(node, index)
                freed = node_chunks.setdefault(node, {})
                freed[i] = freed.get(i, 0) + task.accepted[2]
            index += 1
    room = ssn.gpu_room_sums()
    capacity: dict[str, float] = {}
    for node, freed in node_chunks.items():
        value = recorded_freed.get(node, 0.0) + room[node]
        for chunk_freed in freed.values():
            value += chunk_freed
        capacity[node] = value
    candidates = [n for n in node_chunks if not (smallest > 0 and capacity[n] < smallest)]
    candidates.sort(key=lambda n: (capacity[n], first_seen[n]))
    baseline = 0.0
    for name in feasible:
        if name not in node_chunks:
            baseline += room[name] + recorded_freed.get(name, 0.0)
    remaining = max(0.0, demand - baseline)
    k = _smallest_covering(candidates, capacity, remaining)
    step = 1
    while 0 <= k <= len(candidates):
        picked_chunks: set[int] = set()
        for node in candidates[:k]:
            picked_chunks.update(node_chunks[node].keys())
        yield base.emit(chunks[i] for i in sorted(picked_chunks))
        if k >= len(candidates):
            return
        k = min(k + step, len(candidates))
        step *= 2


def _smallest_covering(candidates: list[str], capacity: dict[str, float], demand: float) -> int:
    """smallestKCovering: the shortest prefix whose capacities reach `demand` (len + 1 when none does)."""
    if demand <= 0:
        return 0
    total = 0.0
    for i, node in enumerate(candidates):
        total += capacity[node]
        if total >= demand:
            return i + 1
    return len(candidates) + 1
