"""What the rules need to know about the stack: declared leaf queues, tenants, KAI settings, GPUs.

Sources, in the order callers prefer them:
- the stack model, loaded through kaistack.stack.load (`kaistack lint --stack`; the policy pack
  loads the `PULUMI_CONFIG` the engine sets for its process: pulumi `analyzer_plugin.go` `constructEnv`);
- the Platform component's props (`nodePools`, `kai`, `tenants`; docs/architecture.md), for stack
  policies, which see every resource;
- the Queue resources of the stack (kai-queue-tree, kai-capacity).
When nothing is known, `leaf_queues`/`tenants` stay None and rules only check what needs no stack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kaistack.declaration import kai_api
from kaistack.declaration.marks import PLATFORM_TYPE, TENANT_TYPE
from kaistack.declaration.tenant_gangs import tenant_gang_names
from kaistack.guardrails.podspec import Res, Workload, mapping, seq, tenant_label, urn_types

DEFAULT_QUEUE_LABEL = kai_api.QUEUE_LABEL
LEGACY_QUEUE_LABEL = kai_api.LEGACY_QUEUE_LABEL


@dataclass(frozen=True)
class TenantFacts:
    name: str
    namespace: str  # the tenant's vCluster host namespace
    queues: tuple[str, ...]
    pod_groups: tuple[str, ...] = ()  # host-side PodGroups of the tenant's gangs (tenant_gangs)


@dataclass(frozen=True)
class StackFacts:
    leaf_queues: frozenset[str] | None = None
    queue_label_key: str = DEFAULT_QUEUE_LABEL
    tenants: tuple[TenantFacts, ...] | None = None
    gpu_sharing: bool | None = None
    # kai.sharing 'isolated': HAMi-core shows each container only its share's memory (KAI@v0.17.0
    # docs/gpu-sharing/hami/README.md), so vLLM's utilization is of the share, not of the GPU.
    memory_isolated: bool = False
    # Memory (MiB) of one GPU in each GPU node pool; the utilization rule uses the largest.
    gpu_memory_mib: tuple[int, ...] = ()
    # The Platform component's camelCase `nodePools` summary (kai-capacity's node capacity).
    node_pools: tuple[Mapping[str, Any], ...] | None = None
    source: str = ""

    def tenant(self, name: str) -> TenantFacts | None:
        return next((t for t in self.tenants or () if t.name == name), None)


def facts_from_stack(config: Any, source: str = "") -> StackFacts:
    """From a kaistack.declaration.model.StackConfig (duck-typed so this module imports no pydantic)."""
    fake_mib = config.gpu.fake.gpu_memory_mi_b if config.gpu.mode == "fake" else None
    memory = [p.gpu_memory_mi_b or fake_mib for p in config.cluster.node_pools if p.gpu_count]
    return StackFacts(
        leaf_queues=frozenset(config.leaf_queue_names()),
        queue_label_key=config.kai.queue_label_key,
        tenants=tuple(
            TenantFacts(t.name, t.host_namespace, tuple(t.queues), tuple(tenant_gang_names(config, t)))
            for t in config.tenants
        ),
        gpu_sharing=config.kai.gpu_sharing,
        memory_isolated=config.kai.memory_isolation,
        gpu_memory_mib=tuple(int(m) for m in memory if m),
        node_pools=tuple(p.model_dump(by_alias=True, mode="json") for p in config.cluster.node_pools),
        source=source,
    )


def platform_props(resources: Sequence[Res]) -> Mapping[str, Any] | None:
    return next((r.props for r in resources if r.type == PLATFORM_TYPE), None)


def facts_from_platform(props: Mapping[str, Any], base: StackFacts) -> StackFacts:
    """Overlay the Platform component's summary on `base` (it describes the stack being deployed)."""
    kai = mapping(props.get("kai"))
    tenants = [mapping(t) for t in seq(props.get("tenants"))]
    pools = [mapping(p) for p in seq(props.get("nodePools"))]
    facts = base
    if kai.get("queueLabelKey"):
        facts = replace(facts, queue_label_key=str(kai["queueLabelKey"]))
    if isinstance(kai.get("gpuSharing"), bool):
        facts = replace(facts, gpu_sharing=kai["gpuSharing"])
    if isinstance(kai.get("sharing"), str):
        facts = replace(facts, memory_isolated=kai["sharing"] == "isolated")
    if tenants:
        facts = replace(
            facts,
            tenants=tuple(
                TenantFacts(
                    name=str(t.get("name")),
                    namespace=str(t.get("namespace") or f"vcluster-{t.get('name')}"),
                    queues=tuple(str(q) for q in seq(t.get("queues"))),
                )
                for t in tenants
            ),
        )
    if pools:
        memory = tuple(
            int(p["gpuMemoryMiB"])
            for p in pools
            if isinstance(p.get("gpuMemoryMiB"), int | float) and isinstance(p.get("gpus"), int | float) and p["gpus"]
        )
        facts = replace(facts, node_pools=tuple(pools), gpu_memory_mib=memory or facts.gpu_memory_mib)
    return replace(facts, source=facts.source or "Platform component")


