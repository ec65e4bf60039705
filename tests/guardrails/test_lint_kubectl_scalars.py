"""`kaistack lint` reads a manifest's plain scalars as kubectl does, with go-yaml v2, not by PyYAML's YAML 1.1.

kubectl turns YAML into JSON with sigs.k8s.io/yaml, go-yaml v2 underneath (go-yaml/yaml@v2.4.0 resolve.go:86-200):
no base 60, `y`/`n` are booleans, `1e3` and `5e-1` numbers, a date stays its text (decode.go:474-480). A review found
`window: 10:30` refused as PyYAML's 630 though kubectl sends "10:30".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kaistack.guardrails.facts import StackFacts
from kaistack.ops.lint import lint_paths


def _lint_annotation(tmp_path: Path, value: str) -> list[str]:
    path = tmp_path / "pod.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\n"
        f"metadata:\n  name: p\n  namespace: ml\n  annotations:\n    note: {value}\n"
        "spec: {containers: [{name: m, image: x}]}\n"
    )
    return [e.message for e in lint_paths([str(path)], StackFacts()).errors]


@pytest.mark.parametrize("value", ["10:30", "2024-01-01", "2024-01-01T10:00:00Z", "0o17x", "'5e-1'"])
def test_a_plain_value_kubectl_reads_as_text_is_text(tmp_path: Path, value: str) -> None:
    assert _lint_annotation(tmp_path, value) == []


@pytest.mark.parametrize(
    ("value", "read"), [("y", "bool True"), ("5e-1", "float 0.5"), ("1e3", "float 1000.0"), ("0o17", "int 15")]
)
def test_a_plain_value_kubectl_reads_as_no_string_is_refused_as_kubectl_would(
    tmp_path: Path, value: str, read: str
) -> None:
    [error] = _lint_annotation(tmp_path, value)
    assert f"metadata.annotations.note: {read}; expected a string" in error
