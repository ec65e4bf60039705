"""A pending job that an action evicted, pipelined or never got to says so, rather than that no action placed it."""

from __future__ import annotations

from typing import Any

import pytest
from placement_testlib import DATA, queue, run, scenario

from placement import Result, simulate


def _run(path: str, actions: list[str], **options: Any) -> Result:
    s = scenario((DATA / path).read_text())
    return simulate(s.snapshot, actions=actions, rounds=1, placement=s.placement, **options)


def _reason(result: Result, job: str) -> tuple[str, str]:
    reason = result.reason(job)
    assert reason is not None
    return reason.code, reason.message


@pytest.mark.parametrize(
    ("path", "action", "victim", "preemptor"),
    [
        ("kai-conformance/s13a-reclaim-over-fair-share.yaml", "reclaim", "running_job1", "pending_job0"),
        ("kai-conformance/s12a-preempt-train-for-build.yaml", "preempt", "running_job0", "pending_job0"),
    ],
)
def test_an_evicted_job_names_the_action_and_the_job_it_made_room_for(
    path: str, action: str, victim: str, preemptor: str
) -> None:
    # Settled after the cycle (two actions), the evicted pod is back to Pending.
    result = _run(path, ["allocate", action])
    assert result.tasks[f"{victim}-0"].status == "Pending"
    assert _reason(result, victim) == (
        "evicted",
        f"evicted by {action} to make room for {preemptor}; not placed again in the simulated cycles",
    )


def test_a_job_moved_by_consolidation_says_where_it_was_to_restart() -> None:
    result = _run("kai-extra/c01-consolidate-first-pending.yaml", ["consolidation"], settle=True)
    assert _reason(result, "running_job1") == (
        "evicted",
        "evicted by consolidation to make room for pending_job0, to restart on node0; "
        "not placed again in the simulated cycles",
    )


def test_a_stale_gang_evicted_for_itself_says_why() -> None:
    path = "kai-conformance-v2/p-stale-01-evict-stale-gang-job-of-train.yaml"
    result = _run(path, ["stalegangeviction"], settle=True)
    assert _reason(result, "running_job0") == (
        "evicted",
        "evicted by stalegangeviction: fewer of its pods ran than its gang minimum for longer than its staleness "
        "grace period; not placed again in the simulated cycles",
    )


def test_a_job_pipelined_when_the_cycles_ended_names_the_action_and_node() -> None:
    # Its earlier allocate attempt (no node passes the predicates) no longer says why it waits.
    result = _run("kai-conformance/s13a-reclaim-over-fair-share.yaml", ["allocate", "reclaim"])
    assert _reason(result, "pending_job0") == (
        "waiting-for-release",
        "pipelined by reclaim onto node0, to start once evicted pods release their resources; "
        "the simulated cycles ended first",
    )


def test_an_attempt_after_the_eviction_says_why_it_failed_instead() -> None:
    # Round 1 evicts the stale gang; round 2's allocate tries it again, and that attempt is the newer news.
    s = scenario((DATA / "kai-conformance-v2/p-stale-01-evict-stale-gang-job-of-train.yaml").read_text())
    result = simulate(s.snapshot, actions=["allocate", "stalegangeviction"], rounds=2, placement=s.placement)
    assert _reason(result, "running_job0")[0] == "gang"


def test_a_job_a_stopped_run_never_reached_says_not_reached() -> None:
    s = scenario((DATA / "kai-conformance/s13a-reclaim-over-fair-share.yaml").read_text())
    result = simulate(s.snapshot, actions=s.actions, rounds=1, placement=s.placement, max_seconds=0.0)
    assert result.partial is True
    assert _reason(result, "pending_job0") == (
        "not-reached",
        "not reached: the run stopped at its time limit (--max-seconds) before any action got to this job",
    )


def test_a_job_no_action_got_to_in_a_full_run_keeps_the_generic_reason() -> None:
    # Consolidation runs with binpack only: under spread no action of this run takes the job from its order.
    doc = {
        "actions": ["consolidation"],
        "placement": {"node": "spread", "gpu": "spread"},
        "nodes": [{"name": "n0", "gpus": 1}],
        "queues": [queue("q")],
        "jobs": [{"name": "a", "queue": "q", "gpu": 1}],
    }
    assert _reason(run(doc), "a") == ("not-attempted", "no scheduling action placed the job in the simulated cycles")
