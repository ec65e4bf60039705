"""Per-session job and task state: requests in KAI's terms, statuses, and the counters job order needs.

A task's GPU request is normalised once into KAI's `GpuResourceRequirement` shape (count, portion,
gpu memory, MIG devices) so that every later check reads plain attributes.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import TYPE_CHECKING, Any

from placement.model import NO_CONSTRAINTS, Job, NodeConstraints, Task

if TYPE_CHECKING:
    from placement.queues import QueueState
    from placement.subgroups import SubGroupSet

__all__ = [
    "ACTIVE_ALLOCATED",
    "ACTIVE_USED",
    "ALLOCATED",
    "ALLOCATED_STATUS",
    "BINDING",
    "PENDING",
    "PIPELINED",
    "RELEASING",
    "RUNNING",
    "STUCK_IN_RELEASING",
    "JobState",
    "TaskRequest",
    "TaskState",
    "go_round",
    "mig_gpu_portion",
]

PENDING = "Pending"
ALLOCATED = "Allocated"
PIPELINED = "Pipelined"
BINDING = "Binding"
RUNNING = "Running"
RELEASING = "Releasing"
# A Running pod deleted more than 2 minutes ago (KAI@v0.17.0 pod_info.go:465-472, constants.go:28): it still
# holds its node's resources, but as used, not releasing, so nothing is pipelined onto them (node_info.go:485-493
# default branch), and it is no eviction candidate (not an active-allocated status).
STUCK_IN_RELEASING = "StuckInReleasing"
# FORMAT v2 terminal pods (pod phases): hold nothing, never placed or evicted, reported unchanged.
FAILED = "Failed"
SUCCEEDED = "Succeeded"
TERMINAL = frozenset({FAILED, SUCCEEDED})

# pod_status groups (pkg/scheduler/api/pod_status): which statuses count as what.
ACTIVE_ALLOCATED = frozenset({ALLOCATED, PIPELINED, BINDING, RUNNING})
ACTIVE_USED = ACTIVE_ALLOCATED | {RELEASING, STUCK_IN_RELEASING}
ALLOCATED_STATUS = frozenset({ALLOCATED, BINDING, RUNNING})

KIND_CPU = "cpu"
KIND_WHOLE = "whole"
KIND_FRACTION = "fraction"
KIND_MEMORY = "memory"
KIND_MIG = "mig"

_MIG_NAME = re.compile(r"nvidia\.com/mig-([0-9]+)g\.([0-9]+)gb")


def go_round(x: float) -> float:
    """Go's math.Round for non-negative values: half away from zero (Python's round() is banker's). A
    non-finite share (gpu-memory on a GPU whose label floored to 0) counts as none: Go's int64(+Inf) is
    undefined, and such a pod is never placed there again anyway."""
    return float(math.floor(x + 0.5)) if math.isfinite(x) else 0.0


def extended_gpus(portion: float, count: int) -> float:
    """KAI's getExtendedResourceGpus: fixed-point (1/100) GPUs of `count` devices of `portion` each."""
    return go_round(portion * 100) * count / 100


def mig_gpu_portion(profile: str) -> int:
    """GPUs of quota one MIG device of this profile costs ("nvidia.com/mig-2g.20gb" -> 2); 0 if unparsable."""
    match = _MIG_NAME.fullmatch(profile)
    return int(match.group(1)) if match else 0


_SHAPES: dict[tuple[object, ...], int] = {}
# Shared by every request without scalar resources or pod labels (most of them); never written to.
_NONE: dict[str, Any] = {}
# Node constraints by a small id (0: none), so nodes cache their verdict per id (NodeState.admits).
_CONSTRAINTS: dict[NodeConstraints, int] = {NO_CONSTRAINTS: 0}


