"""Run KAI scheduling cycles on a snapshot: `simulate(snapshot, actions, rounds, placement)`.

Between cycles pods move on as in a cluster: Binding pods are Running, Releasing pods are deleted and
come back Pending, Pipelined pods go back to Pending (FORMAT.md "Between rounds"). KAI's integration
tests read their expectations from a snapshot rebuilt after the last cycle, i.e. with that same
transition applied; `settle` selects it (default: when more than one action runs, as those tests do).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Sequence

from placement.allocate import allocate
from placement.consolidation import consolidation
from placement.model import ACTIONS, ALL_ACTIONS, Placement, Snapshot
from placement.preempt import preempt
from placement.reclaim import reclaim
from placement.result import Result, Unsettled, build_result
from placement.session import TIME_LIMIT, Session
from placement.stalegang import stale_gang_eviction
from placement.tasks import BINDING, PENDING, PIPELINED, RELEASING, RUNNING, STUCK_IN_RELEASING, TERMINAL
from placement.watch import Beat, Watch

__all__ = ["MAX_ROUNDS", "Beat", "simulate"]

MAX_ROUNDS = 50

_ACTIONS: dict[str, Callable[[Session], None]] = {
    "allocate": allocate,
    "consolidation": consolidation,
    "reclaim": reclaim,
    "preempt": preempt,
    "stalegangeviction": stale_gang_eviction,
}


def _advance(ssn: Session) -> None:
    """The cluster between cycles: binds complete, evictions finish, pipelined pods wait again."""
    for job in ssn.jobs.values():
        for task in job.tasks:
            status = task.status
            if status == BINDING:
                job.set_status(task, RUNNING)
            elif status in TERMINAL or status == STUCK_IN_RELEASING:
                continue  # a stuck pod is still there next cycle
            elif status in (RELEASING, PIPELINED) or (status != RUNNING and status != PENDING):
                job.set_status(task, PENDING)
                task.node = None
                task.groups = []
                task.carried = None  # between rounds a task comes back without its old node (FORMAT v2)


def simulate(
    snapshot: Snapshot,
    actions: Sequence[str] = ACTIONS,
    rounds: int | None = 1,
    placement: Placement | None = None,
    settle: bool | None = None,
    max_rounds: int = MAX_ROUNDS,
    max_seconds: float | None = None,
    on_step: Callable[[int, str, float], None] | None = None,
    on_progress: Callable[[Beat], None] | None = None,
    progress_every: float = 5.0,
    limit_name: str = TIME_LIMIT,
) -> Result:
    """Simulate KAI v0.17 scheduling cycles.

    actions: run in this order each cycle (any of "allocate", "consolidation", "reclaim", "preempt").
    rounds: number of cycles; None runs until a cycle changes nothing (at most `max_rounds`; a run that reaches
        it still changing says so in `Result.unsettled`).
    settle: apply the between-cycles transition after the last cycle too (default: len(actions) > 1); nodes and
        queues are then reported as rebuilt from the settled pods.
    max_seconds: stop every action at its next job once this much time has passed; the result is then
        `partial` (what was decided so far, the rest still Pending).
    limit_name: what the reasons of a stopped run call that limit, as the caller's user set it (a flag, a stack key).
    on_step: called after each action with (cycle, action, seconds it took), e.g. for progress lines.
    on_progress: called at most every `progress_every` seconds while an action runs, with where it is (a Beat:
        the action, jobs searched and scenarios simulated so far, the job being searched).
    Raises ValueError for an unknown action or a snapshot that references missing nodes.
    """
    steps = _resolve_actions(actions)
    placement = placement or Placement()
    if rounds is not None and rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    # The session is many long-lived objects: collecting over them again and again is pure overhead that
    # grows with the cluster, so they are built with the collector off and then frozen (left out of every
    # later collection). What the actions make and drop (job orders, statements, scenarios: cycles among
    # them) is still collected as it goes, or a long run grows without bound (tens of GB at 1,024 nodes).
    gc_was_enabled = gc.isenabled()
    thresholds = gc.get_threshold()
    gc.disable()
    try:
        watch = Watch(on_progress, progress_every) if on_progress is not None else None
        return _run(snapshot, steps, rounds, placement, settle, max_rounds, max_seconds, on_step, watch, limit_name)
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        if gc_was_enabled:
            gc.enable()
        else:
            gc.disable()


def _run(
    snapshot: Snapshot,
    steps: list[tuple[str, Callable[[Session], None]]],
    rounds: int | None,
    placement: Placement,
    settle: bool | None,
    max_rounds: int,
    max_seconds: float | None = None,
    on_step: Callable[[int, str, float], None] | None = None,
    watch: Watch | None = None,
    limit_name: str = TIME_LIMIT,
) -> Result:
    ssn = Session(snapshot, placement)
    ssn.watch = watch
    ssn.limit_name = limit_name
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    gc.enable()
    if max_seconds is not None:
        ssn.deadline = time.monotonic() + max_seconds
    cycles = 0
    limit = rounds if rounds is not None else max_rounds
    settled = rounds is not None
    # Run to a steady state: each cycle's end state by fingerprint (the last cycle it was seen) and the jobs
    # whose pods it changed, so a run that never settles can say which jobs still move and whether it loops.
    seen: dict[int, int] = {}
    period: int | None = None
    changed: list[set[str]] = []
    start: dict[str, tuple[tuple[str, str | None, tuple[str, ...]], ...]] = {}
    while cycles < limit:
        if cycles:
            _advance(ssn)
        before = ssn.commits
        if rounds is None:
            start = _pods(ssn)
        ssn.open()
        for name, step in steps:
            if ssn.out_of_time():
                break
            started = time.monotonic()
            if watch is not None:
                watch.start_action(cycles + 1, name)
            step(ssn)
            if on_step is not None:
                on_step(cycles + 1, name, time.monotonic() - started)
        cycles += 1
        if ssn.partial or (rounds is None and ssn.commits == before):
            settled = True
            break
        if rounds is None:
            end = _pods(ssn)
            changed.append({name for name, pods in end.items() if start[name] != pods})
            fingerprint = hash(tuple(end.values()))
            if fingerprint in seen:
                period = cycles - seen[fingerprint]
            seen[fingerprint] = cycles
    unsettled = None
    if not settled:
        # In a loop every cycle of it counts (a job may move in one of its cycles only); else the last cycle.
        moving = set().union(*changed[-(period or 1) :])
        unsettled = Unsettled(tuple(name for name in ssn.jobs if name in moving), period)
        ssn.moving = frozenset(unsettled.moving)
    if settle if settle is not None else len(steps) > 1:
        _advance(ssn)
        # The transition moved pods without the cycle's accounting (evicted pods left, pipelined ones went
        # back to Pending): report nodes and queues as the next cycle would see them.
        ssn.rebuild()
    return build_result(ssn, cycles, unsettled)


def _pods(ssn: Session) -> dict[str, tuple[tuple[str, str | None, tuple[str, ...]], ...]]:
    """Per job, where its pods are: what changes from cycle to cycle."""
    return {
        name: tuple((task.status, task.node, tuple(task.groups)) for task in job.tasks)
        for name, job in ssn.jobs.items()
    }


def _resolve_actions(actions: Iterable[str]) -> list[tuple[str, Callable[[Session], None]]]:
    steps = []
    for name in actions:
        if name not in _ACTIONS:
            raise ValueError(f"unknown action {name!r}; expected one of {', '.join(ALL_ACTIONS)}")
        steps.append((name, _ACTIONS[name]))
    return steps
