"""`kaistack verify`'s checks of the declared workloads' pods.

- `workload-running`: the pods are Running and Ready, and none is Running but not Ready (a crash-looping container
  keeps the phase Running; a stalled rollout keeps its old replicas Ready while the new template's pod
  crash-loops). Succeeded counts for a Pod and a PyTorchJob. A Job is judged as its controller counts it: done when
  `completions` pods have Succeeded, else the pods it still owes (min(parallelism, completions - succeeded)) must be
  Running and Ready; a host Job's own Failed condition (backoff limit, deadline) fails it whatever its pods say.
- `workload-image`: each pod that holds its place (Pending or Running) runs the declared image. A PyTorchJob's
  operator never replaces a running pod for a new template (kaistack.declaration.training_operator), and a Pod
  or Job left over from an earlier `up` keeps its old one.
- `workload-scheduler`: scheduled by KAI. `workload-pod-group`: every pod names a PodGroup, a tenant's PyTorchJob
  the gang kaistack made for it (kaistack.declaration.tenant_gangs: without it each synced pod is its own
  PodGroup, and one worker can start holding a GPU while the others wait), a host PyTorchJob one PodGroup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kaistack.declaration import kai_api
from kaistack.declaration.kai_api import SCHEDULER_NAME
from kaistack.declaration.model import StackConfig, Workload
from kaistack.declaration.tenant_gangs import GANG_KINDS, gang_name, is_tenant_gang
from kaistack.kube import resources as k8s
from kaistack.kube.client import KubeAPIError, KubeClient
from kaistack.ops.verify_common import (
    CheckResult,
    WorkloadPods,
    list_objects,
    pod_annotations,
    pod_name,
    pod_ready,
    pod_state,
    pods_phrase,
)

# The kinds besides Job (judged on its own) whose pods may finish: Succeeded is where they end; a Deployment's never.
FINISHING_KINDS = ("Pod", "PyTorchJob")


def check_workloads(config: StackConfig, pods: WorkloadPods, client: KubeClient) -> tuple[list[CheckResult], list[str]]:
    """The results, and notes (a host Job that could not be read)."""
    results: list[CheckResult] = []
    notes: list[str] = []
    jobs = _HostJobs(client, notes)
    for work in config.workloads:
        subject = work.name if work.tenant is None else f"{work.tenant}/{work.name}"
        matched = pods.of(work)
        if work.pod_count == 0:
            results.append(CheckResult("workload-running", subject, True, "0 replicas declared"))
            continue
        if work.kind == "Job":
            job = jobs.get(work) if work.tenant is None else None
            results.append(_job_running(work, subject, matched, job))
        else:
            results.append(_running(work, subject, matched))
        if not matched:
            results[-1] = _no_pods(results[-1], pods.namespace_of(work))
        if not matched:
            continue
        image = _image(work, subject, matched)
        if image is not None:
            results.append(image)
        results.append(_scheduler(subject, matched))
        results.append(_pod_group(work, subject, matched))
    return results, notes


def _running(work: Workload, subject: str, matched: list[dict[str, Any]]) -> CheckResult:
    expected = work.pod_count
    finished = {"Succeeded"} if work.kind in FINISHING_KINDS else set()
    counted = [p for p in matched if _phase(p) in finished or (_phase(p) == "Running" and pod_ready(p))]
    crashing = [p for p in matched if _phase(p) == "Running" and not pod_ready(p)]
    waiting = crashing + [p for p in matched if p not in counted and p not in crashing]
    ok = len(counted) >= expected and not crashing
    detail = f"{len(counted)}/{expected} pods Running and Ready" + (" or Succeeded" if finished else "")
    if waiting:
        detail += "; " + "; ".join(pod_state(p) for p in waiting[:3])
    return CheckResult("workload-running", subject, ok, detail)


def _no_pods(result: CheckResult, namespace: str) -> CheckResult:
    return CheckResult(
        result.check, result.subject, result.ok, f"{result.detail}; no pods found in namespace {namespace}"
    )


def _job_running(
    work: Workload, subject: str, matched: list[dict[str, Any]], job: Mapping[str, Any] | None
) -> CheckResult:
    # components/podspec.py: parallelism = replicas, completions = completions or replicas.
    completions = work.completions or work.replicas
    condition = _job_condition(job)
    if condition is not None and condition[0] == "Failed":
        return CheckResult("workload-running", subject, False, f"Job failed: {condition[1]}")
    succeeded = min(sum(_phase(p) == "Succeeded" for p in matched), completions)
    if (condition is not None and condition[0] == "Complete") or succeeded >= completions:
        return CheckResult("workload-running", subject, True, f"complete: {completions}/{completions} pods Succeeded")
    owed = min(work.replicas, completions - succeeded)
    running = [p for p in matched if _phase(p) == "Running" and pod_ready(p)]
    crashing = [p for p in matched if _phase(p) == "Running" and not pod_ready(p)]
    waiting = crashing + [p for p in matched if _phase(p) not in ("Succeeded", "Running")]
    detail = f"{succeeded}/{completions} pods Succeeded, {len(running)}/{owed} Running and Ready"
    if waiting:
        detail += "; " + "; ".join(pod_state(p) for p in waiting[:3])
    return CheckResult("workload-running", subject, len(running) >= owed and not crashing, detail)


def _job_condition(job: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """("Failed", "BackoffLimitExceeded: ...") or ("Complete", ...) when the Job's status says so."""
    for condition in ((job or {}).get("status") or {}).get("conditions") or []:
        if not isinstance(condition, Mapping) or condition.get("status") != "True":
            continue
        kind = condition.get("type")
        if kind in ("Failed", "Complete"):
            message = str(condition.get("message") or "")[:200]
            return str(kind), f"{condition.get('reason') or 'no reason'}" + (f": {message}" if message else "")
    return None


