"""`kaistack promote SOURCE TARGET`: release pins move, the environment stays, refusals write nothing."""

from __future__ import annotations

import io
import json
import re
import stat
import sys
from pathlib import Path

import pytest
import yaml
from workflow_testlib import passing_report

from kaistack.cli import main
from kaistack.declaration.parse import ConfigError
from kaistack.ops import promote as promote_module
from kaistack.ops.analyzer_client import Finding
from kaistack.ops.promote import TargetChanged, plan_promotion, write_promotion
from kaistack.ops.promote_plan import PromotionPlan, mask_secure_text
from kaistack.ops.validate import ValidationReport

STAGING_SECRET = (
    "secure: v1:q8Zl3mJ0Yx1rVd2w:dGhpcyBpcyBub3QgYSByZWFsIGNpcGhlcnRleHQsIGp1c3QgYnl0ZXMgdGhhdCBtdXN0IHN1cnZpdmU="
)


def _violating(project_dir: Path, stack: str, progress: object) -> ValidationReport:
    report = passing_report(project_dir, stack, progress)
    report.findings = [
        Finding("kai-queue-label", "mandatory", "pods need a queue\nno kai.scheduler/queue label", "urn:x", "Pod", "p")
    ]
    return report


def _staging(project: Path) -> bytes:
    return (project / "Pulumi.staging.yaml").read_bytes()


def test_promotion_copies_release_pins_into_target(project, passing, capsys):
    """dev -> staging: KAI version and the promoted workload's image move; exit 0."""
    code = main(["promote", "dev", "staging", "--project", str(project), "--yes"])
    assert code == 0
    config = yaml.safe_load(_staging(project))["config"]
    assert config["kaistack:kai"]["version"] == "v0.17.0"
    assert config["kaistack:workloads"][0]["image"] == "ghcr.io/acme/infer:1.4.2"


def test_a_promotion_whose_output_cannot_be_written_says_the_target_was(project, passing, capsys, monkeypatch):
    """`promote --yes > /dev/full`: exit 3 ("nothing changed" in the README's table) must not hide the write."""

    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(sys, "stdout", Full())
    code = main(["promote", "dev", "staging", "--project", str(project), "--yes"])
    err = capsys.readouterr().err
    assert code == 3
    assert "cannot write its output: No space left on device; " in err
    assert f"{project / 'Pulumi.staging.yaml'} was written all the same" in err
    assert yaml.safe_load(_staging(project))["config"]["kaistack:kai"]["version"] == "v0.17.0"


def test_promotion_leaves_everything_else_byte_for_byte(project, passing, capsys):
    """Only the three pinned values change (team-a's vCluster version, which dev sets and staging ran as the
    default, is added under it): comments, secure values, capacity and queues are untouched."""
    before = _staging(project).decode()
    main(["promote", "dev", "staging", "--project", str(project), "--yes"])
    after = _staging(project).decode()
    expected = (
        before.replace("    version: v0.16.0\n", "    version: v0.17.0\n")
        .replace("image: ghcr.io/acme/infer:1.4.0", "image: ghcr.io/acme/infer:1.4.2")
        .replace(
            "    - name: team-a\n      queues: [team-a]\n",
            "    - name: team-a\n      queues: [team-a]\n      vcluster:\n        version: 0.36.1\n",
        )
    )
    assert after == expected
    assert STAGING_SECRET in after
    assert "version: 0.19.0   # bump only through promotion" in after


GRAFANA_CIPHERTEXT = "v1:AAABBBCCC:c2VjcmV0LWJ5dGVzLXRoYXQtbXVzdC1zdGF5"


