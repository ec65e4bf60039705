"""A dump's or a live read's objects grouped by kind, as KAI reads them: `List`s flattened, each object once, and
objects of KAI's kind names from other API groups (Volcano's Queue and PodGroup, Kueue's Topology) left out."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Mapping
from typing import Any

from kaistack.declaration import kai_api
from kaistack.guardrails.podspec import dig, seq

__all__ = ["KAI_GROUPS", "by_kind", "foreign_group"]

_CLUSTER_SCOPED = frozenset(
    {
        "Node",
        "Queue",
        "Topology",
        "PriorityClass",
        "PersistentVolume",
        "StorageClass",
        "Namespace",
        "CSIDriver",
        "SchedulingShard",
    }
)


# KAI's kinds and their API groups: Volcano has a Queue and a PodGroup (scheduling.volcano.sh), Kueue a Topology
# (kueue.x-k8s.io), and a dump of a cluster running both holds each.
KAI_GROUPS = {
    crd.kind: crd.group
    for crd in (
        kai_api.QUEUE,
        kai_api.POD_GROUP,
        kai_api.BIND_REQUEST,
        kai_api.TOPOLOGY_CRD,
        kai_api.SCHEDULING_SHARD,
        kai_api.KAI_CONFIG,
    )
}


def foreign_group(obj: Mapping[str, Any]) -> str | None:
    """The API group of an object of one of KAI's kinds that is not KAI's (None: KAI's, another kind, or no
    apiVersion, as in a hand-made dump)."""
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not isinstance(kind, str) or kind not in KAI_GROUPS or not isinstance(api_version, str):
        return None
    group = api_version.rpartition("/")[0]
    return None if group == KAI_GROUPS[kind] else group


def by_kind(
    objects: Iterable[Any], unnamed: Counter[str] | None = None, foreign: Counter[str] | None = None
) -> dict[str, list[Mapping[str, Any]]]:
    """Objects grouped by kind, `List` items flattened; anything that is not a named object is left out (and
    counted by kind in `unnamed`, when given: an object with a kind but no string name), and so is an object of
    one of KAI's kinds from another API group (counted as `Kind (group)` in `foreign`).

    A typed list (`PersistentVolumeClaimList`, as the API server answers a list call) says its kind was read
    even when it holds nothing, so the kind is present with no objects; its items, which the API server sends
    without a kind or apiVersion, take both from the list. kubectl's generic `List` says nothing about what is
    absent."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    seen: set[tuple[str, str, str]] = set()  # (kind, namespace, name): a repeated object counts once
    stack = deque(objects)
    while stack:
        obj = stack.popleft()
        if not isinstance(obj, Mapping):
            continue
        kind = obj.get("kind")
        if not isinstance(kind, str):
            continue
        if kind.endswith("List"):
            items = [i for i in seq(obj.get("items")) if isinstance(i, Mapping)]
            if (listed := kind[: -len("List")]) and listed != "List":
                if foreign_group({"kind": listed, "apiVersion": obj.get("apiVersion")}) is None:
                    out.setdefault(listed, [])
                typed = {"kind": listed, "apiVersion": obj.get("apiVersion")}
                items = [i if isinstance(i.get("kind"), str) else {**typed, **i, "kind": listed} for i in items]
            stack.extend(items)
            continue
        if (group := foreign_group(obj)) is not None:
            if foreign is not None:
                foreign[f"{kind} ({group or 'the core group'})"] += 1
            continue
        name = dig(obj, "metadata", "name")
        if isinstance(name, str) and name:
            # A cluster-scoped object has no namespace; one a hand-made dump gives it anyway is the same object.
            namespace = "" if kind in _CLUSTER_SCOPED else str(dig(obj, "metadata", "namespace") or "")
            key = (kind, namespace, name)
            if key not in seen:
                seen.add(key)
                out.setdefault(kind, []).append(obj)
        elif unnamed is not None:
            unnamed[kind] += 1
    return out
