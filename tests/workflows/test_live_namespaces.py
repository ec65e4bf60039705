"""Namespaces' labels in `kaistack diagnose`: what inter-pod terms' namespaceSelectors match.

KAI@v0.17.0 runs Kubernetes' InterPodAffinity on its live informers, the Namespace lister included
(k8s_internal/plugins/plugins.go:84; cache/cache.go:206,247), over every pod on a node, other schedulers' too.
"""

from __future__ import annotations

from typing import Any

from kaistack.ops.diagnose import diagnose
from kaistack.ops.live_snapshot import build

HOST = "kubernetes.io/hostname"


def _node(name: str) -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "8"}
    metadata = {"name": name, "labels": {HOST: name}}
    return {"kind": "Node", "metadata": metadata, "spec": {}, "status": {"allocatable": allocatable}}


def _queue() -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}
    return {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"resources": resources}}


def _namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def _exporter() -> dict[str, Any]:
    """Another scheduler's pod on n1 that keeps pods of team=ml namespaces off its node."""
    term = {
        "topologyKey": HOST,
        "labelSelector": {"matchLabels": {"app": "train"}},
        "namespaceSelector": {"matchLabels": {"team": "ml"}},
    }
    spec = {
        "schedulerName": "default-scheduler",
        "nodeName": "n1",
        "containers": [{"name": "c"}],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    }
    metadata = {"name": "exporter", "namespace": "monitoring"}
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Running"}}


def _train() -> dict[str, Any]:
    container = {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    metadata = {"name": "train", "namespace": "ml", "labels": {"kai.scheduler/queue": "q", "app": "train"}}
    spec = {"schedulerName": "kai-scheduler", "containers": [container]}
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Pending"}}


def test_another_schedulers_anti_affinity_reaches_the_namespaces_its_selector_matches() -> None:
    objects = [_node("n1"), _queue(), _exporter(), _train(), _namespace("ml", team="ml"), _namespace("monitoring")]
    [pending] = diagnose(objects).pending
    assert pending.would_place is False
    assert pending.reason == (
        "inter-pod affinity keeps it off every node with room for it: on n1, the anti-affinity of a pod in that "
        "node's domain selects it"
    )


def test_a_namespace_the_selector_does_not_match_is_not_kept_off() -> None:
    objects = [_node("n1"), _queue(), _exporter(), _train(), _namespace("ml", team="web"), _namespace("monitoring")]
    [pending] = diagnose(objects).pending
    assert pending.would_place is True


def test_without_namespaces_the_selector_matches_nothing_and_the_notes_say_so() -> None:
    live = build([_node("n1"), _queue(), _exporter(), _train()])
    assert any("Namespaces were not read: affinity terms with a namespaceSelector" in n for n in live.notes)
    [pending] = diagnose([_node("n1"), _queue(), _exporter(), _train()]).pending
    assert pending.would_place is True


def test_another_schedulers_preferred_terms_are_resolved_too() -> None:
    """The exporter on n1 prefers to keep app=train pods of team=ml namespaces away (a preferred anti-affinity
    term, which scores the nodes of the pods placed after it): the pod goes to n2."""
    from placement.simulation import simulate

    exporter = _exporter()
    affinity = exporter["spec"]["affinity"]["podAntiAffinity"]
    term = affinity.pop("requiredDuringSchedulingIgnoredDuringExecution")[0]
    affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [{"weight": 100, "podAffinityTerm": term}]
    objects = [_node("n1"), _node("n2"), _queue(), exporter, _train(), _namespace("monitoring")]
    placed = simulate(build([*objects, _namespace("ml", team="ml")]).snapshot, actions=["allocate"])
    assert [t.node for t in placed.tasks.values()] == ["n2"]
    unmatched = simulate(build([*objects, _namespace("ml", team="web")]).snapshot, actions=["allocate"])
    assert [t.node for t in unmatched.tasks.values()] == ["n1"]
