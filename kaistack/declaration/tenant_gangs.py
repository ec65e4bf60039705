"""Gang scheduling inside a tenant: a host-side PodGroup that the tenant's synced pods join.

Why: vCluster syncs a tenant's PyTorchJob pods to the host as bare pods (`setOwner: false`), so KAI's
pod-grouper would make one PodGroup per pod and a 4-worker job could start with one worker holding a
GPU while the others wait. vCluster OSS cannot sync the PyTorchJob itself to the host (custom-resource
sync is a Pro feature at loft-sh/vcluster@v0.36.1: `pro.BuildProSyncers` is an empty stub).

The mechanism, at kai-scheduler/KAI-Scheduler@v0.17.0:
- kaistack creates, in the tenant's host namespace, PodGroup `scheduling.run.ai/v2alpha2` with
  `spec.queue` the tenant's queue and `spec.minMember` = master + workers (or minAvailable). The
  scheduler finds a pod's PodGroup by the `pod-group-name` annotation value alone, cluster-wide
  (pkg/scheduler/cache/cluster_info/indexers.go:17-26), so the name carries the tenant and is unique;
  the podgroup controller lists the pods in the PodGroup's namespace (pod_groups_to_pod.go:42-52).
- the PyTorchJob's pod templates carry `pod-group-name: <that name>` and
  `kai.scheduler/skip-podgrouper: "true"` (pkg/podgrouper/pod_controller.go:101-107, 247-253: the
  pod-grouper then leaves the pod alone); vCluster copies both annotations to the host pod.
- the host's admission policy lets a tenant's pod name only its own gangs (kaistack.guardrails.admission).
- the PodGroup carries the subgroups KAI's pod-grouper would give the same PyTorchJob on the host
  (`master`, `worker`; kaistack.declaration.subgroups) and the workload's topology constraint; each
  replica template labels its pods `kai.scheduler/subgroup-name: master|worker`, since no pod-grouper
  does it for them (with subgroups, KAI never schedules a pod that names none:
  pkg/scheduler/api/podgroup_info/job_info.go `setSubGroups`, InvalidSubGroupTasks). Before v0.17.0
  the PodGroup stays flat, as kaistack's topology and subgroup rules are v0.17.0's.
Caveat at v0.17.0: the scheduler's pod informer drops Succeeded pods, so while the first pods of a gang
finish, KAI can see it below minMember and evict the rest (later KAI counts Succeeded pods).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kaistack.declaration import kai_api, subgroups
from kaistack.declaration.marks import TENANT_LABEL
from kaistack.declaration.model.topology import kai_supports_topology
from kaistack.declaration.model.workloads import GANG_KINDS, gang_name, is_tenant_gang

if TYPE_CHECKING:
    from kaistack.declaration.model import StackConfig, Tenant, Workload

# Defined with the workload model, whose stack rules refuse two gangs of one name.
__all__ = ["GANG_KINDS", "gang_name", "is_tenant_gang"]


def min_member(work: Workload) -> int:
    return subgroups.gang_minimum(work)


def has_sub_groups(config: StackConfig, work: Workload) -> bool:
    """Whether the host PodGroup of this tenant gang has master/worker subgroups (KAI >= v0.17.0)."""
    return is_tenant_gang(work) and kai_supports_topology(config.kai.version)


def role_labels(config: StackConfig, work: Workload, role: str) -> dict[str, str]:
    """The subgroup label a replica template's pods carry (`role` is Master or Worker)."""
    if not has_sub_groups(config, work):
        return {}
    return {kai_api.SUBGROUP_LABEL: subgroups.MASTER if role == "Master" else subgroups.WORKER}


def tenant_gang_names(config: StackConfig, tenant: Tenant) -> list[str]:
    return [gang_name(w) for w in config.workloads if w.tenant == tenant.name and is_tenant_gang(w)]


def pod_annotations(work: Workload) -> dict[str, str]:
    """What each pod of a tenant gang carries, so the host's scheduler puts it in the gang."""
    return {kai_api.POD_GROUP_NAME: gang_name(work), kai_api.SKIP_PODGROUPER: "true"}


def pod_group(config: StackConfig, work: Workload, priority_class: str) -> dict[str, Any]:
    """The host-side PodGroup for a tenant gang (CRD scheduling.run.ai_podgroups.yaml at v0.17.0)."""
    tenant = config.tenant(str(work.tenant))
    spec: dict[str, Any] = {
        "queue": config.queue_of(work),
        "minMember": min_member(work),
        "priorityClassName": priority_class,
    }
    if work.preemptible is not None:
        # KAI reads preemptibility from the PodGroup alone (cluster_info.go:493, CalculatePreemptibility); the
        # pods' kai.scheduler/preemptibility label is copied there only by the pod-grouper, which skips these.
        spec["preemptibility"] = "preemptible" if work.preemptible else "non-preemptible"
    if has_sub_groups(config, work):
        spec["subGroups"] = [_sub_group(g) for g in subgroups.pytorch_sub_groups(work)]
    if config.cluster.topology is not None and work.topology is not None:
        spec["topologyConstraint"] = subgroups.constraint(config.cluster.topology, work.topology)
    return {
        "apiVersion": f"{kai_api.POD_GROUP.group}/{kai_api.POD_GROUP.version}",
        "kind": kai_api.POD_GROUP.kind,
        "metadata": {
            "name": gang_name(work),
            "namespace": tenant.host_namespace,
            "labels": {TENANT_LABEL: tenant.name},
        },
        "spec": spec,
    }


def _sub_group(group: subgroups.SubGroupSpec) -> dict[str, Any]:
    body: dict[str, Any] = {"name": group.name}
    if group.parent is not None:
        body["parent"] = group.parent
    if group.min_sub_group is not None:
        body["minSubGroup"] = group.min_sub_group
    else:
        body["minMember"] = group.min_member or 0
    return body
