"""The step between KAI's Helm release and the first object KAI's webhooks admit: `kaistack kai-ready` on the
Pulumi host (kaistack.ops.kai_ready says why and what it waits for).

It runs in `pulumi up` only (a Command does nothing in a preview), with the interpreter that runs this program, from
the project directory, so the kaistack that waits is the one deploying. The cluster's kubeconfig goes on stdin,
never in the command line or the environment; an existing cluster that names only a context uses the kubeconfig
Pulumi's Kubernetes provider reads ($KUBECONFIG or ~/.kube/config) with that context.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pulumi
import pulumi_command.local as local

from kaistack.declaration.model import StackConfig

PROJECT_DIR = Path(__file__).resolve().parents[1]
WAIT_S = 600


def ready_script(config: StackConfig, *, context: str | None) -> str:
    """The command line: the kubeconfig from stdin, unless the stack names only a context."""
    source = ["--context", context] if context is not None else ["--kubeconfig", "-"]
    args = [sys.executable, "-m", "kaistack", "kai-ready", *source]
    args += ["--kai-namespace", config.kai.namespace, "--wait", str(WAIT_S)]
    return shlex.join(args)


def ready_command(
    name: str,
    config: StackConfig,
    *,
    kubeconfig: pulumi.Output[str] | None,
    context: str | None,
    release: pulumi.Resource,
    opts: pulumi.ResourceOptions,
) -> local.Command:
    """A Command that finishes when KAI's webhooks answer; the objects they admit depend on it."""
    return local.Command(
        name,
        create=ready_script(config, context=context),
        dir=str(PROJECT_DIR),
        stdin=kubeconfig if context is None else None,
        # Once per KAI install: a new version or namespace brings new webhook servers up.
        triggers=[config.kai.version, config.kai.namespace],
        # What it prints names the server and what it waits for, never a credential.
        logging=local.Logging.STDOUT_AND_STDERR,
        add_previous_output_in_env=False,
        opts=opts.merge(pulumi.ResourceOptions(depends_on=[release])),
    )
