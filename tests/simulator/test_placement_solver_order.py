"""The solver's fast orders against the straightforward ones they replace (tests/simulator/reference_orders).

Every simulation of the eviction solver pops a JobsOrder over all pending jobs; the fast order yields
only the victims and the preemptor, and must yield them in exactly the same sequence. The victim order
ranks the queue tree once per pop instead of once per comparison. These tests run both on generated
busy clusters (queue trees, running gangs and shared GPUs, a pending backlog) and compare the outcome.
"""

from __future__ import annotations

from typing import Any

from busy_clusters import FULL_CYCLE, busy_clusters, outcome, placements
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_orders import ReferenceVictimsOrder, reference_orders

from placement import Job, Node, Placement, Queue, QueueResource, Snapshot, Task, simulate, simulation_order
from placement.candidate_nodes import candidate_nodes
from placement.node_order import exhaustive_order, ordered_nodes
from placement.queue_order import JobsOrder
from placement.session import Session
from placement.simulation_order import SimulationOrder
from placement.solver import PartialJob
from placement.statement import Statement
from placement.tasks import ACTIVE_ALLOCATED
from placement.victims_order import VictimJob, VictimsOrder


def _both(snapshot: Snapshot, placement: Placement, rounds: int) -> tuple[Any, Any]:
    fast = simulate(snapshot, actions=FULL_CYCLE, rounds=rounds, placement=placement, settle=False)
    with reference_orders():
        reference = simulate(snapshot, actions=FULL_CYCLE, rounds=rounds, placement=placement, settle=False)
    return outcome(fast), outcome(reference)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshot=busy_clusters(), placement=placements, rounds=st.integers(1, 2))
def test_full_cycle_places_and_evicts_the_same_pods_as_the_full_job_order(
    snapshot: Snapshot, placement: Placement, rounds: int
) -> None:
    fast, reference = _both(snapshot, placement, rounds)
    assert fast == reference


def _evict_some(ssn: Session, picks: list[int]) -> list[Any]:
    """Evict the running pods of some jobs on a statement, as the solver does before a simulation."""
    running = [j for j in ssn.jobs.values() if any(t.status in ACTIVE_ALLOCATED for t in j.tasks)]
    victims = []
    stmt = Statement(ssn)
    for i in picks:
        if running:
            job = running[i % len(running)]
            if job not in victims:
                victims.append(job)
                for task in job.tasks:
                    if task.status in ACTIVE_ALLOCATED:
                        stmt.evict(task)
    return victims


def _sequences(ssn: Session, job: Any, victims: list[Any]) -> tuple[list[str], list[str]]:
    """Victims and preemptor as the full JobsOrder pops them, and as the solver's order does."""
    preemptor = PartialJob(job, job.tasks_to_allocate(real=False))
    interesting = {id(v) for v in victims} | {id(preemptor)}
    candidates = [j for j in ssn.jobs.values() if j is not job and (j in victims or j.has_pending())]
    full = JobsOrder(ssn, [*candidates, preemptor])  # type: ignore[list-item]  # a PartialJob orders like a job
    expected = []
    while (popped := full.pop()) is not None:
        if id(popped) in interesting:
            expected.append(popped.name)
    fast = SimulationOrder(ssn, preemptor, victims)
    actual = []
    while (popped := fast.pop()) is not None:
        actual.append(popped.name)
    return actual, expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_clusters(backlog=40), st.integers(0, 50), st.lists(st.integers(0, 50), max_size=4))
def test_victims_and_preemptor_come_out_in_the_full_job_order_sequence(
    snapshot: Snapshot, preemptor_pick: int, victim_picks: list[int]
) -> None:
    ssn = Session(snapshot, Placement())
    ssn.open()
    pending = [j for j in ssn.jobs.values() if j.has_pending() and j.queue is not None and j.queue.is_leaf]
    if not pending:
        return
    job = pending[preemptor_pick % len(pending)]
    victims = [v for v in _evict_some(ssn, victim_picks) if v is not job]
    actual, expected = _sequences(ssn, job, victims)
    assert actual == expected


def _cyclic_session() -> Session:
    """Top-level queues whose last tie-breaker (allocatable shares, then age) is cyclic: x's share is below
    z's (x < z); y's is incomparable with both, so the older goes first (z < y, y < x). Jobs asking for
    nothing leave every other criterion tied, so the heap's layout alone decides between x and z."""

    def queue(name: str, cpu: int, gpu: int) -> Queue:
        return Queue(name, gpu=QueueResource(gpu, gpu, 1), cpu=QueueResource(cpu, cpu, 1))

    nothing = Task(cpu_millis=0, memory_bytes=0)
    jobs = [
        Job("victim", "x", (Task(cpu_millis=0, memory_bytes=0, state="Running", node="n0"),), priority=50),
        Job("preemptor", "z", (nothing,), priority=100),
        *(Job(f"other{i}", "y", (nothing,), priority=100) for i in range(3)),
    ]
    snapshot = Snapshot(
        (Node("n0", gpus=1),), (queue("z", 2000, 2), queue("y", 3000, 0), queue("x", 1000, 1)), tuple(jobs)
    )
    ssn = Session(snapshot, Placement())
    ssn.open()
    return ssn


