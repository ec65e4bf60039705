"""The eviction solver searches as KAI v0.17.0 does (since v0.16.0): probes of k = 1, 2, 4, ... pods then
bisection, a closing probe of every pod, two scenario generators in turn, failed scenarios not simulated
twice, and the topology-aware idle-GPU filter.

Upstream (kai-scheduler/KAI-Scheduler@v0.17.0): pkg/scheduler/actions/common/solvers/job_solver.go
(searchMaxSolvableK, probeAtK), job_solver_result_test.go, scenario_fingerprint.go, sub_scenario_emitter.go,
pod_scenario_builder.go, pkg/scheduler/plugins/nodelocalgreedy/generator.go (+ generator_test.go),
pkg/scheduler/plugins/multinodegang/generator.go, accumulated_scenario_filters/idle_gpus/
topology_aware_idle_gpus.go (+ _test.go). The worked examples are the ones docs/kai-solver-v0.17.md derives.
"""

from __future__ import annotations

from typing import Any

import pytest
from placement_testlib import queue, run, scenario

from placement import solver
from placement.scenario_builder import ScenarioBuilder
from placement.scenario_generators import MultiNodeGang, NodeLocalGreedy, sub_scenarios
from placement.session import Session
from placement.topology_filter import TopologyIdleGpus
from placement.victim_scenario import PartialJob, Scenario
from placement.victims_order import VictimJob, VictimsOrder

# ---- the search over k ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "solvable", "probes", "found"),
    [
        (1, 1, [1], 1),
        (1, 0, [1], 0),
        (3, 3, [1, 2, 3], 3),  # TestSolveWithResultRunsCompletePartialSearch...: second:1, second:2, second:3
        (11, 11, [1, 2, 4, 8, 11], 11),  # preempt_gang_full_drain_test.go: "probes k = 1, 2, 4, 8 (capped at n=11)"
        (10, 5, [1, 2, 4, 8, 6, 5], 5),
        (10, 9, [1, 2, 4, 8, 10, 9], 9),
        (10, 0, [1], 0),
    ],
)
def test_k_is_probed_by_doubling_then_bisection(n: int, solvable: int, probes: list[int], found: int) -> None:
    asked: list[int] = []

    def probe(k: int) -> bool:
        asked.append(k)
        return k <= solvable

    assert solver.max_solvable_k(n, probe) == found
    assert asked == probes


def _probes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    calls: list[tuple[str, int]] = []
    original = solver.JobSolver._probe

    def recording(self: solver.JobSolver, generator: Any, hints: Any, job: Any, tasks: Any) -> Any:
        calls.append((generator.name, len(tasks)))
        return original(self, generator, hints, job, tasks)

    monkeypatch.setattr(solver.JobSolver, "_probe", recording)
    return calls


def _simulations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = solver.JobSolver._simulate

    def counting(self: solver.JobSolver, *args: Any) -> Any:
        calls.append(1)
        return original(self, *args)

    monkeypatch.setattr(solver.JobSolver, "_simulate", counting)
    return calls


