"""`kaistack promote` reads the target stack file through the one bounded loader, and writes through a symlink.

Before, the target was parsed with a plain `yaml.safe_load`: an alias bomb took gigabytes, deep nesting and a
byte that is not UTF-8 exited 70, and a repeated key was silently resolved. Each is now exit 2 naming the file,
and the file is left as it was.
"""

from __future__ import annotations

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
