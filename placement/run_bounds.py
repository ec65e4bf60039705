"""Where a run of pops from one queue subtree ends, in O(log length) checks (simulation_order's runs).

A run goes on while every queue on the path, re-keyed from the next job's request, stays below the
smallest other entry of its heap. On a busy cluster runs of hundreds of jobs are common, and checking
them one by one was most of the solver's time.

A queue's key (queue_order.queue_values) never decreases when a request grows in any resource: over
its fair share is fixed, starved can only turn to not starved, the zero-share penalty can only turn on,
the dominant share with the job can only grow, and the rest do not depend on the job. So if the
componentwise largest request of a block of jobs keeps a queue below its bound, every job of the block
does. `Bounds` keeps those largest values for aligned blocks of 1, 2, 4, ... positions, and `run_end`
tries blocks that double while they pass and halve when one fails. A block can fail although each of
its jobs passes (its largest request mixes two jobs); a single position is always checked exactly, so
the end found is the one the step-by-step scan finds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["Bounds", "larger_request", "run_end"]

T = TypeVar("T")


def larger_request(a: tuple[float, float, float], b: tuple[float, float, float]) -> tuple[float, float, float]:
    """The componentwise maximum of two requests (the same tuple when they are equal, as is common)."""
    if a == b:
        return a
    return (max(a[0], b[0]), max(a[1], b[1]), max(a[2], b[2]))


class Bounds:
    """`levels[j][i]` bounds the values at positions [i * 2**j, (i + 1) * 2**j); only whole blocks exist."""

    __slots__ = ("levels",)

    def __init__(self, values: Sequence[Any], join: Callable[[Any, Any], Any]) -> None:
        self.levels: list[list[Any]] = [list(values)]
        while len(self.levels[-1]) > 1:
            below = self.levels[-1]
            self.levels.append([join(below[i], below[i + 1]) for i in range(0, len(below) - 1, 2)])


def run_end(start: int, end: int, holds: Callable[[int, int], bool]) -> int:
    """The first position in [start, end) that fails, or `end`.

    `holds(j, i)`: whether every position of block i of size 2**j passes; for j = 0 exactly, for larger
    blocks it may answer False wrongly but never True wrongly.
    """
    k = start
    j = 0
    while k < end:
        size = 1 << j
        while j and (k & (size - 1) or k + size > end):
            j -= 1
            size >>= 1
        if holds(j, k >> j):
            k += size
            j += 1
        elif j:
            j -= 1
        else:
            return k
    return end
