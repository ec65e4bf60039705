"""`kaistack promote`: behaviour the other promote tests left unpinned (found by mutation testing).

The --json result's fields, the withheld diff, the masking of `secure:` values in awkward shapes, and what is pinned,
added, skipped and restarted.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import signal
import tempfile
from pathlib import Path

import pytest
import yaml
from workflow_testlib import passing_report

from kaistack.cli import main
from kaistack.declaration import limits
from kaistack.declaration.parse import ConfigError
from kaistack.declaration.versions import (
    DEVICE_PLUGIN_VERSION,
    FAKE_GPU_OPERATOR_VERSION,
    GPU_OPERATOR_VERSION,
    KAI_VERSION,
)
from kaistack.ops import promote as promote_module
from kaistack.ops import validate
from kaistack.ops.analyzer_client import Finding
from kaistack.ops.promote import Pin, plan_promotion
from kaistack.ops.promote_plan import PromotionPlan, mask_secure_text
from kaistack.ops.validate import ValidationReport
from kaistack.progress import Progress


def _violating(project_dir: Path, stack: str, progress: object) -> ValidationReport:
    report = passing_report(project_dir, stack, progress)
    report.findings = [Finding("kai-queue-label", "mandatory", "no kai.scheduler/queue label", "urn:x", "Pod", "p")]
    return report


# --- the --json result --------------------------------------------------------------------------------------------


def test_json_output_names_the_source_the_target_and_the_target_file(project, passing, capsys):
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["source"], result["target"], result["file"]) == ("dev", "staging", "Pulumi.staging.yaml")
    assert result["refused"] is None


def test_json_output_of_a_refused_promotion_says_why_and_lists_the_problems(project, monkeypatch, capsys):
    monkeypatch.setattr(promote_module, "validate_project", _violating)
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["refused"] == "validation of the promoted target failed"
    assert result["written"] is False
    assert result["validation"]["ok"] is False
    assert any("no kai.scheduler/queue label" in problem for problem in result["validation"]["problems"])


def test_json_validation_carries_the_policy_and_capacity_report_of_the_target(project, passing, capsys):
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["validation"]["report"]
    assert report["stack"] == "staging"
    assert report["capacity"]["ok"] is True


def test_json_of_a_target_the_model_rejects_has_its_problems_and_no_report(project, passing, capsys):
    """The model refused the candidate, so policies and capacity never ran: there is no report to show."""
    dev = project / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text().replace("version: v0.17.0 # tested", "version: v0.15.0 # tested"))
    staging = project / "Pulumi.staging.yaml"
    staging.write_text(staging.read_text().replace("    namespace: kai-scheduler\n", "    queueLabelKey: acme/queue\n"))
    args = ["promote", "dev", "staging", "--project", str(project), "--yes", "--json", "--allow-downgrade"]
    assert main(args) == 1
    validation = json.loads(capsys.readouterr().out)["validation"]
    assert validation["ok"] is False
    assert "report" not in validation
    assert any("queueLabelKey 'acme/queue' needs KAI >= v0.16.0" in p for p in validation["problems"])


# --- the diff -------------------------------------------------------------------------------------------------------


def _plan(tmp_path: Path, original: str, new: str) -> PromotionPlan:
    return PromotionPlan(
        project_dir=tmp_path,
        source="dev",
        target="staging",
        target_file=tmp_path / "Pulumi.staging.yaml",
        original_bytes=original.encode(),
        digest="",
        new_text=new,
        pins=(),
    )


@pytest.mark.parametrize(
    ("original", "new"),
    [("a:\n  secure: [v1:abc\n", "a:\n  secure: v1:abd\n"), ("a:\n  secure: v1:abc\n", "a:\n  secure: [v1:abd\n")],
    ids=["before-does-not-parse", "after-does-not-parse"],
)
def test_a_diff_with_either_side_unparsable_is_withheld_naming_the_file(tmp_path, original, new):
    """One side that does not parse is enough: where its secure value ends is unknown."""
    assert _plan(tmp_path, original, new).diff() == (
        "(the diff of Pulumi.staging.yaml is not shown: it does not parse as YAML, and it may hold secure values)\n"
    )


# --- masking ----------------------------------------------------------------------------------------------------


def test_a_secure_line_that_starts_with_any_letter_is_masked_whole():
    """Only spaces and tabs are a line's indent; every other character of the ciphertext is hidden."""
    assert mask_secure_text("a:\n  secure: |\n    v1:abc\n    XX\n    Xy9\n") == (
        "a:\n  secure: [secret]\n    [secret]\n    [secret]\n    [secret]\n"
    )


