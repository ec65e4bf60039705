"""The tenant, topology and GPU models' allowed values and cross-field checks, one each: the cases a mutation run of
model/tenants.py, model/topology.py, model/gpu.py and model/kai.py found no test for (a guard dropped or inverted, an
allowed value refused, a message that names the wrong key). Each passes here and failed on its mutant."""

from __future__ import annotations

from typing import Any

import pytest

from kaistack.declaration.parse import ConfigError, parse_config


def _stack(**tenant: Any) -> dict[str, Any]:
    """A small valid kind stack with one fake-GPU pool, queue `team` and tenant `a` using it, changed by `tenant`."""
    return {
        "cluster": {"provider": "kind", "nodePools": [{"name": "gpu", "count": 1, "gpus": 4}]},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "team"}],
        "tenants": [{"name": "a", "queues": ["team"], **tenant}],
    }


# --- tenants: the vCluster release


def test_an_explicit_null_vcluster_kubernetes_follows_the_host() -> None:
    """`kubernetes: null` is the unset value (the host's minor), not a minor to look up."""
    assert parse_config(_stack(vcluster={"kubernetes": None})).tenants[0].vcluster.kubernetes is None


# --- gpu: the running mode's time-slicing and the GPU stack's namespace


def _gpu_stack(gpu: dict[str, Any], **tenant: Any) -> dict[str, Any]:
    """`_stack` with `gpu` as its GPU block and tenant `a` changed by `tenant`."""
    return {**_stack(**tenant), "gpu": gpu}


def test_renamed_gpu_operator_time_slices_under_blocked_visible_devices_are_refused_naming_its_key() -> None:
    """The running mode's time-slicing counts, gpu.gpuOperator's too: KAI@v0.17.0
    pkg/admission/webhook/v1alpha2/deviceaccess/device_access.go:108-118 counts only nvidia.com/gpu (and MIG) as a
    GPU request, so a renamed slice (nvidia.com/gpu.shared) would get NVIDIA_VISIBLE_DEVICES=void."""
    raw = _gpu_stack({"mode": "gpu-operator", "gpuOperator": {"timeSlicing": {"replicas": 4, "renameByDefault": True}}})
    raw["kai"] = {"blockNvidiaVisibleDevices": True}
    with pytest.raises(
        ConfigError, match=r"kai.blockNvidiaVisibleDevices: .* \(gpu.gpuOperator.timeSlicing.renameByDefault\)"
    ):
        parse_config(raw)


def test_a_declared_gpu_namespace_replaces_the_modes_default() -> None:
    """gpu.namespace, where set, is the namespace the GPU stack takes (fake mode's default is gpu-operator)."""
    raw = _gpu_stack({"mode": "fake", "namespace": "gpus"}, namespace="gpu-operator")
    assert parse_config(raw).gpu.release_namespace == "gpus"
    with pytest.raises(ConfigError, match=r"tenants\[0\].namespace: 'gpus' is gpu.namespace \(the GPU stack's\)"):
        parse_config(_gpu_stack({"mode": "fake", "namespace": "gpus"}, namespace="gpus"))


# --- topology: an allowed constraint, a refused level value


ZONE, RACK = "topology.kubernetes.io/zone", "kaistack.io/rack"


def _topology_stack(work: dict[str, Any]) -> dict[str, Any]:
    """A kind stack with a zone/rack topology, two labelled pools, queue `q`, tenant `t` and the workload `work`."""
    pools = [
        {"name": "a", "gpus": 8, "labels": {ZONE: "z1", RACK: "r1"}},
        {"name": "b", "gpus": 8, "labels": {ZONE: "z1", RACK: "r2"}},
    ]
    return {
        "cluster": {"provider": "kind", "nodePools": pools, "topology": {"levels": [ZONE, RACK]}},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "q"}],
        "tenants": [{"name": "t", "queues": ["q"]}],
        "workloads": [{"name": "w", "queue": "q", "image": "x", "gpu": 1, **work}],
        "kai": {"capacityCheck": "off"},
    }


def test_a_preferred_level_equal_to_the_required_one_parses() -> None:
    """job_filtering.go (KAI@v0.17.0) refuses only a preferred level above the required one."""
    raw = _topology_stack({"kind": "PyTorchJob", "topology": {"required": RACK, "preferred": RACK}})
    assert parse_config(raw).workloads[0].topology is not None


def test_an_empty_level_label_value_is_refused_naming_pool_and_label() -> None:
    """Kubernetes allows an empty label value; KAI joins a node's level values into its domain ids, so kaistack
    refuses one."""
    raw = _topology_stack({"kind": "PyTorchJob"})
    raw["cluster"]["nodePools"][0]["labels"][RACK] = ""
    with pytest.raises(ConfigError, match=r"cluster.nodePools\[0\].labels.kaistack.io/rack: '' is not a label value"):
        parse_config(raw)
