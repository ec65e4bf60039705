"""Fixtures for the EKS tests: moto for every AWS call, a no-credentials environment, Pulumi mocks.

No test here reaches AWS: `ec2` is a moto-backed client, and `no_aws` strips every credential source
(env, shared files, instance metadata) so boto3's default chain finds none.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import moto
import pulumi
import pytest

from kaistack import discovery
from kaistack.config import load_stack, parse_config
from kaistack.model import StackConfig

PROJECT_DIR = Path(__file__).resolve().parents[2]
REGION = "us-west-2"
AWS_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)


@pytest.fixture(autouse=True)
def _fresh_discovery_cache() -> Iterator[None]:
    discovery.clear_cache()
    yield
    discovery.clear_cache()


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A machine without AWS credentials: nothing in env, no shared files, no instance metadata."""
    for key in AWS_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


# One moto mock for the session, switched on per test without resetting its backends: EC2's
# instance-type data is read-only here, and reloading it for every test costs ~2 s each.
_MOTO = moto.mock_aws()


@pytest.fixture
def aws(no_aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto's fake AWS with fake credentials, for code that builds its own boto3 client."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    _MOTO.start(reset=False)
    try:
        yield
    finally:
        _MOTO.stop(remove_data=False)


@pytest.fixture
def ec2(aws: None) -> Any:
    """A moto-backed EC2 client in us-west-2 (moto ships EC2's real instance-type and offering data)."""
    return boto3.client("ec2", region_name=REGION)


def eks_raw(**pool_overrides: Any) -> dict[str, Any]:
    """A one-pool EKS stack (raw `kaistack:` config); keyword arguments override the pool's keys."""
    pool = {"name": "l4", "instanceType": "g6.xlarge", "count": 2, **pool_overrides}
    return {
        "cluster": {
            "provider": "eks",
            "name": "kaistack-test",
            "eks": {"region": REGION, "availabilityZones": [f"{REGION}a", f"{REGION}b"]},
            "nodePools": [pool],
        },
        "gpu": {"mode": "gpu-operator", "gpuOperator": {"driver": False, "toolkit": False}},
    }


def eks_config(raw: dict[str, Any] | None = None, **pool_overrides: Any) -> StackConfig:
    return parse_config(copy.deepcopy(raw) if raw is not None else eks_raw(**pool_overrides))


def stack(name: str) -> StackConfig:
    return load_stack(PROJECT_DIR, name)


# --- Pulumi mocks (pulumi.md §3: fresh loop per test, reset_options, preview=False) ---------------


class RecordingMocks(pulumi.runtime.Mocks):
    """Records every registration; answers the outputs pulumi-eks' remote Cluster would compute."""

    def __init__(self) -> None:
        self.resources: list[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(args)
        state = dict(args.inputs)
        if args.typ == "eks:index:Cluster":
            state["kubeconfig"] = fake_kubeconfig(args.inputs.get("name", args.name))
        if args.typ == "aws:iam/role:Role":
            state["arn"] = f"arn:aws:iam::123456789012:role/{args.name}"
            state["name"] = args.name
        return f"{args.name}_id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        return {}

    def of_type(self, typ: str) -> list[pulumi.runtime.MockResourceArgs]:
        return [r for r in self.resources if r.typ == typ]

    def named(self, typ: str, name: str) -> pulumi.runtime.MockResourceArgs:
        matches = [r for r in self.of_type(typ) if r.name == name]
        assert len(matches) == 1, f"{typ} {name}: {len(matches)} registrations"
        return matches[0]


class RecordingMonitor(pulumi.runtime.mocks.MockMonitor):
    """Also records the resource options mocks never see (protect), keyed by (type, name)."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.protect: dict[tuple[str, str], bool] = {}
        self.parents: dict[tuple[str, str], str] = {}

    def RegisterResource(self, request: Any) -> Any:
        self.protect[(request.type, request.name)] = bool(request.protect)
        self.parents[(request.type, request.name)] = request.parent
        return super().RegisterResource(request)


def fake_kubeconfig(cluster_name: str) -> dict[str, Any]:
    """The shape pulumi-eks returns: an exec credential plugin without --region (pulumi-eks#1038)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubernetes", "cluster": {"server": "https://example.eks.amazonaws.com"}}],
        "contexts": [{"name": "aws", "context": {"cluster": "kubernetes", "user": "aws"}}],
        "current-context": "aws",
        "users": [
            {
                "name": "aws",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": ["eks", "get-token", "--cluster-name", cluster_name, "--output", "json"],
                    }
                },
            }
        ],
    }


class Harness:
    def __init__(self, mocks: RecordingMocks, monitor: RecordingMonitor) -> None:
        self.mocks = mocks
        self.monitor = monitor


@pytest.fixture
def pulumi_mocks() -> Iterator[Harness]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    pulumi.runtime.reset_options()
    mocks = RecordingMocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="kaistack", stack="test", preview=False, monitor=monitor)
    pulumi.runtime.set_all_config({"aws:region": REGION})
    yield Harness(mocks, monitor)
    pulumi.runtime.set_all_config({})
    loop.close()
    asyncio.set_event_loop(None)
