"""Small kubectl-shaped dumps for `kaistack diagnose` tests: a node, a queue, priority classes, PodGroups and pods of
namespace ml in queue q, and the --json report's pending pods by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.cli import main

DUMPS = Path(__file__).resolve().parents[1] / "data" / "dumps"


def node(name: str = "n1", gpus: int = 1, **allocatable: str) -> dict[str, Any]:
    alloc = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": str(gpus), **allocatable}
    return {"kind": "Node", "metadata": {"name": name, "labels": {}}, "status": {"allocatable": alloc}}


def queue(name: str = "q", gpu_quota: int = -1, gpu_limit: int = -1) -> dict[str, Any]:
    free = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    gpu = {"quota": gpu_quota, "limit": gpu_limit, "overQuotaWeight": 1}
    resources = {"cpu": free, "memory": free, "gpu": gpu}
    return {"kind": "Queue", "metadata": {"name": name}, "spec": {"resources": resources}}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def pod_group(
    name: str, minute: int, klass: str = "train", annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    """A PodGroup of one pod in queue q, created `minute` minutes past 10:00 (KAI orders jobs by age)."""
    metadata = {"name": name, "namespace": "ml", "creationTimestamp": f"2026-11-25T10:{minute:02d}:00Z"}
    return {
        "kind": "PodGroup",
        "metadata": {**metadata, **({"annotations": annotations} if annotations else {})},
        "spec": {"minMember": 1, "queue": "q", "priorityClassName": klass, **spec},
    }


def pod(
    name: str,
    group: str,
    node: str | None = None,
    requests: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A pod of PodGroup `group` asking for `requests` (one GPU by default), Running on `node` or Pending."""
    asks = {"cpu": "1", "memory": "1Gi", **({"nvidia.com/gpu": "1"} if requests is None else requests)}
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "creationTimestamp": "2026-11-25T10:00:00Z",
            "labels": labels or {},
            "annotations": {"pod-group-name": group, **(annotations or {})},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "priority": 0,
            "containers": [{"name": "c", "resources": {"requests": asks}}],
            **({"nodeName": node} if node else {}),
            **spec,
        },
        "status": {"phase": "Running" if node else "Pending"},
    }


def diagnose_pending(items: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """The --json report's pending pods by name."""
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    main(["diagnose", "--from-dump", str(dump), "--at", "2026-11-25T12:00:00Z", "--json"])
    report = json.loads(capsys.readouterr().out)
    return {p["pod"]: p for p in report["pending"]}


def healthy_dump_mistakes(
    code: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], *objects: dict[str, Any]
) -> list[dict[str, Any]]:
    """The --json report's mistakes of `code` for tests/data/dumps/healthy.yaml with `objects` added."""
    dump = yaml.safe_load((DUMPS / "healthy.yaml").read_text())
    dump["items"].extend(objects)
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump))
    main(["diagnose", "--from-dump", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    return [m for m in report["mistakes"] if m["code"] == code]


def shared_gpu_pod(
    name: str,
    container: dict[str, Any],
    group: str,
    annotations: dict[str, str],
    node: str | None = "gpu-0",
    phase: str | None = None,
) -> dict[str, Any]:
    """One of KAI's pods of namespace ml and queue test, holding GPU group `group` (its runai-gpu-group label) on
    `node`: Running there, or Pending without a node, unless `phase` says otherwise."""
    spec: dict[str, Any] = {"schedulerName": "kai-scheduler", "containers": [container]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "labels": {"kai.scheduler/queue": "test", "runai-gpu-group": group},
            "annotations": {"pod-group-name": f"pg-{name}", **annotations},
        },
        "spec": spec,
        "status": {"phase": phase or ("Running" if node else "Pending")},
    }
