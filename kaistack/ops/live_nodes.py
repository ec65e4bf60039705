"""A Node object as KAI's cache sees it (KAI@v0.17.0 cluster_info.go:270-300, node_info.go:102-141): its
allocatable, labels and taints, and what the pods outside every job hold on it.

Part of kaistack.ops.live_snapshot, which reads the objects; this module only builds nodes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from kaistack.declaration import kai_api
from kaistack.guardrails.podspec import dig, mapping, seq
from kaistack.ops.live_podgroups import node_not_ready
from kaistack.ops.live_pods import (
    annotations_of,
    go_int64,
    gpu_share,
    labels_of,
    millis,
    number,
    object_name,
    object_namespace,
    pod_labels,
    pod_requests,
    scalar_units,
)
from placement.host_ports import HostPortError, pod_host_ports
from placement.model import Job, Node, OutsidePod, OutsideShare, Taint
from placement.node_constraints import ConstraintError, parse_taints, pod_terms, preferred_terms
from placement.scalar_resources import counted

__all__ = ["UTILITY_POD_NAMESPACES", "Outside", "node_of", "read_only"]

# pod_info.IsKaiUtilityPod (utility_pods.go:13-33, global_config.go:25-26): the app label of KAI's GPU reservation
# pods and of its scaling pods, which KAI's cache goes by alone; with the namespace each is made in
# (resource_reservation.go:533-553, scaling_pod.go:21-47), which `kaistack diagnose` requires too.
UTILITY_POD_NAMESPACES = {
    kai_api.RESERVATION_APP_LABEL: kai_api.RESERVATION_NAMESPACE,
    kai_api.SCALING_POD_APP_LABEL: kai_api.SCALING_POD_NAMESPACE,
}
_UTILITY_APPS = tuple(UTILITY_POD_NAMESPACES)


class Outside:
    """The pods on one node that no job holds: another scheduler's, KAI's utility pods, a KAI pod without a
    PodGroup. Each is on its node in KAI's cache (cluster_info.go:530-551), with its status."""

    def __init__(self) -> None:
        self.held: dict[str, float] = {}
        self.releasing: dict[str, float] = {}
        self.outside_total: dict[str, float] = {}
        self.pods: list[OutsidePod] = []
        self.shares: list[OutsideShare] = []

    def add(self, pod: Mapping[str, Any], releasing: bool, groups: tuple[str, ...] = ()) -> None:
        """`groups`: its GPU groups (live_pods.gpu_groups), which a GPU share holds whatever job it is in."""
        labels = pod_labels(pod)
        app = dict(labels).get("app")
        requests = pod_requests(pod)
        if app == kai_api.RESERVATION_APP_LABEL:
            # A GPU reservation pod takes no GPU here (node_info.go:470-473) and its slot is counted from the
            # fraction pods' GPU groups (NodeState.reserve_pods).
            requests = {"cpu": requests.get("cpu", 0.0), "memory": requests.get("memory", 0.0)}
        fraction, memory_mib, _ = gpu_share(annotations_of(pod))
        if fraction is not None or memory_mib is not None:
            # A shared allocation holds no whole GPU, whatever it asks (gpu_sharing_node_info.go:57-63).
            requests = {k: v for k, v in requests.items() if k not in (kai_api.GPU_RESOURCE, kai_api.AMD_GPU_RESOURCE)}
            if groups:
                self.shares.append(OutsideShare(groups, fraction, memory_mib, releasing))
        _add(self.releasing if releasing else self.held, requests)
        # The fair-share total leaves out active pods of other schedulers, not KAI's own (proportion.go:286-295).
        if dig(pod, "spec", "schedulerName") != kai_api.SCHEDULER_NAME and app not in _UTILITY_APPS:
            _add(self.outside_total, requests)
        # Of such a pod only what bears on KAI's pods is read: its required anti-affinity and preferred terms,
        # and its host ports.
        affinity = mapping(dig(pod, "spec", "affinity"))
        try:
            anti = pod_terms(affinity, "podAntiAffinity")
        except ConstraintError:
            anti = ()
        try:
            preferred = (preferred_terms(affinity, "podAffinity"), preferred_terms(affinity, "podAntiAffinity"))
        except ConstraintError:
            preferred = ((), ())
        try:
            ports = pod_host_ports(mapping(dig(pod, "spec")))
        except HostPortError:
            ports = ()
        self.pods.append(
            OutsidePod(
                object_namespace(pod),
                labels,
                anti,
                preferred_affinity=preferred[0],
                preferred_anti_affinity=preferred[1],
                host_ports=ports,
            )
        )


def _add(total: dict[str, float], requests: Mapping[str, float]) -> None:
    for key, amount in requests.items():
        total[key] = total.get(key, 0.0) + amount


