"""A Node object as KAI's cache sees it (KAI@v0.17.0 cluster_info.go:270-300, node_info.go:102-141): allocatable
less what other schedulers' pods hold, those being deleted as releasing, with its labels and taints.

Part of kaistack.ops.live_snapshot, which reads the objects; this module only builds nodes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from kaistack.declaration import kai_api
from kaistack.guardrails.podspec import dig, mapping, seq
from kaistack.ops.live_podgroups import node_not_ready
from kaistack.ops.live_pods import labels_of, millis, number, object_name, scalar_units
from placement.model import Job, Node, OutsidePod, Taint
from placement.node_constraints import ConstraintError, parse_taints
from placement.scalar_resources import counted

__all__ = ["node_of", "read_only", "untracked_by_kai"]


def untracked_by_kai(pod: Mapping[str, Any], requests: dict[str, float]) -> dict[str, float]:
    """What a pod outside KAI's jobs takes from its node. A GPU reservation pod (label app:
    kai-resource-reservation) takes no GPU and no pod slot here: its shared GPU and its slot are already
    counted from the fraction pods' GPU groups (node_info.go:470-473; NodeState.reserve_pods)."""
    if labels_of(pod).get("app") == kai_api.RESERVATION_APP_LABEL:
        return {"cpu": requests.get("cpu", 0.0), "memory": requests.get("memory", 0.0)}
    return requests


def node_of(
    obj: Mapping[str, Any],
    foreign: Iterable[Mapping[str, float]] = (),
    leaving: Iterable[Mapping[str, float]] = (),
    outside: Iterable[OutsidePod] = (),
) -> Node:
    """The node as KAI's placement sees it: allocatable less what other schedulers' pods request, those being
    deleted held as releasing. A node that is cordoned, NotReady or under pressure stays with its pods, not
    ready: KAI places nothing there and leaves it out of the fair-share total."""
    allocatable = mapping(dig(obj, "status", "allocatable"))
    labels = labels_of(obj)
    memory = labels.get(kai_api.GPU_MEMORY_LABEL)
    used, releasing = _summed(foreign), _summed(leaving)
    mig = {
        str(k): max(0, int(number(v) - used.get(str(k), 0)))
        for k, v in allocatable.items()
        if str(k).startswith(kai_api.MIG_RESOURCE_PREFIX) and number(v)
    }
    scalar = {
        str(k): max(0, scalar_units(str(k), v) - int(used.get(str(k), 0)))
        for k, v in allocatable.items()
        if counted(str(k))
    }
    pods = max(0, int(number(allocatable.get("pods")) or 110) - int(used.get("pods", 0)))
    ready = not node_not_ready(obj)
    taints: list[Taint] = []
    for item in seq(dig(obj, "spec", "taints")):
        try:
            taints.extend(parse_taints([item]))
        except ConstraintError:
            continue  # not a taint the API server would have stored
    return Node(
        name=object_name(obj),
        gpus=max(0, int(_gpus(allocatable) - used.get(kai_api.GPU_RESOURCE, 0))),
        gpu_memory_mib=int(number(memory)) if memory is not None else None,
        cpu_millis=max(0, millis(allocatable.get("cpu")) - int(used.get("cpu", 0))),
        memory_bytes=max(0, int(number(allocatable.get("memory")) - used.get("memory", 0))),
        pods=pods,
        mig_strategy=str(labels.get(kai_api.MIG_STRATEGY_LABEL, "none")) if mig else "none",
        mig=mig,
        labels={str(k): str(v) for k, v in labels.items()},
        ready=ready,
        scalar={k: v for k, v in scalar.items() if v},
        taints=tuple(taints),
        releasing={k: v for k, v in releasing.items() if v},
        outside_pods=tuple(outside),
    )


def _summed(pods: Iterable[Mapping[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for requests in pods:
        for key, amount in requests.items():
            total[key] = total.get(key, 0.0) + amount
    return total


def _gpus(allocatable: Mapping[str, Any]) -> float:
    """NVIDIA and AMD GPUs alike (resource_info.go:64)."""
    return number(allocatable.get(kai_api.GPU_RESOURCE)) + number(allocatable.get(kai_api.AMD_GPU_RESOURCE))


def read_only(nodes: tuple[Node, ...], jobs: list[Job], level_labels: set[str]) -> tuple[Node, ...]:
    """Nodes keep only the labels a Topology level or a KAI pod's node constraints read, and the scalar resources
    some KAI pod asks for. Every node offers ephemeral-storage and hugepages; a dimension no pod asks for can
    refuse a pod only when over-committed, which the clamp to 0 above rules out, and each one costs every fit
    check."""
    tasks = [task for job in jobs for task in job.tasks]
    asked = {name for task in tasks for name in task.scalar}
    asked_or_core = asked | {"cpu", "memory", "pods", kai_api.GPU_RESOURCE}
    read = set(level_labels)
    constraints = {task.constraints for task in tasks}
    for c in constraints:
        read.update(key for key, _ in c.node_selector)
        read.update(r.key for term in c.required_terms or () for r in term.match_expressions)
        read.update(t.topology_key for t in (*c.pod_affinity, *c.pod_anti_affinity))
    outside_anti = {t.topology_key for n in nodes for p in n.outside_pods for t in p.anti_affinity}
    read |= outside_anti
    # Other schedulers' pods matter to inter-pod affinity only when some pod has a term.
    keep_outside = bool(outside_anti) or any(c.pod_affinity or c.pod_anti_affinity for c in constraints)
    return tuple(
        dataclasses.replace(
            n,
            scalar={k: v for k, v in n.scalar.items() if k in asked},
            labels={k: v for k, v in n.labels.items() if k in read},
            outside_pods=n.outside_pods if keep_outside else (),
            releasing={k: v for k, v in n.releasing.items() if k in asked_or_core or k.startswith("nvidia.com/mig-")},
        )
        for n in nodes
    )
