"""A cluster's objects as KAI's cache presents them (kaistack.ops.live_snapshot), rule by rule.

Each fact is KAI@v0.17.0's: pkg/scheduler/cache/cache.go:81-99 and cluster_info.go:530-551 (every unfinished
pod is on its node, whatever its scheduler), pkg/scheduler/api/pod_info/pod_info.go:403-441
(getPodResourceRequest) and :465-503 (getTaskStatus), cluster_info.go:484-497 (PodGroup preemptibility),
subgroup_info/podset.go:114-119 (a group short of alive pods is not ready),
pkg/common/resources/gpu_sharing.go:87-100 (GetGpuGroups).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kaistack.ops.diagnose import diagnose
from kaistack.ops.live_pods import pod_requests
from kaistack.ops.live_snapshot import build, by_kind
from placement.model import Placement
from placement.session import Session


def _node(name: str = "n1", gpus: int = 2, **spec: Any) -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"kind": "Node", "metadata": {"name": name}, "spec": spec, "status": {"allocatable": allocatable}}


def _pod(name: str, node: str | None = None, scheduler: str = "kai-scheduler", **extra: Any) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, **extra.pop("resources", {})}}
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [container], **extra.pop("spec", {})}
    if node:
        spec["nodeName"] = node
    metadata = {"name": name, "namespace": "ml", "labels": {"kai.scheduler/queue": "q"}, **extra.pop("metadata", {})}
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def _queue() -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}
    return {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"resources": resources}}


def _gpu_limit(n: int) -> dict[str, Any]:
    return {"resources": {"limits": {"nvidia.com/gpu": str(n)}}}


def _idle(objects: list[dict[str, Any]]) -> tuple[int, float, int]:
    """The node's idle GPUs, CPU and pod slots once the session holds what is on it."""
    ssn = Session(build(objects).snapshot, Placement())
    ssn.open()
    [node] = ssn.node_list
    return node.idle_gpus, node.idle_cpu, node.idle_pods


def test_another_scheduler_s_pod_takes_its_node_s_capacity() -> None:
    daemon = _pod("plain", node="n1", scheduler="default-scheduler", **_gpu_limit(2))
    assert _idle([_node(), daemon]) == (0, 7000.0, 109)


def test_a_kai_pod_blocked_by_another_scheduler_s_gpus_is_not_reported_as_placeable() -> None:
    daemon = _pod("plain", node="n1", scheduler="default-scheduler", **_gpu_limit(2))
    report = diagnose([_node(), _queue(), daemon, _pod("want", **_gpu_limit(1))])
    [pending] = report.pending
    assert pending.would_place is False


def test_a_cordoned_node_keeps_its_pods_and_takes_no_new_one() -> None:
    # CheckNodeConditionPredicate (predicates.go:343-349): an unschedulable node is not ready.
    objects = [_node(unschedulable=True), _queue(), _pod("running", node="n1"), _pod("new", **_gpu_limit(1))]
    snap = build(objects).snapshot
    assert (snap.nodes[0].ready, [t.node for j in snap.jobs for t in j.tasks]) == (False, ["n1", None])
    [pending] = diagnose(objects).pending
    assert pending.reason == "no node is ready (each is cordoned, NotReady or under pressure)"


DELETED = {"metadata": {"deletionTimestamp": "2026-11-25T00:00:00Z"}}
DELETED_AT = datetime(2026, 11, 25, tzinfo=UTC)


def _states(objects: list[dict[str, Any]], seconds_after_deletion: float) -> list[str]:
    snap = build(objects, now=DELETED_AT + timedelta(seconds=seconds_after_deletion)).snapshot
    return [t.state for j in snap.jobs for t in j.tasks]


def test_a_running_pod_being_deleted_is_releasing_and_a_pending_one_is_left_out() -> None:
    assert _states([_node(), _pod("going", node="n1", **DELETED), _pod("never", **DELETED)], 30) == ["Releasing"]


def test_a_running_pod_deleted_over_two_minutes_ago_is_stuck_in_releasing() -> None:
    # pod_info.go:465-472 with constants.go:28 DefaultStuckInReleasingThreshold = 2 minutes, strictly over.
    assert _states([_node(), _pod("stuck", node="n1", **DELETED)], 121) == ["StuckInReleasing"]
    assert _states([_node(), _pod("fresh", node="n1", **DELETED)], 120) == ["Releasing"]


