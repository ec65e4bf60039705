"""`kaistack check` on a stack with a zone -> rack topology: constrained gangs, segments, and the reports.

What KAI does with them is the simulator's (placement/, KAI@v0.17.0 pkg/scheduler/plugins/topology); what
is under test here is that the declaration reaches it whole (node labels, the Topology, each PodGroup's
constraint and subgroups) and that every report says which domain each workload landed in.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from test_plan_mutation_gaps import _eks

from kaistack.capacity.check import CapacityReport, check
from kaistack.capacity.diff import diff_reports
from kaistack.capacity.html import to_html
from kaistack.capacity.plan import plan
from kaistack.capacity.report import to_json, to_markdown, to_text
from kaistack.declaration.parse import parse_config
from kaistack.stack.existing import pools_from_nodes
from placement.model import SubGroup, TopologyConstraint, TopologyLevel

ZONE, RACK, HOST = "topology.kubernetes.io/zone", "kaistack.io/rack", "kubernetes.io/hostname"


def _pool(name: str, zone: str, rack: str, count: int = 2) -> dict[str, Any]:
    labels = {ZONE: zone, RACK: rack}
    return {"name": name, "count": count, "gpus": 8, "cpu": "64", "memory": "512Gi", "labels": labels}


def _stack(*workloads: dict[str, Any], pools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Zone z1 with racks r1 and r2, zone z2 with rack r3; each rack 2 nodes x 8 GPUs unless `pools`."""
    return {
        "cluster": {
            "provider": "kind",
            "topology": {"levels": [ZONE, RACK]},
            "nodePools": pools or [_pool("r1", "z1", "r1"), _pool("r2", "z1", "r2"), _pool("r3", "z2", "r3")],
        },
        "gpu": {"mode": "fake"},
        "queues": [{"name": "team"}],
        "tenants": [{"name": "t", "queues": ["team"]}],
        "workloads": list(workloads),
        "kai": {"capacityCheck": "off"},
    }


def _gang(name: str, workers: int, **fields: Any) -> dict[str, Any]:
    pytorch = {"master": 0, "workers": workers, **fields.pop("pytorch", {})}
    return {"name": name, "kind": "PyTorchJob", "queue": "team", "image": "x", "gpu": 1, "pytorch": pytorch, **fields}


def _filler(name: str, gpus: int) -> dict[str, Any]:
    return {"name": name, "kind": "Pod", "queue": "team", "image": "x", "gpu": gpus}


SMALL_RACKS = [_pool("r1", "z1", "r1", count=1), _pool("r2", "z1", "r2", count=1)]  # 8 GPUs a rack


def _check(raw: dict[str, Any]) -> CapacityReport:
    return check(parse_config(raw, source="test"), "topo")


def _verdict(report: CapacityReport, name: str) -> Any:
    return next(w for w in report.workloads if w.name == name)


# --- placement ------------------------------------------------------------------------------------------------


def test_a_16_gpu_gang_required_in_one_rack_is_placed_inside_one_rack() -> None:
    """A filler in r1 leaves no rack but r2 and r3 with 16 free GPUs; the gang takes one of them whole."""
    report = _check(_stack(_filler("filler", 4), _gang("train", 16, topology={"required": RACK})))
    train = _verdict(report, "train")
    assert train.status == "Running"
    assert len(train.domains) == 1
    assert train.domains[0] in ("z1/r2", "z2/r3")


def test_a_gang_no_rack_has_room_for_is_refused_with_the_topology_reason() -> None:
    report = _check(_stack(_gang("train", 12, topology={"required": RACK}), pools=SMALL_RACKS))
    train = _verdict(report, "train")
    assert train.status == "Pending"
    assert any("requirement kaistack.io/rack couldn't be satisfied" in r for r in train.reasons)


def test_the_same_gang_without_a_constraint_spreads_over_both_racks() -> None:
    report = _check(_stack(_gang("train", 12), pools=SMALL_RACKS))
    assert _verdict(report, "train").domains == ("z1/r1", "z1/r2")


def test_a_zone_requirement_lets_the_gang_span_the_zones_racks() -> None:
    report = _check(_stack(_gang("train", 12, topology={"required": ZONE}), pools=SMALL_RACKS))
    assert _verdict(report, "train").status == "Running"


def test_each_segment_of_a_segmented_gang_stays_inside_one_rack() -> None:
    segments = {"segmentSize": 4, "segmentTopology": {"required": RACK}}
    report = _check(_stack(_filler("filler", 2), _gang("train", 12, pytorch=segments), pools=SMALL_RACKS))
    train = _verdict(report, "train")
    assert train.status == "Running"
    racks: dict[str, set[tuple[str, ...]]] = {}
    for pod in train.pods:
        racks.setdefault(str(pod.sub_group), set()).add(pod.domain)
    assert sorted(racks) == ["worker-0", "worker-1", "worker-2"]
    assert all(len(domains) == 1 for domains in racks.values())


