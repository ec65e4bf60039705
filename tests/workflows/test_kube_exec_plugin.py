"""Exec credential plugins as kubectl runs them (client-go@kubernetes-1.35.0 plugin/pkg/client/auth/exec/exec.go):
a token, a client certificate and key, or both; the answer kept until it expires; a 401 runs the plugin again; a
user with credentials of its own runs none."""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest
from lightkube.config.models import UserExec
from workflow_testlib import FakeKube, Pki, one_user_kubeconfig, plugin_runs

from kaistack.kube import resources as k8s
from kaistack.kube.client import KubeClient, KubeError
from kaistack.kube.exec_plugin import Credential, ExecAuthTransport, ExecPlugin

QUEUES = "/apis/scheduling.run.ai/v2/queues"
V1 = "client.authentication.k8s.io/v1"
KIND = "ExecCredential"


def _plugin(tmp_path: Path, answer: dict[str, Any] | str, *, exit_code: int = 0) -> Path:
    """A plugin printing `answer` (a dict as JSON, or a file's path to print that file) and counting its runs."""
    plugin = tmp_path / "get-credential.py"
    body = f"print(open({answer!r}).read())" if isinstance(answer, str) else f"print({json.dumps(json.dumps(answer))})"
    plugin.write_text(
        f"#!{sys.executable}\n"
        f"open({str(tmp_path / 'runs')!r}, 'a').write('run\\n')\n"
        f"{body}\n"
        f"raise SystemExit({exit_code})\n"
    )
    plugin.chmod(0o755)
    return plugin


def _exec(plugin: Path, **more: Any) -> dict[str, Any]:
    return {"exec": {"apiVersion": V1, "command": str(plugin), **more}}


def _certificate_answer(pki: Pki) -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": KIND,
        "status": {"clientCertificateData": pki.client_cert.read_text(), "clientKeyData": pki.client_key.read_text()},
    }


def _queue_names(client: KubeClient) -> list[str]:
    return [q["metadata"]["name"] for q in client.list(k8s.Queue)]


def _expected(kube: FakeKube) -> list[str]:
    return [q["metadata"]["name"] for q in kube.items(QUEUES)]


# --- client certificates ------------------------------------------------------------------------------------


def test_a_plugins_client_certificate_is_presented_in_the_handshake(fake_kube_tls, pki, tmp_path):
    """The fake API requires a client certificate signed by the test CA, and takes no token."""
    plugin = _plugin(tmp_path, _certificate_answer(pki))
    text = one_user_kubeconfig(fake_kube_tls.url, _exec(plugin), **{"certificate-authority": str(pki.ca)})
    with KubeClient.from_kubeconfig(text) as client:
        assert _queue_names(client) == _expected(fake_kube_tls)


def test_without_the_plugins_certificate_the_handshake_fails(fake_kube_tls, pki, tmp_path):
    """The control for the test above: a token alone does not get through, so the certificate is what did."""
    plugin = _plugin(tmp_path, {"apiVersion": V1, "kind": KIND, "status": {"token": "t"}})
    text = one_user_kubeconfig(fake_kube_tls.url, _exec(plugin), **{"certificate-authority": str(pki.ca)})
    with (
        KubeClient.from_kubeconfig(text) as client,
        pytest.raises(KubeError, match=r"ended the TLS session with an alert: .*certificate required"),
    ):
        client.list(k8s.Queue)


@pytest.mark.parametrize("missing", ["clientCertificateData", "clientKeyData"])
def test_a_certificate_without_its_key_or_a_key_without_its_certificate_is_refused(pki, tmp_path, missing):
    answer = _certificate_answer(pki)
    del answer["status"][missing]
    text = one_user_kubeconfig("https://127.0.0.1:9", _exec(_plugin(tmp_path, answer)))
    with (
        KubeClient.from_kubeconfig(text) as client,
        pytest.raises(KubeError, match="answered a client certificate or key, not both"),
    ):
        client.list(k8s.Queue)


def test_a_certificate_that_cannot_be_loaded_is_named_without_its_data(tmp_path):
    answer = {
        "apiVersion": V1,
        "kind": KIND,
        "status": {"clientCertificateData": "s3cret-cert", "clientKeyData": "s3cret-key"},
    }
    text = one_user_kubeconfig("https://127.0.0.1:9", _exec(_plugin(tmp_path, answer)))
    with KubeClient.from_kubeconfig(text) as client, pytest.raises(KubeError) as raised:
        client.list(k8s.Queue)
    assert "answered a client certificate and key that cannot be loaded" in str(raised.value)
    assert "s3cret" not in str(raised.value)


# --- tokens, expiry, 401 ------------------------------------------------------------------------------------


def test_the_answer_is_kept_while_it_has_not_expired(fake_kube, tmp_path):
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    plugin = _plugin(
        tmp_path, {"apiVersion": V1, "kind": KIND, "status": {"token": fake_kube.token, "expirationTimestamp": later}}
    )
    with KubeClient.from_kubeconfig(one_user_kubeconfig(fake_kube.url, _exec(plugin))) as client:
        client.list(k8s.Queue)
        client.list(k8s.Queue)
    assert plugin_runs(tmp_path) == 1


