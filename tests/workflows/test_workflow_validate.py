"""`kaistack validate`: render under mocks, policy pack over the Analyzer protocol, capacity, one report.

Most tests use a small pack (fixtures/pack) so they test validate's plumbing, not the real rules;
the last ones run the repository's own pack and stacks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from workflow_testlib import ROOT, TEST_PACK

from kaistack.cli import main
from kaistack.declaration.parse import ConfigError
from kaistack.ops import validate as validate_module
from kaistack.ops.analyzer_client import PolicyPackClient, PolicyPackError
from kaistack.ops.validate import CapacityVerdict, validate_stack
from kaistack.progress import Progress


@pytest.fixture
def fits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The placement checker says everything fits (capacity is tested on its own below)."""
    monkeypatch.setattr(validate_module, "check_capacity", lambda config, *_: CapacityVerdict(True, "fits: all placed"))


def _validate(project: Path, *extra: str) -> int:
    return main(["validate", "--stack", "dev", "--project", str(project), "--policy-pack", str(TEST_PACK), *extra])


def test_clean_stack_passes_with_exit_0(renderable_project, fits, capsys):
    """Pinned images, a Platform component, the stack config reaching the pack: PASS."""
    code = _validate(renderable_project)
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("kaistack validate --stack dev: PASS")
    assert "violations: none" in out


def test_every_rendered_resource_is_counted_by_type(renderable_project, fits, capsys):
    """The report counts resources by type token, e.g. the two Queues and the PyTorchJob of dev."""
    _validate(renderable_project, "--json")
    report = json.loads(capsys.readouterr().out)
    assert report["resourcesByType"]["kubernetes:scheduling.run.ai/v2:Queue"] == 3
    assert report["resourcesByType"]["kubernetes:kubeflow.org/v1:PyTorchJob"] == 1
    assert report["resources"] == sum(report["resourcesByType"].values())


def test_policy_violation_fails_with_exit_1_and_names_the_resource(renderable_project, fits, capsys):
    """An unpinned image violates the pack's resource policy; the finding names policy, resource and message."""
    dev = renderable_project / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text().replace("jupyter/base-notebook:2026-08-01", "jupyter/base-notebook:latest"))
    code = _validate(renderable_project, "--json")
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [(v["policy"], v["type"], v["name"]) for v in report["violations"]] == [
        ("no-latest-image", "kubernetes:core/v1:Pod", "kaistack-workloads-notebook")
    ]
    assert report["violations"][0]["message"].endswith(
        "container main uses jupyter/base-notebook:latest; pin a version"
    )


def test_every_policy_is_enforced_as_mandatory(renderable_project, fits, capsys):
    """The pack declares no-latest-image ADVISORY; validate configures all policies MANDATORY."""
    dev = renderable_project / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text().replace("jupyter/base-notebook:2026-08-01", "jupyter/base-notebook:latest"))
    _validate(renderable_project, "--json")
    assert {v["level"] for v in json.loads(capsys.readouterr().out)["violations"]} == {"mandatory"}


def test_pack_receives_the_stack_config_like_the_engine_sends_it(renderable_project, fits, capsys):
    """PULUMI_CONFIG carries the kaistack: keys (stack-config-seen would report otherwise)."""
    _validate(renderable_project, "--json")
    report = json.loads(capsys.readouterr().out)
    assert "stack-config-seen" in report["policies"]
    assert report["violations"] == []


def test_stack_policies_see_all_resources(renderable_project, fits, capsys):
    """AnalyzeStack gets every rendered resource, components included (platform-present passes)."""
    _validate(renderable_project, "--json")
    report = json.loads(capsys.readouterr().out)
    assert report["policies"]["platform-present"] == "stack"
    assert report["ok"] is True


def test_capacity_failure_fails_with_exit_1(renderable_project, monkeypatch, capsys):
    """Workloads that do not fit fail validation even without a policy violation."""
    verdict = CapacityVerdict(False, "2 of 5 workloads pending", ["train: 0/2 pods placed (gang needs 2 GPUs)"])
    monkeypatch.setattr(validate_module, "check_capacity", lambda config, *_: verdict)
    code = _validate(renderable_project)
    out = capsys.readouterr().out
    assert code == 1
    assert "capacity: FAIL: 2 of 5 workloads pending" in out
    assert "train: 0/2 pods placed (gang needs 2 GPUs)" in out


