"""A tenant's host ResourceQuota and LimitRange, derived from what it declares.

vCluster's chart renders both in the tenant's host namespace, before its own Service and pods, so
the quota must hold the vCluster itself as well as the tenant's workloads. The chart's defaults
(loft-sh/vcluster@v0.36.1:chart/values.yaml L1154-1196) are too small for real tenants, and
`services.nodeports: 0` refuses the vCluster's own NodePort or LoadBalancer Service (loft-sh/vcluster#954).

Quota = max(chart default, what the vCluster needs + what the tenant's workloads need), then the
stack's explicit `isolation.resourceQuota.quota` entries. Services, Endpoints, ConfigMaps and Secrets
that others create there (vCluster's node Services, KAI's binder, Helm's release history) are added to
the chart's default instead, which stays the tenant's own room (TENANT_ROOM). An explicit entry below
the need is a config error naming the resource and the workloads (see `quota_problems`). Every figure
used is a constant here, each citing its source. The tests check them against the chart at the pinned tag.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from kaistack.declaration import quota_names, training_operator, versions
from placement.quantity import Quantity

if TYPE_CHECKING:
    from kaistack.declaration.model import StackConfig, Tenant, Workload

Gi = 2**30
Mi = 2**20

# loft-sh/vcluster@v0.36.1:chart/values.yaml L1154-1174 (policies.resourceQuota.quota).
CHART_QUOTA: dict[str, Fraction] = {
    "requests.cpu": Fraction(10),
    "requests.memory": Fraction(20 * Gi),
    "requests.storage": Fraction(100 * Gi),
    "requests.ephemeral-storage": Fraction(60 * Gi),
    "limits.cpu": Fraction(20),
    "limits.memory": Fraction(40 * Gi),
    "limits.ephemeral-storage": Fraction(160 * Gi),
    "services.nodeports": Fraction(0),
    "services.loadbalancers": Fraction(1),
    "count/endpoints": Fraction(40),
    "count/pods": Fraction(20),
    "count/services": Fraction(20),
    "count/secrets": Fraction(100),
    "count/configmaps": Fraction(100),
    "count/persistentvolumeclaims": Fraction(20),
}
# loft-sh/vcluster@v0.36.1:chart/values.yaml L1177-1196 (policies.limitRange): filled into any
# container that leaves the resource unset.
LIMIT_RANGE_DEFAULT = {"cpu": Fraction(1), "memory": Fraction(512 * Mi), "ephemeral-storage": Fraction(8 * Gi)}
LIMIT_RANGE_DEFAULT_REQUEST = {
    "cpu": Fraction(1, 10),
    "memory": Fraction(128 * Mi),
    "ephemeral-storage": Fraction(3 * Gi),
}
# The vCluster's own Secrets in its host namespace: vc-config-<release> (chart/templates/config-secret.yaml),
# <release>-certs (pkg/certs/ensure.go L316-318) and the kubeconfig vc-<release> (exportKubeConfig), plus
# its Helm history.
VCLUSTER_SECRETS = 3 + versions.HELM_MAX_HISTORY
# The vCluster's own pods with those defaults filled in (the StatefulSet pod <release>-0 with its
# init container, and the synced CoreDNS): chart/values.yaml L340-346 (distro.k8s.resources), L550-558
# (coredns), L654-663 (statefulSet.resources), L688-697 (5Gi PVC); LimitRange defaults as above.
VCLUSTER_OWN: dict[str, Fraction] = {
    "requests.cpu": Fraction(220, 1000),
    "requests.memory": Fraction(320 * Mi),
    "requests.ephemeral-storage": Fraction(6 * Gi),
    "limits.cpu": Fraction(2),
    "limits.memory": Fraction(4266 * Mi),
    "limits.ephemeral-storage": Fraction(18 * Gi),
    "count/pods": Fraction(2),
    "requests.storage": Fraction(5 * Gi),
    "count/persistentvolumeclaims": Fraction(1),
    # <release>, <release>-headless and the synced kube-dns Service.
    "count/services": Fraction(3),
    # The namespace's own kube-root-ca.crt (Kubernetes' root CA publisher writes one into every namespace),
    # the synced CoreDNS's `coredns` ConfigMap (pkg/coredns/template.go L155-163, mounted at L296-303) and
    # the one host copy of every virtual namespace's kube-root-ca.crt, which each pod's service account
    # volume projects (pkg/mappings/resources/configmaps.go L33-41: one name per vCluster, not per namespace).
    "count/configmaps": Fraction(3),
    "count/secrets": Fraction(VCLUSTER_SECRETS),
}
# Ports of the vCluster's control-plane Service as the quota charges them (services.go Usage):
# NodePort: https + kubelet (proxyKubelets.byHostname, on by default) = 2; LoadBalancer: https = 1 node
# port + 1 load balancer (chart/templates/service.yaml L24-51; chart/tests/service_test.yaml).
SERVICE_QUOTA = {
    "node-port": {"services.nodeports": Fraction(2), "services.loadbalancers": Fraction(0)},
    "load-balancer": {"services.nodeports": Fraction(1), "services.loadbalancers": Fraction(1)},
    "url": {"services.nodeports": Fraction(0), "services.loadbalancers": Fraction(0)},
}
# KAI's binder writes two ConfigMaps into a shared-GPU pod's namespace when it binds it (the capabilities
# map and its `-evar` twin: kai-scheduler/KAI-Scheduler@v0.17.0 pkg/binder/plugins/gpusharing/gpu_sharing.go
# L63-71, pkg/binder/common/gpusharingconfigmap/config_map.go L168).
CONFIG_MAPS_PER_SHARED_POD = 2
# Objects others create in the namespace besides the tenant (vCluster's node Services and their Endpoints,
# KAI's ConfigMaps): what kaistack counts of them comes on top of the chart's default, which stays as the
# tenant's own room. Other keys take the larger of the chart's default and the need.
TENANT_ROOM: dict[str, Fraction] = {
    key: CHART_QUOTA[key] for key in ("count/services", "count/endpoints", "count/configmaps", "count/secrets")
}
_BYTES = {"memory", "ephemeral-storage", "storage"}


def exposure(config: StackConfig, tenant: Tenant) -> str:
    """How the Pulumi host reaches the tenant's vCluster API.

    - "url": `tenants[].apiServerUrl` (an Ingress, a LoadBalancer with DNS...), set up by the user;
    - "node-port": on kind, a NodePort that the kind config maps to 127.0.0.1 (cluster_kind.py);
    - "load-balancer": elsewhere, a LoadBalancer Service; vCluster adds its address to the API
      certificate's SANs by itself (loft-sh/vcluster pkg/certs/ensure.go getExtraSANs).
    """
    if tenant.api_server_url:
        return "url"
    return "node-port" if config.cluster.provider == "kind" else "load-balancer"


@dataclass(frozen=True)
class PodShape:
    """What one pod of a workload asks for, after the LimitRange fills in what it leaves unset."""

    requests: dict[str, Fraction]
    limits: dict[str, Fraction]


def pod_shape(work: Workload) -> PodShape:
    """The rendered container (components/podspec.py `resources`), LimitRange defaults added."""
    requests = {"cpu": work.cpu.value, "memory": work.memory.value}
    limits = {
        "cpu": (work.cpu_limit or work.cpu).value,
        "memory": (work.memory_limit or work.memory).value,
    }
    if work.ephemeral_storage is not None:
        requests["ephemeral-storage"] = limits["ephemeral-storage"] = work.ephemeral_storage.value
    for resource, default in LIMIT_RANGE_DEFAULT.items():
        limits.setdefault(resource, default)
    for resource, default in LIMIT_RANGE_DEFAULT_REQUEST.items():
        requests.setdefault(resource, default)
    return PodShape(requests, limits)


def workload_need(work: Workload) -> dict[str, Fraction]:
    shape = pod_shape(work)
    pods = work.pod_count
    need = {f"requests.{r}": v * pods for r, v in shape.requests.items()}
    need.update({f"limits.{r}": v * pods for r, v in shape.limits.items()})
    # PyTorchJob workers carry the operator's init container: a pod counts the larger of the two. It sets cpu
    # and memory; its ephemeral storage is the LimitRange's default.
    masters = work.pytorch.master
    workers = pods - masters if training_operator.has_init_container(work.kind, masters, pods - 1) else 0
    storage = "ephemeral-storage"
    init_requests = {**training_operator.INIT_REQUESTS, storage: LIMIT_RANGE_DEFAULT_REQUEST[storage]}
    init_limits = {**training_operator.INIT_LIMITS, storage: LIMIT_RANGE_DEFAULT[storage]}
    for key, init in (("requests", init_requests), ("limits", init_limits)):
        for resource, value in init.items():
            own = (shape.requests if key == "requests" else shape.limits)[resource]
            need[f"{key}.{resource}"] += max(Fraction(0), value - own) * workers
    need["count/pods"] = Fraction(pods)
    if work.shares_gpu:
        need["count/configmaps"] = Fraction(CONFIG_MAPS_PER_SHARED_POD * pods)
    if work.secret_env:
        # vCluster syncs a Secret a pod references into the host namespace (sync.toHost.secrets, only the
        # needed ones), one host object per virtual Secret; two workloads naming one Secret count it twice.
        need["count/secrets"] = Fraction(len({ref.secret for ref in work.secret_env.values()}))
    return need


def runs_training_operator(config: StackConfig, tenant: Tenant) -> bool:
    """`cluster.trainingOperator` installs the operator in the host and every tenant (components.workloads)."""
    return config.cluster.training_operator


def training_operator_need() -> dict[str, Fraction]:
    """The operator's pod (its container sets no resources: LimitRange defaults) and its objects."""
    need = {f"requests.{r}": v for r, v in LIMIT_RANGE_DEFAULT_REQUEST.items()}
    need.update({f"limits.{r}": v for r, v in LIMIT_RANGE_DEFAULT.items()})
    need.update(training_operator.OBJECTS)
    return need


