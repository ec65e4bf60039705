"""Placing one job: KAI's AllocateJob (actions/common/allocate.go) with its predicates and GPU sharing.

A job's next batch of tasks passes the queue capacity gate, then each task takes the first node in
node order that fits (idle or releasing resources) and passes the predicates; any failure fails the
whole batch, and the caller rolls the statement back (gang all-or-nothing). Fraction and gpu-memory
pods pick shared GPUs as gpu_sharing/gpuSharing.go does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from placement.node_order import ordered_nodes
from placement.nodes import NodeState, gpu_memory_fraction
from placement.queues import check_capacity, over_limit, over_quota
from placement.statement import Statement
from placement.tasks import (
    ACTIVE_ALLOCATED,
    KIND_CPU,
    KIND_MEMORY,
    KIND_MIG,
    KIND_WHOLE,
    PIPELINED,
    JobState,
    TaskState,
)

if TYPE_CHECKING:
    from placement.session import Session

__all__ = ["allocate_job", "fitting_node", "preferable_gpus", "should_pipeline"]


def fitting_gpus(ssn: Session, node: NodeState, task: TaskState) -> list[str | None]:
    """FittingGPUs: shared GPUs the pod fits on plus one None per free whole GPU, best first."""
    gmem = node.request_memory(task.req)
    spread = ssn.placement.gpu == "spread"
    scored: list[tuple[float, str | None]] = []
    if node.gpu_mem >= 100:  # GetUsedGpuPortion refuses smaller GPUs; KAI then skips them
        for g in node.sh_used:
            if node.fits_group(gmem, g):
                portion = node.used_portion(g)
                scored.append((1 - portion if spread else portion, g))
    whole = max(0, int(node.idle_gpus) + int(node.rel_gpus))
    scored.extend([(1.0 if spread else 0.0, None)] * whole)
    scored.sort(key=lambda item: -item[0])
    return [g for _, g in scored]


def preferable_gpus(
    node: NodeState, task: TaskState, fitting: list[str | None], pipeline_only: bool
) -> tuple[list[str], bool, bool] | None:
    """GetNodePreferableGpuForSharing: (groups, must pipeline, opens a new GPU) or None."""
    req = task.req
    gmem = node.request_memory(req)
    fresh = iter(node.fresh_group_ids(req.count))
    groups: list[str] = []
    releasing = opens_new = False
    idle_fit: bool | None = None
    for item in fitting:
        if idle_fit is None:
            idle_fit = node.fits(task, releasing=False)
        if item is None:
            releasing = releasing or pipeline_only or not idle_fit
            groups.append(next(fresh))
            opens_new = True
        else:
            releasing = releasing or not node.enough_idle_on_group(gmem, item) or not idle_fit
            groups.append(item)
        if len(groups) == req.count:
            return groups, releasing, opens_new
    return None


def _pods_ok(ssn: Session, task: TaskState, node: NodeState) -> bool:
    """checkMaxPodsWithGpuGroupReservation: a pod slot, or two when a new shared GPU needs a reservation pod."""
    available = node.pods_available()
    if not task.req.shared:
        return available > 0
    fitting = fitting_gpus(ssn, node, task)
    choice = preferable_gpus(node, task, fitting, pipeline_only=False)
    if choice is None or choice[1]:
        choice = preferable_gpus(node, task, fitting, pipeline_only=True)
    opens_new = True if choice is None else choice[2]
    return available >= 2 or not opens_new


def node_quota_gpus(task: TaskState, node: NodeState) -> float:
    """GetRequiredInitQuota's GPU term: MIG devices, else the request's memory as a share of one GPU."""
    req = task.req
    if req.kind == KIND_MIG:
        return req.quota_gpus
    return gpu_memory_fraction(node.request_memory(req), node.gpu_mem)


def type_error(task: TaskState, node: NodeState) -> str | None:
    """PredicateByNodeResourcesType and the gpu-memory label check; None when the node type suits."""
    kind = task.req.kind
    if kind == KIND_CPU:
        return None
    if kind == KIND_MIG and not node.mig_enabled:
        return "mig"
    if node.mig_enabled:
        if node.mig_strategy == "single" and kind != KIND_WHOLE:
            return "mig-single"
        if node.mig_strategy == "mixed" and kind != KIND_MIG:
            return "mig-mixed"
    if kind == KIND_MEMORY and not node.mem_synced:
        return "gpu-memory-label"
    return None


def fitting_node(ssn: Session, task: TaskState, node: NodeState, capacity_cache: dict[float, bool]) -> bool:
    """FittingNode: resources on idle + releasing, then the predicates plugin's checks."""
    if not node.fits(task, releasing=True):
        return False
    job = task.job
    gpus = node_quota_gpus(task, node)
    ok = capacity_cache.get(gpus)
    if ok is None:
        requested = (task.req.cpu, task.req.mem, gpus)
        queue = job.queue
        failed = over_limit(queue, requested) is not None  # type: ignore[arg-type]
        if not failed and not job.preemptible:
            failed = over_quota(queue, requested) is not None  # type: ignore[arg-type]
        ok = capacity_cache[gpus] = not failed
    if not ok:
        return False
    if type_error(task, node) is not None:
        return False
    return _pods_ok(ssn, task, node)


