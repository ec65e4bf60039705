"""vLLM servers packed onto one GPU whose utilizations sum to 1 or more: the check says the last cannot start.

vLLM snapshots the device's free memory after its CUDA context is up and refuses to start when less than
utilization x total is free (vllm-project/vllm@35d5cda123ec vllm/v1/worker/gpu_worker.py, init_device: "Free memory
on device ... is less than desired GPU memory utilization"); its budget (determine_available_memory) counts only
what it allocates after that snapshot, so each context comes on top. Servers at 0.5 and 0.5 on one GPU therefore
cannot both start, though each is within its pod's share. The version at vllm-project/vllm@0012cf691b7e (same file)
counted the other processes' memory against the budget instead (`total - free` in the peak): failing there too.
"""

from __future__ import annotations

from typing import Any

import pytest

from kaistack.capacity.check import check
from kaistack.capacity.vllm_startup import crowded_vllm_gpus, vllm_utilization
from kaistack.declaration.parse import parse_config
from kaistack.ops.validate import check_capacity

H100 = {"name": "gpu", "gpus": 1, "gpuProduct": "NVIDIA-H100-80GB-HBM3", "gpuMemoryMiB": 81559, "cpu": "16"}


def _vllm(name: str, fraction: float, utilization: float | None, **extra: Any) -> dict[str, Any]:
    args = ["--model", "m", *([f"--gpu-memory-utilization={utilization}"] if utilization is not None else [])]
    return {
        "name": name,
        "kind": "Deployment",
        "queue": "q",
        "image": "vllm/vllm-openai:v0.11.0",
        "gpuFraction": fraction,
        "args": args,
        **extra,
    }


def _config(*workloads: dict[str, Any], gpus: int = 1, **top: Any) -> Any:
    return parse_config(
        {
            "cluster": {"provider": "kind", "nodePools": [{**H100, "gpus": gpus, "memory": "64Gi"}]},
            "gpu": {"mode": "fake"},
            "queues": [{"name": "q"}],
            "workloads": list(workloads),
            **top,
        }
    )


def _crowded(report: Any) -> list[str]:
    return [n for n in report.notes if "vLLM servers are told" in n]


def test_two_servers_at_half_on_one_gpu_are_noted_as_servers_that_cannot_both_run() -> None:
    report = check(_config(_vllm("a", 0.5, 0.5), _vllm("b", 0.5, 0.5)))
    assert {w.status for w in report.workloads} == {"Running"}
    [note] = _crowded(report)
    assert note.startswith(
        "a and b: KAI packs a-0 and b-0 onto gpu-0/gpu0, whose vLLM servers are told --gpu-memory-utilization "
        "a-0 0.5, b-0 0.5: 1 of the GPU in all."
    )
    assert "They cannot all run: each server's CUDA context comes on top of its utilization" in note
    assert "so one started while the others hold theirs fails" in note
    assert note.endswith("or give the pods shares that do not fill a GPU")


def test_servers_that_leave_room_on_the_gpu_give_no_note() -> None:
    # The README's dev stack: 0.7 and 0.2 leave a tenth of the GPU for the two contexts.
    assert _crowded(check(_config(_vllm("a", 0.7, 0.7), _vllm("b", 0.2, 0.2)))) == []


def test_a_sum_just_under_one_gives_no_note() -> None:
    assert _crowded(check(_config(_vllm("a", 0.5, 0.49), _vllm("b", 0.5, 0.5)))) == []


def test_decimals_that_sum_to_one_in_floats_below_it_are_still_one() -> None:
    # 0.3 + 0.7 is 0.9999999999999999 in binary floats.
    [note] = _crowded(check(_config(_vllm("a", 0.3, 0.3), _vllm("b", 0.7, 0.7))))
    assert ": 1 of the GPU in all." in note


def test_a_server_without_the_flag_counts_vllms_default() -> None:
    [note] = _crowded(check(_config(_vllm("greedy", 0.9, None), _vllm("small", 0.1, 0.1))))
    assert "--gpu-memory-utilization greedy-0 0.9, small-0 0.1: 1 of the GPU in all." in note


def test_a_utilization_vllm_would_refuse_is_not_counted_against_the_others() -> None:
    """vLLM accepts only 0 < u <= 1: a server told -0.5 never starts, and does not offset the two that crowd."""
    refused = _vllm("refused", 0.1, None, args=["--gpu-memory-utilization=-0.5"])
    [note] = _crowded(check(_config(_vllm("a", 0.45, 0.6), _vllm("b", 0.45, 0.6), refused)))
    assert "--gpu-memory-utilization a-0 0.6, b-0 0.6: 1.2 of the GPU in all." in note


