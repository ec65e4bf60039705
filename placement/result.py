"""What a simulation reports: per task, job, queue, node and GPU, plus lazily computed pending reasons."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from placement.queues import QueueState
from placement.reasons import Reason, explain
from placement.tasks import ACTIVE_USED, KIND_MIG, PENDING, TERMINAL, JobState, TaskState

if TYPE_CHECKING:
    from placement.nodes import NodeState
    from placement.session import Session

__all__ = ["GpuResult", "JobResult", "NodeResult", "QueueResult", "Resources", "Result", "TaskResult", "Unsettled"]

_MB = 1e6


@dataclass(frozen=True, slots=True)
class Resources:
    """A queue-side resource vector in the Queue CRD's units (-1 = unlimited)."""

    gpu: float
    cpu_millis: float
    memory_mb: float

    @classmethod
    def from_vector(cls, vector: list[float]) -> Resources:
        memory = vector[1] if vector[1] == -1 else vector[1] / _MB
        return cls(gpu=vector[2], cpu_millis=vector[0], memory_mb=memory)


@dataclass(slots=True)
class TaskResult:
    """One pod after the simulation. `gpus` counts fractions (a gpu-memory pod: its share on its node)."""

    name: str
    job: str
    status: str
    node: str | None
    gpu_groups: tuple[str, ...]
    gpus: float
    mig: tuple[tuple[str, int], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "node": self.node, "gpuGroups": list(self.gpu_groups), "gpus": self.gpus}


@dataclass(frozen=True, slots=True)
class JobResult:
    name: str
    queue: str
    priority: int
    preemptible: bool
    tasks: tuple[str, ...]
    statuses: tuple[str, ...]

    @property
    def pending(self) -> bool:
        return PENDING in self.statuses


@dataclass(frozen=True, slots=True)
class QueueResult:
    """A queue's quota (deserved), limit, fair share and usage after the simulation."""

    name: str
    parent: str | None
    priority: int
    deserved: Resources
    limit: Resources
    fair_share: Resources
    allocated: Resources
    allocated_non_preemptible: Resources
    requested: Resources


@dataclass(frozen=True, slots=True)
class GpuResult:
    """One physical GPU: a shared GPU group (id = its label) or a whole GPU (id 'gpuN')."""

    id: str
    tasks: tuple[str, ...]
    used: float
    shared: bool


@dataclass(frozen=True, slots=True)
class NodeResult:
    name: str
    gpus: int
    gpu_memory_mib: int
    free_gpus: int
    releasing_gpus: int
    tasks: tuple[str, ...]
    devices: tuple[GpuResult, ...]


def loop_phrase(period: int) -> str:
    """How a run that never settles repeats, after `period` cycles (Unsettled.period)."""
    if period == 1:
        return "every cycle ends as the one before did"
    return f"the same state comes back every {period} cycles"


@dataclass(frozen=True, slots=True)
class Unsettled:
    """A run to a steady state that reached its cycle limit with pods still moving: KAI would go on moving them.

    `moving`: the jobs whose pods changed in the last `period` cycles (the last cycle when none repeated), in job
    order. `period`: the pods' state at a cycle's end repeated after this many cycles (the same placements and
    evictions again and again), if it did.
    """

    moving: tuple[str, ...]
    period: int | None

    def to_json(self, cycles: int) -> dict[str, Any]:
        return {"cycles": cycles, "moving": list(self.moving), "period": self.period}

    def describe(self, cycles: int, shown: int = 10) -> str:
        names = ", ".join(self.moving[:shown]) + (
            f" and {len(self.moving) - shown} more" if len(self.moving) > shown else ""
        )
        loop = f"; {loop_phrase(self.period)}, so it never settles" if self.period else ""
        every = "every cycle" if (self.period or 1) == 1 else f"in each loop of {self.period} cycles"
        return (
            f"does not settle: after {cycles} cycles KAI still moves the pods of {len(self.moving)} job(s) "
            f"{every} ({names}){loop}"
        )


