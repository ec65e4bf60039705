"""`kaistack diagnose`'s `vllm-gpu-crowded`: vLLM servers bound to one shared GPU whose utilizations fill it.

vLLM refuses to start unless utilization x the GPU's memory is free once its own CUDA context is up
(vllm-project/vllm@35d5cda123ec vllm/v1/worker/gpu_worker.py, init_device), so the last of them to start restarts
forever. A pod's shared GPU is its node and `runai-gpu-group` label (KAI@v0.17.0 pkg/common/resources/
gpu_sharing.go GetGpuGroups); a pod with KAI's HAMi-core limit (CUDA_DEVICE_MEMORY_LIMIT,
pkg/binder/common/constants.go:8) sees its share as the whole GPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from dump_testlib import healthy_dump_mistakes, shared_gpu_pod

from kaistack.cli import main

DUMPS = Path(__file__).resolve().parents[1] / "data" / "dumps"


def _server(
    name: str,
    utilization: float | None,
    group: str = "g-9",
    node: str | None = "gpu-0",
    phase: str = "Running",
    **container: Any,
) -> dict[str, Any]:
    flag = [f"--gpu-memory-utilization={utilization}"] if utilization is not None else []
    vllm = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "args": ["--model", "m", *flag], **container}
    return shared_gpu_pod(name, vllm, group, {"gpu-fraction": "0.5"}, node, phase)


def _mistakes(tmp_path: Path, capsys: pytest.CaptureFixture[str], *pods: dict[str, Any]) -> list[dict[str, Any]]:
    return healthy_dump_mistakes("vllm-gpu-crowded", tmp_path, capsys, *pods)


def test_two_servers_at_half_on_one_gpu_are_one_mistake_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [mistake] = _mistakes(tmp_path, capsys, _server("a", 0.5), _server("b", 0.5))
    assert mistake["object"] == "Pod ml/a, ml/b"
    assert mistake["problem"].startswith(
        "vLLM servers bound to one shared GPU (node gpu-0, GPU group g-9) are told --gpu-memory-utilization "
        "ml/a 0.5, ml/b 0.5: 1 of the GPU in all."
    )
    assert "They cannot all run" in mistake["problem"]
    assert mistake["problem"].endswith("Not ready: ml/a, ml/b")
    assert mistake["fix"].startswith("lower the utilizations to sum to less than 1")


def _statuses(pod: dict[str, Any], ready: bool, restarts: int = 0) -> dict[str, Any]:
    pod["status"]["containerStatuses"] = [{"name": "vllm", "ready": ready, "restartCount": restarts}]
    return pod


def test_the_server_that_could_not_start_is_named_with_its_restarts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    up, down = _statuses(_server("a", 0.5), True), _statuses(_server("b", 0.5), False, restarts=7)
    [mistake] = _mistakes(tmp_path, capsys, up, down)
    assert mistake["problem"].endswith("Not ready: ml/b (7 restarts)")


def test_servers_all_ready_are_told_a_restart_would_not_come_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [mistake] = _mistakes(tmp_path, capsys, _statuses(_server("a", 0.5), True), _statuses(_server("b", 0.5), True))
    assert mistake["problem"].endswith(
        "All are ready now: one that restarts cannot start again while the others hold their memory"
    )


def test_a_pod_spread_over_several_gpus_is_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spread = _server("spread", 0.5)
    spread["metadata"]["labels"]["runai-gpu-group/g-8"] = "g-8"
    assert _mistakes(tmp_path, capsys, _server("a", 0.5), spread) == []


def test_servers_on_different_gpus_of_a_node_are_no_mistake(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _mistakes(tmp_path, capsys, _server("a", 0.5, group="g-8"), _server("b", 0.5, group="g-9")) == []


def test_the_same_group_name_on_two_nodes_is_two_gpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _mistakes(tmp_path, capsys, _server("a", 0.5, node="gpu-0"), _server("b", 0.5, node="gpu-1")) == []


def test_a_server_joining_a_shared_gpu_counts_the_servers_already_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The healthy dump's gpu-1 runs ai/share-a (0.45) and ai/share-b (0.4) on GPU group g-1: 0.85, room left."""
    [mistake] = _mistakes(tmp_path, capsys, _server("late", 0.2, group="g-1", node="gpu-1"))
    assert mistake["object"] == "Pod ai/share-a, ai/share-b, ml/late"
    assert "ai/share-a 0.45, ai/share-b 0.4, ml/late 0.2: 1.05 of the GPU in all" in mistake["problem"]


