"""A pod's PersistentVolumeClaims as Kubernetes' VolumeBinding plugin reads them, which KAI runs as a predicate.

KAI@v0.17.0 creates the plugin with empty arguments (k8s_internal/plugins/plugins.go:91-96) on its live listers
of claims, volumes and classes; its PreFilter's UnschedulableAndUnresolvable failures are victim-invariant
(plugins/predicates/predicates.go:53-57). The rules are k8s.io/kubernetes v1.35.4 (KAI's go.mod)
pkg/scheduler/framework/plugins/volumebinding:

- PreFilter (volume_binding.go:313-390): every claim of a `persistentVolumeClaim` or `ephemeral` volume (named
  `<pod>-<volume>`) must exist, not be Lost, not be being deleted, and an ephemeral one must be the pod's; then
  no claim may be unbound unless its class binds WaitForFirstConsumer (binder.go:792-837).
- Filter, per node (binder.go:285-389): a bound claim's volume must exist and its node affinity match the node's
  labels; an unbound WaitForFirstConsumer claim needs its `volume.kubernetes.io/selected-node` (if set) to be the
  node, then a matching Available volume (FindMatchingVolume) or a class that provisions there (a provisioner,
  and `allowedTopologies` matching the node).

Not modelled: CSI storage capacity (a CSIDriver with `storageCapacity: true`: KAI's `--schedule-csi-storage`
ignores it anyway), CSI migration of in-tree volumes, and a volume two pods of one cycle would both bind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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

__all__ = [
    "BIND_CONFLICT",
    "NODE_CONFLICT",
    "NO_VOLUMES",
    "PV_NOT_EXIST",
    "PodVolumes",
    "Storage",
    "claim_names",
    "pod_volumes",
    "storage_of",
]

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


@dataclass(frozen=True)
class Storage:
    """The claims (by namespace and name), volumes and classes (by name) that were read. Volumes or classes not
    read (None) leave what depends on them unchecked: a bound claim's volume, a waiting claim's binding."""

    claims: Mapping[tuple[str, str], Mapping[str, Any]]
    volumes: Mapping[str, Mapping[str, Any]] | None
    classes: Mapping[str, Mapping[str, Any]] | None


@dataclass(frozen=True)
class PodVolumes:
    """`error`: the PreFilter's failure (the pod is never placed); `nodes`: where the Filter lets it go (None: any
    node); `reason`: what the Filter says of the other nodes."""

    error: str | None = None
    nodes: frozenset[str] | None = None
    reason: str = ""


NO_VOLUMES = PodVolumes()


def storage_of(kinds: Mapping[str, list[Mapping[str, Any]]]) -> Storage | None:
    """None when no claims were read (a dump without them): volumes are then not checked."""
    if "PersistentVolumeClaim" not in kinds:
        return None
    claims = {(object_namespace(c), object_name(c)): c for c in kinds["PersistentVolumeClaim"]}
    volumes = {object_name(v): v for v in kinds["PersistentVolume"]} if "PersistentVolume" in kinds else None
    classes = {object_name(c): c for c in kinds["StorageClass"]} if "StorageClass" in kinds else None
    return Storage(claims, volumes, classes)


def claim_names(pod: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """The claims a pod's volumes use, with whether each is an ephemeral volume's (ephemeral.VolumeClaimName)."""
    names: list[tuple[str, bool]] = []
    for volume in seq(dig(pod, "spec", "volumes")):
        volume = mapping(volume)
        claim = mapping(volume.get("persistentVolumeClaim")).get("claimName")
        if isinstance(claim, str):
            names.append((claim, False))
        elif isinstance(volume.get("ephemeral"), Mapping):
            names.append((f"{object_name(pod)}-{volume.get('name')}", True))
    return names


def pod_volumes(pod: Mapping[str, Any], storage: Storage, nodes: Iterable[Node]) -> PodVolumes:
    names = claim_names(pod)
    if not names:
        return NO_VOLUMES  # PreFilter's Skip
    namespace = object_namespace(pod)
    claims: list[Mapping[str, Any]] = []
    for name, ephemeral in names:
        claim = storage.claims.get((namespace, name))
        if claim is None:
            if ephemeral:
                return PodVolumes(
                    f"waiting for ephemeral volume controller to create the persistentvolumeclaim {_q(name)}"
                )
            return PodVolumes(f"persistentvolumeclaim {_q(name)} not found")
        if dig(claim, "status", "phase") == "Lost":
            volume = dig(claim, "spec", "volumeName") or ""
            return PodVolumes(
                f"persistentvolumeclaim {_q(name)} bound to non-existent persistentvolume {_q(str(volume))}"
            )
        if dig(claim, "metadata", "deletionTimestamp"):
            return PodVolumes(f"persistentvolumeclaim {_q(name)} is being deleted")
        if ephemeral and not _owned_by(claim, pod):
            return PodVolumes(
                f"PVC {namespace}/{name} was not created for pod {namespace}/{object_name(pod)} (pod is not owner)"
            )
        claims.append(claim)
    if storage.classes is None:
        # Which unbound claims wait for their first consumer depends on their class.
        claims = [c for c in claims if _fully_bound(c)]
    bound, waiting = [], []
    for claim in claims:
        if _fully_bound(claim):
            bound.append(claim)
        elif _delays_binding(claim, storage) and not dig(claim, "spec", "volumeName"):
            waiting.append(claim)
        else:
            return PodVolumes("pod has unbound immediate PersistentVolumeClaims")
    allowed: set[str] = set()
    refusals: set[str] = set()
    every = True
    for node in nodes:
        reasons = _node_reasons(bound, waiting, storage, node)
        if reasons:
            every = False
            refusals.update(reasons)
        else:
            allowed.add(node.name)
    if every:
        return NO_VOLUMES
    return PodVolumes(nodes=frozenset(allowed), reason=", ".join(sorted(refusals)))


def _node_reasons(
    bound: list[Mapping[str, Any]], waiting: list[Mapping[str, Any]], storage: Storage, node: Node
) -> list[str]:
    """FindPodVolumes' reasons (or error) for one node; empty when the pod's volumes may be used there."""
    bound_ok, found = True, True
    for claim in bound if storage.volumes is not None else ():  # checkBoundClaims: the first claim that fails decides
        volume = storage.volumes.get(str(dig(claim, "spec", "volumeName")))  # type: ignore[union-attr]
        if volume is None:
            found = False
            break
        if not _affinity_matches(volume, node):
            bound_ok = False
            break
    reasons = [NODE_CONFLICT] if not bound_ok else []
    unbound_ok = True
    error: str | None = None
    if waiting:
        unbound_ok, error = _unbound_satisfied(waiting, storage, node)
    if error is not None:
        return [error]
    if not unbound_ok:
        reasons.append(BIND_CONFLICT)
    if not found:
        reasons.append(PV_NOT_EXIST)
    return reasons


def _unbound_satisfied(waiting: list[Mapping[str, Any]], storage: Storage, node: Node) -> tuple[bool, str | None]:
    to_match, to_provision = [], []
    for claim in waiting:
        selected = mapping(dig(claim, "metadata", "annotations")).get(SELECTED_NODE)
        if selected is not None:
            if selected != node.name:
                return False, None
            to_provision.append(claim)
        else:
            to_match.append(claim)
    if storage.volumes is None and to_match:
        return True, None  # no volumes read: whether one matches is not known
    satisfied = True
    chosen: set[str] = set()
    for claim in sorted(to_match, key=_requested):  # findMatchingVolumes: smallest request first
        try:
            volume = _matching_volume(claim, storage, node, chosen)
        except ConstraintError as err:  # FindMatchingVolume's error: the node is refused with it
            key = _q(f"{object_namespace(claim)}/{object_name(claim)}")
            return False, f"error creating internal label selector for claim: {key}: {err}"
        if volume is None:
            to_provision.append(claim)
            satisfied = False
        else:
            chosen.add(volume)
    if not to_provision:
        return satisfied, None
    for claim in to_provision:  # checkVolumeProvisions
        class_name = _class(claim)
        if not class_name:
            return False, f"no class for claim {_q(object_namespace(claim) + '/' + object_name(claim))}"
        klass = (storage.classes or {}).get(class_name)
        if klass is None:
            return False, f"failed to find storage class {_q(class_name)}"
        provisioner = klass.get("provisioner")
        if not provisioner or provisioner == NO_PROVISIONER:
            return False, None
        if not _topology_matches(klass.get("allowedTopologies"), node.labels):
            return False, None
    return True, None


def _matching_volume(claim: Mapping[str, Any], storage: Storage, node: Node, chosen: set[str]) -> str | None:
    """FindMatchingVolume (component-helpers v0.35.4 storage/volume/pv_helpers.go:186-329), scheduler path: the
    volume pre-bound to the claim if its node affinity matches, else the smallest Available one that fits."""
    wanted = _quantity(dig(claim, "spec", "resources", "requests", "storage"))
    class_name = _class(claim)
    raw_selector = dig(claim, "spec", "selector")
    selector = parse_label_selector(raw_selector, "selector") if raw_selector is not None else None
    best: tuple[Any, str] | None = None
    for name, volume in (storage.volumes or {}).items():
        if name in chosen or _class(volume) != class_name:  # pvCache.ListPVs(class)
            continue
        ref = mapping(dig(volume, "spec", "claimRef"))
        for_claim = bool(ref) and _refers_to(ref, claim)
        if ref and not for_claim:
            continue
        size = _quantity(dig(volume, "spec", "capacity", "storage"))
        if size is None or wanted is None or size < wanted:
            continue
        if (dig(claim, "spec", "volumeMode") or "Filesystem") != (dig(volume, "spec", "volumeMode") or "Filesystem"):
            continue
        if dig(claim, "spec", "volumeAttributesClassName") != dig(volume, "spec", "volumeAttributesClassName"):
            continue
        if dig(volume, "metadata", "deletionTimestamp"):
            continue
        affinity = _affinity_matches(volume, node)
        if for_claim:
            return name if affinity else None
        if dig(volume, "status", "phase") != "Available":
            continue
        if selector is not None and not label_selector_matches(selector, mapping(dig(volume, "metadata", "labels"))):
            continue
        if not affinity:
            continue
        modes = {str(m) for m in seq(dig(volume, "spec", "accessModes"))}
        if not all(str(m) in modes for m in seq(dig(claim, "spec", "accessModes"))):
            continue
        if best is None or best[0] > size:
            best = (size, name)
    return best[1] if best is not None else None


def _affinity_matches(volume: Mapping[str, Any], node: Node) -> bool:
    """CheckNodeAffinity: against a node that has the labels only (matchFields on its name never match)."""
    required = dig(volume, "spec", "nodeAffinity", "required")
    if required is None:
        return True
    try:
        terms = parse_selector_terms(mapping(required).get("nodeSelectorTerms"), "nodeSelectorTerms")
    except ConstraintError:
        return False
    return selector_terms_match(terms, node.labels, "")


def _topology_matches(raw: Any, labels: Mapping[str, str]) -> bool:
    """MatchTopologySelectorTerms: no terms match every node; else one term whose every key has a listed value."""
    terms = seq(raw)
    if not terms:
        return True
    for term in terms:
        expressions = seq(mapping(term).get("matchLabelExpressions"))
        if all(labels.get(str(mapping(e).get("key"))) in seq(mapping(e).get("values")) for e in expressions):
            return True
    return False


def _delays_binding(claim: Mapping[str, Any], storage: Storage) -> bool:
    """IsDelayBindingMode: the claim's class exists and binds WaitForFirstConsumer (the API server defaults the
    mode to Immediate)."""
    klass = (storage.classes or {}).get(_class(claim))
    return klass is not None and klass.get("volumeBindingMode") == "WaitForFirstConsumer"


def _fully_bound(claim: Mapping[str, Any]) -> bool:
    """isPVCFullyBound (binder.go:775-777): a volume named and the bind-completed annotation."""
    return bool(dig(claim, "spec", "volumeName")) and BIND_COMPLETED in mapping(dig(claim, "metadata", "annotations"))


def _class(obj: Mapping[str, Any]) -> str:
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


def _owned_by(claim: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """ephemeral.VolumeIsForPod: the claim's controller owner is the pod."""
    uid = dig(pod, "metadata", "uid")
    for ref in seq(dig(claim, "metadata", "ownerReferences")):
        ref = mapping(ref)
        if ref.get("controller") is True:
            return bool(uid) and ref.get("uid") == uid
    return False


def _requested(claim: Mapping[str, Any]) -> Any:
    value = _quantity(dig(claim, "spec", "resources", "requests", "storage"))
    return value if value is not None else 0


def _quantity(raw: Any) -> Any:
    if raw is None:
        return 0
    try:
        return parse_quantity(raw)
    except QuantityError:
        return None


def _q(text: str) -> str:
    """Go's %q of a Kubernetes name (which needs no escaping)."""
    return f'"{text}"'