# --- whose workload is it ------------------------------------------------------------------------

TENANT_COMPONENT = TENANT_TYPE  # components/tenant.py: the vCluster and its provider


def _named_tenant(name: str, tenants: Sequence[TenantFacts], *, child: bool) -> str | None:
    """The tenant a Tenant component (`<platform>-<tenant>`) or its child (`<platform>-<tenant>-<what>`, a single
    word: namespace, quota, vcluster, kubeconfig, service, provider) is named for: the longest tenant name that ends
    the name (a child's without its last word), after at least one word of platform name, in whole dash-separated
    words. `ml` and `ml-prod` both end `kaistack-ml-prod`; a tenant named `provider`, or like the platform, is no
    part of `kaistack-ml-provider`."""
    words = name.split("-")
    end = len(words) - 1 if child else len(words)
    found = [
        t.name for t in tenants if len(wanted := t.name.split("-")) < end and words[end - len(wanted) : end] == wanted
    ]
    return max(found, key=lambda n: n.count("-")) if found else None


def _tenant_scoped_name(urn: str | None) -> tuple[str, bool]:
    """The name in a URN (or provider reference `<urn>::<id>`) of a Tenant component or its child, and whether it
    is a child; ("", False) for anything else."""
    parts = urn.split("::") if urn and urn.startswith("urn:") else []
    types = urn_types("::".join(parts[:4])) if len(parts) >= 4 else []
    if TENANT_COMPONENT not in types:
        return "", False
    return parts[3], types[-1] != TENANT_COMPONENT


HOST_NAMESPACE = "host namespace"


def through_vcluster(wl: Workload, tenants: Sequence[TenantFacts]) -> bool:
    """Whether the workload goes through a tenant's vCluster, so the host sees bare pods (setOwner: false) and
    KAI reads only the pod's labels. One written straight into a tenant's host namespace keeps its owners
    there, and KAI's pod-grouper reads the top owner's labels first, whatever tenant label it carries."""
    if _tenant_provider(wl, tenants) is not None:
        return True
    if any(wl.namespace == t.namespace for t in tenants):
        return False
    if _host_provider(wl.res.provider):
        # Deployed through kaistack's own cluster provider: the host's, whatever its tenant label says, and
        # there the pod-grouper reads the top owner's labels first. (The engine gives every resource some
        # provider, a default one included, so only this one is known to be the host's.)
        return False
    return bool(tenant_label(wl))


# The components that create the provider every host object of a kaistack stack goes through.
_CLUSTER_COMPONENTS = ("kaistack:index:KindCluster", "kaistack:index:EksCluster", "kaistack:index:ExistingCluster")


def _host_provider(reference: str | None) -> bool:
    """A provider reference (`<urn>::<id>`) to the Kubernetes provider one of kaistack's cluster components made."""
    return bool(reference) and any(t in _CLUSTER_COMPONENTS for t in urn_types(str(reference)))


def _tenant_provider(wl: Workload, tenants: Sequence[TenantFacts]) -> tuple[str, str] | None:
    """The tenant whose vCluster provider or Tenant component created the workload, and which one."""
    for via, urn in (("provider", wl.res.provider), ("parent", wl.res.parent)):
        name, child = _tenant_scoped_name(urn)
        tenant = _named_tenant(name, tenants, child=child) if name else None
        if tenant is not None:
            return tenant, f"{via} {name}"
    return None


def workload_tenant(wl: Workload, tenants: Sequence[TenantFacts]) -> tuple[str | None, str]:
    """Which tenant a workload belongs to, and how we know, in the order that decides where its pods land:
    the vCluster provider / Tenant component it was created through, the host namespace it is written
    into, then its kaistack.io/tenant label."""
    provider = _tenant_provider(wl, tenants)
    if provider is not None:
        return provider
    for t in tenants:
        if wl.namespace == t.namespace:
            return t.name, f"{HOST_NAMESPACE} {t.namespace}"
    label = tenant_label(wl)
    return (label, "label kaistack.io/tenant") if label else (None, "")
