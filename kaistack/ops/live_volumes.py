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

The volumes a waiting claim may bind come from live_storage.py. Not modelled: CSI storage capacity (a CSIDriver
with `storageCapacity: true`: KAI's `--schedule-csi-storage` ignores it anyway) and CSI migration of in-tree
volumes. Two pods of one cycle may both be given the same Available volume, as in KAI: its scheduler runs the
plugin's PreFilter and Filter only (k8s_internal/predicates/predicates.go:121-131, volume_binding.go:18-28) and
never assumes a volume taken; its binder's Reserve finds the second pod's volume gone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kaistack.guardrails.podspec import dig, mapping, seq
from kaistack.ops.live_pods import object_name, object_namespace
from kaistack.ops.live_storage import Storage, quantity, storage_class
from placement.k8s_names import is_label_value
from placement.model import Node, Task
from placement.node_constraints import ConstraintError

__all__ = [
    "BIND_CONFLICT",
    "NODE_CONFLICT",
    "NO_VOLUMES",
    "PV_NOT_EXIST",
    "PodVolumes",
    "claim_names",
    "pod_volumes",
]

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


@dataclass(frozen=True)
class PodVolumes:
    """`error`: the PreFilter's failure (the pod is never placed); `nodes`: where the Filter lets it go (None: any
    node); `reason`: what the Filter says of the other nodes."""

    error: str | None = None
    nodes: frozenset[str] | None = None
    reason: str = ""


NO_VOLUMES = PodVolumes()


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


def pod_volumes(pod: Mapping[str, Any], storage: Storage) -> PodVolumes:
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
    split = _Waiting.of(waiting) if waiting else None
    for node in storage.nodes:
        reasons = _node_reasons(bound, split, storage, node)
        if reasons:
            every = False
            refusals.update(reasons)
        else:
            allowed.add(node.name)
    if every:
        return NO_VOLUMES
    return PodVolumes(nodes=frozenset(allowed), reason=", ".join(sorted(refusals)))


@dataclass(frozen=True)
class _Waiting:
    """A pod's unbound WaitForFirstConsumer claims, split once: those with a selected node (to provision there)
    and the others, smallest request first (findMatchingVolumes sorts them by size)."""

    selected: list[tuple[Mapping[str, Any], Any]]
    to_match: list[tuple[Mapping[str, Any], Any]]  # (claim, its request; None when unreadable)

    @classmethod
    def of(cls, claims: list[Mapping[str, Any]]) -> _Waiting:
        selected, to_match = [], []
        for claim in claims:
            node = mapping(dig(claim, "metadata", "annotations")).get(SELECTED_NODE)
            if node is not None:
                selected.append((claim, node))
            else:
                to_match.append((claim, quantity(dig(claim, "spec", "resources", "requests", "storage"))))
        return cls(selected, sorted(to_match, key=lambda c: c[1] if c[1] is not None else 0))


def _node_reasons(bound: list[Mapping[str, Any]], waiting: _Waiting | None, storage: Storage, node: Node) -> list[str]:
    """FindPodVolumes' reasons (or error) for one node; empty when the pod's volumes may be used there."""
    bound_ok, found = True, True
    for claim in bound if storage.volumes is not None else ():  # checkBoundClaims: the first claim that fails decides
        name = str(dig(claim, "spec", "volumeName"))
        if name not in storage.volumes:  # type: ignore[operator]
            found = False
            break
        where = storage.node_set(name)
        if where is not None and node.name not in where:
            bound_ok = False
            break
    reasons = [NODE_CONFLICT] if not bound_ok else []
    unbound_ok = True
    error: str | None = None
    if waiting is not None:
        unbound_ok, error = _unbound_satisfied(waiting, storage, node)
    if error is not None:
        return [error]
    if not unbound_ok:
        reasons.append(BIND_CONFLICT)
    if not found:
        reasons.append(PV_NOT_EXIST)
    return reasons


def _unbound_satisfied(waiting: _Waiting, storage: Storage, node: Node) -> tuple[bool, str | None]:
    to_provision = []
    for claim, selected in waiting.selected:
        if selected != node.name:
            return False, None
        to_provision.append(claim)
    to_match = waiting.to_match
    if storage.volumes is None and to_match:
        return True, None  # no volumes read: whether one matches is not known
    satisfied = True
    chosen: set[str] = set()
    for claim, wanted in to_match:
        try:
            volume = storage.candidates(claim).pick(storage, node, chosen, wanted)
        except ConstraintError as err:  # FindMatchingVolume's error: the node is refused with it
            key = f"{object_namespace(claim)}/{object_name(claim)}"  # claimToClaimKey, printed with %v
            return False, f"error creating internal label selector for claim: {key}: {err}"
        if volume is None:
            to_provision.append(claim)
            satisfied = False
        else:
            chosen.add(volume)
    if not to_provision:
        return satisfied, None
    for claim in to_provision:  # checkVolumeProvisions
        class_name = storage_class(claim)
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


def _topology_matches(raw: Any, labels: Mapping[str, str]) -> bool:
    """MatchTopologySelectorTerms: no terms match every node; else one term whose every key has a listed value.

    A term is skipped whole when one of its values is no label value: TopologySelectorRequirementsAsSelector builds
    each requirement with labels.NewRequirement, which refuses it, and the term is passed over (core/v1/helper/
    helpers.go). The API server accepts such a class (ValidateTopologySelectorTerm checks keys, not values)."""
    terms = seq(raw)
    if not terms:
        return True
    for term in terms:
        expressions = [mapping(e) for e in seq(mapping(term).get("matchLabelExpressions"))]
        if not all(is_label_value(v) for e in expressions for v in seq(e.get("values")) if isinstance(v, str)):
            continue
        if expressions and all(_topology_requirement(e, labels) for e in expressions):
            return True  # a term without expressions selects nothing (core/v1/helper/helpers.go:247-251)
    return False


def _topology_requirement(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    value = labels.get(str(expression.get("key")))
    return value is not None and any(v == value for v in seq(expression.get("values")) if isinstance(v, str))


def _delays_binding(claim: Mapping[str, Any], storage: Storage) -> bool:
    """IsDelayBindingMode: the claim's class exists and binds WaitForFirstConsumer (the API server defaults the
    mode to Immediate)."""
    klass = (storage.classes or {}).get(storage_class(claim))
    return klass is not None and klass.get("volumeBindingMode") == "WaitForFirstConsumer"


def _fully_bound(claim: Mapping[str, Any]) -> bool:
    """isPVCFullyBound (binder.go:775-777): a volume named and the bind-completed annotation."""
    return bool(dig(claim, "spec", "volumeName")) and BIND_COMPLETED in mapping(dig(claim, "metadata", "annotations"))


def _owned_by(claim: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """ephemeral.VolumeIsForPod: the claim's controller owner is the pod."""
    uid = dig(pod, "metadata", "uid")
    for ref in seq(dig(claim, "metadata", "ownerReferences")):
        ref = mapping(ref)
        if ref.get("controller") is True:
            return bool(uid) and ref.get("uid") == uid
    return False


def _q(text: str) -> str:
    """Go's %q of a Kubernetes name (which needs no escaping)."""
    return f'"{text}"'


class VolumeCache:
    """pod_volumes per pod, shared by pods that use the same claims (a claim's verdict does not depend on the pod,
    but for an ephemeral volume's owner)."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.seen: dict[object, PodVolumes] = {}

    def of(self, pod: Mapping[str, Any]) -> PodVolumes:
        names = tuple(claim_names(pod))
        if not names:
            return NO_VOLUMES
        owner = str(dig(pod, "metadata", "uid")) if any(ephemeral for _, ephemeral in names) else None
        key = (object_namespace(pod), names, owner, object_name(pod) if owner is not None else None)
        found = self.seen.get(key)
        if found is None:
            found = self.seen[key] = pod_volumes(pod, self.storage)
        return found


def with_volumes(task: Task, volumes: PodVolumes) -> Task:
    if volumes is NO_VOLUMES:
        return task
    constraints = dataclasses.replace(task.constraints, volume_nodes=volumes.nodes, volume_reason=volumes.reason)
    return dataclasses.replace(task, volume_error=volumes.error, constraints=constraints)
