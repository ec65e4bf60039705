"""`kaistack check --stack NAME`: will the declared workloads fit the declared capacity, and where?"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kaistack.cli.args import add_project_argument, load
from kaistack.cli.output import print_json, refuse

DESCRIPTION = """\
Simulates KAI v0.17's scheduling cycle (allocate, consolidation, reclaim, preempt) on the stack's
declaration until nothing changes: node pools as nodes, the queue tree including KAI's default
queues, and every workload expanded into the pods KAI would see (Deployment pods one PodGroup each,
PyTorchJob gangs, tenant pods as bare pods (train unless priorityClass is set), default priority per
kind on the host). Reports per queue its quota, limit, fair share and allocation; per node and GPU
what lands there; and for every workload that would stay Pending, why, in KAI's terms. No cluster is
needed.
"""

EPILOG = """\
examples:
  kaistack check --stack dev
  kaistack check --stack prod --json | jq '.workloads[] | select(.status != "Running")'
  kaistack check --stack dev --markdown > capacity.md      # for a PR comment
  kaistack check --stack dev --html capacity.html          # GPUs drawn with their fractions

On a terminal, stderr shows the scheduling cycle's progress (each action, and every 5 s where it is).

exit codes: 0 every workload is placed, 1 some workload would stay Pending (or --max-seconds stopped the
  simulation: "partial": true), 2 bad config or stack, 3 the environment: an existing cluster whose nodes
  the stack leaves to it cannot be read, or an output file cannot be written
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check",
        help="will the declared workloads fit the declared GPUs? (KAI simulated, offline)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stack", "-s", required=True, help="stack name (reads Pulumi.<stack>.yaml)")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the report as JSON")
    form.add_argument("--markdown", action="store_true", help="print the report as Markdown (PR comment)")
    parser.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write a self-contained HTML page to FILE (`-`: to stdout, instead of the text report)",
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        metavar="S",
        help="stop the simulation after about S seconds; the verdict is then partial (exit 1)",
    )
    add_project_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kaistack.declaration.parse import ConfigError

    try:
        config = load(args).config
    except ConfigError as err:
        return refuse(args, err, int(err.exit_code))

    from kaistack.capacity.check import check
    from kaistack.capacity.report import to_json, to_markdown, to_text

    if args.max_seconds is not None and not args.max_seconds > 0:
        return refuse(args, "kaistack check: --max-seconds: must be a positive number of seconds", 2)
    html_to_stdout = args.html is not None and _is_stdout(args.html)
    if html_to_stdout and (args.json or args.markdown):
        # One stream, two documents: the JSON or the PR comment would not parse (or would carry the whole page).
        other = "--json" if args.json else "--markdown"
        clash = f"kaistack check: --html {args.html} and {other} both write to stdout; give --html a file"
        return refuse(args, clash, 2)
    from kaistack.cli.sim_progress import simulation_progress
    from kaistack.progress import Progress

    report = check(config, args.stack, max_seconds=args.max_seconds, simulation=simulation_progress(Progress.for_cli()))
    if args.html is not None:
        from kaistack.capacity.html import to_html
        from kaistack.ops.safe_write import write_generated

        if html_to_stdout:
            print(to_html(report), end="")
            return 0 if report.ok else 1
        write_generated(args.html, to_html(report))  # WriteFailed: exit 3, the old page whole
    if args.json:
        print_json(to_json(report))
    elif args.markdown:
        print(to_markdown(report))
    else:
        print(to_text(report))
        if args.html is not None:
            print(f"\nwrote {args.html}")
    return 0 if report.ok else 1


def _is_stdout(path: Path) -> bool:
    """`-`, or a path that is this process's stdout (/dev/stdout, /proc/self/fd/1, the file it is redirected to)."""
    if str(path) in ("-", "/dev/stdout"):
        return True
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):  # no such file yet, or a stdout with no descriptor (tests)
        return False
