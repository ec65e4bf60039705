"""The solver's scenario filter AccumulatedIdleGpus: skip a victim set that cannot free enough GPUs.

Before simulating a scenario (a pending job and the victims considered for it) KAI checks a necessary
condition: the pending pods' GPU quotas, largest first, fit first-fit into the N nodes with the most
idle + releasing GPUs once the scenario's victims are gone, N being the number of pending pods. A
scenario that fails is not simulated; the solver adds the next victim instead. The check is KAI's, not
an exact bin packing: it is what decides which scenarios KAI simulates, so it is restated as is.

Upstream: kai-scheduler/KAI-Scheduler@v0.17.0:pkg/scheduler/actions/common/solvers/
accumulated_scenario_filters/idle_gpus/idle_gpus.go and common.go (greedyMatchRequirements), applied by
pod_scenario_builder.go before every scenario; the same filter is in NVIDIA/KAI-Scheduler@v0.13.0-rc1.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING

from placement.nodes import NodeState, gpu_memory_fraction
from placement.tasks import mig_gpu_portion

if TYPE_CHECKING:
    from placement.tasks import TaskState

__all__ = ["AccumulatedIdleGpus", "gpu_room_of", "greedy_match", "idle_gpu_capacity", "releasing_gpu_capacity"]


def greedy_match(required: Sequence[float], capacities: Sequence[float]) -> bool:
    """greedyMatchRequirements: each requirement (largest first) to the first holder with room left.

    `capacities` are sorted largest first; a requirement larger than the first holder's whole capacity
    stops the scan there, as in KAI.
    """
    used = [0.0] * len(capacities)
    for need in required:
        if need == 0:
            return True
        matched = False
        for i, total in enumerate(capacities):
            if total < need:
                break
            if total - used[i] >= need:
                used[i] += need
                matched = True
                break
        if not matched:
            return False
    return True


class AccumulatedIdleGpus:
    """The filter's state for one solver step: node capacities grown by every victim seen so far.

    KAI keeps only the N best nodes (N = pending pods) sorted by capacity; ties among them do not change
    the first-fit outcome, so the N largest capacities are all that is kept here.
    """

    def __init__(
        self, capacities: dict[str, float], pending: Iterable[TaskState], top: list[tuple[str, float]] | None = None
    ) -> None:
        self.required = sorted((t.req.requirement_gpus for t in pending), reverse=True)
        # `capacities` is read, never written (the session shares it); the ones victims raised are here.
        self.base = capacities
        self.capacity: dict[str, float] = {}
        if top is None:  # the N largest, as Session.gpu_room_top keeps them
            top = heapq.nlargest(len(self.required), capacities.items(), key=itemgetter(1))
        # nlargest keeps equal capacities in dict order, as a stable sort by decreasing capacity would.
        self.top: dict[str, float] = dict(top)
        self.seen: set[str] = set()

    def add_victims(self, tasks: Iterable[TaskState]) -> None:
        """A victim frees its accepted GPU quota on its node, once per pod (pods without a node free none)."""
        for task in tasks:
            if not task.node or task.name in self.seen:
                continue
            self.seen.add(task.name)
            node = task.node
            value = self.capacity.get(node)
            if value is None:
                value = self.base.get(node, 0.0)
            # AcceptedGpuRequirement.GetGpusQuota() (idle_gpus.go:180): a share's MIG devices are not in it.
            value = self.capacity[node] = value + task.accepted[2] - task.req.share_mig_gpus
            if node in self.top:
                self.top[node] = value
            elif self.top:
                low = min(self.top, key=lambda n: self.top[n])
                if value > self.top[low]:
                    del self.top[low]
                    self.top[node] = value

    def passes(self) -> bool:
        return greedy_match(self.required, sorted(self.top.values(), reverse=True))


def _capacities(node: NodeState) -> tuple[float, tuple[float, int], tuple[float, int]]:
    """(idle + releasing GPUs, idle, releasing), recomputed only after the node changed.

    Every solved job asks for them on every node (feasible nodes, this filter), while a job's eviction
    simulations change only a few nodes, and each change bumps the node's version (NodeState._changed).
    """
    cached = node.capacity_cache
    if cached is None or cached[0] != node.version:
        idle, releasing = _idle_gpu_capacity(node), _releasing_gpu_capacity(node)
        cached = node.capacity_cache = (node.version, idle[0] + releasing[0], idle, releasing)
    return cached[1], cached[2], cached[3]


def gpu_room_of(node: NodeState) -> tuple[float, float]:
    """(idle GPUs, releasing GPUs): idle_gpu_capacity's and releasing_gpu_capacity's first values."""
    _, idle, releasing = _capacities(node)
    return idle[0], releasing[0]


def idle_gpu_capacity(node: NodeState) -> tuple[float, int]:
    """GetSumOfIdleGPUs: idle whole GPUs, the free part of shared GPUs and idle MIG devices (GPUs, MiB)."""
    return _capacities(node)[1]


def releasing_gpu_capacity(node: NodeState) -> tuple[float, int]:
    """GetSumOfReleasingGPUs."""
    return _capacities(node)[2]


def _idle_gpu_capacity(node: NodeState) -> tuple[float, int]:
    gpus = 0.0
    mem = 0
    for alloc in node.sh_alloc.values():
        if alloc > 0:
            gpus += 1 - gpu_memory_fraction(alloc, node.gpu_mem)
            mem += node.gpu_mem - alloc
    idle = float(node.idle_gpus)
    for name, n in node.idle_mig.items():
        idle += mig_gpu_portion(name) * n
    return gpus + idle, mem + int(idle) * node.gpu_mem


def _releasing_gpu_capacity(node: NodeState) -> tuple[float, int]:
    gpus = 0.0
    mem = 0
    for g, rel in node.sh_rel.items():
        used = node.sh_used.get(g, 0)
        fully = used != 0 and rel == used
        if rel > 0 and not fully:
            gpus += gpu_memory_fraction(rel, node.gpu_mem)
            mem += rel
    releasing = float(node.rel_gpus)
    for name, n in node.rel_mig.items():
        releasing += mig_gpu_portion(name) * n
    return gpus + releasing, mem + int(releasing) * node.gpu_mem
