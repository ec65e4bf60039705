"""A cluster's tls-server-name: the name kubectl sends in SNI and checks the server's certificate against, in place of
the server URL's host (client-go@kubernetes-1.35.0 tools/clientcmd/api/types.go:75-77, tools/clientcmd/
client_config.go:265, transport/transport.go:94). The fake API here presents a certificate naming only NAMED_SERVER,
and is reached at 127.0.0.1, as a tunnel or Teleport's kubeconfig reaches an API server."""

from __future__ import annotations

import json
import select
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from workflow_testlib import NAMED_SERVER, FakeKube, Pki, healthy_posts, healthy_responses, serve

from kaistack.kube import resources as k8s
from kaistack.kube.client import KubeClient, KubeError

QUEUES = "/apis/scheduling.run.ai/v2/queues"


@pytest.fixture
def sni_seen() -> list[str | None]:
    return []


@pytest.fixture
def named_kube(pki: Pki, sni_seen: list[str | None]) -> Iterator[FakeKube]:
    """The fake API over HTTPS with a certificate for NAMED_SERVER alone; token auth; records each handshake's SNI."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.named_cert, pki.named_key)
    context.sni_callback = lambda _sock, name, _ctx: sni_seen.append(name)
    yield from serve(FakeKube(healthy_responses(), posts=healthy_posts()), context)


def _kubeconfig(server: str, pki: Pki, token: str, **cluster: Any) -> str:
    return json.dumps(
        {
            "current-context": "ctx",
            "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority": str(pki.ca), **cluster}}],
            "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": {"token": token}}],
        }
    )


def _queue_names(client: KubeClient) -> list[str]:
    return [q["metadata"]["name"] for q in client.list(k8s.Queue)]


def _expected(kube: FakeKube) -> list[str]:
    return [q["metadata"]["name"] for q in kube.items(QUEUES)]


def test_the_certificate_is_checked_against_tls_server_name(named_kube, pki):
    text = _kubeconfig(named_kube.url, pki, named_kube.token, **{"tls-server-name": NAMED_SERVER})
    with KubeClient.from_kubeconfig(text) as client:
        assert _queue_names(client) == _expected(named_kube)


def test_tls_server_name_is_sent_as_sni(named_kube, pki, sni_seen):
    text = _kubeconfig(named_kube.url, pki, named_kube.token, **{"tls-server-name": NAMED_SERVER})
    with KubeClient.from_kubeconfig(text) as client:
        _queue_names(client)
    assert sni_seen
    assert set(sni_seen) == {NAMED_SERVER}


def test_without_tls_server_name_the_url_host_is_checked_and_fails(named_kube, pki):
    """The control: the certificate does not name 127.0.0.1, so the name really is what made the test above pass."""
    text = _kubeconfig(named_kube.url, pki, named_kube.token)
    failed = pytest.raises(KubeError, match=r"cannot reach the API server at https://127\.0\.0\.1:\d+: .*mismatch")
    with KubeClient.from_kubeconfig(text) as client, failed:
        client.list(k8s.Queue)


def test_a_tls_server_name_the_certificate_does_not_name_fails(named_kube, pki):
    text = _kubeconfig(named_kube.url, pki, named_kube.token, **{"tls-server-name": "other.kaistack.test"})
    failed = pytest.raises(KubeError, match=r"cannot reach the API server .*mismatch")
    with KubeClient.from_kubeconfig(text) as client, failed:
        client.list(k8s.Queue)


def test_an_empty_tls_server_name_is_none(named_kube, pki):
    """kubectl sets ServerName only from a non-empty value: an empty one checks the URL's host, and fails here."""
    text = _kubeconfig(named_kube.url, pki, named_kube.token, **{"tls-server-name": ""})
    with KubeClient.from_kubeconfig(text) as client, pytest.raises(KubeError, match="mismatch"):
        client.list(k8s.Queue)


@pytest.mark.parametrize(
    ("value", "why"),
    [(5, "not int"), (["a"], "not list"), (" a.test", "without spaces"), ("api .example.com", "without spaces")],
)
def test_a_tls_server_name_that_is_no_name_is_refused_with_its_key(value, why):
    text = json.dumps(
        {
            "current-context": "ctx",
            "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9", "tls-server-name": value}}],
            "contexts": [{"name": "ctx", "context": {"cluster": "c"}}],
        }
    )
    with pytest.raises(KubeError, match=rf"context 'ctx': the cluster's tls-server-name must be .*{why}"):
        KubeClient.from_kubeconfig(text)


# --- through an HTTP proxy's CONNECT tunnel ---------------------------------------------------------------


class ConnectProxy:
    """An HTTP proxy that answers CONNECT (whatever host it names) with a tunnel to one port on 127.0.0.1."""

    def __init__(self, port: int) -> None:
        self.targets: list[str] = []
        self._port = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            head += chunk
        self.targets.append(head.split(b"\r\n", 1)[0].decode())
        upstream = socket.create_connection(("127.0.0.1", self._port))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        ends = [client, upstream]
        try:
            while True:
                readable, _, _ = select.select(ends, [], [], 5)
                if not readable:
                    return
                for end in readable:
                    data = end.recv(65536)
                    if not data:
                        return
                    (upstream if end is client else client).sendall(data)
        finally:
            client.close()
            upstream.close()

    def close(self) -> None:
        self._listener.close()


def test_tls_server_name_holds_through_a_connect_tunnel(named_kube, pki, sni_seen):
    """The cluster's proxy-url tunnels to an address that resolves nowhere (.invalid); the TLS inside the tunnel is
    checked against tls-server-name."""
    port = int(named_kube.url.rsplit(":", 1)[1])
    proxy = ConnectProxy(port)
    try:
        server = f"https://kube-api.kaistack.invalid:{port}"
        text = _kubeconfig(server, pki, named_kube.token, **{"tls-server-name": NAMED_SERVER, "proxy-url": proxy.url})
        with KubeClient.from_kubeconfig(text) as client:
            assert _queue_names(client) == _expected(named_kube)
    finally:
        proxy.close()
    assert proxy.targets[0].startswith(f"CONNECT kube-api.kaistack.invalid:{port} ")
    assert set(sni_seen) == {NAMED_SERVER}


def test_tls_server_name_holds_with_an_exec_plugin(named_kube, pki, tmp_path, sni_seen):
    """An exec plugin's transport (kaistack.kube.exec_plugin) carries the name too: Teleport's kubeconfigs have both."""
    status = {"token": named_kube.token}
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status}
    plugin = tmp_path / "get-token"
    plugin.write_text(f"#!/bin/sh\necho '{json.dumps(credential)}'\n")
    plugin.chmod(0o755)
    text = json.loads(_kubeconfig(named_kube.url, pki, "", **{"tls-server-name": NAMED_SERVER}))
    text["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}}
    with KubeClient.from_kubeconfig(json.dumps(text)) as client:
        assert _queue_names(client) == _expected(named_kube)
    assert set(sni_seen) == {NAMED_SERVER}
