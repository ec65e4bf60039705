"""Per node, idle and releasing GPU capacity between commits, and what the solver derives from it.

Only a committed statement changes nodes between solver searches (a search discards what it tries), so one
GpuRoom serves every probe of every pending job until the next commit or rebuild (Session.gpu_room). What
the probes derive from it (sums, the N best nodes, the nodes with room) is kept with it for the same reason.
"""

from __future__ import annotations

import heapq
from operator import itemgetter
from typing import TYPE_CHECKING

from placement.idle_gpus_filter import gpu_room_of

if TYPE_CHECKING:
    from collections.abc import Hashable

    from placement.nodes import NodeState

__all__ = ["GpuRoom"]


class GpuRoom:
    """GetSumOfIdleGPUs and GetSumOfReleasingGPUs of every node, at one (generation, commits) key."""

    __slots__ = ("_nodes", "_sums", "_top", "key", "node_list", "pairs")

    def __init__(self, key: Hashable, node_list: list[NodeState]) -> None:
        self.key = key
        self.node_list = node_list
        self.pairs = {n.name: gpu_room_of(n) for n in node_list}
        self._sums: dict[str, float] | None = None
        self._nodes: list[NodeState] | None = None
        self._top: dict[int, list[tuple[str, float]]] = {}

    def sums(self) -> dict[str, float]:
        """Per node, idle + releasing (read-only: shared by every caller)."""
        if self._sums is None:
            self._sums = {name: sum(pair) for name, pair in self.pairs.items()}
        return self._sums

    def top(self, n: int) -> list[tuple[str, float]]:
        """The n largest sums as (node, capacity), largest first; equal ones in node order (nlargest is stable)."""
        top = self._top.get(n)
        if top is None:
            top = self._top[n] = heapq.nlargest(n, self.sums().items(), key=itemgetter(1))
        return top

    def nodes(self) -> list[NodeState]:
        """The nodes with idle or releasing GPU capacity, as a new list."""
        if self._nodes is None:
            pairs = self.pairs
            self._nodes = [n for n in self.node_list if pairs[n.name][0] > 0 or pairs[n.name][1] > 0]
        return list(self._nodes)
