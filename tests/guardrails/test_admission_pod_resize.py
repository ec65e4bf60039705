"""The tenant admission policy on `pods/resize`: cpu and memory requests may shrink in place, never grow.

From Kubernetes 1.35 vCluster's syncer copies a tenant's new container resources to the host pod through the resize
subresource (loft-sh/vcluster@v0.36.1 pkg/controllers/resources/pods/syncer.go:413-430, 485-516), which "pods" in a
policy's rules does not match. KAI checks a queue's limits only when it places a pod, so a pod grown in place took cpu
or memory past its queue's limit.

The expressions call Kubernetes' CEL quantity library (k8s.io/apiserver pkg/cel/library/quantity.go), which
cel-python lacks: `quantity` and `isGreaterThan` are given here over kaistack's exact Quantity, with the library's
meaning (an exact comparison of the two amounts).
"""

from __future__ import annotations

import copy
from typing import Any

import celpy
import pytest
from test_admission_pod_status import _denials as status_denials

from placement.quantity import Quantity

SYNCER = "system:serviceaccount:vcluster-team-a:vc-team-a"
RESIZE_MESSAGE = "tenant team-a: a pod may not grow its cpu or memory requests in place (pods/resize)"


def _quantity(text: Any) -> Quantity:
    return Quantity.parse(str(text))


def _is_greater_than(a: Quantity, b: Quantity) -> celpy.celtypes.BoolType:
    return celpy.celtypes.BoolType(a.value > b.value)


FUNCTIONS = {"quantity": _quantity, "isGreaterThan": _is_greater_than}


def _pod(cpu: str | None = "1", memory: str | None = "1Gi", *, sidecar_cpu: str | None = None) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p-x-default-x-team-a",
            "namespace": "vcluster-team-a",
            "labels": {"kai.scheduler/queue": "team-a"},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "nodeName": "kind-worker",
            "containers": [{"name": "m", "image": "x", "resources": {"requests": requests}}],
        },
        "status": {"phase": "Running"},
    }
    if sidecar_cpu is not None:
        pod["spec"]["initContainers"] = [
            {"name": "s", "image": "x", "restartPolicy": "Always", "resources": {"requests": {"cpu": sidecar_cpu}}}
        ]
    return pod


def _denials(new: dict[str, Any], old: dict[str, Any], sub_resource: str | None = "resize") -> list[str]:
    return status_denials(new, old, sub_resource, SYNCER, FUNCTIONS)


def _refused(new: dict[str, Any], old: dict[str, Any]) -> bool:
    return any(d.startswith(RESIZE_MESSAGE) for d in _denials(new, old))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (_pod(cpu="1"), _pod(cpu="2")),
        (_pod(cpu="500m"), _pod(cpu="501m")),
        (_pod(memory="1Gi"), _pod(memory="1025Mi")),
        (_pod(memory=None), _pod(memory="1Mi")),
        (_pod(sidecar_cpu="100m"), _pod(sidecar_cpu="200m")),
    ],
    ids=["cpu", "cpu-by-a-millicore", "memory", "memory-from-none", "native-sidecar"],
)
def test_a_request_grown_in_place_is_refused(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert _refused(new, old)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (_pod(cpu="2"), _pod(cpu="1")),
        (_pod(memory="1Gi"), _pod(memory="1024Mi")),
        (_pod(cpu="1"), _pod(cpu="1000m")),
        (_pod(cpu="1", memory="2Gi"), _pod(cpu="1", memory=None)),
        (_pod(sidecar_cpu="200m"), _pod(sidecar_cpu="0.1")),
    ],
    ids=["cpu-shrunk", "memory-same-in-other-units", "cpu-same-in-millicores", "memory-request-dropped", "sidecar"],
)
def test_a_request_kept_or_shrunk_in_place_passes(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert _denials(new, old) == []


def test_a_limit_raised_with_the_request_kept_passes() -> None:
    """KAI charges requests (pod_info.go getPodResourceRequest); limits decide nothing of a queue's."""
    old = _pod()
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "8"}
    assert _denials(new, old) == []


def test_a_container_the_old_pod_lacks_counts_as_growth() -> None:
    """The API server refuses adding a container by resize; should one arrive, its requests are all growth."""
    old = _pod()
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["name"] = "renamed"
    assert _refused(new, old)


def test_the_same_growth_outside_a_resize_is_not_this_rules() -> None:
    """A plain pod update cannot change resources (the API server refuses it); the rule reads resize requests."""
    assert not any(d.startswith(RESIZE_MESSAGE) for d in _denials(_pod(cpu="2"), _pod(cpu="1"), sub_resource=None))
