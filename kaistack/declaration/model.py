"""The stack model: everything under the `kaistack:` config namespace, parsed once into frozen types.

It imports no Pulumi, so the Pulumi program, the placement checker, the policy pack and the CLI all
share it. Field names are Python snake_case; config keys are the camelCase aliases (`nodePools`,
`gpuMemoryMiB`), as Pulumi stack files and Kubernetes write them. Cross-field rules live in
`StackConfig`'s validator so a stack that parses is a stack the program can create in full.
Turning raw config into this model (and pydantic errors into messages naming the key) is
`kaistack.declaration.parse`'s job.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from kaistack.declaration import versions

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# Queue, workload and tenant names end up in object names, label values and Pulumi URNs.
Name = Annotated[str, Field(pattern=DNS_LABEL, min_length=1, max_length=63)]
# Kubernetes quantities are kept as strings here; the placement checker parses them exactly.
QUANTITY = r"^([+]?[0-9.]+)([eE][-+]?[0-9]+|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
Quantity = Annotated[str, Field(pattern=QUANTITY)]

KAI_PRIORITY_CLASSES: dict[str, int] = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
# Unset tenants[].nodePort on kind count up from here, in declaration order.
TENANT_NODE_PORT_BASE = 31000
# KAI: priority >= 100 is non-preemptible unless kai.scheduler/preemptibility says otherwise.
NON_PREEMPTIBLE_THRESHOLD = 100


class Model(BaseModel):
    """Base for every config object: frozen, camelCase keys, unknown keys rejected."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True, str_strip_whitespace=True
    )


# --- queues ---------------------------------------------------------------------------------------


class ResourceBlock(Model):
    """One of a Queue's gpu/cpu/memory blocks, always written out in full.

    KAI reads an omitted `limit` as 0 ("no resources allowed"), not unlimited, so the model fills
    every field. Defaults are the field guides' working setup: -1 (unlimited) and weight 1.
    """

    quota: float = -1
    limit: float = -1
    over_quota_weight: float = 1

    @field_validator("quota", "limit")
    @classmethod
    def _unlimited_or_non_negative(cls, value: float) -> float:
        if value != -1 and value < 0:
            raise ValueError(f"must be -1 (unlimited) or >= 0, got {value:g}")
        return value

    @field_validator("over_quota_weight")
    @classmethod
    def _weight_non_negative(cls, value: float) -> float:
        if value < 0:
            raise ValueError(f"must be >= 0, got {value:g}")
        return value

    @model_validator(mode="after")
    def _limit_covers_quota(self) -> ResourceBlock:
        if self.limit != -1 and self.quota != -1 and self.limit < self.quota:
            raise ValueError(f"limit ({self.limit:g}) is below quota ({self.quota:g}); the limit must be >= quota")
        return self


class QueueResources(Model):
    """Units as in KAI's Queue CRD: gpu in GPUs (fractions allowed), cpu in millicores, memory in MB."""

    gpu: ResourceBlock = ResourceBlock()
    cpu: ResourceBlock = ResourceBlock()
    memory: ResourceBlock = ResourceBlock()


class Queue(Model):
    name: Name
    parent: Name | None = None
    display_name: str | None = None
    priority: int = 100
    resources: QueueResources = QueueResources()
    preempt_min_runtime: str | None = None
    reclaim_min_runtime: str | None = None


class DefaultQueues(Model):
    """The chart's own `default-parent-queue` -> `default-queue`, where unlabelled pods land.

    Chart defaults give them quota 0, which leaves every non-preemptible pod there Pending; they are
    part of the model so the checker accounts for them.
    """

    create: bool = True
    parent_name: Name = "default-parent-queue"
    child_name: Name = "default-queue"
    parent_resources: QueueResources = QueueResources(
        gpu=ResourceBlock(quota=0), cpu=ResourceBlock(quota=0), memory=ResourceBlock(quota=0)
    )
    child_resources: QueueResources = QueueResources(
        gpu=ResourceBlock(quota=0), cpu=ResourceBlock(quota=0), memory=ResourceBlock(quota=0)
    )


# --- cluster --------------------------------------------------------------------------------------


