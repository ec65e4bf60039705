"""Helpers for the EKS tests: stack/config factories, recording Pulumi mocks, the session's moto mock.

Imported by name: pytest's prepend import mode puts tests/eks on sys.path (the directory has no
__init__.py).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import moto
import pulumi

from kaistack.declaration.model import StackConfig
from kaistack.declaration.parse import parse_config
from kaistack.stack.load import LoadOptions, load_stack

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


# One moto mock for the session, switched on per test without resetting its backends: EC2's
# instance-type data is read-only here, and reloading it for every test costs ~2 s each.
MOTO = moto.mock_aws()


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
    return load_stack(PROJECT_DIR, name, LoadOptions(discover=False)).config


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
