"""Every job left Pending gets a reason in KAI's terms: a stable code plus a message with the numbers."""

from __future__ import annotations

from typing import Any

import pytest
from placement_testlib import queue, run

from placement import Reason


def _doc(nodes: list[dict[str, Any]], queues: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"actions": ["allocate"], "nodes": nodes, "queues": queues, "jobs": jobs}


def test_queue_over_gpu_limit() -> None:
    result = run(
        _doc(
            [{"name": "n0", "gpus": 4}],
            [queue("q", {"quota": 1, "limit": 2, "overQuotaWeight": 1})],
            [{"name": "a", "queue": "q", "gpu": 2}, {"name": "b", "queue": "q", "gpu": 2}],
        )
    )
    reason = result.reason("b")
    assert reason is not None
    assert (reason.code, reason.queue) == ("over-limit", "q")
    assert reason.message == "queue q is over its gpu limit (limit 2, allocated 2, requested 2)"
    assert result.reason("a") is None


def test_non_preemptible_job_over_ancestor_quota() -> None:
    result = run(
        _doc(
            [{"name": "n0", "gpus": 4}],
            [queue("dept", {"quota": 0, "limit": -1}), queue("q", {"quota": 1, "limit": -1}, parent="dept")],
            [{"name": "a", "queue": "q", "gpu": 1, "priority": 125}],
        )
    )
    reason = result.reason("a")
    assert reason is not None
    assert (reason.code, reason.queue) == ("over-quota", "dept")
    assert reason.message.startswith(
        "non-preemptible job would exceed quota of queue dept (quota 0, allocated 0, requested 1 gpu"
    )


def test_preemptible_job_may_exceed_quota() -> None:
    result = run(
        _doc(
            [{"name": "n0", "gpus": 4}],
            [queue("dept", {"quota": 0, "limit": -1}), queue("q", {"quota": 1, "limit": -1}, parent="dept")],
            [{"name": "a", "queue": "q", "gpu": 1, "priority": 50}],
        )
    )
    assert result.tasks["a-0"].status == "Binding"
    assert result.reasons == {}


def test_fraction_blocked_by_fragmentation_lists_free_portions() -> None:
    result = run(
        _doc(
            [{"name": "n0", "gpus": 2}],
            [queue("q")],
            [{"name": n, "queue": "q", "gpuFraction": 0.6} for n in ("a", "b", "c")],
        )
    )
    reason = result.reason("c")
    assert reason is not None
    assert reason.code == "fragmentation"
    assert "fraction 0.6 fits no shared GPU and no whole GPU is free" in reason.message
    assert "0.40 free on n0/" in reason.message


def test_gpu_memory_without_node_label() -> None:
    result = run(
        _doc(
            [{"name": "n0", "gpus": 2, "gpuMemoryMiB": None}],
            [queue("q")],
            [{"name": "a", "queue": "q", "gpuMemoryMiB": 50}],
        )
    )
    reason = result.reason("a")
    assert reason is not None
    assert reason.code == "gpu-memory-label"
    assert "nvidia.com/gpu.memory" in reason.message


def test_gang_counts_how_many_pods_fit() -> None:
    result = run(_doc([{"name": "n0", "gpus": 2}], [queue("q")], [{"name": "a", "queue": "q", "gpu": 1, "tasks": 4}]))
    reason = result.reason("a")
    assert reason is not None
    assert reason.code == "gang"
    assert reason.message == "gang of 4 needs 4 pods placed at once; only 2 fit (2 whole GPUs free, 4 needed)"
    assert {t.status for t in result.tasks.values()} == {"Pending"}


def test_no_node_fits_names_the_closest_miss() -> None:
    result = run(
        _doc(
            [{"name": "n0", "gpus": 1}, {"name": "n1", "gpus": 1}],
            [queue("q")],
            [{"name": "a", "queue": "q", "gpu": 2}],
        )
    )
    reason = result.reason("a")
    assert reason is not None
    assert (reason.code, reason.node) == ("no-node-fits", "n1")
    assert reason.message == "no node fits 2 GPUs: closest miss n1 (needs 2 GPUs, 1 free)"


# A pod short of CPU or memory is told so: the closest miss named GPUs the node had, and a fraction short of memory
# was called fragmentation ("no whole GPU is free" beside two idle ones).
SHORT_OF_CPU_OR_MEMORY = [
    pytest.param(
        {"gpus": 2, "cpu": "4"},
        {"gpu": 1, "cpu": "6"},
        "no node fits 1 GPU: closest miss n0 (needs 6000m CPU, 4000m free)",
        id="whole-gpu-short-of-cpu",
    ),
    pytest.param(
        {"gpus": 1, "memory": "8Gi"},
        {"gpu": 2, "memory": "16Gi"},
        "no node fits 2 GPUs: closest miss n0 (needs 2 GPUs, 1 free, needs 16Gi memory, 8Gi free)",
        id="whole-gpus-short-of-gpus-and-memory",
    ),
    pytest.param(
        {"gpus": 2, "memory": "8Gi"},
        {"gpuFraction": 0.5, "memory": "64Gi"},
        "no node fits 0.5 GPU: closest miss n0 (needs 64Gi memory, 8Gi free)",
        id="fraction-short-of-memory-not-fragmentation",
    ),
    pytest.param(
        {"gpus": 1, "memory": "16383Mi"},
        {"gpu": 1, "memory": "16Gi"},
        "no node fits 1 GPU: closest miss n0 (needs 16Gi memory, 15.99902Gi free)",
        id="memory-just-short-is-not-16Gi-of-16Gi",
    ),
    pytest.param(
        {"gpus": 0, "cpu": "4", "memory": "1Gi"},
        {"cpu": "1", "memory": "1536Mi"},
        "no node fits the pod: closest miss n0 (needs 1.5Gi memory, 1Gi free)",
        id="cpu-only-short-of-memory",
    ),
]


