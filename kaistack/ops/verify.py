"""`kaistack verify`: after `pulumi up`, does the live cluster schedule the way the stack declares?

Read-only checks against the Kubernetes API (`kaistack.kube.client`, over lightkube):

- `kai-components`: KAI's Deployments in `kai.namespace` exist and are available (v0.17's operator
  creates admission, binder, kai-operator, kai-scheduler-default, pod-grouper, podgroup-controller,
  queue-controller).
- `queue`: every declared queue (plus KAI's default pair) exists as a Queue (`kai_api.QUEUE`)
  with the declared parent, priority and gpu/cpu/memory quota/limit/overQuotaWeight (an omitted field
  counts as 0, as KAI reads it).
- `workload-running`, `workload-scheduler`, `workload-pod-group`: each declared workload has its pods
  Running (Succeeded also counts for Pod/Job/PyTorchJob), with `spec.schedulerName: kai-scheduler`
  and the `pod-group-name` annotation. Tenant workloads are found in the tenant's host namespace
  through vCluster's `vcluster.loft.sh/object-*` annotations.
- `gpu-group`: fractional pods carry a `runai-gpu-group` label, and under `placementStrategy: binpack`
  no two GPU groups on one node hold fractions that would fit on one GPU together. KAI's gpupack opens
  a new group only when the pod fits no existing one, so (without pod departures) any two groups on a
  node sum to more than one GPU; a pair that fits together means the pods were spread. When the
  placement checker is available, the live groups (as multisets of workload names) must also equal
  the ones it plans (`kaistack.capacity.plan` + `placement.simulate`); nodes are not compared, since
  the checker's node names are its own.
- `vcluster-owner-refs`: pods synced from each tenant's vCluster carry no ownerReferences
  (`experimental.syncSettings.setOwner: false`, vcluster-and-gpu.md §1.1).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaistack.capacity.plan import plan as capacity_plan
from kaistack.declaration import kai_api, vcluster_api
from kaistack.declaration.kai_api import SCHEDULER_NAME
from kaistack.declaration.marks import WORKLOAD_LABEL
from kaistack.declaration.model import Queue, StackConfig, Tenant, Workload
from kaistack.kube import resources as k8s
from kaistack.kube.client import Kind, KubeAPIError, KubeClient, KubeError
from kaistack.progress import Progress
from placement import simulate

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


@dataclass(frozen=True)
class CheckResult:
    check: str
    subject: str
    ok: bool
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "subject": self.subject, "ok": self.ok, "detail": self.detail}


@dataclass
class VerifyReport:
    stack: str
    server: str
    kubeconfig: str
    results: list[CheckResult] = field(default_factory=list)

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
        }

    def table(self) -> str:
        rows = [("CHECK", "SUBJECT", "RESULT", "DETAIL")]
        rows += [(r.check, r.subject, "pass" if r.ok else "FAIL", r.detail) for r in self.results]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d}".rstrip() for a, b, c, d in rows]
        verdict = "all checks passed" if self.ok else f"{len(self.failures)} of {len(self.results)} checks FAILED"
        return "\n".join([f"verify stack {self.stack} at {self.server} ({self.kubeconfig})", *lines, verdict])


# --- kubeconfig -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kubeconfig:
    text: str
    origin: str  # shown to users: where the kubeconfig came from
    base_dir: Path


def resolve_kubeconfig(
    stack: str,
    explicit: Path | None,
    project_dir: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> Kubeconfig:
    """`--kubeconfig`, else `$KUBECONFIG` (its first existing file), else `pulumi stack output kubeconfig`."""
    environ = os.environ if environ is None else environ
    if explicit is not None:
        return _kubeconfig_file(explicit, f"--kubeconfig {explicit}")
    for part in environ.get("KUBECONFIG", "").split(os.pathsep):
        if part and Path(part).expanduser().is_file():
            return _kubeconfig_file(Path(part).expanduser(), f"$KUBECONFIG {part}")
    pulumi = which("pulumi")
    if pulumi:
        command = [pulumi, "stack", "output", "kubeconfig", "--show-secrets", "--stack", stack]
        try:
            done = subprocess.run(command, capture_output=True, text=True, cwd=project_dir, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise KubeError(f"`pulumi stack output kubeconfig` failed: {err}") from err
        if done.returncode != 0 or not done.stdout.strip():
            raise KubeError(f"`pulumi stack output kubeconfig --stack {stack}` failed: {done.stderr.strip()[:300]}")
        return Kubeconfig(done.stdout, f"pulumi stack output kubeconfig --stack {stack}", project_dir or Path.cwd())
    raise KubeError(
        "no kubeconfig: pass --kubeconfig FILE, set KUBECONFIG, or install the Pulumi CLI so "
        f"`pulumi stack output kubeconfig --show-secrets --stack {stack}` can provide it"
    )


def _kubeconfig_file(path: Path, origin: str) -> Kubeconfig:
    try:
        return Kubeconfig(path.read_text(), origin, path.resolve().parent)
    except OSError as err:
        raise KubeError(f"cannot read kubeconfig {path}: {err.strerror}") from err


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
        pods = _WorkloadPods(config, client)
        report.results += check_workloads(config, pods)
        report.results += check_gpu_groups(config, client, pods, expected_gpu_groups(config))
    with progress.step(f"checking {len(config.tenants)} vClusters' synced pods"):
        report.results += check_vcluster_owner_refs(config, client)
    return report


def check_kai_components(config: StackConfig, client: KubeClient) -> list[CheckResult]:
    namespace = config.kai.namespace
    deployments = {d["metadata"]["name"]: d for d in _list(client, k8s.Deployment, namespace)}
    results = []
    for name in sorted(set(KAI_DEPLOYMENTS) | set(deployments)):
        subject = f"{namespace}/{name}"
        if name not in deployments:
            results.append(CheckResult("kai-components", subject, False, "Deployment not found"))
            continue
        deployment = deployments[name]
        wanted = (deployment.get("spec") or {}).get("replicas", 1)
        status = deployment.get("status") or {}
        available = status.get("availableReplicas") or 0
        condition = next((c for c in status.get("conditions") or [] if c.get("type") == "Available"), None)
        ok = available >= wanted and (condition is None or condition.get("status") == "True")
        detail = f"{available}/{wanted} available"
        if not ok and condition is not None and condition.get("message"):
            detail += f" ({condition['message']})"
        results.append(CheckResult("kai-components", subject, ok, detail))
    return results


def check_queues(config: StackConfig, client: KubeClient) -> list[CheckResult]:
    try:
        live = {q["metadata"]["name"]: q for q in client.list(k8s.Queue)}
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
                drift.append(f"resources.{kind}.{key} is {_num(actual)} (declared {_num(declared)})")
    return drift


def check_workloads(config: StackConfig, pods: _WorkloadPods) -> list[CheckResult]:
    results = []
    for work in config.workloads:
        subject = work.name if work.tenant is None else f"{work.tenant}/{work.name}"
        expected = work.pod_count
        matched = pods.of(work)
        if expected == 0:
            results.append(CheckResult("workload-running", subject, True, "0 replicas declared"))
            continue
        done = {"Running", "Succeeded"} if work.kind != "Deployment" else {"Running"}
        running = [p for p in matched if (p.get("status") or {}).get("phase") in done]
        waiting = [p for p in matched if p not in running]
        ok = len(running) >= expected
        detail = f"{len(running)}/{expected} pods {'/'.join(sorted(done))}"
        if waiting:
            detail += "; " + "; ".join(_pod_state(p) for p in waiting[:3])
        elif not matched:
            detail += f"; no pods found in namespace {pods.namespace_of(work)}"
        results.append(CheckResult("workload-running", subject, ok, detail))
        if not matched:
            continue
        wrong = [p for p in matched if (p.get("spec") or {}).get("schedulerName") != SCHEDULER_NAME]
        scheduler_detail = f"{_pods(len(matched))} scheduled by {SCHEDULER_NAME}"
        if wrong:
            scheduler_detail = "; ".join(
                f"{_name(p)} uses {(p.get('spec') or {}).get('schedulerName') or 'default-scheduler'}"
                for p in wrong[:3]
            )
        results.append(CheckResult("workload-scheduler", subject, not wrong, scheduler_detail))
        missing = [p for p in matched if not _annotations(p).get(kai_api.POD_GROUP_NAME)]
        groups = {_annotations(p).get(kai_api.POD_GROUP_NAME) for p in matched} - {None, ""}
        group_detail = (
            f"{kai_api.POD_GROUP_NAME} on {_pods(len(matched))} ({len(groups)} PodGroup{'s' * (len(groups) != 1)})"
        )
        if missing:
            group_detail = f"no {kai_api.POD_GROUP_NAME} annotation on {', '.join(_name(p) for p in missing[:3])}"
        results.append(CheckResult("workload-pod-group", subject, not missing, group_detail))
    return results


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
    pods: _WorkloadPods,
    expected: Counter[tuple[str, ...]] | None = None,
) -> list[CheckResult]:
    sharing = [w for w in config.workloads if w.shares_gpu and w.pod_count]
    if not sharing:
        return []
    results = []
    declared_uids: dict[str, str] = {}
    live_groups: dict[str, list[str]] = defaultdict(list)
    all_placed = True
    for work in sharing:
        matched = pods.of(work)
        placed = [p for p in matched if (p.get("spec") or {}).get("nodeName")]
        all_placed = all_placed and len(placed) >= work.pod_count
        for pod in placed:
            for group in _gpu_groups(pod):
                live_groups[group].append(work.name)
        unlabelled = [p for p in placed if not _gpu_groups(p)]
        subject = work.name if work.tenant is None else f"{work.tenant}/{work.name}"
        if unlabelled:
            listed = ", ".join(_name(p) for p in unlabelled[:3])
            results.append(CheckResult("gpu-group", subject, False, f"no {kai_api.GPU_GROUP_LABEL} label on {listed}"))
        for pod in placed:
            declared_uids[pod["metadata"].get("uid") or _name(pod)] = subject
    # Every fractional pod on a shared GPU, declared or not, counts toward its group's load; the
    # group's reservation pod (kai-resource-reservation, a whole nvidia.com/gpu) carries the label too.
    shared = [
        p
        for p in client.list(k8s.Pod, labels={kai_api.GPU_GROUP_LABEL: None})
        if _gpu_groups(p) and {kai_api.GPU_FRACTION, kai_api.GPU_MEMORY} & set(_annotations(p))
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
        if not any(p["metadata"].get("uid", _name(p)) in declared_uids for ps in groups.values() for p in ps):
            continue
        loads = {g: _group_load(ps, client, node, node_memory) for g, ps in groups.items()}
        names = {g: sorted(_name(p) for p in ps) for g, ps in groups.items()}
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
                f"pods {', '.join(names[a])} (GPU group {a[:8]}, {_num(loads[a])} GPU) and "
                f"{', '.join(names[b])} (GPU group {b[:8]}, {_num(loads[b])} GPU) fit one GPU but are on two; "
                "binpack shares one GPU"
            )
            results.append(CheckResult("gpu-group", f"node {node}", False, detail))
        else:
            shown = ", ".join(f"{g[:8]}: {_num(loads[g]) if loads[g] is not None else '?'} GPU" for g in ordered)
            results.append(CheckResult("gpu-group", f"node {node}", True, f"{len(groups)} GPU groups ({shown})"))
    if expected is not None and all_placed:
        actual = Counter(tuple(sorted(names)) for names in live_groups.values())
        ok = actual == expected
        detail = f"GPU groups as the checker planned: {_show_groups(expected)}"
        if not ok:
            detail = f"checker plans {_show_groups(expected)}; cluster has {_show_groups(actual)}"
        results.append(CheckResult("gpu-group", "placement checker", ok, detail))
    return results


def _show_groups(groups: Counter[tuple[str, ...]]) -> str:
    shown = sorted(" + ".join(names) for names, n in groups.items() for _ in range(n))
    return ", ".join(f"[{g}]" for g in shown) or "none"


def check_vcluster_owner_refs(config: StackConfig, client: KubeClient) -> list[CheckResult]:
    results = []
    for tenant in config.tenants:
        namespace = tenant.host_namespace
        pods = client.list(k8s.Pod, namespace=namespace)
        synced = [p for p in pods if vcluster_api.MANAGED_BY_LABEL in _labels(p)]
        owned = [p for p in synced if (p.get("metadata") or {}).get("ownerReferences")]
        subject = f"{tenant.name} ({namespace})"
        if owned:
            first = owned[0]["metadata"]["ownerReferences"][0]
            detail = (
                f"{len(owned)} of {len(synced)} synced pods have ownerReferences (e.g. {_name(owned[0])} -> "
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


class _WorkloadPods:
    """Pods per declared workload: host pods by namespace, tenant pods via vCluster's object annotations."""

    def __init__(self, config: StackConfig, client: KubeClient) -> None:
        self._config = config
        self._client = client
        self._by_namespace: dict[str, list[dict[str, Any]]] = {}

    def namespace_of(self, work: Workload) -> str:
        return work.namespace if work.tenant is None else self._tenant(work).host_namespace

    def of(self, work: Workload) -> list[dict[str, Any]]:
        pods = self._pods(self.namespace_of(work))
        if work.tenant is not None:
            # The host namespace holds one tenant's vCluster; synced pods carry its managed-by label.
            pods = [
                p
                for p in pods
                if vcluster_api.MANAGED_BY_LABEL in _labels(p)
                and _annotations(p).get(vcluster_api.OBJECT_NAMESPACE_ANNOTATION, work.namespace) == work.namespace
            ]
        pods = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
        labelled = [p for p in pods if _labels(p).get(WORKLOAD_LABEL) == work.name]
        if labelled or any(WORKLOAD_LABEL in _labels(p) for p in pods):
            return labelled
        pattern = _name_pattern(work)
        return [p for p in pods if pattern.fullmatch(_virtual_name(p))]

    def _tenant(self, work: Workload) -> Tenant:
        return self._config.tenant(str(work.tenant))

    def _pods(self, namespace: str) -> list[dict[str, Any]]:
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