def node_of(obj: Mapping[str, Any], outside: Outside | None = None) -> Node:
    """The node as KAI's placement sees it: its allocatable, and what pods outside every job hold (those being
    deleted as releasing). A node that is cordoned, NotReady or under pressure stays with its pods, not ready:
    KAI places nothing there and leaves it out of the fair-share total."""
    outside = outside or Outside()
    allocatable = mapping(dig(obj, "status", "allocatable"))
    labels = labels_of(obj)
    memory = labels.get(kai_api.GPU_MEMORY_LABEL)
    mig = {
        str(k): int(number(v))
        for k, v in allocatable.items()
        if str(k).startswith(kai_api.MIG_RESOURCE_PREFIX) and number(v)
    }
    scalar = {str(k): scalar_units(str(k), v) for k, v in allocatable.items() if counted(str(k))}
    strategy = kai_api.mig_strategy(labels) if mig else "none"
    taints: list[Taint] = []
    for item in seq(dig(obj, "spec", "taints")):
        try:
            taints.extend(parse_taints([item]))
        except ConstraintError:
            continue  # not a taint the API server would have stored
    return Node(
        name=object_name(obj),
        gpus=int(_gpus(allocatable)),
        gpu_memory_mib=go_int64(memory),
        cpu_millis=millis(allocatable.get("cpu")),
        memory_bytes=int(number(allocatable.get("memory"))),
        # A node that allows 0 pods takes none (KAI adds pods=1 to every task, node_info.go:131-132); a node
        # object always states it, so only a hand-written dump without it gets the kubelet's default.
        pods=int(number(allocatable["pods"])) if "pods" in allocatable else 110,
        mig_strategy=strategy,
        mixed_gpus=int(_gpus(allocatable)) if strategy == "mixed" else 0,
        mig=mig,
        labels={str(k): str(v) for k, v in labels.items()},
        ready=not node_not_ready(obj),
        scalar={k: v for k, v in scalar.items() if v},
        taints=tuple(taints),
        held={k: v for k, v in outside.held.items() if v},
        releasing={k: v for k, v in outside.releasing.items() if v},
        outside_total={k: v for k, v in outside.outside_total.items() if v},
        outside_pods=tuple(outside.pods),
        outside_shares=tuple(outside.shares),
    )


def _gpus(allocatable: Mapping[str, Any]) -> float:
    """NVIDIA and AMD GPUs alike (resource_info.go:64)."""
    return number(allocatable.get(kai_api.GPU_RESOURCE)) + number(allocatable.get(kai_api.AMD_GPU_RESOURCE))


def read_only(nodes: tuple[Node, ...], jobs: list[Job], level_labels: set[str]) -> tuple[Node, ...]:
    """Nodes keep only the labels a Topology level or a pod's affinity reads, and the scalar resources some KAI
    pod asks for or that pods outside the jobs over-commit. Every node offers ephemeral-storage and hugepages; a
    dimension no pod asks for refuses a pod only when over-committed, and each one costs every fit check."""
    tasks = [task for job in jobs for task in job.tasks]
    asked = {name for task in tasks for name in task.scalar}
    read = set(level_labels)
    constraints = {task.constraints for task in tasks}
    for c in constraints:
        read.update(key for key, _ in c.node_selector)
        read.update(r.key for term in c.required_terms or () for r in term.match_expressions)
        read.update(
            t.topology_key
            for t in (*c.pod_affinity, *c.pod_anti_affinity, *c.preferred_affinity, *c.preferred_anti_affinity)
        )
    outside_keys = {
        t.topology_key
        for n in nodes
        for p in n.outside_pods
        for t in (*p.anti_affinity, *p.preferred_affinity, *p.preferred_anti_affinity)
    }
    read |= outside_keys
    # Other schedulers' pods matter to inter-pod affinity only when some pod has a term, and their host ports
    # only when some KAI pod wants one.
    keep_outside = bool(outside_keys) or any(
        c.pod_affinity or c.pod_anti_affinity or c.has_preferred for c in constraints
    )
    ports_wanted = any(c.host_ports for c in constraints)
    return tuple(_trimmed(n, asked, read, keep_outside, ports_wanted) for n in nodes)


def _trimmed(node: Node, asked: set[str], read: set[str], keep_outside: bool, ports_wanted: bool) -> Node:
    def over(name: str) -> bool:
        return node.held.get(name, 0.0) + node.releasing.get(name, 0.0) > node.scalar.get(name, 0)

    kept = {k for k in node.scalar if k in asked or over(k)}

    def resources(amounts: Mapping[str, float]) -> dict[str, float]:
        return {k: v for k, v in amounts.items() if not counted(k) or k in kept}

    return dataclasses.replace(
        node,
        scalar={k: v for k, v in node.scalar.items() if k in kept},
        labels={k: v for k, v in node.labels.items() if k in read},
        outside_pods=node.outside_pods
        if keep_outside
        else tuple(p for p in node.outside_pods if p.host_ports and ports_wanted),
        held=resources(node.held),
        releasing=resources(node.releasing),
    )
