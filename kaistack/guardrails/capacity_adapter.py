"""kai-capacity's adapter: the stack's resources -> the declaration the placement checker reads.

`kaistack.capacity.check` plans from a `StackConfig` (node pools, queues, tenants, workloads), so the
adapter rebuilds that declaration from what the stack actually registers:
- node pools (their GPUs, GPU memory, CPU, memory, pods, labels): the Platform component's `nodePools` props.
  Their taints are left out (and named): the rebuild has no EKS system node group for the CPU-only pods and
  no tolerations but the GPU one, so `kaistack check` and the pre-flight gate are where taints are checked.
  Nodes are planned as kaistack's own (kind/EKS), labelled kaistack.io/node-pool;
- queues: the stack's Queue resources (KAI's default pair from the Platform's `kai.defaultQueues`);
- tenants: the Platform's `tenants`; a workload's tenant from its label, provider or namespace;
- workloads: every KAI-scheduled Pod/Deployment/Job/PyTorchJob (StatefulSet/ReplicaSet as a Job:
  KAI groups them as one PodGroup per owner with minMember 1 and class train, as it does a Job).
- topology: the stack's Topology object (kai.scheduler/v1alpha1) and each workload's constraint where
  KAI's pod-grouper reads it (the top owner's `kai.scheduler/topology*` annotations, a Pod's own, a
  tenant gang's PodGroup spec.topologyConstraint) and its PyTorchJob segments (Worker template).
Workloads the model cannot express (invalid annotations, undeclared queues) are left out and named
in the note: kai-gpu-sharing-annotations / kai-queue-label / tenant-queue-binding report them. A
constraint on a topology the stack does not declare, or one KAI would refuse, is dropped and named too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaistack.declaration import kai_api
from kaistack.declaration.marks import PLATFORM_TYPE
from kaistack.guardrails.facts import StackFacts, through_vcluster, workload_tenant
from kaistack.guardrails.gpu_requests import fraction_ok as valid_fraction
from kaistack.guardrails.gpu_requests import positive_uint64 as valid_count
from kaistack.guardrails.gpu_requests import uint64_of
from kaistack.guardrails.podspec import (
    FRACTION,
    GPU_RESOURCE,
    MEMORY,
    NUM_DEVICES,
    PodTemplate,
    Res,
    Workload,
    builtin_kind,
    dig,
    mapping,
    queue_label,
    seq,
)
from kaistack.guardrails.rules import subject
from kaistack.guardrails.settings import Settings
from kaistack.guardrails.stack_model import CheckerUnavailable, queue_decls
from placement.quantity import Quantity, QuantityError, cpu_millis, memory_bytes

KAI_CLASSES = tuple(kai_api.PRIORITY_CLASSES)
_AS_JOB = ("Job", "StatefulSet", "ReplicaSet")
_DNS = re.compile(r"[^a-z0-9-]+")


def _dns(name: str) -> str:
    return _DNS.sub("-", name.lower()).strip("-")[:63].strip("-") or "x"


def _number(value: Any, default: float) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def _queue_resources(block: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    # KAI reads an omitted field as 0 (kai.md §3); kai-queue-tree reports the omission itself.
    return {
        r: {f: _number(mapping(block.get(r)).get(f), 0.0) for f in ("quota", "limit", "overQuotaWeight")}
        for r in ("gpu", "cpu", "memory")
    }


def _requests(t: PodTemplate) -> tuple[str, str, int]:
    """Summed container requests: cpu, memory and ephemeral-storage bytes (a missing request defaults to the
    limit, as the API server does)."""
    cpu = memory = storage = 0
    for c in t.containers():
        res = mapping(c.get("resources"))
        requests, limits = mapping(res.get("requests")), mapping(res.get("limits"))
        cpu += cpu_millis(requests.get("cpu", limits.get("cpu", 0)))
        memory += memory_bytes(requests.get("memory", limits.get("memory", 0)))
        storage += memory_bytes(requests.get("ephemeral-storage", limits.get("ephemeral-storage", 0)))
    return f"{cpu}m", str(memory), storage


_SIMULATED_KINDS = ("Pod", "Deployment", "Job", "PyTorchJob", "StatefulSet", "ReplicaSet")


def _gpus(t: PodTemplate) -> int:
    """Whole GPUs the containers' limits ask for; a value that is no quantity (the API server refuses it,
    `kaistack lint` names it) counts as none rather than stopping the check (`1e400` overflowed int())."""
    total = 0
    for c in t.containers():
        value = mapping(dig(c, "resources", "limits")).get(GPU_RESOURCE)
        if value is not None:
            try:
                gpus = Quantity.parse(value).value
            except QuantityError:
                continue
            if gpus.denominator == 1:  # an extended resource is whole or refused ("must be an integer")
                total += int(gpus)
    return total


def _workload(wl: Workload, t: PodTemplate, facts: StackFacts, name: str) -> dict[str, Any]:
    kind = "Job" if wl.kind in _AS_JOB else wl.kind
    ann = t.annotations
    cpu, memory, storage = _requests(t)
    work: dict[str, Any] = {"name": name, "kind": kind, "namespace": _dns(wl.namespace), "cpu": cpu, "memory": memory}
    if storage:
        work["ephemeralStorage"] = str(storage)
    first = t.containers()[0] if t.containers() else {}
    work["image"] = str(first.get("image") or "unknown")
    tenant, _ = workload_tenant(wl, facts.tenants or ())
    if tenant:
        work["tenant"] = tenant
    # Synced by a vCluster (setOwner: false) a pod has no owner on the host and is its own top owner, so
    # KAI's pod-grouper reads queue, priority and preemptibility from the pod alone.
    top_owner = not through_vcluster(wl, facts.tenants or ())
    owner = wl.owner_labels if top_owner else {}
    queue, _ = queue_label(wl, t, facts.queue_label_key, top_owner=top_owner, project=True)
    if queue:
        work["queue"] = queue
    spec = mapping(wl.res.props.get("spec"))
    if kind == "Deployment":
        work["replicas"] = int(_number(spec.get("replicas"), 1))
    elif kind == "Job":
        count = spec.get("parallelism") if wl.kind == "Job" else spec.get("replicas")
        work["replicas"] = int(_number(count, 1))
        if wl.kind == "Job" and spec.get("completions") is not None:
            work["completions"] = int(_number(spec.get("completions"), 1))
    elif kind == "PyTorchJob":
        roles = mapping(spec.get("pytorchReplicaSpecs"))
        master, worker = mapping(roles.get("Master")), mapping(roles.get("Worker"))
        work["pytorch"] = {
            "master": int(_number(master.get("replicas"), 1)) if master else 0,
            "workers": int(_number(worker.get("replicas"), 1)) if worker else 0,
        }
        minimum = dig(spec, "runPolicy", "schedulingPolicy", "minAvailable")
        if minimum is not None:
            work["pytorch"]["minAvailable"] = int(_number(minimum, 1))
    if _gpus(t):
        work["gpu"] = _gpus(t)
    if valid_fraction(ann.get(FRACTION)):
        work["gpuFraction"] = float(ann[FRACTION])
    if valid_count(ann.get(MEMORY)):
        work["gpuMemoryMiB"] = uint64_of(ann[MEMORY])
    if valid_count(ann.get(NUM_DEVICES)):
        work["gpuDevices"] = uint64_of(ann[NUM_DEVICES])
    label = kai_api.PRIORITY_CLASS_LABEL
    klass = owner.get(label) or t.labels.get(label) or t.spec.get("priorityClassName")
    if klass in KAI_CLASSES:
        work["priorityClass"] = klass
    preemptibility = owner.get(kai_api.PREEMPTIBILITY_LABEL) or t.labels.get(kai_api.PREEMPTIBILITY_LABEL)
    if preemptibility in ("preemptible", "non-preemptible"):
        work["preemptible"] = preemptibility == "preemptible"
    selector = {str(k): str(v) for k, v in mapping(t.spec.get("nodeSelector")).items()}
    if selector:
        work["nodeSelector"] = selector
    tolerations = [mapping(x) for x in seq(t.spec.get("tolerations"))]
    work["tolerateGpuTaint"] = any(
        x.get("key") == GPU_RESOURCE or (not x.get("key") and x.get("operator") == "Exists") for x in tolerations
    )
    return work


@dataclass(frozen=True)
class _Topology:
    name: str
    levels: tuple[str, ...]


def _topology(resources: Sequence[Res]) -> _Topology | None:
    """The stack's Topology object, when it has exactly one with usable levels."""
    found = [r for r in resources if r.type == kai_api.TOPOLOGY_CRD.pulumi_type]
    if len(found) != 1:
        return None
    props = found[0].props
    levels = tuple(str(mapping(level).get("nodeLabel") or "") for level in seq(dig(props, "spec", "levels")))
    name = dig(props, "metadata", "name")
    if not isinstance(name, str) or not levels or not all(levels):
        return None
    return _Topology(name, levels)


