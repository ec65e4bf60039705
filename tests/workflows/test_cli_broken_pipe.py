"""A reader that goes away (`kaistack check | head -1`) keeps the command's own exit code, quietly.

A BrokenPipeError escaping the command used to be mapped to exit 0, so under `set -o pipefail` a stack that does
not fit passed whenever `head` had exited before kaistack wrote. The tests break the pipe before anything is
written, so that no timing decides what they see.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kaistack.cli import main

NOFIT = {
    "kaistack:cluster": {
        "provider": "kind",
        "nodePools": [{"name": "gpu", "count": 1, "gpus": 2, "gpuMemoryMiB": 10000, "cpu": "8", "memory": "32Gi"}],
    },
    "kaistack:gpu": {"mode": "fake"},
    "kaistack:queues": [{"name": "org"}, {"name": "team", "parent": "org", "resources": {"gpu": {"quota": 2}}}],
    "kaistack:workloads": [{"name": "big", "kind": "Pod", "image": "busybox:1.37.0", "queue": "team", "gpu": 3}],
}


@pytest.fixture
def nofit(tmp_path: Path) -> Path:
    """A project whose stack `nofit` declares a 3-GPU pod on a 2-GPU node: `check` exits 1."""
    (tmp_path / "Pulumi.yaml").write_text("name: kaistack\nruntime: python\n")
    (tmp_path / "Pulumi.nofit.yaml").write_text(yaml.safe_dump({"config": NOFIT}))
    return tmp_path


class _Failing(io.StringIO):
    """A stdout whose every write and flush raises `error`: a pipe whose reader has gone (`| head` exited), or a
    full disk (`> /dev/full`)."""

    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise self.error

    def flush(self) -> None:
        raise self.error


def _closed_pipe() -> _Failing:
    return _Failing(BrokenPipeError(32, "Broken pipe"))


@pytest.mark.parametrize("form", [[], ["--json"]], ids=["text", "json"])
def test_findings_keep_exit_1_when_stdout_is_a_broken_pipe(
    form: list[str], nofit: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", _closed_pipe())
    assert main(["check", "--stack", "nofit", "--project", str(nofit), *form]) == 1
    assert "internal error" not in capsys.readouterr().err


def test_a_refusal_keeps_exit_2_when_stdout_is_a_broken_pipe(
    nofit: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", _closed_pipe())
    assert main(["check", "--stack", "nope", "--project", str(nofit), "--json"]) == 2
    assert "no Pulumi.nope.yaml" in capsys.readouterr().err


def test_a_closed_pipe_gives_the_exit_code_and_no_complaint_at_exit(nofit: Path) -> None:
    """A real pipe whose read end is closed before the child starts: no traceback, no 'Exception ignored'."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        run = subprocess.run(
            [sys.executable, "-m", "kaistack", "check", "--stack", "nofit", "--project", str(nofit)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert run.returncode == 1, run.stderr
    assert run.stderr == ""


@pytest.mark.parametrize("form", [[], ["--json"]], ids=["text", "json"])
def test_output_lost_to_a_full_disk_is_an_environment_problem_not_the_verdict(
    form: list[str], nofit: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The verdict (1: does not fit) was never written whole: exit 3, and stderr says why, without a traceback."""
    monkeypatch.setattr(sys, "stdout", _Failing(OSError(28, "No space left on device")))
    assert main(["check", "--stack", "nofit", "--project", str(nofit), *form]) == 3
    err = capsys.readouterr().err
    assert "kaistack check: cannot write its output: No space left on device" in err
    assert "Traceback" not in err


def test_dev_full_gives_exit_3_and_no_complaint_at_exit(nofit: Path) -> None:
    """A real full device, buffered as a redirected stdout is: no 'Exception ignored' after main returns."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with open("/dev/full", "w") as full:
        run = subprocess.run(
            [sys.executable, "-m", "kaistack", "check", "--stack", "nofit", "--project", str(nofit), "--json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
            env=env,
        )
    assert run.returncode == 3, run.stderr
    assert run.stderr.strip() == "kaistack check: cannot write its output: No space left on device"
