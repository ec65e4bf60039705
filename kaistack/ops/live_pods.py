"""A pod as KAI's cache reads it: its request (getPodResourceRequest), status, and GPU share.

KAI@v0.17.0 pkg/scheduler/api/pod_info/pod_info.go:403-503 and pkg/common/resources/gpu_sharing.go:87-100.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kaistack.declaration import kai_api
from kaistack.guardrails.gpu_requests import fraction_ok, positive_uint64, uint64_of
from kaistack.guardrails.podspec import dig, mapping, seq
from placement.config_maps import required_config_maps
from placement.model import NO_CONSTRAINTS, NodeConstraints, Task
from placement.node_constraints import ConstraintError, parse_constraints
from placement.quantity import Quantity, QuantityError
from placement.scalar_resources import counted, kai_units
from placement.tasks import RELEASING, RUNNING, STUCK_IN_RELEASING

# KAI@v0.17.0 pkg/common/constants/constants.go:28 DefaultStuckInReleasingThreshold (2 minutes).
STUCK_IN_RELEASING_AFTER_SECONDS = 120.0

INT64_MAX = 2**63 - 1


def _container_requests(container: Any) -> dict[str, float]:
    """cpu (millicores), memory (bytes), GPU/MIG devices and scalar resources (KAI's units) of one container; a
    request defaults to its limit, as the API server fills it in."""
    resources = mapping(mapping(container).get("resources"))
    requests, limits = mapping(resources.get("requests")), mapping(resources.get("limits"))
    out = {
        "cpu": float(millis(requests.get("cpu", limits.get("cpu")))),
        "memory": number(requests.get("memory", limits.get("memory"))),
    }
    for key in {*requests, *limits}:
        name = str(key)
        if name in (kai_api.GPU_RESOURCE, kai_api.AMD_GPU_RESOURCE):
            out[kai_api.GPU_RESOURCE] = out.get(kai_api.GPU_RESOURCE, 0.0) + number(limits.get(key, requests.get(key)))
        elif name.startswith(kai_api.MIG_RESOURCE_PREFIX):
            out[name] = number(limits.get(key, requests.get(key)))
        elif counted(name):
            out[name] = float(scalar_units(name, requests.get(key, limits.get(key))))
    return out


def scalar_units(name: str, value: Any) -> int:
    """A scalar resource (placement.scalar_resources) in KAI's units; an unreadable quantity counts as none."""
    try:
        return kai_units(name, value)
    except QuantityError:
        return 0


def _add(total: dict[str, float], more: Mapping[str, float]) -> dict[str, float]:
    """`more` added into `total`, in place: a pod of 8,000 containers of distinct resources (1 MB, within etcd's
    object limit) took seconds when each container's sum rebuilt the whole mapping."""
    for k, v in more.items():
        total[k] = total.get(k, 0.0) + v
    return total


def _raise_to(peak: dict[str, float], more: Mapping[str, float]) -> None:
    for k, v in more.items():
        if v > peak.get(k, 0.0):
            peak[k] = v


def pod_requests(pod: Mapping[str, Any]) -> dict[str, float]:
    """KAI's getPodResourceRequest (pod_info.go:403-441): the containers, plus native sidecars (init containers
    with restartPolicy Always), at least the init phase's peak, plus spec.overhead; and one pod slot."""
    total: dict[str, float] = {}
    for container in seq(dig(pod, "spec", "containers")):
        total = _add(total, _container_requests(container))
    sidecars: dict[str, float] = {}
    peak: dict[str, float] = {}
    for container in seq(dig(pod, "spec", "initContainers")):
        requests = _container_requests(container)
        if mapping(container).get("restartPolicy") == "Always":
            sidecars = _add(sidecars, requests)
            continue
        _raise_to(peak, _add(requests, sidecars))
    total = _add(total, sidecars)
    _raise_to(total, peak)
    # Overhead adds to the base resources, scalar ones included (pod_info.go:410-413), not to GPUs.
    overhead = mapping(dig(pod, "spec", "overhead"))
    extra = {str(k): float(scalar_units(str(k), v)) for k, v in overhead.items() if counted(str(k))}
    total = _add(total, {"cpu": float(millis(overhead.get("cpu"))), "memory": number(overhead.get("memory")), **extra})
    total["pods"] = 1.0
    return total


def pod_task(
    pod: Mapping[str, Any],
    node: Any,
    now: datetime,
    sub_groups: bool = False,
    bound_groups: tuple[str, ...] = (),
) -> Task:
    """The pod as a task on `node` (None: Pending), read at `now`. `bound_groups`: the GPU groups its
    BindRequest selected, which KAI takes before the pod's labels (KAI@v0.17.0 pod_info.go:505-510)."""
    annotations = annotations_of(pod)
    requests = pod_requests(pod)
    gpus = int(requests.get(kai_api.GPU_RESOURCE, 0))
    mig = {k: int(v) for k, v in requests.items() if k.startswith(kai_api.MIG_RESOURCE_PREFIX) and v}
    fraction, memory_mib, devices = gpu_share(annotations)
    shared = fraction is not None or memory_mib is not None
    running = bool(node)
    groups = gpu_groups(pod, bound_groups)
    state = placed_state(pod, now) if running else "Pending"
    return Task(
        gpu=0 if shared else gpus,
        gpu_fraction=fraction,
        gpu_memory_mib=memory_mib,
        gpu_devices=devices,
        mig=mig,
        cpu_millis=int(requests.get("cpu", 0)),
        memory_bytes=int(requests.get("memory", 0)),
        state=state,
        node=str(node) if running else None,
        gpu_groups=groups if running and shared else (),
        sub_group=(str(labels_of(pod).get(kai_api.SUBGROUP_LABEL) or "") or None) if sub_groups else None,
        scalar={k: int(v) for k, v in requests.items() if v and counted(k)},
        constraints=constraints_of(pod),
        namespace=object_namespace(pod),
        pod_labels=pod_labels(pod),
        config_maps=required_config_maps(mapping(dig(pod, "spec")), annotations),
    )


def gpu_share(annotations: Mapping[str, Any]) -> tuple[float | None, int | None, int]:
    """(fraction, GPU memory in MiB, devices) of a shared-GPU pod, as KAI's pod reader takes its annotations (a
    fraction wins over GPU memory, pod_info.go:518-538); (None, None, 1) for a pod that shares no GPU. Malformed
    values (which KAI's admission refuses) count as no share, not as an error here."""
    fraction = annotations.get(kai_api.GPU_FRACTION) if fraction_ok(annotations.get(kai_api.GPU_FRACTION)) else None
    # Admission takes up to 2^64-1 (ParseUint), the scheduler's pod reader ParseInt: above 2^63-1 it reads no GPU
    # memory request at all (KAI-Scheduler@v0.17.0 pkg/scheduler/api/pod_info/pod_info.go:521-525).
    memory_text = annotations.get(kai_api.GPU_MEMORY)
    gpu_memory = memory_text if positive_uint64(memory_text) and uint64_of(str(memory_text)) <= INT64_MAX else None
    if not (fraction or gpu_memory):
        return None, None, 1
    devices = annotations.get(kai_api.GPU_FRACTION_NUM_DEVICES)
    return (
        float(fraction) if fraction else None,
        uint64_of(str(gpu_memory)) if gpu_memory and not fraction else None,
        min(uint64_of(str(devices)), 64) if positive_uint64(devices) else 1,
    )


def gpu_groups(pod: Mapping[str, Any], bound_groups: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The pod's GPU groups: its BindRequest's selected ones, else its labels (KAI@v0.17.0 pod_info.go:505-510)."""
    return bound_groups or _gpu_groups(pod)


def pod_labels(pod: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """metadata.labels as inter-pod affinity terms match them."""
    return tuple(sorted((str(k), str(v)) for k, v in labels_of(pod).items()))


def constraints_of(pod: Mapping[str, Any]) -> NodeConstraints:
    """The pod's nodeSelector, required node and inter-pod affinity and tolerations, and the digest of what else
    its scheduling signature hashes. The API server has validated them; one it could not have (a hand-written
    dump) counts as none."""
    spec = mapping(dig(pod, "spec"))
    try:
        constraints = parse_constraints(spec)
    except ConstraintError:
        constraints = NO_CONSTRAINTS
    other = _signature_rest(spec)
    return dataclasses.replace(constraints, other=other) if other else constraints


def _signature_rest(spec: Mapping[str, Any]) -> str:
    """What else schedulingConstraintsSignature hashes (KAI@v0.17.0 pod_info/scheduling_constraints_signature.go:
    19-97): the whole affinity, the priority class and priority, topology spread constraints, every container
    port's hostPort, and the volumes other than ConfigMaps and Secrets, without their names
    (pod_storage_requirements.go:26-52). A PVC volume is
    hashed whole, its name and claim included: KAI describes a claim by class, size and phase only when it
    snapshots claims, which it does only with --schedule-csi-storage (cluster_info.go:215-245; off by default,
    cmd/scheduler/app/options/options.go:123), else getPVC fails and the volume goes in as it is (:30-35)."""
    containers = [*seq(spec.get("containers")), *seq(spec.get("initContainers"))]
    ports = [mapping(p).get("hostPort", 0) for c in containers for p in seq(mapping(c).get("ports"))]
    volumes: list[object] = []
    for volume in seq(spec.get("volumes")):
        source = {k: v for k, v in mapping(volume).items() if k != "name"}
        if "persistentVolumeClaim" in source:
            volumes.append(volume)
        elif "configMap" not in source and "secret" not in source:
            volumes.append(source)
    klass, priority = spec.get("priorityClassName") or "", spec.get("priority")
    parts = {
        "affinity": spec.get("affinity"),
        "spread": spec.get("topologySpreadConstraints"),
        "ports": ports,
        "volumes": volumes,
        # The pod's own class and priority, not its PodGroup's (:52-56; Job.priority_in_signature).
        "priority": [klass, priority] if klass or priority is not None else None,
    }
    if not any(parts.values()):
        return ""
    return hashlib.sha256(json.dumps(_text_keys(parts), sort_keys=True, default=str).encode()).hexdigest()[:16]


def _text_keys(value: Any) -> Any:
    """`value` with every mapping key as text: a hand-written YAML dump may hold `1:` beside `name:`, and sorted
    keys of two types stopped diagnose (exit 70). kubectl sends such a key as its text (sigs.k8s.io/yaml)."""
    if isinstance(value, Mapping):
        return {str(k): _text_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_text_keys(v) for v in value]
    return value


def placed_state(pod: Mapping[str, Any], now: datetime) -> str:
    """getTaskStatus (KAI@v0.17.0 pod_info.go:465-479) of a pod with a node: Running until it is deleted, then
    Releasing, or StuckInReleasing when it is still in phase Running more than two minutes after its deletion
    (its resources then stay in use, and nothing is pipelined onto them). An unreadable deletion time counts
    as a fresh one."""
    stamp = dig(pod, "metadata", "deletionTimestamp")
    if not stamp:
        return RUNNING
    deleted = parse_time(stamp)
    running = dig(pod, "status", "phase") == "Running"
    if deleted is not None and running and (now - deleted).total_seconds() > STUCK_IN_RELEASING_AFTER_SECONDS:
        return STUCK_IN_RELEASING
    return RELEASING


def parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):  # a YAML loader that resolves timestamps gives naive UTC for "...Z"
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _gpu_groups(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """GetGpuGroups (KAI@v0.17.0 pkg/common/resources/gpu_sharing.go:87-100): `runai-gpu-group`, then the
    `runai-gpu-group/<group>` labels a multi-device share carries (here once each, in name order). The key is
    what counts: an empty value is a group named "", which every pod so labelled on a node shares."""
    labels = labels_of(pod)
    main = labels.get(kai_api.GPU_GROUP_LABEL)
    if main is None:
        return ()
    prefix = kai_api.GPU_GROUP_LABEL + "/"
    more = sorted(str(v) for k, v in labels.items() if str(k).startswith(prefix) and v is not None)
    return tuple(dict.fromkeys([str(main), *more]))


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(dig(obj, "metadata", "labels"))


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(dig(obj, "metadata", "annotations"))


def number(value: Any) -> float:
    if value is None:
        return 0.0
    try:
        return float(Quantity.parse(value).value)
    except QuantityError:
        return 0.0


def millis(value: Any) -> int:
    if value is None:
        return 0
    try:
        return Quantity.parse(value).millis
    except QuantityError:
        return 0


def object_name(obj: Mapping[str, Any]) -> str:
    return str(dig(obj, "metadata", "name") or "")


def object_namespace(obj: Mapping[str, Any]) -> str:
    return str(dig(obj, "metadata", "namespace") or "default")


_GO_INT = re.compile(r"[+-]?[0-9]+")


def go_int64(value: object) -> int | None:
    """strconv.ParseInt(value, 10, 64) (and Atoi, on 64 bits): a sign and ASCII digits, leading zeros allowed,
    within int64, else None. KAI reads the nvidia.com/gpu.memory label so (KAI-Scheduler@v0.17.0
    pkg/scheduler/api/node_info/node_info.go:652-657: a label it cannot read leaves the node's GPU memory unknown
    to it) and a scheduling condition's transitionID (pkg/scheduler/utils/pod_group_utils.go:35-43)."""
    if not isinstance(value, str) or not _GO_INT.fullmatch(value):
        return None
    sign = -1 if value[0] == "-" else 1
    digits = value.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 19:
        return None
    number = sign * int(digits)
    return number if -(2**63) <= number < 2**63 else None
