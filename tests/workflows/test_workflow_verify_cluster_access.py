"""`kaistack verify` reaching the cluster: kubeconfig sources, credentials, TLS, exec plugins, exit codes.

The cluster is the fake API server on loopback (see workflow_testlib); checks themselves are in
test_workflow_verify.py.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from workflow_testlib import FakeKube

from kaistack.cli import main
from kaistack.kube.client import KubeError
from kaistack.kube.kubeconfig import resolve_kubeconfig


def _verify(project: Path, fake_kube: FakeKube, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--json"])
    return code, json.loads(capsys.readouterr().out)


def _failed(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["check"], c["subject"]) for c in report["checks"] if not c["ok"]]


def test_forbidden_list_exits_3_naming_the_path(project, fake_kube, capsys):
    """RBAC that hides all pods (403) is an unusable cluster for verify: exit 3 with the API's answer."""
    fake_kube.forbidden.add("/api/v1/pods")
    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig)])
    assert code == 3
    assert "GET /api/v1/pods: HTTP 403: forbidden" in capsys.readouterr().err


def test_bearer_token_is_sent(project, fake_kube, capsys):
    """The kubeconfig's token is sent as a Bearer Authorization header (the fake API rejects others)."""
    code, _ = _verify(project, fake_kube, capsys)
    assert code == 0


def test_rejected_credentials_exit_3(project, fake_kube, capsys):
    """A 401 is not a failed check but an unusable cluster: exit 3 with the API's answer, never the token."""
    kubeconfig = fake_kube.kubeconfig(project.parent, token="wrong-s3cret-token")
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig)])
    err = capsys.readouterr().err
    assert code == 3
    assert "the API server rejected the credentials (401) when reading /apis/apps/v1/" in err
    assert "s3cret" not in err


def test_unreachable_cluster_exits_3_with_clear_message(project, fake_kube, capsys):
    """A closed port on loopback: exit 3 (environment), 'cannot reach the API server at <url>'."""
    fake_kube.url = "http://127.0.0.1:9"  # discard port; nothing listens there
    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(
        ["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--timeout", "2"]
    )
    assert code == 3
    assert "cannot reach the API server at http://127.0.0.1:9" in capsys.readouterr().err


def test_bad_kubeconfig_exits_3(project, tmp_path, capsys):
    """A kubeconfig without the current context's entry is reported, not a traceback."""
    bad = tmp_path / "bad-kubeconfig"
    bad.write_text("apiVersion: v1\nkind: Config\ncurrent-context: nowhere\ncontexts: []\n")
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(bad)])
    assert code == 3
    assert "kubeconfig has no context named 'nowhere'" in capsys.readouterr().err


def test_unknown_stack_exits_2(project, tmp_path, capsys):
    """verify needs the declaration: an unknown stack is a config error (exit 2)."""
    code = main(["verify", "--stack", "qa", "--project", str(project), "--kubeconfig", str(tmp_path / "x")])
    assert code == 2
    assert "stacks here: dev, prod, staging" in capsys.readouterr().err


def test_kubeconfig_from_environment_is_used_when_no_flag(tmp_path):
    """Without --kubeconfig, the first existing file in $KUBECONFIG is used and named as the source."""
    file = tmp_path / "kc"
    file.write_text("apiVersion: v1\n")
    found = resolve_kubeconfig(
        "dev", None, environ={"KUBECONFIG": f"{tmp_path / 'missing'}:{file}"}, which=lambda _: None
    )
    assert found.origin == f"$KUBECONFIG {file}"


def test_no_kubeconfig_source_explains_the_three_options(tmp_path):
    """No flag, no $KUBECONFIG and no Pulumi CLI: the error lists all three ways."""
    with pytest.raises(KubeError, match=r"pass --kubeconfig FILE, set KUBECONFIG, or install the Pulumi CLI"):
        resolve_kubeconfig("dev", None, environ={}, which=lambda _: None)


def test_pulumi_stack_output_is_the_last_resort(tmp_path):
    """With the Pulumi CLI on PATH, `pulumi stack output kubeconfig --show-secrets --stack S` provides it."""
    fake_pulumi = tmp_path / "pulumi"
    fake_pulumi.write_text('#!/bin/sh\necho "apiVersion: v1  # $*"\n')
    fake_pulumi.chmod(0o755)
    found = resolve_kubeconfig("staging", None, tmp_path, environ={}, which=lambda _: str(fake_pulumi))
    assert found.text.strip() == "apiVersion: v1  # stack output kubeconfig --show-secrets --stack staging"


def test_tls_with_ca_and_client_certificate_from_kubeconfig_data(project, fake_kube_tls, pki, tmp_path, capsys):
    """Over HTTPS the client trusts the kubeconfig's CA and presents its client certificate (mTLS)."""
    b64 = lambda path: base64.b64encode(path.read_bytes()).decode()  # noqa: E731
    kubeconfig = tmp_path / "kubeconfig-tls"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "tls",
                "clusters": [
                    {"name": "tls", "cluster": {"server": fake_kube_tls.url, "certificate-authority-data": b64(pki.ca)}}
                ],
                "contexts": [{"name": "tls", "context": {"cluster": "tls", "user": "admin"}}],
                "users": [
                    {
                        "name": "admin",
                        "user": {
                            "client-certificate-data": b64(pki.client_cert),
                            "client-key-data": b64(pki.client_key),
                        },
                    }
                ],
            }
        )
    )
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--json"])
    assert (code, _failed(json.loads(capsys.readouterr().out))) == (0, [])


