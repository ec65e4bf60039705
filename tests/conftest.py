"""The one Pulumi mocks fixture every component and program test uses (pulumi.md §3).

`mocks` is a `kaistack.ops.mocks.MockSession` — the same recording mock engine `kaistack render` runs
the program under: a fresh event loop per test, Pulumi's root resource reset, recording mocks
installed, and config and the loop cleared afterwards. Never `set_mocks` at import and never import
the program at module level.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kaistack.ops.mocks import MockSession

PROJECT_DIR = Path(__file__).resolve().parents[1]


@pytest.fixture
def mocks() -> Iterator[MockSession]:
    """Stack "dev": `.set_config(raw, other)`, `.run(main)`, `.resources`, `.named(type, name)`, `.of_type(type)`."""
    with MockSession(stack="dev") as session:
        yield session
