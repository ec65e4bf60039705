"""The SchedulingShard's settings, as `kaistack diagnose` runs KAI's cycle with them (kaistack.ops.live_shard).

Facts: KAI@v0.17.0 pkg/apis/kai/v1/schedulingshard_types.go (how the operator turns a shard's spec into the
scheduler's plugins, actions and flags), cmd/scheduler/app/options/options.go (the flags' defaults) and
pkg/scheduler/plugins/minruntime/minruntime.go (how the min runtimes are parsed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dump_testlib as dump
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kaistack.ops.live_shard import scheduler_settings
from placement.model import ALL_ACTIONS

STOPPED = "KAI's scheduler for SchedulingShard default does not start: "


def _shard(name: str = "default", partition: str = "", **spec: Any) -> dict[str, Any]:
    return {"kind": "SchedulingShard", "metadata": {"name": name}, "spec": {"partitionLabelValue": partition, **spec}}


def test_without_a_shard_read_kais_flag_defaults_are_used_and_said() -> None:
    """options.go:38 (16 consolidation preemptees), :124 (signatures on); every action (schedulingshard_types.go:
    238-244)."""
    settings = scheduler_settings(None)
    assert (settings.placement.max_consolidation_preemptees, settings.placement.use_scheduling_signatures) == (16, True)
    assert (settings.placement.node, settings.placement.gpu) == ("binpack", "pack")
    assert settings.actions == ALL_ACTIONS
    assert settings.notes == (
        "no SchedulingShard was read: diagnosed with KAI's scheduler defaults (binpack, consolidation of up to 16 "
        "jobs, scheduling signatures; add schedulingshards to the dump)",
    )


def test_a_cluster_read_without_any_shard_is_said_so() -> None:
    (note,) = scheduler_settings([]).notes
    assert note.startswith("the cluster has no SchedulingShard: diagnosed with KAI's scheduler defaults")


def test_the_charts_default_shard_is_kais_defaults_without_a_note() -> None:
    """deployments/kai-scheduler/templates/default-shard.yaml with values.yaml's placementStrategy binpack."""
    settings = scheduler_settings([_shard(goMemLimitRatio=0.9, placementStrategy={"gpu": "binpack", "cpu": "binpack"})])
    assert settings == scheduler_settings([_shard()])
    assert settings.notes == ()
    assert settings.actions == ALL_ACTIONS
    assert (settings.placement.node, settings.placement.gpu, settings.placement.max_consolidation_preemptees) == (
        "binpack",
        "pack",
        16,
    )


def test_a_spread_shard_spreads_nodes_and_gpus_and_runs_no_consolidation() -> None:
    """gpuspread when the GPU strategy is not binpack (:257-260), nodeplacement's arguments (:275-276), and
    consolidation only when neither strategy is spread (:309-310)."""
    settings = scheduler_settings([_shard(placementStrategy={"gpu": "spread", "cpu": "spread"})])
    assert (settings.placement.node, settings.placement.gpu) == ("spread", "spread")
    assert settings.actions == ("allocate", "reclaim", "preempt", "stalegangeviction")
    assert settings.notes == ()


def test_a_cpu_spread_alone_turns_consolidation_off_and_says_the_node_order_is_the_gpus() -> None:
    settings = scheduler_settings([_shard(placementStrategy={"cpu": "spread"})])
    assert "consolidation" not in settings.actions
    assert (settings.placement.node, settings.placement.gpu) == ("binpack", "pack")
    assert settings.notes == (
        "SchedulingShard default orders nodes by binpack for GPU pods and spread for CPU pods; kaistack orders both "
        "by binpack",
    )


