"""A running policy pack (`policies/__main__.py` as a subprocess) and its Analyzer stub, as the engine drives it.

The engine starts the pack with the stack's config in `PULUMI_CONFIG`, reads the gRPC port from its
stdout, calls `GetAnalyzerInfo`, `Configure` (always with an enforcement level: a PolicyConfig without
one means ADVISORY), then `Analyze` per resource and `AnalyzeStack` once (pulumi.md §6.2).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from kaistack.ops.mocks import RecordedResource
from kaistack.stack.files import read_stack_config
from policies.pack import POLICY_NAMES

ROOT = Path(__file__).resolve().parents[2]
Diagnostic = tuple[str, int, str]  # policy name, enforcement level, message


def recorded_pod(props: dict[str, Any], name: str = "p") -> RecordedResource:
    """A Pod as the engine records it in the dev stack (no parent, no provider)."""
    return RecordedResource(
        type="kubernetes:core/v1:Pod",
        name=name,
        urn=f"urn:pulumi:dev::kaistack::kubernetes:core/v1:Pod::{name}",
        parent=None,
        inputs=props,
        custom=True,
        provider=None,
    )


class Pack:
    """A running policy pack and its Analyzer stub."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "__main__.py"], cwd=ROOT / "policies", stdout=subprocess.PIPE, env=env
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.strip().isdigit(), f"the pack printed {line!r} instead of its port"
        self.channel = grpc.insecure_channel(f"127.0.0.1:{int(line)}")
        self.stub = analyzer_pb2_grpc.AnalyzerStub(self.channel)

    def configure(self, overrides: dict[str, analyzer_pb2.PolicyConfig] | None = None) -> None:
        config = {name: analyzer_pb2.PolicyConfig(enforcementLevel=analyzer_pb2.MANDATORY) for name in POLICY_NAMES}
        config.update(overrides or {})
        self.stub.Configure(analyzer_pb2.ConfigureAnalyzerRequest(policyConfig=config), timeout=30)

    def analyze(self, r: RecordedResource, stack: list[RecordedResource] | None = None) -> list[Diagnostic]:
        """One resource, with its provider's inputs where `stack` holds the provider (as the engine sends them)."""
        request = analyzer_pb2.AnalyzeRequest(
            type=r.type,
            properties=struct(r.inputs),
            urn=r.urn,
            name=r.name,
            options=analyzer_pb2.AnalyzerResourceOptions(parent=r.parent or ""),
            provider=_provider(r, stack or []),
        )
        return _diagnostics(self.stub.Analyze(request, timeout=30))

    def analyze_stack(self, resources: list[RecordedResource]) -> list[Diagnostic]:
        request = analyzer_pb2.AnalyzeStackRequest(
            resources=[
                analyzer_pb2.AnalyzerResource(
                    type=r.type,
                    properties=struct(r.inputs),
                    urn=r.urn,
                    name=r.name,
                    parent=r.parent or "",
                    provider=_provider(r, resources),
                    options=analyzer_pb2.AnalyzerResourceOptions(parent=r.parent or ""),
                )
                for r in resources
            ]
        )
        return _diagnostics(self.stub.AnalyzeStack(request, timeout=120))

    def analyze_all(self, resources: list[RecordedResource]) -> list[Diagnostic]:
        return [d for r in resources for d in self.analyze(r, resources)] + self.analyze_stack(resources)

    def close(self) -> None:
        self.channel.close()
        self.process.terminate()
        self.process.wait(timeout=10)


def struct(inputs: dict[str, Any]) -> struct_pb2.Struct:
    props = struct_pb2.Struct()
    props.update(inputs)
    return props


def _provider(r: RecordedResource, stack: list[RecordedResource]) -> analyzer_pb2.AnalyzerProviderResource | None:
    """The engine's AnalyzerProviderResource: the provider's URN, type, name and inputs
    (pulumi/pulumi pkg/resource/deploy/step_generator.go, `Properties: providerResource.Inputs`)."""
    if not r.provider:
        return None
    urn = r.provider.rsplit("::", 1)[0]  # a provider reference is "<urn>::<id>"
    inputs = next((p.inputs for p in stack if p.urn == urn), None)
    return analyzer_pb2.AnalyzerProviderResource(
        urn=urn,
        type="pulumi:providers:kubernetes",
        name=urn.split("::")[-1],
        properties=struct(inputs) if inputs is not None else None,
    )


def _diagnostics(response: analyzer_pb2.AnalyzeResponse) -> list[Diagnostic]:
    return [(d.policyName, d.enforcementLevel, d.message) for d in response.diagnostics]


def engine_config_env(stack: str) -> dict[str, str]:
    """What the engine puts in PULUMI_CONFIG: "<ns>:<key>" -> value, structured values as JSON text."""
    raw = read_stack_config(ROOT, stack)
    config = {f"kaistack:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()}
    return {"PULUMI_CONFIG": json.dumps(config), "PULUMI_PROJECT": "kaistack", "PULUMI_STACK": stack}
