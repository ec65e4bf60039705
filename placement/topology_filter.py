"""The solver's scenario filter TopologyAwareIdleGpus: a required topology level must have room somewhere.

For a pending job whose subgroup tree carries a required topology level (on the root or an inner subgroup),
KAI checks before simulating that the GPU quota each such subgroup asks for fits, largest first, into the
domains of that level once the scenario's victims are gone. Like AccumulatedIdleGpus it is a necessary
condition, evaluated on every accumulated victim set, and it changes which scenarios are simulated.

Upstream: kai-scheduler/KAI-Scheduler@v0.17.0:pkg/scheduler/actions/common/solvers/
accumulated_scenario_filters/idle_gpus/topology_aware_idle_gpus.go. As there:
- a domain is the value of the level's node label, over every session node that has the label (not only
  the topology's member nodes, and two racks with the same label value under different zones are one);
- a subgroup asks for the quota of every pod of the partial job under it, placed pods included;
- leaf subgroups (pod sets) are not looked at, only subgroup sets.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from placement.idle_gpus_filter import greedy_match
from placement.subgroups import SubGroupSet

if TYPE_CHECKING:
    from placement.session import Session
    from placement.tasks import TaskState

__all__ = ["TopologyIdleGpus"]

GroupKey = tuple[str, str]  # (topology, node label of the required level)


class TopologyIdleGpus:
    """The filter's state for one solver probe: per domain, idle + releasing GPUs grown by the victims."""

    def __init__(
        self,
        requirements: dict[GroupKey, list[float]],
        capacity: dict[GroupKey, dict[str, float]],
        node_domains: dict[str, list[tuple[GroupKey, str]]],
    ) -> None:
        """requirements: per (topology, level), what each constrained subgroup asks for; capacity: per
        (topology, level), each domain's idle + releasing GPUs; node_domains: the domains of each node."""
        self.requirements = {key: sorted(values, reverse=True) for key, values in requirements.items()}
        self.capacity = capacity
        self.node_domains = node_domains
        self.seen: set[str] = set()

    @classmethod
    def for_job(cls, ssn: Session, tree: SubGroupSet | None) -> TopologyIdleGpus | None:
        """The filter for a partial job's tree, or None when no subgroup set requires a level."""
        if tree is None:
            return None
        requirements: dict[GroupKey, list[float]] = {}
        for sgs in _subgroup_sets(tree):
            constraint = sgs.constraint
            if constraint is None or not constraint.required:
                continue
            topology = ssn.topologies.get(constraint.topology)
            level = topology.resolve(constraint.required) if topology is not None else constraint.required
            need = sum(t.req.requirement_gpus for t in sgs.all_tasks())
            requirements.setdefault((constraint.topology, level), []).append(need)
        if not requirements:
            return None
        capacity: dict[GroupKey, dict[str, float]] = {key: {} for key in requirements}
        node_domains: dict[str, list[tuple[GroupKey, str]]] = {}
        room = ssn.gpu_room()
        for node in ssn.node_list:
            idle, releasing = room[node.name]
            free = idle + releasing
            for key in requirements:
                value = node.spec.labels.get(key[1])
                if value:
                    capacity[key][value] = capacity[key].get(value, 0.0) + free
                    node_domains.setdefault(node.name, []).append((key, value))
        return cls(requirements, capacity, node_domains)

    def add_victims(self, tasks: Iterable[TaskState]) -> None:
        """A victim frees its accepted GPU quota in each domain its node is in, once per pod."""
        for task in tasks:
            if task.name in self.seen:
                continue
            self.seen.add(task.name)
            for key, value in self.node_domains.get(task.node or "", []):
                self.capacity[key][value] += task.accepted[2] - task.req.share_mig_gpus

    def passes(self) -> bool:
        for key, required in self.requirements.items():
            if not greedy_match(required, sorted(self.capacity[key].values(), reverse=True)):
                return False
        return True


def _subgroup_sets(root: SubGroupSet) -> list[SubGroupSet]:
    """getSubgroupsWithRequiredConstraints' walk: the root, then each subgroup set depth first."""
    out = [root]
    for member in root.members:
        if isinstance(member, SubGroupSet):
            out.extend(_subgroup_sets(member))
    return out
