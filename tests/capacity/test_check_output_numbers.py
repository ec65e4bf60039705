"""What `kaistack check` and `kaistack diff` print about shared GPUs and queues: each number as KAI counts it, and
never rounded the way that turns "does not fit" into what reads like "fits" (each case from a review)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.capacity.check import check
from kaistack.capacity.diff import CapacityDiff, QueueChange, to_markdown, to_text
from kaistack.capacity.html import to_html
from kaistack.capacity.report import to_json, used_percent
from kaistack.capacity.report import to_text as check_text
from kaistack.declaration.parse import parse_config


def _stack(*workloads: dict[str, Any], gpus: int = 2) -> dict[str, Any]:
    """One node of `gpus` GPUs of 10000 MiB, fake GPUs, one unlimited queue."""
    return {
        "cluster": {
            "provider": "kind",
            "nodePools": [{"name": "gpu", "gpus": gpus, "gpuMemoryMiB": 10000, "cpu": "8", "memory": "32Gi"}],
        },
        "gpu": {"mode": "fake"},
        "queues": [{"name": "team"}],
        "workloads": list(workloads),
    }


def _work(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "kind": "Pod", "image": "busybox:1.37.0", "queue": "team", **fields}


def test_a_pod_spread_over_two_shared_gpus_holds_its_portion_on_each():
    """KAI counts portion x devices against the quota, and each device holds the portion
    (KAI-Scheduler@v0.17.0 pkg/scheduler/api/resource_info/gpu_resource_requirment.go:183-197, :242)."""
    report = check(parse_config(_stack(_work("a", gpuFraction=0.6, gpuDevices=2)), source="test"))
    shared = [g for n in report.nodes for g in n.gpus if g.shared]
    assert [(g.used, g.fractions) for g in shared] == [(0.6, (0.6,)), (0.6, (0.6,))]
    assert [g["fractions"] for n in to_json(report)["nodes"] for g in n["gpus"] if g["shared"]] == [[0.6], [0.6]]
    assert 'title="a-0: 0.6 GPU"' in to_html(report)


def test_free_room_on_a_fragmented_gpu_is_never_rounded_up_to_what_was_asked():
    """4999 MiB of 10000 free is 0.4999 of the GPU: a 0.5 that does not fit must not read "0.50 free"."""
    raw = _stack(_work("a", gpuMemoryMiB=5001), _work("b", gpuFraction=0.5), gpus=1)
    report = check(parse_config(raw, source="test"))
    (b,) = [w for w in report.workloads if w.name == "b"]
    assert b.status == "Pending"
    reason = " ".join(b.reasons)
    assert "0.49 free on" in reason
    assert "0.50 free" not in reason
    assert "51% used" in check_text(report)


@pytest.mark.parametrize(("used", "shown"), [(0.0, "0%"), (0.5, "50%"), (0.5001, "51%"), (0.3, "30%"), (1.0, "100%")])
def test_a_gpus_used_share_is_rounded_up_to_a_whole_percent(used: float, shown: str):
    assert used_percent(used) == shown


def _queue(before: float, after: float) -> QueueChange:
    return QueueChange("default", 1000.0, 1008.0, before, after)


def _diff(queue: QueueChange) -> CapacityDiff:
    return CapacityDiff("s", "HEAD", (), (queue,), True, True)


def test_a_diffs_fair_shares_of_thousands_of_gpus_are_printed_whole():
    diff = _diff(_queue(1000.0, 1008.0))
    assert "default: 1000 -> 1008, 1000 -> 1008" in to_text(diff)
    assert "1000 → 1008 |" in to_markdown(diff)
    assert "e+" not in to_text(diff) + to_markdown(diff)


def test_a_small_change_of_fair_share_shows_in_the_diff():
    assert "2.4 -> 2.4004" in to_text(_diff(_queue(2.4, 2.4004)))


# --- --html and stdout ----------------------------------------------------------------------------------------


def _project(tmp_path: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: kaistack\nruntime: python\n")
    config = {f"kaistack:{k}": v for k, v in _stack(_work("a", gpuFraction=0.5)).items()}
    (tmp_path / "Pulumi.s.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def _check(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kaistack", "check", "--stack", "s", "--project", str(project), *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=project)


def test_html_to_a_dash_writes_the_page_to_stdout_alone(tmp_path: Path):
    """`--html -` wrote a file named `-`."""
    run = _check(_project(tmp_path), "--html", "-")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("<!DOCTYPE html>")
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("form", ["--json", "--markdown"])
@pytest.mark.parametrize("target", ["-", "/dev/stdout"])
def test_html_to_stdout_beside_json_or_markdown_is_refused(tmp_path: Path, form: str, target: str):
    """One stream, two documents: the JSON would not parse, the PR comment would carry the page."""
    run = _check(_project(tmp_path), form, "--html", target)
    assert run.returncode == 2
    assert f"--html {target} and {form} both write to stdout; give --html a file" in run.stderr
    assert "<!DOCTYPE" not in run.stdout
