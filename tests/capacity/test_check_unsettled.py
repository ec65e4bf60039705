"""`kaistack check` on a stack where KAI never settles: not a fit, and the workloads it keeps moving are named.

tests/data/unsettled/stack.yaml (found by a random search over small kind stacks, then shrunk): each cycle allocate
puts w19 and w24 on two GPUs of one node and consolidation swaps them, pipelined, to fit w11 beside one of them;
KAI keeps no pipelined decision across sessions, so the next cycle starts over. Before, the verdict was the state
after the 50th cycle, "3 workloads would stay Pending", with reasons that said the cycles ended too soon.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.capacity.check import MOVING, CapacityReport, check
from kaistack.capacity.diff import CapacityDiff, diff_reports
from kaistack.capacity.diff import to_json as to_diff_json
from kaistack.capacity.diff import to_markdown as to_diff_markdown
from kaistack.capacity.diff import to_text as diff_text
from kaistack.capacity.report import to_json, to_markdown, to_text
from kaistack.declaration.parse import parse_config

STACK = Path(__file__).resolve().parents[1] / "data" / "unsettled" / "stack.yaml"
MOVED = {"w11", "w19", "w24"}


def _raw() -> dict[str, Any]:
    return yaml.safe_load(STACK.read_text())


@pytest.fixture(scope="module")
def report() -> CapacityReport:
    return check(parse_config(_raw()))


def test_a_stack_kai_never_settles_on_is_not_a_fit(report):
    assert report.unsettled
    assert not report.ok
    assert report.loop == 1


def test_the_summary_says_it_does_not_settle(report):
    assert report.summary() == (
        "does not settle: after 50 cycles KAI still moves 3 of 18 workloads again and again "
        "(every cycle ends as the one before did); 2 other workload(s) would stay Pending"
    )


def test_only_the_workloads_kai_moves_are_marked(report):
    assert {w.name for w in report.workloads if w.moving} == MOVED


def test_each_moving_workload_gets_a_reason_line(report):
    moving_lines = [line for line in report.reasons if MOVING in line]
    assert sorted(line.split(" ", 1)[0] for line in moving_lines) == sorted(MOVED)


def test_a_moving_workloads_reasons_do_not_blame_the_runs_end(report):
    """Any later cycle would move them again: "the simulated cycles ended first" would say more cycles could help."""
    reasons = [r for w in report.workloads if w.moving for r in w.reasons]
    assert any(r.startswith(("evicted by consolidation", "pipelined by consolidation")) for r in reasons)
    assert not [r for r in reasons if "simulated cycles" in r]


def test_json_marks_the_moving_workloads_and_the_loop(report):
    doc = to_json(report)
    assert doc["fits"] is False
    assert doc["unsettled"] == {"cycles": 50, "loop": 1}
    assert {w["name"] for w in doc["workloads"] if w.get("moving")} == MOVED


def test_text_and_markdown_say_why_for_each_moving_workload(report):
    text = to_text(report)
    assert text.count(f"why: {MOVING}") == len(MOVED)
    markdown = to_markdown(report)
    assert markdown.startswith("### ❌ Capacity: does not settle")
    assert markdown.count(MOVING) == len(MOVED)


def test_without_the_workload_consolidation_makes_room_for_it_settles():
    raw = copy.deepcopy(_raw())
    raw["workloads"] = [w for w in raw["workloads"] if w["name"] != "w11"]
    settled = check(parse_config(raw))
    assert not settled.unsettled
    assert settled.cycles < 50
    doc = to_json(settled)
    assert "unsettled" not in doc
    assert not any("moving" in w for w in doc["workloads"])


def _diff(before_raw: dict[str, Any], after_raw: dict[str, Any]) -> CapacityDiff:
    declared = {w["name"]: w for w in after_raw["workloads"]}
    return diff_reports(
        check(parse_config(before_raw)),
        check(parse_config(after_raw)),
        declared_before={w["name"]: w for w in before_raw["workloads"]},
        declared_after=declared,
        base="base",
    )


def test_diff_says_a_change_makes_kai_never_settle_and_counts_it_harmful():
    settling = copy.deepcopy(_raw())
    settling["workloads"] = [w for w in settling["workloads"] if w["name"] != "w11"]
    diff = _diff(settling, _raw())
    assert diff.harmful
    assert diff.unsettled_after.startswith("does not settle: after 50 cycles")
    assert diff.unsettled_before == ""
    assert to_diff_json(diff)["unsettledAfter"] == diff.unsettled_after
    assert "after the change: does not settle" in diff_text(diff).splitlines()[1]
    assert MOVING in next(w.reason for w in diff.workloads if w.name == "w19")


def test_diff_says_a_change_that_ends_the_loop():
    settling = copy.deepcopy(_raw())
    settling["workloads"] = [w for w in settling["workloads"] if w["name"] != "w11"]
    diff = _diff(_raw(), settling)
    assert diff.unsettled_after == ""
    assert "after it KAI settles" in diff_text(diff)
    assert "unsettledAfter" not in to_diff_json(diff)


def test_diff_of_a_change_that_keeps_an_existing_loop_is_not_harmful():
    grown = copy.deepcopy(_raw())
    grown["workloads"].append(
        {"name": "tiny", "kind": "Deployment", "queue": "team-0", "image": "busybox:1.37.0", "cpu": "10m"}
    )
    diff = _diff(_raw(), grown)
    assert diff.unsettled_before
    assert diff.unsettled_after
    assert not diff.harmful
    assert "(as before it)" in diff_text(diff)


def _same_stack_diff(*, stop_before: bool, stop_after: bool) -> CapacityDiff:
    """The unsettled stack against itself, either side's simulation stopped before anything ran."""
    raw = _raw()
    config = parse_config(raw)
    declared = {w["name"]: w for w in raw["workloads"]}
    before = check(config, max_seconds=0.0 if stop_before else None)
    after = check(config, max_seconds=0.0 if stop_after else None)
    return diff_reports(before, after, declared_before=declared, declared_after=declared, base="base")


def test_diff_with_a_side_stopped_by_its_time_limit_is_partial_and_says_which():
    diff = _same_stack_diff(stop_before=False, stop_after=True)
    assert diff.partial
    assert diff.partial_before == ""
    assert diff.partial_after.startswith("unknown: stopped by the time limit")
    text = diff_text(diff).splitlines()
    assert text[0].startswith("capacity diff for stack  against base: partial, a simulation stopped at its time limit")
    assert text[1].startswith("  after the change: unknown: stopped by the time limit")
    assert "which a run to the end may change" in text[1]
    assert to_diff_json(diff)["partial"] is True
    assert "partialBefore" not in to_diff_json(diff)


def test_a_partial_diff_is_flagged_in_the_pr_comment_though_nothing_is_harmful():
    diff = _same_stack_diff(stop_before=True, stop_after=True)
    assert not diff.harmful
    comment = to_diff_markdown(diff)
    assert comment.startswith("### ⚠️")
    assert "**before the change: unknown: stopped by the time limit" in comment


def test_diff_does_not_blame_workloads_a_stopped_simulation_never_reached():
    """The same declaration, the change's side stopped: no row says no-longer-fits, nothing is harmful."""
    diff = _same_stack_diff(stop_before=False, stop_after=True)
    assert diff.partial
    assert not diff.harmful
    assert diff.workloads
    assert {w.change for w in diff.workloads} == {"not-compared"}
    assert "simulation after the change stopped" in diff.workloads[0].detail
    swapped = _same_stack_diff(stop_before=True, stop_after=False)
    assert {w.change for w in swapped.workloads} == {"not-compared"}
