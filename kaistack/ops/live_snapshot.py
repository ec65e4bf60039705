"""A running cluster's objects (Nodes, Pods, PodGroups, Queues) as the checker's snapshot.

The objects come from the API (kaistack.kube) or from
`kubectl get <kaistack.cli.diagnose.DUMP_KINDS> -A -o yaml`; this module only reads dicts. What KAI reads,
and so what is read here (KAI@v0.17.0):
- a node's allocatable `nvidia.com/gpu`, MIG resources, cpu, memory, pods and scalar resources (RDMA devices,
  hugepages, ephemeral storage: placement.scalar_resources), its labels and taints, the `nvidia.com/gpu.memory`
  label (MiB), and what pods outside every job hold on it (KAI's cache puts every pod on its node; one being
  deleted, and not stuck, as releasing: live_nodes.py); a cordoned node keeps its pods and has no slot for a
  new one;
- a Queue's `spec.parentQueue`, `priority` and `resources.{gpu,cpu,memory}.{quota,limit,overQuotaWeight}`,
  an omitted field being 0 as in the CRD;
- pods with `schedulerName: kai-scheduler`, grouped by their `pod-group-name` annotation (a pod without
  one is its own group), and another scheduler's pod whose annotation names an existing PodGroup; the
  PodGroup alone gives the queue (none: the job's queue does not exist), minMember
  (not cut to the pods present: a group short of pods is not ready), preemptibility, the priority class (its
  PriorityClass object's value, else kaistack's classes, else the globalDefault class or 50), the preemption
  delay and the times KAI keeps in annotations (last start, last eviction, stale since); without PodGroups
  in the objects, the pod's queue label and class. Queues, jobs and pods are taken oldest first. A pod's request is
  KAI's getPodResourceRequest (containers, native sidecars, the init peak, overhead; MIG devices too). A pod
  with `spec.nodeName` and not finished is Running there, Releasing if it is being deleted (StuckInReleasing
  when still in phase Running more than 2 minutes after; a deleted pod with no node is left out), with its
  GPU groups (its BindRequest's, else its `runai-gpu-group` and `runai-gpu-group/<g>` labels) and
  `gpu-fraction-num-devices` for shared GPUs; finished pods and pods in phase Unknown are left out;
- Topology objects (`spec.levels[].nodeLabel`, `alias`) and the node labels they name; a PodGroup's
  `spec.topologyConstraint` (only with a `topology`, as subgroup_info.FromPodGroup reads it),
  `spec.minSubGroup` and `spec.subGroups`, and each pod's `kai.scheduler/subgroup-name` label;
- ConfigMaps' namespaces and names, and the ConfigMaps each pod needs (placement.config_maps): a pod that
  needs one that does not exist stays Pending. Without ConfigMaps in the objects that is not checked;
- PersistentVolumeClaims, PersistentVolumes and StorageClasses: each pod's claims as the VolumeBinding plugin
  reads them (live_volumes.py). Without claims in the objects that is not checked;
- Namespaces' labels, which affinity terms' namespaceSelectors match (placement.namespace_selectors).

A pending pod with scheduling gates is Gated, as in KAI: left out of its job and reported for its gates. A pod
with a BindRequest and no node yet is Binding on the request's node, unless the request failed past its backoff.
A running pod naming a subgroup its PodGroup lacks holds room on its node, outside every job. Queues'
`preemptMinRuntime` / `reclaimMinRuntime` are read. A node that is cordoned, NotReady or under pressure keeps its
pods, takes no new one and is left out of the fair shares.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kaistack.declaration import kai_api
from kaistack.guardrails.podspec import dig, mapping, seq
from kaistack.ops.live_kinds import by_kind
from kaistack.ops.live_nodes import Outside, node_of, read_only
from kaistack.ops.live_podgroups import (
    bind_request_failed,
    constraint_of,
    in_scheduling_backoff,
    int_or,
    job_times,
    missing_sub_group,
    node_not_ready,
    optional_int,
    priority_classes,
    simulated_sub_groups,
    topology_of,
)
from kaistack.ops.live_pods import (
    STUCK_IN_RELEASING_AFTER_SECONDS,
    annotations_of,
    gpu_groups,
    labels_of,
    object_name,
    object_namespace,
    parse_time,
    placed_state,
    pod_labels,
    pod_task,
)
from kaistack.ops.live_storage import storage_of
from kaistack.ops.live_volumes import VolumeCache, claim_names, with_volumes
from placement import namespace_selectors
from placement.depth import MAX_QUEUE_DEPTH, depths
from placement.model import Job, Queue, QueueResource, Snapshot
from placement.scenario import duration_seconds
from placement.tasks import RELEASING, STUCK_IN_RELEASING

# Pods that hold nothing: finished ones, which KAI's cache does not list, and phase Unknown, whose status
# (pod_info.go:494-495) is not an active one, so KAI adds it to no node (node_info.go:423-433).
FINISHED = ("Succeeded", "Failed", "Unknown")


@dataclass(frozen=True)
class LiveSnapshot:
    snapshot: Snapshot
    pods_of_job: dict[str, list[str]]  # job name -> "namespace/pod" of its tasks, in task order
    notes: tuple[str, ...] = field(default=())
    # Pending pods whose PodGroup is missing (no pod-group-name, or one naming no PodGroup), when the objects
    # hold PodGroups at all: KAI schedules only pods of a PodGroup (cluster_info.go:443-470), so they are not
    # simulated; such pods that run take their node's capacity, like other schedulers' pods.
    without_pod_group: dict[str, tuple[str, str]] = field(default_factory=dict)  # pod -> (pod-group name, queue)
    # "namespace/pod" -> (job, queue, its scheduling gates): pods Kubernetes holds back from every scheduler.
    gated: dict[str, tuple[str, str, tuple[str, ...]]] = field(default_factory=dict)
    # Pending pods of PodGroups in scheduling backoff, which KAI leaves out of its snapshot: pod -> (group, queue).
    backed_off: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Pending pods naming a subgroup their PodGroup lacks (missing_sub_group): pod -> (group, queue, the name).
    bad_sub_group: dict[str, tuple[str, str, str]] = field(default_factory=dict)


def build(
    objects: Iterable[Mapping[str, Any]], queue_label: str = kai_api.QUEUE_LABEL, now: datetime | None = None
) -> LiveSnapshot:
    """`now`: when the objects were read (default: the current time); it decides which deleted pods KAI
    counts as stuck."""
    now = now or datetime.now(UTC)
    kinds = by_kind(objects)
    notes: list[str] = []
    topologies = tuple(t for t in (topology_of(obj) for obj in kinds.get("Topology", [])) if t is not None)
    level_labels = {level.node_label for t in topologies for level in t.levels}
    members: dict[str, list[Mapping[str, Any]]] = {}
    # KAI's cache adds every unfinished pod to its node, whatever its scheduler (cache.go:81-99,
    # cluster_info.go:530-551): pods outside every job (other schedulers' pods, DaemonSets too) take capacity
    # KAI cannot use, by node (live_nodes.Outside).
    outside: dict[str, Outside] = {}
    groups = {object_name(pg): pg for pg in kinds.get("PodGroup", [])}
    resting = {name for name, pg in groups.items() if in_scheduling_backoff(pg)}
    # KAI schedules only pods of a PodGroup (cluster_info.go:443-470); known only when PodGroups were read.
    orphans: dict[str, tuple[str, str]] = {}
    backed_off: dict[str, tuple[str, str]] = {}
    node_names = {object_name(n) for n in kinds.get("Node", [])}
    # A pod KAI has chosen a node for but not yet bound is on that node (pod_info.go:192-195): Binding there
    # (485-486), or Releasing if it is being deleted (476-478), by the BindRequest named after it in its
    # namespace; one whose node is gone is left out (cluster_info.go:393-412).
    binding: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
    for request in kinds.get("BindRequest", []):
        pod_name, node_name = dig(request, "spec", "podName"), dig(request, "spec", "selectedNode")
        if bind_request_failed(request):
            continue  # GetBindRequestForPod ignores a request that failed past its backoff
        if isinstance(pod_name, str) and isinstance(node_name, str) and node_name in node_names:
            groups_ = tuple(str(g) for g in seq(dig(request, "spec", "selectedGPUGroups")) if isinstance(g, str))
            binding[(object_namespace(request), pod_name)] = (node_name, groups_)

    def held_groups(pod: Mapping[str, Any]) -> tuple[str, ...]:
        return gpu_groups(pod, binding.get((object_namespace(pod), object_name(pod)), ("", ()))[1])

    for pod in kinds.get("Pod", []):
        if dig(pod, "status", "phase") in FINISHED:
            continue
        node = _node_name(pod, binding)
        group = str(
            annotations_of(pod).get(kai_api.POD_GROUP_NAME) or f"pod/{object_namespace(pod)}/{object_name(pod)}"
        )
        orphan = "PodGroup" in kinds and (group not in groups or group in resting)
        # KAI lists a PodGroup's pods by the pod-group-name annotation alone (indexers.go:17-25,
        # cluster_info.go:456-466): another scheduler's pod that names a PodGroup is one of its tasks.
        outside_every_job = dig(pod, "spec", "schedulerName") != kai_api.SCHEDULER_NAME and group not in groups
        if outside_every_job or (orphan and node):
            if node:
                outside.setdefault(node, Outside()).add(pod, placed_state(pod, now) == RELEASING, held_groups(pod))
            continue
        if node and group in groups and missing_sub_group(groups[group], labels_of(pod)) is not None:
            # In no pod set nor its queue's allocation (job_info.go:313-323, proportion.go:359-370), but on its node
            # like every pod (cluster_info.go:530-551), a GPU share on its groups.
            outside.setdefault(node, Outside()).add(pod, placed_state(pod, now) == RELEASING, held_groups(pod))
            continue
        if group in resting:
            queue = dig(groups[group], "spec", "queue")
            backed_off[f"{object_namespace(pod)}/{object_name(pod)}"] = (group, str(queue or ""))
            continue
        if orphan:
            queue_value = labels_of(pod).get(queue_label)
            orphans[f"{object_namespace(pod)}/{object_name(pod)}"] = (group, str(queue_value or "default-queue"))
            continue
        members.setdefault(group, []).append(pod)
    nodes = tuple(node_of(n, outside.get(object_name(n))) for n in kinds.get("Node", []))
    for n in kinds.get("Node", []):
        if reasons := node_not_ready(n):
            notes.append(
                f"node {object_name(n)} is {' and '.join(reasons)}: its pods count, nothing new is placed there, "
                "and its resources are left out of the queues' fair shares"
            )
    storage = storage_of(kinds, nodes)
    volumes = VolumeCache(storage) if storage is not None else None
    # Queue age is queue order's last tie-break, job age the job order's (session_plugins.go:278-285,
    # queue_order.go:256-261): both by creationTimestamp.
    queues = tuple(_queue(q) for q in sorted(kinds.get("Queue", []), key=_age_key))
    level = depths({q.name: q.parent or None for q in queues})
    if too_deep := [q.name for q in queues if level[q.name] > MAX_QUEUE_DEPTH]:
        notes.append(
            f"{len(too_deep)} queue(s) sit more than {MAX_QUEUE_DEPTH} levels deep ({', '.join(too_deep[:3])}): "
            "kaistack does not simulate them (KAI has no such limit), so their pods are diagnosed as if a parent "
            "queue were missing"
        )
    classes, default_priority = priority_classes(kinds.get("PriorityClass") if "PriorityClass" in kinds else None)
    jobs = []
    pods_of_job: dict[str, list[str]] = {}
    gated: dict[str, tuple[str, str, tuple[str, ...]]] = {}
    bad_sub_group: dict[str, tuple[str, str, str]] = {}
    for group, pods in sorted(members.items(), key=lambda item: _age_key(groups.get(item[0]) or item[1][0])):
        pg = groups.get(group)
        if pg is not None:
            # The PodGroup alone names the queue and the priority class (cluster_info.go:447-451, 601-635).
            raw_queue = dig(pg, "spec", "queue")
            queue = raw_queue if isinstance(raw_queue, str) else ""
            priority = classes.get(str(dig(pg, "spec", "priorityClassName") or ""), default_priority)
        else:  # no PodGroups were read: the pod-grouper would have made one from the pod
            queue = str(labels_of(pods[0]).get(queue_label) or "default-queue")
            klass = str(dig(pods[0], "spec", "priorityClassName") or "")
            priority = classes.get(klass, int_or(dig(pods[0], "spec", "priority"), default_priority))
        tasks = []
        sub_groups = bool(pg and seq(dig(pg, "spec", "subGroups")))
        for pod in sorted(pods, key=_age_key):  # task order's last tie-break: creation
            node = _node_name(pod, binding)
            # A Succeeded BindRequest stays for the pod's life (cache.go:355-381, 446-476); its GPU groups win.
            bound_groups = binding.get((object_namespace(pod), object_name(pod)), ("", ()))[1]
            if node and node not in node_names:
                notes.append(
                    f"pod {object_namespace(pod)}/{object_name(pod)} runs on {node}, which is not in the snapshot"
                )
                continue
            if not node and dig(pod, "metadata", "deletionTimestamp"):
                continue  # Releasing with no node (pod_info.go getTaskStatus): going away, holds nothing
            gates = [str(mapping(g).get("name")) for g in seq(dig(pod, "spec", "schedulingGates"))]
            if not node and gates:
                # Gated (getTaskStatus): neither alive nor to allocate; KAI waits for the gates to go.
                gated[f"{object_namespace(pod)}/{object_name(pod)}"] = (group, queue, tuple(gates))
                continue
            if not node and pg and (missing := missing_sub_group(pg, labels_of(pod))) is not None:
                bad_sub_group[f"{object_namespace(pod)}/{object_name(pod)}"] = (group, queue, missing)
                continue
            task = pod_task(pod, node, now, sub_groups, bound_groups)
            if volumes is not None:
                task = with_volumes(task, volumes.of(pod))
            if task.state == STUCK_IN_RELEASING:
                notes.append(_stuck_note(pod, node))
            tasks.append(task)
            pods_of_job.setdefault(group, []).append(f"{object_namespace(pod)}/{object_name(pod)}")
        if tasks:
            # Not clamped to the pods present: a PodGroup with fewer alive pods than minMember is not ready,
            # and KAI does not schedule it (podset.go:114-119).
            min_member = max(1, int_or(dig(pg, "spec", "minMember"), 1) if pg else 1)
            preemptibility = dig(pg, "spec", "preemptibility") if pg else None
            jobs.append(
                Job(
                    group,
                    queue,
                    tuple(tasks),
                    priority,
                    min_member=min_member,
                    # spec.preemptibility wins over the priority (cluster_info.go:493, preemptible.go:14-26).
                    preemptible={"preemptible": True, "non-preemptible": False}.get(str(preemptibility)),
                    sub_groups=simulated_sub_groups(pg, group, notes),
                    min_sub_group=optional_int(dig(pg, "spec", "minSubGroup")),
                    topology=constraint_of(dig(pg, "spec", "topologyConstraint"), root=True),
                    priority_in_signature=False,  # each pod's own is in its constraints (live_pods)
                    **(job_times(pg, now) if pg else {}),
                )
            )
    if storage is None and (claiming := sum(1 for p in kinds.get("Pod", []) if claim_names(p))):
        notes.append(
            f"no PersistentVolumeClaims were read: the volumes of {claiming} pod(s) were not checked (KAI keeps a pod "
            "whose claim is missing or unbound, or whose volume is on other nodes, off them)"
        )
    config_maps = existing_config_maps(kinds)
    if config_maps is None and (needing := sum(1 for j in jobs for t in j.tasks if t.config_maps)):
        notes.append(
            f"ConfigMaps were not read: whether the ConfigMaps {needing} pod(s) need exist was not checked "
            "(KAI keeps a pod whose ConfigMap is missing Pending)"
        )
    snapshot = Snapshot(read_only(nodes, jobs, level_labels), queues, tuple(jobs), topologies, config_maps)
    if "Namespace" in kinds:
        labels = {object_name(ns): dict(pod_labels(ns)) for ns in kinds["Namespace"]}
        snapshot = namespace_selectors.resolve(snapshot, labels)
    elif namespace_selectors.has_selectors(snapshot):
        notes.append(
            "Namespaces were not read: affinity terms with a namespaceSelector match only the namespaces they list"
        )
    return LiveSnapshot(snapshot, pods_of_job, tuple(notes), orphans, gated, backed_off, bad_sub_group)


def existing_config_maps(kinds: Mapping[str, list[Mapping[str, Any]]]) -> frozenset[tuple[str, str]] | None:
    """(namespace, name) of every ConfigMap read; None when the kind was not read (a dump without them, or a
    generic `List` with none: every namespace has kube-root-ca.crt, so such a dump did not list them)."""
    if "ConfigMap" not in kinds:
        return None
    return frozenset((object_namespace(cm), object_name(cm)) for cm in kinds["ConfigMap"])


def _node_name(pod: Mapping[str, Any], binding: Mapping[tuple[str, str], tuple[str, tuple[str, ...]]]) -> str | None:
    """spec.nodeName, else the node of the pod's BindRequest (pod_info.go:192-195)."""
    raw = dig(pod, "spec", "nodeName")
    if isinstance(raw, str) and raw:
        return raw
    bound = binding.get((object_namespace(pod), object_name(pod)))
    return bound[0] if bound else None


