"""`kaistack verify --stack NAME`: after `pulumi up`, check the live cluster against the declaration."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from kaistack.cli.args import add_project_argument, add_request_timeout, load, project_dir, seconds
from kaistack.cli.output import print_json, refuse

RETRY_INTERVAL_S = 15.0
_sleep = time.sleep  # tests replace it

DESCRIPTION = """\
Read-only checks against the stack's cluster: KAI's Deployments are rolled out and available
(kai-components); every declared queue exists with the declared spec (queue); every declared
workload's pods are Running and Ready, a Job's as its controller counts them (workload-running), and run
the declared image (workload-image); each declared Deployment runs its current template on every replica
(workload-rollout); their pods are scheduled by kai-scheduler (workload-scheduler) and carry a
pod-group-name annotation, a PyTorchJob's one PodGroup, a tenant's its gang (workload-pod-group); fractional pods share
runai-gpu-group GPU groups as binpack would (gpu-group; a difference from the placement checker's plan
is a note, not a failure); each tenant's vCluster pod <tenant>-0 is Ready (vcluster-control-plane) and
the pods synced from it have no ownerReferences (vcluster-owner-refs); the nodes that run the checked
pods are Ready (node-ready).

The kubeconfig comes from --kubeconfig, else $KUBECONFIG, else (when the Pulumi CLI is installed)
`pulumi stack output kubeconfig --show-secrets --stack NAME`.
"""

EPILOG = """\
examples:
  kaistack verify --stack dev                             uses $KUBECONFIG or the stack's output
  kaistack verify --stack prod --kubeconfig ~/.kube/prod  an explicit kubeconfig
  kaistack verify --stack dev --json | jq '.checks[] | select(.ok | not)'
  kaistack verify --stack staging --wait 600             after `pulumi up`: until pods are Running

exit codes: 0 all checks passed, 1 a check failed, 2 bad stack config,
  3 the cluster cannot be used (kubeconfig, credentials, TLS, unreachable API server; under --wait, an
  API error other than 401/403 is retried until the time is up)
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="after `pulumi up`: does the cluster schedule as declared?",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stack", "-s", required=True, help="stack name (Pulumi.<stack>.yaml)")
    parser.add_argument("--kubeconfig", type=Path, default=None, help="kubeconfig file for the stack's cluster")
    parser.add_argument(
        "--context",
        default=None,
        help="kubeconfig context (default: the stack's cluster.existing.context, else current-context)",
    )
    add_project_argument(parser)
    add_request_timeout(parser)
    parser.add_argument(
        "--wait",
        type=seconds(0, 86_400, above=False),
        default=0.0,
        metavar="SECONDS",
        help="re-check every 15 s until all pass or SECONDS elapse (right after `pulumi up`)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kaistack.declaration.parse import ConfigError
    from kaistack.kube.client import KubeAPIError, KubeClient, KubeError
    from kaistack.kube.kubeconfig import resolve_kubeconfig
    from kaistack.ops.verify import verify_stack
    from kaistack.progress import Progress

    try:
        project = project_dir(args)
        config = load(args).config
    except ConfigError as err:
        return refuse(args, f"kaistack verify: {err}", int(err.exit_code))
    try:
        kubeconfig = resolve_kubeconfig(args.stack, args.kubeconfig, project)
        # An existing cluster's stack names the context its provider uses; its kubeconfig output only selects it.
        existing = config.cluster.existing
        context = args.context or (existing.context if existing is not None else None)
        with KubeClient.from_kubeconfig(
            kubeconfig.text, context=context, base_dir=kubeconfig.base_dir, timeout=args.timeout
        ) as client:
            progress = Progress.for_cli()
            deadline = time.monotonic() + args.wait
            while True:
                try:
                    report = verify_stack(
                        config, client, stack=args.stack, kubeconfig=kubeconfig.origin, progress=progress
                    )
                except KubeError as err:
                    # Right after `up` an API server can time out or answer 5xx a while; rejected credentials
                    # will not heal, and with no time left the error is the answer.
                    left = deadline - time.monotonic()
                    if left <= 0 or (isinstance(err, KubeAPIError) and err.status in (401, 403)):
                        raise
                    pause = min(RETRY_INTERVAL_S, left)
                    print(f"{err}; checking again in {pause:.0f} s", file=sys.stderr)
                    _sleep(pause)
                    continue
                left = deadline - time.monotonic()
                if report.ok or left <= 0:
                    break
                # The last stretch of the wait gets its check too (a --wait under the interval is one more check).
                pause = min(RETRY_INTERVAL_S, left)
                print(f"{_failing(report)}; checking again in {pause:.0f} s", file=sys.stderr)
                _sleep(pause)
    except KubeAPIError as err:
        if err.status == 401:  # as diagnose says it: the path is not what went wrong
            rejected = f"the API server rejected the credentials (401) when reading {err.path}"
            return refuse(args, f"kaistack verify: {rejected}", int(err.exit_code))
        return refuse(args, f"kaistack verify: {err}", int(err.exit_code))
    except KubeError as err:
        return refuse(args, f"kaistack verify: {err}", int(err.exit_code))
    if args.json:
        print_json(report.as_dict())
    else:
        print(report.table())
    return 0 if report.ok else 1


def _failing(report: Any) -> str:
    """'2 checks failing (workload-running team-a/train, queue team-a)': which ones, so a long wait says what."""
    failures = report.failures
    named = ", ".join(f"{r.check} {r.subject}" for r in failures[:3]) + (", ..." if len(failures) > 3 else "")
    return f"{len(failures)} checks failing ({named})"
