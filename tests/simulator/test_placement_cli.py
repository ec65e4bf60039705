"""`kaistack simulate`: --json shape for the scorer, readable table, exit code 2 on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from placement_testlib import DATA, queue

ROOT = Path(__file__).resolve().parents[2]
S07 = DATA / "kai-conformance" / "s07-fractional-pack-groups.yaml"


def _simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kaistack", "simulate", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_json_output_has_exactly_the_scorer_shape() -> None:
    run = _simulate(str(S07), "--json")
    assert run.returncode == 0, run.stderr
    tasks = json.loads(run.stdout)["tasks"]
    assert set(json.loads(run.stdout)) == {"tasks"}
    assert all(set(t) == {"status", "node", "gpuGroups", "gpus"} for t in tasks.values())
    assert tasks["pending_shared_gpu_job0-0"] == {"status": "Binding", "node": "node0", "gpuGroups": ["1"], "gpus": 0.6}


def test_json_lists_every_task_of_every_job() -> None:
    doc = yaml.safe_load(S07.read_text())
    expected = {
        f"{j['name']}-{i}"
        for j in doc["jobs"]
        for i in range(j.get("tasks", 1) if isinstance(j.get("tasks", 1), int) else len(j["tasks"]))
    }
    assert set(json.loads(_simulate(str(S07), "--json").stdout)["tasks"]) == expected


def test_pending_task_has_null_node_and_zero_gpus() -> None:
    tasks = json.loads(_simulate(str(S07), "--json").stdout)["tasks"]
    assert tasks["pending_shared_gpu_job2-0"] == {"status": "Pending", "node": None, "gpuGroups": [], "gpus": 0}


def test_table_shows_pods_queues_and_pending_reasons() -> None:
    run = _simulate(str(S07))
    assert run.returncode == 0
    assert "pending_shared_gpu_job0-0  Binding" in run.stdout
    assert "QUEUE" in run.stdout
    assert "pending_shared_gpu_job2: [over-quota]" in run.stdout


def test_malformed_scenario_exits_2_with_one_line_naming_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        yaml.safe_dump(
            {"nodes": [{"name": "n0"}], "queues": [queue("q")], "jobs": [{"name": "a", "queue": "q", "gpuFraction": 2}]}
        )
    )
    run = _simulate(str(path), "--json")
    assert run.returncode == 2
    assert json.loads(run.stdout) == {"ok": False, "exitCode": 2, "error": run.stderr.strip()}
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "bad.yaml: jobs[0].gpuFraction: must be > 0 and < 1, got 2" in lines[0]


@pytest.mark.parametrize("escape", ["\\ud800", "\\udc80"])
def test_a_lone_surrogate_in_a_json_scenario_exits_2_naming_the_key(escape: str, tmp_path: Path) -> None:
    """It crashed the table (UnicodeEncodeError, exit 70) or wrote a raw byte 0x80 to stdout."""
    path = tmp_path / "s.json"
    scenario = {"name": "s", "nodes": [{"name": "n0", "gpus": 1}], "queues": [queue("q")], "jobs": []}
    scenario["jobs"] = [{"name": "jREPLACE", "queue": "q", "gpu": 1, "tasks": 1}]
    path.write_text(json.dumps(scenario).replace("REPLACE", escape))
    run = _simulate(str(path))
    assert (run.returncode, run.stdout) == (2, "")
    assert f"jobs[0].name: j{escape} holds a lone UTF-16 surrogate" in run.stderr


def test_missing_file_exits_2_without_traceback(tmp_path: Path) -> None:
    run = _simulate(str(tmp_path / "missing.yaml"))
    assert run.returncode == 2
    assert "missing.yaml: cannot read file" in run.stderr
    assert "Traceback" not in run.stderr


def test_invalid_yaml_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("jobs: [\n")
    run = _simulate(str(path))
    assert run.returncode == 2
    assert "broken.yaml:2: not valid YAML" in run.stderr


def test_unknown_action_override_exits_2() -> None:
    run = _simulate(str(S07), "--actions", "allocate,backfill")
    assert run.returncode == 2
    assert (
        "--actions[1]: must be one of allocate, consolidation, reclaim, preempt, stalegangeviction, got 'backfill'"
        in (run.stderr)
    )


@pytest.mark.parametrize("rounds", ["1001", "1000000000", "-1"])
def test_rounds_override_is_held_to_the_scenario_limit(rounds: str) -> None:
    """`rounds: 1001` in the file was refused but `--rounds 1001` ran; 10^9 rounds ran for about 27 hours."""
    run = _simulate(str(S07), "--rounds", rounds)
    assert (run.returncode, run.stdout) == (2, "")
    assert f"kaistack simulate: --rounds: must be 0 to 1000, got {rounds}" in run.stderr


def test_actions_override_with_more_entries_than_the_limit_is_refused() -> None:
    run = _simulate(str(S07), "--actions", ",".join(["allocate"] * 21))
    assert (run.returncode, run.stdout) == (2, "")
    assert "kaistack simulate: --actions: 21 entries; kaistack simulates at most 20" in run.stderr


@pytest.mark.parametrize("actions", [",", ""])
def test_actions_override_that_names_no_action_is_refused(actions: str) -> None:
    """`--actions ,` ran nothing and exited 0 with every pod Pending."""
    run = _simulate(str(S07), "--actions", actions)
    assert (run.returncode, run.stdout) == (2, "")
    assert "kaistack simulate: --actions: must name 1 to 20 actions of allocate, " in run.stderr


@pytest.mark.parametrize(("name", "text"), [("s.yaml", ""), ("s.json", "null")])
def test_an_empty_scenario_file_exits_2(name: str, text: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_text(text)
    run = _simulate(str(path), "--summary")
    assert (run.returncode, run.stdout) == (2, "")
    assert f"{name}: top level: the scenario is empty" in run.stderr


def test_rounds_override_runs_more_cycles() -> None:
    # Two cycles: the pods bound in the first are Running in the second.
    tasks = json.loads(_simulate(str(S07), "--json", "--rounds", "2").stdout)["tasks"]
    assert tasks["pending_shared_gpu_job1-0"]["status"] == "Running"


def test_help_includes_an_example() -> None:
    run = _simulate("--help")
    assert run.returncode == 0
    assert "kaistack simulate scenario.yaml --json" in run.stdout


@pytest.mark.parametrize("flag", ["--json", ""])
def test_same_input_same_output(flag: str) -> None:
    args = [str(DATA / "kai-conformance" / "s16c-consolidate-fullcycle.yaml")] + ([flag] if flag else [])
    first, second = _simulate(*args), _simulate(*args)
    assert first.returncode == 0
    assert first.stdout == second.stdout


def test_max_seconds_gives_a_partial_result_and_exit_1() -> None:
    done = _simulate(str(S07), "--json", "--max-seconds", "1e-9")
    assert done.returncode == 1
    assert json.loads(done.stdout)["partial"] is True
    assert "the result is partial" in done.stderr


def test_max_seconds_must_be_positive() -> None:
    done = _simulate(str(S07), "--max-seconds", "0")
    assert done.returncode == 2
    assert "--max-seconds: must be a positive number of seconds" in done.stderr


def _many_pending(tmp_path: Path, jobs: int) -> Path:
    doc = {
        "actions": ["allocate"],
        "nodes": [{"name": "n0", "gpus": 1}],
        "queues": [queue("q")],
        "jobs": [{"name": f"j{i}", "queue": "q", "gpu": 1} for i in range(jobs)],
    }
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_summary_counts_pods_and_shows_only_the_first_pending_reasons(tmp_path: Path) -> None:
    run = _simulate(str(_many_pending(tmp_path, 30)), "--summary", "--json")
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["pods"] == {"Binding": 1, "Pending": 29}
    assert summary["jobs"] == {"total": 30, "pending": 29}
    assert len(summary["pending"]) == 20
    assert summary["pending"][0]["code"] == "no-node-fits"


def test_summary_text_says_how_many_pending_jobs_it_leaves_out(tmp_path: Path) -> None:
    run = _simulate(str(_many_pending(tmp_path, 30)), "--summary")
    assert "pending (first 20 of 29):" in run.stdout
    assert "j29" not in run.stdout


def test_progress_lines_go_to_stderr_when_asked_and_never_to_stdout(tmp_path: Path) -> None:
    path = str(_many_pending(tmp_path, 3))
    env = {**os.environ, "KAISTACK_PROGRESS": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "kaistack", "simulate", path, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env=env,
    )
    assert "cycle 1: allocate" in run.stderr
    assert set(json.loads(run.stdout)) == {"tasks"}


def test_no_progress_lines_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KAISTACK_PROGRESS"}
    run = subprocess.run(
        [sys.executable, "-m", "kaistack", "simulate", str(_many_pending(tmp_path, 3))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env=env,
    )
    assert run.returncode == 0
    assert "cycle 1:" not in run.stderr


def test_the_table_of_a_partial_result_says_so_on_stdout() -> None:
    """The table is what a reader keeps (a file, a pipe): stderr alone would lose that the result is partial."""
    done = _simulate(str(S07), "--max-seconds", "1e-9")
    assert done.returncode == 1
    first, second = done.stdout.splitlines()[:2]
    assert first.endswith("cycle(s) (partial)")
    assert second == (
        "partial: stopped after --max-seconds 1e-09: the result is partial (pods not reached yet are reported Pending)"
    )
