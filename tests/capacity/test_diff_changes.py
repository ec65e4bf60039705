"""`kaistack diff` counts pods, not statuses: a Partial workload that loses pods is evicted too, and a
workload scaled to zero is not Pending."""

from __future__ import annotations

import dataclasses
from typing import Any

from kaistack.capacity.check import CapacityReport, check
from kaistack.capacity.diff import CapacityDiff, Hazard, diff_reports, to_markdown, to_text
from kaistack.declaration.parse import parse_config


def _stack(workloads: list[dict[str, Any]], gpu_nodes: int = 2) -> dict[str, Any]:
    return {
        "cluster": {
            "provider": "kind",
            "nodePools": [{"name": "gpu", "count": gpu_nodes, "gpus": 1, "cpu": "16", "memory": "64Gi"}],
        },
        "gpu": {"mode": "fake"},
        "queues": [{"name": "team"}],
        "workloads": workloads,
        "kai": {"capacityCheck": "off"},
    }


def _deployment(name: str, replicas: int, **fields: Any) -> dict[str, Any]:
    return {"name": name, "kind": "Deployment", "queue": "team", "image": "x", "gpu": 1, "replicas": replicas, **fields}


def _check(raw: dict[str, Any]) -> CapacityReport:
    return check(parse_config(raw, source="test"), "unit")


def _diff(before: dict[str, Any], after: dict[str, Any]) -> CapacityDiff:
    return diff_reports(
        _check(before),
        _check(after),
        declared_before={w["name"]: w for w in before["workloads"]},
        declared_after={w["name"]: w for w in after["workloads"]},
        base="HEAD",
    )


def test_a_partial_workload_that_loses_running_pods_to_another_is_reported_evicted() -> None:
    big = _deployment("big", 3, priorityClass="train")
    diff = _diff(_stack([big]), _stack([big, _deployment("aaa", 1, priorityClass="build")]))
    change = next(w for w in diff.workloads if w.name == "big")
    assert (change.change, change.before, change.after) == ("displaced", "Partial", "Partial")
    assert change.detail == "1 of 3 pods placed, was 2; room taken by: aaa"
    assert diff.harmful


def test_a_workload_that_loses_pods_to_a_smaller_cluster_no_longer_fits() -> None:
    """Nothing took its place, so nothing would reclaim or preempt it: the room is gone."""
    big = _deployment("big", 3)
    diff = _diff(_stack([big], gpu_nodes=2), _stack([big], gpu_nodes=1))
    [change] = diff.workloads
    assert (change.name, change.change, change.before, change.after) == ("big", "no-longer-fits", "Partial", "Partial")
    assert change.detail == "1 of 3 pods placed, was 2"
    assert diff.harmful


def test_a_workload_scaled_to_zero_is_not_pending() -> None:
    diff = _diff(_stack([_deployment("web", 1)]), _stack([_deployment("web", 0)]))
    assert diff.workloads == ()
    assert not diff.harmful


def test_a_rescaled_workload_that_still_fits_is_not_called_moved() -> None:
    diff = _diff(_stack([_deployment("web", 1)]), _stack([_deployment("web", 2)]))
    assert diff.of("moved") == []
    assert not diff.harmful


def test_a_changed_workload_that_gets_fewer_of_its_pods_placed_is_newly_pending() -> None:
    diff = _diff(_stack([_deployment("web", 2)]), _stack([_deployment("web", 3)]))
    [change] = diff.workloads
    assert (change.change, change.before, change.after) == ("newly-pending", "Running", "Partial")
    assert diff.harmful


def test_a_pending_workload_that_gets_some_pods_placed_is_newly_placed_with_the_count() -> None:
    big = _deployment("big", 3)
    diff = _diff(_stack([big], gpu_nodes=1), _stack([big], gpu_nodes=2))
    [change] = diff.workloads
    assert (change.change, change.detail) == ("newly-placed", "2 of 3 pods placed, was 1")
    assert not diff.harmful


