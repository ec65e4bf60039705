"""What a mutation run of kaistack/ops/live_shard.py and kaistack/ops/verify_scheduler.py found unpinned: which
shard is read, the flag values at Go's limits, each action's default priority, and what `kaistack verify`'s
`scheduler` check says for a stack whose scheduler runs no consolidation.

Facts: KAI@v0.17.0 pkg/apis/kai/v1/schedulingshard_types.go, pkg/operator/operands/scheduler/
(plugin_action_merge.go, resources_for_shard.go), cmd/scheduler/app/options/options.go and
pkg/scheduler/plugins/minruntime/minruntime.go, as in test_live_shard.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from workflow_testlib import check_detail, failed_checks, verify_json

from kaistack.ops.live_shard import scheduler_settings

SHARDS = "/apis/kai.scheduler/v1/schedulingshards"
CHECK_ASSUMES = ": `kaistack check` simulated another scheduler"
# KAI@v0.17.0:pkg/apis/kai/v1/schedulingshard_types.go:238-244.
DEFAULT_PRIORITIES = {"allocate": 500, "consolidation": 400, "reclaim": 300, "preempt": 200, "stalegangeviction": 100}


def _shard(name: str = "default", partition: str = "", **spec: Any) -> dict[str, Any]:
    return {"kind": "SchedulingShard", "metadata": {"name": name}, "spec": {"partitionLabelValue": partition, **spec}}


# --- which shard ----------------------------------------------------------------------------------------------------


def test_the_unpartitioned_shard_is_read_even_when_a_partitioned_one_is_named_default() -> None:
    """Only a shard with an empty partitionLabelValue takes unlabelled nodes (pkg/scheduler/conf/scheduler_conf.go:
    99-116); its name does not matter."""
    shards = [_shard("default", "a", placementStrategy={"gpu": "spread"}), _shard("plain")]
    settings = scheduler_settings(shards)
    assert settings.shard == "plain"
    assert (settings.placement.node, settings.placement.gpu) == ("binpack", "pack")


def test_among_unpartitioned_shards_the_charts_default_is_read() -> None:
    """deployments/kai-scheduler/templates/default-shard.yaml:8 names the chart's shard `default`."""
    shards = [_shard("extra", placementStrategy={"gpu": "spread", "cpu": "spread"}), _shard("default")]
    settings = scheduler_settings(shards)
    assert settings.shard == "default"
    assert (settings.placement.node, settings.placement.gpu) == ("binpack", "pack")
    assert "with shard default's settings" in settings.notes[0]


def test_among_unpartitioned_shards_none_named_default_the_first_listed_is_read() -> None:
    settings = scheduler_settings([_shard("first"), _shard("second", placementStrategy={"gpu": "spread"})])
    assert settings.shard == "first"
    assert settings.placement.gpu == "pack"


# --- the scheduler's flags ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [str(2**63 - 1), "0x7fffffffffffffff"])
def test_the_largest_int64_is_a_preemptee_limit(value: str) -> None:
    """pflag's int flag is strconv.ParseInt(s, 0, 64): every int64 parses (options.go:118)."""
    settings = scheduler_settings([_shard(args={"max-consolidation-preemptees": value})])
    assert (settings.stopped, settings.placement.max_consolidation_preemptees) == (None, 2**63 - 1)


def test_the_smallest_int64_is_a_preemptee_limit_that_lets_consolidation_move_nothing() -> None:
    settings = scheduler_settings([_shard(args={"max-consolidation-preemptees": str(-(2**63))})])
    assert (settings.stopped, settings.placement.max_consolidation_preemptees) == (None, 0)
    assert settings.notes == (
        f"SchedulingShard default: args max-consolidation-preemptees {-(2**63)} lets consolidation move no job",
    )


def test_a_preemptee_limit_below_int64_stops_the_scheduler() -> None:
    value = str(-(2**63) - 1)
    settings = scheduler_settings([_shard(args={"max-consolidation-preemptees": value})])
    assert settings.stopped is not None
    assert settings.stopped.endswith(f"args max-consolidation-preemptees {value!r} is not an int")


