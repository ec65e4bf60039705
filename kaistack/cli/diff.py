"""`kaistack diff --stack NAME --base REF`: what a change to the stack does to capacity."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kaistack.cli.args import add_project_argument, load, project_dir
from kaistack.cli.output import print_json
from kaistack.errors import InputError

if TYPE_CHECKING:
    from kaistack.capacity.check import CapacityReport
    from kaistack.declaration.model import StackConfig

DESCRIPTION = """\
Runs the placement checker on the stack as it is and as it was (a git revision, or another file) and
reports what the change does: workloads newly Pending (with KAI's reason), running workloads KAI
would reclaim or preempt to make room, workloads newly placed or moved, and per queue the change in
GPUs allocated and fair share. It also names what `pulumi up` of the change would delete, replace or fail
on: a tenant's vCluster and its data, a moved or taken kind NodePort, a replaced KAI, GPU stack, kind
cluster or EKS node group, the whole cluster when the provider changes, a running Job restarted. No
cluster is needed.
"""

EPILOG = """\
examples:
  kaistack diff --stack dev --base origin/main                 in a pull request
  kaistack diff --stack prod --base HEAD~1 --markdown           a PR comment
  kaistack diff --stack staging --base-file /tmp/Pulumi.staging.yaml --json
  kaistack diff --stack prod --base origin/main --max-seconds 600   a busy cluster: at most ~10 min simulating

exit codes: 0 nothing becomes Pending or is evicted and `pulumi up` would meet no hazard, 1 something does (or
  KAI never settles after the change where it did before, or --max-seconds stopped a simulation: partial),
  2 bad stack or revision,
  3 git missing, not a repository, or a repository git refuses (dubious ownership); an existing cluster
  whose nodes the stack leaves to it cannot be read
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "diff",
        help="what a change to the stack does to capacity (newly Pending, evicted, moved)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stack", "-s", required=True, help="stack name (Pulumi.<stack>.yaml)")
    base = parser.add_mutually_exclusive_group(required=True)
    base.add_argument("--base", metavar="GIT-REF", help="the stack file at this git revision")
    base.add_argument("--base-file", type=Path, metavar="FILE", help="the base stack from this file")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the diff as JSON")
    form.add_argument("--markdown", action="store_true", help="print the diff as Markdown (PR comment)")
    parser.add_argument(
        "--max-seconds",
        type=float,
        metavar="S",
        help="bound both simulations together: the base gets half, the change what is left; a simulation "
        "stopped by it makes the diff partial (exit 1)",
    )
    add_project_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kaistack.capacity import diff as capacity_diff
    from kaistack.stack.files import project_name
    from kaistack.stack.history import load_stack_at, load_stack_file
    from kaistack.stack.load import LoadOptions

    if args.max_seconds is not None and not args.max_seconds > 0:
        raise InputError("--max-seconds: must be a positive number of seconds")
    current = load(args)
    # The base is only simulated: a refusal of what a cluster would do with its versions, added since it was
    # written, must not stop the comparison (parse_config `compared`).
    compared = LoadOptions(compared=True)
    if args.base is not None:
        before = load_stack_at(project_dir(args), args.stack, args.base, compared)
        base = args.base
    else:
        before = load_stack_file(args.base_file, args.stack, compared, project_name(project_dir(args)))
        base = str(args.base_file)
    from kaistack.ops.update_hazards import update_hazards

    reports = _simulate_both(before.config, current.config, args.stack, args.max_seconds)
    result = capacity_diff.diff_reports(
        *reports,
        declared_before={w.name: w.model_dump() for w in before.config.workloads},
        declared_after={w.name: w.model_dump() for w in current.config.workloads},
        base=base,
    )
    result = dataclasses.replace(result, hazards=tuple(update_hazards(before.config, current.config)))
    if args.json:
        print_json(capacity_diff.to_json(result))
    elif args.markdown:
        sys.stdout.write(capacity_diff.to_markdown(result))
    else:
        print(capacity_diff.to_text(result))
    return 1 if result.harmful or result.partial else 0


def _simulate_both(
    before: StackConfig, after: StackConfig, stack: str, max_seconds: float | None
) -> tuple[CapacityReport, CapacityReport]:
    """Both checks under one limit: the base gets half of it, the change the rest (all of it if the base was quick)."""
    from kaistack.capacity.check import check
    from kaistack.cli.sim_progress import simulation_progress
    from kaistack.progress import Progress

    progress = Progress.for_cli()
    start = time.monotonic()
    progress.note("simulating the stack before the change")
    half = None if max_seconds is None else max_seconds / 2
    old = check(before, stack, half, simulation_progress(progress), limit_name="the base's half of --max-seconds")
    left = None if max_seconds is None else max(max_seconds - (time.monotonic() - start), 0.0)
    progress.note("simulating the stack after the change")
    new = check(after, stack, left, simulation_progress(progress), limit_name="what --max-seconds left the change")
    return old, new
