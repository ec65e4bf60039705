"""`pulumi up` runs `kaistack kai-ready` between KAI's release and what KAI's webhooks admit (components.kai_ready).

pulumi/pulumi-command@v1.2.1 provider/pkg/provider/local/commandController.go:67-90: a Command runs nothing in a
preview, and an update with no `update` script runs `create` again (a new interpreter path or kubeconfig only waits
once more); `triggers` replace it, running it again for a new KAI.
"""

from __future__ import annotations

import shlex
import sys

from platform_testlib import COMMAND, base_raw, inputs, named, of_type, run_program
from test_platform_modes import EXISTING_KUBECONFIG, existing

from components.kai_ready import PROJECT_DIR


def _ready(mocks):
    return named(mocks.resources, "kaistack-kai-ready")


def test_the_wait_runs_this_programs_kaistack_with_the_kubeconfig_on_stdin(mocks):
    run_program(mocks, base_raw())
    command = inputs(_ready(mocks))
    assert shlex.split(command["create"]) == [
        sys.executable,
        *("-m", "kaistack", "kai-ready", "--kubeconfig", "-", "--kai-namespace", "kai-scheduler", "--wait", "600"),
    ]
    assert command["dir"] == str(PROJECT_DIR)
    assert (PROJECT_DIR / "kaistack" / "__main__.py").is_file()
    assert command["stdin"] == "[secret]"
    assert command["addPreviousOutputInEnv"] is False


def test_a_new_kai_version_or_namespace_waits_again(mocks):
    raw = base_raw()
    raw["kai"] = {"version": "v0.16.0", "namespace": "kai"}
    run_program(mocks, raw)
    command = inputs(_ready(mocks))
    assert command["triggers"] == ["v0.16.0", "kai"]
    assert "--kai-namespace kai " in command["create"]


def test_it_runs_after_kais_release(mocks):
    run_program(mocks, base_raw())
    assert named(mocks.resources, "kaistack-kai-release").urn in _ready(mocks).dependencies


def test_an_existing_cluster_named_by_context_is_waited_on_through_that_context(mocks):
    """Its provider reads the user's own kubeconfig ($KUBECONFIG or ~/.kube/config): so does kai-ready."""
    run_program(mocks, existing(existing={"context": "lab-admin"}))
    command = inputs(_ready(mocks))
    assert "--context lab-admin --kai-namespace" in command["create"]
    assert "--kubeconfig" not in command["create"]
    assert "stdin" not in command


def test_an_existing_clusters_own_kubeconfig_goes_on_stdin_as_a_secret(mocks):
    run_program(mocks, existing(existing={"kubeconfig": EXISTING_KUBECONFIG}), secret=("cluster",))
    assert [c.name for c in of_type(mocks.resources, COMMAND)] == ["kaistack-kai-ready"]
    command = inputs(_ready(mocks))
    assert "--kubeconfig -" in command["create"]
    assert command["stdin"] == "[secret]"


def test_an_existing_clusters_own_kubeconfig_and_context_are_both_used(mocks):
    """Its provider takes both (components.cluster_existing): the wait must ask the same cluster, not the
    kubeconfig's current-context."""
    cluster = {"kubeconfig": EXISTING_KUBECONFIG, "context": "lab-admin"}
    run_program(mocks, existing(existing=cluster), secret=("cluster",))
    command = inputs(_ready(mocks))
    assert "--kubeconfig - --context lab-admin --kai-namespace" in command["create"]
    assert command["stdin"] == "[secret]"


def test_the_kubeconfig_is_a_secret_output_too(mocks):
    """The Command's state repeats its inputs as outputs (pulumi/pulumi-command@v1.2.1
    provider/pkg/provider/local/commandOutputs.go): stdin is marked secret there as well."""
    run_program(mocks, base_raw())
    assert "stdin" in _ready(mocks).additional_secret_outputs