def _stuck_note(pod: Mapping[str, Any], node: str | None) -> str:
    return (
        f"pod {object_namespace(pod)}/{object_name(pod)} on {node} was deleted at "
        f"{dig(pod, 'metadata', 'deletionTimestamp')} and still runs: KAI counts it StuckInReleasing (over "
        f"{STUCK_IN_RELEASING_AFTER_SECONDS:.0f} s), so its resources stay in use and no pending pod is "
        "pipelined onto them until it is gone (look for a finalizer, or a kubelet that no longer reports)"
    )


def _queue(obj: Mapping[str, Any]) -> Queue:
    spec = mapping(obj.get("spec"))
    resources = mapping(spec.get("resources"))

    def block(kind: str) -> QueueResource:
        raw = mapping(resources.get(kind))
        return QueueResource(
            queue_number(raw.get("quota")), queue_number(raw.get("limit")), queue_number(raw.get("overQuotaWeight"))
        )

    parent = spec.get("parentQueue")
    return Queue(
        name=object_name(obj),
        parent=str(parent) if isinstance(parent, str) and parent else None,
        priority=int_or(spec.get("priority"), 100),
        gpu=block("gpu"),
        cpu=block("cpu"),
        memory=block("memory"),
        preempt_min_runtime=duration_seconds(spec.get("preemptMinRuntime")),
        reclaim_min_runtime=duration_seconds(spec.get("reclaimMinRuntime")),
    )


def _age_key(obj: Mapping[str, Any]) -> float:
    """Older first; KAI breaks ties by UID, which says nothing, so ties keep the order they were read in."""
    created = parse_time(dig(obj, "metadata", "creationTimestamp"))
    return created.timestamp() if created is not None else math.inf


def queue_number(value: Any) -> float:
    """A Queue resource field: a finite number, else 0 (as the CRD reads an omitted one)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    # abs() first: math.isfinite cannot take an int beyond a float (a hostile dump's 10**400).
    return float(value) if abs(value) < 2**63 and math.isfinite(value) else 0.0
