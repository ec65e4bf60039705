"""Which nodes a pod may go to: its nodeSelector, required node affinity and tolerations against node taints.

KAI@v0.17.0 runs Kubernetes' own filter plugins as predicates (pkg/scheduler/k8s_internal/predicates/
predicates.go:67-150): NodeAffinity (nodeSelector and requiredDuringSchedulingIgnoredDuringExecution) and
TaintToleration (taints with effect NoSchedule or NoExecute must be tolerated), from k8s.io/kubernetes v1.35.4
(go.mod). Neither scores nodes in KAI (its only Kubernetes score plugin is inter-pod affinity), so they decide
where a pod may go, never which allowed node comes first. The rules, from k8s.io/component-helpers
scheduling/corev1 (nodeaffinity and helpers.go) and k8s.io/api core/v1 toleration.go:

- nodeSelector: every key is a node label with exactly that value;
- required node affinity: any one term matches; a term matches when all its requirements do, and a term
  with none matches no node. `In`/`NotIn`/`Exists`/`DoesNotExist` as label selectors (a missing label
  satisfies NotIn and DoesNotExist); `Gt`/`Lt` need the label and one value, both decimal integers, compared
  as numbers. matchFields knows `metadata.name` with `In`/`NotIn` and one value. A requirement Kubernetes
  cannot parse makes its term match nothing;
- a toleration tolerates a taint when its effect is empty or equal, its key is empty or equal, and its
  operator is Exists, or Equal (or empty) with an equal value. The Lt/Gt toleration operators are behind an
  alpha feature gate that is off by default in v1.35, so they tolerate nothing here.

Preferred node affinity and PreferNoSchedule taints only score in the default scheduler; KAI does not use
them. The required inter-pod affinity terms are read here too and applied by placement.pod_affinity.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from placement.host_ports import HostPortError, pod_host_ports
from placement.model import (
    Node,
    NodeConstraints,
    NodeSelectorTerm,
    PodAffinityTerm,
    SelectorRequirement,
    Taint,
    Toleration,
)

__all__ = [
    "KEEP_OFF",
    "ConstraintError",
    "admits",
    "matches_affinity",
    "parse_constraints",
    "parse_taints",
    "pod_terms",
    "refusal",
    "requirement_matches",
]

KEEP_OFF = ("NoSchedule", "NoExecute")  # the taint effects that keep an untolerating pod off a node
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_INTEGER = re.compile(r"^[+-]?[0-9]+$")  # strconv.ParseInt(v, 10, 64)


def _int64(text: str) -> int | None:
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def requirement_matches(req: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    """A label selector requirement against a node's or a pod's labels."""
    op, values = req.operator, req.values
    # labels.NewRequirement refuses a key or value Kubernetes could not store as a label, and the term with it.
    if not req.label_syntax:
        return False
    present = req.key in labels
    if op == "In":
        return bool(values) and present and labels[req.key] in values
    if op == "NotIn":
        return bool(values) and (not present or labels[req.key] not in values)
    if op == "Exists":
        return not values and present
    if op == "DoesNotExist":
        return not values and not present
    if op in ("Gt", "Lt") and len(values) == 1 and present:
        bound, have = _int64(values[0]), _int64(labels[req.key])
        if bound is None or have is None:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def _field(req: SelectorRequirement, name: str) -> bool:
    if req.key != "metadata.name" or len(req.values) != 1:
        return False
    if req.operator == "In":
        return name == req.values[0]
    return req.operator == "NotIn" and name != req.values[0]


def _term(term: NodeSelectorTerm, node: Node) -> bool:
    return _term_matches(term, node.labels, node.name)


def _term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], name: str) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False
    return all(requirement_matches(r, labels) for r in term.match_expressions) and all(
        _field(r, name) for r in term.match_fields
    )


def selector_terms_match(terms: tuple[NodeSelectorTerm, ...], labels: Mapping[str, str], name: str) -> bool:
    """MatchNodeSelectorTerms: one term matches (a term with no requirements matches nothing)."""
    return any(_term_matches(t, labels, name) for t in terms)


def parse_selector_terms(raw: Any, path: str) -> tuple[NodeSelectorTerm, ...]:
    """A NodeSelector's nodeSelectorTerms (a pod's required node affinity, a PersistentVolume's node affinity)."""
    if not isinstance(raw, list):
        raise ConstraintError(f"{path}: must be a list")
    return tuple(_selector_term(t, f"{path}[{i}]") for i, t in enumerate(raw))


