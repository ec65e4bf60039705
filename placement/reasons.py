# Long module: explain() walks KAI's gates in order and ends in the diagnoses (closest node, fragmentation,
# affinity, capacity) that share its helpers.
"""Why a job is still Pending, in KAI's terms, as a small structured `Reason` (code + message).

Cheap facts are recorded during allocation (which gate refused, which pod of a gang failed); the detailed
diagnosis (closest node, fragmentation, missing labels) is computed from the final state only when asked for.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from placement import node_constraints, pre_predicates
from placement.host_ports import describe
from placement.model import NON_PREEMPTIBLE_PRIORITY
from placement.nodes import NodeState
from placement.placing import node_quota_gpus, type_error
from placement.pod_affinity import AffinityCheck, needs_check
from placement.queues import GPU, MEMORY, RESOURCE_NAMES, CapacityFailure, over_limit, over_quota
from placement.scalar_resources import in_bytes
from placement.session import TIME_LIMIT
from placement.tasks import KIND_CPU, KIND_FRACTION, KIND_MEMORY, KIND_MIG, KIND_WHOLE, JobState, TaskState

if TYPE_CHECKING:
    from placement.session import Session

__all__ = ["NOT_EXPLAINED", "NOT_REACHED", "TIME_LIMIT", "Reason", "explain"]


# Reason codes, stable for grouping in reports.
QUEUE_MISSING = "queue-missing"
QUEUE_ORPHANED = "queue-orphaned"
QUEUE_NOT_LEAF = "queue-not-leaf"
NOT_READY = "not-ready"
OVER_LIMIT = "over-limit"
OVER_QUOTA = "over-quota"
NODE_CAPACITY = "node-over-capacity"
NO_NODE = "no-node-fits"
FRAGMENTATION = "fragmentation"
GPU_MEMORY_LABEL = "gpu-memory-label"
GPU_MEMORY_NODE_LABEL = "nvidia.com/gpu.memory"  # KAI@v0.17.0 pkg/common/constants/constants.go:11
GPU_MEMORY_TOO_LARGE = "gpu-memory-too-large"
MIG = "mig"
PODS = "too-many-pods"
GANG = "gang"
TOPOLOGY = "topology"
WAITING = "waiting-for-release"
NOT_ATTEMPTED = "not-attempted"  # a full run in which no action got to the job (or none recorded why)
NOT_REACHED = "not-reached"  # max_seconds stopped the run before any action got to the job
EVICTED = "evicted"  # reclaim, preempt, consolidation or stalegangeviction evicted it, and nothing placed it again
NOT_EXPLAINED = "not-explained"  # max_seconds ran out before the job's reason was worked out
NOT_READY_NODES = "no-ready-node"
NODE_CONSTRAINTS = "node-constraints"
HOST_PORTS = "host-ports"
POD_AFFINITY = "pod-affinity"
MISSING_CONFIG_MAPS = pre_predicates.MISSING_CONFIG_MAPS
VOLUME_BINDING = pre_predicates.VOLUME_BINDING

# A shared GPU a message names: (node, the simulator's GPU group id), written `node/group` by default.
GpuRef = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a job is not (fully) placed. `code` groups reasons; `message` reads like KAI's events.

    `gpus` are the shared GPUs the message names, in order, and `texts` the text around them (one more piece),
    so that a report which numbers a node's GPUs its own way (kaistack check) can name them as it lists them.
    """

    code: str
    message: str
    queue: str | None = None
    node: str | None = None
    gpus: tuple[GpuRef, ...] = ()
    texts: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.message

    def naming_gpus(self, name: Callable[[str, str], str]) -> Reason:
        """The same reason with each shared GPU it names written as `name(node, group)`."""
        if not self.gpus:
            return self
        return replace(self, message=_render(self.parts(), name))

    def parts(self) -> list[str | GpuRef]:
        """The message as text pieces and the GPU references between them."""
        if not self.gpus:
            return [self.message]
        out: list[str | GpuRef] = [self.texts[0]]
        for ref, text in zip(self.gpus, self.texts[1:], strict=True):
            out += [ref, text]
        return out


def _render(parts: Sequence[str | GpuRef], name: Callable[[str, str], str] = "{}/{}".format) -> str:
    return "".join(part if isinstance(part, str) else name(*part) for part in parts)