def test_a_blank_line_inside_a_secure_block_stays_blank():
    """Nothing is on it to hide; it is kept as it is so the diff's lines pair up with the file's."""
    assert mask_secure_text("a:\n  secure: |\n    v1:abc\n      \n    def\n") == (
        "a:\n  secure: [secret]\n    [secret]\n      \n    [secret]\n"
    )


def test_a_secure_value_inside_a_complex_key_is_masked():
    assert mask_secure_text("? {secure: v1:abc}\n: y\n") == "? {secure: [secret]}\n: y\n"


def _masked_within_seconds(text: str, seconds: float = 10) -> str | None:
    """mask_secure_text(text), failing rather than hanging when its walk over an aliased document never ends."""

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError(f"masking did not end within {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return mask_secure_text(text)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("a:\n  secure: {secure: v1:abc}\n", "a:\n  secure: [secret]\n"),
        ("a:\n  secure: &x v1:abc\nb:\n  secure: *x\n", "a:\n  secure: [secret]\nb:\n  secure: *x\n"),
    ],
    ids=["secure-inside-secure", "alias-of-a-secure-value"],
)
def test_a_value_reached_twice_is_masked_once(text, masked):
    """A `secure` mapping holding a `secure` key, or an alias of a secure value: one span, one placeholder."""
    assert mask_secure_text(text) == masked


def test_a_secure_value_at_the_very_start_of_the_text_is_masked():
    """An alias can make the document itself a secure value: its span starts at the text's first character."""
    assert _masked_within_seconds("&r {secure: *r}\n") == "[secret]\n"


def test_a_self_referencing_anchor_is_walked_once():
    """An alias to an enclosing node is a cycle in the composed graph: it is not followed again."""
    text = "a: &x [*x]\nb:\n  secure: v1:abc\n"
    assert _masked_within_seconds(text) == "a: &x [*x]\nb:\n  secure: [secret]\n"


# --- reading the target -------------------------------------------------------------------------------------------


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def test_promoting_a_stack_into_itself_says_to_name_two_stacks(project):
    with pytest.raises(ConfigError) as err:
        plan_promotion(project, "dev", "dev")
    assert err.value.problems == ["source and target are both 'dev'; promote between two stacks"]


def test_a_target_without_config_is_refused_for_its_missing_cluster(project):
    """No `config:` at all is an empty configuration: invalid (no cluster), not a crash."""
    (project / "Pulumi.staging.yaml").write_text("encryptionsalt: v1:c3RhZ2luZ3NhbHQ=\n")
    with pytest.raises(ConfigError, match=r"kaistack:cluster: required key is missing"):
        plan_promotion(project, "dev", "staging")


@pytest.mark.parametrize("text", ["- config\n", "config: [kaistack:kai]\n"], ids=["document-a-list", "config-a-list"])
def test_a_target_whose_config_is_not_a_mapping_is_refused_with_exit_2(project, passing, capsys, text):
    target = project / "Pulumi.staging.yaml"
    target.write_text(text)
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes"]) == 2
    assert "\n  Pulumi.staging.yaml: 'config' must be a mapping\n" in capsys.readouterr().err
    assert target.read_text() == text


def test_a_target_over_the_size_limit_is_refused_as_a_stack_file_too_large(project):
    target = project / "Pulumi.staging.yaml"
    with target.open("r+b") as handle:
        handle.truncate(limits.MAX_STACK_FILE_BYTES + 1)  # sparse: the size is refused before anything is read
    with pytest.raises(ConfigError, match=rf"Pulumi\.staging\.yaml: stack file is {limits.MAX_STACK_FILE_BYTES + 1} b"):
        plan_promotion(project, "dev", "staging")


def test_a_pin_the_editor_cannot_change_in_place_is_refused_and_the_file_kept(project, passing, capsys):
    """An anchored value is named elsewhere by its aliases: replacing it would drop the anchor, so it is refused."""
    target = project / "Pulumi.staging.yaml"
    _edit(target, "    version: v0.16.0\n", "    version: &kai v0.16.0\n")
    before = target.read_bytes()
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes"]) == 1
    err = capsys.readouterr().err
    assert "kaistack promote: cannot edit Pulumi.staging.yaml: config.kaistack:kai.version is anchored (&)" in err
    assert target.read_bytes() == before