@pytest.mark.parametrize("value", ["tetris", ""])
def test_an_unknown_strategy_spreads_shares_binpacks_nodes_and_is_said(value: str) -> None:
    """Only a missing strategy defaults (pkg/apis/kai/v1/common/set_default.go:6-11); gpupack needs exactly binpack
    (:257-260), nodeplacement spreads only for spread (pkg/scheduler/plugins/nodeplacement/nodeplacement.go:57-62),
    and consolidation stays on (:309-310), which kaistack simulates only with binpack."""
    settings = scheduler_settings([_shard(placementStrategy={"gpu": value})])
    assert (settings.placement.node, settings.placement.gpu) == ("binpack", "spread")
    assert f"placementStrategy.gpu {value!r} is neither binpack nor spread" in settings.notes[0]
    assert "runs consolidation without binpack" in settings.notes[1]


def test_a_spread_shard_that_turns_consolidation_on_is_said_not_simulated() -> None:
    """User overrides are merged after the strategy's default (:312-325): KAI would run consolidation."""
    settings = scheduler_settings(
        [_shard(placementStrategy={"gpu": "spread"}, actions={"consolidation": {"enabled": True}})]
    )
    assert (
        "runs consolidation without binpack; kaistack simulates consolidation only with binpack" in settings.notes[-1]
    )


@pytest.mark.parametrize(("value", "count"), [("0", 0), ("-1", -1), ("32", 32), ("017", 15), ("0x20", 32), ("1_0", 10)])
def test_args_set_the_consolidation_preemptee_limit(value: str, count: int) -> None:
    """The flag package reads an int flag with strconv.ParseInt(s, 0, 64): a leading 0 is octal."""
    settings = scheduler_settings([_shard(args={"max-consolidation-preemptees": value})])
    assert settings.placement.max_consolidation_preemptees == count
    assert settings.notes == ()


@pytest.mark.parametrize("value", ["abc", "1.5", " 8", "09", str(2**63)])
def test_a_preemptee_limit_the_flag_cannot_parse_stops_the_scheduler(value: str) -> None:
    """pflag.Parse on pflag.CommandLine exits on a bad value (options.go:139; cmd/scheduler/app/server.go:119-124)."""
    settings = scheduler_settings([_shard(args={"max-consolidation-preemptees": value})])
    assert settings.stopped == (
        f"KAI's scheduler for SchedulingShard default does not start: args max-consolidation-preemptees {value!r} "
        "is not an int"
    )


def test_a_preemptee_limit_below_minus_one_lets_consolidation_move_nothing() -> None:
    """Every victim is over such a limit (pkg/scheduler/actions/consolidation/consolidation.go:168, 199-201)."""
    settings = scheduler_settings([_shard(args={"max-consolidation-preemptees": "-2"})])
    assert settings.placement.max_consolidation_preemptees == 0
    assert settings.stopped is None
    assert settings.notes == (
        "SchedulingShard default: args max-consolidation-preemptees -2 lets consolidation move no job",
    )


@pytest.mark.parametrize(("value", "on"), [("false", False), ("F", False), ("0", False), ("TRUE", True), ("t", True)])
def test_args_turn_scheduling_signatures_off_as_go_parses_a_bool(value: str, on: bool) -> None:
    """strconv.ParseBool's spellings; the flag is a BoolVar (options.go:124)."""
    assert (
        scheduler_settings([_shard(args={"use-scheduling-signatures": value})]).placement.use_scheduling_signatures
        is on
    )


def test_a_signatures_flag_go_cannot_parse_stops_the_scheduler() -> None:
    settings = scheduler_settings([_shard(args={"use-scheduling-signatures": "no"})])
    assert settings.stopped is not None
    assert settings.stopped.endswith("args use-scheduling-signatures 'no' is not a Go bool")


def test_other_scheduler_flags_are_named_as_not_read() -> None:
    settings = scheduler_settings([_shard(args={"leader-elect": "true", "qps": "100"})])
    assert settings.notes == ("SchedulingShard default sets args leader-elect, qps, which kaistack does not read",)


def test_the_shards_min_runtimes_are_the_minruntime_plugins_defaults() -> None:
    """:266-273; Go durations (minruntime.go:36-48)."""
    placement = scheduler_settings(
        [_shard(minRuntime={"preemptMinRuntime": "10m", "reclaimMinRuntime": "1h30m"})]
    ).placement
    assert (placement.default_preempt_min_runtime, placement.default_reclaim_min_runtime) == (600.0, 5400.0)