def tenant_workloads(config: StackConfig, tenant: Tenant) -> list[Workload]:
    return [w for w in config.workloads if w.tenant == tenant.name]


def tenant_need(config: StackConfig, tenant: Tenant, exposure: str) -> dict[str, Fraction]:
    """The vCluster itself, its Service, and every declared workload of the tenant, summed."""
    need = dict(VCLUSTER_OWN)
    _add(need, SERVICE_QUOTA[exposure])
    for _, user_need in _needs_by_user(config, tenant):
        _add(need, user_need)
    # proxyKubelets.byIP (on by default) adds a Service per host node that runs the tenant's pods.
    need["count/services"] += Fraction(sum(max(p.count, p.max_size or 0) for p in config.cluster.node_pools))
    # Each of those Services has a selector, so the endpoints controller writes an Endpoints object for
    # it (loft-sh/vcluster@v0.36.1 pkg/controllers/resources/nodes/nodeservice/node_service.go L155-172).
    need["count/endpoints"] = need["count/services"]
    return need


def tenant_quota(config: StackConfig, tenant: Tenant, exposure: str) -> dict[str, str]:
    """The `policies.resourceQuota.quota` map kaistack gives the chart (every key, as Kubernetes strings)."""
    need = tenant_need(config, tenant, exposure)
    hard = {
        key: TENANT_ROOM[key] + value if key in TENANT_ROOM else max(CHART_QUOTA.get(key, Fraction(0)), value)
        for key, value in need.items()
    }
    for key, value in CHART_QUOTA.items():
        hard.setdefault(key, value)
    out = {key: _format(key, value) for key, value in sorted(hard.items())}
    out.update({key: str(value) for key, value in tenant.isolation.resource_quota.quota.items()})
    return out


