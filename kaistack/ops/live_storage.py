"""The storage objects of a read (claims, volumes, classes) and Kubernetes' FindMatchingVolume over them.

Read once per `kaistack diagnose`: each volume's node affinity becomes the set of nodes it admits, each volume is
read once into what FindMatchingVolume compares, and a claim's candidates are worked out once and shared by the
claims alike to it (many come from one StatefulSet template), so the per-node check of live_volumes.py is a
lookup. component-helpers v0.35.4 storage/volume/pv_helpers.go:186-329 (FindMatchingVolume) and
k8s.io/kubernetes v1.35.4 pkg/scheduler/framework/plugins/volumebinding/binder.go (pvCache.ListPVs, by class).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kaistack.guardrails.podspec import dig, mapping, seq
from kaistack.ops.live_pods import object_name, object_namespace
from placement.model import Node
from placement.node_constraints import (
    ConstraintError,
    label_selector_matches,
    parse_label_selector,
    parse_selector_terms,
    selector_terms_match,
)
from placement.quantity import QuantityError, parse_quantity

__all__ = ["Candidates", "Storage", "quantity", "storage_class", "storage_of"]

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
    _candidates: dict[object, Candidates | ConstraintError] = field(default_factory=dict, compare=False)
    _referenced: set[tuple[str, str]] = field(default_factory=set, compare=False)
    _by_class: dict[str, list[_Volume]] | None = field(default=None, compare=False)

    def node_set(self, name: str) -> frozenset[str] | None:
        """CheckNodeAffinity's nodes for the volume, against nodes that have their labels only (matchFields on
        the name never match); None: no affinity (every node); empty when unreadable."""
        if name in self._node_sets:
            return self._node_sets[name]
        required = dig((self.volumes or {}).get(name), "spec", "nodeAffinity", "required")
        found: frozenset[str] | None = None
        if required is not None:
            try:
                terms = parse_selector_terms(mapping(required).get("nodeSelectorTerms"), "nodeSelectorTerms")
            except ConstraintError:
                terms = ()
            found = frozenset(n.name for n in self.nodes if selector_terms_match(terms, n.labels, ""))
        self._node_sets[name] = found
        return found

    def of_class(self, class_name: str) -> list[_Volume]:
        """pvCache.ListPVs: the volumes of a class, in reading order, each read once."""
        if self._by_class is None:
            by_class: dict[str, list[_Volume]] = {}
            for order, (name, volume) in enumerate((self.volumes or {}).items()):
                read = _volume(order, name, volume)
                by_class.setdefault(storage_class(volume), []).append(read)
                if read.claim_ref:
                    ref = read.claim_ref
                    self._referenced.add((str(ref.get("namespace") or "default"), str(ref.get("name"))))
            self._by_class = by_class
        return self._by_class.get(class_name, [])

    def candidates(self, claim: Mapping[str, Any]) -> Candidates:
        """The claim's volume candidates, shared by claims alike in what FindMatchingVolume reads of them (many
        claims come from one template) unless a volume's claimRef names the claim."""
        self.of_class("")  # reads the volumes, and the claims their claimRefs name
        name = (object_namespace(claim), object_name(claim))
        spec = mapping(dig(claim, "spec"))
        key: object = name
        if name not in self._referenced:
            key = repr(
                (
                    storage_class(claim),
                    dig(spec, "resources", "requests", "storage"),
                    spec.get("volumeMode"),
                    spec.get("volumeAttributesClassName"),
                    spec.get("selector"),
                    spec.get("accessModes"),
                )
            )
        found = self._candidates.get(key)
        if found is None:
            try:
                found = _candidates(claim, self)
            except ConstraintError as err:
                found = err
            self._candidates[key] = found
        if isinstance(found, ConstraintError):
            raise found
        return found


def storage_of(kinds: Mapping[str, list[Mapping[str, Any]]], nodes: tuple[Node, ...]) -> Storage | None:
    """None when no claims were read (a dump without them): volumes are then not checked."""
    if "PersistentVolumeClaim" not in kinds:
        return None
    claims = {(object_namespace(c), object_name(c)): c for c in kinds["PersistentVolumeClaim"]}
    volumes = {object_name(v): v for v in kinds["PersistentVolume"]} if "PersistentVolume" in kinds else None
    classes = {object_name(c): c for c in kinds["StorageClass"]} if "StorageClass" in kinds else None
    return Storage(claims, volumes, classes, nodes)


