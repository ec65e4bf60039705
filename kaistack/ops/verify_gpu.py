"""`kaistack verify`'s gpu-group check: fractional pods share GPUs the way KAI's gpupack and the checker say.

Fractional pods carry a `runai-gpu-group` label, and under `placementStrategy: binpack` no two GPU
groups on one node hold fractions that would fit on one GPU together: gpupack opens a new group only
when the pod fits no existing one, so (without pod departures) any two groups on a node sum to more
than one GPU. That invariant is the check. Only pods that hold their share count: Pending (bound) and
Running ones not being deleted; an evicted (Failed) or finished pod keeps its label but not its share.

The live groups (as multisets of workload names) are also compared with the ones the placement checker
plans, as a note, not a failure: which group a pod joins depends on the order pods arrive, so after a
replacement a valid binpack state can differ from the checker's first placement (a replaced pod joins
whichever group has room). Nodes are not compared, since the checker's node names are its own.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from kaistack.capacity.plan import plan as capacity_plan
from kaistack.declaration import kai_api
from kaistack.declaration.model import StackConfig
from kaistack.kube import resources as k8s
from kaistack.kube.client import KubeAPIError, KubeClient
from kaistack.ops.verify_common import (
    CheckResult,
    WorkloadPods,
    holds_share,
    number_text,
    pod_annotations,
    pod_labels,
    pod_name,
)
from placement import simulate


def expected_gpu_groups(config: StackConfig) -> Counter[tuple[str, ...]] | None:
    """The placement checker's shared GPUs: one sorted tuple of workload names per GPU group."""
    plan = capacity_plan(config)
    result = simulate(plan.snapshot, placement=plan.placement)
    workload_of = {f"{ref.job}-{ref.task_index}": wp.workload.name for wp in plan.workloads for ref in wp.pods}
    return Counter(
        tuple(sorted(workload_of.get(task, task) for task in device.tasks))
        for node in result.nodes.values()
        for device in node.devices
        if device.shared
    )


def check_gpu_groups(
    config: StackConfig,
    client: KubeClient,
    pods: WorkloadPods,
    expected: Counter[tuple[str, ...]] | None = None,
) -> tuple[list[CheckResult], list[str]]:
    """The gpu-group results, and a note when the live groups differ from the checker's plan."""
    sharing = [w for w in config.workloads if w.shares_gpu and w.pod_count]
    if not sharing:
        return [], []
    results = []
    notes = []
    declared_uids: dict[str, str] = {}
    live_groups: dict[str, list[str]] = defaultdict(list)
    all_placed = True
    for work in sharing:
        matched = pods.of(work)
        placed = [p for p in matched if (p.get("spec") or {}).get("nodeName") and holds_share(p)]
        all_placed = all_placed and len(placed) >= work.pod_count
        for pod in placed:
            for group in _gpu_groups(pod):
                live_groups[group].append(work.name)
        unlabelled = [p for p in placed if not _gpu_groups(p)]
        subject = work.name if work.tenant is None else f"{work.tenant}/{work.name}"
        if unlabelled:
            listed = ", ".join(pod_name(p) for p in unlabelled[:3])
            results.append(CheckResult("gpu-group", subject, False, f"no {kai_api.GPU_GROUP_LABEL} label on {listed}"))
        for pod in placed:
            declared_uids[pod["metadata"].get("uid") or pod_name(pod)] = subject
    # Every fractional pod on a shared GPU, declared or not, counts toward its group's load; the
    # group's reservation pod (kai-resource-reservation, a whole nvidia.com/gpu) carries the label too.
    shared = [
        p
        for p in client.list(k8s.Pod, labels={kai_api.GPU_GROUP_LABEL: None})
        if _gpu_groups(p) and {kai_api.GPU_FRACTION, kai_api.GPU_MEMORY} & set(pod_annotations(p)) and holds_share(p)
    ]
    by_node: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for pod in shared:
        host = (pod.get("spec") or {}).get("nodeName")
        pod_groups = _gpu_groups(pod)
        if host and len(pod_groups) == 1 and _device_count(pod) == 1:
            by_node[host][pod_groups[0]].append(pod)
    node_memory: dict[str, int | None] = {}
    for node in sorted(by_node):
        groups = by_node[node]
        if not any(p["metadata"].get("uid", pod_name(p)) in declared_uids for ps in groups.values() for p in ps):
            continue
        loads = {g: _group_load(ps, client, node, node_memory) for g, ps in groups.items()}
        names = {g: sorted(pod_name(p) for p in ps) for g, ps in groups.items()}
        if config.kai.placement_strategy != "binpack":
            results.append(
                CheckResult(
                    "gpu-group", f"node {node}", True, f"{len(groups)} GPU groups (spread: no packing expected)"
                )
            )
            continue
        ordered = sorted(groups)
        known = {g: load for g, load in loads.items() if load is not None}
        mergeable = [
            (a, b)
            for i, a in enumerate(ordered)
            for b in ordered[i + 1 :]
            if a in known and b in known and known[a] + known[b] <= 1 + 1e-9
        ]
        if mergeable:
            a, b = mergeable[0]
            detail = (
                f"pods {', '.join(names[a])} (GPU group {a[:8]}, {number_text(loads[a])} GPU) and "
                f"{', '.join(names[b])} (GPU group {b[:8]}, {number_text(loads[b])} GPU) fit one GPU but are on two; "
                "binpack shares one GPU"
            )
            results.append(CheckResult("gpu-group", f"node {node}", False, detail))
        elif len(known) < len(loads):
            # Two groups whose shares are not known could still fit one GPU: a pass would be a guess.
            unknown = ", ".join(g[:8] for g in ordered if g not in known)
            notes.append(
                f"gpu-group: node {node} not checked: the share of GPU group {unknown} is not known (its pods ask "
                f"gpu-memory, and the node's {kai_api.GPU_MEMORY_LABEL} label could not be read: missing, not a "
                "number, or the node not readable with these credentials)"
            )
        else:
            shown = ", ".join(f"{g[:8]}: {number_text(known[g])} GPU" for g in ordered)
            results.append(CheckResult("gpu-group", f"node {node}", True, f"{len(groups)} GPU groups ({shown})"))
    if expected is not None and all_placed:
        actual = Counter(tuple(sorted(names)) for names in live_groups.values())
        if actual == expected:
            detail = f"GPU groups as the checker planned: {_show_groups(expected)}"
            results.append(CheckResult("gpu-group", "placement checker", True, detail))
        else:
            notes.append(
                f"gpu-group: the cluster's GPU groups {_show_groups(actual)} differ from the placement checker's "
                f"plan {_show_groups(expected)}; not a failure: the group a pod joins depends on the order pods "
                "arrived (a replacement joins whichever group has room), and the node rows check that no two "
                "groups on a node could share one GPU"
            )
    return results, notes


