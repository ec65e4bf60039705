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
Caveat at v0.17.0: the scheduler's pod informer drops Succeeded pods, so while the first pods of a gang
finish, KAI can see it below minMember and evict the rest (later KAI counts Succeeded pods).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from kaistack.declaration import kai_api
from kaistack.declaration.marks import TENANT_LABEL

if TYPE_CHECKING:
    from kaistack.declaration.model import StackConfig, Tenant, Workload

GANG_KINDS = ("PyTorchJob",)
MAX_NAME = 63


def is_tenant_gang(work: Workload) -> bool:
    return work.tenant is not None and work.kind in GANG_KINDS


def gang_name(work: Workload) -> str:
    """`kaistack-<tenant>-<namespace>-<name>`, cut to 63 characters with a hash when longer."""
    name = f"kaistack-{work.tenant}-{work.namespace}-{work.name}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[: MAX_NAME - 11].rstrip('-')}-{digest}"


def min_member(work: Workload) -> int:
    return min(work.pytorch.min_available or work.pod_count, work.pod_count)


def tenant_gang_names(config: StackConfig, tenant: Tenant) -> list[str]:
    return [gang_name(w) for w in config.workloads if w.tenant == tenant.name and is_tenant_gang(w)]


def pod_annotations(work: Workload) -> dict[str, str]:
    """What each pod of a tenant gang carries, so the host's scheduler puts it in the gang."""
    return {kai_api.POD_GROUP_NAME: gang_name(work), kai_api.SKIP_PODGROUPER: "true"}


def pod_group(config: StackConfig, work: Workload, priority_class: str) -> dict[str, Any]:
    """The host-side PodGroup for a tenant gang (CRD scheduling.run.ai_podgroups.yaml at v0.17.0)."""
    tenant = config.tenant(str(work.tenant))
    return {
        "apiVersion": f"{kai_api.POD_GROUP.group}/{kai_api.POD_GROUP.version}",
        "kind": kai_api.POD_GROUP.kind,
        "metadata": {
            "name": gang_name(work),
            "namespace": tenant.host_namespace,
            "labels": {TENANT_LABEL: tenant.name},
        },
        "spec": {
            "queue": config.queue_of(work),
            "minMember": min_member(work),
            "priorityClassName": priority_class,
        },
    }
