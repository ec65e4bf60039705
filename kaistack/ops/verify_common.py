"""What `kaistack verify`'s checks share: a check's result, and the pods of each declared workload on the host."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kaistack.declaration import vcluster_api
from kaistack.declaration.marks import WORKLOAD_LABEL
from kaistack.declaration.model import StackConfig, Tenant, Workload
from kaistack.kube import resources as k8s
from kaistack.kube.client import Kind, KubeAPIError, KubeClient


@dataclass(frozen=True)
class CheckResult:
    check: str
    subject: str
    ok: bool
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "subject": self.subject, "ok": self.ok, "detail": self.detail}


class WorkloadPods:
    """Pods per declared workload: host pods by namespace, tenant pods via vCluster's object annotations."""

    def __init__(self, config: StackConfig, client: KubeClient) -> None:
        self._config = config
        self._client = client
        self._by_namespace: dict[str, list[dict[str, Any]]] = {}

    def namespace_of(self, work: Workload) -> str:
        return work.namespace if work.tenant is None else self._tenant(work).host_namespace

    def of(self, work: Workload) -> list[dict[str, Any]]:
        pods = self.in_namespace(self.namespace_of(work))
        if work.tenant is not None:
            # The host namespace holds one tenant's vCluster; synced pods carry its managed-by label.
            pods = [
                p
                for p in pods
                if vcluster_api.MANAGED_BY_LABEL in pod_labels(p)
                and pod_annotations(p).get(vcluster_api.OBJECT_NAMESPACE_ANNOTATION, work.namespace) == work.namespace
            ]
        pods = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
        labelled = [p for p in pods if pod_labels(p).get(WORKLOAD_LABEL) == work.name]
        if labelled or any(WORKLOAD_LABEL in pod_labels(p) for p in pods):
            return labelled
        pattern = _name_pattern(work)
        return [p for p in pods if pattern.fullmatch(virtual_name(p))]

    def _tenant(self, work: Workload) -> Tenant:
        return self._config.tenant(str(work.tenant))

    def in_namespace(self, namespace: str) -> list[dict[str, Any]]:
        """Every pod in a namespace, read once per run (deleting ones included)."""
        if namespace not in self._by_namespace:
            self._by_namespace[namespace] = self._client.list(k8s.Pod, namespace=namespace)
        return self._by_namespace[namespace]


def _name_pattern(work: Workload) -> re.Pattern[str]:
    """Pod names the controllers give a workload's pods (the fallback when pods lack WORKLOAD_LABEL)."""
    name = re.escape(work.name)
    return re.compile(
        {
            "Pod": name,
            "Deployment": rf"{name}-[a-z0-9]{{1,10}}-[a-z0-9]{{5}}",
            "Job": rf"{name}(-\d+)?-[a-z0-9]{{5}}",
            "PyTorchJob": rf"{name}-(master|worker)-\d+",
        }[work.kind]
    )


# --- small helpers ----------------------------------------------------------------------------------------


def list_objects(client: KubeClient, kind: Kind, namespace: str) -> list[dict[str, Any]]:
    """A namespace's objects of one kind; a 404 (the CRD is not installed) is an empty list."""
    try:
        return client.list(kind, namespace=namespace)
    except KubeAPIError as err:
        if err.status == 404:
            return []
        raise


def pod_labels(pod: Mapping[str, Any]) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def pod_annotations(pod: Mapping[str, Any]) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("annotations") or {}


def pod_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name", "?"))


def virtual_name(pod: Mapping[str, Any]) -> str:
    return pod_annotations(pod).get(vcluster_api.OBJECT_NAME_ANNOTATION) or pod_name(pod)


def holds_share(pod: Mapping[str, Any]) -> bool:
    """Bound or running and not being deleted: a Failed (evicted) or Succeeded pod keeps its runai-gpu-group label
    and annotations but has given its GPU share back."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Pending", "Running") and not (pod.get("metadata") or {}).get("deletionTimestamp")


def pods_phrase(count: int) -> str:
    return f"{count} pod{'s' * (count != 1)}"


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """The pod's Ready condition; without one, whether every container reports ready.

    A container in CrashLoopBackOff (restartPolicy Always) leaves the pod in phase Running, so the phase
    alone says nothing about whether it works; Ready turns False as soon as a container stops, and the node
    controller sets it False on every pod of a node that goes NotReady (MarkPodsNotReady in
    kubernetes/kubernetes@025f2834:pkg/controller/util/node/controller_utils.go, a commit of master).
    """
    status = pod.get("status") or {}
    condition = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if condition is not None:
        return condition.get("status") == "True"
    containers = status.get("containerStatuses") or []
    return bool(containers) and all(c.get("ready") for c in containers)


def pod_state(pod: Mapping[str, Any]) -> str:
    """What a pod that does not count is doing: its phase, why it is unscheduled or which containers fail."""
    status = pod.get("status") or {}
    phase = status.get("phase") or "Unknown"
    condition = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled" and c.get("status") != "True"),
        None,
    )
    if condition:
        message = str(condition.get("message") or "")[:120]
        return f"{pod_name(pod)} {phase} ({condition.get('reason', 'Unschedulable')}: {message})"
    if phase == "Running" and not pod_ready(pod):
        return f"{pod_name(pod)} Running but not Ready ({_unready_reason(pod)}); {_look_at(pod)}"
    waiting = _container_problems(pod)
    return f"{pod_name(pod)} {phase} ({'; '.join(waiting)})" if waiting else f"{pod_name(pod)} {phase}"


def _unready_reason(pod: Mapping[str, Any]) -> str:
    problems = _container_problems(pod)
    if problems:
        return "; ".join(problems)
    status = pod.get("status") or {}
    condition = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if condition is None:
        return "no Ready condition"
    message = str(condition.get("message") or "")[:120]
    return f"Ready {condition.get('status')}: {condition.get('reason') or 'no reason'}" + (
        f", {message}" if message else ""
    )


def _container_problems(pod: Mapping[str, Any]) -> list[str]:
    """'container main CrashLoopBackOff, 14 restarts, last exit 127 (Error)' for each container not ready."""
    problems = []
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        if container.get("ready"):
            continue
        state = container.get("state") or {}
        reason = (state.get("waiting") or {}).get("reason") or (state.get("terminated") or {}).get("reason")
        text = f"container {container.get('name', '?')} {reason or 'not ready'}"
        restarts = int(container.get("restartCount") or 0)
        if restarts:
            text += f", {restarts} restart{'s' * (restarts != 1)}"
        last = (container.get("lastState") or {}).get("terminated") or {}
        if last:
            text += f", last exit {last.get('exitCode', '?')} ({last.get('reason') or 'no reason'})"
        problems.append(text)
    return problems


def _look_at(pod: Mapping[str, Any]) -> str:
    """Where the reason is: the crashed container's previous log, else the pod's events."""
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    restarted = next(
        (
            c.get("name")
            for c in (pod.get("status") or {}).get("containerStatuses") or []
            if not c.get("ready") and c.get("restartCount")
        ),
        None,
    )
    if restarted:
        return f"see `kubectl -n {namespace} logs {pod_name(pod)} -c {restarted} --previous`"
    return f"see `kubectl -n {namespace} describe pod {pod_name(pod)}`"


def number_text(value: Any) -> str:
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return str(value)
