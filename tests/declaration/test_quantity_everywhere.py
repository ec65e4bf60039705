"""One quantity grammar for every input: a stack file, a scenario (`simulate`) and a manifest (`lint`).

The same bad quantity is the same clean error (exit 2, key path named, no traceback) through all
three; the same good quantity is the same exact value.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kaistack.capacity.plan import plan
from kaistack.cli import main
from kaistack.declaration.parse import parse_config
from kaistack.guardrails.capacity_adapter import _requests
from kaistack.guardrails.podspec import Res, workload
from placement.scenario import parse_scenario

EXPECTED = "invalid quantity '1..5': expected a Kubernetes quantity such as '500m', '2', '1.5Gi' or '1e3'"


def _stack(cpu: str) -> dict:
    return {
        "cluster": {"provider": "kind", "nodePools": [{"name": "gpu", "count": 1, "gpus": 1}]},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "q"}],
        "workloads": [{"name": "w", "kind": "Pod", "queue": "q", "image": "busybox", "cpu": cpu}],
    }


def _scenario(cpu: str) -> dict:
    return {
        "name": "q",
        "actions": ["allocate"],
        "nodes": [{"name": "n0", "gpus": 1}],
        "queues": [{"name": "q", "gpu": {"quota": 1, "limit": -1, "overQuotaWeight": 1}}],
        "jobs": [{"name": "j", "queue": "q", "cpu": cpu, "tasks": 1}],
    }


def _pod(cpu: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"kai.scheduler/queue": "q"}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def _write(path: Path, document: object) -> Path:
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_bad_stack_file_quantity_exits_2_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: kaistack\nruntime: python\n")
    _write(tmp_path / "Pulumi.unit.yaml", {"config": {f"kaistack:{k}": v for k, v in _stack("1..5").items()}})
    assert main(["check", "--stack", "unit", "--project", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"kaistack:workloads[0].cpu: {EXPECTED}" in err
    assert "Traceback" not in err


def test_a_bad_scenario_quantity_exits_2_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    scenario = _write(tmp_path / "s.yaml", _scenario("1..5"))
    assert main(["simulate", str(scenario)]) == 2
    err = capsys.readouterr().err
    assert f"jobs[0].cpu: {EXPECTED}" in err
    assert "Traceback" not in err


def test_a_bad_manifest_quantity_exits_2_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    manifest = _write(tmp_path / "pod.yaml", _pod("1..5"))
    assert main(["lint", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert f"spec.containers[0].resources.requests.cpu: {EXPECTED}" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("gpus", ["0.5", "500m", "1.5", 0.5])
def test_a_fraction_of_an_extended_resource_exits_2_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture, gpus: object
) -> None:
    """k8s v1.35 pkg/apis/core/validation/validation.go ValidateResourceQuantityValue: extended resources
    (IsExtendedResourceName, pkg/apis/core/helper/helpers.go) "must be an integer"."""
    pod = _pod("100m")
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": gpus}
    assert main(["lint", str(_write(tmp_path / "pod.yaml", pod))]) == 2
    err = capsys.readouterr().err
    assert "spec.containers[0].resources.limits.nvidia.com/gpu: " in err
    assert "nvidia.com/gpu is an extended resource, which the API server counts in whole units only" in err


@pytest.mark.parametrize("limits", [{"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "2000m"}, {"cpu": "1.5"}])
def test_whole_extended_resources_and_fractional_cpu_are_quantities(tmp_path: Path, limits: dict) -> None:
    pod = _pod("100m")
    pod["spec"]["containers"][0]["resources"]["limits"] = limits
    assert main(["lint", str(_write(tmp_path / "pod.yaml", pod))]) != 2


@pytest.mark.parametrize(("text", "millis"), [("500u", 1), ("1e3", 1_000_000), ("+0.5", 500), ("5e-1", 500)])
def test_a_good_quantity_is_the_same_value_everywhere(text: str, millis: int) -> None:
    from_stack = plan(parse_config(_stack(text))).snapshot.jobs[0].tasks[0].cpu_millis
    from_scenario = parse_scenario(_scenario(text)).snapshot.jobs[0].tasks[0].cpu_millis
    pod = workload(Res(type="kubernetes:core/v1:Pod", name="p", props=_pod(text)))
    assert pod is not None
    from_manifest, _, _ = _requests(pod.templates[0])
    assert from_stack == from_scenario == millis
    assert from_manifest == f"{millis}m"


@pytest.mark.parametrize(
    ("resource", "field", "text", "crd"),
    [
        ("cpu", "quota", "4", 4000.0),  # cores, in the CRD's millicores
        ("memory", "limit", "16Gi", 17179.869184),  # bytes, in the CRD's MB
        ("gpu", "quota", "500m", 0.5),
        ("gpu", "limit", "-1", -1.0),  # unlimited, written as a string
        ("cpu", "quota", " -1", -1.0),
        ("cpu", "quota", 4, 4.0),  # a bare number is the CRD's own unit (4 millicores)
    ],
)
def test_a_queue_quantity_is_converted_to_the_crds_unit(resource: str, field: str, text: object, crd: float) -> None:
    """kaistack.declaration.model.queues: a quantity string in a queue's block becomes the Queue CRD's unit."""
    raw = {
        "cluster": {"provider": "kind", "nodePools": [{"name": "gpu", "gpus": 1}]},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "team", "resources": {resource: {field: text}}}],
    }
    block = getattr(parse_config(raw).queues[0].resources, resource)
    assert getattr(block, field) == crd