def test_a_pod_that_does_not_run_vllm_is_not_counted() -> None:
    other = {"name": "batch", "kind": "Pod", "queue": "q", "image": "busybox:1.37.0", "gpuFraction": 0.5}
    assert _crowded(check(_config(_vllm("a", 0.5, 0.5), other))) == []


def test_a_utilization_from_a_secret_is_not_guessed() -> None:
    hidden = _vllm("hidden", 0.5, None, secretEnv={"VLLM_GPU_MEMORY_UTILIZATION": {"secret": "s", "key": "u"}})
    assert _crowded(check(_config(_vllm("a", 0.5, 0.5), hidden))) == []


def test_gpus_with_the_same_mix_share_one_note_that_counts_them() -> None:
    report = check(_config({**_vllm("a", 0.5, 0.5), "replicas": 4}, gpus=2))
    [note] = _crowded(report)
    assert note.startswith("a: KAI packs a-")
    assert "(and the same mix onto 1 more: gpu-0/gpu" in note


def test_with_memory_isolation_utilizations_are_of_the_share_and_no_note_is_given() -> None:
    config = _config(
        _vllm("a", 0.5, 0.5), _vllm("b", 0.5, 0.5), gpu={"mode": "device-plugin"}, kai={"sharing": "isolated"}
    )
    report = check(config)
    assert {w.status for w in report.workloads} == {"Running"}
    assert _crowded(report) == []


def test_validate_lists_the_note_in_the_capacity_details() -> None:
    verdict = check_capacity(_config(_vllm("a", 0.5, 0.5), _vllm("b", 0.5, 0.5)), "dev")
    assert verdict.ok
    assert any(d.startswith("note: a and b: KAI packs a-0 and b-0 onto gpu-0/gpu0") for d in verdict.details)


# --- the pieces -------------------------------------------------------------------------------------------------


def _workload(**fields: Any) -> Any:
    return _config({"name": "w", "kind": "Pod", "queue": "q", "image": "busybox:1.37.0", **fields}).workloads[0]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"image": "vllm/vllm-openai:v0.11.0"}, 0.9),
        ({"args": ["--gpu-memory-utilization", "0.4"]}, 0.4),
        ({"command": ["sh", "-c", "vllm serve m --gpu-memory-utilization=0.3"]}, 0.3),
        ({"args": ["--gpu-memory-utilization=$(U)"], "env": {"U": "0.25"}}, 0.25),
        ({"args": ["--gpu-memory-utilization=${U}"]}, None),
        ({"env": {"VLLM_GPU_MEMORY_UTILIZATION": "0.6"}}, 0.6),
        ({"image": "busybox:1.37.0"}, None),
    ],
    ids=["default", "flag", "shell-string", "env-reference", "shell-variable", "variable", "not-vllm"],
)
def test_the_utilization_read_from_a_declared_workload(fields: dict[str, Any], expected: float | None) -> None:
    assert vllm_utilization(_workload(**fields)) == expected


def test_a_pod_spread_over_several_gpus_is_not_counted_on_them() -> None:
    """gpuDevices 2: KAI gives it half of each of two GPUs, and a server with tensor parallel 1 uses one of them,
    which the pod does not say: it is left out rather than counted on both."""
    pair = {**_vllm("pair", 0.5, 0.5), "gpuDevices": 2}
    report = check(_config(pair, _vllm("a", 0.5, 0.5), _vllm("b", 0.5, 0.5), gpus=2))
    assert {w.status for w in report.workloads} == {"Running"}
    assert _crowded(report) == []


def test_one_server_alone_on_a_shared_gpu_is_not_a_crowd() -> None:
    assert crowded_vllm_gpus([("n/gpu0", [("a-0", "a", 1.0)])]) == []


def test_past_three_workloads_the_note_counts_the_rest() -> None:
    servers = [(f"w{i}-0", f"w{i}", 0.2) for i in range(5)]
    [note] = crowded_vllm_gpus([("n/gpu0", servers)])
    assert note.startswith("w0, w1, w2 and 2 more: KAI packs w0-0, w1-0, w2-0 and 2 more onto n/gpu0")