def _tolerates(toleration: Toleration, taint: Taint) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def _affinity_refusal(constraints: NodeConstraints, node: Node) -> str | None:
    for key, value in constraints.node_selector:
        if node.labels.get(key) != value:
            return f"its nodeSelector {key}={value} does not match node {node.name}"
    terms = constraints.required_terms
    if terms is not None and not any(_term(t, node) for t in terms):
        return f"its required node affinity does not match node {node.name}"
    return None


def matches_affinity(constraints: NodeConstraints, node: Node) -> bool:
    """The NodeAffinity plugin alone: nodeSelector and required terms, taints not looked at."""
    return _affinity_refusal(constraints, node) is None


def refusal(constraints: NodeConstraints, node: Node) -> str | None:
    """Why the node's affinity or taints keep the pod off it, or None when it may go there."""
    affinity = _affinity_refusal(constraints, node)
    if affinity is not None:
        return affinity
    for taint in node.taints:
        if taint.effect in KEEP_OFF and not any(_tolerates(t, taint) for t in constraints.tolerations):
            shown = f"{taint.key}={taint.value}" if taint.value else taint.key
            return f"node {node.name} has the taint {shown}:{taint.effect}, which it does not tolerate"
    if constraints.volume_nodes is not None and node.name not in constraints.volume_nodes:
        return f"its volumes cannot be used on node {node.name} ({constraints.volume_reason})"
    return None


def admits(constraints: NodeConstraints, node: Node) -> bool:
    return refusal(constraints, node) is None


# ---- reading them from a pod spec (scenario files and live pods alike) --------------------------------


class ConstraintError(ValueError):
    """A malformed constraint; the message starts with the key path below the pod spec."""


