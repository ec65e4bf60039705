"""The subgroups KAI's pod-grouper gives a PyTorchJob, and which one each pod joins; the Topology CR.

At kai-scheduler/KAI-Scheduler@v0.17.0 pkg/podgrouper/podgrouper/plugins/kubeflow/pytorch/pytorch_grouper.go
`buildSubGroups`, a PyTorchJob's PodGroup has (besides spec.minMember = minAvailable):
- `master`, minMember = the Master replicas (when there is a Master);
- `worker`, minMember = max(0, minAvailable - masters) (when there are Workers);
- with `kai.scheduler/segment-size: S` on the Worker template, `worker` becomes a parent with
  minSubGroup = the number of segments, and children `worker-0`, `worker-1`, ... of S pods each (the last
  one smaller when S does not divide the workers), minMember S, or 0 for the segments past the workers'
  minimum; each child carries the segment topology constraint (`kai.scheduler/segment-topology-*`).
A worker of replica index i is in `worker-<i // S>`. The pod-grouper labels every pod with its subgroup
(`kai.scheduler/subgroup-name`, pkg/podgrouper/pod_controller.go `assignPodToGroupAndSubGroup`).

kaistack writes the same tree into the host PodGroup of a tenant's PyTorchJob (tenant_gangs), so a
declaration means the same on the host and inside a tenant; the placement checker models it for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kaistack.declaration import kai_api

if TYPE_CHECKING:
    from kaistack.declaration.model import ClusterTopology, StackConfig, TopologyPlacement, Workload

MASTER = "master"
WORKER = "worker"


@dataclass(frozen=True, slots=True)
class SubGroupSpec:
    """One spec.subGroups entry: a pod set (min_member) or, with children, a set of subgroups (min_sub_group)."""

    name: str
    parent: str | None = None
    min_member: int | None = None
    min_sub_group: int | None = None
    required: str | None = None
    preferred: str | None = None

    @property
    def constrained(self) -> bool:
        return self.required is not None or self.preferred is not None


def gang_minimum(work: Workload) -> int:
    """runPolicy.schedulingPolicy.minAvailable as kaistack writes it: declared, else every replica."""
    return min(work.pytorch.min_available or work.pod_count, work.pod_count)


def pytorch_sub_groups(work: Workload) -> tuple[SubGroupSpec, ...]:
    masters, workers = work.pytorch.master, work.pytorch.workers
    groups: list[SubGroupSpec] = []
    if masters:
        groups.append(SubGroupSpec(MASTER, min_member=masters))
    if not workers:
        return tuple(groups)
    worker_minimum = max(0, gang_minimum(work) - masters)
    size = work.pytorch.segment_size
    if size is None:
        groups.append(SubGroupSpec(WORKER, min_member=worker_minimum))
        return tuple(groups)
    count = -(-workers // size)
    mandatory = -(-worker_minimum // size)
    groups.append(SubGroupSpec(WORKER, min_sub_group=count))
    placement = work.pytorch.segment_topology
    for i in range(count):
        members = size if i < count - 1 or workers % size == 0 else workers % size
        groups.append(
            SubGroupSpec(
                f"{WORKER}-{i}",
                parent=WORKER,
                min_member=members if i < mandatory else 0,
                required=placement.required if placement else None,
                preferred=placement.preferred if placement else None,
            )
        )
    return tuple(groups)


def pytorch_pod_sub_group(work: Workload, index: int) -> str:
    """The leaf subgroup of pod `index` (masters first, then workers by replica index)."""
    masters = work.pytorch.master
    if index < masters:
        return MASTER
    size = work.pytorch.segment_size
    return WORKER if size is None else f"{WORKER}-{(index - masters) // size}"


def constraint(topology: ClusterTopology, placement: TopologyPlacement) -> dict[str, str]:
    """A PodGroup topologyConstraint (scheduling.run.ai/v2alpha2), the unset levels left out."""
    body = {"topology": topology.name}
    if placement.required is not None:
        body["requiredTopologyLevel"] = placement.required
    if placement.preferred is not None:
        body["preferredTopologyLevel"] = placement.preferred
    return body


def topology_annotations(config: StackConfig, work: Workload) -> dict[str, str]:
    """What KAI's default grouper reads from a top owner into spec.topologyConstraint.

    pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go `GetPodGroupMetadata` (lines 87-89).
    """
    topology, placement = config.cluster.topology, work.topology
    if topology is None or placement is None:
        return {}
    annotations = {kai_api.TOPOLOGY: topology.name}
    if placement.required is not None:
        annotations[kai_api.TOPOLOGY_REQUIRED_PLACEMENT] = placement.required
    if placement.preferred is not None:
        annotations[kai_api.TOPOLOGY_PREFERRED_PLACEMENT] = placement.preferred
    return annotations


def segment_annotations(config: StackConfig, work: Workload) -> dict[str, str]:
    """What the PyTorch grouper reads from the Worker template to build segment subgroups.

    The topology name goes on the template too: on the top owner alone it would also give the whole job
    a constraint without levels, which KAI refuses (job_filtering.go calculateRelevantDomainLevels).
    """
    size = work.pytorch.segment_size
    if work.kind != "PyTorchJob" or size is None:
        return {}
    annotations = {kai_api.SEGMENT_SIZE: str(size)}
    topology, placement = config.cluster.topology, work.pytorch.segment_topology
    if topology is not None and placement is not None:
        annotations[kai_api.TOPOLOGY] = topology.name
        if placement.required is not None:
            annotations[kai_api.SEGMENT_TOPOLOGY_REQUIRED_PLACEMENT] = placement.required
        if placement.preferred is not None:
            annotations[kai_api.SEGMENT_TOPOLOGY_PREFERRED_PLACEMENT] = placement.preferred
    return annotations


def topology_manifest(config: StackConfig) -> dict[str, Any] | None:
    """The cluster-scoped Topology object (CRD kai.scheduler_topologies.yaml at v0.17.0), or None."""
    topology = config.cluster.topology
    if topology is None:
        return None
    return {
        "apiVersion": kai_api.TOPOLOGY_CRD.api_version,
        "kind": kai_api.TOPOLOGY_CRD.kind,
        "metadata": {"name": topology.name},
        "spec": {"levels": [{"nodeLabel": level} for level in topology.levels]},
    }
