"""The settings a cluster's SchedulingShard gives KAI's scheduler, as the simulator's Placement and action order.

KAI@v0.17.0: the operator runs one scheduler per SchedulingShard (`kai.scheduler/v1`, cluster-scoped; the chart makes
one named `default` with `partitionLabelValue: ""`, deployments/kai-scheduler/templates/default-shard.yaml) and builds
its flags and configuration from the spec (pkg/apis/kai/v1/schedulingshard_types.go):
- `placementStrategy.gpu` / `.cpu` (each binpack unless set, :355-358): gpupack and gpusharingorder when the GPU
  strategy is binpack, else gpuspread (:257-260); nodeplacement takes both (:275-276); consolidation runs only
  when neither is spread (:309-310);
- `minRuntime.preemptMinRuntime` / `.reclaimMinRuntime`: the minruntime plugin's defaults (:266-273), unless
  `plugins.minruntime.arguments` replaces its arguments whole (:278-295); a duration Go cannot parse, or a
  negative one, is 0 (pkg/scheduler/plugins/minruntime/minruntime.go:36-48); `plugins.minruntime.enabled: false`
  leaves the plugin out (operands/scheduler/plugin_action_merge.go:14-22), and no min runtime holds;
- `actions.<name>.enabled` / `.priority` (allocate 500, consolidation 400, reclaim 300, preempt 200,
  stalegangeviction 100; higher runs first, :238-244, 299-330);
- `args`: scheduler flags; `max-consolidation-preemptees` (default 16) and `use-scheduling-signatures` (default true)
  are read here (cmd/scheduler/app/options/options.go:38, :118, :124).
What else a shard sets (other flags, plugin overrides, kValue, queue depths, search budgets, partitions into several
schedulers) is said in a note; a shard whose scheduler does not start (a flag value it cannot parse, an action it
does not know, none at all) is `stopped`, and nothing is scheduled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaistack.guardrails.podspec import dig, mapping
from kaistack.ops.live_pods import object_name
from placement.model import ALL_ACTIONS, Placement

# The scheduler's flag defaults (options.go:38, :124); the simulator's own defaults are KAI's test harness's.
MAX_CONSOLIDATION_PREEMPTEES = 16
_ACTION_PRIORITY = {"allocate": 500, "consolidation": 400, "reclaim": 300, "preempt": 200, "stalegangeviction": 100}
_READ_ARGS = ("max-consolidation-preemptees", "use-scheduling-signatures")
# What else changes the cycle, unread: queueDepthPerAction caps the jobs an action tries per queue (framework/
# session.go:546-552); scenarioSearchBudgets are wall-clock limits of the eviction search; kValue the fair share.
_UNREAD = ("kValue", "queueDepthPerAction", "scenarioSearchBudgets", "usageDBConfig")
# strconv.ParseBool, which the flag package uses for a bool flag.
_GO_BOOLS = {spelling: True for spelling in ("1", "t", "T", "TRUE", "true", "True")}
_GO_BOOLS |= {spelling: False for spelling in ("0", "f", "F", "FALSE", "false", "False")}
_GO_OCTAL = re.compile(r"([+-]?)0(_?[0-7]+(?:_[0-7]+)*)")  # 0_17 is 15 too, as a Go literal
# xhit/go-str2duration@v2.1.0 (KAI's PluginArguments.GetDuration, framework/interface.go:126-138): time.ParseDuration's
# units plus days and weeks, in int64 nanoseconds.
_SECOND_NS = 10**9
_PLUGIN_UNITS_NS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": _SECOND_NS}
_PLUGIN_UNITS_NS |= {"m": 60 * _SECOND_NS, "h": 3600 * _SECOND_NS, "d": 86400 * _SECOND_NS, "w": 604800 * _SECOND_NS}
_PLUGIN_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


@dataclass(frozen=True)
class SchedulerSettings:
    placement: Placement
    actions: tuple[str, ...]
    notes: tuple[str, ...]
    # Why KAI's scheduler for the shard does not start (a flag it cannot parse, no action or one it does not know
    # in its configuration), so that nothing is scheduled; None: it runs.
    stopped: str | None = None
    shard: str = ""  # the name of the shard whose settings these are; "" for KAI's defaults


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
    if not all(dig(s, "spec", "partitionLabelValue") for s in shards):
        if len(shards) > 1:
            notes.append(
                f"{len(shards)} SchedulingShards partition the cluster into schedulers of their own, which kaistack "
                f"does not model: diagnosed as one, with shard {object_name(shard)}'s settings"
            )
    else:  # each schedules only the nodes labelled with its partition (conf/scheduler_conf.go:99-116)
        notes.append(
            "every SchedulingShard schedules a partition (spec.partitionLabelValue), so no scheduler takes unlabelled "
            f"nodes; kaistack does not model partitions: diagnosed as one, with shard {object_name(shard)}'s settings"
        )
    spec = mapping(shard.get("spec"))
    where = f"SchedulingShard {object_name(shard)}"
    gpu, cpu = (_strategy(dig(spec, "placementStrategy", key), where, key, notes) for key in ("gpu", "cpu"))
    # nodeplacement orders nodes by the GPU strategy for GPU pods, the CPU one for the others: spread, else binpack
    # (plugins/nodeplacement/nodeplacement.go:57-62); gpupack only for exactly binpack (:257-260).
    node, cpu_node = ("spread" if value == "spread" else "binpack" for value in (gpu, cpu))
    if node != cpu_node:
        notes.append(
            f"{where} orders nodes by {node} for GPU pods and {cpu_node} for CPU pods; kaistack orders both by {node}"
        )
    stops: list[str] = []
    preemptees, signatures = _args(mapping(spec.get("args")), where, notes, stops)
    plugins = mapping(spec.get("plugins"))
    minruntime = mapping(plugins.get("minruntime")).get("enabled") is not False  # resolvePlugins drops it
    preempt_min, reclaim_min, resolve = _min_runtimes(spec, where, notes) if minruntime else (0.0, 0.0, "lca")
    placement = Placement(
        node=node,
        gpu="pack" if gpu == "binpack" else "spread",
        max_consolidation_preemptees=preemptees,
        use_scheduling_signatures=signatures,
        default_preempt_min_runtime=preempt_min,
        default_reclaim_min_runtime=reclaim_min,
        reclaim_resolve_method=resolve,
        minruntime_plugin=minruntime,
    )
    actions = _actions(mapping(spec.get("actions")), "spread" in (gpu, cpu), placement.packs, where, notes, stops)
    unread = [key for key in _UNREAD if spec.get(key) is not None]
    unread += sorted(f"plugins.{name}" for name in map(str, plugins) if name != "minruntime")
    if unread:
        notes.append(f"{where} sets {', '.join(unread)}, which kaistack does not read: diagnosed with KAI's defaults")
    stopped = f"KAI's scheduler for {where} does not start: {'; '.join(stops)}" if stops else None
    return SchedulerSettings(placement, actions, tuple(notes), stopped, object_name(shard))


def _pick(shards: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The shard of the unpartitioned nodes (partitionLabelValue ""), the chart's `default` first."""
    plain = [s for s in shards if not dig(s, "spec", "partitionLabelValue")]
    pool = plain or list(shards)
    return next((s for s in pool if object_name(s) == "default"), pool[0])


