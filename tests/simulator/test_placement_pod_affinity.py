"""Required inter-pod affinity and anti-affinity, rule by rule (placement.pod_affinity).

KAI@v0.17.0 runs Kubernetes' InterPodAffinity filter as a predicate (pkg/scheduler/k8s_internal/predicates/
predicates.go:109-119) over every pod its session holds on a node (node_info.go:419, 516). The rules are
k8s.io/kubernetes v1.35 pkg/scheduler/framework/plugins/interpodaffinity/filtering.go (satisfyPodAffinity,
satisfyPodAntiAffinity, satisfyExistingPodsAntiAffinity) and k8s.io/kubernetes pkg/scheduler/framework/types.go
(AffinityTerm.Matches: the term's namespaces, or the owner's when none are given). KAI's own cases are
tests/data/kai-extra/ipa01-03 (allocate/interpod_affinity_test.go).
"""

from __future__ import annotations

from typing import Any

import pytest
from placement_testlib import queue, run, scenario

from placement.pod_affinity import AffinityCheck
from placement.session import Session
from placement.statement import Statement

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def _node(name: str, zone: str | None = "east") -> dict[str, Any]:
    labels = {HOST: name} | ({ZONE: zone} if zone else {})
    return {"name": name, "gpus": 2, "labels": labels}


def _term(key: str, labels: dict[str, str] | None, **extra: Any) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": key, **extra}
    if labels is not None:
        term["labelSelector"] = {"matchLabels": labels}
    return term


def _pod(name: str, node: str | None = None, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    job: dict[str, Any] = {"name": name, "queue": "q", "gpu": 1, "podLabels": labels or {}, **spec}
    job["tasks"] = [{"state": "Running", "node": node}] if node else [{}]
    return job


def _placed(nodes: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> str | None:
    result = run({"actions": ["allocate"], "nodes": nodes, "queues": [queue("q")], "jobs": jobs})
    task = result.tasks["new-0"]
    return task.node if task.status == "Binding" else None


def _anti(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}}


def _affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}}


DB = {"app": "db"}


def test_anti_affinity_keeps_a_pod_off_the_node_of_a_matching_pod() -> None:
    # Binpack would pick the busier node a.
    jobs = [_pod("db", "a", DB), _pod("new", **_anti(_term(HOST, DB)))]
    assert _placed([_node("a"), _node("b")], jobs) == "b"


def test_an_existing_pod_s_anti_affinity_keeps_a_matching_newcomer_away() -> None:
    # satisfyExistingPodsAntiAffinity: the running pod's term, matched against the incoming pod's labels.
    jobs = [_pod("lonely", "a", **_anti(_term(HOST, DB))), _pod("new", labels=DB)]
    assert _placed([_node("a"), _node("b")], jobs) == "b"


def test_a_newcomer_the_existing_anti_affinity_does_not_select_may_share_the_node() -> None:
    jobs = [_pod("lonely", "a", **_anti(_term(HOST, DB))), _pod("new", labels={"app": "web"})]
    assert _placed([_node("a"), _node("b")], jobs) == "a"


def test_affinity_needs_a_matching_pod_in_the_same_domain() -> None:
    jobs = [_pod("db", "a", DB), _pod("new", **_affinity(_term(ZONE, DB)))]
    assert _placed([_node("a", "east"), _node("b", "west")], jobs) == "a"


def test_affinity_needs_the_topology_label_on_the_node() -> None:
    jobs = [_pod("db", "a", DB), _pod("new", **_affinity(_term(ZONE, DB)))]
    assert _placed([_node("a", None), _node("b", None)], jobs) is None


def test_the_first_pod_of_a_group_with_affinity_to_itself_may_go_anywhere_with_the_key() -> None:
    # No pod matches anywhere and the pod matches its own term: allowed (filtering.go satisfyPodAffinity).
    assert _placed([_node("a")], [_pod("new", labels=DB, **_affinity(_term(ZONE, DB)))]) == "a"


def test_a_first_pod_that_does_not_match_its_own_affinity_waits() -> None:
    assert _placed([_node("a")], [_pod("new", labels={"app": "web"}, **_affinity(_term(ZONE, DB)))]) is None


def test_a_term_counts_only_pods_in_its_namespaces() -> None:
    # No namespaces given: the term owner's own ("default"); the db pod runs in another one.
    jobs = [_pod("db", "a", DB, namespace="data"), _pod("new", **_anti(_term(HOST, DB)))]
    assert _placed([_node("a"), _node("b")], jobs) == "a"


@pytest.mark.parametrize(("term_extra", "node"), [({"namespaces": ["data"]}, "b"), ({"namespaceSelector": {}}, "b")])
def test_a_term_may_name_other_namespaces_or_all_of_them(term_extra: dict[str, Any], node: str) -> None:
    jobs = [_pod("db", "a", DB, namespace="data"), _pod("new", **_anti(_term(HOST, DB, **term_extra)))]
    assert _placed([_node("a"), _node("b")], jobs) == node


def test_a_term_without_a_label_selector_matches_no_pod() -> None:
    jobs = [_pod("db", "a", DB), _pod("new", **_anti(_term(HOST, None)))]
    assert _placed([_node("a"), _node("b")], jobs) == "a"


