"""The solver's AccumulatedNodeAffinities filter, case for case from KAI's own table.

kai-scheduler/KAI-Scheduler@v0.17.0:pkg/scheduler/actions/common/solvers/accumulated_scenario_filters/
node_affinities/node_affinities_test.go, TestNodeAffinitiesFilter_Filter: each case names the cluster's nodes,
the feasible ones, the preemptor's pending pods and the victims, and whether the scenario passes.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from placement.model import NO_CONSTRAINTS, Node, NodeConstraints, Taint
from placement.node_affinity_filter import AccumulatedNodeAffinities
from placement.node_constraints import parse_constraints

A100 = {"gpu-type": "A100"}
V100 = {"gpu-type": "V100"}


def _required(term: dict[str, Any]) -> NodeConstraints:
    required = {"nodeSelectorTerms": [term]}
    return parse_constraints(
        {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}}
    )


def _pod(constraints: NodeConstraints, name: str = "p", node: str | None = None) -> Any:
    return SimpleNamespace(name=name, node=node, req=SimpleNamespace(constraints=constraints))


SELECTOR_A100 = parse_constraints({"nodeSelector": A100})
AFFINITY_A100 = _required({"matchExpressions": [{"key": "gpu-type", "operator": "In", "values": ["A100"]}]})
FIELDS_SPECIFIC = _required({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-specific"]}]})

CASES = [
    # (name, all nodes {name: labels}, feasible names, pending constraints, victims' nodes, passes)
    ("pending pod matches node selector", {"node-a100": A100}, ["node-a100"], [SELECTOR_A100], [], True),
    ("pending pod node selector has no matching node", {"node-v100": V100}, ["node-v100"], [SELECTOR_A100], [], False),
    ("pending pod with NodeAffinity matches node", {"node-a100": A100}, ["node-a100"], [AFFINITY_A100], [], True),
    (
        "mixed pending pods: affinity pod matches, pod without affinity is skipped",
        {"node-a100": A100},
        ["node-a100"],
        [SELECTOR_A100, NO_CONSTRAINTS],
        [],
        True,
    ),
    (
        "mixed pending pods: affinity pod has no matching node",
        {"node-v100": V100},
        ["node-v100"],
        [SELECTOR_A100, NO_CONSTRAINTS],
        [],
        False,
    ),
    (
        "victim running on matching node expands feasible set",
        {"node-a100": A100, "node-v100": V100},
        ["node-v100"],
        [SELECTOR_A100],
        ["node-a100"],
        True,
    ),
    (
        "MatchFields targets node that exists in cluster but is not feasible",
        {"node-specific": {}, "node-other": {}},
        ["node-other"],
        [FIELDS_SPECIFIC],
        [],
        True,
    ),
    (
        "MatchFields targets node absent from the cluster",
        {"node-other": {}},
        ["node-other"],
        [FIELDS_SPECIFIC],
        [],
        False,
    ),
    (
        "victim on non-matching node does not satisfy affinity",
        {"node-a100": A100, "node-v100": V100},
        ["node-v100"],
        [SELECTOR_A100],
        ["node-v100"],
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "nodes", "feasible", "pending", "victims", "passes"), CASES, ids=[c[0] for c in CASES]
)
def test_kai_node_affinities_filter_case(
    name: str,
    nodes: dict[str, dict[str, str]],
    feasible: list[str],
    pending: list[NodeConstraints],
    victims: list[str],
    passes: bool,
) -> None:
    states: Any = {n: SimpleNamespace(spec=Node(n, labels=labels)) for n, labels in nodes.items()}
    f = AccumulatedNodeAffinities.for_pending([_pod(c) for c in pending], feasible, states)
    assert f is not None
    f.add_victims([_pod(NO_CONSTRAINTS, f"victim-{i}", node) for i, node in enumerate(victims)])
    assert f.passes() is passes


def test_the_filter_does_not_look_at_taints() -> None:
    # node_affinities.go:134-154 runs the NodeAffinity plugin only; a taint the pod does not tolerate is the
    # TaintToleration predicate's business, later, in the simulation.
    tainted: Any = {"node-a100": SimpleNamespace(spec=Node("node-a100", labels=A100, taints=(Taint("dedicated"),)))}
    f = AccumulatedNodeAffinities.for_pending([_pod(SELECTOR_A100)], ["node-a100"], tainted)
    assert f is not None
    assert f.passes()


def test_no_filter_when_no_pending_pod_has_a_required_node_affinity() -> None:
    # Preferred affinity only, or tolerations only: hasRequiredNodeAffinity is false for every pod.
    preferred = {
        "weight": 1,
        "preference": {"matchExpressions": [{"key": "gpu-type", "operator": "In", "values": ["A100"]}]},
    }
    preferring = parse_constraints(
        {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred]}}}
    )
    tolerating = parse_constraints({"tolerations": [{"operator": "Exists"}]})
    assert AccumulatedNodeAffinities.for_pending([_pod(preferring), _pod(tolerating)], [], {}) is None