def test_a_bound_pod_not_yet_running_is_releasing_however_long_ago_it_was_deleted() -> None:
    # pod_info.go:476-478: phase Pending with a deletionTimestamp is Releasing, never stuck.
    pod = _pod("bound", node="n1", **DELETED)
    pod["status"]["phase"] = "Pending"
    assert _states([_node(), pod], 3600) == ["Releasing"]


@pytest.mark.parametrize("stamp", ["yesterday", "2026-11-25T00:00:00", 17, "9" * 100])
def test_an_unreadable_deletion_time_counts_as_a_fresh_deletion(stamp: Any) -> None:
    pod = _pod("odd", node="n1", metadata={"deletionTimestamp": stamp})
    assert _states([_node(), pod], 3600) == ["Releasing"]


def test_a_stuck_pod_is_named_in_the_notes_with_its_deletion_time() -> None:
    live = build([_node(), _pod("stuck", node="n1", **DELETED)], now=DELETED_AT + timedelta(minutes=5))
    assert any("ml/stuck" in n and "StuckInReleasing" in n and "2026-11-25T00:00:00Z" in n for n in live.notes)


def test_a_gpu_held_by_a_stuck_pod_is_not_offered_to_a_pending_pod() -> None:
    # allocate_stuck_in_releasing_test.go: a Releasing pod's GPU lets the pending pod be pipelined, a stuck
    # pod's GPU does not (node_info.go:485-493).
    old = _pod("old", node="n1", **_gpu_limit(1), **DELETED)
    objects = [_node(gpus=1), _queue(), old, _pod("new", **_gpu_limit(1))]
    fresh = diagnose(objects, now=DELETED_AT + timedelta(seconds=30))
    stuck = diagnose(objects, now=DELETED_AT + timedelta(minutes=5))
    assert [(p.would_place, p.reason.split(":")[0]) for p in fresh.pending] == [(True, "pipelined onto n1")]
    assert [p.would_place for p in stuck.pending] == [False]


def test_a_mig_request_is_read_as_mig_devices() -> None:
    pod = _pod("m", resources={"limits": {"nvidia.com/mig-1g.10gb": "1"}})
    [job] = build([_node(), pod]).snapshot.jobs
    assert dict(job.tasks[0].mig) == {"nvidia.com/mig-1g.10gb": 1}


def test_the_podgroup_s_preemptibility_wins_over_its_priority() -> None:
    group = {
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ml"},
        "spec": {"queue": "q", "minMember": 1, "priorityClassName": "train", "preemptibility": "non-preemptible"},
    }
    pod = _pod("p", metadata={"annotations": {"pod-group-name": "g"}})
    [job] = build([_node(), group, pod]).snapshot.jobs
    assert (job.priority, job.is_preemptible) == (50, False)


def test_min_member_is_not_cut_to_the_pods_present() -> None:
    group = {"kind": "PodGroup", "metadata": {"name": "g", "namespace": "ml"}, "spec": {"queue": "q", "minMember": 3}}
    pods = [_pod(f"p{i}", metadata={"annotations": {"pod-group-name": "g"}}) for i in range(2)]
    [job] = build([_node(), group, *pods]).snapshot.jobs
    assert job.min_member == 3


def test_a_pod_s_request_counts_sidecars_the_init_peak_and_overhead() -> None:
    sidecar = {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}}
    init = {"name": "i", "resources": {"requests": {"cpu": "4"}}}
    pod = _pod("p", spec={"initContainers": [sidecar, init], "overhead": {"cpu": "250m"}})
    # max(1 + 0.5 running, 4 + 0.5 during init) + 0.25 overhead
    assert pod_requests(pod)["cpu"] == 4750


def test_a_multi_device_share_keeps_its_device_count_and_every_gpu_group() -> None:
    labels = {"kai.scheduler/queue": "q", "runai-gpu-group": "a", "runai-gpu-group/a": "a", "runai-gpu-group/b": "b"}
    annotations = {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}
    pod = _pod("p", node="n1", metadata={"labels": labels, "annotations": annotations})
    [job] = build([_node(), pod]).snapshot.jobs
    assert (job.tasks[0].gpu_devices, job.tasks[0].gpu_groups) == (2, ("a", "b"))