def test_servers_that_leave_room_are_no_mistake(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _mistakes(tmp_path, capsys, _server("a", 0.7), _server("b", 0.2)) == []


def test_a_server_without_the_flag_counts_vllms_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [mistake] = _mistakes(tmp_path, capsys, _server("greedy", None), _server("small", 0.1))
    assert "--gpu-memory-utilization ml/greedy 0.9, ml/small 0.1: 1 of the GPU in all." in mistake["problem"]


def test_finished_and_unbound_pods_hold_no_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = _server("done", 0.5, phase="Succeeded")
    waiting = _server("waiting", 0.5, node=None, phase="Pending")
    assert _mistakes(tmp_path, capsys, _server("a", 0.5), done, waiting) == []


def test_a_pod_capped_by_hami_core_is_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    limit = {"name": "CUDA_DEVICE_MEMORY_LIMIT", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}
    assert _mistakes(tmp_path, capsys, _server("a", 0.5), _server("b", 0.5, env=[limit])) == []


def test_a_utilization_from_a_secret_is_not_guessed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hidden = {"name": "VLLM_GPU_MEMORY_UTILIZATION", "valueFrom": {"secretKeyRef": {"name": "s", "key": "u"}}}
    assert _mistakes(tmp_path, capsys, _server("a", 0.5), _server("b", None, env=[hidden])) == []


def test_namespace_filter_keeps_the_mistake_for_either_pod(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = yaml.safe_load((DUMPS / "healthy.yaml").read_text())
    dump["items"] += [_server("a", 0.5), _server("b", 0.5)]
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump))
    main(["diagnose", "--from-dump", str(path), "--json", "--namespace", "ml"])
    codes = [m["code"] for m in json.loads(capsys.readouterr().out)["mistakes"]]
    assert "vllm-gpu-crowded" in codes


# --- from a mutation run: which live pods crowd a GPU, and how their state is told ---------------------------

HIDDEN = {"name": "VLLM_GPU_MEMORY_UTILIZATION", "valueFrom": {"secretKeyRef": {"name": "s", "key": "u"}}}


def test_a_lone_server_that_fills_its_gpu_is_no_crowd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One server at 1.0 has the GPU to itself (the per-pod policy judges it against its share): guards against a
    crowd of one."""
    assert _mistakes(tmp_path, capsys, _server("a", 1.0)) == []


def test_a_pod_that_runs_no_vllm_is_not_a_second_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A busybox pod on the same GPU group: guards against counting a pod with no vLLM container as a server at 0."""
    other = _server("batch", None, image="busybox:1.37.0")
    assert _mistakes(tmp_path, capsys, _server("a", 1.0), other) == []


def test_a_server_whose_utilization_is_unknown_is_not_counted_at_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards against counting a server with its utilization from a Secret as a server that takes nothing."""
    assert _mistakes(tmp_path, capsys, _server("a", 1.0), _server("b", None, env=[HIDDEN])) == []


def test_a_pod_with_one_server_of_unknown_utilization_is_left_out_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pod whose second vLLM container takes its utilization from a Secret: guards against summing only the
    containers whose utilization is known."""
    pair = _server("pair", 0.5)
    pair["spec"]["containers"].append(
        {"name": "embed", "image": "vllm/vllm-openai:v0.11.0", "args": ["--model", "e"], "env": [HIDDEN]}
    )
    assert _mistakes(tmp_path, capsys, pair, _server("b", 0.5)) == []


def test_a_server_not_ready_beside_a_ready_sidecar_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The pod's proxy is ready, its vLLM restarting: guards against calling a pod ready when any container is."""
    down = _server("b", 0.5)
    down["status"]["containerStatuses"] = [
        {"name": "vllm", "ready": False, "restartCount": 3},
        {"name": "proxy", "ready": True, "restartCount": 0},
    ]
    [mistake] = _mistakes(tmp_path, capsys, _statuses(_server("a", 0.5), True), down)
    assert mistake["problem"].endswith("Not ready: ml/b (3 restarts)")


def test_a_single_restart_is_counted_in_the_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against leaving out a container that restarted once, or writing "1 restarts"."""
    up, down = _statuses(_server("a", 0.5), True), _statuses(_server("b", 0.5), False, restarts=1)
    [mistake] = _mistakes(tmp_path, capsys, up, down)
    assert mistake["problem"].endswith("Not ready: ml/b (1 restart)")


def _sidecar_server(name: str, utilization: float, ready: bool) -> dict[str, Any]:
    """vLLM as a native sidecar (an init container with restartPolicy: Always) beside the app, given the share."""
    app = {"name": "app", "image": "myorg/rag-app:1"}
    pod = shared_gpu_pod(name, app, "g-9", {"gpu-fraction": "0.5", "gpu-fraction-container-name": "vllm"})
    vllm = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "restartPolicy": "Always",
            "args": ["--model", "m", f"--gpu-memory-utilization={utilization}"]}  # fmt: skip
    pod["spec"]["initContainers"] = [vllm]
    pod["status"]["containerStatuses"] = [{"name": "app", "ready": True, "restartCount": 0}]
    pod["status"]["initContainerStatuses"] = [{"name": "vllm", "ready": ready, "restartCount": 0 if ready else 4}]
    return pod


def test_a_vllm_native_sidecar_is_a_server_on_the_gpu_and_its_readiness_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [mistake] = _mistakes(tmp_path, capsys, _server("a", 0.5), _sidecar_server("b", 0.6, ready=False))
    assert mistake["object"] == "Pod ml/a, ml/b"
    assert "ml/a 0.5, ml/b 0.6: 1.1 of the GPU in all" in mistake["problem"]
    assert mistake["problem"].endswith("Not ready: ml/a, ml/b (4 restarts)")
