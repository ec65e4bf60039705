"""A running cluster's objects (Nodes, Pods, PodGroups, Queues) as the checker's snapshot.

The objects come from the API (kaistack.kube) or from `kubectl get nodes,pods,podgroups,queues,topologies -A -o yaml`;
this module only reads dicts. What KAI reads, and so what is read here (KAI@v0.17.0):
- a node's allocatable `nvidia.com/gpu`, MIG resources, cpu, memory and pods, the `nvidia.com/gpu.memory`
  label (MiB); cordoned nodes are left out;
- a Queue's `spec.parentQueue`, `priority` and `resources.{gpu,cpu,memory}.{quota,limit,overQuotaWeight}`,
  an omitted field being 0 as in the CRD;
- pods with `schedulerName: kai-scheduler`, grouped by their `pod-group-name` annotation (a pod without
  one is its own group); the PodGroup gives the queue, minMember and priority class, else the pod's
  queue label. A pod with `spec.nodeName` and not finished is Running there, with its GPU group
  (`runai-gpu-group` label) for shared GPUs; finished pods (Succeeded/Failed) are left out;
- Topology objects (`spec.levels[].nodeLabel`, `alias`) and the node labels they name; a PodGroup's
  `spec.topologyConstraint` (only with a `topology`, as subgroup_info.FromPodGroup reads it),
  `spec.minSubGroup` and `spec.subGroups`, and each pod's `kai.scheduler/subgroup-name` label.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kaistack.declaration import kai_api
from kaistack.guardrails.gpu_requests import fraction_ok, positive_uint64
from kaistack.guardrails.podspec import dig, mapping, seq
from placement.model import (
    Job,
    Node,
    Queue,
    QueueResource,
    Snapshot,
    SubGroup,
    Task,
    Topology,
    TopologyConstraint,
    TopologyLevel,
)
from placement.quantity import Quantity, QuantityError

FINISHED = ("Succeeded", "Failed")


@dataclass(frozen=True)
class LiveSnapshot:
    snapshot: Snapshot
    pods_of_job: dict[str, list[str]]  # job name -> "namespace/pod" of its tasks, in task order
    notes: tuple[str, ...] = field(default=())


def by_kind(objects: Iterable[Any]) -> dict[str, list[Mapping[str, Any]]]:
    """Objects grouped by kind, `List` items flattened; anything that is not a named object is left out."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    seen: set[tuple[str, str, str]] = set()  # (kind, namespace, name): a repeated object counts once
    stack = list(objects)
    while stack:
        obj = stack.pop(0)
        if not isinstance(obj, Mapping):
            continue
        kind = obj.get("kind")
        if not isinstance(kind, str):
            continue
        if kind.endswith("List"):
            stack.extend(i for i in seq(obj.get("items")) if isinstance(i, Mapping))
            continue
        name = dig(obj, "metadata", "name")
        if isinstance(name, str) and name:
            key = (kind, str(dig(obj, "metadata", "namespace") or ""), name)
            if key not in seen:
                seen.add(key)
                out.setdefault(kind, []).append(obj)
    return out