class Taint(Model):
    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"


class NodePool(Model):
    """A group of identical worker nodes; its declared capacity is what the placement checker uses.

    For kind, `count` workers are created; for EKS, the managed node group scales between
    `minSize` and `maxSize` and the checker plans for `count` (the desired size). GPU facts left
    unset on an EKS pool are discovered from EC2.
    """

    name: Name
    count: int = Field(default=1, ge=0)
    min_size: int | None = Field(default=None, ge=0)
    max_size: int | None = Field(default=None, ge=0)
    instance_type: str | None = None
    gpus: int | None = Field(default=None, ge=0)
    gpu_memory_mi_b: int | None = Field(default=None, gt=0, alias="gpuMemoryMiB")
    gpu_product: str | None = None
    # kind + real GPUs: which host GPUs this pool's workers see (nvkind's extraMounts); "all" or indices.
    gpu_devices: Literal["all"] | list[Annotated[int, Field(ge=0)]] = "all"
    cpu: Quantity = "8"
    memory: Quantity = "32Gi"
    pods: int = Field(default=110, gt=0)
    mig_strategy: Literal["none", "single", "mixed"] = "none"
    mig: dict[str, int] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)

    @property
    def gpu_count(self) -> int:
        return self.gpus or 0

    @field_validator("mig")
    @classmethod
    def _mig_profiles(cls, value: dict[str, int]) -> dict[str, int]:
        for profile, count in value.items():
            if not re.fullmatch(r"nvidia\.com/mig-\d+g\.\d+gb", profile):
                raise ValueError(f"MIG profile {profile!r} must look like 'nvidia.com/mig-1g.10gb'")
            if count < 0:
                raise ValueError(f"MIG device count for {profile} must be >= 0, got {count}")
        return value


class KindSettings(Model):
    node_image: str = versions.KIND_NODE_IMAGE


class ExistingSettings(Model):
    """An existing cluster (OpenShift, OpenNebula, ...): a kubeconfig (secret config) or a context."""

    kubeconfig: str | None = None
    context: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ExistingSettings:
        if not self.kubeconfig and not self.context:
            raise ValueError(
                "needs 'kubeconfig' (pulumi config set --secret --path kaistack:cluster.existing.kubeconfig ...) "
                "or 'context'"
            )
        return self


class SystemNodeGroup(Model):
    instance_type: str = "m6i.large"
    min_size: int = Field(default=2, ge=1)
    max_size: int = Field(default=3, ge=1)
    desired_size: int = Field(default=2, ge=1)


class EksSettings(Model):
    region: str
    version: str = versions.EKS_KUBERNETES_VERSION
    vpc_id: str | None = None
    subnet_ids: list[str] = Field(default_factory=list)
    availability_zones: list[str] = Field(default_factory=list)
    vpc_cidr: str = "10.0.0.0/16"
    system_node_group: SystemNodeGroup = SystemNodeGroup()
    # Nodes in private subnets behind one NAT gateway (~$0.045/h + $0.045/GB); false puts them in
    # public subnets with public IPs (no NAT cost, inbound still closed by the node security group).
    # Only used when kaistack creates the VPC.
    private_nodes: bool = True
    # Root volume per GPU node: the NVIDIA AMI plus CUDA/PyTorch images outgrow EKS's 20 GiB default.
    gpu_node_disk_gi_b: int = Field(default=200, ge=20, alias="gpuNodeDiskGiB")
    protect: bool = False


class ClusterConfig(Model):
    provider: Literal["kind", "existing", "eks"]
    name: Name = "kaistack"
    node_pools: list[NodePool] = Field(default_factory=list)
    kind: KindSettings = KindSettings()
    existing: ExistingSettings | None = None
    eks: EksSettings | None = None
    # Install the Kubeflow training operator (PyTorchJob CRD) into every cluster that runs a
    # PyTorchJob (host and/or tenant vClusters); false = it is already there (components/workloads.py).
    training_operator: bool = False

    @model_validator(mode="after")
    def _provider_settings(self) -> ClusterConfig:
        if self.provider == "existing" and self.existing is None:
            raise ValueError("provider 'existing' needs an 'existing' block with 'kubeconfig' or 'context'")
        if self.provider == "eks" and self.eks is None:
            raise ValueError("provider 'eks' needs an 'eks' block with at least 'region'")
        names = [p.name for p in self.node_pools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"node pool names must be unique; repeated: {', '.join(dupes)}")
        return self