def _naming(code: str, parts: Sequence[str | GpuRef], queue: str | None = None, node: str | None = None) -> Reason:
    """A reason whose message names shared GPUs (`GpuRef`s among the text parts)."""
    texts = [""]
    gpus: list[GpuRef] = []
    for part in parts:
        if isinstance(part, str):
            texts[-1] += part
        else:
            gpus.append(part)
            texts.append("")
    return Reason(code, _render(parts), queue, node, tuple(gpus), tuple(texts) if gpus else ())


def _amount(resource: int, value: float) -> str:
    if resource == GPU:
        return f"{value:g}"
    if resource == MEMORY:
        return f"{value / 1e9:g} GB"
    return f"{value:g}m"


def _capacity_reason(job: JobState, failure: CapacityFailure) -> Reason:
    name = RESOURCE_NAMES[failure.resource]
    numbers = (
        f"{_amount(failure.resource, failure.threshold)}, allocated {_amount(failure.resource, failure.allocated)},"
        f" requested {_amount(failure.resource, failure.requested)}"
    )
    if failure.kind == "over-limit":
        message = f"queue {failure.queue} is over its {name} limit (limit {numbers})"
        return Reason(OVER_LIMIT, message, queue=failure.queue)
    # Non-preemptible by its PodGroup's spec.preemptibility, which wins over the priority, or by its priority.
    why = (
        "spec.preemptibility non-preemptible"
        if job.spec.preemptible is False
        else f"priority {job.priority} >= {NON_PREEMPTIBLE_PRIORITY}"
    )
    message = (
        f"non-preemptible job would exceed quota of queue {failure.queue} "
        f"(quota {numbers} {name}; {why} never goes over quota)"
    )
    return Reason(OVER_QUOTA, message, queue=failure.queue)


def explain(ssn: Session, job: JobState, scan: bool = True) -> Reason:
    """The reason `job` has pending pods after the simulation. `scan` False: the time limit ran out, and what
    would scan the nodes is not worked out (NOT_EXPLAINED; a job evicted, or one a stopped run never reached,
    still says so)."""
    queue_names = {q.name for q in ssn.snapshot.queues}
    if not job.queue_name:
        return Reason(QUEUE_MISSING, "the job names no queue (its PodGroup's spec.queue is empty)", queue="")
    if job.queue_name not in queue_names:
        return Reason(QUEUE_MISSING, f"queue {job.queue_name} does not exist", queue=job.queue_name)
    if job.queue_name in ssn.dropped_queues:
        message = f"queue {job.queue_name} is dropped: an ancestor queue does not exist"
        return Reason(QUEUE_ORPHANED, message, queue=job.queue_name)
    if job.queue is not None and not job.queue.is_leaf:
        message = f"queue {job.queue_name} is not a leaf queue; only leaf queues schedule jobs"
        return Reason(QUEUE_NOT_LEAF, message, queue=job.queue_name)
    if not job.is_ready():
        message = f"job has {len(job.tasks)} pods, fewer than its minMember {job.min_member}"
        return Reason(NOT_READY, message)
    recorded = job.reason
    if isinstance(recorded, tuple) and recorded[0] == "capacity":
        return _capacity_reason(job, recorded[1])
    if ssn.unresolvable:
        # Lasting, whatever else failed first: the pod cannot start until its volumes or ConfigMaps are there.
        waiting = (t for t in job.tasks_by_order if t.status == "Pending" and t.name in ssn.unresolvable)
        unresolvable = next(waiting, None)
        if unresolvable is not None:
            return Reason(*ssn.unresolvable[unresolvable.name])
    if isinstance(recorded, tuple) and recorded[0] == "topology":
        # KAI's fit errors, the summary (which names the closest domain) last.
        return Reason(TOPOLOGY, recorded[1][-1])
    if not scan and recorded is not None:
        return _not_explained(ssn)
    if isinstance(recorded, tuple) and recorded[0] == "placement":
        _, task, placed, wanted = recorded
        reason = diagnose_task(ssn, task)
        if wanted > 1:
            placed = max(placed, _greedy_fit(ssn, job, wanted))
            detail = reason.parts()
            if reason.code == NO_NODE and "closest" not in reason.message:
                # One pod alone fits: the gang fails on the cluster's total room, not on a predicate.
                need = sum(
                    t.req.count for t in job.tasks_by_order if t.status == "Pending" and t.req.kind == KIND_WHOLE
                )
                free = sum(max(0, n.nonallocated_gpus()) for n in ssn.node_list)  # a node's count can go below 0
                detail = [f"{free} whole GPUs free, {need} needed" if need else "the cluster has room for fewer pods"]
            lead = f"gang of {wanted} needs {wanted} pods placed at once; only {placed} fit ("
            return _naming(GANG, [lead, *detail, ")"], queue=reason.queue, node=reason.node)
        return reason
    if any(t.status == "Pipelined" for t in job.tasks):
        return Reason(WAITING, "pipelined: waiting for evicted pods to release their resources")
    if job.evicted is not None:
        return _evicted(ssn, job.name, job.evicted)
    if job.pipelined_by is not None:  # the pipelined pods went back to Pending between cycles (FORMAT.md)
        action, node = job.pipelined_by
        message = f"pipelined by {action} onto {node}, to start once evicted pods release their resources"
        ended = "" if job.name in ssn.moving else "; the simulated cycles ended first"
        return Reason(WAITING, f"{message}{ended}", node=node)
    if ssn.partial and not job.reached:
        message = f"not reached: the run stopped at its time limit ({ssn.limit_name}) before any action got to this job"
        return Reason(NOT_REACHED, message)
    if not scan:
        return _not_explained(ssn)
    task = next((t for t in job.tasks_by_order if t.status == "Pending"), None)
    if task is not None:
        reason = diagnose_task(ssn, task)
        if reason.code != NO_NODE or "closest" in reason.message:
            return reason
    return Reason(NOT_ATTEMPTED, "no scheduling action placed the job in the simulated cycles")


