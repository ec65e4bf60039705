# Long module: one class, KAI's NodeInfo; the shared-GPU rules move the same Idle/Releasing GPU counters
# as the whole-GPU ones, so they stay beside them.
"""Per-node resource accounting, ported from KAI's node_info.go and gpu_sharing_node_info.go.

Whole GPUs, CPU, memory, pods and MIG devices are tracked as Idle / Releasing / Used like KAI's
NodeInfo. Shared GPUs ("GPU groups") are tracked per group in MiB: `used` (every pod placed there),
`allocated` (all but pipelined pods) and `releasing` (releasing minus pipelined), and a group takes one
whole GPU out of Idle while it is in use, as the reservation pod does in a real cluster. The add/remove
rules below mirror KAI's line by line, including its quirks, because pipelining and consolidation depend
on them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from placement import node_constraints
from placement.host_ports import HostPort, conflict
from placement.model import DEFAULT_GPU_MEMORY_MIB, Node, OutsideShare
from placement.tasks import (
    KIND_CPU,
    KIND_MEMORY,
    KIND_MIG,
    KIND_WHOLE,
    PIPELINED,
    RELEASING,
    RUNNING,
    TaskRequest,
    TaskState,
    extended_gpus,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["Entry", "NodeState", "gpu_memory_fraction", "kai_gpu_memory"]


def _go_atoi(text: str) -> bool:
    """Whether Go's strconv.Atoi accepts the text: an optional sign, decimal digits, within int64."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return False
    return -(2**63) <= int(text) < 2**63


def kai_gpu_memory(label_mib: int | None) -> int:
    """getNodeGpuMemory: the MiB per GPU KAI divides gpu-memory requests by. No label is DEFAULT_GPU_MEMORY_MIB, a
    label of a TiB or more was in bytes (gpu-feature-discovery issue 26), and it is floored to a multiple of 100."""
    label = DEFAULT_GPU_MEMORY_MIB if label_mib is None else int(label_mib)
    if label >= 1024 * 1024:
        label //= 1024 * 1024
    return label - label % 100


def gpu_memory_fraction(memory_mib: int, gpu_memory_mib: int) -> float:
    """getGpuMemoryFractionalOnNode: ceil(M / nodeMemory * 100) / 100.

    A GPU-memory label under 100 MiB floors to 0 (getNodeGpuMemory). Go's division then gives +Inf, so a
    gpu-memory pod is never a valid portion there; 0 / 0 is NaN in Go, which every quota comparison reads as
    "not over", as 0 does here."""
    if gpu_memory_mib <= 0:
        return math.inf if memory_mib > 0 else 0.0
    return math.ceil(memory_mib / gpu_memory_mib * 100) / 100


def _track_named(
    amounts: tuple[tuple[str, int], ...],
    sign: int,
    status: str,
    alloc: dict[str, int],
    idle: dict[str, int],
    rel: dict[str, int],
) -> None:
    """_track for the named dimensions (MIG profiles, scalar resources); one the node does not offer is skipped."""
    for name, n in amounts:
        if not alloc.get(name):
            continue
        n *= sign
        if status == RELEASING:
            rel[name] = rel.get(name, 0) + n
            idle[name] = idle.get(name, 0) - n
        elif status == PIPELINED:
            rel[name] = rel.get(name, 0) - n
        else:
            idle[name] = idle.get(name, 0) - n


class Entry:
    """A task as the node holds it (KAI keeps a copy per node; a moved pod is on two nodes)."""

    __slots__ = ("cpu", "gmem", "gpus", "groups", "mem", "mig", "scalar", "shared", "status", "task")
    pods = 1  # the pod slot it takes (pod_info.go:415)

    def __init__(self, task: TaskState, status: str, groups: list[str], node: NodeState) -> None:
        req = task.req
        self.task = task
        self.status = status
        self.groups = list(groups)
        self.shared = req.shared
        self.cpu = req.cpu
        self.mem = req.mem
        # getAcceptedTaskResourceWithoutSharedGPU: whole GPUs only; shared GPUs are counted per group, and a MIG
        # pod holds its MIG devices alone, whole GPUs asked beside them or not (setAcceptedResources, :724-735).
        self.gpus = 0 if self.shared or req.kind == KIND_MIG else int(req.gpus)
        self.mig = req.mig
        self.scalar = req.scalar
        self.gmem = node.request_memory(req)


