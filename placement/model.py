# Long module: the simulator's whole input, one frozen dataclass per object KAI reads (nodes, queues, jobs, pods,
# their constraints, the placement settings); every module imports them from here.
"""The cluster snapshot a simulation starts from: nodes, queues and jobs.

These are plain frozen dataclasses with no behaviour beyond defaults, so the same snapshot can be built
from a scenario file (`placement.scenario`) or from a Pulumi stack declaration. Units follow KAI:

- node and task CPU in integer millicores, memory in integer bytes (see `placement.quantity`);
- queue resources in the Queue CRD's units: GPUs (fractions allowed), CPU millicores, memory MB
  (10**6 bytes); `-1` means unlimited; an omitted quota/limit/weight is 0, as in the CRD.

List order is age: earlier nodes/queues/jobs are older (KAI breaks ties by creation time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from placement.k8s_names import is_label_value, is_qualified_name

__all__ = [
    "ACTIONS",
    "ALL_ACTIONS",
    "DEFAULT_GPU_MEMORY_MIB",
    "NO_CONSTRAINTS",
    "UNLIMITED",
    "Job",
    "Node",
    "NodeConstraints",
    "NodeSelectorTerm",
    "OutsidePod",
    "OutsideShare",
    "Placement",
    "PodAffinityTerm",
    "Queue",
    "QueueResource",
    "SelectorRequirement",
    "Snapshot",
    "SubGroup",
    "Taint",
    "Task",
    "Toleration",
    "Topology",
    "TopologyConstraint",
    "TopologyLevel",
]

UNLIMITED = -1.0
# KAI's DefaultGpuMemory: the per-GPU memory assumed when the nvidia.com/gpu.memory label is missing.
DEFAULT_GPU_MEMORY_MIB = 100
# KAI's default cycle, in order; FORMAT v2 adds the stalegangeviction action, which runs last.
ACTIONS = ("allocate", "consolidation", "reclaim", "preempt")
ALL_ACTIONS = (*ACTIONS, "stalegangeviction")
# Priority at or above which a job is non-preemptible (pkg/common/podgroup/preemptible.go).
NON_PREEMPTIBLE_PRIORITY = 100


@dataclass(frozen=True, slots=True)
class QueueResource:
    """One resource of a queue: deserved quota, hard limit, over-quota weight (-1 = unlimited)."""

    quota: float = 0.0
    limit: float = 0.0
    over_quota_weight: float = 0.0


_UNLIMITED_RESOURCE = QueueResource(UNLIMITED, UNLIMITED, 1.0)


@dataclass(frozen=True, slots=True)
class Queue:
    """A scheduling.run.ai/v2 Queue. cpu is in millicores and memory in MB, as in the CRD."""

    name: str
    parent: str | None = None
    priority: int = 100
    gpu: QueueResource = _UNLIMITED_RESOURCE
    cpu: QueueResource = _UNLIMITED_RESOURCE
    memory: QueueResource = _UNLIMITED_RESOURCE
    # spec.preemptMinRuntime / spec.reclaimMinRuntime in seconds; None inherits (minruntime plugin).
    preempt_min_runtime: float | None = None
    reclaim_min_runtime: float | None = None


@dataclass(frozen=True, slots=True)
class Taint:
    """A node's spec.taints entry. Only NoSchedule and NoExecute keep pods off (PreferNoSchedule scores)."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod's spec.tolerations entry; an empty key or effect matches any, operator "" means Equal."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


