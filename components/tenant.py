"""A tenant: a vCluster in its own host namespace, scheduled by the host's KAI, plus a provider for it.

Values validate against the vCluster 0.36.1 values.schema.json (tests/data/schemas/). KAI stays on
the host: vCluster must not set owner references (KAI's pod-grouper cannot follow them to the
vCluster Service) and must not run its own scheduler (vcluster-and-gpu.md §1.1, §1.4).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.podspec import TENANT_LABEL, gpu_runtime_class
from kaistack.declaration import versions
from kaistack.declaration.model import StackConfig
from kaistack.declaration.model import Tenant as TenantModel
from kaistack.declaration.tenant_sizing import exposure, tenant_quota
from kaistack.declaration.yaml_load import YamlInputError, load_one

# The chart grants its syncer pods/resize only `if ge (.Capabilities.KubeVersion.Minor|int) 35`
# (loft-sh/vcluster@v0.36.1 chart/templates/role.yaml:43-47; the same at v0.37.0-rc.1), and a managed
# control plane reports its minor as "35+" (EKS: Minor "15+" for v1.15.11-eks-af3caf), which sprig's int
# reads as 0: on EKS the syncer could not resize a host pod in place. Granted here as the chart would, from
# 1.35 or where kaistack cannot know the host's minor; below 1.35 vCluster's syncer resizes nothing
# (pkg/controllers/resources/pods/syncer.go:413-418) and the grant is left out, as the chart leaves it.
# Not the chart's `vc-<release>`: switching a stack from the chart's quota to this one creates this before the
# release's upgrade deletes that.
QUOTA_NAME = "kaistack-tenant-quota"
POD_RESIZE_RULE = {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch", "update"]}
RESIZE_FROM = (1, 35)


def _grants_resize(config: StackConfig) -> bool:
    minor = config.host_kubernetes_minor()
    return minor is None or tuple(int(p) for p in minor.split(".")) >= RESIZE_FROM


def kubeconfig_secret_name(tenant: TenantModel) -> str:
    """vCluster writes the tenant's admin kubeconfig to `vc-<release>` (exportKubeConfig.secret doc)."""
    return f"vc-{tenant.name}"


def uses_node_port(config: StackConfig, tenant: TenantModel) -> bool:
    return exposure(config, tenant) == "node-port"


def api_server_url(config: StackConfig, tenant: TenantModel) -> str | None:
    """The tenant API URL when known before deployment (None: the LoadBalancer's address, at run time)."""
    if tenant.api_server_url:
        return tenant.api_server_url
    if uses_node_port(config, tenant):
        return f"https://127.0.0.1:{config.tenant_node_port(tenant)}"
    return None


def _host(url: str) -> str:
    authority = url.split("://", 1)[-1].split("/", 1)[0]
    if authority.startswith("[") and "]" in authority:
        # An IPv6 literal (RFC 3986 3.2.2): vCluster makes a SAN that net.ParseIP cannot read a DNS name
        # (loft-sh/vcluster@v0.36.1 pkg/server/cert/cert.go addSANs), and the address would be missing from the
        # certificate.
        return authority[1 : authority.index("]")]
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def vcluster_values(config: StackConfig, tenant: TenantModel) -> dict[str, Any]:
    isolation = tenant.isolation
    from_host: dict[str, Any] = {
        # Keeps spec.priorityClassName on synced pods (KAI's train/inference/... classes are host
        # objects); without it vCluster clears the field (vcluster-and-gpu.md §1.3).
        "priorityClasses": {"enabled": True},
    }
    if tenant.vcluster.sync_nodes:
        from_host["nodes"] = {"enabled": True}
    if gpu_runtime_class(config):
        # Whole-GPU pods name the host's RuntimeClass; the virtual API server's RuntimeClass admission
        # refuses a pod whose class it does not have, and vCluster syncs none by default.
        from_host["runtimeClasses"] = {"enabled": True}
    control_plane: dict[str, Any] = {
        # Both spellings of the virtual scheduler stay off: the host's KAI schedules tenant pods.
        "advanced": {"virtualScheduler": {"enabled": False}},
        "distro": {"k8s": {"scheduler": {"enabled": False}}},
    }
    kubernetes = config.vcluster_kubernetes(tenant)
    if kubernetes is not None:
        # The host's minor unless the tenant names one: a newer virtual API accepts pod fields the host
        # drops (versions.VCLUSTER_KUBERNETES).
        control_plane["distro"]["k8s"]["version"] = kubernetes
    policies: dict[str, Any] = {
        # The quota is kaistack's own object (quota_hard): the chart hashes all its values into the vCluster pod
        # (loft-sh/vcluster@v0.36.1 chart/templates/_vclusterconfighash.tpl, statefulset.yaml L49), so a quota in
        # them would restart the tenant's API server at every change to the tenant's workloads.
        "resourceQuota": {"enabled": False},
        "limitRange": {"enabled": isolation.limit_range},
        "networkPolicy": {"enabled": isolation.network_policy},
    }
    if isolation.pod_security_standard:
        policies["podSecurityStandard"] = isolation.pod_security_standard
    values: dict[str, Any] = {
        "experimental": {"syncSettings": {"setOwner": False}},
        "sync": {"fromHost": from_host},
        "controlPlane": control_plane,
        "policies": policies,
    }
    if _grants_resize(config):
        values["rbac"] = {"role": {"extraRules": [POD_RESIZE_RULE]}}
    url = api_server_url(config, tenant)
    if url is not None:
        # The exported kubeconfig (Secret vc-<name>) points where the Pulumi host can connect, and
        # the proxy certificate covers that name.
        control_plane["proxy"] = {"extraSANs": sorted({_host(url), "localhost"})}
        values["exportKubeConfig"] = {"server": url}
    if exposure(config, tenant) == "load-balancer":
        control_plane["service"] = {"spec": {"type": "LoadBalancer"}}
    if uses_node_port(config, tenant):
        control_plane["service"] = {
            "spec": {"type": "NodePort"},
            "httpsNodePort": config.tenant_node_port(tenant),
        }
    # With isolation.networkPolicy the Pulumi host still reaches the API from outside the namespace (kind's
    # port mapping, or the LoadBalancer on EKS, where the VPC CNI enforces NetworkPolicies): the chart's
    # control-plane policy lets TCP 8443 in from anywhere by itself (chart/templates/networkpolicy.yaml,
    # "Allow external ingress to the vCluster API server", in both versions kaistack allows).
    return values


