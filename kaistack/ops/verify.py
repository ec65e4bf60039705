"""`kaistack verify`: after `pulumi up`, does the live cluster schedule the way the stack declares?

Read-only checks against the Kubernetes API (`kaistack.kube.client`, over lightkube; `kai-admission`'s dry-run
creates write nothing):

- `kai-components`: KAI's Deployments in `kai.namespace` exist, are available and rolled out (v0.17's
  operator creates admission, binder, kai-operator, kai-scheduler-default, pod-grouper,
  podgroup-controller, queue-controller); `verify_health.deployment_problems` says what is wrong.
- `kai-admission` (`verify_admission`): KAI's webhooks are registered and answer a dry-run Queue, PodGroup and Pod.
- `queue`: every declared queue (plus KAI's default pair) exists as a Queue (`kai_api.QUEUE`)
  with the declared parent, priority and gpu/cpu/memory quota/limit/overQuotaWeight (an omitted field
  counts as 0, as KAI reads it).
- `scheduler` (`verify_scheduler`): the SchedulingShard runs KAI's scheduler as `kaistack check` simulates it
  (`kai.placementStrategy`, consolidation and its victim limit, scheduling signatures, the actions' order, min
  runtimes); a shard edited on the cluster, or one whose scheduler cannot start, fails it.
- `workload-running`, `workload-image`, `workload-scheduler`, `workload-pod-group` (`verify_workloads`): each
  declared workload's pods run (a Job's as its controller counts them) the declared image, scheduled by
  `kai-scheduler` in their PodGroup. Tenant workloads are found in the tenant's host namespace through vCluster's
  `vcluster.loft.sh/object-*` annotations.
- `workload-rollout` (`verify_health`): each declared Deployment is rolled out like KAI's.
- `gpu-group` (`verify_gpu`): fractional pods carry a `runai-gpu-group` label, and under
  `placementStrategy: binpack` no two GPU groups on one node hold fractions that would fit on one GPU
  together. The comparison with the placement checker's plan is a pass line when they match and a
  report note otherwise: the group a pod joins depends on the order pods arrive.
- `memory-isolation` (`verify_isolation`, `kai.sharing: isolated`): each GPU-sharing pod's fraction container has
  HAMi's `/etc/ld.so.preload` and KAI's `CUDA_DEVICE_MEMORY_LIMIT`, and a bound pod's ConfigMap holds the limit;
  each piece fails open on a cluster, leaving the pod uncapped.
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
from kaistack.declaration.model import Queue, StackConfig
from kaistack.kube import resources as k8s
from kaistack.kube.client import KubeAPIError, KubeClient, KubeError
from kaistack.ops.verify_admission import check_kai_admission
from kaistack.ops.verify_common import (
    CheckResult,
    WorkloadPods,
    list_objects,
    number_text,
    pod_labels,
    pod_name,
)
from kaistack.ops.verify_gpu import check_gpu_groups, expected_gpu_groups
from kaistack.ops.verify_health import (
    check_nodes,
    check_vcluster_control_planes,
    check_workload_rollouts,
    control_plane_pod,
    rollout_result,
)
from kaistack.ops.verify_isolation import check_memory_isolation
from kaistack.ops.verify_scheduler import check_scheduler
from kaistack.ops.verify_workloads import check_workloads
from kaistack.progress import Progress
from placement.scenario import duration_seconds

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
        rows += [(r.check, _line(r.subject), "pass" if r.ok else "FAIL", _line(r.detail)) for r in self.results]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}".rstrip() for a, b, c, d in rows]
        verdict = "all checks passed" if self.ok else f"{len(self.failures)} of {len(self.results)} checks FAILED"
        notes = [f"note: {_line(n)}" for n in self.notes]
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
    with progress.step("checking KAI's admission webhooks"):
        admission_results, admission_notes = check_kai_admission(config, client)
        report.results += admission_results
        report.notes += admission_notes
    with progress.step(f"checking {len(config.all_queues())} queues"):
        report.results += check_queues(config, client)
    with progress.step("checking KAI's scheduler settings"):
        scheduler_results, scheduler_notes = check_scheduler(config, client)
        report.results += scheduler_results
        report.notes += scheduler_notes
    with progress.step(f"checking {len(config.workloads)} workloads"):
        pods = WorkloadPods(config, client)
        workload_results, workload_notes = check_workloads(config, pods, client)
        report.results += workload_results
        report.notes += workload_notes
        report.results += check_workload_rollouts(config, client, pods.of)
        gpu_results, gpu_notes = check_gpu_groups(config, client, pods, expected_gpu_groups(config))
        report.results += gpu_results
        report.notes += gpu_notes
        isolation_results, isolation_notes = check_memory_isolation(config, client, pods)
        report.results += isolation_results
        report.notes += isolation_notes
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
        spec = live[queue.name].get("spec")
        drift = queue_drift(queue, spec) if isinstance(spec, Mapping) else ["spec is not an object"]
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
    if queue.display_name is not None and spec.get("displayName") != queue.display_name:
        drift.append(f"displayName is {spec.get('displayName') or 'unset'} (declared {queue.display_name})")
    for key, declared in (
        ("preemptMinRuntime", queue.preempt_min_runtime),
        ("reclaimMinRuntime", queue.reclaim_min_runtime),
    ):
        # KAI reads them (queue_info.go), and `pulumi up` leaves an undeclared one out: one set by hand is drift.
        # Compared as durations: "60m" is "1h" to KAI.
        live = spec.get(key)
        if _duration(live) != _duration(declared):
            shown = "unset" if live is None else repr(live) if live == "" else live
            drift.append(f"{key} is {shown} (declared {declared or 'unset'})")
    resources = spec.get("resources") or {}
    if not isinstance(resources, Mapping):
        return [*drift, "resources is not an object"]
    for kind in ("gpu", "cpu", "memory"):
        block = getattr(queue.resources, kind)
        live = resources.get(kind) or {}
        if not isinstance(live, Mapping):
            drift.append(f"resources.{kind} is not an object")
            continue
        for key, declared in (
            ("quota", block.quota),
            ("limit", block.limit),
            ("overQuotaWeight", block.over_quota_weight),
        ):
            actual = live.get(key, 0)  # KAI reads an omitted field as 0
            if not _same_number(actual, declared):
                drift.append(f"resources.{kind}.{key} is {number_text(actual)} (declared {number_text(declared)})")
    return drift


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


# --- reading the cluster's values -------------------------------------------------------------------------


def _duration(value: object) -> float | str | None:
    """Seconds of a Go duration; another value as its text, unset as None (so two unreadable values still differ
    from a readable one). An empty string is not unset: the CRD stores it, and KAI, reading a *metav1.Duration,
    cannot parse it (time.ParseDuration("") fails), so it cannot decode the Queue at all."""
    if value is None:
        return None
    seconds = duration_seconds(value)
    return seconds if seconds is not None else repr(value)


def _line(text: str) -> str:
    """One table line per result: a tenant writes its pods' condition messages (vCluster copies them to the host
    pod), and a line break there would print a line of its own, a forged `pass` row among them."""
    return " ".join(text.splitlines()).replace("\t", " ")


def _same_number(actual: Any, declared: float) -> bool:
    try:
        return math.isclose(float(actual), float(declared), rel_tol=1e-9, abs_tol=1e-9)
    except (TypeError, ValueError):
        return False


__all__ = ["CheckResult", "KubeError", "VerifyReport", "verify_stack"]
