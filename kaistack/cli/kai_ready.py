"""`kaistack kai-ready`: wait until KAI's admission webhooks answer (the Pulumi program runs it after KAI's release)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kaistack.cli.args import add_request_timeout, seconds
from kaistack.cli.output import print_json, refuse
from kaistack.declaration import kai_api

_sleep = time.sleep  # tests replace both
_clock = time.monotonic

DESCRIPTION = """\
Blocks until KAI's operator has registered its queue and pod webhooks and both answer: a dry-run create of a
probe Queue and of a probe Pod (in `default`) reaches admission, which writes nothing. `pulumi up` runs it between
KAI's Helm release and the first Queue, because the webhooks fail closed and start listening only after their pods
report ready: a Queue created before then fails the `up` with "failed calling webhook".

The kubeconfig comes from --kubeconfig (- reads it from stdin, as the Pulumi program passes it), else $KUBECONFIG,
else ~/.kube/config.
"""

EPILOG = """\
examples:
  kaistack kai-ready                                   $KUBECONFIG's current context, up to 600 s
  kaistack kai-ready --kubeconfig - < kubeconfig.yaml  a kubeconfig on stdin
  kaistack kai-ready --context lab --wait 120 --json

exit codes: 0 the webhooks answer, 2 bad arguments,
  3 they did not answer in time, or the cluster cannot be used (kubeconfig, credentials, TLS, unreachable API server)
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "kai-ready",
        help="wait until KAI's admission webhooks answer (run by `pulumi up`)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--kubeconfig", type=Path, default=None, help="kubeconfig file; - for stdin")
    parser.add_argument("--context", default=None, help="kubeconfig context (default: current-context)")
    parser.add_argument(
        "--kai-namespace",
        default=kai_api.DEFAULT_NAMESPACE,
        help=f"KAI's namespace (default {kai_api.DEFAULT_NAMESPACE})",
    )
    parser.add_argument(
        "--wait",
        type=seconds(0, 3_600, above=False),
        default=600.0,
        metavar="SECONDS",
        help="give up after SECONDS (default 600)",
    )
    add_request_timeout(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kaistack.kube.client import KubeClient, KubeError
    from kaistack.kube.kubeconfig import resolve_kubeconfig
    from kaistack.ops.kai_ready import KaiNotReady, wait_for_kai_admission

    try:
        kubeconfig = resolve_kubeconfig(None, args.kubeconfig)
        with KubeClient.from_kubeconfig(
            kubeconfig.text, context=args.context, base_dir=kubeconfig.base_dir, timeout=args.timeout
        ) as client:
            waited = wait_for_kai_admission(
                client,
                args.kai_namespace,
                timeout=args.wait,
                say=lambda line: print(line, file=sys.stderr),
                clock=_clock,
                sleep=_sleep,
            )
    except (KaiNotReady, KubeError) as err:
        return refuse(args, f"kaistack kai-ready: {err}", int(err.exit_code))
    if args.json:
        print_json({"ready": True, "server": client.server, "seconds": round(waited, 1)})
    else:
        print(f"KAI's admission webhooks answer at {client.server} (after {waited:.0f} s)")
    return 0
