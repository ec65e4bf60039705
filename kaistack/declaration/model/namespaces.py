"""Host namespaces: a tenant's is its own, and the ones kaistack's platform components create are no one else's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kaistack.declaration import kai_api, training_operator

if TYPE_CHECKING:
    from kaistack.declaration.model.stack import StackConfig
    from kaistack.declaration.model.tenants import Tenant


def platform_namespaces(stack: StackConfig) -> dict[str, str]:
    """The host namespaces kaistack's platform components create, by whose: no tenant or workload may take one
    (components.workloads would create it a second time: AlreadyExists)."""
    taken = {ns: "kai.namespace" for ns in (stack.kai.namespace, kai_api.RESERVATION_NAMESPACE)}
    if stack.kai.memory_isolation:
        taken[kai_api.ISOLATOR_NAMESPACE] = "the memory isolator's (kai.sharing: isolated)"
    if stack.gpu.mode != "none":
        taken[stack.gpu.release_namespace] = "gpu.namespace (the GPU stack's)"
    if stack.cluster.training_operator:
        taken[training_operator.NAMESPACE] = "the training operator's (cluster.trainingOperator)"
    return taken


def namespace_problems(stack: StackConfig) -> list[str]:
    taken = platform_namespaces(stack)
    problems = host_namespace_problems(stack.tenants, taken)
    if stack.gpu.mode != "none" and stack.gpu.release_namespace in SYSTEM_NAMESPACES:
        # components.gpu creates the namespace (AlreadyExists here) and would delete it with the stack.
        problems.append(
            f"gpu.namespace: {stack.gpu.release_namespace!r} is the cluster's own namespace; kaistack creates the GPU "
            "stack's namespace and deletes it with the stack: name another (unset: by gpu.mode)"
        )
    for i, work in enumerate(stack.workloads):
        if work.tenant is None and work.namespace in taken:
            problems.append(
                f"workloads[{i}].namespace: {work.namespace!r} is {taken[work.namespace]} namespace, which "
                "kaistack creates with that component; use another namespace"
            )
    return problems


# Namespaces that are not a tenant's to take: the control plane's and the default one.
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def host_namespace_problems(tenants: Sequence[Tenant], taken: Mapping[str, str]) -> list[str]:
    """A tenant owns its host namespace: kaistack creates it, and the tenant's admission policy binds to it, so in
    KAI's namespace that policy would refuse KAI's own pods. `taken`: the platform's namespaces, by whose."""
    taken = {**taken, **{ns: "the cluster's own" for ns in SYSTEM_NAMESPACES}}
    problems, seen = [], dict[str, int]()
    for i, tenant in enumerate(tenants):
        ns = tenant.host_namespace
        if ns in seen:
            problems.append(
                f"tenants[{i}].namespace: {ns!r} is tenants[{seen[ns]}]'s host namespace too; each tenant needs its own"
            )
        elif ns in taken:
            problems.append(f"tenants[{i}].namespace: {ns!r} is {taken[ns]} namespace; give the tenant its own")
        seen.setdefault(ns, i)
    return problems