EXISTING_LAB = """\
config:
  kaistack:cluster:
    provider: existing
    name: lab
    existing:
      context: kind-lab
  kaistack:gpu:
    mode: none
  kaistack:kai:
    version: v0.16.0
"""


def test_planning_into_a_stack_of_an_unreachable_cluster_reads_no_cluster(project, monkeypatch):
    """Pins are versions: the plan is made without the target's nodes (the candidate's validation reads them)."""
    monkeypatch.setenv("KUBECONFIG", str(project / "missing"))
    monkeypatch.setenv("HOME", str(project))
    (project / "Pulumi.lab.yaml").write_text(EXISTING_LAB)
    plan = plan_promotion(project, "dev", "lab")
    assert [(p.key, p.old, p.new) for p in plan.pins] == [("kaistack:kai.version", "v0.16.0", KAI_VERSION)]


@pytest.mark.parametrize("call", ["plan_promotion", "promote"])
def test_a_newer_target_pin_is_kept_unless_a_downgrade_is_allowed(project, passing, call):
    """The library's default is the CLI's: without allow_downgrade, staging -> dev leaves dev's newer KAI alone."""
    if call == "plan_promotion":
        plan = plan_promotion(project, "staging", "dev")
    else:
        plan = promote_module.promote(project, "staging", "dev", write=False).plan
    assert "kaistack:kai.version" not in [p.key for p in plan.pins]
    # dev also runs a newer release tag of the promoted image (ghcr.io/acme/infer 1.4.2 against staging's 1.4.0).
    assert [s.key for s in plan.skipped if s.kept_newer] == ["kaistack:kai.version", "kaistack:workloads[infer].image"]


# --- what is pinned, added and left alone ----------------------------------------------------------------------------


def _pin(plan: PromotionPlan, key: str) -> Pin:
    [pin] = [p for p in plan.pins if p.key == key]
    return pin


def _config(text: str) -> dict[str, object]:
    return yaml.safe_load(text)["config"]


def test_a_tenant_version_the_target_sets_is_changed_in_place_not_added(project):
    _edit(project / "Pulumi.dev.yaml", "version: 0.36.1", "version: 0.37.0-rc.1")
    staging = project / "Pulumi.staging.yaml"
    _edit(staging, "    - name: team-a\n      queues: [team-a]\n", "    - name: team-a\n      queues: [team-a]\n"
          "      vcluster: {version: 0.36.1}\n")  # fmt: skip
    plan = plan_promotion(project, "dev", "staging")
    team_a = _pin(plan, "kaistack:tenants[team-a].vcluster.version")
    assert (team_a.old, team_a.new, team_a.added) == ("0.36.1", "0.37.0-rc.1", False)
    assert "      vcluster: {version: 0.37.0-rc.1}\n" in plan.new_text


def test_a_kai_block_without_a_version_has_the_pin_added(project):
    """The target ran the default release: the pin is new to its file even though the block is there."""
    staging = project / "Pulumi.staging.yaml"
    _edit(staging, "    version: v0.16.0\n", "")
    dev = project / "Pulumi.dev.yaml"
    _edit(dev, "version: v0.17.0 # tested", "version: v0.16.0 # tested")
    pin = _pin(plan_promotion(project, "dev", "staging", allow_downgrade=True), "kaistack:kai.version")
    assert (pin.old, pin.new, pin.added) == (KAI_VERSION, "v0.16.0", True)


def test_a_promoted_image_is_never_an_added_pin(project):
    """`image` is required, so the target always sets it: the pin changes the target's value."""
    pin = _pin(plan_promotion(project, "dev", "staging"), "kaistack:workloads[infer].image")
    assert pin.added is False


def test_the_gpu_chart_default_of_the_mode_both_run_is_a_tested_pin(project):
    """The source runs staging's mode without naming a version: its default chart is what it tested."""
    staging = project / "Pulumi.staging.yaml"
    (project / "Pulumi.qa.yaml").write_text(staging.read_text())
    _edit(staging, "    devicePlugin:\n      version: 0.19.0   # bump only through promotion\n", "")
    plan = plan_promotion(project, "staging", "qa")
    pin = _pin(plan, "kaistack:gpu.devicePlugin.version")
    assert (pin.old, pin.new, pin.added) == ("0.19.0", DEVICE_PLUGIN_VERSION, False)
    assert _config(plan.new_text)["kaistack:gpu"]["devicePlugin"]["version"] == DEVICE_PLUGIN_VERSION


