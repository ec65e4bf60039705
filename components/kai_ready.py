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


def ready_script(config: StackConfig, *, kubeconfig_on_stdin: bool, context: str | None) -> str:
    """The command line: the kubeconfig from stdin (else the user's own), in the context the provider uses."""
    args = [sys.executable, "-m", "kaistack", "kai-ready"]
    args += ["--kubeconfig", "-"] if kubeconfig_on_stdin else []
    args += ["--context", context] if context is not None else []
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
    """A Command that finishes when KAI's webhooks answer; the objects they admit depend on it. `kubeconfig` None:
    the user's own ($KUBECONFIG or ~/.kube/config), as an existing cluster's provider reads it."""
    return local.Command(
        name,
        create=ready_script(config, kubeconfig_on_stdin=kubeconfig is not None, context=context),
        dir=str(PROJECT_DIR),
        stdin=kubeconfig,
        # Once per KAI install: a new version or namespace brings new webhook servers up.
        triggers=[config.kai.version, config.kai.namespace],
        # What it prints names the server and what it waits for, never a credential.
        logging=local.Logging.STDOUT_AND_STDERR,
        add_previous_output_in_env=False,
        # The state keeps the inputs as outputs too: the kubeconfig stays secret there.
        opts=opts.merge(pulumi.ResourceOptions(depends_on=[release], additional_secret_outputs=["stdin"])),
    )
