"""Placing one job: KAI's AllocateJob (actions/common/allocate.go) with its predicates and GPU sharing.

A job's next batch of tasks passes the queue capacity gate, then each task takes the first node in
node order that fits (idle or releasing resources) and passes the predicates; any failure fails the
whole batch, and the caller rolls the statement back (gang all-or-nothing). Fraction and gpu-memory
pods pick shared GPUs as gpu_sharing/gpuSharing.go does.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from typing import TYPE_CHECKING

from placement.node_order import ordered_nodes
from placement.nodes import NodeState, gpu_memory_fraction
from placement.pod_affinity import AffinityCheck, affinity_scores, node_score, session_check
from placement.queues import check_capacity, over_limit, over_quota
from placement.statement import Statement
from placement.subgroups import PodSet, SubGroupSet, ordered_members
from placement.tasks import (
    ACTIVE_ALLOCATED,
    KIND_MEMORY,
    KIND_MIG,
    KIND_WHOLE,
    PIPELINED,
    JobState,
    TaskState,
)
from placement.topology import subset_nodes
from placement.topology_tree import TopologyError

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
    """checkMaxPodsWithGpuGroupReservation: a pod slot; a shared pod going to a new GPU group needs two (one for
    the reservation pod) and one joining a group needs none. "New" is KAI's willCreateNewGpuGroup: a GPU it
    would open, or a group named by a UUID (NodeState.new_group)."""
    available = node.pods_available()
    if not task.req.shared:
        return available > 0
    fitting = fitting_gpus(ssn, node, task)
    choice = preferable_gpus(node, task, fitting, pipeline_only=False)
    if choice is None or choice[1]:
        choice = preferable_gpus(node, task, fitting, pipeline_only=True)
    new = choice is None or choice[2] or any(node.new_group(g) for g in choice[0])
    return available >= 2 or not new


def node_quota_gpus(task: TaskState, node: NodeState) -> float:
    """GetRequiredInitQuota's GPU term: MIG devices, else the devices times each one's share of this node's GPU
    (node_info.go:714-722)."""
    req = task.req
    if req.kind == KIND_MIG:
        return req.quota_gpus
    return req.count * gpu_memory_fraction(node.request_memory(req), node.gpu_mem)


def type_error(task: TaskState, node: NodeState) -> str | None:
    """PredicateByNodeResourcesType and the gpu-memory label check; None when the node type suits."""
    kind = task.req.kind
    if task.req.cpu_only:  # a fraction under 0.005 too (predicates' early return for CPU-only requests)
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


def fitting_node(
    ssn: Session,
    task: TaskState,
    node: NodeState,
    capacity_cache: dict[float, bool],
    affinity: AffinityCheck | None = None,
) -> bool:
    """FittingNode: resources on idle + releasing, then the predicates plugin's checks (`affinity`: the
    InterPodAffinity state for this task now, when it has terms or another pod has anti-affinity; host ports)."""
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
    if type_error(task, node) is not None or not node.admits(task.req):
        return False
    if affinity is not None and not affinity.passes(node):
        return False
    if task.req.host_ports and node.port_conflict(task) is not None:
        return False
    # CheckNodeConditionPredicate (plugins/predicates/predicates.go:343-349): no pod on a node that is not ready.
    return _pods_ok(ssn, task, node) and node.spec.ready


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
    ssn: Session,
    stmt: Statement,
    task: TaskState,
    pipeline_only: bool,
    nodes: list[NodeState] | None,
    scores: dict[str, float] | None = None,
    within: Container[str] | None = None,
) -> bool:
    # PrePredicateFn runs every PreFilter, InterPodAffinity's too (whose Skip sticks), before any can fail.
    affinity = session_check(ssn, task)
    if ssn.unresolvable and task.name in ssn.unresolvable:
        return False  # a failed pre-predicate: no node is ordered (KAI@v0.17.0 actions/common/allocate.go:157-165)
    capacity_cache: dict[float, bool] = {}
    order: Iterable[NodeState]
    preferred = preferred_scores(ssn, task) if ssn.preferred_affinity_present else None
    if preferred is None:
        order = ordered_nodes(ssn, task, nodes, scores, within)
    elif scores is not None:
        # Topology scores reach 1,000,000 too: the sum decides, as KAI adds them.
        combined = {name: score + K8S_PLUGINS * preferred(ssn.nodes[name]) for name, score in scores.items()}
        order = ordered_nodes(ssn, task, nodes, combined, within)
    else:
        # Every other score KAI adds stays below 1,000,000 here: a stable sort by the affinity score alone.
        order = sorted(ordered_nodes(ssn, task, nodes, scores, within), key=lambda n: -preferred(n))
    for node in order:
        if not fitting_node(ssn, task, node, capacity_cache, affinity):
            continue
        if _allocate_on_node(ssn, stmt, task, node, pipeline_only):
            return True
    return False


K8S_PLUGINS = 1_000_000  # scores.K8sPlugins (KAI@v0.17.0 pkg/scheduler/plugins/scores/scores.go:13)


def preferred_scores(ssn: Session, task: TaskState) -> Callable[[NodeState], int] | None:
    """podaffinity's NodePreOrderFn and NodeOrderFn (KAI@v0.17.0 plugins/podaffinity/podaffinity.go:49-76): PreScore
    each time the pod is placed; once it skips, the pod's score is 0 for the rest of the session (skipOrderFn)."""
    topology = affinity_scores(ssn, task)
    if topology is None:
        ssn.affinity_score_skipped.add(task.name)
    if topology is None or task.name in ssn.affinity_score_skipped:
        return None
    return lambda node: node_score(topology, node)


