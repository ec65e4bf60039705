"""Fair share: how the proportion plugin divides what is left over quota among queues of different priorities.

KAI@v0.17.0 pkg/scheduler/plugins/proportion/resource_division/resource_division.go:116-148
(divideOverQuotaResource): divideUpToFairShare gives whole units to every priority level, highest first, and
only then does divideRemainingResource hand out the fractional leftovers, one unit each, level by level.
"""

from __future__ import annotations

from typing import Any

from placement_testlib import queue, run


def _queue(name: str, priority: int) -> dict[str, Any]:
    return queue(name, {"quota": 0, "limit": -1, "overQuotaWeight": 1}, priority=priority)


def _running(name: str, queue_name: str) -> dict[str, Any]:
    return {"name": name, "queue": queue_name, "gpu": 1, "tasks": [{"state": "Running", "node": "n0"}]}


def _pending(name: str, queue_name: str) -> dict[str, Any]:
    return {"name": name, "queue": queue_name, "gpu": 1}


def _fair_gpus(queues: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> dict[str, float]:
    doc = {"actions": ["allocate"], "nodes": [{"name": "n0", "gpus": 3}], "queues": queues, "jobs": jobs}
    return {name: q.fair_share.gpu for name, q in run(doc).queues.items()}


def test_a_lower_priority_level_gets_its_whole_unit_before_a_higher_level_s_leftover_is_handed_out() -> None:
    # 3 GPUs over quota. Level 200 (qa asks 3, qb asks 2) splits 1.5 each: 1 each in whole units, 0.5 left
    # over each. Level 100 (qc asks 1) then takes the last whole GPU; no unit is left for the leftovers.
    queues = [_queue("qa", 200), _queue("qb", 200), _queue("qc", 100)]
    jobs = [_running("a1", "qa"), _running("a2", "qa"), _running("b1", "qb")]
    jobs += [_pending("a3", "qa"), _pending("b2", "qb"), _pending("c1", "qc")]
    assert _fair_gpus(queues, jobs) == {"qa": 1.0, "qb": 1.0, "qc": 1.0}


def test_a_leftover_unit_no_level_takes_whole_goes_to_the_largest_remainder_then_the_older_queue() -> None:
    # One level: 1.5 each, 1 each in whole units, and the last GPU to qa (equal remainders; qa is older).
    queues = [_queue("qa", 200), _queue("qb", 200)]
    jobs = [_running("a1", "qa"), _running("a2", "qa"), _running("b1", "qb")]
    jobs += [_pending("a3", "qa"), _pending("b2", "qb"), _pending("b3", "qb")]
    assert _fair_gpus(queues, jobs) == {"qa": 2.0, "qb": 1.0}


def _reclaim_beside_a_spare_node(ready: bool) -> str:
    # n2 offers no pod slot either way; whether its GPUs count in the total decides the fair shares.
    share = {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    doc = {
        "actions": ["reclaim"],
        "nodes": [{"name": "n1", "gpus": 2}, {"name": "n2", "gpus": 2, "pods": 0, "ready": ready}],
        "queues": [queue("a", share), queue("b", share)],
        "jobs": [
            {"name": "a0", "queue": "a", "gpu": 1, "tasks": [{"state": "Running", "node": "n1"}] * 2},
            {"name": "b0", "queue": "b", "gpu": 1},
        ],
    }
    return run(doc).tasks["b0-0"].status


def test_a_node_that_is_not_ready_is_left_out_of_the_fair_share_total() -> None:
    # proportion.go:267-271: total 2 GPUs, so a (2 running) is over its share of 1 and b reclaims one.
    assert _reclaim_beside_a_spare_node(ready=False) == "Pipelined"


def test_a_ready_node_counts_in_the_fair_share_total_even_without_pod_slots() -> None:
    # Total 4 GPUs: a's share is 2, it is not over it, and b cannot reclaim.
    assert _reclaim_beside_a_spare_node(ready=True) == "Pending"