def test_a_secure_value_beside_a_pin_is_masked_in_the_diff_and_kept_in_the_file(project, passing, capsys):
    """A `secure:` value within the diff's context lines is shown as [secret] in the text and --json output
    (both reach the promote workflow's log); the file keeps its bytes."""
    staging = project / "Pulumi.staging.yaml"
    text = staging.read_text()
    secret_block = f"  monitoring:grafanaPassword:\n    secure: {GRAFANA_CIPHERTEXT}\n"
    text = text.replace(secret_block, "").replace(
        "    version: v0.16.0\n", "    version: v0.16.0\n" + secret_block.replace("    secure:", "    'secure':")
    )
    staging.write_text(text)
    assert main(["promote", "dev", "staging", "--project", str(project), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert (
        "-    version: v0.16.0\n+    version: v0.17.0\n   monitoring:grafanaPassword:\n     'secure': [secret]\n" in out
    )
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes", "--json"]) == 0
    output = capsys.readouterr().out
    assert "'secure': [secret]" in json.loads(output)["diff"]
    assert GRAFANA_CIPHERTEXT not in out + output
    assert f"'secure': {GRAFANA_CIPHERTEXT}" in staging.read_text()


def test_a_secure_block_scalar_beside_a_pin_is_masked_on_each_of_its_lines(project, passing, capsys):
    """A hand-written `secure: |` puts the ciphertext on the lines below the key: each is a context line of the
    diff, and each is shown as [secret] (the line count stays, so the diff's lines still pair up)."""
    staging = project / "Pulumi.staging.yaml"
    first, second = GRAFANA_CIPHERTEXT[:20], GRAFANA_CIPHERTEXT[20:]
    secret_block = f"  monitoring:grafanaPassword:\n    secure: {GRAFANA_CIPHERTEXT}\n"
    block = f"  monitoring:grafanaPassword:\n    secure: |-\n      {first}\n      {second}\n"
    text = staging.read_text().replace(secret_block, "")
    staging.write_text(text.replace("    version: v0.16.0\n", "    version: v0.16.0\n" + block))
    assert main(["promote", "dev", "staging", "--project", str(project), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "+    version: v0.17.0\n   monitoring:grafanaPassword:\n     secure: [secret]\n       [secret]\n" in out
    assert first not in out
    assert second not in out


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("a:\n  secure:\n    v1:abc\n    def\nb: 1\n", "a:\n  secure:\n    [secret]\n    [secret]\nb: 1\n"),
        ("a:\n  secure: &k !!str v1:abc\n", "a:\n  secure: [secret]\n"),
        ('a: {secure: "v1:abc\n   def", version: 1.2}\n', "a: {secure: [secret]\n   [secret], version: 1.2}\n"),
        (
            "- secure: >\r\n    v1:abc\r\n\r\n    def\r\n  x: 1\r\n",
            "- secure: [secret]\r\n    [secret]\r\n\r\n    [secret]\r\n  x: 1\r\n",
        ),
        ("a: secure\nb: {c: 'secure: v1:abc'}\n", "a: secure\nb: {c: 'secure: v1:abc'}\n"),
    ],
    ids=["continued-plain", "anchor-and-tag", "flow-quoted-over-lines", "crlf-folded-block", "not-a-key"],
)
def test_a_secure_value_is_masked_whatever_its_style_and_nothing_else_is(text, masked):
    """The value's extent comes from the YAML parser, not a pattern: an anchor or tag before the ciphertext, a
    plain or quoted value continued on the next lines, a block scalar; a `secure` that is not a key is text."""
    assert mask_secure_text(text) == masked


def test_an_empty_secure_value_is_left_as_it_is():
    """Nothing to hide: a placeholder there would say a secret is set where none is."""
    assert mask_secure_text("a:\n  secure:\nb: 1\n") == "a:\n  secure:\nb: 1\n"
    assert mask_secure_text("x: {secure: , y: 1}\n") == "x: {secure: , y: 1}\n"
    for empty in ("''", '""', "~", "null"):
        assert mask_secure_text(f"a:\n  secure: {empty}\n") == f"a:\n  secure: {empty}\n"
    assert mask_secure_text('a:\n  secure: "null"\n') == "a:\n  secure: [secret]\n"


def test_a_diff_whose_file_does_not_parse_is_withheld_rather_than_masked_by_guess(tmp_path):
    """Where a value ends is the parser's to say; without it the diff, which may hold ciphertext, is not shown."""
    plan = PromotionPlan(
        project_dir=tmp_path,
        source="dev",
        target="staging",
        target_file=tmp_path / "Pulumi.staging.yaml",
        original_bytes=b"a:\n  secure: [v1:abc\n",
        digest="",
        new_text="a:\n  secure: [v1:abd\n",
        pins=(),
    )
    assert mask_secure_text("a:\n  secure: [v1:abc\n") is None
    assert "v1:ab" not in plan.diff()
    assert "is not shown: it does not parse as YAML" in plan.diff()


def test_promotion_prints_pins_and_unified_diff(project, passing, capsys):
    """The output names each copied pin (old -> new) and shows the target file's unified diff."""
    main(["promote", "dev", "staging", "--project", str(project), "--yes"])
    out = capsys.readouterr().out
    assert "kaistack:kai.version" in out
    assert "v0.16.0 -> v0.17.0" in out
    assert "--- a/Pulumi.staging.yaml\n+++ b/Pulumi.staging.yaml\n" in out
    assert "-    version: v0.16.0\n+    version: v0.17.0\n" in out
    assert "wrote Pulumi.staging.yaml" in out


def test_gpu_pin_is_skipped_when_source_runs_another_mode(project, passing, capsys):
    """dev runs fake GPUs; its default device-plugin version was never tested, so staging's pin stays."""
    main(["promote", "dev", "staging", "--project", str(project), "--yes"])
    assert "version: 0.19.0" in _staging(project).decode()
    assert "kaistack:gpu.devicePlugin.version: dev runs gpu.mode 'fake'" in capsys.readouterr().out


def test_gpu_pin_is_copied_for_the_same_mode(project, passing):
    """staging -> qa, both device-plugin: qa gets staging's devicePlugin chart version."""
    qa = (project / "Pulumi.staging.yaml").read_text().replace("version: 0.19.0", "version: 0.18.0")
    (project / "Pulumi.qa.yaml").write_text(qa)
    plan = plan_promotion(project, "staging", "qa")
    assert [(p.key, p.old, p.new) for p in plan.pins] == [("kaistack:gpu.devicePlugin.version", "0.18.0", "0.19.0")]


def test_pin_missing_in_target_is_added_under_its_block(project, passing):
    """A tenant without a vcluster block runs the default; a different source pin adds the block."""
    dev = project / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text().replace("version: 0.36.1", "version: 0.37.0-rc.1"))
    plan = plan_promotion(project, "dev", "staging")
    team_a = next(p for p in plan.pins if p.key == "kaistack:tenants[team-a].vcluster.version")
    assert (team_a.old, team_a.new, team_a.added) == ("0.36.1", "0.37.0-rc.1", True)
    added = "     - name: team-a\n       queues: [team-a]\n+      vcluster:\n+        version: 0.37.0-rc.1\n"
    assert added in plan.diff()


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_the_diff_of_a_crlf_or_cr_file_shows_the_edit_not_its_line_breaks(project, passing, newline):
    """Each diff line ended in the file's "\r", shown as a literal \\x0d (or the whole hunk on one line)."""
    dev = project / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text().replace("version: 0.36.1", "version: 0.37.0-rc.1"))
    staging = project / "Pulumi.staging.yaml"
    staging.write_bytes(staging.read_text().replace("\n", newline).encode())
    diff = plan_promotion(project, "dev", "staging").diff()
    assert "\r" not in diff
    assert "+        version: 0.37.0-rc.1\n" in diff


