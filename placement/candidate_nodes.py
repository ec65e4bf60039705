"""The nodes worth ordering when a solver simulation places a job (solver `_simulate`).

A simulation places each victim and the preemptor on the solver's feasible nodes: every node with idle
or releasing GPU capacity, hundreds on a busy cluster. allocate_job scores and sorts all of them for
every pod (KAI's exhaustive node order), yet on a busy cluster only a handful can take the pod: a
partly used shared GPU counts as idle capacity but cannot hold a whole-GPU pod.

Handing allocate_job only the nodes where some pod of the job fits on idle + releasing resources
(fitting_node's first check) changes nothing it decides:

- a node where none of the job's pods fits is never chosen, so nothing is placed there and it stays
  as it is for the whole call;
- binpack scores a node's free GPUs between the smallest and the largest free count over the nodes it
  is given; the left-out nodes with the fewest and the most free GPUs are kept, so those bounds, hence
  every score and the order, stay the same (left-out nodes do not change, as above).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from placement.tasks import KIND_FRACTION, KIND_MEMORY, KIND_WHOLE

if TYPE_CHECKING:
    from placement.nodes import NodeState
    from placement.tasks import TaskState

__all__ = ["candidate_nodes"]

_GPU_KINDS = (KIND_WHOLE, KIND_FRACTION, KIND_MEMORY)


def candidate_nodes(nodes: list[NodeState], tasks: list[TaskState]) -> list[NodeState]:
    """The nodes any of `tasks` fits on, plus the score-bound witnesses; all of `nodes` for CPU or MIG pods."""
    requests: dict[int, TaskState] = {}
    for task in tasks:
        if task.req.kind not in _GPU_KINDS or task.req.cpu_only:
            return nodes  # CPU and MIG pods are ordered by other measures (millicores, MIG nodes only)
        requests.setdefault(id(task.req), task)
    probes = list(requests.values())
    whole_only = all(t.req.kind == KIND_WHOLE for t in probes)
    least = min((t.req.count for t in probes), default=0)
    kept: list[NodeState] = []
    low: NodeState | None = None
    high: NodeState | None = None
    for node in nodes:
        free = node.idle_gpus + node.rel_gpus
        # A whole-GPU pod needs that many free GPUs; fits() checks that and the rest.
        if (not whole_only or free >= least) and any(node.fits(t, releasing=True) for t in probes):
            kept.append(node)
            continue
        if node.alloc_gpus == 0:
            continue  # no place in the binpack bounds
        if low is None or free < low.idle_gpus + low.rel_gpus:
            low = node
        if high is None or free > high.idle_gpus + high.rel_gpus:
            high = node
    for witness in (low, high):
        if witness is not None and witness not in kept:
            kept.append(witness)
    return kept