# --- GPU enablement -------------------------------------------------------------------------------


class FakeGpuSettings(Model):
    version: str = versions.FAKE_GPU_OPERATOR_VERSION
    gpu_product: str = "Tesla-K80"
    gpu_memory_mi_b: int = Field(default=11441, gt=0, alias="gpuMemoryMiB")


class TimeSlicing(Model):
    replicas: int = Field(ge=2)
    rename_by_default: bool = False
    fail_requests_greater_than_one: bool = False


class DevicePluginSettings(Model):
    version: str = versions.DEVICE_PLUGIN_VERSION
    gfd: bool = True
    time_slicing: TimeSlicing | None = None
    runtime_class_name: str | None = "nvidia"


class GpuOperatorSettings(Model):
    version: str = versions.GPU_OPERATOR_VERSION
    driver: bool = True
    toolkit: bool = True
    dcgm_exporter: bool = True
    time_slicing: TimeSlicing | None = None


class GpuConfig(Model):
    mode: Literal["fake", "device-plugin", "gpu-operator", "none"]
    namespace: Name | None = None
    fake: FakeGpuSettings = FakeGpuSettings()
    device_plugin: DevicePluginSettings = DevicePluginSettings()
    gpu_operator: GpuOperatorSettings = GpuOperatorSettings()

    @property
    def release_namespace(self) -> str:
        defaults = {"fake": "gpu-operator", "device-plugin": "nvidia", "gpu-operator": "gpu-operator", "none": ""}
        return self.namespace or defaults[self.mode]


# --- KAI ------------------------------------------------------------------------------------------


class KaiConfig(Model):
    version: str = versions.KAI_VERSION
    namespace: Name = "kai-scheduler"
    gpu_sharing: bool = True
    placement_strategy: Literal["binpack", "spread"] = "binpack"
    # Injected into fractional pods without one; None disables (OpenShift + gpu-operator < v25.10).
    runtime_class_name: str | None = "nvidia"
    memory_isolation: bool = False
    queue_label_key: str = "kai.scheduler/queue"
    default_queues: DefaultQueues = DefaultQueues()
    # What `pulumi preview/up` does when the placement checker says declared work stays Pending:
    # fail before creating anything (enforce), log a warning (warn, e.g. an autoscaling cluster), or skip.
    capacity_check: Literal["enforce", "warn", "off"] = "enforce"

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: str) -> str:
        if not re.fullmatch(r"v\d+\.\d+\.\d+", value):
            raise ValueError(f"must be a KAI release tag with the 'v' prefix, like {versions.KAI_VERSION!r}")
        if value in versions.KAI_RETRACTED:
            raise ValueError(f"{value} is retracted upstream; use {versions.KAI_VERSION!r}")
        return value

    @model_validator(mode="after")
    def _version_features(self) -> KaiConfig:
        """Settings older charts silently ignore (kai.md §1.1; HAMi integration needs v0.17)."""
        tag = tuple(int(p) for p in self.version[1:].split("."))
        if self.memory_isolation and tag < (0, 17, 0):
            raise ValueError(f"memoryIsolation needs KAI >= v0.17.0 (binder hamicore plugin), got {self.version}")
        if self.queue_label_key != "kai.scheduler/queue" and tag < (0, 16, 0):
            raise ValueError(
                f"queueLabelKey {self.queue_label_key!r} needs KAI >= v0.16.0 (podgrouper.queueLabelKey); "
                f"{self.version} only reads 'kai.scheduler/queue'"
            )
        return self


# --- tenants --------------------------------------------------------------------------------------


class TenantResourceQuota(Model):
    enabled: bool = True
    quota: dict[str, str | int] = Field(default_factory=dict)


