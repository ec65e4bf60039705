"""What `kaistack diagnose` reads from a live cluster, pinned where no other test did (found by mutation testing;
`kaistack validate`'s report is in test_validate_mutation_gaps.py).

Each fact is KAI-Scheduler@v0.17.0's (git -C /work/.mirror/kai-scheduler+KAI-Scheduler/repo show v0.17.0:<path>):
node conditions pkg/scheduler/scheduler_util/scheduler_utils.go:12-40; the default priority
pkg/common/constants/constants.go:17 and cache/cluster_info/cluster_info.go:601-634; a failed BindRequest
pkg/scheduler/api/bindrequest_info/binrequest_info.go:84-92; scheduling backoff cluster_info.go:667-684 with
pkg/scheduler/utils/pod_group_utils.go:12-49 and node_pool_utils.go:10-16; subgroups and topology constraints
pkg/scheduler/api/podgroup_info/subgroup_info/factory.go:19-92; Topology levels
deployments/kai-scheduler/crds/kai.scheduler_topologies.yaml:68-94.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kaistack.ops.live_nodes import Outside, go_int64, node_of, read_only
from kaistack.ops.live_podgroups import (
    bind_request_failed,
    constraint_of,
    in_scheduling_backoff,
    job_times,
    node_not_ready,
    optional_int,
    priority_classes,
    simulated_sub_groups,
    sub_groups_of,
    topology_of,
)
from kaistack.ops.live_snapshot import build
from placement.depth import MAX_SUBGROUP_DEPTH
from placement.model import (
    Job,
    Node,
    NodeConstraints,
    OutsidePod,
    PodAffinityTerm,
    Task,
    TopologyConstraint,
    TopologyLevel,
)
from placement.scenario_reader import MAX_TOPOLOGY_LEVELS

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)


def _node(name: str = "n1") -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "2"}
    return {"kind": "Node", "metadata": {"name": name}, "spec": {}, "status": {"allocatable": allocatable}}


def _group(name: str, **spec: Any) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "ml", **spec.pop("metadata", {})}
    return {"kind": "PodGroup", "metadata": metadata, "spec": {"queue": "q", "minMember": 1, **spec}}


def _member(name: str, group: str) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    metadata = {"name": name, "namespace": "ml", "annotations": {"pod-group-name": group}}
    spec = {"schedulerName": "kai-scheduler", "containers": [container]}
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Pending"}}


# --- node conditions (CheckNodeConditionPredicate) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("conditions", "reasons"),
    [
        ([{"type": "Ready", "status": "True"}], []),
        ([{"type": "Ready", "status": "Unknown"}], ["NotReady"]),
        ([{"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "True"}], ["MemoryPressure"]),
        ([{"type": "DiskPressure", "status": "Unknown"}], ["DiskPressure"]),
        ([{"type": "PIDPressure", "status": "False"}, {"type": "NetworkUnavailable", "status": "False"}], []),
        ([{"type": "NetworkUnavailable", "status": "True"}], ["NetworkUnavailable"]),
        ([{"type": "PIDPressure", "status": "True"}], ["PIDPressure"]),
        ([{"type": "KernelDeadlock", "status": "True"}, {"type": "Ready", "status": "False"}], ["NotReady"]),
    ],
)
def test_a_node_is_not_ready_for_each_condition_kai_checks_that_is_not_in_its_good_state(conditions, reasons):
    """Ready must be True; the pressure and network conditions must be False (anything else, Unknown included,
    is a reason); a condition KAI does not check is no reason."""
    node = {"metadata": {"name": "n1"}, "status": {"conditions": conditions}}
    assert node_not_ready(node) == reasons


def test_a_cordoned_node_is_not_ready_before_any_condition_is_read():
    node = {"spec": {"unschedulable": True}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    assert node_not_ready(node) == ["cordoned", "NotReady"]


# --- priority classes -----------------------------------------------------------------------------------------


def test_without_a_global_default_class_a_podgroup_naming_no_known_class_gets_priority_50():
    classes = [{"kind": "PriorityClass", "metadata": {"name": "train"}, "value": 60}]
    groups = [_group("a", priorityClassName="missing"), _group("b")]
    snap = build([_node(), *classes, *groups, _member("pa", "a"), _member("pb", "b")]).snapshot
    assert {j.name: j.priority for j in snap.jobs} == {"a": 50, "b": 50}


@pytest.mark.parametrize(
    "bad",
    [
        {"metadata": {}, "value": 70, "globalDefault": True},
        {"metadata": {"name": "x"}, "value": True, "globalDefault": True},
        {"metadata": {"name": "x"}, "value": "70", "globalDefault": True},
        {"metadata": {"name": "x"}, "value": 2**31, "globalDefault": True},
    ],
)
def test_a_priority_class_the_api_server_could_not_have_stored_is_ignored(bad):
    """A nameless class, or a value that is not an int32, neither names a class nor sets the default."""
    values, default = priority_classes([{"metadata": {"name": "train"}, "value": 60}, bad])
    assert (values, default) == ({"train": 60}, 50)


def test_priority_classes_read_and_none_found_leave_only_the_default_priority():
    """An empty list is a read that found none, not an unread kind (kaistack's own classes stand in only for that)."""
    assert priority_classes([]) == ({}, 50)


@pytest.mark.parametrize("value", [2**31 - 1, -(2**31)])
def test_the_ends_of_int32_are_priority_class_values(value):
    values, default = priority_classes([{"metadata": {"name": "edge"}, "value": value, "globalDefault": True}])
    assert (values, default) == ({"edge": value}, value)


# --- BindRequests -----------------------------------------------------------------------------------------------


def _bind_request(phase: str, **fields: Any) -> dict[str, Any]:
    spec = {"podName": "p", "selectedNode": "n1", **fields.pop("spec", {})}
    return {"kind": "BindRequest", "spec": spec, "status": {"phase": phase, **fields}}


def test_a_failed_bind_request_without_a_backoff_limit_is_failed():
    assert bind_request_failed(_bind_request("Failed")) is True


@pytest.mark.parametrize("limit", [True, "3", 1.5])
def test_a_backoff_limit_that_is_not_an_integer_counts_as_none(limit):
    assert bind_request_failed(_bind_request("Failed", failedAttempts=0, spec={"backoffLimit": limit})) is True


@pytest.mark.parametrize("attempts", [True, "5"])
def test_failed_attempts_that_are_not_an_integer_do_not_use_up_the_backoff(attempts):
    request = _bind_request("Failed", failedAttempts=attempts, spec={"backoffLimit": 1})
    assert bind_request_failed(request) is False


@pytest.mark.parametrize(("limit", "failed"), [(0, True), (1, False)])
def test_failed_attempts_left_out_are_none_yet(limit, failed):
    """FailedAttempts is a plain int32 with omitempty (pkg/apis/scheduling/v1alpha2/bindrequest_types.go:90), so
    absent reads as 0; the binder fails a request with backoffLimit 0 without counting an attempt
    (pkg/binder/controllers/bindrequest_controller.go:235-239), and IsFailed's 0 >= 0 holds."""
    assert bind_request_failed(_bind_request("Failed", spec={"backoffLimit": limit})) is failed


def test_a_bind_request_not_in_phase_failed_is_not_failed_whatever_its_attempts():
    request = _bind_request("Pending", failedAttempts=3, spec={"backoffLimit": 1})
    assert bind_request_failed(request) is False


# --- scheduling backoff (isPodGroupUpForScheduler) --------------------------------------------------------------


def _backoff_group(backoff: Any, *conditions: tuple[str, Any], pool: str | None = None) -> dict[str, Any]:
    group = _group("g") if backoff is None else _group("g", schedulingBackoff=backoff)
    if pool is not None:
        group["metadata"]["labels"] = {"kai.scheduler/node-pool": pool}
    group["status"] = {"schedulingConditions": [{"nodePool": p, "transitionID": t} for p, t in conditions]}
    return group


def test_a_scheduling_backoff_of_zero_is_a_backoff():
    """Only NoSchedulingBackoff (-1, or unset) skips the conditions."""
    assert in_scheduling_backoff(_backoff_group(0, ("default", "1"))) is True


@pytest.mark.parametrize("backoff", [None, -1])
def test_a_podgroup_without_scheduling_backoff_is_never_held_back(backoff):
    """GetSchedulingBackoffValue: unset is NoSchedulingBackoff (-1), and -1 is no backoff whatever the conditions."""
    assert in_scheduling_backoff(_backoff_group(backoff, ("default", "1"))) is False


def test_a_podgroup_with_backoff_but_no_scheduling_condition_is_scheduled():
    assert in_scheduling_backoff(_backoff_group(1)) is False


def test_the_node_pool_is_the_podgroup_s_node_pool_label():
    assert in_scheduling_backoff(_backoff_group(1, ("pool-b", "1"), pool="pool-b")) is True
    assert in_scheduling_backoff(_backoff_group(1, ("default", "1"), pool="pool-b")) is False


def test_an_empty_node_pool_label_is_the_default_pool():
    assert in_scheduling_backoff(_backoff_group(1, ("default", "1"), pool="")) is True


def test_of_conditions_with_the_same_transition_id_the_first_is_the_last_condition():
    """GetLastSchedulingCondition replaces its pick only on a strictly greater transition ID."""
    assert in_scheduling_backoff(_backoff_group(1, ("default", "2"), ("other", "2"))) is True
    assert in_scheduling_backoff(_backoff_group(1, ("other", "2"), ("default", "2"))) is False


def test_an_unreadable_transition_id_ranks_as_minus_one():
    """strconv.Atoi's error makes it -1: below "0", level with "-1"."""
    assert in_scheduling_backoff(_backoff_group(1, ("default", "x"), ("other", "0"))) is False
    assert in_scheduling_backoff(_backoff_group(1, ("default", "x"), ("other", "-1"))) is True


@pytest.mark.parametrize(
    ("later", "earlier"),
    [("0000000000000000002", "1"), ("9223372036854775807", "9223372036854775806"), ("1", "9223372036854775808")],
)
def test_a_transition_id_ranks_by_its_value_anywhere_in_int64(later, earlier):
    """strconv.Atoi on 64 bits is ParseInt(s, 10, 64): leading zeros and all 19 digits of int64; past it, an
    error, so -1."""
    assert in_scheduling_backoff(_backoff_group(1, ("other", earlier), ("default", later))) is True
    assert in_scheduling_backoff(_backoff_group(1, ("default", earlier), ("other", later))) is False


def test_a_first_condition_with_no_fields_is_still_the_pick_until_a_greater_transition_id():
    group = _backoff_group(1, ("default", "x"))
    group["status"]["schedulingConditions"].insert(0, {})
    assert in_scheduling_backoff(group) is False


# --- PodGroup times -----------------------------------------------------------------------------------------------


def test_without_an_eviction_the_preemption_delay_counts_from_the_podgroup_s_creation():
    group = _group("g", metadata={"creationTimestamp": "2026-11-25T11:50:00Z"})
    assert job_times(group, NOW)["age_seconds"] == 600.0


# --- Topologies and topology constraints -----------------------------------------------------------------------


def _topology(*levels: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Topology", "metadata": {"name": "dc"}, "spec": {"levels": list(levels)}}


def test_a_topology_with_as_many_levels_as_the_crd_allows_is_read():
    levels = [{"nodeLabel": f"level-{i}"} for i in range(MAX_TOPOLOGY_LEVELS)]
    topology = topology_of(_topology(*levels))
    assert topology is not None
    assert len(topology.levels) == MAX_TOPOLOGY_LEVELS
    assert topology_of(_topology(*levels, {"nodeLabel": "one-more"})) is None


@pytest.mark.parametrize("label", ["", None, 7])
def test_a_level_without_a_node_label_string_is_left_out(label):
    """nodeLabel is required, minLength 1."""
    topology = topology_of(_topology({"nodeLabel": label}, {"nodeLabel": "rack", "alias": "r"}))
    assert topology is not None
    assert topology.levels == (TopologyLevel("rack", "r"),)


@pytest.mark.parametrize("alias", ["", None, 7])
def test_a_level_s_alias_that_is_not_a_non_empty_string_is_none(alias):
    topology = topology_of(_topology({"nodeLabel": "rack", "alias": alias}))
    assert topology is not None
    assert topology.levels == (TopologyLevel("rack", None),)


def test_a_topology_without_a_usable_level_is_none():
    assert topology_of(_topology({"nodeLabel": ""})) is None
    assert topology_of(_topology()) is None


def test_a_topology_without_a_name_is_read_with_an_empty_name():
    topology = topology_of({"spec": {"levels": [{"nodeLabel": "rack"}]}})
    assert topology is not None
    assert topology.name == ""


@pytest.mark.parametrize("topology", ["", None, 3])
def test_the_podgroup_s_own_constraint_counts_only_when_it_names_a_topology(topology):
    raw = {"topology": topology, "requiredTopologyLevel": "rack"}
    assert constraint_of(raw, root=True) is None


def test_a_constraint_reads_its_topology_and_both_levels():
    raw = {"topology": "dc", "requiredTopologyLevel": "rack", "preferredTopologyLevel": "zone"}
    assert constraint_of(raw, root=True) == TopologyConstraint("dc", "rack", "zone")


def test_a_subgroup_s_constraint_counts_even_without_a_topology():
    """createSubGroupInfos keeps a subgroup's constraint whenever it is set; FromPodGroup checks the topology only
    for the PodGroup's own."""
    assert constraint_of({"requiredTopologyLevel": "rack"}) == TopologyConstraint("", "rack", None)
    assert constraint_of({"topology": 3, "requiredTopologyLevel": "rack"}) == TopologyConstraint("", "rack", None)


@pytest.mark.parametrize("level", ["", None, 4])
def test_a_topology_level_that_is_not_a_non_empty_string_is_none(level):
    raw = {"topology": "dc", "requiredTopologyLevel": level, "preferredTopologyLevel": level}
    assert constraint_of(raw, root=True) == TopologyConstraint("dc", None, None)


# --- subgroups ----------------------------------------------------------------------------------------------------


def _with_sub_groups(*groups: dict[str, Any]) -> dict[str, Any]:
    return _group("g", subGroups=list(groups))


@pytest.mark.parametrize(
    "groups",
    [
        [{"name": "a"}, {"name": "a"}],
        [{"name": "a"}, {"name": ""}],
        [{"name": "a"}, {"minMember": 1}],
        [{"name": "a"}, {"name": 3}],
        [{"name": "a"}, {"name": "b", "parent": "c"}],
        [{"name": "a"}, {"name": "b", "parent": ""}],
    ],
)
def test_subgroups_kai_could_not_build_a_tree_from_are_none(groups):
    """A repeated name is FromPodGroup's error; an unnamed entry or a parent naming no entry builds no tree."""
    assert sub_groups_of(_with_sub_groups(*groups)) == ()


def test_a_subgroup_s_min_member_of_zero_is_read_as_zero():
    [group] = sub_groups_of(_with_sub_groups({"name": "a", "minMember": 0}))
    assert group.min_member == 0


@pytest.mark.parametrize("value", [True, "2", -1, 2**31, float("inf"), float("nan")])
def test_a_min_member_that_is_not_an_int32_count_is_unset(value):
    assert optional_int(value) is None


def test_the_largest_int32_is_a_min_member():
    assert optional_int(2**31 - 1) == 2**31 - 1


def _chain(depth: int) -> dict[str, Any]:
    return _with_sub_groups(*({"name": f"s{i}", "parent": f"s{i - 1}" if i else None} for i in range(depth)))


def test_subgroups_as_deep_as_the_simulator_goes_are_simulated():
    notes: list[str] = []
    assert len(simulated_sub_groups(_chain(MAX_SUBGROUP_DEPTH), "ml/g", notes)) == MAX_SUBGROUP_DEPTH
    assert notes == []


def test_subgroups_deeper_than_the_simulator_goes_are_one_gang_with_a_note():
    notes: list[str] = []
    assert simulated_sub_groups(_chain(MAX_SUBGROUP_DEPTH + 1), "ml/g", notes) == ()
    assert len(notes) == 1
    assert notes[0].startswith(f"PodGroup ml/g: its subGroups nest {MAX_SUBGROUP_DEPTH + 1} levels deep")
    assert notes[0].endswith("it is simulated as one gang of minMember pods")


# --- nodes (live_nodes) -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "mib"),
    [
        ("81920", 81920),
        ("+5", 5),
        ("-5", -5),
        ("0", 0),
        ("-000", 0),
        ("0000000000000000000000042", 42),
        ("1000000000000000000", 10**18),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("9223372036854775808", None),
        ("-9223372036854775809", None),
        ("10000000000000000000", None),
        ("1e3", None),
        ("", None),
    ],
)
def test_the_gpu_memory_label_is_read_as_go_s_parse_int_reads_it(label, mib):
    """strconv.ParseInt(label, 10, 64) (node_info.go:652-657): an optional sign, decimal digits, within int64."""
    assert go_int64(label) == mib


def test_a_node_s_mig_devices_are_its_non_zero_mig_resources():
    allocatable = {"cpu": "8", "memory": "32Gi", "nvidia.com/mig-1g.5gb": "2", "nvidia.com/mig-2g.10gb": "0"}
    labels = {"nvidia.com/mig.strategy": "mixed"}
    node = node_of({"metadata": {"name": "n1", "labels": labels}, "status": {"allocatable": allocatable}})
    assert (node.mig, node.mig_strategy) == ({"nvidia.com/mig-1g.5gb": 2}, "mixed")


def test_a_node_object_without_a_pods_count_takes_the_kubelet_s_default_of_110():
    """kubernetes/kubelet@v0.35.0 config/v1beta1/types.go:477-481 (maxPods, default 110); a Node object always
    states status.allocatable.pods, so only a hand-written dump lacks it."""
    assert node_of({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}}).pods == 110


