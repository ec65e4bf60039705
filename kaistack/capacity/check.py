"""The verdict: KAI's cycle run on a stack's snapshot to a steady state, per workload, queue, node and GPU.

`check(config)` is what `kaistack check`, `validate`, the program's pre-flight gate (`gate`) and the
policy pack's kai-capacity policy all call; `kaistack.capacity.plan` builds the snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kaistack.capacity.oversized import oversized_gpu_memory
from kaistack.capacity.plan import WorkloadPlan, plan
from kaistack.capacity.vllm_startup import crowded_vllm_gpus, vllm_servers
from kaistack.declaration.model import Queue as DeclaredQueue
from kaistack.declaration.model import StackConfig
from placement import ACTIONS, Resources, Result, simulate
from placement.model import Job, Node
from placement.reasons import NOT_EXPLAINED, NOT_REACHED, TIME_LIMIT
from placement.result import loop_phrase

# --- the verdict ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodPlacement:
    name: str
    status: str
    node: str | None
    gpu_groups: tuple[str, ...]
    gpus: float
    # The node's value for each cluster.topology level, broadest first (empty: no topology or no node).
    domain: tuple[str, ...] = ()
    sub_group: str | None = None  # the kai.scheduler/subgroup-name the pod joins


@dataclass(frozen=True, slots=True)
class WorkloadVerdict:
    name: str
    kind: str
    where: str
    queue: str
    priority_class: str
    status: str  # Running | Partial | Pending | Empty
    reasons: tuple[str, ...]
    pods: tuple[PodPlacement, ...]
    # The declared constraint ({"required": level, "preferred": level}, unset ones left out), if any.
    topology: dict[str, str] | None = None
    moving: bool = False  # placed, pipelined or evicted in the last loop of a run that never settled
    # A stopped run did not get to it (or to explaining it): its status is the clock's, not the declaration's.
    not_reached: bool = False

    @property
    def pending(self) -> bool:
        return self.status in ("Pending", "Partial")

    @property
    def why(self) -> list[str]:
        """Its reasons, and that KAI never lets it settle when it keeps moving."""
        return [*self.reasons, *([MOVING] if self.moving else [])]

    @property
    def domains(self) -> tuple[str, ...]:
        """The topology domains (`zone/rack` paths) its placed pods run in, in pod order."""
        seen: dict[str, None] = {}
        for pod in self.pods:
            if pod.status in PLACED and pod.domain:
                seen.setdefault(domain_path(pod.domain), None)
        return tuple(seen)


@dataclass(frozen=True, slots=True)
class QueueVerdict:
    name: str
    parent: str | None
    quota: dict[str, float]
    limit: dict[str, float]
    fair_share: dict[str, float]
    allocated: dict[str, float]


@dataclass(frozen=True, slots=True)
class GpuVerdict:
    id: str
    used: float
    shared: bool
    pods: tuple[str, ...]
    fractions: tuple[float, ...]  # each pod's share of this GPU, in `pods` order


@dataclass(frozen=True, slots=True)
class NodeVerdict:
    name: str
    pool: str
    gpu_memory_mib: int | None
    gpus: tuple[GpuVerdict, ...]
    pods: tuple[str, ...]
    domain: tuple[str, ...] = ()  # its value for each cluster.topology level


@dataclass(frozen=True, slots=True)
class DomainVerdict:
    """One domain of the topology's lowest level: its nodes, their GPUs and who runs there."""

    domain: tuple[str, ...]  # a value per level, broadest first
    nodes: tuple[str, ...]
    gpus: int
    gpus_used: float
    workloads: tuple[str, ...]  # workloads with a pod here, in declaration order

    @property
    def path(self) -> str:
        return domain_path(self.domain)


@dataclass(frozen=True, slots=True)
class TopologyVerdict:
    name: str
    levels: tuple[str, ...]
    domains: tuple[DomainVerdict, ...]


def domain_path(domain: tuple[str, ...]) -> str:
    return "/".join(domain)


