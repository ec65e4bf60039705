"""Tenant behaviour no other test pinned, found by a mutation run of components/tenant.py and
kaistack/declaration/tenant_sizing.py: the vCluster's API address, the kubeconfig read back, a tenant without
its quota, and the quota's own arithmetic.
"""

from __future__ import annotations

import ipaddress
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from platform_testlib import base_raw, merged, named, of_type, run_program

from components.tenant import _decode, _load_balancer_address, vcluster_values, with_server
from kaistack.declaration import tenant_sizing
from kaistack.declaration.marks import TENANT_TYPE
from kaistack.declaration.parse import ConfigError, parse_config

QUOTA = "kubernetes:core/v1:ResourceQuota"
SCHEMAS = Path(__file__).resolve().parents[2] / "tests" / "data" / "schemas"


@pytest.fixture(scope="module")
def chart() -> dict[str, Any]:
    return yaml.safe_load((SCHEMAS / "vcluster-values-0.36.1.yaml").read_text())


def _tenant_stack(**tenant: Any) -> dict[str, Any]:
    return merged(base_raw(), tenants=[{"name": "t1", "queues": ["team"], **tenant}])


# --- the address the Pulumi host reaches the vCluster at ------------------------------------------------


def test_a_tenant_url_with_a_path_puts_only_its_host_in_the_certificates_sans() -> None:
    """A Kubernetes API behind a path-routing proxy keeps the path in the kubeconfig's server; the certificate
    names the host only."""
    url = "https://gw.example.com/k8s/clusters/t1"
    config = parse_config(_tenant_stack(apiServerUrl=url))
    values = vcluster_values(config, config.tenants[0])
    assert values["controlPlane"]["proxy"] == {"extraSANs": ["gw.example.com", "localhost"]}
    assert values["exportKubeConfig"] == {"server": url}


@pytest.mark.parametrize("url", ["https://[2001:db8::1]:6443", "https://[2001:db8::1]", "https://[2001:db8::1]/k8s"])
def test_an_ipv6_tenant_url_puts_the_bare_address_in_the_certificates_sans(url: str) -> None:
    """vCluster adds a SAN as an IP only where net.ParseIP reads it, else as a DNS name (loft-sh/vcluster@v0.36.1
    pkg/server/cert/cert.go:339-347): a bracketed address, or one with its port, would leave the certificate
    without the IP the kubeconfig connects to."""
    config = parse_config(_tenant_stack(apiServerUrl=url))
    values = vcluster_values(config, config.tenants[0])
    assert values["controlPlane"]["proxy"] == {"extraSANs": ["2001:db8::1", "localhost"]}
    assert ipaddress.ip_address(values["controlPlane"]["proxy"]["extraSANs"][0]).version == 6


def test_a_load_balancer_with_only_an_ip_is_reached_at_that_ip() -> None:
    """Service status.loadBalancer.ingress[] carries `ip` where the load balancer has no DNS name
    (kubernetes/api core/v1 LoadBalancerIngress: hostname "for load-balancer ingress points that are DNS based")."""
    status = {"load_balancer": {"ingress": [{"ip": "203.0.113.7"}]}}
    assert _load_balancer_address(status) == "203.0.113.7"


def test_a_load_balancer_without_an_address_yet_gives_an_empty_address_not_an_error() -> None:
    assert _load_balancer_address({"load_balancer": {"ingress": []}}) == ""


# --- the kubeconfig vCluster writes --------------------------------------------------------------------


def test_a_kubeconfig_secret_without_data_is_an_error_not_the_ambient_kubeconfig() -> None:
    """A Secret with no `data` reads back as None; an empty kubeconfig is pulumi-kubernetes' ambient one."""
    with pytest.raises(ValueError, match="has no `config` key"):
        _decode(None)


def test_a_kubeconfig_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(ValueError, match=r"is not a mapping \(expected kind: Config\)"):
        with_server("- apiVersion: v1\n- kind: Config\n", "https://lb.example.com:443")


def test_a_kubeconfig_that_names_no_cluster_is_left_as_it_is() -> None:
    text = "apiVersion: v1\nkind: Config\nclusters: null\nusers: [{name: u}]\n"
    assert yaml.safe_load(with_server(text, "https://lb.example.com:443")) == yaml.safe_load(text)


# --- the component -------------------------------------------------------------------------------------