def allocate_job(
    ssn: Session,
    stmt: Statement,
    job: JobState,
    pipeline_only: bool,
    nodes: list[NodeState] | None = None,
    tasks: list[TaskState] | None = None,
    min_member: int | None = None,
    tree: SubGroupSet | None = None,
    within: Container[str] | None = None,
) -> bool:
    """AllocateJob: the capacity gate for the next batch of tasks, then every task or none.

    `tasks`/`min_member` (or `tree`, for a job with subgroups) describe a partial job (the solvers'
    representative); failures of real allocation attempts are recorded on the job for pending reasons.
    `within` keeps the indexed node order but only the nodes it names (node_order.ordered_nodes).
    """
    if tree is None and tasks is None:
        tree = job.tree
    if tree is not None:
        to_allocate = tree.tasks_to_allocate(real=not pipeline_only)
    else:
        to_allocate = job.tasks_to_allocate(real=not pipeline_only, tasks=tasks, min_member=min_member)
    if tree is not None and not to_allocate:
        return False
    requested = ssn.required_quota(to_allocate)
    failure = check_capacity(job.queue, requested, job.preemptible)  # type: ignore[arg-type]
    record = not pipeline_only
    if failure is not None:
        if record:
            job.reason = ("capacity", failure)
        return False
    if record and _short_of_whole_gpus(ssn, to_allocate):
        # KAI has no such shortcut: its first pod's pre-predicates run (InterPodAffinity's Skip then sticks).
        session_check(ssn, to_allocate[0])
        if ssn.preferred_affinity_present and to_allocate[0].name not in ssn.unresolvable:
            # KAI has no such shortcut: it orders the nodes for the first pod, once its pre-predicates pass
            # (PreScore, which may mark the pod unscored for the session), before finding that none fits.
            preferred_scores(ssn, to_allocate[0])
        job.reason = ("placement", to_allocate[0], 0, len(to_allocate))
        return False
    if tree is not None:
        return TreeAllocation(ssn, stmt, job, tree, pipeline_only, record).run(to_allocate, nodes)
    checkpoint = stmt.checkpoint()
    for i, task in enumerate(to_allocate):
        if not allocate_task(ssn, stmt, task, pipeline_only, nodes, within=within):
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
    if job.tree is not None:
        return job.tree.should_pipeline()
    pipelined = active = 0
    for task in job.tasks:
        if task.status == PIPELINED:
            pipelined += 1
        elif task.status in ACTIVE_ALLOCATED:
            active += 1
    return pipelined > 0 and active < job.min_member


