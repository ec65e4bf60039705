"""Accumulating victims for one solver probe (KAI's PodAccumulatedScenarioBuilder).

Starting from the pending pods and the recorded victims, the builder takes victims one at a time in victim
order: a whole job, or for an elastic job one pod above its minimum (the rest is offered again later).
After each addition the accumulated set goes through the filters (AccumulatedNodeAffinities when a pending
pod has a nodeSelector or a required node affinity, TopologyAwareIdleGpus when the job requires a topology
level, then AccumulatedIdleGpus); a set that fails is skipped and the next victim added. The generators
(placement.scenario_generators) turn each set that passes into the scenarios that are simulated.

Upstream: kai-scheduler/KAI-Scheduler@v0.17.0:pkg/scheduler/actions/common/solvers/pod_scenario_builder.go.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from placement.idle_gpus_filter import AccumulatedIdleGpus
from placement.node_affinity_filter import AccumulatedNodeAffinities
from placement.topology_filter import TopologyIdleGpus
from placement.victim_scenario import PartialJob, Scenario
from placement.victims_order import VictimJob, VictimsOrder

if TYPE_CHECKING:
    from collections.abc import Iterable

    from placement.nodes import NodeState
    from placement.session import Session
    from placement.tasks import TaskState

__all__ = ["ScenarioBuilder"]


class _Filter(Protocol):
    def add_victims(self, tasks: Iterable[TaskState]) -> None: ...

    def passes(self) -> bool: ...


class ScenarioBuilder:
    """One probe's accumulated scenario over a fresh victim order."""

    def __init__(
        self,
        ssn: Session,
        partial: PartialJob,
        recorded: list[VictimJob],
        victims: VictimsOrder,
        feasible: dict[str, NodeState],
    ) -> None:
        self.ssn = ssn
        self.victims = victims
        self.feasible = feasible
        pending = partial.tasks_to_allocate(real=False)
        self.scenario = Scenario(partial, pending, recorded)
        self.recorded_ids = {t.name for t in self.scenario.recorded_tasks}
        filters: list[_Filter] = []
        affinities = AccumulatedNodeAffinities.for_pending(pending, feasible, ssn.nodes)
        if affinities is not None:
            filters.append(affinities)
        topology = TopologyIdleGpus.for_job(ssn, partial.tree)
        if topology is not None:
            filters.append(topology)
        filters.append(AccumulatedIdleGpus(ssn.gpu_room_sums(), pending, ssn.gpu_room_top(len(pending))))
        for f in filters:
            f.add_victims(self.scenario.recorded_tasks)
        self.filters = filters
        # Per filter, how many potential victims it has been given: a filter sees new victims only when it
        # runs, and KAI stops at the first filter that fails.
        self.fed = [0] * len(filters)

    def valid(self) -> bool:
        """isScenarioValid on the accumulated set (outerScenarioValid)."""
        potential = self.scenario.potential_tasks
        for i, f in enumerate(self.filters):
            if self.fed[i] < len(potential):
                f.add_victims(potential[self.fed[i] :])
                self.fed[i] = len(potential)
            if not f.passes():
                return False
        return True

    def advance(self) -> bool | None:
        """addNextPotentialVictims: None when no victim is left; False when the one taken was skipped."""
        victim = self.victims.pop()
        if victim is None:
            return None
        tasks, more = victim.tasks_to_evict()
        recorded = self.recorded_ids
        if any(t.name in recorded for t in tasks):
            # Part of the job is recorded already: offer the rest again later, add nothing now.
            remaining = [t for t in victim.tasks if t.name not in recorded]
            if remaining:
                self.victims.push(VictimJob(victim.job, remaining))
            return False
        if more:
            self.victims.push(VictimJob(victim.job, [t for t in victim.tasks if t not in tasks]))
        self.scenario.add_potential(victim.job, tasks)
        return True

    def next_accumulated(self, advance: bool) -> Scenario | None:
        """GetValidAccumulatedScenario (advance=False) / GetNextAccumulatedScenario: the next set that passes."""
        need = advance
        while True:
            # One victim job of thousands of pods costs a pass over its pods per pod taken (KAI's GetTasksToEvict):
            # --max-seconds has to be able to stop between them, not only between scenarios.
            if self.ssn.out_of_time():
                return None
            if need:
                added = self.advance()
                if added is None:
                    return None
                if not added:
                    continue
            need = True
            if self.valid():
                return self.scenario
