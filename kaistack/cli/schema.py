"""`kaistack schema`: the JSON Schema of a stack file, generated from the model (editor completion)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EPILOG = """\
examples:
  kaistack schema                                 print the schema of Pulumi.<stack>.yaml
  kaistack schema --output schema/stack.schema.json
  kaistack schema --check schema/stack.schema.json   exit 1 when the file is out of date (CI)

Stack files point editors at it with the first line
  # yaml-language-server: $schema=schema/stack.schema.json
exit codes: 0 ok, 1 --check found the file out of date or could not read it, 3 the file cannot be written
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of a stack file (for editors)",
        description="The JSON Schema of Pulumi.<stack>.yaml, generated from kaistack's model.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--output", type=Path, metavar="FILE", help="write the schema to FILE")
    where.add_argument("--check", type=Path, metavar="FILE", help="exit 1 unless FILE holds the current schema")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kaistack.declaration.schema import schema_text
    from kaistack.errors import ExitCode

    text = schema_text()
    if args.check is not None:
        from kaistack.declaration import limits
        from kaistack.declaration.yaml_load import YamlInputError, read_text

        try:
            current = read_text(args.check, max_bytes=limits.MAX_SMALL_FILE_BYTES, what="schema file")
        except YamlInputError as err:
            print(f"kaistack schema: cannot read {err}", file=sys.stderr)
            return ExitCode.FINDINGS
        if current != text:
            print(f"kaistack schema: {args.check} is out of date; run: kaistack schema --output {args.check}")
            return ExitCode.FINDINGS
        print(f"{args.check} is up to date")
        return ExitCode.OK
    if args.output is not None:
        from kaistack.ops.safe_write import write_generated

        write_generated(args.output, text)  # WriteFailed: exit 3, the old file whole
        return ExitCode.OK
    sys.stdout.write(text)
    return ExitCode.OK
