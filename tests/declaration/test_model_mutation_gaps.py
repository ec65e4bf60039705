"""The workload and queue models' boundaries and guards, one each: the cases a mutation run of model/workloads.py,
model/queues.py and model/base.py found no test for (a bound off by one, a guard dropped, an allowed pairing
refused, a message that names the wrong key). Each passes here and failed on its mutant."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from kaistack.declaration.model import Workload
from kaistack.declaration.model.queues import Queue, depths, parents_first
from kaistack.declaration.parse import ConfigError, parse_config


def _stack(**workload: Any) -> dict[str, Any]:
    """A small valid kind stack with one host Pod in queue `team`, changed by `workload`."""
    return {
        "cluster": {"provider": "kind", "nodePools": [{"name": "gpu", "count": 1, "gpus": 4}]},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "team"}],
        "workloads": [{"name": "w", "kind": "Pod", "queue": "team", "image": "busybox:1.37.0", **workload}],
    }


def _workload(**fields: Any) -> Workload:
    return Workload.model_validate({"name": "w", "kind": "Pod", "image": "busybox:1.37.0", **fields})


# --- workloads: GPU requests


def test_gpu_devices_may_spread_a_gpu_fraction() -> None:
    """KAI@v0.17.0 pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go:40: the device count needs a
    fraction or a GPU memory request, nothing more."""
    assert _workload(gpuFraction=0.5, gpuDevices=2).gpu_devices == 2


def test_a_gpu_memory_request_shares_a_gpu() -> None:
    """KAI@v0.17.0 pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go:26: `isFractional :=
    hasGpuFractionAnnotation || hasGpuMemoryAnnotation`."""
    assert _workload(gpuMemoryMiB=1000).shares_gpu


def test_a_fraction_with_a_gpu_memory_request_names_both_keys() -> None:
    with pytest.raises(ConfigError, match=r"workloads\[0\]: use one of .*; got gpuFraction and gpuMemoryMiB"):
        parse_config(_stack(gpuFraction=0.5, gpuMemoryMiB=1000))


def test_a_nan_gpu_fraction_is_refused_as_not_a_finite_number() -> None:
    """YAML's `.nan` is named for what it is, not as a value outside (0, 1): every comparison with it is false."""
    with pytest.raises(ConfigError, match=r"workloads\[0\].gpuFraction: Input should be a finite number, got nan"):
        parse_config(_stack(gpuFraction=math.nan))


# --- queues: resource blocks


def _queue_stack(**queue: Any) -> dict[str, Any]:
    """The stack of `_stack` without workloads, its one queue `team` changed by `queue`."""
    raw = _stack()
    raw.pop("workloads")
    raw["queues"] = [{"name": "team", **queue}]
    return raw


def test_a_negative_fraction_other_than_minus_one_is_refused() -> None:
    with pytest.raises(
        ConfigError, match=r"queues\[0\].resources.gpu.quota: must be -1 \(unlimited\) or >= 0, got -0.5"
    ):
        parse_config(_queue_stack(resources={"gpu": {"quota": -0.5}}))


def test_an_infinite_quota_is_refused_as_not_finite() -> None:
    """YAML's `.inf` is a float above every bound but -1's "unlimited", which KAI spells -1."""
    with pytest.raises(ConfigError, match=r"queues\[0\].resources.gpu.quota: must be a finite number, got inf"):
        parse_config(_queue_stack(resources={"gpu": {"quota": math.inf}}))


def test_a_queue_quantity_that_does_not_parse_is_named_with_the_forms_allowed() -> None:
    with pytest.raises(
        ConfigError,
        match=r"queues\[0\].resources.cpu.quota: must be a number in the queue's unit or a Kubernetes quantity "
        r"such as '4' \(cores\), '500m' or '16Gi', got 'four'",
    ):
        parse_config(_queue_stack(resources={"cpu": {"quota": "four"}}))


def test_queue_resources_given_as_a_list_are_refused_as_not_a_mapping() -> None:
    with pytest.raises(ConfigError, match=r"queues\[0\].resources: expected a mapping of keys, got \[1\]"):
        parse_config(_queue_stack(resources=[1]))


# --- queues: the tree


def _queues(*pairs: tuple[str, str | None]) -> list[Queue]:
    return [Queue(name=name, parent=parent) for name, parent in pairs]


def test_a_queue_under_an_undeclared_parent_counts_as_top_level() -> None:
    """The missing parent is reported once by its own rule; it adds no level to the depth limit's count."""
    assert depths(_queues(("a", "gone"), ("b", "a"))) == {"a": 1, "b": 2}


def test_a_grandchild_declared_before_its_parent_comes_after_it() -> None:
    ordered = parents_first(_queues(("root", None), ("leaf", "mid"), ("mid", "root")))
    assert [q.name for q in ordered] == ["root", "mid", "leaf"]


# --- environment variable names and the shared base model (model/base.py)


def test_an_env_name_may_hold_any_printable_ascii_but_equals() -> None:
    """Kubernetes 1.34 takes any printable ASCII but '=' (RelaxedEnvironmentVariableValidation): space and '~', the
    range's two ends, included."""
    assert list(_workload(env={"A B~": "v"}).env) == ["A B~"]


def test_whitespace_around_a_declared_string_is_dropped() -> None:
    assert _workload(name=" w ").name == "w"


@pytest.mark.parametrize("name", ["", "A\tB"], ids=["empty", "control-character"])
def test_an_env_name_that_is_empty_or_not_printable_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=r"is not an environment variable name: printable ASCII without '='"):
        parse_config(_stack(env={name: "v"}))


def test_a_boolean_in_a_list_of_numbers_is_refused() -> None:
    """pydantic's lax mode reads true as 1: `ports: [yes]` would be port 1."""
    with pytest.raises(ConfigError, match=r"workloads\[0\].ports: expected a number, got a boolean"):
        parse_config(_stack(ports=[8080, True]))


def test_a_boolean_among_the_numbers_of_a_mapping_is_refused() -> None:
    raw = _stack()
    raw["cluster"]["nodePools"][0]["mig"] = {"nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-2g.20gb": True}
    with pytest.raises(ConfigError, match=r"cluster.nodePools\[0\].mig: expected a number, got a boolean"):
        parse_config(raw)


def test_a_list_where_a_mapping_of_numbers_belongs_is_refused_as_not_a_mapping() -> None:
    raw = _stack()
    raw["cluster"]["nodePools"][0]["mig"] = [1]
    with pytest.raises(ConfigError, match=r"cluster.nodePools\[0\].mig: expected a mapping of keys, got \[1\]"):
        parse_config(raw)


def test_a_declared_object_cannot_be_changed_in_place() -> None:
    workload = _workload()
    with pytest.raises(ValidationError, match="frozen"):
        workload.image = "other"  # type: ignore[misc]
