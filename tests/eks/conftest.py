"""Fixtures for the EKS tests: moto for every AWS call and a no-credentials environment (mocks: tests/conftest.py).

No test here reaches AWS: `ec2` is a moto-backed client, and `no_aws` strips every credential source
(env, shared files, instance metadata) so boto3's default chain finds none.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from eks_testlib import AWS_ENV, MOTO, REGION


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A machine without AWS credentials: nothing in env, no shared files, no instance metadata."""
    for key in AWS_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def aws(no_aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto's fake AWS with fake credentials, for code that builds its own boto3 client."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    MOTO.start(reset=False)
    try:
        yield
    finally:
        MOTO.stop(remove_data=False)


@pytest.fixture
def ec2(aws: None) -> Any:
    """A moto-backed EC2 client in us-west-2 (moto ships EC2's real instance-type and offering data)."""
    return boto3.client("ec2", region_name=REGION)
