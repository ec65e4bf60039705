"""Pods KAI does not schedule, as its cache counts them on their nodes.

KAI@v0.17.0: every unfinished pod is on its node whatever its scheduler (pkg/scheduler/cache/cluster_info/
cluster_info.go:530-551), with the status getTaskStatus gives it (pod_info.go:465-479): another scheduler's pod
being deleted is Releasing, so a KAI pod may be pipelined onto what it holds (node_info.go addTaskResources),
unless it still runs more than 2 minutes after its deletion (StuckInReleasing, held as used). The fair-share
total leaves out every such pod that is active-used, Releasing ones included (plugins/proportion/proportion.go:
286-295).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kaistack.ops.diagnose import diagnose
from kaistack.ops.live_snapshot import build
from placement.model import Placement
from placement.session import Session

DELETED_AT = datetime(2026, 11, 25, tzinfo=UTC)


def _node() -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "1"}
    return {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": allocatable}}


def _pod(name: str, scheduler: str, node: str | None = None, deleted: bool = False) -> dict[str, Any]:
    container = {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    metadata: dict[str, Any] = {"name": name, "namespace": "ml", "labels": {"kai.scheduler/queue": "q"}}
    if deleted:
        metadata["deletionTimestamp"] = "2026-11-25T00:00:00Z"
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [container]}
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def _queue() -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}
    return {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"resources": resources}}


LEAVING = _pod("other", "default-scheduler", node="n1", deleted=True)


def test_another_scheduler_s_pod_being_deleted_holds_its_gpu_as_releasing() -> None:
    [node] = build([_node(), LEAVING], now=DELETED_AT + timedelta(seconds=30)).snapshot.nodes
    assert (node.gpus, node.releasing["nvidia.com/gpu"], node.releasing["pods"]) == (1, 1.0, 1.0)


def test_a_kai_pod_is_pipelined_onto_the_gpu_another_scheduler_s_pod_is_releasing() -> None:
    objects = [_node(), _queue(), LEAVING, _pod("want", "kai-scheduler")]
    [pending] = diagnose(objects, now=DELETED_AT + timedelta(seconds=30)).pending
    assert (pending.would_place, pending.reason.split(":")[0]) == (True, "pipelined onto n1")


def test_another_scheduler_s_stuck_pod_keeps_its_gpu_in_use() -> None:
    objects = [_node(), _queue(), LEAVING, _pod("want", "kai-scheduler")]
    [pending] = diagnose(objects, now=DELETED_AT + timedelta(minutes=5)).pending
    assert pending.would_place is False


def test_another_scheduler_s_pods_are_left_out_of_the_fair_share_total_and_kai_s_utility_pods_are_not() -> None:
    reservation = _pod("reserve", "default-scheduler", node="n1")
    reservation["metadata"]["labels"] = {"app": "kai-resource-reservation"}
    reservation["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "250m"}}
    other = _pod("other", "default-scheduler", node="n1")
    other["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "500m"}}
    snap = build([_node(), reservation, other], now=DELETED_AT).snapshot
    ssn = Session(snap, Placement())
    ssn.open()
    assert (ssn.total[0], ssn.total[2]) == (7500.0, 0.0)


def test_a_node_over_committed_with_another_scheduler_s_pod_takes_no_pod() -> None:
    # One of two GPUs went away: n1 reports 1 while another scheduler's pod and a KAI pod each hold one. The
    # KAI pod is charged (the node's own allocatable is not 0, node_info.go:477-481), idle is -1, and every
    # dimension is compared (node_info.go:351-352, 755-761): a CPU pod is refused there.
    node = _node()
    other, mine = _pod("other", "default-scheduler", node="n1"), _pod("mine", "kai-scheduler", node="n1")
    cpu_pod = _pod("cpu", "kai-scheduler")
    cpu_pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    [pending] = diagnose([node, _queue(), other, mine, cpu_pod], now=DELETED_AT).pending
    assert pending.would_place is False


def test_a_kai_pod_deleted_while_its_bind_request_is_in_flight_is_releasing_on_that_node() -> None:
    # NodeName comes from the BindRequest (pod_info.go:192-195) and a Pending pod being deleted is Releasing
    # (476-478), so the next pod is pipelined onto its GPU rather than bound to a GPU that looks idle.
    def group(name: str) -> dict[str, Any]:
        return {
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"queue": "q", "minMember": 1},
        }

    leaving, want = _pod("leaving", "kai-scheduler", deleted=True), _pod("want", "kai-scheduler")
    leaving["metadata"]["annotations"] = {"pod-group-name": "g1"}
    want["metadata"]["annotations"] = {"pod-group-name": "g2"}
    request = {
        "kind": "BindRequest",
        "metadata": {"name": "leaving-br", "namespace": "ml"},
        "spec": {"podName": "leaving", "selectedNode": "n1"},
    }
    objects = [_node(), _queue(), group("g1"), group("g2"), leaving, want, request]
    [pending] = diagnose(objects, now=DELETED_AT + timedelta(seconds=30)).pending
    assert pending.reason.split(":")[0] == "pipelined onto n1"


def test_another_scheduler_s_pod_that_names_a_pod_group_is_one_of_its_tasks() -> None:
    # KAI lists a PodGroup's pods by the pod-group-name annotation alone (cluster_info.go:456-466,
    # indexers.go:17-25), whatever their scheduler: the pod counts for the job, not as held on the node.
    group = {"kind": "PodGroup", "metadata": {"name": "g", "namespace": "ml"}, "spec": {"queue": "q", "minMember": 2}}
    other, mine = _pod("other", "default-scheduler", node="n1"), _pod("mine", "kai-scheduler")
    for pod in (other, mine):
        pod["metadata"]["annotations"] = {"pod-group-name": "g"}
    snap = build([_node(), _queue(), group, other, mine], now=DELETED_AT).snapshot
    [job] = snap.jobs
    assert ([t.state for t in job.tasks], dict(snap.nodes[0].held)) == (["Running", "Pending"], {})
