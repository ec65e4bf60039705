"""GPU enablement by `gpu.mode`: fake GPUs, the NVIDIA device plugin, or the NVIDIA GPU Operator.

Every value key set here exists in the pinned chart's values.yaml (copies in tests/data/schemas/;
tests/platform/test_schemas.py checks it). Mode `none` installs nothing (Platform skips this component).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.cluster_kind import FAKE_POOL_LABEL
from kaistack.declaration import versions
from kaistack.declaration.kai_api import GPU_PRESENT_LABEL, GPU_RESOURCE, RESERVATION_NAMESPACE
from kaistack.declaration.model import StackConfig, TimeSlicing

# Every GPU stack runs privileged DaemonSets (device plugins, exporters, the operator's validators).
PRIVILEGED_NAMESPACE_LABELS = {
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/audit": "privileged",
    "pod-security.kubernetes.io/warn": "privileged",
}
RELEASE_NAMES = {"fake": "gpu-operator", "device-plugin": "nvidia-device-plugin", "gpu-operator": "gpu-operator"}
TIME_SLICING_CONFIG = "time-slicing"
# The device plugin chart's own default tolerations (values.yaml), kept when pool taints are added.
DEVICE_PLUGIN_TOLERATIONS = [
    {"key": "CriticalAddonsOnly", "operator": "Exists"},
    {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
]
# NVIDIA/gpu-operator@v26.7.0 deployments/gpu-operator/values.yaml: `daemonsets.tolerations` (L45-48, every
# operand: device plugin, GFD, validators, toolkit) and `node-feature-discovery.worker.tolerations`
# (L631-638; NFD's labels are what the operator selects GPU nodes by). Kept when pool taints are added.
GPU_OPERATOR_TOLERATIONS = [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
# NVIDIA/k8s-device-plugin@v0.20.0 deployments/helm/nvidia-device-plugin/values.yaml L136-145: the NFD worker of the
# device plugin's chart tolerates nvidia.com/gpu only with the value "present". GFD only writes a features file
# (templates/daemonset-gfd.yml, the output-dir volume); the NFD worker on the same node publishes it as the
# nvidia.com/gpu.* labels KAI reads, so a worker kept off a GPU node leaves it without GPU memory for KAI.
DEVICE_PLUGIN_NFD_TOLERATIONS = [
    {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": GPU_RESOURCE, "operator": "Equal", "value": "present", "effect": "NoSchedule"},
]
NFD_WORKER_TOLERATIONS = [
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "", "effect": "NoSchedule"},
    {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
]


# The pool the fake-gpu-operator chart declares itself (run-ai/fake-gpu-operator@v0.2.0
# deploy/fake-gpu-operator/values.yaml:201-205).
FAKE_CHART_DEFAULT_POOL = "default"


def fake_gpu_values(config: StackConfig) -> dict[str, Any]:
    """run:ai fake-gpu-operator: one topology pool per declared GPU pool (vcluster-and-gpu.md §5)."""
    fake = config.gpu.fake
    pools: dict[str, dict[str, Any] | None] = {
        pool.name: {
            "gpuProduct": pool.gpu_product or fake.gpu_product,
            "gpuCount": pool.gpu_count,
            "gpuMemory": pool.gpu_memory_mi_b or fake.gpu_memory_mi_b,
        }
        for pool in config.cluster.node_pools
        if pool.gpu_count
    }
    # Helm merges these into the chart's own pools, so its `default` (2 x Tesla-K80) would stay beside the
    # declared ones and fake GPUs on any node labelled `default`. A null removes a chart default
    # (helm@v3.21.4 pkg/chartutil/coalesce.go:302-308).
    pools.setdefault(FAKE_CHART_DEFAULT_POOL, None)
    return {
        "topology": {"nodePools": pools, "nodePoolLabelKey": FAKE_POOL_LABEL},
        # The chart default (runai-reservation) is Run:ai's; KAI's binder uses its own namespace.
        "environment": {"resourceReservationNamespace": RESERVATION_NAMESPACE},
        # The kind config pre-labels fake-GPU nodes like KAI's e2e setup, so the status updater does
        # not label nodes itself (components/cluster_kind.py FAKE_GPU_NODE_LABELS).
        "statusUpdater": {"disableNodeLabeling": True},
    }


def time_slicing_config(slicing: TimeSlicing) -> str:
    """Device plugin config file (k8s-device-plugin README "With CUDA Time-Slicing")."""
    document = {
        "version": "v1",
        "sharing": {
            "timeSlicing": {
                "renameByDefault": slicing.rename_by_default,
                "failRequestsGreaterThanOne": slicing.fail_requests_greater_than_one,
                "resources": [{"name": GPU_RESOURCE, "replicas": slicing.replicas}],
            }
        },
    }
    return yaml.safe_dump(document, sort_keys=False)


def _pool_tolerations(config: StackConfig) -> list[dict[str, str]]:
    """One per pool taint the charts' defaults (nvidia.com/gpu with NoSchedule) do not already tolerate."""
    extra: list[dict[str, str]] = []
    for pool in config.cluster.node_pools:
        for taint in pool.taints:
            toleration = {"key": taint.key, "operator": "Exists", "effect": taint.effect}
            if (taint.key, taint.effect) != (GPU_RESOURCE, "NoSchedule") and toleration not in extra:
                extra.append(toleration)
    return extra