def _not_explained(ssn: Session) -> Reason:
    return Reason(NOT_EXPLAINED, f"not explained: the time limit ({ssn.limit_name}) ran out first")


def _evicted(ssn: Session, name: str, evicted: tuple[str, str | None, str | None]) -> Reason:
    """A job whose pods an action evicted (or moved) and that nothing placed again before the run ended."""
    action, preemptor, moved_to = evicted
    if preemptor is None:  # stalegangeviction evicts a gang for itself
        why = ": fewer of its pods ran than its gang minimum for longer than its staleness grace period"
    else:
        why = f" to make room for {preemptor}"
        if moved_to is not None:
            why += f", to restart on {moved_to}"
    if name in ssn.moving:  # the next cycle places it again, and moves it again
        return Reason(EVICTED, f"evicted by {action}{why}")
    after = f"before the run stopped at its time limit ({ssn.limit_name})" if ssn.partial else "in the simulated cycles"
    return Reason(EVICTED, f"evicted by {action}{why}; not placed again {after}")


def _more(count: int) -> str:
    return "" if count <= 0 else f" (and {count} more node{'s' if count > 1 else ''})"


def _affinity_refusals(ssn: Session, task: TaskState, nodes: list[NodeState]) -> Reason | None:
    """Inter-pod affinity (placement.pod_affinity) refusing every node with room for the pod, in the final state."""
    if not needs_check(ssn, task) or task.name in ssn.affinity_filter_skipped:
        return None  # the Filter did not run for it in this session
    check = AffinityCheck(ssn, task)
    refusals = [(node, check.refusal(node)) for node in nodes]
    if any(why is None for _, why in refusals):
        return None
    node, why = refusals[0]
    more = _more(len(nodes) - 1)
    message = f"inter-pod affinity keeps it off every node with room for it: on {node.name}, {why}{more}"
    return Reason(POD_AFFINITY, message, node=node.name)