class TenantIsolation(Model):
    pod_security_standard: Literal["privileged", "baseline", "restricted"] | None = "baseline"
    resource_quota: TenantResourceQuota = TenantResourceQuota()
    limit_range: bool = True
    network_policy: bool = True


class VClusterSettings(Model):
    version: str = versions.VCLUSTER_VERSION
    # Expose real node labels (nvidia.com/gpu.product, ...) inside the tenant.
    sync_nodes: bool = False


class Tenant(Model):
    name: Name
    namespace: Name | None = None
    queues: list[Name] = Field(default_factory=list)
    vcluster: VClusterSettings = VClusterSettings()
    isolation: TenantIsolation = TenantIsolation()
    # How the Pulumi host reaches the vCluster API: kind maps a NodePort to localhost; elsewhere give
    # the URL the vCluster API is reachable at (LoadBalancer/Ingress).
    node_port: int | None = Field(default=None, ge=30000, le=32767)
    api_server_url: str | None = None

    @property
    def host_namespace(self) -> str:
        return self.namespace or f"vcluster-{self.name}"


# --- workloads ------------------------------------------------------------------------------------


class PyTorchReplicas(Model):
    master: int = Field(default=1, ge=0, le=1)
    workers: int = Field(default=1, ge=0)
    min_available: int | None = Field(default=None, ge=1)


class Workload(Model):
    """A Pod, Deployment, Job or PyTorchJob scheduled by KAI, on the host or inside a tenant's vCluster.

    GPU requests use the placement checker's scenario names: `gpu` (whole GPUs), `gpuFraction`,
    `gpuMemoryMiB`, with `gpuDevices` for multi-device fractions.
    """

    name: Name
    kind: Literal["Pod", "Deployment", "Job", "PyTorchJob"]
    namespace: Name = "default"
    tenant: Name | None = None
    queue: Name | None = None
    image: str
    # `kaistack promote` copies the image of workloads marked promoted from stack to stack.
    promoted: bool = False
    command: list[str] = Field(default_factory=list)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    ports: list[Annotated[int, Field(gt=0, lt=65536)]] = Field(default_factory=list)
    replicas: int = Field(default=1, ge=0)
    completions: int | None = Field(default=None, ge=1)
    pytorch: PyTorchReplicas = PyTorchReplicas()
    gpu: int | None = Field(default=None, ge=1)
    gpu_fraction: float | None = Field(default=None, gt=0, lt=1)
    gpu_memory_mi_b: int | None = Field(default=None, gt=0, alias="gpuMemoryMiB")
    gpu_devices: int | None = Field(default=None, ge=1)
    cpu: Quantity = "100m"
    memory: Quantity = "128Mi"
    cpu_limit: Quantity | None = None
    memory_limit: Quantity | None = None
    priority_class: Literal["train", "build-preemptible", "build", "inference"] | None = None
    preemptible: bool | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerate_gpu_taint: bool = True

    @model_validator(mode="after")
    def _one_gpu_request(self) -> Workload:
        given = [
            k
            for k, v in (("gpu", self.gpu), ("gpuFraction", self.gpu_fraction), ("gpuMemoryMiB", self.gpu_memory_mi_b))
            if v is not None
        ]
        if len(given) > 1:
            raise ValueError(
                f"use one of gpu, gpuFraction, gpuMemoryMiB; got {' and '.join(given)} "
                "(KAI rejects fraction + memory and any share combined with whole GPUs)"
            )
        if self.gpu_devices is not None and not (self.gpu_fraction or self.gpu_memory_mi_b):
            raise ValueError("gpuDevices applies only to gpuFraction or gpuMemoryMiB requests")
        if self.kind != "PyTorchJob" and "pytorch" in self.model_fields_set:
            raise ValueError(f"'pytorch' applies only to kind PyTorchJob, not {self.kind}")
        if self.kind not in ("Deployment", "Job") and "replicas" in self.model_fields_set:
            raise ValueError(f"'replicas' applies to Deployment and Job (parallelism), not {self.kind}")
        return self

    @property
    def shares_gpu(self) -> bool:
        return self.gpu_fraction is not None or self.gpu_memory_mi_b is not None

    @property
    def uses_gpu(self) -> bool:
        return self.gpu is not None or self.shares_gpu

    @property
    def default_priority_class(self) -> str:
        """The class KAI's pod-grouper assigns when none is set (kai.md §2, §5)."""
        return "inference" if self.kind == "Deployment" else "train"

    @property
    def pod_count(self) -> int:
        if self.kind == "Pod":
            return 1
        if self.kind == "PyTorchJob":
            return self.pytorch.master + self.pytorch.workers
        return self.replicas


