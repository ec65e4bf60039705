"""Fair share: the proportion plugin's division of capacity among queues (resource_division.go).

Per resource and level of the hierarchy, top-down: each queue first gets its deserved quota (capped by
what it can use: min(limit, allocated + pending)); what is left goes over quota to the highest queue
priority first, split by over-quota weight in whole units; once every priority level has had its whole
units, the fractional leftovers are handed out one unit at a time, level by level (largest remainder, then
oldest queue, then name). Without Prometheus usage data KAI's
time-based term is zero, so the split is proportional to the weights (kValue = 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from placement.model import UNLIMITED
from placement.queues import QueueState

__all__ = ["set_fair_shares"]

_K_VALUE = 1.0


def set_fair_shares(top_queues: Sequence[QueueState], total: Sequence[float]) -> None:
    """Compute `fair` for every queue below `top_queues`, recursively, then their allocatable share."""
    if not top_queues:
        return
    for r in range(3):
        _set_resource_share(total[r], top_queues, r)
    for q in top_queues:
        if q.children:
            set_fair_shares(q.children, q.fair)
    for q in top_queues:
        q.compute_allocatable()


def _set_resource_share(total: float, queues: Sequence[QueueState], r: int) -> None:
    remaining = total
    for q in queues:
        deserved = q.deserved[r]
        if deserved == UNLIMITED:
            deserved = total
        amount = min(deserved, q.requestable(r))
        q.fair[r] += amount
        remaining -= amount
    if remaining > 0:
        _divide_over_quota(remaining, queues, r)


def _divide_over_quota(total: float, queues: Sequence[QueueState], r: int) -> float:
    # Whole units to every priority level first, then the fractional leftovers level by level
    # (divideOverQuotaResource): what a higher level leaves over goes to lower levels before any leftover unit.
    remaining = total
    leftovers_by_level = []
    for priority in sorted({q.priority for q in queues}, reverse=True):
        bucket = [q for q in queues if q.priority == priority]
        remaining, leftovers = _divide_up_to_fair_share(remaining, bucket, r)
        leftovers_by_level.append(leftovers)
    for leftovers in leftovers_by_level:
        if remaining <= 0:
            break
        if leftovers:
            remaining = _divide_remaining(remaining, leftovers, r)
    return remaining


def _remaining_requested(q: QueueState, r: int) -> float:
    requested = q.requestable(r)
    return 0.0 if requested < q.fair[r] else requested - q.fair[r]


def _is_satisfied(q: QueueState, r: int) -> bool:
    if q.request[r] <= q.fair[r]:
        return True
    return q.limit[r] != UNLIMITED and q.limit[r] <= q.fair[r]


def _share_weights(queues: Sequence[QueueState], r: int) -> tuple[dict[str, float], float]:
    total_weights = sum(q.weight[r] for q in queues if _remaining_requested(q, r) > 0)
    if total_weights == 0:
        return {}, 0.0
    weights: dict[str, float] = {}
    weight_sum = 0.0
    for q in queues:
        if _is_satisfied(q, r):
            continue
        normalized = q.weight[r] / total_weights
        usage = 0.0  # no historical usage without Prometheus
        weight = max(0.0, normalized + _K_VALUE * (normalized - usage))
        weights[q.name] = weight
        weight_sum += weight
    return weights, weight_sum


def _divide_up_to_fair_share(
    total: float, queues: Sequence[QueueState], r: int
) -> tuple[float, dict[str, tuple[QueueState, float]]]:
    leftovers: dict[str, tuple[QueueState, float]] = {}
    while True:
        run_again = False
        round_amount = total
        weights, weight_sum = _share_weights(queues, r)
        if weight_sum == 0:
            break
        for q in queues:
            if total == 0:
                break
            if _is_satisfied(q, r):
                continue
            requested = _remaining_requested(q, r)
            if q.weight[r] == 0:
                continue
            share = round_amount * (weights.get(q.name, 0.0) / weight_sum)
            if requested <= share:
                give = requested
                leftovers.pop(q.name, None)
            else:
                # Over-quota shares are handed out in whole units; the remainder waits for the last pass.
                give = float(math.floor(share)) if math.floor(share) > 0 else 0.0
                if share - give > 0:
                    leftovers[q.name] = (q, share - give)
            if give == 0:
                continue
            q.fair[r] += give
            total -= give
            run_again = run_again or requested < share
        if not run_again or total == 0:
            break
    return total, leftovers


def _divide_remaining(total: float, leftovers: dict[str, tuple[QueueState, float]], r: int) -> float:
    order = sorted(leftovers.values(), key=lambda item: (-item[1], item[0].creation, item[0].name))
    for q, _ in order:
        if total == 0:
            break
        give = min(1.0, total)
        q.fair[r] += give
        total -= give
    return total