def _strategy(value: Any, where: str, key: str, notes: list[str]) -> str:
    """binpack, spread, or another value, which the operator keeps as it is (only a missing one defaults,
    common/set_default.go:6-11): then gpuspread, binpack node order, and consolidation on."""
    if value is None:
        return "binpack"
    if value in ("binpack", "spread"):
        return str(value)
    notes.append(
        f"{where}: placementStrategy.{key} {value!r} is neither binpack nor spread: KAI then spreads shares over "
        "GPUs and binpacks nodes"
    )
    return "other"


def _args(args: Mapping[str, Any], where: str, notes: list[str], stops: list[str]) -> tuple[int, bool]:
    """The two flags read. A value the flag cannot parse stops the scheduler: pflag.Parse on pflag.CommandLine,
    which exits on an error (options.go:139, cmd/scheduler/app/server.go:119-124)."""
    preemptees, signatures = MAX_CONSOLIDATION_PREEMPTEES, True
    raw = args.get("max-consolidation-preemptees")
    if raw is not None:
        count = _go_int(str(raw))
        if count is None:
            stops.append(f"args max-consolidation-preemptees {raw!r} is not an int")
        elif count < -1:
            # Every victim is then over the limit (consolidation.go:168, 199-201): consolidation moves nothing.
            notes.append(f"{where}: args max-consolidation-preemptees {count} lets consolidation move no job")
            preemptees = 0
        else:
            preemptees = count
    raw = args.get("use-scheduling-signatures")
    if raw is not None:
        if str(raw) in _GO_BOOLS:
            signatures = _GO_BOOLS[str(raw)]
        else:
            stops.append(f"args use-scheduling-signatures {raw!r} is not a Go bool")
    if other := sorted(str(k) for k in args if k not in _READ_ARGS):
        # The operator passes on only the flags the scheduler defines (resources_for_shard.go:375-380).
        notes.append(f"{where} sets args {', '.join(other)}, which kaistack does not read")
    return preemptees, signatures


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), as the flag package reads an int flag: decimal, 0x/0o/0b, a leading 0 for
    octal, underscores between digits; no spaces."""
    if text != text.strip():
        return None
    if octal := _GO_OCTAL.fullmatch(text):
        value = int(octal.group(1) + octal.group(2).replace("_", ""), 8)
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
        arguments = dict(override)  # replaces the defaults whole (schedulingshard_types.go:278-295)
    preempt, reclaim = (
        _runtime(arguments.get(key)) for key in ("defaultPreemptMinRuntime", "defaultReclaimMinRuntime")
    )
    resolve = arguments.get("reclaimResolveMethod") or "lca"
    if resolve not in ("lca", "queue"):
        notes.append(f"{where}: minruntime reclaimResolveMethod {resolve!r} is not lca or queue; KAI uses lca")
        resolve = "lca"
    return preempt, reclaim, str(resolve)


def _runtime(value: Any) -> float:
    """minruntime's parseMinRuntime: a duration str2duration reads, else (or negative) 0."""
    seconds = plugin_duration_seconds(value)
    return seconds if seconds is not None and seconds > 0 else 0.0