@dataclass(frozen=True, slots=True)
class CapacityReport:
    """Will the declared work fit the declared capacity? `ok` is False when any workload stays Pending."""

    stack: str
    workloads: tuple[WorkloadVerdict, ...]
    queues: tuple[QueueVerdict, ...]
    nodes: tuple[NodeVerdict, ...]
    cycles: int
    partial: bool = False  # stopped by max_seconds: a verdict on part of the decisions, never "fits"
    topology: TopologyVerdict | None = None
    kai_version: str = ""  # the stack's KAI release
    rules: str = ""  # the KAI rules simulated (placement.Placement.kai_version)
    notes: tuple[str, ...] = ()  # what of the declaration the verdict did not check (kaistack.capacity.plan)
    # KAI never settled (placement.Unsettled): the workloads it still moved are marked `moving`; `loop` is after
    # how many cycles the same state came back, if it did.
    unsettled: bool = False
    loop: int | None = None
    # When partial: the limit that stopped it, as the user set it ("--max-seconds 60", "kaistack:kai....: 60").
    stopped_by: str = ""

    @property
    def ok(self) -> bool:
        return not self.partial and not self.unsettled and not any(w.pending for w in self.workloads)

    @property
    def reasons(self) -> tuple[str, ...]:
        """One line per pending or still moving workload: `<name> (<queue>): <why>` — what a failing gate prints."""
        return tuple(
            f"{w.name} ({w.where}, queue {w.queue}): " + "; ".join(w.why or ["stays Pending"])
            for w in self.workloads
            if w.pending or w.moving
        )

    @property
    def totals(self) -> dict[str, int]:
        """What the verdict was reached on: nodes and GPUs planned with, workloads and the pending ones."""
        return {
            "nodes": len(self.nodes),
            "gpus": sum(len(n.gpus) for n in self.nodes),
            "workloads": len(self.workloads),
            "pending": sum(1 for w in self.workloads if w.pending),
        }

    def summary(self) -> str:
        placed = sum(1 for w in self.workloads if not w.pending)
        if self.partial:
            limit = f" ({self.stopped_by})" if self.stopped_by else ""
            return f"unknown: stopped by the time limit{limit} with {placed} of {len(self.workloads)} workloads placed"
        if self.unsettled:
            again = loop_phrase(self.loop) if self.loop else "still changing"
            moving = sum(1 for w in self.workloads if w.moving)
            stuck = sum(1 for w in self.workloads if w.pending and not w.moving)
            others = f"; {stuck} other workload(s) would stay Pending" if stuck else ""
            return (
                f"does not settle: after {self.cycles} cycles KAI still moves {moving} of {len(self.workloads)} "
                f"workloads again and again ({again}){others}"
            )
        if self.ok:
            return f"fits: all {placed} workloads are placed"
        pending = len(self.workloads) - placed
        return f"does not fit: {pending} of {len(self.workloads)} workloads would stay Pending"


