"""Node constraints: nodeSelector, required node affinity and tolerations against taints decide where a pod may go.

KAI@v0.17.0 runs Kubernetes' NodeAffinity and TaintToleration filter plugins as predicates
(pkg/scheduler/k8s_internal/predicates/predicates.go:67-150; k8s.io/kubernetes v1.35.4 in go.mod) and scores
with neither (NewSessionScorePredicates, predicates.go:167-182, has only inter-pod affinity). The matching rules
are Kubernetes': k8s.io/component-helpers scheduling/corev1/nodeaffinity (terms ORed, requirements ANDed, an empty
term matches nothing, Gt/Lt as int64), k8s.io/apimachinery labels (NotIn and DoesNotExist hold for a missing label;
NewRequirement refuses a key or value that is no label key or value, and its term then matches nothing)
and k8s.io/api core/v1 toleration.go ToleratesTaint (the Lt/Gt toleration operators sit behind the
TaintTolerationComparisonOperators gate, alpha and off in v1.35). A pod's scheduling signature hashes its node
selector, affinity and tolerations (pod_info/scheduling_constraints_signature.go:19-50).
"""

from __future__ import annotations

from typing import Any

import pytest
from placement_testlib import queue, run, scenario

from placement.model import Node, NodeConstraints, Taint
from placement.node_constraints import admits, parse_constraints
from placement.scenario import ScenarioError
from placement.session import Session
from placement.signatures import job_signature

GPU_NODE = Node("gpu-1", labels={"gpu": "h100", "rack": "7", "zone": "a"})


def _required(*expressions: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> NodeConstraints:
    term: dict[str, Any] = {"matchExpressions": list(expressions)}
    if fields is not None:
        term["matchFields"] = fields
    required = {"nodeSelectorTerms": [term]}
    return parse_constraints(
        {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}}
    )


@pytest.mark.parametrize(
    ("expression", "matches"),
    [
        ({"key": "gpu", "operator": "In", "values": ["a100", "h100"]}, True),
        ({"key": "gpu", "operator": "In", "values": ["a100"]}, False),
        ({"key": "gpu", "operator": "In", "values": []}, False),  # no values: a selector Kubernetes refuses
        ({"key": "gpu", "operator": "NotIn", "values": ["a100"]}, True),
        ({"key": "missing", "operator": "NotIn", "values": ["x"]}, True),  # a missing label is not in any set
        ({"key": "gpu", "operator": "Exists"}, True),
        ({"key": "gpu", "operator": "Exists", "values": ["h100"]}, False),  # Exists takes no values
        ({"key": "missing", "operator": "DoesNotExist"}, True),
        ({"key": "gpu", "operator": "DoesNotExist"}, False),
        ({"key": "rack", "operator": "Gt", "values": ["6"]}, True),
        ({"key": "rack", "operator": "Gt", "values": ["7"]}, False),
        ({"key": "rack", "operator": "Lt", "values": ["10"]}, True),  # numbers, not strings ("7" > "10")
        ({"key": "gpu", "operator": "Gt", "values": ["1"]}, False),  # the label is not an integer
        ({"key": "missing", "operator": "Lt", "values": ["1"]}, False),
        ({"key": "rack", "operator": "Gt", "values": ["-5"]}, False),  # "-5" is no label value: no requirement
        ({"key": "gpu", "operator": "NotIn", "values": ["a b"]}, False),  # nor is "a b"
        ({"key": "gpu", "operator": "NotIn", "values": ["a\n"]}, False),  # nor "a" and a newline (Go's $)
        ({"key": "bad key!", "operator": "DoesNotExist"}, False),  # nor is the key a label key
    ],
)
def test_a_required_node_affinity_expression_matches_as_kubernetes_does(
    expression: dict[str, Any], matches: bool
) -> None:
    assert admits(_required(expression), GPU_NODE) is matches


def test_every_expression_of_a_term_must_match() -> None:
    both = _required(
        {"key": "gpu", "operator": "In", "values": ["h100"]}, {"key": "zone", "operator": "In", "values": ["b"]}
    )
    assert not admits(both, GPU_NODE)