def _allocate_on_node(ssn: Session, stmt: Statement, task: TaskState, node: NodeState, pipeline_only: bool) -> bool:
    """allocateTaskToNode: bind on idle resources, else pipeline onto releasing ones."""
    if task.req.shared:
        choice = preferable_gpus(node, task, fitting_gpus(ssn, node, task), pipeline_only)
        if choice is None:
            return False
        task.groups = choice[0]
        if pipeline_only or choice[1]:
            ok = stmt.pipeline(task, node, update_if_exists=False)
        else:
            ok = stmt.allocate(task, node)
        if not ok:
            task.groups = []
        return ok
    if not pipeline_only and node.fits(task, releasing=False):
        return stmt.allocate(task, node)
    return stmt.pipeline(task, node, update_if_exists=not pipeline_only)


def allocate_task(
    ssn: Session, stmt: Statement, task: TaskState, pipeline_only: bool, nodes: list[NodeState] | None
) -> bool:
    capacity_cache: dict[float, bool] = {}
    for node in ordered_nodes(ssn, task, nodes):
        if not fitting_node(ssn, task, node, capacity_cache):
            continue
        if _allocate_on_node(ssn, stmt, task, node, pipeline_only):
            return True
    return False


def allocate_job(
    ssn: Session,
    stmt: Statement,
    job: JobState,
    pipeline_only: bool,
    nodes: list[NodeState] | None = None,
    tasks: list[TaskState] | None = None,
    min_member: int | None = None,
) -> bool:
    """AllocateJob: the capacity gate for the next batch of tasks, then every task or none.

    `tasks`/`min_member` describe a partial job (the solvers' representative); failures of real
    allocation attempts are recorded on the job for pending reasons.
    """
    to_allocate = job.tasks_to_allocate(real=not pipeline_only, tasks=tasks, min_member=min_member)
    requested = ssn.required_quota(to_allocate)
    failure = check_capacity(job.queue, requested, job.preemptible)  # type: ignore[arg-type]
    record = not pipeline_only
    if failure is not None:
        if record:
            job.reason = ("capacity", failure)
        return False
    if record and _short_of_whole_gpus(ssn, to_allocate):
        job.reason = ("placement", to_allocate[0], 0, len(to_allocate))
        return False
    checkpoint = stmt.checkpoint()
    for i, task in enumerate(to_allocate):
        if not allocate_task(ssn, stmt, task, pipeline_only, nodes):
            if record:
                job.reason = ("placement", task, i, len(to_allocate))
            stmt.rollback(checkpoint)
            return False
    return True


def _short_of_whole_gpus(ssn: Session, tasks: list[TaskState]) -> bool:
    """Whole-GPU pods can only use whole free GPUs: if the cluster has fewer, no placement can succeed."""
    need = 0
    for task in tasks:
        if task.req.kind == KIND_WHOLE:
            need += task.req.count
    return need > 0 and ssn.index is not None and need > ssn.index.free_whole_gpus()


def should_pipeline(job: JobState) -> bool:
    """ShouldPipelineJob: some pods wait for releasing resources and too few others are placed."""
    pipelined = active = 0
    for task in job.tasks:
        if task.status == PIPELINED:
            pipelined += 1
        elif task.status in ACTIVE_ALLOCATED:
            active += 1
    return pipelined > 0 and active < job.min_member