# KAI@v0.17.0 pkg/scheduler/cache/cluster_info/cluster_info.go:443-470: only pods of a PodGroup are scheduled.


def _group(name: str) -> dict[str, Any]:
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": "ml"}, "spec": {"queue": "q", "minMember": 1}}


def test_a_pod_without_a_podgroup_is_pending_for_that_not_for_capacity() -> None:
    report = diagnose([_node(), _queue(), _group("other"), _pod("lone")])
    [pending] = report.pending
    assert pending.reason.startswith("no PodGroup: the pod has no pod-group-name annotation")
    assert pending.would_place is False


def test_a_pod_naming_a_podgroup_that_does_not_exist_is_pending_for_that() -> None:
    pod = _pod("p", metadata={"annotations": {"pod-group-name": "gone"}})
    [pending] = diagnose([_node(), _queue(), _group("other"), pod]).pending
    assert pending.reason.startswith("no PodGroup: pod-group-name names gone, which does not exist")


def test_without_any_podgroup_in_the_objects_a_lone_pod_is_still_simulated() -> None:
    # PodGroups may be unreadable with the caller's credentials; then nothing is known to be missing.
    [pending] = diagnose([_node(), _queue(), _pod("lone")]).pending
    assert pending.would_place is True


def test_a_pod_held_by_scheduling_gates_is_reported_for_them_and_left_out_of_its_job() -> None:
    # KAI@v0.17.0 pkg/scheduler/api/pod_info/pod_info.go:489-490: Gated, neither alive nor to allocate.
    gated = _pod("held", spec={"schedulingGates": [{"name": "example.com/wait"}]})
    objects = [_node(), _queue(), gated, _pod("free")]
    assert [len(j.tasks) for j in build(objects).snapshot.jobs] == [1]
    reasons = {p.pod: p.reason for p in diagnose(objects).pending}
    assert reasons["ml/held"].startswith("held by scheduling gates (example.com/wait)")


# KAI@v0.17.0 pkg/scheduler/api/pod_info/pod_info.go:193-195 and :485-486 (a pod with a BindRequest is Binding
# on its selected node); cache/cluster_info/cluster_info.go:393-412 (a request for a node that is gone is not).


def _bind_request(pod: str, node: str, groups: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"podName": pod, "selectedNode": node}
    if groups:
        spec["selectedGPUGroups"] = groups
    return {"kind": "BindRequest", "metadata": {"name": f"{pod}-bind", "namespace": "ml"}, "spec": spec}


def test_a_pod_kai_is_binding_holds_its_selected_node_and_gpu_group() -> None:
    share = _pod("p", metadata={"annotations": {"gpu-fraction": "0.5"}})
    [job] = build([_node(), share, _bind_request("p", "n1", ["g7"])]).snapshot.jobs
    task = job.tasks[0]
    assert (task.state, task.node, task.gpu_groups) == ("Running", "n1", ("g7",))


def test_a_bind_request_for_a_node_that_is_gone_leaves_the_pod_pending() -> None:
    [job] = build([_node(), _pod("p"), _bind_request("p", "gone")]).snapshot.jobs
    assert (job.tasks[0].state, job.tasks[0].node) == ("Pending", None)


def test_a_running_pod_in_a_subgroup_its_podgroup_does_not_have_is_no_victim_and_the_cycle_ends() -> None:
    # Such a pod is in no pod set (KAI's InvalidSubGroupTasks), so no eviction offers it; offering the job's
    # "remaining" pods again used to loop forever in reclaim.
    def queue(name: str, quota: int) -> dict[str, Any]:
        q = _queue()
        q["metadata"]["name"] = name
        q["spec"]["resources"]["gpu"] = {"quota": quota, "limit": -1, "overQuotaWeight": 1}
        return q

    spec = {"queue": "q1", "minMember": 1, "priorityClassName": "train", "subGroups": [{"name": "a", "minMember": 1}]}
    victim_group = {"kind": "PodGroup", "metadata": {"name": "g", "namespace": "ml"}, "spec": spec}
    want_group = {"kind": "PodGroup", "metadata": {"name": "w", "namespace": "ml"}, "spec": {"queue": "q2"}}
    labels = {"kai.scheduler/queue": "q1", "kai.scheduler/subgroup-name": "zzz"}
    victim = _pod("v", node="n1", metadata={"annotations": {"pod-group-name": "g"}, "labels": labels}, **_gpu_limit(2))
    want = _pod("w", metadata={"annotations": {"pod-group-name": "w"}}, **_gpu_limit(2))
    objects = [_node(), queue("q1", 0), queue("q2", 2), victim_group, want_group, victim, want]
    [pending] = diagnose(objects).pending
    assert pending.pod == "ml/w"
    assert pending.would_place is False


