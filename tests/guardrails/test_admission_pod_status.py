"""The tenant admission policy on `pods/status` updates: labels and annotations stay as they were, nothing else.

A status update may change a pod's labels and annotations: podStatusStrategy.PrepareForUpdate resets only the spec,
deletionTimestamp and owner references (kubernetes/kubernetes pkg/registry/core/pod/strategy.go), and "pods" in a
policy's rules does not match the subresource (admissionregistration/v1 Rule.Resources). A review found a tenant
with pods/status rights (vCluster's syncer role has them: loft-sh/vcluster@v0.36.1 chart/templates/role.yaml) could
move a bound pod to another queue or PodGroup, or lower its GPU share, that way. The kubelet's, KAI's and vCluster's
own status updates carry status alone (vCluster: pkg/patcher/apply.go), so the other rules are skipped for them:
one of them refusing a pod admitted before the policy would stop the kubelet reporting it.
"""

from __future__ import annotations

import copy
from typing import Any

import celpy
import pytest

from kaistack.guardrails.admission import tenant_policy

POLICY = tenant_policy("team-a", ["team-a"], "kai.scheduler/queue")
KUBELET = "system:node:kind-worker"


def _pod(**labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p-x-default-x-team-a",
            "namespace": "vcluster-team-a",
            "labels": {"kai.scheduler/queue": "team-a", **labels},
            "annotations": {"gpu-fraction": "0.9", "pod-group-name": "pg-p-1"},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "nodeName": "kind-worker",
            "containers": [{"name": "m", "image": "x"}],
        },
        "status": {"phase": "Running"},
    }


def _denials(
    new: dict[str, Any],
    old: dict[str, Any],
    sub_resource: str | None,
    user: str = KUBELET,
    functions: dict[str, Any] | None = None,
) -> list[str]:
    """The policy's messages for an UPDATE of `sub_resource` (None: the pod itself); `functions`: CEL functions
    cel-python lacks (test_admission_pod_resize gives Kubernetes' quantity library)."""
    env = celpy.Environment()
    request: dict[str, Any] = {"operation": "UPDATE", "userInfo": {"username": user}}
    if sub_resource is not None:
        request["subResource"] = sub_resource
    activation = {
        "object": celpy.json_to_cel(new),
        "oldObject": celpy.json_to_cel(old),
        "request": celpy.json_to_cel(request),
    }
    denied = []
    for v in POLICY["spec"]["validations"]:
        try:
            ok = env.program(env.compile(v["expression"]), functions=functions).evaluate(activation)
        except celpy.CELEvalError:
            ok = False
        if not (isinstance(ok, celpy.celtypes.BoolType) and bool(ok)):
            denied.append(v["message"])
    return denied


def test_a_status_update_that_changes_nothing_but_status_passes() -> None:
    old = _pod()
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    assert _denials(new, old, "status") == []


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p["metadata"]["labels"].update({"kai.scheduler/queue": "team-b"}),
        lambda p: p["metadata"]["annotations"].update({"gpu-fraction": "0.01"}),
        lambda p: p["metadata"]["annotations"].update({"pod-group-name": "pg-prod-train"}),
        lambda p: p["metadata"].pop("labels"),
    ],
    ids=["queue", "share", "pod-group", "labels-removed"],
)
def test_a_status_update_that_changes_labels_or_annotations_is_refused(change: Any) -> None:
    old = _pod()
    new = copy.deepcopy(old)
    change(new)
    assert _denials(new, old, "status") == [
        "tenant team-a: a pods/status update may not change a pod's labels or annotations (its queue, PodGroup and "
        "GPU share are read from them)"
    ]


def test_a_pod_admitted_before_the_policy_can_still_have_its_status_reported() -> None:
    """Owned, on another scheduler, without a queue: every other rule would refuse it, not its status update."""
    old = _pod()
    old["metadata"]["labels"] = {}
    old["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "r", "uid": "u", "apiVersion": "apps/v1"}]
    old["spec"]["schedulerName"] = "default-scheduler"
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Succeeded"}
    assert _denials(new, old, "status") == []
    assert _denials(new, old, "") != []  # the same change as a plain update is judged by every rule


def test_the_policy_matches_the_status_subresource() -> None:
    [rule] = POLICY["spec"]["matchConstraints"]["resourceRules"]
    assert "pods/status" in rule["resources"]
