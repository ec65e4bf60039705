"""What every command prints for machines: strict JSON (RFC 8259), never `NaN` or `Infinity`.

`json.dumps` writes `NaN`/`Infinity` for non-finite floats by default, which no JSON parser but
Python's accepts. Inputs are checked finite while loading (kaistack.declaration.yaml_load), so a
non-finite number here is a bug: `allow_nan=False` turns it into an internal error, never bad output.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def dumps(value: Any, *, compact: bool = False) -> str:
    if compact:
        return json.dumps(value, allow_nan=False, separators=(",", ":"))
    return json.dumps(value, allow_nan=False, indent=2)


def print_json(value: Any, *, compact: bool = False) -> None:
    """The whole document is built before anything is written, so a failure prints nothing half-done."""
    text = dumps(value, compact=compact)
    sys.stdout.write(text + "\n")


def refuse(args: Any, message: object, code: int) -> int:
    """A command that stops on bad input or its environment: `message` on stderr and, under --json, a document on
    stdout too ({"ok": false, "exitCode", "error"}), so a machine reading stdout never gets an empty stream."""
    text = str(message)
    print(text, file=sys.stderr)
    if getattr(args, "json", False):
        print_json({"ok": False, "exitCode": int(code), "error": text})
    return int(code)