@dataclass
class Candidates:
    """FindMatchingVolume's volumes for one claim, with what does not depend on the node already checked.

    A volume pre-bound to the claim decides alone: FindMatchingVolume returns it (or nothing) as soon as it meets
    it, whatever smaller volume it passed. Otherwise the smallest matching one wins, the first of equals; `by_node`
    and `anywhere` (volumes without node affinity) hold them as (size, order, name), smallest first.
    """

    prebound: str | None
    by_node: dict[str, list[tuple[Any, int, str]]]
    anywhere: list[tuple[Any, int, str]]

    def pick(self, storage: Storage, node: Node, chosen: set[str]) -> str | None:
        if self.prebound is not None:
            where = storage.node_set(self.prebound)
            return self.prebound if where is None or node.name in where else None
        best: tuple[Any, int, str] | None = None
        for found in (self.by_node.get(node.name, ()), self.anywhere):
            first = next((c for c in found if c[2] not in chosen), None)
            if first is not None and (best is None or first[:2] < best[:2]):
                best = first
        return best[2] if best is not None else None


@dataclass(frozen=True)
class _Volume:
    """What FindMatchingVolume reads of a volume, read once per volume."""

    order: int
    name: str
    claim_ref: Mapping[str, Any]
    size: Any  # an exact quantity; None when unreadable
    mode: str
    attributes_class: Any
    deleting: bool
    available: bool
    labels: Mapping[str, Any]
    access_modes: frozenset[str]


def _volume(order: int, name: str, volume: Mapping[str, Any]) -> _Volume:
    return _Volume(
        order,
        name,
        mapping(dig(volume, "spec", "claimRef")),
        quantity(dig(volume, "spec", "capacity", "storage")),
        str(dig(volume, "spec", "volumeMode") or "Filesystem"),
        dig(volume, "spec", "volumeAttributesClassName"),
        bool(dig(volume, "metadata", "deletionTimestamp")),
        dig(volume, "status", "phase") == "Available",
        mapping(dig(volume, "metadata", "labels")),
        frozenset(str(m) for m in seq(dig(volume, "spec", "accessModes"))),
    )


def _candidates(claim: Mapping[str, Any], storage: Storage) -> Candidates:
    """FindMatchingVolume (component-helpers v0.35.4 storage/volume/pv_helpers.go:186-329), scheduler path, its
    node-independent checks: class (pvCache.ListPVs), claimRef, size, volume mode, VolumeAttributesClass, deletion;
    then, for a volume not pre-bound to the claim, phase Available, the claim's selector and access modes.
    Raises ConstraintError for a selector LabelSelectorAsSelector refuses (checked before any volume)."""
    wanted = quantity(dig(claim, "spec", "resources", "requests", "storage"))
    raw_selector = dig(claim, "spec", "selector")
    selector = parse_label_selector(raw_selector, "selector") if raw_selector is not None else None
    mode = str(dig(claim, "spec", "volumeMode") or "Filesystem")
    attributes_class = dig(claim, "spec", "volumeAttributesClassName")
    modes = [str(m) for m in seq(dig(claim, "spec", "accessModes"))]
    by_node: dict[str, list[tuple[Any, int, str]]] = {}
    anywhere: list[tuple[Any, int, str]] = []
    for v in storage.of_class(storage_class(claim)):
        for_claim = bool(v.claim_ref) and _refers_to(v.claim_ref, claim)
        if v.claim_ref and not for_claim:
            continue
        if v.size is None or wanted is None or v.size < wanted:
            continue
        if v.mode != mode or v.attributes_class != attributes_class or v.deleting:
            continue
        if for_claim:
            return Candidates(v.name, {}, [])
        if not v.available:
            continue
        if selector is not None and not label_selector_matches(selector, v.labels):
            continue
        if not all(m in v.access_modes for m in modes):
            continue
        where = storage.node_set(v.name)
        if where is None:
            anywhere.append((v.size, v.order, v.name))
        else:
            for node_name in where:
                by_node.setdefault(node_name, []).append((v.size, v.order, v.name))
    for found in (*by_node.values(), anywhere):
        found.sort(key=lambda c: c[:2])
    return Candidates(None, by_node, anywhere)


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
