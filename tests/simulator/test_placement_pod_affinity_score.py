"""Preferred inter-pod affinity: KAI's podaffinity plugin ranks nodes by Kubernetes' InterPodAffinity score.

KAI@v0.17.0 pkg/scheduler/plugins/podaffinity/podaffinity.go:49-76 runs the plugin's PreScore as a NodePreOrderFn
(a Skip marks the pod unscored for the rest of the session: skipOrderFn) and adds K8sPlugins (1,000,000,
plugins/scores/scores.go:13) x the raw Score to the node's order score, with no NormalizeScore. The plugin gets
zero-valued arguments (k8s_internal/plugins/plugins.go:84): HardPodAffinityWeight 0,
IgnorePreferredTermsOfExistingPods false. The scoring rules are k8s.io/kubernetes v1.35
pkg/scheduler/framework/plugins/interpodaffinity/scoring.go (processExistingPod, Score). KAI's own cases are
plugins/podaffinity/podaffinity_test.go, translated below.
"""

from __future__ import annotations

from typing import Any

import pytest
from placement_testlib import queue, run, scenario

from placement.placing import K8S_PLUGINS, preferred_scores
from placement.pod_affinity import affinity_scores, node_score
from placement.scenario import ScenarioError
from placement.session import Session
from placement.statement import Statement

NODE_LABEL = "node-label"
MY_LABEL = {"my-label": "a"}


def _preferred(kind: str, labels: dict[str, str], weight: int = 10, key: str = NODE_LABEL) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "podAffinityTerm": term}]}}


def _session(existing: dict[str, Any], incoming: dict[str, Any], labelled: bool = True) -> Session:
    """podaffinity_test.go's shape: node-1, one existing pod on it, the pod to score (all in namespace test)."""
    node = {"name": "node-1", "gpus": 1, "labels": {NODE_LABEL: "node-1"} if labelled else {}}
    jobs = [
        {
            "name": "existing",
            "queue": "q",
            "namespace": "test",
            **existing,
            "tasks": [{"state": "Running", "node": "node-1"}],
        },
        {"name": "incoming", "queue": "q", "namespace": "test", **incoming},
    ]
    s = scenario({"nodes": [node], "queues": [queue("q")], "jobs": jobs})
    ssn = Session(s.snapshot, s.placement)
    ssn.open()
    return ssn


def _kai_score(ssn: Session) -> float:
    """NodePreOrderFn then NodeOrderFn for the incoming pod on node-1, as the KAI test calls them."""
    task = ssn.jobs["incoming"].tasks[0]
    score = preferred_scores(ssn, task)
    return 0 if score is None else K8S_PLUGINS * score(ssn.nodes["node-1"])


# --- KAI's podaffinity_test.go ------------------------------------------------------------------------


def test_kai_no_pod_affinity_scores_zero() -> None:
    assert _kai_score(_session({}, {}, labelled=False)) == 0


def test_kai_an_existing_pods_preferred_term_that_the_pod_does_not_match_scores_zero() -> None:
    existing = {"podLabels": MY_LABEL, "affinity": _preferred("podAffinity", MY_LABEL)}
    assert _kai_score(_session(existing, {})) == 0


def test_kai_matching_preferred_affinity_scores_both_terms() -> None:
    """The pod's term matches the existing pod, and the existing pod's term matches the pod: 2 x 10."""
    both = {"podLabels": MY_LABEL, "affinity": _preferred("podAffinity", MY_LABEL)}
    assert _kai_score(_session(both, both)) == 2 * 10 * K8S_PLUGINS


def test_kai_matching_preferred_anti_affinity_scores_both_terms_negative() -> None:
    both = {"podLabels": MY_LABEL, "affinity": _preferred("podAntiAffinity", MY_LABEL)}
    assert _kai_score(_session(both, both)) == -2 * 10 * K8S_PLUGINS


# --- the rules around them -----------------------------------------------------------------------------


def test_an_existing_pods_required_affinity_weighs_nothing_with_kais_zero_hard_weight() -> None:
    term = {"labelSelector": {"matchLabels": MY_LABEL}, "topologyKey": NODE_LABEL}
    required = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    existing = {"podLabels": MY_LABEL, "affinity": required}
    ssn = _session(existing, {"podLabels": MY_LABEL})
    assert affinity_scores(ssn, ssn.jobs["incoming"].tasks[0]) is None


def test_a_term_counts_only_in_the_domain_of_the_matching_pods_node() -> None:
    both = {"podLabels": MY_LABEL, "affinity": _preferred("podAffinity", MY_LABEL, weight=7)}
    ssn = _session(both, both)
    topology = affinity_scores(ssn, ssn.jobs["incoming"].tasks[0])
    assert topology == {(NODE_LABEL, "node-1"): 14}
    assert node_score(topology, ssn.nodes["node-1"]) == 14


