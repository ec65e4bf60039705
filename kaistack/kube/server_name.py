"""A cluster's `tls-server-name`: the name the client sends in TLS's SNI and checks the server's certificate against,
in place of the server URL's host (client-go@kubernetes-1.35.0 tools/clientcmd/api/types.go:75-77,
tools/clientcmd/client_config.go:265, transport/transport.go:94). Kubeconfigs that reach an API server through an
address its certificate does not name use it: Teleport's, a tunnel to 127.0.0.1, a load balancer's IP.

httpx2 has no client-wide setting for it; httpcore2 takes a request extension, `sni_hostname`, and uses it for the
TLS handshake to the API server whether it is reached directly, through an HTTP proxy's CONNECT tunnel or through a
SOCKS proxy (httpcore2 `_sync/connection.py`, `http_proxy.py`, `socks_proxy.py`): the transport here sets it on every
request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2

from kaistack.kube.errors import KubeError

__all__ = ["ServerNameTransport", "server_name"]


def server_name(cluster: Mapping[str, Any], context: str) -> str | None:
    """The cluster's tls-server-name, None when it sets none (kubectl treats an empty one as none)."""
    value = cluster.get("tls-server-name")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise KubeError(
            f"kubeconfig context {context!r}: the cluster's tls-server-name must be a host name or an IP address (a "
            f"string), not {type(value).__name__}"
        )
    if not value.strip() or value != value.strip() or any(c.isspace() for c in value):
        raise KubeError(
            f"kubeconfig context {context!r}: the cluster's tls-server-name must be a host name or an IP address, "
            "without spaces"
        )
    return value


class ServerNameTransport(httpx2.BaseTransport):
    """An HTTP transport that sends every request's TLS handshake with `name` as the server's name."""

    def __init__(self, inner: httpx2.BaseTransport, name: str) -> None:
        self._inner = inner
        self._name = name

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.extensions = {**request.extensions, "sni_hostname": self._name}
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()
