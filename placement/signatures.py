"""KAI's scheduling signatures: skip a pending job that is no easier than one that already failed.

KAI@v0.17.0 pkg/scheduler/actions/common/minimal_job_comparison.go, used by consolidation (one set of
representatives for the action), reclaim and preempt (one per queue) when the scheduler runs with
`--use-scheduling-signatures` (default true, cmd/scheduler/app/options/options.go:124). KAI's test
harness runs without it, so scenarios opt in with `placement.useSchedulingSignatures`; `kaistack check`
uses the scheduler's default.

A job's signature (podgroup_info.GetSchedulingConstraintsSignature, job_info.go:639-661) is taken once, when
the session's snapshot is built (cluster_info.go:255-258 computes it for every PodGroup and it is never
invalidated), from its pod sets (subgroup_info/podset.go:155-200): per leaf subgroup, "" when every pod is
active-allocated, else its topology constraint, each parent's up to the root's (the PodGroup's), and the
signatures of its pods not active-allocated. A pod's signature hashes node selector, affinity, tolerations,
storage, priority class and priority, topology spread (pod_info/scheduling_constraints_signature.go), not its
resources; in this model pods differ only in priority (the job's, or, read from a cluster, each pod's own inside
its constraints) and constraints (nodeSelector, affinity, tolerations and the rest, NodeConstraints), so a pod
set's signature is its constraint chain, the priority and its waiting pods' constraints, sorted.

Resources are compared through the pod's ResReqVector (resource_vector.go:225-245, pod_info.go:576-583): cpu,
memory, GPUs(), one dimension per MIG profile and one per scalar resource (placement.scalar_resources). GPUs()
is 0 for a gpu-memory pod, so GPU memory is no dimension: an 80 MiB job does not make a 50 MiB one easier.
Pods (1 each) are equal and left out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from placement.tasks import ACTIVE_ALLOCATED, PENDING, JobState, TaskState

if TYPE_CHECKING:
    from placement.model import TopologyConstraint

# (cpu, memory, GPUs(), ((MIG profile, count), ...) sorted by profile, ((scalar resource, amount), ...) by name)
Vector = tuple[float, float, float, tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]


Signature = tuple[tuple[object, ...], ...]


def job_signature(job: JobState, resolve: Callable[[str, str | None], str]) -> Signature:
    """The signature at session open. `resolve(topology, level)` gives a level's node label (KAI resolves
    aliases before computing signatures, cluster_info.go:247-252)."""

    def constraint(c: TopologyConstraint | None) -> str:
        # TopologyConstraintInfo's "%s:%s:%s" of topology, required and preferred level (topology_info.go:54-57).
        return "" if c is None else f"{c.topology}:{resolve(c.topology, c.required)}:{resolve(c.topology, c.preferred)}"

    pod_sets: list[tuple[object, ...]] = []
    if job.tree is None:
        # The default pod set under a root without a constraint (job_info.go:274-291).
        pod_sets.append(_pod_set_signature(job, job.tasks, ("", "")))
    else:
        for ps in job.tree.pod_sets():
            chain = [constraint(ps.constraint)]
            parent = ps.parent
            while parent is not None:
                chain.append(constraint(parent.constraint))
                parent = parent.parent
            pod_sets.append(_pod_set_signature(job, ps.tasks, tuple(chain)))
    return tuple(sorted(pod_sets, key=repr))


def _pod_set_signature(job: JobState, tasks: Sequence[TaskState], chain: tuple[str, ...]) -> tuple[object, ...]:
    # The waiting pods' own signatures, sorted (podset.go:190-200): their constraints (nodeSelector, affinity,
    # tolerations, host port numbers, and what else the signature hashes: NodeConstraints.other), by id; the
    # priority is the job's where it stands for its pods' (Job.priority_in_signature).
    waiting = sorted(t.req.signature_id for t in tasks if t.status not in ACTIVE_ALLOCATED)
    priority = job.priority if job.spec.priority_in_signature else None
    return (chain, priority, tuple(waiting)) if waiting else ()


def _vector(task: TaskState) -> Vector:
    req = task.req
    # req.mig and req.scalar: sorted, and empty for nearly every pod
    return (float(req.cpu), float(req.mem), float(req.gpus), req.mig, req.scalar)


def _less_equal(a: Vector, b: Vector) -> bool:
    """ResourceVector.LessEqual: every dimension; a MIG profile or scalar resource one side lacks counts 0 there."""
    if a[0] > b[0] or a[1] > b[1] or a[2] > b[2]:
        return False
    return _named_less_equal(a[3], b[3]) and _named_less_equal(a[4], b[4])


def _named_less_equal(a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...]) -> bool:
    if not a:
        return True
    theirs = dict(b)
    return all(n <= theirs.get(name, 0) for name, n in a)


def _sorted_vectors(tasks: Sequence[TaskState]) -> list[Vector]:
    # Go's sort.Slice with LessEqual as "less"; for a partial order the result follows the comparisons made.
    def compare(a: Vector, b: Vector) -> int:
        return -1 if _less_equal(a, b) and not _less_equal(b, a) else (1 if _less_equal(b, a) and a != b else 0)

    return sorted((_vector(t) for t in tasks), key=functools.cmp_to_key(compare))


def _pending(job: JobState) -> list[TaskState]:
    return [t for t in job.tasks if t.status == PENDING]


def easier(job: JobState, other: JobState) -> bool:
    """jobEasierToScheduleComparison(job, representative)."""
    mine, theirs = _pending(job), _pending(other)
    if not mine or not theirs:
        return False
    if len(theirs) > len(mine):
        return True
    a, b = _sorted_vectors(mine), _sorted_vectors(theirs)
    for i in range(len(a)):
        if i >= len(b):
            return False
        if _less_equal(a[i], b[i]):
            if _less_equal(b[i], a[i]):
                continue
            return True
    return False


def smaller_footprint(job: JobState, other: JobState) -> bool:
    """isPodGroupFootprintSmaller: every pending pod of `job` has a larger or equal one in `other`."""
    mine, theirs = _pending(job), _pending(other)
    if not mine or not theirs or len(mine) > len(theirs):
        return False
    a, b = _sorted_vectors(mine), _sorted_vectors(theirs)
    return all(_less_equal(a[i], b[i]) for i in range(len(a)))


class Representatives:
    """MinimalJobRepresentatives: per signature, the smallest job that failed."""

    def __init__(self) -> None:
        self._by_signature: dict[Signature, JobState] = {}

    def worth_trying(self, job: JobState) -> bool:
        representative = self._by_signature.get(job.signature)
        return representative is None or easier(job, representative)

    def failed(self, job: JobState) -> None:
        key = job.signature
        current = self._by_signature.get(key)
        if current is not None and not smaller_footprint(job, current):
            return
        self._by_signature[key] = job
