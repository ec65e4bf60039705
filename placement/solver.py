"""The eviction solver shared by reclaim, preempt and consolidation (KAI v0.17's JobSolver).

For a pending job of n pods the solver looks for the largest k whose first k pods can be placed with
evictions: it probes k = 1, 2, 4, ... until a probe fails, then bisects. Each successful probe records its
victims, and the next probe starts from them. With some k solved it probes all n pods; that probe's
statement is the solution. Each generator (placement.scenario_generators: node-local first, then
multi-node) runs this search from scratch until one solves the job.

A probe builds scenarios from victims accumulated in victim order (placement.scenario_builder) and
simulates each: evict its victims, then re-place - on releasing resources only ("pipelined") - the victims
and the pending pods in queue order. The first scenario where the pods fit and the action's validator
accepts the victims is the probe's solution. A scenario that failed is not simulated again for the same
job (KAI's scenario fingerprints).

Upstream: kai-scheduler/KAI-Scheduler@v0.17.0:pkg/scheduler/actions/common/solvers/job_solver.go and
by_pod_solver.go. KAI also bounds the search by time (5 min an action, 4 min a job, 30 s / 2 min per
generator); the simulator bounds it only by --max-seconds, so a search KAI would cut short runs to its
end here (see docs/kai-solver-v0.17.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from placement import simulation_order
from placement.candidate_nodes import candidate_nodes
from placement.nodes import NodeState
from placement.placing import allocate_job
from placement.preemptor_room import FitMemo, PreemptorRoom
from placement.queue_order import JobsOrder
from placement.queues import check_capacity
from placement.scenario_builder import ScenarioBuilder
from placement.scenario_generators import GENERATORS, MultiNodeGang, NodeLocalGreedy
from placement.simulation_order import SimulationOrder
from placement.statement import Statement
from placement.tasks import KIND_FRACTION, KIND_MEMORY, KIND_WHOLE, PIPELINED, RELEASING, JobState, TaskState
from placement.victim_scenario import Fingerprint, PartialJob, Scenario
from placement.victims_order import VictimJob, VictimsOrder

if TYPE_CHECKING:
    from placement.session import Session
    from placement.subgroups import SubGroupSet

__all__ = ["JobSolver", "PartialJob", "Scenario", "feasible_nodes", "max_solvable_k"]

Validator = Callable[[Scenario], bool]
Generator = type[NodeLocalGreedy] | type[MultiNodeGang]
Solution = tuple[Statement, list[TaskState], Scenario]


class _Hints:
    """solvingState: the victims of the last successful probe, which every later probe starts from."""

    def __init__(self) -> None:
        self.jobs: list[VictimJob] = []
        self.tasks: list[TaskState] = []


class JobSolver:
    """Solves one pending job for one action."""

    def __init__(
        self,
        ssn: Session,
        feasible: list[NodeState],
        validator: Validator | None,
        victims: Callable[[], VictimsOrder],
    ) -> None:
        self.ssn = ssn
        self.feasible = feasible
        self.validator = validator
        self.victims = victims
        self.failed: set[Fingerprint] = set()
        self.fits: FitMemo = {}  # PreemptorRoom's verdicts, kept over this solver's simulations

    def solve(self, job: JobState) -> Statement | None:
        """SolveWithResult: a statement ready to commit when the job fits with evictions, else None."""
        original = job.n_active_used
        pending = job.tasks_to_allocate(real=False)
        if not pending:
            return None
        self.failed = set()
        if self.ssn.watch is not None:
            self.ssn.watch.start_job(job.name)
        for generator in GENERATORS:
            solution = self._with_generator(generator, job, pending)
            if solution is not None:
                statement = solution[0]
                satisfied = job.tree.gang_satisfied() if job.tree is not None else job.n_active_used >= job.min_member
                if satisfied and job.n_active_used > original:
                    return statement
                statement.discard()
                return None
            if self.ssn.out_of_time():
                return None
        return None

    def _with_generator(self, generator: Generator, job: JobState, pending: list[TaskState]) -> Solution | None:
        """solvePendingJobWithGenerator: the largest solvable k, then a probe of every pod."""
        hints = _Hints()
        if max_solvable_k(len(pending), lambda k: self._probe_and_discard(generator, hints, job, pending[:k])) == 0:
            return None
        return self._probe(generator, hints, job, pending)

    def _probe_and_discard(self, generator: Generator, hints: _Hints, job: JobState, tasks: list[TaskState]) -> bool:
        """tryProbeAndDiscard: on success the probe's victims become the hints; the state is left as found."""
        solution = self._probe(generator, hints, job, tasks)
        if solution is None:
            return False
        statement, victims, scenario = solution
        chunks: list[VictimJob] = []
        for victim in victims:
            chunk = scenario.chunk_of(victim)
            if chunk not in chunks:
                chunks.append(chunk)
        hints.jobs, hints.tasks = chunks, victims
        statement.discard()
        return True

    def _probe(self, generator: Generator, hints: _Hints, job: JobState, tasks: list[TaskState]) -> Solution | None:
        """probeAtK + solvePartialJob: this generator's scenarios for the first k pods, failed ones skipped."""
        if self.ssn.out_of_time():
            return None
        feasible: dict[str, NodeState] = {n.name: n for n in self.feasible}
        for task in hints.tasks:
            if task.node:
                feasible[task.node] = self.ssn.nodes[task.node]
        builder = ScenarioBuilder(self.ssn, PartialJob(job, tasks), hints.jobs, self.victims(), feasible)
        scenarios = generator(builder)
        while not self.ssn.out_of_time():
            scenario = scenarios.next()
            if scenario is None:
                return None
            fingerprint = scenario.fingerprint()
            if fingerprint in self.failed:
                continue
            solution = self._solve_scenario(scenario, feasible)
            if solution is not None:
                return solution
            self.failed.add(fingerprint)
        return None

    def _solve_scenario(self, scenario: Scenario, feasible: dict[str, NodeState]) -> Solution | None:
        """byPodSolver.solve: evict every victim of the scenario, then simulate."""
        victims = list(dict.fromkeys([*scenario.recorded_tasks, *scenario.potential_tasks]))
        if not victims:
            return None
        ssn = self.ssn
        if ssn.watch is not None:
            ssn.watch.scenario()
        stmt = Statement(ssn)
        for task in victims:
            if task.status != RELEASING and task.node:
                stmt.evict(task)
        added = list(dict.fromkeys(t.node for t in victims if t.node and t.node not in feasible))
        for name in added:
            feasible[name] = ssn.nodes[name]
        outcome = self._simulate(stmt, scenario, feasible, victims)
        if outcome is not None:
            return outcome
        for name in added:
            feasible.pop(name, None)
        stmt.discard()
        return None

    def _simulate(
        self, stmt: Statement, scenario: Scenario, feasible: dict[str, NodeState], victims: list[TaskState]
    ) -> Solution | None:
        """Re-place victims and the pending pods in queue order; the validator sees this scenario only."""
        ssn = self.ssn
        preemptor = scenario.preemptor
        nodes = feasible
        victim_jobs: dict[str, JobState] = {}
        for task in victims:
            victim_jobs.setdefault(task.job.name, task.job)
        # The order pops every pending job; only the victims and the preemptor are placed, so the solver's
        # order yields just those, in the same sequence (simulation_order), unless asked for the original.
        order: JobsOrder | SimulationOrder
        if simulation_order.REFERENCE:
            candidates: list[Any] = [
                j for j in ssn.jobs.values() if j is not preemptor.job and (j.name in victim_jobs or j.has_pending())
            ]
            order = JobsOrder(ssn, [*candidates, preemptor])  # type: ignore[list-item]  # a PartialJob orders like a job
        else:
            order = SimulationOrder(ssn, preemptor, victim_jobs.values())
        # Victims placed before the preemptor only take room: once no node fits it, the simulation has failed.
        room = None if simulation_order.REFERENCE else PreemptorRoom.of(preemptor, nodes, victim_jobs, self.fits)
        if room is not None and room.gone():
            return None
        placed = False
        # Pending jobs that are not victims are only popped, never placed: popping changes no state, so
        # once the preemptor is placed and every victim job has had its turn, the rest cannot matter.
        waiting = {name for name, job in victim_jobs.items() if job is not preemptor.job}
        while not (placed and not waiting):
            job = order.pop()
            if job is None:
                break
            if job is preemptor:  # the orders hold a PartialJob too
                if not _pipeline_job(
                    ssn, stmt, preemptor.job, nodes, preemptor.tasks, preemptor.min_member, preemptor.tree
                ):
                    return None
                placed = True
            elif job.name in victim_jobs:
                waiting.discard(job.name)
                mark = stmt.checkpoint()
                _pipeline_job(ssn, stmt, job, nodes)
                if room is not None and not placed and room.taken(stmt, mark):
                    return None
        if not placed:
            return None
        if self.validator is not None and not self.validator(scenario):
            return None
        evicted = [t for t in victims if t.status == RELEASING]
        moved = [t for t in victims if t.status == PIPELINED]
        return stmt, evicted + moved, scenario


