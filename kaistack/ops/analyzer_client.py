"""Drive a CrossGuard policy pack the way the Pulumi engine does, without the engine.

`PolicyPack(...)` in `policies/__main__.py` starts a gRPC Analyzer server on 127.0.0.1:0, prints the
port on stdout and serves forever (pulumi.md §6.2). `PolicyPackClient` starts that file as a
subprocess (`python __main__.py`, cwd = the pack's directory), reads the port line, configures every
policy at MANDATORY (a `PolicyConfig` without `enforcementLevel` would mean ADVISORY), sends one
`Analyze` per resource and one `AnalyzeStack` with all of them, and terminates the process.

    with PolicyPackClient.start(Path("policies")) as pack:
        findings = pack.analyze(resources)       # resource policies, one RPC each
        findings += pack.analyze_stack(resources) # stack policies, one RPC
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Analyzer proto enum (pulumi/runtime/proto/analyzer.proto): ADVISORY=0, MANDATORY=1, DISABLED=2, REMEDIATE=3.
LEVEL_NAMES = {0: "advisory", 1: "mandatory", 2: "disabled", 3: "remediate"}
START_TIMEOUT_S = 60.0
RPC_TIMEOUT_S = 60.0
MAX_IN_FLIGHT = 32
# Linux's MAX_ARG_STRLEN (32 pages): the longest single "KEY=value" string execve accepts.
MAX_ENV_STRING = 131072


class PolicyPackError(Exception):
    """The policy pack could not be started or answered with an error."""


@dataclass(frozen=True)
class AnalyzedResource:
    """What the engine sends per resource: type token, camelCase inputs, URN, name, parent URN."""

    type: str
    name: str
    urn: str
    properties: Mapping[str, Any]
    parent: str | None = None
    provider: str = ""
    dependencies: Sequence[str] = ()


@dataclass(frozen=True)
class Finding:
    policy: str
    level: str  # "mandatory", "advisory", ...
    message: str
    urn: str = ""
    resource_type: str = ""
    resource_name: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "policy": self.policy,
            "level": self.level,
            "message": self.message,
            "urn": self.urn,
            "type": self.resource_type,
            "name": self.resource_name,
        }


@dataclass
class PackInfo:
    name: str
    version: str
    policies: dict[str, str] = field(default_factory=dict)  # policy name -> "resource" | "stack"


class PolicyPackClient:
    """A running policy pack process and its Analyzer stub. Use `start()` as a context manager."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, stderr_file: Any) -> None:
        import grpc
        from pulumi.runtime.proto import analyzer_pb2_grpc

        self._process = process
        self._stderr_file = stderr_file
        self._channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self._stub = analyzer_pb2_grpc.AnalyzerStub(self._channel)
        self.port = port
        self.info = PackInfo("", "")

    # -- lifecycle ---------------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        pack_dir: Path,
        *,
        python: str | None = None,
        env: Mapping[str, str] | None = None,
        config: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> PolicyPackClient:
        """Start `<pack_dir>/__main__.py` like the engine does and wait for its port line. `config`: per policy,
        knobs sent over its initial config, as `--policy-pack-config` does."""
        main = pack_dir / "__main__.py"
        if not main.is_file():
            raise PolicyPackError(f"no policy pack at {pack_dir} (missing __main__.py)")
        for key, value in (env or {}).items():
            size = len(key.encode()) + len(value.encode()) + 2  # "KEY=value\0"
            if size > MAX_ENV_STRING:
                raise PolicyPackError(
                    f"{key} would be {size} bytes; Linux limits one environment string to {MAX_ENV_STRING} bytes "
                    "(MAX_ARG_STRLEN), so the engine could not start the policy pack with it either"
                )
        stderr_file = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close(), outlives this call
        try:
            process = subprocess.Popen(
                [python or sys.executable, "__main__.py"],
                cwd=pack_dir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr_file,
                env={**os.environ, **(env or {})},
            )
        except OSError as err:
            stderr_file.close()
            raise PolicyPackError(f"cannot start the policy pack in {pack_dir}: {err}") from err
        try:
            port = _read_port(process, stderr_file)
            client = cls(process, port, stderr_file)
            client._configure_all_mandatory(config or {})
        except BaseException:
            _stop(process)
            stderr_file.close()
            raise
        return client

    def close(self) -> None:
        self._channel.close()
        _stop(self._process)
        self._stderr_file.close()

    def __enter__(self) -> PolicyPackClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- RPCs --------------------------------------------------------------------------------------

    def _configure_all_mandatory(self, overrides: Mapping[str, Mapping[str, Any]]) -> None:
        from google.protobuf import empty_pb2
        from pulumi.runtime.proto import analyzer_pb2

        info = self._call(self._stub.GetAnalyzerInfo, empty_pb2.Empty())
        self.info = PackInfo(
            info.name,
            info.version,
            {
                p.name: "stack" if p.policy_type == analyzer_pb2.PolicyType.POLICY_TYPE_STACK else "resource"
                for p in info.policies
            },
        )
        config = {}
        for policy in info.policies:
            entry = analyzer_pb2.PolicyConfig(enforcementLevel=analyzer_pb2.MANDATORY)
            initial = info.initialConfig.get(policy.name) if policy.name in info.initialConfig else None
            if initial is not None and initial.properties:
                entry.properties.CopyFrom(initial.properties)
            if policy.name in overrides:
                entry.properties.update(dict(overrides[policy.name]))
            config[policy.name] = entry
        self._call(self._stub.Configure, analyzer_pb2.ConfigureAnalyzerRequest(policyConfig=config))

    def analyze(self, resources: Iterable[AnalyzedResource]) -> list[Finding]:
        """Resource policies: one `Analyze` per resource (up to MAX_IN_FLIGHT concurrently)."""
        from pulumi.runtime.proto import analyzer_pb2

        findings: list[Finding] = []
        pending: list[tuple[AnalyzedResource, Any]] = []

        def drain(limit: int) -> None:
            while len(pending) > limit:
                resource, future = pending.pop(0)
                response = self._result(future)
                findings.extend(_findings(response.diagnostics, resource))

        for resource in resources:
            request = analyzer_pb2.AnalyzeRequest(
                type=resource.type,
                properties=_struct(resource.properties),
                urn=resource.urn,
                name=resource.name,
                options=analyzer_pb2.AnalyzerResourceOptions(parent=resource.parent or ""),
                provider=_provider(resource),
            )
            pending.append((resource, self._stub.Analyze.future(request, timeout=RPC_TIMEOUT_S)))
            drain(MAX_IN_FLIGHT)
        drain(0)
        return findings

    def analyze_stack(self, resources: Sequence[AnalyzedResource], timeout: float | None = None) -> list[Finding]:
        """Stack policies: one `AnalyzeStack` with every resource (parents and dependencies by URN).

        No deadline unless `timeout` (seconds): kai-capacity simulates the stack in it, which can take as long as
        `kaistack check`, and the engine sets none either (pulumi@v3.259.0
        sdk/go/common/resource/plugin/analyzer_plugin.go AnalyzeStack passes its caller's context)."""
        from pulumi.runtime.proto import analyzer_pb2

        request = analyzer_pb2.AnalyzeStackRequest(
            resources=[
                analyzer_pb2.AnalyzerResource(
                    type=r.type,
                    properties=_struct(r.properties),
                    urn=r.urn,
                    name=r.name,
                    parent=r.parent or "",
                    dependencies=list(r.dependencies),
                    provider=_provider(r),
                    options=analyzer_pb2.AnalyzerResourceOptions(parent=r.parent or ""),
                )
                for r in resources
            ]
        )
        response = self._result(self._stub.AnalyzeStack.future(request, timeout=timeout))
        by_urn = {r.urn: r for r in resources}
        return [_finding(d, by_urn.get(d.urn)) for d in response.diagnostics]

    def _call(self, method: Any, request: Any) -> Any:
        return self._result(method.future(request, timeout=RPC_TIMEOUT_S))

    def _result(self, future: Any) -> Any:
        import grpc

        try:
            return future.result()
        except grpc.RpcError as err:
            detail = err.details() if hasattr(err, "details") else str(err)
            raise PolicyPackError(f"policy pack RPC failed: {detail}{_tail(self._stderr_file)}") from err