def test_tls_server_not_signed_by_the_kubeconfig_ca_exits_3(project, fake_kube_tls, tmp_path, capsys):
    """Without the cluster's CA the server certificate is not trusted: exit 3, no data read."""
    kubeconfig = tmp_path / "kubeconfig-noca"
    kubeconfig.write_text(
        json.dumps(
            {
                "current-context": "tls",
                "clusters": [{"name": "tls", "cluster": {"server": fake_kube_tls.url}}],
                "contexts": [{"name": "tls", "context": {"cluster": "tls"}}],
            }
        )
    )
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig)])
    assert code == 3
    assert "CERTIFICATE_VERIFY_FAILED" in capsys.readouterr().err


def test_exec_credential_plugin_token_is_used(project, fake_kube, tmp_path, capsys):
    """EKS kubeconfigs run `aws eks get-token`; any exec plugin printing an ExecCredential works the same way."""
    plugin = tmp_path / "get-token"
    plugin.write_text(
        "#!/bin/sh\n"
        'echo \'{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",'
        f' "status": {{"token": "{fake_kube.token}"}}}}\'\n'
    )
    plugin.chmod(0o755)
    kubeconfig = tmp_path / "kubeconfig-exec"
    kubeconfig.write_text(
        json.dumps(
            {
                "current-context": "eks",
                "clusters": [{"name": "eks", "cluster": {"server": fake_kube.url}}],
                "contexts": [{"name": "eks", "context": {"cluster": "eks", "user": "eks"}}],
                "users": [
                    {
                        "name": "eks",
                        "user": {
                            "exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(plugin)}
                        },
                    }
                ],
            }
        )
    )
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig)])
    assert code == 0, capsys.readouterr().err


def _exec_kubeconfig(tmp_path, server: str, script: str, args: list[str] | None = None):
    plugin = tmp_path / "get-token"
    plugin.write_text(script)
    plugin.chmod(0o755)
    exec_spec = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(plugin), "args": args or []}
    kubeconfig = tmp_path / "kubeconfig-exec"
    kubeconfig.write_text(
        json.dumps(
            {
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {"exec": exec_spec}}],
            }
        )
    )
    return kubeconfig


def test_a_failing_exec_plugin_is_named_without_its_output(project, fake_kube, tmp_path, capsys):
    """lightkube puts the plugin's stderr in its error; a plugin that prints what it was given (a client secret in
    its args) would have it land in verify's message and --json document."""
    script = '#!/bin/sh\necho "refresh failed: $*" >&2\nexit 4\n'
    kubeconfig = _exec_kubeconfig(tmp_path, fake_kube.url, script, ["--client-secret=ARGSECRET"])
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--json"])
    captured = capsys.readouterr()
    assert code == 3
    assert "ARGSECRET" not in captured.out + captured.err
    assert "exited 4 (its output is not shown, as it may hold credentials" in captured.out + captured.err


def test_the_server_as_shown_leaves_out_credentials_in_its_query(project, tmp_path, capsys):
    server = "https://admin:HUNTER2@127.0.0.1:1/?access_token=QUERYTOKEN#FRAGMENT"
    kubeconfig = _exec_kubeconfig(tmp_path, server, "#!/bin/sh\nexit 1\n")
    main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--json"])
    captured = capsys.readouterr()
    for secret in ("HUNTER2", "QUERYTOKEN", "FRAGMENT"):
        assert secret not in captured.out + captured.err


@pytest.mark.parametrize("server", ["https://127.0.0.1:abc", "https://[::1"])
def test_a_server_url_that_does_not_parse_exits_3_not_70(project, tmp_path, capsys, server):
    kubeconfig = _exec_kubeconfig(tmp_path, server, "#!/bin/sh\nexit 1\n")
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig)])
    err = capsys.readouterr().err
    assert code == 3
    assert "the cluster's server or proxy-url is not a valid URL" in err


def test_an_existing_clusters_stack_is_verified_in_its_declared_context(project, fake_kube, tmp_path, capsys):
    """The stack's provider uses cluster.existing.context; verify must read the same cluster, not whatever the
    kubeconfig's current-context is (the stack's exported stub only selects the context, for a merged KUBECONFIG)."""
    (project / "Pulumi.openshift.yaml").write_text(
        (Path(__file__).parents[2] / "examples/Pulumi.openshift.yaml").read_text()
    )
    config = json.loads(fake_kube.kubeconfig(tmp_path).read_text())
    config["contexts"] = [{"name": "openshift-admin", "context": {"cluster": "kind-kaistack-dev", "user": "admin"}}]
    config["contexts"].append({"name": "laptop", "context": {"cluster": "laptop", "user": "admin"}})
    config["clusters"].append({"name": "laptop", "cluster": {"server": "http://127.0.0.1:9"}})
    config["current-context"] = "laptop"
    kubeconfig = tmp_path / "merged"
    kubeconfig.write_text(json.dumps(config))
    code = main(["verify", "--stack", "openshift", "--project", str(project), "--kubeconfig", str(kubeconfig)])
    err = capsys.readouterr().err
    # The fake cluster is not this stack's, so the checks may fail or miss objects; what matters is where they went.
    assert fake_kube.requests
    assert "127.0.0.1:9" not in err, (code, err)
