"""Subgroups as KAI@v0.17.0 reads them (api/podgroup_info/subgroup_info, allocation_info.go, eviction_info.go).

A PodGroup's subGroups form a tree: leaves need `minMember` placed pods, inner subgroups `minSubGroup` of
their members (absent: all). Allocation takes the neediest members' shortfall first, then grows one pod at
a time; eviction sheds one surplus pod, then a whole surplus member, then the job.
"""

from __future__ import annotations

from typing import Any

import pytest
from placement_testlib import queue, run, scenario

from placement.model import Job, SubGroup, Task
from placement.scenario import ScenarioError
from placement.subgroups import PodSet, build_tree, member_order_key
from placement.tasks import JobState


def _job(groups: list[SubGroup], tasks: list[Task], min_sub_group: int | None = None) -> JobState:
    spec = Job("j", "q", tuple(tasks), sub_groups=tuple(groups), min_sub_group=min_sub_group)
    state = JobState(spec, 0)
    state.tree, invalid = build_tree(spec, state.tasks, state.min_member)
    assert invalid == []
    return state


def _run(state: JobState, statuses: dict[int, str]) -> None:
    for i, status in statuses.items():
        state.set_status(state.tasks[i], status)


def test_a_subgroup_named_as_a_parent_is_inner_and_the_others_are_leaves() -> None:
    state = _job(
        [SubGroup("workers"), SubGroup("w-a", "workers", 1), SubGroup("w-b", "workers", 1)],
        [Task(sub_group="w-a"), Task(sub_group="w-b")],
    )
    assert state.tree is not None
    assert [ps.name for ps in state.tree.pod_sets()] == ["w-a", "w-b"]
    assert state.tree.members[0].name == "workers"


def test_an_unsatisfied_member_is_ordered_before_a_satisfied_one_whatever_its_name() -> None:
    a, b = PodSet("a", 1, None), PodSet("b", 0, None)
    assert member_order_key(b) > member_order_key(a)
    assert sorted([b, a], key=member_order_key)[0] is a


def test_the_gang_phase_takes_each_needy_leafs_shortfall_at_once() -> None:
    state = _job(
        [SubGroup("a", min_member=2), SubGroup("b", min_member=1)],
        [Task(sub_group="a"), Task(sub_group="a"), Task(sub_group="a"), Task(sub_group="b")],
    )
    assert [t.name for t in state.tasks_to_allocate(real=True)] == ["j-0", "j-1", "j-3"]


def test_min_sub_group_limits_the_gang_phase_to_that_many_members() -> None:
    state = _job(
        [SubGroup("a", min_member=1), SubGroup("b", min_member=1)],
        [Task(sub_group="a"), Task(sub_group="b")],
        min_sub_group=1,
    )
    assert [t.name for t in state.tasks_to_allocate(real=True)] == ["j-0"]


def test_once_satisfied_the_job_grows_one_pod_of_its_first_member() -> None:
    state = _job(
        [SubGroup("a", min_member=1), SubGroup("b", min_member=1)],
        [Task(sub_group="a"), Task(sub_group="a"), Task(sub_group="b"), Task(sub_group="b")],
    )
    _run(state, {0: "Running", 2: "Running"})
    assert [t.name for t in state.tasks_to_allocate(real=True)] == ["j-1"]


def test_eviction_sheds_one_surplus_pod_before_a_whole_member() -> None:
    state = _job(
        [SubGroup("a", min_member=1), SubGroup("b", min_member=1)],
        [Task(sub_group="a"), Task(sub_group="a"), Task(sub_group="b")],
    )
    _run(state, {0: "Running", 1: "Running", 2: "Running"})
    assert state.tree is not None
    assert [t.name for t in state.tree.tasks_to_evict()] == ["j-1"]


def test_a_job_at_its_minimum_is_evicted_whole() -> None:
    state = _job([SubGroup("a", min_member=1), SubGroup("b", min_member=1)], [Task(sub_group="a"), Task(sub_group="b")])
    _run(state, {0: "Running", 1: "Running"})
    assert state.tree is not None
    assert [t.name for t in state.tree.tasks_to_evict()] == ["j-0", "j-1"]


def test_the_gang_is_satisfied_only_when_every_leaf_is_even_with_min_sub_group() -> None:
    state = _job(
        [SubGroup("a", min_member=1), SubGroup("b", min_member=1)],
        [Task(sub_group="a"), Task(sub_group="b")],
        min_sub_group=1,
    )
    _run(state, {0: "Running"})
    assert state.tree is not None
    assert state.tree.satisfied()
    assert not state.tree.gang_satisfied()


def test_the_solvers_representative_lowers_each_leaf_minimum_to_the_pods_it_holds() -> None:
    state = _job([SubGroup("a", min_member=3)], [Task(sub_group="a")] * 3)
    assert state.tree is not None
    clone = state.tree.clone(state.tasks[:2], representative=True)
    assert [ps.min_available for ps in clone.pod_sets()] == [2]


def _doc(job: dict[str, Any], version: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"actions": ["allocate"], "nodes": [{"name": "n", "gpus": 1}], "queues": [queue("q")]}
    doc["jobs"] = [job]
    if version:
        doc["kaiVersion"] = version
    return doc


