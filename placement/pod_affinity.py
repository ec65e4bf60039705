"""Required inter-pod affinity and anti-affinity: Kubernetes' InterPodAffinity filter as KAI runs it.

KAI@v0.17.0 runs the plugin as a predicate (pkg/scheduler/k8s_internal/predicates/predicates.go:106-117) over
the pods its session holds on each node: every pod it adds to a node, whatever its status (a Releasing or
Pipelined one too: node_info.go:419, 516), and other schedulers' pods. The rules are k8s.io/kubernetes v1.35
pkg/scheduler/framework/plugins/interpodaffinity (PreFilter counts per topology pair, Filter):

- affinity: on the candidate node, every term's topology key is a label, and the domain it names holds a pod
  matching all the terms. With no such pod anywhere, a pod that matches all its own terms may go to any node
  carrying the keys (the first of a group);
- anti-affinity: no pod matching one of the pod's terms in the domain of that term's key on the candidate
  (a node without the key is not constrained by it);
- existing pods' anti-affinity: no pod whose term matches the incoming pod in a domain the candidate shares.

A term matches a pod in its namespaces (none given: the term owner's) by its label selector (a null one matches
nothing, an empty one everything). Not modelled: a non-empty namespaceSelector (it reads Namespace labels; only
the listed namespaces count), preferred terms and the PodAffinity score KAI adds to node order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from placement.node_constraints import requirement_matches

if TYPE_CHECKING:
    from placement.model import PodAffinityTerm
    from placement.nodes import NodeState
    from placement.session import Session
    from placement.tasks import TaskState

__all__ = ["AffinityCheck", "needs_check", "term_matches"]

_Pair = tuple[str, str]


def term_matches(term: PodAffinityTerm, owner_namespace: str, namespace: str, labels: dict[str, str]) -> bool:
    """AffinityTerm.Matches: the pod is in the term's namespaces and its labels match the selector."""
    in_namespace = (
        term.all_namespaces or namespace in term.namespaces or (term.own_namespace and namespace == owner_namespace)
    )
    if not in_namespace or not term.selector:
        return False
    if any(labels.get(k) != v for k, v in term.match_labels):
        return False
    return all(requirement_matches(r, labels) for r in term.match_expressions)


def needs_check(ssn: Session, task: TaskState) -> bool:
    c = task.req.constraints
    return bool(c.pod_affinity or c.pod_anti_affinity or ssn.anti_affinity_present)


def _placed(
    ssn: Session, task: TaskState, every: bool
) -> Iterator[tuple[NodeState, str, dict[str, str], tuple[PodAffinityTerm, ...]]]:
    """The pods on the session's nodes but `task` (every one, or only those with anti-affinity terms): node,
    namespace, labels, anti-affinity terms."""
    for node in ssn.node_list:
        for entry in (node.entries if every else node.anti_entries).values():
            other = entry.task
            if other is not task:
                yield node, other.spec.namespace, other.req.labels, other.req.constraints.pod_anti_affinity
        for namespace, labels, anti in node.outside:
            if every or anti:
                yield node, namespace, labels, anti


def _count(counts: dict[_Pair, int], node: NodeState, keys: Iterable[str]) -> None:
    labels = node.spec.labels
    for key in keys:
        value = labels.get(key)
        if value is not None:
            counts[(key, value)] = counts.get((key, value), 0) + 1


class AffinityCheck:
    """The plugin's PreFilter state for one pod at one moment of the session; `passes` is its Filter."""

    def __init__(self, ssn: Session, task: TaskState) -> None:
        c = task.req.constraints
        spec = task.spec
        self.affinity = c.pod_affinity
        self.anti = c.pod_anti_affinity
        own = task.req.labels
        self.affinity_counts: dict[_Pair, int] = {}
        self.anti_counts: dict[_Pair, int] = {}
        self.existing_anti: dict[_Pair, int] = {}
        # A pod without terms of its own needs only the pods whose anti-affinity might select it.
        every = bool(self.affinity or self.anti)
        for node, namespace, labels, their_anti in _placed(ssn, task, every):
            if self.affinity and all(term_matches(t, spec.namespace, namespace, labels) for t in self.affinity):
                _count(self.affinity_counts, node, (t.topology_key for t in self.affinity))
            _count(
                self.anti_counts,
                node,
                (t.topology_key for t in self.anti if term_matches(t, spec.namespace, namespace, labels)),
            )
            _count(
                self.existing_anti,
                node,
                (t.topology_key for t in their_anti if term_matches(t, namespace, spec.namespace, own)),
            )
        self.self_match = all(term_matches(t, spec.namespace, spec.namespace, own) for t in self.affinity)

    def passes(self, node: NodeState) -> bool:
        labels = node.spec.labels
        if self.existing_anti and any(self.existing_anti.get(pair, 0) > 0 for pair in labels.items()):
            return False
        for term in self.anti:
            value = labels.get(term.topology_key)
            if value is not None and self.anti_counts.get((term.topology_key, value), 0) > 0:
                return False
        if not self.affinity:
            return True
        found = True
        for term in self.affinity:
            value = labels.get(term.topology_key)
            if value is None:
                return False
            if self.affinity_counts.get((term.topology_key, value), 0) <= 0:
                found = False
        return found or (not self.affinity_counts and self.self_match)
