"""Helpers for the EKS tests: stack/config factories, recording Pulumi mocks, the session's moto mock.

Imported by name: pytest's prepend import mode puts tests/eks on sys.path (the directory has no
__init__.py).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import moto

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


# A g6.xlarge pool as a stack without AWS access must declare it: the GPU facts and the allocatable (the EKS AMI's
# for g6.xlarge, as Pulumi.staging.yaml declares it).
DECLARED_L4: dict[str, Any] = {
    "gpus": 1,
    "gpuProduct": "NVIDIA-L4",
    "gpuMemoryMiB": 22888,
    "cpu": "3920m",
    "memory": "15391Mi",
    "pods": 58,
}

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
