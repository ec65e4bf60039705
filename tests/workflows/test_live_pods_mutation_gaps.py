"""How `kaistack diagnose` reads a pod (kaistack.ops.live_pods), pinned where no other test did (found by mutation
testing; the nodes' reading is in test_live_mutation_gaps.py and, for the rest of live_nodes, at the end here).

Each fact is KAI-Scheduler@v0.17.0's (git -C /work/.mirror/kai-scheduler+KAI-Scheduler/repo show v0.17.0:<path>):
a pod's request pkg/scheduler/api/pod_info/pod_info.go:403-463 (getPodResourceRequest, containers' requests,
which the API server fills in from their limits); its GPU share :505-553 (updatePodAdditionalFields: the
gpu-memory and gpu-fraction annotations replace the whole GPU request, MIG included, and
gpu-fraction-num-devices counts only for a share; resource_info/gpu_resource_requirment.go:45-60); its GPU groups
pkg/common/resources/gpu_sharing.go:87-100 and constants.go:75-76; its scheduling signature
pod_info/scheduling_constraints_signature.go:19-100 with pod_storage_requirements.go:26-52.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from kaistack.ops.live_nodes import Outside, node_of, read_only
from kaistack.ops.live_pods import constraints_of, parse_time, placed_state, pod_requests, pod_task
from placement.model import Job, Node, NodeConstraints, Task
from placement.tasks import RELEASING, STUCK_IN_RELEASING

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)


def _pod(
    *,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    resources = {"requests": requests or {"cpu": "1", "memory": "1Gi"}, "limits": limits or {}}
    metadata = {"name": "p", "namespace": "ml", "annotations": annotations or {}, "labels": labels or {}}
    containers = spec.pop("containers", [{"name": "c", "resources": resources}])
    return {"kind": "Pod", "metadata": metadata, "spec": {"containers": containers, **spec}}


# --- requests (getPodResourceRequest) ----------------------------------------------------------------------------


def test_a_container_s_cpu_and_memory_requests_default_to_its_limits():
    """ "If Requests is omitted for a container, it defaults to Limits" (the ResourceRequirements schema,
    pulumi/pulumi-kubernetes@v4.32.0 provider/pkg/clients/fake/swagger.json:9744); KAI reads the requests."""
    container = {"name": "c", "resources": {"limits": {"cpu": "2", "memory": "3Gi"}}}
    task = pod_task(_pod(containers=[container]), None, NOW)
    assert (task.cpu_millis, task.memory_bytes) == (2000, 3 * 2**30)


def test_a_pod_s_overhead_adds_its_memory():
    """pod_info.go:410-413: spec.overhead adds to the base resources, memory as well as cpu."""
    pod = _pod(requests={"cpu": "1", "memory": "1Gi"}, overhead={"memory": "512Mi"})
    assert pod_requests(pod)["memory"] == 2**30 + 2**29


@pytest.mark.parametrize("field", ["cpu", "memory"])
def test_an_unreadable_cpu_or_memory_quantity_asks_for_none(field):
    """A dump can hold what the API server would refuse; it is read as no request rather than failing."""
    pod = _pod(requests={"cpu": "1", "memory": "1Gi", field: "lots"})
    task = pod_task(pod, None, NOW)
    assert {"cpu": task.cpu_millis, "memory": task.memory_bytes}[field] == 0


def test_an_unreadable_scalar_resource_quantity_asks_for_none():
    task = pod_task(_pod(requests={"cpu": "1", "rdma/ib": "lots"}), None, NOW)
    assert task.scalar == {}


@pytest.mark.parametrize(("field", "read"), [("cpu", 1000), ("memory", 2**30), ("rdma/ib", 1000)])
def test_an_unreadable_overhead_quantity_adds_nothing(field, read):
    pod = _pod(requests={"cpu": "1", "memory": "1Gi", "rdma/ib": "1"}, overhead={field: "lots"})
    task = pod_task(pod, None, NOW)
    assert {"cpu": task.cpu_millis, "memory": task.memory_bytes, **task.scalar}[field] == read


def test_a_scalar_resource_request_of_zero_is_no_scalar_request():
    task = pod_task(_pod(requests={"cpu": "1", "rdma/ib": "0"}), None, NOW)
    assert task.scalar == {}


def test_a_pod_without_a_gpu_request_asks_for_no_gpu():
    task = pod_task(_pod(), "n1", NOW)
    assert (task.gpu, task.gpu_fraction, task.gpu_memory_mib, task.mig) == (0, None, None, {})


def test_a_mig_request_of_zero_is_no_mig_request():
    task = pod_task(_pod(limits={"nvidia.com/mig-1g.5gb": "0"}), None, NOW)
    assert task.mig == {}


def test_a_pod_without_a_namespace_is_in_the_default_namespace():
    pod = _pod()
    del pod["metadata"]["namespace"]
    assert pod_task(pod, None, NOW).namespace == "default"


# --- GPU shares (updatePodAdditionalFields) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "mib"),
    [("9223372036854775807", 2**63 - 1), ("9223372036854775808", None), ("00009223372036854775807", 2**63 - 1)],
)
def test_a_gpu_memory_request_is_read_up_to_the_largest_int64(text, mib):
    """pod_info.go:521-525 reads gpu-memory with strconv.ParseInt(s, 10, 64): above 2^63-1 it is no request."""
    assert pod_task(_pod(annotations={"gpu-memory": text}), None, NOW).gpu_memory_mib == mib


@pytest.mark.parametrize(
    ("limits", "mig"), [({"nvidia.com/gpu": "1"}, {}), ({"nvidia.com/mig-1g.5gb": "1"}, {"nvidia.com/mig-1g.5gb": 1})]
)
def test_a_gpu_fraction_annotation_replaces_a_whole_gpu_request_and_keeps_a_mig_device(limits, mig):
    """pod_info.go:527-531: NewGpuResourceRequirementWithGpus(fraction, 0) is the pod's whole GPU requirement,
    with no whole GPU and no MIG device (gpu_resource_requirment.go:45-60); the pod's vector keeps the MIG device
    (:215, and rebuildResReqVector :576-583 sets only what the requirement holds), which its node must have."""
    task = pod_task(_pod(limits=limits, annotations={"gpu-fraction": "0.5"}), None, NOW)
    assert (task.gpu, task.mig, task.gpu_fraction) == (0, mig, 0.5)


def test_a_gpu_fraction_wins_over_a_gpu_memory_annotation():
    """pod_info.go:521-531: the fraction, read after gpu-memory, replaces the requirement with (fraction, 0 MiB)."""
    task = pod_task(_pod(annotations={"gpu-fraction": "0.5", "gpu-memory": "1024"}), None, NOW)
    assert (task.gpu_fraction, task.gpu_memory_mib) == (0.5, None)


@pytest.mark.parametrize("fraction", ["1.5", "0", "half"])
def test_a_gpu_fraction_kai_does_not_take_leaves_the_whole_gpu_request(fraction):
    """pod_info.go:527-531 takes a fraction only when ParseFloat reads it and it is above 0 and at most 1."""
    task = pod_task(_pod(limits={"nvidia.com/gpu": "1"}, annotations={"gpu-fraction": fraction}), None, NOW)
    assert (task.gpu, task.gpu_fraction) == (1, None)


@pytest.mark.parametrize(
    ("limits", "annotations", "devices"),
    [
        ({}, {"gpu-memory": "1024", "gpu-fraction-num-devices": "2"}, 2),
        ({}, {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}, 2),
        ({}, {"gpu-fraction": "0.5"}, 1),
        ({"nvidia.com/gpu": "1"}, {"gpu-fraction-num-devices": "2"}, 1),
    ],
)
def test_the_device_count_annotation_counts_only_for_a_gpu_share(limits, annotations, devices):
    """pod_info.go:534-541: gpu-fraction-num-devices is read for a fraction or gpu-memory request only."""
    assert pod_task(_pod(limits=limits, annotations=annotations), "n1", NOW).gpu_devices == devices


@pytest.mark.parametrize(("count", "devices"), [("64", 64), ("65", 64), ("18446744073709551615", 64)])
def test_a_share_s_device_count_is_read_up_to_64(count, devices):
    """kaistack's bound on a count KAI reads as any int64: past 64 devices no node could hold the share anyway."""
    pod = _pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-num-devices": count})
    assert pod_task(pod, "n1", NOW).gpu_devices == devices