@dataclass(frozen=True, slots=True)
class SelectorRequirement:
    """A nodeSelectorTerm's matchExpressions (a label) or matchFields (metadata.name) entry. `label_syntax`:
    whether the key and values are a label key and values, without which labels.NewRequirement refuses it."""

    key: str
    operator: str
    values: tuple[str, ...] = ()
    label_syntax: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        ok = is_qualified_name(self.key) and all(is_label_value(v) for v in self.values)
        object.__setattr__(self, "label_syntax", ok)


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    match_expressions: tuple[SelectorRequirement, ...] = ()
    match_fields: tuple[SelectorRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    """A required podAffinity / podAntiAffinity term: pods matching the label selector (`selector` False: a null
    selector, which matches no pod), in `namespaces` (`all_namespaces`: an empty namespaceSelector), inside one
    `topology_key` domain."""

    topology_key: str
    selector: bool = True
    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[SelectorRequirement, ...] = ()
    namespaces: frozenset[str] = frozenset()
    all_namespaces: bool = False
    # No namespaces and no namespaceSelector: the term owner's namespace. False with a non-empty
    # namespaceSelector, whose namespaces placement.namespace_selectors adds to `namespaces` from the Namespace
    # labels (matchLabels, matchExpressions); until then, or without labels, only `namespaces` count.
    own_namespace: bool = True
    namespace_selector: tuple[tuple[tuple[str, str], ...], tuple[SelectorRequirement, ...]] | None = None
    # A preferred term's weight (1-100); 0 for a required one.
    weight: int = 0


@dataclass(frozen=True, slots=True)
class OutsidePod:
    """A pod on a node that no job holds (another scheduler's): what inter-pod affinity reads of it."""

    namespace: str
    labels: tuple[tuple[str, str], ...] = ()
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    # Its preferred podAffinity / podAntiAffinity terms, which score the nodes of the pods placed after it.
    preferred_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    # The host ports it holds (placement.host_ports): (hostIP, protocol, port), defaults filled in.
    host_ports: tuple[tuple[str, str, int], ...] = ()

    @property
    def has_preferred(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti_affinity)


@dataclass(frozen=True, slots=True)
class OutsideShare:
    """A GPU share on a node that no job holds (its PodGroup gone, or lacking the pod's subgroup): KAI's node still
    charges each of its GPU groups (node_info.go:495, gpu_sharing_node_info.go:73-128). A fraction of a GPU, or
    GPU memory in MiB, per group."""

    groups: tuple[str, ...]
    fraction: float | None = None
    memory_mib: int | None = None
    releasing: bool = False


@dataclass(frozen=True, slots=True)
class NodeConstraints:
    """Where a pod may go (placement.node_constraints, placement.pod_affinity): its nodeSelector, its required
    node affinity (terms ORed; None: none set), its tolerations and its required inter-pod (anti-)affinity."""

    node_selector: tuple[tuple[str, str], ...] = ()
    required_terms: tuple[NodeSelectorTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()
    # Required inter-pod affinity and anti-affinity terms (placement.pod_affinity).
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    # Preferred inter-pod affinity and anti-affinity terms (weighted), which only order nodes (placement.pod_affinity).
    preferred_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    # The host ports its containers bind (placement.host_ports): (hostIP, protocol, port), defaults filled in.
    host_ports: tuple[tuple[str, str, int], ...] = ()
    # The nodes the VolumeBinding Filter lets it use (its claims' volumes, or where they can be bound or
    # provisioned), and what it says of the others; None: every node. Not part of KAI's signature.
    volume_nodes: frozenset[str] | None = None
    volume_reason: str = ""
    # A digest of what else KAI's scheduling signature hashes (the whole affinity, preferred terms too, topology
    # spread, host ports, volumes): pods that differ in it are not alike to KAI. No predicate reads it.
    other: str = ""

    @property
    def has_preferred(self) -> bool:
        """Preferred inter-pod terms, which score other pods' nodes (placement.pod_affinity.affinity_scores)."""
        return bool(self.preferred_affinity or self.preferred_anti_affinity)


NO_CONSTRAINTS = NodeConstraints()


@dataclass(frozen=True, slots=True)
class Node:
    """A node's allocatable resources.

    `gpu_memory_mib` is the nvidia.com/gpu.memory label; None means the label is missing (KAI then
    assumes 100 MiB and refuses gpu-memory pods on the node). `mig` lists MIG devices by resource name
    (e.g. "nvidia.com/mig-1g.10gb"); with `mig_strategy="mixed"` `gpus` is the physical count and the node offers
    `mixed_gpus` whole GPUs (read from a cluster: its allocatable nvidia.com/gpu, the GPUs not in MIG mode, which
    only a pod asking MIG devices too may use there; node_info.go:105, 340-343).
    """

    name: str
    gpus: int = 0
    gpu_memory_mib: int | None = DEFAULT_GPU_MEMORY_MIB
    cpu_millis: int = 20_000 * 1000
    memory_bytes: int = 20 * 10**9
    pods: int = 110
    mig_strategy: str = "none"
    mig: Mapping[str, int] = field(default_factory=dict)
    # metadata.labels: what Topology levels and pods' node selectors and affinities read.
    labels: Mapping[str, str] = field(default_factory=dict)
    # False: cordoned, NotReady or under pressure (scheduler_util.CheckNodeConditionPredicate). KAI places no pod
    # there (predicates.go:343-349) and leaves it out of the fair-share total (proportion.go:267-271) and of
    # consolidation's GPU sum (action.go:203); its pods stay.
    ready: bool = True
    # Allocatable scalar resources (placement.scalar_resources: RDMA devices, hugepages, ephemeral storage...)
    # in KAI's units: thousandths, bytes for (ephemeral-)storage.
    scalar: Mapping[str, int] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    # What pods outside every job (other schedulers' pods, KAI's reservation pods) hold here, by resource name:
    # cpu (millicores), memory (bytes), nvidia.com/gpu (whole GPUs), pods, MIG and scalar names. `held`: used;
    # `releasing`: being deleted, which KAI counts Releasing (pod_info.go:465-479), so pods may be pipelined onto
    # it (node_info.go addTaskResources). `outside_total`: the part of both the fair-share total leaves out,
    # other schedulers' pods but not KAI's utility pods (proportion.go:286-295).
    held: Mapping[str, float] = field(default_factory=dict)
    releasing: Mapping[str, float] = field(default_factory=dict)
    outside_total: Mapping[str, float] = field(default_factory=dict)
    # Pods of other schedulers here, as inter-pod affinity sees them.
    outside_pods: tuple[OutsidePod, ...] = ()
    # GPU shares outside every job, charged to their GPU groups like a running share.
    outside_shares: tuple[OutsideShare, ...] = ()
    mixed_gpus: int = 0


@dataclass(frozen=True, slots=True)
class TopologyLevel:
    """One spec.levels entry of a kai.scheduler/v1alpha1 Topology: a node label key, optionally aliased."""

    node_label: str
    alias: str | None = None


@dataclass(frozen=True, slots=True)
class Topology:
    """A Topology CR: levels top (broadest) first, as in spec.levels."""

    name: str
    levels: tuple[TopologyLevel, ...]


@dataclass(frozen=True, slots=True)
class TopologyConstraint:
    """A PodGroup (or subgroup) topologyConstraint; levels name a node label key (or a level alias)."""

    topology: str = ""
    required: str | None = None
    preferred: str | None = None


@dataclass(frozen=True, slots=True)
class SubGroup:
    """One PodGroup spec.subGroups entry. With children it is a set (minSubGroup); without, a pod set (minMember)."""

    name: str
    parent: str | None = None
    min_member: int | None = None
    min_sub_group: int | None = None
    topology: TopologyConstraint | None = None


@dataclass(frozen=True, slots=True)
class Task:
    """One pod of a job: its request and, for Running/Releasing pods, where it runs.

    Exactly one GPU request kind may be set: whole `gpu`, `gpu_fraction` (0 < f < 1), `gpu_memory_mib`,
    or `mig` (a scenario's rule; a pod read from a cluster may ask `mig` beside whole `gpu`, a fraction or GPU
    memory, which KAI's admission allows). `gpu_devices` is the gpu-fraction-num-devices annotation
    (fraction/memory requests only).
    """

    gpu: int = 0
    gpu_fraction: float | None = None
    gpu_memory_mib: int | None = None
    gpu_devices: int = 1
    mig: Mapping[str, int] = field(default_factory=dict)
    cpu_millis: int = 1000
    memory_bytes: int = 10**9
    state: str = "Pending"
    node: str | None = None
    gpu_groups: tuple[str, ...] = ()
    priority: int | None = None
    # The kai.scheduler/subgroup-name label: the leaf subgroup (pod set) of its job this pod belongs to.
    sub_group: str | None = None
    # Requested scalar resources, in the units of Node.scalar.
    scalar: Mapping[str, int] = field(default_factory=dict)
    constraints: NodeConstraints = NO_CONSTRAINTS
    # metadata.namespace and metadata.labels, which other pods' affinity terms match.
    namespace: str = "default"
    pod_labels: tuple[tuple[str, str], ...] = ()
    # The ConfigMaps of its namespace it cannot start without (placement.config_maps), sorted.
    config_maps: tuple[str, ...] = ()
    # Why Kubernetes' VolumeBinding PreFilter refuses it (a claim missing, lost, being deleted or unbound with
    # immediate binding): it is then never placed (placement.pre_predicates). None: it passes.
    volume_error: str | None = None


@dataclass(frozen=True, slots=True)
class Job:
    """A PodGroup: its tasks share queue, priority and gang minimum (`min_member`, default all tasks)."""

    name: str
    queue: str
    tasks: tuple[Task, ...]
    priority: int = 50
    min_member: int | None = None
    preemptible: bool | None = None
    # FORMAT v2: how old the PodGroup is and its spec.preemptionDelay, both in seconds. A job inside
    # its delay may not start evictions (KAI@v0.17.0 podgroup_info.IsWithinPreemptionDelay).
    age_seconds: float | None = None
    preemption_delay_seconds: float | None = None
    # FORMAT v2 stale gangs: how long the job has been stale already, and its own grace period (seconds).
    stale_seconds: float | None = None
    staleness_grace_seconds: float | None = None
    # Seconds since the PodGroup's kai.scheduler/last-start-timestamp (job_info.go:249-256); None: never set.
    # The minruntime plugin protects a job that started less than its queue's min runtime ago.
    started_seconds_ago: float | None = None
    # FORMAT v2 subgroups and topology: spec.subGroups (spec order), the root's spec.minSubGroup and
    # spec.topologyConstraint. With sub_groups, min_member is not used.
    sub_groups: tuple[SubGroup, ...] = ()
    min_sub_group: int | None = None
    topology: TopologyConstraint | None = None
    # KAI's scheduling signature hashes each pod's own priority class and priority, never the PodGroup's
    # (pod_info/scheduling_constraints_signature.go:52-56). True: the pods carry the job's (a declaration's or a
    # scenario's), which then stands for them; False: each task's constraints digest holds its pod's own (read
    # from a cluster, where the pod-grouper may give the PodGroup a class its pods lack).
    priority_in_signature: bool = True

    @property
    def is_preemptible(self) -> bool:
        """Explicit preemptibility, else KAI's rule: priority below 100 (build) is preemptible."""
        if self.preemptible is not None:
            return self.preemptible
        return self.priority < NON_PREEMPTIBLE_PRIORITY

    @property
    def gang_size(self) -> int:
        return len(self.tasks) if self.min_member is None else self.min_member


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything a scheduling cycle looks at. Order of each tuple is creation order (oldest first)."""

    nodes: tuple[Node, ...]
    queues: tuple[Queue, ...]
    jobs: tuple[Job, ...]
    topologies: tuple[Topology, ...] = ()
    # The ConfigMaps that exist, as (namespace, name); None: not known, and KAI's ConfigMap predicate is not
    # evaluated (placement.config_maps).
    config_maps: frozenset[tuple[str, str]] | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    """Placement strategy: node-level binpack|spread (nodeplacement) and shared-GPU pack|spread."""

    node: str = "binpack"
    gpu: str = "pack"
    # KAI's --max-consolidation-preemptees: at most this many preemptible jobs (+1, KAI counts with `>`)
    # are offered as consolidation victims per pending job; 0 turns consolidation off, -1 is no limit.
    # The scheduler's default is 16 (KAI@v0.17.0 cmd/scheduler/app/options/options.go:38); KAI's own
    # test harness, and so the conformance scenarios, use -1 (pkg/scheduler/test_utils/test_utils_builder.go:84).
    max_consolidation_preemptees: int = -1
    # KAI's --use-scheduling-signatures (default true); KAI's test harness runs without it (placement.signatures).
    use_scheduling_signatures: bool = False
    # KAI's --default-staleness-grace-period (60s); KAI's integration harness leaves it at 0.
    staleness_grace_seconds: float = 60.0
    # The minruntime plugin's arguments (plugins/minruntime/minruntime.go:19-66): the min runtimes of a queue
    # tree that sets none, in seconds, and how a reclaim's min runtime is resolved ("lca" or "queue").
    default_preempt_min_runtime: float = 0.0
    default_reclaim_min_runtime: float = 0.0
    reclaim_resolve_method: str = "lca"
    # False: the scheduler runs without the minruntime plugin (a SchedulingShard's plugins.minruntime.enabled
    # false), and no min runtime protects a job, the queues' own included.
    minruntime_plugin: bool = True
    # Which KAI's rules to apply (placement.versions): v0.17.0, or v0.18.0 = KAI main after it (d5bc503).
    kai_version: str = "v0.17.0"
    # How the session is built. False: as KAI's cache builds it from a cluster (diagnose, check): one reservation
    # pod per shared GPU in use takes a pod slot on its node (node_info.go:470-473), and with no node over
    # 100 MiB of GPU memory there is no basis to turn gpu-memory requests into GPUs (cluster_info.go:283-298,
    # nil). True: as KAI's test harness builds it (scenarios): no reservation pods (nodes_fake/nodes.go:
    # 108-115), and 100 MiB as that basis (test_utils_builder.go:353-383).
    harness: bool = False

    @property
    def packs(self) -> bool:
        """Binpack nodes and packed shares: the KAI operator's setting for gpusharingorder and consolidation, the only
        one under which the simulator runs them."""
        return self.node == "binpack" and self.gpu == "pack"

    @property
    def consolidates(self) -> bool:
        """Consolidation as the simulator runs it: packed, and a victim limit other than 0."""
        return self.packs and self.max_consolidation_preemptees != 0

    def __post_init__(self) -> None:
        if self.node not in ("binpack", "spread"):
            raise ValueError(f"placement node strategy must be 'binpack' or 'spread', got {self.node!r}")
        if self.gpu not in ("pack", "spread"):
            raise ValueError(f"placement gpu strategy must be 'pack' or 'spread', got {self.gpu!r}")
        if self.reclaim_resolve_method not in ("lca", "queue"):
            raise ValueError(f"reclaimResolveMethod must be 'lca' or 'queue', got {self.reclaim_resolve_method!r}")
        if self.max_consolidation_preemptees < -1:
            raise ValueError(
                f"maxConsolidationPreemptees must be -1 (no limit) or more, got {self.max_consolidation_preemptees}"
            )
