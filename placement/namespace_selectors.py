"""Inter-pod affinity terms' namespaceSelector, resolved against the Namespaces' labels.

Kubernetes' InterPodAffinity (k8s.io/kubernetes v1.35 framework/types.go AffinityTerm.Matches) takes a pod into
a term when its namespace is listed or the namespace's labels match the term's namespaceSelector; for the
incoming pod's own terms PreFilter turns the selector into the list of matching namespaces
(interpodaffinity/plugin.go mergeAffinityTermNamespacesIfNotEmpty). Either way the term stands for the listed
namespaces plus those whose labels match, which is what `resolve` writes into each term. KAI@v0.17.0 builds the
plugin on its informer factory (k8s_internal/plugins/plugins.go:84, cache/cache.go:206,247), so the labels are
the cluster's live Namespaces. An empty selector (every namespace) is PodAffinityTerm.all_namespaces already.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from placement.model import Job, Node, NodeConstraints, OutsidePod, PodAffinityTerm, Snapshot, Task
from placement.node_constraints import label_selector_matches

__all__ = ["has_selectors", "resolve"]

_TERM_FIELDS = ("pod_affinity", "pod_anti_affinity", "preferred_affinity", "preferred_anti_affinity")
_OUTSIDE_FIELDS = ("anti_affinity", "preferred_affinity", "preferred_anti_affinity")


def has_selectors(snapshot: Snapshot) -> bool:
    """Whether some term has a non-empty namespaceSelector."""
    tasks = (getattr(t.constraints, f) for j in snapshot.jobs for t in j.tasks for f in _TERM_FIELDS)
    outside = (getattr(p, f) for n in snapshot.nodes for p in n.outside_pods for f in _OUTSIDE_FIELDS)
    return any(term.namespace_selector is not None for terms in (*tasks, *outside) for term in terms)


def resolve(snapshot: Snapshot, namespace_labels: Mapping[str, Mapping[str, str]]) -> Snapshot:
    """The snapshot with every namespaceSelector replaced by the namespaces whose labels it matches."""
    resolver = _Resolver(namespace_labels)
    jobs = tuple(resolver.job(j) for j in snapshot.jobs)
    nodes = tuple(resolver.node(n) for n in snapshot.nodes)
    return dataclasses.replace(snapshot, jobs=jobs, nodes=nodes)


class _Resolver:
    def __init__(self, namespace_labels: Mapping[str, Mapping[str, str]]) -> None:
        self.labels = namespace_labels
        # Namespaces by label pair: a selector's matchLabels narrow the namespaces to read to those holding its
        # rarest pair (thousands of distinct selectors over thousands of namespaces were each a full scan).
        self.by_pair: dict[tuple[str, str], list[str]] = {}
        for namespace, labels in namespace_labels.items():
            for pair in labels.items():
                self.by_pair.setdefault(pair, []).append(namespace)
        # Pods of a count-style job share one Task object; resolving each once keeps them shared.
        self.tasks: dict[int, Task] = {}
        # Per selector, the namespaces it matches: many pods carry the same terms.
        self.matched: dict[object, frozenset[str]] = {}

    def term(self, term: PodAffinityTerm) -> PodAffinityTerm:
        selector = term.namespace_selector
        if selector is None:
            return term
        matched = self.matched.get(selector)
        if matched is None:
            match_labels = selector[0]
            candidates: Iterable[str] = self.labels
            if match_labels:
                rarest: list[str] = min((self.by_pair.get(pair, []) for pair in match_labels), key=len)
                candidates = rarest
            matched = self.matched[selector] = frozenset(
                ns for ns in candidates if label_selector_matches(selector, self.labels[ns])
            )
        return dataclasses.replace(term, namespaces=term.namespaces | matched, namespace_selector=None)

    def terms(self, terms: tuple[PodAffinityTerm, ...]) -> tuple[PodAffinityTerm, ...]:
        return tuple(self.term(t) for t in terms)

    def job(self, job: Job) -> Job:
        return dataclasses.replace(job, tasks=tuple(self.task(t) for t in job.tasks))

    def task(self, task: Task) -> Task:
        done = self.tasks.get(id(task))
        if done is None:
            c = task.constraints
            if any(t.namespace_selector is not None for f in _TERM_FIELDS for t in getattr(c, f)):
                fields: dict[str, Any] = {f: self.terms(getattr(c, f)) for f in _TERM_FIELDS}
                constraints: NodeConstraints = dataclasses.replace(c, **fields)
                done = dataclasses.replace(task, constraints=constraints)
            else:
                done = task
            self.tasks[id(task)] = done
        return done

    def node(self, node: Node) -> Node:
        if not node.outside_pods:
            return node
        pods = tuple(self.outside(p) for p in node.outside_pods)
        return dataclasses.replace(node, outside_pods=pods)

    def outside(self, pod: OutsidePod) -> OutsidePod:
        if not any(t.namespace_selector is not None for f in _OUTSIDE_FIELDS for t in getattr(pod, f)):
            return pod
        fields: dict[str, Any] = {f: self.terms(getattr(pod, f)) for f in _OUTSIDE_FIELDS}
        return dataclasses.replace(pod, **fields)