def _list(client: KubeClient, kind: Kind, namespace: str) -> list[dict[str, Any]]:
    try:
        return client.list(kind, namespace=namespace)
    except KubeAPIError as err:
        if err.status == 404:
            return []
        raise


def _labels(pod: Mapping[str, Any]) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def _annotations(pod: Mapping[str, Any]) -> dict[str, str]:
    return (pod.get("metadata") or {}).get("annotations") or {}


def _name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name", "?"))


def _virtual_name(pod: Mapping[str, Any]) -> str:
    return _annotations(pod).get(vcluster_api.OBJECT_NAME_ANNOTATION) or _name(pod)


def _gpu_groups(pod: Mapping[str, Any]) -> list[str]:
    labels = _labels(pod)
    if labels.get(kai_api.GPU_GROUP_LABEL):
        return [labels[kai_api.GPU_GROUP_LABEL]]
    return sorted(k.split("/", 1)[1] for k in labels if k.startswith(f"{kai_api.GPU_GROUP_LABEL}/"))


def _device_count(pod: Mapping[str, Any]) -> int:
    try:
        return int(_annotations(pod).get(kai_api.GPU_FRACTION_NUM_DEVICES, "1"))
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
    annotations = _annotations(pod)
    try:
        if kai_api.GPU_FRACTION in annotations:
            return float(annotations[kai_api.GPU_FRACTION])
        if kai_api.GPU_MEMORY in annotations:
            memory = node_memory()
            if not memory:
                return None
            return math.ceil(int(annotations[kai_api.GPU_MEMORY]) / memory * 100) / 100
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


def _pods(count: int) -> str:
    return f"{count} pod{'s' * (count != 1)}"


def _pod_state(pod: Mapping[str, Any]) -> str:
    status = pod.get("status") or {}
    phase = status.get("phase") or "Unknown"
    condition = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled" and c.get("status") != "True"),
        None,
    )
    if condition:
        message = str(condition.get("message") or "")[:120]
        return f"{_name(pod)} {phase} ({condition.get('reason', 'Unschedulable')}: {message})"
    return f"{_name(pod)} {phase}"


def _same_number(actual: Any, declared: float) -> bool:
    try:
        return math.isclose(float(actual), float(declared), rel_tol=1e-9, abs_tol=1e-9)
    except (TypeError, ValueError):
        return False


def _num(value: Any) -> str:
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return str(value)


__all__ = [
    "CheckResult",
    "KubeError",
    "Kubeconfig",
    "VerifyReport",
    "resolve_kubeconfig",
    "verify_stack",
]