def _running(name: str, scheduler: str, **labels: str) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    metadata = {"name": name, "namespace": "ml", "labels": labels}
    return {"metadata": metadata, "spec": {"schedulerName": scheduler, "nodeName": "n1", "containers": [container]}}


def test_the_fair_share_total_leaves_out_kai_s_own_pods_outside_every_job():
    """proportion.go:286-295 takes out of the total only what other schedulers' active pods hold: a KAI pod without
    a PodGroup holds its request on the node but stays in the total."""
    outside = Outside()
    outside.add(_running("lone", "kai-scheduler"), releasing=False)
    outside.add(_running("daemon", "default-scheduler"), releasing=False)
    node = node_of({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}}, outside)
    assert node.held["cpu"] == 2000.0
    assert node.outside_total["cpu"] == 1000.0


def _term(key: str) -> PodAffinityTerm:
    return PodAffinityTerm(topology_key=key)


def _job(constraints: NodeConstraints, scalar: dict[str, int] | None = None) -> Job:
    return Job("j", "q", (Task(constraints=constraints, scalar=scalar or {}),))


_FOREIGN = OutsidePod("ml", (("app", "db"),))
_FOREIGN_PORT = OutsidePod("ml", (("app", "web"),), host_ports=(("0.0.0.0", "TCP", 8080),))