def _show_groups(groups: Counter[tuple[str, ...]]) -> str:
    shown = sorted(" + ".join(names) for names, n in groups.items() for _ in range(n))
    return ", ".join(f"[{g}]" for g in shown) or "none"


def _gpu_groups(pod: Mapping[str, Any]) -> list[str]:
    marks = pod_labels(pod)
    if marks.get(kai_api.GPU_GROUP_LABEL):
        return [marks[kai_api.GPU_GROUP_LABEL]]
    return sorted(k.split("/", 1)[1] for k in marks if k.startswith(f"{kai_api.GPU_GROUP_LABEL}/"))


def _device_count(pod: Mapping[str, Any]) -> int:
    try:
        return int(pod_annotations(pod).get(kai_api.GPU_FRACTION_NUM_DEVICES, "1"))
    except ValueError:
        return 1


def _group_load(
    pods: list[dict[str, Any]], client: KubeClient, node: str, cache: dict[str, int | None]
) -> float | None:
    """Sum of the pods' GPU shares; None when one cannot be computed (gpu-memory without node memory)."""
    shares = [_fraction(p, lambda: _node_gpu_memory(client, node, cache)) for p in pods]
    return None if any(s is None for s in shares) else sum(s for s in shares if s is not None)


def _fraction(pod: Mapping[str, Any], node_memory: Callable[[], int | None]) -> float | None:
    """The share of one GPU a fractional pod holds (gpu-memory converted like KAI: ceil to 1/100)."""
    marks = pod_annotations(pod)
    try:
        if kai_api.GPU_FRACTION in marks:
            return float(marks[kai_api.GPU_FRACTION])
        if kai_api.GPU_MEMORY in marks:
            memory = node_memory()
            if not memory:
                return None
            return math.ceil(int(marks[kai_api.GPU_MEMORY]) / memory * 100) / 100
    except ValueError:
        return None
    return None


def _node_gpu_memory(client: KubeClient, node: str, cache: dict[str, int | None]) -> int | None:
    if node not in cache:
        try:
            labels = (client.get(k8s.Node, node).get("metadata") or {}).get("labels") or {}
            value = int(labels.get(kai_api.GPU_MEMORY_LABEL, "0"))
            value = value // (1024 * 1024) if value >= 1048576 else value  # KAI: values >= 1 MiB are bytes
            cache[node] = (value // 100) * 100 or None
        except (KubeAPIError, ValueError):
            cache[node] = None
    return cache[node]
