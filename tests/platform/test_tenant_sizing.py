"""Tenant quota and LimitRange: the vCluster's own Service and pods fit, and so does every declared workload.

Facts come from the vCluster chart at the pinned tag, copied into tests/data/schemas/:
loft-sh/vcluster@v0.36.1:chart/values.yaml (quota, LimitRange, the control plane's and CoreDNS's
resources, proxyKubelets) and loft-sh/vcluster@v0.36.1:chart/templates/service.yaml (the Service's
ports). How a quota charges a Service: kubernetes/kubernetes pkg/quota/v1/evaluator/core/services.go
`Usage` (one services.nodeports per port of a NodePort or LoadBalancer Service, plus one
services.loadbalancers for a LoadBalancer). The vCluster's own objects are created after the quota
(Helm's install order), so they count against it.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from platform_testlib import base_raw, merged

from kaistack.declaration import tenant_sizing
from kaistack.declaration.parse import ConfigError, parse_config
from kaistack.ops.render import render_stack
from kaistack.stack.load import load_stack
from placement.quantity import Quantity

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "tests" / "data" / "schemas"
STACKS = ("dev", "staging", "prod")


@pytest.fixture(scope="module")
def chart() -> dict[str, Any]:
    return yaml.safe_load((SCHEMAS / "vcluster-values-0.36.1.yaml").read_text())


def q(value: object) -> Fraction:
    return Quantity.parse(value).value


# --- the constants are the chart's ---------------------------------------------------------------------


def test_chart_quota_is_the_charts_default(chart: dict[str, Any]) -> None:
    expected = {k: q(v) for k, v in chart["policies"]["resourceQuota"]["quota"].items()}
    assert expected == tenant_sizing.CHART_QUOTA


def test_limit_range_defaults_are_the_charts(chart: dict[str, Any]) -> None:
    limit_range = chart["policies"]["limitRange"]
    assert {k: q(v) for k, v in limit_range["default"].items()} == tenant_sizing.LIMIT_RANGE_DEFAULT
    assert {k: q(v) for k, v in limit_range["defaultRequest"].items()} == tenant_sizing.LIMIT_RANGE_DEFAULT_REQUEST
    assert limit_range["min"] == {}
    assert limit_range["max"] == {}


def _container(resources: dict[str, Any], kind: str) -> dict[str, Fraction]:
    """One container's requests or limits with the LimitRange's defaults filled in."""
    defaults = tenant_sizing.LIMIT_RANGE_DEFAULT_REQUEST if kind == "requests" else tenant_sizing.LIMIT_RANGE_DEFAULT
    given = {k: q(v) for k, v in resources.get(kind, {}).items()}
    return {r: given.get(r, defaults[r]) for r in ("cpu", "memory", "ephemeral-storage")}


def test_the_vclusters_own_pods_are_what_the_chart_asks_for(chart: dict[str, Any]) -> None:
    """StatefulSet pod (init container `kubernetes` + `syncer`; pod value = max(init, sum of containers))
    and the synced CoreDNS, each with the LimitRange's defaults where the chart leaves a value unset."""
    init = chart["controlPlane"]["distro"]["k8s"]["resources"]
    syncer = chart["controlPlane"]["statefulSet"]["resources"]
    coredns = chart["controlPlane"]["coredns"]["deployment"]["resources"]
    own: dict[str, Fraction] = {}
    for kind in ("requests", "limits"):
        control_plane = {
            r: max(_container(init, kind)[r], _container(syncer, kind)[r])
            for r in ("cpu", "memory", "ephemeral-storage")
        }
        dns = _container(coredns, kind)
        for r in control_plane:
            own[f"{kind}.{r}"] = control_plane[r] + dns[r]
    own["requests.storage"] = q(chart["controlPlane"]["statefulSet"]["persistence"]["volumeClaim"]["size"])
    expected = {k: v for k, v in tenant_sizing.VCLUSTER_OWN.items() if k in own}
    assert own == expected


def test_nodeport_service_has_two_ports_and_load_balancer_one(chart: dict[str, Any]) -> None:
    """The kubelet port is added while proxyKubelets.byHostname is on and the type is not LoadBalancer."""
    template = (SCHEMAS / "vcluster-service-template-0.36.1.yaml").read_text()
    condition = (
        "{{- if and .Values.networking.advanced.proxyKubelets.byHostname (not (eq "
        '.Values.controlPlane.service.spec.type "LoadBalancer")) }}'
    )
    assert condition in template
    assert "- name: https" in template
    assert chart["networking"]["advanced"]["proxyKubelets"]["byHostname"] is True
    assert tenant_sizing.SERVICE_QUOTA["node-port"]["services.nodeports"] == 2
    assert tenant_sizing.SERVICE_QUOTA["load-balancer"] == {
        "services.nodeports": 1,
        "services.loadbalancers": 1,
    }