def test_a_tenant_without_its_quota_gets_no_resource_quota(mocks) -> None:
    """isolation.resourceQuota.enabled: false (with limitRange: false, which needs it off) leaves the host
    namespace without kaistack's ResourceQuota, and the release waits for none."""
    run_program(mocks, _tenant_stack(isolation={"resourceQuota": {"enabled": False}, "limitRange": False}))
    assert of_type(mocks.resources, QUOTA) == []
    assert named(mocks.resources, "kaistack-t1-vcluster").dependencies == (
        named(mocks.resources, "kaistack-t1-namespace").urn,
    )


def test_the_tenant_component_has_the_type_the_policy_pack_finds_tenants_by(mocks) -> None:
    """kaistack.guardrails.facts reads a tenant's provider by this type in its URN (marks.TENANT_TYPE)."""
    run_program(mocks, _tenant_stack())
    (component,) = [r for r in mocks.monitor.records if r.name == "kaistack-t1"]
    assert component.type == TENANT_TYPE
    assert TENANT_TYPE in named(mocks.resources, "kaistack-t1-provider").urn


def test_the_tenants_output_names_each_tenant_its_namespace_exposure_and_api_url(mocks) -> None:
    """`pulumi stack output tenants` (README, "per tenant: connect command, kubeconfig secret, queues"); on kind
    the API is the tenant's NodePort, mapped to 127.0.0.1 from cluster.kind.tenantPortBase (31000)."""
    run_program(mocks, _tenant_stack(namespace="team-one"))
    (tenant,) = mocks.stack_outputs()["tenants"]
    assert {k: tenant[k] for k in ("name", "namespace", "exposure", "apiServerUrl")} == {
        "name": "t1",
        "namespace": "team-one",
        "exposure": "node-port",
        "apiServerUrl": "https://127.0.0.1:31000",
    }
    assert tenant["connectCommand"] == "vcluster connect t1 -n team-one"


# --- the quota's arithmetic ------------------------------------------------------------------------------


def _config(workloads: list[dict[str, Any]] | None = None, **tenant: Any) -> Any:
    return parse_config(merged(_tenant_stack(**tenant), workloads=workloads or []))


def _quota(config: Any) -> dict[str, str]:
    tenant = config.tenants[0]
    return tenant_sizing.tenant_quota(config, tenant, tenant_sizing.exposure(config, tenant))


def _need(work: dict[str, Any]) -> dict[str, Fraction]:
    return tenant_sizing.workload_need(_config([work]).workloads[0])


def _work(**fields: Any) -> dict[str, Any]:
    return {"name": "w", "kind": "Deployment", "tenant": "t1", "queue": "team", "image": "x", **fields}


def test_where_the_vcluster_needs_less_than_the_chart_the_quota_keeps_the_charts_own_words(chart) -> None:
    """loft-sh/vcluster@v0.36.1:chart/values.yaml policies.resourceQuota.quota: a tenant with no workloads needs
    less than each of these, so kaistack writes the chart's value as the chart writes it (20Gi, not 20480Mi)."""
    quota = _quota(_config())
    defaults = chart["policies"]["resourceQuota"]["quota"]
    # The tenant's own room is added to, and its NodePort Service needs more than the chart's 0.
    kept = set(defaults) - set(tenant_sizing.TENANT_ROOM) - {"services.nodeports"}
    assert {key: quota[key] for key in kept} == {key: str(defaults[key]) for key in kept}


def test_pods_without_the_operators_init_container_charge_only_their_own_requests() -> None:
    need = _need(_work(replicas=3, cpu="10m", memory="16Mi"))
    assert (need["requests.cpu"], need["limits.cpu"]) == (Fraction(30, 1000), Fraction(30, 1000))
    assert need["requests.memory"] == 3 * 16 * 2**20


def test_pytorchjob_workers_above_the_init_container_charge_only_their_own() -> None:
    """kubeflow/training-operator@v1.8.1 init-pytorch requests 50m/10Mi: a pod counts the larger of its init
    container and its containers, so 1-CPU/1Gi workers charge 1 CPU and 1Gi each."""
    need = _need(_work(kind="PyTorchJob", cpu="1", memory="1Gi", pytorch={"master": 1, "workers": 2}))
    assert (need["requests.cpu"], need["requests.memory"]) == (3, 3 * 2**30)


def test_a_single_pytorchjob_worker_counts_the_operators_init_container() -> None:
    """Master 10m + one worker at max(10m, 50m) requested; 10m + max(10m, 100m) limited."""
    need = _need(_work(kind="PyTorchJob", cpu="10m", memory="1Mi", pytorch={"master": 1, "workers": 1}))
    assert (need["requests.cpu"], need["limits.cpu"]) == (Fraction(60, 1000), Fraction(110, 1000))