def test_a_victim_evicted_in_a_simulation_is_kept_off_its_own_node_by_its_own_anti_affinity() -> None:
    """While the solver re-places a victim it is still in the node's NodeInfo as Releasing (node_info.go:575-581),
    and the InterPodAffinity filter has no exception for the pod itself."""
    doc = {
        "nodes": [_node("a"), _node("b")],
        "queues": [queue("q")],
        "jobs": [_pod("db", "a", DB, **_anti(_term(HOST, DB)))],
    }
    s = scenario(doc)
    ssn = Session(s.snapshot, s.placement)
    ssn.open()
    victim = ssn.jobs["db"].tasks[0]
    Statement(ssn).evict(victim)
    check = AffinityCheck(ssn, victim)
    assert (check.passes(ssn.nodes["a"]), check.passes(ssn.nodes["b"])) == (False, True)


# --- the pending reason -----------------------------------------------------------------------------------


def _reason(nodes: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> tuple[str, str]:
    result = run({"actions": ["allocate"], "nodes": nodes, "queues": [queue("q")], "jobs": jobs})
    reason = result.reasons["new"]
    return reason.code, reason.message


def test_a_pod_its_own_anti_affinity_keeps_off_the_only_node_with_room_says_so() -> None:
    jobs = [_pod("db", "a", DB), _pod("new", **_anti(_term(HOST, DB)))]
    assert _reason([_node("a")], jobs) == (
        "pod-affinity",
        "inter-pod affinity keeps it off every node with room for it: on a, its anti-affinity selects a pod in that "
        "node's domain",
    )


def test_a_pod_whose_affinity_finds_no_partner_in_the_domains_with_room_says_so() -> None:
    jobs = [_pod("db", "a", DB, gpu=2), _pod("new", **_affinity(_term(ZONE, DB)))]
    nodes = [_node("a", "east"), _node("b", "west"), _node("c", "west")]
    assert _reason(nodes, jobs) == (
        "pod-affinity",
        "inter-pod affinity keeps it off every node with room for it: on b, its affinity finds no matching pod in "
        "that node's domain, or the node lacks the topology label (and 1 more node)",
    )


def test_a_pod_an_existing_anti_affinity_keeps_away_says_so() -> None:
    jobs = [_pod("lonely", "a", **_anti(_term(HOST, DB))), _pod("new", labels=DB)]
    assert _reason([_node("a")], jobs) == (
        "pod-affinity",
        "inter-pod affinity keeps it off every node with room for it: on a, the anti-affinity of a pod in that node's "
        "domain selects it",
    )


def test_affinity_is_not_blamed_when_a_node_with_room_passes_it() -> None:
    """a: its anti-affinity refuses it; b: affinity allows it, but its host port is taken there. Neither reason
    covers every node with room, so neither is given."""
    port = [{"hostPort": 9000}]
    jobs = [
        _pod("db", "a", DB),
        _pod("web", "b", hostPorts=port),
        _pod("new", hostPorts=port, **_anti(_term(HOST, DB))),
    ]
    code, _ = _reason([_node("a"), _node("b")], jobs)
    assert code not in ("pod-affinity", "host-ports")


@pytest.mark.parametrize("key", ["matchLabelKeys", "mismatchLabelKeys"])
def test_label_keys_are_refused_in_a_scenario_for_the_selector_the_api_server_would_write(key: str) -> None:
    """The API server folds them into labelSelector at pod creation (k8s pkg/registry/core/pod/strategy.go,
    applyMatchLabelKeysAndMismatchLabelKeys); the scheduler, KAI included, reads only the result."""
    from placement.scenario import ScenarioError

    term = _term(HOST, {"app": "web"}, **{key: ["pod-template-hash"]})
    new = _pod("new", affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    doc = {"actions": ["allocate"], "nodes": [_node("a")], "queues": [queue("q")], "jobs": [new]}
    with pytest.raises(ScenarioError, match=rf"jobs\[0\]\.affinity\.podAntiAffinity\..*\[0\]\.{key}: the API server"):
        scenario(doc)


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ({"key": "app", "operator": "In", "values": []}, "operator In needs at least one value"),
        ({"key": "app", "operator": "Exists", "values": ["x"]}, "operator Exists takes no values"),
    ],
)
def test_a_selector_kubernetes_cannot_build_is_refused_in_a_scenario(expression: dict[str, Any], words: str) -> None:
    """KAI's PreFilter would refuse the pod (k8s v1.35.4 interpodaffinity/filtering.go:283-285); the API server
    refuses it first, so a scenario holding one is a mistake in the scenario."""
    from placement.scenario import ScenarioError

    term = {"topologyKey": HOST, "labelSelector": {"matchExpressions": [expression]}}
    new = _pod("new", **_anti(term))
    doc = {"actions": ["allocate"], "nodes": [_node("a")], "queues": [queue("q")], "jobs": [new]}
    with pytest.raises(ScenarioError, match=rf"labelSelector\.matchExpressions\[0\]\.values: {words}"):
        scenario(doc)


def test_a_scenario_pod_with_more_inter_pod_terms_than_the_limit_is_refused() -> None:
    from placement.scenario import ScenarioError
    from placement.scenario_reader import MAX_TERMS_PER_POD

    terms = [_term(HOST, {"k": str(i)}) for i in range(MAX_TERMS_PER_POD + 1)]
    doc = {
        "actions": ["allocate"],
        "nodes": [_node("a")],
        "queues": [queue("q")],
        "jobs": [_pod("new", **_anti(*terms))],
    }
    with pytest.raises(ScenarioError, match=f"more than {MAX_TERMS_PER_POD} inter-pod terms in one pod"):
        scenario(doc)