# --- every stack: the rendered quota holds the vCluster and the tenant's workloads -------------------------


def _rendered_quotas(stack: str) -> dict[str, dict[str, str]]:
    """Each tenant's ResourceQuota `hard` map, by tenant (the label kaistack puts on it)."""
    rendered = render_stack(ROOT, stack)
    return {
        r.inputs["metadata"]["labels"]["kaistack.io/tenant"]: r.inputs["spec"]["hard"]
        for r in rendered.of_type("kubernetes:core/v1:ResourceQuota")
    }


def test_the_quota_is_no_chart_value_so_a_workload_change_does_not_restart_the_vcluster() -> None:
    """The chart hashes all its values into the vCluster pod (loft-sh/vcluster@v0.36.1
    chart/templates/_vclusterconfighash.tpl, statefulset.yaml L49): a quota among them would roll the tenant's API
    server whenever a tenant workload changes. The chart makes no quota; kaistack does, in the host namespace."""
    rendered = render_stack(ROOT, "prod")
    for r in rendered.of_type("kubernetes:helm.sh/v3:Release"):
        if r.inputs.get("chart") == "vcluster":
            assert r.inputs["values"]["policies"]["resourceQuota"] == {"enabled": False}
    quotas = rendered.of_type("kubernetes:core/v1:ResourceQuota")
    assert {(r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]) for r in quotas} == {
        ("vcluster-research", "kaistack-tenant-quota"),
        ("vcluster-serving", "kaistack-tenant-quota"),
    }


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_quota_holds_the_vcluster_its_service_and_the_declared_workloads(stack: str) -> None:
    config = load_stack(ROOT, stack).config
    quotas = _rendered_quotas(stack)
    assert set(quotas) == {t.name for t in config.tenants}
    for tenant in config.tenants:
        need = tenant_sizing.tenant_need(config, tenant, tenant_sizing.exposure(config, tenant))
        hard = {k: q(v) for k, v in quotas[tenant.name].items()}
        short = {k: (str(hard.get(k)), str(v)) for k, v in need.items() if hard.get(k, Fraction(0)) < v}
        assert short == {}, f"{stack}/{tenant.name}"


@pytest.mark.parametrize("stack", STACKS)
def test_every_tenant_workload_fits_the_limit_range(stack: str) -> None:
    """After the LimitRange fills in defaults, no container asks for more than its limit."""
    config = load_stack(ROOT, stack).config
    for work in config.workloads:
        if work.tenant is not None:
            shape = tenant_sizing.pod_shape(work)
            assert all(shape.requests[r] <= shape.limits[r] for r in shape.requests), work.name


def test_prod_quota_is_raised_to_what_research_declares() -> None:
    """research: a 4-GPU fine-tune with 48 CPUs/512Gi plus two 4-CPU/32Gi servers, and the vCluster."""
    quota = _rendered_quotas("prod")["research"]
    assert q(quota["requests.cpu"]) == Fraction(48 + 2 * 4) + Fraction(220, 1000)
    assert q(quota["requests.memory"]) == q("512Gi") + 2 * q("32Gi") + q("320Mi")
    assert quota["services.nodeports"] == "1"  # its LoadBalancer Service: one https port


def test_kind_tenant_quota_allows_both_nodeports() -> None:
    assert _rendered_quotas("dev")["team-a"]["services.nodeports"] == "2"


def test_vllm_servers_get_room_for_their_weights() -> None:
    config = load_stack(ROOT, "prod").config
    for name in ("llm-eval-server", "chat-serve"):
        work = next(w for w in config.workloads if w.name == name)
        assert work.ephemeral_storage is not None
        assert work.ephemeral_storage.value >= 16 * 2**30


# --- explicit overrides that are too small are a config error --------------------------------------------


