"""ResourceQuota resource names as the API server validates them and as its evaluators charge them.

kubernetes/kubernetes has no snapshot here (the repository is over fetch's size limit); read from the search
index's copies: pkg/apis/core/helper/helpers.go at 00010901c746 (standardQuotaResources, integerResources,
IsExtendedResourceName, IsNativeResource); pkg/apis/core/validation/validation.go (ValidateResourceQuotaResourceName:
a qualified name, and one without "/" must be a standard one; ValidateResourceQuantityValue: non-negative, whole for
the integer resources; alike in every version the index holds); pkg/quota/v1/evaluator/core/pods.go at 05e7cb29dcda
(podComputeUsageHelper charges `cpu` as `requests.cpu`, memory and ephemeral-storage alike; PodUsageFunc charges
`pods` for every pod not yet finished, `count/pods` for every pod stored).
"""

from __future__ import annotations

from placement.k8s_names import is_qualified_name

__all__ = ["SAME_AS", "STANDARD", "is_integer", "name_problem"]

STANDARD = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.storage",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "persistentvolumeclaims",
        "configmaps",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_INTEGER = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
# The short names charged exactly as a key kaistack derives: an entry under either caps the same thing.
# (`pods` leaves out finished pods, which kaistack's need does not count either.)
SAME_AS = {
    "cpu": "requests.cpu",
    "memory": "requests.memory",
    "ephemeral-storage": "requests.ephemeral-storage",
    "pods": "count/pods",
    "services": "count/services",
    "secrets": "count/secrets",
    "configmaps": "count/configmaps",
    "persistentvolumeclaims": "count/persistentvolumeclaims",
}


def _hugepages(name: str) -> bool:
    return name.startswith(("hugepages-", "requests.hugepages-"))


def name_problem(name: str) -> str | None:
    """Why the API server refuses `name` in a ResourceQuota's hard map, or None."""
    if not is_qualified_name(name):
        return "not a qualified name (an optional DNS subdomain and '/', then up to 63 letters, digits, '-', '_', '.')"
    if "/" not in name and name not in STANDARD and not _hugepages(name):
        return f"not a standard quota resource ({', '.join(sorted(STANDARD))}, hugepages-<size>), nor a name with '/'"
    return None


def is_integer(name: str) -> bool:
    """Counted in whole units: the object counts and every extended resource (a name with '/' outside
    kubernetes.io, `count/pods` among them, that `requests.` + it is a qualified name)."""
    if name in _INTEGER:
        return True
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.") and is_qualified_name("requests." + name)
