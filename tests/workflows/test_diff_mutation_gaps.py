"""What `kaistack diff` reports, where no other test pins it: what `pulumi up` would do
(kaistack.ops.update_hazards) and the capacity diff's rows (kaistack.capacity.diff).

Each test is one behaviour that tests/workflows/test_update_hazards.py or tests/capacity/test_diff_changes.py checks
only in part (a hazard's kind and subject, not its message) or not at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from workflow_testlib import TRAIN_JOB, two_tenant_kind_stack
from workflow_testlib import hazard_kinds as _kinds
from workflow_testlib import hazards_of_change as _update

from kaistack.capacity.check import CapacityReport, PodPlacement, QueueVerdict, WorkloadVerdict, check
from kaistack.capacity.diff import CapacityDiff, Hazard, diff_reports, to_json, to_markdown, to_text
from kaistack.declaration.parse import parse_config


def _kind() -> dict[str, Any]:
    return two_tenant_kind_stack(TRAIN_JOB)


def _eks(version: str = "1.35") -> dict[str, Any]:
    pool = {"name": "h100", "instanceType": "p5.48xlarge", "count": 1, "gpus": 8, "gpuMemoryMiB": 81559}
    pool |= {"gpuProduct": "NVIDIA-H100", "cpu": "191", "memory": "1900Gi", "pods": 100}
    system = {"instanceType": "m6i.large", "cpu": "1930m", "memory": "7Gi", "pods": 29}
    eks = {"region": "us-west-2", "availabilityZones": ["us-west-2a", "us-west-2b"], "systemNodeGroup": system}
    eks["version"] = version
    return {"cluster": {"provider": "eks", "eks": eks, "nodePools": [pool]}, "gpu": {"mode": "gpu-operator"}}


def _existing_vpc(raw: dict[str, Any]) -> dict[str, Any]:
    eks = raw["cluster"]["eks"]
    del eks["availabilityZones"]
    eks |= {"vpcId": "vpc-0123456789abcdef0", "subnetIds": ["subnet-0a", "subnet-0b"]}
    return raw


def _public_zones(*zones: str) -> dict[str, Any]:
    raw = _eks()
    raw["cluster"]["eks"] |= {"privateNodes": False, "availabilityZones": [f"us-west-2{z}" for z in zones]}
    return raw


def _drop_alpha(raw: dict[str, Any]) -> None:
    raw["tenants"].pop(0)
    raw["queues"].pop(0)
    raw["workloads"].clear()


# --- EKS version: what the message tells the user to do (EKS UpdateClusterVersion: one minor up, never back) ---


def test_eks_one_minor_up_says_the_control_plane_upgrades_and_every_node_group_rolls() -> None:
    (hazard,) = _update(_eks("1.35"), lambda r: r["cluster"]["eks"].update(version="1.36"))
    assert hazard.kind == "eks-upgraded"
    assert "upgraded 1.35 -> 1.36" in hazard.message
    assert "every node group rolls" in hazard.message


def test_eks_two_minors_up_names_the_next_minor_to_apply_first() -> None:
    (hazard,) = _update(_eks("1.35"), lambda r: r["cluster"]["eks"].update(version="1.37"))
    assert "one minor version at a time" in hazard.message
    assert "set 1.36 first" in hazard.message


def test_eks_downgrade_says_it_fails_and_to_keep_the_running_version() -> None:
    (hazard,) = _update(_eks("1.35"), lambda r: r["cluster"]["eks"].update(version="1.34"))
    assert "cannot downgrade" in hazard.message
    assert hazard.message.endswith("keep 1.35")


def test_eks_major_version_change_is_refused_not_an_upgrade() -> None:
    assert _kinds(_update(_eks("1.35"), lambda r: r["cluster"]["eks"].update(version="2.0"))) == [
        ("eks-version-refused", "cluster")
    ]


def test_eks_next_major_is_refused_as_a_skip_not_called_a_downgrade() -> None:
    (hazard,) = _update(_eks("1.35"), lambda r: r["cluster"]["eks"].update(version="2.0"))
    assert "one minor version at a time" in hazard.message
    assert "downgrade" not in hazard.message


def test_eks_previous_major_is_a_downgrade() -> None:
    (hazard,) = _update(_eks("2.1"), lambda r: r["cluster"]["eks"].update(version="1.40"))
    assert "cannot downgrade a control plane (2.1 -> 1.40)" in hazard.message


def test_eks_version_that_names_no_minor_on_either_side_is_no_hazard() -> None:
    # versions.kubernetes_minor reads no minor from such a version: the diff cannot tell what EKS would do.
    assert _update(_eks("1.35"), lambda r: r["cluster"]["eks"].update(version="latest")) == []
    assert _update(_eks("latest"), lambda r: r["cluster"]["eks"].update(version="1.35")) == []


def test_kind_stack_ignores_its_cluster_eks_settings() -> None:
    base = _kind()
    base["cluster"]["eks"] = _eks("1.35")["cluster"]["eks"]
    change = {"version": "1.33", "gpuNodeDiskGiB": 500, "systemNodeGroup": {"instanceType": "m6i.xlarge"}}
    assert _update(base, lambda r: r["cluster"]["eks"].update(change)) == []


# --- platform ---


def test_gpu_stack_turned_on_from_none_replaces_no_gpu_stack() -> None:
    base = _kind()
    base["gpu"] = {"mode": "none"}
    kinds = [kind for kind, _ in _kinds(_update(base, lambda r: r["gpu"].update(mode="fake")))]
    assert "gpu-stack-replaced" not in kinds


def test_eks_pool_count_change_replaces_no_kind_cluster() -> None:
    assert _update(_eks(), lambda r: r["cluster"]["nodePools"][0].update(count=2)) == []


# --- tenants' NodePorts on kind ---


def test_moved_port_names_the_deleted_tenant_that_still_holds_it() -> None:
    hazards = [h for h in _update(_kind(), _drop_alpha) if h.kind == "tenant-port-moved"]
    (moved,) = hazards
    assert moved.subject == "beta"
    assert "which alpha holds until it is deleted" in moved.message
    assert moved.message.endswith("set tenants[].nodePort: 31001 to keep it")


def test_tenant_added_after_the_others_moves_no_port() -> None:
    def add(raw: dict[str, Any]) -> None:
        raw["queues"].append({"name": "c"})
        raw["tenants"].append({"name": "gamma", "queues": ["c"]})

    assert _update(_kind(), add) == []


def test_tenant_added_onto_a_port_a_deleted_tenant_holds_is_told_a_free_port() -> None:
    def replace_alpha(raw: dict[str, Any]) -> None:
        raw["tenants"][0] = {"name": "gamma", "queues": ["a"]}
        raw["workloads"].clear()

    (taken,) = [h for h in _update(_kind(), replace_alpha) if h.kind == "tenant-port-taken"]
    assert taken.subject == "gamma"
    assert "its API NodePort 31000" in taken.message
    assert "which alpha holds until it is deleted" in taken.message
    # 31000 and 31001 are held before or after the change; the kind range (tenantPorts 10) has 31002 free.
    assert taken.message.endswith("set tenants[].nodePort: 31002 (free in the range)")


def test_tenant_dropping_its_api_server_url_onto_a_held_port_is_told_so() -> None:
    base = _kind()
    base["tenants"][1]["apiServerUrl"] = "https://beta.example.com"

    def drop_alpha_and_beta_url(raw: dict[str, Any]) -> None:
        _drop_alpha(raw)
        del raw["tenants"][0]["apiServerUrl"]

    hazards = [h for h in _update(base, drop_alpha_and_beta_url) if h.subject == "beta"]
    assert [h.kind for h in hazards] == ["tenant-port-taken"]
    assert "which alpha holds until it is deleted" in hazards[0].message


def test_port_held_by_a_tenant_that_stays_is_freed_by_its_own_update() -> None:
    def swap_ports(raw: dict[str, Any]) -> None:
        raw["tenants"][0]["nodePort"] = 31001
        raw["tenants"][1]["nodePort"] = 31000

    hazards = _update(_kind(), swap_ports)
    assert [(h.kind, h.subject) for h in hazards] == [("tenant-port-moved", "alpha"), ("tenant-port-moved", "beta")]
    assert "which beta holds until its own update" in hazards[0].message


def test_tenant_added_onto_a_port_nobody_held_is_no_hazard() -> None:
    def add_first(raw: dict[str, Any]) -> None:
        raw["queues"].append({"name": "c"})
        raw["tenants"].append({"name": "gamma", "queues": ["c"], "nodePort": 31005})

    assert _update(_kind(), add_first) == []


def test_no_free_port_left_says_to_apply_in_two_steps() -> None:
    base = _kind()
    base["cluster"]["kind"] = {"tenantPorts": 2}

    def replace_alpha(raw: dict[str, Any]) -> None:
        raw["tenants"][0] = {"name": "gamma", "queues": ["a"]}
        raw["workloads"].clear()

    (taken,) = [h for h in _update(base, replace_alpha) if h.kind == "tenant-port-taken"]
    assert taken.message.endswith("apply it in two steps")


def test_tenant_given_an_api_server_url_has_no_node_port_to_move() -> None:
    def drop_alpha_and_expose_beta(raw: dict[str, Any]) -> None:
        _drop_alpha(raw)
        raw["tenants"][0]["apiServerUrl"] = "https://beta.example.com"

    kinds = [kind for kind, _ in _kinds(_update(_kind(), drop_alpha_and_expose_beta))]
    assert "tenant-port-moved" not in kinds


# --- EKS node groups and subnets ---


def test_moving_into_an_existing_vpc_creates_no_subnet_over_the_old_ones() -> None:
    kinds = [kind for kind, _ in _kinds(_update(_eks(), _existing_vpc))]
    assert "subnets-replaced" not in kinds


def test_leaving_an_existing_vpc_creates_no_subnet_over_the_old_ones() -> None:
    def own_vpc(raw: dict[str, Any]) -> None:
        raw["cluster"]["eks"] = _eks()["cluster"]["eks"]

    base = _existing_vpc(_eks())
    base["cluster"]["eks"]["availabilityZones"] = ["us-west-2b", "us-west-2a"]
    kinds = [kind for kind, _ in _kinds(_update(base, own_vpc))]
    assert "subnets-replaced" not in kinds


def test_pool_without_zones_spans_the_clusters_so_an_appended_zone_replaces_its_node_group() -> None:
    # components.eks_network.node_subnets_in: a pool without zones gets every node subnet of the VPC.
    hazards = _update(
        _public_zones("a", "b", "c"), lambda r: r["cluster"]["eks"]["availabilityZones"].append("us-west-2d")
    )
    (pool,) = [h for h in hazards if h.subject == "h100"]
    assert pool.message.startswith("zones changed:")


def test_pool_moved_off_a_removed_zone_names_the_zone_change_not_a_subnet_change() -> None:
    # Four zones and three carve the same ranges (components.eks_network.subnet_cidrs), so only us-west-2d's goes.
    base = _public_zones("a", "b", "c", "d")
    base["cluster"]["nodePools"][0]["availabilityZones"] = ["us-west-2d"]

    def drop_d(raw: dict[str, Any]) -> None:
        raw["cluster"]["eks"]["availabilityZones"].pop()
        raw["cluster"]["nodePools"][0]["availabilityZones"] = ["us-west-2a"]

    (pool,) = [h for h in _update(base, drop_d) if h.subject == "h100"]
    assert pool.message.startswith("zones changed:")


# --- workloads ---


def test_bare_pod_image_change_deletes_and_recreates_the_pod() -> None:
    # pulumi-kubernetes replaces a Pod whose spec changes (provider/pkg/provider/diff.go).
    base = {**_kind(), "workloads": [{"name": "nb", "kind": "Pod", "queue": "a", "image": "n:1"}]}
    assert _kinds(_update(base, lambda r: r["workloads"][0].update(image="n:2"))) == [("workload-restarted", "nb")]


def test_last_workload_leaving_default_deletes_no_namespace() -> None:
    base = {**_kind(), "workloads": [{"name": "x", "kind": "Job", "queue": "a", "image": "t:1"}]}
    base["workloads"][0]["namespace"] = "default"
    assert _update(base, lambda r: r["workloads"].clear()) == []


def test_tenant_namespace_named_like_a_host_namespace_is_deleted_when_emptied() -> None:
    # Inside the vCluster it is kaistack's own namespace; the Tenant owns only the host namespace of that name.
    work = {"name": "x", "kind": "Job", "queue": "a", "image": "t:1", "tenant": "alpha", "namespace": "vcluster-alpha"}
    base = {**_kind(), "workloads": [work]}
    assert _kinds(_update(base, lambda r: r["workloads"].clear())) == [("namespace-deleted", "alpha/vcluster-alpha")]


# --- the capacity diff's rows (kaistack.capacity.diff): verdicts of one real check, edited to the case ---

_REPORT: list[CapacityReport] = []


def _report(*workloads: WorkloadVerdict, queues: tuple[QueueVerdict, ...] = ()) -> CapacityReport:
    if not _REPORT:
        stack = {**_kind(), "tenants": [], "queues": [{"name": "a"}], "workloads": []}
        _REPORT.append(check(parse_config({**stack, "kai": {"capacityCheck": "off"}}, source="test"), "unit"))
    return dataclasses.replace(_REPORT[0], workloads=workloads, queues=queues)


def _pod(name: str, node: str | None, status: str = "Running", domain: tuple[str, ...] = ()) -> PodPlacement:
    return PodPlacement(name, status, node, (), 1.0 if node else 0.0, domain)


def _work(name: str, status: str, *pods: PodPlacement, not_reached: bool = False) -> WorkloadVerdict:
    return WorkloadVerdict(name, "Deployment", "host", "a", "train", status, (), pods, not_reached=not_reached)


def _queue(allocated: float, fair_share: float) -> QueueVerdict:
    return QueueVerdict("a", None, {}, {}, {"gpu": fair_share}, {"gpu": allocated})


def _compare(before: CapacityReport, after: CapacityReport, changed: tuple[str, ...] = ()) -> CapacityDiff:
    names = {w.name for w in (*before.workloads, *after.workloads)}
    declared_before = {n: {"name": n} for n in names}
    declared_after = {n: {"name": n, **({"image": "new"} if n in changed else {})} for n in names}
    return diff_reports(before, after, declared_before=declared_before, declared_after=declared_after, base="HEAD")


def _big(placed: int) -> WorkloadVerdict:
    pods = [_pod(f"big-{i}", "n1" if i < placed else None, "Running" if i < placed else "Pending") for i in range(3)]
    return _work("big", "Partial", *pods)


def test_workload_that_gained_pods_only_in_a_stopped_simulation_is_named_as_no_taker() -> None:
    taker = _work("aaa", "Running", _pod("aaa-0", "n1"), not_reached=True)
    diff = _compare(_report(_big(2)), _report(_big(1), taker), changed=("aaa",))
    assert [w.change for w in diff.workloads if w.name == "big"] == ["no-longer-fits"]


def test_workload_not_reached_before_the_change_is_named_as_no_taker() -> None:
    before = _report(_big(2), _work("aaa", "Pending", _pod("aaa-0", None, "Pending"), not_reached=True))
    diff = _compare(before, _report(_big(1), _work("aaa", "Running", _pod("aaa-0", "n1"))), changed=("aaa",))
    assert [w.change for w in diff.workloads if w.name == "big"] == ["no-longer-fits"]


def test_workload_that_places_more_of_its_pods_is_named_as_the_taker() -> None:
    before = _report(_big(2), _work("aaa", "Partial", _pod("aaa-0", "n1"), _pod("aaa-1", None, "Pending")))
    after = _report(_big(1), _work("aaa", "Running", _pod("aaa-0", "n1"), _pod("aaa-1", "n1")))
    (big,) = [w for w in _compare(before, after, changed=("aaa",)).workloads if w.name == "big"]
    assert (big.change, big.detail) == ("displaced", "1 of 3 pods placed, was 2; room taken by: aaa")


def test_workload_neither_simulation_reached_says_both_stopped() -> None:
    late = _work("late", "Pending", _pod("late-0", None, "Pending"), not_reached=True)
    (row,) = _compare(_report(late), _report(late)).workloads
    assert row.change == "not-compared"
    assert "before and after the change stopped" in row.detail


def test_changed_workload_pending_alike_before_and_after_is_no_row() -> None:
    assert _compare(_report(_big(2)), _report(_big(2)), changed=("big",)).workloads == ()


def test_changed_workload_that_lands_on_another_node_is_moved_with_both_places() -> None:
    diff = _compare(
        _report(_work("w", "Running", _pod("w-0", "n1"))),
        _report(_work("w", "Running", _pod("w-0", "n2"))),
        changed=("w",),
    )
    assert [(w.change, w.detail) for w in diff.workloads] == [("moved", "w-0@n1 -> w-0@n2")]


def test_changed_workload_on_the_same_node_is_no_row() -> None:
    same = _report(_work("w", "Running", _pod("w-0", "n1")))
    assert _compare(same, same, changed=("w",)).workloads == ()


def test_workload_moved_into_a_topology_domain_from_none_shows_a_dash_for_none() -> None:
    before = _report(_work("w", "Running", _pod("w-0", "n1")))
    after = _report(_work("w", "Running", _pod("w-0", "n2", domain=("zone-a",))))
    (row,) = _compare(before, after, changed=("w",)).workloads
    assert row.detail == "domain - -> zone-a"


def test_workload_moved_out_of_its_topology_domain_shows_a_dash_for_none() -> None:
    before = _report(_work("w", "Running", _pod("w-0", "n1", domain=("zone-a",))))
    (row,) = _compare(before, _report(_work("w", "Running", _pod("w-0", "n2"))), changed=("w",)).workloads
    assert row.detail == "domain zone-a -> -"


def test_added_and_removed_workloads_show_a_dash_in_the_markdown_for_the_missing_side() -> None:
    diff = _compare(
        _report(_work("old", "Running", _pod("old-0", "n1"))), _report(_work("new", "Running", _pod("new-0", "n1")))
    )
    text = to_markdown(diff)
    assert "| `new` | added and placed | - | Running |" in text
    assert "| `old` | removed | Running | - |" in text


def test_queue_whose_fair_share_alone_moves_is_a_row_with_both_values_in_order() -> None:
    diff = _compare(_report(queues=(_queue(1, 2),)), _report(queues=(_queue(1, 1),)))
    ((name, alloc_before, alloc_after, share_before, share_after),) = [dataclasses.astuple(q) for q in diff.queues]
    assert (name, alloc_before, alloc_after, share_before, share_after) == ("a", 1, 1, 2, 1)


def test_queue_whose_allocation_alone_moves_is_a_row_with_both_values_in_order() -> None:
    diff = _compare(_report(queues=(_queue(2, 1),)), _report(queues=(_queue(1, 1),)))
    assert [dataclasses.astuple(q) for q in diff.queues] == [("a", 2, 1, 1, 1)]


def test_queue_with_the_same_allocation_and_fair_share_is_no_row() -> None:
    assert _compare(_report(queues=(_queue(1, 1),)), _report(queues=(_queue(1, 1),))).queues == ()


def test_json_rounds_the_fair_share_to_six_digits() -> None:
    diff = _compare(_report(queues=(_queue(1, 2 / 3),)), _report(queues=(_queue(1, 1 / 3),)))
    assert to_json(diff)["queues"][0]["gpuFairShare"] == [0.666667, 0.333333]


def test_summary_of_a_queue_only_change_says_so() -> None:
    diff = _compare(_report(queues=(_queue(1, 2),)), _report(queues=(_queue(1, 1),)))
    assert to_text(diff).splitlines()[0].endswith(": queue shares change only")


def test_summary_of_workload_rows_counts_them_by_change() -> None:
    diff = _compare(_report(), _report(_work("new", "Running", _pod("new-0", "n1"))))
    assert to_text(diff).splitlines()[0].endswith(": 1 added and placed")


@pytest.mark.parametrize(("count", "ending"), [(1, "; 1 update hazard"), (2, "; 2 update hazards")])
def test_summary_of_hazards_alone_counts_them(count: int, ending: str) -> None:
    hazards = tuple(Hazard("tenant-deleted", f"t{i}", "goes") for i in range(count))
    diff = CapacityDiff("dev", "HEAD", (), (), True, True, hazards=hazards)
    assert to_text(diff).splitlines()[0].endswith(f": no capacity change{ending}")


def test_diff_with_only_the_base_side_stopped_by_its_time_limit_is_partial() -> None:
    assert CapacityDiff("dev", "HEAD", (), (), True, True, partial_before="stopped at 1s").partial


# --- an existing VPC: the node groups take its subnetIds (components/eks_network.py) -----------------------------


def _in_existing_vpc() -> dict[str, Any]:
    raw = _existing_vpc(_eks())
    raw["cluster"]["eks"]["availabilityZones"] = ["us-west-2a", "us-west-2b"]
    return raw


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r["cluster"]["eks"].update(availabilityZones=["us-west-2a", "us-west-2c"]),
        lambda r: r["cluster"]["eks"].update(privateNodes=False),
    ],
    ids=["zones", "privateNodes"],
)
def test_in_an_existing_vpc_zones_and_private_nodes_replace_no_node_group(change: Callable[[Any], Any]) -> None:
    """They choose the subnets of a VPC kaistack makes; an existing VPC's node groups take subnetIds whatever they
    say, so nothing is replaced (the diff said every node group was, and exited 1)."""
    assert _kinds(_update(_in_existing_vpc(), change)) == []


def test_in_an_existing_vpc_other_subnet_ids_replace_every_node_group() -> None:
    """EKS cannot move a node group to other subnets: the system group and each pool are created anew."""
    hazards = _update(_in_existing_vpc(), lambda r: r["cluster"]["eks"].update(subnetIds=["subnet-0a", "subnet-0c"]))
    assert _kinds(hazards) == [("node-group-replaced", "system"), ("node-group-replaced", "h100")]
    assert hazards[1].message.startswith("subnetIds changed")


def test_a_workload_whose_kind_changes_under_the_same_name_restarts() -> None:
    """Another kind is another resource type to Pulumi: the running Job is deleted, its pods with it."""
    base = {
        "cluster": {"provider": "kind", "nodePools": [{"name": "gpu", "gpus": 2}]},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "q"}],
        "workloads": [{"name": "w", "kind": "Job", "image": "busybox:1.37.0", "queue": "q"}],
    }
    hazards = _update(base, lambda r: r["workloads"][0].update(kind="Deployment"))
    assert _kinds(hazards) == [("workload-restarted", "w")]
    assert hazards[0].message == "its kind changes (Job -> Deployment): the running Job is deleted"


# --- the cluster's provider changed ---


def _on_eks(raw: dict[str, Any]) -> None:
    eks = _eks()
    raw["cluster"], raw["gpu"] = eks["cluster"], eks["gpu"]


def test_kind_to_eks_says_the_kind_cluster_is_deleted_and_nothing_else() -> None:
    (hazard,) = _update(_kind(), _on_eks)
    assert (hazard.kind, hazard.subject) == ("cluster-replaced", "unit")
    assert hazard.message.startswith("the kind cluster unit is deleted with every tenant, workload and volume on it")
    assert hazard.message.endswith("the new eks cluster starts empty")


def test_protected_eks_cluster_left_for_kind_says_pulumi_refuses() -> None:
    base = _kind()
    _on_eks(base)
    base["cluster"]["eks"]["protect"] = True
    base["cluster"]["name"] = "prod"
    (hazard,) = _update(base, lambda r: r.update(cluster=_kind()["cluster"], gpu=_kind()["gpu"]))
    assert hazard.subject == "prod"
    assert "the eks cluster prod is deleted" in hazard.message
    assert "`pulumi up` refuses to delete it" in hazard.message


def test_existing_cluster_left_keeps_the_cluster_but_not_what_kaistack_made_in_it() -> None:
    base = _kind()
    pools = base["cluster"]["nodePools"]
    base["cluster"] = {"provider": "existing", "name": "lab", "existing": {"context": "lab"}, "nodePools": pools}
    (hazard,) = _update(base, lambda r: r.update(cluster=_kind()["cluster"]))
    assert hazard.message.startswith("everything kaistack made in the existing cluster")
    assert "is deleted from it" in hazard.message


def test_kind_to_an_existing_cluster_says_kaistack_installs_there_again() -> None:
    def existing(raw: dict[str, Any]) -> None:
        raw["cluster"] |= {"provider": "existing", "existing": {"context": "lab"}}

    (hazard,) = _update(_kind(), existing)
    assert hazard.message.endswith("kaistack installs everything again in the existing cluster")
    assert "starts empty" not in hazard.message


# --- KAI objects that a chart upgrade or an update cannot change ---


def test_default_queue_change_names_both_queues_and_what_to_do() -> None:
    (hazard,) = _update(_kind(), lambda r: r.update(kai={"defaultQueues": {"parentName": "root"}}))
    assert "not applied to default-parent-queue and default-queue" in hazard.message
    assert hazard.message.endswith("edit those Queues by hand (kubectl edit queue) to match")


def _with_topology(*levels: str) -> dict[str, Any]:
    raw = _kind()
    raw["cluster"]["topology"] = {"name": "dc", "levels": list(levels)}
    raw["cluster"]["nodePools"][0]["labels"] = {"topology.kubernetes.io/zone": "z1", "kaistack.io/rack": "r1"}
    return raw


def test_topology_levels_changed_replaces_the_topology() -> None:
    base = _with_topology("topology.kubernetes.io/zone")
    change = _update(base, lambda r: r["cluster"]["topology"]["levels"].append("kaistack.io/rack"))
    assert _kinds(change) == [("topology-replaced", "dc")]


def test_topology_renamed_is_a_new_object_not_a_replacement() -> None:
    base = _with_topology("topology.kubernetes.io/zone")
    assert _update(base, lambda r: r["cluster"]["topology"].update(name="dc2")) == []


def test_kai_moved_to_another_namespace_names_what_the_old_release_kept() -> None:
    (hazard,) = _update(_kind(), lambda r: r.update(kai={"namespace": "kai-system"}))
    assert "its install fails on what the old one kept (SchedulingShard default, Queues default-parent-queue and " in (
        hazard.message
    )
    assert "owned by kai-scheduler" in hazard.message


def test_kai_moved_without_default_queues_names_only_the_shard() -> None:
    base = _kind()
    base["kai"] = {"defaultQueues": {"create": False}}
    (hazard,) = _update(base, lambda r: r["kai"].update(namespace="kai-system"))
    assert "(SchedulingShard default, owned by kai-scheduler)" in hazard.message
