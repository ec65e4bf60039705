"""A solver simulation stops once no node could still take the preemptor (placement.preemptor_room).

The stop is exact only if re-placing victims never adds room on a node; that claim is checked on generated
busy clusters with shared GPUs among the running pods, and the full cycle is compared with and without the
stop.
"""

from __future__ import annotations

from typing import Any

import pytest
from busy_clusters import FULL_CYCLE, busy_clusters, evict_picked, outcome, placements, running_session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement import Job, Node, Placement, Queue, Snapshot, Task, simulate
from placement import preemptor_room as room_module
from placement.preemptor_room import PreemptorRoom
from placement.session import Session
from placement.solver import PartialJob, _pipeline_job
from placement.statement import Statement


def _room(node: Any) -> tuple[float, float, float]:
    """What IsTaskAllocatableOnReleasingOrIdle reads for a whole-GPU pod: idle + releasing GPUs, CPU, memory."""
    return (node.idle_gpus + node.rel_gpus, node.idle_cpu + node.rel_cpu, node.idle_mem + node.rel_mem)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_clusters(), st.lists(st.integers(0, 100), min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_re_placing_evicted_victims_never_adds_room_on_a_node(snapshot: Snapshot, picks: list[int], rnd: Any) -> None:
    ssn, running = running_session(snapshot)
    if not running:
        return
    stmt, victims = evict_picked(ssn, running, picks)
    rnd.shuffle(victims)
    nodes = dict(ssn.nodes)
    for job in victims:
        before = {name: _room(node) for name, node in nodes.items()}
        _pipeline_job(ssn, stmt, job, nodes)
        for name, node in nodes.items():
            after = _room(node)
            assert all(a <= b for a, b in zip(after, before[name], strict=True)), (job.name, name, before[name], after)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# A longer backlog than the other solver properties: more failed whole-GPU scenarios, so the stop fires
# mid-simulation in some examples, not only at the start.
@given(snapshot=busy_clusters(backlog=25), placement=placements, rounds=st.integers(1, 2))
def test_the_full_cycle_places_and_evicts_the_same_pods_without_the_stop(
    snapshot: Snapshot, placement: Placement, rounds: int
) -> None:
    stopped = simulate(snapshot, actions=FULL_CYCLE, rounds=rounds, placement=placement, settle=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(room_module.PreemptorRoom, "of", classmethod(lambda cls, *args: None))
        run_out = simulate(snapshot, actions=FULL_CYCLE, rounds=rounds, placement=placement, settle=False)
    # Labels included: a rolled-back simulation leaves no GPU label taken (Statement._place, forget_groups).
    assert outcome(stopped) == outcome(run_out)


def _session(pending: Task) -> Session:
    """Two 4-GPU nodes, each full with two running 2-GPU jobs, and one pending job."""
    running = [Job(f"r{i}", "q", (Task(gpu=2, state="Running", node=f"n{i // 2}"),), priority=50) for i in range(4)]
    snapshot = Snapshot(
        (Node("n0", gpus=4), Node("n1", gpus=4)),
        (Queue("q"),),
        (*running, Job("p", "q", (pending,), priority=100)),
    )
    ssn = Session(snapshot, Placement())
    ssn.open()
    return ssn


def _preemptor(ssn: Session) -> PartialJob:
    job = ssn.jobs["p"]
    return PartialJob(job, job.tasks_to_allocate(real=False))


def _evict(ssn: Session, stmt: Statement, *names: str) -> None:
    for name in names:
        for task in ssn.jobs[name].tasks:
            stmt.evict(task)


def test_the_hosts_are_the_nodes_whose_idle_and_releasing_gpus_fit_the_preemptor() -> None:
    ssn = _session(Task(gpu=4))
    stmt = Statement(ssn)
    _evict(ssn, stmt, "r0", "r1", "r2")
    room = PreemptorRoom.of(_preemptor(ssn), dict(ssn.nodes), set())
    assert room is not None
    assert sorted(room.hosts) == ["n0"]  # n1 has 2 releasing GPUs of 4


def test_no_node_fitting_the_preemptor_is_a_failed_simulation_from_the_start() -> None:
    ssn = _session(Task(gpu=4))
    stmt = Statement(ssn)
    _evict(ssn, stmt, "r0", "r2")
    room = PreemptorRoom.of(_preemptor(ssn), dict(ssn.nodes), set())
    assert room is not None
    assert room.gone()


def test_a_victim_put_back_on_the_last_host_leaves_no_room() -> None:
    ssn = _session(Task(gpu=4))
    stmt = Statement(ssn)
    _evict(ssn, stmt, "r0", "r1")
    nodes = dict(ssn.nodes)
    room = PreemptorRoom.of(_preemptor(ssn), nodes, set())
    assert room is not None
    assert not room.gone()
    mark = stmt.checkpoint()
    assert _pipeline_job(ssn, stmt, ssn.jobs["r0"], nodes)
    assert room.taken(stmt, mark)


def test_a_victim_put_back_elsewhere_leaves_the_hosts_as_they_were() -> None:
    ssn = _session(Task(gpu=4))
    stmt = Statement(ssn)
    _evict(ssn, stmt, "r0", "r1", "r2")
    nodes = dict(ssn.nodes)
    room = PreemptorRoom.of(_preemptor(ssn), nodes, set())
    assert room is not None
    mark = stmt.checkpoint()
    assert _pipeline_job(ssn, stmt, ssn.jobs["r2"], {"n1": ssn.nodes["n1"]})
    assert stmt.checkpoint() > mark
    assert not room.taken(stmt, mark)
    assert sorted(room.hosts) == ["n0"]


def test_a_host_that_still_fits_after_a_victim_goes_back_stays_a_host() -> None:
    snapshot = Snapshot(
        (Node("n0", gpus=8),),
        (Queue("q"),),
        (
            Job("r0", "q", (Task(gpu=2, state="Running", node="n0"),), priority=50),
            Job("r1", "q", (Task(gpu=6, state="Running", node="n0"),), priority=50),
            Job("p", "q", (Task(gpu=4),), priority=100),
        ),
    )
    ssn = Session(snapshot, Placement())
    ssn.open()
    stmt = Statement(ssn)
    _evict(ssn, stmt, "r0", "r1")
    nodes = dict(ssn.nodes)
    room = PreemptorRoom.of(_preemptor(ssn), nodes, set())
    assert room is not None
    mark = stmt.checkpoint()
    assert _pipeline_job(ssn, stmt, ssn.jobs["r0"], nodes)
    assert not room.taken(stmt, mark)  # 6 of 8 GPUs still releasing
    assert sorted(room.hosts) == ["n0"]


@pytest.mark.parametrize(
    "pending",
    [Task(gpu_fraction=0.5), Task(gpu_memory_mib=10_000)],
    ids=["fraction", "gpu-memory"],
)
def test_a_shared_gpu_preemptor_is_not_followed(pending: Task) -> None:
    # A GPU whose pods are all releasing takes no fraction until one is pipelined onto it: not monotone.
    ssn = _session(pending)
    assert PreemptorRoom.of(_preemptor(ssn), dict(ssn.nodes), set()) is None


def test_a_preemptor_whose_own_job_has_victims_is_not_followed() -> None:
    ssn = _session(Task(gpu=4))
    assert PreemptorRoom.of(_preemptor(ssn), dict(ssn.nodes), {"p"}) is None


def test_the_largest_whole_gpu_pod_of_the_batch_is_followed() -> None:
    snapshot = Snapshot(
        (Node("n0", gpus=4),),
        (Queue("q"),),
        (Job("p", "q", (Task(gpu=1), Task(gpu=3), Task(gpu=2))),),
    )
    ssn = Session(snapshot, Placement())
    ssn.open()
    room = PreemptorRoom.of(_preemptor(ssn), dict(ssn.nodes), set())
    assert room is not None
    assert room.task.req.gpus == 3