def test_an_explicit_quota_below_the_need_names_the_workloads(tmp_path: Path) -> None:
    text = (ROOT / "Pulumi.prod.yaml").read_text()
    document = yaml.safe_load(text)
    tenants = document["config"]["kaistack:tenants"]
    tenants[0].setdefault("isolation", {}).setdefault("resourceQuota", {})["quota"] = {"requests.cpu": "8"}
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.small.yaml").write_text(yaml.safe_dump(document))
    with pytest.raises(
        ConfigError, match=r"tenants\[0\]\.isolation\.resourceQuota\.quota\.requests\.cpu: 8 is less"
    ) as err:
        load_stack(tmp_path, "small")
    assert "llm-finetune 48" in str(err.value)
    assert "vCluster itself 220m" in str(err.value)


# --- objects other components write into the tenant's host namespace -------------------------------------


def _tenant_config(workloads: list[dict[str, Any]], nodes: int = 2) -> Any:
    raw = merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}], workloads=workloads)
    raw["cluster"]["nodePools"][0]["count"] = nodes
    return parse_config(raw)


def _quota(config: Any) -> dict[str, str]:
    tenant = config.tenants[0]
    return tenant_sizing.tenant_quota(config, tenant, tenant_sizing.exposure(config, tenant))


def _shared(replicas: int) -> dict[str, Any]:
    return {"name": "s", "kind": "Deployment", "tenant": "t1", "queue": "team", "image": "x",
            "replicas": replicas, "gpuFraction": 0.25, "cpu": "10m", "memory": "16Mi"}  # fmt: skip


def test_each_shared_gpu_pod_adds_the_binders_two_config_maps_to_the_chart_default() -> None:
    """kai-scheduler/KAI-Scheduler@v0.17.0 pkg/binder/plugins/gpusharing/gpu_sharing.go L63-71: the binder
    upserts the capabilities ConfigMap and its -evar twin (gpusharingconfigmap/config_map.go L168) in the
    pod's namespace, which is the tenant's host namespace for a synced pod."""
    assert _quota(_tenant_config([_shared(30)]))["count/configmaps"] == "163"


def test_an_explicit_config_map_quota_is_held_to_what_kai_writes() -> None:
    raw = merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}], workloads=[_shared(30)])
    raw["tenants"][0]["isolation"] = {"resourceQuota": {"quota": {"count/configmaps": "50"}}}
    with pytest.raises(ConfigError, match=r"quota\.count/configmaps: 50 is less than the tenant needs, 63 "):
        parse_config(raw)


def test_whole_gpu_tenants_add_only_the_vclusters_own_config_maps_to_the_chart_default() -> None:
    """kube-root-ca.crt (Kubernetes' root CA publisher, every namespace), the synced CoreDNS's `coredns`
    (loft-sh/vcluster@v0.36.1 pkg/coredns/template.go L155-163, mounted L296-303) and the one host copy of the
    virtual namespaces' kube-root-ca.crt (pkg/mappings/resources/configmaps.go L33-41)."""
    whole = {**_shared(30), "gpuFraction": None, "gpu": 1}
    assert _quota(_tenant_config([whole]))["count/configmaps"] == "103"


def test_an_explicit_config_map_quota_names_the_vclusters_own_part() -> None:
    raw = merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}], workloads=[_shared(1)])
    raw["tenants"][0]["isolation"] = {"resourceQuota": {"quota": {"count/configmaps": "4"}}}
    with pytest.raises(
        ConfigError, match=r"count/configmaps: 4 is less than the tenant needs, 5 \(vCluster itself 3; s 2\)"
    ):
        parse_config(raw)


def test_endpoints_follow_the_services_of_a_large_cluster() -> None:
    """One kubelet Service per host node (loft-sh/vcluster@v0.36.1 pkg/controllers/resources/nodes/nodeservice/
    node_service.go L155-172) has a selector, so each gets an Endpoints object: 60 nodes + the vCluster's 3,
    on top of the chart's 20 Services and 40 Endpoints left for the tenant's own."""
    quota = _quota(_tenant_config([], nodes=60))
    assert quota["count/services"] == "83"
    assert quota["count/endpoints"] == "103"


def test_an_explicit_service_quota_below_the_need_names_the_vclusters_part() -> None:
    """The vCluster's part is its own three Services and a kubelet Service per node (2 here)."""
    raw = merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}])
    raw["tenants"][0]["isolation"] = {"resourceQuota": {"quota": {"count/services": "4"}}}
    with pytest.raises(ConfigError, match=r"count/services: 4 is less than the tenant needs, 5 \(vCluster itself 5\)"):
        parse_config(raw)


