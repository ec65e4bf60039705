"""README samples that go stale quietly: each is run and compared with the README's block."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _kaistack(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kaistack", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_the_topology_example_scenario_gives_the_readmes_pending_line():
    run = _kaistack("simulate", "examples/scenarios/rack-gang.yaml")
    assert run.returncode == 0, run.stderr
    pending = run.stdout.rstrip("\n").splitlines()[-1]
    assert "$ kaistack simulate examples/scenarios/rack-gang.yaml" in README
    assert pending in README.splitlines()


def test_lints_summary_line_on_the_field_guides_manifests_is_the_readmes():
    manifests = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "data" / "manifests").glob("*.yaml"))
    run = _kaistack("lint", *manifests)
    summary = run.stdout.rstrip("\n").splitlines()[-1]
    assert summary in README.splitlines()
    assert summary in (ROOT / "policies" / "README.md").read_text().splitlines()


def test_validates_resource_count_for_dev_is_the_readmes():
    run = _kaistack("validate", "--stack", "dev")
    assert run.returncode == 0, run.stdout + run.stderr
    resources = run.stdout.splitlines()[1]
    assert resources.startswith("  resources: ")
    assert resources in README.splitlines()


def test_validates_policy_count_for_dev_is_the_readmes():
    """The pack's policy count went stale in the README once (11 after the twelfth policy came)."""
    run = _kaistack("validate", "--stack", "dev")
    policies = [line for line in run.stdout.splitlines() if line.startswith("  policies: ")]
    assert len(policies) == 1, run.stdout
    assert policies[0] in README.splitlines()


@pytest.fixture
def staging_on_an_older_kai(tmp_path: Path) -> Path:
    """The README's promote sample: the repository's dev and staging stacks, staging still on KAI v0.16.0."""
    for entry in ("Pulumi.yaml", "__main__.py", "components", "kaistack", "placement", "policies", "schema"):
        (tmp_path / entry).symlink_to(ROOT / entry, target_is_directory=(ROOT / entry).is_dir())
    (tmp_path / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())
    staging = (ROOT / "Pulumi.staging.yaml").read_text()
    assert staging.count("    version: v0.17.0\n") == 1
    (tmp_path / "Pulumi.staging.yaml").write_text(staging.replace("    version: v0.17.0\n", "    version: v0.16.0\n"))
    return tmp_path


def test_promotes_validation_line_is_the_readmes(staging_on_an_older_kai: Path):
    """Its resource and policy counts come from a real validation of the promoted stack."""
    run = _kaistack("promote", "dev", "staging", "--dry-run", "--project", str(staging_on_an_older_kai))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "  kaistack:kai.version  v0.16.0 -> v0.17.0" in run.stdout.splitlines()
    validation = [line for line in run.stdout.splitlines() if line.startswith("validation of promoted staging: ")]
    assert len(validation) == 1, run.stdout
    assert validation[0] in README.splitlines()
