"""`kaistack verify`: after `pulumi up`, does the live cluster schedule the way the stack declares?

Read-only checks against the Kubernetes API (`kaistack.kube.client`, over lightkube):

- `kai-components`: KAI's Deployments in `kai.namespace` exist, are available and rolled out (v0.17's
  operator creates admission, binder, kai-operator, kai-scheduler-default, pod-grouper,
  podgroup-controller, queue-controller); `verify_health.deployment_problems` says what is wrong.
- `queue`: every declared queue (plus KAI's default pair) exists as a Queue (`kai_api.QUEUE`)
  with the declared parent, priority and gpu/cpu/memory quota/limit/overQuotaWeight (an omitted field
  counts as 0, as KAI reads it).
- `workload-running`, `workload-scheduler`, `workload-pod-group`: each declared workload has its pods
  Running and Ready (Succeeded also counts for Pod/Job/PyTorchJob) and none Running but not Ready, with
  `spec.schedulerName: kai-scheduler` and the `pod-group-name` annotation. Tenant workloads are found in
  the tenant's host namespace through vCluster's `vcluster.loft.sh/object-*` annotations.
- `workload-rollout` (`verify_health`): each declared Deployment is rolled out like KAI's.
- `gpu-group` (`verify_gpu`): fractional pods carry a `runai-gpu-group` label, and under
  `placementStrategy: binpack` no two GPU groups on one node hold fractions that would fit on one GPU
  together. The comparison with the placement checker's plan is a pass line when they match and a
  report note otherwise: the group a pod joins depends on the order pods arrive.
- `vcluster-control-plane` (`verify_health`): each tenant's vCluster pod `<tenant>-0` is Running and Ready.
- `vcluster-owner-refs`: pods synced from each tenant's vCluster carry no ownerReferences
  (`experimental.syncSettings.setOwner: false`, vcluster-and-gpu.md §1.1).
- `node-ready` (`verify_health`): the nodes that run the checked pods (the workloads' and the vClusters')
  are Ready.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kaistack.declaration import kai_api, vcluster_api
from kaistack.declaration.kai_api import SCHEDULER_NAME
from kaistack.declaration.model import Queue, StackConfig
from kaistack.kube import resources as k8s
from kaistack.kube.client import KubeAPIError, KubeClient, KubeError
from kaistack.ops.verify_common import (
    CheckResult,
    WorkloadPods,
    list_objects,
    number_text,
    pod_annotations,
    pod_labels,
    pod_name,
    pod_ready,
    pod_state,
    pods_phrase,
)
from kaistack.ops.verify_gpu import check_gpu_groups, expected_gpu_groups
from kaistack.ops.verify_health import (
    check_nodes,
    check_vcluster_control_planes,
    check_workload_rollouts,
    control_plane_pod,
    rollout_result,
)
from kaistack.progress import Progress

# components/podspec.py puts `app: <workload>` (WORKLOAD_LABEL) on every workload object and pod
# template (and vCluster copies labels to host pods); pod names are the fallback when no pod in the
# namespace has the key.
KAI_DEPLOYMENTS = (
    "admission",
    "binder",
    "kai-operator",
    "kai-scheduler-default",
    "pod-grouper",
    "podgroup-controller",
    "queue-controller",
)


@dataclass
class VerifyReport:
    stack: str
    server: str
    kubeconfig: str
    results: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # information that is not a failure

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.ok]

    def as_dict(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "server": self.server,
            "kubeconfig": self.kubeconfig,
            "ok": self.ok,
            "passed": len(self.results) - len(self.failures),
            "failed": len(self.failures),
            "checks": [r.as_dict() for r in self.results],
            "notes": list(self.notes),
        }

    def table(self) -> str:
        rows = [("CHECK", "SUBJECT", "RESULT", "DETAIL")]
        rows += [(r.check, r.subject, "pass" if r.ok else "FAIL", r.detail) for r in self.results]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}".rstrip() for a, b, c, d in rows]
        verdict = "all checks passed" if self.ok else f"{len(self.failures)} of {len(self.results)} checks FAILED"
        notes = [f"note: {n}" for n in self.notes]
        return "\n".join([f"verify stack {self.stack} at {self.server} ({self.kubeconfig})", *lines, *notes, verdict])


# --- the checks -------------------------------------------------------------------------------------------


def verify_stack(
    config: StackConfig, client: KubeClient, *, stack: str, kubeconfig: str = "", progress: Progress | None = None
) -> VerifyReport:
    """Run every check; raises KubeError when the API server is unreachable or rejects the credentials."""
    progress = progress or Progress.quiet()
    report = VerifyReport(stack=stack, server=client.server, kubeconfig=kubeconfig)
    with progress.step(f"checking KAI components in {config.kai.namespace}"):
        report.results += check_kai_components(config, client)
    with progress.step(f"checking {len(config.all_queues())} queues"):
        report.results += check_queues(config, client)
    with progress.step(f"checking {len(config.workloads)} workloads"):
        pods = WorkloadPods(config, client)
        report.results += check_workloads(config, pods)
        report.results += check_workload_rollouts(config, client, pods.of)
        gpu_results, gpu_notes = check_gpu_groups(config, client, pods, expected_gpu_groups(config))
        report.results += gpu_results
        report.notes += gpu_notes
    with progress.step(f"checking {len(config.tenants)} vClusters"):
        report.results += check_vcluster_control_planes(config, pods.in_namespace)
        report.results += check_vcluster_owner_refs(config, pods)
    checked = [p for work in config.workloads for p in pods.of(work)]
    checked += [p for t in config.tenants if (p := control_plane_pod(t, pods.in_namespace)) is not None]
    with progress.step("checking the nodes that run them"):
        node_results, node_notes = check_nodes(client, checked)
        report.results += node_results
        report.notes += node_notes
    return report


def check_kai_components(config: StackConfig, client: KubeClient) -> list[CheckResult]:
    namespace = config.kai.namespace
    deployments = _by_name(list_objects(client, k8s.Deployment, namespace))
    results = []
    for name in sorted(set(KAI_DEPLOYMENTS) | set(deployments)):
        subject = f"{namespace}/{name}"
        if name not in deployments:
            results.append(CheckResult("kai-components", subject, False, "Deployment not found"))
            continue
        if name in KAI_DEPLOYMENTS and (deployments[name].get("spec") or {}).get("replicas", 1) == 0:
            # A rollout of nothing is complete: 0/0 available would pass while nothing of KAI's runs.
            detail = "scaled to 0 replicas: the component is not running (kubectl scale it back up)"
            results.append(CheckResult("kai-components", subject, False, detail))
            continue
        results.append(rollout_result("kai-components", subject, deployments[name]))
    return results


def _by_name(items: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Objects by metadata.name; an item without one (no API server sends it) cannot be what a check looks for."""
    named = {}
    for item in items:
        name = (item.get("metadata") or {}).get("name") if isinstance(item, Mapping) else None
        if isinstance(name, str):
            named[name] = item
    return named