def test_validation_failure_refuses_and_writes_nothing(project, monkeypatch, capsys):
    """A policy violation in the promoted target: exit 1, the violation is shown, the file is unchanged."""
    monkeypatch.setattr(promote_module, "validate_project", _violating)
    before = _staging(project)
    code = main(["promote", "dev", "staging", "--project", str(project), "--yes"])
    captured = capsys.readouterr()
    assert code == 1
    assert _staging(project) == before
    assert "no kai.scheduler/queue label" in captured.out
    assert "refused: validation of the promoted target failed" in captured.err


def test_promoted_config_that_breaks_the_model_is_refused(project, passing, capsys):
    """Pins are checked by the model first: an old KAI cannot read a custom queueLabelKey, so nothing is written."""
    dev = project / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text().replace("version: v0.17.0 # tested", "version: v0.15.0 # tested"))
    staging = project / "Pulumi.staging.yaml"
    staging.write_text(staging.read_text().replace("    namespace: kai-scheduler\n", "    queueLabelKey: acme/queue\n"))
    before = _staging(project)
    code = main(["promote", "dev", "staging", "--project", str(project), "--yes", "--allow-downgrade"])
    assert code == 1
    assert _staging(project) == before
    assert "queueLabelKey 'acme/queue' needs KAI >= v0.16.0" in capsys.readouterr().out


