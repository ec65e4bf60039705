"""`kaistack diagnose`'s quiet mistakes around KAI: objects KAI reads in a way their authors did not mean.

Each is a `Mistake` with the object and the fix. Read from the same objects as the diagnosis
(kaistack.ops.diagnose); finished pods (Succeeded, Failed, or Unknown, which KAI's cache leaves off every node:
live_snapshot.FINISHED) are not judged: they hold nothing and will not run again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kaistack.capacity.oversized import oversized_share
from kaistack.capacity.vllm_startup import FIX as VLLM_CROWDED_FIX
from kaistack.capacity.vllm_startup import WHY as VLLM_CROWDED_WHY
from kaistack.declaration import kai_api
from kaistack.declaration.model_servers import vllm_utilization
from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.fraction_container import fraction_container_problems
from kaistack.guardrails.podspec import PodTemplate, Res, dig, mapping, pod_templates, requests_gpu, seq
from kaistack.guardrails.rules import gpu_memory_utilization_within_fraction
from kaistack.guardrails.settings import Settings
from kaistack.guardrails.unread import unread_constraints
from kaistack.ops.live_nodes import UTILITY_POD_NAMESPACES
from kaistack.ops.live_pods import annotations_of, go_int64, gpu_groups, gpu_share, labels_of
from kaistack.ops.live_snapshot import FINISHED, object_name, object_namespace, queue_number

RESERVATION_NAMESPACE = kai_api.RESERVATION_NAMESPACE
# The code keeps its name from when vLLM was the one server read; TGI's setting is judged the same way.
_SERVER_FIX = (
    "lower the server's memory setting to the share (vLLM --gpu-memory-utilization, TGI --cuda-memory-fraction)"
)


@dataclass(frozen=True)
class Mistake:
    code: str
    subject: str  # Kind namespace/name
    problem: str
    fix: str


def find_mistakes(
    kinds: Mapping[str, list[Mapping[str, Any]]], queue_label: str = kai_api.QUEUE_LABEL
) -> list[Mistake]:
    queues = {object_name(q): q for q in kinds.get("Queue", [])}
    parents = {str(mapping(q.get("spec")).get("parentQueue") or "") for q in queues.values()}
    leaves = {name for name in queues if name not in parents}
    out: list[Mistake] = []
    for name, queue in queues.items():
        out += _queue_limits(name, queue)
    out += _same_podgroup_names(kinds.get("PodGroup", []))
    # KAI finds a pod's PodGroup by the annotation's name alone (cluster_info/indexers.go:17-25).
    pod_groups = {object_name(pg): pg for pg in kinds.get("PodGroup", [])}
    gpu_memory = {object_name(n): go_int64(labels_of(n).get(kai_api.GPU_MEMORY_LABEL)) for n in kinds.get("Node", [])}
    # Which classes exist is known only where PriorityClasses were read (live, or a dump that lists them).
    classes = {object_name(c) for c in kinds["PriorityClass"]} if "PriorityClass" in kinds else None
    for pod in kinds.get("Pod", []):
        if dig(pod, "status", "phase") not in FINISHED:
            out += _pod_mistakes(pod, queues, leaves, pod_groups, queue_label)
            out += _gpu_memory_above_gpu(pod, gpu_memory)
            if classes is not None:
                out += _unknown_priority_class(pod, classes, pod_groups)
    out += _crowded_vllm_gpus(kinds.get("Pod", []))
    return out


def _crowded_vllm_gpus(pods: list[Mapping[str, Any]]) -> list[Mistake]:
    """vLLM servers bound to one shared GPU whose utilizations sum to 1 or more (kaistack.capacity.vllm_startup).
    A pod's GPUs are its node and `runai-gpu-group` labels; one spread over several GPUs, one with HAMi-core's
    limit (which sees its share as the GPU) and one whose utilization is not known here are left out."""
    on_gpu: dict[tuple[str, str], list[tuple[Mapping[str, Any], float]]] = {}
    for pod in pods:
        node = dig(pod, "spec", "nodeName")
        groups = gpu_groups(pod)
        if dig(pod, "status", "phase") in FINISHED or not isinstance(node, str) or not node or len(groups) != 1:
            continue
        containers = [*_sidecars(pod), *(mapping(c) for c in seq(dig(pod, "spec", "containers")))]
        if any(mapping(e).get("name") == kai_api.HAMI_MEMORY_LIMIT for c in containers for e in seq(c.get("env"))):
            continue
        found = [u for u in map(vllm_utilization, containers) if u is not None]
        if found and all(u.value is not None for u in found):
            on_gpu.setdefault((node, groups[0]), []).append((pod, sum(u.value or 0.0 for u in found)))
    out = []
    for (node, group), servers in on_gpu.items():
        total = sum(u for _, u in servers)
        if len(servers) < 2 or total < 1 - 1e-9:  # 0.3 + 0.7 is 0.9999999999999999 in floats
            continue
        names = [f"{object_namespace(pod)}/{object_name(pod)}" for pod, _ in servers]
        told = ", ".join(f"{name} {u:g}" for name, (_, u) in zip(names, servers, strict=True))
        out.append(
            Mistake(
                "vllm-gpu-crowded",
                "Pod " + ", ".join(names),
                f"vLLM servers bound to one shared GPU (node {node}, GPU group {group}) are told "
                f"--gpu-memory-utilization {told}: {total:g} of the GPU in all. {VLLM_CROWDED_WHY}. "
                + _crowded_now(names, [pod for pod, _ in servers]),
                VLLM_CROWDED_FIX,
            )
        )
    return out


def _sidecars(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Native sidecars: init containers with restartPolicy Always, which keep running beside the others."""
    return [c for c in map(mapping, seq(dig(pod, "spec", "initContainers"))) if c.get("restartPolicy") == "Always"]