class _HostJobs:
    """Host Jobs, one list per namespace; none where the API refuses to list them (a note says so)."""

    def __init__(self, client: KubeClient, notes: list[str]) -> None:
        self._client, self._notes = client, notes
        self._by_namespace: dict[str, dict[str, Mapping[str, Any]]] = {}

    def get(self, work: Workload) -> Mapping[str, Any] | None:
        if work.namespace not in self._by_namespace:
            try:
                found = list_objects(self._client, k8s.Job, work.namespace)
            except KubeAPIError as err:
                if err.status != 403:
                    raise
                self._notes.append(
                    f"workload-running: Jobs in namespace {work.namespace} could not be read with these credentials "
                    "(403); their pods were judged alone"
                )
                found = []
            self._by_namespace[work.namespace] = {
                str((j.get("metadata") or {}).get("name")): j for j in found if isinstance(j, Mapping)
            }
        return self._by_namespace[work.namespace].get(work.name)


def _image(work: Workload, subject: str, matched: list[dict[str, Any]]) -> CheckResult | None:
    holding = [p for p in matched if _phase(p) in ("Pending", "Running")]
    if not holding:
        return None  # finished pods ran whatever they ran; workload-running says how they ended
    stale = [p for p in holding if not any(_is_declared(image, work.image) for image in _images(p))]
    if not stale:
        return CheckResult("workload-image", subject, True, f"{pods_phrase(len(holding))} run {work.image}")
    shown = "; ".join(f"{pod_name(p)} runs {', '.join(_images(p)) or 'no image'}" for p in stale[:3])
    why = {
        "PyTorchJob": "the training operator keeps a running pod's template: `pulumi up` replaces the PyTorchJob "
        "(or delete its pods)",
        "Deployment": "a rollout in progress or stuck (see workload-rollout)",
    }.get(work.kind, "run `pulumi up`")
    return CheckResult("workload-image", subject, False, f"{shown} (declared {work.image}): {why}")


def _images(pod: Mapping[str, Any]) -> list[str]:
    containers = (pod.get("spec") or {}).get("containers") or []
    return [str(c.get("image")) for c in containers if isinstance(c, Mapping) and c.get("image")]


def _is_declared(image: str, declared: str) -> bool:
    """The same reference, or it pinned to a digest by an admission webhook (`repo:tag@sha256:...`)."""
    return image == declared or image.startswith(f"{declared}@")


def _scheduler(subject: str, matched: list[dict[str, Any]]) -> CheckResult:
    wrong = [p for p in matched if (p.get("spec") or {}).get("schedulerName") != SCHEDULER_NAME]
    detail = f"{pods_phrase(len(matched))} scheduled by {SCHEDULER_NAME}"
    if wrong:
        detail = "; ".join(
            f"{pod_name(p)} uses {(p.get('spec') or {}).get('schedulerName') or 'default-scheduler'}" for p in wrong[:3]
        )
    return CheckResult("workload-scheduler", subject, not wrong, detail)


def _pod_group(work: Workload, subject: str, matched: list[dict[str, Any]]) -> CheckResult:
    def group(pod: Mapping[str, Any]) -> str:
        return str(pod_annotations(pod).get(kai_api.POD_GROUP_NAME) or "")

    missing = [p for p in matched if not group(p)]
    if missing:
        detail = f"no {kai_api.POD_GROUP_NAME} annotation on {', '.join(pod_name(p) for p in missing[:3])}"
        return CheckResult("workload-pod-group", subject, False, detail)
    groups = sorted({group(p) for p in matched})
    if is_tenant_gang(work):
        gang = gang_name(work)
        outside = [p for p in matched if group(p) != gang]
        if outside:
            shown = ", ".join(f"{pod_name(p)} in {group(p)}" for p in outside[:3])
            detail = (
                f"not in the gang's PodGroup {gang}: {shown}; each such pod is scheduled alone (the tenant's "
                f"PyTorchJob templates lost kaistack's {kai_api.POD_GROUP_NAME} annotation)"
            )
            return CheckResult("workload-pod-group", subject, False, detail)
    elif work.kind in GANG_KINDS and len(groups) > 1:
        detail = f"{len(groups)} PodGroups for one {work.kind} ({', '.join(groups[:3])}): its pods are not one gang"
        return CheckResult("workload-pod-group", subject, False, detail)
    detail = (
        f"{kai_api.POD_GROUP_NAME} on {pods_phrase(len(matched))} ({len(groups)} PodGroup{'s' * (len(groups) != 1)})"
    )
    return CheckResult("workload-pod-group", subject, True, detail)


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Unknown")
