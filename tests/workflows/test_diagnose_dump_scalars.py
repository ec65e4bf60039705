"""A YAML dump is read as kubectl wrote it: go-yaml v2 (sigs.k8s.io/yaml JSONToYAML) leaves a string unquoted
unless v2 itself would read it as another type (go-yaml/yaml@v2.4.0:encode.go:318-322, `resolve("", s)` and
isBase60Float), so its plain scalars must be read by v2's rules, not YAML 1.1's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kaistack.cli import main

DUMP = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-1
  status:
    allocatable:
      cpu: "64"
      memory: 512Gi
      nvidia.com/gpu: "8"
      pods: "110"
- apiVersion: scheduling.run.ai/v2
  kind: Queue
  metadata:
    name: q
  spec:
    resources:
      gpu: {quota: -1, limit: -1, overQuotaWeight: 1}
      cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
      memory: {quota: -1, limit: -1, overQuotaWeight: 1}
- apiVersion: scheduling.run.ai/v2alpha2
  kind: PodGroup
  metadata:
    name: pg
    namespace: ml
  spec:
    queue: q
- apiVersion: v1
  kind: Pod
  metadata:
    annotations:
      example.com/operator: {annotation}
      pod-group-name: pg
    name: {name}
    namespace: ml
  spec:
    schedulerName: kai-scheduler
    containers:
    - name: c
      image: x
      resources:
        limits:
          nvidia.com/gpu: "1"
  status:
    phase: Pending
"""


def _diagnose(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, Any]:
    dump = tmp_path / "dump.yaml"
    dump.write_text(text)
    code = main(["diagnose", "--from-dump", str(dump), "--at", "2026-11-25T12:00:00Z", "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else captured.err


def test_an_unquoted_equals_sign_as_kubectl_writes_it_is_read_as_text(tmp_path, capsys):
    """YAML 1.1 resolves a plain `=` to the `value` tag, which no loader constructs: the whole dump was refused."""
    code, report = _diagnose(tmp_path, capsys, DUMP.replace("{annotation}", "=").replace("{name}", "p"))
    assert code == 1, report  # the dump is read: its one pending pod is reported
    assert [p["pod"] for p in report["pending"]] == ["ml/p"]


def test_a_plain_scalar_yaml_1_1_reads_as_a_number_stays_the_pods_text(tmp_path, capsys):
    """`.1_` is text to go-yaml v2 (its float pattern has no underscore after the digits) and 0.1 to YAML 1.1."""
    code, report = _diagnose(tmp_path, capsys, DUMP.replace("{annotation}", "x").replace("{name}", ".1_"))
    assert code == 1, report
    assert [p["pod"] for p in report["pending"]] == ["ml/.1_"]
