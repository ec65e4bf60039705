"""The settings a cluster's SchedulingShard gives KAI's scheduler, as the simulator's Placement and action order.

KAI@v0.17.0: the operator runs one scheduler per SchedulingShard (`kai.scheduler/v1`, cluster-scoped; the chart makes
one named `default` with `partitionLabelValue: ""`, deployments/kai-scheduler/templates/default-shard.yaml) and builds
its flags and configuration from the spec (pkg/apis/kai/v1/schedulingshard_types.go):
- `placementStrategy.gpu` / `.cpu` (each binpack unless set, :355-358): gpupack and gpusharingorder when the GPU
  strategy is binpack, else gpuspread (:257-260); nodeplacement takes both (:275-276); consolidation runs only
  when neither is spread (:309-310);
- `minRuntime.preemptMinRuntime` / `.reclaimMinRuntime`: the minruntime plugin's defaults (:266-273), unless
  `plugins.minruntime.arguments` replaces its arguments whole (:278-295); a duration Go cannot parse, or a
  negative one, is 0 (pkg/scheduler/plugins/minruntime/minruntime.go:36-48);
- `actions.<name>.enabled` / `.priority` (allocate 500, consolidation 400, reclaim 300, preempt 200,
  stalegangeviction 100; higher runs first, :238-244, 299-330);
- `args`: scheduler flags; `max-consolidation-preemptees` (default 16) and `use-scheduling-signatures` (default true)
  are read here (cmd/scheduler/app/options/options.go:38, :118, :124).
What else a shard sets (other flags, plugin overrides, kValue, partitions into several schedulers) is said in a note.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaistack.guardrails.podspec import dig, mapping
from kaistack.ops.live_pods import object_name
from placement.model import ALL_ACTIONS, Placement
from placement.scenario import duration_seconds

# The scheduler's flag defaults (options.go:38, :124); the simulator's own defaults are KAI's test harness's.
MAX_CONSOLIDATION_PREEMPTEES = 16
_ACTION_PRIORITY = {"allocate": 500, "consolidation": 400, "reclaim": 300, "preempt": 200, "stalegangeviction": 100}
_READ_ARGS = ("max-consolidation-preemptees", "use-scheduling-signatures")
# strconv.ParseBool, which the flag package uses for a bool flag.
_GO_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True} | {
    "0": False,
    "f": False,
    "F": False,
    "FALSE": False,
    "false": False,
    "False": False,
}
_GO_OCTAL = re.compile(r"([+-]?)0([0-7]+)")


@dataclass(frozen=True)
class SchedulerSettings:
    placement: Placement
    actions: tuple[str, ...]
    notes: tuple[str, ...]


def scheduler_settings(shards: Sequence[Mapping[str, Any]] | None) -> SchedulerSettings:
    """The settings of the shard that schedules the cluster's unpartitioned nodes; `shards` None: none were read
    (KAI's defaults, and a note saying so)."""
    if not shards:
        why = "no SchedulingShard was read" if shards is None else "the cluster has no SchedulingShard"
        return SchedulerSettings(
            Placement(max_consolidation_preemptees=MAX_CONSOLIDATION_PREEMPTEES, use_scheduling_signatures=True),
            ALL_ACTIONS,
            (
                f"{why}: diagnosed with KAI's scheduler defaults (binpack, consolidation of up to 16 jobs, "
                "scheduling signatures; add schedulingshards to the dump)",
            ),
        )
    shard = _pick(shards)
    notes: list[str] = []
    if len(shards) > 1:
        notes.append(
            f"{len(shards)} SchedulingShards partition the cluster into schedulers of their own, which kaistack does "
            f"not model: diagnosed as one, with shard {object_name(shard)}'s settings"
        )
    spec = mapping(shard.get("spec"))
    where = f"SchedulingShard {object_name(shard)}"
    gpu, cpu = (_strategy(dig(spec, "placementStrategy", key), where, key, notes) for key in ("gpu", "cpu"))
    if gpu != cpu:
        notes.append(f"{where} places GPU pods by {gpu} and CPU pods by {cpu}; kaistack orders nodes for both by {gpu}")
    preemptees, signatures = _args(mapping(spec.get("args")), where, notes)
    preempt_min, reclaim_min, resolve = _min_runtimes(spec, where, notes)
    placement = Placement(
        node=gpu,
        gpu="pack" if gpu == "binpack" else "spread",
        max_consolidation_preemptees=preemptees,
        use_scheduling_signatures=signatures,
        default_preempt_min_runtime=preempt_min,
        default_reclaim_min_runtime=reclaim_min,
        reclaim_resolve_method=resolve,
    )
    actions = _actions(mapping(spec.get("actions")), "spread" in (gpu, cpu), where, notes)
    unread = [key for key in ("kValue", "usageDBConfig") if spec.get(key) is not None]
    plugins = mapping(spec.get("plugins"))
    unread += sorted(
        f"plugins.{name}"
        for name, override in plugins.items()
        if name != "minruntime" or set(mapping(override)) - {"arguments"}
    )
    if unread:
        notes.append(f"{where} sets {', '.join(unread)}, which kaistack does not read: diagnosed with KAI's defaults")
    return SchedulerSettings(placement, actions, tuple(notes))


def _pick(shards: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The shard of the unpartitioned nodes (partitionLabelValue ""), the chart's `default` first."""
    plain = [s for s in shards if not dig(s, "spec", "partitionLabelValue")]
    pool = plain or list(shards)
    return next((s for s in pool if object_name(s) == "default"), pool[0])


def _strategy(value: Any, where: str, key: str, notes: list[str]) -> str:
    if value is None or value in ("binpack", "spread"):
        return str(value or "binpack")
    notes.append(f"{where}: placementStrategy.{key} {value!r} is neither binpack nor spread; taken as binpack")
    return "binpack"


def _args(args: Mapping[str, Any], where: str, notes: list[str]) -> tuple[int, bool]:
    preemptees, signatures = MAX_CONSOLIDATION_PREEMPTEES, True
    raw = args.get("max-consolidation-preemptees")
    if raw is not None:
        count = _go_int(raw) if isinstance(raw, str) else None
        if count is not None and count >= -1:
            preemptees = count
        else:
            notes.append(f"{where}: args max-consolidation-preemptees {raw!r} is not a count; 16 assumed")
    raw = args.get("use-scheduling-signatures")
    if raw is not None:
        if isinstance(raw, str) and raw in _GO_BOOLS:
            signatures = _GO_BOOLS[raw]
        else:
            notes.append(f"{where}: args use-scheduling-signatures {raw!r} is not a Go bool; true assumed")
    if other := sorted(str(k) for k in args if k not in _READ_ARGS):
        notes.append(f"{where} passes the scheduler {', '.join(other)}, which kaistack does not read")
    return preemptees, signatures


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), as the flag package reads an int flag: decimal, 0x/0o/0b, a leading 0 for
    octal, underscores between digits; no spaces."""
    if text != text.strip():
        return None
    if octal := _GO_OCTAL.fullmatch(text):
        value = int(octal.group(1) + octal.group(2), 8)
    else:
        try:
            value = int(text, 0)
        except ValueError:
            return None
    return value if -(2**63) <= value < 2**63 else None


def _min_runtimes(spec: Mapping[str, Any], where: str, notes: list[str]) -> tuple[float, float, str]:
    arguments = {
        "defaultPreemptMinRuntime": dig(spec, "minRuntime", "preemptMinRuntime"),
        "defaultReclaimMinRuntime": dig(spec, "minRuntime", "reclaimMinRuntime"),
    }
    override = dig(spec, "plugins", "minruntime", "arguments")
    if isinstance(override, Mapping):
        arguments = dict(override)  # replaces the defaults whole (schedulingshard_types.go:263-279)
    preempt, reclaim = (
        _runtime(arguments.get(key)) for key in ("defaultPreemptMinRuntime", "defaultReclaimMinRuntime")
    )
    resolve = arguments.get("reclaimResolveMethod") or "lca"
    if resolve not in ("lca", "queue"):
        notes.append(f"{where}: minruntime reclaimResolveMethod {resolve!r} is not lca or queue; KAI uses lca")
        resolve = "lca"
    return preempt, reclaim, str(resolve)


def _runtime(value: Any) -> float:
    """minruntime's parseMinRuntime: a Go duration, else (or negative) 0."""
    seconds = duration_seconds(value) if value is not None else None
    return seconds if seconds is not None and seconds > 0 else 0.0


def _actions(overrides: Mapping[str, Any], spread: bool, where: str, notes: list[str]) -> tuple[str, ...]:
    """The enabled actions, higher priority first (ties in the default order). Consolidation is off under a spread
    strategy unless the shard turns it on (schedulingshard_types.go:309-325)."""
    priority = dict(_ACTION_PRIORITY)
    enabled = {name: not (spread and name == "consolidation") for name in priority}
    for name, raw in overrides.items():
        override = mapping(raw)
        if name not in priority:
            notes.append(f"{where} adds action {name!r}, which kaistack does not simulate")
            continue
        if isinstance(override.get("enabled"), bool):
            enabled[name] = override["enabled"]
        value = override.get("priority")
        if isinstance(value, int) and not isinstance(value, bool):
            priority[name] = value
    if spread and enabled["consolidation"]:
        notes.append(f"{where} turns consolidation on under a spread strategy; kaistack simulates it only with binpack")
    chosen = [name for name in priority if enabled[name]]
    return tuple(sorted(chosen, key=lambda name: (-priority[name], ALL_ACTIONS.index(name))))