def plugin_duration_seconds(value: Any) -> float | None:
    """str2duration.ParseDuration in seconds: a sign, then numbers (a fraction too) each with a unit of ns, us, ms,
    s, m, h, d or w; None where it errs (no unit, an unknown one, beyond int64 nanoseconds)."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    text = value[1:] if value[:1] in ("+", "-") else value
    if text == "0":
        return 0.0
    if not text:
        return None
    limit = 2**63 if value.startswith("-") else 2**63 - 1
    total, rest = 0, text
    while rest:
        part = _PLUGIN_PART.match(rest)
        whole, fraction, unit = part.groups() if part else ("", None, "")
        if not (whole or fraction) or unit not in _PLUGIN_UNITS_NS:
            return None
        rest = rest[part.end() :] if part else ""
        scale = _PLUGIN_UNITS_NS[unit]
        # The fraction is truncated to whole nanoseconds through a float64, as str2duration does.
        total += int(whole or 0) * scale + (
            int(float(int(fraction)) * (scale / 10 ** len(fraction))) if fraction else 0
        )
        if total > limit:
            return None
    return (-total if value.startswith("-") else total) / 1e9


def _actions(
    overrides: Mapping[str, Any], spread: bool, consolidates: bool, where: str, notes: list[str], stops: list[str]
) -> tuple[str, ...]:
    """The enabled actions, higher priority first, ties by name (operands/scheduler/plugin_action_merge.go:35-50).
    Consolidation is off under a spread strategy unless the shard turns it on (schedulingshard_types.go:309-325).
    The scheduler refuses a configuration naming an action it does not know, or none (the empty name, conf_util/
    scheduler_conf_util.go:99-109, 125-128)."""
    priority = dict(_ACTION_PRIORITY)
    enabled = {name: not (spread and name == "consolidation") for name in priority}
    for name, raw in overrides.items():
        override = mapping(raw)
        if name not in priority:
            if override.get("enabled") is not False:  # a new action is enabled unless it says otherwise
                stops.append(f"it knows no action {str(name)!r}")
            continue
        if isinstance(override.get("enabled"), bool):
            enabled[name] = override["enabled"]
        value = override.get("priority")
        if isinstance(value, int) and not isinstance(value, bool):
            priority[name] = value
    if enabled["consolidation"] and not consolidates:
        notes.append(f"{where} runs consolidation without binpack; kaistack simulates consolidation only with binpack")
    chosen = [name for name in priority if enabled[name]]
    if not chosen:
        stops.append("every action is turned off")
    return tuple(sorted(chosen, key=lambda name: (-priority[name], name)))
