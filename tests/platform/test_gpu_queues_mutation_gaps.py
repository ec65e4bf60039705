"""GPU Operator values no other test pinned, found by a mutation run of components/gpu.py (the GPU Operator
values and the GpuStack component) and components/queues.py: the ConfigMap that carries the time-slicing file.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from platform_testlib import base_raw, inputs, merged, named, release, run_program

# k8s.io/apimachinery pkg/util/validation validation.go IsDNS1123Subdomain: what a ConfigMap's name must be.
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _operator_plugin_config(mocks, slicing: dict[str, Any]) -> dict[str, Any]:
    raw = merged(base_raw(), gpu={"mode": "gpu-operator", "gpuOperator": {"timeSlicing": slicing}})
    run_program(mocks, raw)
    return inputs(release(mocks.resources, "gpu-operator"))["values"]["devicePlugin"]["config"]


def test_gpu_operator_time_slicing_config_map_has_a_name_the_cluster_policy_passes_on(mocks):
    """NVIDIA/gpu-operator@v26.7.0 deployments/gpu-operator/templates/clusterpolicy.yaml:495-499 gives the device
    plugin its config only when devicePlugin.config.name is set, and templates/plugin_config.yaml:5 creates the
    ConfigMap under that name (values.yaml:275, default ""): without a valid one time-slicing never starts."""
    name = _operator_plugin_config(mocks, {"replicas": 2}).get("name", "")
    assert DNS1123_SUBDOMAIN.fullmatch(name)
    assert len(name) <= 253


def test_gpu_operator_time_slicing_file_is_the_config_maps_default_entry(mocks):
    """NVIDIA/gpu-operator@v26.7.0 deployments/gpu-operator/templates/plugin_config.yaml:1,9: the ConfigMap is
    created only from a non-empty `data`, one entry per config file; `default` (clusterpolicy.yaml:498) names the
    entry the device plugin reads."""
    config = _operator_plugin_config(mocks, {"replicas": 3})
    document = yaml.safe_load(config["data"][config["default"]])
    assert document["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 3}]


def test_a_gpu_stack_given_nothing_to_wait_for_waits_for_its_namespace_only(mocks, tmp_path):
    """GpuStack's `depends_on` is optional (None): a program that builds the component without it still gets the
    namespace and the release, the release waiting for the namespace alone."""
    program = tmp_path / "program.py"
    program.write_text(
        "from components.gpu import GpuStack\n"
        "from kaistack.declaration.parse import parse_config\n"
        f"GpuStack('gpu', parse_config({base_raw()!r}))\n"
    )
    mocks.run(program)
    gpu_release = named(mocks.resources, "gpu-release")
    assert list(gpu_release.dependencies) == [named(mocks.resources, "gpu-namespace").urn]
