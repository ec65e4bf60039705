"""Shared fixtures: a fresh event loop and recording Pulumi mocks per test (pulumi.md §3).

Never `set_mocks` at import and never import the program at module level: each test runs
`__main__.py` inside the fixture, which creates a new loop, resets Pulumi's root resource, installs
the recording mocks and clears config and the loop afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[1]


@pytest.fixture
def mocks() -> Iterator[object]:
    """A `kaistack.ops.render.MockSession` for stack "dev": `.set_config(raw)`, `.run(main)`, `.resources`."""
    from kaistack.ops.mocks import MockSession

    with MockSession(stack="dev") as session:
        yield session
