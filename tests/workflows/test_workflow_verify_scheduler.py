"""`kaistack verify`'s `scheduler` check: the live SchedulingShard runs KAI's scheduler as `kaistack check` simulates
it for the stack (dev: kai.placementStrategy binpack). The shard's settings are read as diagnose reads them
(tests/workflows/test_live_shard.py states KAI@v0.17.0's rules); these tests state what is compared."""

from __future__ import annotations

from typing import Any

import pytest
from workflow_testlib import check_detail, failed_checks, verify_json

SHARDS = "/apis/kai.scheduler/v1/schedulingshards"
CHECK_ASSUMES = ": `kaistack check` simulated another scheduler"


def _edit_spec(fake_kube: Any, **spec: Any) -> None:
    """Set fields of the default shard's spec, as `kubectl edit schedulingshard default` would."""
    (shard,) = fake_kube.responses[SHARDS]["items"]
    shard["spec"].update(spec)


def test_the_charts_default_shard_passes(project, fake_kube, capsys):
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert check_detail(report, "scheduler", "default") == "as `kaistack check` assumes"


@pytest.mark.parametrize(
    ("spec", "drift"),
    [
        (
            {"placementStrategy": {"gpu": "spread", "cpu": "spread"}},
            "placement is spread nodes, spread shared GPUs (check assumes binpack nodes, pack shared GPUs, "
            "kai.placementStrategy); consolidation is off (check assumes it on)",
        ),
        ({"actions": {"consolidation": {"enabled": False}}}, "consolidation is off (check assumes it on)"),
        ({"args": {"max-consolidation-preemptees": "4"}}, "max-consolidation-preemptees is 4 (check assumes 16)"),
        ({"args": {"use-scheduling-signatures": "false"}}, "scheduling signatures are off (check assumes them on)"),
        (
            {"actions": {"preempt": {"priority": 350}}},
            "the actions run allocate, consolidation, preempt, reclaim (check runs allocate, consolidation, reclaim, "
            "preempt)",
        ),
        (
            {"minRuntime": {"preemptMinRuntime": "10m"}},
            "default min runtimes are 600 s to preempt, 0 s to reclaim (check assumes none)",
        ),
        (
            {"plugins": {"minruntime": {"enabled": False}}},
            "the minruntime plugin is off: the queues' min runtimes protect nothing (check applies them)",
        ),
        (
            {"plugins": {"minruntime": {"arguments": {"reclaimResolveMethod": "queue"}}}},
            "reclaimResolveMethod is queue (check assumes lca)",
        ),
    ],
    ids=[
        "spread",
        "no-consolidation",
        "preemptees",
        "signatures",
        "order",
        "min-runtime",
        "no-minruntime",
        "resolve-method",
    ],
)
def test_a_shard_edited_on_the_cluster_fails_naming_what_check_assumed(project, fake_kube, capsys, spec, drift):
    _edit_spec(fake_kube, **spec)
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("scheduler", "default")]
    assert check_detail(report, "scheduler", "default") == drift + CHECK_ASSUMES


def test_a_shard_whose_scheduler_cannot_start_fails_with_why(project, fake_kube, capsys):
    _edit_spec(fake_kube, actions={"backfill": {"enabled": True}})
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "scheduler", "default") == (
        "KAI's scheduler for SchedulingShard default does not start: it knows no action 'backfill'"
    )


def test_what_the_shard_sets_and_check_does_not_compare_is_a_note(project, fake_kube, capsys):
    _edit_spec(fake_kube, kValue=2.0)
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert (
        "SchedulingShard default sets kValue, which kaistack does not read: diagnosed with KAI's defaults"
        in (report["notes"])
    )


def test_no_shard_api_fails_the_scheduler_check(project, fake_kube, capsys):
    del fake_kube.responses[SHARDS]
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "scheduler", "*").startswith(
        "the SchedulingShard API (kai.scheduler/v1) is not installed"
    )


def test_no_shard_at_all_fails_the_scheduler_check(project, fake_kube, capsys):
    fake_kube.responses[SHARDS]["items"] = []
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "scheduler", "*").startswith("no SchedulingShard: KAI's operator runs no scheduler")


def test_a_spread_stack_whose_shard_turns_consolidation_back_on_fails(project, fake_kube, capsys):
    """User overrides are merged after the spread default (KAI@v0.17.0 pkg/apis/kai/v1/schedulingshard_types.go:
    312-325): KAI consolidates, which check, simulating a spread stack, does not."""
    stack = project / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("kaistack:kai:", "kaistack:kai:\n    placementStrategy: spread", 1))
    _edit_spec(
        fake_kube, placementStrategy={"gpu": "spread", "cpu": "spread"}, actions={"consolidation": {"enabled": True}}
    )
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "scheduler", "default") == "consolidation is on (check assumes it off)" + CHECK_ASSUMES


def test_shards_the_credentials_may_not_list_are_a_note(project, fake_kube, capsys):
    """SchedulingShards are cluster-scoped (KAI@v0.17.0 pkg/apis/kai/v1/schedulingshard_types.go:367,
    `+kubebuilder:resource:scope=Cluster`): a namespaced role verifies the rest, as for node readiness."""
    fake_kube.forbidden.add(SHARDS)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert [c for c in report["checks"] if c["check"] == "scheduler"] == []
    assert report["notes"] == [
        f'scheduler: not checked: GET {SHARDS}: HTTP 403: forbidden: User "viewer" cannot get path "{SHARDS}"; '
        "grant `list` on schedulingshards.kai.scheduler to compare KAI's scheduler settings"
    ]