def test_a_gpu_chart_version_the_source_sets_is_a_tested_pin_whatever_its_mode(project):
    """dev runs fake GPUs but names a device-plugin chart explicitly: that is the pin staging gets."""
    _edit(project / "Pulumi.dev.yaml", "    mode: fake\n", "    mode: fake\n    devicePlugin: {version: 0.19.2}\n")
    plan = plan_promotion(project, "dev", "staging")
    pin = _pin(plan, "kaistack:gpu.devicePlugin.version")
    assert (pin.old, pin.new, pin.added) == ("0.19.0", "0.19.2", False)
    assert _config(plan.new_text)["kaistack:gpu"] == {"mode": "device-plugin", "devicePlugin": {"version": "0.19.2"}}


@pytest.mark.parametrize(
    ("mode", "block", "default"),
    [("fake", "fake", FAKE_GPU_OPERATOR_VERSION), ("gpu-operator", "gpuOperator", GPU_OPERATOR_VERSION)],
)
def test_the_gpu_chart_pin_is_the_version_of_the_targets_mode(project, mode, block, default):
    """gpu.mode fake pins gpu.fake.version, gpu-operator pins gpu.gpuOperator.version (the block it installs)."""
    staging = project / "Pulumi.staging.yaml"
    _edit(staging, "    mode: device-plugin\n", f"    mode: {mode}\n")
    (project / "Pulumi.qa.yaml").write_text(
        staging.read_text().replace("    devicePlugin:\n", f"    {block}:\n", 1).replace("0.19.0", "0.0.1", 1)
    )
    plan = plan_promotion(project, "staging", "qa")
    pin = _pin(plan, f"kaistack:gpu.{block}.version")
    assert (pin.old, pin.new, pin.added) == ("0.0.1", default, False)
    assert _config(plan.new_text)["kaistack:gpu"][block]["version"] == default


def test_what_is_left_alone_is_listed_with_why(project, passing, capsys):
    """dev -> staging: the GPU chart of a mode dev never ran, staging's own tenant, and dev's promoted workload that
    staging does not run; dev's workloads not marked `promoted` are not considered at all."""
    assert main(["promote", "dev", "staging", "--project", str(project), "--dry-run", "--json"]) == 0
    skipped = json.loads(capsys.readouterr().out)["skipped"]
    assert skipped == [
        {
            "key": "kaistack:gpu.devicePlugin.version",
            "reason": "dev runs gpu.mode 'fake' and does not set gpu.devicePlugin.version; no tested pin to copy",
            "keptNewer": False,
        },
        {"key": "kaistack:tenants[team-c]", "reason": "tenant not declared in dev", "keptNewer": False},
        {"key": "kaistack:workloads[train]", "reason": "promoted workload not declared in target", "keptNewer": False},
    ]


def test_a_pin_kept_newer_says_how_to_step_it_back(project):
    kept = {s.key: s.reason for s in plan_promotion(project, "staging", "dev").skipped if s.kept_newer}
    assert kept["kaistack:kai.version"] == (
        "runs v0.17.0, newer than staging's v0.16.0; kept (--allow-downgrade steps it back)"
    )
    assert kept["kaistack:workloads[infer].image"] == (
        "runs ghcr.io/acme/infer:1.4.2, newer than staging's ghcr.io/acme/infer:1.4.0; kept (--allow-downgrade steps "
        "it back)"
    )


def test_a_workload_not_marked_promoted_keeps_the_targets_image(project):
    dev = _config((project / "Pulumi.dev.yaml").read_text())
    assert "promoted" not in next(w for w in dev["kaistack:workloads"] if w["name"] == "notebook")
    notebook = "    - {name: notebook, kind: Pod, namespace: ml, queue: team-c, image: jupyter/old}\n"
    _edit(project / "Pulumi.staging.yaml", "  monitoring:", notebook + "  monitoring:")
    plan = plan_promotion(project, "dev", "staging")
    assert "kaistack:workloads[notebook].image" not in [p.key for p in plan.pins]
    assert "image: jupyter/old" in plan.new_text


