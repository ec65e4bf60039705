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


def _project(tmp_path: Path, mode: str | None, *, fits: bool = False, max_seconds: float | None = None) -> Path:
    """The real program with the dev stack, its vLLM server asking for 4 whole GPUs (no node has 4) unless `fits`."""
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copy(REPO / "__main__.py", tmp_path / "__main__.py")
    document: dict[str, Any] = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())
    config = document["config"]
    if not fits:
        vllm = next(w for w in config["kaistack:workloads"] if w["name"] == "vllm-test-07")
        del vllm["gpuFraction"]
        vllm["gpu"] = 4
    if mode is not None:
        config.setdefault("kaistack:kai", {})["capacityCheck"] = mode
    if max_seconds is not None:
        config.setdefault("kaistack:kai", {})["capacityCheckMaxSeconds"] = max_seconds
    (tmp_path / "Pulumi.big.yaml").write_text(yaml.safe_dump(document))
    return tmp_path


def _dev_raw() -> dict[str, Any]:
    """The repository's dev stack as parse_config reads it."""
    document = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text())
    return {key.removeprefix("kaistack:"): value for key, value in document["config"].items()}


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


def test_the_stacks_own_time_limit_stops_a_check_that_would_fit_and_blames_the_clock(tmp_path: Path) -> None:
    """kai.capacityCheckMaxSeconds under enforce: a stopped check is no verdict, so preview/up stops, naming the key
    (not every workload the check had not reached yet)."""
    with pytest.raises(RenderError, match=r"time limit \(kaistack:kai.capacityCheckMaxSeconds: 1e-09\)") as caught:
        render_stack(_project(tmp_path, None, fits=True, max_seconds=1e-9), "big")
    assert "(raise the limit, or run kaistack check --stack big to see how long the check takes;" in str(caught.value)
    assert "vllm-test-07" not in str(caught.value)


def test_a_check_within_the_stacks_time_limit_deploys(tmp_path: Path) -> None:
    rendered = render_stack(_project(tmp_path, None, fits=True, max_seconds=600), "big")
    assert "kaistack-workloads-vllm-test-07" in {r.name for r in rendered.resources}


def test_under_warn_a_check_stopped_by_the_stacks_time_limit_deploys(tmp_path: Path) -> None:
    rendered = render_stack(_project(tmp_path, "warn", fits=True, max_seconds=1e-9), "big")
    assert "kaistack-workloads-vllm-test-07" in {r.name for r in rendered.resources}


@pytest.mark.parametrize(
    ("declared", "cli", "applied"),
    [(None, None, None), (30.0, None, 30.0), (None, 20.0, 20.0), (30.0, 20.0, 20.0), (30.0, 90.0, 30.0)],
)
def test_the_smaller_of_the_stacks_and_validates_limit_bounds_the_gate(
    check_limits: Any, declared: float | None, cli: float | None, applied: float | None
) -> None:
    from kaistack.capacity import gate as gate_module
    from kaistack.declaration.parse import parse_config

    seen = check_limits(gate_module)
    raw = _dev_raw()
    raw["kai"] = {**raw.get("kai", {}), **({"capacityCheckMaxSeconds": declared} if declared else {})}
    with gate_module.limit(cli):
        gate_module.gate(parse_config(raw), "dev")
    assert seen == [applied]


def test_validates_own_shorter_limit_leaves_the_verdict_to_validate_but_the_stacks_stops_the_program() -> None:
    from kaistack.capacity import gate as gate_module
    from kaistack.capacity.gate import CapacityError
    from kaistack.declaration.parse import parse_config

    raw = _dev_raw()
    with gate_module.limit(1e-9):
        assert gate_module.gate(parse_config(raw), "dev") is None  # nothing for the program to say or stop on
    report = gate_module.last_report(parse_config(raw), "dev", 1e-9)
    assert report is not None
    assert report.partial
    raw["kai"] = {**raw.get("kai", {}), "capacityCheckMaxSeconds": 1e-9}
    stopped = r"time limit \(kaistack:kai.capacityCheckMaxSeconds: 1e-09\)"
    with gate_module.limit(60), pytest.raises(CapacityError, match=stopped):
        gate_module.gate(parse_config(raw), "dev")


def test_under_warn_a_stopped_check_warns_with_the_key_not_every_workload(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING"):
        render_stack(_project(tmp_path, "warn", fits=True, max_seconds=1e-9), "big")
    [warning] = [r.getMessage() for r in caplog.records if "stopped by the time limit" in r.getMessage()]
    assert warning.startswith("unknown: stopped by the time limit (kaistack:kai.capacityCheckMaxSeconds: 1e-09) with")
    assert "\n" not in warning


def test_workloads_not_reached_under_the_stacks_limit_name_the_key_not_the_cli_option() -> None:
    from kaistack.capacity import gate as gate_module
    from kaistack.declaration.parse import parse_config

    raw = _dev_raw()
    raw["kai"] = {**raw.get("kai", {}), "capacityCheckMaxSeconds": 1e-9, "capacityCheck": "warn"}
    report = gate_module.gate(parse_config(raw), "dev")
    assert report is not None
    reasons = [line for w in report.workloads for line in w.why]
    assert reasons
    assert all("time limit (kaistack:kai.capacityCheckMaxSeconds)" in line for line in reasons)
    warned = parse_config({**raw, "kai": {"capacityCheck": "warn"}})
    with gate_module.limit(1e-9):
        gate_module.gate(warned, "dev")
    cli = gate_module.last_report(warned, "dev", 1e-9)
    assert cli is not None
    assert all("time limit (--max-seconds)" in line for w in cli.workloads for line in w.why)