def test_a_running_gpu_memory_share_holds_its_gpu_group():
    pod = _pod(annotations={"gpu-memory": "1024"}, labels={"runai-gpu-group": "g-1"})
    assert pod_task(pod, "n1", NOW).gpu_groups == ("g-1",)


def test_a_pending_share_holds_no_gpu_group_yet():
    pod = _pod(annotations={"gpu-fraction": "0.5"}, labels={"runai-gpu-group": "g-1"})
    assert pod_task(pod, None, NOW).gpu_groups == ()


def test_a_whole_gpu_pod_s_gpu_group_label_is_not_read():
    pod = _pod(limits={"nvidia.com/gpu": "1"}, labels={"runai-gpu-group": "g-1"})
    assert pod_task(pod, "n1", NOW).gpu_groups == ()


def test_only_labels_under_the_runai_gpu_group_prefix_name_more_gpu_groups():
    """GetGpuGroups takes the labels whose key has the prefix `runai-gpu-group/` (constants.go:76)."""
    labels = {"runai-gpu-group": "a", "runai-gpu-group/b": "b", "runai-gpu-group-old": "c"}
    pod = _pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}, labels=labels)
    assert pod_task(pod, "n1", NOW).gpu_groups == ("a", "b")


# --- subgroups ------------------------------------------------------------------------------------------------------