def _greedy_fit(ssn: Session, job: JobState, wanted: int) -> int:
    """How many of the gang's pending whole-GPU/CPU pods fit side by side in the final cluster.

    The allocate attempt may have stopped early (the whole-GPU fail-fast places nothing), so the count it
    recorded understates what fits; shared-GPU pods are not counted here (their recorded count stands).
    """
    free = {n.name: [n.nonallocated_gpus(), n.idle_cpu + n.rel_cpu, n.idle_mem + n.rel_mem] for n in ssn.node_list}
    scalar = {n.name: {k: v + n.rel_scalar.get(k, 0) for k, v in n.idle_scalar.items()} for n in ssn.node_list}
    typed_nodes = ssn.node_list
    count = 0
    for task in [t for t in job.tasks_by_order if t.status == "Pending"][:wanted]:
        req = task.req
        if req.kind not in (KIND_WHOLE, KIND_CPU):
            return 0
        for node in typed_nodes:
            room, extra = free[node.name], scalar[node.name]
            if type_error(task, node) is not None or not node.admits(req):
                continue
            if room[0] >= req.count and room[1] >= req.cpu and room[2] >= req.mem:
                if any(extra.get(name, 0) < n for name, n in req.scalar):
                    continue
                room[0] -= req.count
                room[1] -= req.cpu
                room[2] -= req.mem
                for name, n in req.scalar:
                    extra[name] -= n
                count += 1
                break
    return count


def _free_text(node: NodeState, task: TaskState) -> str:
    """What `node` lacks for the pod: the GPUs it asks and, as short, its CPU and memory (a pod blocked by memory
    was told of GPUs it did not need)."""
    req = task.req
    short = _cpu_memory_short(node, task)
    if req.kind == KIND_WHOLE:
        free = max(0, node.nonallocated_gpus())
        gpus = f"needs {req.count} GPU{'s' if req.count != 1 else ''}, {free} free"
        return ", ".join(short) if short and free >= req.count else ", ".join([gpus, *short])
    if req.kind == KIND_CPU:
        return ", ".join(short) or f"needs {req.cpu:g}m CPU, {node.idle_cpu + node.rel_cpu:g}m free"
    if req.kind == KIND_MIG:
        devices = ", ".join(f"{node.idle_mig.get(k, 0) + node.rel_mig.get(k, 0)} {k}" for k, _ in req.mig)
        whole = [f"{max(0, node.nonallocated_gpus())} whole GPUs"] if req.count else []
        return ", ".join([f"{', '.join([*whole, devices])} free", *short])
    # A share that asks MIG devices too (TaskRequest): the devices it lacks.
    short += [f"{node.idle_mig.get(k, 0) + node.rel_mig.get(k, 0)} {k} free" for k, _ in req.mig]
    return ", ".join(short) or f"{max(0, node.nonallocated_gpus())} whole GPUs free"


def _cpu_memory_short(node: NodeState, task: TaskState) -> list[str]:
    """The pod's CPU and memory `node` has not got, idle or releasing (what `fits` compares)."""
    req = task.req
    cpu, mem = node.idle_cpu + node.rel_cpu, node.idle_mem + node.rel_mem
    short = [f"needs {req.cpu:g}m CPU, {max(0.0, cpu):g}m free"] if req.cpu > cpu else []
    if req.mem > mem:
        need, free = _memory_pair(req.mem, max(0.0, mem))
        short.append(f"needs {need} memory, {free} free")
    return short


def _memory_pair(need: float, free: float) -> tuple[str, str]:
    """Both amounts, with as many digits as it takes for them to differ (16Gi of 16383Mi is not "16Gi, 16Gi")."""
    for digits in (4, 7, 10):
        pair = (_bytes(need, digits), _bytes(free, digits))
        if pair[0] != pair[1]:
            return pair
    return f"{need:.0f} bytes", f"{free:.0f} bytes"


def _bytes(amount: float, digits: int) -> str:
    for unit, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if amount >= size:  # rounded to `digits`, written without an exponent (12000Gi, not 1.2e+04Gi)
            return f"{float(f'{amount / size:.{digits}g}'):f}".rstrip("0").rstrip(".") + unit
    return f"{amount:.0f} bytes"