class TreeAllocation:
    """allocateSubGroupSet / allocateMembersOnNodes / allocatePodSet for a job with a subgroup tree.

    Each (sub)group tries the node sets its topology constraint allows, in order, with a checkpoint per
    try; its members are placed in SubGroupOrderFn order inside the chosen set, greedily (a member's choice
    is not revisited while the parent stays in the same set).
    """

    def __init__(
        self, ssn: Session, stmt: Statement, job: JobState, root: SubGroupSet, pipeline_only: bool, record: bool
    ) -> None:
        self.ssn = ssn
        self.stmt = stmt
        self.job = job
        self.root = root
        self.pipeline_only = pipeline_only
        self.record = record
        self.pod_set_of = {id(t): ps for ps in root.pod_sets() for t in ps.tasks}
        self.scores: dict[int, dict[str, float]] = {}  # PreJobAllocation clears them per attempt
        self.errors: list[str] = []
        self.failed: tuple[TaskState, int] | None = None
        self.placed = 0

    def run(self, batch: list[TaskState], nodes: list[NodeState] | None) -> bool:
        checkpoint = self.stmt.checkpoint()
        try:
            ok = self._group(self.root, batch, nodes)
        except TopologyError as err:
            self.errors.append(str(err))
            ok = False
        if ok:
            return True
        self.stmt.rollback(checkpoint)
        if self.record:
            if self.errors:
                self.job.reason = ("topology", list(self.errors), len(batch))
            elif self.failed is not None:
                self.job.reason = ("placement", self.failed[0], self.failed[1], len(batch))
        return False

    def _node_sets(
        self, group: PodSet | SubGroupSet, tasks: list[TaskState], nodes: list[NodeState] | None
    ) -> list[list[NodeState] | None]:
        if group.constraint is None or not group.constraint.topology:
            return [nodes]
        pod_sets = [ps for ps in group.pod_sets() if any(self.pod_set_of.get(id(t)) is ps for t in tasks)]
        pool = nodes if nodes is not None else self.ssn.node_list
        found = subset_nodes(
            self.ssn.topologies,
            self.ssn.nodes,
            group.constraint,
            pod_sets,
            tasks,
            pool,
            self.scores,
            id(group),
            self.errors,
        )
        return list(found)

    def _group(self, group: PodSet | SubGroupSet, tasks: list[TaskState], nodes: list[NodeState] | None) -> bool:
        """allocateSubGroupSet / allocatePodSet: each node set the constraint allows, in order, until one holds
        the batch (its members, or its pods)."""
        if not tasks:
            return True
        for node_set in self._node_sets(group, tasks, nodes):
            checkpoint = self.stmt.checkpoint()
            if isinstance(group, PodSet):
                placed = self._tasks_on(group, tasks, node_set)
            else:
                placed = self._members(group, tasks, node_set)
            if placed:
                return True
            self.stmt.rollback(checkpoint)
        return False

    def _members(self, sgs: SubGroupSet, tasks: list[TaskState], nodes: list[NodeState] | None) -> bool:
        for member in ordered_members(sgs):
            inside = {id(ps) for ps in member.pod_sets()}
            mine = [t for t in tasks if id(self.pod_set_of.get(id(t))) in inside]
            if not self._group(member, mine, nodes):
                return False
        return True

    def _tasks_on(self, ps: PodSet, tasks: list[TaskState], nodes: list[NodeState] | None) -> bool:
        scores = self._scores_for(ps)
        if scores is not None and nodes is None:
            nodes = self.ssn.node_list
        for i, task in enumerate(tasks):
            if not allocate_task(self.ssn, self.stmt, task, self.pipeline_only, nodes, scores):
                self.failed = (task, self.placed + i)
                return False
        self.placed += len(tasks)
        return True

    def _scores_for(self, ps: PodSet) -> dict[str, float] | None:
        """The nearest (sub)group, this pod set or an ancestor, with a preferred level ranks the nodes."""
        group: PodSet | SubGroupSet | None = ps
        while group is not None:
            table = self.scores.get(id(group))
            if table is not None:
                return table
            group = group.parent
        return None
