"""`kaistack promote` reads the target stack file through the one bounded loader, and writes through a symlink.

Before, the target was parsed with a plain `yaml.safe_load`: an alias bomb took gigabytes, deep nesting and a
byte that is not UTF-8 exited 70, and a repeated key was silently resolved. Each is now exit 2 naming the file,
and the file is left as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from kaistack.cli import main
from kaistack.ops import promote as promote_module


def _promote(project: Path, *extra: str) -> int:
    return main(["promote", "dev", "staging", "--project", str(project), *extra])


def _bomb() -> str:
    lines = ['  kaistack:bomb-0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"  kaistack:bomb-{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 8)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("append", "words"),
    [
        (_bomb(), "aliases expand to more than 1000000 nodes"),
        ("  kaistack:kai: {version: v0.16.0}\n", "key 'kaistack:kai' appears twice in one mapping"),
    ],
    ids=["alias-bomb", "repeated-key"],
)
def test_a_hostile_target_is_refused_as_bad_input_and_left_alone(
    project: Path, passing: None, capsys: pytest.CaptureFixture[str], append: str, words: str
) -> None:
    target = project / "Pulumi.staging.yaml"
    target.write_text(target.read_text() + append)
    before = target.read_bytes()
    assert _promote(project, "--yes") == 2
    assert words in capsys.readouterr().err
    assert target.read_bytes() == before


def test_a_target_that_is_not_utf8_is_refused_naming_the_byte(
    project: Path, passing: None, capsys: pytest.CaptureFixture[str]
) -> None:
    target = project / "Pulumi.staging.yaml"
    target.write_bytes(target.read_bytes() + b"# \xff\n")
    assert _promote(project, "--yes") == 2
    assert "Pulumi.staging.yaml: not UTF-8 text (byte" in capsys.readouterr().err


def test_a_symlinked_target_stays_a_symlink_and_the_file_it_names_is_promoted(
    project: Path, passing: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "elsewhere" / "staging.yaml"
    real.parent.mkdir()
    link = project / "Pulumi.staging.yaml"
    real.write_bytes(link.read_bytes())
    link.unlink()
    link.symlink_to(real)
    assert _promote(project, "--yes") == 0
    assert link.is_symlink()
    assert yaml.safe_load(real.read_text())["config"]["kaistack:kai"]["version"] == "v0.17.0"
    # Outside the project: `git status` there shows nothing, so the output names the file that changed.
    assert f"wrote {real} (Pulumi.staging.yaml links to it, outside the project)" in capsys.readouterr().out


def test_a_refusal_names_the_users_file_not_the_temporary_project(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The candidate is validated in a temporary copy of the project; its problems name the real files."""
    from kaistack.declaration.parse import ConfigError

    def refuse(overlay: Path, stack: str, progress: object) -> object:
        raise ConfigError([f"{overlay / 'Pulumi.staging.yaml'}: too large to render"])

    monkeypatch.setattr(promote_module, "validate_project", refuse)
    _promote(project, "--yes")
    err = capsys.readouterr()
    text = err.out + err.err
    assert f"{project / 'Pulumi.staging.yaml'}: too large to render" in text
    assert "kaistack-promote-" not in text


def test_the_candidate_is_written_as_utf8_whatever_the_locale(project: Path) -> None:
    """Under a POSIX locale without UTF-8 mode the temporary candidate was written with ASCII (exit 70)."""
    import os
    import subprocess
    import sys

    target = project / "Pulumi.staging.yaml"
    target.write_text(target.read_text(encoding="utf-8") + "# 🚀 promoted weekly\n", encoding="utf-8")
    script = (
        "import sys; from pathlib import Path; from kaistack.ops.promote import _overlay, plan_promotion\n"
        "plan = plan_promotion(Path(sys.argv[1]), 'dev', 'staging')\n"
        "with _overlay(plan) as root: print((root / 'Pulumi.staging.yaml').read_bytes() == plan.new_text.encode())\n"
    )
    env = {**os.environ, "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "LC_ALL": "POSIX"}
    done = subprocess.run([sys.executable, "-c", script, str(project)], env=env, capture_output=True, text=True,
                          encoding="utf-8", timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "True"


def test_a_target_linked_to_another_file_of_the_project_is_named_as_that_file(
    project: Path, passing: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """`git status` shows the file the link names changed, not the link: the output says which to commit."""
    real = project / "stacks" / "staging.yaml"
    real.parent.mkdir()
    link = project / "Pulumi.staging.yaml"
    real.write_bytes(link.read_bytes())
    link.unlink()
    link.symlink_to(Path("stacks") / "staging.yaml")
    assert _promote(project, "--yes") == 0
    assert "wrote stacks/staging.yaml (Pulumi.staging.yaml links to it); next: commit it" in capsys.readouterr().out


def test_a_link_loop_elsewhere_in_the_project_does_not_stop_a_promotion(project: Path, passing: None) -> None:
    """The candidate is validated in a temporary project of links to the real entries; a loop among them
    (Path.resolve raises RuntimeError on Python 3.11) is linked as it is."""
    (project / "loop").symlink_to("loop")
    assert _promote(project, "--yes") == 0
    assert "version: v0.17.0" in (project / "Pulumi.staging.yaml").read_text()


def test_a_target_removed_while_it_was_validated_is_a_refusal(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1, "changed meanwhile" in the README's table, as an edit is; not exit 3 (a file that cannot be read)."""
    from workflow_testlib import passing_report

    target = project / "Pulumi.staging.yaml"

    def remove_meanwhile(project_dir: Path, stack: str, progress: object) -> object:
        target.unlink()
        return passing_report(project_dir, stack, progress)

    monkeypatch.setattr(promote_module, "validate_project", remove_meanwhile)
    assert _promote(project, "--yes") == 1
    assert "Pulumi.staging.yaml was removed after it was read; nothing written" in capsys.readouterr().err
    assert not target.exists()


def test_a_target_that_keeps_only_newer_pins_is_not_said_to_run_the_sources(
    project: Path, passing: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _promote(project, "--yes") == 0  # staging now runs dev's pins
    dev = project / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text().replace("version: v0.17.0 # tested", "version: v0.16.0 # tested"))
    capsys.readouterr()
    assert _promote(project, "--yes") == 0
    out = capsys.readouterr().out
    assert "already runs dev's pins" not in out
    assert "nothing to promote: staging keeps 1 newer pin (left alone, below)" in out
    assert _promote(project, "--yes", "--json") == 0
    skipped = json.loads(capsys.readouterr().out)["skipped"]
    assert [s["key"] for s in skipped if s["keptNewer"]] == ["kaistack:kai.version"]
