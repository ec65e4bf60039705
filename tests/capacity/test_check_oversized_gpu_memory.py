"""A gpu-memory request above a GPU's memory that KAI still places: the check says so.

KAI counts a GPU's memory as the `nvidia.com/gpu.memory` label floored to 100 MiB (getNodeGpuMemory), turns the
request into ceil(request / memory x 100) / 100 GPUs (getGpuMemoryFractionalOnNode) and passes any whole number
(isValidGpuPortion), all in kai-scheduler/KAI-Scheduler@v0.17.0 pkg/scheduler/api/node_info/. The share goes to one
GPU per device (gpu_sharing/gpuSharing.go GetNodePreferableGpuForSharing): `fits`, with one GPU's memory.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.capacity.check import check
from kaistack.declaration.parse import parse_config
from kaistack.ops.render import render_stack
from kaistack.ops.validate import check_capacity

REPO = Path(__file__).resolve().parents[2]
H100 = {"name": "gpu", "gpus": 4, "gpuProduct": "NVIDIA-H100-80GB-HBM3", "gpuMemoryMiB": 81559, "cpu": "16"}


def _config(*workloads: dict[str, Any]) -> Any:
    return parse_config(
        {
            "cluster": {"provider": "kind", "nodePools": [{**H100, "memory": "64Gi"}]},
            "gpu": {"mode": "fake"},
            "queues": [{"name": "q"}],
            "workloads": list(workloads),
        }
    )


def _pod(name: str, mib: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "kind": "Pod", "queue": "q", "image": "busybox:1.37.0", "gpuMemoryMiB": mib, **extra}


def test_twice_a_gpus_memory_is_placed_on_one_gpu_and_the_note_says_so() -> None:
    report = check(_config(_pod("big", 163000)))
    [workload] = report.workloads
    assert workload.status == "Running"
    assert [len(p.gpu_groups) for p in workload.pods] == [1]
    [note] = report.notes
    assert note.startswith("big: KAI counts gpuMemoryMiB 163000 as 2 GPUs of gpu-0's (81500 MiB each)")
    assert "charging queue q for 2: the pod gets one GPU's memory, not 163000 MiB" in note
    assert note.endswith("Ask for whole GPUs (gpu), or at most 81500 MiB")


def test_a_request_kais_ceiling_rounds_to_a_whole_share_is_noted_with_that_share() -> None:
    # 162500 / 81500 = 1.9939, which KAI's ceiling to 1/100 makes 2.00: placed, though not a multiple.
    report = check(_config(_pod("almost", 162500)))
    assert report.workloads[0].status == "Running"
    [note] = report.notes
    assert "as 2 GPUs of gpu-0's" in note


def test_memory_between_the_floored_and_the_labelled_figure_is_already_too_much() -> None:
    # The label says 81559 but KAI counts 81500: 81501..81559 is a share of 1.01, refused, never placed.
    report = check(_config(_pod("edge", 81559)))
    [workload] = report.workloads
    assert workload.status == "Pending"
    assert workload.reasons == ("gpu-memory 81559 MiB exceeds the memory of every GPU",)
    assert report.notes == ()


def test_a_request_within_one_gpu_gives_no_note() -> None:
    whole = {"name": "whole", "kind": "Pod", "queue": "q", "image": "busybox:1.37.0", "gpu": 2}
    report = check(_config(_pod("fits", 81500), _pod("small", 40000), whole))
    assert {w.status for w in report.workloads} == {"Running"}
    assert report.notes == ()


def test_a_workload_is_noted_once_however_many_of_its_pods_are_placed() -> None:
    report = check(_config({**_pod("many", 163000), "kind": "Deployment", "replicas": 3}))
    assert [p.status for p in report.workloads[0].pods] == ["Running"] * 3
    assert len(report.notes) == 1


def test_a_multi_device_request_is_noted_per_device_and_charged_for_each() -> None:
    report = check(_config(_pod("pair", 163000, gpuDevices=2)))
    [workload] = report.workloads
    assert [len(p.gpu_groups) for p in workload.pods] == [2]
    [note] = report.notes
    assert "on one GPU per device as a share of 2, charging queue q for 4:" in note
    assert next(q for q in report.queues if q.name == "q").allocated["gpu"] == 4


def test_a_pod_noted_on_a_smaller_pool_is_found_beside_one_that_fits_a_larger_gpu() -> None:
    # 48000 MiB is 0.59 of the H100 and 2 of the 24000 MiB GPU: the first replica fits the H100, the second is
    # placed on the small GPU as a share of 2.
    config = parse_config(
        {
            "cluster": {
                "provider": "kind",
                "nodePools": [
                    {**H100, "gpus": 1, "memory": "64Gi"},
                    {"name": "small", "gpus": 1, "gpuProduct": "NVIDIA-L4", "gpuMemoryMiB": 24000, "cpu": "8"},
                ],
            },
            "gpu": {"mode": "fake"},
            "queues": [{"name": "q"}],
            "workloads": [{**_pod("serve", 48000), "kind": "Deployment", "replicas": 2}],
        }
    )
    report = check(config)
    assert sorted(p.node or "" for p in report.workloads[0].pods) == ["gpu-0", "small-0"]
    [note] = report.notes
    assert note.startswith("serve: KAI counts gpuMemoryMiB 48000 as 2 GPUs of small-0's (24000 MiB each)")


def _spread(replicas: int, *pools: dict[str, Any]) -> Any:
    # One GPU a node, so each replica lands on its own node.
    return parse_config(
        {
            "cluster": {"provider": "kind", "nodePools": list(pools)},
            "gpu": {"mode": "fake"},
            "queues": [{"name": "q"}],
            "workloads": [{**_pod("serve", 163000), "kind": "Deployment", "replicas": replicas}],
        }
    )


def test_a_workload_placed_on_several_nodes_names_each_of_them_in_one_note() -> None:
    report = check(_spread(2, {**H100, "gpus": 1, "count": 2, "memory": "64Gi"}))
    assert sorted(p.node or "" for p in report.workloads[0].pods) == ["gpu-0", "gpu-1"]
    [note] = report.notes
    assert note.startswith("serve: KAI counts gpuMemoryMiB 163000 as 2 GPUs of gpu-0's and gpu-1's (81500 MiB each)")


def test_past_three_nodes_the_note_counts_the_rest() -> None:
    report = check(_spread(5, {**H100, "gpus": 1, "count": 5, "memory": "64Gi"}))
    [note] = report.notes
    assert "as 2 GPUs of gpu-0's, gpu-1's, gpu-2's and 2 more nodes' (81500 MiB each)" in note


def test_a_workload_on_exactly_three_nodes_names_all_three_and_counts_none() -> None:
    """Three nodes are named in full: counting "and 0 more" starts only past three."""
    report = check(_spread(3, {**H100, "gpus": 1, "count": 3, "memory": "64Gi"}))
    [note] = report.notes
    assert "as 2 GPUs of gpu-0's, gpu-1's and gpu-2's (81500 MiB each)" in note


def test_past_three_nodes_one_more_is_counted_in_the_singular() -> None:
    report = check(_spread(4, {**H100, "gpus": 1, "count": 4, "memory": "64Gi"}))
    [note] = report.notes
    assert "as 2 GPUs of gpu-0's, gpu-1's, gpu-2's and 1 more node's (81500 MiB each)" in note


def test_replicas_on_pools_of_different_gpus_get_a_note_per_gpu_size() -> None:
    # 163000 MiB is 2 GPUs of 81500 and, by KAI's ceiling to 1/100, 4 of 40800: each pool makes a different
    # share, so each gets its note.
    a100 = {"name": "a100", "gpus": 1, "gpuProduct": "NVIDIA-A100-SXM4-40GB", "gpuMemoryMiB": 40800, "cpu": "8"}
    report = check(_spread(2, {**H100, "gpus": 1, "memory": "64Gi"}, a100))
    assert sorted(p.node or "" for p in report.workloads[0].pods) == ["a100-0", "gpu-0"]
    assert sorted(n.split(" (")[0] for n in report.notes) == [
        "serve: KAI counts gpuMemoryMiB 163000 as 2 GPUs of gpu-0's",
        "serve: KAI counts gpuMemoryMiB 163000 as 4 GPUs of a100-0's",
    ]


def _project(tmp_path: Path, *workloads: dict[str, Any], kai: dict[str, Any] | None = None) -> Path:
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(REPO / "__main__.py", tmp_path / "__main__.py")
    config = {
        "kaistack:cluster": {"provider": "kind", "nodePools": [{**H100, "memory": "64Gi"}]},
        "kaistack:gpu": {"mode": "fake"},
        "kaistack:queues": [{"name": "q"}],
        "kaistack:workloads": list(workloads),
        **({"kaistack:kai": kai} if kai else {}),
    }
    (tmp_path / "Pulumi.big.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def _warned(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("kaistack capacity: big:")]


def test_up_warns_with_the_note_though_the_stack_fits(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    render_stack(_project(tmp_path, _pod("big", 163000)), "big")
    [warned] = _warned(caplog)
    assert "the pod gets one GPU's memory, not 163000 MiB" in warned


def test_up_under_warn_warns_with_the_note_beside_what_does_not_fit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    too_many = {"name": "too-many", "kind": "Pod", "queue": "q", "image": "busybox:1.37.0", "gpu": 8}
    render_stack(_project(tmp_path, _pod("big", 163000), too_many, kai={"capacityCheck": "warn"}), "big")
    assert len(_warned(caplog)) == 1
    assert any("too-many" in r.getMessage() and "8 GPUs" in r.getMessage() for r in caplog.records)


def test_validate_lists_the_note_in_the_capacity_details() -> None:
    verdict = check_capacity(_config(_pod("big", 163000)), "big")
    assert verdict.ok
    [detail] = verdict.details
    assert detail.startswith("note: big: KAI counts gpuMemoryMiB 163000 as 2 GPUs")