def check(
    config: StackConfig,
    stack: str = "",
    max_seconds: float | None = None,
    simulation: Mapping[str, Any] | None = None,
    limit_name: str = TIME_LIMIT,
) -> CapacityReport:
    """Run KAI's cycle (allocate, consolidation, reclaim, preempt) on the declaration to a steady state.

    With `max_seconds` the simulation stops when the time is up and the report is `partial` (not ok); the reasons
    of a stopped run name the limit `limit_name` (the CLI's --max-seconds unless told).
    `simulation` holds extra keyword arguments for placement's `simulate` (progress callbacks).
    """
    the_plan = plan(config)
    result = simulate(
        the_plan.snapshot,
        actions=ACTIONS,
        rounds=None,
        placement=the_plan.placement,
        max_seconds=max_seconds,
        limit_name=limit_name,
        **(simulation or {}),
    )
    pod_name = {f"{ref.job}-{ref.task_index}": ref.name for wp in the_plan.workloads for ref in wp.pods}
    levels = tuple(config.cluster.topology.levels) if config.cluster.topology else ()
    # A node missing a level's label is in no domain (an EKS system node beside labelled pools).
    domains = {node.name: _domain(node.labels, levels) for node in the_plan.snapshot.nodes}
    gpu_ids: dict[tuple[str, str], str] = {}
    nodes = tuple(
        _node_verdict(node, the_plan.node_pools[node.name], result, pod_name, gpu_ids, domains[node.name])
        for node in the_plan.snapshot.nodes
    )
    jobs = {job.name: job for job in the_plan.snapshot.jobs}
    moving = set(result.unsettled.moving) if result.unsettled is not None else set()
    workloads = tuple(
        _workload_verdict(wp, result, gpu_ids, domains, jobs, any(ref.job in moving for ref in wp.pods))
        for wp in the_plan.workloads
    )
    queues = tuple(_queue_verdict(q, result) for q in config.all_queues())
    gpu_memory = {node.name: node.gpu_memory_mib for node in nodes}
    placed_on = [
        (wp, [p.node for p in verdict.pods if p.status in PLACED and p.node])
        for wp, verdict in zip(the_plan.workloads, workloads, strict=True)
    ]
    crowded = (
        [] if config.kai.memory_isolation else crowded_vllm_gpus(vllm_servers(the_plan, result, gpu_ids, pod_name))
    )
    topology = None
    if config.cluster.topology is not None:
        topology = TopologyVerdict(config.cluster.topology.name, levels, _domain_verdicts(nodes, workloads))
    return CapacityReport(
        stack,
        workloads,
        queues,
        nodes,
        result.cycles,
        partial=result.partial,
        topology=topology,
        kai_version=config.kai.version,
        rules=the_plan.placement.kai_version,
        notes=(*the_plan.notes, *oversized_gpu_memory(placed_on, gpu_memory), *crowded),
        unsettled=result.unsettled is not None,
        loop=result.unsettled.period if result.unsettled is not None else None,
        stopped_by=_limit_phrase(limit_name, max_seconds) if result.partial and max_seconds is not None else "",
    )


def _limit_phrase(name: str, seconds: float) -> str:
    return f"{name} {seconds:g}" if name.startswith("--") else f"{name}: {seconds:g}"


PLACED = ("Running", "Binding")
_CLOCK = (NOT_REACHED, NOT_EXPLAINED)
MOVING = "placed, pipelined or evicted again and again: KAI never settles on this stack"


def _workload_verdict(
    wp: WorkloadPlan,
    result: Result,
    gpu_ids: dict[tuple[str, str], str],
    domains: dict[str, tuple[str, ...]],
    jobs: dict[str, Job],
    moving: bool,
) -> WorkloadVerdict:
    pods: list[PodPlacement] = []
    reasons: list[str] = []
    not_reached = False
    for ref in wp.pods:
        task = result.tasks[f"{ref.job}-{ref.task_index}"]
        groups = tuple(gpu_ids.get((task.node or "", g), g) for g in task.gpu_groups)
        domain = domains.get(task.node or "", ())
        sub_group = jobs[ref.job].tasks[ref.task_index].sub_group if ref.job in jobs else None
        pods.append(PodPlacement(ref.name, task.status, task.node, groups, task.gpus, domain, sub_group))
        reason = result.reason(ref.job)
        if task.status not in PLACED and reason is not None:
            not_reached = not_reached or reason.code in _CLOCK
            # The simulator names a shared GPU by its group id; the report numbers GPUs its own way (_node_verdict).
            message = reason.naming_gpus(lambda node, group: f"{node}/{gpu_ids.get((node, group), group)}").message
            if message not in reasons:
                reasons.append(message)
    placed = sum(1 for p in pods if p.status in PLACED)
    if not pods:
        status = "Empty"
    elif placed == len(pods):
        status = "Running"
    else:
        status = "Pending" if placed == 0 else "Partial"
    work = wp.workload
    constraint = None
    if work.topology is not None:
        constraint = work.topology.model_dump(exclude_none=True)
    return WorkloadVerdict(
        work.name,
        work.kind,
        wp.where,
        wp.queue,
        wp.priority_class,
        status,
        tuple(reasons),
        tuple(pods),
        constraint,
        moving,
        not_reached,
    )


