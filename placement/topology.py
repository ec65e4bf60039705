"""KAI's topology plugin (KAI@v0.17.0 pkg/scheduler/plugins/topology): domains from node labels.

A Topology names node label keys, broadest first. A node with a value for every level is a member; its
domain at level i is the values of levels 0..i joined by "." (a rack is inside its zone). For a (sub)group
with a constraint, `subset_nodes` returns the node sets to try, in order: first the domains of the preferred
level that can hold the whole batch, packed first, then those of each level up to the required one (or up
to the root). It also ranks nodes by their preferred-level domain (`scores`), so that within a domain
allowed by the requirement pods still gather. Free room is idle + releasing resources, whole GPUs only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from placement.tasks import ACTIVE_ALLOCATED, TaskState
from placement.topology_tree import Domain, TopologyTree

if TYPE_CHECKING:
    from placement.model import TopologyConstraint
    from placement.nodes import NodeState
    from placement.subgroups import PodSet

__all__ = ["TOPOLOGY_SCORE", "subset_nodes"]

TOPOLOGY_SCORE = 100_000  # scores.Topology: above gpu-sharing (10,000), availability and binpack
_NO_ROOM = 1000.0  # getJobRatioToFreeResources for a resource the domain has none of
# Resource vector positions: cpu millis, memory bytes, whole GPUs, pods, then one per MIG profile or scalar
# resource the batch asks for (their names never meet: placement.scalar_resources leaves MIG names out).
_CPU, _MEM, _GPU, _PODS = 0, 1, 2, 3


# ---- resource vectors ---------------------------------------------------------------------------------


def _profiles(tasks: Sequence[TaskState]) -> list[str]:
    return sorted({name for t in tasks for name, _ in (*t.req.mig, *t.req.scalar)})


def _task_vector(task: TaskState, profiles: list[str]) -> list[float]:
    req = task.req
    named = dict((*req.mig, *req.scalar))
    return [req.cpu, req.mem, req.gpus, 1.0, *(float(named.get(p, 0)) for p in profiles)]


def _node_free(node: NodeState, profiles: list[str]) -> list[float]:
    """Idle + releasing resources; the GPU term counts whole GPUs only (shared GPUs in use are not free)."""
    return [
        node.idle_cpu + node.rel_cpu,
        node.idle_mem + node.rel_mem,
        float(node.idle_gpus + node.rel_gpus),
        float(node.pods_available()),
        *(float(_named_free(node, p)) for p in profiles),
    ]


def _named_free(node: NodeState, name: str) -> int:
    """A MIG profile's or scalar resource's idle + releasing amount (a name is one or the other)."""
    mig = node.idle_mig.get(name, 0) + node.rel_mig.get(name, 0)
    return mig + node.scalar_free(name)


def _ratio(req: list[float], free: list[float]) -> float:
    """getJobRatioToFreeResources: the batch's largest share of the domain's free room (pods not counted)."""
    best = 0.0
    for i, need in enumerate(req):
        if i == _PODS or need <= 0:
            continue
        have = free[i] if free else 0.0
        share = need / have if have > 0 else _NO_ROOM
        best = max(best, share)
    return best


def _representable(tasks: Sequence[TaskState]) -> bool:
    """useRepresentorPodsAccounting: every pod or none asks for GPUs, and likewise for each other resource."""
    with_gpu = sum(1 for t in tasks if t.req.gpus > 0)
    if with_gpu not in (0, len(tasks)):
        return False
    profiles = _profiles(tasks)
    if not profiles:
        return True
    asks = [dict((*t.req.mig, *t.req.scalar)) for t in tasks]
    for profile in profiles:
        asking = sum(1 for named in asks if named.get(profile, 0) > 0)
        if asking not in (0, len(tasks)):
            return False
    return True


def _over_committed(idle: dict[str, int], releasing: dict[str, int]) -> bool:
    return any(n + releasing.get(name, 0) < 0 for name, n in idle.items())


def available_shared_fractions(node: NodeState) -> float:
    """AvailableSharedGPUFractions: the free part of each shared GPU a pod uses, in GPUs.

    A group no pod uses any more is skipped: KAI keeps a group in its maps at 0 once its last pod is gone,
    as NodeState.remove does, and that GPU is counted among the idle whole GPUs already.
    """
    if node.gpu_mem <= 0:
        return 0.0
    total = 0.0
    for group, used in node.sh_used.items():
        if used <= 0:
            continue
        available = node.gpu_mem - node.sh_alloc.get(group, 0) + node.sh_rel.get(group, 0)
        if available > 0:
            total += available / node.gpu_mem
    return total


def _accommodation(node: NodeState, free: list[float], biggest: list[float], count: int) -> int:
    """calcNodeAccommodation: how many of the batch's largest pod fit on this node's free room (`free`,
    from _node_free; not changed). The pod is compared on the node's whole vector (job_filtering.go:226-252):
    a MIG profile or scalar resource the batch does not ask for but the node has over-committed (below 0) leaves
    room for none."""
    if all(v <= 0 for i, v in enumerate(biggest) if i != _PODS):
        return count
    if _over_committed(node.idle_mig, node.rel_mig) or _over_committed(node.idle_scalar, node.rel_scalar):
        return 0
    if 0 < biggest[_GPU] < 1:
        free = list(free)
        free[_GPU] += available_shared_fractions(node)
    if any(need > have for need, have in zip(biggest, free, strict=True)):
        return 0
    return min(math.floor(have / need) for need, have in zip(biggest, free, strict=True) if need > 0)


# ---- subSetNodesFn ------------------------------------------------------------------------------------


class Fit:
    """One subset_nodes call's batch: its summed request and, for alike pods, per-domain pod counts."""

    def __init__(self, nodes: dict[str, NodeState], tasks: Sequence[TaskState]) -> None:
        self.nodes = nodes
        self.profiles = _profiles(tasks)
        vectors = [_task_vector(t, self.profiles) for t in tasks]
        self.req = [sum(column) for column in zip(*vectors, strict=True)]
        self.count = len(tasks)
        self.biggest = [max(column) for column in zip(*vectors, strict=True)] if _representable(tasks) else None
        # Per batch, not per rack: whether the pods need nothing but a slot, and the racks' cache key.
        self.pods_only = self.biggest is not None and all(v <= 0 for i, v in enumerate(self.biggest) if i != _PODS)
        self.key = tuple(self.biggest) if self.biggest is not None else ()

    def prepare(self, tree: TopologyTree, top: Domain) -> None:
        """treeAllocatableCleanup + calcSubTreeFreeResources + calcTreeAllocatable, below `top` only."""
        for level in tree.by_level.values():
            for domain in level.values():
                domain.allocatable = -1
                domain.free = []
        self._fill(tree, top)

    def _leaf(self, tree: TopologyTree, domain: Domain) -> tuple[list[float], int]:
        """A leaf domain's free room and pod count, recomputed only when one of its nodes changed since.

        Every batch of a big cluster looks at every rack; without the cache that is every node per batch.
        """
        stamp = domain.version
        cached = None if self.profiles else tree.cache.get(domain.id)
        if cached is None or cached[0] != stamp:
            cached = (stamp, self._sum_free(domain), {})
            if not self.profiles:
                tree.cache[domain.id] = cached
        pods = 0
        if self.pods_only:
            pods = self.count * len(domain.nodes)  # pods that need nothing fit anywhere, all of them per node
        elif self.biggest is not None:
            known = cached[2].get(self.key)
            if known is None:
                known = cached[2][self.key] = sum(
                    _accommodation(
                        self.nodes[name], _node_free(self.nodes[name], self.profiles), self.biggest, self.count
                    )
                    for name in domain.nodes
                )
            pods = known
        return cached[1], pods  # shared, never changed in place

    def _sum_free(self, domain: Domain) -> list[float]:
        free = [0.0] * (4 + len(self.profiles))
        for name in domain.nodes:
            for i, value in enumerate(_node_free(self.nodes[name], self.profiles)):
                free[i] += value
        return free

    def _fill(self, tree: TopologyTree, domain: Domain) -> None:
        if not domain.children:
            free, pods = self._leaf(tree, domain)
        else:
            pods = 0
            for child in domain.children:
                self._fill(tree, child)
                pods += child.allocatable
            free = [sum(column) for column in zip(*(child.free for child in domain.children), strict=True)]
        domain.free = free
        if self.biggest is not None:
            domain.allocatable = pods

    def fits(self, domain: Domain) -> bool:
        """checkJobDomainFit."""
        if domain.allocatable != -1:
            return domain.allocatable >= self.count
        return _ratio(self.req, domain.free) <= 1

    def shortfall(self, domain: Domain) -> str:
        if domain.allocatable != -1:
            return f"node-group {domain.id} can allocate only {domain.allocatable} of {self.count} required pods"
        free = domain.free or [0.0] * len(self.req)
        return f"{domain.id} has {free[_GPU]:g} free GPUs for {self.req[_GPU]:g} requested"

    def sort(self, domain: Domain, max_depth: str) -> None:
        """sortTree: children most packed first (largest share of their free room), then by id."""
        if not max_depth:
            return
        domain.children.sort(key=lambda d: (-_ratio(self.req, d.free), d.id))
        if domain.level == max_depth:
            return
        for child in domain.children:
            self.sort(child, max_depth)


