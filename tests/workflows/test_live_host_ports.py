"""Host ports a live cluster's pods bind, KAI's and other schedulers' alike, as KAI's PodFitsHostPorts reads them.

KAI@v0.17.0 puts every pod on its node in the session (cluster_info.go:530-551; node_info.go:419) and runs
Kubernetes' NodePorts filter as a predicate (k8s_internal/predicates/predicates.go:69-85). A hostNetwork pod's
ports carry hostPort = containerPort once the API server has defaulted it, which is how a dump shows them.
"""

from __future__ import annotations

from typing import Any

from kaistack.ops.diagnose import diagnose
from kaistack.ops.live_snapshot import build


def _node(name: str) -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {}},
        "spec": {},
        "status": {"allocatable": allocatable},
    }


def _pod(name: str, port: int, *, scheduler: str = "kai-scheduler", node: str | None = None) -> dict[str, Any]:
    container = {
        "name": "c",
        "ports": [{"containerPort": port, "hostPort": port, "protocol": "TCP"}],
        "resources": {"limits": {"nvidia.com/gpu": "1"}} if scheduler == "kai-scheduler" else {},
    }
    metadata = {"name": name, "namespace": "ml", "labels": {"kai.scheduler/queue": "q"}}
    spec: dict[str, Any] = {"schedulerName": scheduler, "hostNetwork": True, "containers": [container]}
    status = {"phase": "Pending"}
    if node is not None:
        spec["nodeName"] = node
        status = {"phase": "Running"}
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def _queue() -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}
    return {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"resources": resources}}


def test_a_kai_pods_host_ports_are_read() -> None:
    snap = build([_node("n1"), _queue(), _pod("p", 29500)]).snapshot
    assert snap.jobs[0].tasks[0].constraints.host_ports == (("0.0.0.0", "TCP", 29500),)


def test_another_schedulers_pod_on_the_only_node_keeps_its_host_port_from_a_kai_pod() -> None:
    objects = [_node("n1"), _queue(), _pod("exporter", 9100, scheduler="default-scheduler", node="n1"), _pod("p", 9100)]
    [pending] = diagnose(objects).pending
    assert pending.would_place is False
    assert pending.reason == "host port TCP 9100 is taken on every node with room for it: n1 has a pod on TCP 9100"


def test_another_schedulers_host_port_is_kept_only_when_some_kai_pod_wants_one() -> None:
    foreign = _pod("exporter", 9100, scheduler="default-scheduler", node="n1")
    plain = _pod("p", 9100)
    plain["spec"]["containers"][0].pop("ports")
    plain["spec"]["hostNetwork"] = False
    assert build([_node("n1"), _queue(), foreign, plain]).snapshot.nodes[0].outside_pods == ()
    [kept] = build([_node("n1"), _queue(), foreign, _pod("q", 80)]).snapshot.nodes[0].outside_pods
    assert kept.host_ports == (("0.0.0.0", "TCP", 9100),)


def test_a_kai_pod_on_another_port_is_placed_next_to_it() -> None:
    objects = [_node("n1"), _queue(), _pod("exporter", 9100, scheduler="default-scheduler", node="n1"), _pod("p", 80)]
    [pending] = diagnose(objects).pending
    assert pending.would_place is True
