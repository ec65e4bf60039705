"""What the workflows run is pinned: every action to the commit of one release, the Pulumi CLI to one version.

A tag can be moved by whoever controls an action's repository; a commit cannot. These workflows assume AWS roles,
hold PULUMI_ACCESS_TOKEN and push to the default branch, so each `uses:` names a commit, with its release as a
comment. GitHub only warns about an input the action does not declare and runs on without it, so each step's
`with:` is checked against the action.yml of that release (copied to tests/data/github-actions/).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
ACTIONS = Path(__file__).resolve().parents[1] / "data" / "github-actions"

# owner/repo: (commit, release). Each commit is `git rev-parse <release>^{commit}` in a snapshot of
# github.com/<owner>/<repo> taken 2026-11-26; the major tag the workflows used before (v4, v5, v7, ...) pointed at
# the same commit then, except marocchino/sticky-pull-request-comment, whose v2 is a branch (v2.9.4 is its head).
# The action.yml files are `git show <release>:action.yml` of the same snapshots.
PINS: dict[str, tuple[str, str]] = {
    "actions/checkout": ("11d5960a326750d5838078e36cf38b85af677262", "v4.4.0"),
    "actions/setup-python": ("a26af69be951a213d495a4c3e4e4022e16d87065", "v5.6.0"),
    "actions/upload-artifact": ("ea165f8d65b6e75b540449e92b4886f43607fa02", "v4.6.2"),
    "actions/download-artifact": ("d3f86a106a0bac45b974a628896c90dbdf5c8093", "v4.3.0"),
    "aws-actions/configure-aws-credentials": ("7474bc4690e29a8392af63c5b98e7449536d5c3a", "v4.3.1"),
    "pulumi/actions": ("8e5e406f4007fca908480587cb9893c07090f58d", "v7.0.0"),
    "marocchino/sticky-pull-request-comment": ("773744901bac0e8cbb5a0dc842800d45e9b2b405", "v2.9.4"),
}

_USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<action>[^@\s]+)@(?P<ref>\S+)(?P<rest>.*)$")


def pin_problems(text: str) -> list[str]:
    """Each `uses:` line that names no pinned commit, or a release other than the one its commit is in."""
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        found = _USES.match(line)
        if found is None:
            continue
        action, ref, rest = found["action"], found["ref"], found["rest"]
        pinned = PINS.get(action)
        if pinned is None:
            problems.append(f"line {number}: {action} is not in PINS")
        elif ref != pinned[0]:
            problems.append(f"line {number}: {action}@{ref} is not the commit of {pinned[1]} ({pinned[0]})")
        elif not re.match(rf"\s+#\s*{re.escape(pinned[1])}\b", rest):
            problems.append(f"line {number}: {action}@{ref} does not say its release ({pinned[1]}) in a comment")
    return problems


def _inputs(action: str) -> dict[str, Any]:
    declared = yaml.safe_load((ACTIONS / f"{action.replace('/', '+')}.yml").read_text())
    return declared.get("inputs") or {}


def input_problems(step: dict[str, Any]) -> list[str]:
    """Inputs a step passes that its action's release does not declare, and required ones it leaves out."""
    action = str(step["uses"]).partition("@")[0]
    declared = _inputs(action)
    given = step.get("with") or {}
    problems = [f"{action}: no input {key!r}" for key in given if key not in declared]
    for key, spec in declared.items():
        spec = spec or {}
        if spec.get("required") in (True, "true") and "default" not in spec and key not in given:
            problems.append(f"{action}: required input {key!r} not given")
    return problems


def _workflows() -> dict[str, dict[str, Any]]:
    loaded = {}
    for path in sorted(WORKFLOWS.glob("*.yml")):
        data = yaml.safe_load(path.read_text())
        data["on"] = data.pop(True, data.get("on"))
        loaded[path.name] = data
    return loaded


def _steps_using(action: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (name, job_name, step)
        for name, workflow in _workflows().items()
        for job_name, job in workflow["jobs"].items()
        for step in job.get("steps", [])
        if str(step.get("uses", "")).partition("@")[0] == action
    ]


@pytest.mark.parametrize("name", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_every_action_is_pinned_to_the_commit_of_a_release(name):
    assert pin_problems((WORKFLOWS / name).read_text()) == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("      - uses: actions/checkout@v4", "is not the commit of v4.4.0"),
        ("      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262", "does not say its release"),
        ("      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262 # v4.3.1", "does not say"),
        ("        uses: someone/else@0123456789012345678901234567890123456789 # v1.0.0", "is not in PINS"),
    ],
)
def test_pin_check_refuses_tags_unknown_actions_and_wrong_comments(line, problem):
    (found,) = pin_problems(line)
    assert problem in found


def test_every_pinned_action_has_its_release_action_yml():
    assert sorted(p.stem for p in ACTIONS.glob("*.yml")) == sorted(a.replace("/", "+") for a in PINS)


