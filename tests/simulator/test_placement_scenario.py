"""Scenario files load with FORMAT.md's defaults; malformed ones fail naming the file and the key path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from placement_testlib import queue, scenario

from kaistack.ops.scenarios import load_scenario
from placement import UNLIMITED, simulate
from placement.scenario import ScenarioError


def _doc(**job: Any) -> dict[str, Any]:
    return {
        "nodes": [{"name": "n0", "gpus": 2}],
        "queues": [queue("q")],
        "jobs": [{"name": "a", "queue": "q", **job}],
    }


def test_node_defaults_follow_the_format() -> None:
    node = scenario({"nodes": [{"name": "n0"}]}).snapshot.nodes[0]
    assert (node.gpus, node.gpu_memory_mib, node.cpu_millis, node.memory_bytes, node.pods, node.mig_strategy) == (
        0,
        100,
        20_000_000,
        20 * 10**9,
        110,
        "none",
    )


def test_task_defaults_one_cpu_one_gigabyte_no_gpu() -> None:
    task = scenario(_doc()).snapshot.jobs[0].tasks[0]
    assert (task.gpu, task.cpu_millis, task.memory_bytes, task.state, task.gpu_devices) == (
        0,
        1000,
        10**9,
        "Pending",
        1,
    )


def test_job_defaults_priority_50_gang_of_all_tasks_preemptible() -> None:
    job = scenario(_doc(tasks=3)).snapshot.jobs[0]
    assert (job.priority, job.gang_size, job.is_preemptible) == (50, 3, True)


def test_priority_100_job_is_not_preemptible_by_default() -> None:
    assert not scenario(_doc(priority=100)).snapshot.jobs[0].is_preemptible


def test_omitted_queue_resource_is_zero_not_unlimited() -> None:
    q = scenario({"queues": [{"name": "q"}]}).snapshot.queues[0]
    assert (q.cpu.quota, q.cpu.limit, q.cpu.over_quota_weight) == (0, 0, 0)


def test_unlimited_queue_resource_keeps_minus_one() -> None:
    assert scenario(_doc()).snapshot.queues[0].gpu.limit == UNLIMITED


def test_scenario_defaults_to_one_round_of_every_action() -> None:
    s = scenario(_doc())
    assert (s.actions, s.rounds) == (("allocate", "consolidation", "reclaim", "preempt"), 1)


def test_task_list_overrides_job_defaults() -> None:
    doc = _doc(gpu=1, tasks=[{}, {"gpu": 2, "state": "Running", "node": "n0"}])
    tasks = scenario(doc).snapshot.jobs[0].tasks
    assert [(t.gpu, t.state, t.node) for t in tasks] == [(1, "Pending", None), (2, "Running", "n0")]


def test_missing_gpu_memory_label_is_none() -> None:
    node = scenario({"nodes": [{"name": "n0", "gpus": 1, "gpuMemoryMiB": None}]}).snapshot.nodes[0]
    assert node.gpu_memory_mib is None


def test_fraction_out_of_range_names_job_index_and_key() -> None:
    doc = _doc()
    doc["jobs"] += [{"name": "b", "queue": "q"}, {"name": "c", "queue": "q", "gpuFraction": 1.5}]
    with pytest.raises(ScenarioError, match=r"^s\.yaml: jobs\[2\]\.gpuFraction: must be > 0 and < 1, got 1\.5$"):
        scenario(doc, "s.yaml")


def test_bad_node_quantity_names_the_key_and_value() -> None:
    doc = _doc()
    doc["nodes"][0]["cpu"] = "lots"
    with pytest.raises(ScenarioError, match=r"s\.yaml: nodes\[0\]\.cpu: invalid quantity 'lots'"):
        scenario(doc, "s.yaml")


def test_unknown_key_suggests_the_closest_one() -> None:
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.gpuu: unknown key \(did you mean 'gpu'\?\)"):
        scenario(_doc(gpuu=1))


def test_running_task_must_name_a_known_node() -> None:
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.tasks\[0\]\.node: unknown node 'nx'"):
        scenario(_doc(tasks=[{"state": "Running", "node": "nx"}]))


def test_duplicate_job_name_is_refused() -> None:
    doc = _doc()
    doc["jobs"].append({"name": "a", "queue": "q"})
    with pytest.raises(ScenarioError, match=r"jobs\[1\]\.name: duplicate name 'a'"):
        scenario(doc)


def test_two_gpu_request_kinds_are_refused() -> None:
    with pytest.raises(ScenarioError, match=r"jobs\[0\]: at most one GPU request kind per task"):
        scenario(_doc(gpu=1, gpuMemoryMiB=10))


def test_unknown_action_is_refused() -> None:
    doc = _doc()
    doc["actions"] = ["allocate", "backfill"]
    with pytest.raises(ScenarioError, match=r"actions\[1\]: must be one of .*got 'backfill'"):
        scenario(doc)


@pytest.mark.parametrize("actions", [[], None])
def test_an_actions_list_that_names_no_action_is_refused(actions: list[str] | None) -> None:
    """No action places nothing: every pod came back Pending and the run exited 0 as if it had run."""
    doc = _doc()
    doc["actions"] = actions
    with pytest.raises(ScenarioError, match=r"s\.yaml: actions: must name 1 to 20 actions of allocate, .*; got none"):
        scenario(doc, "s.yaml")


@pytest.mark.parametrize(
    ("text", "why"),
    [("", "no document, or null"), ("# only a comment\n", "no document, or null"), ("null\n", "no document, or null"),
     ("{}\n", "none of nodes, queues, jobs"), ("name: s\nactions: [allocate]\n", "none of nodes, queues, jobs")],
    ids=["empty-file", "only-comments", "null", "empty-mapping", "no-cluster-keys"],
)  # fmt: skip
def test_an_empty_scenario_is_refused(text: str, why: str, tmp_path: Path) -> None:
    """A truncated or wrong file simulated nothing and passed ("pods: none", exit 0)."""
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=rf"s\.yaml: top level: the scenario is empty \({why}\); a scenario lists"):
        load_scenario(path)


def test_a_scenario_of_explicitly_empty_lists_is_an_empty_cluster() -> None:
    loaded = scenario({"nodes": [], "queues": [], "jobs": []})
    assert (loaded.snapshot.nodes, loaded.snapshot.queues, loaded.snapshot.jobs) == ((), (), ())


def test_queue_quota_must_be_a_number() -> None:
    doc = _doc()
    doc["queues"][0]["gpu"] = {"quota": "two"}
    with pytest.raises(ScenarioError, match=r"queues\[0\]\.gpu\.quota: must be a finite number, got 'two'"):
        scenario(doc)


def test_document_must_be_a_mapping() -> None:
    with pytest.raises(ScenarioError, match="top level: must be a mapping"):
        scenario([1, 2])  # type: ignore[arg-type]


def test_invalid_yaml_is_one_line_naming_file_and_position(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("nodes: [\n")
    with pytest.raises(ScenarioError, match=r"broken\.yaml:2: not valid YAML \(document 1\): ") as err:
        load_scenario(path)
    assert "\n" not in str(err.value)


def test_missing_file_is_a_scenario_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"nope\.yaml: cannot read file: No such file"):
        load_scenario(tmp_path / "nope.yaml")


def test_json_scenario_loads_like_yaml(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_doc(gpu=1, tasks=2)))
    loaded = load_scenario(path)
    assert loaded.name == "s"
    assert [t.gpu for t in loaded.snapshot.jobs[0].tasks] == [1, 1]


# --- limits: every size a scenario controls is refused above its maximum, naming the key -------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(rounds=100_000_000), r"rounds: must be 1 to 1000, got 100000000"),
        (lambda d: d.update(actions=["allocate"] * 21), r"actions: 21 entries; kaistack simulates at most 20"),
        (lambda d: d["jobs"][0].update(tasks=1_000_000), r"jobs\[0\]\.tasks: must be 1 to 100000, got 1000000"),
        (lambda d: d["jobs"][0].update(priority=2**31), r"jobs\[0\]\.priority: must be <= 2147483647"),
        (lambda d: d["nodes"][0].update(gpus=10**9), r"nodes\[0\]\.gpus: must be <= 128, got 1000000000"),
        (lambda d: d["jobs"][0].update(minMember=float("inf")), r"jobs\[0\]\.minMember: must be an integer, got inf"),
        (
            lambda d: d.update(nodes=[{"name": f"n{i}"} for i in range(20_001)]),
            r"nodes: 20001 entries; .* at most 20000",
        ),
        (
            lambda d: d.update(jobs=[{"name": f"j{i}", "queue": "q", "tasks": 100_000} for i in range(6)]),
            r"jobs: 600000 tasks in all; kaistack simulates at most 500000",
        ),
        # A chain of a thousand queues stopped the simulator with a RecursionError (exit 70): placement.depth.
        (
            lambda d: d.update(
                queues=[{"name": f"q{i}", **({"parent": f"q{i - 1}"} if i else {})} for i in range(1000)]
            ),
            r"queues\[256\]\.parent: queue 'q256' is 257 levels deep; kaistack simulates at most 256",
        ),
    ],
    ids=[
        "rounds",
        "actions",
        "tasks-per-job",
        "priority",
        "gpus-per-node",
        "non-finite",
        "nodes",
        "tasks-in-all",
        "queue-depth",
    ],
)
def test_sizes_above_the_limits_are_refused_with_the_key(change: Any, message: str) -> None:
    doc = _doc()
    change(doc)
    with pytest.raises(ScenarioError, match=message):
        scenario(doc, "s.yaml")


def test_queues_as_deep_as_the_simulator_walks_are_simulated() -> None:
    doc = _doc(gpu=1)
    doc["queues"] = [queue(f"q{i}", **({"parent": f"q{i - 1}"} if i else {})) for i in range(256)]
    doc["jobs"][0]["queue"] = "q255"
    loaded = scenario(doc, "s.yaml")
    result = simulate(loaded.snapshot, actions=loaded.actions, rounds=loaded.rounds, placement=loaded.placement)
    assert all(t.node is not None for t in result.tasks.values())


# --- FORMAT v2 keys -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90.0), ("10m", 600.0), ("1h30m", 5400.0), ("-1s", -1.0), ("0", 0.0)]
)
def test_durations_are_go_durations(text: str, seconds: float) -> None:
    job = scenario(_doc(preemptionDelay=text)).snapshot.jobs[0]
    assert job.preemption_delay_seconds == seconds


def test_a_malformed_duration_names_the_key() -> None:
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.preemptionDelay: must be a duration like '90s'"):
        scenario(_doc(preemptionDelay="ten minutes"))


def test_jobs_without_age_are_n_minus_k_minutes_old() -> None:
    doc = _doc()
    doc["jobs"] += [{"name": "b", "queue": "q"}, {"name": "c", "queue": "q", "ageSeconds": 5}]
    assert [j.age_seconds for j in scenario(doc).snapshot.jobs] == [180.0, 120.0, 5.0]


def test_an_unknown_kai_version_is_refused() -> None:
    doc = _doc()
    doc["kaiVersion"] = "v0.19.0"
    with pytest.raises(ScenarioError, match=r"kaiVersion: the simulator implements v0.17.0, v0.18.0; got 'v0.19.0'"):
        scenario(doc)


def test_a_name_taken_from_a_file_name_that_is_not_utf8_is_printable_text(tmp_path: Path) -> None:
    """argv and os.listdir decode such bytes to lone surrogates, which no output encoding can write."""
    path = tmp_path / "noname\udcff.yaml"
    try:
        path.write_text("nodes: []\n")
    except (UnicodeEncodeError, OSError):
        pytest.skip("this file system refuses a non-UTF-8 name")
    name = load_scenario(path).name
    assert name == "noname\\udcff"
