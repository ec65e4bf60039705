"""KAI's scalar resources: what a node offers and a pod asks besides cpu, memory, GPUs and MIG devices.

KAI@v0.17.0 builds one resource vector per session from every resource name a node's allocatable or a pod's
request names (cluster_info.go:284, 532; resource_vector.go:178-182), and compares a pod with a node on every
dimension (node_info.go:347-359, 755-761): an RDMA device, hugepages or ephemeral storage a pod asks for must be
free on the node, exactly like CPU. Queues never count them (the proportion plugin reads cpu, memory, GPUs).

Which names count, and in what unit, is resource_info.RequirementsFromResourceList (resource_requirment.go:
45-70) for pods and ResourceFromResourceList (resource_info.go:53-79) for nodes:
- Kubernetes' scalar resource names (k8s_internal.IsScalarResourceName: extended resources such as
  `rdma/ib` or `example.com/fpga`, `hugepages-*`, `*kubernetes.io/*`, `attachable-volumes-*`) in thousandths
  (MilliValue);
- `ephemeral-storage` and `storage` in bytes (Value).
Every other name KAI ignores, and so does the simulator: `cpu`, `memory`, `pods`, the GPU and MIG names
(their own fields) and unqualified names such as `foo`. A name that ends in `nvidia.com/gpu` other than the GPU
itself is folded into the GPU dimension by KAI's vector map (resource_vector.go:196-205); kaistack leaves such
names out rather than guess at what that overwrite does.
"""

from __future__ import annotations

from placement.k8s_names import is_qualified_name
from placement.quantity import Quantity

__all__ = ["counted", "in_bytes", "is_scalar_resource_name", "kai_units"]

_GPU_SUFFIX = "nvidia.com/gpu"
_BYTES = ("ephemeral-storage", "storage")


def is_scalar_resource_name(name: str) -> bool:
    """k8s_internal.IsScalarResourceName (kubernetes pkg/apis/core/v1/helper/helpers.go)."""
    if name.startswith(("hugepages-", "attachable-volumes-")) or "kubernetes.io/" in name:
        return True
    # IsExtendedResourceName: not native (a "/" and not kubernetes.io/), no "requests." prefix, and
    # "requests." + name is a qualified name.
    return "/" in name and not name.startswith("requests.") and is_qualified_name("requests." + name)


def counted(name: str) -> bool:
    """Whether KAI's vector carries this name as a scalar dimension of its own."""
    if name in _BYTES:
        return True
    if name.endswith(_GPU_SUFFIX) or name.startswith("nvidia.com/mig-") or name == "amd.com/gpu":
        return False
    return is_scalar_resource_name(name)


def in_bytes(name: str) -> bool:
    """Whether KAI keeps this resource in bytes (else in thousandths)."""
    return name in _BYTES


def kai_units(name: str, quantity: object) -> int:
    """The quantity in KAI's unit for the name: bytes for (ephemeral-)storage, thousandths otherwise.
    QuantityError if it is not a quantity."""
    parsed = Quantity.parse(quantity)
    return parsed.units if in_bytes(name) else parsed.millis
