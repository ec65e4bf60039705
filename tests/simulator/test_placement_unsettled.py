"""A run to a steady state (rounds=None) that never reaches one says so: `Result.unsettled`.

KAI keeps nothing of a session but what it committed to the cluster: a pipelined pod is Pending again in the next
session (FORMAT.md "Between rounds"). So allocate can place a pod that consolidation, later in the same cycle,
moves to make room for another, pipelined; the next cycle allocate places it again, and so on. Consolidation may
take a pod allocate placed in the same session: KAI@v0.17.0 pkg/scheduler/api/pod_status/pod_status.go:71
(activeAllocatedStatuses includes Binding) and pkg/scheduler/actions/consolidation/consolidation.go:186-209
(buildPreemptibleFilterFunc counts GetActiveAllocatedTasksCount).

tests/data/unsettled/scenario.json: 4 nodes, 38 pending jobs, shrunk from `benchmarks/cycle_gen.py --seed 25
--custom 4 6 60` with every task made Pending.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from placement_testlib import DATA, scenario

from kaistack.ops.scenarios import load_scenario
from placement import Result, simulate
from placement.result import Unsettled
from placement.simulation import MAX_ROUNDS

ROOT = Path(__file__).resolve().parents[2]
LOOPING = DATA / "unsettled" / "scenario.json"
MOVING = ("job-000031", "job-000049")


def _loop(rounds: int | None = 1, max_rounds: int = MAX_ROUNDS) -> Result:
    sc = load_scenario(LOOPING)
    return simulate(sc.snapshot, actions=sc.actions, rounds=rounds, placement=sc.placement, max_rounds=max_rounds)


def test_a_run_that_never_settles_names_the_jobs_still_moving_and_the_loop():
    result = _loop(rounds=None)
    assert result.cycles == MAX_ROUNDS
    assert result.unsettled is not None
    assert result.unsettled.moving == MOVING
    assert result.unsettled.period == 1


def test_the_moving_jobs_are_placed_and_evicted_by_consolidation_each_cycle():
    """job-000031 is placed by allocate, then moved (pipelined) by consolidation for job-000049: both end Pending."""
    result = _loop(rounds=None)
    assert [result.jobs[job].statuses for job in MOVING] == [("Pending",), ("Pending",)]
    assert "consolidation" in str(result.reason("job-000049"))


def test_telling_it_changes_no_decision():
    """The same 50 cycles asked for by count decide the same placements; only the steady-state run says more."""
    counted = _loop(rounds=MAX_ROUNDS)
    assert counted.unsettled is None
    assert {n: t.to_json() for n, t in counted.tasks.items()} == {n: t.to_json() for n, t in _loop().tasks.items()}


def test_a_shorter_cycle_limit_still_finds_the_loop():
    result = _loop(rounds=None, max_rounds=4)
    assert result.cycles == 4
    assert result.unsettled is not None
    assert result.unsettled.period == 1


def test_a_run_that_settles_is_not_unsettled():
    doc = json.loads(LOOPING.read_text())
    doc["actions"] = ["allocate"]  # allocate alone never takes back what it placed
    sc = scenario(doc)
    result = simulate(sc.snapshot, actions=sc.actions, rounds=None, placement=sc.placement)
    assert result.cycles < MAX_ROUNDS
    assert result.unsettled is None


def test_json_and_summary_carry_unsettled_only_when_it_is():
    looping = _loop(rounds=None)
    assert looping.to_json()["unsettled"] == {"cycles": MAX_ROUNDS, "moving": list(MOVING), "period": 1}
    assert looping.summary()["unsettled"]["moving"] == list(MOVING)
    once = _loop(rounds=1)
    assert "unsettled" not in once.to_json()
    assert "unsettled" not in once.summary()


def _simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kaistack", "simulate", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_cli_says_it_does_not_settle_above_the_table():
    run = _simulate(str(LOOPING), "--rounds", "0")
    assert run.returncode == 0, run.stderr
    second = run.stdout.splitlines()[1]
    assert second.startswith("does not settle: after 50 cycles KAI still moves the pods of 2 job(s) every cycle")
    assert "(job-000031, job-000049); every cycle ends as the one before did" in second


def test_cli_summary_json_has_the_unsettled_block():
    run = _simulate(str(LOOPING), "--rounds", "0", "--summary", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["unsettled"] == {"cycles": 50, "moving": list(MOVING), "period": 1}


@pytest.mark.parametrize(
    ("period", "ending"),
    [
        (1, "(a, b); every cycle ends as the one before did, so it never settles"),
        (3, "(a, b); the same state comes back every 3 cycles, so it never settles"),
        (None, "(a, b)"),
    ],
)
def test_the_description_says_whether_the_cycles_loop(period, ending):
    text = Unsettled(("a", "b"), period).describe(50)
    every = "in each loop of 3 cycles" if period == 3 else "every cycle"
    assert text == f"does not settle: after 50 cycles KAI still moves the pods of 2 job(s) {every} {ending}"


def test_the_description_names_the_first_ten_jobs_and_counts_the_rest():
    text = Unsettled(tuple(f"j{i}" for i in range(13)), None).describe(50)
    assert text.endswith("(j0, j1, j2, j3, j4, j5, j6, j7, j8, j9 and 3 more)")


def test_in_a_loop_of_two_cycles_a_job_moving_in_one_of_them_counts_wherever_the_run_stops():
    """tests/data/unsettled/period2.json: `benchmarks/cycle_gen.py --seed 637 --custom 4 6 60` as generated;
    job-000041 is pipelined in one cycle of the loop and untouched in the other."""
    sc = load_scenario(DATA / "unsettled" / "period2.json")
    found = set()
    for max_rounds in (20, 21):
        result = simulate(sc.snapshot, actions=sc.actions, rounds=None, placement=sc.placement, max_rounds=max_rounds)
        assert result.unsettled is not None
        assert result.unsettled.period == 2
        found.add(result.unsettled.moving)
    assert found == {("job-000007", "job-000018", "job-000041", "job-000050")}
