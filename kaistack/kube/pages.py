"""A list's pages read as an API server means them: each object once, and an end.

An API server's continue token names where the last page ended, so a page served again (a token that makes no
progress, a proxy replaying an answer) repeats objects, and a server that pages forever passes MAX_LIST_ITEMS; both
are refused rather than read on (or counted twice).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from kaistack.kube.errors import KubeError

__all__ = ["MAX_LIST_ITEMS", "each_once"]

# Objects of one kind a list may hold: over three times KAI's largest figure (140,000+ pods, KAI-Scheduler issue #315).
MAX_LIST_ITEMS = 500_000


def each_once(server: str, items: Iterable[Any]) -> Iterator[Any]:
    """`items` (lightkube's objects, as a list call yields them page after page) from the API server at `server`."""
    seen: set[tuple[str, str, str]] = set()
    for count, item in enumerate(items, start=1):
        meta = getattr(item, "metadata", None)
        key = (
            str(getattr(meta, "uid", "") or ""),
            str(getattr(meta, "namespace", "") or ""),
            str(getattr(meta, "name", "") or ""),
        )
        if key in seen and any(key):
            raise KubeError(
                f"the API server at {server} listed {key[1] + '/' if key[1] else ''}{key[2]} twice (a list continue "
                "token that makes no progress, or a replayed page)"
            )
        seen.add(key)
        if count > MAX_LIST_ITEMS:
            raise KubeError(f"the API server at {server} listed more than {MAX_LIST_ITEMS:,} objects of a kind")
        yield item