def _domain(labels: Mapping[str, str], levels: tuple[str, ...]) -> tuple[str, ...]:
    values = tuple(labels.get(level, "") for level in levels)
    return values if all(values) else ()


def _domain_verdicts(
    nodes: tuple[NodeVerdict, ...], workloads: tuple[WorkloadVerdict, ...]
) -> tuple[DomainVerdict, ...]:
    """Every lowest-level domain with a node, in node order; a node missing a level is in none."""
    members: dict[tuple[str, ...], list[NodeVerdict]] = {}
    for node in nodes:
        if node.domain:
            members.setdefault(node.domain, []).append(node)
    verdicts = []
    for domain, group in members.items():
        names = {n.name for n in group}
        present = tuple(w.name for w in workloads if any(p.node in names and p.status in PLACED for p in w.pods))
        verdicts.append(
            DomainVerdict(
                domain,
                tuple(n.name for n in group),
                sum(len(n.gpus) for n in group),
                round(sum(g.used for n in group for g in n.gpus), 6),
                present,
            )
        )
    return tuple(verdicts)


def _resources(gpu: float, cpu: float, memory: float) -> dict[str, float]:
    return {"gpu": round(gpu, 6), "cpu": round(cpu, 6), "memory": round(memory, 6)}


def _queue_verdict(queue: DeclaredQueue, result: Result) -> QueueVerdict:
    res = queue.resources
    computed = result.queues.get(queue.name)
    zero = _resources(0, 0, 0)
    return QueueVerdict(
        name=queue.name,
        parent=queue.parent,
        # Declared values (CRD units: GPUs, millicores, MB); -1 = unlimited.
        quota=_resources(res.gpu.quota, res.cpu.quota, res.memory.quota),
        limit=_resources(res.gpu.limit, res.cpu.limit, res.memory.limit),
        fair_share=_vector(computed.fair_share) if computed else zero,
        allocated=_vector(computed.allocated) if computed else zero,
    )


def _vector(res: Resources) -> dict[str, float]:
    return _resources(res.gpu, res.cpu_millis, res.memory_mb)


def _node_verdict(
    node: Node,
    pool: str,
    result: Result,
    pod_name: dict[str, str],
    gpu_ids: dict[tuple[str, str], str],
    domain: tuple[str, ...],
) -> NodeVerdict:
    """The node's physical GPUs numbered gpu0..: whole-GPU pods first, then shared GPUs, then idle ones.

    Records each shared group's number in `gpu_ids`, so pods name their GPU the same way.
    """
    computed = result.nodes.get(node.name)
    devices = computed.devices if computed else ()
    ordered = [d for d in devices if not d.shared] + [d for d in devices if d.shared]
    gpus: list[GpuVerdict] = []
    for index, device in enumerate(ordered):
        gpu_id = f"gpu{index}"
        if device.shared:
            gpu_ids[(node.name, device.id)] = gpu_id
        names = tuple(pod_name.get(t, t) for t in device.tasks)
        # A pod spread over N shared GPUs holds its portion on each (KAI's quota counts portion x N,
        # resource_info/gpu_resource_requirment.go:183-197); its result's `gpus` is the total.
        fractions = tuple(
            round(result.tasks[t].gpus / max(len(result.tasks[t].gpu_groups), 1), 6) if device.shared else 1.0
            for t in device.tasks
        )
        gpus.append(GpuVerdict(gpu_id, round(device.used, 6), device.shared, names, fractions))
    gpus.extend(GpuVerdict(f"gpu{i}", 0.0, False, (), ()) for i in range(len(ordered), node.gpus))
    pods = tuple(pod_name.get(t, t) for t in (computed.tasks if computed else ()))
    return NodeVerdict(node.name, pool, node.gpu_memory_mib, tuple(gpus), pods, domain)
