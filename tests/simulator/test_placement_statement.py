"""Statements roll back to the earlier node state, shared GPUs a discarded placement opened included.

A solver tries thousands of scenarios on one session and rolls each back. On a cluster of running pods the
rollback is exact. KAI's shared-GPU accounting is not an exact inverse everywhere, though, and the
simulator keeps its quirks: evicting a pipelined pod on a shared GPU and undoing it leaves that GPU in the
allocated-memory map at 0 (the last test). So a failed simulation can leave a trace on later ones, in KAI
as here, and scenarios cannot be simulated independently of the ones tried before them.
"""

from __future__ import annotations

from typing import Any

from busy_clusters import busy_clusters, evict_picked, running_session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement import Job, Node, Placement, Queue, Snapshot, Task
from placement.session import Session
from placement.solver import _pipeline_job
from placement.statement import Statement
from placement.tasks import PIPELINED


def _node_state(node: Any) -> tuple[Any, ...]:
    """Everything a node's accounting holds, dict order included (ties between GPUs follow it).

    Releasing memory is compared without groups at 0: undoing an eviction leaves its group there at 0, as
    KAI's map does, and every reader takes a group missing from it for 0.
    """
    return (
        list(node.sh_used.items()),
        list(node.sh_alloc.items()),
        [(g, rel) for g, rel in node.sh_rel.items() if rel],
        sorted(node.sh_marked),
        node.n_used_shared,
        (node.idle_gpus, node.rel_gpus, node.used_gpus),
        (node.idle_cpu, node.rel_cpu, node.idle_mem, node.rel_mem),
        (node.idle_pods, node.rel_pods, node.reserved),
        sorted((name, e.status, tuple(e.groups)) for name, e in node.entries.items()),
    )


def _half_gpu_session(running: bool) -> tuple[Session, Any, Any]:
    """One 2-GPU node, a pending half-GPU pod, and (if `running`) a half-GPU pod already on GPU "0"."""
    jobs = [Job("p", "q", (Task(gpu_fraction=0.5),))]
    if running:
        jobs.append(Job("r", "q", (Task(gpu_fraction=0.5, state="Running", node="n0", gpu_groups=("0",)),)))
    ssn = Session(Snapshot((Node("n0", gpus=2, gpu_memory_mib=1000),), (Queue("q"),), tuple(jobs)), Placement())
    ssn.open()
    return ssn, ssn.nodes["n0"], ssn.jobs["p"].tasks[0]


def test_a_rolled_back_pod_on_a_fresh_shared_gpu_leaves_no_gpu_group_on_the_node() -> None:
    ssn, node, task = _half_gpu_session(running=False)
    stmt = Statement(ssn)
    task.groups = node.fresh_group_ids(1)
    stmt.allocate(task, node)
    assert node.sh_used == {"0": 500}
    stmt.discard()
    assert (node.sh_used, node.sh_alloc, node.sh_rel) == ({}, {}, {})


def test_after_a_rollback_the_next_fresh_shared_gpu_gets_the_label_the_discarded_one_had() -> None:
    ssn, node, task = _half_gpu_session(running=False)
    stmt = Statement(ssn)
    task.groups = node.fresh_group_ids(1)
    stmt.pipeline(task, node, update_if_exists=False)
    stmt.discard()
    assert node.fresh_group_ids(1) == ["0"]


def test_a_rolled_back_pod_on_a_shared_gpu_in_use_leaves_that_gpu_group_in_place() -> None:
    ssn, node, task = _half_gpu_session(running=True)
    before = _node_state(node)
    stmt = Statement(ssn)
    task.groups = ["0"]
    stmt.allocate(task, node)
    stmt.discard()
    assert _node_state(node) == before


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_clusters(), st.lists(st.integers(0, 100), min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_on_running_pods_evicting_and_re_placing_victims_then_discarding_restores_every_node_exactly(
    snapshot: Snapshot, picks: list[int], rnd: Any
) -> None:
    ssn, running = running_session(snapshot)
    if not running:
        return
    before = {name: _node_state(node) for name, node in ssn.nodes.items()}
    stmt, victims = evict_picked(ssn, running, picks)
    rnd.shuffle(victims)
    pending = [j for j in ssn.jobs.values() if j.has_pending()]
    for job in [*victims, *pending[:3]]:
        _pipeline_job(ssn, stmt, job, dict(ssn.nodes))
    stmt.discard()
    assert {name: _node_state(node) for name, node in ssn.nodes.items()} == before


def test_undoing_the_eviction_of_a_pipelined_shared_pod_leaves_its_gpu_in_the_allocated_map_at_0() -> None:
    # KAI@v0.17.0 pkg/scheduler/api/node_info/gpu_sharing_node_info.go: adding a Releasing pod does
    # AllocatedSharedGPUsMemory[group] += (:95), removing it -= (:170); a Pipelined pod never touches that map
    # (:107-112, :187-198). EnoughIdleResourcesOnGpu (:369-375) reads a group missing from it as pipelined.
    ssn, node, task = _half_gpu_session(running=False)
    task.groups, task.node = ["0"], node.name
    node.add(task, PIPELINED, ["0"])
    ssn.set_status(task, PIPELINED)
    assert "0" not in node.sh_alloc
    assert not node.enough_idle_on_group(0, "0")
    stmt = Statement(ssn)
    stmt.evict(task)
    stmt.discard()
    assert node.sh_alloc == {"0": 0}
    assert node.enough_idle_on_group(0, "0")


def test_undoing_a_shared_pod_s_move_to_a_fresh_gpu_gives_it_back_its_gpu_group() -> None:
    # KAI@v0.17.0 pkg/scheduler/framework/statement.go: Pipeline keeps previousGpuGroup (:265) and
    # unpipeline puts it back (:477). Here the fresh group is also forgotten, so its label is free again.
    running = Task(gpu_fraction=0.5, state="Running", node="n0", gpu_groups=("a",))
    ssn = Session(
        Snapshot((Node("n0", gpus=2, gpu_memory_mib=1000),), (Queue("q"),), (Job("v", "q", (running,)),)),
        Placement(),
    )
    ssn.open()
    node, task = ssn.nodes["n0"], ssn.jobs["v"].tasks[0]
    stmt = Statement(ssn)
    stmt.evict(task)
    mark = stmt.checkpoint()
    task.groups = node.fresh_group_ids(1)
    stmt.pipeline(task, node, update_if_exists=False)
    stmt.rollback(mark)
    assert task.groups == ["a"]
    assert node.entries[task.name].groups == ["a"]