@pytest.mark.parametrize("value", ["-5s", "soon", ""])
def test_a_min_runtime_go_cannot_use_is_zero(value: str) -> None:
    """parseMinRuntime logs and uses 0 for an unparsable or negative duration (minruntime.go:36-48)."""
    placement = scheduler_settings([_shard(minRuntime={"preemptMinRuntime": value})]).placement
    assert placement.default_preempt_min_runtime == 0.0


def test_minruntime_plugin_arguments_replace_the_shards_min_runtimes_whole() -> None:
    """A plugin override's arguments replace the defaults, min runtimes included (:278-295)."""
    spec = {
        "minRuntime": {"preemptMinRuntime": "10m"},
        "plugins": {"minruntime": {"arguments": {"reclaimResolveMethod": "queue", "defaultReclaimMinRuntime": "2m"}}},
    }
    placement = scheduler_settings([_shard(**spec)]).placement
    assert (placement.default_preempt_min_runtime, placement.default_reclaim_min_runtime) == (0.0, 120.0)
    assert placement.reclaim_resolve_method == "queue"


def test_an_unknown_reclaim_resolve_method_is_lca_as_kai_falls_back() -> None:
    """minruntime.go:58-62."""
    settings = scheduler_settings([_shard(plugins={"minruntime": {"arguments": {"reclaimResolveMethod": "root"}}})])
    assert settings.placement.reclaim_resolve_method == "lca"
    assert "reclaimResolveMethod 'root' is not lca or queue" in settings.notes[0]


def test_actions_are_turned_off_and_reordered_by_priority() -> None:
    """Higher priority runs first (:238-244); a disabled action does not run."""
    actions = {"preempt": {"priority": 450}, "stalegangeviction": {"enabled": False}, "reclaim": {"priority": True}}
    assert scheduler_settings([_shard(actions=actions)]).actions == ("allocate", "preempt", "consolidation", "reclaim")


def test_actions_of_one_priority_run_in_name_order() -> None:
    """resolveActions breaks a tie by name (pkg/operator/operands/scheduler/plugin_action_merge.go:35-50)."""
    settings = scheduler_settings([_shard(actions={"preempt": {"priority": 300}})])
    assert settings.actions == ("allocate", "consolidation", "preempt", "reclaim", "stalegangeviction")


def test_an_action_the_scheduler_does_not_know_stops_it() -> None:
    """A new action is enabled unless it says otherwise (:312-323); the scheduler refuses a configuration naming an
    action it has not registered (pkg/scheduler/conf_util/scheduler_conf_util.go:99-109, 125-128)."""
    settings = scheduler_settings([_shard(actions={"backfill": {"priority": 50}})])
    assert settings.stopped == STOPPED + "it knows no action 'backfill'"


def test_an_unknown_action_turned_off_is_harmless() -> None:
    settings = scheduler_settings([_shard(actions={"backfill": {"enabled": False}})])
    assert (settings.stopped, settings.notes, settings.actions) == (None, (), ALL_ACTIONS)


def test_a_shard_with_every_action_off_stops_the_scheduler() -> None:
    """The operator writes `actions: ""` (operands/scheduler/resources_for_shard.go:156-157), whose one empty name
    the scheduler refuses when it loads the configuration (scheduler_conf_util.go:100-106, 125-128), before the
    fallback to the default actions (:86-88)."""
    off = {name: {"enabled": False} for name in ALL_ACTIONS}
    settings = scheduler_settings([_shard(actions=off)])
    assert settings.stopped == STOPPED + "every action is turned off"


def test_settings_kaistack_does_not_read_are_named() -> None:
    spec = {
        "kValue": 2.0,
        "queueDepthPerAction": {"allocate": 1},
        "scenarioSearchBudgets": {"maxJobSearchDuration": "1s"},
        "plugins": {"gpupack": {"enabled": False}},
    }
    (note,) = scheduler_settings([_shard(**spec)]).notes
    assert note == (
        "SchedulingShard default sets kValue, queueDepthPerAction, scenarioSearchBudgets, plugins.gpupack, which "
        "kaistack does not read: diagnosed with KAI's defaults"
    )