_ATOI = re.compile(r"[+-]?0*([0-9]{1,19})")


def _atoi(value: object) -> int | None:
    """Go's strconv.Atoi of an annotation (KAI's getSegmentSize, pytorch_grouper.go:240-260): ASCII digits with an
    optional sign and any leading zeros, within int64; None where it errs. str.isdigit() takes '²' or '٢' too."""
    if not isinstance(value, str) or not value.isascii() or (match := _ATOI.fullmatch(value)) is None:
        return None
    number = int(match.group(1)) * (-1 if value.startswith("-") else 1)
    return number if -(2**63) <= number < 2**63 else None


def _placement(topology: _Topology, source: Mapping[str, Any], required_key: str, preferred_key: str) -> Any:
    """{"required", "preferred"} from annotations (or a PodGroup constraint), None without any level.

    "invalid" when KAI would refuse it: a level outside the topology, or preferred above required.
    """
    required, preferred = source.get(required_key) or None, source.get(preferred_key) or None
    if required is None and preferred is None:
        return None
    levels = topology.levels
    if any(level is not None and level not in levels for level in (required, preferred)):
        return "invalid"
    if required is not None and preferred is not None and levels.index(preferred) < levels.index(required):
        return "invalid"
    return {k: v for k, v in (("required", required), ("preferred", preferred)) if v is not None}