def test_a_gpu_reservation_pod_takes_cpu_and_memory_but_not_the_gpu_its_share_already_holds() -> None:
    # KAI@v0.17.0 pkg/scheduler/api/node_info/node_info.go:470-473; pod_info/utility_pods.go:26-33 (label app).
    share = _pod("s", node="n1", metadata={"labels": {"runai-gpu-group": "g1"}, "annotations": {"gpu-fraction": "0.5"}})
    reservation = _pod("r", node="n1", scheduler="default-scheduler", **_gpu_limit(1))
    reservation["metadata"].update(namespace="kai-resource-reservation", labels={"app": "kai-resource-reservation"})
    # One GPU shared, and its reservation pod's slot counted with it (NodeState.reserve_pods).
    assert _idle([_node(), share, reservation]) == (1, 6000.0, 108)


def test_a_pending_pod_without_a_podgroup_takes_nothing_from_the_pods_that_have_one() -> None:
    group = {"kind": "PodGroup", "metadata": {"name": "g", "namespace": "ml"}, "spec": {"queue": "q"}}
    legit = _pod("legit", metadata={"annotations": {"pod-group-name": "g"}}, **_gpu_limit(1))
    orphan = _pod("orphan", spec={"priorityClassName": "inference"}, **_gpu_limit(1))
    reasons = {p.pod: p for p in diagnose([_node(gpus=1), _queue(), group, legit, orphan]).pending}
    assert reasons["ml/legit"].would_place is True
    assert reasons["ml/orphan"].reason.startswith("no PodGroup")


def test_a_running_gpu_memory_pod_on_a_gpu_whose_label_floors_to_zero_does_not_break_the_read() -> None:
    node = _node()
    node["metadata"]["labels"] = {"nvidia.com/gpu.memory": "50"}
    running = _pod("m", node="n1", metadata={"labels": {"runai-gpu-group": "g"}, "annotations": {"gpu-memory": "10"}})
    report = diagnose([node, _queue(), running, _pod("w", **_gpu_limit(1))])
    assert [p.pod for p in report.pending] == ["ml/w"]


def test_hostile_node_names_and_queue_labels_are_read_without_raising() -> None:
    odd = _pod("odd", spec={"nodeName": ["n1"]}, metadata={"labels": {"kai.scheduler/queue": {"x": 1}}})
    report = diagnose([_node(), _queue(), odd])
    assert [p.pod for p in report.pending] == ["ml/odd"]


def _group(name: str, **spec: Any) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "ml", **spec.pop("metadata", {})}
    return {"kind": "PodGroup", "metadata": metadata, "spec": {"queue": "q", "minMember": 1, **spec}}


def _member(name: str, group: str, node: str | None = None, **extra: Any) -> dict[str, Any]:
    return _pod(name, node=node, metadata={"annotations": {"pod-group-name": group}}, **extra)


NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)


def test_a_pod_in_phase_unknown_holds_nothing_on_its_node() -> None:
    # pod_info.go:494-495: status Unknown is not active, so node_info.go:423-433 adds it to no node.
    lost = _pod("lost", node="n1", **_gpu_limit(2))
    lost["status"]["phase"] = "Unknown"
    snap = build([_node(), lost]).snapshot
    assert (snap.jobs, snap.nodes[0].gpus) == ((), 2)


def test_the_podgroup_alone_names_the_queue() -> None:
    # cluster_info.go:447-451: a PodGroup whose spec.queue is empty names no queue; the pod's label is not read.
    group = _group("g", queue="")
    report = diagnose([_node(), _queue(), group, _member("p", "g", **_gpu_limit(1))])
    assert [p.reason for p in report.pending] == ["the job names no queue (its PodGroup's spec.queue is empty)"]