def _crowded_now(names: list[str], pods: list[Mapping[str, Any]]) -> str:
    """What the pods show of it: the servers not ready (with their restarts), or that all run for now."""
    down = []
    for name, pod in zip(names, pods, strict=True):
        sidecars = {c.get("name") for c in _sidecars(pod)}
        statuses = [mapping(c) for c in seq(dig(pod, "status", "containerStatuses"))] + [
            c for c in map(mapping, seq(dig(pod, "status", "initContainerStatuses"))) if c.get("name") in sidecars
        ]
        if statuses and all(c.get("ready") is True for c in statuses):
            continue
        restarts = sum(n for c in statuses if type(n := c.get("restartCount")) is int and n > 0)
        down.append(f"{name} ({restarts} restart{'s' * (restarts != 1)})" if restarts else name)
    if down:
        return f"Not ready: {', '.join(down)}"
    return "All are ready now: one that restarts cannot start again while the others hold their memory"


def _unknown_priority_class(pod: Mapping[str, Any], classes: set[str], pod_groups: Mapping[str, Any]) -> list[Mistake]:
    """KAI@v0.17.0 pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go:187-226, 322-346
    (calcPriorityClassWithDefaults, calcPodGroupPriorityClass): an owner's priorityClassName label, else the pod's,
    else spec.priorityClassName; a name that is no PriorityClass is dropped whole, so a pod label naming none hides
    spec.priorityClassName too, and the pod-grouper takes its default class for the workload's kind. Ray's and
    Grove's groupers then set their own owner's class over it (plugins/ray/ray_grouper.go:87-89,
    plugins/grove/grove_grouper.go:82-89), which the pod alone does not show: hence "unless an owner names one"."""
    spec = mapping(pod.get("spec"))
    label = labels_of(pod).get(kai_api.PRIORITY_CLASS_LABEL)
    if spec.get("schedulerName") != kai_api.SCHEDULER_NAME or not isinstance(label, str) or label in classes:
        return []
    hidden = spec.get("priorityClassName")
    also = f", nor spec.priorityClassName {hidden!r}" if isinstance(hidden, str) and hidden else ""
    group = pod_groups.get(str(annotations_of(pod).get(kai_api.POD_GROUP_NAME) or ""))
    chosen = dig(group, "spec", "priorityClassName") if group is not None else None
    took = f" (its PodGroup has {chosen!r})" if isinstance(chosen, str) and chosen else ""
    return [
        Mistake(
            "unknown-priority-class",
            f"Pod {object_namespace(pod)}/{object_name(pod)}",
            f"its {kai_api.PRIORITY_CLASS_LABEL} label names {label!r}, which is no PriorityClass: KAI's pod-grouper "
            f"reads neither it{also}; unless an owner names a class (its own priorityClassName label, or a Ray or "
            f"Grove owner's), it takes its default for the workload's kind{took}",
            f"name an existing PriorityClass in the {kai_api.PRIORITY_CLASS_LABEL} label (kubectl get "
            "priorityclasses), or remove the label",
        )
    ]