def _constraints(
    wl: Workload, work: dict[str, Any], topology: _Topology | None, pod_groups: Mapping[str, Mapping[str, Any]]
) -> str | None:
    """Adds the workload's topology and segments to `work`; returns why a constraint was dropped, if one was."""
    if topology is None:
        return None
    if work["kind"] == "Pod":
        source: Mapping[str, Any] = wl.templates[0].annotations if wl.templates else {}
    elif work.get("tenant") is not None and work["kind"] == "PyTorchJob":
        group = next((t.annotations.get(kai_api.POD_GROUP_NAME) for t in wl.templates), None)
        spec = mapping(pod_groups.get(str(group)))
        constraint = mapping(spec.get("topologyConstraint"))
        source = {
            kai_api.TOPOLOGY: constraint.get("topology"),
            kai_api.TOPOLOGY_REQUIRED_PLACEMENT: constraint.get("requiredTopologyLevel"),
            kai_api.TOPOLOGY_PREFERRED_PLACEMENT: constraint.get("preferredTopologyLevel"),
        }
    elif work["kind"] in ("Job", "PyTorchJob") and work.get("tenant") is None:
        source = wl.owner_annotations
    else:
        return None
    dropped = None
    if source.get(kai_api.TOPOLOGY) == topology.name:
        placement = _placement(
            topology, source, kai_api.TOPOLOGY_REQUIRED_PLACEMENT, kai_api.TOPOLOGY_PREFERRED_PLACEMENT
        )
        if placement == "invalid":
            dropped = f"{wl.describe()} (its topology constraint names levels KAI would refuse)"
        elif placement is not None:
            work["topology"] = placement
    if work["kind"] == "PyTorchJob" and work.get("tenant") is None:
        worker = next((t for t in wl.templates if t.path.endswith(".Worker.template")), None)
        ann = worker.annotations if worker else {}
        size = ann.get(kai_api.SEGMENT_SIZE)
        workers = work["pytorch"]["workers"]
        segment_size = _atoi(size)
        if segment_size is not None and 2 <= segment_size <= workers:
            work["pytorch"]["segmentSize"] = segment_size
            name = ann.get(kai_api.TOPOLOGY) or wl.owner_annotations.get(kai_api.TOPOLOGY)
            segment = _placement(
                topology,
                ann,
                kai_api.SEGMENT_TOPOLOGY_REQUIRED_PLACEMENT,
                kai_api.SEGMENT_TOPOLOGY_PREFERRED_PLACEMENT,
            )
            if name == topology.name and isinstance(segment, dict):
                work["pytorch"]["segmentTopology"] = segment
    return dropped


@dataclass(frozen=True)
class Declaration:
    raw: dict[str, Any]  # `kaistack:` config keys, camelCase, as parse_config reads them
    origin: dict[str, Res]  # declared workload name -> the resource it came from
    left_out: list[str]  # workloads the model cannot express, and why