def diagnose_task(ssn: Session, task: TaskState) -> Reason:
    """Why no node takes this pod now."""
    reason = _diagnose_task(ssn, task)
    if task.req.kind != KIND_MEMORY or reason.code not in (NO_NODE, FRAGMENTATION):
        return reason
    # Nodes whose GPUs KAI cannot size take no gpu-memory request (type_error): a closest miss or a fragmentation
    # among the others alone would hide that GPUs sit idle there. Only nodes the pod's constraints let it onto:
    # labelling another would not help.
    req = task.req
    unsized = [
        n.name for n in ssn.node_list if n.spec.ready and n.alloc_gpus > 0 and not n.mem_synced and n.admits(req)
    ]
    if not unsized:
        return reason
    note = (
        f"; {len(unsized)} GPU node{'s' * (len(unsized) != 1)} without the {GPU_MEMORY_NODE_LABEL} label "
        f"take{'s' * (len(unsized) == 1)} no gpu-memory request ({', '.join(unsized[:3])}){_more(len(unsized) - 3)}"
    )
    texts = (*reason.texts[:-1], reason.texts[-1] + note) if reason.texts else ()
    return replace(reason, message=reason.message + note, texts=texts)


def _diagnose_task(ssn: Session, task: TaskState) -> Reason:
    req = task.req
    job = task.job
    nodes = [n for n in ssn.node_list if n.spec.ready]
    if not nodes:
        return Reason(NOT_READY_NODES, "no node is ready (each is cordoned, NotReady or under pressure)")
    typed = [n for n in nodes if type_error(task, n) is None]
    if req.kind == KIND_MEMORY and not any(n.mem_synced and n.alloc_gpus > 0 for n in nodes):
        message = f"gpu-memory request needs the {GPU_MEMORY_NODE_LABEL} node label; no node has it"
        return Reason(GPU_MEMORY_LABEL, message)
    if req.kind == KIND_MIG and not typed:
        return Reason(MIG, f"no MIG node (mixed strategy) offers {req.describe()}")
    if not typed:
        kinds = sorted({type_error(task, n) or "" for n in nodes})
        return Reason(MIG, f"no node accepts this pod type ({', '.join(kinds)})")
    allowed: list[NodeState] = []
    kept_off: list[NodeState] = []
    for n in typed:  # one pass: a membership test against the allowed list was quadratic in the nodes
        (allowed if n.admits(req) else kept_off).append(n)
    if not allowed:
        return _constraint_reason(task, typed)
    typed = allowed
    if req.kind == KIND_MEMORY and all(not n.valid_portion(req) for n in typed):
        message = f"gpu-memory {req.gpu_memory} MiB exceeds the memory of every GPU"
        return Reason(GPU_MEMORY_TOO_LARGE, message)
    resource_fit = [n for n in typed if n.fits(task, releasing=True)]
    for node in resource_fit:
        requested = (req.cpu, req.mem, node_quota_gpus(task, node))
        failure = over_limit(job.queue, requested)  # type: ignore[arg-type]
        if failure is None and not job.preemptible:
            failure = over_quota(job.queue, requested)  # type: ignore[arg-type]
        if failure is not None:
            share = f"{requested[GPU]:g} GPU on {node.name}"
            base = _capacity_reason(job, failure)
            return Reason(NODE_CAPACITY, f"{req.describe()} is {share}: {base.message}", failure.queue, node.name)
    if resource_fit:
        node = resource_fit[0]
        clash = node.port_conflict(task) if req.host_ports else None
        if clash is not None and all(n.port_conflict(task) is not None for n in resource_fit):
            wanted, held = clash
            more = _more(len(resource_fit) - 1)
            message = (
                f"host port {describe(wanted)} is taken on every node with room for it: "
                f"{node.name} has a pod on {describe(held)}{more}"
            )
            return Reason(HOST_PORTS, message, node=node.name)
        refused = _affinity_refusals(ssn, task, resource_fit)
        if refused is not None:
            return refused
        if node.pods_available() < 2:
            return Reason(PODS, f"node {node.name} has no free pod slots", node=node.name)
        return Reason(NO_NODE, f"no node passes the scheduling predicates for {req.describe()}")
    # A node with room that the pod's constraints keep it off says more than the closest miss among the rest.
    roomy = [n for n in kept_off if n.fits(task, releasing=True)]
    if roomy:
        return _constraint_reason(task, roomy, "the nodes with room for it keep it off")
    short = _scalar_shortfall(task, typed)
    if short is not None:
        return short
    # Room for the rest on some node, but not for a scalar resource there (another node has it, without the rest).
    rest = [n for n in typed if n.fits(task, releasing=True, scalar=False)] if req.scalar else []
    lacking = _scalar_shortfall(task, rest, "no node with room for the rest") if rest else None
    if lacking is not None:
        return lacking
    if req.kind in (KIND_FRACTION, KIND_MEMORY) and not any(n.nonallocated_gpus() > 0 for n in typed):
        # Fragmentation only where no GPU is free and the rest of the pod fits: a GPU node short of CPU or memory
        # is told so below, and a node without GPUs (an EKS system node) has no shared GPU to fragment.
        roomy = [n for n in typed if n.alloc_gpus > 0 and n.pods_available() >= 1 and not _cpu_memory_short(n, task)]
        if roomy:
            return _fragmentation(task, roomy)
    if all(n.pods_available() < 1 for n in typed):
        # Every pod takes a slot (pod_info.go:415): resources alone would hide this.
        return Reason(PODS, "no node has a free pod slot (every node's allocatable pods are taken)")
    best = max(typed, key=lambda n: (n.nonallocated_gpus(), n.idle_cpu + n.rel_cpu, n.name))
    slot = "" if best.pods_available() >= 1 else ", no free pod slot"
    what = "the pod" if req.kind == KIND_CPU else req.describe()  # a CPU-only pod's describe() is "no GPU"
    message = f"no node fits {what}: closest miss {best.name} ({_free_text(best, task)}{slot})"
    return Reason(NO_NODE, message, node=best.name)