def _statuses(doc: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {name: (t.status, t.node) for name, t in run(doc).tasks.items()}


def _running(name: str, node: str, priority: int, gpu: float = 1, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "queue": "q",
        "priority": priority,
        "gpu": gpu,
        "tasks": [{"state": "Running", "node": node}],
    } | extra


# Four 1-GPU victims on four 1-GPU nodes, then a 2-GPU victim on a 2-GPU node (victim order: lowest
# priority first); a build job of four 1-GPU pods preempts.
DOUBLING = {
    "name": "k-doubling",
    "actions": ["preempt"],
    "nodes": [{"name": f"n{i}", "gpus": 1} for i in range(1, 5)] + [{"name": "n5", "gpus": 2}],
    "queues": [queue("q", {"quota": 20, "limit": -1, "overQuotaWeight": 1})],
    "jobs": [_running(f"v{i}", f"n{i}", 10 * i) for i in range(1, 5)]
    + [_running("w", "n5", 45, gpu=2), {"name": "p", "queue": "q", "priority": 100, "gpu": 1, "tasks": 4}],
}


def test_a_doubled_probe_starts_from_the_last_solved_victims(monkeypatch: pytest.MonkeyPatch) -> None:
    # k=1 takes v1, k=2 adds v2; k=4 starts from {v1, v2} and one node-local step must free two GPUs:
    # v3 alone is filtered, v4's node frees one, w's node frees two. Probing k = 3 and 4 one at a time
    # (KAI before v0.16) evicted v1..v4 instead.
    probes = _probes(monkeypatch)
    outcome = _statuses(DOUBLING)
    assert probes == [("NodeLocalGreedy", 1), ("NodeLocalGreedy", 2), ("NodeLocalGreedy", 4), ("NodeLocalGreedy", 4)]
    assert {name: status for name, (status, _) in outcome.items() if not name.startswith("p-")} == {
        "v1-0": "Releasing",
        "v2-0": "Releasing",
        "v3-0": "Running",
        "v4-0": "Running",
        "w-0": "Releasing",
    }
    assert {outcome[f"p-{i}"][0] for i in range(4)} == {"Pipelined"}


# A gang of two 1-GPU pods that must share a rack. Rack A: a1 holds the first victim, a2 a job that may not
# be preempted; rack B: one victim on each node.
RACKS = {
    "name": "multi-node-gang",
    "actions": ["preempt"],
    "topologies": [{"name": "t", "levels": [{"nodeLabel": "rack"}]}],
    "nodes": [
        {"name": "a1", "gpus": 1, "labels": {"rack": "A"}},
        {"name": "a2", "gpus": 1, "labels": {"rack": "A"}},
        {"name": "b1", "gpus": 1, "labels": {"rack": "B"}},
        {"name": "b2", "gpus": 1, "labels": {"rack": "B"}},
    ],
    "queues": [queue("q", {"quota": 20, "limit": -1, "overQuotaWeight": 1})],
    "jobs": [
        _running("va", "a1", 10),
        _running("vb1", "b1", 20),
        _running("vb2", "b2", 30),
        _running("keep", "a2", 100),
        {
            "name": "p",
            "queue": "q",
            "priority": 100,
            "gpu": 1,
            "tasks": 2,
            "topologyConstraint": {"topology": "t", "requiredTopologyLevel": "rack"},
        },
    ],
}


def test_the_multi_node_generator_solves_what_node_local_scenarios_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    # Node-local scenarios free one rack-B node at a time next to the recorded va: never two GPUs in one
    # rack. The multi-node generator starts over and evicts both rack-B victims in one scenario.
    probes = _probes(monkeypatch)
    outcome = _statuses(RACKS)
    assert probes == [
        ("NodeLocalGreedy", 1),
        ("NodeLocalGreedy", 2),
        ("NodeLocalGreedy", 2),
        ("MultiNodeGang", 1),
        ("MultiNodeGang", 2),
        ("MultiNodeGang", 2),
    ]
    assert {outcome["p-0"], outcome["p-1"]} == {("Pipelined", "b1"), ("Pipelined", "b2")}
    assert outcome["vb1-0"] == ("Releasing", "b1")
    assert outcome["keep-0"] == ("Running", "a2")


def test_a_failed_scenario_is_not_simulated_again_for_the_same_job(monkeypatch: pytest.MonkeyPatch) -> None:
    # The closing probe of all pods repeats the k=2 probe's node-local scenarios, which already failed.
    deduplicated = _simulations(monkeypatch)
    expected = _statuses(RACKS)
    monkeypatch.undo()
    every = _simulations(monkeypatch)
    monkeypatch.setattr(Scenario, "fingerprint", lambda self: (object(),))
    assert _statuses(RACKS) == expected
    assert len(every) > len(deduplicated)


# ---- the generators over an accumulated victim set -----------------------------------------------------


def _session(nodes: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> Session:
    doc = {"name": "g", "nodes": nodes, "queues": [queue("q", {"quota": 20, "limit": -1, "overQuotaWeight": 1})]}
    s = scenario({**doc, "jobs": jobs})
    ssn = Session(s.snapshot, s.placement)
    ssn.open()
    return ssn


def _builder(ssn: Session, victims: list[str], recorded: list[str] = (), pending: str = "p") -> ScenarioBuilder:  # type: ignore[assignment]
    job = ssn.jobs[pending]
    # A victim order over exactly these jobs, popped in the listed order (their priorities rise).
    order = VictimsOrder(ssn, [ssn.jobs[v] for v in victims])
    feasible = {n.name: n for n in solver.feasible_nodes(ssn, job)}
    chunks = [VictimJob(ssn.jobs[r], list(ssn.jobs[r].tasks)) for r in recorded]
    for chunk in chunks:  # as the solver does: recorded victims' nodes are feasible
        feasible.update((t.node, ssn.nodes[t.node]) for t in chunk.tasks if t.node)
    return ScenarioBuilder(ssn, PartialJob(job, job.tasks_to_allocate(real=False)), chunks, order, feasible)


def _emitted(generator: NodeLocalGreedy | MultiNodeGang) -> list[tuple[list[str], list[str]]]:
    out = []
    while (sn := generator.next()) is not None:
        out.append((sorted(t.name for t in sn.recorded_tasks), sorted(t.name for t in sn.potential_tasks)))
    return out


def _pending(name: str, pods: int = 1, gpu: float = 1) -> dict[str, Any]:
    return {"name": name, "queue": "q", "priority": 100, "gpu": gpu, "tasks": pods}


def test_node_local_emits_the_recorded_victims_alone_first() -> None:
    ssn = _session(
        [{"name": "n1", "gpus": 1}, {"name": "n2", "gpus": 1}],
        [_running("rec", "n1", 10), _running("vic", "n2", 20), _pending("p")],
    )
    generator = NodeLocalGreedy(_builder(ssn, ["vic"], recorded=["rec"]))
    assert _emitted(generator) == [(["rec-0"], []), (["rec-0"], ["vic-0"])]


def test_node_local_keeps_a_gang_victim_whole_across_its_nodes() -> None:
    gang = {"name": "gang", "queue": "q", "priority": 10, "gpu": 1, "minMember": 2, "tasks": [
        {"state": "Running", "node": "n1"}, {"state": "Running", "node": "n2"}]}  # fmt: skip
    ssn = _session([{"name": "n1", "gpus": 1}, {"name": "n2", "gpus": 1}], [gang, _pending("p")])
    # One scenario per node of the newest victim, the same pods for both: emitted once.
    assert _emitted(NodeLocalGreedy(_builder(ssn, ["gang"]))) == [([], ["gang-0", "gang-1"])]


def test_node_local_skips_accumulated_sets_the_idle_gpu_filter_rejects() -> None:
    # TestNodeLocalGreedyFiltersInsufficientAccumulatedScenarios: two 1-GPU pods pending; {small} frees one
    # GPU and is not simulated; {small, large} is, as the node-local scenario of large's node.
    large = {"name": "large", "queue": "q", "priority": 20, "gpu": 1, "minMember": 2, "tasks": [
        {"state": "Running", "node": "n2"}, {"state": "Running", "node": "n2"}]}  # fmt: skip
    ssn = _session(
        [{"name": "n1", "gpus": 1}, {"name": "n2", "gpus": 2}],
        [_running("small", "n1", 10), large, _pending("p", pods=2)],
    )
    assert _emitted(NodeLocalGreedy(_builder(ssn, ["small", "large"]))) == [([], ["large-0", "large-1"])]


def test_multi_node_offers_the_recorded_victims_alone_first_then_grows() -> None:
    ssn = _session(
        [{"name": "n1", "gpus": 1}, {"name": "n2", "gpus": 1}],
        [_running("rec", "n1", 10), _running("vic", "n2", 20), _pending("p")],
    )
    generator = MultiNodeGang(_builder(ssn, ["vic"], recorded=["rec"]))
    # The recorded victim already covers the pod (baseline), so the first sub-scenario picks no node.
    assert _emitted(generator) == [(["rec-0"], []), (["rec-0"], []), (["rec-0"], ["vic-0"])]


def _base(ssn: Session, victims: list[str], pending: str = "p") -> Scenario:
    job = ssn.jobs[pending]
    base = Scenario(PartialJob(job, job.tasks_to_allocate(real=False)), job.tasks_to_allocate(real=False), [])
    for name in victims:
        base.add_potential(ssn.jobs[name], list(ssn.jobs[name].tasks))
    return base


def _sub_victims(ssn: Session, base: Scenario, feasible: list[str]) -> list[list[str]]:
    nodes = {name: ssn.nodes[name] for name in feasible}
    return [sorted(t.name for t in sub.potential_tasks) for sub in sub_scenarios(ssn, base, nodes)]


def test_sub_scenarios_grow_by_one_two_four_nodes_up_to_all() -> None:
    ssn = _session([{"name": f"n{i}", "gpus": 1} for i in range(6)], [
        *(_running(f"v{i}", f"n{i}", 10 + i) for i in range(6)), _pending("p")])  # fmt: skip
    subs = _sub_victims(ssn, _base(ssn, [f"v{i}" for i in range(6)]), [])
    assert [len(s) for s in subs] == [1, 2, 4, 6]
    # Equal room: nodes go in the order their victims were added.
    assert subs[:2] == [["v0-0"], ["v0-0", "v1-0"]]


def _mixed() -> Session:
    """n0: a 2-GPU victim; n1: a 1-GPU victim; n2: a half-GPU victim beside a half-GPU pod that stays;
    n3: one idle GPU and no victim. Two 1-GPU pods pending."""
    keep = {"name": "keep", "queue": "q", "priority": 100, "gpuFraction": 0.5, "tasks": [
        {"state": "Running", "node": "n2", "gpuGroups": ["0"]}]}  # fmt: skip
    half = {"name": "half", "queue": "q", "priority": 30, "gpuFraction": 0.5, "tasks": [
        {"state": "Running", "node": "n2", "gpuGroups": ["0"]}]}  # fmt: skip
    return _session(
        [{"name": "n0", "gpus": 2}, {"name": "n1", "gpus": 1}, {"name": "n2", "gpus": 1}, {"name": "n3", "gpus": 1}],
        [_running("big", "n0", 10, gpu=2), _running("small", "n1", 20), half, keep, _pending("p", pods=2)],
    )


def test_sub_scenarios_start_from_the_least_room_that_covers_what_idle_nodes_lack() -> None:
    # Pending 2 GPUs; the idle n3 gives 1, so one node with a victim must give the other: n1 (room 1)
    # before n0 (room 2). n2 can give only half a GPU, less than the smallest pod: never picked.
    ssn = _mixed()
    assert _sub_victims(ssn, _base(ssn, ["big", "small", "half"]), ["n3"]) == [["small-0"], ["big-0", "small-0"]]


def test_sub_scenarios_start_larger_without_idle_nodes() -> None:
    ssn = _mixed()
    assert _sub_victims(ssn, _base(ssn, ["big", "small", "half"]), []) == [["big-0", "small-0"]]


# ---- TopologyAwareIdleGpus ------------------------------------------------------------------------------


class _NoMigBesideAShare:
    share_mig_gpus = 0.0


class _Victim:
    def __init__(self, name: str, node: str, gpus: float) -> None:
        self.name, self.node, self.accepted = name, node, (0.0, 0.0, gpus)
        self.req = _NoMigBesideAShare()


KEY = ("topo", "rack")


def _filter(racks: dict[str, dict[str, float]], needs: list[float]) -> TopologyIdleGpus:
    """racks: per rack, per node, idle GPUs."""
    capacity = {KEY: {rack: sum(nodes.values()) for rack, nodes in racks.items()}}
    node_domains = {node: [(KEY, rack)] for rack, nodes in racks.items() for node in nodes}
    return TopologyIdleGpus({KEY: needs}, capacity, node_domains)


@pytest.mark.parametrize(
    ("case", "racks", "needs", "victims", "valid"),
    [
        ("SingleDomainSufficientCapacity", {"rack-1": {"n1": 8, "n2": 8}, "rack-2": {"n3": 4}}, [12], [], True),
        ("NoDomainHasSufficientCapacity", {"r1": {"n1": 4}, "r2": {"n2": 5}, "r3": {"n3": 6}}, [16], [], False),
        ("WithVictimTasks", {"rack-1": {"n1": 4}, "rack-2": {"n2": 4}}, [10], [("v", "n2", 8)], True),
        ("FilterDomainMovesTwoStepsLeft", {"r1": {"n1": 10}, "r2": {"n2": 8}, "r3": {"n3": 6}}, [11],
         [("v", "n3", 5)], True),
        ("FragmentedCapacityRejected", {"rack-1": {"n1": 10}, "rack-2": {"n2": 9}}, [8, 8, 3], [], False),
    ],
)  # fmt: skip
def test_a_required_level_needs_a_domain_with_room(
    case: str,
    racks: dict[str, dict[str, float]],
    needs: list[float],
    victims: list[tuple[str, str, float]],
    valid: bool,
) -> None:
    f = _filter(racks, needs)
    f.add_victims([_Victim(*v) for v in victims])  # type: ignore[misc]
    assert f.passes() is valid


def test_a_victim_seen_twice_frees_its_gpus_once() -> None:
    # VictimNotDoubleCountedAcrossFilterCalls: 4 idle + 4 freed = 8 < 10, however often it is offered.
    f = _filter({"rack-1": {"n1": 4}}, [10])
    victim = _Victim("v", "n1", 4)
    for _ in range(2):
        f.add_victims([victim])  # type: ignore[list-item]
        assert not f.passes()


def test_the_filter_reads_subgroup_sets_and_their_placed_pods() -> None:
    # A constrained subgroup set over one pod set: its requirement counts every pod under it in the
    # partial job; a job without a required level gets no filter.
    doc = {
        "name": "t",
        "topologies": [{"name": "t", "levels": [{"nodeLabel": "rack"}]}],
        "nodes": [
            {"name": "a1", "gpus": 4, "labels": {"rack": "A"}},
            {"name": "b1", "gpus": 2, "labels": {"rack": "B"}},
        ],
        "queues": [queue("q")],
        "jobs": [{"name": "p", "queue": "q", "priority": 100, "gpu": 1, "tasks": 3,
                  "topologyConstraint": {"topology": "t", "requiredTopologyLevel": "rack"}},
                 {"name": "free", "queue": "q", "priority": 100, "gpu": 1, "tasks": 1}],
    }  # fmt: skip
    s = scenario(doc)
    ssn = Session(s.snapshot, s.placement)
    ssn.open()
    job = ssn.jobs["p"]
    f = TopologyIdleGpus.for_job(ssn, PartialJob(job, job.tasks_to_allocate(real=False)).tree)
    assert f is not None
    assert f.requirements == {("t", "rack"): [3.0]}
    assert f.capacity == {("t", "rack"): {"A": 4.0, "B": 2.0}}
    assert TopologyIdleGpus.for_job(ssn, ssn.jobs["free"].tree) is None


# ---- which jobs are searched for -------------------------------------------------------------------------


def _solved_jobs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    names: list[str] = []
    original = solver.JobSolver.solve

    def recording(self: solver.JobSolver, job: Any) -> Any:
        names.append(job.name)
        return original(self, job)

    monkeypatch.setattr(solver.JobSolver, "solve", recording)
    return names


@pytest.mark.parametrize(
    ("request_", "searched"),
    [({"gpu": 8}, True), ({"gpu": 9}, False), ({"gpu": 1, "cpu": "65"}, False), ({"gpu": 1, "memory": "2Ti"}, False)],
)
def test_a_pod_larger_than_every_node_is_not_searched_for(
    monkeypatch: pytest.MonkeyPatch, request_: dict[str, Any], searched: bool
) -> None:
    # MaxNodePoolResources fails such a pod whatever is evicted, so preempt skips the job
    # (VictimInvariantPrePredicateFailureForTasks) instead of simulating every victim set.
    names = _solved_jobs(monkeypatch)
    run({
        "name": "too-big",
        "actions": ["preempt"],
        "nodes": [{"name": "n1", "gpus": 8, "cpu": "64", "memory": "1Ti"}],
        "queues": [queue("q", {"quota": 20, "limit": -1, "overQuotaWeight": 1})],
        "jobs": [
            _running("low", "n1", 10, gpu=8),
            {"name": "big", "queue": "q", "priority": 100, "tasks": 1, **request_},
        ],
    })  # fmt: skip
    assert (names == ["big"]) is searched
