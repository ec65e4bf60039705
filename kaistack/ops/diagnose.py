"""`kaistack diagnose`: why each pod is Pending on a running cluster, and the quiet mistakes around KAI.

Read-only. The objects come from the API or from a `kubectl get <kaistack.cli.diagnose.DUMP_KINDS> -A -o yaml`
dump; the snapshot
(kaistack.ops.live_snapshot) goes through one scheduling cycle of the same simulator `kaistack check` uses,
and every pod still Pending gets the checker's reason. A Pending pod the simulator would place is reported as
such: KAI should schedule it on its next cycle, so the cause is outside the scheduler's decision (the
pod-grouper, the binder, a webhook). A pod KAI has bound to a node that is still Pending is reported with what
its kubelet waits on. The quiet mistakes are found by kaistack.ops.diagnose_mistakes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kaistack.declaration import kai_api
from kaistack.guardrails.podspec import dig, mapping, seq
from kaistack.markdown import cell, code, one_line
from kaistack.ops.diagnose_mistakes import Mistake, find_mistakes
from kaistack.ops.live_kinds import by_kind
from kaistack.ops.live_pods import annotations_of, labels_of
from kaistack.ops.live_shard import SchedulerSettings, scheduler_settings
from kaistack.ops.live_snapshot import LiveSnapshot, build, object_name, object_namespace
from placement.k8s_names import is_qualified_name
from placement.reasons import NOT_REACHED
from placement.simulation import simulate
from placement.tasks import PENDING, PIPELINED

__all__ = ["Diagnosis", "Mistake", "PendingPod", "diagnose", "find_mistakes", "to_json", "to_markdown", "to_text"]

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
    # The node it is bound to (spec.nodeName) while its phase is still Pending: the kubelet's part, not KAI's.
    bound_to: str | None = None


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
    queue_label_key: str | None = None,
) -> Diagnosis:
    """`max_seconds` bounds the scheduling cycle (the diagnosis is then partial); `simulation` holds extra
    keyword arguments for placement's `simulate` (progress callbacks); `now` is when the objects were read
    (default: the current time); `queue_label_key` the label KAI reads a pod's queue from (default: KAI's
    Config's, when read, else kai.scheduler/queue)."""
    objects = list(objects)
    unnamed: Counter[str] = Counter()
    foreign: Counter[str] = Counter()
    kinds = by_kind(objects, unnamed, foreign)
    key, key_note = queue_label_key_of(kinds, queue_label_key)
    live = build(objects, queue_label=key, now=now)
    settings = scheduler_settings(kinds.get("SchedulingShard"))  # None: not read; []: read, and none there
    pending, partial = _pending(live, settings, max_seconds, simulation or {})
    pending += _in_kubelet(kinds, live, key)
    mistakes = find_mistakes(kinds, key)
    counts = {k: len(kinds.get(k, [])) for k in ("Node", "Pod", "PodGroup", "Queue", "Topology", "ConfigMap")}
    # A dump is hostile input: an object left out is said, not silently missing from the answer.
    dropped = [
        f"left out {n} {kind} object{'s' * (n != 1)} without a metadata.name (a string)"
        for kind, n in sorted(unnamed.items())
    ]
    dropped += [
        f"left out {n} {kind} object{'s' * (n != 1)}: the kind is KAI's, the API group another's (another "
        "scheduler's, read by nothing of KAI's)"
        for kind, n in sorted(foreign.items())
    ]
    absent = [_ABSENT[kind] for kind in _ABSENT if not kinds.get(kind)]
    all_notes = (*notes, *key_note, *absent, *settings.notes, *live.notes, *dropped)
    return Diagnosis(tuple(pending), tuple(mistakes), all_notes, counts, partial)


