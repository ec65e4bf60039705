"""How deep a queue or a subgroup sits in its tree, and how deep the simulator goes.

The simulator walks queue and subgroup trees recursively (fair shares, gang checks), as KAI does in Go, whose
stacks grow as needed; Python's do not, and a chain of a thousand queues stopped it (RecursionError). KAI sets no
depth limit (Queues have no webhook; the PodGroup webhook checks subgroup names, parents and cycles only,
KAI-Scheduler@v0.17.0 pkg/apis/scheduling/v2alpha2/podgroup_webhook.go:135-175), but real trees are a few levels
deep: departments and projects, a PyTorchJob's master and workers. Chains four times deeper than these limits
still simulate.
"""

from __future__ import annotations

from collections.abc import Mapping

MAX_QUEUE_DEPTH = 256
MAX_SUBGROUP_DEPTH = 64


def depths(parents: Mapping[str, str | None]) -> dict[str, int]:
    """Each name's level from the top (1 without a parent). A chain that reaches a name not in `parents`, or a loop,
    counts up to there; a loop's members count from where the walk entered it."""
    found: dict[str, int] = {}
    for start in parents:
        chain: list[str] = []
        on_chain: set[str] = set()
        name: str | None = start
        while name is not None and name in parents and name not in found and name not in on_chain:
            chain.append(name)
            on_chain.add(name)
            name = parents[name]
        level = found.get(name, 0) if name is not None else 0
        for link in reversed(chain):
            level += 1
            found[link] = level
    return found
