"""Reading a scenario document: typed access with key paths in every error, and the size limits.

Shared by `placement.scenario` (FORMAT v1 keys) and `placement.scenario_groups` (v2 topology and subgroups).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from typing import Any

from placement.model import ALL_ACTIONS
from placement.quantity import QuantityError
from placement.scalar_resources import counted, kai_units

__all__ = ["Reader", "ScenarioError", "read_actions", "read_rounds", "unique"]

# Every size a scenario controls, checked while reading it (the README's limits table lists them).
# Above the largest real clusters (KAI runs 4,000+ nodes, 140,000+ pods), far below a hang.
MAX_NODES = 20_000
MAX_GPUS_PER_NODE = 128
MAX_GPU_MEMORY_MIB = 10_000_000  # 10 TB per GPU
MAX_PODS_PER_NODE = 10_000
MAX_QUEUES = 10_000
MAX_JOBS = 200_000
MAX_TASKS_PER_JOB = 100_000
MAX_TASKS = 500_000  # all jobs together
MAX_ROUNDS = 1_000
MAX_ACTIONS = 20  # entries of `actions` (KAI has five; repeating them in one cycle changes nothing)
MAX_TOPOLOGIES = 100
MAX_TOPOLOGY_LEVELS = 16  # the Topology CRD's spec.levels maxItems
MAX_LABELS_PER_NODE = 1_000
MAX_SUBGROUPS_PER_JOB = 10_000
MAX_SCALAR_RESOURCES = 64  # names under one scalarResources mapping
MAX_CONFIG_MAPS = 500_000  # the scenario's existing ConfigMaps, all namespaces together
MAX_CONFIG_MAPS_PER_POD = 1_000  # a request's configMaps
MAX_NAMESPACES = 100_000  # namespaceLabels
MAX_TERMS_PER_POD = 1_000  # inter-pod affinity terms of one pod, required and preferred


class ScenarioError(ValueError):
    """A scenario file that cannot be loaded; the message names the file and the bad key."""


class Reader:
    """Typed access to the raw document with key paths for error messages."""

    def __init__(self, source: str) -> None:
        self.source = source  # "" for flags: the path (`--rounds`) is then the whole place

    def fail(self, path: str, message: str) -> ScenarioError:
        where = path or "top level"
        return ScenarioError(f"{self.source}: {where}: {message}" if self.source else f"{where}: {message}")

    def mapping(self, value: object, path: str, allowed: set[str]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(path, f"must be a mapping, got {type(value).__name__}")
        for key in value:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                where = f"{path}.{key}" if path else str(key)
                raise self.fail(where, f"unknown key{hint}; allowed: {', '.join(sorted(allowed))}")
        return value

    def sequence(self, value: object, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(path, f"must be a list, got {type(value).__name__}")
        return value

    def string(self, value: object, path: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(path, f"must be a non-empty string, got {value!r}")
        return value

    def boolean(self, value: object, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, f"must be true or false, got {value!r}")
        return value

    def integer(self, value: object, path: str, minimum: int | None = None, maximum: int | None = None) -> int:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (isinstance(value, float) and (not math.isfinite(value) or value != int(value)))
        ):
            raise self.fail(path, f"must be an integer, got {value!r}")
        number = int(value)
        if minimum is not None and number < minimum:
            raise self.fail(path, f"must be >= {minimum}, got {number}")
        if maximum is not None and number > maximum:
            raise self.fail(path, f"must be <= {maximum}, got {number}")
        return number

    def at_most(self, items: list[Any], path: str, limit: int) -> list[Any]:
        if len(items) > limit:
            raise self.fail(path, f"{len(items)} entries; kaistack simulates at most {limit}")
        return items

    def number(self, value: object, path: str) -> float:
        # An int beyond a double's range (10**400) would raise OverflowError in isfinite/float.
        too_big = isinstance(value, int) and abs(value) > 2**63
        if isinstance(value, bool) or not isinstance(value, int | float) or too_big or not math.isfinite(value):
            shown = f"{str(value)[:20]}... ({len(str(value))} digits)" if too_big else repr(value)
            raise self.fail(path, f"must be a finite number, got {shown}")
        return float(value)

    def quantity(self, value: object, path: str, parse: Callable[[object], int]) -> int:
        try:
            return parse(value)
        except ValueError as err:
            raise self.fail(path, str(err)) from err

    def mig(self, value: object, path: str) -> dict[str, int]:
        if not isinstance(value, Mapping):
            raise self.fail(path, f"must be a mapping of MIG resource names to counts, got {value!r}")
        out: dict[str, int] = {}
        for name, count in value.items():
            if not isinstance(name, str) or not name.startswith("nvidia.com/mig-"):
                raise self.fail(f"{path}.{name}", "must be a MIG resource name like nvidia.com/mig-1g.10gb")
            out[name] = self.integer(count, f"{path}.{name}", minimum=0)
        return out

    def sized_mapping(self, value: object, path: str, limit: int, entries: str, of: str) -> Mapping[Any, Any]:
        """A mapping of at most `limit` entries (`entries` names them in the error, `of` says what maps to what)."""
        if not isinstance(value, Mapping):
            raise self.fail(path, f"must be a mapping of {of}, got {value!r}")
        if len(value) > limit:
            raise self.fail(path, f"{len(value)} {entries}; kaistack reads at most {limit}")
        return value

    def names(self, value: object, path: str, limit: int) -> list[str]:
        """A list of at most `limit` non-empty strings."""
        items = self.at_most(self.sequence(value, path), path, limit)
        for i, item in enumerate(items):
            if not isinstance(item, str) or not item:
                raise self.fail(f"{path}[{i}]", f"must be a non-empty string, got {item!r}")
        return items

    def scalar(self, value: object, path: str) -> dict[str, int]:
        """A scalarResources mapping: resource name -> Kubernetes quantity, read into KAI's units."""
        value = self.sized_mapping(value, path, MAX_SCALAR_RESOURCES, "resources", "resource names to quantities")
        out: dict[str, int] = {}
        for name, amount in value.items():
            if not isinstance(name, str) or not counted(name):
                raise self.fail(
                    f"{path}.{name}",
                    "must be a resource KAI counts besides cpu, memory, pods, GPUs and MIG devices: an extended "
                    "resource such as rdma/ib, hugepages-<size>, ephemeral-storage or storage",
                )
            try:
                out[name] = kai_units(name, amount)
            except QuantityError as err:
                raise self.fail(f"{path}.{name}", str(err)) from err
        return out


