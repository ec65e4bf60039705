"""`kaistack validate`'s report (pass/fail, problem lines, text and Markdown), its pack lookup and its time limit,
pinned where no other test did (found by mutation testing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from workflow_testlib import TEST_PACK

from kaistack.ops import validate as validate_module
from kaistack.ops.analyzer_client import Finding
from kaistack.stack.files import project_name

CapacityVerdict, ValidationReport = validate_module.CapacityVerdict, validate_module.ValidationReport

# --- `kaistack validate`'s report -------------------------------------------------------------------------------

_FITS = CapacityVerdict(True, "fits: all placed")
_SHORT = CapacityVerdict(False, "1 of 2 workloads pending", ["train: 0/2 pods placed"])


def _report(**fields: Any) -> ValidationReport:
    return ValidationReport(stack="dev", resource_counts={"kubernetes:core/v1:Pod": 2}, analyzed=True, **fields)


@pytest.mark.parametrize(
    ("fields", "ok"),
    [
        ({"capacity": _FITS}, True),
        ({"capacity": None}, False),
        ({"capacity": _SHORT}, False),
        ({"capacity": _FITS, "errors": ["policy pack exited"]}, False),
        ({"capacity": _FITS, "findings": [Finding("p", "mandatory", "m")]}, False),
    ],
)
def test_a_report_passes_only_with_a_capacity_verdict_that_fits_and_nothing_else_wrong(fields, ok):
    assert _report(**fields).ok is ok


def test_problem_lines_list_errors_then_violations_then_a_capacity_that_does_not_fit():
    finding = Finding("no-latest-image", "mandatory", "desc\nuses :latest", "urn:x", "kubernetes:core/v1:Pod", "nb")
    report = _report(capacity=_SHORT, errors=["render failed"], findings=[finding])
    assert report.problem_lines() == [
        "error: render failed",
        "policy no-latest-image (mandatory) on kubernetes:core/v1:Pod::nb: uses :latest",
        "capacity: 1 of 2 workloads pending",
        "capacity: train: 0/2 pods placed",
    ]


@pytest.mark.parametrize("capacity", [None, CapacityVerdict(True, "fits", ["a detail"])])
def test_problem_lines_say_nothing_of_capacity_unless_it_does_not_fit(capacity):
    assert _report(capacity=capacity).problem_lines() == []


def test_the_summary_line_says_when_capacity_was_not_checked():
    assert _report().summary_line().endswith(", capacity not checked")
    assert _report(capacity=_FITS).summary_line().endswith(", capacity fits: all placed")


@pytest.mark.parametrize(
    ("finding", "subject"),
    [
        (Finding("p", "mandatory", "m", "urn:pulumi:dev::kaistack::x", "t", "n"), "t::n"),
        (Finding("p", "mandatory", "m", "urn:pulumi:dev::kaistack::x"), "urn:pulumi:dev::kaistack::x"),
        (Finding("p", "mandatory", "m"), "stack"),
    ],
)
def test_a_violation_names_its_resource_else_its_urn_else_the_stack(finding, subject):
    assert _report(capacity=_FITS, findings=[finding]).problem_lines() == [f"policy p (mandatory) on {subject}: m"]


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        ("The policy's description\n  the reported text  ", "the reported text"),
        ("one line", "one line"),
        ("The policy's description\n", "The policy's description\n"),
    ],
)
def test_a_violation_shows_the_reported_text_after_the_engine_s_description_line(message, shown):
    [line] = _report(capacity=_FITS, findings=[Finding("p", "mandatory", message)]).problem_lines()
    assert line == f"policy p (mandatory) on stack: {shown}"


def _counted(**fields: Any) -> ValidationReport:
    counts = {"kubernetes:core/v1:Pod": 2, "kubernetes:scheduling.run.ai/v2:Queue": 3}
    policies = {"no-latest-image": "resource", "platform-present": "stack"}
    return ValidationReport(stack="dev", resource_counts=counts, policies=policies, analyzed=True, **fields)


def test_the_text_report_counts_resources_and_types_and_names_the_pack_s_policies():
    lines = _counted(pack="kaistack-test@0.3.0", capacity=_FITS).to_text().splitlines()
    assert lines[1] == "  resources: 5 (2 types)"
    assert "  policies: 2 from kaistack-test@0.3.0, all MANDATORY" in lines


def test_the_text_report_without_a_pack_name_says_the_policy_pack():
    assert "  policies: 2 from the policy pack, all MANDATORY" in _counted(capacity=_FITS).to_text().splitlines()


def test_the_text_report_ends_with_each_error():
    text = _counted(capacity=_FITS, errors=["policy pack exited", "render failed"]).to_text()
    assert text.splitlines()[-2:] == ["  error: policy pack exited", "  error: render failed"]


def test_the_markdown_summary_counts_resources_and_types():
    assert "\n| Resources | 5 rendered (2 types) |\n" in _counted(capacity=_FITS).to_markdown()


def test_the_markdown_section_says_what_could_not_be_validated():
    markdown = _report(capacity=_FITS, errors=["policy pack exited with code 1"]).to_markdown()
    assert "\n**Could not validate:**\n- policy pack exited with code 1\n" in markdown
    assert "Could not validate" not in _report(capacity=_FITS).to_markdown()


@pytest.mark.parametrize(("capacity", "shown"), [(_SHORT, True), (_FITS, False), (None, False)])
def test_the_markdown_section_folds_the_capacity_details_only_when_there_are_some(capacity, shown):
    markdown = _report(capacity=capacity).to_markdown()
    assert ("<details><summary>Capacity details</summary>\n\n- train: 0/2 pods placed\n" in markdown) is shown
    assert ("Capacity details" in markdown) is shown


def test_the_pack_s_version_is_its_pulumi_policy_yaml_s():
    """The CLI reports PulumiPolicy.yaml's version; the Python SDK always says 0.0.1."""
    expected = yaml.safe_load((TEST_PACK / "PulumiPolicy.yaml").read_text())["version"]
    assert validate_module._pack_version(TEST_PACK, "0.0.1") == expected