def queue_label_key_of(kinds: Mapping[str, list[Mapping[str, Any]]], given: str | None) -> tuple[str, tuple[str, ...]]:
    """The label KAI reads a pod's queue from, and a note when it is not the default: `given`, else the
    spec.global.queueLabelKey of KAI's Config kai-config (another operator's `Config` kind is not KAI's), else
    kai.scheduler/queue, KAI's default (KAI@v0.17.0 pkg/apis/kai/v1/global.go:68-70,124).

    A SchedulingShard's own `queue-label-key` arg is not read: the operator gives the pod-grouper and the
    admission webhook the Config's key (KAI@v0.17.0 pkg/operator/operands/pod_grouper/resources.go:72,
    admission/resources.go:181), and the scheduler reads its flag only in the dynamicresources plugin
    (pkg/scheduler/plugins/dynamicresources/dynamicresources.go:63), for DRA claims, which diagnose does not
    model."""
    if given:
        note = f"queues are read from the pods' {given} label (--queue-label-key)"
        return given, (() if given == kai_api.QUEUE_LABEL else (note,))
    api_version = f"{kai_api.KAI_CONFIG.group}/{kai_api.KAI_CONFIG.version}"
    configs = [
        c
        for c in kinds.get(kai_api.KAI_CONFIG.kind, [])
        if c.get("apiVersion") == api_version and object_name(c) == kai_api.KAI_CONFIG_NAME
    ]
    if not configs:
        return kai_api.QUEUE_LABEL, ()
    name = kai_api.KAI_CONFIG_NAME
    found = dig(configs[-1], "spec", "global", "queueLabelKey")
    if found is None or found == kai_api.QUEUE_LABEL:
        return kai_api.QUEUE_LABEL, ()
    if not isinstance(found, str):  # the CRD types it a string: only a hand-made dump holds anything else
        return kai_api.QUEUE_LABEL, (
            f"KAI's Config {name} sets spec.global.queueLabelKey to {str(found)[:80]!r}, not a string: ignored, "
            f"queues are read from the pods' {kai_api.QUEUE_LABEL} label",
        )
    if not is_qualified_name(found):
        # The operator passes it on as it is (SetDefault fills only a missing key: pkg/apis/kai/v1/global.go:124),
        # so KAI reads a label no pod can carry and every pod goes to its fallback queue.
        return found, (
            f"KAI's Config {name} sets spec.global.queueLabelKey to {found[:80]!r}, which is no label key: KAI "
            "reads it as it is, so no pod carries it",
        )
    return found, (f"queues are read from the pods' {found} label (KAI's Config {name})",)


# A dump is whatever `kubectl get` was asked for: a kind it left out reads as a clean or broken cluster unless said.
_ABSENT = {
    "Pod": "no Pods were read, so no pod was diagnosed (every cluster runs some in kube-system: dump pods with -A)",
    "Node": "no Nodes were read: every pod is diagnosed as having no node to run on",
    "Queue": "no Queues were read: every pod's queue is diagnosed as missing",
}