def _gpu_memory_above_gpu(pod: Mapping[str, Any], gpu_memory: Mapping[str, int | None]) -> list[Mistake]:
    """A bound pod whose gpu-memory is more than its node's GPUs hold: KAI passes a whole-number share and gives it
    one GPU per device (kaistack.capacity.oversized); any other share was bound before the label changed, or not
    by KAI."""
    _, asked, _ = gpu_share(annotations_of(pod))
    node = dig(pod, "spec", "nodeName")
    found = oversized_share(asked, gpu_memory.get(node)) if asked and isinstance(node, str) else None
    if found is None:
        return []
    each, share = found
    if share == int(share):
        how = f"KAI took it as a share of {share:g} (a whole number passes) and bound it to one GPU per device"
    else:
        # KAI refuses a share above 1 that is not whole: the label changed since, or KAI did not bind it.
        how = f"a share of {share:g}, which KAI refuses, so the node's label changed since or KAI did not bind it"
    return [
        Mistake(
            "gpu-memory-above-gpu",
            f"Pod {object_namespace(pod)}/{object_name(pod)}",
            f"asks gpu-memory {asked} MiB, more than the {each} MiB KAI counts per GPU on node {node}, where it is "
            f"bound: {how}; it runs with one GPU's memory",
            f"ask for whole GPUs (nvidia.com/gpu), or gpu-memory of at most {each}",
        )
    ]


def _same_podgroup_names(podgroups: list[Mapping[str, Any]]) -> list[Mistake]:
    """KAI keys PodGroups by name alone (kai-scheduler/KAI-Scheduler@v0.17.0:pkg/scheduler/cache/cluster_info/
    cluster_info.go:442-470, `result[PodGroupID(podGroup.Name)]`) and finds a PodGroup's pods by their
    pod-group-name annotation alone (cluster_info/indexers.go:17-25). PodGroups of one name in two namespaces are
    one job whose queue, priority and minMember are those of whichever KAI lists last, an order its informer
    cache takes from a Go map, so it can change from one cycle to the next."""
    namespaces: dict[str, list[str]] = {}
    for pg in podgroups:
        namespaces.setdefault(object_name(pg), []).append(object_namespace(pg))
    out = []
    for name, found in namespaces.items():
        if len(found) < 2:
            continue
        where = sorted(found)
        out.append(
            Mistake(
                "duplicate-podgroup-name",
                # Every namespace in the subject, so that `--namespace` keeps the mistake for each of them.
                "PodGroup " + ", ".join(f"{ns}/{name}" for ns in where),
                f"PodGroups named {name} in namespaces {', '.join(where[:-1])} and {where[-1]}: KAI keys "
                "PodGroups by name alone, so it schedules the pods of all of them as one job, with the queue, "
                "priority and minMember of whichever it lists last, which can change from one cycle to the next "
                "(kaistack takes the last in the objects read)",
                f"rename all but one of the PodGroups named {name}, and the pod-group-name annotation of their "
                "pods (the pod-grouper's names, pg-<owner>-<uid>, do not clash)",
            )
        )
    return out


