"""Reclaim's saturation rule between sibling queues, and the resources it compares.

KAI@v0.17.0 pkg/scheduler/plugins/proportion/reclaimable/reclaimable.go:152-222: after a reclaim, at every level
of the reclaimer's path, a queue over its fair share must stay less saturated (allocated / fair share) than each
sibling it takes from, per *involved* resource. getInvolvedResourcesNames (:268-289) reads the CPU, memory and
GPU entries of the vectors; MIG devices have entries of their own, so a MIG-only reclaim involves no GPU and
is not compared on GPUs, although QuantifyVector (plugins/proportion/utils/utils.go:19-21) counts its devices
in the GPU totals.
"""

from __future__ import annotations

from typing import Any

from placement_testlib import queue, run


def _queue(name: str, quota: float, parent: str | None = None) -> dict[str, Any]:
    # No over-quota weight: each queue's fair share is its quota, and cpu/memory are unlimited on both sides.
    extra = {"parent": parent} if parent else {}
    return queue(name, {"quota": quota, "limit": -1, "overQuotaWeight": 0}, **extra)


def _reclaim(request: dict[str, Any], node: dict[str, Any]) -> dict[str, str]:
    # d1 holds 2 (its share) through p1b's non-preemptible pods; p1 reclaims 1 from p2, which holds 4 of d2's 2.
    # After it d1 would be at 3/2 and d2 at 3/2: not less saturated, so the rule refuses where GPUs count.
    running = [{"state": "Running", "node": "n0"}]
    jobs = [{"name": f"k{i}", "queue": "p1b", "priority": 100, **request, "tasks": running} for i in range(2)]
    jobs += [{"name": f"v{i}", "queue": "p2", "priority": 50, **request, "tasks": running} for i in range(4)]
    jobs += [{"name": "r", "queue": "p1", "priority": 50, **request}]
    queues = [_queue("d1", 2), _queue("d2", 2), _queue("p1", 1, "d1"), _queue("p1b", 1, "d1"), _queue("p2", 2, "d2")]
    doc = {"actions": ["reclaim"], "nodes": [{"name": "n0", **node}], "queues": queues, "jobs": jobs}
    return {name: t.status for name, t in run(doc).tasks.items()}


def test_a_whole_gpu_reclaim_that_would_leave_its_department_as_saturated_as_the_victim_s_is_refused() -> None:
    assert _reclaim({"gpu": 1}, {"gpus": 6})["r-0"] == "Pending"


def test_a_mig_reclaim_is_not_compared_on_gpus_so_the_same_reclaim_goes_ahead() -> None:
    mig = {"nvidia.com/mig-1g.10gb": 6}
    statuses = _reclaim({"mig": {"nvidia.com/mig-1g.10gb": 1}}, {"gpus": 6, "migStrategy": "mixed", "mig": mig})
    assert statuses["r-0"] == "Pipelined"
    assert sorted(name for name, status in statuses.items() if status == "Releasing") == ["v3-0"]
