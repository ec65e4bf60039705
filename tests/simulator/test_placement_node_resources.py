"""What a node offers a pod: pod slots as a resource beside CPU, memory and GPUs, with no best-effort shortcut.

KAI@v0.17.0 facts stated here:
- every pod asks one `pods` (pkg/scheduler/api/pod_info/pod_info.go:415), so the pod count is a dimension of
  the idle and releasing vectors a task is fitted against;
- IsTaskAllocatable (pkg/scheduler/api/node_info/node_info.go:160-163) lets a task in without a check only when
  its whole request vector is zero, which the pods entry above makes impossible;
- a Releasing pod's slot is releasing capacity, so a pod that needs it is pipelined, not bound
  (IsTaskAllocatable vs IsTaskAllocatableOnReleasingOrIdle, node_info.go:159-200);
- a resource the node has none of allocatable is not charged to the pods on it (node_info.go:475-481).
"""

from __future__ import annotations

from typing import Any

from placement_testlib import queue, run


def _doc(node: dict[str, Any], jobs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"actions": ["allocate"], "nodes": [{"name": "n0", **node}], "queues": [queue("q")], "jobs": jobs}


def _running(name: str, state: str = "Running", **request: Any) -> dict[str, Any]:
    return {"name": name, "queue": "q", **request, "tasks": [{"state": state, "node": "n0"}]}


def test_a_pod_that_needs_a_releasing_pods_slot_is_pipelined_not_bound() -> None:
    jobs = [_running("busy"), _running("leaving", state="Releasing"), {"name": "new", "queue": "q"}]
    result = run(_doc({"gpus": 0, "pods": 2}, jobs))
    assert result.tasks["new-0"].status == "Pipelined"


def test_a_pod_with_a_free_slot_beside_a_releasing_pod_is_bound() -> None:
    jobs = [_running("busy"), _running("leaving", state="Releasing"), {"name": "new", "queue": "q"}]
    result = run(_doc({"gpus": 0, "pods": 3}, jobs))
    assert result.tasks["new-0"].status == "Binding"


def test_a_node_with_every_pod_slot_taken_by_running_pods_takes_no_more() -> None:
    jobs = [_running("a"), _running("b"), {"name": "new", "queue": "q"}]
    result = run(_doc({"gpus": 0, "pods": 2}, jobs))
    assert result.tasks["new-0"].status == "Pending"


def test_a_tiny_cpu_request_is_not_best_effort_and_needs_the_cpu_it_asks() -> None:
    # 5 millicores and 1000 bytes: no shortcut past the fit check, because the pods entry is never zero.
    jobs = [_running("full", cpu="1"), {"name": "tiny", "queue": "q", "cpu": "5m", "memory": "1000"}]
    result = run(_doc({"gpus": 0, "cpu": "1"}, jobs))
    assert result.tasks["tiny-0"].status == "Pending"


def test_a_tiny_cpu_request_fits_where_the_cpu_is_free() -> None:
    jobs = [_running("most", cpu="995m"), {"name": "tiny", "queue": "q", "cpu": "5m", "memory": "1000"}]
    result = run(_doc({"gpus": 0, "cpu": "1"}, jobs))
    assert result.tasks["tiny-0"].status == "Binding"


def test_a_gpu_pod_recorded_on_a_node_without_gpus_holds_none_there() -> None:
    # addTaskResources zeroes the dimensions the node's allocatable lacks (node_info.go:475-481), so the node's
    # GPU count stays 0, not -1, and a CPU pod, checked on every dimension, still fits.
    jobs = [_running("gpu-pod", gpu=1), {"name": "cpu", "queue": "q"}]
    result = run(_doc({"gpus": 0}, jobs))
    assert result.tasks["cpu-0"].status == "Binding"
