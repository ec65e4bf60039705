"""The GitHub workflows: valid against GitHub's workflow schema (offline), and the facts teams rely on."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
PULUMI_ACTION = "pulumi/actions"  # the pinned release: test_workflow_pins.py


def _load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the bare key `on` as the boolean True.
    data["on"] = data.pop(True, data.get("on"))
    return data


def _steps(workflow: dict[str, Any], job: str) -> list[dict[str, Any]]:
    return workflow["jobs"][job]["steps"]


def _action(step: dict[str, Any]) -> str:
    """owner/repo of a step's `uses`, without the pinned commit."""
    return str(step.get("uses", "")).partition("@")[0]


def _uses(workflow: dict[str, Any], job: str, action: str) -> list[dict[str, Any]]:
    return [s for s in _steps(workflow, job) if _action(s) == action]


def _stacks_in_repo() -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in ROOT.glob("Pulumi.*.yaml"))


def _check_jsonschema() -> str:
    found = Path(sys.executable).with_name("check-jsonschema")
    if found.is_file():
        return str(found)
    on_path = shutil.which("check-jsonschema")
    if on_path is None:
        pytest.skip("check-jsonschema is not installed (pip install -e '.[test]')")
    return on_path


@pytest.mark.parametrize("name", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_workflow_validates_against_githubs_schema(name):
    """check-jsonschema's bundled GitHub workflow schema accepts the file (no network needed)."""
    done = subprocess.run(
        [_check_jsonschema(), "--builtin-schema", "vendor.github-workflows", str(WORKFLOWS / name)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_schema_check_rejects_a_broken_workflow(tmp_path):
    """The schema check is not vacuous: a job without runs-on/steps and an unknown trigger are rejected."""
    broken = tmp_path / "broken.yml"
    broken.write_text("on: pull_requests\njobs:\n  x:\n    environment: prod\n")
    done = subprocess.run(
        [_check_jsonschema(), "--builtin-schema", "vendor.github-workflows", str(broken)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "Schema validation errors were encountered" in done.stdout + done.stderr


def test_expected_workflows_exist():
    """preview (pull requests), promote (manual) and ci (main) are the team workflows."""
    assert {p.name for p in WORKFLOWS.glob("*.yml")} >= {"preview.yml", "promote.yml", "ci.yml"}


def test_workflows_default_to_read_only_permissions():
    """Every workflow grants only contents: read at the top; jobs widen what they need."""
    for name in ("preview.yml", "promote.yml", "ci.yml"):
        assert _load(name)["permissions"] == {"contents": "read"}, name


def test_preview_runs_on_pull_requests():
    assert "pull_request" in _load("preview.yml")["on"]


def test_preview_runs_the_readme_test_command():
    """The checks job runs .ci/run, the README's install + ruff + pytest command, unchanged."""
    runs = [s.get("run", "") for s in _steps(_load("preview.yml"), "checks")]
    assert ".ci/run" in runs


def test_preview_validates_every_stack_in_the_repo_as_markdown():
    """The validate loop names exactly the stacks that have a Pulumi.<stack>.yaml."""
    script = next(s["run"] for s in _steps(_load("preview.yml"), "checks") if s.get("id") == "validate")
    loop = re.search(r"for stack in ([\w ]+); do", script)
    assert loop is not None
    assert sorted(loop.group(1).split()) == _stacks_in_repo()
    assert 'kaistack validate --stack "$stack" --markdown' in script


def test_preview_diffs_every_stack_in_the_repo_against_the_prs_base():
    """The capacity diff names exactly the stacks that have a Pulumi.<stack>.yaml, compares each with the PR's base
    commit, and the checkout fetches the history that commit is in (actions/checkout fetches one commit by default,
    actions/checkout@02c7380 action.yml: `fetch-depth` default 1, and a base git does not have is exit 3)."""
    job = _load("preview.yml")["jobs"]["checks"]
    script = next(s["run"] for s in job["steps"] if s.get("id") == "validate")
    diff_part = script[script.index("## What this change does to capacity") :]
    loop = re.search(r"for stack in ([\w ]+); do", diff_part)
    assert loop is not None
    assert sorted(loop.group(1).split()) == _stacks_in_repo()
    assert 'kaistack diff --stack "$stack" --base "${{ github.event.pull_request.base.sha }}" --markdown' in diff_part
    checkout = next(s for s in job["steps"] if _action(s) == "actions/checkout")
    assert checkout["with"]["fetch-depth"] == 0


def test_preview_bounds_every_capacity_simulation_within_the_jobs_timeout():
    """validate simulates twice (program, pack), diff twice within one bound: three bounds a stack, which with the
    install and tests (.ci/run: 9.7 minutes on a fresh clone on 2026-11-28, its budget 15) must end before the
    job's timeout, or the comment is never posted."""
    job = _load("preview.yml")["jobs"]["checks"]
    step = next(s for s in job["steps"] if s.get("id") == "validate")
    bound = float(step["env"]["CAPACITY_MAX_SECONDS"])
    assert 'kaistack validate --stack "$stack" --markdown --max-seconds "$CAPACITY_MAX_SECONDS"' in step["run"]
    assert '--max-seconds "$CAPACITY_MAX_SECONDS" || rc=$?' in step["run"]
    assert len(_stacks_in_repo()) * 3 * bound + 15 * 60 < job["timeout-minutes"] * 60


def test_preview_posts_one_sticky_comment_with_the_reports():
    """The validation and capacity report goes into one comment, identified by its header."""
    workflow = _load("preview.yml")
    (sticky,) = _uses(workflow, "comment", "marocchino/sticky-pull-request-comment")
    assert sticky["with"] == {"header": "kaistack-validate", "path": "validate-report.md"}
    assert workflow["jobs"]["comment"]["permissions"] == {"pull-requests": "write"}


def test_preview_job_runs_pulumi_preview_with_the_policy_pack_per_stack():
    """pulumi/actions: command preview, policyPacks policies, comment-on-pr, one matrix entry per stack."""
    workflow = _load("preview.yml")
    (pulumi,) = _uses(workflow, "preview", PULUMI_ACTION)
    assert pulumi["with"]["command"] == "preview"
    assert pulumi["with"]["policyPacks"] == "policies"
    assert pulumi["with"]["comment-on-pr"] is True
    assert pulumi["with"]["stack-name"] == "${{ matrix.stack }}"
    assert sorted(workflow["jobs"]["preview"]["strategy"]["matrix"]["stack"]) == _stacks_in_repo()
    assert pulumi["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"


def test_cloud_credentials_come_from_oidc_roles():
    """AWS access is an assumed role (OIDC, id-token: write), never stored keys."""
    for name, job in (("preview.yml", "preview"), ("promote.yml", "promote")):
        workflow = _load(name)
        (aws,) = _uses(workflow, job, "aws-actions/configure-aws-credentials")
        assert "role-to-assume" in aws["with"]
        assert workflow["jobs"][job]["permissions"]["id-token"] == "write"
        assert "aws-access-key-id" not in aws["with"]


def test_promote_is_manual_with_stack_choices():
    """workflow_dispatch with source/target as choice inputs."""
    inputs = _load("promote.yml")["on"]["workflow_dispatch"]["inputs"]
    assert inputs["source"]["type"] == inputs["target"]["type"] == "choice"
    assert set(inputs["source"]["options"]) | set(inputs["target"]["options"]) <= set(_stacks_in_repo())


def test_promote_job_is_gated_by_the_target_environment():
    """environment: the target, so its required reviewers approve before anything runs."""
    assert _load("promote.yml")["jobs"]["promote"]["environment"] == "${{ inputs.target }}"


def test_promote_runs_kaistack_promote_then_pulumi_up_on_the_target():
    """The promote step writes with --yes; pulumi/actions `up` deploys the same target with the policy pack."""
    workflow = _load("promote.yml")
    steps = _steps(workflow, "promote")
    runs = [s.get("run", "") for s in steps]
    promote_at = next(i for i, r in enumerate(runs) if 'kaistack promote "$SOURCE" "$TARGET" --yes' in r)
    up_at = next(i for i, s in enumerate(steps) if _action(s) == PULUMI_ACTION)
    push_at = next(i for i, r in enumerate(runs) if "git push" in r)
    assert promote_at < push_at < up_at
    up = steps[up_at]["with"]
    assert (up["command"], up["stack-name"], up["policyPacks"]) == ("up", "${{ inputs.target }}", "policies")
    assert any('kaistack verify --stack "$TARGET"' in r for r in runs[up_at:])


def test_promote_passes_inputs_through_env_not_into_scripts():
    """Inputs reach shell scripts as $SOURCE/$TARGET, never as ${{ }} expansions inside `run:` (injection)."""
    workflow = _load("promote.yml")
    assert workflow["jobs"]["promote"]["env"] == {"SOURCE": "${{ inputs.source }}", "TARGET": "${{ inputs.target }}"}
    for step in _steps(workflow, "promote"):
        assert "${{" not in step.get("run", ""), step.get("name")


def test_installs_match_the_readme_command():
    """Workflows that do not run .ci/run install exactly as it does."""
    ci_run = (ROOT / ".ci" / "run").read_text()
    install = re.search(r"python3 -m venv \.venv && \.venv/bin/pip install -q -e '\.\[test\]'", ci_run)
    assert install is not None
    for name, job in (("preview.yml", "preview"), ("promote.yml", "promote")):
        runs = "\n".join(s.get("run", "") for s in _steps(_load(name), job))
        assert install.group(0) in runs, name


def test_e2e_workflow_installs_the_kind_release_the_node_image_is_built_for():
    """kind publishes each node image for its own release; the e2e run uses that release's CLI."""
    from kaistack.declaration import versions

    assert _load("e2e-kind.yml")["env"]["KIND_VERSION"] == versions.KIND_VERSION


def test_e2e_workflow_runs_up_verify_idempotency_tenant_add_and_destroy():
    """The end-to-end run a user can start: the order of its commands, and destroy even after a failure."""
    workflow = _load("e2e-kind.yml")
    steps = _steps(workflow, "e2e")
    runs = [s.get("run", "") for s in steps]
    order = [
        "pulumi up --stack dev --yes",
        "kaistack verify --stack dev --wait",
        "pulumi preview --stack dev --expect-no-changes",
        "pulumi preview --stack dev --json",
        "pulumi destroy --stack dev --yes",
    ]
    positions = [next(i for i, r in enumerate(runs) if command in r) for command in order]
    assert positions == sorted(positions)
    destroy = next(s for s in steps if "pulumi destroy" in s.get("run", ""))
    assert destroy["if"] == "always()"
    assert "PULUMI_CONFIG_PASSPHRASE" in workflow["env"]
    assert workflow["env"]["PULUMI_BACKEND_URL"].startswith("file://")