def test_min_member_zero_is_refused_under_v0_17_0() -> None:
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.minMember: must be >= 1, got 0"):
        scenario(_doc({"name": "j", "queue": "q", "gpu": 1, "tasks": 2, "minMember": 0}))


def test_under_v0_18_0_a_min_member_zero_job_starts_with_the_pods_that_fit() -> None:
    result = run(_doc({"name": "j", "queue": "q", "gpu": 1, "tasks": 2, "minMember": 0}, "v0.18.0"))
    assert sorted(t.status for t in result.tasks.values()) == ["Binding", "Pending"]


def test_a_task_must_name_a_leaf_subgroup() -> None:
    job = {
        "name": "j",
        "queue": "q",
        "subGroups": [{"name": "workers"}, {"name": "w", "parent": "workers"}],
        "tasks": [{"subGroup": "workers"}],
    }
    with pytest.raises(ScenarioError, match=r"tasks\[0\]\.subGroup: must name a leaf subgroup of this job \(w\)"):
        scenario(_doc(job))


def test_a_subgroup_cycle_is_refused() -> None:
    job = {
        "name": "j",
        "queue": "q",
        "subGroups": [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}, {"name": "c", "parent": "a"}],
        "tasks": [{"subGroup": "c"}],
    }
    with pytest.raises(ScenarioError, match="subgroup 'a' is its own ancestor"):
        scenario(_doc(job))


def _chain(levels: int) -> dict[str, Any]:
    groups: list[dict[str, Any]] = [{"name": "s0", "minSubGroup": 1}]
    groups += [{"name": f"s{i}", "parent": f"s{i - 1}", "minSubGroup": 1} for i in range(1, levels - 1)]
    groups += [{"name": f"s{levels - 1}", "parent": f"s{levels - 2}", "minMember": 1}]
    return {"name": "j", "queue": "q", "subGroups": groups, "tasks": [{"gpu": 1, "subGroup": f"s{levels - 1}"}]}


def test_subgroups_as_deep_as_the_simulator_walks_are_simulated() -> None:
    """placement.depth.MAX_SUBGROUP_DEPTH levels: the tree's recursive walks stay well inside Python's stack."""
    assert run(_doc(_chain(64))).tasks["j-0"].node == "n"


def test_subgroups_nested_deeper_than_the_simulator_walks_are_refused_by_name() -> None:
    """A 2,000-level chain stopped `kaistack simulate` with a RecursionError (exit 70); KAI sets no depth limit
    (KAI-Scheduler@v0.17.0 pkg/apis/scheduling/v2alpha2/podgroup_webhook.go:135-175), real trees are a few levels."""
    with pytest.raises(ScenarioError, match=r"subGroups\[64\]\.parent: subgroup 's64' is more than 64 levels deep"):
        scenario(_doc(_chain(2000)))


def test_a_subgroup_parent_must_exist() -> None:
    job = {"name": "j", "queue": "q", "subGroups": [{"name": "a", "parent": "zz"}], "tasks": [{"subGroup": "a"}]}
    with pytest.raises(ScenarioError, match=r"subGroups\[0\]\.parent: no subgroup named 'zz'"):
        scenario(_doc(job))


# KAI@v0.17.0 pkg/scheduler/plugins/proportion/proportion.go:171-227 (getVictimResources, splitVictimTasks): a
# victim's pods are split per subgroup, each leaf's first minMember pods its core (one vector), the rest
# elastic (one vector each), and the reclaimable rules check each vector in turn against the victim queue.


def _reclaim_from_three_gpu_victim(victim_gang: dict[str, Any]) -> dict[str, str]:
    # qa's share is 1 GPU and it holds 3; qb reclaims all 3. As one 3-GPU vector the victim queue drops
    # from 3 (above its share) at once; as three 1-GPU vectors the third is taken from a queue at its share.
    va = {"name": "va", "queue": "qa", "gpu": 1, **victim_gang}
    doc = {
        "actions": ["reclaim"],
        "nodes": [{"name": "n0", "gpus": 3}],
        "queues": [
            queue("qa", {"quota": 1, "limit": -1, "overQuotaWeight": 1}),
            queue("qb", {"quota": 3, "limit": -1, "overQuotaWeight": 1}, priority=200),
        ],
        "jobs": [va, {"name": "rb", "queue": "qb", "gpu": 3}],
    }
    return {name: t.status for name, t in run(doc).tasks.items()}


def test_a_victim_subgroup_s_pods_beyond_its_minimum_are_each_checked_on_their_own() -> None:
    running = {"state": "Running", "node": "n0", "subGroup": "sg"}
    gang = {"subGroups": [{"name": "sg", "minMember": 1}], "tasks": [running] * 3}
    assert _reclaim_from_three_gpu_victim(gang)["rb-0"] == "Pending"


def test_a_victim_subgroup_whose_minimum_is_all_its_pods_is_checked_as_one() -> None:
    running = {"state": "Running", "node": "n0", "subGroup": "sg"}
    gang = {"subGroups": [{"name": "sg", "minMember": 3}], "tasks": [running] * 3}
    assert _reclaim_from_three_gpu_victim(gang) == {
        "va-0": "Releasing",
        "va-1": "Releasing",
        "va-2": "Releasing",
        "rb-0": "Pipelined",
    }