def test_the_vclusters_secrets_and_its_helm_history_come_on_top_of_the_chart_default() -> None:
    """vc-config-<release> (loft-sh/vcluster@v0.36.1 chart/templates/config-secret.yaml), <release>-certs
    (pkg/certs/ensure.go L316-318), the kubeconfig vc-<release>, and the 10 revisions Helm keeps."""
    assert _quota(_tenant_config([]))["count/secrets"] == "113"


def test_an_explicit_secret_quota_below_the_vclusters_own_is_refused() -> None:
    raw = merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}])
    raw["tenants"][0]["isolation"] = {"resourceQuota": {"quota": {"count/secrets": "12"}}}
    with pytest.raises(
        ConfigError, match=r"count/secrets: 12 is less than the tenant needs, 13 \(vCluster itself 13\)"
    ):
        parse_config(raw)


def test_the_secrets_a_tenant_workload_references_are_counted() -> None:
    """loft-sh/vcluster@v0.36.1 chart/values.yaml sync.toHost.secrets (enabled, all: false): each Secret a pod
    references is synced into the tenant's host namespace."""
    work = {**_shared(1), "secretEnv": {"A": {"secret": "hf", "key": "a"}, "B": {"secret": "hf", "key": "b"},
                                         "C": {"secret": "s3", "key": "c"}}}  # fmt: skip
    raw = merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}], workloads=[work])
    raw["tenants"][0]["isolation"] = {"resourceQuota": {"quota": {"count/secrets": "14"}}}
    with pytest.raises(
        ConfigError, match=r"count/secrets: 14 is less than the tenant needs, 15 \(vCluster itself 13; s 2\)"
    ):
        parse_config(raw)


def _pytorch_tenant(operator: bool) -> Any:
    raw = merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}])
    raw["workloads"] = [{"name": "ddp", "kind": "PyTorchJob", "tenant": "t1", "queue": "team", "image": "x"}]
    raw["cluster"]["trainingOperator"] = operator
    return raw


def test_the_training_operator_a_tenant_runs_is_in_its_quota() -> None:
    """kubeflow/training-operator@v1.8.1 manifests/base: one pod whose container sets no resources (the
    LimitRange's defaults), a Service (service.yaml) and the webhook certificate Secret it mounts."""
    needs = []
    for operator in (True, False):
        config = parse_config(_pytorch_tenant(operator))
        needs.append(tenant_sizing.tenant_need(config, config.tenants[0], "node-port"))
    with_operator, without = needs
    extra = {k: v - without.get(k, Fraction(0)) for k, v in with_operator.items() if v != without.get(k)}
    assert extra == {
        "requests.cpu": Fraction(1, 10),
        "requests.memory": Fraction(128 * 2**20),
        "requests.ephemeral-storage": Fraction(3 * 2**30),
        "limits.cpu": Fraction(1),
        "limits.memory": Fraction(512 * 2**20),
        "limits.ephemeral-storage": Fraction(8 * 2**30),
        "count/pods": Fraction(1),
        "count/services": Fraction(1),
        "count/endpoints": Fraction(1),
        "count/secrets": Fraction(1),
    }


def test_an_explicit_quota_below_the_need_names_the_training_operator() -> None:
    raw = _pytorch_tenant(True)
    raw["tenants"][0]["isolation"] = {"resourceQuota": {"quota": {"count/pods": "4"}}}
    problem = r"count/pods: 4 is less than the tenant needs, 5 \(vCluster itself 2; ddp 2, the training operator 1\)"
    with pytest.raises(ConfigError, match=problem):
        parse_config(raw)


def test_pytorchjob_workers_count_the_operators_init_container() -> None:
    """kubeflow/training-operator@v1.8.1 pkg/controller.v1/pytorch/initcontainer.go: init-pytorch (requests
    50m/10Mi, limits 100m/20Mi) on every worker when there is a master; quota charges the larger of it and
    the containers' sum. Master 10m + 2 workers at max(10m, 50m) = 110m requested, 10m + 2 x 100m limited."""
    raw = merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}])
    work = {"name": "ddp", "kind": "PyTorchJob", "tenant": "t1", "queue": "team", "image": "x", "cpu": "10m",
            "memory": "1Mi", "pytorch": {"master": 1, "workers": 2}}  # fmt: skip
    raw["workloads"] = [work]
    need = tenant_sizing.workload_need(parse_config(raw).workloads[0])
    assert (need["requests.cpu"], need["limits.cpu"]) == (Fraction(110, 1000), Fraction(210, 1000))
    assert (need["requests.memory"], need["limits.memory"]) == (Fraction(21 * 2**20), Fraction(41 * 2**20))