def test_target_changed_during_validation_refuses_and_keeps_the_other_edit(project, monkeypatch, capsys):
    """Someone edits the target while it validates: the hash check before os.replace refuses; their edit survives."""
    staging = project / "Pulumi.staging.yaml"

    def edit_meanwhile(project_dir: Path, stack: str, progress: object) -> ValidationReport:
        staging.write_text(staging.read_text() + "# edited by someone else\n")
        return passing_report(project_dir, stack, progress)

    monkeypatch.setattr(promote_module, "validate_project", edit_meanwhile)
    code = main(["promote", "dev", "staging", "--project", str(project), "--yes"])
    assert code == 1
    text = staging.read_text()
    assert text.endswith("# edited by someone else\n")
    assert "version: v0.16.0" in text
    assert "Pulumi.staging.yaml changed after it was read" in capsys.readouterr().err


def test_write_promotion_refuses_a_changed_target(project):
    """write_promotion compares the sha256 taken at read time with the file right before replacing it."""
    plan = plan_promotion(project, "dev", "staging")
    staging = project / "Pulumi.staging.yaml"
    staging.write_bytes(staging.read_bytes().replace(b"replicas: 4", b"replicas: 5"))
    changed = staging.read_bytes()
    with pytest.raises(TargetChanged, match=r"Pulumi\.staging\.yaml changed after it was read"):
        write_promotion(plan)
    assert staging.read_bytes() == changed
    assert not list(project.glob(".Pulumi.staging.yaml.*.tmp"))


def test_write_promotion_keeps_the_file_mode(project):
    """The atomic replace (temp file + os.replace) keeps the target's permissions."""
    staging = project / "Pulumi.staging.yaml"
    staging.chmod(0o640)
    write_promotion(plan_promotion(project, "dev", "staging"))
    assert stat.S_IMODE(staging.stat().st_mode) == 0o640


def test_read_only_target_is_refused_with_exit_3_not_overwritten(project, passing, capsys):
    """A 0444 target is a frozen environment: refused even for root (mode bits, not just access(2))."""
    staging = project / "Pulumi.staging.yaml"
    before = staging.read_bytes()
    staging.chmod(0o444)
    code = main(["promote", "dev", "staging", "--project", str(project), "--yes"])
    assert code == 3
    assert staging.read_bytes() == before
    assert "Pulumi.staging.yaml is read-only (mode 0444)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("step", "errno_name"),
    [("fsync", "ENOSPC"), ("replace", "EROFS"), ("mkstemp", "EACCES"), ("fdopen", "EIO")],
)
def test_a_failing_write_leaves_the_target_intact_and_exits_3(project, passing, capsys, monkeypatch, step, errno_name):
    """Disk full, read-only file system, I/O error: the old file stays, no temporary file is left, exit 3."""
    import errno
    import os
    import tempfile

    def fail(*args: object, **kwargs: object) -> None:
        code = getattr(errno, errno_name)
        raise OSError(code, os.strerror(code))

    where = {
        "fsync": (os, "fsync"),
        "replace": (os, "replace"),
        "mkstemp": (tempfile, "mkstemp"),
        "fdopen": (os, "fdopen"),
    }
    monkeypatch.setattr(where[step][0], where[step][1], fail)
    staging = project / "Pulumi.staging.yaml"
    before = staging.read_bytes()
    code = main(["promote", "dev", "staging", "--project", str(project), "--yes"])
    assert code == 3
    assert staging.read_bytes() == before
    assert not list(project.glob(".Pulumi.staging.yaml.*.tmp"))
    err = capsys.readouterr().err
    assert f"could not write {staging}" in err
    assert f"{staging} is unchanged" in err


