"""NVIDIA KAI Scheduler from its OCI Helm chart, and optionally HAMi's GPU memory isolation.

Values follow the pinned chart's values.yaml (kai.md §1.1; copy in tests/data/schemas/). The chart
creates KAI's own default queues from `defaultQueue.*`, so those are set from the model, which the
placement checker reads too.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_command.local as local
import pulumi_kubernetes as k8s

from components.kai_ready import ready_command
from kaistack.declaration import subgroups, versions
from kaistack.declaration.kai_api import ISOLATOR_NAMESPACE, RELEASE_NAME, RESERVATION_NAMESPACE
from kaistack.declaration.model import QueueResources, StackConfig

# The binder puts GPU reservation pods in RESERVATION_NAMESPACE (chart global.resourceReservation.namespace);
# the fake GPU operator must watch the same namespace (vcluster-and-gpu.md §5).
# Helm waits for KAI's hook Jobs (crd-upgrader, kai-config-deployer) and all deployments.
TIMEOUT_SECONDS = 900


def chart_address(version: str) -> str:
    """The registry that tag's own release workflow pushed its chart to (versions.KAI_CHARTS)."""
    return versions.KAI_CHARTS[version]


def runtime_class_key(version: str) -> str:
    """v0.16 renamed admission.gpuPodRuntimeClassName to gpuFractionRuntimeClassName (kai.md §1.1)."""
    return "gpuFractionRuntimeClassName" if versions.kai_tag(version) >= (0, 16, 0) else "gpuPodRuntimeClassName"


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def resource_values(resources: QueueResources) -> dict[str, dict[str, float | int]]:
    """Queue resources in the Queue CRD's shape, every field written (KAI reads an omitted limit as 0)."""
    return {
        kind: {
            "quota": _number(block.quota),
            "limit": _number(block.limit),
            "overQuotaWeight": _number(block.over_quota_weight),
        }
        for kind, block in (("gpu", resources.gpu), ("cpu", resources.cpu), ("memory", resources.memory))
    }


def tolerations(config: StackConfig) -> list[dict[str, str]]:
    """Tolerate every declared node-pool taint, so KAI's own pods run even if all workers are tainted."""
    seen: dict[tuple[str, str | None, str], dict[str, str]] = {}
    for pool in config.cluster.node_pools:
        for taint in pool.taints:
            toleration = {"key": taint.key, "effect": taint.effect}
            if taint.value is None:
                toleration["operator"] = "Exists"
            else:
                toleration.update(operator="Equal", value=taint.value)
            seen.setdefault((taint.key, taint.value, taint.effect), toleration)
    return list(seen.values())


def kai_values(config: StackConfig) -> dict[str, Any]:
    kai = config.kai
    version = versions.kai_tag(kai.version)
    global_values: dict[str, Any] = {
        # Off rejects every gpu-fraction/gpu-memory pod at admission (kai.md §1.1).
        "gpuSharing": kai.gpu_sharing,
        "resourceReservation": {"namespace": RESERVATION_NAMESPACE},
    }
    if tolerations(config):
        global_values["tolerations"] = tolerations(config)
    if config.blocks_nvidia_visible_devices():
        # KAI@v0.17.0 cmd/admission/main.go:54-56 registers the deviceaccess plugin
        # (pkg/admission/webhook/v1alpha2/deviceaccess): containers of KAI pods that ask for no GPU get
        # NVIDIA_VISIBLE_DEVICES=void, so a CUDA image's ENV cannot reach a GPU another pod was given.
        global_values["blockNvidiaVisibleDevices"] = True
    dq = kai.default_queues
    values: dict[str, Any] = {
        "global": global_values,
        # "" disables the injection (kai.md §1.1: needed on OpenShift with gpu-operator < v25.10).
        "admission": {runtime_class_key(kai.version): kai.runtime_class_name or ""},
        "scheduler": {"placementStrategy": kai.placement_strategy},
        "defaultQueue": {
            "createDefaultQueue": dq.create,
            "parentName": dq.parent_name,
            "childName": dq.child_name,
            "parentResources": resource_values(dq.parent_resources),
            "childResources": resource_values(dq.child_resources),
        },
    }
    if version >= (0, 16, 0):
        # Older charts ignore the key (kai.md §1.1); the model refuses a custom key for them.
        values["podgrouper"] = {"queueLabelKey": kai.queue_label_key}
    binder: dict[str, Any] = {}
    if kai.runtime_class_name and config.gpu.mode == "device-plugin":
        # Since v0.16.0 reservation pods get no runtime class unless binder.runtimeClassName is set
        # (KAI@v0.17.0:deployments/kai-scheduler/templates/_helpers.tpl:139-141; values.yaml has no
        # default); before, the binder gave them `nvidia` (KAI@v0.15.3:pkg/apis/kai/v1/binder/binder.go:259), so
        # a class of another name must be passed there too (every supported chart reads the key). With the device
        # plugin alone (nvkind, or a node whose default runtime is not NVIDIA's) they would see no GPU. GPU Operator
        # >= v25.10 hands devices out by CDI and the EKS NVIDIA AMI makes nvidia the default runtime: those need
        # nothing here.
        binder["runtimeClassName"] = kai.runtime_class_name
    if kai.memory_isolation:
        # KAI >= v0.17 + HAMi-core (vcluster-and-gpu.md §6, KAI docs/gpu-sharing/hami/README.md).
        binder["plugins"] = {"hamicore": {"enabled": True}}
    if binder:
        values["binder"] = binder
    return values


