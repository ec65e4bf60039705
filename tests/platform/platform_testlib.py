"""Helpers for the platform tests: config factories, running the program, schema checks.

Imported by name (pytest puts this directory on sys.path; it has no __init__.py because a package
named `platform` would shadow the standard library module).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

from kaistack.ops.mocks import MockSession, RecordedResource, mask
from kaistack.stack.files import read_stack_config

PROJECT_DIR = Path(__file__).resolve().parents[2]
MAIN = PROJECT_DIR / "__main__.py"
SCHEMAS = PROJECT_DIR / "tests" / "data" / "schemas"
# The oldest host minor a repository stack runs (staging and prod on EKS 1.33), the newest (the kind node
# image and new EKS clusters, 1.35), and the staging/prod tenants' virtual API servers (1.36): an object must
# be valid on each.
K8S_VERSIONS = ("1.33.0", "1.35.0", "1.36.0")

RELEASE = "kubernetes:helm.sh/v3:Release"
QUEUE = "kubernetes:scheduling.run.ai/v2:Queue"
PYTORCHJOB = "kubernetes:kubeflow.org/v1:PyTorchJob"
COMMAND = "command:local:Command"
PROVIDER = "pulumi:providers:kubernetes"
# Built-in kinds validated against the Kubernetes OpenAPI schema; CRs have their own checks.
BUILTIN = {
    "kubernetes:core/v1:Namespace",
    "kubernetes:core/v1:Pod",
    "kubernetes:apps/v1:Deployment",
    "kubernetes:batch/v1:Job",
}


def dev_raw() -> dict[str, Any]:
    """The dev stack's `kaistack:` config, as `kaistack render --stack dev` reads it."""
    return read_stack_config(PROJECT_DIR, "dev")


def base_raw() -> dict[str, Any]:
    """A small valid kind stack: one fake-GPU pool, one queue, no tenants or workloads."""
    return {
        "cluster": {
            "provider": "kind",
            "name": "unit",
            # Room for every test workload, so the program's capacity gate (kai.capacityCheck) passes.
            "nodePools": [{"name": "gpu", "count": 2, "gpus": 4, "cpu": "16", "memory": "64Gi"}],
        },
        "gpu": {"mode": "fake"},
        "queues": [{"name": "team"}],
    }


def merged(raw: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A deep copy of `raw` with top-level keys replaced (None removes the key)."""
    result = copy.deepcopy(raw)
    for key, value in changes.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def run_program(session: MockSession, raw: dict[str, Any], secret: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run __main__.py with `raw` as the `kaistack:` config (`secret`: keys Pulumi marks secret); returns the
    program's globals."""
    session.set_config(raw, secret=secret)
    return session.run(MAIN)


def of_type(resources: list[RecordedResource], type_: str) -> list[RecordedResource]:
    return [r for r in resources if r.type == type_]


def named(resources: list[RecordedResource], name: str) -> RecordedResource:
    matches = [r for r in resources if r.name == name]
    assert len(matches) == 1, f"expected one resource named {name!r}, got {[r.urn for r in matches]}"
    return matches[0]


def inputs(resource: RecordedResource) -> dict[str, Any]:
    """Inputs with secrets masked and integral floats as ints (numbers arrive as floats)."""
    return mask(resource.inputs)


def release(resources: list[RecordedResource], chart_fragment: str) -> RecordedResource:
    matches = [r for r in of_type(resources, RELEASE) if chart_fragment in r.inputs["chart"]]
    assert len(matches) == 1, f"expected one release with chart ~ {chart_fragment!r}, got {len(matches)}"
    return matches[0]


def kube_object(resource: RecordedResource) -> dict[str, Any]:
    """The Kubernetes object a recorded resource declares (apiVersion, kind, metadata, spec)."""
    values = inputs(resource)
    return {k: values[k] for k in ("apiVersion", "kind", "metadata", "spec") if k in values}


# --- schemas --------------------------------------------------------------------------------------


def validate_builtin(obj: dict[str, Any]) -> None:
    """Strict Kubernetes OpenAPI validation (unknown fields fail) at every minor in K8S_VERSIONS."""
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(obj, version, strict=True)


def validate_pod_template(template: dict[str, Any]) -> None:
    """A pod template (e.g. inside a PyTorchJob) validated as a v1 PodTemplate object."""
    validate_builtin({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": template})


def pruning(schema: Any) -> Any:
    """A CRD's structural schema with unknown fields refused: the API server drops a field the schema does not
    declare (and says nothing), so a misspelled or renamed field that plain JSON Schema lets through would be lost.
    Objects that keep unknown fields (x-kubernetes-preserve-unknown-fields) or declare additionalProperties stay."""
    if isinstance(schema, list):
        return [pruning(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    pruned = {k: pruning(v) for k, v in schema.items()}
    keeps_unknown = "additionalProperties" in pruned or pruned.get("x-kubernetes-preserve-unknown-fields")
    if "properties" in pruned and not keeps_unknown:
        pruned["additionalProperties"] = False
    return pruned


@cache
def queue_schema() -> dict[str, Any]:
    crd = yaml.safe_load((SCHEMAS / "scheduling.run.ai_queues.yaml").read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v2")
    return pruning(version["schema"]["openAPIV3Schema"])


def validate_queue(obj: dict[str, Any]) -> None:
    jsonschema.validate(obj, queue_schema())


@cache
def vcluster_schema(version: str = "0.36.1") -> dict[str, Any]:
    return json.loads((SCHEMAS / f"vcluster-values.schema-{version}.json").read_text())


def validate_vcluster_values(values: dict[str, Any], version: str = "0.36.1") -> None:
    jsonschema.Draft202012Validator(vcluster_schema(version)).validate(values)


@cache
def chart_values(filename: str) -> dict[str, Any]:
    return yaml.safe_load((SCHEMAS / filename).read_text())


def unknown_value_keys(
    values: dict[str, Any], defaults: Any, maps: frozenset[str] = frozenset(), extra: frozenset[str] = frozenset()
) -> list[str]:
    """Keys set in `values` that the chart's values.yaml does not have.

    `maps` are paths whose value is a free-form map (pool names, plugin names...); `extra` are keys a
    chart template reads although values.yaml leaves them out. Lists are not entered.
    """
    problems: list[str] = []

    def walk(value: Any, default: Any, path: str) -> None:
        for key, child in value.items():
            where = f"{path}.{key}" if path else key
            if where in extra or where in maps:
                continue
            if not isinstance(default, dict) or key not in default:
                problems.append(where)
                continue
            if isinstance(child, dict):
                if isinstance(default[key], dict):
                    walk(child, default[key], where)
                elif default[key] is not None:
                    problems.append(f"{where} (a mapping where the chart has {default[key]!r})")

    walk(values, defaults, "")
    return problems
