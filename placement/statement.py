"""Statements: tentative placements and evictions that can be rolled back or committed (statement.go).

Every state change is journaled with what it replaced, so `rollback(checkpoint)` restores the earlier
state - gangs are all-or-nothing and solvers try scenarios on a scratch statement. `commit` turns
Allocated pods into Binding ones; evictions stay Releasing and pipelined pods stay Pipelined.

Undoing runs KAI's own inverse operations, so it leaves what KAI's leave: a shared GPU left in the
allocated-memory map at 0, float sums a few ulps off (tests/simulator/test_placement_statement.py).
Shared GPUs a placement opened are removed again (KAI would leave them under a UUID no one reuses).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from placement.nodes import NodeState
from placement.tasks import ALLOCATED, BINDING, PIPELINED, RELEASING, TaskState

if TYPE_CHECKING:
    from placement.session import Session
    from placement.tasks import JobState

__all__ = ["Statement"]

_PLACE, _RESTATUS, _DETACH = 0, 1, 2
_NONE: list[str] = []  # shared by every journal entry that opens no GPU; never mutated


class Statement:
    """A journal of placement operations on one session."""

    __slots__ = ("journal", "ssn", "touched")

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.journal: list[tuple[Any, ...]] = []
        self.touched: list[TaskState] = []

    def checkpoint(self) -> int:
        return len(self.journal)

    def rollback(self, checkpoint: int) -> None:
        journal = self.journal
        while len(journal) > checkpoint:
            self._undo(journal.pop())

    def discard(self) -> None:
        self.rollback(0)
        self.touched = []

    def commit(self, action: str = "", job: JobState | None = None) -> None:
        """Allocated pods start binding; evictions become real (no longer re-placeable this cycle).

        `action` and the `job` it places (none for stalegangeviction) are recorded on the jobs this evicts, moves
        or pipelines, for their pending reasons (placement.reasons); no decision reads them.
        """
        if action:
            self._record(action, job)
        if self.journal:
            self.ssn.commits += 1
        for task in self.touched:
            if task.status == ALLOCATED:
                self.ssn.set_status(task, BINDING)
                entry = self.ssn.nodes[task.node].entries.get(task.name)  # type: ignore[index]
                if entry is not None:
                    entry.status = BINDING
            elif task.status == RELEASING:
                task.virtual = False
        self.journal = []
        self.touched = []

    def _record(self, action: str, placed: JobState | None) -> None:
        """What this statement does to each job, as its pending reason will tell it: the last event wins."""
        if placed is not None:
            placed.evicted = placed.pipelined_by = None  # placed again since
            placed.reason = None  # an attempt before this one no longer says why it waits
        by = placed.name if placed is not None else None
        for task in self.touched:
            status = task.status
            if status != RELEASING and status != PIPELINED:
                continue
            job = task.job
            if job is placed:
                job.pipelined_by = (action, task.node or "")
            else:
                job.evicted = (action, by, task.node if status == PIPELINED else None)
                job.pipelined_by = None
                job.reason = None

    # ---- operations ------------------------------------------------------------------------------

    def allocate(self, task: TaskState, node: NodeState) -> bool:
        """Place a pod on idle resources (status Allocated until commit)."""
        self._place(task, node, ALLOCATED)
        return True

    def pipeline(self, task: TaskState, node: NodeState, update_if_exists: bool) -> bool:
        """Place a pod on resources that are being released (status Pipelined).

        A pod re-placed onto the node it was just evicted from is un-evicted instead, unless asked to
        update it in place or it moves to a different shared GPU there.
        """
        entry = node.entries.get(task.name)
        shared_move = entry is not None and bool(task.groups) and task.req.shared and task.groups != entry.groups
        if entry is not None and not update_if_exists and not shared_move:
            task.groups = list(entry.groups)
            return self.unevict(task)
        if entry is not None and shared_move:
            # ConsolidateSharedPodInfoToDifferentGPU drops the old copy but keeps its accounting.
            del node.entries[task.name]
            self.journal.append((_DETACH, task, node, entry))
            self._place(task, node, PIPELINED)
        elif entry is not None:
            self._restatus(task, node, PIPELINED)
        else:
            self._place(task, node, PIPELINED)
        return True

    def evict(self, task: TaskState) -> None:
        """Start evicting a running pod: its resources become releasing, its queue gives them back."""
        node = self.ssn.nodes[task.node]  # type: ignore[index]
        self._restatus(task, node, RELEASING)

    def unevict(self, task: TaskState) -> bool:
        """Undo this statement's eviction of the pod (it keeps running where it was)."""
        for i in range(len(self.journal) - 1, -1, -1):
            op = self.journal[i]
            if op[0] == _RESTATUS and op[1] is task and op[4] == RELEASING:
                node = op[2]
                self._restatus(task, node, op[3], virtual=op[5])
                return True
        return False

    def convert_allocated_to_pipelined(self, tasks: list[TaskState]) -> None:
        """ConvertAllAllocatedToPipelined: a gang waiting on releasing resources waits as a whole."""
        for task in tasks:
            if task.status != ALLOCATED:
                continue
            node = self.ssn.nodes[task.node]  # type: ignore[index]
            self._restatus(task, node, PIPELINED)

    # ---- journaled primitives --------------------------------------------------------------------

    def _place(self, task: TaskState, node: NodeState, status: str) -> None:
        ssn = self.ssn
        # Shared GPUs this placement opens: undoing it removes them again, so that a rolled-back simulation
        # leaves no trace on the node (not even a label taken; see NodeState.forget_groups).
        opened = [g for g in task.groups if g not in node.sh_used] if task.groups else _NONE
        if opened:
            node.born.update(opened)
        self.journal.append(
            (_PLACE, task, node, task.status, task.node, list(task.groups), task.virtual, task.accepted, opened)
        )
        task.node = node.name
        task.accepted = node.accepted_for(task.req)
        node.add(task, status, task.groups)
        ssn.set_status(task, status)
        task.virtual = True
        self.touched.append(task)

    def _restatus(self, task: TaskState, node: NodeState, status: str, virtual: bool = True) -> None:
        old = node.remove(task)
        groups = old.groups if old is not None else list(task.groups)
        self.journal.append((_RESTATUS, task, node, task.status, status, task.virtual, groups))
        node.add(task, status, groups)
        task.node = node.name
        self.ssn.set_status(task, status)
        task.virtual = virtual
        self.touched.append(task)

    def _undo(self, op: tuple[Any, ...]) -> None:
        kind, task = op[0], op[1]
        ssn = self.ssn
        if kind == _PLACE:
            _, _, node, status, node_name, groups, virtual, accepted, opened = op
            ssn.set_status(task, status)
            node.remove(task)
            if opened:
                node.forget_groups(opened)
            task.node = node_name
            task.groups = groups
            task.virtual = virtual
            task.accepted = accepted
        elif kind == _RESTATUS:
            _, _, node, status, _, virtual, groups = op
            node.remove(task)
            node.add(task, status, groups)
            task.node = node.name
            task.groups = list(groups)
            ssn.set_status(task, status)
            task.virtual = virtual
        else:
            # Re-attach the detached copy; its accounting never left the node. The pod is back on its old
            # GPU (unpipeline restores previousGpuGroup); the _PLACE undone before this left the new one.
            _, _, node, entry = op
            node.attach(entry)
            task.groups = list(entry.groups)