def test_an_expired_answer_runs_the_plugin_again(fake_kube, tmp_path):
    answer = {
        "apiVersion": V1,
        "kind": KIND,
        "status": {"token": fake_kube.token, "expirationTimestamp": "2000-01-01T00:00:00Z"},
    }
    with KubeClient.from_kubeconfig(one_user_kubeconfig(fake_kube.url, _exec(_plugin(tmp_path, answer)))) as client:
        client.list(k8s.Queue)
        client.list(k8s.Queue)
    assert plugin_runs(tmp_path) == 2


def test_a_401_runs_the_plugin_again_and_repeats_the_read(fake_kube, tmp_path):
    """The token the plugin gave was revoked between two reads: the second read runs the plugin for a new one."""
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"apiVersion": V1, "kind": KIND, "status": {"token": fake_kube.token}}))
    kubeconfig = one_user_kubeconfig(fake_kube.url, _exec(_plugin(tmp_path, str(answer))))
    with KubeClient.from_kubeconfig(kubeconfig) as client:
        client.list(k8s.Queue)
        fake_kube.token = "rotated-token"
        answer.write_text(json.dumps({"apiVersion": V1, "kind": KIND, "status": {"token": "rotated-token"}}))
        assert _queue_names(client) == _expected(fake_kube)
    assert plugin_runs(tmp_path) == 2


def test_a_user_with_its_own_token_runs_no_plugin(fake_kube, tmp_path):
    """kubectl runs no plugin for a user with a token (exec.go:320-322): this plugin would fail."""
    plugin = _plugin(tmp_path, {}, exit_code=1)
    user = {"token": fake_kube.token, **_exec(plugin)}
    with KubeClient.from_kubeconfig(one_user_kubeconfig(fake_kube.url, user)) as client:
        assert _queue_names(client) == _expected(fake_kube)
    assert plugin_runs(tmp_path) == 0


# --- answers kubectl refuses --------------------------------------------------------------------------------


def test_an_answer_of_another_api_version_is_refused(fake_kube, tmp_path):
    """exec.go:480-483: the answer's version must be the one the kubeconfig configures."""
    answer = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": KIND, "status": {"token": fake_kube.token}}
    text = one_user_kubeconfig(fake_kube.url, _exec(_plugin(tmp_path, answer)))
    with (
        KubeClient.from_kubeconfig(text) as client,
        pytest.raises(KubeError, match=rf"is configured for {V1} and answered 'client.authentication.k8s.io/v1beta1'"),
    ):
        client.list(k8s.Queue)


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ({"kind": KIND, "status": {"token": "t"}}, f"is configured for {V1} and answered None"),
        ({"apiVersion": V1, "kind": "Pod", "status": {"token": "t"}}, "answered a 'Pod', not an ExecCredential"),
    ],
)
def test_an_answer_without_the_configured_version_or_kind_is_refused(fake_kube, tmp_path, answer, why):
    """client-go decodes the answer as the configured version's ExecCredential and nothing else."""
    text = one_user_kubeconfig(fake_kube.url, _exec(_plugin(tmp_path, answer)))
    with KubeClient.from_kubeconfig(text) as client, pytest.raises(KubeError, match=why):
        client.list(k8s.Queue)


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ({"args": "--region"}, "Expected `array | null`, got `str`"),
        ({"env": [{"value": "x"}]}, "missing required field `name`"),
        ({"command": None}, "Expected `str`, got `null`"),
    ],
)
def test_an_exec_spec_lightkube_would_refuse_is_refused_before_the_plugin_runs(fake_kube, tmp_path, spec, where):
    user = {"exec": {"apiVersion": V1, "command": str(_plugin(tmp_path, {})), **spec}}
    with pytest.raises(KubeError, match=rf"kubeconfig user 'u': .*{re.escape(where)}"):
        KubeClient.from_kubeconfig(one_user_kubeconfig(fake_kube.url, user))
    assert plugin_runs(tmp_path) == 0


def test_an_exec_users_socks_proxy_without_socks_support_is_named_when_the_client_is_made(tmp_path, monkeypatch):
    """httpx2 needs socksio for socks5://; the transport is made once up front, so the proxy's problem is the
    kubeconfig's (exit 3), not a crash on the first read."""
    monkeypatch.setitem(sys.modules, "socksio", None)
    text = one_user_kubeconfig(
        "https://127.0.0.1:9", _exec(_plugin(tmp_path, {})), **{"proxy-url": "socks5://127.0.0.1:1080"}
    )
    with pytest.raises(KubeError, match=r"proxy-url: .*socksio"):
        KubeClient.from_kubeconfig(text)