def test_a_partial_workload_that_becomes_whole_is_newly_placed_without_a_count() -> None:
    big = _deployment("big", 2)
    diff = _diff(_stack([big], gpu_nodes=1), _stack([big], gpu_nodes=2))
    [change] = diff.workloads
    assert (change.change, change.before, change.after, change.detail) == ("newly-placed", "Partial", "Running", "")


def test_a_partial_workload_scaled_down_to_what_runs_is_newly_placed() -> None:
    """Partial 1 of 2 becomes Running 1 of 1: the same pods run, and nothing of it is Pending any more."""
    diff = _diff(_stack([_deployment("big", 2)], gpu_nodes=1), _stack([_deployment("big", 1)], gpu_nodes=1))
    [change] = diff.workloads
    assert (change.change, change.before, change.after) == ("newly-placed", "Partial", "Running")
    assert not diff.harmful


def test_a_partial_workload_scaled_to_zero_is_not_reported() -> None:
    diff = _diff(_stack([_deployment("big", 2)], gpu_nodes=1), _stack([_deployment("big", 0)], gpu_nodes=1))
    assert diff.workloads == ()


# --- what a mutation run found unasserted ----------------------------------------------------------------


def test_a_queue_whose_allocation_moves_is_a_row_in_text_and_markdown() -> None:
    diff = _diff(_stack([_deployment("a", 1)]), _stack([_deployment("a", 2)]))
    [team] = [q for q in diff.queues if q.name == "team"]
    assert (team.allocated_before, team.allocated_after) == (1, 2)
    assert "  team: 1 -> 2, " in to_text(diff)
    assert "| `team` | 1 → 2 |" in to_markdown(diff)


def test_of_two_workloads_the_one_a_smaller_cluster_drops_no_longer_fits_with_nothing_named() -> None:
    """Nothing took its place: `no-longer-fits`, not `displaced` by the workload that kept its pod."""
    workloads = [_deployment("a", 1), _deployment("b", 1)]
    diff = _diff(_stack(workloads, gpu_nodes=2), _stack(workloads, gpu_nodes=1))
    [change] = diff.workloads
    assert (change.name, change.change, change.detail) == ("b", "no-longer-fits", "")


def test_a_workload_added_pending_takes_no_room_so_it_displaces_nothing() -> None:
    workloads = [_deployment("a", 1), _deployment("b", 1)]
    after = [*workloads, _deployment("c", 1)]
    diff = _diff(_stack(workloads, gpu_nodes=2), _stack(after, gpu_nodes=1))
    change = next(w for w in diff.workloads if w.name == "b")
    assert (change.change, change.detail) == ("no-longer-fits", "")


def test_a_change_that_only_makes_kai_loop_is_harmful() -> None:
    diff = CapacityDiff("dev", "HEAD", (), (), True, False, unsettled_after="does not settle: ...")
    assert diff.harmful
    assert not CapacityDiff("dev", "HEAD", (), (), False, False, unsettled_before="x", unsettled_after="x").harmful


def test_the_hazards_table_is_in_the_markdown() -> None:
    hazard = Hazard("tenant-deleted", "team-a", "its vCluster and everything in it are deleted")
    diff = CapacityDiff("dev", "HEAD", (), (), True, True, hazards=(hazard,))
    text = to_markdown(diff)
    assert "What `pulumi up` would do:" in text
    assert "| tenant-deleted | `team-a` | its vCluster and everything in it are deleted |" in text


def test_a_report_stopped_by_the_clock_or_that_never_settles_is_not_a_fit_even_with_every_workload_running() -> None:
    report = _check(_stack([_deployment("a", 1)]))
    assert report.ok
    assert all(not w.pending for w in report.workloads)
    assert not dataclasses.replace(report, partial=True).ok
    assert not dataclasses.replace(report, unsettled=True).ok
