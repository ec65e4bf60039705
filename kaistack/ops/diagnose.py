"""`kaistack diagnose`: why each pod is Pending on a running cluster, and the quiet mistakes around KAI.

Read-only. The objects come from the API or from a `kubectl get <kaistack.cli.diagnose.DUMP_KINDS> -A -o yaml`
dump; the snapshot
(kaistack.ops.live_snapshot) goes through one scheduling cycle of the same simulator `kaistack check` uses,
and every pod still Pending gets the checker's reason. A Pending pod the simulator would place is reported as
such: KAI should schedule it on its next cycle, so the cause is outside the scheduler's decision (the
pod-grouper, the binder, a webhook).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kaistack.declaration import kai_api
from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.podspec import PodTemplate, Res, mapping, pod_templates, requests_gpu, seq
from kaistack.guardrails.rules import gpu_memory_utilization_within_fraction
from kaistack.guardrails.settings import Settings
from kaistack.guardrails.unread import unread_constraints
from kaistack.markdown import cell, code
from kaistack.ops.live_snapshot import LiveSnapshot, build, by_kind, object_name, object_namespace
from placement.model import ALL_ACTIONS
from placement.reasons import NOT_REACHED
from placement.simulation import simulate
from placement.tasks import PENDING, PIPELINED

RESERVATION_NAMESPACE = kai_api.RESERVATION_NAMESPACE
PARTIAL = (
    "the scheduling cycle was stopped by --max-seconds before its end; other reasons are read from the state "
    "it stopped in"
)


@dataclass(frozen=True)
class PendingPod:
    pod: str  # namespace/name
    job: str
    queue: str
    reason: str
    would_place: bool = False


@dataclass(frozen=True)
class Mistake:
    code: str
    subject: str  # Kind namespace/name
    problem: str
    fix: str


@dataclass(frozen=True)
class Diagnosis:
    pending: tuple[PendingPod, ...]
    mistakes: tuple[Mistake, ...]
    notes: tuple[str, ...] = field(default=())
    counts: Mapping[str, int] = field(default_factory=dict)
    # Stopped by max_seconds: the cycle was not simulated to its end (a job it did not reach says so).
    partial: bool = False

    @property
    def ok(self) -> bool:
        return not self.pending and not self.mistakes


def diagnose(
    objects: Iterable[Mapping[str, Any]],
    notes: Iterable[str] = (),
    max_seconds: float | None = None,
    simulation: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> Diagnosis:
    """`max_seconds` bounds the scheduling cycle (the diagnosis is then partial); `simulation` holds extra
    keyword arguments for placement's `simulate` (progress callbacks); `now` is when the objects were read
    (default: the current time)."""
    objects = list(objects)
    unnamed: Counter[str] = Counter()
    kinds = by_kind(objects, unnamed)
    live = build(objects, now=now)
    pending, partial = _pending(live, max_seconds, simulation or {})
    mistakes = find_mistakes(kinds)
    counts = {k: len(kinds.get(k, [])) for k in ("Node", "Pod", "PodGroup", "Queue", "Topology", "ConfigMap")}
    # A dump is hostile input: an object left out is said, not silently missing from the answer.
    dropped = [
        f"left out {n} {kind} object{'s' * (n != 1)} without a metadata.name (a string)"
        for kind, n in sorted(unnamed.items())
    ]
    return Diagnosis(tuple(pending), tuple(mistakes), (*notes, *live.notes, *dropped), counts, partial)


def _pending(
    live: LiveSnapshot, max_seconds: float | None, simulation: Mapping[str, Any]
) -> tuple[list[PendingPod], bool]:
    jobs = {j.name: j for j in live.snapshot.jobs}
    waiting = [name for name, job in jobs.items() if any(t.state == "Pending" for t in job.tasks)]
    out = [
        PendingPod(pod, job, queue, f"held by scheduling gates ({', '.join(gates)}): no scheduler, KAI included, "
                   "sees the pod until they are removed")
        for pod, (job, queue, gates) in live.gated.items()
    ]  # fmt: skip
    out += [PendingPod(pod, job, queue, _no_pod_group(job)) for pod, (job, queue) in live.without_pod_group.items()]
    out += [PendingPod(pod, job, queue, _BACKOFF) for pod, (job, queue) in live.backed_off.items()]
    if not waiting:
        return out, False
    # Read right after the cycle, as KAI leaves it: a pipelined pod is still pipelined, not back to Pending.
    # KAI's default actions, stale gang eviction included (conf_util/scheduler_conf_util.go:38).
    result = simulate(live.snapshot, ALL_ACTIONS, rounds=1, settle=False, max_seconds=max_seconds, **simulation)
    for name in waiting:
        job = jobs[name]
        reason = result.reasons.get(name)
        pods = live.pods_of_job.get(name, [])
        for index, (task, pod) in enumerate(zip(job.tasks, pods, strict=False)):
            if task.state != "Pending":
                continue
            outcome = result.tasks.get(f"{name}-{index}")
            if outcome is not None and outcome.status == PIPELINED:
                out.append(PendingPod(pod, name, job.queue, _pipelined(outcome.node), would_place=True))
            elif reason is None or (outcome is not None and outcome.status != PENDING):
                # Placed by the cycle, even where the job as a whole still has pods waiting (elastic jobs).
                out.append(PendingPod(pod, name, job.queue, _WOULD_PLACE, would_place=True))
            elif reason.code == NOT_REACHED:
                out.append(PendingPod(pod, name, job.queue, _NOT_REACHED))
            else:
                out.append(PendingPod(pod, name, job.queue, reason.message))
    return out, result.partial


def _no_pod_group(job: str) -> str:
    if job.startswith("pod/"):
        return (
            "no PodGroup: the pod has no pod-group-name annotation, and KAI schedules only pods of a PodGroup; "
            "KAI's pod-grouper has not handled it (its logs; the pod's owner and schedulerName)"
        )
    return f"no PodGroup: pod-group-name names {job}, which does not exist, and KAI schedules only pods of a PodGroup"


def _pipelined(node: str | None) -> str:
    return (
        f"pipelined onto {node}: KAI binds it there once the pods being evicted or deleted on that node are gone; "
        "if it stays Pending, look at those pods (their grace period, finalizers)"
    )


_BACKOFF = (
    "in scheduling backoff: its PodGroup sets spec.schedulingBackoff and KAI already tried it in this node pool "
    "(status.schedulingConditions), so KAI leaves it out until that condition is cleared"
)
_NOT_REACHED = "not reached: --max-seconds stopped the scheduling cycle before its actions got to this job"
_WOULD_PLACE = (
    "KAI would place it in its next cycle: if it stays Pending, look outside the scheduling decision "
    "(kubectl describe podgroup; KAI's binder and pod-grouper logs; admission webhook events)"
)


# --- the field's quiet mistakes ---------------------------------------------------------------------------


def find_mistakes(kinds: Mapping[str, list[Mapping[str, Any]]]) -> list[Mistake]:
    queues = {object_name(q): q for q in kinds.get("Queue", [])}
    parents = {str(mapping(q.get("spec")).get("parentQueue") or "") for q in queues.values()}
    leaves = {name for name in queues if name not in parents}
    out: list[Mistake] = []
    for name, queue in queues.items():
        out += _queue_limits(name, queue)
    for pod in kinds.get("Pod", []):
        out += _pod_mistakes(pod, queues, leaves)
    return out


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


def _pod_mistakes(pod: Mapping[str, Any], queues: Mapping[str, Any], leaves: set[str]) -> list[Mistake]:
    subject = f"Pod {object_namespace(pod)}/{object_name(pod)}"
    spec = mapping(pod.get("spec"))
    labels = mapping(mapping(pod.get("metadata")).get("labels"))
    annotations = mapping(mapping(pod.get("metadata")).get("annotations"))
    out = []
    wants_gpu = any(requests_gpu(t) for t in pod_templates("Pod", pod))
    raw_queue = labels.get(kai_api.QUEUE_LABEL)
    queue = raw_queue if isinstance(raw_queue, str) else None  # a hostile dump may hold any value here
    if spec.get("schedulerName") != kai_api.SCHEDULER_NAME and (wants_gpu or queue):
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
    if spec.get("schedulerName") == kai_api.SCHEDULER_NAME and queue and queues and queue not in queues:
        out.append(
            Mistake(
                "unknown-queue",
                subject,
                f"label {kai_api.QUEUE_LABEL}: {queue} names no Queue; KAI leaves the pod Pending",
                f"use one of the leaf queues: {', '.join(sorted(leaves)) or 'none exist'}",
            )
        )
    owners = seq(mapping(pod.get("metadata")).get("ownerReferences"))
    if any(o.get("kind") == "Service" for o in owners if isinstance(o, Mapping)):
        out.append(
            Mistake(
                "vcluster-owner-reference",
                subject,
                "its owner is a Service (a vCluster with setOwner: true): KAI's pod-grouper cannot follow it, "
                "so the pod is never grouped or scheduled",
                "set experimental.syncSettings.setOwner: false in the vCluster's values",
            )
        )
    if (
        spec.get("schedulerName") == kai_api.SCHEDULER_NAME
        and wants_gpu
        and isinstance(queue, str)
        and queue in queues
        and any(o.get("kind") == "ReplicaSet" for o in owners if isinstance(o, Mapping))
        and _gpu_quota(queues[queue]) == 0
        and not str(spec.get("priorityClassName") or "").startswith(("train", "build-preemptible"))
    ):
        out.append(
            Mistake(
                "deployment-without-quota",
                subject,
                f"a Deployment's pod (class inference by default, non-preemptible) in queue {queue}, whose GPU "
                "quota is 0: KAI runs non-preemptible pods only within quota",
                f"give queue {queue} a GPU quota, or use a preemptible priority class (train)",
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
    if kai_api.GPU_FRACTION in annotations or kai_api.GPU_MEMORY in annotations:
        res = Res("kubernetes:core/v1:Pod", object_name(pod), pod)
        for message in gpu_memory_utilization_within_fraction(
            res, Settings(exempt_namespaces=frozenset()), StackFacts()
        ):
            out.append(Mistake("vllm-memory-above-share", subject, message, "lower --gpu-memory-utilization"))
    return out


def _gpu_quota(queue: Mapping[str, Any]) -> float:
    quota = mapping(mapping(mapping(queue.get("spec")).get("resources")).get("gpu")).get("quota", 0)
    return float(quota) if isinstance(quota, int | float) and not isinstance(quota, bool) else 0.0


# --- output -------------------------------------------------------------------------------------------------


def to_json(d: Diagnosis) -> dict[str, Any]:
    return {
        "ok": d.ok,
        **({"partial": True} if d.partial else {}),
        "objects": dict(d.counts),
        "pending": [
            {"pod": p.pod, "podGroup": p.job, "queue": p.queue, "reason": p.reason, "wouldPlace": p.would_place}
            for p in d.pending
        ],
        "mistakes": [{"code": m.code, "object": m.subject, "problem": m.problem, "fix": m.fix} for m in d.mistakes],
        "notes": list(d.notes),
    }


_PLURAL = {"Topology": "topologies"}


def to_text(d: Diagnosis) -> str:
    counts = ", ".join(f"{n} {_PLURAL.get(k, k.lower() + 's')}" for k, n in d.counts.items())
    lines = [f"read {counts}: {len(d.pending)} pending pods, {len(d.mistakes)} mistakes"]
    if d.partial:
        lines.append(f"partial: {PARTIAL}")
    if d.pending:
        lines.append("pending:")
        lines += [f"  {p.pod} (queue {p.queue}): {p.reason}" for p in d.pending]
    if d.mistakes:
        lines.append("mistakes:")
        lines += [f"  [{m.code}] {m.subject}: {m.problem}; fix: {m.fix}" for m in d.mistakes]
    lines += [f"note: {n}" for n in d.notes]
    return "\n".join(lines)


def to_markdown(d: Diagnosis) -> str:
    lines = ["### kaistack diagnose", ""]
    if d.partial:
        lines += [f"**Partial**: {PARTIAL}.", ""]
    if d.pending:
        lines += ["| Pending pod | Queue | Why |", "|---|---|---|"]
        lines += [f"| {code(p.pod)} | {code(p.queue)} | {cell(p.reason)} |" for p in d.pending]
        lines.append("")
    if d.mistakes:
        lines += ["| Mistake | Object | Problem | Fix |", "|---|---|---|---|"]
        lines += [f"| {cell(m.code)} | {code(m.subject)} | {cell(m.problem)} | {cell(m.fix)} |" for m in d.mistakes]
    if d.ok:
        lines.append("No pending pods and no mistakes found.")
    return "\n".join(lines) + "\n"