def unique(r: Reader, names: list[str], path: str) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise r.fail(f"{path}[{i}].name", f"duplicate name {name!r}")
        seen.add(name)


# The file's `actions`/`rounds` and `kaistack simulate --actions/--rounds` are read by these two functions, so a
# flag cannot take the simulator past the limits the file is held to.


def read_actions(r: Reader, value: object, path: str) -> tuple[str, ...]:
    """The actions of one cycle, in order: 1 to MAX_ACTIONS of ALL_ACTIONS."""
    items = r.at_most(r.sequence(value, path), path, MAX_ACTIONS)
    if not items:
        # No action places nothing: every pod would be reported Pending and the run would pass as if it had run.
        raise r.fail(path, f"must name 1 to {MAX_ACTIONS} actions of {', '.join(ALL_ACTIONS)}; got none")
    for i, action in enumerate(items):
        if action not in ALL_ACTIONS:
            raise r.fail(f"{path}[{i}]", f"must be one of {', '.join(ALL_ACTIONS)}, got {action!r}")
    return tuple(items)


def read_rounds(r: Reader, value: object, path: str, *, minimum: int = 1) -> int:
    """A cycle count, `minimum` to MAX_ROUNDS."""
    number = r.integer(value, path)
    if not minimum <= number <= MAX_ROUNDS:
        raise r.fail(path, f"must be {minimum} to {MAX_ROUNDS}, got {number}")
    return number
