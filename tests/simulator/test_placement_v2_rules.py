"""FORMAT v2 rules read from KAI@v0.17.0's code where no upstream test pins them (each names its source)."""

from __future__ import annotations

from typing import Any

from placement_testlib import queue, run

ONE_QUEUE = [queue("q")]


def _doc(jobs: list[dict[str, Any]], nodes: list[dict[str, Any]], actions: list[str]) -> dict[str, Any]:
    return {"actions": actions, "nodes": nodes, "queues": ONE_QUEUE, "jobs": jobs}


def test_a_terminal_task_counts_for_min_member_but_not_as_alive_so_the_job_waits() -> None:
    """IsReadyForScheduling counts alive pods (Pending or placed); a Failed one is neither (pod_status.go)."""
    job = {"name": "j", "queue": "q", "gpu": 1, "tasks": [{"state": "Failed"}, {}, {}]}
    result = run(_doc([job], [{"name": "n", "gpus": 4}], ["allocate"]))
    assert [result.tasks[f"j-{i}"].status for i in range(3)] == ["Failed", "Pending", "Pending"]


def test_with_a_min_member_the_alive_pods_reach_the_same_job_is_placed() -> None:
    job = {"name": "j", "queue": "q", "gpu": 1, "minMember": 2, "tasks": [{"state": "Failed"}, {}, {}]}
    result = run(_doc([job], [{"name": "n", "gpus": 4}], ["allocate"]))
    assert [result.tasks[f"j-{i}"].status for i in range(3)] == ["Failed", "Binding", "Binding"]


def test_a_failed_task_naming_a_node_holds_nothing_there() -> None:
    failed = {"name": "old", "queue": "q", "gpu": 2, "tasks": [{"state": "Failed", "node": "n"}]}
    new = {"name": "new", "queue": "q", "gpu": 2}
    result = run(_doc([failed, new], [{"name": "n", "gpus": 2}], ["allocate"]))
    assert result.tasks["new-0"].status == "Binding"


def _preempt(delay: str, age: float) -> Any:
    pending = {"name": "p", "queue": "q", "priority": 100, "gpu": 1, "preemptionDelay": delay, "ageSeconds": age}
    victim = {"name": "v", "queue": "q", "priority": 50, "gpu": 1, "tasks": [{"state": "Running", "node": "n"}]}
    return run(_doc([pending, victim], [{"name": "n", "gpus": 1}], ["preempt"]))


def test_a_zero_preemption_delay_is_no_window() -> None:
    """PreemptionDelayEnd is nil for a delay <= 0 (podgroup_info/job_info.go)."""
    assert _preempt("0s", 0).tasks["v-0"].status == "Releasing"


def test_evictions_are_allowed_exactly_when_the_delay_ends() -> None:
    """IsWithinPreemptionDelay is `now < end`: at the end the job may preempt."""
    assert _preempt("10m", 600).tasks["v-0"].status == "Releasing"
    assert _preempt("10m", 599).tasks["v-0"].status == "Running"


def _reclaim_after_a_delayed_job(delayed: bool) -> dict[str, str]:
    # qa's oldest pending job is within its delay. KAI leaves it out of reclaim's order (input_jobs.go:75-80,
    # reclaim.go:59), so qa is ordered by a1, the same as qb by b1, and qa (older) goes first.
    one = {"quota": 1, "limit": -1, "overQuotaWeight": 1}
    queues = [queue("qa", one), queue("qb", one), queue("qc", {"quota": 0, "limit": -1, "overQuotaWeight": 1})]
    jobs: list[dict[str, Any]] = [
        {"name": "c1", "queue": "qc", "gpu": 1, "tasks": [{"state": "Running", "node": "n"}]},
        {"name": "b1", "queue": "qb", "gpu": 1},
        {"name": "a1", "queue": "qa", "gpu": 1},
    ]
    if delayed:
        jobs.insert(
            1, {"name": "ad", "queue": "qa", "priority": 75, "gpu": 2, "ageSeconds": 60, "preemptionDelay": "10m"}
        )
    doc = {"actions": ["reclaim"], "nodes": [{"name": "n", "gpus": 1}], "queues": queues, "jobs": jobs}
    return {name: t.status for name, t in run(doc).tasks.items() if name != "ad-0"}


def test_a_job_within_its_preemption_delay_does_not_set_its_queue_s_place_in_the_evicting_order() -> None:
    assert _reclaim_after_a_delayed_job(delayed=True) == _reclaim_after_a_delayed_job(delayed=False)
    assert _reclaim_after_a_delayed_job(delayed=True)["a1-0"] == "Pipelined"


def test_allocate_ignores_the_preemption_delay() -> None:
    pending = {"name": "p", "queue": "q", "priority": 100, "gpu": 1, "preemptionDelay": "10m", "ageSeconds": 1}
    result = run(_doc([pending], [{"name": "n", "gpus": 2}], ["allocate"]))
    assert result.tasks["p-0"].status == "Binding"


def test_a_pending_task_keeps_its_node_when_no_action_places_it() -> None:
    """The node is the pod's spec.nodeName, reported while it stays Pending (FORMAT v2)."""
    job = {"name": "j", "queue": "q", "gpu": 4, "tasks": [{"node": "n1"}]}
    result = run(_doc([job], [{"name": "n0", "gpus": 1}, {"name": "n1", "gpus": 1}], ["allocate"]))
    assert (result.tasks["j-0"].status, result.tasks["j-0"].node) == ("Pending", "n1")


def test_a_staleness_that_reached_the_grace_period_exactly_evicts() -> None:
    """handleStaleJob returns only while `now - since < grace` (stalegangeviction.go)."""
    job = {
        "name": "j",
        "queue": "q",
        "minMember": 2,
        "staleSeconds": 60,
        "stalenessGracePeriod": "60s",
        "tasks": [{"state": "Running", "node": "n"}, {}],
    }
    result = run(_doc([job], [{"name": "n", "gpus": 0}], ["stalegangeviction"]))
    assert result.tasks["j-0"].status == "Releasing"


def test_staleness_is_per_leaf_whatever_min_sub_group_says() -> None:
    """IsStale looks at every leaf; the tree's minSubGroup (1 of 3 met) does not save the job."""
    job = {
        "name": "j",
        "queue": "q",
        "minSubGroup": 1,
        "staleSeconds": 61,
        "subGroups": [{"name": "a", "minMember": 1}, {"name": "b", "minMember": 1}, {"name": "c", "minMember": 2}],
        "tasks": [{"state": "Running", "node": "n", "subGroup": g} for g in "abc"],
    }
    doc = _doc([job], [{"name": "n", "gpus": 0}], ["stalegangeviction"])
    doc["stalenessGracePeriod"] = "60s"
    result = run(doc)
    assert {t.status for t in result.tasks.values()} == {"Releasing"}


def test_siblings_are_ordered_by_name_not_spec_order() -> None:
    """SubGroupOrderFn ties fall back to the name (framework/session_plugins.go), FORMAT's spec order is not KAI's."""
    job = {
        "name": "j",
        "queue": "q",
        "gpu": 1,
        "minSubGroup": 1,
        "subGroups": [{"name": "zeta", "minMember": 1}, {"name": "alpha", "minMember": 1}],
        "tasks": [{"subGroup": "zeta"}, {"subGroup": "alpha"}],
    }
    result = run(_doc([job], [{"name": "n", "gpus": 1}], ["allocate"]))
    assert (result.tasks["j-0"].status, result.tasks["j-1"].status) == ("Pending", "Binding")
