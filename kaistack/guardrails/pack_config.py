"""A policy pack config file (`pulumi up --policy-pack-config FILE`) read for `kaistack lint --policy-config`.

The file is what the engine takes: `{"all": LEVEL, "<policy>": LEVEL | {"enforcementLevel": LEVEL, <knob>: ...}}`
(policies/policy-config.example.json). The engine validates each policy's knobs against its config schema before
the pack sees them (pulumi.md §6.2); lint has no engine, so the same schemas (settings.PROPERTIES) are checked here
and anything else is refused by key, with what is allowed, before a rule runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kaistack.guardrails.settings import POLICY_KNOBS, PROPERTIES, Settings, settings

__all__ = ["LEVELS", "PackConfig", "PackConfigError", "pack_config"]

LEVELS = ("advisory", "mandatory", "remediate", "disabled")
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "array": (list,),
    "object": (dict,),
}


class PackConfigError(ValueError):
    """A policy config file the engine would refuse: every problem, one a line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class PackConfig:
    """Each configured policy's settings (the others take the defaults) and the policies switched off."""

    settings: Mapping[str, Settings] = field(default_factory=dict)
    disabled: frozenset[str] = frozenset()

    def of(self, policy: str, default: Settings) -> Settings:
        return self.settings.get(policy, default)


def pack_config(data: Any, source: str) -> PackConfig:
    if not isinstance(data, dict):
        raise PackConfigError([f"{source}: expected a JSON object of policy names, got {type(data).__name__}"])
    problems: list[str] = []
    levels: dict[str, str] = {}
    knobs: dict[str, dict[str, Any]] = {}
    for name, value in data.items():
        where = f"{source}: {name}"
        if name != "all" and name not in POLICY_KNOBS:
            problems.append(f"{where}: no such policy (policies: all, {', '.join(POLICY_KNOBS)})")
            continue
        if isinstance(value, str):
            value = {"enforcementLevel": value}
        if not isinstance(value, dict):
            problems.append(f"{where}: expected an enforcement level or an object, got {value!r}")
            continue
        level = value.get("enforcementLevel")
        if level is not None and level not in LEVELS:
            problems.append(f"{where}.enforcementLevel: {level!r} is not one of {', '.join(LEVELS)}")
        elif level is not None:
            levels[name] = level
        allowed = () if name == "all" else POLICY_KNOBS[name]
        own = {k: v for k, v in value.items() if k != "enforcementLevel"}
        for key, knob in own.items():
            if key not in allowed:
                problems.append(f"{where}.{key}: not a setting of {name} (settings: {', '.join(allowed) or 'none'})")
            else:
                problems += [f"{where}.{key}{p}" for p in _schema_problems(knob, PROPERTIES[key])]
        knobs[name] = own
    if problems:
        raise PackConfigError(problems)
    built: dict[str, Settings] = {}
    for name, own in knobs.items():
        if name != "all":
            try:
                built[name] = settings(own)
            except ValueError as err:
                raise PackConfigError([f"{source}: {name}: {err}"]) from None
    off = {p for p in POLICY_KNOBS if levels.get(p, levels.get("all")) == "disabled"}
    return PackConfig(built, frozenset(off))


def _schema_problems(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """The value against the subset of JSON schema settings.PROPERTIES uses."""
    kind = schema.get("type")
    types = _TYPES.get(str(kind), (object,))
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        return [f": expected {'an' if str(kind)[0] in 'aeiou' else 'a'} {kind}, got {value!r}"]
    if "minimum" in schema and value < schema["minimum"]:
        return [f": {value!r} is below the minimum {schema['minimum']}"]
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        return [f": {value!r} must be above {schema['exclusiveMinimum']}"]
    out: list[str] = []
    if kind == "array" and isinstance(value, list):
        for i, item in enumerate(value):
            out += [f"[{i}]{p}" for p in _schema_problems(item, schema.get("items", {}))]
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties", {})
        out += [f".{k}: required" for k in schema.get("required", ()) if k not in value]
        for k, v in value.items():
            if k in props:  # other keys: JSON schema allows them, and settings() reads none
                out += [f".{k}{p}" for p in _schema_problems(v, props[k])]
    return out