@pytest.mark.parametrize(("source", "target"), [("dev", "qa"), ("qa", "staging")])
def test_unknown_stack_exits_2_and_lists_stacks(project, passing, capsys, source, target):
    """An unknown source or target is a usage error: exit 2, the stacks that exist are listed."""
    before = {p.name: p.read_bytes() for p in project.glob("Pulumi.*.yaml")}
    code = main(["promote", source, target, "--project", str(project), "--yes"])
    assert code == 2
    assert "no Pulumi.qa.yaml" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in project.glob("Pulumi.*.yaml")} == before


def test_same_source_and_target_is_rejected(project):
    """Promoting a stack into itself is a mistake, not a no-op."""
    with pytest.raises(ConfigError, match=r"source and target are both 'dev'"):
        plan_promotion(project, "dev", "dev")


def test_dry_run_shows_the_change_and_writes_nothing(project, passing, capsys):
    """--dry-run validates and prints the diff; the file stays as it was."""
    before = _staging(project)
    code = main(["promote", "dev", "staging", "--project", str(project), "--dry-run"])
    assert code == 0
    assert _staging(project) == before
    assert "dry run: Pulumi.staging.yaml unchanged" in capsys.readouterr().out


def test_nothing_to_promote_exits_0_without_validating(project, monkeypatch, capsys):
    """When the target already runs the source's pins there is nothing to validate or write."""
    monkeypatch.setattr(promote_module, "validate_project", passing_report)
    main(["promote", "dev", "staging", "--project", str(project), "--yes"])
    monkeypatch.setattr(promote_module, "validate_project", lambda *a: pytest.fail("validated again"))
    code = main(["promote", "dev", "staging", "--project", str(project), "--yes"])
    assert code == 0
    assert "staging already runs dev's pins; nothing to promote" in capsys.readouterr().out


def test_without_yes_or_dry_run_and_no_terminal_exits_2(project, capsys, monkeypatch):
    """Non-interactive runs (CI) must say --yes or --dry-run explicitly."""
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    before = _staging(project)
    assert main(["promote", "dev", "staging", "--project", str(project)]) == 2
    assert "pass --yes to write, or --dry-run" in capsys.readouterr().err
    assert _staging(project) == before


def test_with_standard_input_closed_it_refuses_as_without_a_terminal(project, capsys, monkeypatch):
    """`kaistack promote dev staging <&-` starts with sys.stdin None: nobody to ask, so the same refusal (it was
    an AttributeError, exit 70)."""
    monkeypatch.setattr("sys.stdin", None)
    before = _staging(project)
    assert main(["promote", "dev", "staging", "--project", str(project)]) == 2
    assert "pass --yes to write, or --dry-run" in capsys.readouterr().err
    assert _staging(project) == before


