"""Modules stay small enough to read in one sitting: over 400 lines, a module says at its top why."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 400
PACKAGES = ("kaistack", "components", "placement", "policies")


def test_long_modules_give_a_reason_at_their_top() -> None:
    """A module past the limit carries `# Long module: <why>` in its first five lines."""
    unexplained = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = path.read_text().splitlines()
            if len(lines) > LIMIT and not any(line.startswith("# Long module: ") for line in lines[:5]):
                unexplained.append(f"{path.relative_to(ROOT)} ({len(lines)} lines)")
    assert unexplained == []