def test_the_minruntime_plugin_turned_off_protects_no_job() -> None:
    """resolvePlugins leaves a disabled plugin out (plugin_action_merge.go:14-22): the shard's min runtimes and the
    queues' own protect nothing."""
    spec = {"minRuntime": {"preemptMinRuntime": "1h"}, "plugins": {"minruntime": {"enabled": False}}}
    settings = scheduler_settings([_shard(**spec)])
    assert settings.placement.minruntime_plugin is False
    assert settings.placement.default_preempt_min_runtime == 0.0
    assert settings.notes == ()


def test_shards_that_all_schedule_partitions_are_said_to_leave_unlabelled_nodes_unscheduled() -> None:
    """A shard with a partitionLabelValue selects only the nodes labelled with it (pkg/scheduler/conf/
    scheduler_conf.go:99-116)."""
    (note,) = scheduler_settings([_shard("a-pool", "a")]).notes
    assert note.startswith("every SchedulingShard schedules a partition (spec.partitionLabelValue)")


def test_with_several_shards_the_unpartitioned_default_one_is_used_and_the_partitions_said() -> None:
    shards = [
        _shard("a-pool", "a", placementStrategy={"gpu": "spread"}),
        _shard("default", placementStrategy={"gpu": "binpack"}),
    ]
    settings = scheduler_settings(shards)
    assert settings.placement.node == "binpack"
    assert settings.notes[0].startswith("2 SchedulingShards partition the cluster into schedulers of their own")
    assert "shard default's settings" in settings.notes[0]


_SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8)
_KEYS = st.sampled_from(
    ["placementStrategy", "gpu", "cpu", "args", "max-consolidation-preemptees", "use-scheduling-signatures",
     "actions", "consolidation", "enabled", "priority", "minRuntime", "preemptMinRuntime", "plugins", "minruntime",
     "arguments", "reclaimResolveMethod", "partitionLabelValue", "kValue"]
) | st.integers(0, 3)  # fmt: skip


def _keyed_collections(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # Named, not a lambda: describing a lambda makes hypothesis parse this file, which CPython 3.11.7 can fail deep in
    # a draw ("AST constructor recursion depth mismatch").
    return st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=5)


_SHAPED = st.recursive(_SCALARS, _keyed_collections, max_leaves=16)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.fixed_dictionaries({"kind": st.just("SchedulingShard"), "spec": _SHAPED}), min_size=1, max_size=3))
def test_any_shard_a_dump_holds_gives_settings_kaistack_can_simulate(shards: list[dict[str, Any]]) -> None:
    """A dump is hostile input: whatever a shard's spec holds, the settings are usable, not an exception."""
    settings_ = scheduler_settings(shards)
    assert set(settings_.actions) <= set(ALL_ACTIONS)
    assert settings_.placement.max_consolidation_preemptees >= -1
    assert all(isinstance(note, str) for note in settings_.notes)


# --- through diagnose ---------------------------------------------------------------------------------------------


def _fragmented(*shards: dict[str, Any]) -> list[dict[str, Any]]:
    """Two nodes of two GPUs, each running one preemptible 1-GPU pod; a 2-GPU pod pending. Consolidation would
    move one running pod beside the other."""
    return [
        *shards,
        dump.node("n1", gpus=2),
        dump.node("n2", gpus=2),
        dump.queue(),
        *(dump.pod_group(name, i) for i, name in enumerate(("r1", "r2", "w"))),
        dump.pod("r1", "r1", node="n1"),
        dump.pod("r2", "r2", node="n2"),
        dump.pod("w", "w", requests={"nvidia.com/gpu": "2"}),
    ]