@pytest.mark.parametrize(
    ("kind", "restarts"), [("Deployment", None), ("Pod", "the running Pod is deleted, then created again")]
)
def test_only_a_promoted_image_of_a_replaced_kind_says_it_restarts(project, passing, capsys, kind, restarts):
    """A Pod's container image forces a replacement, a Deployment's only its selector does (it rolls its pods):
    pulumi/pulumi-kubernetes@v4.32.0 provider/pkg/provider/diff.go:119,139 (Pod: containerForceNewProperties),
    :222 (`.image`), :171-176 (deployment: `.spec.selector`)."""
    for stack in ("dev", "staging"):
        path = project / f"Pulumi.{stack}.yaml"
        text = path.read_text().replace("      kind: Deployment\n", f"      kind: {kind}\n", 1)
        if kind == "Pod":  # one pod, no replicas
            text = re.sub(r"\n      replicas: \d+\n", "\n", text, count=1)
        path.write_text(text)
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes", "--json"]) == 0
    pins = {p["key"]: p for p in json.loads(capsys.readouterr().out)["pins"]}
    assert pins["kaistack:workloads[infer].image"]["restarts"] == restarts


def test_a_version_spelled_with_a_v_is_promoted_not_kept_as_newer(project):
    """0.20.0 and v0.20.0 are one release: the source's spelling is copied, and it is no downgrade."""
    _edit(project / "Pulumi.dev.yaml", "    mode: fake\n", "    mode: fake\n    devicePlugin: {version: 0.20.0}\n")
    _edit(project / "Pulumi.staging.yaml", "version: 0.19.0 ", "version: v0.20.0 ")
    pin = _pin(plan_promotion(project, "dev", "staging"), "kaistack:gpu.devicePlugin.version")
    assert (pin.old, pin.new, pin.downgrade) == ("v0.20.0", "0.20.0", False)


@pytest.mark.parametrize(("source", "target"), [("0.19.0+acme.2", "0.20.0"), ("0.20.0", "0.19.0+acme.2")])
def test_a_version_that_is_not_a_release_is_copied_without_comparing(project, source, target):
    """A build (+metadata) has no release order: whichever side it is on, the source's pin is copied."""
    _edit(project / "Pulumi.dev.yaml", "    mode: fake\n", f"    mode: fake\n    devicePlugin: {{version: {source}}}\n")
    _edit(project / "Pulumi.staging.yaml", "version: 0.19.0 ", f"version: {target} ")
    pin = _pin(plan_promotion(project, "dev", "staging"), "kaistack:gpu.devicePlugin.version")
    assert (pin.old, pin.new, pin.downgrade) == (target, source, False)


# --- the flow -------------------------------------------------------------------------------------------------------


def test_promote_called_without_progress_or_confirm_writes(project, passing):
    """The library call: no progress shown, no question asked; `write` alone decides."""
    result = promote_module.promote(project, "dev", "staging", write=True)
    assert result.written is True
    assert result.refused is None
    assert _config((project / "Pulumi.staging.yaml").read_text())["kaistack:kai"]["version"] == KAI_VERSION


def test_validation_reports_on_the_progress_promote_was_given(project, monkeypatch):
    given: list[object] = []

    def capture(project_dir: Path, stack: str, progress: object) -> ValidationReport:
        given.append(progress)
        return passing_report(project_dir, stack, progress)

    monkeypatch.setattr(promote_module, "validate_project", capture)
    progress = Progress(io.StringIO())
    promote_module.promote(project, "dev", "staging", write=False, progress=progress)
    assert given == [progress]


def test_a_candidate_checked_without_progress_is_validated_quietly(project, monkeypatch):
    given: list[object] = []

    def capture(project_dir: Path, stack: str, progress: Progress) -> ValidationReport:
        given.append(progress)
        return passing_report(project_dir, stack, progress)

    monkeypatch.setattr(promote_module, "validate_project", capture)
    assert promote_module.check_candidate(plan_promotion(project, "dev", "staging")).ok
    [progress] = given
    assert isinstance(progress, Progress)
    assert progress.enabled is False


def test_promote_reports_reading_both_stacks_as_a_step(project, passing):
    stream = io.StringIO()
    promote_module.promote(project, "dev", "staging", write=False, progress=Progress(stream))
    assert stream.getvalue().startswith("reading dev and staging… done (")