def test_pytorchjob_workers_compare_the_init_containers_requests_and_limits_with_their_own() -> None:
    """Requests with requests, limits with limits: 10m requested under a 1-CPU limit charges the init container's
    50m request but not its 100m limit (and 1Mi under 1Gi: its 10Mi request, not its 20Mi limit)."""
    work = _work(kind="PyTorchJob", cpu="10m", cpuLimit="1", memory="1Mi", memoryLimit="1Gi",
                 pytorch={"master": 1, "workers": 2})  # fmt: skip
    need = _need(work)
    assert (need["requests.cpu"], need["limits.cpu"]) == (Fraction(10 + 2 * 50, 1000), 3)
    assert (need["requests.memory"], need["limits.memory"]) == (21 * 2**20, 3 * 2**30)


def test_an_explicit_quota_equal_to_the_need_is_accepted() -> None:
    """The vCluster's three Services and a kubelet Service for each of the 2 nodes: 5 is enough."""
    config = _config(isolation={"resourceQuota": {"quota": {"count/services": "5"}}})
    assert _quota(config)["count/services"] == "5"


def test_an_explicit_claim_quota_must_hold_the_vclusters_own_volume_claim() -> None:
    """loft-sh/vcluster@v0.36.1:chart/values.yaml L688-697 (statefulSet.persistence.volumeClaim, enabled: auto,
    5Gi): the vCluster's datastore is one PersistentVolumeClaim in the host namespace."""
    raw = _tenant_stack(isolation={"resourceQuota": {"quota": {"count/persistentvolumeclaims": "0"}}})
    with pytest.raises(
        ConfigError, match=r"persistentvolumeclaims: 0 is less than the tenant needs, 1 \(vCluster itself 1\)"
    ):
        parse_config(raw)


def test_the_vclusters_part_leaves_out_workloads_that_need_none_of_the_resource() -> None:
    raw = merged(_tenant_stack(), workloads=[_work()])
    raw["tenants"][0]["isolation"] = {"resourceQuota": {"quota": {"count/services": "4"}}}
    with pytest.raises(ConfigError, match=r"count/services: 4 is less than the tenant needs, 5 \(vCluster itself 5\)"):
        parse_config(raw)


def test_an_explicit_quota_that_is_no_quantity_is_a_config_error() -> None:
    raw = _tenant_stack(isolation={"resourceQuota": {"quota": {"requests.cpu": "lots"}}})
    with pytest.raises(ConfigError, match=r"isolation\.resourceQuota\.quota\.requests\.cpu: invalid quantity"):
        parse_config(raw)


def test_a_pool_that_may_grow_reserves_a_kubelet_service_for_each_node_it_may_reach() -> None:
    """loft-sh/vcluster@v0.36.1 pkg/controllers/resources/nodes/nodeservice/node_service.go L155-172: a Service
    and its Endpoints per node that runs the tenant's pods; an EKS pool of 1 may grow to maxSize 10. On top of
    the chart's 20 Services and 40 Endpoints: the vCluster's 3 Services and 10 kubelet ones."""
    raw = _tenant_stack()
    raw["cluster"] = {
        "provider": "eks",
        "eks": {"region": "us-west-2"},
        "nodePools": [{"name": "a", "instanceType": "m6i.large", "count": 1, "maxSize": 10}],
    }
    raw["gpu"] = {"mode": "none"}
    quota = _quota(parse_config(raw))
    assert (quota["count/services"], quota["count/endpoints"]) == ("33", "53")


@pytest.mark.parametrize("tenant", [True, False])
@pytest.mark.parametrize(
    ("asked", "limit", "refusal"),
    [
        ({"memory": "1536Mi"}, {"memoryLimit": "1Gi"}, "memoryLimit 1Gi is below memory 1536Mi"),
        ({"cpu": "2"}, {"cpuLimit": "1500m"}, "cpuLimit 1500m is below cpu 2"),
    ],
)
def test_a_workloads_request_above_its_limit_is_refused_naming_both(
    tenant: bool, asked: dict[str, str], limit: dict[str, str], refusal: str
) -> None:
    """The API server refuses a container whose request is above its limit ("must be less than or equal to
    <resource> limit of ...", kubernetes/kubernetes pkg/apis/core/validation ValidateResourceRequirements, not
    mirrored here), a tenant's or a host workload's: caught before deployment."""
    work = _work(**asked, **limit)
    if not tenant:
        del work["tenant"]
    with pytest.raises(ConfigError, match=rf"workloads\[0\]: {refusal}: Kubernetes refuses"):
        parse_config(merged(_tenant_stack(), workloads=[work]))


