"""`kaistack lint --policy-config FILE`: the pack's config as `pulumi up --policy-pack-config` takes it.

A review found that the tenant rules the host applies (requireInTenantNamespaces) could not be given to lint: a
tenant's CPU pod without KAI's scheduler linted clean while the pack and the admission policy refused it. The file is
checked against each policy's config schema as the engine would (pulumi.md §6.2), since lint has no engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kaistack.cli import main
from kaistack.guardrails.pack_config import PackConfigError, pack_config

ROOT = Path(__file__).resolve().parents[2]
TENANT_CPU_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: cpu, namespace: ml, labels: {kaistack.io/tenant: team-a}}
spec: {containers: [{name: main, image: busybox}]}
"""


@pytest.fixture
def tenant_pod(tmp_path: Path) -> Path:
    path = tmp_path / "pod.yaml"
    path.write_text(TENANT_CPU_POD)
    return path


def _config(tmp_path: Path, data: object) -> str:
    path = tmp_path / "policy-config.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_a_tenant_pod_without_kais_scheduler_lints_clean_without_the_tenant_rule(tenant_pod: Path) -> None:
    assert main(["lint", str(tenant_pod)]) == 0


def test_the_example_policy_config_holds_a_tenant_pod_to_kais_scheduler(
    tenant_pod: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    example = ROOT / "policies" / "policy-config.example.json"
    assert main(["lint", str(tenant_pod), "--policy-config", str(example)]) == 1
    assert "it is a tenant workload (requireInTenantNamespaces)" in capsys.readouterr().out


def test_a_policy_set_to_disabled_does_not_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod = tmp_path / "gpu.yaml"
    pod.write_text(TENANT_CPU_POD.replace("image: busybox}", "image: cuda, resources: {limits: {nvidia.com/gpu: 1}}}"))
    assert main(["lint", str(pod)]) == 1
    capsys.readouterr()
    off = _config(tmp_path, {"kai-scheduler-name": "disabled"})
    assert main(["lint", str(pod), "--policy-config", off]) == 0


def test_all_disabled_but_one_policy_runs_that_one(tmp_path: Path) -> None:
    config = pack_config({"all": "disabled", "kai-queue-label": {"enforcementLevel": "mandatory"}}, "c.json")
    assert "kai-queue-label" not in config.disabled
    assert "kai-scheduler-name" in config.disabled


def test_a_policys_settings_apply_to_that_policy_only() -> None:
    config = pack_config({"kai-scheduler-name": {"schedulerName": "other"}}, "c.json")
    assert config.settings["kai-scheduler-name"].scheduler_name == "other"
    assert "kai-queue-label" not in config.settings


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"nope": "advisory"}, r"c\.json: nope: no such policy \(policies: all, kai-scheduler-name, "),
        ({"all": "loud"}, r"c\.json: all\.enforcementLevel: 'loud' is not one of advisory, mandatory, remediate"),
        (
            {"kai-queue-label": {"bogus": 1}},
            r"kai-queue-label\.bogus: not a setting of kai-queue-label \(settings: exemptNamespaces, schedulerName",
        ),
        ({"kai-scheduler-name": {"requireInTenantNamespaces": "yes"}}, r"expected a boolean, got 'yes'"),
        ({"kai-queue-label": {"queues": ["a", 2]}}, r"kai-queue-label\.queues\[1\]: expected a string, got 2"),
        ({"gpu-memory-utilization-within-fraction": {"nodeGpuMemoryMiB": 0}}, r"0 is below the minimum 1"),
        ({"gpu-memory-utilization-within-fraction": {"nodeGpuMemoryMiB": True}}, r"expected an integer, got True"),
        ({"kai-capacity": {"maxSeconds": 0}}, r"maxSeconds: 0 must be above 0"),
        ({"tenant-queue-binding": {"tenants": [{"queues": ["q"]}]}}, r"tenants\[0\]\.name: required"),
        ({"kai-queue-label": ["x"]}, r"expected an enforcement level or an object, got \['x'\]"),
        (["kai-queue-label"], r"c\.json: expected a JSON object of policy names, got list"),
    ],
)
def test_a_config_the_engine_would_refuse_is_refused_by_key(data: object, problem: str) -> None:
    with pytest.raises(PackConfigError, match=problem):
        pack_config(data, "c.json")


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(PackConfigError) as raised:
        pack_config({"nope": "advisory", "all": "loud"}, "c.json")
    assert len(raised.value.problems) == 2


def test_an_unreadable_policy_config_exits_2_before_any_rule_runs(
    tenant_pod: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["lint", str(tenant_pod), "--policy-config", str(bad), "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False
    assert out["error"].startswith("kaistack lint: --policy-config: ")