@pytest.mark.parametrize("text", [None, "", "- a list\n", "runtime: python\n", "version: [\n"])
def test_without_a_readable_version_the_pack_s_reported_one_stands(tmp_path, text):
    if text is not None:
        (tmp_path / "PulumiPolicy.yaml").write_text(text)
    assert validate_module._pack_version(tmp_path, "0.0.1") == "0.0.1"


def test_the_pack_sees_the_project_s_name_from_pulumi_yaml(tmp_path):
    (tmp_path / "Pulumi.yaml").write_text("name: gpu-platform\nruntime: python\n")
    assert project_name(tmp_path) == "gpu-platform"


@pytest.mark.parametrize("text", [None, "", "- a list\n", "runtime: python\n"])
def test_without_a_project_name_the_pack_sees_kaistack(tmp_path, text):
    if text is not None:
        (tmp_path / "Pulumi.yaml").write_text(text)
    assert project_name(tmp_path) == "kaistack"


def test_the_default_pack_is_the_project_s_policies_directory_when_it_has_a_main(tmp_path):
    local = tmp_path / "policies"
    local.mkdir()
    (local / "__main__.py").write_text("")
    assert validate_module.default_pack_dir(tmp_path) == local


def test_without_a_project_pack_the_default_is_the_installed_policies_package(tmp_path):
    import policies

    (tmp_path / "policies").mkdir()
    assert validate_module.default_pack_dir(tmp_path) == Path(policies.__file__).resolve().parent


def test_a_limit_just_over_a_day_gives_the_pack_no_limit():
    """gRPC's deadline overflows near 9e9 s; past a day the pack gets none (and kai-capacity no maxSeconds)."""
    assert validate_module._pack_limit(86_400.0) == 86_400.0
    assert validate_module._pack_limit(86_401.0) is None


def test_validate_stack_without_a_progress_runs_quietly(renderable_project, monkeypatch, capsys):
    """The library API's progress is optional (quiet when left out)."""
    monkeypatch.setattr(validate_module, "check_capacity", lambda config, *_: _FITS)
    report = validate_module.validate_stack(renderable_project, "dev", pack_dir=TEST_PACK)
    assert report.ok, report.problem_lines()
    assert capsys.readouterr().err == ""