def test_an_answer_that_is_not_json_is_named_without_its_text(fake_kube, tmp_path):
    answer = tmp_path / "answer.txt"
    answer.write_text("token: s3cret")
    text = one_user_kubeconfig(fake_kube.url, _exec(_plugin(tmp_path, str(answer))))
    with KubeClient.from_kubeconfig(text) as client, pytest.raises(KubeError) as raised:
        client.list(k8s.Queue)
    assert "printed something that is not JSON" in str(raised.value)
    assert "s3cret" not in str(raised.value)


@pytest.mark.parametrize("when", ["tomorrow", "2030-01-01", "2030-01-01T00:00:00"])
def test_an_expiration_that_is_no_rfc3339_time_is_named(fake_kube, tmp_path, when):
    """A time without its offset is not RFC 3339 either."""
    answer = {"apiVersion": V1, "kind": KIND, "status": {"token": fake_kube.token, "expirationTimestamp": when}}
    text = one_user_kubeconfig(fake_kube.url, _exec(_plugin(tmp_path, answer)))
    with KubeClient.from_kubeconfig(text) as client, pytest.raises(KubeError, match="not an RFC 3339 time"):
        client.list(k8s.Queue)


def test_a_missing_plugin_is_named_with_its_install_hint(fake_kube):
    user = {"exec": {"apiVersion": V1, "command": "kaistack-no-such-plugin", "installHint": "brew install thing"}}
    with (
        KubeClient.from_kubeconfig(one_user_kubeconfig(fake_kube.url, user)) as client,
        pytest.raises(KubeError, match=r"cannot run kaistack-no-such-plugin: .* \(brew install thing\)"),
    ):
        client.list(k8s.Queue)


# --- a new certificate, new connections ---------------------------------------------------------------------


class _Plugin(ExecPlugin):
    """Answers the credentials given, one a run."""

    def __init__(self, answers: list[Credential]) -> None:
        super().__init__(UserExec(apiVersion=V1, command="fake"), "u")
        self.answers = answers

    def run(self) -> Credential:
        return self.answers.pop(0)


def _transport(answers: list[Credential], statuses: list[int]) -> tuple[ExecAuthTransport, list[str]]:
    """An ExecAuthTransport whose carriers answer `statuses` in turn; `built` names each carrier's certificate."""
    built: list[str] = []

    def build(credential: Credential) -> httpx2.BaseTransport:
        built.append(credential.certificate)
        return httpx2.MockTransport(lambda _request: httpx2.Response(statuses.pop(0)))

    return ExecAuthTransport(_Plugin(answers), build), built


def test_a_new_certificate_is_presented_on_a_new_connection():
    """The second read's 401 runs the plugin again; its new certificate needs a new TLS context, so a new carrier."""
    answers = [Credential(certificate="a", key="k"), Credential(certificate="b", key="k")]
    transport, built = _transport(answers, [200, 401, 200])
    for _ in range(2):
        assert transport.handle_request(httpx2.Request("GET", "https://api/x")).status_code == 200
    assert built == ["a", "b"]


def test_the_old_carrier_is_closed_when_the_certificate_changes():
    """client-go closes every connection on a certificate rotation (exec.go:521-533)."""
    closed: list[str] = []
    statuses = [200, 401, 200]

    class Carrier(httpx2.MockTransport):
        def __init__(self, name: str) -> None:
            super().__init__(lambda _request: httpx2.Response(statuses.pop(0)))
            self.name = name

        def close(self) -> None:
            closed.append(self.name)

    answers = [Credential(certificate="a", key="k"), Credential(certificate="b", key="k")]
    transport = ExecAuthTransport(_Plugin(answers), lambda credential: Carrier(credential.certificate))
    for _ in range(2):
        transport.handle_request(httpx2.Request("GET", "https://api/x"))
    assert closed == ["a"]


def test_a_new_token_keeps_the_connections():
    transport, built = _transport([Credential(token="a"), Credential(token="b")], [200, 401, 200])
    for _ in range(2):
        assert transport.handle_request(httpx2.Request("GET", "https://api/x")).status_code == 200
    assert built == [""]


def test_a_401_to_an_answer_just_given_is_not_asked_again():
    transport, _ = _transport([Credential(token="a")], [401])
    assert transport.handle_request(httpx2.Request("GET", "https://api/x")).status_code == 401


def test_the_plugin_gets_its_arguments(tmp_path):
    """client-go runs the command with the kubeconfig's args (exec.go:197): `aws eks get-token --cluster-name X`."""
    plugin = tmp_path / "echo-args.py"
    plugin.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"print(json.dumps({{'apiVersion': {V1!r}, 'kind': 'ExecCredential',\n"
        "                  'status': {'token': 'tok:' + ' '.join(sys.argv[1:])}}))\n"
    )
    plugin.chmod(0o755)
    credential = ExecPlugin(UserExec(apiVersion=V1, command=str(plugin), args=["--cluster", "prod"]), "u").run()
    assert credential.token == "tok:--cluster prod"
