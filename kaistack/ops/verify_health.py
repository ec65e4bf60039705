"""`kaistack verify`'s health checks beyond a pod's phase: KAI's rollouts, the nodes, the tenants' control planes.

- A Deployment whose new pods crash-loop keeps its old replicas available, so availability alone passes a
  stalled rollout: `deployment_problems` asks what `kubectl rollout status` asks (kubernetes/kubectl@v0.35.0:
  pkg/polymorphichelpers/rollout_status.go L75-89): the controller has seen the latest generation, every
  replica runs the current template, and Progressing has not given up (ProgressDeadlineExceeded).
- `node-ready`: a pod on a node that stopped reporting stays Running until its not-ready/unreachable
  toleration runs out (300 s unless the pod sets its own: `--default-not-ready-toleration-seconds` in
  kubernetes/kubernetes@aed80471:plugin/pkg/admission/defaulttolerationseconds/admission.go, a commit of
  master), so the nodes under the checked pods must be Ready.
- `workload-rollout`: the same question for each declared Deployment. On the host it reads the Deployment,
  since a new template whose pods the quota or admission refuses leaves no pod behind to fail the pod checks.
  A tenant's Deployment lives in its vCluster, out of the host's sight: there, the synced pods' pod-template-hash
  labels (DefaultDeploymentUniqueLabelKey, k8s.io/api apps/v1 types.go: one value per template) tell that pods of an
  older template remain, and nothing tells of a new pod the vCluster could not sync.
- `vcluster-control-plane`: a tenant's synced pods run on the host without their vCluster, so they pass
  every pod check while the tenant's API server is down. The chart names it after the release
  (loft-sh/vcluster@v0.36.1:chart/templates/statefulset.yaml L4-6), a StatefulSet while the volume claim
  is on, which `auto` makes it with the default embedded database (chart/templates/_persistence.tpl L4-6,
  L33-41; kaistack keeps those defaults, see kaistack.declaration.tenant_sizing), and components/tenant.py
  names the release after the tenant: its pod is `<tenant>-0` in the tenant's host namespace.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kaistack.declaration.model import StackConfig, Tenant, Workload
from kaistack.kube import resources as k8s
from kaistack.kube.client import KubeAPIError, KubeClient
from kaistack.ops.verify_common import CheckResult, list_objects, pod_name, pod_ready, pod_state

# The Deployment controller's reason when a rollout stops progressing (TimedOutReason,
# kubernetes/kubectl@v0.35.0:pkg/util/deployment/deployment.go L56).
PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"
# The label the Deployment controller puts on each ReplicaSet's pods, one value per template.
TEMPLATE_HASH_LABEL = "pod-template-hash"


def deployment_problems(deployment: Mapping[str, Any]) -> list[str]:
    """What keeps a Deployment from being rolled out and available; empty when it is."""
    metadata = deployment.get("metadata") or {}
    spec = deployment.get("spec") or {}
    status = deployment.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    wanted = spec.get("replicas", 1)
    problems = []
    generation, observed = metadata.get("generation"), status.get("observedGeneration")
    if generation is not None and (observed or 0) < generation:
        problems.append(
            f"status is for generation {observed or 'none'} of {generation} "
            "(the Deployment controller has not processed the latest spec)"
        )
    available = status.get("availableReplicas") or 0
    condition = conditions.get("Available")
    if available < wanted or (condition is not None and condition.get("status") != "True"):
        detail = f"{available}/{wanted} available"
        if condition is not None and condition.get("message"):
            detail += f" ({condition['message']})"
        problems.append(detail)
    updated = status.get("updatedReplicas") or 0
    if wanted > 0 and updated != wanted:
        problems.append(f"{updated}/{wanted} replicas updated to the current template")
    elif (status.get("replicas") or 0) > updated:
        old = status["replicas"] - updated
        problems.append(f"{old} old replica{'s' * (old != 1)} still running")
    elif available < updated and available >= wanted:
        # kubectl rollout status waits for every updated replica, not only the wanted ones
        # (kubernetes/kubectl pkg/polymorphichelpers/rollout_status.go, DeploymentStatusViewer.Status): a
        # Deployment just scaled to 0 still counts the replica its ReplicaSet has not stopped yet.
        problems.append(f"{available} of {updated} updated replicas available ({wanted} wanted)")
    progressing = conditions.get("Progressing")
    if progressing is not None and (
        progressing.get("status") == "False" or progressing.get("reason") == PROGRESS_DEADLINE_EXCEEDED
    ):
        problems.append(
            f"Progressing {progressing.get('status')}: {progressing.get('reason') or 'no reason'}"
            + (f" ({progressing['message']})" if progressing.get("message") else "")
        )
    if problems:
        namespace, name = metadata.get("namespace") or "default", metadata.get("name") or "?"
        problems.append(f"see `kubectl -n {namespace} rollout status deployment/{name}` and its new pods' logs")
    return problems


def check_nodes(client: KubeClient, pods: Iterable[Mapping[str, Any]]) -> tuple[list[CheckResult], list[str]]:
    """`node-ready` for each node that runs (or is starting) one of the checked pods; a note instead when
    the credentials may not read nodes (a namespaced role can verify everything else)."""
    by_node: dict[str, set[str]] = defaultdict(set)
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if node and phase in ("Pending", "Running") and not (pod.get("metadata") or {}).get("deletionTimestamp"):
            by_node[node].add(pod_name(pod))
    results = []
    forbidden: list[tuple[str, KubeAPIError]] = []
    for node in sorted(by_node):
        listed = _listed(by_node[node])
        try:
            obj = client.get(k8s.Node, node)
        except KubeAPIError as err:
            if err.status == 403:
                # RBAC may name nodes one by one (resourceNames): what the other nodes showed is kept.
                forbidden.append((node, err))
                continue
            if err.status != 404:
                raise
            detail = f"Node not found: its pods {listed} are orphaned and will be deleted; check the node pool"
            results.append(CheckResult("node-ready", f"node {node}", False, detail))
            continue
        ready: Mapping[str, Any] = next(
            (c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), {}
        )
        if ready.get("status") == "True":
            results.append(CheckResult("node-ready", f"node {node}", True, f"Ready; runs {listed}"))
            continue
        why = f"Ready {ready.get('status')}: {ready.get('reason') or 'no reason'}" if ready else "no Ready condition"
        if ready.get("message"):
            why += f", {str(ready['message'])[:120]}"
        since = f" since {ready['lastTransitionTime']}" if ready.get("lastTransitionTime") else ""
        detail = (
            f"NotReady ({why}){since}; its pods {listed} stay Running until their not-ready toleration runs out "
            f"(300 s by default), then are evicted: restore the kubelet (`kubectl describe node {node}`) or drain it"
        )
        results.append(CheckResult("node-ready", f"node {node}", False, detail))
    notes = []
    if forbidden:
        names = ", ".join(node for node, _ in forbidden[:3]) + (" ..." if len(forbidden) > 3 else "")
        notes.append(
            f"node-ready: not checked for {names}: {forbidden[0][1]}; grant `get` on nodes to check the nodes' "
            "readiness"
        )
    return results, notes


def check_workload_rollouts(
    config: StackConfig, client: KubeClient, pods_of: Callable[[Workload], list[dict[str, Any]]]
) -> list[CheckResult]:
    """`workload-rollout`: each declared Deployment with replicas runs its current template everywhere."""
    results = []
    listed: dict[str, dict[str, dict[str, Any]]] = {}
    for work in config.workloads:
        if work.kind != "Deployment" or work.pod_count == 0:
            continue
        if work.tenant is not None:
            results.append(_tenant_rollout(work, pods_of(work)))
            continue
        if work.namespace not in listed:
            found = list_objects(client, k8s.Deployment, work.namespace)
            listed[work.namespace] = {(d.get("metadata") or {}).get("name", ""): d for d in found}
        deployment = listed[work.namespace].get(work.name)
        subject = work.name
        if deployment is None:
            detail = f"Deployment {work.namespace}/{work.name} not found: run `pulumi up` or see its preview"
            results.append(CheckResult("workload-rollout", subject, False, detail))
            continue
        results.append(rollout_result("workload-rollout", subject, deployment))
    return results


def rollout_result(check: str, subject: str, deployment: Mapping[str, Any]) -> CheckResult:
    """A Deployment's rollout as one check line: its problems, or how many replicas are available."""
    problems = deployment_problems(deployment)
    wanted = (deployment.get("spec") or {}).get("replicas", 1)
    available = (deployment.get("status") or {}).get("availableReplicas") or 0
    detail = "; ".join(problems) or f"{available}/{wanted} available, rollout complete"
    return CheckResult(check, subject, not problems, detail)