def _pending(
    live: LiveSnapshot, settings: SchedulerSettings, max_seconds: float | None, simulation: Mapping[str, Any]
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
    bad = live.bad_sub_group
    out += [PendingPod(pod, job, queue, _bad_sub_group(pod, job, name)) for pod, (job, queue, name) in bad.items()]
    if not waiting:
        return out, False
    if (stopped := settings.stopped) is not None:  # no cycle runs at all
        for name in waiting:
            pairs = zip(jobs[name].tasks, live.pods_of_job.get(name, []), strict=False)
            out += [PendingPod(pod, name, jobs[name].queue, stopped) for task, pod in pairs if task.state == "Pending"]
        return out, False
    # Read right after the cycle, as KAI leaves it: a pipelined pod is still pipelined, not back to Pending.
    # The shard's actions (by default KAI's, stale gang eviction included: conf_util/scheduler_conf_util.go:38).
    result = simulate(
        live.snapshot,
        settings.actions,
        rounds=1,
        placement=settings.placement,
        settle=False,
        max_seconds=max_seconds,
        **simulation,
    )
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


def _bad_sub_group(pod: str, job: str, name: str) -> str:
    # KAI's fit error as it words it (job_info.go:664-673; %q quotes as JSON does for a plain name).
    return (
        f"Pod references subgroup {json.dumps(name)}, which does not exist in PodGroup {pod.split('/')[0]}/{job}: KAI "
        f'never schedules it (the pod\'s {kai_api.SUBGROUP_LABEL} label, or none for "default")'
    )


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


def _in_kubelet(
    kinds: Mapping[str, list[Mapping[str, Any]]], live: LiveSnapshot, queue_label: str = kai_api.QUEUE_LABEL
) -> list[PendingPod]:
    """KAI's pods bound to a node (spec.nodeName) and still in phase Pending: KAI counts them Bound there
    (kai-scheduler/KAI-Scheduler@v0.17.0:pkg/scheduler/api/pod_info/pod_info.go:476-483, getTaskStatus), holding
    their resources, so the cycle has nothing to say about them; their kubelet has not started them (an image it
    cannot pull, a volume it cannot mount). Pods of other schedulers are left out, as their unplaced pods are."""
    groups = {object_name(pg): pg for pg in kinds.get("PodGroup", [])}
    queues = {job.name: job.queue for job in live.snapshot.jobs}
    nodes = {object_name(n) for n in kinds.get("Node", [])}
    out = []
    for pod in kinds.get("Pod", []):
        node = dig(pod, "spec", "nodeName")
        if dig(pod, "status", "phase") != "Pending" or not isinstance(node, str) or not node:
            continue
        if dig(pod, "metadata", "deletionTimestamp"):
            continue  # Releasing (getTaskStatus): going away, not waiting to start
        name = f"{object_namespace(pod)}/{object_name(pod)}"
        group = str(annotations_of(pod).get(kai_api.POD_GROUP_NAME) or f"pod/{name}")
        # The same membership as live_snapshot.build: KAI's scheduler name, or a pod-group-name that exists.
        if dig(pod, "spec", "schedulerName") != kai_api.SCHEDULER_NAME and group not in groups:
            continue
        queue = queues.get(group) or dig(groups.get(group), "spec", "queue") or labels_of(pod).get(queue_label)
        where = node if node in nodes else f"{node} (not among the nodes read)"
        reason = f"bound to {where}; Pending in the kubelet: {_waiting(pod)}"
        out.append(PendingPod(name, group, str(queue or ""), reason, bound_to=node))
    return out


_MESSAGE_CHARS = 200  # a kubelet message can be long (a registry's whole answer); the reason says the kind


def _waiting(pod: Mapping[str, Any]) -> str:
    """The first container the kubelet says is waiting, init containers first (they run before the others)."""
    status = mapping(pod.get("status"))
    for key in ("initContainerStatuses", "containerStatuses"):
        for container in seq(status.get(key)):
            waiting = mapping(dig(container, "state", "waiting"))
            reason = waiting.get("reason")
            if not isinstance(reason, str) or not reason or reason == "PodInitializing":
                continue
            message = waiting.get("message")
            # The kubelet quotes what the pod says (an image name): a line break or an escape must not reach a terminal.
            detail = f": {one_line(message[:_MESSAGE_CHARS])}" if isinstance(message, str) and message else ""
            return f"{reason} (container {mapping(container).get('name')}{detail}); kubectl describe pod: its events"
    for container in seq(status.get("initContainerStatuses")):
        # An init container still running holds the others back: a PyTorchJob worker's init-pytorch waits
        # for the master's DNS name (kubeflow/training-operator@v1.8.1 pytorch/initcontainer.go).
        if mapping(dig(container, "state", "running")) and not mapping(container).get("ready"):
            return f"init container {mapping(container).get('name')} is still running; kubectl logs -c it"
    return "no container reports why yet; kubectl describe pod: its events"


_BACKOFF = (
    "in scheduling backoff: its PodGroup sets spec.schedulingBackoff and KAI already tried it in this node pool "
    "(status.schedulingConditions), so KAI leaves it out until that condition is cleared"
)
_NOT_REACHED = "not reached: --max-seconds stopped the scheduling cycle before its actions got to this job"
_WOULD_PLACE = (
    "KAI would place it in its next cycle: if it stays Pending, look outside the scheduling decision "
    "(kubectl describe podgroup; KAI's binder and pod-grouper logs; admission webhook events)"
)


# --- output -------------------------------------------------------------------------------------------------


def to_json(d: Diagnosis) -> dict[str, Any]:
    return {
        "ok": d.ok,
        **({"partial": True} if d.partial else {}),
        "objects": dict(d.counts),
        "pending": [
            {
                "pod": p.pod,
                "podGroup": p.job,
                "queue": p.queue,
                "reason": p.reason,
                "wouldPlace": p.would_place,
                "boundTo": p.bound_to,
            }
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
    # One line per pod, mistake and note whatever the cluster's objects hold: a pod-group-name annotation or a
    # PodGroup's queue with a line break in it would otherwise print lines of its own.
    if d.pending:
        lines.append("pending:")
        lines += [f"  {one_line(p.pod)} (queue {one_line(p.queue)}): {one_line(p.reason)}" for p in d.pending]
    if d.mistakes:
        lines.append("mistakes:")
        lines += [
            f"  [{m.code}] {one_line(m.subject)}: {one_line(m.problem)}; fix: {one_line(m.fix)}" for m in d.mistakes
        ]
    lines += [f"note: {one_line(n)}" for n in d.notes]
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
        lines.append("")
    if d.ok:
        lines += ["No pending pods and no mistakes found.", ""]
    if d.notes:
        # What was not read or not checked: without it a clean table can read as a clean cluster.
        lines += ["Notes:", "", *(f"- {cell(n)}" for n in d.notes), ""]
    return "\n".join(lines).rstrip("\n") + "\n"