def test_invalid_config_exits_2_with_key_paths(renderable_project, fits, capsys):
    """A stack file the model rejects is a config error (exit 2), listed by key path."""
    dev = renderable_project / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text().replace("gpuFraction: 0.25", "gpuFraction: 1.5"))
    code = _validate(renderable_project)
    assert code == 2
    assert "kaistack:workloads[1].gpuFraction" in capsys.readouterr().err


def test_invalid_config_in_markdown_mode_still_prints_a_section(renderable_project, fits, capsys):
    """The PR comment shows the config error instead of silently missing the stack."""
    dev = renderable_project / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text().replace("gpuFraction: 0.25", "gpuFraction: 1.5"))
    _validate(renderable_project, "--markdown")
    out = capsys.readouterr().out
    assert out.startswith("<!-- kaistack-validate:dev -->\n### ❌ `dev`: invalid config")


def test_invalid_config_under_json_is_the_refusal_document_with_its_problems(renderable_project, fits, capsys):
    """Every command's refusal under --json is {"ok": false, "exitCode", "error"}; validate adds the problems."""
    code = main(["validate", "--stack", "qa", "--project", str(renderable_project), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["ok"], report["exitCode"]) == (2, False, 2)
    assert report["error"].startswith("kaistack validate: ")
    assert "stacks here: dev, prod, staging" in report["error"]
    assert report["configErrors"]


def test_unknown_stack_exits_2(renderable_project, fits, capsys):
    assert main(["validate", "--stack", "qa", "--project", str(renderable_project)]) == 2
    assert "stacks here: dev, prod, staging" in capsys.readouterr().err


def test_markdown_report_is_a_comment_section_with_a_marker(renderable_project, fits, capsys):
    """--markdown: a per-stack marker, a verdict heading, a summary table and resources by type."""
    code = _validate(renderable_project, "--markdown")
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("<!-- kaistack-validate:dev -->\n### ✅ `dev`: passes validation\n")
    assert "| Policies | ✅ 0 violations (3 policies, `kaistack-test@0.3.0`) |" in out
    assert "| Capacity | ✅ fits: all placed |" in out
    assert "| `kubernetes:scheduling.run.ai/v2:Queue` | 3 |" in out


def test_markdown_lists_violations_in_a_table(renderable_project, fits, capsys):
    dev = renderable_project / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text().replace("jupyter/base-notebook:2026-08-01", "jupyter/base-notebook:latest"))
    _validate(renderable_project, "--markdown")
    out = capsys.readouterr().out
    assert "| `no-latest-image` | `kubernetes:core/v1:Pod::kaistack-workloads-notebook` |" in out


def test_pack_that_cannot_start_fails_with_its_stderr(renderable_project, fits, tmp_path, capsys):
    """A pack that exits before serving is reported with its stderr tail; validation fails (exit 1)."""
    broken = tmp_path / "broken-pack"
    broken.mkdir()
    (broken / "__main__.py").write_text("import sys\nsys.exit('policy pack import failed: no module named rules')\n")
    code = main(["validate", "--stack", "dev", "--project", str(renderable_project), "--policy-pack", str(broken)])
    out = capsys.readouterr().out
    assert code == 1
    assert "policy pack exited with code 1 before serving" in out
    assert "policy pack import failed: no module named rules" in out


def test_progress_goes_to_stderr_when_forced(renderable_project, fits, capsys, monkeypatch):
    """KAISTACK_PROGRESS=1 (or a TTY) shows each long step on stderr; stdout keeps only the report."""
    monkeypatch.setenv("KAISTACK_PROGRESS", "1")
    _validate(renderable_project, "--json")
    captured = capsys.readouterr()
    assert re.fullmatch(
        r"rendering stack dev… done \(\d+\.\d s\)\n"
        r"starting policy pack… done \(\d+\.\d s\)\n"
        r"analyzing \d+ resources… done \(\d+\.\d s\)\n"
        r"checking capacity… done \(\d+\.\d s\)\n",
        captured.err,
    )
    json.loads(captured.out)


def test_progress_is_quiet_when_not_a_terminal(renderable_project, fits, capsys, monkeypatch):
    """Under pytest (or CI) stderr is not a TTY: no progress lines."""
    monkeypatch.delenv("KAISTACK_PROGRESS", raising=False)
    _validate(renderable_project)
    assert capsys.readouterr().err == ""