def _tenant_rollout(work: Workload, pods: list[dict[str, Any]]) -> CheckResult:
    subject = f"{work.tenant}/{work.name}"
    by_template: dict[str, list[str]] = defaultdict(list)
    # A finished pod (an evicted one is Failed) stays until garbage-collected and holds no template's place.
    pods = [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        by_template[str(labels.get(TEMPLATE_HASH_LABEL, "?"))].append(pod_name(pod))
    if len(by_template) <= 1:
        detail = f"{len(pods)} synced pods of one template" if pods else "no synced pods (see workload-running)"
        return CheckResult("workload-rollout", subject, True, detail)
    templates = "; ".join(f"{h}: {_listed(names)}" for h, names in sorted(by_template.items()))
    detail = (
        f"pods of {len(by_template)} templates ({templates}): a rollout has not finished; inside the vCluster "
        f"`kubectl -n {work.namespace} rollout status deployment/{work.name}`"
    )
    return CheckResult("workload-rollout", subject, False, detail)


def control_plane_pod(tenant: Tenant, pods_in: Callable[[str], list[dict[str, Any]]]) -> dict[str, Any] | None:
    """The tenant's vCluster pod `<tenant>-0` in its host namespace, unless it is missing or being deleted."""
    name = f"{tenant.name}-0"
    pod = next((p for p in pods_in(tenant.host_namespace) if pod_name(p) == name), None)
    return None if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp") else pod


def check_vcluster_control_planes(
    config: StackConfig, pods_in: Callable[[str], list[dict[str, Any]]]
) -> list[CheckResult]:
    """`vcluster-control-plane`: each tenant's vCluster pod is Running and Ready."""
    results = []
    for tenant in config.tenants:
        namespace = tenant.host_namespace
        subject = f"{tenant.name} ({namespace})"
        pod = control_plane_pod(tenant, pods_in)
        if pod is None:
            detail = (
                f"pod {tenant.name}-0 not found (or being deleted) in {namespace}: the tenant's API server is down "
                f"(synced pods keep running, nothing new syncs); see `kubectl -n {namespace} describe statefulset "
                f"{tenant.name}`"
            )
            results.append(CheckResult("vcluster-control-plane", subject, False, detail))
        elif (pod.get("status") or {}).get("phase") == "Running" and pod_ready(pod):
            node = (pod.get("spec") or {}).get("nodeName") or "?"
            results.append(
                CheckResult("vcluster-control-plane", subject, True, f"{pod_name(pod)} Running and Ready on {node}")
            )
        else:
            detail = (
                f"{pod_state(pod)}; the tenant's API server is down while it is not Ready "
                "(synced pods keep running, nothing new syncs)"
            )
            results.append(CheckResult("vcluster-control-plane", subject, False, detail))
    return results


def _listed(names: Iterable[str]) -> str:
    ordered = sorted(names)
    more = f" and {len(ordered) - 3} more" if len(ordered) > 3 else ""
    return ", ".join(ordered[:3]) + more