def test_any_one_term_is_enough() -> None:
    terms = [{"matchExpressions": [{"key": "gpu", "operator": "In", "values": [g]}]} for g in ("a100", "h100")]
    required = {"nodeSelectorTerms": terms}
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}}
    assert admits(parse_constraints(spec), GPU_NODE)


def test_an_empty_term_matches_no_node() -> None:
    assert not admits(_required(), GPU_NODE)


def test_match_fields_select_the_node_by_name() -> None:
    mine = _required(fields=[{"key": "metadata.name", "operator": "In", "values": ["gpu-1"]}])
    other = _required(fields=[{"key": "metadata.name", "operator": "In", "values": ["gpu-2"]}])
    assert (admits(mine, GPU_NODE), admits(other, GPU_NODE)) == (True, False)


def test_a_node_selector_needs_every_label_with_its_value() -> None:
    assert admits(parse_constraints({"nodeSelector": {"gpu": "h100", "zone": "a"}}), GPU_NODE)
    assert not admits(parse_constraints({"nodeSelector": {"gpu": "h100", "zone": "b"}}), GPU_NODE)


TAINTED = Node("gpu-1", taints=(Taint("nvidia.com/gpu", "true", "NoSchedule"),))


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}, True),
        ({"key": "nvidia.com/gpu", "value": "true"}, True),  # operator "" is Equal, effect "" is any
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "false"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),  # no key: every taint
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Gt", "value": "0"}, False),  # alpha gate, off by default
    ],
)
def test_a_toleration_tolerates_a_taint_as_kubernetes_does(toleration: dict[str, str], tolerated: bool) -> None:
    assert admits(parse_constraints({"tolerations": [toleration]}), TAINTED) is tolerated


def test_a_prefer_no_schedule_taint_keeps_no_pod_off() -> None:
    soft = Node("n", taints=(Taint("spot", "", "PreferNoSchedule"),))
    assert admits(NodeConstraints(), soft)


# ---- in a simulation ---------------------------------------------------------------------------------------


def _doc(nodes: list[dict[str, Any]], jobs: list[dict[str, Any]], actions: list[str] | None = None) -> dict[str, Any]:
    return {"actions": actions or ["allocate"], "nodes": nodes, "queues": [queue("q")], "jobs": jobs}


H100 = {"nodeSelector": {"gpu": "h100"}}
GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]


def test_a_pod_with_a_node_selector_goes_to_a_matching_node_though_binpack_prefers_another() -> None:
    nodes = [
        {"name": "small", "gpus": 2, "labels": {"gpu": "a100"}},
        {"name": "big", "gpus": 8, "labels": {"gpu": "h100"}},
    ]
    result = run(_doc(nodes, [{"name": "j", "queue": "q", "gpu": 1, **H100}]))
    assert result.tasks["j-0"].node == "big"


def test_a_pod_that_does_not_tolerate_a_taint_avoids_the_node() -> None:
    nodes = [{"name": "tainted", "gpus": 2, "taints": GPU_TAINT}, {"name": "open", "gpus": 8}]
    result = run(_doc(nodes, [{"name": "j", "queue": "q", "gpu": 1}]))
    assert result.tasks["j-0"].node == "open"


def test_a_pod_no_node_admits_stays_pending_and_says_why() -> None:
    nodes = [{"name": "tainted", "gpus": 2, "taints": GPU_TAINT}]
    result = run(_doc(nodes, [{"name": "j", "queue": "q", "gpu": 1}]))
    assert result.tasks["j-0"].status == "Pending"
    assert result.reasons["j"].code == "node-constraints"
    assert "has the taint nvidia.com/gpu=true:NoSchedule" in result.reasons["j"].message


def test_a_pod_whose_room_is_only_on_nodes_it_may_not_use_names_what_keeps_it_off() -> None:
    """The open node has no GPU free: its closest miss would hide that the tainted one has room."""
    nodes = [{"name": "tainted", "gpus": 2, "taints": GPU_TAINT}, {"name": "open", "gpus": 0}]
    result = run(_doc(nodes, [{"name": "j", "queue": "q", "gpu": 1}]))
    reason = result.reasons["j"]
    assert reason.code == "node-constraints"
    assert reason.message == (
        "the nodes with room for it keep it off: node tainted has the taint nvidia.com/gpu=true:NoSchedule, "
        "which it does not tolerate"
    )