def max_solvable_k(n: int, probe: Callable[[int], bool]) -> int:
    """searchMaxSolvableK: the largest k in [0, n] whose probe succeeds, assuming success is monotone.

    Probes k = 1, 2, 4, ... (the last one clamped to n) up to the first failure, then bisects between the
    last success and that failure: O(log n) probes.
    """
    low, k = 0, 1
    while True:
        if not probe(k):
            high = k
            break
        low = k
        if k == n:
            return n
        k = min(2 * k, n)
    while high - low > 1:
        mid = (low + high) // 2
        if probe(mid):
            low = mid
        else:
            high = mid
    return low


def _pipeline_job(
    ssn: Session,
    stmt: Statement,
    job: JobState,
    nodes: dict[str, NodeState],
    tasks: list[TaskState] | None = None,
    min_member: int | None = None,
    tree: SubGroupSet | None = None,
) -> bool:
    """allocate_job onto releasing resources, over the feasible nodes only, as cheaply as gives KAI's order.

    - A job with a subgroup tree gets every feasible node: topology domains are computed from the nodes
      offered, so a narrower set could change which domain is the lowest common one.
    - GPU pods under binpack take the session's node index, kept to the feasible nodes: a simulation changes
      a few nodes, so this costs those plus the index lookups, not a scan of every feasible node.
    - Others get the nodes some pod of the batch fits on, plus the binpack bound witnesses (candidate_nodes).
    """
    if tree is not None or job.tree is not None:
        return allocate_job(ssn, stmt, job, True, list(nodes.values()), tasks=tasks, min_member=min_member, tree=tree)
    if simulation_order.REFERENCE:
        return allocate_job(ssn, stmt, job, True, list(nodes.values()), tasks=tasks, min_member=min_member)
    batch = job.tasks_to_allocate(real=False, tasks=tasks, min_member=min_member)
    if ssn.placement.node == "binpack" and all(t.req.kind in _INDEXED_KINDS and not t.req.cpu_only for t in batch):
        return allocate_job(ssn, stmt, job, True, None, tasks=tasks, min_member=min_member, within=nodes)
    candidates = list(nodes.values())
    # A batch over its queue's capacity fails before any node is looked at: no need to pick nodes.
    if check_capacity(job.queue, ssn.required_quota(batch), job.preemptible) is None:  # type: ignore[arg-type]
        candidates = candidate_nodes(candidates, batch)
    return allocate_job(ssn, stmt, job, True, candidates, tasks=tasks, min_member=min_member)


_INDEXED_KINDS = (KIND_WHOLE, KIND_FRACTION, KIND_MEMORY)


def feasible_nodes(ssn: Session, job: JobState) -> list[NodeState]:
    """FeasibleNodesForJob: for an all-GPU job, nodes with idle or releasing GPU capacity."""
    if any(t.req.cpu_only for t in job.tasks):
        return list(ssn.node_list)
    return ssn.gpu_nodes()
