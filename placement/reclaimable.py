"""Whether a queue may take resources back from others (plugins/proportion/reclaimable).

- `can_reclaim`: the reclaiming queue stays within its fair share with the job (and, for a
  non-preemptible job, within deserved quota).
- `filter_victim`: a victim queue that no strategy could ever allow is not considered at all.
- `reclaimable`: every evicted pod passes a strategy at the level where reclaimer and victim queues
  are siblings - MaintainFairShare (the victim is above its allocatable share) or
  GuaranteeDeservedQuota (the reclaimer stays within deserved, the victim is above it) - and the
  reclaimer ends up no more saturated (allocated / fair share) than any sibling it took from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from placement.model import UNLIMITED
from placement.queues import QueueState, less_equal

__all__ = ["ReclaimCheck", "can_reclaim", "filter_victim"]

Vector = list[float]
_SATURATION_MULTIPLIER = 1.0


def _plus(a: Sequence[float], b: Sequence[float]) -> Vector:
    return [a[0] + b[0], a[1] + b[1], a[2] + b[2]]


def can_reclaim(queue: QueueState, required: Sequence[float], preemptible: bool) -> bool:
    """CanReclaimResources."""
    if not less_equal(_plus(queue.alloc, required), queue.fair):
        return False
    return preemptible or less_equal(_plus(queue.alloc_np, required), queue.deserved)


def leveled(reclaimer: QueueState, victim: QueueState) -> tuple[QueueState, QueueState]:
    """getLeveledQueues: the two queues' ancestors that are siblings (or the queues themselves)."""
    left, right = list(reversed(reclaimer.path)), list(reversed(victim.path))
    pair = (left[0], right[0])
    for a, b in zip(left, right, strict=False):
        pair = (a, b)
        if a is not b:
            break
    return pair


def filter_victim(reclaimer: QueueState, required: Sequence[float], victim: QueueState) -> bool:
    """FilterVictim: drop victim queues no reclaim strategy could accept."""
    r_queue, v_queue = leveled(reclaimer, victim)
    if not less_equal(_plus(r_queue.alloc, required), r_queue.deserved):
        return not less_equal(v_queue.alloc, v_queue.allocatable)
    under = False
    for r in range(3):
        if required[r] <= 0 or v_queue.deserved[r] == UNLIMITED:
            continue
        if v_queue.alloc[r] > v_queue.deserved[r]:
            return True
        if v_queue.alloc[r] < v_queue.deserved[r]:
            under = True
    return not under


def _ratio(allocated: float, fair: float) -> float:
    if fair == 0:
        return math.inf if allocated > 0 else 0.0
    if fair == UNLIMITED:
        return 0.0
    return allocated / fair


class ReclaimCheck:
    """The Reclaimable validator, against queue allocations frozen when the job's solving started."""

    def __init__(self, queues: dict[str, QueueState]) -> None:
        self.queues = queues
        self.alloc = {name: list(q.alloc) for name, q in queues.items()}
        self.alloc_np = {name: list(q.alloc_np) for name, q in queues.items()}

    def _fits_strategy(
        self, required: Sequence[float], reclaimer: QueueState, victim: QueueState, remaining: Vector
    ) -> bool:
        if not less_equal(remaining, victim.allocatable):
            return True  # MaintainFairShare
        reclaimer_total = _plus(self.alloc[reclaimer.name], required)
        return less_equal(reclaimer_total, reclaimer.deserved) and not less_equal(remaining, victim.deserved)

    def reclaimable(
        self,
        reclaimer: QueueState,
        required: Sequence[float],
        required_gpu_entry: bool,
        preemptible: bool,
        taken: dict[str, list[Vector]],
    ) -> bool:
        """`taken`: per victim leaf queue, the resources of each evicted pod (or pod group) as [cpu, memory,
        GPUs, plain GPUs]; `required_gpu_entry`: the reclaimer asks plain GPUs. MIG devices count in the
        arithmetic (QuantifyVector's TotalGPUs) but make GPU an involved resource only through the plain GPU
        entry (getInvolvedResourcesNames, reclaimable.go:268-289)."""
        remaining: dict[str, Vector] = {}
        involved: dict[str, set[int]] = {}
        for victim_name in sorted(taken):
            vectors = taken[victim_name]
            victim_leaf = self.queues[victim_name]
            r_level, v_level = leveled(reclaimer, victim_leaf)
            involved[victim_name] = {r for v in vectors for r in range(3) if v[3 if r == 2 else r] > 0}
            if v_level.name not in remaining:
                remaining[v_level.name] = list(self.alloc[v_level.name])
            for vector in vectors:
                if not self._fits_strategy(required, r_level, v_level, remaining[v_level.name]):
                    return False
                for q in victim_leaf.path:
                    if q.name not in remaining:
                        remaining[q.name] = list(self.alloc[q.name])
                    rem = remaining[q.name]
                    rem[0] -= vector[0]
                    rem[1] -= vector[1]
                    rem[2] -= vector[2]
                    involved.setdefault(q.name, set()).update(involved[victim_name])
        return self._within_boundaries(reclaimer, required, required_gpu_entry, preemptible, remaining, involved)

    def _within_boundaries(
        self,
        reclaimer: QueueState,
        required: Sequence[float],
        required_gpu_entry: bool,
        preemptible: bool,
        remaining: dict[str, Vector],
        involved: dict[str, set[int]],
    ) -> bool:
        mine = {r for r in range(2) if required[r] > 0} | ({2} if required_gpu_entry else set())
        for q in reclaimer.path:
            rem = remaining.get(q.name)
            if rem is None:
                rem = list(self.alloc[q.name])
            rem[0] += required[0]
            rem[1] += required[1]
            rem[2] += required[2]
            for sibling_name in list(remaining):
                sibling = self.queues[sibling_name]
                if sibling.parent is not q.parent or sibling is q:
                    continue
                resources = involved.get(sibling_name, set()) | mine
                sib_rem = remaining[sibling_name]
                for r in resources:
                    if q.fair[r] == UNLIMITED and sibling.fair[r] == UNLIMITED:
                        continue
                    mine_ratio = _ratio(rem[r], q.fair[r])
                    their_ratio = _ratio(sib_rem[r], sibling.fair[r])
                    if mine_ratio > 1 and sibling.fair[r] > 0 and mine_ratio * _SATURATION_MULTIPLIER >= their_ratio:
                        return False
            if not preemptible and not less_equal(_plus(self.alloc_np[q.name], required), q.deserved):
                return False
        return True
