"""Arguments every stack command shares (`--stack`, `--project`) and loading the stack they name.

Each command module exposes `register(subparsers)`, which adds its parser and sets `func` to a
callable `(argparse.Namespace) -> int` (the exit code). Modules import nothing heavy (pulumi, grpc)
at import time, so `kaistack --help` and `kaistack simulate` stay fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kaistack.stack.load import LoadOptions, ResolvedStack


def add_project_argument(parser: argparse.ArgumentParser) -> None:
    """`--project DIR`, the same on every command that reads stack files."""
    parser.add_argument(
        "--project",
        type=Path,
        metavar="DIR",
        default=None,
        help="project directory (default: nearest with Pulumi.yaml)",
    )


def project_dir(args: argparse.Namespace) -> Path:
    """`--project` resolved, else the nearest directory with Pulumi.yaml (ConfigError when none)."""
    from kaistack.stack.files import find_project_dir

    return args.project.resolve() if args.project is not None else find_project_dir()


def load(args: argparse.Namespace, options: LoadOptions | None = None) -> ResolvedStack:
    """The stack `--stack` names, through the one load path; what resolution did goes to stderr."""
    from kaistack.stack.load import load_stack

    stack = load_stack(project_dir(args), args.stack, options)
    for note in stack.notes:
        print(f"note: {note}", file=sys.stderr)
    return stack
