"""Fixtures for the team workflows (promote, verify, validate): a project copy and a fake Kubernetes API."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from workflow_testlib import (
    FIXTURES,
    ROOT,
    FakeKube,
    Pki,
    healthy_posts,
    healthy_responses,
    make_pki,
    passing_report,
    serve,
    server_tls,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A writable copy of fixtures/project (Pulumi.yaml + dev, staging, prod stack files)."""
    target = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", target)
    return target


@pytest.fixture
def renderable_project(project: Path) -> Path:
    """The fixture project plus the repository's Pulumi program, so kaistack.ops.render can run it."""
    (project / "__main__.py").symlink_to(ROOT / "__main__.py")
    return project


@pytest.fixture
def fake_kube() -> Iterator[FakeKube]:
    """The healthy dev cluster's API over plain HTTP on 127.0.0.1 (Bearer token auth)."""
    yield from serve(FakeKube(healthy_responses(), posts=healthy_posts()), None)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    made = make_pki(tmp_path_factory.mktemp("pki"))
    if made is None:
        pytest.skip("openssl CLI not installed")
    return made


@pytest.fixture
def fake_kube_tls(pki: Pki) -> Iterator[FakeKube]:
    """The fake API over HTTPS, requiring a client certificate signed by the test CA (no token)."""
    yield from serve(FakeKube(healthy_responses(), token=None, posts=healthy_posts()), server_tls(pki))


@pytest.fixture
def passing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Policies and capacity pass for the promoted target (the documented validate_project seam)."""
    from kaistack.ops import promote as promote_module

    monkeypatch.setattr(promote_module, "validate_project", passing_report)


@pytest.fixture
def isolated(project: Path, fake_kube: FakeKube) -> FakeKube:
    """The dev stack with `kai.sharing: isolated`, and its GPU-sharing pods as KAI and HAMi's isolator leave them
    (tests/workflows/test_workflow_verify_isolation.py says what each piece is)."""
    from test_workflow_verify_isolation import INFER, NOTEBOOK, _cap, _isolated

    _isolated(project)
    for name in (*INFER, NOTEBOOK):
        _cap(fake_kube, name)
    return fake_kube