def declaration(resources: Sequence[Res], s: Settings, facts: StackFacts) -> Declaration:
    """The declaration the checker plans from, rebuilt from the stack's resources."""
    from pydantic import ValidationError

    from kaistack.declaration.model import Workload as WorkloadModel
    from kaistack.declaration.parse import model_problems

    platform = next((r.props for r in resources if r.type == PLATFORM_TYPE), None)
    if facts.node_pools is None:
        raise CheckerUnavailable("no node pools: the stack has no Platform component with nodePools props")
    pools = []
    left_out: list[str] = []
    for pool in facts.node_pools:
        p = {k: v for k, v in mapping(pool).items() if v is not None}
        if p.get("gpus") and not p.get("gpuMemoryMiB") and facts.gpu_memory_mib:
            p["gpuMemoryMiB"] = max(facts.gpu_memory_mib)  # fake-GPU pools take the stack's fake GPU size
        # Taints are left to `kaistack check` and the pre-flight gate, which plan from the stack itself: this
        # rebuild knows neither the EKS system node group that takes the CPU-only pods nor tolerations other
        # than the GPU one, so it would keep pods off nodes they really reach.
        if p.pop("taints", None):
            left_out.append(f"the taints of node pool {p.get('name')} (checked by kaistack check and the gate)")
        pools.append(p)
    kai = mapping(mapping(platform).get("kai")) if platform else {}
    default_queues = {k: v for k, v in mapping(kai.get("defaultQueues")).items()}
    defaults = {
        default_queues.get("parentName", "default-parent-queue"),
        default_queues.get("childName", "default-queue"),
    }
    queues = []
    for q in queue_decls(resources):
        entry: dict[str, Any] = {"name": q.name, "resources": _queue_resources(q.resources)}
        if q.parent:
            entry["parent"] = q.parent
        priority = mapping(q.res.props.get("spec")).get("priority")
        if isinstance(priority, int | float):
            entry["priority"] = int(priority)
        if q.name not in defaults:
            queues.append(entry)
    declared_leaves = {q["name"] for q in queues} - {q.get("parent") for q in queues} | defaults
    # A tenant queue missing from the stack is kai-queue-tree's and tenant-queue-binding's finding.
    tenants = [
        {"name": t.name, "namespace": t.namespace, "queues": [q for q in t.queues if q in declared_leaves]}
        for t in facts.tenants or ()
    ]
    workloads: list[dict[str, Any]] = []
    origin: dict[str, Res] = {}
    # By name alone (names are unique in a stack): a host workload in a tenant's namespace is rebuilt as the tenant's.
    declared = {str(mapping(w).get("name")): i for i, w in enumerate(mapping(platform).get("workloadOrder") or [])}
    rank: dict[str, int] = {}
    topology = _topology(resources)
    pod_groups = {
        str(dig(r.props, "metadata", "name")): mapping(r.props.get("spec"))
        for r in resources
        if r.type == kai_api.POD_GROUP.pulumi_type
    }
    for res in resources:
        wl = subject(res, s, facts)
        # By API group too: a Volcano Job is not a batch/v1 Job (podspec.builtin_kind).
        if wl is None or builtin_kind(res.type) not in _SIMULATED_KINDS:
            continue
        template = next((t for t in wl.templates if t.spec.get("schedulerName") == s.scheduler_name), None)
        if template is None:
            continue
        name = _dns(wl.name)
        while name in origin:
            name = _dns(f"{name[:58]}-{len(origin)}")
        work = _workload(wl, template, facts, name)
        dropped = _constraints(wl, work, topology, pod_groups)
        if dropped:
            left_out.append(dropped)
        try:
            WorkloadModel.model_validate(work)
        except ValidationError as err:
            # Each problem as the stack's own errors say it (pydantic's str() ends in a docs URL, not the reason).
            left_out.append(f"{wl.describe()} ({'; '.join(model_problems(err, 'workload', WorkloadModel))})")
            continue
        tenant = next((t for t in facts.tenants or () if t.name == work.get("tenant")), None)
        queue = work.get("queue", default_queues.get("childName", "default-queue"))
        if queue not in declared_leaves or (tenant and queue not in tenant.queues):
            left_out.append(f"{wl.describe()} (queue {queue} is not one it may use)")
            continue
        origin[name] = res
        rank[name] = declared.get(wl.name, len(declared))
        workloads.append(work)
    # The declaration's order (the Platform's `workloadOrder`), not the resources' (AnalyzeStack's comes from a map):
    # KAI breaks ties by creation order, so another order can be another verdict.
    workloads.sort(key=lambda work: rank[work["name"]])
    kai_config: dict[str, Any] = {"sharing": "fractions", "queueLabelKey": facts.queue_label_key}
    for key in ("version", "placementStrategy"):
        if kai.get(key):
            kai_config[key] = kai[key]
    if default_queues:
        kai_config["defaultQueues"] = default_queues
    cluster: dict[str, Any] = {"provider": "kind", "nodePools": pools}
    if topology is not None:
        cluster["topology"] = {"name": topology.name, "levels": list(topology.levels)}
    raw = {
        # The provider does not change capacity; kind needs no provider block.
        "cluster": cluster,
        "kai": kai_config,
        "queues": queues,
        "tenants": tenants,
        "workloads": workloads,
    }
    return Declaration(raw, origin, left_out)
