"""A simulation stops as soon as no node could still take the preemptor.

In a solver simulation every victim is evicted first, then the victims and the preemptor are re-placed on
releasing resources in queue order; the victims popped before the preemptor take their room first. On a
busy cluster most scenarios of a failing job fail that way, after hundreds of victims have been re-placed.

Re-placing only ever takes room. A pod pipelined onto a node, or put back where it was evicted from, lowers
that node's idle + releasing GPUs, CPU and memory; a job that does not fit is rolled back to the state
before it. Every placement first asks IsTaskAllocatableOnReleasingOrIdle (NodeState.fits with releasing),
over the simulation's feasible nodes only. So once no feasible node fits one of the preemptor's pods, none
will when the preemptor's turn comes, and the simulation has failed: the rest of it cannot change that, and
its state is rolled back, shared GPUs it opened included (NodeState.forget_groups). Stopping there gives the
same decisions, and the same GPU labels, as running it out, with one known limit: KAI's shared-GPU
accounting is not an exact inverse where a pipelined pod on a shared GPU is evicted and restored (the GPU
stays in the allocated-memory map at 0; tests/simulator/test_placement_statement.py). If the skipped part
would have done that, the run-out version carries the trace into later decisions and this one does not.
The cuts of the benchmark mix give byte-identical output with and without the stop.

Only whole-GPU pods are followed. A shared GPU's fit is not monotone in KAI's accounting: a GPU whose pods
are all releasing takes no fraction (IsTaskFitOnGpuGroup wants allocated != releasing) until a pod is
pipelined onto it. tests/simulator/test_placement_preemptor_room.py checks the monotone claim on generated
clusters and compares the results with and without the stop.
"""

from __future__ import annotations

from collections.abc import Container

from placement.nodes import NodeState
from placement.statement import Statement
from placement.tasks import KIND_WHOLE, TaskState
from placement.victim_scenario import PartialJob

__all__ = ["FitMemo", "PreemptorRoom"]

# Per pod, per node: (the node, its version, whether the pod fits it): the verdicts of earlier simulations.
FitMemo = dict[str, dict[str, tuple[NodeState, int, bool]]]


class PreemptorRoom:
    """The feasible nodes that still fit the preemptor's largest whole-GPU pod, updated as victims go back."""

    __slots__ = ("hosts", "task")

    def __init__(self, task: TaskState, nodes: dict[str, NodeState], memo: FitMemo | None = None) -> None:
        self.task = task
        req = task.req
        if memo is None:
            self.hosts = {n: node for n, node in nodes.items() if node.fits(task, releasing=True) and node.admits(req)}
            return
        # A simulation changes a few nodes, so most verdicts of the last one still hold: a whole-GPU fit reads
        # only resource counts that change with the node's version (NodeState._changed), admits nothing at all.
        seen = memo.setdefault(task.name, {})
        hosts: dict[str, NodeState] = {}
        for n, node in nodes.items():
            known = seen.get(n)
            if known is not None and known[0] is node and known[1] == node.version:
                ok = known[2]
            else:
                ok = node.fits(task, releasing=True) and node.admits(req)
                seen[n] = (node, node.version, ok)
            if ok:
                hosts[n] = node
        self.hosts = hosts

    @classmethod
    def of(
        cls,
        preemptor: PartialJob,
        nodes: dict[str, NodeState],
        victim_jobs: Container[str],
        memo: FitMemo | None = None,
    ) -> PreemptorRoom | None:
        """None where the stop does not apply: subgroups (their own node sets), a preemptor with victims of its
        own job (its pods move too), or a batch that is not all whole GPUs."""
        if preemptor.tree is not None or preemptor.job.name in victim_jobs:
            return None
        batch = preemptor.tasks_to_allocate(real=False)
        if not batch or any(t.req.kind != KIND_WHOLE for t in batch):
            return None
        largest = batch[0]
        for task in batch:
            if task.req.gpus > largest.req.gpus:
                largest = task
        return cls(largest, nodes, memo)

    def gone(self) -> bool:
        return not self.hosts

    def taken(self, stmt: Statement, mark: int) -> bool:
        """After a victim job's turn: drop the hosts its placements (journal entries from `mark`) filled.
        True when no host is left."""
        hosts = self.hosts
        for op in stmt.journal[mark:]:
            node = op[2]
            if node.name in hosts and not node.fits(self.task, releasing=True):
                del hosts[node.name]
        return not hosts