@pytest.mark.parametrize(
    ("shard", "places"),
    [
        (_shard(), True),
        (_shard(placementStrategy={"gpu": "spread", "cpu": "spread"}), False),
        (_shard(actions={"consolidation": {"enabled": False}}), False),
        (_shard(args={"max-consolidation-preemptees": "0"}), False),
    ],
)
def test_diagnose_runs_the_cycle_with_the_shards_settings(
    shard: dict[str, Any], places: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A kaistack stack with kai.placementStrategy spread gets a shard of spread (the chart's default-shard.yaml
    writes the value to both), where KAI runs no consolidation: w stays Pending. It was diagnosed with binpack's."""
    pending = dump.diagnose_pending(_fragmented(shard), tmp_path, capsys)
    assert pending["ml/w"]["wouldPlace"] is places


def test_diagnose_says_every_pending_pod_waits_on_a_scheduler_that_does_not_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stopping = _shard(actions={"backfill": {"enabled": True}})
    pending = dump.diagnose_pending(_fragmented(stopping), tmp_path, capsys)["ml/w"]
    assert pending["wouldPlace"] is False
    assert pending["reason"] == STOPPED + "it knows no action 'backfill'"


@pytest.mark.parametrize(("plugin", "places"), [({}, False), ({"minruntime": {"enabled": False}}, True)])
def test_without_the_minruntime_plugin_a_queues_min_runtime_protects_nothing(
    plugin: dict[str, Any], places: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """r (train) started 10 minutes ago in a queue whose preemptMinRuntime is 1h; h (a higher class, same queue)
    waits for n1's one GPU. The minruntime plugin is what enforces a queue's min runtime
    (pkg/scheduler/plugins/minruntime/minruntime.go); a shard that turns it off lets h preempt r."""
    queue = dump.queue()
    queue["spec"]["preemptMinRuntime"] = "1h"
    started = {"kai.scheduler/last-start-timestamp": "2026-11-25T11:50:00Z"}
    items = [
        _shard(plugins=plugin),
        dump.node("n1", gpus=1),
        queue,
        dump.priority_class("train", 50),
        dump.priority_class("high", 90),
        dump.pod_group("r", 0, "train", annotations=started),
        dump.pod_group("h", 1, "high"),
        dump.pod("r", "r", node="n1"),
        dump.pod("h", "h"),
    ]
    assert dump.diagnose_pending(items, tmp_path, capsys)["ml/h"]["wouldPlace"] is places


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("1d", 86400.0), ("2w", 1209600.0), ("1w2d6h", 799200.0), ("1.5h", 5400.0), (".5s", 0.5), ("0", 0.0)],
)
def test_a_min_runtime_reads_days_and_weeks_as_kais_plugin_arguments_do(value: str, seconds: float) -> None:
    """PluginArguments.GetDuration parses with xhit/go-str2duration v2.1.0 (KAI@v0.17.0
    pkg/scheduler/framework/interface.go:126-138, go.mod:36), time.ParseDuration's units plus d and w
    (str2duration.go unitMap); a "1d" shard was read as no min runtime."""
    placement = scheduler_settings([_shard(minRuntime={"preemptMinRuntime": value})]).placement
    assert placement.default_preempt_min_runtime == seconds


@pytest.mark.parametrize("value", ["3000000h", "1x", "10", ".s", "", "-"])
def test_a_min_runtime_str2duration_refuses_is_zero(value: str) -> None:
    """No unit, an unknown one, or more than int64 nanoseconds (3,000,000 h) is an error, and parseMinRuntime uses 0
    (minruntime.go:36-48)."""
    placement = scheduler_settings([_shard(minRuntime={"preemptMinRuntime": value})]).placement
    assert placement.default_preempt_min_runtime == 0.0


def test_an_octal_preemptee_limit_may_have_underscores_as_a_go_literal() -> None:
    """strconv.ParseInt(s, 0, 64) takes Go's integer literal syntax: 0_17 is octal 17."""
    placement = scheduler_settings([_shard(args={"max-consolidation-preemptees": "0_17"})]).placement
    assert placement.max_consolidation_preemptees == 15