class TaskRequest:
    """A task's request in KAI's shape. `gpus` is ResReq.GPUs(); `quota_gpus` the vector's TotalGPUs (for all but a
    share beside MIG devices, GetGpusQuota(); `requirement_gpus` is that one always)."""

    __slots__ = (
        "constraint_id",
        "constraints",
        "count",
        "cpu",
        "cpu_only",
        "gpu_memory",
        "gpus",
        "has_anti",
        "has_preferred",
        "host_ports",
        "kind",
        "labels",
        "mem",
        "mig",
        "mig_gpus",
        "portion",
        "quota_gpus",
        "requirement_gpus",
        "scalar",
        "scalar_map",
        "shape",
        "share_mig_gpus",
        "signature_id",
    )

    def __init__(self, task: Task) -> None:
        self.cpu = float(task.cpu_millis)
        self.mem = float(task.memory_bytes)
        self.mig: tuple[tuple[str, int], ...] = tuple(sorted((k, v) for k, v in task.mig.items() if v))
        # Scalar resources (placement.scalar_resources), sorted by name; empty for nearly every pod.
        self.scalar: tuple[tuple[str, int], ...] = tuple(sorted((k, v) for k, v in task.scalar.items() if v))
        self.scalar_map = dict(self.scalar) if self.scalar else _NONE
        self.constraints = task.constraints
        self.constraint_id = _CONSTRAINTS.setdefault(task.constraints, len(_CONSTRAINTS))
        # What inter-pod affinity reads (placement.pod_affinity): the pod's labels, and whether it has
        # anti-affinity terms that constrain the pods placed after it.
        self.labels = dict(task.pod_labels) if task.pod_labels else _NONE
        self.has_anti = bool(task.constraints.pod_anti_affinity)
        self.has_preferred = task.constraints.has_preferred
        self.host_ports = task.constraints.host_ports  # placement.host_ports
        # KAI's scheduling signature hashes a port's hostPort number, not its IP or protocol
        # (pod_info/scheduling_constraints_signature.go:92-97): pods that differ only there are alike.
        self.signature_id = self.constraint_id
        if self.host_ports or task.constraints.volume_nodes is not None:
            # KAI's signature hashes host port numbers alone, and a claim by its class, size and phase
            # (NodeConstraints.other), not where its volume may be used.
            numbers = tuple(("", "", port) for _, _, port in self.host_ports)
            alike = dataclasses.replace(task.constraints, host_ports=numbers, volume_nodes=None, volume_reason="")
            self.signature_id = _CONSTRAINTS.setdefault(alike, len(_CONSTRAINTS))
        self.gpu_memory = 0
        # A share beside MIG devices stays a share (pod_info.go:518-553) whose vector keeps the MIG devices
        # (:215, 576-583): a node must have them too (NodeState.fits) and holds them (Entry).
        if task.gpu_memory_mib:
            self.kind, self.count, self.portion = KIND_MEMORY, task.gpu_devices, 0.0
            self.gpu_memory = int(task.gpu_memory_mib)
        elif task.gpu_fraction:
            self.kind, self.count, self.portion = KIND_FRACTION, task.gpu_devices, float(task.gpu_fraction)
        elif self.mig:
            # Whole GPUs beside MIG devices (admission allows it): KAI keeps both in the pod's vector and a node
            # must fit both (node_info.go:351-352, 755-761), though it then holds only the MIG devices (Entry).
            self.kind, self.count, self.portion = KIND_MIG, task.gpu, 1.0 if task.gpu else 0.0
        elif task.gpu:
            self.kind, self.count, self.portion = KIND_WHOLE, int(task.gpu), 1.0
        else:
            self.kind, self.count, self.portion = KIND_CPU, 0, 0.0
        self.gpus = extended_gpus(self.portion, self.count)
        # IsCPUOnlyRequest (pod_info.go:363-370): no GPUs() (in 1/100 GPUs), no gpu-memory, no MIG. A fraction
        # under 0.005 rounds to 0 GPUs: still a shared-GPU pod, but ordered and filtered as a CPU pod.
        self.cpu_only = self.gpus == 0 and self.kind in (KIND_CPU, KIND_FRACTION)
        self.mig_gpus = float(sum(mig_gpu_portion(name) * n for name, n in self.mig))
        self.quota_gpus = self.gpus + self.mig_gpus  # TotalGPUs of the pod's vector: its MIG devices too
        # A share's MIG devices are in its vector, not its GPU requirement (pod_info.go:527-531): the queue is
        # charged them (NodeState.accepted_for), the idle-GPU filters, which read the requirement, are not.
        self.share_mig_gpus = self.mig_gpus if self.kind in (KIND_FRACTION, KIND_MEMORY) else 0.0
        self.requirement_gpus = self.quota_gpus - self.share_mig_gpus  # GpuRequirement.GetGpusQuota()
        # Everything a node's fit and rank for this request depend on: equal shapes, equal answers. A small
        # int, as it keys lookups on hot paths (a tuple would be hashed again at every lookup).
        shape = (self.kind, self.count, self.portion, self.gpu_memory, self.cpu, self.mem, self.mig, self.scalar)
        self.shape: int = _SHAPES.setdefault(shape, len(_SHAPES))

    @property
    def shared(self) -> bool:
        """A fraction or gpu-memory request: placed on a shared GPU group."""
        return self.kind == KIND_FRACTION or self.kind == KIND_MEMORY

    def memory_fraction(self, gpu_memory_mib: int) -> float:
        """GpuMemoryAsGpuFraction: the GPUs a gpu-memory request is worth on GPUs of this size, in Go's operation
        order (count * (memory / device)): 3 x 100 MiB of 1000 MiB is 0.30000000000000004, over a 0.3 quota."""
        return self.count * (self.gpu_memory / gpu_memory_mib) if gpu_memory_mib else 0.0

    def describe(self) -> str:
        """Human-readable request, e.g. '2 GPUs', '0.5 GPU', '2 x 350 MiB GPU memory'."""
        if self.kind == KIND_WHOLE:
            return f"{self.count} GPU" + ("s" if self.count != 1 else "")
        devices = "".join(f", {n} x {name}" for name, n in self.mig)  # MIG devices beside a share
        if self.kind == KIND_FRACTION:
            each = f"{self.portion:g} GPU"
            return (each if self.count == 1 else f"{self.count} x {each}") + devices
        if self.kind == KIND_MEMORY:
            each = f"{self.gpu_memory} MiB of GPU memory"
            return (each if self.count == 1 else f"{self.count} x {each}") + devices
        if self.kind == KIND_MIG:
            whole = [f"{self.count} GPU" + ("s" if self.count != 1 else "")] if self.count else []
            return ", ".join([*whole, *(f"{n} x {name}" for name, n in self.mig)])
        return "no GPU"