# --- the stack ------------------------------------------------------------------------------------


class StackConfig(Model):
    """Everything under `kaistack:` for one stack."""

    cluster: ClusterConfig
    gpu: GpuConfig = GpuConfig(mode="none")
    kai: KaiConfig = KaiConfig()
    queues: list[Queue] = Field(default_factory=list)
    tenants: list[Tenant] = Field(default_factory=list)
    workloads: list[Workload] = Field(default_factory=list)

    # -- derived views (used by components, checker and policies alike) --

    def all_queues(self) -> list[Queue]:
        """Declared queues plus KAI's default pair, parents before children."""
        extra: list[Queue] = []
        dq = self.kai.default_queues
        if dq.create:
            extra = [
                Queue(name=dq.parent_name, resources=dq.parent_resources),
                Queue(name=dq.child_name, parent=dq.parent_name, resources=dq.child_resources),
            ]
        return _parents_first([*extra, *self.queues])

    def leaf_queue_names(self) -> set[str]:
        queues = self.all_queues()
        parents = {q.parent for q in queues if q.parent}
        return {q.name for q in queues if q.name not in parents}

    def queue_of(self, workload: Workload) -> str:
        """The queue KAI puts the workload in: its label, else `default-queue`."""
        return workload.queue or self.kai.default_queues.child_name

    def tenant(self, name: str) -> Tenant:
        for tenant in self.tenants:
            if tenant.name == name:
                return tenant
        raise KeyError(name)

    def tenant_node_port(self, tenant: Tenant) -> int:
        """The NodePort a kind cluster maps to localhost for this tenant's vCluster API."""
        if tenant.node_port is not None:
            return tenant.node_port
        return TENANT_NODE_PORT_BASE + [t.name for t in self.tenants].index(tenant.name)

    def gpu_pools(self) -> Iterator[NodePool]:
        return (p for p in self.cluster.node_pools if p.gpu_count > 0 or p.instance_type)

    # -- cross-field rules --

    @model_validator(mode="after")
    def _consistent(self) -> StackConfig:
        problems: list[str] = []
        problems += _queue_tree_problems(self)
        names = {q.name for q in self.all_queues()}
        leaves = self.leaf_queue_names()
        tenants = {t.name: t for t in self.tenants}
        problems += _duplicates("tenants", [t.name for t in self.tenants])
        problems += _duplicates("workloads", [w.name for w in self.workloads])
        for i, tenant in enumerate(self.tenants):
            for queue in tenant.queues:
                if queue not in names:
                    problems.append(f"tenants[{i}].queues: queue {queue!r} is not declared in kaistack:queues")
                elif queue not in leaves:
                    problems.append(f"tenants[{i}].queues: {queue!r} has child queues; only leaf queues schedule")
        for i, work in enumerate(self.workloads):
            queue = self.queue_of(work)
            where = f"workloads[{i}]"
            if queue not in names:
                allowed = ", ".join(sorted(leaves)) or "none declared"
                problems.append(f"{where}.queue: {queue!r} is not a declared queue; leaf queues: {allowed}")
            elif queue not in leaves:
                problems.append(f"{where}.queue: {queue!r} has child queues; KAI only schedules leaf queues")
            if work.tenant is not None:
                if work.tenant not in tenants:
                    allowed = ", ".join(sorted(tenants)) or "none declared"
                    problems.append(f"{where}.tenant: {work.tenant!r} is not a declared tenant; tenants: {allowed}")
                elif tenants[work.tenant].queues and queue not in tenants[work.tenant].queues:
                    problems.append(
                        f"{where}.queue: {queue!r} is not one of tenant {work.tenant!r}'s queues "
                        f"({', '.join(tenants[work.tenant].queues)})"
                    )
            if work.shares_gpu and not self.kai.gpu_sharing:
                problems.append(
                    f"{where}: gpuFraction/gpuMemoryMiB need kaistack:kai.gpuSharing true "
                    "(KAI's admission webhook rejects shared-GPU pods otherwise)"
                )
        if self.kai.memory_isolation and self.gpu.mode not in ("device-plugin", "gpu-operator"):
            problems.append(
                f"kai.memoryIsolation: needs real GPUs (gpu.mode device-plugin or gpu-operator), got {self.gpu.mode!r}"
            )
        if self.gpu.mode == "fake" and not any(p.gpu_count for p in self.cluster.node_pools):
            problems.append("gpu.mode: 'fake' needs at least one cluster.nodePools entry with gpus > 0")
        if self.gpu.mode == "fake" and self.cluster.provider == "eks":
            problems.append("gpu.mode: 'fake' is for kind/existing clusters; EKS pools have real GPUs")
        if self.gpu.device_plugin.time_slicing is not None and self.gpu.mode != "device-plugin":
            problems.append("gpu.devicePlugin.timeSlicing: applies only with gpu.mode 'device-plugin'")
        if self.cluster.provider == "kind":
            problems += _kind_ports(self)
        if problems:
            # One problem per line, each starting with its own key path (kaistack.declaration.parse splits them).
            raise ValueError("\n".join(problems))
        return self


