"""`kaistack diagnose`'s `gpu-memory-above-gpu`: a bound pod asking more GPU memory than its node's GPUs hold.

KAI counts a GPU as the node's nvidia.com/gpu.memory label floored to 100 MiB and passes a gpu-memory request that
comes to a whole number of GPUs (kai-scheduler/KAI-Scheduler@v0.17.0 pkg/scheduler/api/node_info/node_info.go
getNodeGpuMemory, isValidGpuPortion), binding it to one GPU per device: the pod runs with one GPU's memory. The
healthy dump's GPU nodes are labelled 11441 MiB, which KAI counts as 11400.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dump_testlib import healthy_dump_mistakes, shared_gpu_pod

DUMPS = Path(__file__).resolve().parents[1] / "data" / "dumps"


def _pod(name: str, annotations: dict[str, str], node: str | None = "gpu-0") -> dict[str, Any]:
    main = {"name": "main", "image": "busybox:1.37.0", "resources": {"requests": {"cpu": "100m"}}}
    return shared_gpu_pod(name, main, f"g-{name}", annotations, node)


def _mistakes(tmp_path: Path, capsys: pytest.CaptureFixture[str], *pods: dict[str, Any]) -> list[dict[str, Any]]:
    return healthy_dump_mistakes("gpu-memory-above-gpu", tmp_path, capsys, *pods)


def test_a_bound_pod_asking_two_gpus_memory_is_told_it_runs_with_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [mistake] = _mistakes(tmp_path, capsys, _pod("big", {"gpu-memory": "22800"}))
    assert mistake["object"] == "Pod ml/big"
    assert mistake["problem"] == (
        "asks gpu-memory 22800 MiB, more than the 11400 MiB KAI counts per GPU on node gpu-0, where it is bound: "
        "KAI took it as a share of 2 (a whole number passes) and bound it to one GPU per device; it runs with one "
        "GPU's memory"
    )
    assert mistake["fix"] == "ask for whole GPUs (nvidia.com/gpu), or gpu-memory of at most 11400"


def test_a_share_kai_would_refuse_is_not_said_to_be_kais_doing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """12000 on an 11400 MiB GPU is a share of 1.06, which KAI never binds: the label changed since, or another
    scheduler bound the pod."""
    [mistake] = _mistakes(tmp_path, capsys, _pod("moved", {"gpu-memory": "12000"}))
    assert (
        "a share of 1.06, which KAI refuses, so the node's label changed since or KAI did not bind it"
        in (mistake["problem"])
    )
    assert "KAI took it" not in mistake["problem"]


def test_memory_up_to_the_floored_label_is_no_mistake(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _mistakes(tmp_path, capsys, _pod("fits", {"gpu-memory": "11400"})) == []


def test_a_pending_pod_is_left_to_the_pending_diagnosis(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _mistakes(tmp_path, capsys, _pod("waiting", {"gpu-memory": "22800"}, node=None)) == []


def test_a_node_without_the_memory_label_is_not_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # KAI refuses gpu-memory pods on such a node, so one bound there was bound by something else.
    assert _mistakes(tmp_path, capsys, _pod("odd", {"gpu-memory": "22800"}, node="cpu-0")) == []


def test_a_fraction_beside_gpu_memory_wins_as_in_kais_pod_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _mistakes(tmp_path, capsys, _pod("both", {"gpu-fraction": "0.5", "gpu-memory": "22800"})) == []
