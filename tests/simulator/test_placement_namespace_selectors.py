"""Inter-pod terms' namespaceSelector, matched against the Namespaces' labels (placement.namespace_selectors).

k8s.io/kubernetes v1.35 pkg/scheduler/framework/types.go AffinityTerm.Matches (a listed namespace, or one whose
labels the selector matches) and interpodaffinity/plugin.go mergeAffinityTermNamespacesIfNotEmpty (the incoming
pod's own terms: the selector becomes the matching namespaces). KAI@v0.17.0 builds the plugin on its live
informers (k8s_internal/plugins/plugins.go:84; cache/cache.go:206 registers them before :247 starts them).
"""

from __future__ import annotations

from typing import Any

import pytest
from placement_testlib import queue, run, scenario

from placement.namespace_selectors import has_selectors
from placement.node_constraints import parse_constraints
from placement.scenario import ScenarioError

HOST = "kubernetes.io/hostname"
DB = {"app": "db"}
TEAM = {"matchLabels": {"team": "data"}}


def _node(name: str) -> dict[str, Any]:
    return {"name": name, "gpus": 2, "labels": {HOST: name}}


def _anti(namespace_selector: dict[str, Any], namespaces: list[str] | None = None) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": HOST, "labelSelector": {"matchLabels": DB}}
    term["namespaceSelector"] = namespace_selector
    if namespaces is not None:
        term["namespaces"] = namespaces
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


def _doc(jobs: list[dict[str, Any]], labels: dict[str, dict[str, str]] | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"actions": ["allocate"], "nodes": [_node("a"), _node("b")], "queues": [queue("q")]}
    doc["jobs"] = jobs
    if labels is not None:
        doc["namespaceLabels"] = labels
    return doc


def _placed(doc: dict[str, Any]) -> str | None:
    task = run(doc).tasks["new-0"]
    return task.node if task.status == "Binding" else None


DB_POD = {"name": "db", "queue": "q", "gpu": 1, "namespace": "warehouse", "podLabels": DB}
DB_POD["tasks"] = [{"state": "Running", "node": "a"}]


def test_a_namespace_selector_reaches_the_namespaces_whose_labels_match() -> None:
    """Binpack would take a, where the db pod runs in a namespace labelled team=data."""
    new = {"name": "new", "queue": "q", "gpu": 1, **_anti(TEAM)}
    assert _placed(_doc([DB_POD, new], {"warehouse": {"team": "data"}, "default": {}})) == "b"


def test_a_namespace_selector_leaves_out_the_namespaces_whose_labels_do_not_match() -> None:
    new = {"name": "new", "queue": "q", "gpu": 1, **_anti(TEAM)}
    assert _placed(_doc([DB_POD, new], {"warehouse": {"team": "web"}})) == "a"


def test_without_namespace_labels_a_selector_matches_only_the_listed_namespaces() -> None:
    new = {"name": "new", "queue": "q", "gpu": 1, **_anti(TEAM)}
    assert _placed(_doc([DB_POD, new], None)) == "a"
    listed = {"name": "new", "queue": "q", "gpu": 1, **_anti(TEAM, ["warehouse"])}
    assert _placed(_doc([DB_POD, listed], None)) == "b"


def test_a_pods_namespace_exists_with_its_name_label_whether_listed_or_not() -> None:
    """Every namespace a pod lives in exists, and the API server labels it with its name (k8s v1.35
    AffinityTerm.Matches over GetNamespaceLabelsSnapshot): the usual idiom works without namespaceLabels."""
    by_name = {"matchLabels": {"kubernetes.io/metadata.name": "warehouse"}}
    new = {"name": "new", "queue": "q", "gpu": 1, **_anti(by_name)}
    assert _placed(_doc([DB_POD, new], None)) == "b"


def test_an_unlisted_namespace_has_no_labels_but_its_name_for_a_does_not_exist_selector() -> None:
    absent = {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}
    new = {"name": "new", "queue": "q", "gpu": 1, **_anti(absent)}
    assert _placed(_doc([DB_POD, new], {"default": {"team": "web"}})) == "b"


def test_an_existing_pods_selector_is_matched_against_the_newcomers_namespace() -> None:
    """satisfyExistingPodsAntiAffinity: the running pod's term, with the incoming pod's namespace labels."""
    lonely = {"name": "lonely", "queue": "q", "gpu": 1, "namespace": "ops", **_anti(TEAM)}
    lonely["tasks"] = [{"state": "Running", "node": "a"}]
    new = {"name": "new", "queue": "q", "gpu": 1, "namespace": "warehouse", "podLabels": DB}
    assert _placed(_doc([lonely, new], {"warehouse": {"team": "data"}, "ops": {}})) == "b"
    assert _placed(_doc([lonely, new], {"warehouse": {"team": "web"}, "ops": {}})) == "a"