def _made_by_kai(pod: Mapping[str, Any]) -> bool:
    """One of KAI's utility pods: its binder's GPU reservation pods and its node-scale-adjuster's scaling pods.
    KAI creates them with no schedulerName (kai-scheduler/KAI-Scheduler@v0.17.0:
    pkg/binder/binding/resourcereservation/resource_reservation.go:533-601, createResourceReservationPod;
    pkg/nodescaleadjuster/scaler/scaling_pod.go:21-64), so they carry default-scheduler and ask for GPUs on
    purpose. KAI knows them by their app label alone (live_nodes.UTILITY_POD_NAMESPACES); here the namespace KAI
    makes them in is required too, or a tenant's pod would leave the check by carrying that label."""
    app = mapping(mapping(pod.get("metadata")).get("labels")).get("app")
    return isinstance(app, str) and UTILITY_POD_NAMESPACES.get(app) == object_namespace(pod)


def _queue_limits(name: str, queue: Mapping[str, Any]) -> list[Mistake]:
    resources = mapping(mapping(queue.get("spec")).get("resources"))
    out = []
    for kind in ("gpu", "cpu", "memory"):
        block = resources.get(kind)
        if not isinstance(block, Mapping) or "limit" not in block:
            out.append(
                Mistake(
                    "queue-limit-omitted",
                    f"Queue {name}",
                    f"spec.resources.{kind}.limit is omitted: KAI reads it as 0, so the queue may use no {kind}",
                    f"set spec.resources.{kind}.limit (-1 for no limit)",
                )
            )
    return out


