"""camelCase props as the engine (and a manifest) hands them to policies, built from small parts.

`engine()` wraps props the way the Analyzer servicer does (`unknown_checking_proxy`), so a rule
that uses `isinstance(x, dict)` or touches an unknown value fails here as it would under Pulumi.
"""

from __future__ import annotations

import copy
from typing import Any

from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from kaistack.guardrails.capacity_adapter import Declaration, declaration
from kaistack.guardrails.facts import StackFacts, TenantFacts
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.settings import Settings

UNKNOWN = UNKNOWN_STRING_VALUE
KAI = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"

TYPES = {
    "Pod": "kubernetes:core/v1:Pod",
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "ReplicaSet": "kubernetes:apps/v1:ReplicaSet",
    "DaemonSet": "kubernetes:apps/v1:DaemonSet",
    "Job": "kubernetes:batch/v1:Job",
    "CronJob": "kubernetes:batch/v1:CronJob",
    "PyTorchJob": "kubernetes:kubeflow.org/v1:PyTorchJob",
    "JobSet": "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
    "Release": "kubernetes:helm.sh/v3:Release",
    "Chart": "kubernetes:helm.sh/v4:Chart",
    "Queue": "kubernetes:scheduling.run.ai/v2:Queue",
    "Platform": "kaistack:index:Platform",
}


def engine(props: dict[str, Any]) -> Any:
    return unknown_checking_proxy(copy.deepcopy(props))


def container(
    name: str = "main",
    image: str = "ubuntu",
    gpus: int | None = None,
    args: list[str] | None = None,
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": image, "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
    if gpus is not None:
        c["resources"]["limits"] = {"nvidia.com/gpu": str(gpus)}
        c["resources"]["requests"]["nvidia.com/gpu"] = str(gpus)
    if args is not None:
        c["args"] = args
    if command is not None:
        c["command"] = command
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return c


def pod_template(
    *,
    queue: str | None = "team-a",
    scheduler: str | None = KAI,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    meta_labels = dict(labels or {})
    if queue is not None:
        meta_labels[QUEUE_LABEL] = queue
    spec: dict[str, Any] = {"containers": containers if containers is not None else [container(gpus=1)]}
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    meta: dict[str, Any] = {"labels": meta_labels}
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": spec}


def pod(name: str = "p", namespace: str = "default", **template: Any) -> dict[str, Any]:
    t = pod_template(**template)
    meta = {"name": name, "namespace": namespace, **t["metadata"]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": t["spec"]}


def deployment(
    name: str = "d", namespace: str = "default", top_labels: dict[str, str] | None = None, **template: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": top_labels or {}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": pod_template(**template)},
    }


def queue(
    name: str, parent: str | None = None, gpu: tuple[float, float, float] = (-1, -1, 1), **blocks: Any
) -> dict[str, Any]:
    resources = {"gpu": dict(zip(("quota", "limit", "overQuotaWeight"), gpu, strict=True))}
    for r in ("cpu", "memory"):
        resources[r] = blocks.get(r, {"quota": -1, "limit": -1, "overQuotaWeight": 1})
    spec: dict[str, Any] = {"resources": resources}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def release(name: str, chart: str, values: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    return {"chart": chart, "name": name, "namespace": namespace, "values": values, "compat": "true"}


def res(kind: str, props: dict[str, Any], name: str | None = None, **kw: Any) -> Res:
    """A Res wrapped like engine props; `kind` is a TYPES key."""
    meta = props.get("metadata") or {}
    rname = name or meta.get("name") or props.get("name") or kind.lower()
    urn = kw.pop("urn", f"urn:pulumi:dev::kaistack::{TYPES[kind]}::{rname}")
    return Res(type=TYPES[kind], name=rname, props=engine(props), urn=urn, **kw)


FACTS = StackFacts(
    leaf_queues=frozenset({"team-a", "team-b", "default-queue"}),
    tenants=(TenantFacts("alpha", "vcluster-alpha", ("team-a",)), TenantFacts("beta", "vcluster-beta", ("team-b",))),
    gpu_sharing=True,
    gpu_memory_mib=(11441,),
)


# kai-capacity's adapter on one 1-GPU pool and one leaf queue, team-a (the adapter's mutation-gap tests).
ONE_GPU_POOL = {"name": "gpu", "count": 1, "gpus": 1, "gpuMemoryMiB": 16000, "cpu": "8", "memory": "32Gi"}


def one_pool_facts(**kw: Any) -> StackFacts:
    return StackFacts(**{"leaf_queues": frozenset({"team-a"}), "node_pools": (ONE_GPU_POOL,), **kw})


def planned(*resources: Res, facts: StackFacts | None = None) -> Declaration:
    """The declaration the adapter rebuilds from `resources` and queue team-a."""
    return declaration([*resources, res("Queue", queue("team-a"))], Settings(), facts or one_pool_facts())