@pytest.mark.parametrize(("node", "asks", "message"), SHORT_OF_CPU_OR_MEMORY)
def test_a_pod_short_of_cpu_or_memory_is_told_what_it_lacks(
    node: dict[str, Any], asks: dict[str, Any], message: str
) -> None:
    result = run(_doc([{"name": "n0", **node}], [queue("q")], [{"name": "a", "queue": "q", **asks}]))
    reason = result.reason("a")
    assert reason is not None
    assert (reason.code, reason.message) == ("no-node-fits", message)


def test_a_fraction_short_of_memory_beside_a_node_without_gpus_is_not_called_fragmentation() -> None:
    """The node without GPUs (an EKS system node) has the memory but no shared GPU; the GPU node has idle GPUs."""
    nodes = [{"name": "gpu-0", "gpus": 2, "memory": "8Gi"}, {"name": "cpu-0", "gpus": 0, "memory": "64Gi"}]
    result = run(_doc(nodes, [queue("q")], [{"name": "a", "queue": "q", "gpuFraction": 0.5, "memory": "16Gi"}]))
    reason = result.reason("a")
    assert reason is not None
    assert (reason.code, reason.message) == (
        "no-node-fits",
        "no node fits 0.5 GPU: closest miss gpu-0 (needs 16Gi memory, 8Gi free)",
    )


def test_a_cluster_with_no_free_pod_slot_says_so_rather_than_naming_gpus() -> None:
    result = run(_doc([{"name": "n0", "gpus": 2, "pods": 0}], [queue("q")], [{"name": "a", "queue": "q", "gpu": 1}]))
    reason = result.reason("a")
    assert reason is not None
    assert (reason.code, reason.message) == (
        "too-many-pods",
        "no node has a free pod slot (every node's allocatable pods are taken)",
    )


def test_the_closest_miss_says_when_it_also_has_no_pod_slot() -> None:
    nodes = [{"name": "n0", "gpus": 1, "pods": 0}, {"name": "n1", "gpus": 0}]
    result = run(_doc(nodes, [queue("q")], [{"name": "a", "queue": "q", "gpu": 2}]))
    reason = result.reason("a")
    assert reason is not None
    assert reason.message == "no node fits 2 GPUs: closest miss n0 (needs 2 GPUs, 1 free, no free pod slot)"


def test_queue_that_does_not_exist() -> None:
    result = run(_doc([{"name": "n0", "gpus": 1}], [queue("q")], [{"name": "a", "queue": "nope", "gpu": 1}]))
    reason = result.reason("a")
    assert reason is not None
    assert (reason.code, reason.message) == ("queue-missing", "queue nope does not exist")


def test_job_in_a_parent_queue_never_schedules() -> None:
    result = run(
        _doc(
            [{"name": "n0", "gpus": 1}],
            [queue("dept"), queue("q", parent="dept")],
            [{"name": "a", "queue": "dept", "gpu": 1}],
        )
    )
    assert result.tasks["a-0"].status == "Pending"
    reason = result.reason("a")
    assert reason is not None
    assert reason.code == "queue-not-leaf"


def test_queue_with_missing_parent_is_dropped() -> None:
    result = run(
        _doc([{"name": "n0", "gpus": 1}], [queue("q", parent="ghost")], [{"name": "a", "queue": "q", "gpu": 1}])
    )
    assert result.tasks["a-0"].status == "Pending"
    reason = result.reason("a")
    assert reason is not None
    assert reason.code == "queue-orphaned"
    assert "q" not in result.queues


def test_reason_str_is_its_message() -> None:
    result = run(_doc([{"name": "n0", "gpus": 1}], [queue("q")], [{"name": "a", "queue": "nope", "gpu": 1}]))
    assert str(result.reasons["a"]) == "queue nope does not exist"


def test_placed_jobs_have_no_reason() -> None:
    result = run(_doc([{"name": "n0", "gpus": 1}], [queue("q")], [{"name": "a", "queue": "q", "gpu": 1}]))
    assert result.reasons == {}


def test_no_pod_goes_to_a_node_that_is_not_ready() -> None:
    # plugins/predicates/predicates.go:343-349 (CheckNodeConditionPredicate).
    result = run(
        _doc([{"name": "n0", "gpus": 2, "ready": False}], [queue("q")], [{"name": "a", "queue": "q", "gpu": 1}])
    )
    reason = result.reason("a")
    assert (result.tasks["a-0"].status, reason.code if reason else None) == ("Pending", "no-ready-node")