def _preemptible(group: Mapping[str, Any] | None, spec: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """spec.preemptibility (or, before the PodGroup exists, the pod's label) wins over the class
    (KAI-Scheduler@v0.17.0 pkg/common/podgroup/preemptible.go:14-26); a train or build-preemptible class is below
    100, preemptible."""
    if group is not None:
        stated, klass = dig(group, "spec", "preemptibility"), dig(group, "spec", "priorityClassName")
    else:
        stated, klass = labels.get(kai_api.PREEMPTIBILITY_LABEL), spec.get("priorityClassName")
    if stated in ("preemptible", "non-preemptible"):
        return bool(stated == "preemptible")
    return str(klass or "").startswith(("train", "build-preemptible"))


def _pod_mistakes(
    pod: Mapping[str, Any],
    queues: Mapping[str, Any],
    leaves: set[str],
    pod_groups: Mapping[str, Any],
    queue_label: str = kai_api.QUEUE_LABEL,
) -> list[Mistake]:
    subject = f"Pod {object_namespace(pod)}/{object_name(pod)}"
    spec = mapping(pod.get("spec"))
    labels = mapping(mapping(pod.get("metadata")).get("labels"))
    annotations = mapping(mapping(pod.get("metadata")).get("annotations"))
    # Once the pod has its PodGroup, KAI reads the queue, class and preemptibility from it alone
    # (cluster_info.go:447-451, 493, 624-635); the pod's own label and class only made it.
    group = pod_groups.get(str(annotations.get(kai_api.POD_GROUP_NAME) or ""))
    # A Pending pod being deleted is Releasing to KAI (pod_info.go getTaskStatus), not left Pending.
    pending = (
        dig(pod, "status", "phase") in (None, "Pending")
        and not spec.get("nodeName")
        and not dig(pod, "metadata", "deletionTimestamp")
    )
    out = []
    wants_gpu = any(requests_gpu(t) for t in pod_templates("Pod", pod))
    raw_queue = labels.get(queue_label)
    queue = raw_queue if isinstance(raw_queue, str) else None  # a hostile dump may hold any value here
    if spec.get("schedulerName") != kai_api.SCHEDULER_NAME and (wants_gpu or queue) and not _made_by_kai(pod):
        why = "asks for GPUs" if wants_gpu else f"is labelled for queue {queue}"
        out.append(
            Mistake(
                "no-kai-scheduler",
                subject,
                f"it {why} but its schedulerName is {spec.get('schedulerName') or 'default-scheduler'}: "
                "KAI never sees it",
                f"set spec.schedulerName: {kai_api.SCHEDULER_NAME}",
            )
        )
    # The queue KAI schedules the pod in: its PodGroup's, or for a pod without one yet, the label the pod-grouper
    # will copy (a stale label beside a PodGroup is read by nothing).
    if group is not None:
        scheduled_queue, where = dig(group, "spec", "queue"), f"its PodGroup {object_name(group)} has spec.queue"
    else:
        scheduled_queue, where = queue, f"label {queue_label}:"
    if (
        spec.get("schedulerName") == kai_api.SCHEDULER_NAME
        and pending
        and isinstance(scheduled_queue, str)
        and scheduled_queue
        and queues
        and scheduled_queue not in queues
    ):
        out.append(
            Mistake(
                "unknown-queue",
                subject,
                f"{where} {scheduled_queue}, which names no Queue; KAI leaves the pod Pending",
                f"use one of the leaf queues: {', '.join(sorted(leaves)) or 'none exist'}",
            )
        )
    owners = seq(mapping(pod.get("metadata")).get("ownerReferences"))
    if any(o.get("kind") == "Service" for o in owners if isinstance(o, Mapping)):
        out.append(
            Mistake(
                "vcluster-owner-reference",
                subject,
                "its owner is a Service (a vCluster with setOwner: true): kaistack's tenant admission refuses such "
                "pods and vCluster's KAI guide requires setOwner: false (KAI v0.17.0 itself groups the pod alone, "
                "as it may not read Services: podgrouper.go handleGetOwnerError)",
                "set experimental.syncSettings.setOwner: false in the vCluster's values",
            )
        )
    if (
        spec.get("schedulerName") == kai_api.SCHEDULER_NAME
        and wants_gpu
        and isinstance(scheduled_queue, str)
        and scheduled_queue in queues
        and any(o.get("kind") == "ReplicaSet" for o in owners if isinstance(o, Mapping))
        and _gpu_quota(queues[scheduled_queue]) == 0
        and not _preemptible(group, spec, labels)
    ):
        out.append(
            Mistake(
                "deployment-without-quota",
                subject,
                f"a Deployment's pod (class inference by default, non-preemptible) in queue {scheduled_queue}, whose "
                "GPU quota is 0: KAI runs non-preemptible pods only within quota",
                f"give queue {scheduled_queue} a GPU quota, or use a preemptible priority class (train)",
            )
        )
    if (
        object_namespace(pod) == RESERVATION_NAMESPACE
        and not spec.get("runtimeClassName")
        and mapping(pod.get("status")).get("phase") != "Running"
    ):
        out.append(
            Mistake(
                "reservation-pod-without-runtime",
                subject,
                "a GPU reservation pod with no runtimeClassName that is not Running: where nvidia is not the "
                "default runtime it sees no GPU, and the fraction pods waiting on it stay Pending",
                "set the KAI chart's binder.runtimeClassName (kaistack does so with gpu.mode device-plugin)",
            )
        )
    if spec.get("schedulerName") == kai_api.SCHEDULER_NAME:
        for problem, fix in unread_constraints(PodTemplate("", labels, annotations, spec)):
            out.append(Mistake("kai-unread-constraints", subject, problem, fix))
    for problem, fix in fraction_container_problems(PodTemplate("", labels, annotations, spec), admitted=True):
        out.append(Mistake("kai-fraction-container", subject, problem, fix))
    if kai_api.GPU_FRACTION in annotations or kai_api.GPU_MEMORY in annotations:
        res = Res("kubernetes:core/v1:Pod", object_name(pod), pod)
        for message in gpu_memory_utilization_within_fraction(
            res, Settings(exempt_namespaces=frozenset()), StackFacts()
        ):
            out.append(Mistake("vllm-memory-above-share", subject, message, _SERVER_FIX))
    return out


def _gpu_quota(queue: Mapping[str, Any]) -> float:
    """The queue's GPU quota as the snapshot reads it (a number beyond a float, 10**400 in a hand-made dump, is 0)."""
    return queue_number(mapping(mapping(mapping(queue.get("spec")).get("resources")).get("gpu")).get("quota", 0))