@pytest.mark.parametrize("name", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_every_step_passes_only_inputs_its_action_declares(name):
    steps = [s for job in _workflows()[name]["jobs"].values() for s in job.get("steps", []) if "uses" in s]
    assert steps
    assert [p for s in steps for p in input_problems(s)] == []


def test_input_check_catches_a_misspelt_and_a_missing_input():
    typo = {"uses": "actions/checkout@x", "with": {"persist-credential": False}}
    assert input_problems(typo) == ["actions/checkout: no input 'persist-credential'"]
    # aws-actions/configure-aws-credentials@v4.3.1 action.yml: aws-region is required and has no default.
    no_region = {"uses": "aws-actions/configure-aws-credentials@x", "with": {"role-to-assume": "r"}}
    assert input_problems(no_region) == ["aws-actions/configure-aws-credentials: required input 'aws-region' not given"]


def test_every_pulumi_step_installs_the_cli_version_in_the_repository():
    """pulumi/actions@v7.0.0 installs `^3`, the newest 3.x, unless pulumi-version(-file) is given (src/config.ts)."""
    steps = _steps_using("pulumi/actions")
    assert len(steps) >= 3
    for where in steps:
        assert where[2]["with"]["pulumi-version-file"] == ".pulumi.version", where[:2]
        assert "pulumi-version" not in where[2]["with"], where[:2]


def _lowest_pulumi_sdk() -> Version:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (requirement,) = [d for d in project["dependencies"] if re.match(r"pulumi\s*[<>=]", d)]
    found = re.search(r">=\s*([\d.]+)", requirement)
    assert found is not None, requirement
    return Version(found.group(1))


def test_the_cli_pin_is_the_lowest_pulumi_sdk_the_project_accepts():
    """pulumi/pulumi releases the CLI and the Python SDK together under one version (sdk/.version at each tag)."""
    pinned = Version((ROOT / ".pulumi.version").read_text().strip())
    assert pinned == _lowest_pulumi_sdk()


def _required_range() -> SpecifierSet:
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    # blang/semver ranges (pulumi/pulumi sdk/go/common/workspace/project.go): space-separated terms are ANDed.
    return SpecifierSet(",".join(project["requiredPulumiVersion"].split()))


def test_pulumi_yaml_requires_at_least_the_pinned_cli_and_no_next_major():
    required = _required_range()
    pinned = Version((ROOT / ".pulumi.version").read_text().strip())
    assert pinned in required
    assert Version(f"{pinned.major}.{pinned.minor - 1}.0") not in required
    assert Version(f"{pinned.major + 1}.0.0") not in required


def test_only_a_job_that_pushes_keeps_the_checkout_token():
    """actions/checkout@v4.4.0 writes the token into .git/config unless persist-credentials is false."""
    kept = []
    for name, job_name, step in _steps_using("actions/checkout"):
        persist = (step.get("with") or {}).get("persist-credentials", True)
        if persist:
            kept.append((name, job_name))
            runs = "\n".join(s.get("run", "") for s in _workflows()[name]["jobs"][job_name]["steps"])
            assert "git push" in runs, (name, job_name)
    assert kept == [("promote.yml", "promote")]


# kind v0.31.0's kind-linux-amd64: the release's sha256sum asset cannot be read offline; the same digest is pinned
# independently by several public repositories (Makefiles' kind_linux_amd64_SHA256SUM, Dockerfiles, a Go tool table).
KIND_V0_31_0_LINUX_AMD64_SHA256 = "eb244cbafcc157dff60cf68693c14c9a75c4e6e6fedaf9cd71c58117cb93e3fa"


def test_e2e_pins_the_digest_of_the_kind_release_it_downloads():
    env = _workflows()["e2e-kind.yml"]["env"]
    assert (env["KIND_VERSION"], env["KIND_SHA256"]) == ("v0.31.0", KIND_V0_31_0_LINUX_AMD64_SHA256)


def _run_kind_install(tmp_path: Path, digest: str) -> tuple[int, bool]:
    """The workflow's "Install kind" script under GitHub's default shell, with curl, sudo and kind stood in."""
    (step,) = [s for s in _workflows()["e2e-kind.yml"]["jobs"]["e2e"]["steps"] if s.get("name") == "Install kind"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fakes = {
        "curl": 'while [ "$1" != -fsSLo ]; do shift; done; printf "not kind" > "$2"',
        "sudo": f'touch "{tmp_path}/installed"',
        "kind": "echo kind v0.31.0",
    }
    for name, body in fakes.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    script = tmp_path / "step.sh"
    script.write_text(step["run"])
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "KIND_VERSION": "v0.31.0", "KIND_SHA256": digest}
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    return done.returncode, (tmp_path / "installed").exists()


def test_e2e_installs_no_kind_binary_whose_digest_differs(tmp_path):
    assert _run_kind_install(tmp_path, KIND_V0_31_0_LINUX_AMD64_SHA256) == (1, False)


def test_e2e_installs_the_kind_binary_whose_digest_matches(tmp_path):
    assert _run_kind_install(tmp_path, hashlib.sha256(b"not kind").hexdigest()) == (0, True)


def test_dependabot_proposes_new_action_releases_as_pull_requests():
    """A pin left alone goes stale; Dependabot's bumps arrive as pull requests, which run preview.yml."""
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text())
    (actions,) = [u for u in config["updates"] if u["package-ecosystem"] == "github-actions"]
    assert actions["directory"] == "/"
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("check-jsonschema")),
            "--builtin-schema",
            "vendor.dependabot",
            str(ROOT / ".github" / "dependabot.yml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
