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
        parts.port  # noqa: B018 (raises on a port that is no number, which the client names as a bad URL)
    except ValueError:  # an unclosed [IPv6 or a port that is no number: the client names the bad URL
        return None
    # Go compares ports as text (canonicalAddr: url.Port(), else the scheme's), so 06443 is not 6443 to it.
    port = _port_only(parts.netloc.rpartition("@")[2]) or ("443" if parts.scheme == "https" else "80")
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


def _excluded(host: str, port: str, no_proxy: str) -> bool:
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        if _matches(host, port, entry):
            return True
    return False


def _matches(host: str, port: str, entry: str) -> bool:
    try:
        network = ipaddress.ip_network(entry, strict=False) if "/" in entry else None
    except ValueError:
        network = None
    if network is not None:
        try:
            return ipaddress.ip_address(host) in network
        except ValueError:
            return False
    name, wanted_port = _split_host_port(entry)
    if not name:
        return False  # ":6443", "[]:6443": no host part, an entry Go ignores
    if wanted_port and wanted_port != port:  # no port (or an empty one) matches every port, as in Go
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


def _port_only(hostport: str) -> str:
    """Go's url.URL.Port(): the text after the host's colon, empty when there is none."""
    if ":" not in hostport:
        return ""
    if "]:" in hostport:
        return hostport[hostport.index("]:") + 2 :]
    if "]" in hostport:
        return ""
    return hostport[hostport.index(":") + 1 :]


def _split_host_port(entry: str) -> tuple[str, str]:
    """An entry's host and port text as net.SplitHostPort reads it (golang.org/x/net@v0.56.0
    http/httpproxy/proxy.go:236-248); an entry it refuses is all host, with no port."""
    if entry.startswith("["):
        close = entry.find("]")
        if close != -1 and entry[close + 1 : close + 2] == ":" and ":" not in entry[close + 2 :]:
            return entry[1:close], entry[close + 2 :]
        return entry, ""
    host, colon, port = entry.rpartition(":")
    if not colon or ":" in host or "[" in host or "]" in host:
        return entry, ""
    return host, port