def test_a_tenant_gang_required_in_one_rack_is_placed_inside_one_rack() -> None:
    report = _check(_stack(_filler("filler", 4), _gang("train", 16, tenant="t", topology={"required": RACK})))
    train = _verdict(report, "train")
    assert (train.status, len(train.domains)) == ("Running", 1)


ONE_RACK = [_pool("r1", "z1", "r1")]


def test_required_zone_on_a_single_rack_stays_pending_as_kai_leaves_it() -> None:
    """kai-scheduler/KAI-Scheduler@v0.17.0:pkg/scheduler/plugins/topology/job_filtering.go `subSetNodesFn`:
    `lowestCommonDomainID` stops at the rack all nodes share, only that subtree's free resources are
    counted, so the zone above it has none (read from the source; no upstream test covers it)."""
    report = _check(_stack(_gang("train", 4, topology={"required": ZONE}), pools=ONE_RACK))
    assert _verdict(report, "train").status == "Pending"


def test_preferring_the_required_level_too_places_it() -> None:
    report = _check(_stack(_gang("train", 4, topology={"required": ZONE, "preferred": ZONE}), pools=ONE_RACK))
    assert _verdict(report, "train").status == "Running"


# --- the snapshot the simulator gets ----------------------------------------------------------------------------


def test_every_node_carries_its_pools_levels_its_pool_and_its_hostname() -> None:
    snapshot = plan(parse_config(_stack())).snapshot
    node = snapshot.nodes[2]
    assert dict(node.labels) == {"kaistack.io/node-pool": "r2", ZONE: "z1", RACK: "r2", HOST: "r2-0"}


def test_the_snapshot_has_the_declared_topology() -> None:
    [topology] = plan(parse_config(_stack())).snapshot.topologies
    assert (topology.name, topology.levels) == ("cluster-topology", (TopologyLevel(ZONE), TopologyLevel(RACK)))


def test_a_workload_constraint_becomes_its_jobs_constraint_on_that_topology() -> None:
    snapshot = plan(parse_config(_stack(_gang("train", 4, topology={"required": ZONE, "preferred": RACK})))).snapshot
    assert snapshot.jobs[0].topology == TopologyConstraint("cluster-topology", ZONE, RACK)


def test_a_host_pytorchjob_is_a_job_with_the_pod_groupers_subgroups() -> None:
    work = _gang("train", 4, pytorch={"master": 1, "segmentSize": 2, "segmentTopology": {"preferred": RACK}})
    [job] = plan(parse_config(_stack(work))).snapshot.jobs
    segment = TopologyConstraint("cluster-topology", None, RACK)
    assert job.sub_groups == (
        SubGroup("master", min_member=1),
        SubGroup("worker", min_sub_group=2),
        SubGroup("worker-0", parent="worker", min_member=2, topology=segment),
        SubGroup("worker-1", parent="worker", min_member=2, topology=segment),
    )
    assert [t.sub_group for t in job.tasks] == ["master", "worker-0", "worker-0", "worker-1", "worker-1"]


def test_a_tenant_pod_keeps_its_constraint_on_its_own_podgroup() -> None:
    pod = {**_filler("one", 1), "tenant": "t", "topology": {"required": RACK}}
    [job] = plan(parse_config(_stack(pod))).snapshot.jobs
    assert job.topology == TopologyConstraint("cluster-topology", RACK, None)


# --- the reports ------------------------------------------------------------------------------------------------


def _placed_report() -> CapacityReport:
    return _check(_stack(_filler("filler", 4), _gang("train", 16, topology={"required": RACK})))


def test_json_gives_each_pod_its_domain_and_subgroup() -> None:
    train = next(w for w in to_json(_placed_report())["workloads"] if w["name"] == "train")
    assert train["topology"] == {"required": RACK}
    assert {p["domain"] for p in train["pods"]} == set(train["domains"])
    assert {p["subGroup"] for p in train["pods"]} == {"worker"}


def test_json_lists_every_rack_with_its_gpus_and_workloads() -> None:
    topology = to_json(_placed_report())["topology"]
    assert topology["levels"] == [ZONE, RACK]
    domains = {d["path"]: d for d in topology["domains"]}
    assert sorted(domains) == ["z1/r1", "z1/r2", "z2/r3"]
    assert domains["z1/r1"]["domain"] == {ZONE: "z1", RACK: "r1"}
    assert sum(d["gpusUsed"] for d in domains.values()) == 20
    assert "train" in next(d["workloads"] for d in domains.values() if d["gpusUsed"] == 16)


def test_json_has_no_topology_without_one() -> None:
    raw = _stack(_filler("filler", 1))
    del raw["cluster"]["topology"]
    assert to_json(_check(raw))["topology"] is None


