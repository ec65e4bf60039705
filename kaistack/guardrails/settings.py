"""Policy-pack configuration: the JSON schema of each policy's knobs, and their defaults in code.

The SDK neither applies schema `default`s nor calls `Configure` unless the engine does (pulumi.md
§6.2), so every default lives here and `settings(config)` is total over partial or empty config.
`enforcementLevel` is reserved by the engine and never appears in these schemas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kaistack.declaration import kai_api
from kaistack.declaration.model_servers import UTILIZATION_ENV_VARS, VLLM_DEFAULT_UTILIZATION
from kaistack.guardrails.facts import TenantFacts
from kaistack.guardrails.podspec import DEFAULT_EXEMPT_NAMESPACES, mapping, seq

KAI_SCHEDULER = kai_api.SCHEDULER_NAME

_STRINGS = {"type": "array", "items": {"type": "string"}}
PROPERTIES: dict[str, dict[str, Any]] = {
    "exemptNamespaces": {
        **_STRINGS,
        "default": list(DEFAULT_EXEMPT_NAMESPACES),
        "description": "Namespaces whose workloads are not checked (the platform's own charts).",
    },
    "schedulerName": {"type": "string", "default": KAI_SCHEDULER, "description": "KAI's scheduler name."},
    "requireInTenantNamespaces": {
        "type": "boolean",
        "default": False,
        "description": "Require schedulerName of every workload of a tenant (label kaistack.io/tenant or a "
        "namespace in tenantNamespaces), not only GPU workloads.",
    },
    "tenantNamespaces": {**_STRINGS, "default": [], "description": "Namespaces that belong to tenants."},
    "queues": {
        **_STRINGS,
        "description": "Declared leaf queues; default: the stack's kaistack:queues (plus KAI's default queue).",
    },
    "queueLabelKey": {
        "type": "string",
        "description": "Default: kaistack:kai.queueLabelKey, else kai.scheduler/queue.",
    },
    "tenants": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}, "queues": _STRINGS},
            "required": ["name"],
        },
        "description": "Tenants and their queues; default: the Platform component's tenants, else kaistack:tenants.",
    },
    "vclusterCharts": {**_STRINGS, "default": ["vcluster"], "description": "Chart names that are vCluster."},
    "nodeGpuMemoryMiB": {
        "type": "integer",
        "minimum": 1,
        "description": "Memory of one GPU (MiB) to turn gpu-memory into a share; default: the largest GPU of "
        "the stack's node pools.",
    },
    "vllmDefaultUtilization": {
        "type": "number",
        "default": VLLM_DEFAULT_UTILIZATION,
        "description": "What vLLM takes without --gpu-memory-utilization.",
    },
    "utilizationEnvVars": {
        **_STRINGS,
        "default": list(UTILIZATION_ENV_VARS),
        "description": "Environment variables that set a server's GPU memory utilization.",
    },
    "externalQueues": {
        **_STRINGS,
        "default": [],
        "description": "Queues created outside the stack that Queue resources may name as parentQueue.",
    },
    "maxSeconds": {
        "type": "number",
        "exclusiveMinimum": 0,
        "description": "Stop the capacity simulation after about this many seconds (a stopped one is a finding: no "
        "verdict); the stack's kai.capacityCheckMaxSeconds bounds it too, the smaller applies. Default: none.",
    },
}

# Which knobs each policy accepts (its config_schema).
POLICY_KNOBS: dict[str, tuple[str, ...]] = {
    "kai-scheduler-name": (
        "exemptNamespaces",
        "schedulerName",
        "requireInTenantNamespaces",
        "tenantNamespaces",
        "queueLabelKey",
    ),
    "kai-queue-label": ("exemptNamespaces", "schedulerName", "queues", "queueLabelKey"),
    "vcluster-set-owner-false": ("vclusterCharts",),
    "kai-gpu-sharing-annotations": ("exemptNamespaces",),
    "kai-gpu-sharing-enabled": ("exemptNamespaces",),
    "kai-no-bypass": ("exemptNamespaces", "schedulerName", "tenantNamespaces", "queueLabelKey"),
    "kai-unread-constraints": ("exemptNamespaces", "schedulerName"),
    "kai-fraction-container": ("exemptNamespaces",),
    "gpu-memory-utilization-within-fraction": (
        "exemptNamespaces",
        "nodeGpuMemoryMiB",
        "vllmDefaultUtilization",
        "utilizationEnvVars",
    ),
    "kai-queue-tree": ("externalQueues",),
    "kai-capacity": ("exemptNamespaces", "schedulerName", "maxSeconds"),
    "tenant-queue-binding": ("exemptNamespaces", "schedulerName", "tenants", "queueLabelKey"),
}


def config_schema(policy: str) -> dict[str, dict[str, Any]]:
    return {key: PROPERTIES[key] for key in POLICY_KNOBS[policy]}


@dataclass(frozen=True)
class Settings:
    exempt_namespaces: frozenset[str] = frozenset(DEFAULT_EXEMPT_NAMESPACES)
    scheduler_name: str = KAI_SCHEDULER
    require_in_tenant_namespaces: bool = False
    tenant_namespaces: frozenset[str] = frozenset()
    queues: frozenset[str] | None = None
    queue_label_key: str | None = None
    tenants: tuple[TenantFacts, ...] | None = None
    vcluster_charts: frozenset[str] = frozenset({"vcluster"})
    node_gpu_memory_mib: int | None = None
    vllm_default_utilization: float = VLLM_DEFAULT_UTILIZATION
    utilization_env_vars: tuple[str, ...] = UTILIZATION_ENV_VARS
    external_queues: frozenset[str] = frozenset()
    capacity_max_seconds: float | None = None


def settings(config: Mapping[str, Any] | None) -> Settings:
    """Settings from one policy's config (engine-validated against its schema; numbers are floats)."""
    config = mapping(config)
    defaults = Settings()

    def strings(key: str) -> tuple[str, ...] | None:
        if key not in config:
            return None
        value = config[key]
        if not isinstance(value, list | tuple) and not seq(value):
            raise ValueError(f"policy config {key}: expected a list of strings, got {value!r}")
        return tuple(str(v) for v in value)

    def number(key: str) -> float | None:
        value = config.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"policy config {key}: expected a number, got {value!r}")
        return float(value)

    exempt = strings("exemptNamespaces")
    tenant_ns = strings("tenantNamespaces")
    queues = strings("queues")
    charts = strings("vclusterCharts")
    env_vars = strings("utilizationEnvVars")
    external = strings("externalQueues")
    memory = number("nodeGpuMemoryMiB")
    default_util = number("vllmDefaultUtilization")
    max_seconds = number("maxSeconds")
    if max_seconds is not None and not 0 < max_seconds < float("inf"):
        raise ValueError(f"policy config maxSeconds: expected a positive number of seconds, got {max_seconds!r}")
    tenants = None
    if "tenants" in config:
        tenants = tuple(
            TenantFacts(
                name=str(mapping(t).get("name")),
                namespace=str(mapping(t).get("namespace") or f"vcluster-{mapping(t).get('name')}"),
                queues=tuple(str(q) for q in seq(mapping(t).get("queues"))),
            )
            for t in seq(config["tenants"])
        )
    return Settings(
        exempt_namespaces=frozenset(exempt) if exempt is not None else defaults.exempt_namespaces,
        scheduler_name=str(config.get("schedulerName") or defaults.scheduler_name),
        require_in_tenant_namespaces=bool(config.get("requireInTenantNamespaces", False)),
        tenant_namespaces=frozenset(tenant_ns or ()),
        queues=frozenset(queues) if queues is not None else None,
        queue_label_key=str(config["queueLabelKey"]) if config.get("queueLabelKey") else None,
        tenants=tenants,
        vcluster_charts=frozenset(charts) if charts is not None else defaults.vcluster_charts,
        node_gpu_memory_mib=int(memory) if memory else None,
        vllm_default_utilization=default_util if default_util is not None else defaults.vllm_default_utilization,
        utilization_env_vars=env_vars if env_vars is not None else defaults.utilization_env_vars,
        external_queues=frozenset(external or ()),
        capacity_max_seconds=max_seconds,
    )
