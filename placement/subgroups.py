"""A PodGroup's subgroup tree (KAI@v0.17.0 pkg/scheduler/api/podgroup_info/subgroup_info and allocation_info.go).

A job with `subGroups` is a tree: inner subgroups (SubGroupSets) are satisfied when `minSubGroup` of their
direct members are (absent: all of them), leaves (PodSets) when `minMember` of their pods are placed. The
root is a SubGroupSet with the job's `minSubGroup` and topology constraint. A job without subgroups but with
a topology constraint is a root over one "default" PodSet. Jobs with neither never get a tree: their
single-gang fast paths in `placement.tasks` are the same rules specialised.

Counters are computed from the pods' current statuses on demand, because the solvers look at clones (a
victim job minus the pods already offered, a pending job's first k pods) whose pods are shared with the job.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import TYPE_CHECKING

from placement.tasks import ACTIVE_ALLOCATED, ACTIVE_USED, PENDING, PIPELINED, RELEASING, TaskState

if TYPE_CHECKING:
    from placement.model import Job, TopologyConstraint

__all__ = ["DEFAULT_POD_SET", "PodSet", "SubGroupSet", "build_tree"]

DEFAULT_POD_SET = "default"


class PodSet:
    """A leaf subgroup: its pods (task order) and its gang minimum."""

    __slots__ = ("constraint", "min_available", "name", "parent", "tasks")

    def __init__(self, name: str, min_available: int, constraint: TopologyConstraint | None) -> None:
        self.name = name
        self.min_available = min_available
        self.constraint = constraint
        self.parent: SubGroupSet | None = None
        self.tasks: list[TaskState] = []

    def active_allocated(self) -> int:
        return sum(1 for t in self.tasks if t.status in ACTIVE_ALLOCATED)

    def active_used(self) -> int:
        return sum(1 for t in self.tasks if t.status in ACTIVE_USED)

    def satisfied(self) -> bool:
        """Satisfied for allocation and eviction: placed pods (not releasing ones) reach the minimum."""
        return self.active_allocated() >= self.min_available

    def count_and_threshold(self) -> tuple[int, int]:
        return self.active_allocated(), self.min_available

    def ready(self) -> bool:
        """IsReadyForScheduling: alive pods (pending or placed, not releasing or finished) can reach the minimum."""
        return sum(1 for t in self.tasks if t.status == PENDING or t.status in ACTIVE_ALLOCATED) >= self.min_available

    def pod_sets(self) -> list[PodSet]:
        return [self]

    def all_tasks(self) -> list[TaskState]:
        return self.tasks

    def has_surplus(self) -> bool:
        return self.active_allocated() > self.min_available


class SubGroupSet:
    """An inner subgroup (or the root): satisfied when `minSubGroup` of its direct members are."""

    __slots__ = ("constraint", "members", "min_sub_group", "name", "parent")

    def __init__(self, name: str, min_sub_group: int | None, constraint: TopologyConstraint | None) -> None:
        self.name = name
        self.min_sub_group = min_sub_group
        self.constraint = constraint
        self.parent: SubGroupSet | None = None
        self.members: list[PodSet | SubGroupSet] = []

    def needed(self) -> int:
        return len(self.members) if self.min_sub_group is None else self.min_sub_group

    def num_satisfied(self) -> int:
        return sum(1 for m in self.members if m.satisfied())

    def satisfied(self) -> bool:
        return self.num_satisfied() >= self.needed()

    def count_and_threshold(self) -> tuple[int, int]:
        return self.num_satisfied(), self.needed()

    def ready(self) -> bool:
        return sum(1 for m in self.members if m.ready()) >= self.needed()

    def pod_sets(self) -> list[PodSet]:
        out: list[PodSet] = []
        for m in self.members:
            out.extend(m.pod_sets())
        return out

    def all_tasks(self) -> list[TaskState]:
        return [t for ps in self.pod_sets() for t in ps.tasks]

    def has_surplus(self) -> bool:
        return self.num_satisfied() > self.needed() or any(m.has_surplus() for m in self.members)

    # ---- job-level predicates (called on the root) ---------------------------------------------------

    def gang_satisfied(self) -> bool:
        """IsGangSatisfied: every leaf has its minimum active (releasing pods count); minSubGroup is not read."""
        return all(ps.active_used() >= ps.min_available for ps in self.pod_sets())

    def stale(self) -> bool:
        """IsStale's gang part: some leaf below its minimum (the caller checks the job has active pods)."""
        return any(ps.active_used() < ps.min_available for ps in self.pod_sets())

    def elastic_rank(self) -> int:
        """elastic plugin: some leaf below its minimum (0), every leaf exactly at it (1), else above (2)."""
        exact = True
        for ps in self.pod_sets():
            n = ps.active_allocated()
            if n < ps.min_available:
                return 0
            exact = exact and n == ps.min_available
        return 1 if exact else 2

    def should_pipeline(self) -> bool:
        """ShouldPipelineJob: a leaf with a pod waiting on releasing resources and too few others placed."""
        for ps in self.pod_sets():
            pipelined = sum(1 for t in ps.tasks if t.status == PIPELINED)
            placed = sum(1 for t in ps.tasks if t.status in ACTIVE_ALLOCATED and t.status != PIPELINED)
            if pipelined and placed < ps.min_available:
                return True
        return False

    def tasks_to_allocate(self, real: bool) -> list[TaskState]:
        """GetTasksToAllocate: the gang phase takes what the most needy members lack, else one more pod."""
        return _collect(self, real)

    def tasks_to_evict(self) -> list[TaskState]:
        """GetTasksToEvict: one surplus pod, else a whole surplus member, else every placed pod."""
        chunk = _evict_elastic(self)
        if chunk:
            return chunk
        return [t for t in self.all_tasks() if t.status in ACTIVE_ALLOCATED]

    # ---- clones ---------------------------------------------------------------------------------------

    def clone(self, keep: Iterable[TaskState], representative: bool) -> SubGroupSet:
        """The same tree holding only `keep` (CloneWithTasks); a representative (the solvers' partial job)
        lowers each leaf's minimum to its pods and each explicit minSubGroup to its non-empty members."""
        kept = {id(t) for t in keep}
        return _clone(self, kept, representative)  # type: ignore[return-value]