class TaskState:
    """One pod during a session. `node` is where it is placed (Pipelined: where it will run)."""

    __slots__ = (
        "accepted",
        "carried",
        "groups",
        "index",
        "job",
        "name",
        "node",
        "order",
        "req",
        "spec",
        "status",
        "virtual",
    )

    def __init__(self, job: JobState, index: int, spec: Task, req: TaskRequest | None = None) -> None:
        self.job = job
        self.index = index
        self.spec = spec
        self.name = job.name + "-" + str(index)
        self.req = req if req is not None else TaskRequest(spec)
        self.status = PENDING
        self.node: str | None = None
        # FORMAT v2 "Pending task with a node": the pod's spec.nodeName, carried (not a constraint) and
        # reported while the task stays Pending; an allocation drops it, a pipeline keeps it for a rollback.
        self.carried: str | None = spec.node if spec.state == PENDING else None
        self.groups: list[str] = []
        # Set by the statement when a status changes inside a session (KAI's IsVirtualStatus).
        self.virtual = False
        # [cpu, memory, gpu quota] this task holds in its queue once placed (KAI's AcceptedResource).
        self.accepted: tuple[float, float, float] = (0.0, 0.0, 0.0)
        # KAI's taskorder (plugins/taskorder/task_order.go:28-60): a pod with the kai.scheduler/task-priority
        # label before one without, whatever its value; higher values first; then the pod UID (the pod name).
        labelled = spec.priority is not None
        self.order = (0 if labelled else 1, -(spec.priority or 0), self.name)

    def __repr__(self) -> str:
        return f"TaskState({self.name}, {self.status}, {self.node})"