class _HeldShare:
    """A GPU share outside every job (Node.outside_shares), charged to its groups as an entry would be."""

    __slots__ = ("gmem", "status")

    def __init__(self, share: OutsideShare, gpu_mem: int) -> None:
        self.status = RELEASING if share.releasing else RUNNING
        # GetResourceGpuMemory: the memory asked, else the fraction of this node's GPU memory.
        self.gmem = share.memory_mib if share.memory_mib is not None else int((share.fraction or 0.0) * gpu_mem)


class Held:
    """What pods outside every job hold on a node (Node.held or Node.releasing), charged as one entry would be."""

    __slots__ = ("cpu", "gpus", "mem", "mig", "pods", "scalar", "status")

    def __init__(self, amounts: Mapping[str, float], status: str) -> None:
        self.status = status
        self.cpu = float(amounts.get("cpu", 0.0))
        self.mem = float(amounts.get("memory", 0.0))
        self.gpus = int(amounts.get("nvidia.com/gpu", 0))
        self.pods = int(amounts.get("pods", 0))
        core = ("cpu", "memory", "nvidia.com/gpu", "pods")
        named = sorted((k, int(v)) for k, v in amounts.items() if k not in core)
        self.mig = tuple((k, v) for k, v in named if k.startswith("nvidia.com/mig-"))
        self.scalar = tuple((k, v) for k, v in named if not k.startswith("nvidia.com/mig-"))


