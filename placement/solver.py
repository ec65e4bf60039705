"""The eviction solver shared by reclaim, preempt and consolidation (actions/common/solvers).

For a pending job the solver grows the set of potential victims one victim job (or one elastic pod)
at a time, in victim order. For each candidate set it tries, node by node where the newest victim
runs, to evict the victims there, then re-places - on releasing resources only ("pipelined") - the
victims and the pending job in queue order. A simulation where the job fits and the action's
validator accepts the victims still evicted is the solution. A gang is solved one more pod at a time,
reusing the victims the previous step needed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from placement import simulation_order
from placement.candidate_nodes import candidate_nodes
from placement.idle_gpus_filter import AccumulatedIdleGpus, idle_gpu_capacity, releasing_gpu_capacity
from placement.nodes import NodeState
from placement.placing import allocate_job
from placement.queue_order import JobsOrder
from placement.queues import check_capacity
from placement.simulation_order import SimulationOrder
from placement.statement import Statement
from placement.tasks import ACTIVE_ALLOCATED, PIPELINED, RELEASING, JobState, TaskState
from placement.victims_order import VictimJob, VictimsOrder

if TYPE_CHECKING:
    from placement.session import Session
    from placement.subgroups import SubGroupSet

__all__ = ["JobSolver", "PartialJob", "Scenario", "feasible_nodes"]


class PartialJob:
    """The first k pods of a pending job, with minMember k (getPartialJobRepresentative)."""

    def __init__(self, job: JobState, tasks: list[TaskState]) -> None:
        self.job = job
        self.tasks = list(tasks)
        self.name = job.name
        self.queue = job.queue
        self.priority = job.priority
        self.creation = job.creation
        self.min_member = len(tasks)
        self._init_cache: tuple[int, tuple[float, float, float]] | None = None
        # With subgroups the representative is the job's tree holding its placed pods and these k pending
        # ones, each leaf's minimum (and explicit minSubGroup) lowered to what it holds.
        self.tree: SubGroupSet | None = None
        if job.tree is not None:
            placed = [t for t in job.tasks if t.status in ACTIVE_ALLOCATED]
            self.tree = job.tree.clone([*placed, *tasks], representative=True)

    @property
    def version(self) -> int:
        return self.job.version

    def order_key(self) -> tuple[int, int, int, str]:
        return (-self.priority, 0, self.creation, self.name)

    def tasks_to_allocate(self, real: bool) -> list[TaskState]:
        if self.tree is not None:
            return self.tree.tasks_to_allocate(real)
        return self.job.tasks_to_allocate(real, tasks=self.tasks, min_member=self.min_member)


class Scenario:
    """A pending (partial) job and the victims considered for it: recorded ones and potential ones."""

    def __init__(self, preemptor: PartialJob, recorded: list[VictimJob]) -> None:
        self.preemptor = preemptor
        self.recorded_jobs = recorded
        self.recorded_tasks = [t for v in recorded for t in v.tasks]
        self.potential_tasks: list[TaskState] = []
        self.groups: dict[str, list[VictimJob]] = {}
        self.jobs_by_node: dict[str, list[str]] = {}
        for chunk in recorded:
            self.groups.setdefault(chunk.job.name, []).append(chunk)

    def add_potential(self, job: JobState, tasks: list[TaskState]) -> None:
        if not tasks:
            return
        self.potential_tasks.extend(tasks)
        self.groups.setdefault(job.name, []).append(VictimJob(job, tasks))
        for task in tasks:
            names = self.jobs_by_node.setdefault(task.node or "", [])
            if job.name not in names:
                names.append(job.name)

    def latest_job(self) -> JobState | None:
        return self.potential_tasks[-1].job if self.potential_tasks else None

    def tasks_on_node(self, node: str) -> list[TaskState]:
        """VictimsTasksFromNodes: every potential victim pod of every job with a potential victim there."""
        tasks: list[TaskState] = []
        for name in self.jobs_by_node.get(node, []):
            for chunk in self.groups[name]:
                tasks.extend(chunk.tasks)
        return tasks

    def victims(self) -> dict[str, tuple[JobState, list[TaskState]]]:
        """GetVictims: per victim job, all its recorded and potential pods."""
        out: dict[str, tuple[JobState, list[TaskState]]] = {}
        for name, chunks in self.groups.items():
            out[name] = (chunks[0].job, [t for c in chunks for t in c.tasks])
        return out

    def chunk_of(self, task: TaskState) -> VictimJob:
        for chunk in self.groups[task.job.name]:
            if task in chunk.tasks:
                return chunk
        raise KeyError(task.name)


Validator = Callable[[Scenario], bool]


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

    def solve(self, job: JobState) -> Statement | None:
        """A statement ready to commit when the job fits with evictions, else None (state untouched)."""
        original = job.n_active_used
        to_allocate = job.tasks_to_allocate(real=False)
        recorded: list[VictimJob] = []
        statement: Statement | None = None
        pending: list[TaskState] = []
        for task in to_allocate:
            pending.append(task)
            result = self._solve_partial(PartialJob(job, pending), recorded)
            if result is None:
                break
            stmt, victim_tasks, scenario = result
            if len(pending) < len(to_allocate):
                stmt.discard()
            statement = stmt
            chunks: list[VictimJob] = []
            for victim in victim_tasks:
                chunk = scenario.chunk_of(victim)
                if chunk not in chunks:
                    chunks.append(chunk)
            recorded = chunks
        satisfied = job.tree.gang_satisfied() if job.tree is not None else job.n_active_used >= job.min_member
        if satisfied and job.n_active_used > original:
            return statement
        if statement is not None:
            statement.discard()
        return None

    def _solve_partial(
        self, partial: PartialJob, recorded: list[VictimJob]
    ) -> tuple[Statement, list[TaskState], Scenario] | None:
        feasible: dict[str, NodeState] = {n.name: n for n in self.feasible}
        for chunk in recorded:
            for task in chunk.tasks:
                if task.node:
                    feasible[task.node] = self.ssn.nodes[task.node]
        victims = self.victims()
        scenario = Scenario(partial, recorded)
        recorded_ids = {t.name for t in scenario.recorded_tasks}
        # Scenarios that cannot free enough GPUs are not simulated (GetValidScenario's filters).
        idle = AccumulatedIdleGpus.of_nodes(self.ssn.node_list, partial.tasks_to_allocate(real=False))
        idle.add_victims(scenario.recorded_tasks)
        while not self.ssn.out_of_time():
            if idle.passes():
                outcome = self._try(scenario, feasible)
                if outcome:
                    stmt, victim_tasks = outcome
                    return stmt, victim_tasks, scenario
            added = self._add_next_victim(scenario, victims, recorded_ids)
            if added is None:
                return None
            idle.add_victims(added)
        return None

    @staticmethod
    def _add_next_victim(scenario: Scenario, victims: VictimsOrder, recorded_ids: set[str]) -> list[TaskState] | None:
        """The next victim's pods to evict, added to the scenario; None when no victim is left."""
        while True:
            victim = victims.pop()
            if victim is None:
                return None
            tasks, more = victim.tasks_to_evict()
            if any(t.name in recorded_ids for t in tasks):
                remaining = [t for t in victim.tasks if t.name not in recorded_ids]
                if remaining:
                    victims.push(VictimJob(victim.job, remaining))
                continue
            if more:
                victims.push(VictimJob(victim.job, [t for t in victim.tasks if t not in tasks]))
            if not tasks:
                continue
            scenario.add_potential(victim.job, tasks)
            return tasks

    def _try(self, scenario: Scenario, feasible: dict[str, NodeState]) -> Any:
        """byPodSolver.solve: None = no solution here, False = rejected by the validator, else result."""
        ssn = self.ssn
        stmt = Statement(ssn)
        for task in scenario.recorded_tasks:
            if task.status != RELEASING and task.node:
                stmt.evict(task)
        latest = scenario.latest_job()
        if latest is None:
            if scenario.recorded_tasks:
                outcome = self._simulate(stmt, scenario, feasible, scenario.recorded_tasks)
                if outcome is not None:
                    return outcome
        else:
            for node_name in sorted({t.node for t in latest.tasks if t.node}):
                checkpoint = stmt.checkpoint()
                potential = [t for t in scenario.tasks_on_node(node_name) if t.status != RELEASING]
                for task in potential:
                    stmt.evict(task)
                added = [t.node for t in potential if t.node and t.node not in feasible]
                for name in added:
                    feasible[name] = ssn.nodes[name]
                outcome = self._simulate(stmt, scenario, feasible, scenario.recorded_tasks + potential)
                if outcome is not None:
                    return outcome
                for name in added:
                    feasible.pop(name, None)
                stmt.rollback(checkpoint)
        stmt.discard()
        return None

    def _simulate(
        self, stmt: Statement, scenario: Scenario, feasible: dict[str, NodeState], victims: list[TaskState]
    ) -> Any:
        """Re-place victims and the pending job on releasing resources, in queue order."""
        ssn = self.ssn
        preemptor = scenario.preemptor
        nodes = list(feasible.values())
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
                _pipeline_job(ssn, stmt, job, nodes)
        if not placed:
            return None
        evicted = [t for t in victims if t.status == RELEASING]
        if self.validator is not None and not self.validator(scenario):
            stmt.discard()
            return False
        moved = [t for t in victims if t.status == PIPELINED]
        return stmt, evicted + moved


