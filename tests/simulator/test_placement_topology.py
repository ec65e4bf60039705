"""Topology-aware placement as KAI@v0.17.0's topology plugin does it (pkg/scheduler/plugins/topology).

Domains come from node labels, broadest level first; a constrained (sub)group is placed inside one domain
of its required level, packed into the fullest domain of its preferred level that can take it.
"""

from __future__ import annotations

from typing import Any

import pytest
from placement_testlib import queue, run, scenario

from placement import Job, Placement, Queue, Snapshot, Task
from placement.model import Node, Topology, TopologyLevel
from placement.scenario import ScenarioError
from placement.session import Session
from placement.tasks import ALLOCATED
from placement.topology import _accommodation, _node_free, _task_vector, available_shared_fractions
from placement.topology_tree import TopologyError, TopologyTree

LEVELS = [{"nodeLabel": "zone"}, {"nodeLabel": "rack", "alias": "rack-level"}]


def _node(name: str, zone: str, rack: str, gpus: int = 8) -> dict[str, Any]:
    return {"name": name, "gpus": gpus, "labels": {"zone": zone, "rack": rack}}


def _doc(jobs: list[dict[str, Any]], nodes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "actions": ["allocate"],
        "topologies": [{"name": "dc", "levels": LEVELS}],
        "nodes": nodes
        or [_node("a1", "z1", "r1"), _node("a2", "z1", "r1"), _node("b1", "z1", "r2"), _node("c1", "z2", "r1")],
        "queues": [queue("q")],
        "jobs": jobs,
    }


def _tree(nodes: list[Node]) -> TopologyTree:
    return TopologyTree(Topology("dc", (TopologyLevel("zone"), TopologyLevel("rack", "rack-level"))), nodes)


def test_a_node_without_a_label_for_every_level_is_outside_the_topology() -> None:
    tree = _tree([Node("a1", labels={"zone": "z1", "rack": "r1"}), Node("x", labels={"zone": "z1"})])
    assert list(tree.member) == ["a1"]
    assert tree.root.nodes == ["a1"]


def test_a_rack_is_inside_its_zone_so_equal_rack_names_in_two_zones_are_two_racks() -> None:
    tree = _tree([Node("a1", labels={"zone": "z1", "rack": "r1"}), Node("c1", labels={"zone": "z2", "rack": "r1"})])
    assert sorted(tree.by_level["rack"]) == ["z1.r1", "z2.r1"]
    assert tree.domain_of("c1", "rack") == "z2.r1"


def test_a_level_alias_stands_for_its_node_label() -> None:
    assert _tree([]).resolve("rack-level") == "rack"
    assert _tree([]).resolve("zone") == "zone"


@pytest.mark.parametrize(
    ("required", "preferred", "levels"),
    [("zone", "", ["zone"]), ("", "rack", ["rack", "zone", "root"]), ("zone", "rack", ["rack", "zone"])],
)
def test_relevant_levels_run_from_preferred_up_to_required_or_root(required: str, preferred: str, levels: list) -> None:
    assert _tree([]).relevant_levels(required, preferred) == levels


def test_a_preferred_level_above_the_required_one_cannot_be_evaluated() -> None:
    with pytest.raises(TopologyError, match="preferred level zone is above required level rack"):
        _tree([]).relevant_levels("rack", "zone")


def test_a_required_rack_gang_is_placed_inside_one_rack() -> None:
    job = {
        "name": "train",
        "queue": "q",
        "gpu": 8,
        "tasks": 2,
        "topologyConstraint": {"topology": "dc", "requiredTopologyLevel": "rack"},
    }
    result = run(_doc([job]))
    nodes = {t.node for t in result.tasks.values()}
    assert nodes == {"a1", "a2"}


def test_a_gang_no_rack_can_hold_stays_pending_and_names_the_best_rack() -> None:
    running = {"name": "small", "queue": "q", "gpu": 2, "tasks": [{"state": "Running", "node": "a1"}]}
    job = {
        "name": "train",
        "queue": "q",
        "gpu": 8,
        "tasks": 2,
        "topologyConstraint": {"topology": "dc", "requiredTopologyLevel": "rack"},
    }
    result = run(_doc([running, job]))
    assert {t.status for name, t in result.tasks.items() if name.startswith("train")} == {"Pending"}
    reason = str(result.reason("train"))
    assert "needs 2 pods (16 GPUs) inside one rack; the best rack, z1.r1, has room for 1" in reason