class KaiScheduler(pulumi.ComponentResource):
    """KAI's release, then `ready` (its webhooks answer: components.kai_ready), then what they admit: the
    Topology here; Queues, PodGroups and pods go after `ready` too."""

    release: k8s.helm.v3.Release
    ready: local.Command
    isolator: k8s.helm.v3.Release | None
    topology: k8s.apiextensions.CustomResource | None

    def __init__(
        self,
        name: str,
        config: StackConfig,
        depends_on: list[pulumi.Resource] | None = None,
        *,
        kubeconfig: pulumi.Output[str] | None = None,
        context: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("kaistack:index:KaiScheduler", name, None, opts)
        child_opts = pulumi.ResourceOptions(parent=self)
        kai = config.kai
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE_NAME,
            chart=chart_address(kai.version),
            # The OCI chart version is the git tag *with* the "v" (kai.md §1).
            version=kai.version,
            namespace=kai.namespace,
            create_namespace=True,
            values=kai_values(config),
            timeout=TIMEOUT_SECONDS,
            max_history=versions.HELM_MAX_HISTORY,
            # The fake GPU operator goes first, so the KAI operator sees run.ai/fake.gpu nodes when it
            # renders the binder (vcluster-and-gpu.md §5, KAI hack/setup-e2e-cluster.sh).
            # `cluster.eks.protect` (prod) also protects KAI: without it no GPU workload gets scheduled.
            # A new namespace replaces the release; delete first, since Helm refuses to install a second one
            # beside it that owns the same cluster-scoped objects (KAI's PriorityClasses, ClusterRoles).
            opts=child_opts.merge(
                pulumi.ResourceOptions(
                    depends_on=depends_on or [], protect=config.cluster.protected, delete_before_replace=True
                )
            ),
        )
        self.ready = ready_command(
            f"{name}-ready", config, kubeconfig=kubeconfig, context=context, release=self.release, opts=child_opts
        )
        # Cluster-scoped; its CRD comes with the chart. A constrained job waits for it ("Requested topology
        # ... does not exist"), so workloads are created after it. Its levels' node labels cannot change in place
        # (the CRD's "nodeLabel structure is immutable" rule, KAI-Scheduler@v0.17.0
        # deployments/kai-scheduler/crds/kai.scheduler_topologies.yaml:97-99): a change replaces it, deleting first,
        # since the new one has the same name. Dependents only order after it, so none is replaced with it
        # (pulumi/pulumi@v3.259.0 pkg/resource/deploy/step_generator.go calculateDependentReplacements).
        self.topology = None
        body = subgroups.topology_manifest(config)
        if body is not None:
            self.topology = k8s.apiextensions.CustomResource(
                f"{name}-topology",
                api_version=body["apiVersion"],
                kind=body["kind"],
                metadata=body["metadata"],
                spec=body["spec"],
                opts=child_opts.merge(
                    pulumi.ResourceOptions(
                        # KAI's admission validates it (topology.<webhook>, admission/resources.go:316-336).
                        depends_on=[self.ready],
                        replace_on_changes=["spec.levels"],
                        delete_before_replace=True,
                    )
                ),
            )
        self.isolator = None
        if kai.memory_isolation:
            self.isolator = k8s.helm.v3.Release(
                f"{name}-resource-isolator",
                name="kai-resource-isolator",
                chart=versions.KAI_RESOURCE_ISOLATOR_CHART,
                version=versions.KAI_RESOURCE_ISOLATOR_VERSION,
                namespace=ISOLATOR_NAMESPACE,
                create_namespace=True,
                max_history=versions.HELM_MAX_HISTORY,
                opts=child_opts.merge(pulumi.ResourceOptions(depends_on=[self.release])),
            )
        self.register_outputs(
            {
                "namespace": kai.namespace,
                "version": kai.version,
                "chart": chart_address(kai.version),
                "gpuSharing": kai.gpu_sharing,
                "releaseStatus": self.release.status,
            }
        )
