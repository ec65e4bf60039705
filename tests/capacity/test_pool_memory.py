"""`kaistack.capacity.pool_memory`: the nvidia.com/gpu.memory a pool's nodes carry, as kaistack knows it."""

from __future__ import annotations

from typing import Any

import pytest

from kaistack.capacity.pool_memory import pool_gpu_memory
from kaistack.declaration.parse import parse_config


def _memory(gpu: dict[str, Any], **pool: Any) -> int | None:
    raw = {
        "cluster": {"provider": "kind", "nodePools": [{"name": "p", "gpus": 1, "cpu": "8", "memory": "32Gi", **pool}]},
        "gpu": gpu,
        "queues": [{"name": "q"}],
    }
    config = parse_config(raw)
    return pool_gpu_memory(config, config.cluster.node_pools[0])


def test_a_declared_memory_is_what_the_pools_nodes_carry() -> None:
    assert _memory({"mode": "gpu-operator"}, gpuMemoryMiB=23034) == 23034


def test_a_declared_memory_wins_over_a_label_the_pool_also_declares() -> None:
    labels = {"nvidia.com/gpu.memory": "22888"}
    assert _memory({"mode": "gpu-operator"}, gpuMemoryMiB=23034, labels=labels) == 23034


def test_a_label_alone_is_read_when_nothing_else_is_declared() -> None:
    assert _memory({"mode": "gpu-operator"}, labels={"nvidia.com/gpu.memory": "23034"}) == 23034


@pytest.mark.parametrize(("fake", "expected"), [({}, 11441), ({"gpuMemoryMiB": 24000}, 24000)])
def test_fake_gpus_carry_the_fake_operators_memory_when_the_pool_declares_none(
    fake: dict[str, Any], expected: int
) -> None:
    assert _memory({"mode": "fake", "fake": fake} if fake else {"mode": "fake"}) == expected


def test_an_undeclared_memory_on_real_gpus_is_unknown() -> None:
    assert _memory({"mode": "gpu-operator"}) is None


def test_without_gfd_only_a_declared_label_reaches_the_node() -> None:
    """The device plugin without GFD writes no memory label, and off EKS nothing writes the declared one."""
    plugin = {"mode": "device-plugin", "devicePlugin": {"gfd": False}}
    assert _memory(plugin, gpuMemoryMiB=23034) is None
    assert _memory(plugin, gpuMemoryMiB=23034, labels={"nvidia.com/gpu.memory": "22888"}) == 22888