@dataclass
class Result:
    """The outcome of `simulate`. Reasons are computed on first access (they scan the final cluster)."""

    tasks: dict[str, TaskResult]
    jobs: dict[str, JobResult]
    queues: dict[str, QueueResult]
    nodes: dict[str, NodeResult]
    cycles: int
    partial: bool = False  # stopped by max_seconds: later decisions were not made
    unsettled: Unsettled | None = None  # run to a steady state (rounds=None) that never reached one
    _session: Session | None = field(default=None, repr=False)
    _reasons: dict[str, Reason] | None = field(default=None, repr=False)
    _explained: dict[str, Reason] = field(default_factory=dict, repr=False)

    @property
    def reasons(self) -> dict[str, Reason]:
        """For every job with pending pods, why (see `placement.reasons`)."""
        if self._reasons is None:
            ssn = self._session
            self._reasons = {}
            if ssn is not None:
                for name, job in ssn.jobs.items():
                    if job.has_pending():
                        self._reasons[name] = self._explain(ssn, job)
        return self._reasons

    def _explain(self, ssn: Session, job: JobState) -> Reason:
        """`explain`, within max_seconds: each costs a scan of the nodes, and 200,000 pending jobs on 20,000
        nodes would take hours. Past the deadline the result is partial, and the job says it was not explained."""
        if ssn.deadline is not None and time.monotonic() > ssn.deadline:
            self.partial = True
            return explain(ssn, job, scan=False)
        return explain(ssn, job)

    def reason(self, job: str) -> Reason | None:
        """Why one job waits; only that job is explained (a big cluster need not explain them all)."""
        if self._reasons is not None:
            return self._reasons.get(job)
        ssn = self._session
        state = ssn.jobs.get(job) if ssn is not None else None
        if ssn is None or state is None or not state.has_pending():
            return None
        if job not in self._explained:
            self._explained[job] = self._explain(ssn, state)
        return self._explained[job]

    def summary(self, pending_shown: int = 20) -> dict[str, Any]:
        """Counts instead of every pod (bounded, whatever the cluster's size), and the first pending jobs' reasons."""
        pods: dict[str, int] = {}
        for task in self.tasks.values():
            pods[task.status] = pods.get(task.status, 0) + 1
        pending = [job for job in self.jobs.values() if job.pending]
        gpus = sum(n.gpus for n in self.nodes.values())
        free = sum(n.free_gpus for n in self.nodes.values())
        shown = []
        for job in pending[:pending_shown]:
            why = self.reason(job.name)
            shown.append(
                {"job": job.name, "queue": job.queue, "code": why.code if why else None, "reason": str(why or "")}
            )
        out: dict[str, Any] = {
            "cycles": self.cycles,
            "pods": dict(sorted(pods.items())),
            "jobs": {"total": len(self.jobs), "pending": len(pending)},
            "gpus": {"total": gpus, "wholeFree": free},
            "pending": shown,
        }
        if self.partial:
            out["partial"] = True
        if self.unsettled is not None:
            out["unsettled"] = self.unsettled.to_json(self.cycles)
        return out

    def to_json(self) -> dict[str, Any]:
        """The scorer's shape: {"tasks": {"<job>-<i>": {status, node, gpuGroups, gpus}}}."""
        out: dict[str, Any] = {"tasks": {name: task.to_json() for name, task in self.tasks.items()}}
        if self.partial:
            out["partial"] = True
        if self.unsettled is not None:
            out["unsettled"] = self.unsettled.to_json(self.cycles)
        return out


def _task_result(task: TaskState) -> TaskResult:
    placed = task.status in ACTIVE_USED and task.node is not None
    carried = task.carried if task.status == PENDING else None
    if task.status in TERMINAL:
        carried = task.spec.node  # a terminated pod is reported as it was
    gpus = 0.0
    if placed and task.req.kind != KIND_MIG:
        gpus = task.accepted[2]
    return TaskResult(
        name=task.name,
        job=task.job.name,
        status=task.status,
        node=task.node if placed else carried,
        gpu_groups=tuple(task.groups) if placed and task.req.shared else (),
        gpus=gpus,
        mig=task.req.mig,
    )


def _queue_result(q: QueueState) -> QueueResult:
    return QueueResult(
        name=q.name,
        parent=q.parent.name if q.parent else None,
        priority=q.priority,
        deserved=Resources.from_vector(q.deserved),
        limit=Resources.from_vector(q.limit),
        fair_share=Resources.from_vector(q.fair),
        allocated=Resources.from_vector(q.alloc),
        allocated_non_preemptible=Resources.from_vector(q.alloc_np),
        requested=Resources.from_vector(q.request),
    )


def build_result(ssn: Session, cycles: int, unsettled: Unsettled | None = None) -> Result:
    tasks: dict[str, TaskResult] = {}
    jobs: dict[str, JobResult] = {}
    for job in ssn.jobs.values():
        for task in job.tasks:
            tasks[task.name] = _task_result(task)
        jobs[job.name] = JobResult(
            name=job.name,
            queue=job.queue_name,
            priority=job.priority,
            preemptible=job.preemptible,
            tasks=tuple(t.name for t in job.tasks),
            statuses=tuple(t.status for t in job.tasks),
        )
    queues = {name: _queue_result(q) for name, q in ssn.queues.items()}
    by_node: dict[str, list[TaskResult]] = {}
    for t in tasks.values():
        if t.node is not None and t.status in ACTIVE_USED:  # Pending and terminated pods hold nothing
            by_node.setdefault(t.node, []).append(t)
    nodes = {node.name: _node_result(node, by_node.get(node.name, [])) for node in ssn.node_list}
    return Result(
        tasks=tasks,
        jobs=jobs,
        queues=queues,
        nodes=nodes,
        cycles=cycles,
        partial=ssn.partial,
        unsettled=unsettled,
        _session=ssn,
    )


def _node_result(node: NodeState, on_node: list[TaskResult]) -> NodeResult:
    shared: dict[str, list[str]] = {}
    devices: list[GpuResult] = []
    serial = 0
    for t in sorted(on_node, key=lambda t: t.name):
        if t.gpu_groups:
            for g in t.gpu_groups:
                shared.setdefault(g, []).append(t.name)
        elif t.gpus >= 1:
            # A bound pod can ask for more GPUs than its node has (the kubelet refuses it later): the node has no more.
            for _ in range(min(int(t.gpus), max(0, node.gpu_count - serial))):
                devices.append(GpuResult(f"gpu{serial}", (t.name,), 1.0, False))
                serial += 1
    for g, names in shared.items():
        used = node.sh_used.get(g, 0) / node.gpu_mem if node.gpu_mem else 0.0
        devices.append(GpuResult(g, tuple(names), used, True))
    return NodeResult(
        name=node.name,
        gpus=node.gpu_count,
        gpu_memory_mib=node.gpu_mem,
        free_gpus=int(node.idle_gpus),
        releasing_gpus=int(node.rel_gpus),
        tasks=tuple(t.name for t in on_node),
        devices=tuple(devices),
    )