@pytest.mark.parametrize(
    "constraints",
    [
        NodeConstraints(pod_affinity=(_term("zone"),)),
        NodeConstraints(pod_anti_affinity=(_term("zone"),)),
        NodeConstraints(preferred_affinity=(_term("zone"),)),
        NodeConstraints(preferred_anti_affinity=(_term("zone"),)),
    ],
)
def test_pods_outside_the_jobs_are_kept_when_some_kai_pod_has_an_inter_pod_term(constraints):
    jobs = [_job(NodeConstraints()), _job(constraints)]
    [node] = read_only((Node("n1", outside_pods=(_FOREIGN,)),), jobs, set())
    assert node.outside_pods == (_FOREIGN,)


def test_pods_outside_the_jobs_are_dropped_when_no_pod_has_an_inter_pod_term():
    [node] = read_only((Node("n1", outside_pods=(_FOREIGN,)),), [_job(NodeConstraints())], set())
    assert node.outside_pods == ()


@pytest.mark.parametrize(("held", "kept"), [(3.0, True), (2.0, False)])
def test_a_scalar_resource_no_pod_asks_for_is_kept_only_when_over_committed(held, kept):
    """Over-committed: what pods outside the jobs hold and release is more than the node offers."""
    node = Node("n1", scalar={"rdma/ib": 2}, held={"rdma/ib": held - 1}, releasing={"rdma/ib": 1.0})
    [trimmed] = read_only((node,), [_job(NodeConstraints())], set())
    assert ("rdma/ib" in trimmed.scalar) is kept
    assert ("rdma/ib" in trimmed.held) is kept


