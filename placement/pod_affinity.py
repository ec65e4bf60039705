"""Required inter-pod affinity and anti-affinity: Kubernetes' InterPodAffinity filter as KAI runs it.

KAI@v0.17.0 runs the plugin as a predicate (pkg/scheduler/k8s_internal/predicates/predicates.go:109-119) over
the pods its session holds on each node: every pod it adds to a node, whatever its status (a Releasing or
Pipelined one too: node_info.go:419, 516), and other schedulers' pods. The rules are k8s.io/kubernetes v1.35
pkg/scheduler/framework/plugins/interpodaffinity (PreFilter counts per topology pair, Filter):

- affinity: on the candidate node, every term's topology key is a label, and the domain it names holds a pod
  matching all the terms. With no such pod anywhere, a pod that matches all its own terms may go to any node
  carrying the keys (the first of a group);
- anti-affinity: no pod matching one of the pod's terms in the domain of that term's key on the candidate
  (a node without the key is not constrained by it);
- existing pods' anti-affinity: no pod whose term matches the incoming pod in a domain the candidate shares.

A term matches a pod in its namespaces (none given: the term owner's; a namespaceSelector's are added from the
Namespaces' labels by placement.namespace_selectors) by its label selector (a null one matches nothing, an empty
one everything). Preferred terms only score nodes: `affinity_scores` below, which placing adds to
node order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from placement.node_constraints import requirement_matches

if TYPE_CHECKING:
    from placement.model import NodeConstraints, OutsidePod, PodAffinityTerm
    from placement.nodes import NodeState
    from placement.session import Session
    from placement.tasks import TaskState

__all__ = ["AffinityCheck", "affinity_scores", "needs_check", "term_matches"]

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


def session_check(ssn: Session, task: TaskState) -> AffinityCheck | None:
    """The Filter state for this attempt to place the pod, or None when the Filter does not run. KAI runs the
    PreFilter at every attempt, but a Skip is remembered for the rest of the session: the predicates plugin adds
    the pod to skipPredicates (KAI@v0.17.0 plugins/predicates/predicates.go:183-185), which only OnSessionOpen
    clears (:130), and evaluateTaskOnPredicates then leaves the Filter out (:357-360) even once a pod placed later
    has anti-affinity against it."""
    if not needs_check(ssn, task) or task.name in ssn.affinity_filter_skipped:
        return None
    check = AffinityCheck(ssn, task)
    if check.skips():
        ssn.affinity_filter_skipped.add(task.name)
        return None
    return check


def _placed(ssn: Session, every: bool) -> Iterator[tuple[NodeState, str, dict[str, str], tuple[PodAffinityTerm, ...]]]:
    """The pods on the session's nodes (every one, or only those with anti-affinity terms): node, namespace,
    labels, anti-affinity terms. The pod being placed too where it is on a node: a victim evicted in a solver
    simulation stays in KAI's Kubernetes NodeInfo as Releasing (node_info.go:575-581) while it is re-placed."""
    for node in ssn.node_list:
        for entry in (node.entries if every else node.anti_entries).values():
            other = entry.task
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


# AffinityCheck.refusal's answers, worded for placement.reasons (a domain: the nodes sharing the term's
# topology label value).
OWN_AFFINITY = "its affinity finds no matching pod in that node's domain, or the node lacks the topology label"
OWN_ANTI = "its anti-affinity selects a pod in that node's domain"
EXISTING_ANTI = "the anti-affinity of a pod in that node's domain selects it"


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
        for node, namespace, labels, their_anti in _placed(ssn, every):
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

    def skips(self) -> bool:
        """PreFilter's Skip (k8s v1.35.4 interpodaffinity/filtering.go:303-305): no required term of its own and
        no placed pod's anti-affinity selecting it on a node with the term's topology label."""
        return not self.affinity and not self.anti and not self.existing_anti

    def passes(self, node: NodeState) -> bool:
        return self.refusal(node) is None

    def refusal(self, node: NodeState) -> str | None:
        """Which of the Filter's three checks refuses the node, in the Filter's order (filtering.go: affinity,
        anti-affinity, existing pods' anti-affinity), as one of the constants above; None: it passes."""
        labels = node.spec.labels
        if self.affinity:
            found = True
            for term in self.affinity:
                value = labels.get(term.topology_key)
                if value is None:
                    return OWN_AFFINITY
                if self.affinity_counts.get((term.topology_key, value), 0) <= 0:
                    found = False
            if not found and not (not self.affinity_counts and self.self_match):
                return OWN_AFFINITY
        for term in self.anti:
            value = labels.get(term.topology_key)
            if value is not None and self.anti_counts.get((term.topology_key, value), 0) > 0:
                return OWN_ANTI
        if self.existing_anti and any(self.existing_anti.get(pair, 0) > 0 for pair in labels.items()):
            return EXISTING_ANTI
        return None


