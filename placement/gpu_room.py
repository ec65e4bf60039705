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

    __slots__ = ("_nodes", "_top", "key", "node_list", "pairs", "sums", "versions")

    pairs: dict[str, tuple[float, float]]  # per node, (idle, releasing)
    versions: dict[str, int]  # per node, its version when its pair was read
    sums: dict[str, float]  # per node, idle + releasing (read-only: shared by every caller)

    def __init__(self, key: Hashable, node_list: list[NodeState], before: GpuRoom | None = None) -> None:
        """`before`: the room of the same nodes at an earlier commit, whose unchanged nodes are taken as they are."""
        self.key = key
        self.node_list = node_list
        if before is None or before.node_list is not node_list:
            pairs, versions, sums = {}, {}, {}
        else:
            # A commit changes a few nodes; a node whose version has not moved has the same room (every
            # change to it bumps its version, NodeState._changed). Copies keep the node order of the maps.
            pairs, versions, sums = dict(before.pairs), dict(before.versions), dict(before.sums)
        for n in node_list:
            name = n.name
            if versions.get(name) != n.version:
                pair = pairs[name] = gpu_room_of(n)
                sums[name] = sum(pair)
                versions[name] = n.version
        self.pairs = pairs
        self.versions = versions
        self.sums = sums
        self._nodes: list[NodeState] | None = None
        self._top: dict[int, list[tuple[str, float]]] = {}

    def top(self, n: int) -> list[tuple[str, float]]:
        """The n largest sums as (node, capacity), largest first; equal ones in node order (nlargest is stable)."""
        top = self._top.get(n)
        if top is None:
            top = self._top[n] = heapq.nlargest(n, self.sums.items(), key=itemgetter(1))
        return top

    def nodes(self) -> list[NodeState]:
        """The nodes with idle or releasing GPU capacity, as a new list."""
        if self._nodes is None:
            pairs = self.pairs
            self._nodes = [n for n in self.node_list if pairs[n.name][0] > 0 or pairs[n.name][1] > 0]
        return list(self._nodes)