class JobState:
    """A PodGroup during a session, with the counters KAI's job order and gang logic read."""

    __slots__ = (
        "_init_cache",
        "_keys",
        "creation",
        "evicted",
        "min_member",
        "n_active_alloc",
        "n_active_used",
        "n_pending",
        "name",
        "pipelined_by",
        "preemptible",
        "priority",
        "queue",
        "queue_name",
        "reached",
        "reason",
        "signature",
        "spec",
        "started_ago",
        "tasks",
        "tasks_by_order",
        "tree",
        "version",
        "within_preemption_delay",
    )

    def __init__(self, spec: Job, creation: int) -> None:
        self.spec = spec
        self.name = spec.name
        self.queue_name = spec.queue
        self.queue: QueueState | None = None
        self.priority = spec.priority
        self.preemptible = spec.is_preemptible
        self.min_member = spec.gang_size
        self.creation = creation
        self._keys = tuple((-self.priority, rank, creation, self.name) for rank in range(3))
        delay, age = spec.preemption_delay_seconds, spec.age_seconds
        # Strict: exactly at the end of the window evictions are allowed; a delay <= 0 is none.
        self.within_preemption_delay = bool(delay and delay > 0 and age is not None and age < delay)
        # Seconds since the job last started (minruntime); allocate sets 0 when it starts the job.
        self.started_ago = spec.started_seconds_ago
        # Identical pods of a count-style job share one spec object, so they share one parsed request.
        requests: dict[int, TaskRequest] = {}
        self.tasks = []
        for i, t in enumerate(spec.tasks):
            req = requests.get(id(t))
            if req is None:
                req = requests[id(t)] = TaskRequest(t)
            self.tasks.append(TaskState(self, i, t, req))
        self.tasks_by_order = sorted(self.tasks, key=lambda t: t.order) if len(self.tasks) > 1 else self.tasks
        self.n_active_alloc = 0
        self.n_active_used = 0
        self.n_pending = len(self.tasks)
        # Bumped on every status change; caches keyed on it stay valid until the job changes.
        self.version = 0
        self._init_cache: tuple[int, tuple[float, float, float]] | None = None
        self.reason: object = None
        # For pending reasons only, never read by a decision: whether an action has taken the job from its
        # order (a run stopped by max_seconds may never get to it); the last committed eviction of its pods
        # (the action, the job it made room for, the node a moved pod was to restart on) or pipelining of
        # them (the action, the node), whichever came last (Statement.commit).
        self.reached = False
        self.evicted: tuple[str, str | None, str | None] | None = None
        self.pipelined_by: tuple[str, str] | None = None
        # KAI's scheduling-constraints signature, taken when a session opens (placement.signatures).
        self.signature: tuple[tuple[object, ...], ...] = ()
        # Jobs with subgroups or a topology constraint get their subgroup tree from the session; the
        # methods below then follow it instead of the single-gang shortcuts.
        self.tree: SubGroupSet | None = None

    def set_status(self, task: TaskState, status: str) -> None:
        old = task.status
        if old == status:
            return
        if old == PENDING and status != PIPELINED:
            task.carried = None
        if old == PENDING:
            self.n_pending -= 1
        if old in ACTIVE_ALLOCATED:
            self.n_active_alloc -= 1
        if old in ACTIVE_USED:
            self.n_active_used -= 1
        if status == PENDING:
            self.n_pending += 1
        if status in ACTIVE_ALLOCATED:
            self.n_active_alloc += 1
        if status in ACTIVE_USED:
            self.n_active_used += 1
        task.status = status
        self.version += 1

    def elastic_rank(self) -> int:
        """elastic plugin: below minMember (0) before exactly at it (1) before above it (2)."""
        if self.tree is not None:
            return self.tree.elastic_rank()
        if self.n_active_alloc < self.min_member:
            return 0
        return 1 if self.n_active_alloc == self.min_member else 2

    def order_key(self) -> tuple[int, int, int, str]:
        """JobOrderFn as a sort key: priority plugin, elastic plugin, then creation time and UID."""
        # Called for every pending job each time a job order is built (millions of times at scale): the
        # three possible keys are made once, and the elastic rank picks one.
        if self.tree is not None:
            return self._keys[self.tree.elastic_rank()]
        active, minimum = self.n_active_alloc, self.min_member
        return self._keys[0 if active < minimum else (1 if active == minimum else 2)]

    def is_ready(self) -> bool:
        """IsReadyForScheduling: enough alive pods to ever satisfy minMember."""
        if self.tree is not None:
            return self.tree.ready()
        return self.n_pending + self.n_active_alloc >= self.min_member

    def tasks_to_allocate(
        self, real: bool, tasks: list[TaskState] | None = None, min_member: int | None = None
    ) -> list[TaskState]:
        """GetTasksToAllocate: minMember minus allocated while below the gang minimum, else one more task."""
        if self.tree is not None and tasks is None:
            return self.tree.tasks_to_allocate(real)
        if tasks is None and len(self.tasks) == 1:
            task = self.tasks[0]
            if task.status == PENDING or (not real and task.status == RELEASING and task.virtual):
                return [task]
            return []
        minimum = self.min_member if min_member is None else min_member
        pool = self.tasks_by_order if tasks is None else tasks
        allocated = self.n_active_alloc if tasks is None else sum(1 for t in pool if t.status in ACTIVE_ALLOCATED)
        want = 1 if allocated >= minimum else minimum - allocated
        picked: list[TaskState] = []
        for task in pool:
            if task.status == PENDING or (not real and task.status == RELEASING and task.virtual):
                picked.append(task)
                if len(picked) >= want:
                    break
        return picked

    def has_pending(self) -> bool:
        return self.n_pending > 0