# ---- the PodAffinity score (preferred terms) ------------------------------------------------------------


def affinity_scores(ssn: Session, task: TaskState) -> dict[_Pair, int] | None:
    """InterPodAffinity PreScore as KAI's podaffinity plugin calls it: per (topology key, value), the summed
    weights of the preferred terms that hold there, or None when PreScore skips (no term matched anywhere).

    KAI@v0.17.0 plugins/podaffinity/podaffinity.go:49-76 scores a node K8sPlugins (1,000,000) x the plugin's raw
    Score (no NormalizeScore), with the zero-valued plugin arguments (k8s_internal/plugins/plugins.go:84): so
    existing pods' required terms weigh nothing (HardPodAffinityWeight 0) and their preferred terms count
    (IgnorePreferredTermsOfExistingPods false). k8s v1.35 interpodaffinity/scoring.go processExistingPod: the
    pod's preferred affinity terms add their weight where an existing pod matches, its preferred anti-affinity
    terms subtract it, and so do an existing pod's preferred terms that match the pod; each counts in the
    domain of the existing pod's node (a node without the term's key adds nothing). A pod with preferred terms
    of its own reads every pod; one without reads only the pods with terms.
    """
    c = task.req.constraints
    mine_pref, mine_anti = c.preferred_affinity, c.preferred_anti_affinity
    every = bool(mine_pref or mine_anti)
    namespace = task.spec.namespace
    own = task.req.labels
    topology: dict[_Pair, int] = {}
    for node in ssn.node_list:
        entries = node.entries if every else node.preferred_entries
        outside = node.spec.outside_pods if every else node.preferred_outside
        if not entries and not outside:
            continue
        holding: list[tuple[PodAffinityTerm, int]] = []
        for entry in entries.values():  # the pod's own entry too, as in _placed
            other = entry.task
            oc = other.req.constraints
            _holding(holding, mine_pref, mine_anti, namespace, own, other.spec.namespace, other.req.labels, oc)
        for pod in outside:
            _holding(holding, mine_pref, mine_anti, namespace, own, pod.namespace, dict(pod.labels), pod)
        if holding:
            labels = node.spec.labels
            for term, sign in holding:
                value = labels.get(term.topology_key)
                if value is not None:
                    pair = (term.topology_key, value)
                    topology[pair] = topology.get(pair, 0) + sign * term.weight
    return topology or None


def _holding(
    out: list[tuple[PodAffinityTerm, int]],
    mine_pref: Terms,
    mine_anti: Terms,
    namespace: str,
    own: dict[str, str],
    their_namespace: str,
    their_labels: dict[str, str],
    theirs: NodeConstraints | OutsidePod,
) -> None:
    """processExistingPod: the terms that hold between the pod and another, with the sign each counts with."""
    for term in mine_pref:
        if term_matches(term, namespace, their_namespace, their_labels):
            out.append((term, 1))
    for term in mine_anti:
        if term_matches(term, namespace, their_namespace, their_labels):
            out.append((term, -1))
    for term in theirs.preferred_affinity:
        if term_matches(term, their_namespace, namespace, own):
            out.append((term, 1))
    for term in theirs.preferred_anti_affinity:
        if term_matches(term, their_namespace, namespace, own):
            out.append((term, -1))


Terms = tuple["PodAffinityTerm", ...]


def node_score(topology: dict[_Pair, int], node: NodeState) -> int:
    """Score: the node's share of every domain it is in."""
    labels = node.spec.labels
    return sum(weight for (key, value), weight in topology.items() if labels.get(key) == value)
