"""The solver's scenario filter AccumulatedNodeAffinities: skip a victim set whose nodes none of the
preemptor's pods may go to.

For a preemptor with a pod that has a nodeSelector or a required node affinity, KAI checks before simulating a
scenario that every such pod matches (NodeAffinity's PreFilter and Filter; taints are not looked at) one node
among the solver's feasible nodes and the nodes of every victim the filter has seen so far. A set that fails is
not simulated; the next victim is added instead. Like AccumulatedIdleGpus this only spares simulations that
could not succeed, but a simulated failure is not free of traces in KAI's accounting (benchmarks/README.md), so
the filter is restated as KAI applies it.

Upstream: kai-scheduler/KAI-Scheduler@v0.17.0:pkg/scheduler/actions/common/solvers/accumulated_scenario_filters/
node_affinities/node_affinities.go, first in pod_scenario_builder.go's filter list. As there, when every
required term names nodes by `metadata.name In` (NodeAffinity's PreFilter then returns those names,
k8s.io/kubernetes v1.35 pkg/scheduler/framework/plugins/nodeaffinity), the named nodes are tried whether
feasible or not
(node_affinities_test.go: "MatchFields targets node that exists in cluster but is not feasible - filter
passes").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from placement.model import NodeConstraints
from placement.node_constraints import matches_affinity

if TYPE_CHECKING:
    from placement.nodes import NodeState
    from placement.tasks import TaskState

__all__ = ["AccumulatedNodeAffinities"]


def _pre_filtered(c: NodeConstraints) -> set[str] | None:
    """NodeAffinity's PreFilter node names: per term the intersection of its `metadata.name In` values, united
    over the terms; None (no restriction) when a term has none."""
    names: set[str] = set()
    for term in c.required_terms or ():
        mine: set[str] | None = None
        for r in term.match_fields:
            if r.key == "metadata.name" and r.operator == "In":
                mine = set(r.values) if mine is None else mine & set(r.values)
        if mine is None:
            return None
        names |= mine
    return names if c.required_terms else None


class AccumulatedNodeAffinities:
    """The filter's state for one solver step: the node names the preemptor's pods may be matched against."""

    def __init__(self, constrained: list[NodeConstraints], feasible: Iterable[str], nodes: Mapping[str, NodeState]):
        # Distinct constraints, each with its PreFilter names (None: the growing set below).
        self.waiting = {c: _pre_filtered(c) for c in constrained}
        self.nodes = nodes
        self.names = set(feasible)
        self.seen: set[str] = set()

    @classmethod
    def for_pending(
        cls, pending: Iterable[TaskState], feasible: Iterable[str], nodes: Mapping[str, NodeState]
    ) -> AccumulatedNodeAffinities | None:
        """None when no pending pod has a nodeSelector or a required node affinity (hasRequiredNodeAffinity)."""
        constrained = [
            t.req.constraints
            for t in pending
            if t.req.constraints.node_selector or t.req.constraints.required_terms is not None
        ]
        return cls(constrained, feasible, nodes) if constrained else None

    def add_victims(self, tasks: Iterable[TaskState]) -> None:
        """A victim's node joins the set (once per pod; a pod without a node adds none)."""
        for task in tasks:
            if task.name in self.seen:
                continue
            self.seen.add(task.name)
            if task.node:
                self.names.add(task.node)

    def passes(self) -> bool:
        """Every constrained pod matches a node. The set only grows, so a constraint matched once stays matched
        and is not looked at again."""
        for c, named in list(self.waiting.items()):
            candidates = self.names if named is None else named
            if not any(matches_affinity(c, self.nodes[n].spec) for n in candidates if n in self.nodes):
                return False
            del self.waiting[c]
        return True