def _constraint_reason(
    task: TaskState, nodes: list[NodeState], lead: str = "no node passes the pod's node constraints"
) -> Reason:
    """The pod's nodeSelector, affinity and tolerations keep it off these nodes: what keeps it off the first few."""
    shown = [node_constraints.refusal(task.req.constraints, n.spec) or "" for n in nodes[:3]]
    more = _more(len(nodes) - 3)
    message = f"{lead}: {'; '.join(shown)}{more}"
    return Reason(NODE_CONSTRAINTS, message)


def scalar_text(name: str, amount: float) -> str:
    """A scalar resource amount in the unit a manifest would use (KAI keeps thousandths, or bytes for storage)."""
    if in_bytes(name):
        return f"{amount / 2**30:g}Gi {name}"
    return f"{amount / 1000:g} {name}"


def _scalar_shortfall(task: TaskState, nodes: list[NodeState], which: str = "no node") -> Reason | None:
    """The first scalar resource (RDMA devices, hugepages, ephemeral storage...) none of `nodes` (`which`) has."""
    for name, need in task.req.scalar:
        best = max(nodes, key=lambda n: (n.scalar_free(name), n.name))
        have = best.scalar_free(name)
        if have < need:
            if have > 0:
                most = f"the most is {scalar_text(name, have)}, on {best.name}"
                return Reason(NO_NODE, f"{which} has {scalar_text(name, need)} free; {most}", node=best.name)
            return Reason(NO_NODE, f"{which} has {scalar_text(name, need)} free (none has any)")
    return None


def _fragmentation(task: TaskState, nodes: list[NodeState]) -> Reason:
    req = task.req
    free: list[tuple[float, GpuRef]] = []
    for node in nodes:
        for g, used in node.sh_used.items():
            if used and node.sh_alloc.get(g, 0) != node.sh_rel.get(g, 0) and node.gpu_mem:
                # Over-committed (a share asking more memory than the node's label says) is no room, not less.
                free.append((max(0.0, node.group_free(g) / node.gpu_mem), (node.name, g)))
    what = f"fraction {req.portion:g}" if req.kind == KIND_FRACTION else f"gpu-memory {req.gpu_memory} MiB"
    parts: list[str | GpuRef] = [f"{what} fits no shared GPU and no whole GPU is free"]
    if free:
        parts.append(" (fragmentation: ")
        for i, (room, ref) in enumerate(free[:5]):
            # Rounded down: 0.4999 free must not read "0.50 free" beside a 0.5 that does not fit.
            parts += [", " if i else "", f"{math.floor(room * 100 + 1e-9) / 100:.2f} free on ", ref]
        parts.append("...)" if len(free) > 5 else ")")
    return _naming(FRAGMENTATION, parts)
