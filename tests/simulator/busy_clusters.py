"""Generated busy clusters for the solver's property tests: a queue tree, running work, a pending backlog.

Nodes are mostly full of running pods (whole GPUs, fractions, GPU memory; gangs too), placed by a first
allocate; a pending backlog spreads across the tree, so reclaim, preempt and consolidation have work.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from placement import Job, Node, Placement, Queue, QueueResource, Result, Snapshot, Task, simulate
from placement.session import Session
from placement.statement import Statement
from placement.tasks import ACTIVE_ALLOCATED, JobState

UNLIMITED = QueueResource(-1, -1, 1)
FULL_CYCLE = ("allocate", "consolidation", "reclaim", "preempt")


@st.composite
def _task(draw: st.DrawFn) -> Task:
    kind = draw(st.sampled_from(["whole", "whole", "fraction", "memory"]))
    # Requests differ in CPU too, so queue keys move with the job at a queue's head.
    cpu = draw(st.sampled_from([1000, 1000, 4000]))
    if kind == "whole":
        return Task(gpu=draw(st.integers(1, 4)), cpu_millis=cpu)
    if kind == "fraction":
        return Task(gpu_fraction=draw(st.sampled_from([0.25, 0.5, 0.7])), cpu_millis=cpu)
    return Task(gpu_memory_mib=draw(st.sampled_from([10_000, 20_000])), cpu_millis=cpu)


@st.composite
def _queues(draw: st.DrawFn) -> tuple[list[Queue], list[str]]:
    """Two or three levels; CPU quotas too, so the last tie-breaker (allocatable shares) can be cyclic."""
    queues: list[Queue] = []
    leaves: list[str] = []

    def resource(scale: int) -> QueueResource:
        quota = draw(st.sampled_from([-1, 0, scale, 2 * scale]))
        limit = draw(st.sampled_from([-1, -1, 2 * scale]))
        return QueueResource(quota, limit, draw(st.sampled_from([0, 1, 2])))

    for t in range(draw(st.integers(1, 3))):
        top = f"t{t}"
        queues.append(Queue(top, gpu=resource(4), cpu=draw(st.sampled_from([UNLIMITED, resource(8000)]))))
        children = draw(st.integers(0, 3))
        if not children:
            leaves.append(top)
        for c in range(children):
            name = f"{top}-{c}"
            queues.append(Queue(name, parent=top, priority=draw(st.sampled_from([100, 100, 101])), gpu=resource(2)))
            grandchildren = draw(st.integers(0, 2))
            if not grandchildren:
                leaves.append(name)
            for g in range(grandchildren):
                queues.append(Queue(f"{name}-{g}", parent=name, gpu=resource(1)))
                leaves.append(f"{name}-{g}")
    return queues, leaves


def _jobs(draw: st.DrawFn, prefix: str, leaves: list[str], count: int) -> list[Job]:
    jobs = []
    for j in range(count):
        task = draw(_task())
        n = draw(st.integers(1, 3))
        jobs.append(
            Job(
                f"{prefix}{j}",
                draw(st.sampled_from(leaves)),
                (task,) * n,
                priority=draw(st.sampled_from([50, 50, 100, 125])),
                min_member=draw(st.integers(1, n)),
            )
        )
    return jobs


def _running(snapshot: Snapshot) -> list[Job]:
    """The jobs with the pods a first allocate placed, as Running pods (the pods left unplaced dropped)."""
    result = simulate(snapshot, actions=["allocate"])
    jobs = []
    for job in snapshot.jobs:
        tasks = []
        for i, task in enumerate(job.tasks):
            placed = result.tasks[f"{job.name}-{i}"]
            if placed.status == "Binding":
                tasks.append(
                    Task(
                        gpu=task.gpu,
                        gpu_fraction=task.gpu_fraction,
                        gpu_memory_mib=task.gpu_memory_mib,
                        state="Running",
                        node=placed.node,
                        gpu_groups=placed.gpu_groups,
                    )
                )
        if tasks:
            jobs.append(Job(job.name, job.queue, tuple(tasks), priority=job.priority, min_member=len(tasks)))
    return jobs


@st.composite
def busy_clusters(draw: st.DrawFn, backlog: int = 10) -> Snapshot:
    """Nodes mostly full of running work in a queue tree, and a pending backlog across the tree."""
    nodes = tuple(
        Node(f"n{i}", gpus=draw(st.sampled_from([2, 4, 8])), gpu_memory_mib=draw(st.sampled_from([40_000, 80_000])))
        for i in range(draw(st.integers(1, 4)))
    )
    queues, leaves = draw(_queues())
    first = Snapshot(nodes, tuple(queues), tuple(_jobs(draw, "r", leaves, draw(st.integers(1, 10)))))
    pending = _jobs(draw, "p", leaves, draw(st.integers(1, backlog)))
    return Snapshot(nodes, tuple(queues), (*_running(first), *pending))


placements = st.builds(
    Placement,
    st.just("binpack"),
    st.sampled_from(["pack", "spread"]),
    max_consolidation_preemptees=st.sampled_from([-1, 1, 16]),
    use_scheduling_signatures=st.booleans(),
)


def outcome(result: Result) -> dict[str, tuple[Any, ...]]:
    """Each pod's status, node and GPU groups: what two runs that should agree are compared on."""
    return {name: (t.status, t.node, tuple(t.gpu_groups)) for name, t in result.tasks.items()}


def running_session(snapshot: Snapshot) -> tuple[Session, list[JobState]]:
    """An open session and its jobs with running pods."""
    ssn = Session(snapshot, Placement())
    ssn.open()
    return ssn, [j for j in ssn.jobs.values() if any(t.status in ACTIVE_ALLOCATED for t in j.tasks)]


def evict_picked(ssn: Session, running: list[JobState], picks: list[int]) -> tuple[Statement, list[JobState]]:
    """The running jobs `picks` names (modulo their count) evicted in one statement, as a scenario's victims."""
    stmt = Statement(ssn)
    victims = list(dict.fromkeys(running[p % len(running)] for p in picks))
    for job in victims:
        for task in job.tasks:
            if task.status in ACTIVE_ALLOCATED:
                stmt.evict(task)
    return stmt, victims
