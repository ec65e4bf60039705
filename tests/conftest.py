"""The one Pulumi mocks fixture every component and program test uses (pulumi.md §3).

`mocks` is a `kaistack.ops.mocks.MockSession` — the same recording mock engine `kaistack render` runs
the program under: a fresh event loop per test, Pulumi's root resource reset, recording mocks
installed, and config and the loop cleared afterwards. Never `set_mocks` at import and never import
the program at module level.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hypothesis  # imported before any test: see below
import pytest

from kaistack.ops.mocks import MockSession

# Python 3.11.7's AST constructor keeps its recursion depth in global state (python/cpython#106905, fixed in 3.11.8
# by #113035): a garbage collection inside pytest's ast.parse of a module it rewrites can finalize an asyncio task
# whose logged traceback parses again, and the outer parse fails with "AST constructor recursion depth mismatch".
# pytest rewrites the whole hypothesis package, and a run without property tests imported it only in its terminal
# summary, after the tests had left such garbage: seen once in a run of tests/platform/test_platform_modes.py.

# Hypothesis' default 200 ms deadline per example turns a loaded CI machine into a failed test (DeadlineExceeded,
# or Flaky when the rerun is quick): speed belongs in benchmarks/, never in a test. @settings(...) on a test only
# overrides the fields it names, so this holds for every property test.
hypothesis.settings.register_profile("kaistack", deadline=None)
hypothesis.settings.load_profile("kaistack")

PROJECT_DIR = Path(__file__).resolve().parents[1]


# Variables that would make a test's result depend on the machine: AWS credentials and endpoints (a
# stack with discovery on would call real EC2), a kubeconfig, a Pulumi run's config, kaistack's own
# switches (KAISTACK_PROGRESS adds stderr lines), git's global config. Tests that need one set it themselves.
_SCRUBBED_PREFIXES = ("AWS_", "KAISTACK_")
_SCRUBBED = (
    "KUBECONFIG",
    "KUBERNETES_SERVICE_HOST",  # in a pod, kaistack's Kubernetes client falls back to its service account
    "KUBERNETES_SERVICE_PORT",
    "PULUMI_CONFIG",
    "PULUMI_STACK",
    "PULUMI_PROJECT",
)
# The Kubernetes client takes proxies and a CA bundle from the environment, as kubectl does (any case).
_SCRUBBED_ANY_CASE = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR")


@pytest.fixture(autouse=True)
def hermetic_environment(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for key in list(os.environ):
        if key.startswith(_SCRUBBED_PREFIXES) or key in _SCRUBBED or key.upper() in _SCRUBBED_ANY_CASE:
            monkeypatch.delenv(key)
    nowhere = tmp_path_factory.getbasetemp() / "no-aws"
    monkeypatch.setenv("AWS_CONFIG_FILE", str(nowhere / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(nowhere / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # Tests that make git repositories: the user's global config (commit.gpgsign, hooks) stays out.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture
def mocks() -> Iterator[MockSession]:
    """Stack "dev": `.set_config(raw, other)`, `.run(main)`, `.resources`, `.named(type, name)`, `.of_type(type)`."""
    with MockSession(stack="dev") as session:
        yield session


@pytest.fixture
def check_limits(monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], list[float | None]]:
    """`check_limits(module)`: the max_seconds of each call to `module.check` (kaistack.capacity.check's, as that
    module imported it), the calls themselves run as they would."""

    def watch(module: Any) -> list[float | None]:
        seen: list[float | None] = []
        real = module.check

        def recording(config, stack="", max_seconds=None, simulation=None, **names):  # type: ignore[no-untyped-def]
            seen.append(max_seconds)
            return real(config, stack, max_seconds, simulation, **names)

        monkeypatch.setattr(module, "check", recording)
        return seen

    return watch