def _duplicates(key: str, names: list[str]) -> list[str]:
    dupes = sorted({n for n in names if names.count(n) > 1})
    return [f"{key}: names must be unique; repeated: {', '.join(dupes)}"] if dupes else []


def _queue_tree_problems(stack: StackConfig) -> list[str]:
    queues = stack.all_queues()
    problems = _duplicates("queues", [q.name for q in queues])
    by_name = {q.name: q for q in queues}
    for i, queue in enumerate(stack.queues):
        if queue.parent is not None and queue.parent not in by_name:
            allowed = ", ".join(sorted(by_name)) or "none"
            problems.append(f"queues[{i}].parent: {queue.parent!r} is not a declared queue; queues: {allowed}")
        if queue.parent == queue.name:
            problems.append(f"queues[{i}].parent: queue {queue.name!r} cannot be its own parent")
    cycle = _find_cycle(queues)
    if cycle:
        problems.append(f"queues: parent cycle {' -> '.join(cycle)}")
    if stack.kai.default_queues.create:
        dq = stack.kai.default_queues
        for i, queue in enumerate(stack.queues):
            if queue.name in (dq.parent_name, dq.child_name):
                problems.append(
                    f"queues[{i}].name: {queue.name!r} is KAI's default queue; set its resources under "
                    "kai.defaultQueues instead"
                )
    return problems


def _find_cycle(queues: list[Queue]) -> list[str]:
    parent = {q.name: q.parent for q in queues}
    for start in parent:
        seen: list[str] = []
        node: str | None = start
        while node is not None and node in parent:
            if node in seen:
                return [*seen[seen.index(node) :], node]
            seen.append(node)
            node = parent[node]
    return []


def _parents_first(queues: list[Queue]) -> list[Queue]:
    """Stable topological order; queues in a cycle or under a missing parent keep their place last."""
    placed: set[str] = set()
    ordered: list[Queue] = []
    pending = list(queues)
    while pending:
        ready = [q for q in pending if q.parent is None or q.parent in placed]
        if not ready:
            ordered.extend(pending)
            break
        for queue in ready:
            placed.add(queue.name)
            ordered.append(queue)
        pending = [q for q in pending if q.name not in placed]
    return ordered


def _kind_ports(stack: StackConfig) -> list[str]:
    ports = [stack.tenant_node_port(t) for t in stack.tenants]
    return [
        f"tenants: nodePort {p} is used by more than one tenant (unset ones count up from "
        f"{TENANT_NODE_PORT_BASE}); set tenants[].nodePort explicitly"
        for p in sorted(set(ports))
        if ports.count(p) > 1
    ]


def priority_value(class_name: str) -> int:
    return KAI_PRIORITY_CLASSES[class_name]