def _pipeline_job(
    ssn: Session,
    stmt: Statement,
    job: JobState,
    nodes: list[NodeState],
    tasks: list[TaskState] | None = None,
    min_member: int | None = None,
    tree: SubGroupSet | None = None,
) -> bool:
    """allocate_job onto releasing resources, offered only the nodes that can matter (candidate_nodes).

    A job with a subgroup tree gets every node: topology domains are computed from the node set offered,
    so a narrower set could change which domain is the lowest common one.
    """
    if tree is not None or job.tree is not None:
        return allocate_job(ssn, stmt, job, True, nodes, tasks=tasks, min_member=min_member, tree=tree)
    if not simulation_order.REFERENCE:
        batch = job.tasks_to_allocate(real=False, tasks=tasks, min_member=min_member)
        # A batch over its queue's capacity fails before any node is looked at: no need to pick nodes.
        if check_capacity(job.queue, ssn.required_quota(batch), job.preemptible) is None:  # type: ignore[arg-type]
            nodes = candidate_nodes(nodes, batch)
    return allocate_job(ssn, stmt, job, True, nodes, tasks=tasks, min_member=min_member)


def feasible_nodes(ssn: Session, job: JobState) -> list[NodeState]:
    """FeasibleNodesForJob: for an all-GPU job, nodes with idle or releasing GPU capacity."""
    if any(t.req.kind == "cpu" for t in job.tasks):
        return list(ssn.node_list)
    return [n for n in ssn.node_list if idle_gpu_capacity(n)[0] > 0 or releasing_gpu_capacity(n)[0] > 0]
