"""Topology: the node-label levels of KAI's Topology CR, and where a workload's pods are kept together.

KAI@v0.17.0 pkg/apis/kai/v1alpha1/topology_types.go (and its CRD kai.scheduler_topologies.yaml) bounds the
levels: 1 to 16, top (broadest) first, each a node label key, unique, kubernetes.io/hostname only as the
last one. A node that lacks a label of any level is outside the topology (pkg/scheduler/plugins/topology
common.go `isNodePartOfTopology`): a constrained job can never use it. So every declared pool must carry
a value for every level; kaistack refuses a pool that does not, naming the pool and the label.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field, field_validator, model_validator

from kaistack.declaration import kai_api, versions
from kaistack.declaration.model.base import Model, Name
from placement.k8s_names import is_label_value

if TYPE_CHECKING:
    from kaistack.declaration.model.stack import StackConfig
    from kaistack.declaration.model.workloads import Workload

MAX_LEVELS = 16  # TopologySpec.levels MaxItems
# TopologyLevel.nodeLabel: MinLength 1, MaxLength 316 and this pattern (a qualified label key).
LEVEL_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
# The first version whose pod-grouper and scheduler kaistack models for topology and subgroups.
TOPOLOGY_KAI_VERSION = (0, 17, 0)

Level = Annotated[str, Field(min_length=1, max_length=316, pattern=LEVEL_PATTERN)]


class ClusterTopology(Model):
    """The cluster's Topology CR (kai.scheduler/v1alpha1), which kaistack creates for KAI."""

    name: Name = Field(default="cluster-topology", description="Name of the Topology object workloads refer to")
    levels: Annotated[list[Level], Field(min_length=1, max_length=MAX_LEVELS)] = Field(
        description="Node label keys, broadest first (e.g. topology.kubernetes.io/zone, then a rack label)"
    )

    @field_validator("levels")
    @classmethod
    def _levels(cls, value: list[str]) -> list[str]:
        repeated = sorted({level for level in value if value.count(level) > 1})
        if repeated:
            raise ValueError(f"levels must be unique (KAI's Topology CRD); repeated: {', '.join(repeated)}")
        if kai_api.HOSTNAME_LABEL in value[:-1]:
            raise ValueError(
                f"{kai_api.HOSTNAME_LABEL} can only be the last (lowest) level (KAI's Topology CRD); "
                f"got levels {', '.join(value)}"
            )
        return value

    def depth(self, level: str) -> int:
        """0 for the broadest level; deeper levels are narrower."""
        return self.levels.index(level)


class TopologyPlacement(Model):
    """Where KAI keeps a set of pods together: levels of cluster.topology, named by their node label."""

    required: Level | None = Field(
        default=None, description="All pods in one domain of this level, or none placed (a hard constraint)"
    )
    preferred: Level | None = Field(
        default=None, description="Pods packed into one domain of this level when they fit (a soft constraint)"
    )

    @model_validator(mode="after")
    def _one_level(self) -> TopologyPlacement:
        if self.required is None and self.preferred is None:
            # KAI's topology plugin errors on a constraint with neither level and never places the job
            # (job_filtering.go calculateRelevantDomainLevels: "no topology constraints were found").
            raise ValueError("needs 'required', 'preferred' or both: a level of cluster.topology")
        return self


def kai_supports_topology(version: str) -> bool:
    return versions.kai_tag(version) >= TOPOLOGY_KAI_VERSION


def topology_problems(stack: StackConfig) -> list[str]:
    """Pools without a level's label, constraints the topology cannot satisfy; each line starts with its key."""
    topology = stack.cluster.topology
    problems: list[str] = []
    for i, pool in enumerate(stack.cluster.node_pools):
        if kai_api.HOSTNAME_LABEL in pool.labels:
            problems.append(
                f"cluster.nodePools[{i}].labels: {kai_api.HOSTNAME_LABEL} is set by the kubelet, one value per "
                "node; a pool cannot set it"
            )
    if topology is not None:
        problems += _pool_problems(stack)
        if not kai_supports_topology(stack.kai.version):
            problems.append(
                f"cluster.topology: needs kai.version v0.17.0 or later (kaistack renders and checks topology with "
                f"v0.17.0's pod-grouper and scheduler), got {stack.kai.version}"
            )
    for i, work in enumerate(stack.workloads):
        problems += _workload_problems(stack, f"workloads[{i}]", work)
    return problems