def test_a_cyclic_top_level_tie_breaker_is_detected() -> None:
    assert not simulation_order._top_level_ordered(_cyclic_session())


def test_a_cyclic_top_level_tie_breaker_keeps_the_full_job_order_sequence() -> None:
    ssn = _cyclic_session()
    victim = ssn.jobs["victim"]
    stmt = Statement(ssn)
    for task in victim.tasks:
        stmt.evict(task)
    actual, expected = _sequences(ssn, ssn.jobs["preemptor"], [victim])
    assert actual == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_clusters(), st.lists(st.integers(0, 3), max_size=30))
def test_victims_come_out_in_the_reference_victim_order(snapshot: Snapshot, splits: list[int]) -> None:
    ssn = Session(snapshot, Placement())
    ssn.open()
    running = [j for j in ssn.jobs.values() if any(t.status in ACTIVE_ALLOCATED for t in j.tasks)]
    fast, reference = VictimsOrder(ssn, running), ReferenceVictimsOrder(ssn, running)
    sequences: tuple[list[Any], list[Any]] = ([], [])
    for order, sequence in ((fast, sequences[0]), (reference, sequences[1])):
        # The solver puts the rest of an elastic job back after taking part of it.
        for split in splits:
            victim = order.pop()
            if victim is None:
                break
            sequence.append((victim.job.name, [t.name for t in victim.tasks]))
            if 0 < split < len(victim.tasks):
                order.push(VictimJob(victim.job, victim.tasks[split:]))
    assert sequences[0] == sequences[1]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_clusters(), st.integers(0, 50))
def test_candidate_nodes_keep_every_fitting_node_and_the_binpack_score_bounds(snapshot: Snapshot, pick: int) -> None:
    ssn = Session(snapshot, Placement())
    ssn.open()
    pending = [j for j in ssn.jobs.values() if j.has_pending()]
    if not pending:
        return
    tasks = pending[pick % len(pending)].tasks_to_allocate(real=False)
    kept = candidate_nodes(ssn.node_list, tasks)
    fitting = {n.name for n in ssn.node_list if any(n.fits(t, releasing=True) for t in tasks)}
    assert fitting <= {n.name for n in kept}

    def bounds(nodes: list[Any]) -> tuple[int, int]:
        free = [n.nonallocated_gpus() for n in nodes if n.alloc_gpus]
        return (min(free), max(free)) if free else (0, 0)

    assert bounds(kept) == bounds(ssn.node_list)
    for task in tasks:
        order = [n.name for n in exhaustive_order(ssn, task, ssn.node_list) if n.name in fitting]
        assert [n.name for n in exhaustive_order(ssn, task, kept) if n.name in fitting] == order


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_clusters(), st.lists(st.integers(0, 100), min_size=1, max_size=6), st.data())
def test_the_indexed_order_kept_to_a_node_set_is_kai_order_over_that_set(
    snapshot: Snapshot, picks: list[int], data: st.DataObject
) -> None:
    # The solver's simulations rank GPU pods through the node index kept to the feasible nodes
    # (ordered_nodes `within`); KAI ranks over those nodes alone, whose free-GPU bounds differ. Ranks are
    # asked again after each eviction, so ranks remembered per node must follow the node.
    ssn = Session(snapshot, Placement())
    ssn.open()
    probes = [t for j in ssn.jobs.values() for t in j.tasks if t.status == "Pending"]
    running = [t for j in ssn.jobs.values() for t in j.tasks if t.status in ACTIVE_ALLOCATED and t.node]
    stmt = Statement(ssn)
    names = [n.name for n in ssn.node_list]
    for pick in picks:
        if running and running[pick % len(running)].status in ACTIVE_ALLOCATED:
            stmt.evict(running[pick % len(running)])
        within = data.draw(st.sets(st.sampled_from(names)))
        pool = [n for n in ssn.node_list if n.name in within]
        for task in probes:
            fast = [n.name for n in ordered_nodes(ssn, task, within=within)]
            exact = [n.name for n in exhaustive_order(ssn, task, pool) if n.fits(task, releasing=True)]
            assert fast == exact, (task.req.shape, sorted(within))