def member_order_key(member: PodSet | SubGroupSet) -> tuple[int, int, Fraction, str]:
    """SubGroupOrderFn as a key: unsatisfied first, then members with a minimum by placed/minimum, then name."""
    count, threshold = member.count_and_threshold()
    if count < threshold:
        return (0, 0, Fraction(0), member.name)
    if threshold > 0:
        return (1, 0, Fraction(count, threshold), member.name)
    return (1, 1, Fraction(count), member.name)


def ordered_members(sgs: SubGroupSet) -> list[PodSet | SubGroupSet]:
    return sorted(sgs.members, key=member_order_key)


def _from_pod_set(ps: PodSet, real: bool) -> list[TaskState]:
    pending = [t for t in ps.tasks if t.status == PENDING or (not real and t.status == RELEASING and t.virtual)]
    pending.sort(key=_task_order)
    placed = ps.active_allocated()
    want = ps.min_available - placed if placed < ps.min_available else min(len(pending), 1)
    return pending[:want]


def _task_order(task: TaskState) -> tuple[int, int, str]:
    """TaskOrderFn as a key (TaskState.order): labelled pods first, higher task-priority first, then pod name."""
    return task.order


def _collect(sgs: SubGroupSet, real: bool) -> list[TaskState]:
    children = ordered_members(sgs)
    if not sgs.satisfied():
        out: list[TaskState] = []
        for child in children[: sgs.needed()]:
            if child.satisfied():
                continue
            if isinstance(child, SubGroupSet):
                out.extend(_collect(child, real))
            else:
                out.extend(_from_pod_set(child, real))
        return out
    for child in children:
        tasks = _collect(child, real) if isinstance(child, SubGroupSet) else _from_pod_set(child, real)
        if tasks:
            return tasks
    return []


def _evict_elastic(sgs: SubGroupSet) -> list[TaskState]:
    satisfied = sgs.num_satisfied()
    if satisfied == 0:
        return []
    # The eviction order is SubGroupOrderFn reversed: the most satisfied member, highest name, first.
    members = sorted(sgs.members, key=member_order_key, reverse=True)
    if sgs.has_surplus():
        for m in members:
            if isinstance(m, SubGroupSet):
                chunk = _evict_elastic(m)
            elif m.has_surplus():
                placed = [t for t in m.tasks if t.status in ACTIVE_ALLOCATED]
                chunk = [max(placed, key=_task_order)]  # the reverse task order's first pod
            else:
                chunk = []
            if chunk:
                return chunk
    if sgs.needed() < satisfied:
        for m in members:
            chunk = [t for t in m.all_tasks() if t.status in ACTIVE_ALLOCATED]
            if chunk:
                return chunk
    return []


def _clone(node: PodSet | SubGroupSet, kept: set[int], representative: bool) -> PodSet | SubGroupSet:
    if isinstance(node, PodSet):
        ps = PodSet(node.name, node.min_available, node.constraint)
        ps.tasks = [t for t in node.tasks if id(t) in kept]
        if representative and ps.tasks:
            ps.min_available = min(ps.min_available, len(ps.tasks))
        return ps
    sgs = SubGroupSet(node.name, node.min_sub_group, node.constraint)
    for member in node.members:
        child = _clone(member, kept, representative)
        child.parent = sgs
        sgs.members.append(child)
    if representative and sgs.min_sub_group is not None:
        non_empty = sum(1 for m in sgs.members if m.all_tasks())
        sgs.min_sub_group = min(sgs.min_sub_group, non_empty)
    return sgs


def build_tree(spec: Job, tasks: list[TaskState], default_minimum: int) -> tuple[SubGroupSet, list[TaskState]]:
    """FromPodGroup + setSubGroups: the tree and the pods that name no leaf (never scheduled).

    Subgroups named as someone's parent are SubGroupSets, the others PodSets (minMember absent = 0).
    Without subgroups the root holds one "default" PodSet with the job's gang minimum.
    """
    # FromPodGroup gives the root a constraint only when it names a topology (subgroup_info/factory.go:25-33).
    root_constraint = spec.topology if spec.topology is not None and spec.topology.topology else None
    root = SubGroupSet("", spec.min_sub_group, root_constraint)
    if not spec.sub_groups:
        ps = PodSet(DEFAULT_POD_SET, default_minimum, None)
        ps.parent = root
        ps.tasks = list(tasks)
        root.members.append(ps)
        return root, []
    parents = {g.parent for g in spec.sub_groups if g.parent is not None}
    nodes: dict[str, PodSet | SubGroupSet] = {}
    for g in spec.sub_groups:
        if g.name in parents:
            nodes[g.name] = SubGroupSet(g.name, g.min_sub_group, g.topology)
        else:
            nodes[g.name] = PodSet(g.name, max(g.min_member or 0, 0), g.topology)
    for g in spec.sub_groups:
        parent = root if g.parent is None else nodes[g.parent]
        assert isinstance(parent, SubGroupSet)
        nodes[g.name].parent = parent
        parent.members.append(nodes[g.name])
    invalid: list[TaskState] = []
    for task in tasks:
        leaf = nodes.get(task.spec.sub_group or "")
        if isinstance(leaf, PodSet):
            leaf.tasks.append(task)
        else:
            invalid.append(task)
    return root, invalid
