"""Properties over random clusters: nothing is over capacity, gates hold, the node index orders like KAI."""

from __future__ import annotations

from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement import Job, Node, Placement, Queue, QueueResource, Result, Snapshot, Task, simulate
from placement.node_order import exhaustive_order, ordered_nodes
from placement.session import Session

UNLIMITED = QueueResource(-1, -1, 1)
PLACED = ("Binding", "Running", "Releasing")


@st.composite
def tasks(draw: st.DrawFn) -> Task:
    kind = draw(st.sampled_from(["whole", "fraction", "memory", "cpu"]))
    cpu = draw(st.sampled_from([500, 1000, 4000]))
    if kind == "whole":
        return Task(gpu=draw(st.integers(1, 4)), cpu_millis=cpu)
    if kind == "fraction":
        devices = draw(st.sampled_from([1, 1, 1, 2]))
        return Task(gpu_fraction=draw(st.sampled_from([0.1, 0.25, 0.5, 0.7])), gpu_devices=devices, cpu_millis=cpu)
    if kind == "memory":
        return Task(gpu_memory_mib=draw(st.sampled_from([10, 33, 50, 90])), cpu_millis=cpu)
    return Task(cpu_millis=cpu)


@st.composite
def snapshots(draw: st.DrawFn, preemptible_only: bool = False) -> Snapshot:
    nodes = tuple(
        Node(f"n{i}", gpus=draw(st.integers(0, 8)), cpu_millis=draw(st.sampled_from([8000, 64000])))
        for i in range(draw(st.integers(1, 5)))
    )
    queues = []
    for i in range(draw(st.integers(1, 3))):
        quota = draw(st.sampled_from([0, 1, 2, 4, -1]))
        limit = draw(st.sampled_from([-1, 1, 2, 4, 8]))
        queues.append(Queue(f"q{i}", gpu=QueueResource(quota, limit, draw(st.sampled_from([0, 1, 2])))))
    jobs = []
    for j in range(draw(st.integers(1, 12))):
        task = draw(tasks())
        count = draw(st.integers(1, 4))
        priority = 50 if preemptible_only else draw(st.sampled_from([50, 100, 125]))
        jobs.append(
            Job(
                f"j{j}",
                f"q{draw(st.integers(0, len(queues) - 1))}",
                (task,) * count,
                priority=priority,
                min_member=draw(st.integers(1, count)),
            )
        )
    return Snapshot(nodes, tuple(queues), tuple(jobs))


def _task_specs(snapshot: Snapshot) -> dict[str, Task]:
    return {f"{job.name}-{i}": t for job in snapshot.jobs for i, t in enumerate(job.tasks)}


def _assert_within_node_capacity(snapshot: Snapshot, result: Result) -> None:
    specs = _task_specs(snapshot)
    nodes = {n.name: n for n in snapshot.nodes}
    whole: dict[str, int] = defaultdict(int)
    cpu: dict[str, int] = defaultdict(int)
    for name, task in result.tasks.items():
        if task.status in PLACED:
            spec = specs[name]
            cpu[task.node] += spec.cpu_millis  # type: ignore[index]
            if not task.gpu_groups:
                whole[task.node] += spec.gpu  # type: ignore[index]
    for name, node in result.nodes.items():
        shared = [d for d in node.devices if d.shared]
        assert whole[name] + len(shared) <= nodes[name].gpus, name
        assert cpu[name] <= nodes[name].cpu_millis, name
        for device in shared:
            assert device.used <= 1 + 1e-9, (name, device)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(), st.integers(1, 3), st.sampled_from(["binpack", "spread"]))
def test_no_node_is_ever_over_capacity(snapshot: Snapshot, rounds: int, node_strategy: str) -> None:
    placement = Placement(node_strategy, "pack" if node_strategy == "binpack" else "spread")
    result = simulate(snapshot, rounds=rounds, placement=placement)
    _assert_within_node_capacity(snapshot, result)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(), st.integers(1, 3))
def test_allocate_respects_queue_limits_and_non_preemptible_quota(snapshot: Snapshot, rounds: int) -> None:
    result = simulate(snapshot, actions=["allocate"], rounds=rounds)
    for spec in snapshot.queues:
        q = result.queues[spec.name]
        if spec.gpu.limit != -1:
            assert q.allocated.gpu <= spec.gpu.limit + 1e-9, spec.name
        if spec.gpu.quota != -1:
            assert q.allocated_non_preemptible.gpu <= spec.gpu.quota + 1e-9, spec.name


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots())
def test_gang_pods_are_placed_all_or_none(snapshot: Snapshot) -> None:
    result = simulate(snapshot, actions=["allocate"])
    for job in snapshot.jobs:
        placed = sum(result.tasks[f"{job.name}-{i}"].status == "Binding" for i in range(len(job.tasks)))
        assert placed == 0 or placed >= job.gang_size, job.name


def _rerun_with_running(snapshot: Snapshot, result: Result, release_every: int) -> Snapshot:
    """The placed pods as Running (every n-th Releasing), plus one pending probe job per kind."""
    specs = _task_specs(snapshot)
    jobs = []
    for n, (name, task) in enumerate(result.tasks.items()):
        if task.status in PLACED and task.node is not None:
            state = "Releasing" if release_every and n % release_every == 0 else "Running"
            running = Task(
                gpu=specs[name].gpu,
                gpu_fraction=specs[name].gpu_fraction,
                gpu_memory_mib=specs[name].gpu_memory_mib,
                gpu_devices=specs[name].gpu_devices,
                cpu_millis=specs[name].cpu_millis,
                state=state,
                node=task.node,
                gpu_groups=task.gpu_groups,
            )
            jobs.append(Job(f"r{n}", snapshot.queues[0].name, (running,)))
    probes = (
        Task(gpu=1),
        Task(gpu=2),
        Task(gpu_fraction=0.3),
        Task(gpu_memory_mib=60),
        Task(gpu_fraction=0.5, gpu_devices=2),
    )
    jobs += [Job(f"probe{i}", snapshot.queues[0].name, (t,)) for i, t in enumerate(probes)]
    return Snapshot(snapshot.nodes, snapshot.queues, tuple(jobs))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(), st.sampled_from([0, 2, 3]), st.sampled_from([("binpack", "pack"), ("binpack", "spread")]))
def test_indexed_node_order_equals_kai_scores(
    snapshot: Snapshot, release_every: int, strategy: tuple[str, str]
) -> None:
    placement = Placement(*strategy)
    first = simulate(snapshot, actions=["allocate"], placement=placement)
    ssn = Session(_rerun_with_running(snapshot, first, release_every), placement)
    ssn.open()
    for i in range(5):
        task = ssn.jobs[f"probe{i}"].tasks[0]
        fast = [n.name for n in ordered_nodes(ssn, task)]
        exact = [n.name for n in exhaustive_order(ssn, task, ssn.node_list) if n.fits(task, releasing=True)]
        assert fast == exact, task.req
