"""KAI's ConfigMap predicate: a pod that needs a ConfigMap its namespace does not have is never placed.

KAI@v0.17.0 pkg/scheduler/k8s_internal/predicates/config_maps.go: a PreFilter, so it decides before any node
is looked at, with UnschedulableAndUnresolvable ("Missing required configmaps: [...]"). It is one of the
victim-invariant pre-predicates (plugins/predicates/predicates.go:53-57): reclaim, preempt and consolidation
skip a job one of whose pods fails it, as no eviction can create a ConfigMap. The scheduler lists every
ConfigMap of the cluster each session (cache/cluster_info/cluster_info.go:556-570).

A pod needs a ConfigMap when a mounted volume (a `configMap` volume or a projected volume's `configMap`
source) or an env reference (`env[].valueFrom.configMapKeyRef`, `envFrom[].configMapRef`) of an init,
regular or ephemeral container names it, not marked optional, and it does not start with the pod's
`runai/shared-gpu-configmap` annotation: the binder creates those for shared-GPU pods after scheduling.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["SHARED_GPU_CONFIGMAP_ANNOTATION", "missing", "required_config_maps"]

SHARED_GPU_CONFIGMAP_ANNOTATION = "runai/shared-gpu-configmap"
_CONTAINER_KINDS = ("initContainers", "containers", "ephemeralContainers")


def required_config_maps(spec: Mapping[str, Any], annotations: Mapping[str, Any]) -> tuple[str, ...]:
    """getAllRequiredConfigMapNames of a pod spec, sorted. A malformed part (a dump no API server checked)
    names nothing."""
    containers = [c for kind in _CONTAINER_KINDS for c in _list(spec.get(kind)) if isinstance(c, Mapping)]
    mounts = [m.get("name") for c in containers for m in _list(c.get("volumeMounts")) if isinstance(m, Mapping)]
    mounted = {name for name in mounts if isinstance(name, str)}
    refs: list[tuple[Any, Any]] = []
    for volume in _list(spec.get("volumes")):
        if isinstance(volume, Mapping) and isinstance(volume.get("name"), str) and volume["name"] in mounted:
            refs.extend(_volume_refs(volume))
    for container in containers:
        refs.extend(_env_refs(container))
    prefix = annotations.get(SHARED_GPU_CONFIGMAP_ANNOTATION)
    names = {
        name
        for name, optional in refs
        if isinstance(name, str) and optional is not True and not (isinstance(prefix, str) and name.startswith(prefix))
    }
    return tuple(sorted(names))


def missing(namespace: str, needed: Iterable[str], existing: frozenset[tuple[str, str]]) -> tuple[str, ...]:
    """The ConfigMaps of `needed` that `existing` ((namespace, name) pairs) does not hold, in order."""
    return tuple(name for name in needed if (namespace, name) not in existing)


def _volume_refs(volume: Mapping[str, Any]) -> Iterator[tuple[Any, Any]]:
    source = volume.get("configMap")
    if isinstance(source, Mapping):
        yield source.get("name"), source.get("optional")
    projected = volume.get("projected")
    if isinstance(projected, Mapping):
        for item in _list(projected.get("sources")):
            source = item.get("configMap") if isinstance(item, Mapping) else None
            if isinstance(source, Mapping):
                yield source.get("name"), source.get("optional")


def _env_refs(container: Mapping[str, Any]) -> Iterator[tuple[Any, Any]]:
    for env in _list(container.get("env")):
        value_from = env.get("valueFrom") if isinstance(env, Mapping) else None
        ref = value_from.get("configMapKeyRef") if isinstance(value_from, Mapping) else None
        if isinstance(ref, Mapping):
            yield ref.get("name"), ref.get("optional")
    for env_from in _list(container.get("envFrom")):
        ref = env_from.get("configMapRef") if isinstance(env_from, Mapping) else None
        if isinstance(ref, Mapping):
            yield ref.get("name"), ref.get("optional")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