def test_pytorchjob_workers_count_the_init_containers_ephemeral_storage_default() -> None:
    """The LimitRange gives init-pytorch 3Gi/8Gi of ephemeral storage (loft-sh/vcluster@v0.36.1
    chart/values.yaml policies.limitRange): a worker declaring 1Gi still charges 3Gi and 8Gi."""
    raw = merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}])
    work = {"name": "ddp", "kind": "PyTorchJob", "tenant": "t1", "queue": "team", "image": "x",
            "ephemeralStorage": "1Gi", "pytorch": {"master": 1, "workers": 2}}  # fmt: skip
    raw["workloads"] = [work]
    need = tenant_sizing.workload_need(parse_config(raw).workloads[0])
    gib = 2**30
    assert need["requests.ephemeral-storage"] == Fraction(1 * gib + 2 * 3 * gib)
    assert need["limits.ephemeral-storage"] == Fraction(1 * gib + 2 * 8 * gib)


# --- override names and values as the API server takes them ----------------------------------------------
# kubernetes/kubernetes (no snapshot: over fetch's size limit; the search index's copies, see
# kaistack/declaration/quota_names.py): pkg/apis/core/helper/helpers.go standardQuotaResources and integerResources;
# pkg/apis/core/validation/validation.go ValidateResourceQuotaResourceName and ValidateResourceQuantityValue;
# pkg/quota/v1/evaluator/core/pods.go podComputeUsageHelper and PodUsageFunc.


def _with_quota(quota: dict[str, Any]) -> dict[str, Any]:
    raw = merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"]}])
    raw["tenants"][0]["isolation"] = {"resourceQuota": {"quota": quota}}
    return raw


@pytest.mark.parametrize(
    ("short", "derived"),
    [
        ("pods", "count/pods"),
        ("cpu", "requests.cpu"),
        ("memory", "requests.memory"),
        ("ephemeral-storage", "requests.ephemeral-storage"),
        ("services", "count/services"),
        ("secrets", "count/secrets"),
        ("configmaps", "count/configmaps"),
        ("persistentvolumeclaims", "count/persistentvolumeclaims"),
    ],
)
def test_a_short_quota_name_below_the_need_is_refused_like_the_name_kaistack_derives(short, derived):
    """The quota charges `pods` for every running pod and `cpu` as the pods' CPU requests: `pods: 1` stops the
    vCluster's second pod as surely as `count/pods: 1` would."""
    with pytest.raises(
        ConfigError, match=rf"quota\.{short}: 0 is less than the tenant needs, .*kaistack derives {derived}\)"
    ):
        parse_config(_with_quota({short: "0"}))


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("nonsense", r"quota\.nonsense: not a standard quota resource \(configmaps, cpu, "),
        ("requests.gpu", r"quota\.requests\.gpu: not a standard quota resource"),
        ("a/b/c", r"quota\.a/b/c: not a qualified name"),
        ("Bad Key", r"quota\.'Bad Key': not a qualified name"),
    ],
)
def test_a_quota_name_the_api_server_refuses_is_a_config_error(key, problem):
    """One bad name and the API server refuses the whole ResourceQuota, at `pulumi up`."""
    with pytest.raises(ConfigError, match=problem):
        parse_config(_with_quota({key: "1"}))


def test_quota_names_with_a_domain_or_for_huge_pages_reach_the_quota_as_written():
    quota = {"requests.nvidia.com/gpu": "0.5", "count/deployments.apps": 3, "hugepages-2Mi": "1Gi"}
    assert _quota(parse_config(_with_quota(quota))).items() >= {k: str(v) for k, v in quota.items()}.items()


@pytest.mark.parametrize("key", ["count/pods", "services.nodeports", "nvidia.com/gpu"])
def test_a_count_that_is_not_whole_is_refused(key):
    """Object counts and extended resources (a name with a domain and no `requests.` prefix) are integers."""
    with pytest.raises(ConfigError, match=rf"quota\.{re.escape(key)}: 20\.5 must be a whole number"):
        parse_config(_with_quota({key: "20.5"}))


def test_a_quota_value_of_another_type_names_the_key_only():
    """No pydantic branch name ("constrained-str") in the key's path."""
    with pytest.raises(ConfigError) as err:
        parse_config(_with_quota({"services": 2.5}))
    assert "quota.services: " in str(err.value)
    assert "constrained" not in str(err.value)