def build(objects: Iterable[Mapping[str, Any]], queue_label: str = kai_api.QUEUE_LABEL) -> LiveSnapshot:
    kinds = by_kind(objects)
    notes: list[str] = []
    topologies = tuple(t for t in (_topology(obj) for obj in kinds.get("Topology", [])) if t is not None)
    level_labels = {level.node_label for t in topologies for level in t.levels}
    nodes = tuple(_node(n, level_labels) for n in kinds.get("Node", []) if not dig(n, "spec", "unschedulable"))
    queues = tuple(_queue(q) for q in kinds.get("Queue", []))
    groups = {object_name(pg): pg for pg in kinds.get("PodGroup", [])}
    node_names = {n.name for n in nodes}
    members: dict[str, list[Mapping[str, Any]]] = {}
    for pod in kinds.get("Pod", []):
        if dig(pod, "spec", "schedulerName") != kai_api.SCHEDULER_NAME or dig(pod, "status", "phase") in FINISHED:
            continue
        group = _annotations(pod).get(kai_api.POD_GROUP_NAME) or f"pod/{object_namespace(pod)}/{object_name(pod)}"
        members.setdefault(str(group), []).append(pod)
    jobs = []
    pods_of_job: dict[str, list[str]] = {}
    for group, pods in members.items():
        pg = groups.get(group)
        queue = str(dig(pg, "spec", "queue") or "") if pg else ""
        if not queue:
            queue = str(_labels(pods[0]).get(queue_label) or "default-queue")
        klass = str(dig(pg, "spec", "priorityClassName") or dig(pods[0], "spec", "priorityClassName") or "")
        priority = kai_api.PRIORITY_CLASSES.get(klass, _int(dig(pods[0], "spec", "priority"), 50))
        tasks = []
        for pod in pods:
            node = dig(pod, "spec", "nodeName")
            if node and node not in node_names:
                notes.append(
                    f"pod {object_namespace(pod)}/{object_name(pod)} runs on {node}, which is not in the snapshot"
                )
                continue
            tasks.append(_task(pod, node, sub_groups=bool(pg and seq(dig(pg, "spec", "subGroups")))))
            pods_of_job.setdefault(group, []).append(f"{object_namespace(pod)}/{object_name(pod)}")
        if tasks:
            minimum = _int(dig(pg, "spec", "minMember"), 1) if pg else 1
            min_member = max(1, min(minimum, len(tasks)))
            jobs.append(
                Job(
                    group,
                    queue,
                    tuple(tasks),
                    priority,
                    min_member=min_member,
                    sub_groups=_sub_groups(pg),
                    min_sub_group=_optional_int(dig(pg, "spec", "minSubGroup")),
                    topology=_constraint(dig(pg, "spec", "topologyConstraint"), root=True),
                )
            )
    return LiveSnapshot(Snapshot(nodes, queues, tuple(jobs), topologies), pods_of_job, tuple(notes))


def _topology(obj: Mapping[str, Any]) -> Topology | None:
    levels = []
    for raw in seq(dig(obj, "spec", "levels")):
        label = mapping(raw).get("nodeLabel")
        alias = mapping(raw).get("alias")
        if isinstance(label, str) and label:
            levels.append(TopologyLevel(label, alias if isinstance(alias, str) and alias else None))
    return Topology(object_name(obj), tuple(levels)) if levels else None


def _constraint(raw: Any, root: bool = False) -> TopologyConstraint | None:
    """A topologyConstraint; the PodGroup's own counts only when it names a topology (FromPodGroup)."""
    if not isinstance(raw, Mapping):
        return None
    topology = raw.get("topology")
    if root and not (isinstance(topology, str) and topology):
        return None

    def level(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) and value else None

    return TopologyConstraint(
        topology if isinstance(topology, str) else "",
        level("requiredTopologyLevel"),
        level("preferredTopologyLevel"),
    )


def _sub_groups(pg: Mapping[str, Any] | None) -> tuple[SubGroup, ...]:
    """spec.subGroups; entries without a name, repeated names and parents that name no entry are dropped,
    as a PodGroup KAI could not build a tree from."""
    if not pg:
        return ()
    raw = [mapping(g) for g in seq(dig(pg, "spec", "subGroups"))]
    names = [g.get("name") for g in raw]
    if any(not isinstance(n, str) or not n for n in names) or len(set(names)) != len(names):
        return ()
    known = set(names)
    groups = []
    for g in raw:
        parent = g.get("parent")
        if parent is not None and parent not in known:
            return ()
        groups.append(
            SubGroup(
                str(g["name"]),
                str(parent) if parent is not None else None,
                _optional_int(g.get("minMember")),
                _optional_int(g.get("minSubGroup")),
                _constraint(g.get("topologyConstraint")),
            )
        )
    return tuple(groups)


def _optional_int(value: Any) -> int | None:
    number = _int(value, -1)
    return number if number >= 0 else None