def _common_domain(tree: TopologyTree, node_set: Sequence[NodeState], preferred: str) -> tuple[Domain, set[str]]:
    """lowestCommonDomainID: the deepest domain holding every member node of the set (not below preferred).

    The same set (the whole cluster, usually) comes back batch after batch, and labels never change: the
    last answer per preferred level is kept for that very list.
    """
    known = tree.common.get(preferred)
    if known is not None and known[0] is node_set:
        return known[1], known[2]
    domain, valid = _lowest_common(tree, node_set, preferred)
    tree.common[preferred] = (node_set, domain, valid)
    return domain, valid


def _lowest_common(tree: TopologyTree, node_set: Sequence[NodeState], preferred: str) -> tuple[Domain, set[str]]:
    valid = {n.name for n in node_set if n.name in tree.member}
    parts: list[str] = []
    for i, level in enumerate(tree.levels):
        values = {tree.member[name][i] for name in valid}
        if len(values) != 1:
            break
        value = next(iter(values))
        if value == "":
            break
        parts.append(value)
        if level == preferred:
            break
    if not parts:
        return tree.root, valid
    return tree.by_level[tree.levels[len(parts) - 1]][".".join(parts)], valid


def _subtree(domain: Domain) -> list[Domain]:
    out = [domain]
    for child in domain.children:
        out.extend(_subtree(child))
    return out


