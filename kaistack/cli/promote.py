"""`kaistack promote SOURCE TARGET`: copy tested release pins from one stack file into another."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kaistack.cli.args import add_project_argument, project_dir
from kaistack.cli.output import print_json, refuse

if TYPE_CHECKING:
    from kaistack.ops.promote import PromotionPlan, PromotionResult
    from kaistack.ops.promote_plan import CandidateCheck

DESCRIPTION = """\
Copy the release pins of SOURCE's stack file into TARGET's: kaistack:kai.version, each shared
tenant's vcluster.version, the GPU chart version for TARGET's gpu.mode, and the image of workloads
SOURCE marks `promoted: true`. TARGET's cluster, node pools, tenants, queues and secrets stay as
they are; only the changed values' bytes are edited (comments and `secure:` values survive).

The promoted file is validated first (model, policy pack, capacity); on failure, or if TARGET's
file changes while validating, nothing is written.
"""

EPILOG = """\
examples:
  kaistack promote dev staging --dry-run      show the diff and the validation, write nothing
  kaistack promote dev staging --yes          validate and write Pulumi.staging.yaml
  kaistack promote staging prod --yes --json  machine-readable result (pins, diff, validation)
  kaistack promote dev staging --yes --allow-downgrade   also step back a pin staging runs newer

exit codes: 0 promoted (or nothing to promote; a pin the target runs newer is kept, listed under "left
              alone"), 1 refused (validation failed, target changed),
            2 unknown stack, invalid config, or no --yes/--dry-run without a terminal,
            3 the target cannot be written (read-only, a full disk or an I/O error; nothing changed)
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "promote",
        help="copy tested release pins from one stack to the next",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("source", metavar="SOURCE", help="stack whose pins were tested (e.g. dev)")
    parser.add_argument("target", metavar="TARGET", help="stack to promote into (e.g. staging)")
    add_project_argument(parser)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--yes", "-y", action="store_true", help="write without asking")
    mode.add_argument("--dry-run", action="store_true", help="show diff and validation; write nothing")
    parser.add_argument(
        "--allow-downgrade",
        action="store_true",
        help="step a pin the target runs newer than the source back to the source's (else it is kept)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kaistack.declaration.parse import ConfigError
    from kaistack.ops.promote import DECLINED, PromotionError, promote
    from kaistack.progress import Progress

    # sys.stdin is None when the process starts with it closed (`<&-`): nobody to ask.
    interactive = sys.stdin is not None and sys.stdin.isatty() and not args.json
    if not (args.yes or args.dry_run or interactive):
        return refuse(args, "kaistack promote: pass --yes to write, or --dry-run to only show the change", 2)

    def confirm(plan: PromotionPlan, check: CandidateCheck) -> bool:
        if args.yes:
            return True
        _print_plan(plan)
        _print_check(plan, check)  # what the answer is to be based on, before the question
        try:
            answer = input(f"write {plan.target_file.name}? [y/N] ")
        except EOFError:  # Ctrl-D, or stdin closed under the terminal: no answer is a no
            print()
            return False
        return answer.strip().lower() in ("y", "yes")

    try:
        project = project_dir(args)
        result = promote(
            project,
            args.source,
            args.target,
            write=not args.dry_run,
            progress=Progress.for_cli(),
            confirm=confirm,
            allow_downgrade=args.allow_downgrade,
        )
    except ConfigError as err:
        return refuse(args, f"kaistack promote: {err}", int(err.exit_code))
    except PromotionError as err:
        return refuse(args, f"kaistack promote: {err}", 1)

    if result.written:
        # Said on stderr too by main if this output cannot be written: exit 3 would otherwise read "nothing changed".
        args.wrote = str(result.plan.target_file)
    code = 1 if result.refused and result.refused != DECLINED else 0
    if args.json:
        # The shape of a refusal before planning ({"ok", "exitCode", "error"}) plus the plan, whatever the outcome.
        print_json({"ok": code == 0, "exitCode": code, **result.as_dict()})
    else:
        asked = not (args.yes or args.dry_run or not result.plan.changed or result.check is None)
        asked = asked and result.check is not None and result.check.ok
        if not asked:
            _print_plan(result.plan)
        _print_outcome(result, dry_run=args.dry_run, check_shown=asked)
    return code


def _print_plan(plan: PromotionPlan) -> None:
    kept = sum(skip.kept_newer for skip in plan.skipped)
    if not plan.changed and kept:
        print(f"nothing to promote: {plan.target} keeps {kept} newer pin{'s' * (kept != 1)} (left alone, below)")
    elif not plan.changed:
        print(f"{plan.target} already runs {plan.source}'s pins; nothing to promote")
    else:
        count = len(plan.pins)
        print(f"promote {plan.source} -> {plan.target}: {count} pin{'s' * (count != 1)} into {plan.target_file.name}")
        width = max(len(p.key) for p in plan.pins)
        for pin in plan.pins:
            notes = [*(["added; was the default"] if pin.added else []), *(["downgrade"] if pin.downgrade else [])]
            notes += [pin.restarts] if pin.restarts else []
            note = f"  ({'; '.join(notes)})" if notes else ""
            print(f"  {pin.key:<{width}}  {pin.old} -> {pin.new}{note}")
    if plan.skipped:
        print("left alone:")
        for skip in plan.skipped:
            print(f"  {skip.key}: {skip.reason}")
    if plan.changed:
        print()
        print(plan.diff(), end="")


def _print_check(plan: PromotionPlan, check: CandidateCheck) -> None:
    print()
    if check.ok:
        summary = check.report.summary_line() if check.report is not None else "passed"
        print(f"validation of promoted {plan.target}: passed ({summary})")
    else:
        print(f"validation of promoted {plan.target}: FAILED")
        for problem in check.problems:
            print(f"  {problem}")


def _print_outcome(result: PromotionResult, *, dry_run: bool, check_shown: bool = False) -> None:
    from kaistack.ops.promote import DECLINED as declined

    plan, check = result.plan, result.check
    if check is not None and not check_shown:
        _print_check(plan, check)
    if result.written:
        real, project = plan.target_file.resolve(), plan.project_dir.resolve()
        if real.is_relative_to(project):
            # A link to another file of the project: that file is what `git status` shows changed.
            inside = real.relative_to(project).as_posix()
            name = plan.target_file.name
            wrote = name if inside == name else f"{inside} ({name} links to it)"
            print(f"wrote {wrote}; next: commit it and `pulumi up --stack {plan.target}`")
        else:
            # A link out of the project: what changed is not in this repository's `git status`.
            print(f"wrote {real} ({plan.target_file.name} links to it, outside the project); next: commit that "
                  f"change where it lives and `pulumi up --stack {plan.target}`")  # fmt: skip
    elif result.refused == declined:
        print(f"not written ({result.refused}); {plan.target_file.name} unchanged")
    elif result.refused:
        print(f"refused: {result.refused}; {plan.target_file.name} unchanged", file=sys.stderr)
    elif dry_run and plan.changed:
        print(f"dry run: {plan.target_file.name} unchanged")
