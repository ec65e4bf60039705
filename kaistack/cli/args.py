"""One module per `kaistack` subcommand.

Each module exposes `register(subparsers)`, which adds its parser and sets `func` to a callable
`(argparse.Namespace) -> int` (the exit code). Modules import nothing heavy (pulumi, grpc) at import
time, so `kaistack --help` and `kaistack simulate` stay fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path


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
