"""A tenant's gpu-memory may not be more than the largest GPU of the cluster kaistack built.

KAI counts a GPU as its node's nvidia.com/gpu.memory label floored to 100 MiB (kai-scheduler/KAI-Scheduler@v0.17.0
pkg/scheduler/api/node_info/node_info.go getNodeGpuMemory). A request above every GPU is either a portion above 1
that KAI refuses on every node (Pending for good) or a whole number that it binds to one GPU
(isValidGpuPortion), where the pod has that GPU's memory, not what it asked: kaistack.capacity.oversized. The
dev stack's fake GPUs are labelled 11441 MiB, which KAI counts as 11400.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from test_policy_admission import ROOT, Case, cel_denials, synced_pod

from components.admission import tenant_policy
from kaistack.capacity.pool_memory import largest_gpu_memory
from kaistack.declaration.model import StackConfig
from kaistack.declaration.parse import parse_config
from kaistack.stack.load import load_stack

ABOVE = "is MiB per GPU, and no GPU of this cluster has more than 11400 MiB"


@pytest.fixture(scope="module")
def dev() -> StackConfig:
    return load_stack(ROOT, "dev").config


def _denials(config: StackConfig, memory: str, **case: Any) -> list[str]:
    pod = synced_pod(annotations={"gpu-memory": memory})
    return cel_denials(tenant_policy(config, config.tenant("team-a")), Case(pod, False, **case))


def _above(denials: list[str]) -> bool:
    return any(ABOVE in d for d in denials)


@pytest.mark.parametrize("memory", ["11400", "2000", "0000000000000000000011400"])
def test_up_to_the_largest_gpu_as_kai_counts_it_passes(dev: StackConfig, memory: str) -> None:
    assert _denials(dev, memory) == []


@pytest.mark.parametrize("memory", ["11401", "11441", "22800", "10000000000000000000"])
def test_more_than_the_largest_gpu_is_refused_naming_it(dev: StackConfig, memory: str) -> None:
    denials = _denials(dev, memory)
    assert _above(denials)
    assert any(d.endswith("ask for whole GPUs (nvidia.com/gpu), or at most 11400") for d in denials)


def test_a_value_that_is_no_number_is_left_to_the_format_rule(dev: StackConfig) -> None:
    denials = _denials(dev, "22800Mi")
    assert denials
    assert not _above(denials)


def test_an_update_that_keeps_a_pods_request_passes(dev: StackConfig) -> None:
    """A pod admitted before the bound (or before a pool shrank) keeps syncing its other changes."""
    old = synced_pod(annotations={"gpu-memory": "22800"})
    assert not _above(_denials(dev, "22800", operation="UPDATE", old=copy.deepcopy(old)))


def test_an_update_that_raises_the_request_above_it_is_refused(dev: StackConfig) -> None:
    old = synced_pod(annotations={"gpu-memory": "2000"})
    assert _above(_denials(dev, "22800", operation="UPDATE", old=old))


def _config(provider: str = "kind", gpu: dict[str, Any] | None = None, *pools: dict[str, Any]) -> StackConfig:
    cluster: dict[str, Any] = {"provider": provider, "nodePools": list(pools)}
    if provider == "existing":
        cluster["existing"] = {"context": "lab"}
    return parse_config({"cluster": cluster, "gpu": gpu or {"mode": "fake"}, "queues": [{"name": "q"}]})


def _pool(name: str, **facts: Any) -> dict[str, Any]:
    return {"name": name, "gpus": 1, "cpu": "8", "memory": "32Gi", **facts}


def test_the_bound_is_the_largest_pool_floored_as_kai_counts_it() -> None:
    config = _config(
        "kind",
        {"mode": "gpu-operator"},
        _pool("l4", gpuMemoryMiB=23034),
        _pool("h100", gpuMemoryMiB=81559),
        {"name": "cpu", "cpu": "8", "memory": "32Gi"},
    )
    assert largest_gpu_memory(config) == 81500


def test_a_label_in_bytes_counts_as_kai_converts_it() -> None:
    """gpu-feature-discovery issue 26: KAI reads a label of a TiB or more as bytes."""
    config = _config("kind", {"mode": "gpu-operator"}, _pool("h100", labels={"nvidia.com/gpu.memory": "85520809984"}))
    assert largest_gpu_memory(config) == 81500


def test_no_bound_where_a_gpu_pools_memory_is_unknown() -> None:
    config = _config("kind", {"mode": "gpu-operator"}, _pool("h100", gpuMemoryMiB=81559), _pool("unknown"))
    assert largest_gpu_memory(config) is None


def test_no_bound_on_an_existing_cluster_which_may_have_more_gpus_than_it_declares() -> None:
    config = _config("existing", {"mode": "none"}, _pool("h100", gpuMemoryMiB=81559))
    assert largest_gpu_memory(config) is None


def test_pools_nothing_labels_are_left_out_as_kai_refuses_gpu_memory_there() -> None:
    """The device plugin without GFD writes no memory label, and a declared gpuMemoryMiB alone writes none."""
    config = _config(
        "kind",
        {"mode": "device-plugin", "devicePlugin": {"gfd": False}},
        _pool("plain", gpuMemoryMiB=81559),
        _pool("labelled", labels={"nvidia.com/gpu.memory": "23034"}),
    )
    assert largest_gpu_memory(config) == 23000


def test_with_gpu_sharing_off_there_is_no_bound_to_state(dev: StackConfig) -> None:
    off = dev.model_copy(update={"kai": dev.kai.model_copy(update={"sharing": "off"})})
    policy = tenant_policy(off, off.tenant("team-a"))
    assert not any(ABOVE in v["message"] for v in policy["spec"]["validations"])