def quota_hard(config: StackConfig, tenant: TenantModel) -> dict[str, str] | None:
    """The tenant's ResourceQuota `hard` map, sized from the declaration (the vCluster itself, its Service and the
    tenant's workloads), as the chart's template would write it (chart/templates/resourcequota.yaml); None when
    isolation.resourceQuota is off."""
    if not tenant.isolation.resource_quota.enabled:
        return None
    return tenant_quota(config, tenant, exposure(config, tenant))


def _decode(data: Any) -> str:
    # An empty kubeconfig is pulumi-kubernetes' "use the ambient one" (provider.go Configure).
    if not data or not data.get("config"):
        raise ValueError("the vCluster's kubeconfig Secret has no `config` key")
    return base64.b64decode(data["config"]).decode()


def _field(value: Any, name: str) -> Any:
    """Typed Pulumi outputs are snake_case and may be objects or dict-like; read either."""
    if value is None:
        return None
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def _load_balancer_address(status: Any) -> str:
    ingress = _field(_field(status, "load_balancer"), "ingress") or [None]
    return _field(ingress[0], "hostname") or _field(ingress[0], "ip") or ""


def with_server(kubeconfig: str, server: str) -> str:
    """The same kubeconfig pointed at `server` (vCluster exports https://localhost:8443 by default)."""
    try:
        document = load_one(kubeconfig, "kubeconfig") or {}
    except YamlInputError as err:
        # The parser's message may quote the offending line, a client key perhaps: give the line only.
        where = f" at line {err.line}" if err.line is not None else ""
        raise ValueError(f"the vCluster's kubeconfig Secret is not valid YAML{where}") from None
    if not isinstance(document, Mapping):
        raise ValueError("the vCluster's kubeconfig Secret is not a mapping (expected kind: Config)")
    for cluster in document.get("clusters") or []:
        cluster.setdefault("cluster", {})["server"] = server
    return yaml.safe_dump(document, sort_keys=False)