def test_validate_stack_raises_config_error_for_callers(renderable_project):
    """The library API raises ConfigError (promote turns it into a refusal)."""
    with pytest.raises(ConfigError, match=r"no Pulumi\.qa\.yaml"):
        validate_stack(renderable_project, "qa", progress=Progress.quiet(), pack_dir=TEST_PACK)


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_repository_stacks_validate_with_the_real_pack(stack, capsys):
    """The repository's own stacks pass the real policy pack and the capacity check."""
    code = main(["validate", "--stack", stack, "--project", str(ROOT), "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    validated = json.loads(out)["capacity"]
    # validate and check load the stack through the same path: same verdict, same nodes and GPUs.
    assert main(["check", "--stack", stack, "--project", str(ROOT), "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert (validated["ok"], validated["totals"]) == (checked["fits"], checked["totals"])
    assert validated["totals"]["gpus"] > 0


def test_config_too_large_for_one_environment_string_is_reported_not_crashed():
    """The engine hands the stack config to the pack in PULUMI_CONFIG; past Linux's 128 KiB limit that cannot work."""
    huge = {"PULUMI_CONFIG": "x" * 140_000}
    with pytest.raises(PolicyPackError, match=r"PULUMI_CONFIG would be 140015 bytes; Linux limits one environment"):
        PolicyPackClient.start(TEST_PACK, env=huge)


def _dev_that_does_not_fit(tmp_path: Path, capacity_check: str) -> Path:
    """The repository's dev stack plus a pod no node has room for, with kai.capacityCheck set."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py", "policies"):
        (project / name).symlink_to(ROOT / name)
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    config = document["config"]
    config["kaistack:kai"] = {**config["kaistack:kai"], "capacityCheck": capacity_check}
    config["kaistack:workloads"].append(
        {"name": "too-big", "kind": "Pod", "queue": "team-a", "image": "busybox:1.37.0", "gpu": 8}
    )
    (project / "Pulumi.dev.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return project


def test_a_stack_that_only_warns_on_capacity_validates_as_pulumi_up_deploys_it(tmp_path, capsys):
    """kai.capacityCheck: warn: the program warns and deploys, so the real pack and validate let it pass."""
    project = _dev_that_does_not_fit(tmp_path, "warn")
    code = main(["validate", "--stack", "dev", "--project", str(project), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    assert report["violations"] == []
    assert report["capacity"]["ok"] is True
    assert report["capacity"]["summary"].endswith("(kai.capacityCheck: warn: deploys anyway)")
    assert any("too-big" in line for line in report["capacity"]["details"])


def test_a_stack_that_enforces_capacity_fails_validation_in_the_pack_too(tmp_path, capsys):
    project = _dev_that_does_not_fit(tmp_path, "enforce")
    code = main(["validate", "--stack", "dev", "--project", str(project), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert report["capacity"]["ok"] is False


def test_a_stack_that_does_not_check_capacity_says_so(tmp_path, capsys):
    project = _dev_that_does_not_fit(tmp_path, "off")
    assert main(["validate", "--stack", "dev", "--project", str(project), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["capacity"]["summary"] == "not checked (kai.capacityCheck: off)"


def test_the_verdict_is_the_program_gates_simulation_not_a_second_one(tmp_path, capsys, monkeypatch):
    """validate renders the program in-process; its gate's report is the verdict (on a large declaration each
    simulation took as long as `kaistack check`: the fuzz's 500,000 pods took 116 s in validate, 53 s in check)."""
    from kaistack.capacity import gate as gate_module

    runs: list[str] = []
    real = gate_module.check
    # validate's own simulation, when the gate's report is not there, goes through the same function.
    monkeypatch.setattr(gate_module, "check", lambda *a, **k: runs.append("check") or real(*a, **k))
    project = _dev_that_does_not_fit(tmp_path, "warn")
    assert main(["validate", "--stack", "dev", "--project", str(project), "--json"]) == 0
    assert runs == ["check"]
    assert any("too-big" in line for line in json.loads(capsys.readouterr().out)["capacity"]["details"])
    assert main(["validate", "--stack", "dev", "--project", str(project), "--json", "--max-seconds", "600"]) == 0
    assert runs == ["check", "check"]


def test_max_seconds_stops_the_capacity_simulation_with_a_partial_verdict(tmp_path, capsys, caplog):
    project = _dev_that_does_not_fit(tmp_path, "warn")
    with caplog.at_level("WARNING"):
        code = main(["validate", "--stack", "dev", "--project", str(project), "--json", "--max-seconds", "1e-9"])
    capacity = json.loads(capsys.readouterr().out)["capacity"]
    assert capacity["summary"].startswith("unknown: stopped by the time limit"), capacity["summary"]
    assert code == 0  # warn: a verdict that does not fit deploys anyway, as `pulumi up` would
    # validate's own limit is validate's verdict: the program it renders does not warn of it too (a bare stderr line).
    assert not [r for r in caplog.records if "stopped by the time limit" in r.getMessage()]


def test_max_seconds_under_enforce_is_a_verdict_that_does_not_fit(tmp_path, capsys):
    project = _dev_that_does_not_fit(tmp_path, "enforce")
    project_file = project / "Pulumi.dev.yaml"
    document = yaml.safe_load(project_file.read_text())
    document["config"]["kaistack:workloads"].pop()  # fits now, given the time
    project_file.write_text(yaml.safe_dump(document, sort_keys=False))
    assert main(["validate", "--stack", "dev", "--project", str(project), "--json"]) == 0
    capsys.readouterr()
    code = main(["validate", "--stack", "dev", "--project", str(project), "--json", "--max-seconds", "1e-9"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert report["capacity"]["ok"] is False
    assert report["capacity"]["summary"].startswith("unknown: stopped by the time limit")
    # The clock stopped the simulation, not the program: everything was rendered and analyzed.
    assert report["errors"] == []
    assert report["analyzed"] is True
    assert report["resources"] > 0
    # The pack's own simulation stopped too (kai-capacity's maxSeconds): one finding, for the clock.
    [capacity] = [f for f in report["violations"] if f["policy"] == "kai-capacity"]
    assert (
        "\ncapacity check: unknown: stopped by the time limit (kai-capacity's maxSeconds: 1e-09)"
        in (capacity["message"])
    )


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_max_seconds_must_be_a_positive_number(value, capsys):
    assert main(["validate", "--stack", "dev", "--project", str(ROOT), "--max-seconds", value]) == 2
    assert "--max-seconds: must be a positive number of seconds" in capsys.readouterr().err


class _RecordingPack:
    def __init__(self) -> None:
        self.timeouts: list[float | None] = []

    def analyze(self, resources):
        return []

    def analyze_stack(self, resources, timeout=None):
        self.timeouts.append(timeout)
        return []


@pytest.mark.parametrize(
    ("max_seconds", "timeout"), [(None, None), (float("inf"), None), (1e10, None), (86400.0, 86460.0), (30.0, 90.0)]
)
def test_the_stack_policies_have_no_deadline_unless_max_seconds_bounds_the_simulation(max_seconds, timeout):
    """kai-capacity simulates in AnalyzeStack; a fixed RPC deadline (it was 60 s) failed validate on a stack that
    takes longer to check, where the engine sets none. Past a day none either: gRPC's deadline overflows near 9e9 s
    and failed the call at once ("Deadline Exceeded")."""
    from kaistack.ops.validate import ValidationReport, _analyze

    pack = _RecordingPack()
    _analyze(pack, [], ValidationReport(stack="dev"), max_seconds)  # type: ignore[arg-type]
    assert pack.timeouts == [timeout]


def _dev_config(**kai: object):  # type: ignore[no-untyped-def]
    from kaistack.declaration.parse import parse_config

    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    raw = {key.removeprefix("kaistack:"): value for key, value in document["config"].items()}
    raw["kai"] = {**raw.get("kai", {}), **kai}
    return parse_config(raw)


def test_a_check_stopped_by_the_stacks_limit_names_it_and_lists_no_workload() -> None:
    verdict = validate_module.check_capacity(_dev_config(capacityCheckMaxSeconds=1e-9), "dev")
    assert verdict.ok is False
    assert verdict.summary.startswith("unknown: stopped by the time limit (kaistack:kai.capacityCheckMaxSeconds: 1e-09")
    assert verdict.details == []


def test_under_validates_shorter_limit_the_verdict_names_max_seconds_not_the_key() -> None:
    verdict = validate_module.check_capacity(_dev_config(capacityCheckMaxSeconds=100), "dev", max_seconds=1e-9)
    assert verdict.summary.startswith("unknown: stopped by the time limit (--max-seconds 1e-09)")


def test_a_verdict_passed_only_under_warn_is_not_a_green_tick_in_the_pr_comment() -> None:
    verdict = validate_module.check_capacity(_dev_config(capacityCheckMaxSeconds=1e-9, capacityCheck="warn"), "dev")
    assert verdict.ok is True
    assert verdict.warned is True
    assert validate_module._capacity_cell(verdict).startswith("⚠️ unknown: stopped by the time limit")
    fits = validate_module.check_capacity(_dev_config(capacityCheck="warn"), "dev")
    assert validate_module._capacity_cell(fits).startswith("✅ fits")
