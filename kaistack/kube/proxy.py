"""Which proxy, if any, carries the requests to one API server: the way kubectl chooses.

client-go takes the cluster's `proxy-url`, else Go's http.ProxyFromEnvironment (client-go@kubernetes-1.35.0
tools/clientcmd/client_config.go:198-203, transport/cache.go:129-132), whose rules (golang.org/x/net
http/httpproxy/proxy.go, FromEnvironment and useProxy) differ from httpx's own: HTTPS_PROXY for an https server and
HTTP_PROXY for an http one (the upper-case name first), never ALL_PROXY; never for localhost or a loopback address
(a kind cluster's 127.0.0.1); not for a host NO_PROXY names: `*`, an IP, a CIDR, or a domain (`example.com` and its
subdomains; `.example.com` its subdomains only), each with an optional `:port`. Only one server is ever contacted,
so the choice is made once and handed to the client explicitly.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit


def proxy_and_variable(server: str, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The proxy for `server` and the variable it came from, or None for a direct connection."""
    try:
        parts = urlsplit(server)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # an unclosed [IPv6 or a port that is no number: the client names the bad URL
        return None
    host = (parts.hostname or "").lower()
    names = ("HTTPS_PROXY", "https_proxy") if parts.scheme == "https" else ("HTTP_PROXY", "http_proxy")
    variable = next((n for n in names if environ.get(n)), "")
    if not variable or _loopback(host) or _excluded(host, port, _any(environ, "NO_PROXY", "no_proxy")):
        return None
    proxy = environ[variable]
    return (proxy if "://" in proxy else f"http://{proxy}"), variable


def _any(environ: Mapping[str, str], *names: str) -> str:
    return next((environ[n] for n in names if environ.get(n)), "")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 is loopback to Go too
    return address.is_loopback or bool(mapped and mapped.is_loopback)


def _excluded(host: str, port: int, no_proxy: str) -> bool:
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        if _matches(host, port, entry):
            return True
    return False


def _matches(host: str, port: int, entry: str) -> bool:
    try:
        network = ipaddress.ip_network(entry, strict=False) if "/" in entry else None
    except ValueError:
        network = None
    if network is not None:
        try:
            return ipaddress.ip_address(host) in network
        except ValueError:
            return False
    name, wanted_port = _split_port(entry)
    if wanted_port is not None and wanted_port != port:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:  # an IP host matches an IP entry only, never a domain one
        try:
            return address == ipaddress.ip_address(name)
        except ValueError:
            return False
    if name.startswith("*."):
        name = name[1:]
    if name.startswith("."):
        return host.endswith(name)
    return host == name or host.endswith("." + name)


def _port(text: str) -> int:
    # ASCII digits only: str.isdigit() is true of '²', which int() refuses.
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 5 else -1


def _split_port(entry: str) -> tuple[str, int | None]:
    """An entry's host and port; a port that is no number matches no port at all (-1)."""
    if entry.startswith("[") and "]:" in entry:  # [::1]:6443
        host, _, port = entry[1:].partition("]:")
        return host, _port(port)
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, _port(port)
    return entry, None