def _level_domains(domain: Domain, level: str) -> list[Domain]:
    if domain.level == level:
        return [domain]
    out: list[Domain] = []
    for child in domain.children:
        out.extend(_level_domains(child, level))
    return out


def _breadth_first_levels(root: Domain) -> list[Domain]:
    """sortDomainInfos' order: deepest level first; within a level, breadth-first over sorted children."""
    layers: list[list[Domain]] = []
    frontier = [root]
    while frontier:
        layers.append(frontier)
        frontier = [child for d in frontier for child in d.children]
    return [d for layer in reversed(layers) for d in layer]


def subset_nodes(
    trees: dict[str, TopologyTree],
    nodes: dict[str, NodeState],
    constraint: TopologyConstraint | None,
    pod_sets: Sequence[PodSet],
    tasks: Sequence[TaskState],
    node_set: list[NodeState],
    scores: dict[int, dict[str, float]],
    scores_key: int,
    errors: list[str],
) -> list[list[NodeState]]:
    """subSetNodesFn: the node sets to try for this (sub)group's batch, best first; [] = none fits.

    Fit errors go to `errors`; a constraint KAI cannot evaluate raises TopologyError. With a preferred
    level the node scores of this (sub)group are stored in `scores[scores_key]`.
    """
    if constraint is None or not constraint.topology:
        return [node_set]
    tree = trees.get(constraint.topology)
    if tree is None:
        errors.append(f"Requested topology {constraint.topology} does not exist")
        return []
    if not tasks:
        return [node_set]
    required, preferred = tree.resolve(constraint.required), tree.resolve(constraint.preferred)
    domain, valid = _common_domain(tree, node_set, preferred)
    fit = Fit(nodes, tasks)
    fit.prepare(tree, domain)
    requirement = f"topology {tree.name}, requirement {required or preferred} couldn't be satisfied"
    if not fit.fits(domain):
        where = "the cluster" if domain is tree.root else domain.id
        errors.append(f"{requirement}: not enough resources in {where} to allocate the job")
        return []
    fit.sort(domain, preferred or required)
    if preferred:
        ranked = _level_domains(domain, preferred)
        table: dict[str, float] = {}
        for i, d in enumerate(ranked):
            score = math.floor((i + 1) / len(ranked) * 10) * TOPOLOGY_SCORE
            for name in d.nodes:
                table[name] = float(score)
        scores[scores_key] = table
    levels = tree.relevant_levels(required, preferred)
    candidates = _candidates(tree, required, pod_sets)
    fitting = [d for d in candidates if d.level in levels and fit.fits(d)]
    if not fitting:
        last = [d for d in candidates if d.level == levels[-1]]
        errors.extend(f"{d.id}: {fit.shortfall(d)}" for d in sorted(last, key=lambda d: d.id))
        errors.append(f"{requirement}: {_best_domain(fit, levels[-1], last)}")
        return []
    allowed = {id(d) for d in fitting}
    ordered = [d for d in _breadth_first_levels(tree.root) if id(d) in allowed]
    return [[nodes[name] for name in d.nodes if name in valid] for d in ordered]


def _candidates(tree: TopologyTree, required: str, pod_sets: Sequence[PodSet]) -> list[Domain]:
    """Every domain, or - when the batch's pod sets already run pods and a level is required - the
    required-level domains where they run, and everything below them."""
    running = {t.node for ps in pod_sets for t in ps.tasks if t.node is not None and t.status in ACTIVE_ALLOCATED}
    if required and running:
        out: list[Domain] = []
        for domain in tree.by_level[required].values():
            if any(name in running for name in domain.nodes):
                out.extend(_subtree(domain))
        return out
    return [d for level in tree.by_level.values() for d in level.values()]


def _best_domain(fit: Fit, level: str, domains: list[Domain]) -> str:
    """The closest miss, for people: what the batch needs inside one domain and what the best one has."""
    name = level.rsplit("/", 1)[-1]
    if not domains:
        return f"no {name} domain has member nodes in reach"
    gpus = fit.req[_GPU]
    if fit.biggest is not None:
        best = min(domains, key=lambda d: (-d.allocatable, d.id))
        what = f"{fit.count} pods" + (f" ({gpus:g} GPUs)" if gpus else "")
        return f"needs {what} inside one {name}; the best {name}, {best.id}, has room for {max(best.allocatable, 0)}"
    best = min(domains, key=lambda d: (-(d.free or [0.0] * 4)[_GPU], d.id))
    free = (best.free or [0.0] * 4)[_GPU]
    return f"needs {gpus:g} GPUs inside one {name}; the best {name}, {best.id}, has {free:g} free"
