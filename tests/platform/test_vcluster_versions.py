"""Each vCluster chart a tenant may pick gets values that chart accepts, and nothing else is accepted.

The charts are loft-sh/vcluster@v0.36.1 (stable, pinned) and loft-sh/vcluster@v0.37.0-rc.1 (the newest
line, a release candidate): chart/values.schema.json and chart/values.yaml of each are copied into
tests/data/schemas/.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from platform_testlib import RELEASE, SCHEMAS, base_raw, inputs, of_type, run_program, validate_vcluster_values
from pydantic import ValidationError

from kaistack.declaration import versions
from kaistack.declaration.model import StackConfig

VERSIONS = sorted(versions.VCLUSTER_VERSIONS)


def _stack(version: str) -> dict[str, Any]:
    raw = base_raw()
    raw["tenants"] = [
        {"name": "t1", "queues": [raw["queues"][-1]["name"]], "vcluster": {"version": version, "syncNodes": True}},
        {"name": "t2", "queues": [raw["queues"][-1]["name"]], "vcluster": {"version": version}},
    ]
    return raw


@pytest.mark.parametrize("version", VERSIONS)
def test_tenant_values_validate_against_the_schema_of_the_chosen_vcluster_chart(mocks, version: str) -> None:
    run_program(mocks, _stack(version))
    releases = [inputs(r) for r in of_type(mocks.resources, RELEASE) if inputs(r)["chart"] == "vcluster"]
    assert len(releases) == 2
    for release in releases:
        assert release["version"] == version
        validate_vcluster_values(release["values"], version)


def test_a_vcluster_version_not_checked_at_source_is_refused_naming_the_supported_ones() -> None:
    raw = _stack("0.38.0")
    with pytest.raises(
        ValidationError,
        match=r"'0.38.0' is not a vCluster chart kaistack has checked at source; "
        r"supported: 0.36.1 \(stable\), 0.37.0-rc.1 \(pre-release of the 0.37 line\)",
    ):
        StackConfig.model_validate(raw)


def _schema_at(schema: dict[str, Any], path: list[str]) -> Any:
    """The subschema of a values path, following $refs into $defs."""
    node = schema
    for key in path:
        while "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        node = node["properties"][key]
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


# The keys whose meaning the platform depends on: pods synced without owner references (KAI's
# pod-grouper must not follow them), the virtual scheduler off (the host's KAI schedules), quota and
# limit range rendered by the chart.
CRITICAL = [
    ["experimental", "syncSettings", "setOwner"],
    ["controlPlane", "advanced", "virtualScheduler", "enabled"],
    ["sync", "toHost", "pods", "enabled"],
    ["sync", "fromHost", "nodes", "enabled"],
    ["policies", "resourceQuota", "enabled"],
    ["policies", "limitRange", "enabled"],
]


@pytest.mark.parametrize("path", CRITICAL, ids=lambda p: ".".join(p))
def test_the_keys_kaistack_relies_on_mean_the_same_in_every_supported_chart(path: list[str]) -> None:
    schemas = [json.loads((SCHEMAS / f"vcluster-values.schema-{v}.json").read_text()) for v in VERSIONS]
    fragments = [_schema_at(s, path) for s in schemas]
    assert all(f == fragments[0] for f in fragments)


def test_the_chart_defaults_tenant_sizing_reads_are_the_same_in_every_supported_chart() -> None:
    """Tenant quota sizing (kaistack.declaration.tenant_sizing) reads the 0.36.1 defaults; 0.37 keeps them."""
    values = [yaml.safe_load((SCHEMAS / f"vcluster-values-{v}.yaml").read_text()) for v in VERSIONS]
    for key in ("resourceQuota", "limitRange"):
        assert all(v["policies"][key] == values[0]["policies"][key] for v in values)
    assert all(
        v["controlPlane"]["statefulSet"]["resources"] == values[0]["controlPlane"]["statefulSet"]["resources"]
        for v in values
    )