@pytest.mark.parametrize("flag", ["max-consolidation-preemptees", "use-scheduling-signatures"])
def test_an_empty_flag_value_stops_the_scheduler(flag: str) -> None:
    """The operator passes `--<flag>=<value>` for each flag the scheduler knows (operands/scheduler/
    resources_for_shard.go:375-380); an empty value parses as neither an int nor a bool, and pflag.Parse exits
    (options.go:139)."""
    settings = scheduler_settings([_shard(args={flag: ""})])
    assert settings.stopped is not None
    assert f"args {flag} ''" in settings.stopped


@pytest.mark.parametrize(
    ("value", "on"),
    [(v, True) for v in ("1", "t", "T", "TRUE", "true", "True")]
    + [(v, False) for v in ("0", "f", "F", "FALSE", "false", "False")],
)
def test_every_spelling_go_parses_as_a_bool_sets_signatures_without_a_stop_or_note(value: str, on: bool) -> None:
    """strconv.ParseBool accepts exactly these twelve spellings; the flag is a BoolVar (options.go:124)."""
    settings = scheduler_settings([_shard(args={"use-scheduling-signatures": value})])
    assert (settings.stopped, settings.notes, settings.placement.use_scheduling_signatures) == (None, (), on)


# --- the actions ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("action", sorted(DEFAULT_PRIORITIES))
def test_each_actions_default_priority_is_kais(action: str) -> None:
    """Another action given a priority one above, equal to, or one below this action's default runs before it,
    by name, or after it (descending priority, ties by name: operands/scheduler/plugin_action_merge.go:35-50)."""
    default = DEFAULT_PRIORITIES[action]
    for other in sorted(set(DEFAULT_PRIORITIES) - {action}):
        for priority in (default + 1, default, default - 1):
            actions = scheduler_settings([_shard(actions={other: {"priority": priority}})]).actions
            other_first = priority > default or (priority == default and other < action)
            assert (actions.index(other) < actions.index(action)) is other_first, (other, priority)


@pytest.mark.parametrize("value", [True, "450", 4.5e2])
def test_a_priority_that_is_not_an_integer_is_ignored(value: Any) -> None:
    """ActionConfig.Priority is an *int (schedulingshard_types.go:63): a dump's other value is no priority."""
    settings = scheduler_settings([_shard(actions={"reclaim": {"priority": value}})])
    assert settings.actions == scheduler_settings([_shard()]).actions


# --- min runtimes and settings kaistack does not read ---------------------------------------------------------------


def test_a_min_runtime_under_a_second_is_kept() -> None:
    """A duration is any positive one (minruntime.go:36-48)."""
    placement = scheduler_settings([_shard(minRuntime={"preemptMinRuntime": "500ms"})]).placement
    assert placement.default_preempt_min_runtime == 0.5


def test_a_negative_min_runtime_under_a_second_is_zero() -> None:
    """minruntime.go:43-46: a negative duration is 0."""
    placement = scheduler_settings([_shard(minRuntime={"reclaimMinRuntime": "-500ms"})]).placement
    assert placement.default_reclaim_min_runtime == 0.0


@pytest.mark.parametrize(("key", "value"), [("usageDBConfig", {"connectionString": "x"}), ("kValue", 0.0)])
def test_a_setting_that_is_set_is_named_even_when_empty_or_zero(key: str, value: Any) -> None:
    """The operator passes kValue whenever it is set, 0 included (schedulingshard_types.go:262-264);
    usageDBConfig is a field of the spec (:133)."""
    (note,) = scheduler_settings([_shard(**{key: value})]).notes
    assert note == f"SchedulingShard default sets {key}, which kaistack does not read: diagnosed with KAI's defaults"


# --- the notes: each names the shard and what KAI does -------------------------------------------------------------


