"""StackConfig: everything under `kaistack:` for one stack, and the rules that span its parts."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

from pydantic import Field, PrivateAttr, ValidationInfo, model_validator

from kaistack.declaration import limits, tenant_sizing, versions
from kaistack.declaration.kai_api import GPU_RESOURCE, NVIDIA_VISIBLE_DEVICES
from kaistack.declaration.model.base import Model
from kaistack.declaration.model.cluster import ClusterConfig, eks_shape_problems, node_label_problems
from kaistack.declaration.model.gpu import GpuConfig
from kaistack.declaration.model.kai import KaiConfig
from kaistack.declaration.model.namespaces import namespace_problems
from kaistack.declaration.model.queues import Queue, depths, find_cycle, parents_first
from kaistack.declaration.model.tenants import Tenant, tenant_name_problems
from kaistack.declaration.model.topology import topology_problems
from kaistack.declaration.model.workloads import Workload, gang_name_problems, isolation_env_problems


class StackConfig(Model):
    """Everything under `kaistack:` for one stack."""

    cluster: ClusterConfig = Field(description="The cluster and its node pools")
    gpu: GpuConfig = Field(default=GpuConfig(mode="none"), description="GPU enablement")
    kai: KaiConfig = Field(default=KaiConfig(), description="The KAI scheduler")
    queues: Annotated[list[Queue], Field(max_length=limits.MAX_QUEUES)] = Field(
        default_factory=list, description="KAI queues, a flat list with parent links"
    )
    tenants: Annotated[list[Tenant], Field(max_length=limits.MAX_TENANTS)] = Field(
        default_factory=list, description="Tenants, one vCluster each"
    )
    workloads: Annotated[list[Workload], Field(max_length=limits.MAX_WORKLOADS)] = Field(
        default_factory=list, description="Workloads on the host or inside tenants"
    )

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
        return parents_first([*extra, *self.queues])

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
        return self.cluster.kind.tenant_port_base + [t.name for t in self.tenants].index(tenant.name)

    def host_kubernetes_minor(self) -> str | None:
        """The host's Kubernetes minor where the declaration fixes it (kind's node image, the EKS version)."""
        if self.cluster.provider == "kind":
            return versions.kubernetes_minor(self.cluster.kind.node_image)
        if self.cluster.provider == "eks" and self.cluster.eks is not None:
            return versions.kubernetes_minor(self.cluster.eks.version)
        return None

    def blocks_nvidia_visible_devices(self) -> bool:
        """KAI's deviceaccess plugin: as declared; unset, on where tenants exist, KAI has it (v0.16.0) and time
        slices keep their name (the plugin would void a renamed slice's container)."""
        if self.kai.block_nvidia_visible_devices is not None:
            return self.kai.block_nvidia_visible_devices
        renamed = self.gpu.time_slicing is not None and self.gpu.time_slicing.rename_by_default
        return bool(self.tenants) and versions.kai_tag(self.kai.version) >= (0, 16, 0) and not renamed

    def vcluster_kubernetes(self, tenant: Tenant) -> str | None:
        """The virtual API server's image tag for a tenant (None: the chart's default)."""
        minor = tenant.vcluster.kubernetes or self.host_kubernetes_minor()
        return versions.VCLUSTER_KUBERNETES.get(minor) if minor else None

    # -- cross-field rules --

    # Validated as a diff's base (parse_config `compared`): kept so that copies (Model.replace) validate alike.
    _compared: bool = PrivateAttr(default=False)

    def _validation_context(self) -> dict[str, Any]:
        return {"compared": self._compared}

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> StackConfig:
        self._compared = bool((info.context or {}).get("compared"))
        problems: list[str] = []
        problems += _queue_tree_problems(self)
        names = {q.name for q in self.all_queues()}
        leaves = self.leaf_queue_names()
        tenants = {t.name: t for t in self.tenants}
        problems += _duplicates("tenants", [t.name for t in self.tenants])
        problems += tenant_name_problems(self.tenants, self.kai.gpu_sharing)
        problems += _duplicates("workloads", [w.name for w in self.workloads])
        problems += namespace_problems(self)
        problems += gang_name_problems(self.workloads)
        pods = sum(w.pod_count for w in self.workloads)
        if pods > limits.MAX_PODS:
            problems.append(f"workloads: {pods} pods in all; kaistack plans for at most {limits.MAX_PODS}")
        for i, tenant in enumerate(self.tenants):
            for queue in tenant.queues:
                if queue not in names:
                    problems.append(f"tenants[{i}].queues: queue {queue!r} is not declared in kaistack:queues")
                elif queue not in leaves:
                    problems.append(f"tenants[{i}].queues: {queue!r} has child queues; only leaf queues schedule")
            host = self.host_kubernetes_minor()
            if tenant.vcluster.kubernetes is None and host is not None and host not in versions.VCLUSTER_KUBERNETES:
                problems.append(
                    f"tenants[{i}].vcluster.kubernetes: the host runs Kubernetes {host}, which vCluster has no API "
                    f"server for; set one of {', '.join(versions.VCLUSTER_KUBERNETES)}"
                )
            own = [w.name for w in self.workloads if w.tenant == tenant.name]
            if tenant.isolation.pod_security_standard == "restricted" and own:
                # vCluster labels each virtual namespace enforce=<standard> (loft-sh/vcluster@v0.36.1
                # pkg/controllers/podsecurity/podsecurity.go) and holds each synced pod to it
                # (pods/validate_pod_security.go); kaistack renders no securityContext.
                problems.append(
                    f"tenants[{i}].isolation.podSecurityStandard: 'restricted' refuses every pod kaistack renders for "
                    f"tenant {tenant.name} ({', '.join(own[:3])}{' ...' if len(own) > 3 else ''}): they set no "
                    "securityContext (runAsNonRoot, seccompProfile, allowPrivilegeEscalation: false, capabilities "
                    "drop ALL), so their pods would never be created; use 'baseline', or deploy those workloads "
                    "yourself"
                )
            if tenant.isolation.resource_quota.enabled:
                problems += tenant_sizing.quota_problems(
                    self, tenant, tenant_sizing.exposure(self, tenant), f"tenants[{i}]"
                )
        for i, work in enumerate(self.workloads):
            problems += _workload_problems(self, i, work, names, leaves, tenants)
        if self.kai.memory_isolation and self.gpu.mode not in ("device-plugin", "gpu-operator"):
            problems.append(
                "kai.sharing: 'isolated' needs real GPUs (gpu.mode device-plugin or gpu-operator), "
                f"got {self.gpu.mode!r}"
            )
        if self.gpu.mode == "fake" and not any(p.gpu_count for p in self.cluster.node_pools):
            problems.append("gpu.mode: 'fake' needs at least one cluster.nodePools entry with gpus > 0")
        if self.gpu.mode == "fake":
            problems += _fake_gpu_taint_problems(self)
        if self.blocks_nvidia_visible_devices():
            problems += _device_access_problems(self)
        if self.kai.memory_isolation:
            problems += isolation_env_problems(self.workloads)
        if self.gpu.mode == "fake" and self.cluster.provider == "eks":
            problems.append("gpu.mode: 'fake' is for kind/existing clusters; EKS pools have real GPUs")
        if self.gpu.device_plugin.time_slicing is not None and self.gpu.mode != "device-plugin":
            problems.append("gpu.devicePlugin.timeSlicing: applies only with gpu.mode 'device-plugin'")
        if self.cluster.provider == "kind":
            problems += _kind_ports(self)
            if not self._compared:
                problems += _nvkind_problems(self)
        problems += eks_shape_problems(self.cluster)
        problems += node_label_problems(self.cluster)
        if not self._compared:
            # What the cluster would do with this declaration once deployed; a diff's base is only simulated.
            problems += _dra_beta_problems(self)
            problems += _zonal_volume_problems(self)
        problems += topology_problems(self)
        if problems:
            # One problem per line, each starting with its own key path (kaistack.declaration.parse splits them).
            raise ValueError("\n".join(problems))
        return self


def _dra_beta_problems(stack: StackConfig) -> list[str]:
    """KAI's scheduler never starts on an API server that serves DRA only at beta. It turns DRA on when
    resource.k8s.io is served at v1beta1 or later (kai-scheduler/KAI-Scheduler@v0.17.0
    pkg/common/feature_gates/feature_gates.go L18, L118-122), then lists ResourceSlices, ResourceClaims and
    DeviceClasses at v1 only (pkg/scheduler/cache/cluster_info/data_lister/kubernetes_lister.go L100-104;
    v1 since v0.12.0, pkg/common/k8s_utils/framework_handle.go), which Kubernetes serves from 1.34: the cache
    waits for ever (the hang KAI PR #1241 fixed for another informer) and no pod is scheduled. EKS 1.33 enables
    the DRA beta API ("The Dynamic Resource Allocation beta Kubernetes API is enabled", EKS release notes for
    1.33); earlier EKS versions serve no resource.k8s.io, so KAI leaves DRA off there."""
    eks = stack.cluster.eks
    if stack.cluster.provider != "eks" or eks is None or versions.kubernetes_minor(eks.version) != "1.33":
        return []
    return [
        f"cluster.eks.version: {eks.version!r} serves the DRA API only at beta, and KAI {stack.kai.version} then "
        "waits for ever for resource.k8s.io/v1 (GA from 1.34) and schedules nothing: use '1.34' or later. EKS "
        "moves a running cluster one minor version per update: from 1.32, step it through 1.33 to 1.34 with "
        "`aws eks update-cluster-version`, then set '1.34' here and run `pulumi up --refresh`"
    ]


def _zonal_volume_problems(stack: StackConfig) -> list[str]:
    """A tenant's vCluster keeps its state on an EBS volume (the chart's 5Gi claim on kaistack's gp3 class,
    WaitForFirstConsumer), which lives in the zone of the system node it first ran on. The system node group
    spreads its nodes over the declared zones; with fewer nodes than zones, a node replacement can leave the
    volume's zone with no system node, and the vCluster's pod then fits no node."""
    eks = stack.cluster.eks
    if stack.cluster.provider != "eks" or eks is None or not stack.tenants or eks.vpc_id is not None:
        return []
    zones = len(eks.availability_zones)
    group = eks.system_node_group
    if not zones or group.min_size >= zones:
        return []
    return [
        f"cluster.eks.systemNodeGroup.minSize: {group.min_size} is fewer than the {zones} availability zones: a "
        "tenant's vCluster keeps its data on a zonal EBS volume, and a node replacement can leave that zone "
        f"without a system node, so the vCluster would stay Pending: set minSize (and desiredSize) to {zones} or "
        "more, or declare fewer zones"
    ]


def _device_access_problems(stack: StackConfig) -> list[str]:
    """What KAI's deviceaccess plugin would break (kai-scheduler/KAI-Scheduler@v0.17.0
    pkg/admission/webhook/v1alpha2/deviceaccess/device_access.go): it counts only nvidia.com/gpu and MIG
    requests as GPU requests (L108-118), so a renamed time-sliced GPU (nvidia.com/gpu.shared) gets
    NVIDIA_VISIBLE_DEVICES=void; and it refuses any other value of the variable (L131-160)."""
    problems = []
    slicing = stack.gpu.time_slicing
    if slicing is not None and slicing.rename_by_default:
        problems.append(
            f"kai.blockNvidiaVisibleDevices: KAI would set NVIDIA_VISIBLE_DEVICES=void in containers asking for "
            f"nvidia.com/gpu.shared ({stack.gpu.time_slicing_key}.timeSlicing.renameByDefault), taking their GPU "
            "away: turn one off"
        )
    auto = (
        ""
        if stack.kai.block_nvidia_visible_devices is not None
        else " (on by default where tenants exist; kai.blockNvidiaVisibleDevices: false turns it off and lets a "
        "tenant's CUDA image reach its node's GPUs)"
    )
    for i, work in enumerate(stack.workloads):
        value = work.env.get(NVIDIA_VISIBLE_DEVICES)
        if value is None or value in ("void", "none") or work.shares_gpu:
            continue  # the share's container is exempt: KAI's binder sets the variable there itself
        where = f"workloads[{i}].env.{NVIDIA_VISIBLE_DEVICES}"
        if work.gpu is not None:
            problems.append(
                f"{where}: {value!r} is refused by KAI's admission with kai.blockNvidiaVisibleDevices in a "
                "container that asks for GPUs (allowed: 'void', 'none'): remove it; the device plugin sets it" + auto
            )
        else:
            problems.append(
                f"{where}: {value!r} is overwritten with 'void' by KAI's admission with kai.blockNvidiaVisibleDevices "
                "in a container that asks for no GPU: remove it, or ask for a GPU" + auto
            )
    return problems


def _fake_gpu_taint_problems(stack: StackConfig) -> list[str]:
    """The fake GPU operator's device plugin and status exporter tolerate nvidia.com/gpu only, and the chart
    has no value to add more (run-ai/fake-gpu-operator@v0.2.0 deploy/fake-gpu-operator/templates/
    device-plugin/_helpers.tpl L58-61, status-exporter/_helpers.tpl L71-74): a GPU pool with any other
    scheduling taint would get no fake GPUs."""
    return [
        f"cluster.nodePools[{i}].taints[{j}]: {taint.key} ({taint.effect}) on GPU pool {pool.name!r} keeps the "
        "fake GPU operator's device plugin off it (it tolerates only nvidia.com/gpu with NoSchedule), so the pool "
        "would have no "
        "GPUs: remove the taint, or use gpu.mode 'device-plugin' or 'gpu-operator', whose DaemonSets kaistack "
        "gives the pool's tolerations"
        for i, pool in enumerate(stack.cluster.node_pools)
        if pool.gpu_count
        for j, taint in enumerate(pool.taints)
        if (taint.key, taint.effect) != (GPU_RESOURCE, "NoSchedule") and taint.effect != "PreferNoSchedule"
    ]


def _workload_problems(
    stack: StackConfig, i: int, work: Workload, names: set[str], leaves: set[str], tenants: dict[str, Tenant]
) -> list[str]:
    problems: list[str] = []
    queue = stack.queue_of(work)
    where = f"workloads[{i}]"
    if queue not in names:
        allowed = ", ".join(sorted(leaves)) or "none declared"
        problems.append(f"{where}.queue: {queue!r} is not a declared queue; leaf queues: {allowed}")
    elif queue not in leaves:
        problems.append(f"{where}.queue: {queue!r} has child queues; KAI only schedules leaf queues")
    hosts = {t.host_namespace: t for t in tenants.values()}
    host = hosts.get(work.namespace) if work.tenant is None else None
    if host is not None and work.kind != "Pod":
        problems.append(
            f"{where}.namespace: {work.namespace!r} is tenant {host.name}'s host namespace, where its admission "
            f"policy refuses pods with owners (a {work.kind}'s): set tenant: {host.name} to run it inside the "
            "vCluster, or use another namespace"
        )
    elif host is not None and queue not in host.queues:
        problems.append(
            f"{where}.queue: {queue!r} is not one of tenant {host.name}'s queues ({', '.join(host.queues)}), and "
            f"its admission policy refuses other queues in its host namespace {work.namespace}"
        )
    if work.tenant is not None:
        if work.tenant not in tenants:
            allowed = ", ".join(sorted(tenants)) or "none declared"
            problems.append(f"{where}.tenant: {work.tenant!r} is not a declared tenant; tenants: {allowed}")
        elif queue not in tenants[work.tenant].queues:
            problems.append(
                f"{where}.queue: {queue!r} is not one of tenant {work.tenant!r}'s queues "
                f"({', '.join(tenants[work.tenant].queues)})"
            )
    if work.shares_gpu and not stack.kai.gpu_sharing:
        problems.append(
            f"{where}: gpuFraction/gpuMemoryMiB need kaistack:kai.sharing 'fractions' or 'isolated' "
            "(KAI's admission webhook rejects shared-GPU pods otherwise)"
        )
    return problems


def _duplicates(key: str, names: list[str]) -> list[str]:
    dupes = sorted(n for n, c in Counter(names).items() if c > 1)
    return [f"{key}: names must be unique; repeated: {', '.join(dupes)}"] if dupes else []


def _queue_tree_problems(stack: StackConfig) -> list[str]:
    queues = stack.all_queues()
    problems = _duplicates("queues", [q.name for q in queues])
    by_name = {q.name: q for q in queues}
    for i, queue in enumerate(stack.queues):
        if queue.parent is not None and queue.parent not in by_name:
            allowed = ", ".join(sorted(by_name)) or "none"
            if len(allowed) > 300:
                allowed = allowed[:297] + "..."
            problems.append(f"queues[{i}].parent: {queue.parent!r} is not a declared queue; queues: {allowed}")
        if queue.parent == queue.name:
            problems.append(f"queues[{i}].parent: queue {queue.name!r} cannot be its own parent")
    cycle = find_cycle(queues)
    if cycle:
        problems.append(f"queues: parent cycle {' -> '.join(cycle)}")
    deepest = max(depths(queues).items(), key=lambda kv: kv[1], default=("", 0))
    if deepest[1] > limits.MAX_QUEUE_DEPTH:
        problems.append(
            f"queues: {deepest[0]!r} is {deepest[1]} levels deep; kaistack allows at most {limits.MAX_QUEUE_DEPTH}"
        )
    if stack.kai.default_queues.create:
        dq = stack.kai.default_queues
        for i, queue in enumerate(stack.queues):
            if queue.name in (dq.parent_name, dq.child_name):
                problems.append(
                    f"queues[{i}].name: {queue.name!r} is KAI's default queue; set its resources under "
                    "kai.defaultQueues instead"
                )
    return problems


def _nvkind_problems(stack: StackConfig) -> list[str]:
    """Real GPUs on kind go through nvkind, which pairs the kind config's workers with kind's node names
    sorted as text (NVIDIA/nvkind pkg/nvkind/cluster.go GetNodes; kind names them worker, worker2, ...,
    worker10: kubernetes-sigs/kind@v0.31.0 pkg/cluster/internal/providers/common/namer.go), so the tenth
    worker gets the second's GPUs and toolkit setup. Workers that are all alike are immune."""
    if stack.gpu.mode not in ("device-plugin", "gpu-operator"):
        return []
    pools = [(i, p) for i, p in enumerate(stack.cluster.node_pools) if p.count]
    gpu_pools = [(i, p) for i, p in pools if p.gpu_count]
    if not gpu_pools:
        return []
    problems = []
    workers = sum(p.count for _, p in pools)
    if workers > 9 and (len(pools) > 1 or any(p.gpu_devices != "all" for _, p in gpu_pools)):
        problems.append(
            f"cluster.nodePools: {workers} kind workers with real GPUs; nvkind pairs worker settings with node names "
            "sorted as text (worker10 before worker2), so past 9 workers GPUs land on the wrong node: use at most 9"
        )
    return problems


def _kind_ports(stack: StackConfig) -> list[str]:
    first = stack.cluster.kind.tenant_port_base
    counts = Counter(stack.tenant_node_port(t) for t in stack.tenants)
    problems = [
        f"tenants: nodePort {p} is used by more than one tenant (unset ones count up from "
        f"{first}); set tenants[].nodePort explicitly"
        for p in sorted(counts)
        if counts[p] > 1
    ]
    last = first + stack.cluster.kind.tenant_ports - 1
    for i, tenant in enumerate(stack.tenants):
        port = stack.tenant_node_port(tenant)
        if tenant.api_server_url is None and not first <= port <= last:
            problems.append(
                f"tenants[{i}].nodePort: {port} is outside the ports the kind cluster maps "
                f"({first}-{last}); raise cluster.kind.tenantPorts (it replaces the cluster "
                "once) or pick a free port in the range"
            )
    return problems
