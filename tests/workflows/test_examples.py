"""The example stacks in examples/ validate, render and check, copied into a project as the README says."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kaistack.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.name.split(".")[1] for p in (ROOT / "examples").glob("Pulumi.*.yaml"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for entry in ("Pulumi.yaml", "__main__.py", "components", "kaistack", "placement", "policies", "schema"):
        (tmp_path / entry).symlink_to(ROOT / entry, target_is_directory=(ROOT / entry).is_dir())
    for example in (ROOT / "examples").glob("Pulumi.*.yaml"):
        (tmp_path / example.name).write_text(example.read_text())
    return tmp_path


def test_all_three_examples_are_there() -> None:
    assert EXAMPLES == ["onprem", "openshift", "topology"]


@pytest.mark.parametrize("stack", EXAMPLES)
def test_example_fits(project: Path, stack: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--stack", stack, "--project", str(project), "--json"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["fits"] is True


def test_check_shows_the_cycles_progress_on_stderr_when_asked(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KAISTACK_PROGRESS", "1")
    assert main(["check", "--stack", "onprem", "--project", str(project), "--json"]) == 0
    captured = capsys.readouterr()
    assert "cycle 1: reclaim" in captured.err
    assert yaml.safe_load(captured.out)["fits"] is True


@pytest.mark.parametrize("stack", EXAMPLES)
def test_example_validates_against_the_policy_pack(
    project: Path, stack: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--stack", stack, "--project", str(project), "--json"]) == 0
    report = yaml.safe_load(capsys.readouterr().out)
    assert report["ok"] is True


def test_onprem_example_shares_one_gpu_between_two_vllm_servers(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--stack", "onprem", "--project", str(project), "--json"]) == 0
    report = yaml.safe_load(capsys.readouterr().out)
    [node] = report["nodes"]
    [gpu] = node["gpus"]
    assert gpu["shared"] is True
    assert sorted(gpu["pods"]) == ["vllm-large-0", "vllm-small-0"]


def test_topology_example_keeps_the_pretraining_gang_inside_one_rack(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--stack", "topology", "--project", str(project), "--json"]) == 0
    report = yaml.safe_load(capsys.readouterr().out)
    pretrain = next(w for w in report["workloads"] if w["name"] == "llm-pretrain")
    assert len(pretrain["domains"]) == 1
    assert [d["path"] for d in report["topology"]["domains"]] == [
        "zone-1/rack-a",
        "zone-1/rack-b",
        "zone-2/rack-c",
        "zone-2/rack-d",
    ]


def test_topology_example_keeps_each_finetuning_segment_inside_one_rack_of_one_zone(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--stack", "topology", "--project", str(project), "--json"]) == 0
    report = yaml.safe_load(capsys.readouterr().out)
    finetune = next(w for w in report["workloads"] if w["name"] == "llm-finetune")
    segments: dict[str, set[str]] = {}
    for pod in finetune["pods"]:
        segments.setdefault(pod["subGroup"], set()).add(pod["domain"])
    assert all(len(racks) == 1 for name, racks in segments.items() if name.startswith("worker-"))
    assert len({d.split("/")[0] for d in finetune["domains"]}) == 1
