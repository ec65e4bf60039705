"""The minruntime plugin: jobs that started less than their queue's min runtime ago are not evicted.

KAI@v0.17.0 pkg/scheduler/plugins/minruntime/minruntime.go (filters :84-98, validators :100-131, protection
:133-171, validVictimForMinAvailable :173-196) and resolver.go (preempt :32-60, reclaim "lca" :107-147 and
"queue" :85-105); allocate.go:62-67 stamps the start of a job it starts. Scenario keys:
docs/scenario-format.md, "kaistack extension: min runtime".
"""

from __future__ import annotations

from typing import Any

from placement_testlib import queue, run

UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def _statuses(doc: dict[str, Any]) -> dict[str, str]:
    return {name: t.status for name, t in run(doc).tasks.items()}


def _preempt(started: float | None, **queue_extra: Any) -> dict[str, str]:
    victim: dict[str, Any] = {"name": "train", "queue": "q", "priority": 50, "gpu": 1}
    victim["tasks"] = [{"state": "Running", "node": "n1"}]
    if started is not None:
        victim["startedSeconds"] = started
    doc = {
        "actions": ["preempt"],
        "nodes": [{"name": "n1", "gpus": 1}],
        "queues": [queue("q", UNLIMITED, **queue_extra)],
        "jobs": [victim, {"name": "build", "queue": "q", "priority": 100, "gpu": 1}],
    }
    return _statuses(doc)


def test_a_job_younger_than_its_queue_s_preempt_min_runtime_is_not_preempted() -> None:
    assert _preempt(300, preemptMinRuntime="10m") == {"train-0": "Running", "build-0": "Pending"}


def test_a_job_older_than_its_queue_s_preempt_min_runtime_is_preempted() -> None:
    assert _preempt(601, preemptMinRuntime="10m") == {"train-0": "Releasing", "build-0": "Pipelined"}


def test_a_running_job_without_a_start_time_in_a_scenario_started_a_minute_ago() -> None:
    # KAI's harness (jobs_fake/jobs.go:182-185): protected by 2m, not by 30s.
    assert _preempt(None, preemptMinRuntime="2m")["train-0"] == "Running"
    assert _preempt(None, preemptMinRuntime="30s")["train-0"] == "Releasing"


def test_the_preempt_min_runtime_comes_from_the_nearest_queue_that_sets_one() -> None:
    doc = {
        "actions": ["preempt"],
        "nodes": [{"name": "n1", "gpus": 1}],
        "queues": [queue("dept", UNLIMITED, preemptMinRuntime="10m"), queue("q", UNLIMITED, parent="dept")],
        "jobs": [
            {"name": "train", "queue": "q", "priority": 50, "gpu": 1, "startedSeconds": 300,
             "tasks": [{"state": "Running", "node": "n1"}]},
            {"name": "build", "queue": "q", "priority": 100, "gpu": 1},
        ],
    }  # fmt: skip
    assert _statuses(doc)["train-0"] == "Running"


def _reclaim(victim_queue: str, method: str = "lca") -> dict[str, str]:
    # Two departments; the reclaimer (queue a1, under quota) reclaims from over-quota queues.
    no_quota = {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    doc = {
        "actions": ["reclaim"],
        "placement": {"reclaimResolveMethod": method},
        "nodes": [{"name": "n1", "gpus": 2}],
        "queues": [
            queue("da", {"quota": 1, "limit": -1, "overQuotaWeight": 1}, reclaimMinRuntime="10m"),
            queue("db", {"quota": 1, "limit": -1, "overQuotaWeight": 1}),
            queue("a1", {"quota": 1, "limit": -1, "overQuotaWeight": 1}, parent="da"),
            queue("a2", no_quota, parent="da", reclaimMinRuntime="1s"),
            queue("a3", no_quota, parent="da"),
            queue("b1", no_quota, parent="db", reclaimMinRuntime="1h"),
        ],
        "jobs": [
            {"name": "v", "queue": victim_queue, "priority": 50, "gpu": 2, "startedSeconds": 300,
             "tasks": [{"state": "Running", "node": "n1"}]},
            {"name": "r", "queue": "a1", "priority": 50, "gpu": 1},
        ],
    }  # fmt: skip
    return _statuses(doc)


def test_lca_across_departments_takes_the_victim_s_department_min_runtime() -> None:
    # resolver.go:119-127: different top-level queues -> the victim's top-level queue (db sets none: 0s).
    assert _reclaim("b1")["v-0"] == "Releasing"


def test_lca_within_a_department_takes_the_victim_side_child_of_the_common_ancestor() -> None:
    # resolver.go:129-146: a1 and a2 meet at da; the walk starts at a2 (1s), so the 300 s old job is not protected.
    assert _reclaim("a2")["v-0"] == "Releasing"


def test_lca_within_a_department_inherits_from_above_the_victim_side_child() -> None:
    # a3 sets none: the walk from a3 (the victim-side child of da) up reaches da's 10m, which protects the job.
    assert _reclaim("a3")["v-0"] == "Running"


def test_queue_method_takes_the_victim_s_own_queue_first() -> None:
    assert _reclaim("b1", method="queue")["v-0"] == "Running"  # b1: 1h


def test_a_protected_elastic_job_loses_pods_only_down_to_its_minimum() -> None:
    doc = {
        "actions": ["preempt"],
        "nodes": [{"name": "n1", "gpus": 3}],
        "queues": [queue("q", UNLIMITED, preemptMinRuntime="10m")],
        "jobs": [
            {"name": "elastic", "queue": "q", "priority": 50, "gpu": 1, "minMember": 1, "startedSeconds": 30,
             "tasks": [{"state": "Running", "node": "n1"}] * 3},
            {"name": "build", "queue": "q", "priority": 100, "gpu": 2},
        ],
    }  # fmt: skip
    # Two pods may go (one stays, minMember 1); all three may not.
    assert _statuses(doc)["build-0"] == "Pipelined"
    doc["jobs"][1]["gpu"] = 3
    assert _statuses(doc)["build-0"] == "Pending"


def test_a_job_allocate_starts_is_protected_for_the_rest_of_the_cycle() -> None:
    # The build gang cannot be placed by allocate; the train job t1 is, and preempt then may evict only t0.
    doc = {
        "actions": ["allocate", "preempt"],
        "rounds": 1,
        "nodes": [{"name": "n1", "gpus": 2}],
        "queues": [queue("q", UNLIMITED, preemptMinRuntime="30s")],
        "jobs": [
            {"name": "t0", "queue": "q", "priority": 50, "gpu": 1, "tasks": [{"state": "Running", "node": "n1"}]},
            {"name": "build", "queue": "q", "priority": 100, "gpu": 1, "tasks": 2},
            {"name": "t1", "queue": "q", "priority": 50, "gpu": 1},
        ],
    }
    statuses = _statuses(doc)
    assert (statuses["t1-0"], statuses["build-0"]) == ("Running", "Pending")
