"""A cluster's scalar resources (RDMA devices, hugepages, ephemeral storage) as KAI's cache reads them.

KAI@v0.17.0: a node's allocatable through resource_info.ResourceFromResourceList (resource_info.go:53-79) and a
pod's request through getPodResourceRequest (pod_info.go:403-441: containers, native sidecars, the init peak,
overhead), each name in its unit (resource_requirment.go:45-70: thousandths, bytes for (ephemeral-)storage).
Every unfinished pod is on its node whatever its scheduler (cluster_info.go:530-551).
"""

from __future__ import annotations

from typing import Any

from kaistack.ops.diagnose import diagnose
from kaistack.ops.live_pods import pod_requests
from kaistack.ops.live_snapshot import build


def _node(name: str = "n1", **extra: str) -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "8", **extra}
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable}}


def _pod(name: str, node: str | None = None, scheduler: str = "kai-scheduler", **resources: Any) -> dict[str, Any]:
    container = {"name": "c", "resources": resources or {"requests": {"cpu": "1"}}}
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [container]}
    if node:
        spec["nodeName"] = node
    metadata = {"name": name, "namespace": "ml", "labels": {"kai.scheduler/queue": "q"}}
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def _queue() -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}
    return {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"resources": resources}}


RDMA_LIMIT = {"limits": {"rdma/ib": "1", "nvidia.com/gpu": "1"}}


def test_a_node_s_devices_and_a_pod_s_request_are_read_in_thousandths() -> None:
    snap = build([_node(**{"rdma/ib": "4"}), _pod("p", **RDMA_LIMIT)]).snapshot
    assert (snap.nodes[0].scalar, snap.jobs[0].tasks[0].scalar) == ({"rdma/ib": 4000}, {"rdma/ib": 1000})


def test_ephemeral_storage_is_read_in_bytes_and_the_init_peak_counts() -> None:
    init = {"name": "i", "resources": {"requests": {"ephemeral-storage": "10Gi"}}}
    pod = _pod("p", requests={"ephemeral-storage": "2Gi"})
    pod["spec"]["initContainers"] = [init]
    assert pod_requests(pod)["ephemeral-storage"] == 10 * 2**30


def test_a_pod_s_overhead_adds_its_scalar_resources() -> None:
    pod = _pod("p", requests={"hugepages-2Mi": "1Gi"})
    pod["spec"]["overhead"] = {"hugepages-2Mi": "2Mi"}
    assert pod_requests(pod)["hugepages-2Mi"] == (2**30 + 2 * 2**20) * 1000


def test_a_name_kai_does_not_count_is_not_read() -> None:
    pod = _pod("p", requests={"cpu": "1", "foo": "3"})
    assert "foo" not in pod_requests(pod)


def test_another_scheduler_s_pod_takes_its_node_s_devices() -> None:
    other = _pod("other", node="n1", scheduler="default-scheduler", limits={"rdma/ib": "3"})
    snap = build([_node(**{"rdma/ib": "4"}), other, _pod("p", **RDMA_LIMIT)]).snapshot
    assert (snap.nodes[0].scalar, snap.nodes[0].held["rdma/ib"]) == ({"rdma/ib": 4000}, 3000)


def test_a_node_keeps_only_the_scalar_resources_some_kai_pod_asks_for() -> None:
    node = _node(**{"rdma/ib": "4", "ephemeral-storage": "100Gi", "hugepages-1Gi": "0"})
    snap = build([node, _pod("p", **RDMA_LIMIT)]).snapshot
    assert snap.nodes[0].scalar == {"rdma/ib": 4000}


def test_diagnose_names_the_device_no_node_has_free() -> None:
    busy = _pod("busy", node="n1", **RDMA_LIMIT)
    objects = [_node(**{"rdma/ib": "1"}), _queue(), busy, _pod("want", **RDMA_LIMIT)]
    [pending] = diagnose(objects).pending
    assert pending.reason == "no node has 1 rdma/ib free (none has any)"
