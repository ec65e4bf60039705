"""The tenant's second host policy: the Services and volume claims its vCluster syncs (admission_objects).

Evaluated with cel-python as the API server evaluates a ValidatingAdmissionPolicy: match conditions, then each
validation, an error denying (failurePolicy Fail). Facts at loft-sh/vcluster@v0.36.1: a Service's spec is copied
to the host whole (pkg/controllers/resources/services/translate.go, translate.HostMetadata), and without synced
PersistentVolumes a claim's volumeName and selector are copied untranslated (pkg/controllers/resources/
persistentvolumeclaims/translate.go, translateSelector: `if !s.useFakePersistentVolumes`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import celpy
import pytest
from test_policy_admission import _evaluate, _unguarded_old_object_reads

from kaistack.guardrails.admission_objects import VOLUME_BINDERS, tenant_objects_binding, tenant_objects_policy

SYNCER = "system:serviceaccount:vcluster-team-a:vc-team-a"
HELM = "kubernetes-admin"  # Pulumi's Helm release creates the vCluster's own Services
STATEFULSET_CONTROLLER = "system:serviceaccount:kube-system:statefulset-controller"
POLICY = tenant_objects_policy("team-a")


@dataclass(frozen=True)
class Case:
    resource: str
    obj: dict[str, Any]
    allowed: bool
    operation: str = "CREATE"
    user: str = SYNCER
    old: dict[str, Any] | None = None


def _service(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web-x-default-x-team-a", "namespace": "vcluster-team-a"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}, **spec},
    }


def _claim(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data-x-default-x-team-a", "namespace": "vcluster-team-a"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec},
    }


def _vcluster_claim() -> dict[str, Any]:
    """The claim the StatefulSet controller makes from the chart's template: `data-<set>-<ordinal>`."""
    claim = _claim()
    claim["metadata"]["name"] = "data-team-a-0"
    claim["metadata"]["labels"] = {"app": "vcluster", "release": "team-a"}
    return claim


def _bound(claim: dict[str, Any], volume: str = "pvc-0d1c") -> dict[str, Any]:
    out = copy.deepcopy(claim)
    out["spec"]["volumeName"] = volume
    return out


CASES: dict[str, Case] = {
    "a synced ClusterIP Service": Case("services", _service(), True),
    "the vCluster's own Service, from its Helm release": Case("services", _service(type="NodePort"), True, user=HELM),
    "a synced Service with externalIPs (CVE-2020-8554)": Case("services", _service(externalIPs=["10.0.0.5"]), False),
    "externalIPs added to a synced Service": Case(
        "services", _service(externalIPs=["8.8.8.8"]), False, operation="UPDATE", old=_service()
    ),
    "a Service from before the policy, its finalizer removed so it can go": Case(
        "services",
        _service(externalIPs=["10.0.0.5"], type="LoadBalancer"),
        True,
        operation="UPDATE",
        user="system:serviceaccount:kube-system:service-controller",
        old=_service(externalIPs=["10.0.0.5"], type="LoadBalancer"),
    ),
    "another external IP added to a Service from before the policy": Case(
        "services",
        _service(externalIPs=["10.0.0.5", "8.8.8.8"]),
        False,
        operation="UPDATE",
        old=_service(externalIPs=["10.0.0.5"]),
    ),
    "a synced claim for a dynamically provisioned volume": Case("persistentvolumeclaims", _claim(), True),
    "a synced claim naming a host volume": Case("persistentvolumeclaims", _claim(volumeName="team-b-data"), False),
    "a synced claim selecting host volumes by label": Case(
        "persistentvolumeclaims", _claim(selector={"matchLabels": {"team": "b"}}), False
    ),
    "the volume binder binds a claim": Case(
        "persistentvolumeclaims", _bound(_claim()), True, operation="UPDATE", user=VOLUME_BINDERS[0], old=_claim()
    ),
    "the volume binder, as the controller manager (no --use-service-account-credentials), binds a claim": Case(
        "persistentvolumeclaims",
        _bound(_claim()),
        True,
        operation="UPDATE",
        user="system:kube-controller-manager",
        old=_claim(),
    ),
    "the syncer updates a bound claim, its volume unchanged": Case(
        "persistentvolumeclaims", _bound(_claim()), True, operation="UPDATE", old=_bound(_claim())
    ),
    "the syncer gives a pending claim a volume": Case(
        "persistentvolumeclaims", _bound(_claim(), "team-b-data"), False, operation="UPDATE", old=_claim()
    ),
    "the syncer moves a bound claim to another volume": Case(
        "persistentvolumeclaims",
        _bound(_claim(), "team-b-data"),
        False,
        operation="UPDATE",
        old=_bound(_claim(), "pv-team-a"),
    ),
    # loft-sh/vcluster@v0.36.1 chart/templates/_persistence.tpl L15-26: template `data`, accessModes, a size.
    "the StatefulSet controller's claim for the vCluster's data": Case(
        "persistentvolumeclaims", _vcluster_claim(), True, user=STATEFULSET_CONTROLLER
    ),
    "another StatefulSet's claim selecting host volumes": Case(
        "persistentvolumeclaims", _claim(selector={"matchLabels": {"team": "b"}}), False, user=STATEFULSET_CONTROLLER
    ),
    "a claim naming a host volume, made by the controller manager": Case(
        "persistentvolumeclaims", _claim(volumeName="team-b-data"), False, user="system:kube-controller-manager"
    ),
}


def cel_denials(policy: dict[str, Any], case: Case) -> list[str]:
    env = celpy.Environment()
    request = {
        "operation": case.operation,
        "userInfo": {"username": case.user},
        "resource": {"resource": case.resource},
    }
    activation = {
        "object": celpy.json_to_cel(case.obj),
        "oldObject": celpy.json_to_cel(case.old),
        "request": celpy.json_to_cel(request),
    }
    for condition in policy["spec"].get("matchConditions", []):
        applies = _evaluate(env, condition["expression"], activation)
        if applies is None:
            return [f"matchCondition {condition['name']} failed to evaluate"]
        if not applies:
            return []
    return [v["message"] for v in policy["spec"]["validations"] if not _evaluate(env, v["expression"], activation)]


@pytest.mark.parametrize("name", list(CASES))
def test_host_admission_cel_for_tenant_objects(name: str) -> None:
    case = CASES[name]
    denials = cel_denials(POLICY, case)
    assert (not denials) is case.allowed, denials


def test_every_old_object_read_is_behind_an_update_guard() -> None:
    assert [e for v in POLICY["spec"]["validations"] for e in _unguarded_old_object_reads(v["expression"])] == []


def test_the_policy_matches_service_and_claim_creates_and_updates_and_fails_closed() -> None:
    assert POLICY["spec"]["failurePolicy"] == "Fail"
    assert POLICY["spec"]["matchConstraints"]["resourceRules"] == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["services", "persistentvolumeclaims"],
        }
    ]


def test_no_request_is_let_through_unchecked() -> None:
    """The vCluster's own claim passes every rule, so nobody's requests need skipping (the pods policy's exemption
    for the StatefulSet controller once covered this policy too, and every StatefulSet's claims with it)."""
    assert "matchConditions" not in POLICY["spec"]


def test_the_binding_selects_the_tenants_host_namespace_and_denies() -> None:
    spec = tenant_objects_binding("team-a", "vcluster-team-a")["spec"]
    assert spec["policyName"] == POLICY["metadata"]["name"]
    assert spec["validationActions"] == ["Deny"]
    assert spec["matchResources"] == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "vcluster-team-a"}}
    }
