"""How `kaistack diagnose` turns a cluster's objects into the checker's snapshot (kaistack.ops.live_snapshot) and
reads a pod's claims (kaistack.ops.live_volumes, at the end), pinned where no other test did (found by mutation
testing; the rest is in test_live_snapshot.py and test_live_volumes.py).

Each fact is KAI-Scheduler@v0.17.0's (git -C /work/.mirror/kai-scheduler+KAI-Scheduler/repo show v0.17.0:<path>):
a pod's node pkg/scheduler/api/pod_info/pod_info.go:192-195 (spec.nodeName, else its BindRequest's node) and its
status :465-503 (getTaskStatus: Bound and Binding come before Gated); every unfinished pod on its node
pkg/scheduler/cache/cluster_info/cluster_info.go:530-551; a PodGroup's minMember
pkg/scheduler/api/podgroup_info/job_info.go:284-288 (max(minMember, 1)); the pod-grouper's queue for a pod with
none pkg/podgrouper/podgrouper/plugins/constants/constants.go:22 (DefaultQueueName = "default-queue").
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
import volume_testlib as k8s

from kaistack.ops.live_snapshot import build, by_kind
from placement.depth import MAX_QUEUE_DEPTH
from placement.model import Placement
from placement.session import Session


def _node(gpus: int = 2) -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"kind": "Node", "metadata": {"name": "n1"}, "spec": {}, "status": {"allocatable": allocatable}}


def _pod(name: str, node: str | None = None, gpus: int = 0, **extra: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    spec: dict[str, Any] = {"schedulerName": "kai-scheduler", "containers": [{"name": "c", "resources": resources}]}
    spec.update(extra.pop("spec", {}))
    if node:
        spec["nodeName"] = node
    metadata = {"name": name, "namespace": "ml", "labels": {"kai.scheduler/queue": "q"}, **extra.pop("metadata", {})}
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


def _member(name: str, group: str, node: str | None = None, **extra: Any) -> dict[str, Any]:
    return _pod(name, node=node, metadata={"annotations": {"pod-group-name": group}}, **extra)


def _group(name: str, **spec: Any) -> dict[str, Any]:
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": "ml"}, "spec": {"queue": "q", **spec}}


def _queue(name: str = "q", **spec: Any) -> dict[str, Any]:
    return {"kind": "Queue", "metadata": {"name": name}, "spec": spec}


def _bind_request(pod: Any, node: Any) -> dict[str, Any]:
    spec = {"podName": pod, "selectedNode": node}
    return {"kind": "BindRequest", "metadata": {"name": "b", "namespace": "ml"}, "spec": spec}


def _idle_gpus(objects: list[dict[str, Any]]) -> int:
    ssn = Session(build(objects).snapshot, Placement())
    ssn.open()
    [node] = ssn.node_list
    return node.idle_gpus


# --- by_kind ------------------------------------------------------------------------------------------------------


def test_an_object_with_an_empty_name_is_left_out_and_counted_as_unnamed() -> None:
    unnamed: Counter[str] = Counter()
    kinds = by_kind([{"kind": "Pod", "metadata": {"name": "", "namespace": "ml"}}], unnamed)
    assert (kinds, unnamed) == ({}, Counter({"Pod": 1}))


@pytest.mark.parametrize("junk", [None, "Pod", ["kind", "Pod"], 3])
def test_an_entry_that_is_not_an_object_is_skipped(junk: Any) -> None:
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}}
    unnamed: Counter[str] = Counter()
    assert (by_kind([junk, pod], unnamed), unnamed) == ({"Pod": [pod]}, Counter())


@pytest.mark.parametrize("kind", [None, 3, ["Pod"]])
def test_an_object_without_a_string_kind_is_skipped_and_not_counted(kind: Any) -> None:
    unnamed: Counter[str] = Counter()
    assert (by_kind([{"kind": kind, "metadata": {"name": "p"}}], unnamed), unnamed) == ({}, Counter())


# Cluster-scoped kinds: client-go@kubernetes-1.35.0 builds their clients without a namespace
# (kubernetes/typed/core/v1/node.go:63, persistentvolume.go:63, namespace.go, storage/v1/storageclass.go:59,
# storage/v1/csidriver.go:59, scheduling/v1/priorityclass.go:59); KAI's Queue, Topology and SchedulingShard are
# `+kubebuilder:resource:scope=Cluster` (pkg/apis/scheduling/v2/queue_types.go:79,
# pkg/apis/kai/v1alpha1/topology_types.go:32, pkg/apis/kai/v1/schedulingshard_types.go:367).
CLUSTER_SCOPED = [
    "Node",
    "Queue",
    "Topology",
    "PriorityClass",
    "PersistentVolume",
    "StorageClass",
    "Namespace",
    "CSIDriver",
    "SchedulingShard",
]


@pytest.mark.parametrize("kind", CLUSTER_SCOPED)
def test_a_cluster_scoped_object_given_a_namespace_is_the_same_object_as_without(kind: str) -> None:
    objects = [{"kind": kind, "metadata": {"name": "x"}}, {"kind": kind, "metadata": {"name": "x", "namespace": "ml"}}]
    assert len(by_kind(objects)[kind]) == 1


def test_a_namespaced_object_read_twice_counts_once_the_first_time() -> None:
    first = {"kind": "Pod", "metadata": {"name": "x", "namespace": "ml", "resourceVersion": "1"}}
    again = {"kind": "Pod", "metadata": {"name": "x", "namespace": "ml", "resourceVersion": "2"}}
    assert by_kind([first, again])["Pod"] == [first]


# --- a pod's node -------------------------------------------------------------------------------------------------


def test_an_empty_node_name_falls_back_to_the_pod_s_bind_request_and_its_gpu_groups() -> None:
    # pod_info.go:192-195: `nodeName == ""` and a BindRequest: the request's node (and :506-507 its GPU groups).
    pod = _member("p", "g", spec={"nodeName": ""})
    pod["metadata"]["annotations"]["gpu-fraction"] = "0.5"
    request = _bind_request("p", "n1")
    request["spec"]["selectedGPUGroups"] = ["g7"]
    [job] = build([_node(), _group("g"), pod, request]).snapshot.jobs
    assert (job.tasks[0].node, job.tasks[0].gpu_groups) == ("n1", ("g7",))


@pytest.mark.parametrize(("pod", "node"), [(["p"], "n1"), ("p", ["n1"]), ({"p": 1}, "n1"), ("p", {"n1": 1})])
def test_a_bind_request_whose_pod_or_node_is_not_a_string_is_ignored(pod: Any, node: Any) -> None:
    [job] = build([_node(), _group("g"), _member("p", "g"), _bind_request(pod, node)]).snapshot.jobs
    assert (job.tasks[0].state, job.tasks[0].node) == ("Pending", None)


def test_a_pod_kai_is_binding_is_not_held_back_by_scheduling_gates() -> None:
    # getTaskStatus (pod_info.go:481-491): a pod with a BindRequest is Binding before its gates are looked at.
    pod = _member("p", "g", spec={"schedulingGates": [{"name": "example.com/wait"}]})
    live = build([_node(), _group("g"), pod, _bind_request("p", "n1")])
    assert ([t.node for j in live.snapshot.jobs for t in j.tasks], live.gated) == (["n1"], {})


def test_a_pod_on_a_node_that_was_not_read_is_left_out_and_named_in_a_note() -> None:
    live = build([_node(), _group("g"), _member("p", "g", node="elsewhere")])
    assert live.snapshot.jobs == ()
    assert "pod ml/p runs on elsewhere, which is not in the snapshot" in live.notes


# --- running pods outside every simulated job still hold their node ------------------------------------------------


def test_a_running_kai_pod_without_its_podgroup_takes_its_node_s_gpus() -> None:
    # cluster_info.go:530-551: the cache puts every unfinished pod on its node, whether or not KAI schedules it.
    objects = [_node(gpus=2), _queue(), _group("other"), _member("p", "gone", node="n1", gpus=1)]
    assert _idle_gpus(objects) == 1


def test_a_running_pod_of_a_podgroup_in_scheduling_backoff_takes_its_node_s_gpus() -> None:
    group = _group("g", schedulingBackoff=1)
    group["status"] = {"schedulingConditions": [{"nodePool": "default", "transitionID": "1"}]}
    objects = [_node(gpus=2), _queue(), group, _member("p", "g", node="n1", gpus=1)]
    live = build(objects)
    assert (live.snapshot.jobs, live.backed_off) == ((), {})
    assert _idle_gpus(objects) == 1


@pytest.mark.parametrize(("spec", "queue"), [({"queue": "q"}, "q"), ({"queue": None}, "")])
def test_a_pending_pod_of_a_podgroup_in_scheduling_backoff_is_reported_with_its_podgroup_s_queue(
    spec: dict[str, Any], queue: str
) -> None:
    group = _group("g", schedulingBackoff=1, **spec)
    group["status"] = {"schedulingConditions": [{"nodePool": "default", "transitionID": "1"}]}
    assert build([_node(), _queue(), group, _member("p", "g")]).backed_off == {"ml/p": ("g", queue)}


# --- jobs ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("queue", [7, ["q"], None])
def test_a_podgroup_whose_queue_is_not_a_string_names_no_queue(queue: Any) -> None:
    [job] = build([_node(), _queue(), _group("g", queue=queue), _member("p", "g")]).snapshot.jobs
    assert job.queue == ""


@pytest.mark.parametrize("min_member", [0, -3])
def test_a_podgroup_s_min_member_below_one_counts_as_one(min_member: int) -> None:
    # job_info.go:284-288: minAvail = max(*podGroup.Spec.MinMember, 1).
    [job] = build([_node(), _group("g", minMember=min_member), _member("p", "g")]).snapshot.jobs
    assert job.min_member == 1


def test_a_preemptible_podgroup_of_a_non_preemptible_class_is_preemptible() -> None:
    # podgroup_types.go:104-118 and cluster_info.go:493: spec.preemptibility wins over the class's priority.
    classes = [{"kind": "PriorityClass", "metadata": {"name": "build"}, "value": 100}]
    group = _group("g", priorityClassName="build", preemptibility="preemptible")
    [job] = build([_node(), *classes, group, _member("p", "g")]).snapshot.jobs
    assert (job.priority, job.is_preemptible) == (100, True)


def test_a_podgroup_topology_constraint_without_a_topology_is_no_constraint() -> None:
    # subgroup_info/factory.go:26: the root constraint is read only when Topology is not empty.
    group = _group("g", topologyConstraint={"requiredTopologyLevel": "rack"})
    [job] = build([_node(), group, _member("p", "g")]).snapshot.jobs
    assert job.topology is None


def test_a_podgroup_s_min_sub_group_is_read() -> None:
    # factory.go:33 (FromPodGroup): root.SetMinSubGroup(podGroup.Spec.MinSubGroup).
    sub_groups = [{"name": "a", "minMember": 1}, {"name": "b", "minMember": 1}, {"name": "c", "minMember": 1}]
    group = _group("g", subGroups=sub_groups, minSubGroup=2)
    pod = _member("p", "g")
    pod["metadata"]["labels"]["kai.scheduler/subgroup-name"] = "a"
    [job] = build([_node(), group, pod]).snapshot.jobs
    assert job.min_sub_group == 2


def test_without_podgroups_a_pod_with_no_queue_label_goes_to_the_default_queue() -> None:
    pod = _pod("p")
    del pod["metadata"]["labels"]["kai.scheduler/queue"]
    [job] = build([_node(), pod]).snapshot.jobs
    assert job.queue == "default-queue"


def test_without_podgroups_the_pod_s_priority_class_gives_the_job_s_priority() -> None:
    # With no PodGroups read, the pod-grouper would have copied the pod's class onto the PodGroup it makes.
    classes = [{"kind": "PriorityClass", "metadata": {"name": "train"}, "value": 63}]
    [job] = build([_node(), *classes, _pod("p", spec={"priorityClassName": "train"})]).snapshot.jobs
    assert job.priority == classes[0]["value"]


def test_without_podgroups_jobs_are_taken_by_their_first_pod_s_age() -> None:
    # The job order's last tie-break is age (queue_order.go:256-261); a PodGroup the pod-grouper would make is
    # as old as the pod it is made from.
    young = _pod("young", metadata={"creationTimestamp": "2026-11-25T11:00:00Z"})
    old = _pod("old", metadata={"creationTimestamp": "2026-11-25T10:00:00Z"})
    assert [j.name for j in build([_node(), young, old]).snapshot.jobs] == ["pod/ml/old", "pod/ml/young"]


def _stamped(name: str, created: str, **extra: Any) -> dict[str, Any]:
    metadata = {"annotations": {"pod-group-name": name.split("-")[0]}, "creationTimestamp": created}
    return _pod(name, metadata=metadata, **extra)


def test_without_podgroups_pods_sharing_a_group_name_form_one_job_as_old_as_its_first_pod() -> None:
    pods = [_stamped("g-0", "2026-11-25T10:00:00Z"), _stamped("g-1", "2026-11-25T12:00:00Z")]
    other = _stamped("h-0", "2026-11-25T11:00:00Z")
    jobs = build([_node(), *pods, other]).snapshot.jobs
    assert [(j.name, len(j.tasks)) for j in jobs] == [("g", 2), ("h", 1)]


def test_without_podgroups_a_shared_group_s_queue_and_priority_come_from_its_first_pod() -> None:
    # The first pod has no class and the priority admission gave it; the second names a class and another queue.
    classes = [{"kind": "PriorityClass", "metadata": {"name": "train"}, "value": 63}]
    first = _stamped("g-0", "2026-11-25T10:00:00Z", spec={"priority": 7})
    second = _stamped("g-1", "2026-11-25T10:00:00Z", spec={"priorityClassName": "train"})
    second["metadata"]["labels"] = {"kai.scheduler/queue": "other"}
    [job] = build([_node(), *classes, first, second]).snapshot.jobs
    assert (job.queue, job.priority) == ("q", first["spec"]["priority"])


def test_a_pending_pod_without_a_podgroup_and_without_a_queue_label_is_reported_in_the_default_queue() -> None:
    pod = _pod("p")
    del pod["metadata"]["labels"]["kai.scheduler/queue"]
    assert build([_node(), _group("other"), pod]).without_pod_group == {"ml/p": ("pod/ml/p", "default-queue")}


# --- queues -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("parent", ["", 7, ["root"]])
def test_an_empty_or_non_string_parent_queue_is_no_parent(parent: Any) -> None:
    [queue] = build([_queue(parentQueue=parent)]).snapshot.queues
    assert queue.parent is None


@pytest.mark.parametrize("quota", [2**62, 2**63 - 1, 1e18, 2.5])
def test_a_queue_quota_a_float64_holds_is_read_as_it_is(quota: float) -> None:
    [queue] = build([_queue(resources={"gpu": {"quota": quota}})]).snapshot.queues
    assert queue.gpu.quota == float(quota)


@pytest.mark.parametrize("resource", ["gpu", "cpu", "memory"])
def test_a_queue_s_quota_limit_and_over_quota_weight_are_read_for_each_resource(resource: str) -> None:
    [queue] = build([_queue(resources={resource: {"quota": 1, "limit": 4, "overQuotaWeight": 3}})]).snapshot.queues
    block = getattr(queue, resource)
    assert (block.quota, block.limit, block.over_quota_weight) == (1.0, 4.0, 3.0)


@pytest.mark.parametrize(("spec", "priority"), [({"priority": 7}, 7), ({}, 100)])
def test_a_queue_s_priority_is_read_and_defaults_to_100(spec: dict[str, Any], priority: int) -> None:
    # pkg/apis/scheduling/v2/queue_types.go:35-38: "When not set, default is 100."
    [queue] = build([_queue(**spec)]).snapshot.queues
    assert queue.priority == priority


def _chain(depth: int) -> list[dict[str, Any]]:
    return [_queue(f"q{i}", **({"parentQueue": f"q{i - 1}"} if i else {})) for i in range(depth)]


def test_a_queue_exactly_at_the_depth_limit_is_simulated_without_a_note() -> None:
    notes = build(_chain(MAX_QUEUE_DEPTH)).notes
    assert not [n for n in notes if "levels deep" in n]


def test_a_queue_one_level_past_the_depth_limit_is_named_in_a_note() -> None:
    notes = [n for n in build(_chain(MAX_QUEUE_DEPTH + 1)).notes if "levels deep" in n]
    assert len(notes) == 1
    assert notes[0].startswith(f"1 queue(s) sit more than {MAX_QUEUE_DEPTH} levels deep (q{MAX_QUEUE_DEPTH})")


# --- notes --------------------------------------------------------------------------------------------------------


def test_config_maps_that_were_read_leave_no_note_that_they_were_not() -> None:
    config_map = {"kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "ml"}}
    container = {"name": "c", "envFrom": [{"configMapRef": {"name": "settings"}}]}
    pod = _pod("p", spec={"containers": [container]})
    with_them, without_them = build([_node(), config_map, pod]).notes, build([_node(), pod]).notes
    assert [n for n in with_them if n.startswith("ConfigMaps were not read")] == []
    assert [n for n in without_them if n.startswith("ConfigMaps were not read")] != []


def test_config_maps_read_and_none_found_leave_no_note_that_they_were_not_read() -> None:
    container = {"name": "c", "envFrom": [{"configMapRef": {"name": "settings"}}]}
    live = build([_node(), {"kind": "ConfigMapList", "items": []}, _pod("p", spec={"containers": [container]})])
    assert [n for n in live.notes if n.startswith("ConfigMaps were not read")] == []


def test_a_stuck_pod_s_note_gives_its_node_and_deletion_time() -> None:
    pod = _pod("p", node="n1", metadata={"deletionTimestamp": "2026-11-25T00:00:00Z"})
    notes = build([_node(), pod], now=datetime(2026, 11, 25, 1, tzinfo=UTC)).notes
    [note] = [n for n in notes if n.startswith("pod ml/p on n1 was deleted at 2026-11-25T00:00:00Z and still runs")]
    # pkg/common/constants/constants.go:28: DefaultStuckInReleasingThreshold = 2 * time.Minute.
    assert "StuckInReleasing (over 120 s)" in note


def test_a_node_that_is_cordoned_and_not_ready_is_named_with_both_reasons() -> None:
    node = _node()
    node["spec"]["unschedulable"] = True
    node["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    notes = build([node]).notes
    assert [n for n in notes if n.startswith("node n1 is cordoned and NotReady: its pods count")] != []


# --- a pod's claims (kaistack.ops.live_volumes) ---------------------------------------------------------------------
# k8s.io/kubernetes@v1.35.4 pkg/scheduler/framework/plugins/volumebinding (KAI's go.mod), as live_volumes.py cites.

VOLUME_BASE = [k8s.node("n1", "a"), k8s.node("n2", "b"), k8s.queue(), k8s.storage_class("standard", "Immediate")]
LOCAL = k8s.storage_class("local", "WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner")


def _volume_task(objects: list[dict[str, Any]]) -> Any:
    [job] = build(objects).snapshot.jobs
    return job.tasks[0]


def _ephemeral_pod() -> dict[str, Any]:
    pod = k8s.pod("train")
    pod["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]
    return pod


def test_an_ephemeral_claim_the_pod_controls_is_the_pod_s() -> None:
    owner = {"kind": "Pod", "name": "train", "uid": "uid-train", "controller": True}
    claim = k8s.claim("train-scratch", volume="pv-1", ownerReferences=[owner])
    task = _volume_task([*VOLUME_BASE, claim, _ephemeral_pod()])
    assert task.volume_error is None


def test_an_ephemeral_claim_that_lists_the_pod_as_an_owner_but_not_its_controller_is_not_the_pod_s() -> None:
    # ephemeral.VolumeIsForPod is metav1.IsControlledBy: only the controller reference counts
    # (kubernetes/apimachinery@v0.35.7 pkg/apis/meta/v1/controller_ref.go:25-31, 48-52).
    owner = {"kind": "Pod", "name": "train", "uid": "uid-train", "controller": False}
    claim = k8s.claim("train-scratch", volume="pv-1", ownerReferences=[owner])
    task = _volume_task([*VOLUME_BASE, claim, _ephemeral_pod()])
    assert task.volume_error == "PVC ml/train-scratch was not created for pod ml/train (pod is not owner)"


@pytest.mark.parametrize("volume", ["pv-1", None])
def test_a_lost_claim_names_the_volume_it_was_bound_to(volume: str | None) -> None:
    # volume_binding.go PreFilter: `bound to non-existent persistentvolume %q` of spec.volumeName ("" when none).
    claim = k8s.claim("data", volume="pv-1")
    claim["status"]["phase"] = "Lost"
    if volume is None:
        del claim["spec"]["volumeName"]
    task = _volume_task([*VOLUME_BASE, claim, k8s.pod("train", "data")])
    assert task.volume_error == f'persistentvolumeclaim "data" bound to non-existent persistentvolume "{volume or ""}"'


def test_a_claim_naming_a_volume_without_the_bind_completed_annotation_is_unbound() -> None:
    # binder.go:775-777 isPVCFullyBound: spec.volumeName and the pv.kubernetes.io/bind-completed annotation.
    claim = k8s.claim("data", volume="pv-1")
    del claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"]
    task = _volume_task([*VOLUME_BASE, claim, k8s.pod("train", "data")])
    assert task.volume_error == "pod has unbound immediate PersistentVolumeClaims"


def test_a_waiting_class_s_claim_that_names_a_volume_but_is_not_fully_bound_counts_as_immediate() -> None:
    # binder.go getPodVolumes: only an unbound claim with no spec.volumeName waits for its first consumer.
    claim = k8s.claim("data", klass="local", volume="pv-1")
    del claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"]
    task = _volume_task([*VOLUME_BASE, LOCAL, claim, k8s.pod("train", "data")])
    assert task.volume_error == "pod has unbound immediate PersistentVolumeClaims"


def test_an_ephemeral_claim_is_not_the_pod_s_when_neither_has_a_uid() -> None:
    pod = _ephemeral_pod()
    del pod["metadata"]["uid"]
    claim = k8s.claim("train-scratch", volume="pv-1", ownerReferences=[{"kind": "Pod", "controller": True}])
    task = _volume_task([*VOLUME_BASE, claim, pod])
    assert task.volume_error == "PVC ml/train-scratch was not created for pod ml/train (pod is not owner)"


def test_waiting_claims_are_matched_smallest_first_so_a_small_one_may_take_the_volume_a_big_one_needs() -> None:
    # binder.go findMatchingVolumes sorts the claims by requested size before FindMatchingVolume picks, for each,
    # the smallest volume that fits: the 5Gi claim takes the 10Gi "fast" volume the 10Gi claim's selector needs.
    big = k8s.claim("big", klass="local")
    big["spec"]["resources"]["requests"]["storage"] = "10Gi"
    big["spec"]["selector"] = {"matchLabels": {"disk": "fast"}}
    small = k8s.claim("small", klass="local")
    small["spec"]["resources"]["requests"]["storage"] = "5Gi"
    fast = k8s.volume("pv-fast", "local", "n1", size="10Gi")
    fast["metadata"]["labels"] = {"disk": "fast"}
    plain = k8s.volume("pv-plain", "local", "n1", size="20Gi")
    task = _volume_task([*VOLUME_BASE, LOCAL, fast, plain, big, small, k8s.pod("train", "big", "small")])
    assert task.constraints.volume_nodes == frozenset()


def test_a_claim_with_the_bind_completed_annotation_but_no_volume_name_is_unbound() -> None:
    dynamic = k8s.storage_class("dynamic", "WaitForFirstConsumer")
    claim = k8s.claim("data", klass="dynamic", annotations={"pv.kubernetes.io/bind-completed": "yes"})
    objects = [*VOLUME_BASE, dynamic, k8s.volume("pv-other", "standard", None), claim, k8s.pod("train", "data")]
    task = _volume_task(objects)
    assert (task.volume_error, task.constraints.volume_nodes) == (None, None)


def test_a_bound_claim_whose_volume_has_no_node_affinity_fits_every_node() -> None:
    objects = [*VOLUME_BASE, k8s.volume("pv-1", "standard", None, "Bound"), k8s.claim("data", volume="pv-1")]
    task = _volume_task([*objects, k8s.pod("train", "data")])
    assert (task.volume_error, task.constraints.volume_nodes) == (None, None)


def test_a_waiting_claim_whose_class_names_no_provisioner_fits_no_node() -> None:
    # checkVolumeProvisions: a class whose provisioner is empty or kubernetes.io/no-provisioner provisions nothing.
    klass = k8s.storage_class("bare", "WaitForFirstConsumer")
    del klass["provisioner"]
    objects = [*VOLUME_BASE, klass, k8s.volume("pv-other", "standard", None), k8s.claim("data", klass="bare")]
    task = _volume_task([*objects, k8s.pod("train", "data")])
    assert task.constraints.volume_nodes == frozenset()


def test_without_volumes_read_a_selected_node_claim_is_still_refused_where_its_class_cannot_provision() -> None:
    # Unknown volumes leave only the claims to match unchecked; one with a selected node is to be provisioned.
    claim = k8s.claim("data", klass="local", annotations={"volume.kubernetes.io/selected-node": "n1"})
    task = _volume_task([*VOLUME_BASE, LOCAL, claim, k8s.pod("train", "data")])
    assert task.constraints.volume_nodes == frozenset()


def test_without_volumes_read_a_waiting_claim_to_match_is_not_checked() -> None:
    task = _volume_task([*VOLUME_BASE, LOCAL, k8s.claim("data", klass="local"), k8s.pod("train", "data")])
    assert (task.volume_error, task.constraints.volume_nodes) == (None, None)


def _zonal(*expressions: dict[str, Any]) -> dict[str, Any]:
    terms = [{"matchLabelExpressions": list(expressions)}]
    return k8s.storage_class("zonal", "WaitForFirstConsumer", allowedTopologies=terms)


def _zonal_task(klass: dict[str, Any]) -> Any:
    other = k8s.volume("pv-other", "standard", None)  # volumes were read; none is of the class
    return _volume_task([*VOLUME_BASE, klass, other, k8s.claim("data", klass="zonal"), k8s.pod("train", "data")])


def test_an_allowed_topology_expression_matches_a_node_whose_label_is_any_of_its_values() -> None:
    klass = _zonal({"key": "topology.kubernetes.io/zone", "values": ["a", "c"]})
    assert _zonal_task(klass).constraints.volume_nodes == frozenset({"n1"})


def test_an_allowed_topology_term_needs_every_expression_to_match() -> None:
    zone = {"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}
    host = {"key": "kubernetes.io/hostname", "values": ["n2"]}
    assert _zonal_task(_zonal(zone, host)).constraints.volume_nodes == frozenset({"n2"})


def test_a_node_refused_for_several_volume_reasons_gives_them_all() -> None:
    bound = [k8s.volume("pv-1", "standard", "n2", "Bound"), k8s.claim("data", volume="pv-1")]
    waiting = [LOCAL, k8s.claim("scratch", klass="local")]
    task = _volume_task([*VOLUME_BASE, *bound, *waiting, k8s.pod("train", "data", "scratch")])
    assert task.constraints.volume_reason == (
        "node(s) didn't find available persistent volumes to bind, "
        "node(s) didn't match PersistentVolume's node affinity"
    )


def test_classes_read_and_none_found_make_an_unbound_claim_immediate() -> None:
    # IsDelayBindingMode: a claim whose class does not exist is not delayed, so the PreFilter refuses it.
    objects = [*VOLUME_BASE[:3], {"kind": "StorageClassList", "items": []}, k8s.claim("data", klass="local")]
    task = _volume_task([*objects, k8s.pod("train", "data")])
    assert task.volume_error == "pod has unbound immediate PersistentVolumeClaims"


def test_without_classes_read_an_unbound_claim_is_not_checked() -> None:
    # Whether an unbound claim waits for its first consumer depends on its class, which was not read.
    task = _volume_task([*VOLUME_BASE[:3], k8s.claim("data"), k8s.pod("train", "data")])
    assert (task.volume_error, task.constraints.volume_nodes) == (None, None)


def test_a_waiting_claim_with_an_unreadable_size_is_matched_without_raising() -> None:
    odd = k8s.claim("odd", klass="local")
    odd["spec"]["resources"]["requests"]["storage"] = "lots"
    objects = [*VOLUME_BASE, LOCAL, k8s.volume("pv-1", "local", "n1"), odd, k8s.claim("data", klass="local")]
    task = _volume_task([*objects, k8s.pod("train", "odd", "data")])
    assert task.volume_error is None


@pytest.mark.parametrize(
    ("claim", "error"),
    [
        (k8s.claim("other"), 'persistentvolumeclaim "data" not found'),
        (k8s.claim("data", deletionTimestamp="2026-11-26T00:00:00Z"), 'persistentvolumeclaim "data" is being deleted'),
    ],
)
def test_the_prefilter_s_error_is_kubernetes_message_exactly(claim: dict[str, Any], error: str) -> None:
    assert _volume_task([*VOLUME_BASE, claim, k8s.pod("train", "data")]).volume_error == error


def test_a_volume_whose_ephemeral_field_is_null_uses_no_claim() -> None:
    pod = k8s.pod("train")
    pod["spec"]["volumes"] = [{"name": "scratch", "ephemeral": None}]
    task = _volume_task([*VOLUME_BASE, k8s.claim("other"), pod])
    assert (task.volume_error, task.constraints.volume_nodes) == (None, None)


def test_volumes_read_and_none_found_leave_a_bound_claim_on_no_node() -> None:
    objects = [*VOLUME_BASE, {"kind": "PersistentVolumeList", "items": []}, k8s.claim("data", volume="pv-1")]
    task = _volume_task([*objects, k8s.pod("train", "data")])
    assert (task.constraints.volume_nodes, task.constraints.volume_reason) == (
        frozenset(),
        "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",
    )


def test_an_empty_selected_node_annotation_still_selects_a_node_and_so_fits_none() -> None:
    # binder.go: the annotation's presence decides (`if selectedNode, ok := ...; ok`), and "" is no node's name.
    dynamic = k8s.storage_class("dynamic", "WaitForFirstConsumer")
    claim = k8s.claim("data", klass="dynamic", annotations={"volume.kubernetes.io/selected-node": ""})
    task = _volume_task([*VOLUME_BASE, dynamic, claim, k8s.pod("train", "data")])
    assert task.constraints.volume_nodes == frozenset()


def test_an_allowed_topology_value_may_be_the_empty_label_value() -> None:
    node = k8s.node("n3", "c")
    node["metadata"]["labels"]["tier"] = ""
    klass = _zonal({"key": "tier", "values": [""]})
    other = k8s.volume("pv-other", "standard", None)
    objects = [*VOLUME_BASE, node, klass, other, k8s.claim("data", klass="zonal"), k8s.pod("train", "data")]
    assert _volume_task(objects).constraints.volume_nodes == frozenset({"n3"})
