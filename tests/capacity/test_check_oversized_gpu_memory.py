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
    report = check(_config(_pod("fits", 81500), _pod("small", 40000)))
    assert {w.status for w in report.workloads} == {"Running"}
    assert report.notes == ()


def test_a_workload_is_noted_once_however_many_of_its_pods_are_placed() -> None:
    report = check(_config({**_pod("many", 163000), "kind": "Deployment", "replicas": 3}))
    assert [p.status for p in report.workloads[0].pods] == ["Running"] * 3
    assert len(report.notes) == 1


def test_a_multi_device_request_is_noted_per_device() -> None:
    report = check(_config(_pod("pair", 163000, gpuDevices=2)))
    [workload] = report.workloads
    assert [len(p.gpu_groups) for p in workload.pods] == [2]
    [note] = report.notes
    assert "on one GPU per device as a share of 2" in note


def test_up_warns_with_the_note_though_the_stack_fits(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(REPO / "__main__.py", tmp_path / "__main__.py")
    config = {
        "kaistack:cluster": {"provider": "kind", "nodePools": [{**H100, "memory": "64Gi"}]},
        "kaistack:gpu": {"mode": "fake"},
        "kaistack:queues": [{"name": "q"}],
        "kaistack:workloads": [_pod("big", 163000)],
    }
    (tmp_path / "Pulumi.big.yaml").write_text(yaml.safe_dump({"config": config}))
    render_stack(tmp_path, "big")
    warned = [r.getMessage() for r in caplog.records if r.getMessage().startswith("kaistack capacity: big:")]
    assert len(warned) == 1
    assert "the pod gets one GPU's memory, not 163000 MiB" in warned[0]
