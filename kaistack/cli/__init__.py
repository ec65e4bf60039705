"""The `kaistack` command line: one module per subcommand (kaistack.cli.<command>), each with `register(subparsers)`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kaistack import __version__
from kaistack.cli import check, lint, promote, render, schema, simulate, validate, verify

# Order is the order shown in --help. Command modules import nothing heavy (pulumi, grpc) at import
# time, so building the parser stays fast.
COMMANDS = (render, check, simulate, lint, validate, promote, verify, schema)

EPILOG = """\
examples:
  kaistack render --stack dev --json        every resource `pulumi up --stack dev` would register
  kaistack check --stack dev                will the declared workloads fit the declared GPUs?
  kaistack simulate scenario.yaml --json    run KAI's scheduling cycle on a scenario file
  kaistack lint manifests/*.yaml            the policy pack's rules on plain Kubernetes manifests
  kaistack validate --stack dev --markdown  render + policies + capacity, for a PR comment
  kaistack promote dev staging              copy tested release pins from dev into staging
  kaistack verify --stack dev               after `pulumi up`: does KAI schedule as declared?
  kaistack schema > schema/stack.schema.json  the stack file's JSON Schema, for editors

exit codes: 0 ok, 1 findings (violations, pending workloads, failed checks), 2 bad input or config,
  3 environment (a cluster, credentials or tool that cannot be used)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kaistack",
        description="GPU-sharing Kubernetes platforms (KAI scheduler + vCluster) from one Pulumi stack.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kaistack {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
