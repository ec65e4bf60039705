"""Every conformance scenario (KAI's own test expectations) passes, checked the way score.py checks them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from placement_testlib import DATA, GroupMap, expectation_problems

from kaistack.ops.scenarios import load_scenario
from placement import simulate

PUBLIC = sorted((DATA / "kai-conformance").glob("*.yaml"))
EXTRA = sorted((DATA / "kai-extra").glob("*.yaml"))
# FORMAT v2 (docs/scenario-format.md): preemption delay, Pending tasks carrying a node, stale gang
# eviction with Failed/Succeeded pods, subgroups and topology (copies of kai-conformance/public-v2).
V2 = sorted((DATA / "kai-conformance-v2").glob("*.yaml"))
# 81 more v2 cases (topology, subgroups, stale gangs, preemption delay, Pending tasks with a node),
# translated from KAI@v0.17.0's *_test.go tables.
EXTRA_V2 = sorted((DATA / "kai-extra-v2").glob("*.yaml"))
# Outcomes no KAI table test pins, derived from KAI@v0.17.0's code (each file's note cites the lines); they hold
# rules found by reading KAI's unit tests of plugins and API types against the simulator.
DERIVED = sorted((DATA / "kai-derived").glob("*.yaml"))


def _run(path: Path) -> dict:
    s = load_scenario(path)
    return simulate(s.snapshot, actions=s.actions, rounds=s.rounds, placement=s.placement).to_json()["tasks"]


def test_public_scenarios_are_all_present() -> None:
    assert len(PUBLIC) == 23
    assert len(V2) == 20
    assert len(EXTRA_V2) == 82


@pytest.mark.parametrize("path", PUBLIC + EXTRA + V2 + EXTRA_V2 + DERIVED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_scenario_meets_its_expectations(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    assert doc.get("expect"), "a scenario without expectations checks nothing"
    assert expectation_problems(doc, _run(path)) == []


@pytest.mark.parametrize("path", EXTRA + EXTRA_V2 + DERIVED, ids=lambda p: p.stem)
def test_extra_scenario_names_its_upstream_test(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    assert "_test.go" in doc["source"]


def test_group_map_rejects_two_labels_on_one_gpu() -> None:
    groups = GroupMap()
    assert groups.fit("n0", ["0"], ["a"])
    assert not groups.fit("n0", ["1"], ["a"])


def test_group_map_renames_per_node() -> None:
    groups = GroupMap()
    assert groups.fit("n0", ["0"], ["a"])
    assert groups.fit("n1", ["0"], ["b"])