def test_a_task_s_node_selector_replaces_its_job_s() -> None:
    nodes = [{"name": "a", "gpus": 1, "labels": {"gpu": "a100"}}, {"name": "h", "gpus": 1, "labels": {"gpu": "h100"}}]
    job = {"name": "j", "queue": "q", "gpu": 1, **H100, "tasks": [{}, {"nodeSelector": {"gpu": "a100"}}]}
    result = run(_doc(nodes, [job]))
    assert (result.tasks["j-0"].node, result.tasks["j-1"].node) == ("h", "a")


def test_a_preemptor_evicts_only_where_it_may_go() -> None:
    # Unconstrained, the younger victim (low-h) would go first; the preemptor may only use the a100 node.
    nodes = [{"name": "a", "gpus": 1, "labels": {"gpu": "a100"}}, {"name": "h", "gpus": 1, "labels": {"gpu": "h100"}}]
    low = [
        {"name": f"low-{n}", "queue": "q", "priority": 10, "gpu": 1, "tasks": [{"state": "Running", "node": n}]}
        for n in ("a", "h")
    ]
    high = {"name": "high", "queue": "q", "priority": 90, "gpu": 1, "nodeSelector": {"gpu": "a100"}}
    result = run(_doc(nodes, [*low, high], actions=["preempt"]))
    assert (result.tasks["low-a-0"].status, result.tasks["low-h-0"].status) == ("Releasing", "Running")
    assert (result.tasks["high-0"].status, result.tasks["high-0"].node) == ("Pipelined", "a")


def test_a_preemptor_with_a_node_selector_frees_room_on_a_tainted_node_it_tolerates() -> None:
    # The solver's AccumulatedNodeAffinities filter looks at labels only (node_affinities.go:134-154); the
    # taint is the TaintToleration predicate's, and the preemptor tolerates it.
    tolerate = {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}
    node = {"name": "n", "gpus": 2, "labels": {"gpu": "h100"}, "taints": [{"key": "dedicated", "effect": "NoSchedule"}]}
    victim = {
        "name": "low",
        "queue": "q",
        "priority": 10,
        "gpu": 2,
        **tolerate,
        "tasks": [{"state": "Running", "node": "n"}],
    }
    high = {"name": "high", "queue": "q", "priority": 90, "gpu": 2, **H100, **tolerate}
    result = run(_doc([node], [victim, high], actions=["preempt"]))
    assert (result.tasks["low-0"].status, result.tasks["high-0"].status) == ("Releasing", "Pipelined")


def test_jobs_with_different_node_selectors_have_different_signatures() -> None:
    nodes = [{"name": "n", "labels": {"gpu": "h100"}}]
    s = scenario(_doc(nodes, [{"name": "any", "queue": "q"}, {"name": "h100", "queue": "q", **H100}]))
    ssn = Session(s.snapshot, s.placement)
    assert job_signature(ssn.jobs["any"], lambda _t, level: level or "") != job_signature(
        ssn.jobs["h100"], lambda _t, level: level or ""
    )


def test_a_scenario_taint_needs_a_known_effect() -> None:
    with pytest.raises(ScenarioError, match=r"nodes\[0\]\.taints\[0\]\.effect: must be NoSchedule"):
        scenario(_doc([{"name": "n", "taints": [{"key": "k", "effect": "Never"}]}], []))


def test_a_scenario_s_affinity_holds_only_kubernetes_kinds() -> None:
    job = {"name": "j", "queue": "q", "affinity": {"nodeAfinity": {}}}
    with pytest.raises(
        ScenarioError, match=r"jobs\[0\]\.affinity: must hold only nodeAffinity, podAffinity, podAntiAffinity"
    ):
        scenario(_doc([{"name": "n"}], [job]))


def test_a_scenario_s_affinity_operator_must_be_kubernetes_own() -> None:
    bad = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Like"}]}]}
    job = {
        "name": "j",
        "queue": "q",
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": bad}},
    }
    with pytest.raises(ScenarioError, match=r"operator: must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt"):
        scenario(_doc([{"name": "n"}], [job]))
