"""`kaistack validate --stack NAME`: render + policy pack + capacity, offline, in one report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kaistack.cli.args import add_project_argument, project_dir
from kaistack.cli.output import print_json, refuse

DESCRIPTION = """\
Validate a stack without an engine, a cluster or cloud credentials: render the Pulumi program under
mocks, run the policy pack over every resource through the Analyzer protocol (as `pulumi preview
--policy-pack policies` would, every policy MANDATORY), and run the placement checker on the
declared workloads. Passes only with no violation and capacity that fits.

Progress goes to stderr when it is a terminal (KAISTACK_PROGRESS=1/0 forces it on/off); the report
goes to stdout.
"""

EPILOG = """\
examples:
  kaistack validate --stack dev                     text report
  kaistack validate --stack staging --json          machine-readable (resources, violations, capacity)
  kaistack validate --stack prod --markdown >> pr-comment.md   a section for a sticky PR comment
  kaistack validate --stack prod --max-seconds 120  a capacity simulation that may take long, bounded

exit codes: 0 all pass, 1 policy violations, capacity failure or a step that could not run,
            2 invalid stack config or unknown stack,
            3 the environment: an existing cluster whose nodes the stack leaves to it cannot be read
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="render + policies + capacity for a stack, offline",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stack", "-s", required=True, help="stack name (Pulumi.<stack>.yaml)")
    add_project_argument(parser)
    parser.add_argument("--policy-pack", type=Path, default=None, help="policy pack directory (default: policies/)")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        metavar="S",
        help="stop the capacity simulation after about S seconds; the verdict is then partial (exit 1)",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the report as JSON")
    output.add_argument("--markdown", action="store_true", help="print the report as Markdown (PR comment)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kaistack.declaration.parse import ConfigError
    from kaistack.markdown import code, fence
    from kaistack.ops.validate import validate_stack
    from kaistack.progress import Progress

    if args.max_seconds is not None and not args.max_seconds > 0:
        return refuse(args, "kaistack validate: --max-seconds: must be a positive number of seconds", 2)
    pack = args.policy_pack
    if pack is not None and not (pack / "__main__.py").is_file():
        return refuse(args, f"kaistack validate: --policy-pack {pack}: no policy pack there (no __main__.py)", 2)
    try:
        project = project_dir(args)
        report = validate_stack(
            project, args.stack, progress=Progress.for_cli(), pack_dir=pack, max_seconds=args.max_seconds
        )
    except ConfigError as err:
        if args.markdown:
            print(
                f"<!-- kaistack-validate:{args.stack} -->\n### ❌ {code(args.stack)}: invalid config\n\n{fence(err)}\n"
            )
        elif args.json:
            # The refusal document every command prints ({"ok", "exitCode", "error"}), with the problems one each.
            document = {
                "stack": args.stack,
                "ok": False,
                "exitCode": int(err.exit_code),
                "error": f"kaistack validate: {err}",
            }
            print_json({**document, "configErrors": err.problems})
        print(f"kaistack validate: {err}", file=sys.stderr)
        return int(err.exit_code)
    if args.json:
        print_json(report.as_dict())
    elif args.markdown:
        print(report.to_markdown())
    else:
        print(report.to_text())
    return 0 if report.ok else 1
