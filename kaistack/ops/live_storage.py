"""The storage objects of a read (claims, volumes, classes) and Kubernetes' FindMatchingVolume over them.

Read once per `kaistack diagnose`: each volume's node affinity becomes the set of nodes it admits, each volume is
read once into what FindMatchingVolume compares, and a claim's candidates are worked out once and shared by the
claims alike to it (many come from one StatefulSet template), so the per-node check of live_volumes.py is a
lookup. component-helpers v0.35.4 storage/volume/pv_helpers.go:186-329 (FindMatchingVolume) and
k8s.io/kubernetes v1.35.4 pkg/scheduler/framework/plugins/volumebinding/binder.go (pvCache.ListPVs, by class).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kaistack.guardrails.podspec import dig, mapping, seq
from kaistack.ops.live_pods import object_name, object_namespace
from placement.model import Node, NodeSelectorTerm
from placement.node_constraints import (
    ConstraintError,
    LabelSelector,
    label_selector_matches,
    parse_label_selector,
    parse_selector_terms,
    selector_terms_match,
)
from placement.quantity import QuantityError, parse_quantity

__all__ = ["Candidates", "Sorted", "Storage", "quantity", "storage_class", "storage_of"]

BETA_CLASS = "volume.beta.kubernetes.io/storage-class"


@dataclass
class Storage:
    """The claims (by namespace and name), volumes and classes (by name) that were read. Volumes or classes not
    read (None) leave what depends on them unchecked: a bound claim's volume, a waiting claim's binding."""

    claims: Mapping[tuple[str, str], Mapping[str, Any]]
    volumes: Mapping[str, Mapping[str, Any]] | None
    classes: Mapping[str, Mapping[str, Any]] | None
    # The nodes of the read (node_set's domain).
    nodes: tuple[Node, ...] = ()
    # Per volume, the nodes its node affinity admits, and per claim its volume candidates: each worked out once,
    # not once per node and claim (a cluster can have thousands of local volumes).
    _node_sets: dict[str, frozenset[str] | None] = field(default_factory=dict, compare=False)
    _indexes: dict[str, Candidates | str] = field(default_factory=dict, compare=False)
    _referenced: set[tuple[str, str]] = field(default_factory=set, compare=False)
    _by_class: dict[str, list[_Volume]] | None = field(default=None, compare=False)

    def node_set(self, name: str) -> frozenset[str] | None:
        """CheckNodeAffinity's nodes for the volume, against nodes that have their labels only (matchFields on
        the name never match); None: no affinity (every node)."""
        if name in self._node_sets:
            return self._node_sets[name]
        required = dig((self.volumes or {}).get(name), "spec", "nodeAffinity", "required")
        found: frozenset[str] | None = None
        if required is not None:
            terms: list[NodeSelectorTerm] = []
            for term in seq(mapping(required).get("nodeSelectorTerms")):
                try:
                    terms += parse_selector_terms([term], "nodeSelectorTerms")
                except ConstraintError:
                    continue  # LazyErrorNodeSelector leaves out a term it cannot parse (nodeaffinity.go:84-103)
            found = frozenset(n.name for n in self.nodes if selector_terms_match(tuple(terms), n.labels, ""))
        self._node_sets[name] = found
        return found

    def of_class(self, class_name: str) -> list[_Volume]:
        """pvCache.ListPVs: the volumes of a class, in reading order, each read once."""
        if self._by_class is None:
            by_class: dict[str, list[_Volume]] = {}
            for order, (name, volume) in enumerate((self.volumes or {}).items()):
                read = _volume(order, name, volume)
                by_class.setdefault(storage_class(volume), []).append(read)
                ref = read.claim_ref
                if ref is not None and isinstance(ref.get("name"), str):
                    self._referenced.add((str(ref.get("namespace") or ""), ref["name"]))
            self._by_class = by_class
        return self._by_class.get(class_name, [])

    def candidates(self, claim: Mapping[str, Any]) -> Candidates:
        """The claim's volume candidates. The volumes no claimRef holds are indexed once per what FindMatchingVolume
        reads of a claim but its size (class, volume mode, VolumeAttributesClass, selector, access modes; the size
        is a bisection at pick time), shared by every claim alike in those (many come from one template, and
        claims of different sizes alike otherwise); the volumes whose claimRef names the claim are its own."""
        self.of_class("")  # reads the volumes, and the claims their claimRefs name
        spec = mapping(dig(claim, "spec"))
        key = repr(
            (
                storage_class(claim),
                spec.get("volumeMode"),
                _attributes_class(spec.get("volumeAttributesClassName")),
                spec.get("selector"),
                spec.get("accessModes"),
            )
        )
        found = self._indexes.get(key)
        if found is None:
            try:
                found = _index(claim, self)
            except ConstraintError as err:
                found = str(err)
            self._indexes[key] = found
        if isinstance(found, str):
            raise ConstraintError(found)  # a fresh one each time: a re-raised one keeps every frame it passed
        name = (object_namespace(claim), object_name(claim))
        if name not in self._referenced:
            return found
        return Candidates(_prebound(claim, self), found.by_node, found.anywhere)


def storage_of(kinds: Mapping[str, list[Mapping[str, Any]]], nodes: tuple[Node, ...]) -> Storage | None:
    """None when no claims were read (a dump without them): volumes are then not checked."""
    if "PersistentVolumeClaim" not in kinds:
        return None
    claims = {(object_namespace(c), object_name(c)): c for c in kinds["PersistentVolumeClaim"]}
    volumes = {object_name(v): v for v in kinds["PersistentVolume"]} if "PersistentVolume" in kinds else None
    classes = {object_name(c): c for c in kinds["StorageClass"]} if "StorageClass" in kinds else None
    return Storage(claims, volumes, classes, nodes)


@dataclass
class Sorted:
    """Volumes smallest first, the first read first among equals, with their sizes to bisect on."""

    volumes: list[_Volume] = field(default_factory=list)
    sizes: list[Any] = field(default_factory=list)

    def first(self, wanted: Any, chosen: set[str]) -> _Volume | None:
        """The smallest volume of at least `wanted` not chosen by another claim of the pod."""
        for i in range(bisect_left(self.sizes, wanted), len(self.volumes)):
            if self.volumes[i].name not in chosen:
                return self.volumes[i]
        return None


@dataclass
class Candidates:
    """FindMatchingVolume's volumes for a claim, with what does not depend on the node or the size checked.

    A volume pre-bound to the claim decides alone: FindMatchingVolume returns it (or nothing) as soon as it meets
    it, whatever smaller volume it passed. Otherwise the smallest matching one wins, the first of equals in
    reading order (Kubernetes lists a class's volumes from a Go map, so its order among equals varies from one
    cycle to the next); `by_node` and `anywhere` (volumes without node affinity) hold them.
    """

    prebound: tuple[_Volume, ...]
    by_node: dict[str, Sorted]
    anywhere: Sorted

    def pick(self, storage: Storage, node: Node, chosen: set[str], wanted: Any) -> str | None:
        """`wanted`: the claim's request (None: unreadable, which nothing matches); `chosen`: the volumes the pod's
        other claims took on this node (FindMatchingVolume's excluded volumes, skipped before any other check)."""
        if wanted is None:
            return None
        for volume in self.prebound:
            if volume.name in chosen or volume.size < wanted:
                continue
            where = storage.node_set(volume.name)
            return volume.name if where is None or node.name in where else None
        best: _Volume | None = None
        for found in (self.by_node.get(node.name), self.anywhere):
            first = found.first(wanted, chosen) if found is not None else None
            if first is not None and (best is None or (first.size, first.order) < (best.size, best.order)):
                best = first
        return best.name if best is not None else None


@dataclass(frozen=True)
class _Volume:
    """What FindMatchingVolume reads of a volume, read once per volume."""

    order: int
    name: str
    claim_ref: Mapping[str, Any] | None  # any claimRef, `{}` included, holds the volume (ClaimRef != nil)
    size: Any  # an exact quantity; None when unreadable
    mode: str
    attributes_class: Any
    deleting: bool
    available: bool
    labels: Mapping[str, Any]
    access_modes: frozenset[str]


def _volume(order: int, name: str, volume: Mapping[str, Any]) -> _Volume:
    ref = dig(volume, "spec", "claimRef")
    return _Volume(
        order,
        name,
        None if ref is None else mapping(ref),
        quantity(dig(volume, "spec", "capacity", "storage")),
        str(dig(volume, "spec", "volumeMode") or "Filesystem"),
        _attributes_class(dig(volume, "spec", "volumeAttributesClassName")),
        bool(dig(volume, "metadata", "deletionTimestamp")),
        dig(volume, "status", "phase") == "Available",
        mapping(dig(volume, "metadata", "labels")),
        frozenset(str(m) for m in seq(dig(volume, "spec", "accessModes"))),
    )


def _attributes_class(raw: Any) -> Any:
    """ptr.Deref(volumeAttributesClassName, ""): unset and empty are the same class (pv_helpers.go:239-245)."""
    return "" if raw is None else raw


def _fits(v: _Volume, claim: Mapping[str, Any]) -> bool:
    """FindMatchingVolume's checks before the pre-binding one, but the size: volume mode, VolumeAttributesClass,
    deletion (pv_helpers.go:229-252)."""
    mode = str(dig(claim, "spec", "volumeMode") or "Filesystem")
    attributes_class = _attributes_class(dig(claim, "spec", "volumeAttributesClassName"))
    return v.size is not None and v.mode == mode and v.attributes_class == attributes_class and not v.deleting


def _prebound(claim: Mapping[str, Any], storage: Storage) -> tuple[_Volume, ...]:
    """The claim's class's volumes whose claimRef names it, in reading order."""
    return tuple(
        v
        for v in storage.of_class(storage_class(claim))
        if v.claim_ref is not None and _refers_to(v.claim_ref, claim) and _fits(v, claim)
    )


def _index(claim: Mapping[str, Any], storage: Storage) -> Candidates:
    """FindMatchingVolume (component-helpers v0.35.4 storage/volume/pv_helpers.go:186-329), scheduler path, its
    node- and size-independent checks on the volumes no claimRef holds: class (pvCache.ListPVs), volume mode,
    VolumeAttributesClass, deletion, phase Available, the claim's selector and access modes.
    Raises ConstraintError for a selector LabelSelectorAsSelector refuses (checked before any volume)."""
    raw_selector = dig(claim, "spec", "selector")
    selector = _label_selector(raw_selector) if raw_selector is not None else None
    modes = [str(m) for m in seq(dig(claim, "spec", "accessModes"))]
    matching = sorted(
        (
            v
            for v in storage.of_class(storage_class(claim))
            if v.claim_ref is None
            and _fits(v, claim)
            and v.available
            and (selector is None or label_selector_matches(selector, v.labels))
            and all(m in v.access_modes for m in modes)
        ),
        key=lambda v: (v.size, v.order),
    )
    by_node: dict[str, Sorted] = {}
    anywhere = Sorted()
    for v in matching:  # smallest first, so every list is sorted as it is built
        where = storage.node_set(v.name)
        for found in (anywhere,) if where is None else (by_node.setdefault(n, Sorted()) for n in where):
            found.volumes.append(v)
            found.sizes.append(v.size)
    return Candidates((), by_node, anywhere)


def _label_selector(raw: Any) -> LabelSelector:
    """LabelSelectorAsSelector's refusals (apimachinery meta/v1 helpers.go:36-74, labels.NewRequirement): an
    operator it does not know, In or NotIn without values, Exists or DoesNotExist with values. Its words for the
    first; the detail of NewRequirement's for the others, without its field path."""
    for expression in seq(mapping(raw).get("matchExpressions")):
        expression = mapping(expression)
        op, values = expression.get("operator"), expression.get("values")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ConstraintError(f'"{op}" is not a valid label selector operator')
        if op in ("In", "NotIn") and not values:
            raise ConstraintError("for 'in', 'notin' operators, values set can't be empty")
        if op in ("Exists", "DoesNotExist") and values:
            raise ConstraintError("values set must be empty for exists and does not exist")
    return parse_label_selector(raw, "selector")


def storage_class(obj: Mapping[str, Any]) -> str:
    annotations = mapping(dig(obj, "metadata", "annotations"))
    if BETA_CLASS in annotations:
        return str(annotations[BETA_CLASS])
    return str(dig(obj, "spec", "storageClassName") or "")


def _refers_to(ref: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """IsVolumeBoundToClaim: same name and namespace, and the same UID when the reference has one."""
    if ref.get("name") != object_name(claim) or (ref.get("namespace") or "") != object_namespace(claim):
        return False
    uid = ref.get("uid")
    return not uid or uid == dig(claim, "metadata", "uid")


def quantity(raw: Any) -> Any:
    if raw is None:
        return 0
    try:
        return parse_quantity(raw)
    except QuantityError:
        return None