def _pool_problems(stack: StackConfig) -> list[str]:
    topology = stack.cluster.topology
    assert topology is not None
    problems: list[str] = []
    for i, pool in enumerate(stack.cluster.node_pools):
        missing = [level for level in topology.levels if level != kai_api.HOSTNAME_LABEL and level not in pool.labels]
        if missing:
            problems.append(
                f"cluster.nodePools[{i}].labels: pool {pool.name!r} has no {', '.join(repr(m) for m in missing)} "
                f"label; every pool needs a value for each cluster.topology level (a node without one is "
                "outside the topology, and KAI never places a constrained workload on it)"
            )
        for level in topology.levels:
            value = pool.labels.get(level)
            # Non-empty: KAI joins the values of a node's levels into its domain ids.
            if value is not None and (not value or not is_label_value(value)):
                problems.append(
                    f"cluster.nodePools[{i}].labels.{level}: {value!r} is not a label value (1-63 letters, digits, "
                    "'-', '_' or '.', starting and ending with a letter or digit)"
                )
    return problems


def _workload_problems(stack: StackConfig, where: str, work: Workload) -> list[str]:
    topology = stack.cluster.topology
    problems: list[str] = []
    segments = work.pytorch.segment_topology if work.kind == "PyTorchJob" else None
    if work.kind == "PyTorchJob" and work.pytorch.segment_size is not None and work.tenant is not None:
        problems.append(
            f"{where}.pytorch.segmentSize: a tenant's PyTorchJob pods skip KAI's pod-grouper (they join the "
            "PodGroup kaistack writes), and one Worker template cannot label each worker with its segment; "
            "segments work for host PyTorchJobs"
        )
    for key, placement in (("topology", work.topology), ("pytorch.segmentTopology", segments)):
        if placement is None:
            continue
        if topology is None:
            problems.append(f"{where}.{key}: the stack declares no cluster.topology; declare its levels first")
            continue
        for field in ("required", "preferred"):
            level = getattr(placement, field)
            if level is not None and level not in topology.levels:
                problems.append(
                    f"{where}.{key}.{field}: {level!r} is not a level of topology {topology.name!r}; "
                    f"levels: {', '.join(topology.levels)}"
                )
        required, preferred = placement.required, placement.preferred
        if (
            required in topology.levels
            and preferred in topology.levels
            and topology.depth(str(preferred)) < topology.depth(str(required))
        ):
            # KAI walks the levels from the lowest up and stops at the required one, so a preferred level
            # above it is never found: the job fails every cycle (job_filtering.go calculateRelevantDomainLevels).
            problems.append(
                f"{where}.{key}.preferred: {preferred!r} is above required {required!r}; the preferred level must be "
                "the required one or below it (KAI refuses the job otherwise)"
            )
    if work.topology is not None:
        problems += _kind_problems(where, work)
    outer = work.topology.required if work.topology is not None else None
    inner = segments.required if segments is not None else None
    if (
        topology is not None
        and outer in topology.levels
        and inner in topology.levels
        and topology.depth(str(inner)) < topology.depth(str(outer))
    ):
        problems.append(
            f"{where}.pytorch.segmentTopology.required: {inner!r} is above the workload's topology.required "
            f"{outer!r}, which already keeps every pod inside one {outer} domain"
        )
    return problems


def _kind_problems(where: str, work: Workload) -> list[str]:
    """Only kinds whose pods form one PodGroup: a constraint holds one PodGroup's pods together."""
    if work.kind == "Deployment":
        return [
            f"{where}.topology: a Deployment's pods are one PodGroup each (KAI's deployment grouper), so the "
            "constraint would hold each pod alone, not the replicas together; use a Job, PyTorchJob or Pod"
        ]
    if work.tenant is not None and work.kind == "Job":
        return [
            f"{where}.topology: a tenant's Job reaches the host as bare pods, one PodGroup each, so the constraint "
            "would hold each pod alone; use a PyTorchJob (one gang) or a Pod"
        ]
    return []
