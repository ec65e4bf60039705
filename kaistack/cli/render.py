"""`kaistack render --stack NAME [--json]`: every resource `pulumi up` would register, offline."""

from __future__ import annotations

import argparse

from kaistack.cli.args import add_project_argument, project_dir
from kaistack.cli.output import print_json, refuse

DESCRIPTION = """\
Runs the Pulumi program (__main__.py) in-process under Pulumi mocks with the config from
Pulumi.<stack>.yaml and lists every resource it registers. No Pulumi CLI, cloud, Docker or cluster
is needed, and nothing is created.

--json prints a JSON array of {"type", "name", "parent", "inputs"}: `inputs` are camelCase, exactly
as the engine receives them (numbers with integral values as integers); `parent` is the parent's
URN, or null for resources directly under the stack. Secret values (kubeconfigs, `secure:` config)
are printed as "[secret]". Without --json: a tree.
"""

EPILOG = """\
examples:
  kaistack render --stack dev
  kaistack render --stack dev --json | jq '.[] | select(.type == "kubernetes:helm.sh/v3:Release") | .inputs.values'
  kaistack render --stack staging --project ~/src/kaistack --json > staging.json

exit codes: 0 rendered, 1 the declared work does not fit (the program's capacity gate, as `pulumi up` would
  stop; kaistack:kai.capacityCheck: warn renders it anyway), 2 bad config (problems listed on stderr by key path)
  or unknown stack, 3 the environment: an existing cluster whose nodes the stack leaves to it cannot be read,
  or the output cannot be written
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "render",
        help="every resource `pulumi up --stack NAME` would register (offline, under mocks)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stack", "-s", required=True, help="stack name (reads Pulumi.<stack>.yaml)")
    parser.add_argument("--json", action="store_true", help="print a JSON array instead of a tree")
    add_project_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kaistack.declaration.parse import ConfigError

    # Imported here, not at module level: pulumi and the components are heavy, and `kaistack --help`
    # should stay fast.
    from kaistack.ops.render import RenderError, render_stack

    try:
        rendered = render_stack(project_dir(args), args.stack)
    except ConfigError as err:
        return refuse(args, err, int(err.exit_code))
    except RenderError as err:
        return refuse(args, err, 1 if err.does_not_fit else 2)
    if args.json:
        print_json(rendered.to_json())
    else:
        print(rendered.tree())
    return 0
