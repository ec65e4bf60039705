"""`kaistack lint FILE... [--stack NAME] [--json]`: the policy pack's rules on plain manifests."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kaistack.cli.args import add_project_argument, load
from kaistack.cli.output import print_json, refuse

if TYPE_CHECKING:
    from kaistack.ops.lint import LintResult

DESCRIPTION = """\
Check Kubernetes manifests with the rules of kaistack's CrossGuard policy pack: kai-scheduler-name,
kai-queue-label, vcluster-set-owner-false (Flux HelmRelease), kai-gpu-sharing-annotations,
gpu-memory-utilization-within-fraction, kai-no-bypass, kai-unread-constraints, kai-fraction-container,
and across all files kai-queue-tree, kai-gpu-sharing-enabled and tenant-queue-binding. kai-capacity needs
the whole stack: use `kaistack check`.

Without --stack, queue labels are checked for presence (and the legacy runai/queue label); with
--stack, against that stack's declared leaf queues, tenants and GPU sizes."""

EPILOG = """\
examples:
  kaistack lint deploy/*.yaml
  helm template my-chart | kaistack lint -
  kubectl get pods -n vcluster-team-a -o yaml | kaistack lint --stack dev -
  kaistack lint manifests/ --stack dev --json
  kaistack lint deploy/ --stack dev --policy-config policies/policy-config.example.json

output: one line per violation, `file:document kind/name [policy] message`, then a summary;
--json prints {"violations": [{policy, file, document, kind, name, message}], "errors": [{file, line, message}]}
exit codes: 0 clean, 1 violations, 2 unreadable input (invalid YAML, not a Kubernetes object, bad --stack),
  3 --stack names an existing cluster whose nodes cannot be read
"""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "lint",
        help="the policy pack's rules on plain Kubernetes manifests",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="manifest files or directories; - for stdin")
    parser.add_argument("--stack", metavar="NAME", help="check queues/tenants against Pulumi.<NAME>.yaml")
    parser.add_argument(
        "--policy-config",
        metavar="FILE",
        help="the pack's config as `pulumi up --policy-pack-config FILE` takes it: each policy's settings "
        "(requireInTenantNamespaces, exemptNamespaces, ...); a disabled policy is not run",
    )
    add_project_argument(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    from kaistack.guardrails.facts import StackFacts, facts_from_stack
    from kaistack.ops.lint import lint_paths

    facts = StackFacts()
    if args.stack:
        from kaistack.declaration.parse import ConfigError

        try:
            facts = facts_from_stack(load(args).config, source=f"stack {args.stack}")
        except ConfigError as err:
            return refuse(args, f"kaistack lint: {err}", int(err.exit_code))
    config = None
    if args.policy_config:
        from kaistack.declaration import limits
        from kaistack.declaration.yaml_load import YamlInputError, load_json, read_text
        from kaistack.guardrails.pack_config import PackConfigError, pack_config

        try:
            text = read_text(args.policy_config, max_bytes=limits.MAX_STACK_FILE_BYTES, what="policy config")
            config = pack_config(load_json(text, args.policy_config), args.policy_config)
        except (YamlInputError, PackConfigError) as err:
            return refuse(args, f"kaistack lint: --policy-config: {err}", 2)
    result = lint_paths(args.files, facts, config=config)
    if args.json:
        print_json(result.as_json())
        return result.exit_code
    for violation in result.violations:
        print(violation.human())
    for error in result.errors:
        print(error.human(), file=sys.stderr)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    print(_summary(result))
    return result.exit_code


def _summary(result: LintResult) -> str:
    flagged = len({(v.file, v.document, v.kind, v.name) for v in result.violations})
    files = _plural(result.files, "file")
    errors = f"; {_plural(len(result.errors), 'error')}" if result.errors else ""
    if not result.violations:
        return f"no violations in {_plural(result.objects, 'object')} ({files}){errors}"
    count = _plural(len(result.violations), "violation")
    return f"{count} in {flagged} of {_plural(result.objects, 'object')} ({files}){errors}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"