def _node(obj: Mapping[str, Any], level_labels: set[str] | frozenset[str] = frozenset()) -> Node:
    allocatable = mapping(dig(obj, "status", "allocatable"))
    labels = _labels(obj)
    memory = labels.get(kai_api.GPU_MEMORY_LABEL)
    mig = {
        str(k): int(_number(v))
        for k, v in allocatable.items()
        if str(k).startswith(kai_api.MIG_RESOURCE_PREFIX) and _number(v)
    }
    return Node(
        name=object_name(obj),
        gpus=int(_number(allocatable.get(kai_api.GPU_RESOURCE))),
        gpu_memory_mib=int(_number(memory)) if memory is not None else None,
        cpu_millis=_millis(allocatable.get("cpu")),
        memory_bytes=int(_number(allocatable.get("memory"))),
        pods=int(_number(allocatable.get("pods")) or 110),
        mig_strategy=str(labels.get(kai_api.MIG_STRATEGY_LABEL, "none")) if mig else "none",
        mig=mig,
        labels={k: str(v) for k, v in labels.items() if k in level_labels},
    )


def _queue(obj: Mapping[str, Any]) -> Queue:
    spec = mapping(obj.get("spec"))
    resources = mapping(spec.get("resources"))

    def block(kind: str) -> QueueResource:
        raw = mapping(resources.get(kind))
        return QueueResource(_float(raw.get("quota")), _float(raw.get("limit")), _float(raw.get("overQuotaWeight")))

    parent = spec.get("parentQueue")
    return Queue(
        name=object_name(obj),
        parent=str(parent) if isinstance(parent, str) and parent else None,
        priority=_int(spec.get("priority"), 100),
        gpu=block("gpu"),
        cpu=block("cpu"),
        memory=block("memory"),
    )


def _task(pod: Mapping[str, Any], node: Any, sub_groups: bool = False) -> Task:
    annotations = _annotations(pod)
    cpu = memory = 0
    gpus = 0
    for container in seq(dig(pod, "spec", "containers")):
        resources = mapping(mapping(container).get("resources"))
        requests = mapping(resources.get("requests"))
        limits = mapping(resources.get("limits"))
        cpu += _millis(requests.get("cpu", limits.get("cpu")))
        memory += int(_number(requests.get("memory", limits.get("memory"))))
        gpus += int(_number(limits.get(kai_api.GPU_RESOURCE)))
    # Malformed values (which KAI's admission refuses) count as no share, not as an error here.
    fraction = annotations.get(kai_api.GPU_FRACTION) if fraction_ok(annotations.get(kai_api.GPU_FRACTION)) else None
    gpu_memory = annotations.get(kai_api.GPU_MEMORY) if positive_uint64(annotations.get(kai_api.GPU_MEMORY)) else None
    running = bool(node)
    group = _labels(pod).get(kai_api.GPU_GROUP_LABEL)
    return Task(
        gpu=0 if (fraction or gpu_memory) else gpus,
        gpu_fraction=float(fraction) if fraction else None,
        gpu_memory_mib=int(gpu_memory) if gpu_memory and not fraction else None,
        cpu_millis=cpu,
        memory_bytes=memory,
        state="Running" if running else "Pending",
        node=str(node) if running else None,
        gpu_groups=(str(group),) if running and group and (fraction or gpu_memory) else (),
        sub_group=(str(_labels(pod).get(kai_api.SUBGROUP_LABEL) or "") or None) if sub_groups else None,
    )


def object_name(obj: Mapping[str, Any]) -> str:
    return str(dig(obj, "metadata", "name") or "")


def object_namespace(obj: Mapping[str, Any]) -> str:
    return str(dig(obj, "metadata", "namespace") or "default")


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(dig(obj, "metadata", "labels"))


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(dig(obj, "metadata", "annotations"))


def _float(value: Any) -> float:
    """A Queue resource field: a finite number, else 0 (as the CRD reads an omitted one)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return float(value) if abs(value) < 2**63 else 0.0


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return default
    return int(value) if abs(value) < 2**31 else default


def _number(value: Any) -> float:
    if value is None:
        return 0.0
    try:
        return float(Quantity.parse(value).value)
    except QuantityError:
        return 0.0


def _millis(value: Any) -> int:
    if value is None:
        return 0
    try:
        return Quantity.parse(value).millis
    except QuantityError:
        return 0
