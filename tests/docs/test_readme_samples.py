"""README samples that go stale quietly: each is run and compared with the README's block."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
