"""promote.yml's "Commit and push" step, run as GitHub runs it (bash -e) in a repository with a local origin.

The step commits and pushes the file `kaistack promote` wrote before `pulumi up` deploys it. A stack file that is
a link to another file of the repository was diffed by its link name: git saw no change, the step said "nothing
promoted", and `pulumi up` (which follows the link) deployed pins that were never committed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
STEP = "Commit and push the promoted stack file"


def _script() -> str:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "promote.yml").read_text())
    (step,) = [s for s in workflow["jobs"]["promote"]["steps"] if s.get("name") == STEP]
    return str(step["run"])


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _repo(tmp_path: Path, files: dict[str, str], links: dict[str, str]) -> Path:
    """A clone of a bare origin holding `files` and `links` (name -> where it points) on branch main."""
    origin = tmp_path / "origin.git"
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    work = tmp_path / "work"
    _git(tmp_path, "clone", "-q", str(origin), str(work))
    _git(work, "checkout", "-q", "-b", "main")
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    for name, to in links.items():
        (work / name).symlink_to(to)
    _git(work, "add", "-A")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init")
    _git(work, "push", "-q", "origin", "main")
    return work


def _run_step(work: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(work.parent),
        "SOURCE": "dev",
        "TARGET": "staging",
        "GITHUB_REF_NAME": "main",
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_REPOSITORY": "acme/platform",
        "GITHUB_RUN_ID": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    # GitHub's default for `run:` on Linux runners: bash --noprofile --norc -eo pipefail {0}.
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", _script()],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )


def _origin_file(work: Path, name: str) -> str:
    return _git(work.parent / "origin.git", "show", f"main:{name}")


def test_the_promoted_stack_file_is_committed_and_pushed(tmp_path: Path) -> None:
    work = _repo(tmp_path, {"Pulumi.staging.yaml": "config: {}\n"}, {})
    (work / "Pulumi.staging.yaml").write_text("config: {promoted: true}\n")
    run = _run_step(work)
    assert run.returncode == 0, run.stderr
    assert _origin_file(work, "Pulumi.staging.yaml") == "config: {promoted: true}\n"


def test_a_stack_file_that_links_within_the_repository_commits_the_file_it_names(tmp_path: Path) -> None:
    work = _repo(tmp_path, {"stacks/staging.yaml": "config: {}\n"}, {"Pulumi.staging.yaml": "stacks/staging.yaml"})
    (work / "stacks" / "staging.yaml").write_text("config: {promoted: true}\n")  # what promote writes
    run = _run_step(work)
    assert run.returncode == 0, run.stderr
    assert "nothing promoted" not in run.stdout
    assert _origin_file(work, "stacks/staging.yaml") == "config: {promoted: true}\n"
    assert _git(work, "status", "--porcelain") == ""


def test_an_unchanged_stack_file_pushes_nothing_and_passes(tmp_path: Path) -> None:
    work = _repo(tmp_path, {"Pulumi.staging.yaml": "config: {}\n"}, {})
    before = _git(work, "rev-parse", "origin/main")
    run = _run_step(work)
    assert run.returncode == 0, run.stderr
    assert "nothing promoted" in run.stdout
    assert _git(tmp_path / "origin.git", "rev-parse", "main") == before


def test_a_stack_file_that_links_outside_the_repository_stops_the_job_before_the_deploy(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("config: {promoted: true}\n")
    work = _repo(tmp_path, {}, {"Pulumi.staging.yaml": str(outside)})
    run = _run_step(work)
    assert run.returncode == 1
    assert "::error::Pulumi.staging.yaml links outside the repository" in run.stdout