def test_a_pod_whose_prescore_skipped_stays_unscored_for_the_rest_of_the_session() -> None:
    """skipOrderFn is filled on Skip and only made anew at OnSessionOpen (podaffinity.go:43-56)."""
    mine = {"podLabels": MY_LABEL, "affinity": _preferred("podAffinity", {"my-label": "b"})}
    ssn = _session({"podLabels": MY_LABEL}, mine)
    task = ssn.jobs["incoming"].tasks[0]
    assert preferred_scores(ssn, task) is None  # nothing matches: PreScore skips
    assert task.name in ssn.affinity_score_skipped
    ssn.open()
    assert task.name not in ssn.affinity_score_skipped


# --- in the simulator ----------------------------------------------------------------------------------

HOST = "kubernetes.io/hostname"


def _spread_doc(weight_kind: str) -> dict[str, Any]:
    nodes = [{"name": n, "gpus": 8, "labels": {HOST: n}} for n in ("a", "b")]
    affinity = _preferred(weight_kind, {"app": "web"}, key=HOST)
    web = {"queue": "q", "gpu": 1, "podLabels": {"app": "web"}, "affinity": affinity}
    jobs = [
        {"name": "first", **web, "tasks": [{"state": "Running", "node": "a"}]},
        {"name": "second", **web},
        {"name": "filler", "queue": "q", "gpu": 2, "tasks": [{"state": "Running", "node": "b"}]},
    ]
    return {"actions": ["allocate"], "nodes": nodes, "queues": [queue("q")], "jobs": jobs}


def test_preferred_anti_affinity_sends_a_replica_away_from_its_sibling_against_binpack() -> None:
    """Binpack alone prefers b (fewer free GPUs); the sibling on a scores a at -2 x 100."""
    doc = _spread_doc("podAntiAffinity")
    doc["nodes"][0]["gpus"] = 4  # a is now the fuller node: binpack would pick it
    assert run(doc).tasks["second-0"].node == "b"


def test_preferred_affinity_draws_a_replica_to_its_sibling_against_binpack() -> None:
    assert run(_spread_doc("podAffinity")).tasks["second-0"].node == "a"


def test_without_preferred_terms_binpack_decides() -> None:
    doc = _spread_doc("podAffinity")
    for job in doc["jobs"]:
        job.pop("affinity", None)
    assert run(doc).tasks["second-0"].node == "b"


@pytest.mark.parametrize(
    ("weight", "message"),
    [(0, r"weight: must be an integer 1\.\.100, got 0"), (101, r"got 101"), ("5", r"got '5'")],
)
def test_a_preferred_term_weight_outside_1_to_100_names_the_key(weight: Any, message: str) -> None:
    doc = _spread_doc("podAffinity")
    doc["jobs"][1]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] = weight
    with pytest.raises(ScenarioError, match=message):
        scenario(doc)


def test_a_pod_skipped_once_is_not_scored_even_after_a_matching_pod_is_placed() -> None:
    """The skip outlives the PreScore that found nothing: a later PreScore that would score is ignored."""
    mine = {"podLabels": {"my-label": "b"}, "affinity": _preferred("podAffinity", {"my-label": "b"})}
    ssn = _session({"podLabels": MY_LABEL}, mine)
    task = ssn.jobs["incoming"].tasks[0]
    assert preferred_scores(ssn, task) is None
    twin = ssn.jobs["existing"].tasks[0]
    twin.req.labels = {"my-label": "b"}  # as if a matching pod now ran on node-1
    assert affinity_scores(ssn, task) == {(NODE_LABEL, "node-1"): 10}
    assert preferred_scores(ssn, task) is None


def test_a_victim_evicted_in_a_simulation_counts_against_its_own_node() -> None:
    """It is still in KAI's NodeInfo as Releasing (node_info.go:575-581) and processExistingPod has no exception
    for the pod itself: its self-matching anti-affinity term weighs on its old node twice."""
    spread = {"podLabels": MY_LABEL, "affinity": _preferred("podAntiAffinity", MY_LABEL, weight=30)}
    ssn = _session(spread, {})
    victim = ssn.jobs["existing"].tasks[0]
    Statement(ssn).evict(victim)
    assert affinity_scores(ssn, victim) == {(NODE_LABEL, "node-1"): -60}


def test_an_existing_pods_preference_orders_nodes_for_a_pod_without_terms() -> None:
    doc = _spread_doc("podAntiAffinity")
    doc["nodes"][0]["gpus"] = 4  # binpack alone would pick a
    doc["jobs"][1].pop("affinity")
    assert run(doc).tasks["second-0"].node == "b"
