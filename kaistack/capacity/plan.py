"""From a stack declaration to the cluster snapshot KAI would see.

Workloads are expanded into PodGroups the way KAI's pod-grouper forms them (kai.md §5), which is
where most "why is it Pending" surprises come from:

- host Deployment: one PodGroup per pod, never a gang, default class `inference` (non-preemptible);
- host Job (KAI >= v0.15): one PodGroup per Job, minMember 1, so it grows elastically, class `train`;
- host PyTorchJob: one gang of master + workers (`minAvailable` if set), class `train`;
- bare Pod: one PodGroup, class `train`;
- anything inside a tenant's vCluster: vCluster syncs pods to the host as bare pods without owner
  references (`setOwner: false`), so every pod is its own PodGroup with minMember 1 and, unless the
  workload names a priority class, the bare-pod default `train` (vcluster-and-gpu.md §1.2);
- except a tenant's PyTorchJob: its pods join the PodGroup kaistack creates on the host
  (kaistack.declaration.tenant_gangs), one gang of master + workers in the tenant's queue.

A PyTorchJob's PodGroup also has KAI's `master`/`worker` subgroups (segments with `pytorch.segmentSize`),
each pod in its own (kaistack.declaration.subgroups), and a declared `topology` becomes the PodGroup's
topologyConstraint on the stack's Topology (cluster.topology).

Nodes come from the declared node pools; the control plane is not schedulable and not listed. Each
carries its pool's labels, `kaistack.io/node-pool` (not on an existing cluster, whose nodes kaistack does
not label) and its own `kubernetes.io/hostname`, which is what
KAI's topology plugin reads to put it in a domain, and its pool's taints. On EKS the system node group is
there too: CPU-only pods run on it, as every GPU pool carries the GPU taint (kaistack.stack.eks).

Pods carry what kaistack renders into them (components.podspec): the workload's nodeSelector, and the GPU
toleration on GPU workloads. A tenant's pods keep both on the host, as kaistack runs the vCluster without
its virtual scheduler (loft-sh/vcluster@v0.36.1:pkg/controllers/resources/pods/translate/translator.go:
424-451). Two things keep the snapshot from modelling them, each said in a note: a nodeSelector key no
declared pool carries, or the hostname, is left out (real nodes have labels a declaration does not list,
kubernetes.io/os among them, and names kaistack does not choose), and on EKS without the system node
group's allocatable nothing is modelled, since the CPU-only pods would have nowhere to go.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kaistack.capacity import ephemeral, operator_pods
from kaistack.capacity.pool_memory import pool_gpu_memory
from kaistack.declaration import kai_api, subgroups, tenant_gangs, training_operator, versions
from kaistack.declaration.marks import NODE_POOL_LABEL, SYSTEM_POOL
from kaistack.declaration.model import (
    ClusterTopology,
    NodePool,
    StackConfig,
    SystemNodeGroup,
    TopologyPlacement,
    Workload,
)
from kaistack.declaration.model import Queue as DeclaredQueue
from placement.model import (
    NO_CONSTRAINTS,
    Job,
    Node,
    NodeConstraints,
    Placement,
    Queue,
    QueueResource,
    Snapshot,
    SubGroup,
    Taint,
    Task,
    Toleration,
    Topology,
    TopologyConstraint,
    TopologyLevel,
)
from placement.quantity import cpu_millis, memory_bytes


@dataclass(frozen=True, slots=True)
class PodRef:
    """Where a pod of a declared workload sits in the snapshot."""

    name: str  # the pod as a person would call it: <workload>-<index>
    job: str
    task_index: int


@dataclass(frozen=True, slots=True)
class WorkloadPlan:
    workload: Workload
    queue: str
    priority_class: str
    pods: tuple[PodRef, ...]

    @property
    def where(self) -> str:
        return f"tenant {self.workload.tenant}" if self.workload.tenant else "host"


@dataclass(frozen=True, slots=True)
class Plan:
    snapshot: Snapshot
    placement: Placement
    workloads: tuple[WorkloadPlan, ...]
    # Node name -> node pool name, so reports can group nodes.
    node_pools: dict[str, str]
    # What the snapshot leaves out of the declaration, for the report to say.
    notes: tuple[str, ...] = ()


def plan(config: StackConfig) -> Plan:
    """The snapshot for `config`: declared nodes, every queue (KAI's defaults too), every pod."""
    nodes: list[Node] = []
    pools: dict[str, str] = {}
    notes: list[str] = []
    system = _system_group(config)
    constrained = system is None or system.capacity_known
    unknown_storage = ephemeral.unknown_pools(config)
    storage = not unknown_storage
    for pool in config.cluster.node_pools:
        for i in range(pool.count):
            node = _node(config, pool, f"{pool.name}-{i}", constrained)
            if storage:
                node = replace(node, scalar={ephemeral.RESOURCE: ephemeral.pool_allocatable(config, pool) or 0})
            nodes.append(node)
            pools[node.name] = pool.name
    if system is not None and constrained:
        for i in range(system.desired_size):
            node = _system_node(system, f"{SYSTEM_POOL}-{i}")
            if storage:
                node = replace(node, scalar={ephemeral.RESOURCE: ephemeral.system_allocatable()})
            nodes.append(node)
            pools[node.name] = SYSTEM_POOL
    elif system is not None:
        notes.append(
            "taints, tolerations and nodeSelectors are not checked: CPU-only pods run on the EKS system node "
            "group, whose allocatable is not known (give AWS credentials, or declare "
            "cluster.eks.systemNodeGroup.cpu, .memory and .pods)"
        )
    if unknown_storage and any(w.ephemeral_storage is not None for w in config.workloads):
        notes.append(
            f"ephemeralStorage is not checked: pool {', '.join(unknown_storage)} declares no ephemeralStorage "
            f"({ephemeral.UNKNOWN_WHY[config.cluster.provider]}; declare nodePools[].ephemeralStorage to check it)"
        )
    labelled = _known_label_keys(config)
    queues = tuple(_queue(q) for q in config.all_queues())
    jobs: list[Job] = []
    plans: list[WorkloadPlan] = []
    # Created with the tenant, before any PyTorchJob (which waits for it): first in KAI's creation order.
    for operator in operator_pods.training_operators(config):
        new_jobs, plan_ = _expand(config, operator, NO_CONSTRAINTS, storage)
        jobs.extend(new_jobs)
        plans.append(plan_)
    for work in config.workloads:
        constraints = NO_CONSTRAINTS
        if constrained:
            constraints, unknown = _constraints(config, work, labelled)
            if unknown:
                notes.append(
                    f"{work.name}: nodeSelector {', '.join(unknown)} not checked: no node the declaration "
                    "describes has that label (declare it in the pool's labels to check it)"
                )
        new_jobs, plan_ = _expand(config, work, constraints, storage)
        jobs.extend(new_jobs)
        plans.append(plan_)
    placement = scheduler_placement(config)
    topology = config.cluster.topology
    topologies = (
        () if topology is None else (Topology(topology.name, tuple(TopologyLevel(label) for label in topology.levels)),)
    )
    return Plan(Snapshot(tuple(nodes), queues, tuple(jobs), topologies), placement, tuple(plans), pools, tuple(notes))


def scheduler_placement(config: StackConfig) -> Placement:
    """The chart's default SchedulingShard with `kai.placementStrategy` (KAI@v0.17.0 templates/default-shard.yaml)
    and the scheduler's flag defaults (options.go:38, :124: 16 consolidation victims, signatures on)."""
    strategy = config.kai.placement_strategy
    return Placement(
        node=strategy,
        gpu="pack" if strategy == "binpack" else "spread",
        max_consolidation_preemptees=16,
        use_scheduling_signatures=True,
        kai_version=versions.simulator_rules(config.kai.version),
    )


def _system_group(config: StackConfig) -> SystemNodeGroup | None:
    eks = config.cluster.eks
    return eks.system_node_group if config.cluster.provider == "eks" and eks is not None else None


def _system_node(group: SystemNodeGroup, name: str) -> Node:
    """An EKS system node: no GPUs, no taints, the pool label components.cluster_eks gives it."""
    assert group.cpu is not None
    assert group.memory is not None
    assert group.pods is not None
    return Node(
        name=name,
        gpus=0,
        cpu_millis=cpu_millis(group.cpu),
        memory_bytes=memory_bytes(group.memory),
        pods=group.pods,
        labels={NODE_POOL_LABEL: SYSTEM_POOL, kai_api.HOSTNAME_LABEL: name},
    )


def _known_label_keys(config: StackConfig) -> set[str]:
    """The label keys the declaration says its nodes carry: every pool's (a count-0 one too, which a selector may
    be waiting for), kaistack's pool label where kaistack labels nodes. Not the hostname: snapshot nodes are
    named by kaistack, real ones by the cloud or kind."""
    keys = {key for pool in config.cluster.node_pools for key in pool.labels}
    if config.cluster.provider != "existing":
        keys.add(NODE_POOL_LABEL)
    keys.discard(kai_api.HOSTNAME_LABEL)
    return keys


def _constraints(config: StackConfig, work: Workload, labelled: set[str]) -> tuple[NodeConstraints, list[str]]:
    """What kaistack renders into the pods (components.podspec), less selector keys no node carries.

    EKS runs the ExtendedResourceToleration admission plugin (on since Kubernetes 1.19 there:
    aws/containers-roadmap#739), which gives a pod requesting nvidia.com/gpu the very toleration podspec
    renders (kubernetes/kubernetes:plugin/pkg/admission/extendedresourcetoleration/admission.go). Whole-GPU
    pods request it; shared-GPU pods ask KAI by annotation and do not. kind's API server does not run it.
    """
    selector = tuple(sorted((k, v) for k, v in work.node_selector.items() if k in labelled))
    unknown = sorted(f"{k}={v}" for k, v in work.node_selector.items() if k not in labelled)
    tolerations: tuple[Toleration, ...] = ()
    admitted = config.cluster.provider == "eks" and work.gpu is not None
    if work.tolerates_gpu_taint or admitted:
        t = kai_api.GPU_TOLERATION
        tolerations = (Toleration(key=t["key"], operator=t["operator"], effect=t["effect"]),)
    if not selector and not tolerations:
        return NO_CONSTRAINTS, unknown
    return NodeConstraints(node_selector=selector, tolerations=tolerations), unknown


def _node(config: StackConfig, pool: NodePool, name: str, tainted: bool = True) -> Node:
    gpu_memory = pool_gpu_memory(config, pool)
    return Node(
        name=name,
        gpus=_advertised_gpus(config, pool.gpu_count),
        gpu_memory_mib=gpu_memory,
        cpu_millis=cpu_millis(pool.cpu),
        memory_bytes=memory_bytes(pool.memory),
        pods=pool.pods,
        mig_strategy=pool.mig_strategy,
        mig=dict(pool.mig),
        labels={**_pool_label(config, pool), **pool.labels, kai_api.HOSTNAME_LABEL: name},
        taints=tuple(Taint(t.key, t.value or "", t.effect) for t in pool.taints) if tainted else (),
    )


def _pool_label(config: StackConfig, pool: NodePool) -> dict[str, str]:
    """kaistack.io/node-pool, on the nodes kaistack creates (components.cluster_kind, components.cluster_eks).
    An existing cluster's nodes never get it, so a nodeSelector on it must not match there."""
    return {} if config.cluster.provider == "existing" else {NODE_POOL_LABEL: pool.name}


def _advertised_gpus(config: StackConfig, physical: int) -> int:
    """The nvidia.com/gpu count the device plugin advertises, which is what KAI counts as whole GPUs. With
    CUDA time-slicing it is replicas x GPUs, or none at all with renameByDefault (the replicas are then
    nvidia.com/gpu.shared, a resource KAI does not read): NVIDIA/k8s-device-plugin@v0.20.0:README.md
    "With CUDA Time-Slicing". The GPU Operator runs the same plugin with the same config."""
    setting = config.gpu.time_slicing
    if setting is None or not physical:
        return physical
    return 0 if setting.rename_by_default else physical * setting.replicas


def _queue(queue: DeclaredQueue) -> Queue:
    res = queue.resources
    return Queue(
        name=queue.name,
        parent=queue.parent,
        priority=queue.priority,
        gpu=QueueResource(res.gpu.quota, res.gpu.limit, res.gpu.over_quota_weight),
        cpu=QueueResource(res.cpu.quota, res.cpu.limit, res.cpu.over_quota_weight),
        memory=QueueResource(res.memory.quota, res.memory.limit, res.memory.over_quota_weight),
    )


def _task(work: Workload, constraints: NodeConstraints) -> Task:
    return Task(
        gpu=work.gpu or 0,
        gpu_fraction=work.gpu_fraction,
        gpu_memory_mib=work.gpu_memory_mi_b,
        gpu_devices=work.gpu_devices or 1,
        cpu_millis=cpu_millis(work.cpu),
        memory_bytes=memory_bytes(work.memory),
        constraints=constraints,
    )


def _pod_task(config: StackConfig, work: Workload, task: Task, index: int, storage: bool) -> Task:
    """Pod `index`'s request: a PyTorchJob worker's is at least the operator's init container's; its ephemeral
    storage where the nodes' is known (kaistack.capacity.ephemeral)."""
    if storage:
        request = ephemeral.pod_request(config, work, index)
        if request:
            task = replace(task, scalar={ephemeral.RESOURCE: request})
    if not training_operator.has_init_container(work.kind, work.pytorch.master, index):
        return task
    cpu = int(training_operator.INIT_REQUESTS["cpu"] * 1000)
    memory = int(training_operator.INIT_REQUESTS["memory"])
    return replace(task, cpu_millis=max(task.cpu_millis, cpu), memory_bytes=max(task.memory_bytes, memory))


def priority_class(work: Workload) -> str:
    """The class KAI resolves: the declared one, else the default of the kind KAI sees on the host."""
    if work.priority_class is not None:
        return work.priority_class
    return "train" if work.tenant is not None else work.default_priority_class


def _expand(
    config: StackConfig, work: Workload, constraints: NodeConstraints, storage: bool
) -> tuple[list[Job], WorkloadPlan]:
    queue = config.queue_of(work)
    klass = priority_class(work)
    priority = kai_api.PRIORITY_CLASSES[klass]
    task = _task(work, constraints)
    count = work.pod_count
    topology = _constraint(config.cluster.topology, work.topology)
    jobs: list[Job] = []
    pods: list[PodRef] = []
    if work.kind == "PyTorchJob" and (work.tenant is None or tenant_gangs.is_tenant_gang(work)):
        # One gang: KAI's PodGroup for a host PyTorchJob, or the host PodGroup kaistack writes for a
        # tenant's, in the tenant's queue; minMember stays as KAI writes it next to the subgroups.
        with_groups = work.tenant is None or tenant_gangs.has_sub_groups(config, work)
        groups = _sub_groups(config.cluster.topology, work) if with_groups else ()
        tasks = tuple(
            replace(
                _pod_task(config, work, task, i, storage),
                sub_group=subgroups.pytorch_pod_sub_group(work, i) if groups else None,
            )
            for i in range(count)
        )
        if count:
            jobs.append(
                Job(
                    work.name,
                    queue,
                    tasks,
                    priority,
                    min_member=subgroups.gang_minimum(work),
                    preemptible=work.preemptible,
                    sub_groups=groups,
                    topology=topology,
                )
            )
        pods.extend(PodRef(f"{work.name}-{i}", work.name, i) for i in range(count))
    elif work.tenant is not None or work.kind in ("Pod", "Deployment"):
        # One PodGroup per pod (bare pods, Deployment pods, anything synced from a vCluster).
        for i in range(count):
            job = f"{work.name}#{i}"
            pod = _pod_task(config, work, task, i, storage)
            jobs.append(
                Job(job, queue, (pod,), priority, min_member=1, preemptible=work.preemptible, topology=topology)
            )
            pods.append(PodRef(f"{work.name}-{i}", job, 0))
    else:
        # A Job is one elastic PodGroup (minMember 1).
        tasks = tuple(_pod_task(config, work, task, i, storage) for i in range(count))
        if count:
            jobs.append(
                Job(work.name, queue, tasks, priority, min_member=1, preemptible=work.preemptible, topology=topology)
            )
        pods.extend(PodRef(f"{work.name}-{i}", work.name, i) for i in range(count))
    return jobs, WorkloadPlan(work, queue, klass, tuple(pods))


def _constraint(topology: ClusterTopology | None, placement: TopologyPlacement | None) -> TopologyConstraint | None:
    if topology is None or placement is None:
        return None
    return TopologyConstraint(topology.name, placement.required, placement.preferred)


def _sub_groups(topology: ClusterTopology | None, work: Workload) -> tuple[SubGroup, ...]:
    return tuple(
        SubGroup(
            g.name,
            parent=g.parent,
            min_member=g.min_member,
            min_sub_group=g.min_sub_group,
            topology=_constraint(topology, TopologyPlacement(required=g.required, preferred=g.preferred))
            if g.constrained
            else None,
        )
        for g in subgroups.pytorch_sub_groups(work)
    )