def test_text_says_where_a_constrained_workload_landed_and_lists_the_racks() -> None:
    report = _placed_report()
    text = to_text(report)
    assert f"topology: required {RACK}; in {_verdict(report, 'train').domains[0]}" in text
    assert f"topology cluster-topology ({ZONE} > {RACK}):" in text
    assert "  z1/r1: 2 nodes, " in text


def test_text_of_a_refused_workload_gives_its_constraint_and_the_reason() -> None:
    text = to_text(_check(_stack(_gang("train", 12, topology={"required": RACK}), pools=SMALL_RACKS)))
    assert f"       topology: required {RACK}\n       why: topology cluster-topology, requirement {RACK}" in text


def test_markdown_has_a_topology_table() -> None:
    markdown = to_markdown(_placed_report())
    # An HTML block: ">" as an entity (the level names are the stack's text).
    assert f"<details><summary>Topology cluster-topology ({ZONE} &gt; {RACK})</summary>" in markdown
    assert "| Domain | Nodes | GPUs used | Workloads |" in markdown


def test_html_has_a_domain_table_and_the_constraints_table() -> None:
    html = to_html(_placed_report())
    assert "<h2>Topology cluster-topology" in html
    assert f"<tr><td>train</td><td>required {RACK}</td>" in html


def test_diff_reports_a_changed_gang_moved_to_another_rack_as_a_domain_change() -> None:
    """The gang's pods are re-created (new image) while a new workload declared first takes its rack."""
    gang = _gang("train", 8, topology={"required": RACK})
    changed = {**gang, "image": "y"}
    before = _check(_stack(gang, pools=SMALL_RACKS))
    taken = _verdict(before, "train").domains[0]
    after = _check(_stack(_gang("hog", 8, topology={"required": RACK}), changed, pools=SMALL_RACKS))
    moved = _verdict(after, "train").domains[0]
    diff = diff_reports(
        before, after, declared_before={"train": gang}, declared_after={"train": changed, "hog": {}}, base="HEAD"
    )
    [change] = diff.of("moved")
    assert moved != taken
    assert (change.name, change.detail) == ("train", f"domain {taken} -> {moved}")


def test_diff_does_not_call_an_unchanged_gang_moved_when_only_the_simulation_order_put_it_elsewhere() -> None:
    """Both sides are simulated from an empty cluster; live, the running gang keeps its rack."""
    gang = _gang("train", 8, topology={"required": RACK})
    before = _check(_stack(gang, pools=SMALL_RACKS))
    after = _check(_stack(_gang("hog", 8, topology={"required": RACK}), gang, pools=SMALL_RACKS))
    assert _verdict(after, "train").domains != _verdict(before, "train").domains
    diff = diff_reports(
        before, after, declared_before={"train": gang}, declared_after={"train": gang, "hog": {}}, base="HEAD"
    )
    assert [c.name for c in diff.workloads] == ["hog"]
    assert not diff.harmful


# --- an existing cluster's nodes ----------------------------------------------------------------------------------


def _node(name: str, rack: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {ZONE: "z1", RACK: rack, HOST: name}},
        "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}},
    }


def test_discovered_nodes_in_different_racks_become_different_pools_with_their_levels() -> None:
    pools = pools_from_nodes([_node("a", "r1"), _node("b", "r2"), _node("c", "r1")], (ZONE, RACK, HOST))
    assert sorted((p.count, p.labels[RACK]) for p in pools) == [(1, "r2"), (2, "r1")]
    assert all(HOST not in p.labels for p in pools)


def test_a_level_name_in_the_markdown_summary_shows_as_written() -> None:
    """The <summary> line is raw HTML, where a Markdown backslash escape would show: `rack_id`, not `rack\\_id`."""
    report = _placed_report()
    assert report.topology is not None
    topology = dataclasses.replace(report.topology, levels=("example.com/rack_id", "kubernetes.io/hostname"))
    markdown = to_markdown(dataclasses.replace(report, topology=topology))
    assert "(example.com/rack_id &gt; kubernetes.io/hostname)</summary>" in markdown


def test_a_node_without_the_levels_labels_is_in_no_domain() -> None:
    """An EKS stack's system nodes carry none of the declared levels: their pods and they themselves are in no
    domain, as the topology table already said (a ("", "") domain was shown as "/")."""
    web = {"name": "web", "kind": "Pod", "image": "x", "queue": "q", "cpu": "100m"}
    train = {"name": "train", "kind": "Pod", "image": "x", "queue": "q", "gpu": 1}
    raw = _eks(web, train)
    raw["cluster"]["topology"] = {"levels": [ZONE, RACK]}
    raw["cluster"]["nodePools"][0]["labels"] = {ZONE: "z1", RACK: "r1"}
    report = check(parse_config(raw, source="t"), "e")
    document = to_json(report)
    assert {n["name"]: n["domain"] for n in document["nodes"]} == {"system-0": None, "system-1": None, "l4-0": "z1/r1"}
    assert [w["domains"] for w in document["workloads"]] == [[], ["z1/r1"]]
    assert "topology: in /" not in to_text(report)