def test_the_priority_is_the_podgroup_s_class_read_from_its_priority_class() -> None:
    # cluster_info.go:601-635: the PodGroup's class; a PriorityClass object's value; else the globalDefault one.
    classes = [
        {"kind": "PriorityClass", "metadata": {"name": "train"}, "value": 60},
        {"kind": "PriorityClass", "metadata": {"name": "everyday"}, "value": 70, "globalDefault": True},
    ]
    groups = [_group("a", priorityClassName="train"), _group("b", priorityClassName="missing"), _group("c")]
    pods = [_member("pa", "a", spec={"priorityClassName": "inference"}), _member("pb", "b"), _member("pc", "c")]
    jobs = {j.name: j.priority for j in build([_node(), *classes, *groups, *pods]).snapshot.jobs}
    assert jobs == {"a": 60, "b": 70, "c": 70}


def test_a_bind_request_that_failed_past_its_backoff_is_ignored() -> None:
    # binrequest_info.go:16-27, 85-97.
    def request(**status: Any) -> dict[str, Any]:
        spec = {"podName": "p", "selectedNode": "n1", "backoffLimit": 3}
        return {"kind": "BindRequest", "metadata": {"name": "p", "namespace": "ml"}, "spec": spec, "status": status}

    def node(req: dict[str, Any]) -> str | None:
        return build([_node(), _group("g"), _member("p", "g"), req]).snapshot.jobs[0].tasks[0].node

    assert node(request(phase="Failed", failedAttempts=3)) is None
    assert node(request(phase="Failed", failedAttempts=1)) == "n1"  # still retrying: the pod holds n1


