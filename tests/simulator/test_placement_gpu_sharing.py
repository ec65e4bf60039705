"""GPU sharing: per-node gpu-memory conversion, fraction groups (pack vs spread), devices, MIG, pod slots."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from placement_testlib import queue, run, scenario

from placement import Job, Node, Placement, Queue, QueueResource, Result, Snapshot, Task, simulate
from placement.nodes import _go_atoi


def _doc(nodes: list[dict[str, Any]], jobs: list[dict[str, Any]], gpu: str = "pack") -> dict[str, Any]:
    return {
        "actions": ["allocate"],
        "placement": {"node": "binpack", "gpu": gpu},
        "nodes": nodes,
        "queues": [queue("q")],
        "jobs": jobs,
    }


@pytest.mark.parametrize(
    ("node_mib", "request_mib", "share"),
    [(40000, 30000, 0.75), (80000, 30000, 0.38), (100, 50, 0.5), (81920, 10000, 0.13)],
)
def test_gpu_memory_becomes_a_fraction_of_the_node_gpu_rounded_up(
    node_mib: int, request_mib: int, share: float
) -> None:
    result = run(
        _doc(
            [{"name": "n0", "gpus": 1, "gpuMemoryMiB": node_mib}],
            [{"name": "a", "queue": "q", "gpuMemoryMiB": request_mib}],
        )
    )
    assert result.tasks["a-0"].status == "Binding"
    assert result.tasks["a-0"].gpus == pytest.approx(share, abs=1e-9)


def test_same_gpu_memory_request_costs_differently_per_node() -> None:
    nodes = [{"name": "n0", "gpus": 1, "gpuMemoryMiB": 40000}, {"name": "n1", "gpus": 1, "gpuMemoryMiB": 80000}]
    jobs = [{"name": "a", "queue": "q", "gpuMemoryMiB": 30000}, {"name": "b", "queue": "q", "gpuMemoryMiB": 30000}]
    tasks = run(_doc(nodes, jobs)).tasks
    assert {tasks["a-0"].node: tasks["a-0"].gpus, tasks["b-0"].node: tasks["b-0"].gpus} == {"n0": 0.75, "n1": 0.38}


def test_gpu_memory_larger_than_the_gpu_does_not_fit() -> None:
    result = run(
        _doc([{"name": "n0", "gpus": 1, "gpuMemoryMiB": 1000}], [{"name": "a", "queue": "q", "gpuMemoryMiB": 1500}])
    )
    assert result.tasks["a-0"].status == "Pending"
    assert result.reasons["a"].code == "gpu-memory-too-large"


def test_gpu_memory_does_not_fit_a_gpu_whose_label_floors_to_zero() -> None:
    # KAI@v0.17.0 pkg/scheduler/api/node_info/node_info.go:652-664 floors the label to a multiple of 100 MiB;
    # gpu_sharing_node_info.go:344-347 then divides by 0 (+Inf) and isValidGpuPortion (node_info.go:646-649)
    # rejects it. Without this a 10 MiB pod would take 0 GPUs and any number of them would fit.
    result = run(
        _doc([{"name": "n0", "gpus": 1, "gpuMemoryMiB": 99}], [{"name": "a", "queue": "q", "gpuMemoryMiB": 10}])
    )
    assert result.tasks["a-0"].status == "Pending"
    assert result.reasons["a"].code == "gpu-memory-too-large"


def test_fraction_and_gpu_memory_share_one_gpu_by_mib() -> None:
    # 0.25 of a 1000 MiB GPU is 250 MiB, leaving exactly the 750 MiB the second pod asks for.
    nodes = [{"name": "n0", "gpus": 2, "gpuMemoryMiB": 1000}]
    jobs = [{"name": "a", "queue": "q", "gpuFraction": 0.25}, {"name": "b", "queue": "q", "gpuMemoryMiB": 750}]
    result = run(_doc(nodes, jobs))
    assert result.tasks["a-0"].gpu_groups == result.tasks["b-0"].gpu_groups
    (device,) = result.nodes["n0"].devices
    assert (device.shared, device.used, device.tasks) == (True, 1.0, ("a-0", "b-0"))
    assert result.nodes["n0"].free_gpus == 1


def test_gpupack_puts_fractions_on_the_same_gpu() -> None:
    jobs = [{"name": "a", "queue": "q", "gpuFraction": 0.3}, {"name": "b", "queue": "q", "gpuFraction": 0.3}]
    tasks = run(_doc([{"name": "n0", "gpus": 2}], jobs, gpu="pack")).tasks
    assert tasks["a-0"].gpu_groups == tasks["b-0"].gpu_groups


def test_gpuspread_puts_fractions_on_different_gpus() -> None:
    jobs = [{"name": "a", "queue": "q", "gpuFraction": 0.3}, {"name": "b", "queue": "q", "gpuFraction": 0.3}]
    tasks = run(_doc([{"name": "n0", "gpus": 2}], jobs, gpu="spread")).tasks
    assert tasks["a-0"].gpu_groups != tasks["b-0"].gpu_groups


def test_multi_device_fraction_takes_distinct_gpus() -> None:
    result = run(_doc([{"name": "n0", "gpus": 2}], [{"name": "a", "queue": "q", "gpuFraction": 0.5, "gpuDevices": 2}]))
    task = result.tasks["a-0"]
    assert len(set(task.gpu_groups)) == 2
    assert task.gpus == 1.0


def test_multi_device_fraction_needs_that_many_gpus() -> None:
    result = run(_doc([{"name": "n0", "gpus": 1}], [{"name": "a", "queue": "q", "gpuFraction": 0.5, "gpuDevices": 2}]))
    assert result.tasks["a-0"].status == "Pending"


def test_fraction_on_a_fresh_gpu_needs_a_second_pod_slot_for_the_reservation_pod() -> None:
    result = run(_doc([{"name": "n0", "gpus": 1, "pods": 1}], [{"name": "a", "queue": "q", "gpuFraction": 0.3}]))
    assert result.tasks["a-0"].status == "Pending"
    assert result.reasons["a"].code == "too-many-pods"


def test_fraction_fits_with_two_pod_slots() -> None:
    result = run(_doc([{"name": "n0", "gpus": 1, "pods": 2}], [{"name": "a", "queue": "q", "gpuFraction": 0.3}]))
    assert result.tasks["a-0"].status == "Binding"


# KAI@v0.17.0 pkg/scheduler/plugins/predicates/predicates.go:393-414 (checkMaxPodsWithGpuGroupReservation) and
# :416-456 (willCreateNewGpuGroup, isNewGpuGroup: a group whose name strconv.Atoi rejects is new; every GPU
# KAI opens is named uuid.NewUUID(), pkg/scheduler/gpu_sharing/gpuSharing.go:77).


def test_a_gang_pod_joining_the_gpu_its_gang_just_opened_needs_two_pod_slots_too() -> None:
    # The first pod opens a GPU (a UUID in KAI): one slot is left, and joining a UUID group needs two.
    job = {"name": "a", "queue": "q", "gpuFraction": 0.4, "tasks": 2}
    result = run(_doc([{"name": "n0", "gpus": 1, "pods": 2}], [job]))
    assert (result.tasks["a-0"].status, result.tasks["a-1"].status) == ("Pending", "Pending")


def test_a_gpu_opened_in_the_session_holds_no_pod_slot_yet() -> None:
    # Its reservation pod does not exist until the binder creates it: 3 slots, then 2, so both pods bind.
    job = {"name": "a", "queue": "q", "gpuFraction": 0.6, "tasks": 2}
    result = run(_doc([{"name": "n0", "gpus": 2, "pods": 3}], [job]))
    assert (result.tasks["a-0"].status, result.tasks["a-1"].status) == ("Binding", "Binding")


def test_a_gpu_the_simulator_opened_in_an_earlier_cycle_is_still_named_by_a_uuid() -> None:
    # Round 2: a's GPU now has its reservation pod (no slot left), and joining it still needs two.
    doc = _doc([{"name": "n0", "gpus": 1, "pods": 2}], [{"name": "a", "queue": "q", "gpuFraction": 0.4}])
    doc["jobs"].append({"name": "b", "queue": "q", "gpuFraction": 0.4, "ageSeconds": 0})
    doc["rounds"] = 2
    result = run(doc)
    assert (result.tasks["a-0"].status, result.tasks["b-0"].status) == ("Running", "Pending")


@pytest.mark.parametrize(("label", "status"), [("7", "Binding"), ("gpu-a", "Pending"), ("+7", "Binding")])
def test_joining_a_running_pods_gpu_needs_no_pod_slot_only_when_its_label_is_an_integer(
    label: str, status: str
) -> None:
    running = {
        "name": "r",
        "queue": "q",
        "gpuFraction": 0.3,
        "tasks": [{"state": "Running", "node": "n0", "gpuGroups": [label]}],
    }
    pending = {"name": "p", "queue": "q", "gpuFraction": 0.3}
    # 2 slots: the running pod and one left (a scenario, like KAI's harness, has no reservation pods).
    result = run(_doc([{"name": "n0", "gpus": 1, "pods": 2}], [running, pending]))
    assert result.tasks["p-0"].status == status


def _slot_after_a_running_share(harness: bool) -> str:
    running = {"name": "r", "queue": "q", "gpuFraction": 0.3, "tasks": [{"state": "Running", "node": "n0"}]}
    cpu = {"name": "c", "queue": "q", "cpu": "1"}
    s = scenario(_doc([{"name": "n0", "gpus": 1, "pods": 2}], [running, cpu]))
    placement = dataclasses.replace(s.placement, harness=harness)
    return simulate(s.snapshot, s.actions, s.rounds, placement).tasks["c-0"].status


def test_a_live_cluster_s_reservation_pod_takes_a_slot_for_each_shared_gpu_in_use() -> None:
    # node_info.go:470-473: the reservation pod is tracked for all but its GPU, its pod slot included.
    assert _slot_after_a_running_share(harness=False) == "Pending"


def test_a_scenario_has_no_reservation_pods_as_in_kais_harness() -> None:
    # nodes_fake/nodes.go:108-115: free slots are the node's pods less the pods on it.
    assert _slot_after_a_running_share(harness=True) == "Binding"


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        ("0", True),
        ("007", True),
        ("-3", True),
        ("+5", True),
        ("9223372036854775807", True),
        ("9223372036854775808", False),
        ("", False),
        ("+", False),
        ("gpu0", False),
        (" 1", False),
        ("1.0", False),
        ("\u0661", False),
        ("1_000", False),
    ],
)
def test_a_gpu_group_label_is_an_integer_as_go_s_strconv_atoi_reads_it(text: str, accepted: bool) -> None:
    assert _go_atoi(text) is accepted


def test_shared_gpu_is_not_available_as_a_whole_gpu() -> None:
    jobs = [{"name": "a", "queue": "q", "gpuFraction": 0.1}, {"name": "b", "queue": "q", "gpu": 1}]
    result = run(_doc([{"name": "n0", "gpus": 1}], jobs))
    assert (result.tasks["a-0"].status, result.tasks["b-0"].status) == ("Binding", "Pending")


def test_mig_pods_use_mig_devices_and_count_no_whole_gpus() -> None:
    node = {"name": "n0", "gpus": 1, "migStrategy": "mixed", "mig": {"nvidia.com/mig-1g.10gb": 2}}
    job = {"name": "a", "queue": "q", "mig": {"nvidia.com/mig-1g.10gb": 1}, "tasks": 3, "minMember": 1}
    result = run(_doc([node], [job]))
    assert [t.status for t in result.tasks.values()] == ["Binding", "Binding", "Pending"]
    assert all(t.gpus == 0 for t in result.tasks.values())


def test_whole_gpu_pod_cannot_use_a_mixed_mig_node() -> None:
    node = {"name": "n0", "gpus": 1, "migStrategy": "mixed", "mig": {"nvidia.com/mig-1g.10gb": 2}}
    result = run(_doc([node], [{"name": "a", "queue": "q", "gpu": 1}]))
    assert result.tasks["a-0"].status == "Pending"


def _shared_use_matches_its_pods(result: Result) -> None:
    """Every shared GPU is at most full and its `used` is exactly the share of the pods listed on it."""
    for node in result.nodes.values():
        for device in node.devices:
            if device.shared:
                per_device = sum(result.tasks[t].gpus / len(result.tasks[t].gpu_groups) for t in device.tasks)
                assert device.used == pytest.approx(per_device), (node.name, device)
                assert device.used <= 1 + 1e-9, (node.name, device)


def test_settled_shared_gpu_drops_the_evicted_and_the_pipelined_pod() -> None:
    # Reclaim evicts hog from the shared GPU and pipelines want onto its memory: 1.5 GPUs for one cycle.
    # After the transition hog is gone and want is Pending again, so the GPU holds keep alone.
    queues = (Queue("a", gpu=QueueResource(0, -1, 1)), Queue("b", gpu=QueueResource(1, -1, 1)))
    running = Task(gpu_fraction=0.5, state="Running", node="n0", gpu_groups=("g",))
    jobs = (
        Job("keep", "a", (running,), priority=100),
        Job("hog", "a", (running,)),
        Job("want", "b", (Task(gpu_fraction=0.5),)),
    )
    snapshot = Snapshot((Node("n0", gpus=1),), queues, jobs)
    mid = simulate(snapshot, settle=False)
    assert [t.status for t in mid.tasks.values()] == ["Running", "Releasing", "Pipelined"]
    result = simulate(snapshot)
    assert [t.status for t in result.tasks.values()] == ["Running", "Pending", "Pending"]
    (device,) = result.nodes["n0"].devices
    assert (device.id, device.tasks, device.used) == ("g", ("keep-0",), 0.5)
    assert result.queues["b"].allocated.gpu == 0
    _shared_use_matches_its_pods(result)


def test_multi_device_fraction_never_over_fills_a_shared_gpu() -> None:
    # Hypothesis' example: j4-2 is evicted off GPU 2 (which j0's two-GPU fraction shares) and re-pipelined
    # onto GPU 0; j1-2 is pipelined onto GPU 2's released memory. Both are Pending after the transition.
    memory = Task(gpu_memory_mib=50, cpu_millis=500)
    tenth = Task(gpu_fraction=0.1, cpu_millis=500)
    jobs = (
        Job("j0", "q0", (Task(gpu_fraction=0.5, gpu_devices=2, cpu_millis=500),), min_member=1),
        Job("j1", "q2", (memory,) * 3, min_member=1),
        Job("j2", "q1", (Task(gpu=1, cpu_millis=500),), min_member=1),
        Job("j3", "q0", (Task(gpu=1, cpu_millis=500),), min_member=1),
        Job("j4", "q1", (tenth,) * 3, min_member=1),
        Job("j5", "q1", (tenth,), min_member=1),
    )
    queues = (
        Queue("q0", gpu=QueueResource(4, -1, 0)),
        Queue("q1", gpu=QueueResource(-1, -1, 0)),
        Queue("q2", gpu=QueueResource(2, -1, 0)),
    )
    nodes = (Node("n0", gpus=4, cpu_millis=8000), Node("n1", gpus=1, cpu_millis=8000))
    result = simulate(Snapshot(nodes, queues, jobs), placement=Placement("spread", "spread"))
    assert len(set(result.tasks["j0-0"].gpu_groups)) == 2
    assert result.tasks["j1-2"].status == "Pending"
    _shared_use_matches_its_pods(result)


# KAI@v0.17.0 pkg/scheduler/api/node_info/node_info.go:714-722 (GetRequiredInitQuota): the quota a pod needs on a
# node is its devices times each device's share of that node's GPU (rounded up to 1/100 per device), checked
# against the queue's limit by IsTaskAllocationOnNodeOverCapacity
# (pkg/scheduler/plugins/proportion/capacity_policy/capacity_policy.go:46-56). The job-level check before it
# converts the memory exactly (2 x 10001 / 40000 = 0.50005), so only the per-node check sees 2 x 0.26.


def _two_device_gpu_memory_job(limit: float) -> dict[str, Any]:
    doc = _doc(
        [{"name": "n0", "gpus": 2, "gpuMemoryMiB": 40000}],
        [{"name": "a", "queue": "q", "gpuMemoryMiB": 10001, "gpuDevices": 2}],
    )
    doc["queues"] = [queue("q", gpu={"quota": -1, "limit": limit, "overQuotaWeight": 1})]
    return doc


def test_a_multi_device_gpu_memory_pod_counts_every_device_against_the_queue_limit() -> None:
    result = run(_two_device_gpu_memory_job(0.51))
    assert result.tasks["a-0"].status == "Pending"
    assert "requested 0.52" in result.reasons["a"].message


def test_a_multi_device_gpu_memory_pod_within_the_queue_limit_is_bound() -> None:
    result = run(_two_device_gpu_memory_job(0.52))
    assert (result.tasks["a-0"].status, result.tasks["a-0"].gpus) == ("Binding", 0.52)


def test_on_a_cluster_without_gpu_memory_labels_a_gpu_memory_pod_asks_no_gpu_of_its_queue() -> None:
    # cluster_info.go:283-298: no node over 100 MiB leaves KAI's basis nil, so the queue sees no GPU asked
    # (allocation_info.go:180); the pod is Pending for the missing label. The harness takes 100 MiB instead.
    limited = queue("q", {"quota": 1, "limit": 1, "overQuotaWeight": 1})
    s = scenario({"actions": ["allocate"], "nodes": [{"name": "n0", "gpus": 1, "gpuMemoryMiB": None}],
                  "queues": [limited], "jobs": [{"name": "a", "queue": "q", "gpuMemoryMiB": 4000}]})  # fmt: skip
    live = simulate(s.snapshot, s.actions, s.rounds, dataclasses.replace(s.placement, harness=False))
    harness = simulate(s.snapshot, s.actions, s.rounds, s.placement)
    assert (live.reason("a").code, harness.reason("a").code) == ("gpu-memory-label", "over-limit")  # type: ignore[union-attr]


# KAI@v0.17.0: GPUs() keeps a fraction in hundredths (gpu_resource_requirment.go:266-270), so a gpu-fraction under
# 0.005 asks 0 GPUs and IsCPUOnlyRequest (pod_info.go:363-370) holds. It still takes a slot on a shared GPU, but
# nodeplacement ranks its nodes by CPU (nodeplacement.go:75-87), predicates skip the node-type check, and
# FeasibleNodesForJob offers every node (feasible_nodes.go:11-16).
TWO_NODES = [{"name": "few-gpus", "gpus": 1, "cpu": "64"}, {"name": "few-cpus", "gpus": 2, "cpu": "4"}]


@pytest.mark.parametrize(("fraction", "node"), [(0.004, "few-cpus"), (0.01, "few-gpus")])
def test_a_fraction_under_half_a_hundredth_is_placed_like_a_cpu_pod(fraction: float, node: str) -> None:
    # Binpack: fewest free GPUs for a GPU pod, least free CPU for a CPU-only one.
    result = run(_doc(TWO_NODES, [{"name": "a", "queue": "q", "gpuFraction": fraction}]))
    assert (result.tasks["a-0"].status, result.tasks["a-0"].node) == ("Binding", node)


@pytest.mark.parametrize(("fraction", "status"), [(0.004, "Binding"), (0.01, "Pending")])
def test_a_fraction_under_half_a_hundredth_skips_the_node_type_predicate(fraction: float, status: str) -> None:
    # PredicateByNodeResourcesType returns early for a CPU-only request (node_info.go:313-315), so a MIG node
    # with strategy single, which takes only whole GPUs (:336-339), still takes it.
    nodes = [{"name": "mig", "gpus": 1, "migStrategy": "single"}]
    result = run(_doc(nodes, [{"name": "a", "queue": "q", "gpuFraction": fraction}]))
    assert result.tasks["a-0"].status == status
