"""Ephemeral storage in the capacity check: what each node offers and what each pod asks, where both are known.

KAI compares a pod with a node on every allocatable dimension, ephemeral storage included (KAI@v0.17.0
pkg/scheduler/api/resource_info/resource_requirment.go L66-67, node_info.go L755-761). The checker can do the
same only when it knows every node's allocatable: declared per pool (`nodePools[].ephemeralStorage`), read from
an existing cluster's nodes (kaistack.stack.existing), or derived from the root volume on EKS. On kind a node
offers the host's disk, which the declaration does not say, so there it is not checked.
"""

from __future__ import annotations

from kaistack.declaration import tenant_sizing, training_operator
from kaistack.declaration.model import NodePool, StackConfig, Workload
from kaistack.declaration.model.cluster import SYSTEM_NODE_DISK_GIB

RESOURCE = "ephemeral-storage"
GiB = 2**30


def eks_allocatable(disk_gib: int) -> int:
    """An EKS AL2023 node's allocatable on a root volume of `disk_gib`: nodeadm reserves 1Gi for the kubelet
    (kubeReserved) and evicts below 10% free (evictionHard nodefs.available), both off the root filesystem
    (awslabs/amazon-eks-ami@v20260724 nodeadm/internal/kubelet/config.go L110-113, L283-287). An upper bound:
    the filesystem is a little smaller than its volume."""
    return disk_gib * GiB * 9 // 10 - GiB


def pool_allocatable(config: StackConfig, pool: NodePool) -> int | None:
    """Bytes one node of the pool offers, or None where the declaration cannot say."""
    if pool.ephemeral_storage is not None:
        return int(pool.ephemeral_storage.value)
    eks = config.cluster.eks
    if config.cluster.provider == "eks" and eks is not None:
        return eks_allocatable(eks.gpu_node_disk_gi_b if pool.gpu_count else SYSTEM_NODE_DISK_GIB)
    return None


def system_allocatable() -> int:
    """An EKS system node's (components.cluster_eks gives the group SYSTEM_NODE_DISK_GIB)."""
    return eks_allocatable(SYSTEM_NODE_DISK_GIB)


def pod_request(config: StackConfig, work: Workload, index: int) -> int:
    """Bytes pod `index` of the workload asks for: what it declares; in a tenant whose LimitRange is on, the
    LimitRange's default for a container that declares none, and for the training operator's init container
    on a PyTorchJob worker (the pod asks for the larger of its containers and an init container)."""
    if work.tenant is None or not config.tenant(work.tenant).isolation.limit_range:
        return int(work.ephemeral_storage.value) if work.ephemeral_storage is not None else 0
    # The pod as the LimitRange fills it in (the quota's view of it too).
    request = int(tenant_sizing.pod_shape(work).requests[RESOURCE])
    default = int(tenant_sizing.LIMIT_RANGE_DEFAULT_REQUEST[RESOURCE])
    if training_operator.has_init_container(work.kind, work.pytorch.master, index):
        request = max(request, default)
    return request


def unknown_pools(config: StackConfig) -> list[str]:
    """The pools with nodes whose allocatable the declaration does not give (none on EKS)."""
    return [p.name for p in config.cluster.node_pools if p.count and pool_allocatable(config, p) is None]


# Why a pool's allocatable is not known, by provider (an EKS pool's comes from its root volume), for plan's note.
UNKNOWN_WHY = {
    "kind": "a kind node offers the host's disk",
    "existing": "the nodes' allocatable ephemeral storage is not declared",
    "eks": "the node group's root volume is not known",
}