def check_queues(config: StackConfig, client: KubeClient) -> list[CheckResult]:
    try:
        live = _by_name(client.list(k8s.Queue))
    except KubeAPIError as err:
        if err.status != 404:
            raise
        return [CheckResult("queue", "*", False, f"the Queue API ({kai_api.QUEUE.api_version}) is not installed")]
    results = []
    for queue in config.all_queues():
        if queue.name not in live:
            results.append(CheckResult("queue", queue.name, False, "Queue not found"))
            continue
        drift = queue_drift(queue, live[queue.name].get("spec") or {})
        detail = "; ".join(drift) if drift else "spec matches"
        results.append(CheckResult("queue", queue.name, not drift, detail))
    return results


def queue_drift(queue: Queue, spec: Mapping[str, Any]) -> list[str]:
    """Differences between a declared queue and a live Queue's spec, one 'field is X (declared Y)' each."""
    drift = []
    actual_parent = spec.get("parentQueue") or None
    if actual_parent != queue.parent:
        drift.append(f"parentQueue is {actual_parent or 'unset'} (declared {queue.parent or 'unset'})")
    if spec.get("priority", 100) != queue.priority:
        drift.append(f"priority is {spec.get('priority', 100)} (declared {queue.priority})")
    for key, declared in (
        ("displayName", queue.display_name),
        ("preemptMinRuntime", queue.preempt_min_runtime),
        ("reclaimMinRuntime", queue.reclaim_min_runtime),
    ):
        if declared is not None and spec.get(key) != declared:
            drift.append(f"{key} is {spec.get(key) or 'unset'} (declared {declared})")
    resources = spec.get("resources") or {}
    for kind in ("gpu", "cpu", "memory"):
        block = getattr(queue.resources, kind)
        live = resources.get(kind) or {}
        for key, declared in (
            ("quota", block.quota),
            ("limit", block.limit),
            ("overQuotaWeight", block.over_quota_weight),
        ):
            actual = live.get(key, 0)  # KAI reads an omitted field as 0
            if not _same_number(actual, declared):
                drift.append(f"resources.{kind}.{key} is {number_text(actual)} (declared {number_text(declared)})")
    return drift


