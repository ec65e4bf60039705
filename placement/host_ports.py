"""Host ports: Kubernetes' NodePorts filter as KAI runs it (predicate PodFitsHostPorts).

KAI@v0.17.0 runs the plugin as a predicate (pkg/scheduler/k8s_internal/predicates/predicates.go:69-85) against
the Kubernetes NodeInfo that holds every pod KAI adds to the node, whatever its status (node_info.go:419, 516):
a Releasing victim keeps its ports until it is gone, so a pod wanting one of them cannot be pipelined there in
the same session. Other schedulers' pods hold theirs too. The rules are k8s.io/kubernetes v1.35's:

- a pod binds the hostPort > 0 of every port of its containers and of its restartable (sidecar) init
  containers (scheduler util GetHostPorts; hostNetwork pods have hostPort defaulted to containerPort);
- an empty hostIP is 0.0.0.0 and an empty protocol TCP (HostPortInfo sanitize);
- two ports conflict when protocol and port are equal and either IP is 0.0.0.0 or both IPs are the same
  (HostPortInfo.CheckConflict). No other address is special ("::" is an IP like any other).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["BIND_ALL", "HostPort", "HostPortError", "conflict", "describe", "pod_host_ports", "read_host_ports"]

HostPort = tuple[str, str, int]  # (hostIP, protocol, port), sanitized
BIND_ALL = "0.0.0.0"
_PROTOCOLS = ("TCP", "UDP", "SCTP")


class HostPortError(ValueError):
    """A malformed port; the message starts with the key path below the pod spec."""


def sanitized(ip: str, protocol: str, port: int) -> HostPort:
    return (ip or BIND_ALL, protocol or "TCP", port)


def conflict(used: Iterable[HostPort], wanted: Iterable[HostPort]) -> tuple[HostPort, HostPort] | None:
    """The first (wanted, used) pair that CheckConflict refuses, or None when every wanted port is free."""
    held = list(used)
    if not held:
        return None
    for ip, protocol, port in wanted:
        for other in held:
            if other[1] == protocol and other[2] == port and (ip == BIND_ALL or other[0] in (BIND_ALL, ip)):
                return (ip, protocol, port), other
    return None


def describe(port: HostPort) -> str:
    ip, protocol, number = port
    return f"{protocol} {number}" if ip == BIND_ALL else f"{protocol} {ip}:{number}"


def pod_host_ports(spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """The host ports a pod spec binds: its containers' and its restartable init containers', in that order of
    reading (GetHostPorts reads the init containers first; the order changes no verdict)."""
    found: list[HostPort] = []
    for kind in ("initContainers", "containers"):
        containers = spec.get(kind)
        if containers is None:
            continue
        if not isinstance(containers, list):
            raise HostPortError(f"{kind}: must be a list")
        for i, container in enumerate(containers):
            if not isinstance(container, Mapping):
                raise HostPortError(f"{kind}[{i}]: must be a mapping")
            if kind == "initContainers" and container.get("restartPolicy") != "Always":
                continue  # an init container that runs to completion frees its ports before the pod starts
            found.extend(_ports(container.get("ports"), f"{kind}[{i}].ports"))
    return tuple(found)


def read_host_ports(raw: Any, path: str) -> tuple[HostPort, ...]:
    """A scenario's `hostPorts`: a list of {hostPort, protocol, hostIP}, the ContainerPort fields that matter."""
    return tuple(_ports(raw, path, host_only=True))


def _ports(raw: Any, path: str, host_only: bool = False) -> Iterator[HostPort]:
    if raw is None:
        return
    if not isinstance(raw, list):
        raise HostPortError(f"{path}: must be a list")
    for i, item in enumerate(raw):
        where = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            raise HostPortError(f"{where}: must be a mapping")
        allowed = {"hostPort", "protocol", "hostIP"} if host_only else None
        if allowed is not None and set(item) - allowed:
            unknown = ", ".join(sorted(str(k) for k in set(item) - allowed))
            raise HostPortError(f"{where}: unknown key {unknown}; allowed: hostIP, hostPort, protocol")
        port = item.get("hostPort", None if host_only else 0)
        lowest = 1 if host_only else 0
        if isinstance(port, bool) or not isinstance(port, int) or not lowest <= port <= 65535:
            raise HostPortError(f"{where}.hostPort: must be an integer port {lowest}..65535, got {port!r}")
        protocol = item.get("protocol") or ""
        if protocol and protocol not in _PROTOCOLS:
            raise HostPortError(f"{where}.protocol: must be one of {', '.join(_PROTOCOLS)}, got {protocol!r}")
        ip = item.get("hostIP") or ""
        if not isinstance(ip, str):
            raise HostPortError(f"{where}.hostIP: must be a string, got {ip!r}")
        if port > 0:
            yield sanitized(ip, protocol, port)
