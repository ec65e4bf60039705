"""The program's capacity gate: `pulumi preview/up` of a stack whose work cannot fit stops first."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.cli import main
from kaistack.ops.render import RenderError, render_stack

REPO = Path(__file__).resolve().parents[2]


def _project(tmp_path: Path, mode: str | None) -> Path:
    """The real program with the dev stack, its vLLM server asking for 4 whole GPUs (no node has 4)."""
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(REPO / "__main__.py", tmp_path / "__main__.py")
    document: dict[str, Any] = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())
    config = document["config"]
    vllm = next(w for w in config["kaistack:workloads"] if w["name"] == "vllm-test-07")
    del vllm["gpuFraction"]
    vllm["gpu"] = 4
    if mode is not None:
        config.setdefault("kaistack:kai", {})["capacityCheck"] = mode
    (tmp_path / "Pulumi.big.yaml").write_text(yaml.safe_dump(document))
    return tmp_path


def test_program_refuses_a_stack_that_cannot_fit_before_registering_anything(tmp_path: Path) -> None:
    with pytest.raises(RenderError, match=r"capacity check failed(.|\n)*vllm-test-07.*no node fits 4 GPUs"):
        render_stack(_project(tmp_path, None), "big")


def test_capacity_check_warn_lets_the_program_register_the_stack(tmp_path: Path) -> None:
    rendered = render_stack(_project(tmp_path, "warn"), "big")
    names = {r.name for r in rendered.resources}
    assert "kaistack-workloads-vllm-test-07" in names


def test_the_refusal_names_the_stack_to_check(tmp_path: Path) -> None:
    """It said `kaistack check --stack NAME` literally."""
    with pytest.raises(RenderError, match=r"\(kaistack check --stack big shows where everything lands;"):
        render_stack(_project(tmp_path, None), "big")


def test_render_of_a_stack_that_cannot_fit_exits_1_as_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stack is valid; its work would stay Pending: exit 1 as `kaistack check` (README's exit table), not 2."""
    project = _project(tmp_path, None)
    assert main(["render", "--stack", "big", "--project", str(project), "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["exitCode"] == 1
    assert "kaistack capacity check failed for stack big" in err


def test_render_of_a_stack_with_a_bad_value_still_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, "sometimes")
    assert main(["render", "--stack", "big", "--project", str(project)]) == 2
    assert "kaistack:kai.capacityCheck" in capsys.readouterr().err
