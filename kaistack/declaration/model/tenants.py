"""Tenants: one vCluster each, in its own host namespace, scheduled by the host's KAI through its queues."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from kaistack.declaration import limits, quota_names, versions
from kaistack.declaration.model.base import Model, Name, Text
from placement.quantity import Quantity


def _quota_key(key: str) -> str:
    problem = quota_names.name_problem(key)
    if problem:
        raise ValueError(problem)
    return key


def _quota_value(value: str | int) -> str | int:
    Quantity.parse(value)  # QuantityError is a ValueError that quotes the value and says what is allowed
    return value


# The API server refuses the whole ResourceQuota for one bad entry, at `pulumi up`, after the chart's namespace
# exists (kaistack.declaration.quota_names); whole numbers for counts are checked with the need (tenant_sizing).
QuotaKey = Annotated[Text, AfterValidator(_quota_key)]
QuotaValue = Annotated[Text | int, AfterValidator(_quota_value)]


class TenantResourceQuota(Model):
    enabled: bool = Field(default=True, description="Render vCluster's ResourceQuota in the host namespace")
    quota: Annotated[dict[QuotaKey, QuotaValue], Field(max_length=limits.MAX_LIST_ITEMS)] = Field(
        default_factory=dict, description="Overrides of the quota map (Kubernetes quantities)"
    )


class TenantIsolation(Model):
    pod_security_standard: Literal["privileged", "baseline", "restricted"] | None = Field(
        default="baseline", description="Pod Security Standard for the tenant's namespaces"
    )
    resource_quota: TenantResourceQuota = Field(default=TenantResourceQuota(), description="Host-side ResourceQuota")
    limit_range: bool = Field(default=True, description="Render vCluster's LimitRange")
    network_policy: bool = Field(default=True, description="Render vCluster's NetworkPolicies")

    @model_validator(mode="after")
    def _quota_needs_the_limit_range(self) -> TenantIsolation:
        # The chart's quota charges limits.cpu, so the API server refuses any container without a cpu limit,
        # the vCluster's own first (loft-sh/vcluster@v0.36.1 chart/values.yaml controlPlane.statefulSet.
        # resources sets none; the same at v0.37.0-rc.1): the release would wait out its timeout.
        if not self.limit_range and self.resource_quota.enabled:
            raise ValueError(
                "limitRange: false needs resourceQuota.enabled: false as well: the quota charges limits.cpu and "
                "limits.memory, so without the LimitRange's defaults every container must set both, and the "
                "vCluster's own container sets no cpu limit (it would never start)"
            )
        return self


class VClusterSettings(Model):
    version: Text = Field(default=versions.VCLUSTER_VERSION, description="vCluster chart version (no 'v')")
    # Expose real node labels (nvidia.com/gpu.product, ...) inside the tenant.
    sync_nodes: bool = Field(default=False, description="Show the real nodes (and their GPU labels) inside")
    # The virtual API server's minor. Unset it follows the host, where kaistack knows the host's (kind's node
    # image, cluster.eks.version); on an existing cluster vCluster's own default (1.36) runs.
    kubernetes: Text | None = Field(
        default=None, description="Virtual Kubernetes minor, e.g. '1.33' (default: the host's; existing: 1.36)"
    )

    @field_validator("kubernetes")
    @classmethod
    def _known_kubernetes(cls, value: str | None) -> str | None:
        if value is not None and value not in versions.VCLUSTER_KUBERNETES:
            supported = ", ".join(versions.VCLUSTER_KUBERNETES)
            raise ValueError(f"{value!r} is not a Kubernetes minor vCluster runs; supported: {supported}")
        return value

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: str) -> str:
        if value not in versions.VCLUSTER_VERSIONS:
            known = ", ".join(f"{v} ({why.split(',')[0]})" for v, why in versions.VCLUSTER_VERSIONS.items())
            raise ValueError(f"{value!r} is not a vCluster chart kaistack has checked at source; supported: {known}")
        return value


class Tenant(Model):
    name: Name = Field(description="Tenant name: the vCluster release and its kubeconfig Secret vc-<name>")
    namespace: Name | None = Field(default=None, description="Host namespace (default vcluster-<name>)")
    # Required and non-empty: a tenant with no list would otherwise be allowed every queue.
    queues: Annotated[list[Name], Field(min_length=1, max_length=limits.MAX_LIST_ITEMS)] = Field(
        description="Leaf queues the tenant's pods may use (at least one; the only queues they may use)"
    )
    vcluster: VClusterSettings = Field(default=VClusterSettings(), description="vCluster release")
    isolation: TenantIsolation = Field(default=TenantIsolation(), description="Quota, limits, policies")
    # How the Pulumi host reaches the vCluster API: kind maps a NodePort to localhost; elsewhere give
    # the URL the vCluster API is reachable at (LoadBalancer/Ingress).
    node_port: int | None = Field(default=None, ge=30000, le=32767, description="kind: the API's NodePort")
    api_server_url: Text | None = Field(default=None, description="Where the vCluster API is reachable (not kind)")

    @property
    def host_namespace(self) -> str:
        return self.namespace or f"vcluster-{self.name}"


# KAI names a GPU share's ConfigMaps `<prefix>-<7 random characters>-shared-gpu-<container>[-evar]`
# (KAI@v0.17.0 pkg/binder/common/gpusharingconfigmap/config_map.go:113-168) and vCluster names a tenant's synced
# ConfigMaps `<name>-x-<namespace>-x-<tenant>` (loft-sh/vcluster@v0.36.1 pkg/util/translate/single_namespace.go:59-64):
# only a tenant name holding KAI's word can end one of those like one of KAI's (kaistack.guardrails.admission_cel).
KAI_CONFIGMAP_WORD = "shared-gpu"


def tenant_name_problems(tenants: list[Tenant], gpu_sharing: bool) -> list[str]:
    if not gpu_sharing:
        return []
    return [
        f"tenants[{i}].name: {t.name!r} holds {KAI_CONFIGMAP_WORD!r}, the word KAI's GPU sharing names a share's "
        "ConfigMaps with; vCluster ends the names of the tenant's own ConfigMaps with the tenant's name, so one "
        "could stand in for KAI's: choose another name"
        for i, t in enumerate(tenants)
        if KAI_CONFIGMAP_WORD in t.name
    ]
