"""The JSON Schema of a stack file (`Pulumi.<stack>.yaml`), generated from the model.

Editors that speak the yaml-language-server protocol (VS Code's YAML extension, JetBrains, Neovim)
complete and check `kaistack:` keys with it: each stack file carries a
`# yaml-language-server: $schema=schema/stack.schema.json` modeline. The repository ships the
generated file (`kaistack schema > schema/stack.schema.json`; a test keeps it in sync).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from kaistack.declaration.model import StackConfig
from kaistack.declaration.parse import NAMESPACE
from placement.quantity import Quantity

SCHEMA_PATH = "schema/stack.schema.json"
MODELINE = f"# yaml-language-server: $schema={SCHEMA_PATH}"
# A `pulumi config set --secret` value: Pulumi stores it as {secure: <ciphertext>}.
_SECRET = {
    "type": "object",
    "properties": {"secure": {"type": "string", "description": "Ciphertext written by pulumi config set --secret"}},
    "required": ["secure"],
    "additionalProperties": False,
}


class _Generator(GenerateJsonSchema):
    """Writes quantity defaults as the text a stack file would carry ("8", "32Gi")."""

    def encode_default(self, dft: Any) -> Any:
        if isinstance(dft, Quantity):
            return str(dft)
        return super().encode_default(dft)


def stack_schema() -> dict[str, Any]:
    """The schema of a whole stack file: Pulumi's own keys, and `config` with the six `kaistack:` keys."""
    model = StackConfig.model_json_schema(by_alias=True, mode="validation", schema_generator=_Generator)
    defs: dict[str, Any] = model.pop("$defs", {})
    _allow_secret(defs, "ExistingSettings", "kubeconfig")
    config_props = {
        f"{NAMESPACE}:{key}": {**prop, "description": prop.get("description", "")}
        for key, prop in model["properties"].items()
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/kaistack/kaistack/schema/stack.schema.json",
        "title": "kaistack stack file (Pulumi.<stack>.yaml)",
        "description": (
            "A Pulumi stack file whose `config` declares one kaistack platform under the `kaistack:` keys. "
            "Units: GPUs as counts or fractions, CPU as Kubernetes quantities in cores ('500m', '4'), memory as "
            "quantities ('16Gi'); queue resources in KAI's Queue CRD units (cpu millicores, memory MB) or "
            "quantity strings."
        ),
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "description": "Stack configuration; other namespaces (aws:, kubernetes:) are Pulumi's own",
                "properties": config_props,
                "required": [f"{NAMESPACE}:{key}" for key in model.get("required", [])],
                "additionalProperties": True,
            },
            "secretsprovider": {"type": "string", "description": "Pulumi secrets provider of this stack"},
            "encryptedkey": {"type": "string", "description": "Pulumi: the stack's encrypted data key"},
            "encryptionsalt": {"type": "string", "description": "Pulumi: passphrase secrets salt"},
            "environment": {"description": "Pulumi ESC environments imported by this stack"},
        },
        "required": ["config"],
        "additionalProperties": True,
        "$defs": defs,
    }


def _allow_secret(defs: dict[str, Any], model: str, field: str) -> None:
    prop = defs[model]["properties"][field]
    defs[model]["properties"][field] = {"description": prop.get("description", ""), "anyOf": [prop, _SECRET]}


def schema_text() -> str:
    """The schema as the repository ships it: sorted keys, two-space indent, final newline."""
    return json.dumps(stack_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
