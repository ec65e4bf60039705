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
from placement.model import Node, Placement, Snapshot
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


def test_a_releasing_outside_pod_is_left_out_of_the_fair_share_total() -> None:
    node = Node("n1", gpus=4, cpu_millis=8000, releasing={"nvidia.com/gpu": 1, "cpu": 500})
    ssn = Session(Snapshot((node,), (), ()), Placement())
    ssn.open()
    assert (ssn.total[0], ssn.total[2]) == (7500.0, 3.0)