@pytest.mark.parametrize("selector", [{}, {"matchLabels": {}}, {"matchExpressions": []}])
def test_an_empty_namespace_selector_selects_every_namespace(selector: dict[str, Any]) -> None:
    [term] = parse_constraints(_anti(selector)).pod_anti_affinity
    assert (term.all_namespaces, term.namespace_selector, term.own_namespace) == (True, None, False)


def test_a_non_empty_selector_is_kept_for_resolution_and_names_no_own_namespace() -> None:
    [term] = parse_constraints(_anti(TEAM)).pod_anti_affinity
    assert (term.all_namespaces, term.own_namespace) == (False, False)
    assert term.namespace_selector == ((("team", "data"),), ())


def test_resolving_keeps_the_pods_of_a_count_style_job_sharing_one_spec() -> None:
    """TaskRequest parses one request per spec object (placement.tasks); resolution must not split them."""
    gang = {"name": "new", "queue": "q", "gpu": 1, "tasks": 3, **_anti(TEAM)}
    snapshot = scenario(_doc([gang], {"warehouse": {"team": "data"}})).snapshot
    tasks = snapshot.jobs[0].tasks
    assert tasks[0] is tasks[1] is tasks[2]
    assert tasks[0].constraints.pod_anti_affinity[0].namespaces == {"warehouse"}
    assert not has_selectors(snapshot)


def test_malformed_namespace_labels_name_the_key() -> None:
    with pytest.raises(ScenarioError, match=r"namespaceLabels\.warehouse: must be a mapping of label keys to values"):
        scenario(_doc([DB_POD], {"warehouse": ["team=data"]}))  # type: ignore[dict-item]


def test_listed_namespaces_and_those_the_selector_matches_both_count() -> None:
    """The term stands for the union (AffinityTerm.Matches: Namespaces.Has(ns) || NamespaceSelector.Matches)."""
    cache = {"name": "cache", "queue": "q", "gpu": 1, "namespace": "edge", "podLabels": DB}
    cache["tasks"] = [{"state": "Running", "node": "b"}]
    new = {"name": "new", "queue": "q", "gpu": 1, **_anti(TEAM, ["edge"])}
    doc = _doc([DB_POD, cache, new], {"warehouse": {"team": "data"}, "edge": {}})
    doc["nodes"].append(_node("c"))
    assert _placed(doc) == "c"


def test_a_selector_by_expression_on_the_name_label_the_api_server_sets() -> None:
    """Every Namespace carries kubernetes.io/metadata.name; the scenario's namespaceLabels get it too."""
    by_name = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["warehouse"]}]}
    new = {"name": "new", "queue": "q", "gpu": 1, **_anti(by_name)}
    assert _placed(_doc([DB_POD, new], {"warehouse": {}})) == "b"


def test_required_affinity_with_a_selector_finds_its_partner_in_a_matching_namespace() -> None:
    term = {"topologyKey": HOST, "labelSelector": {"matchLabels": DB}, "namespaceSelector": TEAM}
    affinity = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    busy = {"name": "busy", "queue": "q", "gpu": 1, "tasks": [{"state": "Running", "node": "b"}]}
    new = {"name": "new", "queue": "q", "gpu": 1, **affinity}
    assert _placed(_doc([DB_POD, busy, new], {"warehouse": {"team": "data"}})) == "a"
    assert _placed(_doc([DB_POD, busy, new], {"warehouse": {"team": "web"}})) is None


def test_a_preferred_term_with_a_selector_scores_the_node_of_its_partner() -> None:
    """Binpack prefers b, the busier node; the preferred affinity to db (on a, in a team=data namespace) wins."""
    term = {"topologyKey": HOST, "labelSelector": {"matchLabels": DB}, "namespaceSelector": TEAM}
    preferred = [{"weight": 50, "podAffinityTerm": term}]
    affinity = {"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}}
    db = {**DB_POD, "gpu": 0, "cpu": "1"}
    busy = {"name": "busy", "queue": "q", "gpu": 1, "tasks": [{"state": "Running", "node": "b"}]}
    new = {"name": "new", "queue": "q", "gpu": 1, **affinity}
    assert _placed(_doc([db, busy, new], {"warehouse": {"team": "data"}})) == "a"
    assert _placed(_doc([db, busy, new], {"warehouse": {"team": "web"}})) == "b"
