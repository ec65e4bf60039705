"""GPU requests in a custom kind whose pods kaistack cannot see: an Argo Workflow's `templates[].container`, a
Tekton TaskRun's `steps[].computeResources`, a KServe predictor's `containers`, a TrainJob's `resourcesPerNode`, a
SparkApplication's `executor.gpu`. Their controllers build the pods, so the rules that read a pod template find
none, and such an object passed every rule while its pods could go to the default scheduler, outside KAI's queues
and GPU accounting (a review found all five). kaistack does not model each controller; it holds such an object to
what it can see: it must name KAI's scheduler somewhere (`schedulerName: kai-scheduler`, as Argo's
`spec.schedulerName`, Tekton's `podTemplate.schedulerName` or KServe's predictor pass it to their pods).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kaistack.guardrails.podspec import (
    FRACTION,
    MEMORY,
    POLICY_ENGINE_GROUPS,
    Res,
    api_group,
    gpu_resource_asked,
    known,
    workload,
)

__all__ = ["opaque_gpu_request"]

# API groups whose objects hold pod specs as patterns or configuration, not pods to run: policy engines (a
# Kyverno rule matching `nvidia.com/gpu`), charts' values (judged where they are rendered), KAI's and NVIDIA's own.
NOT_POD_GROUPS = POLICY_ENGINE_GROUPS | {
    "reports.kyverno.io", "wgpolicyk8s.io", "helm.sh", "helm.toolkit.fluxcd.io", "source.toolkit.fluxcd.io",
    "scheduling.run.ai", "nvidia.com", "run.ai",
}  # fmt: skip
# Kubernetes' own groups (kubectl api-versions on a v1.35 cluster); a project's group under k8s.io
# (sparkoperator.k8s.io, jobset.x-k8s.io) is a custom kind like any other.
KUBERNETES_GROUPS = frozenset(
    {
        "core", "apps", "batch", "autoscaling", "policy", "extensions", "admissionregistration.k8s.io",
        "apiextensions.k8s.io", "apiregistration.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
        "certificates.k8s.io", "coordination.k8s.io", "discovery.k8s.io", "events.k8s.io",
        "flowcontrol.apiserver.k8s.io", "internal.apiserver.k8s.io", "networking.k8s.io", "node.k8s.io",
        "rbac.authorization.k8s.io", "resource.k8s.io", "scheduling.k8s.io", "storage.k8s.io",
        "storagemigration.k8s.io", "metrics.k8s.io", "snapshot.storage.k8s.io",
    }
)  # fmt: skip
_MAX_DEPTH = 32
_MAX_NODES = 200_000  # a bound on the walk over a hostile object; beyond it the object is not judged


def not_pods(resource_type: str) -> bool:
    """Objects of Kubernetes' own API groups (a Node's allocatable GPUs, a DRA claim) and of the groups above are no
    workload whose pods kaistack has not found; neither is a TrainJob, whose pods come from its runtime's template
    (judged there: KAI's pod-grouper reads the TrainJob's labels through its JobSet, KAI@v0.17.0
    pkg/podgrouper/podgrouper/plugins/skiptopowner/skiptopowner.go:44-64)."""
    group = api_group(resource_type)
    return group is None or group in KUBERNETES_GROUPS or group in NOT_POD_GROUPS or resource_type.endswith(":TrainJob")


def opaque_gpu_request(res: Res, scheduler_name: str) -> str | None:
    """Where an object of a custom kind, in which kaistack finds no pod template, asks for GPUs (a path), when
    nothing in it names `scheduler_name`; None otherwise."""
    if not_pods(res.type) or workload(res) is not None:
        return None
    found: str | None = None
    names_scheduler = False
    stack: list[tuple[Any, str, int]] = [(res.props, "", 0)]
    seen = 0
    while stack:
        node, path, depth = stack.pop()
        seen += 1
        if seen > _MAX_NODES or depth > _MAX_DEPTH:
            return None
        if isinstance(node, Mapping):
            if known(node, "schedulerName") == scheduler_name:
                names_scheduler = True
            if found is None:
                found = _gpu_here(node, path)
            for key in node:
                if path == "" and key == "status":
                    continue  # what a controller reports, not what is asked
                value = known(node, key)
                if _collection(value):
                    stack.append((value, f"{path}.{key}" if path else str(key), depth + 1))
        elif _collection(node):
            items = [(i, known(node, i)) for i in range(len(node))]
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in items if _collection(item))
    return None if names_scheduler else found


def _collection(value: Any) -> bool:
    # Engine props are Mapping/Sequence proxies, not dicts and lists.
    return isinstance(value, Mapping) or (isinstance(value, Sequence) and not isinstance(value, str | bytes))


def _gpu_here(node: Mapping[str, Any], path: str) -> str | None:
    """A GPU request in this mapping: a resource list's GPU key, Spark's `{name: nvidia.com/gpu, quantity}`, or KAI's
    share annotation."""
    key = gpu_resource_asked(node) if path.rpartition(".")[2] in ("limits", "requests") else None
    if key is not None:
        return f"{path}.{key}"
    name = known(node, "name")
    if isinstance(name, str) and "quantity" in node and gpu_resource_asked({name: known(node, "quantity")}):
        return f"{path}.name" if path else "name"
    if path.endswith("annotations") and (FRACTION in node or MEMORY in node):
        return f"{path}.{FRACTION if FRACTION in node else MEMORY}"
    return None