def test_a_pod_without_a_subgroup_label_is_in_no_subgroup():
    assert pod_task(_pod(), None, NOW, sub_groups=True).sub_group is None


def test_a_pod_s_subgroup_label_is_read_only_when_its_podgroup_has_subgroups():
    pod = _pod(labels={"kai.scheduler/subgroup-name": "workers"})
    assert (pod_task(pod, None, NOW).sub_group, pod_task(pod, None, NOW, sub_groups=True).sub_group) == (
        None,
        "workers",
    )


# --- deletion (getTaskStatus) ---------------------------------------------------------------------------------------


def _deleted(stamp: Any) -> dict[str, Any]:
    pod = _pod()
    pod["metadata"]["deletionTimestamp"] = stamp
    pod["status"] = {"phase": "Running"}
    return pod


def test_a_deletion_time_a_yaml_loader_read_as_a_naive_datetime_is_utc():
    """PyYAML resolves `2026-11-25T11:00:00Z` to a naive datetime in UTC."""
    assert placed_state(_deleted(datetime(2026, 11, 25, 11, 57)), NOW) == STUCK_IN_RELEASING
    assert placed_state(_deleted(datetime(2026, 11, 25, 11, 59)), NOW) == RELEASING


def test_a_deletion_datetime_with_an_offset_keeps_its_instant():
    """11:59 at UTC-01:00 is 12:59 UTC, after NOW: not two minutes ago."""
    stamp = datetime(2026, 11, 25, 11, 59, tzinfo=timezone(timedelta(hours=-1)))
    assert parse_time(stamp) == datetime(2026, 11, 25, 12, 59, tzinfo=UTC)
    assert placed_state(_deleted(stamp), NOW) == RELEASING


@pytest.mark.parametrize(("digits", "read"), [(38, True), (39, False)])
def test_a_time_of_up_to_64_characters_is_read_and_a_longer_one_is_not(digits, read):
    """RFC 3339 allows any number of fraction digits; kaistack reads at most 64 characters (a Kubernetes
    timestamp has 20) before parsing, as it bounds a quantity's text (placement.quantity)."""
    text = "2026-11-25T11:00:00." + "0" * digits + "+00:00"
    assert len(text) == 26 + digits
    assert (parse_time(text) is not None) is read
    assert placed_state(_deleted(text), NOW) == (STUCK_IN_RELEASING if read else RELEASING)


# --- the scheduling signature (schedulingConstraintsSignature) ------------------------------------------------------


def _other(**spec: Any) -> str:
    return constraints_of(_pod(**spec)).other


def test_a_port_without_a_host_port_hashes_as_host_port_zero():
    """scheduling_constraints_signature.go:92-97 writes each port's HostPort, 0 when it is unset."""
    unset = _other(containers=[{"name": "c", "ports": [{"containerPort": 80}]}])
    zero = _other(containers=[{"name": "c", "ports": [{"containerPort": 80, "hostPort": 0}]}])
    assert unset == zero


