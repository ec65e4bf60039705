"""The short CI profile of benchmarks/fuzz.py: hostile inputs through every entry point, nothing breaks.

The long profile (1,000 inputs per entry point) is run by hand; its figures are in the README. The
harness itself is tested first: a run that raises, hangs, crashes or prints bad JSON is reported so.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fuzz() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kaistack_fuzz", ROOT / "benchmarks" / "fuzz.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _args(**overrides: object) -> argparse.Namespace:
    return argparse.Namespace(**{"timeout": 60.0, "max_rss_mb": 2048, "jobs": 2, **overrides})


@pytest.mark.parametrize("target", ["stack", "lint", "simulate", "diagnose", "promote"])
def test_short_profile_has_no_failure(target: str) -> None:
    """Run as its own process: the harness forks a child per input, and forking this test process, whose earlier
    tests leave gRPC and other threads behind, can leave a child waiting forever on a lock a thread held."""
    command = [sys.executable, str(ROOT / "benchmarks" / "fuzz.py"), "--target", target, "--count", "12"]
    command += ["--seed", "20261124", "--jobs", "2", "--timeout", "60", "--json"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    report = json.loads(done.stdout)["targets"][target]
    assert report["failures"] == []
    assert report["verdicts"] == {"ok": 12}
    assert set(report["exitCodes"]) <= {"0", "1", "2", "3"}
    assert done.returncode == 0


def _probe(fuzz: ModuleType, tmp_path: Path, setup: object, argv: list[str], **overrides: object) -> object:
    run = fuzz.Run("probe", 0, "probe")
    args = _args(**overrides)
    return fuzz.run_isolated(run, argv, tmp_path, args.timeout, args.max_rss_mb, setup=setup)


def test_harness_reports_a_traceback(fuzz: ModuleType, tmp_path: Path) -> None:
    def boom() -> None:
        raise RuntimeError("boom")

    assert _probe(fuzz, tmp_path, boom, ["--version"]).verdict == "traceback"


def test_harness_reports_a_hang(fuzz: ModuleType, tmp_path: Path) -> None:
    assert _probe(fuzz, tmp_path, lambda: time.sleep(30), ["--version"], timeout=1.0).verdict == "hang"


def test_harness_reports_a_crash(fuzz: ModuleType, tmp_path: Path) -> None:
    assert _probe(fuzz, tmp_path, os.abort, ["--version"]).verdict == "crash"


def test_harness_reports_non_json_output(fuzz: ModuleType, tmp_path: Path) -> None:
    def nan() -> None:
        print('{"x": NaN}')
        sys.exit(0)

    assert _probe(fuzz, tmp_path, nan, ["schema", "--json"]).verdict == "bad-json"


def test_harness_reports_cases_a_dead_worker_never_ran(fuzz: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed mid-chunk (the OOM killer took one on a generator blow-up) used to shorten the run silently."""

    def dies_on_case_1(rng: object, case: int, work: Path, args: object) -> object:
        if case == 1:
            os._exit(9)
        return fuzz.Run("lint", case, "lint --json")

    monkeypatch.setitem(fuzz.CASES, "lint", dies_on_case_1)
    runs = fuzz.fuzz(["lint"], 3, 1, _args(jobs=1))
    assert [(r.case, r.verdict) for r in runs] == [(0, "ok"), (1, "lost"), (2, "lost")]


def test_growing_lists_stops_at_the_generators_node_budget(fuzz: ModuleType) -> None:
    """Growth compounds over rounds (10,000 copies of a list holding a list grown before)."""
    import random

    doc: object = {"items": [{"spec": {"containers": [{"name": "c", "env": [{"name": "e"}]}]}}]}
    rng = random.Random(59)
    for _ in range(30):
        doc = fuzz.mutate_document(rng, doc)
    assert fuzz._size(doc, 10 * fuzz.GROWN_NODES) <= fuzz.GROWN_NODES + 100_000