def test_of_pods_outside_the_jobs_only_those_with_host_ports_are_kept_when_some_kai_pod_wants_one():
    wants = NodeConstraints(host_ports=(("0.0.0.0", "TCP", 8080),))
    jobs = [_job(NodeConstraints()), _job(wants)]
    [node] = read_only((Node("n1", outside_pods=(_FOREIGN, _FOREIGN_PORT)),), jobs, set())
    assert node.outside_pods == (_FOREIGN_PORT,)


def test_a_node_with_mig_devices_and_no_strategy_label_has_strategy_none():
    allocatable = {"cpu": "8", "nvidia.com/mig-1g.5gb": "2"}
    node = node_of({"metadata": {"name": "n1"}, "status": {"allocatable": allocatable}})
    assert (node.mig, node.mig_strategy) == ({"nvidia.com/mig-1g.5gb": 2}, "none")


def test_a_gpu_reservation_pod_holds_its_cpu_and_memory_and_no_gpu():
    """node_info.go:470-473 tracks all but its GPU; kaistack counts that GPU and the pod's slot from the shares' GPU
    groups (NodeState.reserve_pods), so the pod itself holds only its cpu and memory."""
    pod = _running("reservation", "kai-scheduler", app="kai-resource-reservation")
    pod["metadata"]["namespace"] = "kai-resource-reservation"
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    outside = Outside()
    outside.add(pod, releasing=False)
    assert outside.held == {"cpu": 1000.0, "memory": float(2**30)}


def test_an_outside_pod_s_malformed_preferred_terms_count_as_none():
    """The API server refuses a weight outside 1-100; a dump with one is read as having no preferred term."""
    pod = _running("daemon", "default-scheduler")
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
    pod["spec"]["affinity"] = {
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "podAffinityTerm": term}]}
    }
    outside = Outside()
    outside.add(pod, releasing=False)
    [read] = outside.pods
    assert (read.preferred_affinity, read.preferred_anti_affinity) == ((), ())


def test_a_node_without_mig_devices_has_strategy_none_whatever_its_label():
    labels = {"nvidia.com/mig.strategy": "single"}
    node = node_of({"metadata": {"name": "n1", "labels": labels}, "status": {"allocatable": {"nvidia.com/gpu": "8"}}})
    assert (node.mig, node.mig_strategy) == ({}, "none")
