"""FORMAT v2 keys of a scenario: Topology CRs, node labels, topology constraints and subgroup trees."""

from __future__ import annotations

from placement.depth import MAX_SUBGROUP_DEPTH
from placement.model import SubGroup, Topology, TopologyConstraint, TopologyLevel
from placement.scenario_reader import (
    MAX_LABELS_PER_NODE,
    MAX_SUBGROUPS_PER_JOB,
    MAX_TASKS_PER_JOB,
    MAX_TOPOLOGY_LEVELS,
    Reader,
    unique,
)

__all__ = ["labels", "sub_groups", "topology", "topology_constraint"]

_TOPOLOGY_KEYS = {"name", "levels"}
_LEVEL_KEYS = {"nodeLabel", "alias"}
_CONSTRAINT_KEYS = {"topology", "requiredTopologyLevel", "preferredTopologyLevel"}
_SUBGROUP_KEYS = {"name", "parent", "minMember", "minSubGroup", "topologyConstraint"}


def labels(r: Reader, raw: object, path: str) -> dict[str, str]:
    raw = r.sized_mapping(raw, path, MAX_LABELS_PER_NODE, "labels", "label keys to values")
    out: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not key or not isinstance(value, str):
            raise r.fail(f"{path}.{key}", f"labels are strings (key non-empty), got {key!r}: {value!r}")
        out[key] = value
    return out


def topology(r: Reader, raw: object, path: str) -> Topology:
    """A Topology CR: 1 to 16 levels, node labels unique, kubernetes.io/hostname only last (the CRD's rules)."""
    doc = r.mapping(raw, path, _TOPOLOGY_KEYS)
    name = r.string(doc.get("name"), f"{path}.name")
    raw_levels = r.sequence(doc.get("levels"), f"{path}.levels")
    if not 1 <= len(raw_levels) <= MAX_TOPOLOGY_LEVELS:
        raise r.fail(f"{path}.levels", f"must have 1 to {MAX_TOPOLOGY_LEVELS} levels, got {len(raw_levels)}")
    levels: list[TopologyLevel] = []
    for i, item in enumerate(raw_levels):
        level = r.mapping(item, f"{path}.levels[{i}]", _LEVEL_KEYS)
        label = r.string(level.get("nodeLabel"), f"{path}.levels[{i}].nodeLabel")
        alias = level.get("alias")
        levels.append(TopologyLevel(label, r.string(alias, f"{path}.levels[{i}].alias") if alias is not None else None))
    _unique_values(r, [lv.node_label for lv in levels], f"{path}.levels", "nodeLabel")
    hostname = [i for i, lv in enumerate(levels) if lv.node_label == "kubernetes.io/hostname"]
    if hostname and hostname[0] != len(levels) - 1:
        raise r.fail(f"{path}.levels[{hostname[0]}]", "kubernetes.io/hostname may only be the last level")
    return Topology(name, tuple(levels))


def _unique_values(r: Reader, values: list[str], path: str, key: str) -> None:
    seen: set[str] = set()
    for i, value in enumerate(values):
        if value in seen:
            raise r.fail(f"{path}[{i}].{key}", f"duplicate {value!r}")
        seen.add(value)


def topology_constraint(r: Reader, raw: object, path: str) -> TopologyConstraint:
    doc = r.mapping(raw, path, _CONSTRAINT_KEYS)
    values = {}
    for key in _CONSTRAINT_KEYS:
        value = doc.get(key)
        if value is not None and not isinstance(value, str):
            raise r.fail(f"{path}.{key}", f"must be a string, got {value!r}")
        values[key] = value or None
    return TopologyConstraint(
        values["topology"] or "", values["requiredTopologyLevel"], values["preferredTopologyLevel"]
    )


def sub_groups(r: Reader, raw: object, path: str) -> tuple[SubGroup, ...]:
    """spec.subGroups: names unique, parents named earlier or later in the list, no cycles."""
    items = r.at_most(r.sequence(raw, path), path, MAX_SUBGROUPS_PER_JOB)
    groups: list[SubGroup] = []
    for i, item in enumerate(items):
        doc = r.mapping(item, f"{path}[{i}]", _SUBGROUP_KEYS)
        where = f"{path}[{i}]"
        parent = doc.get("parent")
        min_member, min_sub = doc.get("minMember"), doc.get("minSubGroup")
        raw_constraint = doc.get("topologyConstraint")
        groups.append(
            SubGroup(
                name=r.string(doc.get("name"), f"{where}.name"),
                parent=r.string(parent, f"{where}.parent") if parent is not None else None,
                min_member=r.integer(min_member, f"{where}.minMember", 0, MAX_TASKS_PER_JOB)
                if min_member is not None
                else None,
                min_sub_group=r.integer(min_sub, f"{where}.minSubGroup", 0, MAX_SUBGROUPS_PER_JOB)
                if min_sub is not None
                else None,
                topology=topology_constraint(r, raw_constraint, f"{where}.topologyConstraint")
                if raw_constraint is not None
                else None,
            )
        )
    unique(r, [g.name for g in groups], path)
    names = {g.name: g for g in groups}
    for i, g in enumerate(groups):
        if g.parent is not None and g.parent not in names:
            raise r.fail(f"{path}[{i}].parent", f"no subgroup named {g.parent!r} in this job")
        seen = {g.name}
        up = g.parent
        while up is not None:
            if up in seen:
                raise r.fail(f"{path}[{i}].parent", f"subgroup {g.name!r} is its own ancestor")
            seen.add(up)
            if len(seen) > MAX_SUBGROUP_DEPTH:  # placement.depth; also ends this walk's quadratic cost early
                raise r.fail(
                    f"{path}[{i}].parent",
                    f"subgroup {g.name!r} is more than {MAX_SUBGROUP_DEPTH} levels deep; kaistack simulates at most "
                    f"{MAX_SUBGROUP_DEPTH}",
                )
            up = names[up].parent
    return tuple(groups)
