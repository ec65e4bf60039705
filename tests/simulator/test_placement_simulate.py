"""The library API: Snapshot in, Result out; rounds, actions, determinism, queue and node reports."""

from __future__ import annotations

import random

import pytest

from placement import Job, Node, Placement, Queue, QueueResource, Snapshot, Task, simulate

GPU_Q = QueueResource(quota=4, limit=-1, over_quota_weight=1)


def _snapshot(jobs: tuple[Job, ...], nodes: tuple[Node, ...] = (Node("n0", gpus=4),)) -> Snapshot:
    return Snapshot(nodes=nodes, queues=(Queue("q", gpu=GPU_Q),), jobs=jobs)


def test_simulate_places_a_pending_job_and_reports_binding() -> None:
    result = simulate(_snapshot((Job("a", "q", (Task(gpu=2),)),)), actions=["allocate"])
    task = result.tasks["a-0"]
    assert (task.status, task.node, task.gpus, task.gpu_groups) == ("Binding", "n0", 2.0, ())
    assert result.cycles == 1


def test_second_round_turns_binding_into_running() -> None:
    result = simulate(_snapshot((Job("a", "q", (Task(gpu=1),)),)), actions=["allocate"], rounds=2)
    assert result.tasks["a-0"].status == "Running"


def test_rounds_none_runs_until_nothing_changes() -> None:
    # An elastic job grows one pod per attempt but all attempts happen in one allocate; cycle 2 is idle.
    job = Job("a", "q", tuple(Task(gpu=1) for _ in range(3)), min_member=1)
    result = simulate(_snapshot((job,)), actions=["allocate"], rounds=None)
    assert result.cycles == 2
    assert [t.status for t in result.tasks.values()] == ["Running"] * 3


def test_unknown_action_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown action 'backfill'"):
        simulate(_snapshot(()), actions=["backfill"])


def test_zero_rounds_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="rounds must be at least 1"):
        simulate(_snapshot(()), rounds=0)


def test_placement_rejects_unknown_strategy() -> None:
    with pytest.raises(ValueError, match="'binpack' or 'spread'"):
        Placement(node="pack")


def test_binpack_fills_the_fuller_node_first() -> None:
    nodes = (Node("n0", gpus=4), Node("n1", gpus=4))
    jobs = (Job("busy", "q", (Task(gpu=2, state="Running", node="n1"),)), Job("a", "q", (Task(gpu=1),)))
    result = simulate(_snapshot(jobs, nodes), actions=["allocate"])
    assert result.tasks["a-0"].node == "n1"


def test_spread_prefers_the_emptier_node() -> None:
    nodes = (Node("n0", gpus=4), Node("n1", gpus=4))
    jobs = (Job("busy", "q", (Task(gpu=2, state="Running", node="n1"),)), Job("a", "q", (Task(gpu=1),)))
    result = simulate(_snapshot(jobs, nodes), actions=["allocate"], placement=Placement("spread", "spread"))
    assert result.tasks["a-0"].node == "n0"


def test_gang_is_all_or_nothing() -> None:
    jobs = (Job("a", "q", (Task(gpu=2), Task(gpu=2), Task(gpu=2))),)
    result = simulate(_snapshot(jobs), actions=["allocate"])
    assert {t.status for t in result.tasks.values()} == {"Pending"}
    assert result.nodes["n0"].free_gpus == 4


def test_elastic_job_places_what_fits_beyond_min_member() -> None:
    jobs = (Job("a", "q", tuple(Task(gpu=2) for _ in range(3)), min_member=1),)
    result = simulate(_snapshot(jobs), actions=["allocate"])
    assert [t.status for t in result.tasks.values()] == ["Binding", "Binding", "Pending"]


def test_higher_priority_job_in_a_queue_goes_first() -> None:
    jobs = (Job("train", "q", (Task(gpu=4),), priority=50), Job("build", "q", (Task(gpu=4),), priority=100))
    result = simulate(_snapshot(jobs), actions=["allocate"])
    assert (result.tasks["build-0"].status, result.tasks["train-0"].status) == ("Binding", "Pending")