# --- helpers ----------------------------------------------------------------------------------------


def _read_port(process: subprocess.Popen[bytes], stderr_file: Any) -> int:
    assert process.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    line = b""
    while not line.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PolicyPackError(f"policy pack printed no port within {START_TIMEOUT_S:.0f} s{_tail(stderr_file)}")
        ready, _, _ = select.select([process.stdout], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(process.stdout.fileno(), 64)
        if not chunk:
            process.wait(timeout=5)
            raise PolicyPackError(
                f"policy pack exited with code {process.returncode} before serving{_tail(stderr_file)}"
            )
        line += chunk
    text = line.decode(errors="replace").strip().splitlines()[0]
    try:
        return int(text)
    except ValueError as err:
        raise PolicyPackError(f"policy pack printed {text!r} instead of its port{_tail(stderr_file)}") from err


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
    if process.stdout is not None:
        process.stdout.close()


def _tail(stderr_file: Any, limit: int = 2000) -> str:
    try:
        stderr_file.seek(0)
        text = stderr_file.read().decode(errors="replace").strip()
    except (OSError, ValueError):
        return ""
    return f"\n--- policy pack stderr ---\n{text[-limit:]}" if text else ""


def _struct(properties: Mapping[str, Any]) -> Any:
    from google.protobuf import struct_pb2

    struct = struct_pb2.Struct()
    # Struct takes JSON types only; anything else (e.g. a secret wrapper) becomes its string form.
    struct.update(json.loads(json.dumps(dict(properties), default=str)))
    return struct


def _provider(resource: AnalyzedResource) -> Any:
    """The engine's provider reference is `<provider URN>::<id>`; the URN ends in `<type>::<name>`."""
    from pulumi.runtime.proto import analyzer_pb2

    if not resource.provider:
        return None
    urn = resource.provider.rsplit("::", 1)[0] if resource.provider.count("::") > 4 else resource.provider
    parts = urn.split("::")
    type_token = parts[-2].split("$")[-1] if len(parts) >= 2 else ""
    return analyzer_pb2.AnalyzerProviderResource(urn=urn, type=type_token, name=parts[-1])


def _findings(diagnostics: Iterable[Any], resource: AnalyzedResource) -> list[Finding]:
    return [_finding(d, resource) for d in diagnostics]


def _finding(diagnostic: Any, resource: AnalyzedResource | None) -> Finding:
    return Finding(
        policy=diagnostic.policyName,
        level=LEVEL_NAMES.get(diagnostic.enforcementLevel, str(diagnostic.enforcementLevel)),
        message=diagnostic.message,
        urn=diagnostic.urn or (resource.urn if resource else ""),
        resource_type=resource.type if resource else "",
        resource_name=resource.name if resource else "",
    )