def quota_problems(config: StackConfig, tenant: Tenant, exposure: str, where: str) -> list[str]:
    """Explicit quota entries below what the tenant and its vCluster need, naming the workloads."""
    need = tenant_need(config, tenant, exposure)
    problems = []
    for entry, raw in tenant.isolation.resource_quota.quota.items():
        given = Quantity.parse(raw).value  # the model checked it parses
        if quota_names.is_integer(entry) and given.denominator != 1:
            problems.append(
                f"{where}.isolation.resourceQuota.quota.{entry}: {raw} must be a whole number (Kubernetes counts "
                f"{entry} in whole units)"
            )
            continue
        key = quota_names.SAME_AS.get(entry, entry)  # `pods` caps what `count/pods` does
        if key not in need:
            continue
        if given < need[key]:
            users = _users(config, tenant, key)
            derived = "kaistack derives it" if key == entry else f"kaistack derives {key}"
            problems.append(
                f"{where}.isolation.resourceQuota.quota.{entry}: {raw} is less than the tenant needs, "
                f"{_format(key, need[key])} (vCluster itself "
                f"{_format(key, need[key] - _workloads_total(config, tenant, key))}"
                f"{'; ' + users if users else ''}): raise it or remove the entry ({derived})"
            )
    return problems


def _needs_by_user(config: StackConfig, tenant: Tenant) -> list[tuple[str, dict[str, Fraction]]]:
    """What each of the tenant's own users needs: its workloads, and the training operator installed for them."""
    users = [(work.name, workload_need(work)) for work in tenant_workloads(config, tenant)]
    if runs_training_operator(config, tenant):
        users.append(("the training operator", training_operator_need()))
    return users


def _workloads_total(config: StackConfig, tenant: Tenant, key: str) -> Fraction:
    """What the tenant's workloads need of `key`; the rest of the need is the vCluster's (its pods, its
    Service, a kubelet Service and Endpoints per node)."""
    return sum((need.get(key, Fraction(0)) for _, need in _needs_by_user(config, tenant)), Fraction(0))


def _users(config: StackConfig, tenant: Tenant, key: str) -> str:
    return ", ".join(
        f"{name} {_format(key, need[key])}" for name, need in _needs_by_user(config, tenant) if need.get(key)
    )


def _add(total: dict[str, Fraction], more: dict[str, Fraction]) -> None:
    for key, value in more.items():
        total[key] = total.get(key, Fraction(0)) + value


def _format(key: str, value: Fraction) -> str:
    """Kubernetes quantity text, rounded up: bytes in Mi (or Gi when whole), CPU in millicores, counts whole."""
    resource = key.split(".", 1)[-1]
    if resource in _BYTES:
        mib = math.ceil(value / Mi)
        return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"
    if resource == "cpu":
        millis = math.ceil(value * 1000)
        return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"
    return str(math.ceil(value))