@pytest.mark.parametrize(
    ("shards", "note"),
    [
        (
            [_shard(placementStrategy={"gpu": "tetris", "cpu": "tetris"})],
            "SchedulingShard default: placementStrategy.gpu 'tetris' is neither binpack nor spread: KAI then spreads "
            "shares over GPUs and binpacks nodes",
        ),
        (
            [_shard(plugins={"minruntime": {"arguments": {"reclaimResolveMethod": "root"}}})],
            "SchedulingShard default: minruntime reclaimResolveMethod 'root' is not lca or queue; KAI uses lca",
        ),
        (
            [_shard(placementStrategy={"gpu": "spread"}, actions={"consolidation": {"enabled": True}})],
            "SchedulingShard default runs consolidation without binpack; kaistack simulates consolidation only with "
            "binpack",
        ),
        (
            [_shard("a-pool", "a")],
            "every SchedulingShard schedules a partition (spec.partitionLabelValue), so no scheduler takes unlabelled "
            "nodes; kaistack does not model partitions: diagnosed as one, with shard a-pool's settings",
        ),
        (
            [_shard("a-pool", "a"), _shard("b-pool")],
            "2 SchedulingShards partition the cluster into schedulers of their own, which kaistack does not model: "
            "diagnosed as one, with shard b-pool's settings",
        ),
    ],
    ids=["strategy", "resolve-method", "consolidation", "partitions-only", "partitions"],
)
def test_a_note_names_the_shard_and_says_what_kai_does(shards: list[dict[str, Any]], note: str) -> None:
    assert note in scheduler_settings(shards).notes


# --- kaistack verify's scheduler check ------------------------------------------------------------------------------


def _edit_spec(fake_kube: Any, **spec: Any) -> None:
    (shard,) = fake_kube.responses[SHARDS]["items"]
    shard["spec"].update(spec)


def _spread_stack(project: Path) -> None:
    """The dev stack with kai.placementStrategy spread: check simulates spread and no consolidation."""
    file = project / "Pulumi.dev.yaml"
    document = yaml.safe_load(file.read_text())
    document["config"]["kaistack:kai"]["placementStrategy"] = "spread"
    file.write_text(yaml.safe_dump(document, sort_keys=False))


def test_a_preemptee_limit_of_zero_is_consolidation_off(project, fake_kube, capsys):
    """A limit of 0 lets consolidation move no job (consolidation.go:168, 199-201): said as consolidation off, not
    as a limit, and the order of the other actions is as check runs them."""
    _edit_spec(fake_kube, args={"max-consolidation-preemptees": "0"})
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert check_detail(report, "scheduler", "default") == "consolidation is off (check assumes it on)" + CHECK_ASSUMES


def test_a_spread_stack_on_the_charts_spread_shard_passes(project, fake_kube, capsys):
    """The chart writes kai.placementStrategy to both strategies (default-shard.yaml:22-26)."""
    _spread_stack(project)
    _edit_spec(fake_kube, placementStrategy={"gpu": "spread", "cpu": "spread"})
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "scheduler", "default") == "as `kaistack check` assumes"


def test_a_preemptee_limit_where_no_consolidation_runs_is_no_difference(project, fake_kube, capsys):
    _spread_stack(project)
    _edit_spec(
        fake_kube, placementStrategy={"gpu": "spread", "cpu": "spread"}, args={"max-consolidation-preemptees": "4"}
    )
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "scheduler", "default") == "as `kaistack check` assumes"


def test_a_binpack_shard_under_a_spread_stack_is_said_to_consolidate(project, fake_kube, capsys):
    """Consolidation is said once, not again as a difference in the order of the actions."""
    _spread_stack(project)
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "scheduler", "default") == (
        "placement is binpack nodes, pack shared GPUs (check assumes spread nodes, spread shared GPUs, "
        "kai.placementStrategy); consolidation is on (check assumes it off)" + CHECK_ASSUMES
    )


def test_a_scheduler_that_does_not_start_fails_the_check(project, fake_kube, capsys):
    _edit_spec(fake_kube, actions={"backfill": {"enabled": True}})
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("scheduler", "default")]


def test_no_shard_api_fails_the_check_saying_no_scheduler_runs(project, fake_kube, capsys):
    del fake_kube.responses[SHARDS]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("scheduler", "*")]
    assert check_detail(report, "scheduler", "*") == (
        "the SchedulingShard API (kai.scheduler/v1) is not installed: KAI's operator runs no scheduler"
    )


def test_no_shard_fails_the_check_saying_no_scheduler_runs(project, fake_kube, capsys):
    fake_kube.responses[SHARDS]["items"] = []
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("scheduler", "*")]
    assert check_detail(report, "scheduler", "*") == (
        "no SchedulingShard: KAI's operator runs no scheduler (the chart's defaultShard.enabled is off?)"
    )