def test_preempt_evicts_lower_priority_job_in_the_same_queue() -> None:
    jobs = (
        Job("train", "q", (Task(gpu=4, state="Running", node="n0"),), priority=50),
        Job("build", "q", (Task(gpu=4),), priority=100),
    )
    result = simulate(_snapshot(jobs), actions=["preempt"])
    assert (result.tasks["train-0"].status, result.tasks["build-0"].status) == ("Releasing", "Pipelined")
    assert result.tasks["build-0"].node == "n0"


def test_reclaim_takes_back_over_quota_gpus_for_a_starved_queue() -> None:
    queues = (
        Queue("a", gpu=QueueResource(2, -1, 1)),
        Queue("b", gpu=QueueResource(2, -1, 1)),
    )
    jobs = (
        Job("hog", "a", tuple(Task(gpu=1, state="Running", node="n0") for _ in range(4)), min_member=1),
        Job("want", "b", (Task(gpu=2),)),
    )
    result = simulate(Snapshot((Node("n0", gpus=4),), queues, jobs), actions=["reclaim"])
    statuses = [result.tasks[f"hog-{i}"].status for i in range(4)]
    assert sorted(statuses) == ["Releasing", "Releasing", "Running", "Running"]
    assert result.tasks["want-0"].status == "Pipelined"


def test_queue_report_carries_quota_limit_fair_share_and_allocation() -> None:
    queues = (
        Queue("a", gpu=QueueResource(1, 3, 1)),
        Queue("b", gpu=QueueResource(1, -1, 1)),
    )
    jobs = (Job("x", "a", tuple(Task(gpu=1) for _ in range(4)), min_member=1), Job("y", "b", (Task(gpu=1),)))
    result = simulate(Snapshot((Node("n0", gpus=4),), queues, jobs), actions=["allocate"])
    a = result.queues["a"]
    assert (a.deserved.gpu, a.limit.gpu, a.allocated.gpu) == (1, 3, 3)
    assert a.fair_share.gpu == pytest.approx(3)
    assert result.queues["b"].allocated.gpu == 1


def test_node_report_lists_whole_gpus_per_task() -> None:
    result = simulate(_snapshot((Job("a", "q", (Task(gpu=2),)),)), actions=["allocate"])
    node = result.nodes["n0"]
    assert (node.free_gpus, node.tasks) == (2, ("a-0",))
    assert [(d.id, d.tasks, d.shared) for d in node.devices] == [("gpu0", ("a-0",), False), ("gpu1", ("a-0",), False)]


def _random_snapshot(seed: int) -> Snapshot:
    rnd = random.Random(seed)
    nodes = tuple(Node(f"n{i}", gpus=rnd.choice([2, 4, 8])) for i in range(6))
    queues = (Queue("q1", gpu=QueueResource(4, -1, 1)), Queue("q2", gpu=QueueResource(4, -1, 2)))
    jobs = []
    for j in range(40):
        kind = rnd.random()
        task = Task(gpu=rnd.randint(1, 3)) if kind < 0.6 else Task(gpu_fraction=rnd.choice([0.25, 0.5, 0.7]))
        jobs.append(Job(f"j{j}", rnd.choice(["q1", "q2"]), (task,) * rnd.randint(1, 3), priority=rnd.choice([50, 100])))
    return Snapshot(nodes, queues, tuple(jobs))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_snapshot_same_result(seed: int) -> None:
    snapshot = _random_snapshot(seed)
    first = simulate(snapshot, rounds=3)
    second = simulate(snapshot, rounds=3)
    assert first.to_json() == second.to_json()
    assert list(first.tasks) == list(second.tasks)
    assert {k: r.message for k, r in first.reasons.items()} == {k: r.message for k, r in second.reasons.items()}