def test_json_output_lists_pins_diff_and_validation(project, passing, capsys):
    """--json: pins (from/to/added), skipped keys, the diff, the validation and whether it was written."""
    code = main(["promote", "dev", "staging", "--project", str(project), "--yes", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    assert result["pins"][0] == {
        "key": "kaistack:kai.version",
        "from": "v0.16.0",
        "to": "v0.17.0",
        "added": False,
        "downgrade": False,
        "restarts": None,
    }
    assert result["written"] is True
    assert result["validation"]["ok"] is True
    assert result["diff"].startswith("--- a/Pulumi.staging.yaml")
    assert (result["ok"], result["exitCode"]) == (True, 0)


def test_a_refusal_after_planning_has_the_shape_of_every_refusal_plus_the_plan(project, monkeypatch, capsys):
    """{"ok": false, "exitCode"} as a refusal before planning prints, and the pins and validation it refused."""
    monkeypatch.setattr(promote_module, "validate_project", _violating)
    code = main(["promote", "dev", "staging", "--project", str(project), "--yes", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 1
    assert (result["ok"], result["exitCode"], result["written"]) == (False, 1, False)
    assert result["pins"]


def test_validation_runs_on_an_overlay_not_the_real_file(project, monkeypatch):
    """validate_project sees the promoted file in a temporary project; the real file is untouched meanwhile."""
    seen: dict[str, str] = {}

    def capture(project_dir: Path, stack: str, progress: object) -> ValidationReport:
        seen["overlay"] = (project_dir / "Pulumi.staging.yaml").read_text()
        seen["real"] = (project / "Pulumi.staging.yaml").read_text()
        seen["dir"] = str(project_dir)
        return passing_report(project_dir, stack, progress)

    monkeypatch.setattr(promote_module, "validate_project", capture)
    main(["promote", "dev", "staging", "--project", str(project), "--yes"])
    assert "version: v0.17.0" in seen["overlay"]
    assert "version: v0.16.0" in seen["real"]
    assert seen["dir"] != str(project)


def test_promotion_is_validated_by_the_real_pack_and_checker(renderable_project, capsys):
    """End to end: the promoted staging renders, passes the repository's policy pack and fits; then it is written."""
    code = main(["promote", "dev", "staging", "--project", str(renderable_project), "--yes"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "validation of promoted staging: passed" in out
    assert "version: v0.17.0" in (renderable_project / "Pulumi.staging.yaml").read_text()


def test_interactive_run_asks_before_writing(project, passing, capsys, monkeypatch):
    """On a terminal without --yes the plan is shown and an answer other than y/yes writes nothing."""
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    before = _staging(project)
    assert main(["promote", "dev", "staging", "--project", str(project)]) == 0
    assert _staging(project) == before
    monkeypatch.setattr("builtins.input", lambda prompt: "yes")
    assert main(["promote", "dev", "staging", "--project", str(project)]) == 0
    assert "version: v0.17.0" in _staging(project).decode()


def test_end_of_input_at_the_prompt_writes_nothing(project, passing, capsys, monkeypatch):
    """Ctrl-D answers the question with no: nothing written, exit 0 as for "n"."""

    def end_of_input(prompt: str) -> str:
        raise EOFError

    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", end_of_input)
    before = _staging(project)
    assert main(["promote", "dev", "staging", "--project", str(project)]) == 0
    assert _staging(project) == before
    out, err = capsys.readouterr()
    assert "not written (declined at the prompt); Pulumi.staging.yaml unchanged" in out
    assert "refused" not in err


def test_the_prompt_comes_after_the_validation_verdict_it_asks_about(project, passing, capsys, monkeypatch):
    """It was printed after the answer: the user said yes or no without knowing whether the target validated."""
    shown: list[str] = []

    def answer(prompt: str) -> str:
        shown.append(capsys.readouterr().out)
        return "y"

    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", answer)
    assert main(["promote", "dev", "staging", "--project", str(project)]) == 0
    [before_prompt] = shown
    assert "validation of promoted staging: passed" in before_prompt
    after = capsys.readouterr().out
    assert "validation of promoted staging" not in after
    assert after.startswith("wrote Pulumi.staging.yaml")


def _dev(project: Path) -> bytes:
    return (project / "Pulumi.dev.yaml").read_bytes()


def test_a_pin_the_target_runs_newer_is_left_alone(project, passing, capsys):
    """staging -> dev would take dev's KAI from v0.17.0 back to v0.16.0: that pin stays, named under "left alone";
    the rest is promoted (promote.yml passes no flag, so a refusal would block every later promotion)."""
    assert main(["promote", "staging", "dev", "--project", str(project), "--yes"]) == 0
    assert yaml.safe_load(_dev(project))["config"]["kaistack:kai"]["version"] == "v0.17.0"
    out = capsys.readouterr().out
    assert "kaistack:kai.version: runs v0.17.0, newer than staging's v0.16.0" in out
    assert "--allow-downgrade" in out


def test_allow_downgrade_steps_the_pin_back(project, passing, capsys):
    assert main(["promote", "staging", "dev", "--project", str(project), "--yes", "--allow-downgrade"]) == 0
    assert yaml.safe_load(_dev(project))["config"]["kaistack:kai"]["version"] == "v0.16.0"


def test_json_lists_a_kept_newer_pin_under_skipped(project, passing, capsys):
    assert main(["promote", "staging", "dev", "--project", str(project), "--yes", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert "kaistack:kai.version" not in [p["key"] for p in result["pins"]]
    [kept] = [s for s in result["skipped"] if s["key"] == "kaistack:kai.version"]
    assert "newer than staging's v0.16.0" in kept["reason"]


def test_json_marks_a_downgrade_that_is_allowed(project, passing, capsys):
    assert main(["promote", "staging", "dev", "--project", str(project), "--yes", "--json", "--allow-downgrade"]) == 0
    result = json.loads(capsys.readouterr().out)
    kai = next(p for p in result["pins"] if p["key"] == "kaistack:kai.version")
    assert (kai["from"], kai["to"], kai["downgrade"]) == ("v0.17.0", "v0.16.0", True)


def test_a_release_candidate_promoted_over_its_release_line_is_a_downgrade(project, passing, capsys):
    """A vCluster pre-release sorts before its release (semver 11), and 0.37.0-rc.1 after 0.36.1."""
    dev = (project / "Pulumi.dev.yaml").read_text()
    (project / "Pulumi.qa.yaml").write_text(dev.replace("version: 0.36.1", "version: 0.37.0-rc.1"))
    assert main(["promote", "dev", "qa", "--project", str(project), "--yes"]) == 0
    assert "version: 0.37.0-rc.1" in (project / "Pulumi.qa.yaml").read_text()
    assert "tenants[team-a].vcluster.version: runs 0.37.0-rc.1, newer than dev's 0.36.1" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["Job", "PyTorchJob"])
def test_a_promoted_image_of_a_job_says_the_running_job_restarts(project, passing, capsys, kind):
    """pulumi-kubernetes replaces a named Job whose template changes, deleting it first
    (pulumi/pulumi-kubernetes provider/pkg/provider/diff.go `job` forceNew .spec.template; provider.go
    deleteBeforeReplace for named objects), and kaistack a PyTorchJob (training_operator.REPLACED_ON_CHANGES):
    promoting its image stops the run, which the pin says."""
    for stack in ("dev", "staging"):
        path = project / f"Pulumi.{stack}.yaml"
        text = path.read_text().replace("      kind: Deployment\n", f"      kind: {kind}\n", 1)
        if kind == "PyTorchJob":  # a master and its workers, not replicas
            text = re.sub(r"\n      replicas: \d+\n", "\n", text, count=1)
        path.write_text(text)
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes", "--json"]) == 0
    pins = {p["key"]: p for p in json.loads(capsys.readouterr().out)["pins"]}
    assert pins["kaistack:workloads[infer].image"]["restarts"] == f"the running {kind} is deleted, then created again"
    assert pins["kaistack:kai.version"]["restarts"] is None


def test_every_ambiguous_value_of_the_target_is_its_own_problem(project, passing, capsys):
    staging = project / "Pulumi.staging.yaml"
    staging.write_text(staging.read_text().replace("config:\n", "config:\n  kaistack:x:\n    a: yes\n    b: off\n", 1))
    assert main(["promote", "dev", "staging", "--project", str(project), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "(2 problems)" in err
    assert "\n  Pulumi.staging.yaml:5: yes is True to kaistack's YAML parser" in err
    assert "\n  Pulumi.staging.yaml:6: off is False to kaistack's YAML parser" in err
