"""Arguments every stack command shares (`--stack`, `--project`) and loading the stack they name.

Each command module exposes `register(subparsers)`, which adds its parser and sets `func` to a
callable `(argparse.Namespace) -> int` (the exit code). Modules import nothing heavy (pulumi, grpc)
at import time, so `kaistack --help` and `kaistack simulate` stay fast.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kaistack.stack.load import LoadOptions, ResolvedStack


def seconds(low: float, high: float, *, above: bool) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds in (low, high] when `above`, else [low, high]; nan, inf and
    the rest are usage errors (exit 2), not a loop that never ends or a timer that cannot be set."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        ok = math.isfinite(value) and (value > low if above else value >= low) and value <= high
        if not ok:
            bound = f"above {low:g}" if above else f"at least {low:g}"
            raise argparse.ArgumentTypeError(f"{text!r}: must be {bound} and at most {high:g} seconds")
        return value

    return parse


def add_request_timeout(parser: argparse.ArgumentParser, default: float | None = 10.0) -> None:
    """`--timeout SECONDS` for each Kubernetes API request, the same on every command that reads a cluster (None:
    the command picks; the client's own default is 10)."""
    parser.add_argument(
        "--timeout", type=seconds(0, 600, above=True), default=default, help="seconds per API request (default 10)"
    )


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
