"""Every value kaistack writes into KAI's chart exists in that version's chart, for every supported version.

Data: kai-scheduler/KAI-Scheduler@<tag>:deployments/kai-scheduler/values.yaml for each tag in
versions.KAI_CHARTS (tests/data/kai/values/, one file per distinct content) and the `.Values.<path>`
references of deployments/kai-scheduler/templates/* at the same tag (tests/data/kai/chart-values-index.json;
`toYaml` references pass a whole map through, e.g. binder.plugins into the Config CR). A key is real
when values.yaml has it or a template reads it; keys a chart never reads are silently ignored by Helm,
which is exactly the failure this guards against.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kai import kai_values
from kaistack.declaration import versions
from kaistack.declaration.model import StackConfig
from kaistack.declaration.parse import parse_config

DATA = Path(__file__).resolve().parents[1] / "data" / "kai"
INDEX = json.loads((DATA / "chart-values-index.json").read_text())


@cache
def chart_values(tag: str) -> dict[str, Any]:
    return yaml.safe_load((DATA / "values" / INDEX["values"][tag]).read_text())


def leaf_paths(value: Any, prefix: str = "") -> Iterator[str]:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from leaf_paths(child, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix


def _in_values(values: Any, path: str) -> bool:
    for part in path.split("."):
        if not isinstance(values, dict) or part not in values:
            return False
        values = values[part]
    return True


def read_by_chart(tag: str, path: str) -> bool:
    templates = INDEX["templates"][tag]
    if _in_values(chart_values(tag), path) or path in templates["refs"]:
        return True
    return any(path.startswith(f"{whole}.") for whole in templates["toYaml"])


def _config(tag: str, **kai: Any) -> StackConfig:
    gpu_mode = "device-plugin" if kai.pop("real_gpus", False) else "fake"
    raw = {
        "cluster": {"provider": "kind", "nodePools": [{"name": "gpu", "gpus": 2, "taints": [
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}]},
        "gpu": {"mode": gpu_mode},
        "queues": [{"name": "q"}],
        "kai": {"version": tag, **kai},
    }  # fmt: skip
    return parse_config(raw, source="test")


def _variants(tag: str) -> list[StackConfig]:
    tag_tuple = tuple(int(p) for p in tag[1:].split("."))
    configs = [_config(tag), _config(tag, real_gpus=True, runtimeClassName="nvidia-cdi")]
    if tag_tuple >= (0, 16, 0):
        configs.append(_config(tag, queueLabelKey="team.example.com/queue"))
    if tag_tuple >= (0, 17, 0):
        configs.append(_config(tag, real_gpus=True, sharing="isolated"))
    return configs


@pytest.mark.parametrize("tag", list(versions.KAI_CHARTS))
def test_every_value_kaistack_writes_is_read_by_that_versions_chart(tag: str) -> None:
    unknown = {
        path for config in _variants(tag) for path in leaf_paths(kai_values(config)) if not read_by_chart(tag, path)
    }
    assert unknown == set()


def test_the_check_rejects_a_key_the_chart_does_not_have() -> None:
    """Guards the test above: a made-up key and a key from a later version are caught."""
    assert not read_by_chart("v0.17.0", "binder.notAKey")
    assert not read_by_chart("v0.15.3", "admission.gpuFractionRuntimeClassName")  # renamed in v0.16.0
    assert read_by_chart("v0.16.0", "admission.gpuFractionRuntimeClassName")
    assert read_by_chart("v0.17.0", "binder.plugins.hamicore.enabled")  # passed whole (toYaml)


def test_the_v0_17_0_values_file_is_the_one_the_schema_tests_use() -> None:
    shipped = (
        Path(__file__).resolve().parents[1] / "data" / "schemas" / "kai-scheduler-values-v0.17.0.yaml"
    ).read_text()
    assert yaml.safe_load(shipped) == chart_values("v0.17.0")


@pytest.mark.parametrize(("tag", "numbers"), [("v0.9.10", (0, 9, 10)), ("v0.17.0", (0, 17, 0)), ("v1.0.2", (1, 0, 2))])
def test_a_release_tag_compares_by_its_numbers_not_its_text(tag: str, numbers: tuple[int, int, int]) -> None:
    # "v0.9.10" < "v0.17.0" as numbers, not as strings: every "needs vX.Y.Z" rule compares these.
    assert versions.kai_tag(tag) == numbers


@pytest.mark.parametrize("tag", ["0.17.0", "v0.17", "v0.17.0-rc.1", "v0.\u0661\u0667.0", "v0.17.0\n"])
def test_a_string_that_is_not_a_release_tag_is_refused_by_name(tag: str) -> None:
    with pytest.raises(ValueError, match="not a KAI release tag"):
        versions.kai_tag(tag)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("v0.16.0", "v0.17.0"),
        ("v0.9.9", "v0.17.0"),  # numbers, not text
        ("0.36.1", "0.37.0-rc.1"),
        ("0.37.0-rc.1", "0.37.0"),  # a pre-release before its release (semver 11)
        ("0.37.0-rc.2", "0.37.0-rc.10"),
        ("0.37.0-10", "0.37.0-rc.1"),  # numeric identifiers before alphanumeric ones
        ("v25.10.0", "v26.7.0"),
    ],
)
def test_release_order_is_semver_order(older, newer):
    assert versions.release_order(older) < versions.release_order(newer)


@pytest.mark.parametrize("value", ["ghcr.io/acme/infer:1.4.2", "latest", "1.4", "sha256:abc", "v1.2.3.4"])
def test_release_order_leaves_what_is_not_a_release_version(value):
    assert versions.release_order(value) is None