def test_without_a_constraint_the_same_gang_spreads_over_racks() -> None:
    running = {"name": "small", "queue": "q", "gpu": 2, "tasks": [{"state": "Running", "node": "a1"}]}
    job = {"name": "train", "queue": "q", "gpu": 8, "tasks": 2}
    result = run(_doc([running, job]))
    assert {result.tasks["train-0"].status, result.tasks["train-1"].status} == {"Binding"}


def test_a_preferred_rack_packs_the_job_into_one_rack_when_one_fits() -> None:
    job = {
        "name": "j",
        "queue": "q",
        "gpu": 4,
        "tasks": 3,
        "topologyConstraint": {"topology": "dc", "preferredTopologyLevel": "rack"},
    }
    result = run(_doc([job]))
    racks = {("z1.r1" if t.node in ("a1", "a2") else t.node) for t in result.tasks.values()}
    assert racks == {"z1.r1"}


def test_a_preferred_rack_is_only_a_preference_the_job_spans_racks_when_none_fits() -> None:
    job = {
        "name": "j",
        "queue": "q",
        "gpu": 8,
        "tasks": 3,
        "topologyConstraint": {"topology": "dc", "preferredTopologyLevel": "rack"},
    }
    result = run(_doc([job]))
    assert {t.status for t in result.tasks.values()} == {"Binding"}


def test_a_job_naming_a_missing_topology_stays_pending_with_that_reason() -> None:
    job = {
        "name": "j",
        "queue": "q",
        "gpu": 1,
        "topologyConstraint": {"topology": "nope", "requiredTopologyLevel": "rack"},
    }
    result = run(_doc([job]))
    assert result.tasks["j-0"].status == "Pending"
    assert str(result.reason("j")) == "Requested topology nope does not exist"


def test_nodes_outside_the_topology_are_never_used_by_a_constrained_job() -> None:
    nodes = [{"name": "free", "gpus": 8}, _node("a1", "z1", "r1", gpus=1)]
    job = {
        "name": "j",
        "queue": "q",
        "gpu": 2,
        "topologyConstraint": {"topology": "dc", "requiredTopologyLevel": "zone"},
    }
    result = run(_doc([job], nodes))
    assert result.tasks["j-0"].status == "Pending"


def test_a_subgroup_constraint_narrows_inside_its_parents_domain() -> None:
    job = {
        "name": "j",
        "queue": "q",
        "gpu": 8,
        "topologyConstraint": {"topology": "dc", "requiredTopologyLevel": "zone"},
        "subGroups": [
            {"name": "a", "minMember": 1, "topologyConstraint": {"topology": "dc", "requiredTopologyLevel": "rack"}},
            {"name": "b", "minMember": 1, "topologyConstraint": {"topology": "dc", "requiredTopologyLevel": "rack"}},
        ],
        "tasks": [{"subGroup": "a"}, {"subGroup": "b"}],
    }
    result = run(_doc([job]))
    assert {result.tasks["j-0"].node, result.tasks["j-1"].node} <= {"a1", "a2", "b1"}


def test_duplicate_level_labels_are_refused() -> None:
    doc = _doc([])
    doc["topologies"] = [{"name": "dc", "levels": [{"nodeLabel": "zone"}, {"nodeLabel": "zone"}]}]
    with pytest.raises(ScenarioError, match=r"topologies\[0\]\.levels\[1\]\.nodeLabel: duplicate 'zone'"):
        scenario(doc)