class Tenant(pulumi.ComponentResource):
    """vCluster release, the tenant's connection facts and (when reachable) a provider inside it."""

    namespace: k8s.core.v1.Namespace
    release: k8s.helm.v3.Release
    kubeconfig_secret: k8s.core.v1.Secret
    quota: k8s.core.v1.ResourceQuota | None
    service: k8s.core.v1.Service | None
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    connect_command: str
    summary: dict[str, Any]

    def __init__(
        self,
        name: str,
        config: StackConfig,
        tenant: TenantModel,
        host_provider: k8s.Provider,
        after: list[pulumi.Resource] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """`after`: what must exist before the tenant's namespace (the host's admission policy for its pods)."""
        super().__init__("kaistack:index:Tenant", name, None, opts)
        child_opts = pulumi.ResourceOptions(parent=self)
        host_ns = tenant.host_namespace
        # The vCluster's datastore is a volume claim in this namespace (loft-sh/vcluster@v0.36.1
        # chart/values.yaml persistence.volumeClaim): removing or renaming a tenant in the stack file would
        # delete everything its users created. Protected where the cluster is (`cluster.eks.protect`).
        kept = pulumi.ResourceOptions(parent=self, protect=config.cluster.protected)
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            # The label lets host-side admission bind this namespace to the tenant's queues
            # (vcluster-and-gpu.md §1.7: labels pass through vCluster, so a tenant can name any queue).
            metadata={"name": host_ns, "labels": {TENANT_LABEL: tenant.name}},
            opts=kept.merge(pulumi.ResourceOptions(depends_on=after or [])),
        )
        # Before the release, as the chart's own quota was: the vCluster's pods count in it.
        hard = quota_hard(config, tenant)
        self.quota = None
        if hard is not None:
            self.quota = k8s.core.v1.ResourceQuota(
                f"{name}-quota",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=QUOTA_NAME, namespace=host_ns, labels={TENANT_LABEL: tenant.name}
                ),
                spec=k8s.core.v1.ResourceQuotaSpecArgs(hard=hard),
                opts=child_opts.merge(pulumi.ResourceOptions(depends_on=[self.namespace])),
            )
        self.release = k8s.helm.v3.Release(
            f"{name}-vcluster",
            name=tenant.name,
            chart="vcluster",
            version=tenant.vcluster.version,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=versions.VCLUSTER_REPO),
            namespace=host_ns,
            values=vcluster_values(config, tenant),
            timeout=900,
            max_history=versions.HELM_MAX_HISTORY,
            # Moved to another namespace, the new vCluster would ask for the NodePort the old one still holds.
            opts=kept.merge(
                pulumi.ResourceOptions(
                    depends_on=[self.namespace, *([self.quota] if self.quota else [])], delete_before_replace=True
                )
            ),
        )
        self.connect_command = f"vcluster connect {tenant.name} -n {host_ns}"
        read_opts = pulumi.ResourceOptions(parent=self, provider=host_provider, depends_on=[self.release])

        # The engine reads a `get` during previews too, and fails on an object that does not exist yet (pulumi/pulumi
        # pkg/resource/deploy/step.go ReadStep.Apply: "resource '...' does not exist"), unless its id is unknown:
        # "Read steps run during previews. The only time we can't run is if the ID we are given is unknown." The
        # ids below wait for the release's status, which pulumi-kubernetes computes in the preview of an install or
        # an upgrade (helm_release.go checkpointRelease). Not its id: a failed install keeps one (set before Helm
        # runs), and every later preview would then read a Secret vCluster never wrote. Not the namespace's uid,
        # which the API server's dry run of the create answers with. In an upgrade's preview the tenant provider's
        # kubeconfig is unknown too; its unchanged clusterIdentifier keeps that from replacing it.
        def after_release(object_id: str) -> pulumi.Output[str]:
            return self.release.status.apply(lambda _: object_id)

        # vCluster writes this Secret once its API is up, which the release waits for.
        self.kubeconfig_secret = k8s.core.v1.Secret.get(
            f"{name}-kubeconfig", after_release(f"{host_ns}/{kubeconfig_secret_name(tenant)}"), opts=read_opts
        )
        kubeconfig = self.kubeconfig_secret.data.apply(_decode)
        self.service = None
        if exposure(config, tenant) == "load-balancer":
            # Helm (and so the release) waits until a LoadBalancer Service has an address.
            self.service = k8s.core.v1.Service.get(
                f"{name}-service", after_release(f"{host_ns}/{tenant.name}"), opts=read_opts
            )
            address = self.service.status.apply(_load_balancer_address)
            kubeconfig = pulumi.Output.all(kubeconfig, address).apply(
                lambda args: with_server(args[0], f"https://{args[1]}:443")
            )
        self.kubeconfig = pulumi.Output.secret(kubeconfig)
        # Without an identifier pulumi-kubernetes replaces a provider whenever its kubeconfig's server changes
        # (provider.go DiffConfig), and every object of the tenant is then created again, under the same name,
        # in the same vCluster: AlreadyExists. With one, only a new identifier replaces it. The tenant's vCluster is
        # the same while its host namespace is: the release is replaced only with the namespace or the tenant's
        # name (forceNewFields ".name", ".namespace"). Not the Secret's uid, unknown in a preview that skips its read.
        identity = self.namespace.metadata.uid.apply(lambda uid: f"vcluster/{host_ns}/{tenant.name}/{uid}")
        self.provider = k8s.Provider(
            f"{name}-provider", kubeconfig=self.kubeconfig, cluster_identifier=identity, opts=child_opts
        )
        self.summary = {
            "name": tenant.name,
            "namespace": host_ns,
            "queues": list(tenant.queues),
            "connectCommand": self.connect_command,
            "kubeconfigSecret": kubeconfig_secret_name(tenant),
            "exposure": exposure(config, tenant),
            "apiServerUrl": api_server_url(config, tenant),
        }
        self.register_outputs({**self.summary, "kubeconfig": self.kubeconfig})