@pytest.mark.parametrize("field", ["containers", "initContainers"])
def test_a_container_port_makes_a_pod_unlike_one_without_ports(field):
    """Every port of the containers and init containers goes into the hash, host port or not (:92-97)."""
    ported = {"containers": [{"name": "c"}], field: [{"name": "c", "ports": [{"containerPort": 80}]}]}
    assert _other(**ported) != _other(containers=[{"name": "c"}])


def test_pods_whose_init_containers_bind_different_host_ports_are_not_alike():
    """The init containers' ports are hashed with the containers' (:93-96)."""

    def binding(port: int) -> str:
        init = {"name": "i", "ports": [{"containerPort": 80, "hostPort": port}]}
        return _other(containers=[{"name": "c"}], initContainers=[init])

    assert binding(8080) != binding(9090)


def test_pods_that_differ_only_in_topology_spread_constraints_are_not_alike():
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
    assert _other(topologySpreadConstraints=spread) != _other()


def test_a_secret_volume_leaves_a_pod_alike_to_one_without_volumes():
    """pod_storage_requirements.go:43-45: Secret volumes are left out, as ConfigMaps are."""
    assert _other(volumes=[{"name": "token", "secret": {"secretName": "s"}}]) == _other() == ""


def test_scratch_volumes_that_differ_only_in_name_are_alike():
    """pod_storage_requirements.go:47-49 hashes a volume without its name."""
    assert _other(volumes=[{"name": "a", "emptyDir": {}}]) == _other(volumes=[{"name": "b", "emptyDir": {}}])


def test_the_same_claim_under_another_volume_name_is_not_alike():
    """Without claims in its snapshot (--schedule-csi-storage off) getPVC fails and KAI hashes the PVC volume as
    it is, name included (pod_storage_requirements.go:29-33)."""
    claim = {"claimName": "data"}
    a = _other(volumes=[{"name": "a", "persistentVolumeClaim": claim}])
    assert a != _other(volumes=[{"name": "b", "persistentVolumeClaim": claim}])


def test_the_same_affinity_written_in_another_key_order_is_alike():
    """KAI hashes Affinity.String(), the Go struct's fields in their fixed order, not the object's key order."""
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    one = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": term}]}
    two = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    assert _other(affinity={"nodeAffinity": {**one, **two}}) == _other(affinity={"nodeAffinity": {**two, **one}})


def test_a_volume_field_a_yaml_loader_read_as_a_date_is_hashed_not_refused():
    """A hand-written YAML dump can hold an unquoted date where a string goes; the pod is still read."""
    volume = {"name": "v", "emptyDir": {}, "annotations": datetime(2026, 11, 25, tzinfo=UTC)}
    assert _other(volumes=[volume]) != ""


# --- nodes (live_nodes, the part test_live_mutation_gaps.py does not reach) ----------------------------------------


def test_a_node_s_memory_is_its_allocatable_memory_in_bytes():
    """node_info.go:102-141 takes the node's allocatable memory (resource_info.go:53-79, Value(): bytes)."""
    node = node_of({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}}})
    assert node.memory_bytes == 32 * 2**30


def test_a_node_without_a_name_is_read_with_an_empty_name():
    assert node_of({"metadata": {}, "status": {"allocatable": {"cpu": "8"}}}).name == ""


def test_an_outside_pod_s_preferred_pod_affinity_terms_are_read():
    """A pod outside every job scores the nodes near it for KAI's pods through its preferred terms."""
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
    affinity = {
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 7, "podAffinityTerm": term}]}
    }
    pod = {"metadata": {"name": "db", "namespace": "ml"}, "spec": {"nodeName": "n1", "affinity": affinity}}
    outside = Outside()
    outside.add(pod, releasing=False)
    [read] = outside.pods
    assert [(t.topology_key, t.weight) for t in read.preferred_affinity] == [("zone", 7)]
    assert read.preferred_anti_affinity == ()


def test_a_scalar_resource_no_pod_asks_for_leaves_what_is_releasing_on_the_node_too():
    """Not over-committed and asked for by no pod, the dimension goes from the node, from its releasing pods too."""
    node = Node("n1", scalar={"rdma/ib": 4000}, releasing={"rdma/ib": 1000.0, "cpu": 500.0})
    jobs = [Job("j", "q", (Task(constraints=NodeConstraints()),))]
    [trimmed] = read_only((node,), jobs, set())
    assert (trimmed.scalar, trimmed.releasing) == ({}, {"cpu": 500.0})
