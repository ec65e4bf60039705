"""Pod templates of the wrong shape in a linted manifest, named as errors in the file.

The rules read a wrong shape as absent (`containers` as a mapping is no container, so a GPU pod is no GPU pod), so
linting such an object would report no finding, or a wrong one. The API server (and kubectl's strict decoding)
refuses it, so it is an error in the file, as a wrong `metadata` block already is (kaistack.ops.lint). Only the kinds
whose template paths are known are checked (kaistack.guardrails.podspec.TEMPLATE_PATHS / REPLICA_SPECS); other
kinds are searched for templates by the rules, which take what they find.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from typing import Any

from kaistack.guardrails.podspec import REPLICA_SPECS, TEMPLATE_PATHS

__all__ = ["pod_shape_problem", "string_map_problem"]

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def pod_shape_problem(data: Mapping[str, Any]) -> str | None:
    """The first place where `data`'s pod templates are not the shape the API decodes, or None."""
    kind = data["kind"]
    for path, value, expected in _walk(kind, data):
        if value is None:
            continue
        if not isinstance(value, list if expected == "list" else dict):
            return f"{kind} {path} is a {type(value).__name__}; expected a {expected}"
        if expected == "mapping of strings" and isinstance(value, dict):
            problem = string_map_problem(value)
            if problem is not None:
                return f"{kind} {path}{problem}"
    return None


def string_map_problem(entries: dict[Any, Any]) -> str | None:
    """Labels or annotations as kubectl sends them, made so in place, or what it cannot send (".key: why").

    kubectl reads YAML with go-yaml v2, which keeps a date-like value as the string it is
    (go-yaml/yaml@v2.4.0 decode.go:473-479), and sigs.k8s.io/yaml turns int and bool keys into their text
    (kubernetes-sigs/yaml@v1.6.0 yaml.go:219-220); PyYAML built a date and ints and bools from them. A null value is
    decoded as "", as the API server does (Helm writes `checksum/config:` with nothing after it). A number or bool
    value is refused by the API server, so it is an error here too."""
    for key in list(entries):
        if isinstance(key, int):  # bool too
            text = str(key).lower() if isinstance(key, bool) else str(key)
            if text in entries:
                return f".{text}: the key is there twice (once as {key!r})"
            entries[text] = entries.pop(key)
        elif not isinstance(key, str):
            return f": the key {key!r} is a {type(key).__name__}; expected a string"
    for key, entry in entries.items():
        if entry is None:
            entries[key] = ""
        elif isinstance(entry, datetime.date):  # datetime.datetime too
            entries[key] = entry.isoformat()
        elif not isinstance(entry, str):
            return f'.{key}: {type(entry).__name__} {entry!r}; expected a string (quote it: "1", "true")'
    return None


def _walk(kind: str, data: Mapping[str, Any]) -> Iterator[tuple[str, Any, str]]:
    """(path, value, the shape it must have), outermost first; a wrong shape stops the walk below it."""
    if kind in TEMPLATE_PATHS:
        for path in TEMPLATE_PATHS[kind]:
            yield from _template(data, path)
    elif kind in REPLICA_SPECS:
        spec = data.get("spec")
        yield "spec", spec, "mapping"
        if not isinstance(spec, dict):
            return
        key = REPLICA_SPECS[kind]
        replicas = spec.get(key)
        yield f"spec.{key}", replicas, "mapping"
        for role, replica in (replicas or {}).items() if isinstance(replicas, dict) else ():
            yield f"spec.{key}.{role}", replica, "mapping"
            if isinstance(replica, dict):
                yield from _template(replica, ("template",), prefix=f"spec.{key}.{role}")


def _template(data: Mapping[str, Any], path: tuple[str, ...], prefix: str = "") -> Iterator[tuple[str, Any, str]]:
    node: Any = data
    walked = prefix
    for key in path:
        node = node.get(key)
        walked = f"{walked}.{key}" if walked else key
        yield walked, node, "mapping"
        if not isinstance(node, dict):
            return
    at = f"{walked}." if walked else ""
    meta = node.get("metadata")
    if path:  # a Pod's own metadata is checked with every object's
        yield f"{at}metadata", meta, "mapping"
        if isinstance(meta, dict):
            for key in ("labels", "annotations"):
                entries = meta.get(key)
                yield f"{at}metadata.{key}", entries, "mapping"
                if isinstance(entries, dict):
                    yield f"{at}metadata.{key}", entries, "mapping of strings"
    spec = node.get("spec")
    yield f"{at}spec", spec, "mapping"
    if not isinstance(spec, dict):
        return
    for key in CONTAINER_LISTS:
        containers = spec.get(key)
        yield f"{at}spec.{key}", containers, "list"
        for i, container in enumerate(containers if isinstance(containers, list) else ()):
            where = f"{at}spec.{key}[{i}]"
            yield where, container, "mapping"
            if not isinstance(container, dict):
                continue
            resources = container.get("resources")
            yield f"{where}.resources", resources, "mapping"
            if isinstance(resources, dict):
                for block in ("limits", "requests"):
                    yield f"{where}.resources.{block}", resources.get(block), "mapping"