def check_workloads(config: StackConfig, pods: WorkloadPods) -> list[CheckResult]:
    results = []
    for work in config.workloads:
        subject = work.name if work.tenant is None else f"{work.tenant}/{work.name}"
        expected = work.pod_count
        matched = pods.of(work)
        if expected == 0:
            results.append(CheckResult("workload-running", subject, True, "0 replicas declared"))
            continue
        # A Running pod counts only when Ready: a crash-looping container keeps the phase Running. Any
        # Running pod that is not Ready fails the workload even when enough others are: a stalled
        # rollout keeps its old replicas Ready while the new template's pod crash-loops.
        finished = {"Succeeded"} if work.kind != "Deployment" else set()
        counted = [p for p in matched if _phase(p) in finished or (_phase(p) == "Running" and pod_ready(p))]
        crashing = [p for p in matched if _phase(p) == "Running" and not pod_ready(p)]
        waiting = crashing + [p for p in matched if p not in counted and p not in crashing]
        ok = len(counted) >= expected and not crashing
        detail = f"{len(counted)}/{expected} pods Running and Ready" + (" or Succeeded" if finished else "")
        if waiting:
            detail += "; " + "; ".join(pod_state(p) for p in waiting[:3])
        elif not matched:
            detail += f"; no pods found in namespace {pods.namespace_of(work)}"
        results.append(CheckResult("workload-running", subject, ok, detail))
        if not matched:
            continue
        wrong = [p for p in matched if (p.get("spec") or {}).get("schedulerName") != SCHEDULER_NAME]
        scheduler_detail = f"{pods_phrase(len(matched))} scheduled by {SCHEDULER_NAME}"
        if wrong:
            scheduler_detail = "; ".join(
                f"{pod_name(p)} uses {(p.get('spec') or {}).get('schedulerName') or 'default-scheduler'}"
                for p in wrong[:3]
            )
        results.append(CheckResult("workload-scheduler", subject, not wrong, scheduler_detail))
        missing = [p for p in matched if not pod_annotations(p).get(kai_api.POD_GROUP_NAME)]
        groups = {pod_annotations(p).get(kai_api.POD_GROUP_NAME) for p in matched} - {None, ""}
        group_detail = (
            f"{kai_api.POD_GROUP_NAME} on {pods_phrase(len(matched))} "
            f"({len(groups)} PodGroup{'s' * (len(groups) != 1)})"
        )
        if missing:
            group_detail = f"no {kai_api.POD_GROUP_NAME} annotation on {', '.join(pod_name(p) for p in missing[:3])}"
        results.append(CheckResult("workload-pod-group", subject, not missing, group_detail))
    return results


def check_vcluster_owner_refs(config: StackConfig, pods: WorkloadPods) -> list[CheckResult]:
    results = []
    for tenant in config.tenants:
        namespace = tenant.host_namespace
        synced = [p for p in pods.in_namespace(namespace) if vcluster_api.MANAGED_BY_LABEL in pod_labels(p)]
        owned = [p for p in synced if (p.get("metadata") or {}).get("ownerReferences")]
        subject = f"{tenant.name} ({namespace})"
        if owned:
            first = owned[0]["metadata"]["ownerReferences"][0]
            detail = (
                f"{len(owned)} of {len(synced)} synced pods have ownerReferences (e.g. {pod_name(owned[0])} -> "
                f"{first.get('kind')}/{first.get('name')}); set experimental.syncSettings.setOwner: false"
            )
            results.append(CheckResult("vcluster-owner-refs", subject, False, detail))
        else:
            results.append(
                CheckResult(
                    "vcluster-owner-refs", subject, True, f"{len(synced)} synced pods, none with ownerReferences"
                )
            )
    return results


# --- finding a workload's pods ----------------------------------------------------------------------------


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Unknown")


def _same_number(actual: Any, declared: float) -> bool:
    try:
        return math.isclose(float(actual), float(declared), rel_tol=1e-9, abs_tol=1e-9)
    except (TypeError, ValueError):
        return False


__all__ = ["CheckResult", "KubeError", "VerifyReport", "verify_stack"]
