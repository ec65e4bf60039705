"""`kaistack diff --stack NAME --base REF`: what a change to the stack does to capacity."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from kaistack.cli.args import add_project_argument, load, project_dir
from kaistack.cli.output import print_json

DESCRIPTION = """\
Runs the placement checker on the stack as it is and as it was (a git revision, or another file) and
reports what the change does: workloads newly Pending (with KAI's reason), running workloads KAI
would reclaim or preempt to make room, workloads newly placed or moved, and per queue the change in
GPUs allocated and fair share. It also names what `pulumi up` of the change would delete, replace or fail
on: a tenant's vCluster and its data, a moved kind NodePort, a replaced KAI, GPU stack, kind cluster or
EKS node group, a running Job restarted. No cluster is needed.
"""

EPILOG = """\
examples:
  kaistack diff --stack dev --base origin/main                 in a pull request
  kaistack diff --stack prod --base HEAD~1 --markdown           a PR comment
  kaistack diff --stack staging --base-file /tmp/Pulumi.staging.yaml --json

exit codes: 0 nothing becomes Pending or is evicted and nothing is deleted or replaced, 1 something is (or KAI
  never settles after the change where it did before),
  2 bad stack or revision,
  3 git missing, not a repository, or a repository git refuses (dubious ownership)
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
    add_project_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kaistack.capacity import diff as capacity_diff
    from kaistack.capacity.check import check
    from kaistack.stack.history import load_stack_at, load_stack_file
    from kaistack.stack.load import LoadOptions

    current = load(args)
    # The base is only simulated: a refusal of what a cluster would do with its versions, added since it was
    # written, must not stop the comparison (parse_config `compared`).
    compared = LoadOptions(compared=True)
    if args.base is not None:
        before = load_stack_at(project_dir(args), args.stack, args.base, compared)
        base = args.base
    else:
        before = load_stack_file(args.base_file, args.stack, compared)
        base = str(args.base_file)
    from kaistack.ops.update_hazards import update_hazards

    result = capacity_diff.diff_reports(
        check(before.config, args.stack),
        check(current.config, args.stack),
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
    return 1 if result.harmful else 0
