"""The solver skips scenarios that cannot free enough GPUs (KAI's AccumulatedIdleGpus filter).

Tables restate kai-scheduler/KAI-Scheduler@v0.17.0:pkg/scheduler/actions/common/solvers/
accumulated_scenario_filters/idle_gpus/idle_gpus_test.go (Test_greedyMatchRequirements,
TestAccumulatedIdleGpus_updateWithVictim, TestAccumulatedIdleGpus_Filter). The filter is applied before
every scenario by pod_scenario_builder.go (GetValidScenario) at the same tag.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from placement_testlib import run, scenario
from test_placement_solver_order import busy_clusters

from placement import Placement, Snapshot, solver
from placement.idle_gpus_filter import (
    AccumulatedIdleGpus,
    _idle_gpu_capacity,
    _releasing_gpu_capacity,
    greedy_match,
    idle_gpu_capacity,
    releasing_gpu_capacity,
)
from placement.session import Session
from placement.statement import Statement
from placement.tasks import ACTIVE_ALLOCATED

GREEDY = [
    # name, requirements (largest first), holder capacities (largest first), matched
    ("empty requirements always match", [], [1.0], True),
    ("zero requirements are skipped", [0, 0], [], True),
    ("single requirement matched to holder", [0.5], [1.0], True),
    ("single requirement exceeds holder capacity", [0.5], [0.0], False),
    ("virtual allocation prevents double-use of same holder", [1.0, 0.5], [1.0], False),
    ("bin-packing: two requirements fit in one holder", [1.0, 0.5], [1.5], True),
    ("second holder used after first is saturated", [1.0, 1.0], [2.0, 1.0], True),
    ("early termination: best holder below requirement", [2.0], [1.0], False),
]


@pytest.mark.parametrize(("name", "required", "capacities", "matched"), GREEDY, ids=[g[0] for g in GREEDY])
def test_greedy_match_follows_kai_first_fit(
    name: str, required: list[float], capacities: list[float], matched: bool
) -> None:
    assert greedy_match(required, capacities) is matched


@dataclass
class _Req:
    requirement_gpus: float  # GpuRequirement.GetGpusQuota()
    share_mig_gpus: float = 0.0  # MIG devices beside a share: in its accepted vector, not its requirement


@dataclass
class _Task:
    name: str
    node: str
    accepted: tuple[float, float, float]
    req: _Req


def _pending(*gpus: float) -> list[_Task]:
    return [_Task(f"p{i}", "", (0.0, 0.0, 0.0), _Req(g)) for i, g in enumerate(gpus)]


def _victim(name: str, node: str, gpus: float) -> _Task:
    return _Task(name, node, (0.0, 0.0, gpus), _Req(gpus))


UPDATES = [
    # name, capacities, pending pods (N = how many nodes are kept), victim (node, GPUs), kept capacities
    ("new victim update", {"n1": 1.0, "n2": 2.0}, 1, ("n1", 2.0), [3.0]),
    ("do not update maxFreeGpu nodes", {"n1": 1.0, "n2": 5.0}, 1, ("n1", 2.0), [5.0]),
    ("new victim - middle of max free gpu list", {"n1": 1.0, "n2": 2.0, "n3": 5.0, "n4": 2.0}, 3, ("n1", 2.0),
     [5.0, 3.0, 2.0]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "caps", "n", "victim", "kept"), UPDATES, ids=[u[0] for u in UPDATES])
def test_a_victim_raises_its_node_into_the_best_n(
    name: str, caps: dict[str, float], n: int, victim: tuple[str, float], kept: list[float]
) -> None:
    gpus = AccumulatedIdleGpus(dict(caps), _pending(*([1.0] * n)))  # type: ignore[arg-type]
    gpus.add_victims([_victim("v", *victim)])  # type: ignore[list-item]
    assert sorted(gpus.top.values(), reverse=True) == kept


def test_a_victim_is_counted_once_however_often_it_is_seen() -> None:
    gpus = AccumulatedIdleGpus({"n1": 6.0, "n2": 8.0}, _pending(10, 8, 2))  # type: ignore[arg-type]
    twice = [_victim("v", "n1", 3.0), _victim("v", "n1", 3.0)]
    gpus.add_victims(twice)  # type: ignore[arg-type]
    gpus.add_victims(twice)  # type: ignore[arg-type]
    assert gpus.capacity["n1"] == 9.0


def test_a_pod_without_a_node_frees_nothing() -> None:
    gpus = AccumulatedIdleGpus({"n1": 1.0}, _pending(2))  # type: ignore[arg-type]
    gpus.add_victims([_victim("v", "", 4.0)])  # type: ignore[list-item]
    assert not gpus.passes()


FILTER = [
    # Two nodes, pending pods of 10, 8 and 2 GPUs; a recorded and a potential victim of 3 GPUs on n1.
    ("exact amount of GPUs after removing potential victim - valid scenario", 9.0, True),
    ("insufficient amount of GPUs for largest job - invalid scenario", 6.0, False),
]


@pytest.mark.parametrize(("name", "n1", "valid"), FILTER, ids=[f[0] for f in FILTER])
def test_a_scenario_passes_when_its_victims_free_enough(name: str, n1: float, valid: bool) -> None:
    # KAI's table starts from capacities that already count the recorded victim (3 GPUs on n1).
    gpus = AccumulatedIdleGpus({"n1": n1, "n2": 8.0}, _pending(10, 8, 2))  # type: ignore[arg-type]
    gpus.add_victims([_victim("potential", "n1", 3.0)])  # type: ignore[list-item]
    assert gpus.passes() is valid


def test_gpu_memory_victims_free_their_accepted_share() -> None:
    # A gpu-memory pod holds the fraction of a GPU its memory is worth on that node (setAcceptedResources).
    gpus = AccumulatedIdleGpus({"n1": 0.5}, _pending(1))  # type: ignore[arg-type]
    gpus.add_victims([_victim("mem", "n1", 0.5)])  # type: ignore[list-item]
    assert gpus.passes()


def test_gpu_memory_requests_need_no_capacity_in_the_filter() -> None:
    # A pending gpu-memory pod's GetGpusQuota is 0: the filter lets it through (the simulation decides).
    assert AccumulatedIdleGpus({"n1": 0.0}, _pending(0)).passes()  # type: ignore[arg-type]


# One 4-GPU pod reclaims from a queue whose 1-GPU jobs are spread over four nodes, youngest job on the
# node after the previous one's: a node has 4 GPUs releasing only after 13 victims.
SPREAD = {
    "name": "idle-gpus-filter",
    "actions": ["reclaim"],
    "nodes": [{"name": f"node{i}", "gpus": 4} for i in range(4)],
    "queues": [
        {"name": "a", "gpu": {"quota": 0, "limit": -1, "overQuotaWeight": 1}, **{r: {"quota": -1, "limit": -1,
         "overQuotaWeight": 1} for r in ("cpu", "memory")}},
        {"name": "b", "gpu": {"quota": 4, "limit": -1, "overQuotaWeight": 1}, **{r: {"quota": -1, "limit": -1,
         "overQuotaWeight": 1} for r in ("cpu", "memory")}},
    ],
    "jobs": [
        {"name": f"run{i:02d}", "queue": "a", "priority": 50, "gpu": 1, "ageSeconds": 16 - i,
         "tasks": [{"state": "Running", "node": f"node{i % 4}"}]}
        for i in range(16)
    ]
    + [{"name": "want4", "queue": "b", "priority": 50, "gpu": 4, "tasks": 1}],
}  # fmt: skip


def _tries(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = solver.JobSolver._simulate

    def counting(self: solver.JobSolver, *args: object) -> object:
        calls.append(1)
        return original(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(solver.JobSolver, "_simulate", counting)
    return calls


def _outcome(doc: dict[str, object]) -> dict[str, tuple[str, str | None]]:
    result = run(doc)
    return {name: (t.status, t.node) for name, t in result.tasks.items()}


def test_scenarios_that_cannot_free_enough_gpus_are_not_simulated(monkeypatch: pytest.MonkeyPatch) -> None:
    tries = _tries(monkeypatch)
    outcome = _outcome(SPREAD)
    assert outcome["want4-0"][0] == "Pipelined"
    # Only the scenario with four victims on one node is simulated, then once more with them recorded
    # (the solver's closing probe of all the job's pods, here the same single pod).
    assert len(tries) == 2


def test_the_filter_changes_which_scenarios_run_not_the_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    filtered = _outcome(SPREAD)
    tries = _tries(monkeypatch)
    monkeypatch.setattr(AccumulatedIdleGpus, "passes", lambda self: True)
    unfiltered = _outcome(SPREAD)
    assert unfiltered == filtered
    assert len(tries) > 1


def test_first_fit_is_kais_estimate_not_an_exact_packing() -> None:
    # 5+3+2 and 4+3+3 fill two 10-GPU nodes, but first fit puts 5 and 4 together and strands the 2.
    assert not greedy_match([5, 4, 3, 3, 3, 2], [10, 10])


def _spread_session() -> Session:
    s = scenario(SPREAD)
    ssn = Session(s.snapshot, s.placement)
    ssn.open()
    return ssn


def test_the_session_gpu_room_follows_a_committed_eviction() -> None:
    ssn = _spread_session()
    assert ssn.gpu_room()["node0"] == (0.0, 0.0)
    stmt = Statement(ssn)
    stmt.evict(ssn.jobs["run00"].tasks[0])
    stmt.commit()
    assert ssn.gpu_room()["node0"] == (0.0, 1.0)


def test_the_session_gpu_room_is_unchanged_by_a_discarded_search() -> None:
    ssn = _spread_session()
    before = dict(ssn.gpu_room())
    stmt = Statement(ssn)
    stmt.evict(ssn.jobs["run00"].tasks[0])
    stmt.discard()
    ssn.rebuild()  # recomputed from the pods, as a new cycle would
    assert ssn.gpu_room() == before


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_clusters(), st.lists(st.integers(0, 100), min_size=1, max_size=8), st.integers(0, 8))
def test_cached_node_capacities_follow_every_eviction_and_rollback(
    snapshot: Snapshot, picks: list[int], keep: int
) -> None:
    ssn = Session(snapshot, Placement())
    ssn.open()
    running = [t for j in ssn.jobs.values() for t in j.tasks if t.status in ACTIVE_ALLOCATED and t.node]

    def check() -> None:
        for node in ssn.node_list:
            cached = (idle_gpu_capacity(node), releasing_gpu_capacity(node))
            assert cached == (_idle_gpu_capacity(node), _releasing_gpu_capacity(node))

    check()  # fills the caches, so what follows reads them after each change
    stmt = Statement(ssn)
    checkpoints = []
    for pick in picks:
        if not running:
            return
        task = running[pick % len(running)]
        if task.status in ACTIVE_ALLOCATED:
            checkpoints.append(stmt.checkpoint())
            stmt.evict(task)
            check()
    stmt.rollback(checkpoints[min(keep, len(checkpoints) - 1)] if checkpoints else 0)
    check()
    stmt.discard()
    check()