def _strings(raw: Any, path: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise ConstraintError(f"{path}: must be a list of strings")
    return tuple(raw)


def _mapping(raw: Any, path: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConstraintError(f"{path}: must be a mapping")
    return raw


def _requirements(raw: Any, path: str) -> tuple[SelectorRequirement, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConstraintError(f"{path}: must be a list")
    out = []
    for i, item in enumerate(raw):
        doc = _mapping(item, f"{path}[{i}]")
        key, op = doc.get("key"), doc.get("operator")
        if not isinstance(key, str) or not isinstance(op, str):
            raise ConstraintError(f"{path}[{i}]: needs a string key and operator")
        if op not in _OPERATORS:
            raise ConstraintError(f"{path}[{i}].operator: must be one of {', '.join(_OPERATORS)}, got {op!r}")
        out.append(SelectorRequirement(key, op, _strings(doc.get("values"), f"{path}[{i}].values")))
    return tuple(out)


def _selector_term(raw: Any, path: str) -> NodeSelectorTerm:
    doc = _mapping(raw, path)
    return NodeSelectorTerm(
        _requirements(doc.get("matchExpressions"), f"{path}.matchExpressions"),
        _requirements(doc.get("matchFields"), f"{path}.matchFields"),
    )


def parse_constraints(spec: Mapping[str, Any]) -> NodeConstraints:
    """The nodeSelector, affinity.nodeAffinity (required terms), tolerations and host ports of a pod spec."""
    selector = _mapping(spec.get("nodeSelector"), "nodeSelector")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in selector.items()):
        raise ConstraintError("nodeSelector: must map label keys to string values")
    node_affinity = _mapping(_mapping(spec.get("affinity"), "affinity").get("nodeAffinity"), "affinity.nodeAffinity")
    required_path = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    terms: tuple[NodeSelectorTerm, ...] | None = None
    if required is not None:
        raw_terms = _mapping(required, required_path).get("nodeSelectorTerms")
        terms = parse_selector_terms(raw_terms, f"{required_path}.nodeSelectorTerms")
    tolerations = []
    raw_tolerations = spec.get("tolerations")
    if raw_tolerations is not None and not isinstance(raw_tolerations, list):
        raise ConstraintError("tolerations: must be a list")
    for i, item in enumerate(raw_tolerations or []):
        doc = _mapping(item, f"tolerations[{i}]")
        fields = [doc.get(k, "") for k in ("key", "operator", "value", "effect")]
        if not all(isinstance(f, str) for f in fields):
            raise ConstraintError(f"tolerations[{i}]: key, operator, value and effect must be strings")
        tolerations.append(Toleration(*fields))
    affinity = _mapping(spec.get("affinity"), "affinity")
    try:
        ports = pod_host_ports(spec)
    except HostPortError as err:
        raise ConstraintError(str(err)) from None
    constraints = NodeConstraints(
        tuple(sorted(selector.items())),
        terms,
        tuple(tolerations),
        pod_affinity=pod_terms(affinity, "podAffinity"),
        pod_anti_affinity=pod_terms(affinity, "podAntiAffinity"),
        preferred_affinity=preferred_terms(affinity, "podAffinity"),
        preferred_anti_affinity=preferred_terms(affinity, "podAntiAffinity"),
        host_ports=ports,
    )
    return constraints


def _term_list(affinity: Mapping[str, Any], kind: str, when: str) -> tuple[str, list[Any]]:
    """affinity.<kind>.<when>DuringSchedulingIgnoredDuringExecution: its key path and its items."""
    field = f"{when}DuringSchedulingIgnoredDuringExecution"
    path = f"affinity.{kind}.{field}"
    raw = _mapping(affinity.get(kind), f"affinity.{kind}").get(field)
    if raw is not None and not isinstance(raw, list):
        raise ConstraintError(f"{path}: must be a list")
    return path, raw or []


def pod_terms(affinity: Mapping[str, Any], kind: str) -> tuple[PodAffinityTerm, ...]:
    """affinity.<kind>.requiredDuringSchedulingIgnoredDuringExecution (placement.pod_affinity)."""
    path, raw = _term_list(affinity, kind, "required")
    return tuple(_pod_term(item, f"{path}[{i}]") for i, item in enumerate(raw))


def preferred_terms(affinity: Mapping[str, Any], kind: str) -> tuple[PodAffinityTerm, ...]:
    """affinity.<kind>.preferredDuringSchedulingIgnoredDuringExecution: weighted terms (weight 1-100)."""
    path, raw = _term_list(affinity, kind, "preferred")
    terms = []
    for i, item in enumerate(raw):
        doc = _mapping(item, f"{path}[{i}]")
        weight = doc.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
            raise ConstraintError(f"{path}[{i}].weight: must be an integer 1..100, got {weight!r}")
        term = _pod_term(doc.get("podAffinityTerm"), f"{path}[{i}].podAffinityTerm")
        terms.append(dataclasses.replace(term, weight=weight))
    return tuple(terms)


def _pod_term(raw: Any, path: str) -> PodAffinityTerm:
    doc = _mapping(raw, path)
    key = doc.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise ConstraintError(f"{path}.topologyKey: must be a non-empty label key")
    selector = doc.get("labelSelector")
    match_labels, expressions = parse_label_selector(selector, f"{path}.labelSelector")
    namespace_selector = doc.get("namespaceSelector")
    parsed = parse_label_selector(namespace_selector, f"{path}.namespaceSelector")
    return PodAffinityTerm(
        topology_key=key,
        selector=selector is not None,
        match_labels=match_labels,
        match_expressions=expressions,
        namespaces=frozenset(_strings(doc.get("namespaces"), f"{path}.namespaces")),
        all_namespaces=namespace_selector is not None and parsed == ((), ()),
        own_namespace=not doc.get("namespaces") and namespace_selector is None,
        namespace_selector=parsed if parsed != ((), ()) else None,
    )


LabelSelector = tuple[tuple[tuple[str, str], ...], tuple[SelectorRequirement, ...]]


def parse_label_selector(raw: Any, path: str) -> LabelSelector:
    """A metav1.LabelSelector (null: empty) as (matchLabels sorted, matchExpressions); the operators
    LabelSelectorAsSelector takes are In, NotIn, Exists and DoesNotExist."""
    labels = _mapping(_mapping(raw, path).get("matchLabels"), f"{path}.matchLabels")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise ConstraintError(f"{path}.matchLabels: must map label keys to string values")
    expressions = _requirements(_mapping(raw, path).get("matchExpressions"), f"{path}.matchExpressions")
    if any(r.operator in ("Gt", "Lt") for r in expressions):
        raise ConstraintError(f"{path}.matchExpressions: a label selector takes In, NotIn, Exists, DoesNotExist")
    return tuple(sorted(labels.items())), expressions


def label_selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    match_labels, expressions = selector
    return all(labels.get(k) == v for k, v in match_labels) and all(requirement_matches(r, labels) for r in expressions)


def parse_taints(raw: Any) -> tuple[Taint, ...]:
    """A node's spec.taints."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConstraintError("taints: must be a list")
    out = []
    for i, item in enumerate(raw):
        doc = _mapping(item, f"taints[{i}]")
        key, value, effect = doc.get("key"), doc.get("value", ""), doc.get("effect")
        if not isinstance(key, str) or not key or not isinstance(value, str):
            raise ConstraintError(f"taints[{i}]: needs a string key (and a string value, if any)")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ConstraintError(
                f"taints[{i}].effect: must be NoSchedule, PreferNoSchedule or NoExecute, got {effect!r}"
            )
        out.append(Taint(key, value, effect))
    return tuple(out)
