"""`kaistack diff`: a git repository with two commits of a stack file; what the second does to capacity."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.cli import main

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed to make the repository")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=repo, check=True,
                   capture_output=True)  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Commit 1: the dev stack. Working tree: a 2-GPU build job that takes a running tenant pod's GPU, and a
    tenant pod that now asks for more CPU than any node has."""
    for name in ("Pulumi.yaml", "Pulumi.dev.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "base")
    document = yaml.safe_load((tmp_path / "Pulumi.dev.yaml").read_text())
    workloads = document["config"]["kaistack:workloads"]
    workloads.append({"name": "big-train", "kind": "Job", "queue": "test", "image": "busybox:1.37.0", "gpu": 2,
                      "priorityClass": "build"})  # fmt: skip
    # ... and a tenant pod that now asks for more CPU than any node has.
    cpu_pod = next(w for w in workloads if w["name"] == "cpu-only-pod")
    cpu_pod["cpu"] = "64"
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return tmp_path


def test_json_names_the_newly_pending_and_the_reclaimed_workload(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diff", "--stack", "dev", "--base", "HEAD", "--project", str(repo), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    changes = {w["name"]: w for w in report["workloads"]}
    assert changes["cpu-only-pod"]["change"] == "newly-pending"
    assert changes["cpu-only-pod"]["reason"]
    assert changes["gpu-sharing"]["change"] == "displaced"
    assert "big-train" in changes["gpu-sharing"]["detail"]
    assert report["harmful"] is True


def test_markdown_is_a_pr_comment_with_the_same_rows(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--stack", "dev", "--base", "HEAD", "--project", str(repo), "--markdown"]) == 1
    text = capsys.readouterr().out
    assert text.startswith("### ⚠️ kaistack capacity diff: `dev` against `HEAD`")
    assert "| `cpu-only-pod` | newly Pending | Running | Pending |" in text
    assert "| `gpu-sharing` | would be reclaimed or preempted | Running | Pending |" in text


def test_no_change_exits_0(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _git(repo, "checkout", "-q", "--", "Pulumi.dev.yaml")
    assert main(["diff", "--stack", "dev", "--base", "HEAD", "--project", str(repo)]) == 0
    assert "no capacity change" in capsys.readouterr().out


def test_base_file_instead_of_a_revision(repo: Path, tmp_path_factory: pytest.TempPathFactory,
                                         capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    base = tmp_path_factory.mktemp("base") / "Pulumi.dev.yaml"
    shutil.copy(ROOT / "Pulumi.dev.yaml", base)
    assert main(["diff", "--stack", "dev", "--base-file", str(base), "--project", str(repo), "--json"]) == 1


def test_an_unknown_revision_is_a_clean_error(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--stack", "dev", "--base", "no-such-branch", "--project", str(repo)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def _staging_project(tmp_path: Path) -> Path:
    for name in ("Pulumi.yaml", "Pulumi.staging.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_a_base_refused_by_a_deploy_rule_added_since_still_compares(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """staging on EKS 1.33, as it was before kaistack refused 1.33 (KAI never starts there): the base is only
    simulated, so the diff of the step to 1.34 shows no capacity change instead of an error."""
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    project = _staging_project(tmp_path_factory.mktemp("project"))
    base = tmp_path_factory.mktemp("base") / "Pulumi.staging.yaml"
    base.write_text((ROOT / "Pulumi.staging.yaml").read_text().replace('version: "1.34"', 'version: "1.33"'))
    assert 'version: "1.33"' in base.read_text()
    code = main(["diff", "--stack", "staging", "--base-file", str(base), "--project", str(project)])
    out, err = capsys.readouterr()
    # Exit 1 for the one update hazard: the step from 1.33 rolls every node group (kaistack.ops.update_hazards).
    assert code == 1, err
    assert "no capacity change" in out
    assert "eks-upgraded" in out


def test_the_current_side_is_still_refused(tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    project = _staging_project(tmp_path_factory.mktemp("project"))
    stack = project / "Pulumi.staging.yaml"
    stack.write_text(stack.read_text().replace('version: "1.34"', 'version: "1.33"'))
    base = tmp_path_factory.mktemp("base") / "Pulumi.staging.yaml"
    shutil.copy(ROOT / "Pulumi.staging.yaml", base)
    assert main(["diff", "--stack", "staging", "--base-file", str(base), "--project", str(project)]) == 2
    assert "serves the DRA API only at beta" in capsys.readouterr().err


def test_max_seconds_that_stops_the_simulations_makes_the_diff_partial_and_exit_1(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing changed, yet a diff whose simulations stopped cannot say so: partial, exit 1, both sides named."""
    _git(repo, "checkout", "-q", "--", "Pulumi.dev.yaml")
    args = ["diff", "--stack", "dev", "--base", "HEAD", "--project", str(repo), "--max-seconds", "1e-9"]
    assert main([*args, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["partial"] is True
    assert report["harmful"] is False
    assert report["partialBefore"].startswith(
        "unknown: stopped by the time limit (the base's half of --max-seconds: 5e-10) with 0 of"
    )
    assert report["partialAfter"].startswith("unknown: stopped by the time limit (what --max-seconds left the change: ")
    assert main([*args, "--markdown"]) == 1
    assert capsys.readouterr().out.startswith("### ⚠️ kaistack capacity diff")


def test_without_max_seconds_the_diff_is_not_partial(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _git(repo, "checkout", "-q", "--", "Pulumi.dev.yaml")
    assert main(["diff", "--stack", "dev", "--base", "HEAD", "--project", str(repo), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["partial"] is False
    assert "partialBefore" not in report
    assert "partialAfter" not in report


def test_max_seconds_is_shared_the_base_gets_half_and_the_change_what_is_left(
    repo: Path, check_limits: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from kaistack.capacity import check as capacity_check

    limits = check_limits(capacity_check)
    main(["diff", "--stack", "dev", "--base", "HEAD", "--project", str(repo), "--max-seconds", "100"])
    assert limits[0] == 50
    assert limits[1] is not None
    assert 50 < limits[1] <= 100


@pytest.mark.parametrize("value", ["0", "-5", "nan"])
def test_a_max_seconds_that_is_not_positive_is_refused(
    repo: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diff", "--stack", "dev", "--base", "HEAD", "--project", str(repo), "--max-seconds", value]) == 2
    assert "--max-seconds: must be a positive number of seconds" in capsys.readouterr().err
