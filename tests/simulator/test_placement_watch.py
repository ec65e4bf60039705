"""Progress while an action runs (placement.watch): where the search is, for long eviction searches."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml
from busy_clusters import outcome
from placement_testlib import queue

from kaistack.cli import main, sim_progress
from placement import Job, Node, Placement, Queue, Snapshot, Task, simulate
from placement.simulation import Beat

ACTIONS = ("allocate", "consolidation", "reclaim", "preempt")


def _preemption() -> Snapshot:
    """One full 4-GPU node of low-priority work and a high-priority 4-GPU job: preempt searches it."""
    running = [Job(f"r{i}", "q", (Task(gpu=2, state="Running", node="n0"),), priority=50) for i in range(2)]
    return Snapshot((Node("n0", gpus=4),), (Queue("q"),), (*running, Job("p", "q", (Task(gpu=4),), priority=100)))


def _beats(snapshot: Snapshot) -> list[Beat]:
    beats: list[Beat] = []
    simulate(snapshot, actions=ACTIONS, placement=Placement(), on_progress=beats.append, progress_every=0)
    return beats


def test_a_beat_names_the_action_and_the_job_the_solver_is_searching() -> None:
    beats = _beats(_preemption())
    searching = [b for b in beats if b.action == "preempt" and b.job == "p"]
    assert searching
    assert searching[-1].jobs == 1
    assert searching[-1].job_scenarios >= 1
    assert searching[-1].scenarios >= searching[-1].job_scenarios


def test_beats_follow_the_actions_in_the_order_they_run() -> None:
    seen = list(dict.fromkeys(b.action for b in _beats(_preemption())))
    assert seen == [a for a in ACTIONS if a in seen]
    assert "preempt" in seen


def test_counts_start_again_with_each_action_and_only_grow_within_one() -> None:
    beats = _beats(_preemption())
    for earlier, later in itertools.pairwise(beats):
        if earlier.action == later.action and earlier.cycle == later.cycle:
            assert later.scenarios >= earlier.scenarios
            assert later.jobs >= earlier.jobs
    assert all(b.jobs == 0 and b.scenarios == 0 for b in beats if b.action == "allocate")


def test_listening_to_progress_changes_no_decision() -> None:
    snapshot = _preemption()
    quiet = simulate(snapshot, actions=ACTIONS, settle=False)
    watched = simulate(snapshot, actions=ACTIONS, settle=False, on_progress=lambda b: None, progress_every=0)
    assert outcome(watched) == outcome(quiet)
    assert outcome(quiet)["p-0"][0] == "Pipelined"


def _scenario_file(tmp_path: Path) -> Path:
    doc = {
        "actions": list(ACTIONS),
        "nodes": [{"name": "n0", "gpus": 4}],
        "queues": [queue("q")],
        "jobs": [
            {"name": "r0", "queue": "q", "gpu": 2, "priority": 50, "tasks": [{"state": "Running", "node": "n0"}]},
            {"name": "r1", "queue": "q", "gpu": 2, "priority": 50, "tasks": [{"state": "Running", "node": "n0"}]},
            {"name": "p", "queue": "q", "gpu": 4, "priority": 100},
        ],
    }
    path = tmp_path / "preempt.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _simulate_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], progress: str
) -> tuple[str, str]:
    """`kaistack simulate --json` with KAISTACK_PROGRESS=`progress` and a beat at every check: (stdout, stderr)."""
    monkeypatch.setenv("KAISTACK_PROGRESS", progress)
    monkeypatch.setattr(sim_progress, "PROGRESS_EVERY", 0.0)
    assert main(["simulate", str(_scenario_file(tmp_path)), "--json"]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_the_cli_shows_where_a_running_action_is_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out, err = _simulate_cli(tmp_path, monkeypatch, capsys, "1")
    assert "cycle 1: preempt" in err
    assert "jobs searched" in err
    assert "; on p (" in err
    assert "jobs searched" not in out


def test_the_cli_shows_no_heartbeat_when_progress_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, err = _simulate_cli(tmp_path, monkeypatch, capsys, "0")
    assert "jobs searched" not in err