def test_a_node_that_is_not_ready_keeps_its_pods_takes_none_and_leaves_the_fair_shares() -> None:
    node = _node()
    node["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    live = build([node, _pod("r", node="n1")])
    assert (live.snapshot.nodes[0].ready, [t.node for j in live.snapshot.jobs for t in j.tasks]) == (False, ["n1"])
    assert any("n1 is NotReady" in n for n in live.notes)


def test_podgroup_times_give_the_delay_the_start_and_the_staleness() -> None:
    annotations = {
        "kai.scheduler/last-eviction-timestamp": "2026-11-25T11:55:00Z",
        "kai.scheduler/last-start-timestamp": "2026-11-25T11:50:00Z",
        "kai.scheduler/stale-podgroup-timestamp": "2026-11-25T11:59:00Z",
    }
    metadata = {"creationTimestamp": "2026-11-25T11:00:00Z", "annotations": annotations}
    group = _group("g", metadata=metadata, preemptionDelay="10m0s", stalenessGracePeriod="30s")
    [job] = build([_node(), group, _member("p", "g")], now=NOW).snapshot.jobs
    # job_info.go:204-221: the delay counts from the later of creation and last eviction.
    assert (job.age_seconds, job.preemption_delay_seconds) == (300.0, 600.0)
    assert (job.started_seconds_ago, job.stale_seconds, job.staleness_grace_seconds) == (600.0, 60.0, 30.0)


def test_queue_min_runtimes_are_read() -> None:
    queue = _queue()
    queue["spec"].update(preemptMinRuntime="5m", reclaimMinRuntime="1h0m0s")
    [q] = build([queue]).snapshot.queues
    assert (q.preempt_min_runtime, q.reclaim_min_runtime) == (300.0, 3600.0)


@pytest.mark.parametrize("quota", [10**400, -(10**400), float("inf"), float("nan"), 2**63, True, "1"])
def test_a_queue_quota_no_float64_holds_reads_as_zero(quota: Any) -> None:
    """Found by benchmarks/fuzz.py (diagnose): 10**400 made math.isfinite raise OverflowError."""
    queue = _queue()
    queue["spec"]["resources"]["gpu"]["quota"] = quota
    [q] = build([queue]).snapshot.queues
    assert q.gpu.quota == 0.0


def test_jobs_and_queues_are_taken_oldest_first() -> None:
    def stamped(obj: dict[str, Any], when: str) -> dict[str, Any]:
        obj["metadata"]["creationTimestamp"] = when
        return obj

    groups = [stamped(_group("young"), "2026-11-25T11:00:00Z"), stamped(_group("old"), "2026-11-25T10:00:00Z")]
    queues = [
        stamped(_queue(), "2026-11-25T09:00:00Z"),
        {**_queue(), "metadata": {"name": "p", "creationTimestamp": "2026-11-25T08:00:00Z"}},
    ]
    snap = build([*queues, *groups, _member("y", "young"), _member("o", "old")]).snapshot
    assert [j.name for j in snap.jobs] == ["old", "young"]
    assert [q.name for q in snap.queues] == ["p", "q"]


def test_the_pods_a_cycle_places_of_a_job_still_short_are_not_reported_as_unplaceable() -> None:
    group = _group("g")
    pods = [_member(f"p{i}", "g", **_gpu_limit(1)) for i in range(3)]
    report = diagnose([_node(gpus=2), _queue(), group, *pods])
    assert sorted(p.would_place for p in report.pending) == [False, True, True]


def test_amd_gpus_count_as_gpus_on_nodes_and_in_requests() -> None:
    # KAI@v0.17.0 resource_requirment.go:17-18, 53-60 and resource_info.go:64.
    node = _node(gpus=0)
    node["status"]["allocatable"]["amd.com/gpu"] = "4"
    pod = _pod("amd", node="n1", resources={"limits": {"amd.com/gpu": "1"}})
    snap = build([node, pod]).snapshot
    assert (snap.nodes[0].gpus, snap.jobs[0].tasks[0].gpu) == (4, 1)


def test_a_podgroup_in_scheduling_backoff_is_reported_and_not_simulated() -> None:
    # cluster_info.go:440, 669-686: backoff set and the last condition names the PodGroup's own node pool.
    def report(pool: str) -> list[str]:
        group = _group("g", schedulingBackoff=1)
        group["status"] = {"schedulingConditions": [{"nodePool": "other", "transitionID": "1"},
                                                    {"nodePool": pool, "transitionID": "2"}]}  # fmt: skip
        pending = diagnose([_node(), _queue(), group, _member("p", "g", **_gpu_limit(1))]).pending
        return [p.reason.split(":")[0] for p in pending]

    assert report("default") == ["in scheduling backoff"]
    assert report("pool-b") == ["KAI would place it in its next cycle"]


def test_a_transition_id_is_read_as_go_s_atoi_reads_it() -> None:
    # strconv.Atoi: ASCII digits with an optional sign; anything else is -1 (pod_group_utils.go:27-48).
    group = _group("g", schedulingBackoff=1)
    group["status"] = {"schedulingConditions": [{"nodePool": "default", "transitionID": "+3"},
                                                {"nodePool": "other", "transitionID": "²"}]}  # fmt: skip
    pending = diagnose([_node(), _queue(), group, _member("p", "g", **_gpu_limit(1))]).pending
    assert [p.reason.split(":")[0] for p in pending] == ["in scheduling backoff"]


def test_a_typed_empty_list_says_its_kind_was_read() -> None:
    """The API server's answer to a list call (`PersistentVolumeClaimList`) names the kind even when empty."""
    kinds = by_kind([{"kind": "PersistentVolumeClaimList", "items": []}, {"kind": "List", "items": []}])
    assert kinds == {"PersistentVolumeClaim": []}


def test_a_typed_lists_items_take_its_kind_when_they_have_none() -> None:
    """The API server sends a list's items without `kind` (`kubectl get --raw` dumps too); one that has its own
    keeps it."""
    items = [{"metadata": {"name": "n1"}}, {"kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}}]
    kinds = by_kind([{"kind": "NodeList", "items": items}])
    assert [n["metadata"]["name"] for n in kinds["Node"]] == ["n1"]
    assert [p["metadata"]["name"] for p in kinds["Pod"]] == ["p"]


def test_a_live_read_that_finds_no_pod_groups_reports_kai_pods_without_one() -> None:
    """PodGroups read and none found: every KAI pod lacks its PodGroup (not 'PodGroups not read')."""
    objects = [
        {"kind": "NodeList", "items": []},
        {"kind": "PodGroupList", "items": []},
        {"kind": "PodList", "items": [{
            "metadata": {"name": "p", "namespace": "ml", "labels": {"kai.scheduler/queue": "q"}},
            "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c"}]},
            "status": {"phase": "Pending"},
        }]},
    ]  # fmt: skip
    assert "ml/p" in build(objects).without_pod_group