def test_a_limit_equal_to_the_request_is_accepted() -> None:
    work = _work(cpu="2", cpuLimit="2000m", memory="1Gi", memoryLimit="1024Mi")
    (parsed,) = parse_config(merged(_tenant_stack(), workloads=[work])).workloads
    assert (str(parsed.cpu_limit), str(parsed.memory_limit)) == ("2000m", "1024Mi")


def test_a_pool_of_no_nodes_adds_no_kubelet_service() -> None:
    """Only nodes that run the tenant's pods get a kubelet Service: a pool scaled to 0 (and no maxSize) has none."""
    raw = _tenant_stack()
    raw["cluster"]["nodePools"].append({"name": "spare", "count": 0, "cpu": "16", "memory": "64Gi"})
    assert _quota(parse_config(raw))["count/services"] == _quota(_config())["count/services"]


def test_a_tenant_reached_at_its_own_url_needs_no_node_port_and_no_load_balancer() -> None:
    """kubernetes/kubernetes pkg/quota/v1/evaluator/core/services.go Usage charges node ports and load balancers
    by the Service's type; with apiServerUrl the vCluster's Service keeps the chart's ClusterIP
    (loft-sh/vcluster@v0.36.1:chart/values.yaml L569-580, controlPlane.service.spec.type)."""
    quota = {"services.nodeports": "0", "services.loadbalancers": "0"}
    raw = _tenant_stack(apiServerUrl="https://t1.example.com", isolation={"resourceQuota": {"quota": quota}})
    assert _quota(parse_config(raw))["services.nodeports"] == "0"
    raw["tenants"][0]["apiServerUrl"] = None
    with pytest.raises(ConfigError, match=r"quota\.services\.nodeports: 0 is less than the tenant needs, 2 "):
        parse_config(raw)


def test_a_kind_tenants_node_port_service_needs_no_load_balancer() -> None:
    quota = {"services.loadbalancers": "0"}
    assert _quota(_config(isolation={"resourceQuota": {"quota": quota}}))["services.loadbalancers"] == "0"


def test_a_quota_of_a_thousand_cores_is_written_as_such() -> None:
    """998 limited cores and the vCluster's own 2 (its pods' LimitRange defaults, see test_tenant_sizing)."""
    assert _quota(_config([_work(cpu="998")]))["limits.cpu"] == "1000"


@pytest.mark.parametrize(
    "where",
    [{}, {"apiServerUrl": "https://t1.example.com"}, {"cluster": "existing"}],
    ids=["node-port", "url", "load-balancer"],
)
def test_the_quota_names_exactly_the_resources_the_charts_quota_names(chart, where: dict[str, Any]) -> None:
    """loft-sh/vcluster@v0.36.1:chart/values.yaml policies.resourceQuota.quota: kaistack sizes the chart's quota,
    and names no resource of its own, whichever way the tenant is reached."""
    raw = _tenant_stack(**{k: v for k, v in where.items() if k != "cluster"})
    if where.get("cluster") == "existing":
        raw["cluster"] = {
            "provider": "existing",
            "existing": {"context": "lab"},
            "nodePools": [{"name": "gpu", "gpus": 1}],
        }
    assert set(_quota(parse_config(raw))) == set(chart["policies"]["resourceQuota"]["quota"])


# --- the vCluster's own pods, which the tenant's admission policy lets through ----------------------------------


def test_the_admission_exemption_names_the_statefulset_the_chart_makes_for_this_release(mocks, chart) -> None:
    """The pod policy skips the StatefulSet controller's pods of the set named after the release
    (guardrails.admission.match_conditions). The chart names that set after the release and makes it a StatefulSet
    while the volume claim is on: `auto` with the default backing store (loft-sh/vcluster@v0.36.1
    chart/templates/statefulset.yaml L4-6, _persistence.tpl L4-6 and L33-41). kaistack sets neither, so the set is
    the release's name, and the release is named after the tenant."""
    run_program(mocks, _tenant_stack())
    release = named(mocks.resources, "kaistack-t1-vcluster")
    assert release.inputs["name"] == "t1"
    values = release.inputs["values"]
    control_plane = values.get("controlPlane", {})
    assert "backingStore" not in control_plane
    assert "persistence" not in control_plane.get("statefulSet", {})
    assert chart["controlPlane"]["statefulSet"]["persistence"]["volumeClaim"]["enabled"] == "auto"
    (policy,) = [
        r
        for r in of_type(mocks.resources, "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy")
        if r.inputs["metadata"]["name"] == "kaistack-tenant-t1"
    ]
    (condition,) = policy.inputs["spec"]["matchConditions"]
    assert "r.kind == 'StatefulSet' && r.name == 't1'" in condition["expression"]