def test_max_seconds_stops_with_a_partial_result_marked_as_such() -> None:
    """A deadline already passed: no action decides anything, every pending pod stays Pending, `partial`."""
    from placement import simulate as run_simulate
    from placement.model import Job, Node, Queue, QueueResource, Snapshot, Task

    unlimited = QueueResource(-1, -1, 1)
    snapshot = Snapshot(
        (Node("n0", gpus=1),),
        (Queue("q", gpu=unlimited, cpu=unlimited, memory=unlimited),),
        (Job("j", "q", (Task(gpu=1),)),),
    )
    result = run_simulate(snapshot, max_seconds=0.0)
    assert result.partial is True
    assert result.to_json()["partial"] is True
    assert [t.status for t in result.tasks.values()] == ["Pending"]
    assert run_simulate(snapshot).partial is False
    assert "partial" not in run_simulate(snapshot).to_json()


def test_reasons_past_max_seconds_say_they_were_not_worked_out_and_make_the_result_partial(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each reason scans the nodes (200,000 pending jobs on 20,000 nodes would take hours): once the deadline has
    passed, a job's reason is not worked out, and the result says it is partial."""
    import placement.result

    unlimited = QueueResource(-1, -1, 1)
    snapshot = Snapshot(
        (Node("n0", gpus=1),),
        (Queue("q", gpu=unlimited, cpu=unlimited, memory=unlimited),),
        (Job("a", "q", (Task(gpu=1),)), Job("b", "q", (Task(gpu=1),))),
    )
    result = simulate(snapshot, max_seconds=3600)
    assert result.partial is False
    monkeypatch.setattr(placement.result.time, "monotonic", lambda: float("inf"))
    [(job, reason)] = result.reasons.items()
    assert (reason.code, reason.message) == (
        "not-explained",
        "not explained: the time limit (--max-seconds) ran out first",
    )
    assert result.partial is True
    assert simulate(snapshot).reasons[job].code == "no-node-fits"


def test_a_stopped_runs_reasons_name_the_limit_as_the_caller_calls_it() -> None:
    """The clock may be a stack key or a policy knob, not the CLI's flag: the reasons name what the user set."""
    snapshot = _snapshot((Job("j", "q", (Task(gpu=1),)),))
    default = simulate(snapshot, max_seconds=0.0).reasons["j"].message
    named = simulate(snapshot, max_seconds=0.0, limit_name="kai-capacity's maxSeconds").reasons["j"].message
    assert default == "not reached: the run stopped at its time limit (--max-seconds) before any action got to this job"
    assert named == default.replace("(--max-seconds)", "(kai-capacity's maxSeconds)")


def test_max_seconds_stops_a_scenario_build_between_one_victim_jobs_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    """Taking a pod from a victim job of n pods passes over all n (KAI's GetTasksToEvict), so building one scenario
    from a job of 10,000 pods ran for a minute past --max-seconds: the deadline is checked before each pod taken."""
    from placement import scenario_builder

    taken: list[int] = []
    advance = scenario_builder.ScenarioBuilder.advance

    def advance_then_run_out(self: scenario_builder.ScenarioBuilder) -> bool | None:
        taken.append(1)
        self.ssn.deadline = 0.0  # the limit runs out while the first pod is taken
        return advance(self)

    unlimited = QueueResource(-1, -1, 1)
    # The urgent job needs all 8 GPUs: no scenario passes KAI's idle-GPU filter before 8 pods are taken.
    running = tuple(Task(gpu=1, state="Running", node="n0") for _ in range(8))
    snapshot = Snapshot(
        (Node("n0", gpus=8),),
        (Queue("q", gpu=unlimited, cpu=unlimited, memory=unlimited),),
        (Job("victim", "q", running, priority=50, min_member=1), Job("urgent", "q", (Task(gpu=8),), 100)),
    )
    assert simulate(snapshot, actions=("preempt",)).tasks["urgent-0"].status == "Pipelined"
    monkeypatch.setattr(scenario_builder.ScenarioBuilder, "advance", advance_then_run_out)
    result = simulate(snapshot, actions=("preempt",), max_seconds=3600)
    assert taken == [1]
    assert result.partial is True
    assert result.tasks["urgent-0"].status == "Pending"
