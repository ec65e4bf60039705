"""A scheduling session: the cluster state one KAI cycle sees, rebuilt at the start of every cycle.

Jobs and tasks persist across cycles (their statuses carry over, as pods do in a cluster); nodes,
queues, fair shares and the node index are rebuilt from them each cycle, like KAI's cache snapshot.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from placement.fairshare import set_fair_shares
from placement.gpu_room import GpuRoom
from placement.minruntime import MinRuntime
from placement.model import DEFAULT_GPU_MEMORY_MIB, Placement, Snapshot
from placement.node_order import NodeIndex
from placement.nodes import NodeState
from placement.pre_predicates import failure as pre_predicate_failure
from placement.queues import QueueState, build_queues
from placement.signatures import job_signature
from placement.subgroups import build_tree
from placement.tasks import (
    ACTIVE_ALLOCATED,
    ACTIVE_USED,
    ALLOCATED_STATUS,
    PENDING,
    RELEASING,
    RUNNING,
    STUCK_IN_RELEASING,
    TERMINAL,
    JobState,
    TaskState,
    mig_gpu_portion,
)
from placement.topology_tree import TopologyTree

# How the reasons of a stopped run name its limit unless the caller names its own (a stack key, a policy knob).
TIME_LIMIT = "--max-seconds"

if TYPE_CHECKING:
    from placement.victim_scenario import PartialJob
    from placement.watch import Watch

__all__ = ["Session"]


class Session:
    """Cluster state for one cycle plus the jobs, which outlive cycles."""

    def __init__(self, snapshot: Snapshot, placement: Placement) -> None:
        self.snapshot = snapshot
        self.placement = placement
        # gpusharingorder and consolidation are binpack-only (KAI operator plugin/action defaults).
        self.gpu_sharing_order = placement.packs
        self.consolidation_enabled = placement.consolidates
        self.max_consolidation_preemptees = placement.max_consolidation_preemptees
        self.use_signatures = placement.use_scheduling_signatures
        # The minruntime plugin, consulted only when some min runtime is set (it protects nothing otherwise).
        self.minruntime: MinRuntime | None = None
        if placement.minruntime_plugin and (
            placement.default_preempt_min_runtime > 0
            or placement.default_reclaim_min_runtime > 0
            or any((q.preempt_min_runtime or 0) > 0 or (q.reclaim_min_runtime or 0) > 0 for q in snapshot.queues)
        ):
            self.minruntime = MinRuntime(placement)
        # simulate(max_seconds=...): when the clock passes `deadline` every action stops at its next job,
        # and the result says it is partial.
        self.deadline: float | None = None
        self.limit_name = TIME_LIMIT  # what a stopped run's reasons call the limit (simulate's limit_name)
        self.watch: Watch | None = None  # progress heartbeat (simulate's on_progress)
        self.partial = False
        # Jobs a run to a steady state still moved when it gave up (Result.unsettled): their reasons do not blame
        # the run's end, since any later cycle would move them again.
        self.moving: frozenset[str] = frozenset()
        names = [n.name for n in snapshot.nodes]
        if len(set(names)) != len(names):
            raise ValueError("node names must be unique")
        self.jobs: dict[str, JobState] = {}
        for i, spec in enumerate(snapshot.jobs):
            if spec.name in self.jobs:
                raise ValueError(f"job names must be unique, {spec.name!r} repeats")
            job = self.jobs[spec.name] = JobState(spec, i)
            if placement.kai_version == "v0.17.0":
                job.min_member = max(1, job.min_member)  # setSubGroups: max(minMember, 1) until #1989
            if spec.sub_groups or spec.topology is not None or spec.min_sub_group is not None:
                job.tree, _never_scheduled = build_tree(spec, job.tasks, job.min_member)
        # Topology trees depend only on node labels, which no cycle changes.
        self.topologies = {t.name: TopologyTree(t, snapshot.nodes) for t in snapshot.topologies}
        known = set(names)
        self._fresh_groups: dict[str, list[TaskState]] = {}
        # Per node, the shared GPUs the simulator opened (NodeState.born), kept from cycle to cycle.
        self._born: dict[str, set[str]] = {}
        for job in self.jobs.values():
            for task in job.tasks:
                state = task.spec.state
                if state in TERMINAL:
                    job.set_status(task, state)  # holds nothing; never placed or evicted
                elif state in (RUNNING, RELEASING, STUCK_IN_RELEASING):
                    if task.spec.node not in known:
                        raise ValueError(f"task {task.name}: node {task.spec.node!r} does not exist")
                    task.node = task.spec.node
                    task.groups = list(task.spec.gpu_groups)
                    job.set_status(task, state)
                    if task.req.shared and not task.groups:
                        # The harness gives an unlabelled running fraction its own GPU.
                        self._fresh_groups.setdefault(task.node, []).append(task)
        self.nodes: dict[str, NodeState] = {}
        self.node_list: list[NodeState] = []
        self.queues: dict[str, QueueState] = {}
        self.dropped_queues: list[str] = []
        self.total = [0.0, 0.0, 0.0]
        self.min_gpu_mem: int | None = None
        self.max_gpu_mem: int | None = None
        self.index: NodeIndex | None = None
        self.max_node: tuple[int, float, float, dict[str, int], int, dict[str, int]] = (0, 0.0, 0.0, {}, 0, {})
        # Whether any pod carries a required anti-affinity term: every placement then runs the InterPodAffinity
        # check (placement.pod_affinity), which otherwise only pods with terms of their own need.
        self.anti_affinity_present = any(
            t.constraints.pod_anti_affinity for j in snapshot.jobs for t in j.tasks
        ) or any(p.anti_affinity for n in snapshot.nodes for p in n.outside_pods)
        # Whether any pod has preferred inter-pod terms: only then can KAI's PodAffinity score be non-zero
        # (placement.pod_affinity.affinity_scores). The pods whose score PreScore skipped in this session.
        self.preferred_affinity_present = any(
            t.constraints.has_preferred for j in snapshot.jobs for t in j.tasks
        ) or any(p.has_preferred for n in snapshot.nodes for p in n.outside_pods)
        self.affinity_score_skipped: set[str] = set()
        # The pods whose InterPodAffinity PreFilter skipped in this session: its Filter no longer runs for them.
        self.affinity_filter_skipped: set[str] = set()
        # Per pod, the pre-predicate that refuses it on every node, as (reason code, message): placement.pre_predicates.
        self.unresolvable: dict[str, tuple[str, str]] = {}
        for job in self.jobs.values():
            for task in job.tasks:
                refused = pre_predicate_failure(task.spec, snapshot.config_maps)
                if refused is not None:
                    self.unresolvable[task.name] = refused
        self.generation = 0  # bumped by rebuild(): node objects are new
        self._gpu_room: GpuRoom | None = None
        self.cycle = 0
        # Committed statements that changed something; a cycle that commits none changes nothing.
        self.commits = 0

    # ---- cycle start -----------------------------------------------------------------------------

    def out_of_time(self) -> bool:
        if self.watch is not None:
            self.watch.tick()
        if self.deadline is not None and not self.partial and time.monotonic() > self.deadline:
            self.partial = True
        return self.partial

    def open(self) -> None:
        """Start a cycle: forget finished jobs' reasons, then rebuild the cluster (KAI OnSessionOpen)."""
        self.cycle += 1
        self.affinity_score_skipped = set()  # podaffinity's skipOrderFn is made anew at OnSessionOpen
        self.affinity_filter_skipped = set()  # and the predicates plugin's skipPredicates
        for job in self.jobs.values():
            job.reason = job.reason if job.has_pending() else None
            for task in job.tasks:
                task.virtual = False
        self.rebuild()

    def rebuild(self) -> None:
        """Rebuild nodes, queues and fair shares from the jobs' current statuses, as a cache snapshot would.

        Node and queue accounting is derived from the pods' statuses and changed only through statements;
        after pods move on outside a cycle (the between-rounds transition) it must be rebuilt.
        """
        self.generation += 1
        self.nodes = {spec.name: NodeState(spec) for spec in self.snapshot.nodes}
        self.node_list = list(self.nodes.values())
        placed: list[TaskState] = []
        for job in self.jobs.values():
            for task in job.tasks:
                if task.status in ACTIVE_USED and task.node is not None:
                    placed.append(task)
        for node_name, tasks in self._fresh_groups.items():
            taken = {g for t in placed if t.node == node_name for g in t.groups}
            serial = 0
            for task in tasks:
                labels: list[str] = []
                while len(labels) < max(1, task.req.count):
                    label = f"gpu{serial}"
                    serial += 1
                    if label not in taken:
                        labels.append(label)
                task.groups = labels
        self._fresh_groups = {}
        # The harness adds a node's pods in pod-name order; shared-GPU accounting depends on order.
        placed.sort(key=lambda t: t.name)
        for task in placed:
            node = self.nodes[task.node]  # type: ignore[index]
            node.add(task, task.status, task.groups)
            task.accepted = node.accepted_for(task.req)
        for node in self.node_list:
            if not self.placement.harness:
                node.reserve_pods()
            born = node.born = self._born.setdefault(node.name, set())
            born.intersection_update(node.sh_used)  # a label no group has any more may be given out again
        # MaxNodePoolResources' allocatable maximum per resource, over every node (one vector, like KAI's).
        mig: dict[str, int] = {}
        scalar: dict[str, int] = {}
        for n in self.node_list:
            for name, count in n.alloc_mig.items():
                mig[name] = max(mig.get(name, 0), count)
            for name, count in n.alloc_scalar.items():
                scalar[name] = max(scalar.get(name, 0), count)
        self.max_node = (
            max((n.alloc_gpus for n in self.node_list), default=0),
            max((n.alloc_cpu for n in self.node_list), default=0.0),
            max((n.alloc_mem for n in self.node_list), default=0.0),
            mig,
            max((n.alloc_pods for n in self.node_list), default=0),
            scalar,
        )
        # Every node whose GPUs have more than the default 100 MiB, GPUs allocatable or not (cluster_info.go:
        # 283-298). None over it: KAI's cache has no basis (nil), its test harness takes 100 (Placement.harness).
        gpu_mems = [n.gpu_mem for n in self.node_list if n.gpu_mem > DEFAULT_GPU_MEMORY_MIB]
        fallback = DEFAULT_GPU_MEMORY_MIB if self.placement.harness else None
        self.min_gpu_mem = min(gpu_mems) if gpu_mems else fallback
        self.max_gpu_mem = max(gpu_mems) if gpu_mems else fallback
        self._open_queues()
        if self.use_signatures:  # read only by the evicting actions' representatives, and only then
            for job in self.jobs.values():
                job.signature = job_signature(job, self._resolve_level)
        self.index = NodeIndex(self.nodes)
        for tree in self.topologies.values():
            tree.attach(self.nodes)

    def _resolve_level(self, topology: str, level: str | None) -> str:
        tree = self.topologies.get(topology)
        return tree.resolve(level) if tree is not None else (level or "")

    def gpu_room(self) -> dict[str, tuple[float, float]]:
        """Per node, its idle and its releasing GPU capacity (GetSumOfIdleGPUs, GetSumOfReleasingGPUs).

        Only a committed statement changes nodes between solver searches (a search discards what it tries),
        so the map is rebuilt after a commit or a rebuild, not for every probe of every pending job. Read it
        only with no statement open.
        """
        return self._room().pairs

    def _room(self) -> GpuRoom:
        key = (self.generation, self.commits)
        if self._gpu_room is None or self._gpu_room.key != key:
            self._gpu_room = GpuRoom(key, self.node_list, self._gpu_room)
        return self._gpu_room

    def gpu_room_sums(self) -> dict[str, float]:
        """Per node, idle + releasing GPU capacity (gpu_room's pair summed), kept as long as gpu_room is."""
        return self._room().sums

    def gpu_room_top(self, n: int) -> list[tuple[str, float]]:
        """The n largest gpu_room_sums, largest first (AccumulatedIdleGpus's start), kept as gpu_room is."""
        return self._room().top(n)

    def gpu_nodes(self) -> list[NodeState]:
        """The nodes with idle or releasing GPU capacity (FeasibleNodesForJob of an all-GPU job), a new list."""
        return self._room().nodes()

    def victim_invariant_failure(self, tasks: list[TaskState]) -> TaskState | None:
        """VictimInvariantPrePredicateFailureForTasks: the first pod no eviction can make room for, because its
        volumes or ConfigMaps refuse it (placement.pre_predicates) or it asks more GPUs, CPU, memory, of a MIG
        profile or scalar resource, or pod slots (one each) than any one node has (MaxNodePoolResources).

        KAI@v0.17.0 pkg/scheduler/actions/common/action_eligibility.go; the predicates are
        pkg/scheduler/k8s_internal/predicates/volume_binding.go, config_maps.go and maxNodeResources.go (PreFilter,
        UnschedulableAndUnresolvable).
        """
        gpus, cpu, mem, mig, pods, scalar = self.max_node
        for task in tasks:
            if task.name in self.unresolvable:
                return task
            req = task.req
            if req.gpus > gpus or req.cpu > cpu or req.mem > mem or pods < 1:
                return task
            if any(count > 0 and mig.get(name, 0) < count for name, count in req.mig):
                return task
            if any(count > 0 and scalar.get(name, 0) < count for name, count in req.scalar):
                return task
        return None

    def _open_queues(self) -> None:
        self.queues, self.dropped_queues = build_queues(self.snapshot.queues)
        # setTotalResources (proportion.go:259-283): ready nodes only; a MIG device adds its "g" count of GPUs
        # (ResourceVector.TotalGPUs through QuantifyVector).
        total = [0.0, 0.0, 0.0]
        for node in self.node_list:
            if not node.spec.ready:
                continue
            held = node.spec.outside_total  # other schedulers' active pods are not in the total
            total[0] += node.alloc_cpu - held.get("cpu", 0.0)
            total[1] += node.alloc_mem - held.get("memory", 0.0)
            total[2] += node.alloc_gpus + sum(mig_gpu_portion(name) * n for name, n in node.alloc_mig.items())
            total[2] -= held.get("nvidia.com/gpu", 0.0) + sum(
                mig_gpu_portion(name) * n for name, n in held.items() if name.startswith("nvidia.com/mig-")
            )
        self.total = total
        for job in self.jobs.values():
            queue = self.queues.get(job.queue_name)
            job.queue = queue
            if queue is None:
                continue
            non_preemptible = not job.preemptible
            cpu = mem = gpu = 0.0
            for task in job.tasks:
                if task.status in ALLOCATED_STATUS:
                    queue.add(task.accepted, 1.0, non_preemptible)
                    self._add_request(queue, task.accepted)
                elif task.status == PENDING:
                    req = task.req
                    cpu += req.cpu
                    mem += req.mem
                    gpu += req.quota_gpus
                    if req.kind == "memory" and self.min_gpu_mem:
                        gpu += req.memory_fraction(self.min_gpu_mem)
            if job.n_pending:
                self._add_request(queue, (cpu, mem, gpu))
        top = [q for q in self.queues.values() if q.parent is None]
        set_fair_shares(top, total)

    @staticmethod
    def _add_request(queue: QueueState, vector: tuple[float, float, float]) -> None:
        for q in queue.path:
            q.request[0] += vector[0]
            q.request[1] += vector[1]
            q.request[2] += vector[2]

    # ---- status changes with queue accounting ----------------------------------------------------

    def set_status(self, task: TaskState, status: str) -> None:
        """Change a task's status; queue allocation follows (KAI's Allocate/Deallocate events)."""
        old = task.status
        if old == status:
            return
        job = task.job
        was, now = old in ACTIVE_ALLOCATED, status in ACTIVE_ALLOCATED
        if was and not now and job.queue is not None:
            job.queue.add(task.accepted, -1.0, not job.preemptible)
        job.set_status(task, status)
        if now and not was and job.queue is not None:
            job.queue.add(task.accepted, 1.0, not job.preemptible)

    # ---- helpers used by actions -----------------------------------------------------------------

    def init_resources(self, job: JobState | PartialJob, tasks: list[TaskState]) -> tuple[float, float, float]:
        """GetTasksToAllocateInitResource: what the tasks ask, gpu-memory converted at the smallest GPU."""
        cpu = mem = gpu = 0.0
        for task in tasks:
            req = task.req
            cpu += req.cpu
            mem += req.mem
            gpu += req.quota_gpus
            if req.kind == "memory" and self.min_gpu_mem:
                gpu += req.memory_fraction(self.min_gpu_mem)
        return (cpu, mem, gpu)

    def job_init_resources(self, job: JobState | PartialJob) -> tuple[float, float, float]:
        """Init resources of the job's next allocation attempt (isRealAllocation=false), cached per version."""
        cached = job._init_cache
        if cached is not None and cached[0] == job.version:
            return cached[1]
        value = self.init_resources(job, job.tasks_to_allocate(real=False))
        job._init_cache = (job.version, value)
        return value

    def required_quota(self, tasks: list[TaskState]) -> list[float]:
        """getRequiredQuota for the capacity gate: gpu-memory converted at the largest GPU (#1792)."""
        cpu = mem = gpu = 0.0
        for task in tasks:
            req = task.req
            cpu += req.cpu
            mem += req.mem
            if req.kind == "memory":
                if self.max_gpu_mem:
                    gpu += req.memory_fraction(self.max_gpu_mem)
            else:
                gpu += req.quota_gpus
        return [cpu, mem, gpu]

    def schedulable_job(self, job: JobState) -> bool:
        """InitializeWithJobs filters: an existing leaf queue whose parent chain exists, enough pods."""
        queue = job.queue
        return queue is not None and queue.is_leaf and job.is_ready()
