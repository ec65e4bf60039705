"""The README's repository layout lists what is really there, and everything that is there."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Top-level folders the layout need not name: tooling caches and hidden ones.
UNLISTED = {".git", ".venv", "venv", ".hypothesis", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".ci"}


def _layout_paths() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("### Repository layout", 1)[1].split("```", 2)[1]
    paths: list[str] = []
    for line in block.strip().splitlines():
        first = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        items = [p.strip() for p in first.split(",")]
        base = items[0].rsplit("/", 1)[0] + "/" if "/" in items[0] else ""
        paths += [items[0], *(p if "/" in p or not base else base + p for p in items[1:])]
    return paths


def _tracked() -> list[str]:
    return subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


def test_every_path_in_the_layout_exists() -> None:
    missing = [p for p in _layout_paths() if not list(ROOT.glob(p.replace("<stack>", "*").rstrip("/")))]
    assert missing == []


def test_every_top_level_folder_is_in_the_layout() -> None:
    listed = {p.split("/", 1)[0] for p in _layout_paths()}
    folders = {f.split("/", 1)[0] for f in _tracked() if "/" in f} - UNLISTED
    assert sorted(folders - listed) == []


def test_every_kaistack_subpackage_is_in_the_layout() -> None:
    listed = {p.rstrip("/") for p in _layout_paths()}
    packages = {str(p.parent.relative_to(ROOT)) for p in ROOT.glob("kaistack/*/__init__.py")}
    assert sorted(packages - listed) == []


def test_every_subpackage_says_what_it_is_for() -> None:
    """Each `__init__.py` of kaistack's subpackages opens with a one-line docstring."""
    silent = []
    for init in sorted(ROOT.glob("kaistack/*/__init__.py")):
        first = init.read_text().lstrip().splitlines()[0] if init.read_text().strip() else ""
        if not (first.startswith('"""') and len(first) > 10):
            silent.append(str(init.relative_to(ROOT)))
    assert silent == []