def test_a_target_edited_while_the_prompt_waits_is_refused_and_the_edit_kept(project, passing, capsys, monkeypatch):
    """The last hash check is at the write, after the answer: an edit made meanwhile is not overwritten."""
    staging = project / "Pulumi.staging.yaml"

    def edit_then_yes(prompt: str) -> str:
        staging.write_text(staging.read_text() + "# edited at the prompt\n")
        return "y"

    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", edit_then_yes)
    assert main(["promote", "dev", "staging", "--project", str(project)]) == 1
    assert "Pulumi.staging.yaml changed after it was read" in capsys.readouterr().err
    text = staging.read_text()
    assert text.endswith("# edited at the prompt\n")
    assert "version: v0.16.0" in text


def test_a_read_only_target_is_refused_before_the_question(project, passing, capsys, monkeypatch):
    """Asking whether to write a file that cannot be written wastes the answer."""
    staging = project / "Pulumi.staging.yaml"
    staging.chmod(0o444)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: pytest.fail("asked before the read-only refusal"))
    assert main(["promote", "dev", "staging", "--project", str(project)]) == 3
    assert "Pulumi.staging.yaml is read-only (mode 0444)" in capsys.readouterr().err


def test_json_of_nothing_to_promote_says_nothing_was_written(project, passing, capsys):
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes"]) == 0
    capsys.readouterr()
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["pins"], result["written"], result["validation"]) == ([], False, None)


def test_a_target_the_editor_cannot_parse_is_fine_when_nothing_is_to_be_edited(project, passing, capsys):
    """A tab before a comment parses (libyaml) but not in the editor's parser: that matters only for an edit."""
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes"]) == 0
    _edit(project / "Pulumi.staging.yaml", "version: 0.19.0   #", "version: 0.19.0\t#")
    capsys.readouterr()
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes"]) == 0
    assert "staging already runs dev's pins; nothing to promote" in capsys.readouterr().out


def test_a_temporary_directory_that_cannot_be_made_exits_3_and_writes_nothing(project, passing, capsys, monkeypatch):
    def no_space(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tempfile, "TemporaryDirectory", no_space)
    before = (project / "Pulumi.staging.yaml").read_bytes()
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes"]) == 3
    err = capsys.readouterr().err
    assert f"cannot create a temporary directory: {os.strerror(errno.ENOSPC)}; nothing written\n" in err
    assert (project / "Pulumi.staging.yaml").read_bytes() == before


def test_a_temporary_project_that_cannot_be_built_exits_3_and_is_removed(
    project, passing, capsys, monkeypatch, tmp_path
):
    """The links of the overlay fail (too many open files, a full inode table): nothing is left in the temp dir."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))

    def no_links(self: Path, *args: object, **kwargs: object) -> None:
        raise OSError(errno.EMLINK, os.strerror(errno.EMLINK))

    monkeypatch.setattr(Path, "symlink_to", no_links)
    before = (project / "Pulumi.staging.yaml").read_bytes()
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes"]) == 3
    err = capsys.readouterr().err
    reason = os.strerror(errno.EMLINK)
    assert f"cannot build the temporary project to validate the promotion in: {reason}; nothing written\n" in err
    assert list(scratch.iterdir()) == []
    assert (project / "Pulumi.staging.yaml").read_bytes() == before


def test_a_job_whose_image_is_already_promoted_restarts_nothing(project, passing, capsys):
    """No image pin, no restart: the note belongs to the image pin only, not to the pin listed before it."""
    for stack in ("dev", "staging"):
        _edit(project / f"Pulumi.{stack}.yaml", "      kind: Deployment\n", "      kind: Job\n")
    _edit(project / "Pulumi.staging.yaml", "image: ghcr.io/acme/infer:1.4.0", "image: ghcr.io/acme/infer:1.4.2")
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes", "--json"]) == 0
    pins = json.loads(capsys.readouterr().out)["pins"]
    # team-a's vCluster version is written too: dev sets it, staging runs it as the default.
    assert [p["key"] for p in pins] == ["kaistack:kai.version", "kaistack:tenants[team-a].vcluster.version"]
    assert [p["restarts"] for p in pins] == [None, None]


def test_validate_project_reports_on_the_progress_it_is_given(project, monkeypatch):
    given: list[object] = []

    def capture(project_dir: Path, stack: str, *, progress: Progress) -> str:
        given.append(progress)
        return "report"

    monkeypatch.setattr(validate, "validate_stack", capture)
    progress = Progress(io.StringIO())
    assert promote_module.validate_project(project, "staging", progress) == "report"
    assert given == [progress]