def test_hostname_may_only_be_the_last_level() -> None:
    doc = _doc([])
    doc["topologies"] = [{"name": "dc", "levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}]}]
    with pytest.raises(ScenarioError, match=r"kubernetes\.io/hostname may only be the last level"):
        scenario(doc)


def test_more_than_sixteen_levels_are_refused() -> None:
    doc = _doc([])
    doc["topologies"] = [{"name": "dc", "levels": [{"nodeLabel": f"l{i}"} for i in range(17)]}]
    with pytest.raises(ScenarioError, match="must have 1 to 16 levels, got 17"):
        scenario(doc)


def _node_with_a_half_gpu_pod() -> tuple[Any, Any]:
    """A one-GPU node running a half-GPU pod on shared GPU "0"."""
    snapshot = Snapshot((Node("n0", gpus=1),), (Queue("q"),), (Job("p", "q", (Task(gpu_fraction=0.5),)),))
    ssn = Session(snapshot, Placement())
    ssn.open()
    node, task = ssn.nodes["n0"], ssn.jobs["p"].tasks[0]
    node.add(task, ALLOCATED, ["0"])
    return node, task


def test_the_free_part_of_a_shared_gpu_in_use_counts_for_a_fractional_batch() -> None:
    node, _ = _node_with_a_half_gpu_pod()
    assert available_shared_fractions(node) == 0.5


def test_a_shared_gpu_no_pod_uses_any_more_adds_no_free_fraction() -> None:
    # KAI@v0.17.0 pkg/scheduler/api/node_info/gpu_sharing_node_info.go:291-307 (AvailableSharedGPUFractions)
    # skips a group whose used memory is <= 0: removeSharedTaskResourcesPerPodGroup (:156-226) never deletes
    # the key, and NodeState.remove keeps it at 0 the same way.
    node, task = _node_with_a_half_gpu_pod()
    node.remove(task)
    assert node.sh_used == {"0": 0}
    assert available_shared_fractions(node) == 0.0
    # calcNodeAccommodation (plugins/topology/job_filtering.go:217-268): the idle GPU holds two halves, not four.
    assert _accommodation(node, _node_free(node, []), _task_vector(task, []), 4) == 2


def test_a_node_over_committed_on_a_resource_the_batch_does_not_ask_holds_none_of_it() -> None:
    # calcNodeAccommodation compares the pod with the node's whole free vector (job_filtering.go:251): 0 > -1000
    # on example.com/fpga, though the batch asks no fpga.
    running = Task(gpu=0, state="Running", node="n0", scalar={"example.com/fpga": 2000})
    jobs = (Job("old", "q", (running,)), Job("new", "q", (Task(gpu=1),)))
    ssn = Session(Snapshot((Node("n0", gpus=2, scalar={"example.com/fpga": 1000}),), (Queue("q"),), jobs), Placement())
    ssn.open()
    node, task = ssn.nodes["n0"], ssn.jobs["new"].tasks[0]
    assert _accommodation(node, _node_free(node, []), _task_vector(task, []), 1) == 0


# KAI@v0.17.0 pkg/scheduler/plugins/topology/job_filtering.go:396-407: the levels a constraint may name end in
# the synthetic "root" (topology_plugin.go:17), every member node.


@pytest.mark.parametrize("key", ["requiredTopologyLevel", "preferredTopologyLevel"])
def test_a_constraint_may_name_the_root_level_which_holds_every_node(key: str) -> None:
    nodes = [_node("a1", "z1", "r1", gpus=4), _node("b1", "z2", "r2", gpus=4)]
    job = {"name": "j", "queue": "q", "gpu": 4, "tasks": 2, "topologyConstraint": {"topology": "dc", key: "root"}}
    tasks = run(_doc([job], nodes)).tasks
    assert {tasks["j-0"].node, tasks["j-1"].node} == {"a1", "b1"}


# KAI@v0.17.0 pkg/scheduler/api/podgroup_info/subgroup_info/factory.go:25-33: the PodGroup's constraint counts
# only when it names a topology; without one the job is unconstrained, in allocation and in the eviction
# search's TopologyAwareIdleGpus filter alike (topology_aware_idle_gpus.go:184-197 skips a nil constraint).


def _preempt_for(constraint: dict[str, Any] | None) -> dict[str, str]:
    nodes = [{"name": n, "gpus": 4, "labels": {"rack": r}} for n, r in (("n1", "r1"), ("n2", "r2"))]
    running = [{"state": "Running", "node": "n1"}] * 2 + [{"state": "Running", "node": "n2"}] * 2
    pending: dict[str, Any] = {"name": "pending", "queue": "q", "priority": 100, "gpu": 2, "tasks": 2}
    if constraint is not None:
        pending["topologyConstraint"] = constraint
    doc = {
        "actions": ["preempt"],
        "topologies": [{"name": "racks", "levels": [{"nodeLabel": "rack"}]}],
        "nodes": nodes,
        "queues": [queue("q")],
        "jobs": [
            pending,
            {"name": "keep", "queue": "q", "priority": 100, "gpu": 1, "tasks": running},
            {"name": "low", "queue": "q", "priority": 50, "gpu": 1, "tasks": running},
        ],
    }
    return {name: t.status for name, t in run(doc).tasks.items()}


def test_a_job_level_constraint_without_a_topology_name_constrains_nothing() -> None:
    unconstrained = _preempt_for(None)
    assert unconstrained["pending-0"] == "Pipelined"
    assert _preempt_for({"requiredTopologyLevel": "rack"}) == unconstrained