def test_a_reason_names_its_shared_gpus_as_the_caller_numbers_them() -> None:
    doc = {
        "actions": ["allocate"],
        "nodes": [{"name": "n0", "gpus": 2}],
        "queues": [queue("q")],
        "jobs": [{"name": n, "queue": "q", "gpuFraction": 0.6} for n in ("a", "b", "c")],
    }
    reason = run(doc).reason("c")
    assert reason is not None
    assert [node for node, _ in reason.gpus] == ["n0", "n0"]
    renamed = reason.naming_gpus(lambda node, group: f"{node}/GPU-{group}")
    groups = [group for _, group in reason.gpus]
    assert renamed.message == (
        "fraction 0.6 fits no shared GPU and no whole GPU is free (fragmentation: "
        f"0.40 free on n0/GPU-{groups[0]}, 0.40 free on n0/GPU-{groups[1]})"
    )
    assert reason.message == renamed.message.replace("/GPU-", "/")  # the simulator's own names: node/group


def test_a_gang_reason_keeps_its_pods_shared_gpus_nameable() -> None:
    doc = {
        "actions": ["allocate"],
        "nodes": [{"name": "n0", "gpus": 1}],
        "queues": [queue("q")],
        "jobs": [
            {"name": "a", "queue": "q", "gpuFraction": 0.6},
            {"name": "g", "queue": "q", "gpuFraction": 0.6, "tasks": 2},
        ],
    }
    reason = run(doc).reason("g")
    assert reason is not None
    assert reason.code == "gang"
    assert reason.naming_gpus(lambda node, group: "THE-GPU").message == (
        "gang of 2 needs 2 pods placed at once; only 0 fit "
        "(fraction 0.6 fits no shared GPU and no whole GPU is free (fragmentation: 0.40 free on THE-GPU))"
    )


def test_a_reason_that_names_no_gpu_is_unchanged_by_naming() -> None:
    reason = Reason("no-node-fits", "no node fits 2 GPUs")
    assert reason.naming_gpus(lambda node, group: "x") is reason


def test_gpu_memory_that_fits_no_labelled_node_names_the_unlabelled_gpu_nodes() -> None:
    """KAI's gpu-memory pods go only to nodes whose GPU memory it knows (placement.placing.type_error): the idle GPUs
    of a node without the label are no help, and the reason says they are there."""
    result = run(
        _doc(
            [
                {"name": "n0", "gpus": 1, "gpuMemoryMiB": 1000},
                {"name": "n1", "gpus": 4, "gpuMemoryMiB": None},
                {"name": "n2", "gpus": 4, "gpuMemoryMiB": None},
            ],
            [queue("q")],
            [{"name": n, "queue": "q", "gpuMemoryMiB": 600} for n in ("a", "b")],
        )
    )
    reason = result.reason("b")
    assert reason is not None
    assert reason.code == "fragmentation"
    assert reason.message.endswith(
        "; 2 GPU nodes without the nvidia.com/gpu.memory label take no gpu-memory request (n1, n2)"
    )
    assert reason.parts()[-1] == reason.texts[-1]
    assert reason.texts[-1].endswith("(n1, n2)")


def test_a_fraction_is_not_told_about_unlabelled_nodes() -> None:
    """A gpu-fraction goes to any GPU node: the label only matters to gpu-memory requests."""
    result = run(
        _doc(
            [{"name": "n0", "gpus": 1, "gpuMemoryMiB": None}],
            [queue("q")],
            [{"name": n, "queue": "q", "gpuFraction": 0.6} for n in ("a", "b")],
        )
    )
    reason = result.reason("b")
    assert reason is not None
    assert "nvidia.com/gpu.memory" not in reason.message


def test_unlabelled_gpu_nodes_the_pod_may_not_use_are_not_named() -> None:
    """A node its nodeSelector or a taint keeps it off would take it no more with the label."""
    result = run(
        _doc(
            [
                {"name": "n0", "gpus": 1, "gpuMemoryMiB": 1000, "labels": {"pool": "a"}},
                {"name": "n1", "gpus": 4, "gpuMemoryMiB": None, "labels": {"pool": "b"}},
                {
                    "name": "n2",
                    "gpus": 4,
                    "gpuMemoryMiB": None,
                    "labels": {"pool": "a"},
                    "taints": [{"key": "x", "effect": "NoSchedule"}],
                },
                {"name": "n3", "gpus": 4, "gpuMemoryMiB": None, "labels": {"pool": "a"}},
            ],
            [queue("q")],
            [{"name": n, "queue": "q", "gpuMemoryMiB": 600, "nodeSelector": {"pool": "a"}} for n in ("a", "b")],
        )
    )
    reason = result.reason("b")
    assert reason is not None
    note = "; 1 GPU node without the nvidia.com/gpu.memory label takes no gpu-memory request (n3)"
    assert reason.message.endswith(note)
