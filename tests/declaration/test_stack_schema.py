"""`kaistack schema`: the stack file's JSON Schema, generated from the model, shipped and kept in sync."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kaistack.cli import main
from kaistack.declaration.schema import MODELINE, SCHEMA_PATH, schema_text, stack_schema

ROOT = Path(__file__).resolve().parents[2]
STACKS = ("dev", "staging", "prod")


def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(stack_schema())


def _stack_document(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / f"Pulumi.{name}.yaml").read_text())


def test_shipped_schema_is_the_generated_one() -> None:
    """schema/stack.schema.json is regenerated with `kaistack schema --output schema/stack.schema.json`."""
    assert (ROOT / SCHEMA_PATH).read_text() == schema_text()


def test_check_flag_reports_an_out_of_date_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "stack.schema.json"
    stale.write_text("{}\n")
    assert main(["schema", "--check", str(stale)]) == 1
    assert "out of date" in capsys.readouterr().out


def test_output_flag_writes_what_check_accepts(tmp_path: Path) -> None:
    target = tmp_path / "stack.schema.json"
    assert main(["schema", "--output", str(target)]) == 0
    assert main(["schema", "--check", str(target)]) == 0


def test_every_property_has_a_description() -> None:
    """Editors show the description on hover; each says what the key is and its unit."""
    missing: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, prop in (node.get("properties") or {}).items():
                if not prop.get("description"):
                    missing.append(f"{path}.{key}")
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for item in node:
                walk(item, path)

    walk(stack_schema(), "")
    assert missing == []


@pytest.mark.parametrize("name", STACKS)
def test_repository_stack_files_satisfy_the_schema(name: str) -> None:
    assert [e.message for e in _validator().iter_errors(_stack_document(name))] == []


@pytest.mark.parametrize("name", STACKS)
def test_stack_files_point_editors_at_the_schema(name: str) -> None:
    assert (ROOT / f"Pulumi.{name}.yaml").read_text().splitlines()[0] == MODELINE


def test_a_misspelt_key_fails_the_schema() -> None:
    """Unknown keys are errors in the model; the schema says so to the editor as well."""
    document = _stack_document("dev")
    bad = copy.deepcopy(document)
    bad["config"]["kaistack:cluster"]["nodePool"] = []
    messages = [e.message for e in _validator().iter_errors(bad)]
    assert any("nodePool" in m for m in messages)


def test_quantity_defaults_are_written_as_stack_file_text() -> None:
    pool = stack_schema()["$defs"]["NodePool"]["properties"]
    assert (pool["cpu"]["default"], pool["memory"]["default"]) == ("8", "32Gi")


def test_queue_quota_accepts_a_number_or_a_quantity_string() -> None:
    document = _stack_document("dev")
    document["config"]["kaistack:queues"] = [
        {"name": "q", "resources": {"memory": {"quota": "16Gi"}, "cpu": {"quota": 4000}}}
    ]
    assert list(_validator().iter_errors(document)) == []


def test_schema_output_is_json() -> None:
    assert json.loads(schema_text())["title"].startswith("kaistack stack file")