def _nfd_kept_off(config: StackConfig) -> bool:
    """A pool taint the device plugin chart's NFD worker does not tolerate (DEVICE_PLUGIN_NFD_TOLERATIONS)."""
    return any(
        (taint.key, taint.value, taint.effect) != (GPU_RESOURCE, "present", "NoSchedule")
        for pool in config.cluster.node_pools
        for taint in pool.taints
    )


# The chart's default affinity also takes NFD's `feature.node.kubernetes.io/pci-10de.present`
# (NVIDIA/k8s-device-plugin@v0.20.0 deployments/helm/nvidia-device-plugin/values.yaml L64-85), which NFD
# writes on every kind node, since all of them read the host's PCI devices: the plugin and GFD (both with
# runtimeClassName nvidia) would land on CPU workers, where nvkind set up no nvidia runtime, and never start.
# On the clusters kaistack builds, GPU nodes carry nvidia.com/gpu.present=true (components.cluster_kind,
# components.cluster_eks); an existing cluster's may not, so the chart's default stays there.
GPU_NODES_ONLY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": GPU_PRESENT_LABEL, "operator": "In", "values": ["true"]}]}
            ]
        }
    }
}


def device_plugin_values(config: StackConfig) -> dict[str, Any]:
    settings = config.gpu.device_plugin
    # GFD writes the nvidia.com/gpu.{count,memory,product} labels KAI reads (vcluster-and-gpu.md §2).
    values: dict[str, Any] = {"gfd": {"enabled": settings.gfd}}
    if settings.runtime_class_name:
        # On nvkind the GPU runtime is RuntimeClass `nvidia`, not the containerd default.
        values["runtimeClassName"] = settings.runtime_class_name
    if settings.time_slicing is not None:
        values["config"] = {
            "map": {TIME_SLICING_CONFIG: time_slicing_config(settings.time_slicing)},
            "default": TIME_SLICING_CONFIG,
        }
    extra = _pool_tolerations(config)
    if extra:
        values["tolerations"] = [*DEVICE_PLUGIN_TOLERATIONS, *extra]
    if settings.gfd and _nfd_kept_off(config):
        gpu_taints = {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
        values["nfd"] = {"worker": {"tolerations": [*DEVICE_PLUGIN_NFD_TOLERATIONS, gpu_taints, *extra]}}
    if config.cluster.provider in ("kind", "eks"):
        values["affinity"] = GPU_NODES_ONLY
    return values


def gpu_operator_values(config: StackConfig) -> dict[str, Any]:
    settings = config.gpu.gpu_operator
    # On kind the host's driver and nvkind's in-node toolkit are used: nvkind's minimal mode
    # (NVIDIA/nvkind .github/workflows/gpu-e2e.yaml; vcluster-and-gpu.md §3). EKS GPU node groups run
    # the AL2023 NVIDIA AMI (components/cluster_eks.py), which ships the driver and the container
    # toolkit already wired into containerd; the operator's own would fight them.
    preinstalled = config.cluster.provider in ("kind", "eks")
    values: dict[str, Any] = {
        "driver": {"enabled": settings.driver and not preinstalled},
        "toolkit": {"enabled": settings.toolkit and not preinstalled},
        "dcgmExporter": {"enabled": settings.dcgm_exporter},
    }
    extra = _pool_tolerations(config)
    if extra:
        # Operands that do not tolerate a GPU pool's taint never run there: no device plugin, no GPUs.
        values["daemonsets"] = {"tolerations": [*GPU_OPERATOR_TOLERATIONS, *extra]}
        values["node-feature-discovery"] = {"worker": {"tolerations": [*NFD_WORKER_TOLERATIONS, *extra]}}
    if settings.time_slicing is not None:
        values["devicePlugin"] = {
            "config": {
                "create": True,
                "name": f"{TIME_SLICING_CONFIG}-config",
                "default": TIME_SLICING_CONFIG,
                "data": {TIME_SLICING_CONFIG: time_slicing_config(settings.time_slicing)},
            }
        }
    return values


def release_args(config: StackConfig) -> dict[str, Any]:
    """Chart address, version and values for the configured mode."""
    mode = config.gpu.mode
    if mode == "fake":
        return {
            "chart": versions.FAKE_GPU_OPERATOR_CHART,
            "version": config.gpu.fake.version,
            "values": fake_gpu_values(config),
        }
    if mode == "device-plugin":
        return {
            "chart": "nvidia-device-plugin",
            "version": config.gpu.device_plugin.version,
            "repository_opts": k8s.helm.v3.RepositoryOptsArgs(repo=versions.DEVICE_PLUGIN_REPO),
            "values": device_plugin_values(config),
        }
    if mode == "gpu-operator":
        return {
            "chart": "gpu-operator",
            "version": config.gpu.gpu_operator.version,
            "repository_opts": k8s.helm.v3.RepositoryOptsArgs(repo=versions.GPU_OPERATOR_REPO),
            "values": gpu_operator_values(config),
        }
    raise ValueError(f"gpu.mode {mode!r} installs nothing")


class GpuStack(pulumi.ComponentResource):
    """The namespace (privileged PSA) and the one Helm release for the configured GPU mode."""

    namespace: k8s.core.v1.Namespace
    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        config: StackConfig,
        depends_on: list[pulumi.Resource] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("kaistack:index:GpuStack", name, None, opts)
        child_opts = pulumi.ResourceOptions(parent=self)
        namespace = config.gpu.release_namespace
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": namespace, "labels": PRIVILEGED_NAMESPACE_LABELS},
            opts=child_opts,
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE_NAMES[config.gpu.mode],
            namespace=namespace,
            # Wait for the DaemonSets: KAI must see GPU nodes (and run.ai/fake.gpu) when it starts.
            timeout=900,
            max_history=versions.HELM_MAX_HISTORY,
            **release_args(config),
            # A new release name or namespace replaces the release (pulumi/pulumi-kubernetes
            # provider/pkg/provider/helm_release.go forceNewFields), and so must a new chart: the fake and
            # NVIDIA operators share the release name and a `gpu-operator` Deployment whose selectors differ,
            # which an upgrade cannot change. Delete first: both charts own the same cluster-scoped objects.
            opts=child_opts.merge(
                pulumi.ResourceOptions(
                    depends_on=[self.namespace, *(depends_on or [])],
                    replace_on_changes=["chart"],
                    delete_before_replace=True,
                )
            ),
        )
        self.register_outputs({"mode": config.gpu.mode, "namespace": namespace, "releaseStatus": self.release.status})