class NodeState:
    """One node during a session."""

    __slots__ = (
        "admitted",
        "alloc_cpu",
        "alloc_gpus",
        "alloc_mem",
        "alloc_mig",
        "alloc_pods",
        "alloc_scalar",
        "anti_entries",
        "born",
        "capacity_cache",
        "entries",
        "gpu_count",
        "gpu_mem",
        "idle_cpu",
        "idle_gpus",
        "idle_mem",
        "idle_mig",
        "idle_pods",
        "idle_scalar",
        "keep_off",
        "mem_synced",
        "mig_enabled",
        "mig_strategy",
        "n_moving",
        "n_used_shared",
        "name",
        "on_change",
        "outside",
        "outside_ports",
        "port_entries",
        "preferred_entries",
        "preferred_outside",
        "rel_cpu",
        "rel_gpus",
        "rel_mem",
        "rel_mig",
        "rel_pods",
        "rel_scalar",
        "reserved",
        "sh_alloc",
        "sh_marked",
        "sh_rel",
        "sh_used",
        "spec",
        "used_gpus",
        "version",
        "watchers",
    )

    def __init__(self, spec: Node) -> None:
        self.spec = spec
        self.name = spec.name
        self.mig_strategy = spec.mig_strategy if spec.mig_strategy in ("single", "mixed") else "none"
        self.alloc_mig = {k: int(v) for k, v in spec.mig.items()}
        # The harness (and the GPU operator) label MIG nodes; a node exposing MIG devices is one too.
        self.mig_enabled = self.mig_strategy != "none" or any(v > 0 for v in self.alloc_mig.values())
        if not self.mig_enabled:
            self.mig_strategy = "none"
        # nvidia.com/gpu.count keeps the physical count; allocatable nvidia.com/gpu is 0 on mixed MIG nodes.
        self.gpu_count = int(spec.gpus)
        self.alloc_gpus = int(spec.mixed_gpus) if self.mig_strategy == "mixed" else int(spec.gpus)
        self.mem_synced = spec.gpu_memory_mib is not None
        self.gpu_mem = kai_gpu_memory(spec.gpu_memory_mib)
        self.alloc_cpu = float(spec.cpu_millis)
        self.alloc_mem = float(spec.memory_bytes)
        self.alloc_pods = int(spec.pods)
        self.idle_gpus = self.alloc_gpus
        self.rel_gpus = 0
        self.used_gpus = 0
        self.idle_cpu, self.rel_cpu = self.alloc_cpu, 0.0
        self.idle_mem, self.rel_mem = self.alloc_mem, 0.0
        self.idle_mig = dict(self.alloc_mig)
        # Pod slots, a resource like the others since KAI #969 (every pod asks pods=1, pod_info.go:415).
        self.idle_pods, self.rel_pods = self.alloc_pods, 0
        self.rel_mig = {k: 0 for k in self.alloc_mig}
        # Scalar resources (placement.scalar_resources), like MIG devices: idle and releasing per name. A name the
        # node does not offer is 0 there (KAI's session-wide vector) and never charged (_track).
        self.alloc_scalar = {k: int(v) for k, v in spec.scalar.items() if v}
        self.idle_scalar = dict(self.alloc_scalar)
        self.rel_scalar: dict[str, int] = {}
        # Taints that keep untolerating pods off (NoSchedule, NoExecute), and the verdict per constraint id.
        self.keep_off = any(t.effect in node_constraints.KEEP_OFF for t in spec.taints)
        self.admitted: dict[int, bool] = {}
        # For inter-pod affinity (placement.pod_affinity): the entries whose pod has anti-affinity terms, and the
        # pods outside every job as (namespace, labels, anti-affinity terms).
        self.anti_entries: dict[str, Entry] = {}
        # The entries whose pod has preferred inter-pod terms, which score other pods' nodes
        # (pod_affinity.affinity_scores).
        self.preferred_entries: dict[str, Entry] = {}
        self.outside = [(p.namespace, dict(p.labels), p.anti_affinity) for p in spec.outside_pods]
        # The pods outside every job with preferred terms: the only ones a pod without terms of its own scores
        # against (a DaemonSet's pods on every node would otherwise be read for every pod placed).
        self.preferred_outside = [p for p in spec.outside_pods if p.has_preferred]
        # For host ports (placement.host_ports): the entries whose pod binds some, and what pods outside every
        # job bind here.
        self.port_entries: dict[str, Entry] = {}
        self.outside_ports = [port for p in spec.outside_pods for port in p.host_ports]
        if spec.held:
            self._track(Held(spec.held, RUNNING), 1)
        if spec.releasing:
            self._track(Held(spec.releasing, RELEASING), 1)
        self.sh_used: dict[str, int] = {}
        self.sh_rel: dict[str, int] = {}
        self.sh_alloc: dict[str, int] = {}
        self.sh_marked: set[str] = set()
        self.n_used_shared = 0
        for share in spec.outside_shares:
            held = _HeldShare(share, self.gpu_mem)
            for g in share.groups:
                self._add_shared(held, g)
        # Shared GPUs opened by the simulator, in any cycle: KAI names them with a new UUID (Session keeps the
        # set across cycles). Reservation pods on the node when the session opened: one per shared GPU in use
        # then; a GPU opened during the session has none yet (the binder creates it). Both set by the session.
        self.born: set[str] = set()
        self.reserved = 0
        # Entries that are Releasing or Pipelined: a node with any is ordered exhaustively.
        self.n_moving = 0
        self.entries: dict[str, Entry] = {}
        self.on_change: Callable[[NodeState], None] | None = None
        # Bumped on every change (never reset): caches over nodes compare it to know they are current.
        self.version = 0
        # (version, idle, releasing GPU capacity) for the solver's filters (idle_gpus_filter).
        self.capacity_cache: tuple[int, float, tuple[float, int], tuple[float, int]] | None = None
        # Objects whose `version` is bumped with this node's (topology domains caching their nodes' room).
        self.watchers: list[Any] = []

    # ---- derived values -------------------------------------------------------------------------

    def request_memory(self, req: TaskRequest) -> int:
        """GetResourceGpuMemory: MiB per device (gpu-memory as asked; a fraction f is int(f * GPU memory))."""
        if req.kind == KIND_MEMORY:
            return req.gpu_memory
        return int(req.portion * self.gpu_mem)

    def gpu_portion(self, req: TaskRequest) -> float:
        """getResourceGpuPortion: a gpu-memory request converted to this node's GPUs (ceil to 1/100)."""
        if req.kind == KIND_MEMORY:
            return gpu_memory_fraction(req.gpu_memory, self.gpu_mem)
        return req.portion

    def valid_portion(self, req: TaskRequest) -> bool:
        portion = self.gpu_portion(req)
        # Go's float64(int(+Inf)) is not +Inf, so an infinite portion is invalid (Python's int() would raise).
        return portion <= 1 or (math.isfinite(portion) and portion == int(portion))

    def accepted_for(self, req: TaskRequest) -> tuple[float, float, float]:
        """setAcceptedResources: [cpu, memory, GPU quota] the task holds once placed on this node."""
        if req.kind == KIND_MIG:
            gpus = req.mig_gpus
        elif req.shared:
            # AcceptedResourceVector keeps a share's MIG devices (node_info.go:747-753), which TotalGPUs counts.
            gpus = extended_gpus(self.gpu_portion(req), req.count) + req.share_mig_gpus
        else:
            gpus = req.gpus
        return (req.cpu, req.mem, gpus)

    def nonallocated_gpus(self) -> int:
        return self.idle_gpus + self.rel_gpus

    def is_cpu_only(self) -> bool:
        return not self.mig_enabled and self.alloc_gpus <= 0

    def has_releasing(self) -> bool:
        """Any releasing or pipelined resources: such nodes are ordered exhaustively, not via the index."""
        if self.rel_gpus or self.rel_cpu or self.rel_mem:
            return True
        if self.n_moving > 0 or any(self.sh_rel.values()) or any(self.rel_mig.values()):
            return True
        return any(self.rel_scalar.values())

    def used_gpu_count(self) -> int:
        """getNumberOfUsedGPUs: whole GPUs used plus shared GPUs in use."""
        return self.used_gpus + self.n_used_shared

    def group_free(self, group: str) -> int:
        """MiB a new pod could use on this group (releasing memory counts, for pipelining)."""
        return self.gpu_mem - self.sh_alloc.get(group, 0) + self.sh_rel.get(group, 0)

    def fits_group(self, gmem: int, group: str) -> bool:
        """IsTaskFitOnGpuGroup."""
        used = self.sh_used.get(group, 0)
        if used == 0:
            return False
        alloc = self.sh_alloc.get(group, 0)
        rel = self.sh_rel.get(group, 0)
        return self.gpu_mem - alloc + rel - gmem >= 0 and alloc != rel

    def enough_idle_on_group(self, gmem: int, group: str) -> bool:
        """EnoughIdleResourcesOnGpu: fits without waiting for releasing pods."""
        if group not in self.sh_alloc:
            return False
        return self.gpu_mem - self.sh_alloc[group] - gmem >= 0

    def fitting_groups(self, gmem: int) -> list[str]:
        return [g for g in self.sh_used if self.fits_group(gmem, g)]

    def max_group_free(self) -> int:
        """Largest free MiB over groups a pod could join (0 if none)."""
        best = 0
        for g, used in self.sh_used.items():
            if used and self.sh_alloc.get(g, 0) != self.sh_rel.get(g, 0):
                free = self.group_free(g)
                if free > best:
                    best = free
        return best

    def used_portion(self, group: str) -> float:
        """GetUsedGpuPortion, the gpupack/gpuspread score input."""
        if self.gpu_mem < DEFAULT_GPU_MEMORY_MIB:
            return 0.0
        return self.sh_used.get(group, 0) / self.gpu_mem

    def fresh_group_ids(self, count: int) -> list[str]:
        """Labels for GPU groups a pod would open here: the smallest integers not labelling a group yet."""
        labels: list[str] = []
        i = 0
        while len(labels) < count:
            label = str(i)
            i += 1
            if label not in self.sh_used:
                labels.append(label)
        return labels

    def forget_groups(self, groups: list[str]) -> None:
        """Drop GPU groups a rolled-back placement opened, so later labels do not depend on discarded work.

        KAI keeps such a group at 0 (removeSharedTaskResourcesPerPodGroup never deletes it), but every reader
        skips a group at 0 and a fresh GPU never takes an existing key (a UUID in KAI, fresh_group_ids here).
        """
        for g in groups:
            if self.sh_used.get(g, 0) == 0 and self.sh_alloc.get(g, 0) == 0 and self.sh_rel.get(g, 0) == 0:
                self.sh_used.pop(g, None)
                self.sh_alloc.pop(g, None)
                self.sh_rel.pop(g, None)
                self.sh_marked.discard(g)
                self.born.discard(g)

    def scalar_free(self, name: str) -> int:
        """A scalar resource's idle + releasing amount (0 where the node offers none)."""
        return self.idle_scalar.get(name, 0) + self.rel_scalar.get(name, 0)

    def pods_available(self) -> int:
        """Idle + releasing pod slots (the reservation pods that existed at open are running pods)."""
        return self.idle_pods + self.rel_pods

    def reserve_pods(self) -> None:
        """At session open: one reservation pod runs per shared GPU in use. A GPU opened later in the session
        has none yet (the binder creates it), so this is not updated as groups open and close."""
        self.idle_pods -= self.n_used_shared - self.reserved
        self.reserved = self.n_used_shared

    def new_group(self, group: str) -> bool:
        """isNewGpuGroup: KAI takes a group whose name is not an integer (strconv.Atoi) for a new one, which
        every GPU it opens is (a UUID), and so is a running pod's group with such a label."""
        return group in self.born or not _go_atoi(group)

    # ---- fit checks ------------------------------------------------------------------------------

    def admits(self, req: TaskRequest) -> bool:
        """The NodeAffinity and TaintToleration predicates (placement.node_constraints); labels and taints do
        not change within a session, so each constraint's verdict is kept."""
        cid = req.constraint_id
        if not cid and not self.keep_off:
            return True
        ok = self.admitted.get(cid)
        if ok is None:
            ok = self.admitted[cid] = node_constraints.admits(req.constraints, self.spec)
        return ok

    def port_conflict(self, task: TaskState) -> tuple[HostPort, HostPort] | None:
        """PodFitsHostPorts (placement.host_ports): a port the pod wants that a pod here, of any status, holds."""
        if not self.port_entries and not self.outside_ports:
            return None
        # The pod's own entry counts: a victim evicted in a simulation is still in KAI's NodeInfo (Releasing), so
        # its own ports keep it off its old node (node_info.go:575-581).
        used = [port for e in self.port_entries.values() for port in e.task.req.host_ports]
        return conflict([*used, *self.outside_ports], task.req.host_ports)

    def fits(self, task: TaskState, releasing: bool, scalar: bool = True) -> bool:
        """IsTaskAllocatable (idle only) or IsTaskAllocatableOnReleasingOrIdle (idle + releasing). `scalar=False`
        leaves the scalar resources out (for a reason that names them)."""
        req = task.req
        cpu, mem, gpus, pods = self.idle_cpu, self.idle_mem, self.idle_gpus, self.idle_pods
        if releasing:
            cpu += self.rel_cpu
            mem += self.rel_mem
            gpus += self.rel_gpus
            pods += self.rel_pods
        # No best-effort shortcut: KAI's (node_info.go:160) needs an all-zero request, and pods=1 never is.
        if req.cpu > cpu or req.mem > mem or pods < 1:
            return False
        if scalar and (req.scalar or self.idle_scalar) and not self._scalar_fits(req.scalar_map, releasing):
            return False
        if req.kind == KIND_WHOLE or req.kind == KIND_CPU or req.kind == KIND_MIG:
            # A regular or MIG request is compared on every dimension (lessEqualTaskToNodeResources,
            # node_info.go:357-359, 755-761): a node whose GPUs or MIG devices are over-committed (a negative
            # idle count) takes no such pod, even one that asks none of them.
            if req.gpus > gpus:
                return False
            return self._mig_fits(req, releasing)
        if not self.valid_portion(req) or (req.mig and not self._mig_fits(req, releasing)):
            return False
        need = req.count
        if gpus >= need:
            return True
        gmem = self.request_memory(req)
        matching = 0
        for g in self.sh_used:
            if self.fits_group(gmem, g):
                matching += 1
                if gpus + matching >= need:
                    return True
        return False

    def _mig_fits(self, req: TaskRequest, releasing: bool) -> bool:
        """The MIG dimensions of the vector comparison: a device the node lacks is 0 there, and one over-committed
        refuses a pod that asks none (lessEqualTaskToNodeResources, node_info.go:755-761)."""
        if not self.alloc_mig and not req.mig:
            return True
        asked = dict(req.mig)
        for name in self.alloc_mig:
            have = self.idle_mig.get(name, 0) + (self.rel_mig.get(name, 0) if releasing else 0)
            if asked.get(name, 0) > have:
                return False
        return all(name in self.alloc_mig for name in asked)

    def _scalar_fits(self, want: dict[str, int], releasing: bool) -> bool:
        """The scalar dimensions of the vector comparison, for every kind of pod (node_info.go:347-359, 755-761,
        372-389): a name the node lacks has 0 there, and one over-committed (idle below 0) refuses every pod."""
        for name, idle in self.idle_scalar.items():
            have = idle + self.rel_scalar.get(name, 0) if releasing else idle
            if want.get(name, 0) > have:
                return False
        return all(name in self.idle_scalar for name in want)

    # ---- accounting (node_info.addTask / removeTask) ---------------------------------------------

    def add(self, task: TaskState, status: str, groups: list[str]) -> Entry:
        entry = Entry(task, status, groups, self)
        self.entries[task.name] = entry
        if task.req.has_anti:
            self.anti_entries[task.name] = entry
        if task.req.has_preferred:
            self.preferred_entries[task.name] = entry
        if task.req.host_ports:
            self.port_entries[task.name] = entry
        if status in (RELEASING, PIPELINED):
            self.n_moving += 1
        self._track(entry, 1)
        if entry.shared:
            for g in entry.groups:
                self._add_shared(entry, g)
        self._changed()
        return entry

    def remove(self, task: TaskState) -> Entry | None:
        entry = self.entries.pop(task.name, None)
        if entry is None:
            return None
        if task.req.has_anti:
            self.anti_entries.pop(task.name, None)
        if task.req.has_preferred:
            self.preferred_entries.pop(task.name, None)
        if task.req.host_ports:
            self.port_entries.pop(task.name, None)
        if entry.status == RELEASING or entry.status == PIPELINED:
            self.n_moving -= 1
        self._track(entry, -1)
        if entry.shared:
            for g in entry.groups:
                self._remove_shared(entry, g)
        self._changed()
        return entry

    def attach(self, entry: Entry) -> None:
        """Undo a shared-GPU move's detach (statement._DETACH): the old copy is back, for affinity too.

        Its host ports are not: ConsolidateSharedPodInfoToDifferentGPU adds the pod to KAI's Kubernetes
        NodeInfo a second time (gpu_sharing_node_info.go:237-238, node_info.go:398-419) and unpipeline removes
        it once, which leaves the pod there but takes its ports out of UsedPorts, a set.
        """
        task = entry.task
        self.entries[task.name] = entry
        if task.req.has_anti:
            self.anti_entries[task.name] = entry
        if task.req.has_preferred:
            self.preferred_entries[task.name] = entry

    def _changed(self) -> None:
        self.version += 1
        for watcher in self.watchers:
            watcher.version += 1
        if self.on_change is not None:
            self.on_change(self)

    def _track(self, e: Entry | Held, sign: int) -> None:
        """addTaskResources / removeTaskResources for the non-shared part of a pod. A resource the node has none
        of allocatable is not charged (node_info.go:475-481, 533-538: KAI zeroes those dimensions, meaning
        DRA-backed ones), so a pod recorded on a node without GPUs holds none there."""
        cpu = sign * e.cpu if self.alloc_cpu else 0.0
        mem = sign * e.mem if self.alloc_mem else 0.0
        gpus = sign * e.gpus if self.alloc_gpus else 0
        self.used_gpus += gpus
        slot = sign * e.pods if self.alloc_pods else 0
        if e.status == RELEASING:
            self.rel_cpu += cpu
            self.rel_mem += mem
            self.rel_gpus += gpus
            self.rel_pods += slot
            self.idle_cpu -= cpu
            self.idle_mem -= mem
            self.idle_gpus -= gpus
            self.idle_pods -= slot
        elif e.status == PIPELINED:
            self.rel_cpu -= cpu
            self.rel_mem -= mem
            self.rel_gpus -= gpus
            self.rel_pods -= slot
        else:
            self.idle_cpu -= cpu
            self.idle_mem -= mem
            self.idle_gpus -= gpus
            self.idle_pods -= slot
        if e.mig:
            _track_named(e.mig, sign, e.status, self.alloc_mig, self.idle_mig, self.rel_mig)
        if e.scalar:
            _track_named(e.scalar, sign, e.status, self.alloc_scalar, self.idle_scalar, self.rel_scalar)

    def _set_used(self, g: str, value: int) -> None:
        before = self.sh_used.get(g, 0)
        self.sh_used[g] = value
        if before <= 0 < value:
            self.n_used_shared += 1
        elif value <= 0 < before:
            self.n_used_shared -= 1

    def _add_shared(self, e: Entry | _HeldShare, g: str) -> None:
        mem = e.gmem
        self._set_used(g, self.sh_used.get(g, 0) + mem)
        used = self.sh_used[g]
        if e.status == RELEASING:
            self.sh_rel[g] = self.sh_rel.get(g, 0) + mem
            self.sh_alloc[g] = self.sh_alloc.get(g, 0) + mem
            if used == self.sh_rel[g]:
                if g not in self.sh_marked:
                    self.rel_gpus += 1
                    self.sh_marked.add(g)
                if self.gpu_count < self.idle_gpus + self.used_gpu_count():
                    self.idle_gpus -= 1
        elif e.status == PIPELINED:
            self.sh_rel[g] = self.sh_rel.get(g, 0) - mem
            if used - mem == self.sh_rel[g] + mem:
                self.rel_gpus -= 1
        else:
            self.sh_alloc[g] = self.sh_alloc.get(g, 0) + mem
            if used <= mem and self.gpu_count < self.idle_gpus + self.used_gpu_count():
                self.idle_gpus -= 1
            if g in self.sh_marked:
                self.rel_gpus -= 1
                self.sh_marked.discard(g)

    def _remove_shared(self, e: Entry, g: str) -> None:
        mem = e.gmem
        self._set_used(g, self.sh_used.get(g, 0) - mem)
        used = self.sh_used[g]
        if e.status == RELEASING:
            self.sh_rel[g] = self.sh_rel.get(g, 0) - mem
            self.sh_alloc[g] = self.sh_alloc.get(g, 0) - mem
            if used <= 0:
                if self.gpu_count >= self.idle_gpus + self.used_gpu_count():
                    self.idle_gpus += 1
                if g in self.sh_marked:
                    self.rel_gpus -= 1
                    self.sh_marked.discard(g)
        elif e.status == PIPELINED:
            self.sh_rel[g] = self.sh_rel.get(g, 0) + mem
            rel = self.sh_rel[g]
            if (used + mem == rel - mem) or (used == 0 and rel == 0):
                self.rel_gpus += 1
        else:
            self.sh_alloc[g] = self.sh_alloc.get(g, 0) - mem
            if used <= 0 and self.gpu_count >= self.idle_gpus + self.used_gpu_count():
                self.idle_gpus += 1
            releasing = self.sh_rel.get(g)
            if used != 0 and releasing is not None and releasing == used and g not in self.sh_marked:
                self.rel_gpus += 1
                self.sh_marked.add(g)
